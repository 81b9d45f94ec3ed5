//! Comparisons of simulated runs whose differences are known in advance.

use ceiling_compare::published::parse_published;
use ceiling_compare::source::RowStatus;
use ceiling_compare::{compare_runs, compare_stacks, compare_with_source, Metric};
use ceiling_records::RunReport;
use common::simulate_with as simulate;
use std::path::Path;

mod common;

fn plan(p99: &str) -> ceiling_plan::Plan {
    let text = format!(
        r#"
name = "000-status-mixed"
description = "two shelves"
source = "000"
[[stages]]
hold = 1500
duration = "40s"
[[stages]]
hold = 3000
duration = "40s"
[[requests]]
name = "ping"
path = "/ping"
[slo]
p99 = "{p99}"
errors = "1%"
[analysis]
trim_head = "5s"
trim_tail = "0s"
min_window = "30s"
"#
    );
    ceiling_plan::parse_plan(&text, Path::new("plans/000-status-mixed.toml")).unwrap()
}

fn run(p99: &str, go_ms: f64) -> RunReport {
    let p = plan(p99);
    let mut r = RunReport::new(&p, "sim");
    r.stacks.push(simulate(&p, "go-pgx", |_| go_ms, 90.0, 20.0));
    r.stacks.push(simulate(
        &p,
        "ktor-jdbc",
        |rate| if rate > 2000.0 { 400.0 } else { 8.0 },
        60.0,
        150.0,
    ));
    r
}

const PUBLISHED: &str = r#"
source = "000"
title = "One service, four stacks"
published = "Habr, December 2025"
seed = "000_x.txt"
caveats = ["RAM is heap"]
[conditions]
hardware = "one Windows host"
[[tables]]
id = "mixed"
title = "Mixed"
line = 706
plan = "000-status-mixed"
point = "ceiling"
[tables.columns]
mem_mib = "JVM heap used"
[[tables.rows]]
label = "go-pgx"
stack = "go-pgx"
rps = 2915
p99_ms = 35
mem_mib = 70
approx = true
[[tables.rows]]
label = "ktor-jdbc"
stack = "ktor-jdbc"
rps = 3000
p99_ms = 114
[[tables.rows]]
label = "spring-mvc-jdbc"
stack = "spring-mvc-jdbc"
rps = 0
[[tables.rows]]
label = "Apostol"
rps = 1
[[tables]]
id = "shelves"
title = "At 1500"
line = 900
plan = "000-status-mixed"
point = "shelf"
[[tables.rows]]
label = "go-pgx"
stack = "go-pgx"
rate = 1500
p99_ms = [4, 6]
[[tables.rows]]
label = "go-pgx"
stack = "go-pgx"
rate = 4500
p99_ms = 50
[[tables]]
id = "other"
title = "Elsewhere"
line = 1000
point = "ceiling"
[[tables.rows]]
label = "x"
rps = 1
"#;

#[test]
fn a_run_beside_its_source() {
    let r = run("350ms", 5.0);
    let p = parse_published(PUBLISHED, Path::new("plans/published/000.toml")).unwrap();
    let c = compare_with_source(&r, &p);
    assert_eq!(c.tables.len(), 2);
    let t = &c.tables[0];
    let go = &t.rows[0];
    assert_eq!(go.status, RowStatus::Matched);
    let rps = go.cells.iter().find(|c| c.metric == Metric::Rps).unwrap();
    // the run's ceiling is the hold 3000 shelf's mean throughput
    let ours = rps.ours.unwrap();
    assert!((ours - 3000.0).abs() < 1.0, "{ours}");
    assert!((rps.ratio.unwrap() - ours / 2915.0).abs() < 1e-9);
    let mem = go
        .cells
        .iter()
        .find(|c| c.metric == Metric::MemMib)
        .unwrap();
    assert!((mem.ours.unwrap() - 20.0).abs() < 0.5);
    assert!(mem.ours_is.as_deref().unwrap().contains("RSS"));
    // ktor's ceiling is 1500; the source had 3000: the order of go-pgx and ktor is swapped
    let ktor = &t.rows[1];
    let k = ktor.cells.iter().find(|c| c.metric == Metric::Rps).unwrap();
    assert!((k.ours.unwrap() - 1500.0).abs() < 1.0);
    assert_eq!(t.order.len(), 1);
    assert!(!t.order[0].agrees());
    assert_eq!(t.order[0].ours, vec!["go-pgx", "ktor-jdbc"]);
    assert_eq!(t.order[0].published, vec!["ktor-jdbc", "go-pgx"]);
    assert_eq!(t.rows[2].status, RowStatus::NotInRun);
    assert_eq!(t.rows[3].status, RowStatus::NoStack);
    // the shelf table: 1500 found (p99 5 ms inside the published 4–6), 4500 not run
    let s = &c.tables[1];
    assert_eq!(s.rows[0].status, RowStatus::Matched);
    assert_eq!(s.rows[0].ours_at.as_deref(), Some("hold 1500"));
    let p99 = &s.rows[0].cells[0];
    assert!(p99.published.contains(p99.ours.unwrap()), "{:?}", p99);
    assert_eq!(s.rows[1].status, RowStatus::PointNotInRun);
    assert_eq!(c.other_tables.len(), 1);
    assert!(c.other_tables[0].plan.is_none());
    // the disagreement is a swap, not an unresolved pair (the renderings say DIFFERS:
    // crates/report/tests/comparisons.rs)
    assert_eq!(
        t.order[0].swapped,
        vec![("ktor-jdbc".to_string(), "go-pgx".to_string())],
        "the source's pair, in the source's order"
    );
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["tables"][0]["rows"][0]["status"], "matched");
}

#[test]
fn two_runs_with_a_known_difference() {
    let a = run("350ms", 5.0);
    let b = run("350ms", 10.0);
    let c = compare_runs(&a, &b).unwrap();
    assert_eq!(c.stacks.len(), 2);
    let go = &c.stacks[0];
    assert_eq!(go.a_stack, "go-pgx");
    let hold = go.points.iter().find(|p| p.point == "hold 1500").unwrap();
    let p99 = hold
        .diffs
        .iter()
        .find(|d| d.quantity == ceiling_compare::runs::Quantity::P99Ms)
        .unwrap();
    // 5 ms → 10 ms, one shelf each: the ratio, and no claim of significance
    assert!((p99.ratio - 2.0).abs() < 0.02, "{}", p99.ratio);
    assert_eq!(p99.significant, None);
    assert!(p99.verdict.contains("+100%"), "{}", p99.verdict);
    assert!(go.points.iter().any(|p| p.point == "hold 3000"));
}

/// Two runs on hosts that both call their CPU "AMD EPYC" but are generations apart: the
/// comparison says so (the CPU's signature), where the model name alone would not.
#[test]
fn runs_on_different_cpus_under_one_model_name_are_said_to_differ() {
    let env = |sig: &str| ceiling_metrics::Environment {
        cpu_model: "AMD EPYC".into(),
        cpu_signature: sig.into(),
        ..Default::default()
    };
    let (mut a, mut b) = (run("350ms", 5.0), run("350ms", 10.0));
    a.environment = Some(env("AuthenticAMD family 25 model 1 stepping 1"));
    b.environment = Some(env("AuthenticAMD family 26 model 2 stepping 1"));
    let w = compare_runs(&a, &b).unwrap().warnings;
    assert!(
        w.iter().any(|w| w.contains("cpu_signature")
            && w.contains("family 25 model 1")
            && w.contains("family 26 model 2")),
        "{w:?}"
    );
    assert!(!w.iter().any(|w| w.contains("cpu_model")), "{w:?}");
    // the same CPU, or a run recorded before the signature was (empty), is no difference
    for sig in ["AuthenticAMD family 25 model 1 stepping 1", ""] {
        b.environment = Some(env(sig));
        let w = compare_runs(&a, &b).unwrap().warnings;
        assert!(w.iter().all(|w| !w.contains("cpu_")), "{sig:?}: {w:?}");
    }
}

#[test]
fn different_slos_are_refused() {
    let a = run("350ms", 5.0);
    let b = run("50ms", 5.0);
    let e = compare_runs(&a, &b).unwrap_err().to_string();
    assert!(e.contains("different SLOs"), "{e}");
    // limits whose descriptions read alike (a tenth of a second) are still different SLOs:
    // judged on the limits themselves
    let (a, b) = (run("1240ms", 5.0), run("1200ms", 5.0));
    assert_eq!(a.plan.slo, b.plan.slo, "the descriptions round alike");
    let e = compare_runs(&a, &b).unwrap_err().to_string();
    assert!(e.contains("different SLOs"), "{e}");
    // and the same SLO, through run.json and back, is the same
    let back: ceiling_records::RunReport =
        serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
    assert!(compare_runs(&a, &back).is_ok());
}

#[test]
fn two_stacks_of_one_run() {
    let r = run("350ms", 5.0);
    let c = compare_stacks(&r, "go-pgx", "ktor-jdbc").unwrap();
    let d = &c.stacks[0].ceiling;
    assert!((d.ratio - 0.5).abs() < 0.01, "{}", d.ratio);
    assert!(c.warnings.iter().any(|w| w.contains("not interleaved")));
    let e = compare_stacks(&r, "go-pgx", "nope")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no stack `nope`"), "{e}");
}

/// A source that tabulated the JVM's heap is compared with the heap the stack's /metrics gave,
/// not with RSS; a shelf without a heap falls back to RSS and says the kinds differ.
#[test]
fn a_heap_column_is_compared_with_the_heap() {
    let mut r = run("350ms", 5.0);
    let go = &mut r.stacks[0];
    let shelf = go
        .shelves
        .iter_mut()
        .find(|s| s.rate.is_some_and(|x| (x - 1500.0).abs() < 1.0))
        .unwrap();
    shelf.runtime = Some(ceiling_analyze::RuntimeWindow {
        seconds: 35,
        heap_kind: Some(ceiling_metrics::HeapKind::JvmHeapUsed),
        heap_mb_mean: Some(42.0),
        heap_mb_min: Some(30.0),
        heap_mb_max: Some(60.0),
        gc_count: Some(7),
        gc_pause_ms_per_s: Some(1.5),
        threads_mean: Some(20.0),
        tail: None,
    });
    let text = r#"
source = "000"
title = "t"
published = "p"
seed = "000_x.txt"
[[tables]]
id = "heap"
title = "At 1500"
line = 1
plan = "000-status-mixed"
point = "shelf"
memory = "runtime-heap"
[[tables.rows]]
label = "go-pgx"
stack = "go-pgx"
rate = 1500
mem_mib = 40
[[tables.rows]]
label = "go-pgx"
stack = "go-pgx"
rate = 3000
mem_mib = 40
"#;
    let p = parse_published(text, Path::new("plans/published/000.toml")).unwrap();
    let c = compare_with_source(&r, &p);
    let rows = &c.tables[0].rows;
    let with_heap = rows[0]
        .cells
        .iter()
        .find(|c| c.metric == Metric::MemMib)
        .unwrap();
    assert!(
        (with_heap.ours.unwrap() - 42.0).abs() < 1e-9,
        "{with_heap:?}"
    );
    let is = with_heap.ours_is.as_deref().unwrap();
    assert!(is.contains("heap") && is.contains("RSS 20 MiB"), "{is}");
    let without = rows[1]
        .cells
        .iter()
        .find(|c| c.metric == Metric::MemMib)
        .unwrap();
    assert!((without.ours.unwrap() - 20.0).abs() < 0.5, "{without:?}");
    assert!(without
        .ours_is
        .as_deref()
        .unwrap()
        .contains("another quantity"));
}

/// A one-shelf plan `name` holding `rate` RPS for 40 s.
fn one_shelf_plan(name: &str, rate: u32) -> ceiling_plan::Plan {
    let text = format!(
        r#"
name = "{name}"
description = "one shelf"
source = "004"
[[stages]]
hold = {rate}
duration = "40s"
[[requests]]
name = "ping"
path = "/ping"
[slo]
p99 = "100ms"
[analysis]
trim_head = "5s"
trim_tail = "0s"
min_window = "30s"
"#
    );
    ceiling_plan::parse_plan(&text, Path::new(&format!("plans/{name}.toml"))).unwrap()
}

const SUMMARY: &str = r#"
source = "004"
title = "t"
published = "p"
seed = "004_x.txt"
[[tables]]
id = "on-off"
title = "keep-alive on and off"
line = 293
point = "shelf"
[[tables.rows]]
label = "Go, on"
stack = "go-pgx"
plan = "004-on"
rate = 2000
rps = 1000
[[tables.rows]]
label = "Go, off"
stack = "go-pgx"
plan = "004-off"
ratio_to = "Go, on"
rate = 500
rps = 100
[[tables]]
id = "on-only"
title = "keep-alive on"
line = 200
plan = "004-on"
point = "shelf"
[[tables.rows]]
label = "Go"
stack = "go-pgx"
rate = 2000
rps = 1000
"#;

#[test]
fn a_summary_table_reads_each_row_from_its_plans_run_and_computes_the_ratio() {
    let (pa, pb) = (
        one_shelf_plan("004-on", 2000),
        one_shelf_plan("004-off", 500),
    );
    let mut a = RunReport::new(&pa, "sim");
    a.run_id = "run-on".into();
    a.stacks.push(simulate(&pa, "go-pgx", |_| 5.0, 50.0, 20.0));
    let mut b = RunReport::new(&pb, "sim");
    b.run_id = "run-off".into();
    b.stacks.push(simulate(&pb, "go-pgx", |_| 5.0, 50.0, 20.0));
    let p = parse_published(SUMMARY, Path::new("plans/published/004.toml")).unwrap();

    // one run alone reproduces only its own table; the summary needs both and says so
    let alone = compare_with_source(&a, &p);
    assert_eq!(alone.tables.len(), 1);
    assert_eq!(alone.tables[0].id, "on-only");
    let other = alone
        .other_tables
        .iter()
        .find(|t| t.id == "on-off")
        .unwrap();
    assert_eq!(other.plan.as_deref(), Some("004-on + 004-off"));

    // given in either order, each row comes from the run of its plan
    for runs in [[&a, &b], [&b, &a]] {
        let c = ceiling_compare::compare_runs_with_source(&runs, &p);
        assert_eq!(c.tables.len(), 2, "{:?}", c.notices);
        let t = c.tables.iter().find(|t| t.id == "on-off").unwrap();
        let ours = |i: usize| t.rows[i].cells[0].ours.unwrap();
        assert!((ours(0) - 2000.0).abs() < 1.0, "{}", ours(0));
        assert!((ours(1) - 500.0).abs() < 1.0, "{}", ours(1));
        assert_eq!(t.ratios.len(), 1);
        // one stack per plan: nothing to rank, and never a stack against itself under the
        // other plan
        assert!(t.order.is_empty(), "{:?}", t.order);
        let r = &t.ratios[0];
        assert_eq!((r.label.as_str(), r.base.as_str()), ("Go, off", "Go, on"));
        assert!((r.published.unwrap() - 0.1).abs() < 1e-12);
        assert!((r.ours.unwrap() - 0.25).abs() < 1e-3, "{:?}", r.ours);
    }
}

/// A published file of source 004 with one table of ceilings for plan `004-on`, a row per
/// `(label, stack, rps)`.
fn ceilings_of_004_on(rows: &[(&str, &str, f64)]) -> ceiling_compare::Published {
    let mut text = String::from(
        "source = \"004\"\ntitle = \"t\"\npublished = \"p\"\nseed = \"004_x.txt\"\n\
         [[tables]]\nid = \"on\"\ntitle = \"keep-alive on\"\nline = 1\nplan = \"004-on\"\n\
         point = \"ceiling\"\n",
    );
    for (label, stack, rps) in rows {
        text.push_str(&format!(
            "[[tables.rows]]\nlabel = \"{label}\"\nstack = \"{stack}\"\nrps = {rps}\n"
        ));
    }
    parse_published(&text, Path::new("plans/published/004.toml")).unwrap()
}

#[test]
fn two_runs_of_one_plan_each_give_the_rows_of_the_stack_they_measured() {
    // full-length runs are made one stack per run: go-pgx served 2000 in one, ktor-jdbc 500 in
    // the other (each was offered only that), and both rows must be read, each from its own run
    let pa = one_shelf_plan("004-on", 2000);
    let pb = one_shelf_plan("004-on", 500);
    let mut a = RunReport::new(&pa, "sim");
    a.run_id = "run-go".into();
    a.stacks.push(simulate(&pa, "go-pgx", |_| 5.0, 50.0, 20.0));
    let mut b = RunReport::new(&pb, "sim");
    b.run_id = "run-ktor".into();
    b.stacks
        .push(simulate(&pb, "ktor-jdbc", |_| 5.0, 50.0, 20.0));
    let p = ceilings_of_004_on(&[
        ("Go", "go-pgx", 1000.0),
        ("Ktor", "ktor-jdbc", 400.0),
        ("Node", "fastify-pg", 300.0),
    ]);
    for runs in [[&a, &b], [&b, &a]] {
        let c = ceiling_compare::compare_runs_with_source(&runs, &p);
        let t = &c.tables[0];
        let ours = |i: usize| t.rows[i].cells[0].ours;
        assert!((ours(0).unwrap() - 2000.0).abs() < 1.0, "{:?}", ours(0));
        assert!((ours(1).unwrap() - 500.0).abs() < 1.0, "{:?}", ours(1));
        assert_eq!(ours(2), None, "a stack neither run measured");
        assert!(
            c.notices
                .iter()
                .any(|n| n.contains("two runs of plan `004-on`") && n.contains("not interleaved")),
            "{:?}",
            c.notices
        );
    }
}

#[test]
fn stacks_within_two_percent_are_a_tie_not_an_order() {
    // truth: both stacks hold the plan's one shelf (2000 RPS offered) — ceiling cannot rank them;
    // the source ranked them 3000 > 0, which is then neither confirmed nor reversed
    let pa = one_shelf_plan("004-on", 2000);
    let mut a = RunReport::new(&pa, "sim");
    a.stacks.push(simulate(&pa, "go-pgx", |_| 5.0, 50.0, 20.0));
    a.stacks
        .push(simulate(&pa, "ktor-jdbc", |_| 6.0, 60.0, 30.0));
    let p = ceilings_of_004_on(&[("Go", "go-pgx", 3000.0), ("Ktor", "ktor-jdbc", 0.0)]);
    let c = compare_with_source(&a, &p);
    let o = &c.tables[0].order[0];
    assert_eq!(o.published, vec!["go-pgx", "ktor-jdbc"]);
    assert_eq!(o.ours.len(), 1, "{:?}", o.ours);
    assert!(o.ours[0].contains(" = "), "{:?}", o.ours);
    assert!(o.swapped.is_empty(), "{:?}", o.swapped);
    assert_eq!(
        o.unresolved,
        vec![("go-pgx".to_string(), "ktor-jdbc".to_string())]
    );
    assert!(!o.agrees());
}

/// A search outcome as run.json holds it: a lower bound, or an interval (`hi` None = unbounded,
/// written `null` as run.json writes infinity).
fn searched(
    status: &str,
    rps: f64,
    interval: Option<(f64, Option<f64>)>,
) -> ceiling_analyze::SearchOutcome {
    let iv = match interval {
        Some((lo, hi)) => format!(
            r#"{{"estimate": {rps}, "lo": {lo}, "hi": {}, "bracket_lo": {lo}, "bracket_hi": {rps}, "margins": [0.5, 1.5], "knee": "cliff", "replicates": 2000}}"#,
            hi.map_or("null".to_string(), |h| h.to_string())
        ),
        None => "null".into(),
    };
    serde_json::from_str(&format!(
        r#"{{"probes": [], "baseline": null, "status": "{status}", "ceiling_rps": {rps}, "interval": {iv}, "binding": null, "tolerance": 0.05, "stop": {{"kind": "budget"}}, "elapsed_s": 600.0}}"#
    ))
    .unwrap()
}

#[test]
fn stacks_whose_search_ranges_overlap_are_not_ranked() {
    // truth (today's search on plan 000, budget-cut): ktor-jdbc only showed ≥ 6169 and the other
    // stack's interval is 4000–∞, so either could be the higher: the source's order is neither
    // confirmed nor reversed, although 6169 > 5710
    let pa = one_shelf_plan("004-on", 2000);
    let mut a = RunReport::new(&pa, "sim");
    let mut k = simulate(&pa, "ktor-jdbc", |_| 5.0, 50.0, 20.0);
    k.search = Some(searched("lower_bound", 6169.0, None));
    let mut w = simulate(&pa, "spring-webflux-r2dbc", |_| 5.0, 50.0, 20.0);
    w.search = Some(searched("bracketed", 5710.0, Some((4000.0, None))));
    a.stacks.push(k);
    a.stacks.push(w);
    let p = ceilings_of_004_on(&[
        ("Ktor", "ktor-jdbc", 3000.0),
        ("WebFlux", "spring-webflux-r2dbc", 2000.0),
    ]);
    let c = compare_with_source(&a, &p);
    let o = &c.tables[0].order[0];
    assert!(o.swapped.is_empty(), "{o:?}");
    assert_eq!(
        o.unresolved,
        vec![("ktor-jdbc".to_string(), "spring-webflux-r2dbc".to_string())]
    );
    assert_eq!(o.ours, vec!["ktor-jdbc ~ spring-webflux-r2dbc"]);

    // narrowed and apart (5500–5900 vs 3800–4000): an order, the source's
    a.stacks[0].search = Some(searched("narrowed", 5700.0, Some((5500.0, Some(5900.0)))));
    a.stacks[1].search = Some(searched("narrowed", 3900.0, Some((3800.0, Some(4000.0)))));
    let c = compare_with_source(&a, &p);
    let o = &c.tables[0].order[0];
    assert!(o.agrees(), "{o:?}");
    assert_eq!(o.ours, vec!["ktor-jdbc", "spring-webflux-r2dbc"]);
    // and apart the other way round: reversed
    a.stacks.swap(0, 1);
    a.stacks[0].stack = "ktor-jdbc".into();
    a.stacks[1].stack = "spring-webflux-r2dbc".into();
    let c = compare_with_source(&a, &p);
    let o = &c.tables[0].order[0];
    assert_eq!(
        o.swapped,
        vec![("ktor-jdbc".to_string(), "spring-webflux-r2dbc".to_string())]
    );
}

#[test]
fn a_ratio_to_a_row_that_is_not_there_is_an_error_at_its_line() {
    let bad = SUMMARY.replace("ratio_to = \"Go, on\"", "ratio_to = \"Go, none\"");
    let e = parse_published(&bad, Path::new("004.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("004.toml:18:"), "{e}");
    assert!(e.contains("must name another row"), "{e}");
}

#[test]
fn instances_come_from_the_plans_cost_over_the_runs_ceilings() {
    // truth: go-pgx's ceiling 3000 and ktor-jdbc's 1500; the load = what 3 go-pgx instances
    // serve, so ktor-jdbc needs ⌈3 × 3000 ÷ 1500⌉ = 6
    let mut r = run("350ms", 5.0);
    let st = r.plan.stand.as_mut().unwrap();
    st.cpus = Some(1.0);
    st.memory_mb = Some(1024);
    r.plan.cost = Some(ceiling_plan::CostSettings {
        currency: "RUB".into(),
        cpu_hour: 1.12,
        gb_hour: 0.39,
        services: 10,
        min_instances: 3,
        reference: Some("go-pgx".into()),
        target_rps: None,
    });
    let published = r#"
source = "000"
title = "t"
published = "p"
seed = "000_x.txt"
[[tables]]
id = "cost"
title = "Cost"
line = 1
plan = "000-status-mixed"
point = "ceiling"
[[tables.rows]]
label = "go-pgx"
stack = "go-pgx"
instances = 3
[[tables.rows]]
label = "ktor-jdbc"
stack = "ktor-jdbc"
instances = 15
"#;
    let p = parse_published(published, Path::new("plans/published/000.toml")).unwrap();
    let c = compare_with_source(&r, &p);
    let ours = |i: usize| {
        c.tables[0].rows[i]
            .cells
            .iter()
            .find(|c| c.metric == Metric::Instances)
            .and_then(|c| c.ours)
    };
    assert_eq!(ours(0), Some(3.0));
    assert_eq!(ours(1), Some(6.0));
    // without a [cost], nothing is invented
    r.plan.cost = None;
    let c = compare_with_source(&r, &p);
    assert!(c.tables[0].rows[1].cells.iter().all(|c| c.ours.is_none()));
}

/// The run's length beside the source's: every repetition of a closed model counted, the
/// warm-up once — from the stored stages, so a run recorded by any version reads the same.
#[test]
fn the_duration_condition_counts_every_repetition_and_the_warmup_once() {
    let p = parse_published(PUBLISHED, Path::new("plans/published/000.toml")).unwrap();
    let duration = |r: &RunReport| {
        compare_with_source(r, &p)
            .conditions
            .into_iter()
            .find(|c| c.key == "duration")
            .and_then(|c| c.run)
            .unwrap()
    };
    assert_eq!(duration(&run("350ms", 5.0)), "80 s planned in total");
    let closed = ceiling_plan::parse_plan(
        "name = \"000-status-mixed\"\nsource = \"000\"\n[load]\nrepetitions = 3\n[[warmup]]\nconnections = 10\nduration = \"5s\"\n[[stages]]\nconnections = 100\nduration = \"30s\"\n[[stages]]\nconnections = 200\nduration = \"30s\"\n[[requests]]\nname = \"g\"\npath = \"/\"\n[slo]\np99 = \"1s\"\n",
        Path::new("plans/000-status-mixed.toml"),
    )
    .unwrap();
    let mut r = RunReport::new(&closed, "closed");
    // as a run recorded before the total counted repetitions
    r.plan.total_duration_s = 65.0;
    assert_eq!(
        duration(&r),
        "185 s planned in total: 60 s of levels × 3 repetitions, after a 5-s warm-up"
    );
    // interleaved rounds after a warm-up bounded by its request count (source 002's 100k
    // requests): no "-0 s of warm-up"
    let counted = ceiling_plan::parse_plan(
        "name = \"000-status-mixed\"\nsource = \"000\"\n[load]\nrepetitions = 3\n[[warmup]]\nconnections = 100\nrequests = 1000\n[[stages]]\nconnections = 100\nduration = \"30s\"\n[[requests]]\nname = \"g\"\npath = \"/\"\n[slo]\np99 = \"1s\"\n",
        Path::new("plans/000-status-mixed.toml"),
    )
    .unwrap();
    let mut r = RunReport::new(&counted, "counted");
    r.plan.interleaved_rounds = 3;
    assert_eq!(
        duration(&r),
        "90 s planned in total: 30 s of levels × 3 repetitions, each a start of its own with its warm-up, the stacks taking turns, after a warm-up bounded by its request count"
    );
}

/// A source whose latencies are wrk's (`wrk_latencies = true`): ceiling's latency cells take the
/// shelf's wrk-corrected percentiles, and say so with the recorded figure beside; a source
/// without the flag, or a shelf without the correction (an older run), keeps the recorded one.
#[test]
fn a_wrk_source_is_compared_with_the_wrk_correction_of_ceilings_histogram() {
    let pa = one_shelf_plan("004-on", 2000);
    let mut a = RunReport::new(&pa, "sim");
    a.stacks.push(simulate(&pa, "go-pgx", |_| 5.0, 50.0, 20.0));
    let text = |wrk: bool| {
        format!(
            "source = \"004\"\ntitle = \"t\"\npublished = \"p\"\nseed = \"004_x.txt\"\n\
             wrk_latencies = {wrk}\n[[tables]]\nid = \"on\"\ntitle = \"on\"\nline = 1\n\
             plan = \"004-on\"\npoint = \"shelf\"\n[[tables.rows]]\nlabel = \"Go\"\n\
             stack = \"go-pgx\"\nrate = 2000\np50_ms = 1.0\np99_ms = 9.0\n"
        )
    };
    let p50 = |run: &RunReport, wrk: bool| {
        let p = parse_published(&text(wrk), Path::new("plans/published/004.toml")).unwrap();
        let c = compare_with_source(run, &p);
        let cell = c.tables[0].rows[0]
            .cells
            .iter()
            .find(|c| c.metric == ceiling_compare::Metric::P50Ms)
            .cloned()
            .unwrap();
        (cell.ours.unwrap(), cell.ours_is)
    };
    let recorded = a.stacks[0].shelves[0].latency.p50_ms;
    // an older run (no correction stored): the recorded figure, flag or not
    assert_eq!(p50(&a, true), (recorded, None));
    let mut corrected = a.stacks[0].shelves[0].latency.clone();
    corrected.p50_ms = recorded + 7.0;
    for s in &mut a.stacks[0].shelves {
        s.wrk_latency = Some(corrected.clone());
    }
    let (v, kind) = p50(&a, true);
    assert_eq!(v, recorded + 7.0);
    let kind = kind.unwrap();
    assert!(
        kind.contains("wrk-corrected") && kind.contains(&format!("recorded: {recorded:.3} ms")),
        "{kind}"
    );
    assert_eq!(p50(&a, false), (recorded, None));
}

/// The source's pool sizes beside the pool the run's stacks were given: the plan's
/// `[stand] pool_size` (which the stand hands every stack over its own stack.toml), or each
/// stack's own; a run that recorded no stand settings says nothing.
#[test]
fn the_pools_condition_is_the_pool_the_run_gave_its_stacks() {
    let text = PUBLISHED.replace(
        "hardware = \"one Windows host\"",
        "hardware = \"one Windows host\"\npools = \"all connection pools 100\"",
    );
    let p = parse_published(&text, Path::new("plans/published/000.toml")).unwrap();
    let pools = |r: &RunReport| {
        compare_with_source(r, &p)
            .conditions
            .into_iter()
            .find(|c| c.key == "pools")
            .map(|c| (c.source, c.run))
            .unwrap()
    };
    let mut r = run("350ms", 5.0);
    r.plan.stand.as_mut().unwrap().pool_size = Some(100);
    let (source, ours) = pools(&r);
    assert_eq!(source.as_deref(), Some("all connection pools 100"));
    assert!(
        ours.as_deref().unwrap().contains("pool 100 connections"),
        "{ours:?}"
    );
    r.plan.stand.as_mut().unwrap().pool_size = None;
    assert!(pools(&r).1.unwrap().contains("each stack's own pool size"));
    r.plan.stand = None;
    assert_eq!(pools(&r).1, None);
}
