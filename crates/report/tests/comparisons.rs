//! Comparisons and the claims ledger as a reader sees them: `ceiling-compare` computes them
//! (its own tests check the figures), this crate writes them — a swapped order says DIFFERS, a
//! figure inside the source's range says so, Markdown and HTML carry the same rows, and the
//! ledger counts every verdict and keeps the untestable statements.

#[path = "../../compare/tests/common/mod.rs"]
mod common;

use ceiling_compare::claims::{evaluate, ClaimsFile};
use ceiling_compare::published::parse_published;
use ceiling_compare::{compare_runs, compare_with_source};
use ceiling_records::RunReport;
use ceiling_report::{claims, compare};
use common::{fast_and_slow, plan, simulate, CLAIMS};
use std::path::Path;

/// fast holds both shelves (1500, 3000) at `fast_ms`; slow fails 3000 (1.2 s), so its ceiling
/// is 1500.
fn run(fast_ms: f64) -> RunReport {
    let p = plan();
    let mut r = RunReport::new(&p, "20261127-000000-gates");
    r.stacks.push(simulate(&p, "fast", |_| fast_ms));
    r.stacks.push(simulate(&p, "slow", |rate| {
        if rate > 2000.0 {
            1200.0
        } else {
            8.0
        }
    }));
    r
}

/// The source ranks slow above fast (the run says the opposite) and gave fast's p99 as 4–6 ms.
const PUBLISHED: &str = r#"
source = "999"
title = "Two stacks"
published = "a blog, 2026"
seed = "999_x.txt"
caveats = ["memory is heap"]
[[tables]]
id = "ceilings"
title = "Ceilings"
line = 7
plan = "gates"
point = "ceiling"
[[tables.rows]]
label = "fast"
stack = "fast"
rps = 1000
p99_ms = [4, 6]
[[tables.rows]]
label = "slow"
stack = "slow"
rps = 3000
"#;

#[test]
fn a_comparison_with_its_source_reads_the_same_in_every_form() {
    let p = parse_published(PUBLISHED, Path::new("plans/published/999.toml")).unwrap();
    let c = compare_with_source(&run(5.0), &p);
    assert_eq!(c.tables.len(), 1, "{:?}", c.notices);
    let text = compare::source_text(&c, false);
    assert!(
        text.contains("order by RPS DIFFERS — source: slow > fast; ceiling: fast > slow"),
        "{text}"
    );
    assert!(text.contains("in range"), "{text}");
    assert!(
        text.contains("Ceilings (source line 7, ceilings)"),
        "{text}"
    );
    let md = compare::source_text(&c, true);
    assert!(
        md.contains("### Ceilings (source line 7, ceilings)"),
        "{md}"
    );
    assert!(md.contains("| fast |"), "{md}");
    assert!(md.contains("- memory is heap"), "{md}");
    let html = compare::source_html(&c);
    assert!(
        html.contains("<table") && html.contains("<td>fast</td>") && !html.contains("<script"),
        "{html}"
    );
    // every row of the terminal table is in the Markdown one
    for row in ["fast", "slow"] {
        assert!(md.contains(&format!("| {row} |")), "{row}: {md}");
    }
}

#[test]
fn two_runs_compared_say_the_change_and_its_test() {
    let c = compare_runs(&run(5.0), &run(10.0)).unwrap();
    for markdown in [false, true] {
        let text = compare::runs_text(&c, markdown);
        assert!(text.contains("hold 3000"), "{text}");
        assert!(text.contains("+100%"), "{text}");
        assert!(text.contains("one value each"), "{text}");
    }
}

#[test]
fn the_claims_ledger_counts_every_verdict_and_keeps_the_untestable() {
    let mut file: ClaimsFile = toml::from_str(CLAIMS).unwrap();
    // a pipe in a claim's text cannot break the table
    file.claims[0].text = "slow cannot hold 3000 RPS | p99 over a second".into();
    let md = claims::render_markdown(&[(file.clone(), evaluate(&file, &[fast_and_slow()]))]);
    assert!(
        md.contains(
            "## Source 999 — 6 claims: 4 hold, 0 do not, 0 not decided, 2 not testable here"
        ),
        "{md}"
    );
    assert!(
        md.contains("**holds**") && md.contains("**not testable here**"),
        "{md}"
    );
    assert!(
        md.contains("slow cannot hold 3000 RPS \\| p99 over a second (L10)"),
        "{md}"
    );
    assert!(
        md.contains("- the author's opinion (L20) — no measurable content"),
        "{md}"
    );
    assert!(md.contains("20261127-000000-gates"), "{md}");
}
