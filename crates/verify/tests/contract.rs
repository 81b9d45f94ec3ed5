//! contract/openapi.yaml, contract/API.md and the suite agree: every case is named by an
//! operation's `x-verify-cases` and every name there is a case; every statement of `x-sql` is
//! API.md's text and has the shape the suite counts.

use ceiling_verify::{case_names, classify, Shape};
use std::collections::BTreeSet;
use std::path::Path;

fn contract(file: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../contract")
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The names in every `x-verify-cases: [a, b, …]` (the list may wrap onto the next lines).
fn verify_cases(yaml: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in yaml.match_indices("x-verify-cases:") {
        let rest = &yaml[i..];
        let open = rest.find('[').unwrap();
        let close = rest.find(']').unwrap();
        out.extend(
            rest[open + 1..close]
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
        );
    }
    out
}

/// The statements of every `x-sql:` list.
fn sql_statements(yaml: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_list = false;
    for line in yaml.lines() {
        let t = line.trim();
        if t == "x-sql:" {
            in_list = true;
        } else if in_list && t.starts_with("- ") {
            out.push(t[2..].to_string());
        } else {
            in_list = false;
        }
    }
    out
}

#[test]
fn every_case_is_in_the_spec_and_every_spec_case_exists() {
    let yaml = contract("openapi.yaml");
    let in_spec: Vec<String> = verify_cases(&yaml);
    let spec: BTreeSet<&str> = in_spec.iter().map(String::as_str).collect();
    assert_eq!(
        spec.len(),
        in_spec.len(),
        "a case is listed twice: {in_spec:?}"
    );
    let suite: BTreeSet<&str> = case_names().iter().map(|(_, n)| *n).collect();
    let missing: Vec<_> = suite.difference(&spec).collect();
    let unknown: Vec<_> = spec.difference(&suite).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "not in openapi.yaml: {missing:?}; not a case: {unknown:?}"
    );
}

#[test]
fn spec_sql_is_api_md_sql_with_the_counted_shapes() {
    let yaml = contract("openapi.yaml");
    let api = contract("API.md");
    let stmts = sql_statements(&yaml);
    assert_eq!(stmts.len(), 12, "{stmts:?}");
    let mut shapes = BTreeSet::new();
    for s in &stmts {
        assert!(
            api.contains(&format!("`{s}`")),
            "x-sql statement not in API.md: {s}"
        );
        let shape = classify(s);
        assert!(
            shape.counted() && shape != Shape::OtherBenchmark,
            "{s}: {shape:?}"
        );
        shapes.insert(shape);
    }
    assert_eq!(
        shapes.len(),
        12,
        "each statement has its own shape: {shapes:?}"
    );
    for shape in shapes {
        let text = shape.contract_sql().unwrap();
        assert!(
            stmts.iter().any(|s| s == text),
            "the suite's text of {shape} is not the spec's: {text}"
        );
    }
}
