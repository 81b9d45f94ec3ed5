//! CI gates on simulated runs whose figures are known in advance: each gate passes, fails or is
//! inconclusive exactly where the truth says, and never passes on a figure the run could not
//! establish.

use ceiling_compare::gate::{
    exit_code, judge_report, regressions, Gate, GateVerdict, EXIT_GATE_FAILED,
    EXIT_GATE_INCONCLUSIVE,
};
use ceiling_metrics::{ResourceSample, Role, Second};
use ceiling_report::RunReport;
use std::path::Path;

fn plan() -> ceiling_plan::Plan {
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

/// A stack whose every request at rate r takes `lat_ms(r)` ms.
fn simulate(
    p: &ceiling_plan::Plan,
    stack: &str,
    lat_ms: impl Fn(f64) -> f64,
) -> ceiling_analyze::StackAnalysis {
    let mut acc = ceiling_analyze::RunAccumulator::new(p, stack);
    for sp in ceiling_analyze::stage_spans(p, 1) {
        let (a, b) = (sp.start_s.unwrap() as u32, sp.end_s.unwrap() as u32);
        let rate = match &p.stages[sp.level] {
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
                cpu_pct: 50.0,
                rss_bytes: 1 << 26,
                cgroup_memory_bytes: None,
            }]);
        }
    }
    acc.finish()
}

/// A search outcome as run.json holds it: a lower bound, or a bounded interval.
fn searched(
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

fn gates(list: &[&str]) -> Vec<Gate> {
    list.iter().map(|g| g.parse().unwrap()).collect()
}

fn verdicts(r: &RunReport, list: &[&str]) -> Vec<(String, GateVerdict)> {
    judge_report(&gates(list), r)
        .into_iter()
        .map(|x| (x.target, x.verdict))
        .collect()
}

#[test]
fn latency_gates_read_the_shelf_at_the_rate_asked() {
    let p = plan();
    let mut r = RunReport::new(&p, "sim");
    // fast holds 3000 RPS at 5 ms; slow takes 400 ms there
    r.stacks.push(simulate(&p, "fast", |_| 5.0));
    r.stacks.push(simulate(&p, "slow", |rate| {
        if rate > 2000.0 {
            400.0
        } else {
            8.0
        }
    }));
    assert_eq!(
        verdicts(&r, &["p99<=20ms@3000"]),
        [
            ("fast".into(), GateVerdict::Pass),
            ("slow".into(), GateVerdict::Fail)
        ]
    );
    assert_eq!(
        verdicts(&r, &["slow:p99<=20ms@1500", "errors<1%@1500"]),
        [
            ("slow".into(), GateVerdict::Pass),
            ("fast".into(), GateVerdict::Pass),
            ("slow".into(), GateVerdict::Pass)
        ]
    );
    // no shelf at 2500, no stack `ktor`: never a pass
    let res = judge_report(&gates(&["p99<=20ms@2500", "ktor:ceiling>=1"]), &r);
    assert!(
        res.iter().all(|x| x.verdict == GateVerdict::Inconclusive),
        "{res:?}"
    );
    assert!(res[0].detail.contains("1500, 3000"), "{}", res[0].detail);
    assert_eq!(exit_code(&res), Some(EXIT_GATE_INCONCLUSIVE));
    // the stepped ceilings: fast 3000 (not bracketed: a lower bound), slow 1500 (bracketed)
    let res = judge_report(&gates(&["ceiling>=2000"]), &r);
    assert_eq!(res[0].verdict, GateVerdict::Pass, "{res:?}");
    assert_eq!(res[1].verdict, GateVerdict::Fail, "{res:?}");
    assert_eq!(exit_code(&res), Some(EXIT_GATE_FAILED));
    let res = judge_report(&gates(&["fast:ceiling>=4000"]), &r);
    assert_eq!(
        res[0].verdict,
        GateVerdict::Inconclusive,
        "a lower bound below the bar: {res:?}"
    );
}

#[test]
fn a_searched_ceiling_passes_or_fails_only_when_its_whole_interval_does() {
    let p = plan();
    let mut r = RunReport::new(&p, "sim");
    let mut a = simulate(&p, "a", |_| 5.0);
    let cases = [
        (
            Some((5500.0, 5900.0)),
            "narrowed",
            5700.0,
            GateVerdict::Pass,
        ),
        (
            Some((4800.0, 5200.0)),
            "narrowed",
            5000.0,
            GateVerdict::Inconclusive,
        ),
        (
            Some((4000.0, 4500.0)),
            "narrowed",
            4250.0,
            GateVerdict::Fail,
        ),
        (None, "lower_bound", 6169.0, GateVerdict::Pass),
    ];
    for (iv, status, est, want) in cases {
        a.search = Some(searched(status, est, iv));
        r.stacks = vec![a.clone()];
        let res = judge_report(&gates(&["ceiling>=5000"]), &r);
        assert_eq!(res[0].verdict, want, "{iv:?} {status}: {res:?}");
    }
    // a lower bound of 6169 says nothing about 7000
    let res = judge_report(&gates(&["ceiling>=7000"]), &r);
    assert_eq!(res[0].verdict, GateVerdict::Inconclusive, "{res:?}");
    assert!(res[0].detail.contains("lower bound"), "{}", res[0].detail);
}

#[test]
fn a_regression_fails_only_when_it_is_significant() {
    let p = plan();
    let mut base = RunReport::new(&p, "base");
    let mut new = RunReport::new(&p, "new");
    let mut a = simulate(&p, "a", |_| 5.0);
    a.search = Some(searched("narrowed", 5700.0, Some((5500.0, 5900.0))));
    base.stacks.push(a.clone());
    // 20% lower and the intervals far apart: a significant regression
    a.search = Some(searched("narrowed", 4560.0, Some((4400.0, 4720.0))));
    new.stacks.push(a.clone());
    let cmp = ceiling_compare::compare_runs(&base, &new).unwrap();
    let res = regressions(&cmp, 0.05);
    let ceiling = res
        .iter()
        .find(|x| x.detail.starts_with("ceiling"))
        .unwrap();
    assert_eq!(ceiling.verdict, GateVerdict::Fail, "{res:?}");
    assert_eq!(exit_code(&res), Some(EXIT_GATE_FAILED));
    // 6% lower but the intervals wide: not significant, so no failure
    new.stacks[0].search = Some(searched("bracketed", 5360.0, Some((4300.0, 6400.0))));
    let cmp = ceiling_compare::compare_runs(&base, &new).unwrap();
    let res = regressions(&cmp, 0.05);
    assert!(
        res.iter().all(|x| x.verdict != GateVerdict::Fail),
        "{res:?}"
    );
    // the same run twice: nothing worse
    let cmp = ceiling_compare::compare_runs(&base, &base).unwrap();
    assert_eq!(exit_code(&regressions(&cmp, 0.05)), None);
}
