//! What the comparison, gates and claims tests share (each uses part of it; report's rendering
//! tests include this file too): a two-shelf plan, a simulated stack of known latency, a search
//! outcome as run.json holds it, and a claims file with the run that answers it.

#![allow(dead_code)]

use ceiling_metrics::{ResourceSample, Role, Second};
use std::path::Path;

pub fn plan() -> ceiling_plan::Plan {
    let text = r#"
name = "gates"
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
p99 = "100ms"
errors = "1%"
[analysis]
trim_head = "5s"
trim_tail = "0s"
min_window = "30s"
"#;
    ceiling_plan::parse_plan(text, Path::new("plans/gates.toml")).unwrap()
}

/// One stack whose every request at rate r takes `lat_ms(r)` ms, with `cpu` % of a core and
/// `rss` MiB.
pub fn simulate_with(
    plan: &ceiling_plan::Plan,
    stack: &str,
    lat_ms: impl Fn(f64) -> f64,
    cpu: f64,
    rss: f64,
) -> ceiling_analyze::StackAnalysis {
    let mut acc = ceiling_analyze::RunAccumulator::new(plan, stack);
    for sp in ceiling_analyze::stage_spans(plan, 1) {
        let (a, b) = (sp.start_s.unwrap() as u32, sp.end_s.unwrap() as u32);
        let rate = match &plan.stages[sp.level] {
            ceiling_plan::Stage::Hold { rate, .. } => *rate,
            _ => unreachable!(),
        };
        for t in a..b {
            let mut s = Second::new(t, sp.phase, sp.index, 1);
            s.offered = rate as u64;
            s.sent = rate as u64;
            let v = (lat_ms(rate) * 1000.0) as u64;
            for _ in 0..rate as u64 {
                ceiling_metrics::record_us(&mut s.tags[0].latency, v);
                ceiling_metrics::record_us(&mut s.tags[0].service, v);
                s.tags[0].counts.add(ceiling_metrics::Outcome::Ok);
            }
            ceiling_metrics::record_us(&mut s.lag, 100);
            s.generator_cpu = 10.0;
            acc.push_second(&s);
            acc.extend_resources(vec![ResourceSample {
                t: t as f64 + 1.0,
                who: Role::Stack,
                cpu_pct: cpu,
                rss_bytes: (rss * 1048576.0) as u64,
                cgroup_memory_bytes: None,
            }]);
        }
    }
    acc.finish()
}

/// go-pgx holds both shelves at 5 ms; ktor-jdbc fails 3000 (400 ms), so its ceiling is 1500.
/// [`simulate_with`] at 50% of a core and 64 MiB.
pub fn simulate(
    p: &ceiling_plan::Plan,
    stack: &str,
    lat_ms: impl Fn(f64) -> f64,
) -> ceiling_analyze::StackAnalysis {
    simulate_with(p, stack, lat_ms, 50.0, 64.0)
}

/// A search outcome as run.json holds it: a lower bound, or a bounded interval.
pub fn searched(
    status: &str,
    rps: f64,
    interval: Option<(f64, f64)>,
) -> ceiling_analyze::SearchOutcome {
    let iv = match interval {
        Some((lo, hi)) => format!(
            r#"{{"estimate": {rps}, "lo": {lo}, "hi": {hi}, "bracket_lo": {lo}, "bracket_hi": {hi}, "margins": [0.5, 1.5], "knee": "smooth", "replicates": 2000}}"#
        ),
        None => "null".into(),
    };
    serde_json::from_str(&format!(
        r#"{{"probes": [], "baseline": null, "status": "{status}", "ceiling_rps": {rps}, "interval": {iv}, "binding": null, "tolerance": 0.05, "stop": {{"kind": "budget"}}, "elapsed_s": 600.0}}"#
    ))
    .unwrap()
}

/// A claims file of every kind of check (threshold, ratio, order, a shelf and a plan nobody ran)
/// and one untestable statement, judged on [`fast_and_slow`].
pub const CLAIMS: &str = r#"
source = "999"
seed = "999_x.txt"

[[claims]]
id = "slow-fails-3000"
text = "slow cannot hold 3000 RPS: its p99 goes over a second there"
line = 10
plan = "gates"
kind = "threshold"
stack = "slow"
metric = "p99_ms"
point = "hold 3000"
op = ">="
value = 1000

[[claims]]
id = "fast-holds-3000"
text = "fast serves 3000 RPS within 10 ms"
line = 11
plan = "gates"
kind = "threshold"
stack = "fast"
metric = "p99_ms"
point = "hold 3000"
op = "<="
value = 10

[[claims]]
id = "fast-twice-slow"
text = "fast sustains 1.5x what slow does"
line = 12
plan = "gates"
kind = "ratio"
a = "fast"
b = "slow"
op = ">="
value = 1.5

[[claims]]
id = "fast-first"
text = "fast > slow"
line = 13
plan = "gates"
kind = "order"
stacks = ["fast", "slow"]

[[claims]]
id = "no-such-shelf"
text = "slow at 2500"
line = 14
plan = "gates"
kind = "threshold"
stack = "slow"
metric = "p99_ms"
point = "hold 2500"
op = "<="
value = 10

[[claims]]
id = "other-plan"
text = "needs a plan nobody ran"
line = 15
plan = "never-run"
kind = "threshold"
stack = "slow"
op = ">="
value = 1

[[untestable]]
text = "the author's opinion"
line = 20
why = "no measurable content"
"#;

/// The run every claim of [`CLAIMS`] is judged on: fast holds both shelves at 5 ms, slow takes
/// 1.2 s at 3000 RPS; searched ceilings fast 3000–3200, slow 1500–1600 (fast/slow ≈ 1.94, 1.8–2.1).
pub fn fast_and_slow() -> ceiling_records::RunReport {
    let p = plan();
    let mut r = ceiling_records::RunReport::new(&p, "20261127-000000-gates");
    r.stacks.push(simulate(&p, "fast", |_| 5.0));
    r.stacks.push(simulate(&p, "slow", |rate| {
        if rate > 2000.0 {
            1200.0
        } else {
            8.0
        }
    }));
    r.stacks[0].search = Some(searched("narrowed", 3100.0, Some((3000.0, 3200.0))));
    r.stacks[1].search = Some(searched("narrowed", 1550.0, Some((1500.0, 1600.0))));
    r
}
