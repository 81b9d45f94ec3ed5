//! Bad input, tried by machine (issue 38 item 7): a real run.json (plan 000 `--quick` on go-pgx,
//! this machine) with values replaced at random places, bytes flipped, or cut short, read back
//! by `RunReport::from_json` — what `ceiling report` and `ceiling compare` read. Whatever comes in,
//! the answer is a report or an error that says run.json and where — never a panic.

use ceiling_records::RunReport;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

fn fixture() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/run-000-quick.json"
    ))
    .unwrap()
}

/// JSON pointers to every value of `v`.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                pointers(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn replacement() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(serde_json::json!(-1)),
        Just(serde_json::json!(0)),
        Just(serde_json::json!(1e308)),
        Just(serde_json::json!(-1e308)),
        Just(serde_json::json!(u64::MAX)),
        Just(serde_json::json!(i64::MIN)),
        Just(serde_json::json!(0.5)),
        Just(serde_json::json!("")),
        Just(serde_json::json!("NaN")),
        Just(serde_json::json!("💥")),
        Just(serde_json::json!([])),
        Just(serde_json::json!({})),
        Just(serde_json::json!([null, 1, "x"])),
        Just(serde_json::json!(true)),
        any::<f64>()
            .prop_filter("JSON has no NaN or ∞", |f| f.is_finite())
            .prop_map(|f| serde_json::json!(f)),
        any::<String>().prop_map(Value::String),
    ]
}

fn check(text: &str) -> Result<(), TestCaseError> {
    if let Err(e) = RunReport::from_json(text) {
        prop_assert!(e.starts_with("run.json"), "{e}");
    }
    Ok(())
}

#[test]
fn a_run_json_with_values_replaced_reads_or_says_why() {
    let text = fixture();
    let v: Value = serde_json::from_str(&text).unwrap();
    RunReport::from_json(&text).expect("the fixture itself reads");
    let mut ptrs = Vec::new();
    pointers(&v, String::new(), &mut ptrs);
    let cases = 3000;
    let mut runner = runner_of(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let counts = std::cell::Cell::new((0u32, 0u32));
    runner
        .run(
            &prop::collection::vec((0..ptrs.len(), replacement()), 1..4),
            |edits| {
                let mut w = v.clone();
                for (i, r) in edits {
                    if let Some(slot) = w.pointer_mut(&ptrs[i]) {
                        *slot = r;
                    }
                }
                let t = w.to_string();
                let ok = RunReport::from_json(&t).is_ok();
                let (a, b) = counts.get();
                counts.set(if ok { (a + 1, b) } else { (a, b + 1) });
                check(&t)
            },
        )
        .unwrap();
    let (read, refused) = counts.get();
    println!("run.json, values replaced: {cases} cases ({read} read, {refused} refused with the place), no panic");
}

#[test]
fn a_run_json_with_bytes_flipped_or_cut_short_reads_or_says_why() {
    let text = fixture();
    let bytes = text.into_bytes();
    let cases = 3000;
    let mut runner = runner_of(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let edits = prop::collection::vec(
        (
            0..bytes.len(),
            prop::sample::select(&b"{}[]\",:0123456789.-eEnul \\x"[..]),
        ),
        1..6,
    );
    runner
        .run(&(edits, 0..=bytes.len()), |(flips, cut)| {
            let mut b = bytes.clone();
            for (i, c) in flips {
                b[i] = c;
            }
            b.truncate(cut.max(1));
            // a flip inside a multi-byte character is not text: from_json takes &str, as
            // read_run_json's read_to_string would have refused those bytes already
            if let Ok(t) = std::str::from_utf8(&b) {
                check(t)?;
            }
            Ok(())
        })
        .unwrap();
    println!("run.json, bytes flipped and cut short: {cases} cases, no panic");
}

/// A runner with a fixed seed: every `make test` tries the same cases, so CI is reproducible (a
/// failure prints the case; the seed can be changed here to explore further).
fn runner_of(config: Config) -> TestRunner {
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}
