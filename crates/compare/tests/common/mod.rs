//! What the comparison, gates and claims tests share (each uses part of it): a two-shelf plan, a
//! simulated stack of known latency, and a search outcome as run.json holds it.

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
