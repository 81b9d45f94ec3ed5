//! Tests on synthetic runs: seconds built with known histograms.

use crate::*;
use ceiling_metrics::{record_us, Outcome, Phase, ResourceSample, Role, Second};
use ceiling_plan::{parse_plan, Plan};
use std::path::Path;

/// What one request name does in one second: `n` requests at `lat_us`, the first `err` of them
/// ending with a 5xx.
#[derive(Clone, Copy)]
struct Tag {
    n: u64,
    lat_us: u64,
    err: u64,
}

fn tag(n: u64, lat_ms: f64) -> Tag {
    Tag {
        n,
        lat_us: (lat_ms * 1000.0) as u64,
        err: 0,
    }
}

#[derive(Clone)]
struct Sec {
    offered: u64,
    tags: Vec<Tag>,
    lag_us: u64,
    gen_cpu: f64,
    overflow: u64,
}

fn sec(offered: u64, tags: Vec<Tag>) -> Sec {
    Sec {
        offered,
        tags,
        lag_us: 100,
        gen_cpu: 20.0,
        overflow: 0,
    }
}

fn build(t: u32, phase: Phase, stage: usize, s: &Sec) -> Second {
    let mut out = Second::new(t, phase, stage, s.tags.len());
    out.offered = s.offered;
    out.sent = s.offered;
    for (i, tg) in s.tags.iter().enumerate() {
        for k in 0..tg.n {
            record_us(&mut out.tags[i].latency, tg.lat_us);
            record_us(&mut out.tags[i].service, tg.lat_us / 2);
            out.tags[i].counts.add(if k < tg.err {
                Outcome::Status5xx
            } else {
                Outcome::Ok
            });
        }
    }
    let total: u64 = s.tags.iter().map(|t| t.n).sum();
    for _ in 0..total.max(1) {
        record_us(&mut out.lag, s.lag_us);
    }
    out.generator_cpu = s.gen_cpu;
    out.overflow = s.overflow;
    out
}

/// Generates every second of `plan` (integer stage boundaries): `f(phase, stage, t, t_in_stage)`.
fn run_plan(
    plan: &Plan,
    passes: u32,
    mut f: impl FnMut(Phase, usize, u32, u32) -> Option<Sec>,
) -> Vec<Second> {
    let mut out = Vec::new();
    for sp in stage_spans(plan, passes) {
        let (a, b) = (sp.start_s.unwrap() as u32, sp.end_s.unwrap() as u32);
        for t in a..b {
            if let Some(s) = f(sp.phase, sp.index, t, t - a) {
                out.push(build(t, sp.phase, sp.index, &s));
            }
        }
    }
    out
}

const OPEN: &str = r#"
name = "t"
[[warmup]]
hold = 100
duration = "5s"
[[stages]]
ramp = { from = 0, to = 100 }
duration = "10s"
[[stages]]
hold = 100
duration = "40s"
[[stages]]
hold = 200
duration = "40s"
[[stages]]
hold = 300
duration = "40s"
[[requests]]
name = "get"
weight = 99
path = "/a"
[[requests]]
name = "post"
weight = 1
method = "post"
path = "/b"
[slo]
p99 = "350ms"
errors = "1%"
[analysis]
trim_head = "5s"
trim_tail = "5s"
min_window = "20s"
"#;

fn open_plan(extra: &str) -> Plan {
    let text = OPEN.replace("[analysis]", &format!("{extra}\n[analysis]"));
    parse_plan(&text, Path::new("t.toml")).unwrap()
}

/// Healthy second at `rate`: 99% get at 10 ms, 1% post at 20 ms, achieved = offered.
fn healthy(rate: u64) -> Sec {
    sec(
        rate,
        vec![tag(rate * 99 / 100, 10.0), tag(rate / 100, 20.0)],
    )
}

fn analyse(plan: &Plan, seconds: &[Second], res: Vec<ResourceSample>) -> StackAnalysis {
    let mut acc = RunAccumulator::new(plan, "s");
    for s in seconds {
        acc.push_second(s);
    }
    acc.extend_resources(res);
    acc.finish()
}

fn rate_of(stage: usize) -> u64 {
    [0, 100, 200, 300][stage]
}

#[test]
fn layout_follows_the_plan() {
    let p = open_plan("");
    let sp = stage_spans(&p, 1);
    assert_eq!(sp.len(), 5);
    assert_eq!(
        (sp[0].phase, sp[0].start_s, sp[0].end_s),
        (Phase::Warmup, Some(0.0), Some(5.0))
    );
    assert_eq!(
        (sp[2].index, sp[2].start_s, sp[2].end_s),
        (1, Some(15.0), Some(55.0))
    );
    let sh = shelf_specs(&p, 1);
    assert_eq!(sh.len(), 3, "holds only, ramps are not shelves");
    assert_eq!(sh[0].planned_window(), Some((20.0, 50.0)));
    assert_eq!(sh[0].planned_kept_seconds(), Some(30.0));
    assert_eq!(sh[2].stage, Some((Phase::Measure, 3)));
}

#[test]
fn trimming_keeps_only_the_window() {
    let p = open_plan("");
    // Head and tail of every shelf are terrible (10 s latency, 50% errors); the window is clean.
    let secs = run_plan(&p, 1, |ph, st, _t, k| {
        if ph == Phase::Warmup || st == 0 {
            return Some(sec(50, vec![tag(50, 5000.0), tag(0, 1.0)]));
        }
        let r = rate_of(st);
        if !(5..35).contains(&k) {
            Some(sec(
                r,
                vec![
                    Tag {
                        n: r,
                        lat_us: 10_000_000,
                        err: r / 2,
                    },
                    tag(0, 1.0),
                ],
            ))
        } else {
            Some(healthy(r))
        }
    });
    let a = analyse(&p, &secs, vec![]);
    assert_eq!(a.shelves.len(), 3);
    let s = &a.shelves[0];
    assert_eq!(s.window.kept_s, 30.0);
    assert_eq!(
        (s.window.kept_start_s, s.window.kept_end_s),
        (Some(20.0), Some(50.0))
    );
    assert_eq!(s.window.seen_s, 40.0);
    assert_eq!(s.requests, 30 * 100);
    assert_eq!(s.errors, 0);
    assert!(
        (s.latency.p99_ms - 10.0).abs() < 0.05,
        "{}",
        s.latency.p99_ms
    );
    assert!(s.latency.max_ms < 25.0);
    assert_eq!(s.verdict, Verdict::Valid, "{}", s.reasons_text());
    assert!(a.shelves.iter().all(|s| s.is_valid()));
    // Last valid shelf = hold 300, not bracketed.
    assert_eq!(a.ceiling.index, Some(2));
    assert!((a.ceiling.rps - 300.0).abs() < 1e-9);
    assert!(!a.ceiling.bracketed);
    assert!(a
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::NotBracketed && w.message.contains("not bracketed")));
}

#[test]
fn a_late_stage_start_moves_the_window_with_it() {
    let p = open_plan("");
    // The generator starts hold 200 three seconds late (t=58 instead of 55): the window follows
    // the observed start plus the planned duration, [63, 93), instead of cutting 3 s of head trim.
    let mut secs: Vec<Second> = Vec::new();
    for t in 0..160u32 {
        let (ph, st) = match t {
            0..=4 => (Phase::Warmup, 0),
            5..=14 => (Phase::Measure, 0),
            15..=57 => (Phase::Measure, 1),
            58..=97 => (Phase::Measure, 2),
            _ => (Phase::Measure, 3),
        };
        // The first 5 s of the late stage are bad (they must be trimmed).
        let s = if (58..63).contains(&t) {
            sec(200, vec![tag(200, 2000.0), tag(0, 1.0)])
        } else {
            healthy(rate_of(st).max(10))
        };
        secs.push(build(t, ph, st, &s));
    }
    let a = analyse(&p, &secs, vec![]);
    let s = &a.shelves[1];
    assert_eq!(
        (s.window.stage_start_s, s.window.stage_end_s),
        (Some(58.0), Some(98.0))
    );
    assert_eq!(
        (s.window.kept_start_s, s.window.kept_end_s),
        (Some(63.0), Some(93.0))
    );
    assert_eq!(s.verdict, Verdict::Valid, "{}", s.reasons_text());
    // hold 100 ran 3 s longer than planned: its planned window is unchanged.
    assert_eq!(a.shelves[0].window.kept_end_s, Some(50.0));
}

#[test]
fn latency_rule_and_last_valid_shelf() {
    let p = open_plan("");
    let secs = run_plan(&p, 1, |_, st, _, _| {
        let r = rate_of(st).max(10);
        if st == 2 {
            Some(sec(r, vec![tag(r * 99 / 100, 400.0), tag(r / 100, 20.0)]))
        } else if st == 3 {
            Some(sec(r, vec![tag(r * 99 / 100, 900.0), tag(r / 100, 20.0)]))
        } else {
            Some(healthy(r))
        }
    });
    let a = analyse(&p, &secs, vec![]);
    assert_eq!(a.shelves[0].verdict, Verdict::Valid);
    assert_eq!(a.shelves[1].verdict, Verdict::Failed);
    match &a.shelves[1].reasons[0] {
        Reason::Latency {
            request,
            percentile,
            measured_ms,
            limit_ms,
        } => {
            assert_eq!(*request, None);
            assert_eq!(*percentile, 99.0);
            assert!((*measured_ms - 400.0).abs() < 0.5);
            assert_eq!(*limit_ms, 350.0);
        }
        r => panic!("unexpected {r:?}"),
    }
    assert!((a.ceiling.rps - 100.0).abs() < 1e-9);
    assert_eq!(a.ceiling.label.as_deref(), Some("hold 100"));
    assert!(a.ceiling.bracketed);
    assert_eq!(a.ceiling.failed_after, Some(1));
    assert!((a.ceiling.working_load_rps - 70.0).abs() < 1e-9);
    assert!(a.ceiling.p99_ms.unwrap() < 11.0);
    assert_eq!(a.metric, "RPS@p99≤350ms");
}

#[test]
fn last_valid_even_after_a_failure_and_the_zero_case() {
    let p = open_plan("");
    // valid, failed, valid: the ceiling is the last valid one (source 000), flagged non-monotonic.
    let secs = run_plan(&p, 1, |_, st, _, _| {
        let r = rate_of(st).max(10);
        if st == 2 {
            Some(sec(r, vec![tag(r, 500.0), tag(0, 1.0)]))
        } else {
            Some(healthy(r))
        }
    });
    let a = analyse(&p, &secs, vec![]);
    assert_eq!(a.ceiling.index, Some(2));
    assert_eq!(a.ceiling.failed_before, vec![1]);
    assert!(a
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::NonMonotonic));

    // Nothing passes: "0", bracketed from above by the first shelf.
    let secs = run_plan(&p, 1, |_, st, _, _| {
        let r = rate_of(st).max(10);
        Some(sec(r, vec![tag(r, 411.0), tag(0, 1.0)]))
    });
    let a = analyse(&p, &secs, vec![]);
    assert_eq!(a.ceiling.rps, 0.0);
    assert!(!a.ceiling.found);
    assert!(a.ceiling.bracketed);
    assert!(
        a.ceiling.summary.starts_with("0: no shelf passed"),
        "{}",
        a.ceiling.summary
    );
    assert!(
        a.ceiling.summary.contains("p99 411 ms > 350 ms"),
        "{}",
        a.ceiling.summary
    );
}

#[test]
fn error_rate_rule_is_strict() {
    let p = open_plan("");
    let secs = run_plan(&p, 1, |_, st, _, k| {
        let r = rate_of(st).max(10);
        let mut s = healthy(r);
        // shelf 0: 0.5% errors (ok); shelf 1: exactly 1% (fails: must be < 1%); shelf 2: 3%.
        s.tags[0].err = match st {
            1 => (k % 2 == 0) as u64,
            2 => r / 100,
            3 => r * 3 / 100,
            _ => 0,
        };
        Some(s)
    });
    let a = analyse(&p, &secs, vec![]);
    assert_eq!(
        a.shelves[0].verdict,
        Verdict::Valid,
        "{}",
        a.shelves[0].reasons_text()
    );
    assert!((a.shelves[0].error_rate - 0.005).abs() < 1e-9);
    assert_eq!(a.shelves[0].outcomes.get("5xx"), Some(&15));
    assert_eq!(a.shelves[1].verdict, Verdict::Failed);
    assert!(
        matches!(
            a.shelves[1].reasons[0],
            Reason::Errors {
                errors: 60,
                requests: 6000,
                ..
            }
        ),
        "{:?}",
        a.shelves[1].reasons
    );
    assert!(
        a.shelves[1].reasons_text().contains("errors 1% ≥ 1%"),
        "{}",
        a.shelves[1].reasons_text()
    );
    assert_eq!(a.shelves[2].verdict, Verdict::Failed);
    assert_eq!(a.shelves[1].per_request[0].errors, 60);
    assert_eq!(a.ceiling.index, Some(0));
}

#[test]
fn stability_rule_compares_blocks_with_offered() {
    let p = open_plan("");
    let secs = run_plan(&p, 1, |_, st, _, k| {
        let r = rate_of(st).max(10);
        match st {
            // Per-second noise of ±20% that evens out within 10 s blocks: stable.
            1 => {
                let a = if k % 2 == 0 { 120 } else { 80 };
                Some(sec(100, vec![tag(a, 10.0), tag(0, 1.0)]))
            }
            // Offered itself noisy (Poisson-like) and achieved following it: stable.
            2 => {
                let o = if k % 3 == 0 { 260 } else { 170 };
                Some(sec(o, vec![tag(o, 10.0), tag(0, 1.0)]))
            }
            // A 10 s stall at 70% then catching up at 130%: window mean fine, blocks not.
            3 => {
                let a = if (5..15).contains(&k) {
                    210
                } else if (15..25).contains(&k) {
                    390
                } else {
                    300
                };
                Some(sec(300, vec![tag(a, 10.0), tag(0, 1.0)]))
            }
            _ => Some(healthy(r)),
        }
    });
    let a = analyse(&p, &secs, vec![]);
    assert_eq!(
        a.shelves[0].verdict,
        Verdict::Valid,
        "{}",
        a.shelves[0].reasons_text()
    );
    assert_eq!(
        a.shelves[0].stability.blocks_achieved_rps,
        vec![100.0, 100.0, 100.0]
    );
    assert_eq!(
        a.shelves[1].verdict,
        Verdict::Valid,
        "{}",
        a.shelves[1].reasons_text()
    );
    let s = &a.shelves[2];
    assert_eq!(s.verdict, Verdict::Failed);
    assert!(s.stability.window_deviation.abs() < 1e-9);
    assert!(
        (s.stability.worst_block_deviation.abs() - 0.3).abs() < 1e-9,
        "{:?}",
        s.stability
    );
    assert!(
        matches!(&s.reasons[0], Reason::Unstable { detail, .. } if detail.contains("block at t=")),
        "{:?}",
        s.reasons
    );

    // Achieved well below offered over the whole window (the stack cannot keep up).
    let secs = run_plan(&p, 1, |_, st, _, _| {
        let r = rate_of(st).max(10);
        if st == 2 {
            Some(sec(200, vec![tag(180, 10.0), tag(0, 1.0)]))
        } else {
            Some(healthy(r))
        }
    });
    let a = analyse(&p, &secs, vec![]);
    let s = &a.shelves[1];
    assert!((s.stability.window_deviation + 0.1).abs() < 1e-9);
    assert!(
        matches!(&s.reasons[0], Reason::Unstable { detail, .. } if detail == "achieved vs offered")
    );
    assert!((s.offered_rps - 200.0).abs() < 1e-9 && (s.achieved_rps - 180.0).abs() < 1e-9);
}

#[test]
fn window_too_short_is_invalid() {
    let mut p = open_plan("");
    p.analysis.min_window = std::time::Duration::from_secs(31);
    let secs = run_plan(&p, 1, |_, st, _, _| Some(healthy(rate_of(st).max(10))));
    let a = analyse(&p, &secs, vec![]);
    assert!(a.shelves.iter().all(|s| s.verdict == Verdict::Invalid));
    assert!(
        matches!(a.shelves[0].reasons[0], Reason::WindowTooShort { kept_s, min_s } if kept_s == 30.0 && min_s == 31.0)
    );
    assert_eq!(a.ceiling.rps, 0.0);
    assert!(!a.ceiling.bracketed);
    assert!(a.ceiling.summary.contains("all invalid"));
}

#[test]
fn generator_bound_shelves_are_invalid_not_failed() {
    let p = open_plan("");
    let secs = run_plan(&p, 1, |_, st, _, _| {
        let r = rate_of(st).max(10);
        let mut s = healthy(r);
        match st {
            1 => s.lag_us = 25_000, // lag p99 25 ms > 10 ms
            2 => {
                s.gen_cpu = 97.0; // > 90% of a core
                s.tags[0].lat_us = 900_000; // also over the SLO: still invalid, not failed
            }
            3 => s.overflow = 3,
            _ => {}
        }
        Some(s)
    });
    let a = analyse(&p, &secs, vec![]);
    assert_eq!(a.shelves[0].verdict, Verdict::Invalid);
    assert!(matches!(
        a.shelves[0].reasons[0],
        Reason::GeneratorLag { .. }
    ));
    assert!((a.shelves[0].lag_p99_ms - 25.0).abs() < 0.1);
    assert_eq!(a.shelves[1].verdict, Verdict::Invalid);
    assert!(a.shelves[1]
        .reasons
        .iter()
        .any(|r| matches!(r, Reason::GeneratorCpu { mean_pct, .. } if *mean_pct == 97.0)));
    assert!(a.shelves[1]
        .reasons
        .iter()
        .any(|r| matches!(r, Reason::Latency { .. })));
    assert_eq!(a.shelves[2].verdict, Verdict::Invalid);
    assert!(matches!(
        a.shelves[2].reasons[0],
        Reason::BacklogOverflow { refused: 90 }
    ));
    assert!(a.shelves.iter().all(|s| s.is_generator_bound()));
    assert_eq!(a.ceiling.rps, 0.0);
    assert!(!a.ceiling.bracketed);
    assert!(a
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::GeneratorBound && w.message.contains("generator-bound")));
}

/// A generator behind its schedule can make a stack look slower by at most its worst lag; a
/// stack that failed beyond that — its service time over the limit by more than the lag, or
/// errors of its own — is the stack's failure (the box-bound case of a 2-core machine), while a
/// failure within the lag's reach stays invalid.
#[test]
fn a_stack_failure_beyond_the_generators_lag_is_the_stacks() {
    let p = open_plan("");
    let secs = run_plan(&p, 1, |_, st, _, _| {
        let r = rate_of(st).max(10);
        let mut s = healthy(r);
        s.lag_us = 15_000; // every shelf: lag 15 ms > 10 ms
        match st {
            // service 1000 ms: 985 ms beyond the lag, over the 350-ms limit, and the latency
            // 2 s > 100 × the lag (beyond a starved generator's reach too)
            1 => s.tags[0].lat_us = 2_000_000,
            // service 360 ms: over the limit by less than the 15-ms lag can explain
            2 => s.tags[0].lat_us = 720_000,
            // answers in time, but 5% are the stack's own 5xx
            3 => s.tags[0].err = r * 5 / 100,
            _ => {}
        }
        Some(s)
    });
    let a = analyse(&p, &secs, vec![]);
    let outweighed = |sh: &ShelfResult| {
        sh.reasons.iter().any(|r| {
            matches!(r, Reason::GeneratorLagOutweighed { lag_max_ms, .. } if (*lag_max_ms - 15.0).abs() < 0.5)
        })
    };
    let hold100 = &a.shelves[0];
    assert_eq!(hold100.verdict, Verdict::Failed, "{:?}", hold100.reasons);
    assert!(outweighed(hold100), "{:?}", hold100.reasons);
    assert!(!hold100.is_generator_bound());
    let hold200 = &a.shelves[1];
    assert_eq!(hold200.verdict, Verdict::Invalid, "{:?}", hold200.reasons);
    assert!(hold200
        .reasons
        .iter()
        .any(|r| matches!(r, Reason::GeneratorLag { .. })));
    let hold300 = &a.shelves[2];
    assert_eq!(hold300.verdict, Verdict::Failed, "{:?}", hold300.reasons);
    assert!(outweighed(hold300));
    // within a starved generator's reach (latency ≤ 100 × its lag p99: 1.4 s against 15 ms),
    // the shelf stays invalid even though the service time is far over the limit
    let secs = run_plan(&p, 1, |_, st, _, _| {
        let mut s = healthy(rate_of(st).max(10));
        s.lag_us = 15_000;
        if st == 1 {
            s.tags[0].lat_us = 1_400_000;
        }
        Some(s)
    });
    let b = analyse(&p, &secs, vec![]);
    assert_eq!(
        b.shelves[0].verdict,
        Verdict::Invalid,
        "{:?}",
        b.shelves[0].reasons
    );
    // the note reads as what it is
    let text = hold100
        .reasons
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join("; ");
    assert!(
        text.contains("but the stack failed beyond what that lag explains"),
        "{text}"
    );
}

#[test]
fn per_request_limits() {
    let p = open_plan("requests = { post = { p99 = \"50ms\" } }");
    assert_eq!(p.slo.per_request.len(), 1);
    let secs = run_plan(&p, 1, |_, st, _, _| {
        let r = rate_of(st).max(10);
        // get 99/s at 10 ms, post 1/s at 80 ms on shelf 1: overall p99 stays 10 ms.
        let post = if st == 2 { 80.0 } else { 20.0 };
        Some(sec(r, vec![tag(r * 99 / 100, 10.0), tag(r / 100, post)]))
    });
    let a = analyse(&p, &secs, vec![]);
    assert_eq!(a.shelves[0].verdict, Verdict::Valid);
    let s = &a.shelves[1];
    assert!(s.latency.p99_ms < 11.0);
    assert_eq!(s.verdict, Verdict::Failed);
    assert!(matches!(&s.reasons[0], Reason::Latency { request: Some(r), .. } if r == "post"));
    assert_eq!(s.slo_checks.len(), 2);
    assert!(s.slo_checks[0].ok && !s.slo_checks[1].ok);
    assert!((s.request("post").unwrap().latency.p99_ms - 80.0).abs() < 0.1);
    assert!(
        s.reasons[0].to_string().starts_with("post p99 80."),
        "{}",
        s.reasons[0]
    );
    assert!(a.criteria.describe().contains("post:p99≤50ms"));
}

#[test]
fn resources_over_the_window_and_cpu_per_request() {
    let p = open_plan("");
    let secs = run_plan(&p, 1, |_, st, _, _| Some(healthy(rate_of(st).max(10))));
    let mut res = Vec::new();
    for t in 1..=135 {
        // Stack: 150% CPU inside shelf 0's window, 400% elsewhere; RSS 100 MiB.
        let cpu = if (21..=50).contains(&t) { 150.0 } else { 400.0 };
        res.push(ResourceSample {
            t: t as f64,
            who: Role::Stack,
            cpu_pct: cpu,
            rss_bytes: 100 << 20,
            cgroup_memory_bytes: Some(120 << 20),
        });
        res.push(ResourceSample {
            t: t as f64,
            who: Role::Postgres,
            cpu_pct: 50.0,
            rss_bytes: 300 << 20,
            cgroup_memory_bytes: None,
        });
    }
    // Online (pushed while seconds arrive) and afterwards give the same result.
    let offline = analyse(&p, &secs, res.clone());
    let mut acc = RunAccumulator::new(&p, "s");
    let mut it = res.into_iter().peekable();
    for s in &secs {
        acc.push_second(s);
        while let Some(r) = it.next_if(|r| r.t <= s.t as f64 + 1.0) {
            acc.push_resource(r);
        }
    }
    let online = acc.finish();
    assert_eq!(online, offline);
    let s = &online.shelves[0];
    let st = s.stack.as_ref().unwrap();
    assert_eq!(st.samples, 30);
    assert!((st.cpu_pct_mean - 150.0).abs() < 1e-9);
    assert!((st.rss_mb_mean - 100.0).abs() < 1e-9);
    assert_eq!(st.cgroup_mb_mean, Some(120.0));
    // 1.5 cores × 30 s / 3000 requests = 15 ms = 15000 µs per request.
    assert!((s.cpu_us_per_request.unwrap() - 15_000.0).abs() < 1e-6);
    assert!((s.postgres_cpu_us_per_request.unwrap() - 5_000.0).abs() < 1e-6);
    // The ceiling (hold 300) reports its own window's resources.
    assert!((online.ceiling.stack_cpu_pct.unwrap() - 400.0).abs() < 1e-9);
    assert!((online.ceiling.postgres_rss_mb.unwrap() - 300.0).abs() < 1e-9);
}

#[test]
fn completed_shelves_are_available_online() {
    let p = open_plan("");
    let secs = run_plan(&p, 1, |_, st, _, _| Some(healthy(rate_of(st).max(10))));
    let mut acc = RunAccumulator::new(&p, "s");
    let mut first_done_at = None;
    for s in &secs {
        let done = acc.push_second(s);
        // Memory stays bounded: only the running shelf holds histograms.
        assert!(acc.live_shelves() <= 1, "t={}", s.t);
        if s.t == 17 {
            assert_eq!(
                acc.live_shelves(),
                0,
                "head of shelf 0 is trimmed: nothing allocated yet"
            );
        }
        if done.contains(&0) {
            first_done_at = Some(s.t);
        }
    }
    assert_eq!(
        first_done_at,
        Some(55),
        "shelf 0 ends when the next stage starts"
    );
    assert!(acc.live_shelves() <= 1);
    assert_eq!(acc.completed().len(), 2, "the last shelf closes at finish");
    assert_eq!(acc.finish().shelves.len(), 3);
}

#[test]
fn interrupted_run_marks_incomplete_and_not_reached() {
    let p = open_plan("");
    let secs: Vec<Second> = run_plan(&p, 1, |_, st, _, _| Some(healthy(rate_of(st).max(10))))
        .into_iter()
        .filter(|s| s.t < 70)
        .collect();
    let a = analyse(&p, &secs, vec![]);
    assert_eq!(a.shelves[0].verdict, Verdict::Valid);
    assert_eq!(a.shelves[1].verdict, Verdict::Invalid);
    assert!(a.shelves[1]
        .reasons
        .iter()
        .any(|r| matches!(r, Reason::Incomplete { .. })));
    assert!(a.shelves[1]
        .reasons
        .iter()
        .any(|r| matches!(r, Reason::WindowTooShort { .. })));
    assert_eq!(a.shelves[2].reasons, vec![Reason::NotReached]);
    assert_eq!(a.ceiling.index, Some(0));
    assert!(!a.ceiling.bracketed);
}

const CLOSED: &str = r#"
name = "c"
[load]
repetitions = 3
[[warmup]]
connections = 4
requests = 500
[[stages]]
connections = 10
duration = "30s"
[[stages]]
connections = 50
duration = "30s"
[[requests]]
name = "people"
path = "/people"
[slo]
p99 = "100ms"
[analysis]
trim_head = "2s"
trim_tail = "3s"
min_window = "20s"
"#;

fn closed_plan() -> Plan {
    parse_plan(CLOSED, Path::new("c.toml")).unwrap()
}

#[test]
fn closed_repetitions_aggregate_mean_spread_and_flag_errors() {
    let p = closed_plan();
    assert_eq!(p.load.repetitions, 3);
    // Warm-up of unknown length (request-bounded): measured stages start after it, so the
    // layout has no planned times; stages are found by their index.
    assert_eq!(shelf_specs(&p, 1)[0].start_s, None);
    let tput = [[100u64, 110, 120], [400, 440, 480]];
    let mut parts = Vec::new();
    for rep in 0..3u32 {
        let mut acc = RunAccumulator::for_repetition(&p, "mvc", rep);
        let mut t = 0u32;
        for _ in 0..7 {
            acc.push_second(&build(t, Phase::Warmup, 0, &sec(50, vec![tag(50, 3.0)])));
            t += 1;
        }
        for (lvl, tp) in tput.iter().enumerate() {
            for k in 0..30u32 {
                let n = tp[rep as usize];
                let mut s = sec(n, vec![tag(n, 5.0 * (lvl + 1) as f64 + rep as f64)]);
                // Trimmed seconds are awful; rep 1 of level 0 has one error inside its window.
                if !(2..27).contains(&k) {
                    s.tags[0].lat_us = 5_000_000;
                } else if lvl == 0 && rep == 1 && k == 10 {
                    s.tags[0].err = 1;
                }
                acc.push_second(&build(t, Phase::Measure, lvl, &s));
                t += 1;
            }
        }
        parts.push(acc.finish());
    }
    let a = StackAnalysis::combine(parts).unwrap();
    assert_eq!(a.model, LoadModel::Closed);
    assert_eq!(a.shelves.len(), 6);
    assert_eq!(
        a.shelves[0].window.kept_s, 25.0,
        "30 s − 2 s head − 3 s tail (tail via the delay line)"
    );
    assert_eq!(
        a.shelves[0].window.stage_start_s,
        Some(7.0),
        "observed start"
    );
    assert!(
        a.shelves.iter().all(|s| s.latency.max_ms < 100.0),
        "trimmed seconds never merged"
    );
    assert_eq!(a.levels.len(), 2);
    let l0 = &a.levels[0];
    assert_eq!(l0.repetitions, vec![0, 1, 2]);
    assert_eq!(l0.with_errors, vec![1]);
    let all = l0.all.as_ref().unwrap();
    assert_eq!(all.n, 3);
    assert!((all.throughput_rps.mean - 110.0).abs() < 1e-9);
    assert_eq!(
        (all.throughput_rps.min, all.throughput_rps.max),
        (100.0, 120.0)
    );
    assert!((all.throughput_rps.stddev - 10.0).abs() < 1e-9);
    // t(0.975, 2) = 4.303; 4.303 × 10 / √3 = 24.8434
    assert!((all.throughput_rps.ci95.unwrap() - 24.8434).abs() < 1e-3);
    assert!((all.p99_ms.mean - 6.0).abs() < 0.01, "{:?}", all.p99_ms);
    let ef = l0.error_free.as_ref().unwrap();
    assert_eq!(ef.n, 2);
    assert!((ef.throughput_rps.mean - 110.0).abs() < 1e-9);
    assert_eq!(l0.headline().unwrap().n, 2);
    assert!(a
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::RepetitionErrors));
    // Ceiling: last valid level, mean over its (error-free) repetitions.
    assert_eq!(a.levels[1].verdict, Verdict::Valid);
    assert!((a.ceiling.rps - 440.0).abs() < 1e-9);
    assert_eq!(
        a.warnings
            .iter()
            .filter(|w| w.message.contains("c=10: repetition #2 had errors"))
            .count(),
        1,
        "{:?}",
        a.warnings
    );
    assert_eq!(a.ceiling.label.as_deref(), Some("c=50"));
}

#[test]
fn rounds_on_one_clock_keep_their_windows_where_their_seconds_are() {
    // Two repetitions, each a start of its own; the second written 100 s on the stack's clock.
    let mut p = closed_plan();
    p.warmup.clear();
    let mut parts = Vec::new();
    for (rep, off) in [(0u32, 0u32), (1, 100)] {
        let mut acc = RunAccumulator::for_round(&p, "x", rep, off as f64);
        for lvl in 0..2usize {
            for k in 0..30u32 {
                let n = 100 * (lvl as u64 + 1) + 7 * rep as u64;
                let t = off + 30 * lvl as u32 + k;
                acc.push_second(&build(t, Phase::Measure, lvl, &sec(n, vec![tag(n, 5.0)])));
            }
        }
        let mut a = acc.finish();
        a.footprint = Some(ceiling_metrics::Footprint {
            rss_bytes_at_end: Some(1000 + rep as u64),
            ..Default::default()
        });
        parts.push(a);
    }
    let a = StackAnalysis::combine(parts).unwrap();
    assert_eq!(a.shelves.len(), 4);
    for lvl in 0..2 {
        let (r0, r1) = (&a.shelves[lvl].window, &a.shelves[2 + lvl].window);
        let moved = |x: Option<f64>, y: Option<f64>| y.unwrap() - x.unwrap();
        assert_eq!(moved(r0.stage_start_s, r1.stage_start_s), 100.0);
        assert_eq!(moved(r0.kept_start_s, r1.kept_start_s), 100.0);
        assert_eq!(moved(r0.kept_end_s, r1.kept_end_s), 100.0);
        assert_eq!(
            (r0.kept_s, r1.kept_s),
            (25.0, 25.0),
            "every kept second found"
        );
        let n = 100 * (lvl as u64 + 1);
        assert_eq!(a.shelves[lvl].requests, 25 * n);
        assert_eq!(a.shelves[2 + lvl].requests, 25 * (n + 7));
        assert_eq!(a.shelves[2 + lvl].repetition, 1);
    }
    assert_eq!(a.levels[1].repetitions, vec![0, 1]);
    let all = a.levels[1].all.as_ref().unwrap();
    assert!((all.throughput_rps.mean - 203.5).abs() < 1e-9, "{all:?}");
    assert_eq!(
        a.footprint.and_then(|f| f.rss_bytes_at_end),
        Some(1001),
        "the footprint of the stack at the end of its last run"
    );
}

#[test]
fn closed_repetitions_as_passes_in_one_run() {
    let mut p = closed_plan();
    p.warmup.clear();
    let secs = run_plan(&p, 3, |_, st, _, _| {
        let n = [100, 400][st % 2] + 10 * (st / 2) as u64;
        let lat = if st == 5 { 150.0 } else { 5.0 };
        Some(sec(n, vec![tag(n, lat)]))
    });
    let mut acc = RunAccumulator::with_passes(&p, "x", 3);
    for s in &secs {
        acc.push_second(s);
    }
    let a = acc.finish();
    assert_eq!(a.shelves.len(), 6);
    assert_eq!(a.shelves[3].repetition, 1);
    assert_eq!(a.shelves[3].level, 1);
    assert_eq!(
        a.levels[1].verdict,
        Verdict::Failed,
        "one of three repetitions failed"
    );
    assert_eq!(a.levels[1].not_valid, vec![2]);
    assert!((a.ceiling.rps - 110.0).abs() < 1e-9);
    assert!(a.ceiling.bracketed);
}

#[test]
fn probes_for_the_search() {
    let p = open_plan("");
    // A generator run where a probe at 500 RPS starts at t = 100 and lasts 60 s (trim 10 s).
    let mut acc = probe_accumulator(&p, 500.0, 100.0, 0);
    for t in 90..170 {
        let s = if t < 110 {
            sec(500, vec![tag(500, 900.0), tag(0, 1.0)])
        } else {
            healthy(500)
        };
        acc.push(&build(t, Phase::Measure, 7, &s));
    }
    acc.finish();
    let r = acc.result(&[]).unwrap();
    assert_eq!(r.window.kept_s, 50.0);
    let v = ProbeVerdict::from_shelf(&r, &probe_criteria(&p));
    assert!(v.passed(), "{}", v.summary());
    assert!((v.achieved_rps - 500.0).abs() < 1e-9);

    // As its own one-shelf plan.
    let pp = probe_plan(&p, 2000.0);
    let mut acc = RunAccumulator::new(&pp, "s");
    for t in 0..60 {
        acc.push_second(&build(
            t,
            Phase::Measure,
            0,
            &sec(2000, vec![tag(2000, 400.0), tag(0, 1.0)]),
        ));
    }
    let a = acc.finish();
    let v = ProbeVerdict::from_shelf(&a.shelves[0], &a.criteria);
    assert!(v.failed() && !v.generator_bound(), "{}", v.summary());
    assert_eq!(a.shelves[0].window.kept_s, 50.0);

    // Its margins: p99 400 ms over a 350 ms limit is the binding term.
    let b = v.binding().unwrap();
    assert_eq!(b.term, "p99");
    assert!(
        v.margin > 1.0 && (v.margin - b.margin).abs() < 1e-12,
        "{v:?}"
    );
    let ok = ProbeVerdict::from_shelf(&r, &probe_criteria(&p));
    assert!(ok.margin < 1.0, "{ok:?}");

    // Concluded from probes at 1000 (pass ×2) and 2000 (fail ×2): bracketed 1000…2000, the
    // estimate inside, p99 binding, and the confirming shelf becomes the analysis' shelf.
    let mut pass = ok.clone();
    pass.rate = 1000.0;
    let mut fail = v.clone();
    fail.rate = 2000.0;
    let probes = vec![pass.clone(), fail.clone(), pass, fail];
    let out = SearchOutcome::conclude(
        probes,
        vec![r.clone()],
        None,
        0.05,
        1,
        StopReason::Budget,
        60.0,
    );
    assert_eq!(out.status, SearchStatus::Bracketed, "{}", out.describe());
    let i = out.interval.clone().unwrap();
    // never narrower than the bracket; the prior on the noise may widen it (margins near 1)
    assert!(i.lo <= 1000.0 && i.hi >= 2000.0, "{i:?}");
    assert_eq!((i.bracket_lo, i.bracket_hi), (1000.0, 2000.0));
    assert!(out.ceiling_rps > 1000.0 && out.ceiling_rps < 2000.0);
    assert_eq!(out.binding.as_deref(), Some("p99"));
    let sa = StackAnalysis::from_search("s", probe_criteria(&p), out.clone());
    assert!(sa.ceiling.bracketed);
    assert_eq!(sa.shelves.len(), 1);
    assert!((sa.ceiling.rps - out.ceiling_rps).abs() < 1e-9);
    assert!(
        sa.warnings
            .iter()
            .any(|w| w.kind == WarningKind::SearchNotNarrowed),
        "{:?}",
        sa.warnings
    );

    // Only passes, stopped by the generator: a lower bound, never 0.
    let mut pass = ok.clone();
    pass.rate = 800.0;
    let out = SearchOutcome::conclude(
        vec![pass],
        vec![],
        None,
        0.05,
        1,
        StopReason::GeneratorLimit { rate: 1600.0 },
        10.0,
    );
    assert_eq!(out.status, SearchStatus::GeneratorBound);
    assert_eq!(out.ceiling_rps, 800.0);
    assert!(
        out.describe().starts_with("≥ 800 RPS"),
        "{}",
        out.describe()
    );
    // Probes of different lengths pool, each with the weight of its window: a 110-s probe that
    // failed at 6750 beside 30-s probes that passed at 6466 and split at 6773 brackets the
    // ceiling between them (it used to be fitted alone, the short probes set aside).
    let short = |rate: f64, ok_: bool| {
        let mut p = if ok_ { ok.clone() } else { v.clone() };
        p.rate = rate;
        p.window_s = 30.0;
        p
    };
    let mut long = v.clone();
    long.rate = 6750.0;
    long.window_s = 110.0;
    let probes = vec![
        short(4000.0, true),
        short(6466.0, true),
        short(6773.0, false),
        short(6773.0, true),
        long,
    ];
    let smp = samples(&probes);
    assert!((smp[4].weight - 110.0 / 30.0).abs() < 1e-9);

    let out = SearchOutcome::conclude(
        probes.clone(),
        vec![],
        None,
        0.05,
        1,
        StopReason::NotRecovered {
            after: 6750.0,
            waited_s: 69.0,
            why: Some("nothing completed in the 2 s window (400 requests offered)".into()),
        },
        10.0,
    );
    assert!(
        matches!(out.status, SearchStatus::Bracketed | SearchStatus::Narrowed),
        "{}",
        out.describe()
    );
    assert!(
        out.ceiling_rps > 4000.0 && out.ceiling_rps < 6773.0,
        "{}",
        out.describe()
    );
    let d = out.describe();
    // the one-line summary names the ceiling; the stop's evidence is said once, by the stop
    // reason itself
    assert!(!d.contains("nothing completed"), "{d}");
    assert!(
        out.stop
            .to_string()
            .ends_with("within 69 s (the last check: nothing completed in the 2 s window (400 requests offered))"),
        "{}",
        out.stop
    );
    // What a confirming shelf checks: the interval's lower end.
    let lo = out.interval.as_ref().unwrap().lo;
    assert_eq!(confirm_rate(&probes), Some((lo, true)));
    assert_eq!(
        confirm_rate(&[short(6773.0, false)]),
        None,
        "nothing passed"
    );
    // A confirming shelf that fails below the estimate revises the result: the ceiling moves
    // under the failed rate and the interval says why.
    let mut conf = v.clone();
    conf.kind = ProbeKind::Confirm;
    conf.rate = (lo * 0.98).round();
    conf.window_s = 30.0;
    let revised = SearchOutcome::conclude(
        [probes.clone(), vec![conf.clone()]].concat(),
        vec![],
        None,
        0.05,
        1,
        StopReason::Converged,
        10.0,
    );
    let ri = revised.interval.as_ref().unwrap();
    assert!(
        ri.hi <= conf.rate && revised.ceiling_rps < conf.rate,
        "{}",
        revised.describe()
    );
    assert!(
        revised.describe().contains(&format!(
            "revised: the confirming shelf at {:.0} RPS failed",
            conf.rate
        )),
        "{}",
        revised.describe()
    );
    // A probe where nothing completed has an unbounded margin; run.json keeps it readable (it
    // was written as null and could not be read back).
    let mut dead = v.clone();
    dead.margin = f64::INFINITY;
    dead.terms[0].margin = f64::INFINITY;
    let back: ProbeVerdict = serde_json::from_str(&serde_json::to_string(&dead).unwrap()).unwrap();
    assert_eq!(
        (back.margin, back.terms[0].margin),
        (f64::INFINITY, f64::INFINITY)
    );
    // Checks and invalid probes carry no margin.
    let mut chk = v.clone();
    chk.kind = ProbeKind::Check;
    assert!(observations(&[chk]).is_empty());
}

#[test]
fn analysis_round_trips_through_json() {
    let p = open_plan("requests = { post = { p99_9 = \"500ms\" } }");
    let secs = run_plan(&p, 1, |_, st, _, _| Some(healthy(rate_of(st).max(10))));
    let a = analyse(
        &p,
        &secs,
        vec![ResourceSample {
            t: 30.0,
            who: Role::Stack,
            cpu_pct: 10.0,
            rss_bytes: 1 << 20,
            cgroup_memory_bytes: None,
        }],
    );
    let j = serde_json::to_string_pretty(&a).unwrap();
    let back: StackAnalysis = serde_json::from_str(&j).unwrap();
    assert_eq!(back, a);
    assert!(j.contains("\"verdict\": \"valid\""));
}

/// Healthy seconds until `die_at`, then every request fails (5xx or refused) for two seconds,
/// and the measurement stops: what a run sees when the database or the stack dies.
fn seconds_until_failure(p: &Plan, die_at: u32) -> Vec<Second> {
    run_plan(p, 1, |_, st, t, _| {
        if t >= die_at + 2 {
            return None;
        }
        let r = rate_of(st).max(10);
        Some(if t >= die_at {
            sec(
                r,
                vec![
                    Tag {
                        n: r,
                        lat_us: 1_000,
                        err: r,
                    },
                    tag(0, 1.0),
                ],
            )
        } else {
            healthy(r)
        })
    })
}

/// PostgreSQL dies at `die_at`; the stack answers every request with a 5xx from then on, and the
/// measurement stops two seconds later.
fn run_until_postgres_dies(p: &Plan, die_at: u32) -> StackAnalysis {
    let secs = seconds_until_failure(p, die_at);
    let mut acc = RunAccumulator::new(p, "s");
    for s in &secs {
        acc.push_second(s);
    }
    acc.stand_part_exited(PartExit {
        part: Role::Postgres,
        from_s: die_at as f64,
        status: "signal 9".into(),
        log_tail: String::new(),
    });
    acc.finish()
}

#[test]
fn postgres_exit_makes_the_running_shelf_invalid_not_failed() {
    let p = open_plan("");
    // hold 200 runs 55..95 (kept 60..90): PostgreSQL dies at 70.
    let a = run_until_postgres_dies(&p, 70);
    let v: Vec<Verdict> = a.shelves.iter().map(|s| s.verdict).collect();
    assert_eq!(v, [Verdict::Valid, Verdict::Invalid, Verdict::Invalid]);
    let hit = &a.shelves[1];
    // Its errors alone would have failed it; the dead database makes it invalid instead.
    assert!(hit
        .reasons
        .iter()
        .any(|r| matches!(r, Reason::Errors { .. })));
    assert!(
        hit.reasons.iter().any(|r| matches!(
            r,
            Reason::PartExited {
                part: Role::Postgres,
                ..
            }
        )),
        "{:?}",
        hit.reasons
    );
    assert!(
        hit.reasons_text()
            .contains("PostgreSQL exited during the shelf"),
        "{}",
        hit.reasons_text()
    );
    // The shelf never reached is just not reached.
    assert_eq!(a.shelves[2].reasons, vec![Reason::NotReached]);
    assert_eq!(a.part_exits.len(), 1);
    assert!(a.warnings.iter().any(|w| w.kind == WarningKind::PartExited
        && w.message.contains("invalid, not failed: hold 200")));
    // The ceiling stands on the last shelf before the exit, and is not bracketed.
    assert_eq!(a.ceiling.label.as_deref(), Some("hold 100"));
    assert!(!a.ceiling.bracketed);
    // run.json keeps it
    let back: StackAnalysis = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
    assert_eq!(back, a);
}

#[test]
fn postgres_exit_after_a_complete_window_leaves_the_shelf_alone() {
    let p = open_plan("");
    // hold 200's kept window is 60..90; PostgreSQL dies at 92, in the trimmed tail.
    let a = run_until_postgres_dies(&p, 92);
    assert!(a.shelves[1].is_valid(), "{:?}", a.shelves[1].reasons);
    assert!(!a.shelves[2]
        .reasons
        .iter()
        .any(|r| matches!(r, Reason::PartExited { .. })));
    assert_eq!(a.ceiling.label.as_deref(), Some("hold 200"));
}

/// The stack exits at t = 70 (in hold 200's kept window 60..90): every later request fails. The
/// shelf's why names the exit first, with the stand's crash report as evidence; the valid shelf
/// before it and the shelf never reached get no cause.
#[test]
fn a_stack_that_exits_is_the_first_cause_of_the_shelf_it_cut_short() {
    let p = open_plan("");
    let die_at = 70;
    let secs = seconds_until_failure(&p, die_at);
    let mut a = analyse(&p, &secs, vec![]);
    assert_eq!(a.shelves[1].verdict, Verdict::Failed, "{:?}", a.shelves[1]);
    let report = "stack s exited (exit 1)\n--- ceiling: starting s\n2026/11/25 10:30:12 pq: remaining connection slots are reserved\n";
    stack_exited(&mut a, die_at as f64, report);
    let why = a.shelves[1]
        .attribution
        .as_ref()
        .expect("the failed shelf has a why");
    let top = why.top().unwrap();
    assert_eq!(top.kind, CauseKind::StackExited);
    assert_eq!(top.score, 1.0);
    assert!(
        top.evidence[0].contains("exit 1") && top.evidence[0].contains("t≈70"),
        "{top:?}"
    );
    assert!(
        top.evidence[1].contains("remaining connection slots"),
        "{top:?}"
    );
    assert_eq!(top.seconds.first(), Some(&70));
    assert!(
        why.summary
            .starts_with("the stack's process exited at t≈70 s"),
        "{}",
        why.summary
    );
    assert!(
        a.shelves[0].attribution.is_none(),
        "the valid shelf is left alone"
    );
    assert!(
        a.shelves[2].attribution.is_none(),
        "not reached: no requests, no why"
    );
    // kept in run.json and re-applied when the attribution is recomputed (`ceiling report`)
    a.stack_exit = Some(StackExit {
        at_s: die_at as f64,
        report: report.into(),
    });
    let back: StackAnalysis = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
    let mut again = back.clone();
    attribute_analysis(&mut again, &[], &[]);
    assert_eq!(
        again.shelves[1]
            .attribution
            .as_ref()
            .and_then(|w| w.top())
            .map(|c| c.kind),
        Some(CauseKind::StackExited)
    );
    // an exit after a shelf's window does not touch it
    let mut b = analyse(&p, &secs, vec![]);
    stack_exited(&mut b, 95.0, report);
    assert!(b.shelves[1].attribution.is_none());
    // an exit 3 s into a stage, before its kept window began (hold 300 runs 95..135, kept from
    // 100): that shelf has no window, but the exit is still why it has no result
    let early = run_plan(&p, 1, |_, st, t, _| {
        (t < 98).then(|| healthy(rate_of(st).max(10)))
    });
    let mut c = analyse(&p, &early, vec![]);
    assert_eq!(c.shelves[2].requests, 0, "{:?}", c.shelves[2].window);
    stack_exited(&mut c, 98.0, report);
    let why = c.shelves[2]
        .attribution
        .as_ref()
        .expect("the cut shelf has a why");
    assert_eq!(why.top().unwrap().kind, CauseKind::StackExited);
    assert!(
        c.shelves[1].attribution.is_none(),
        "hold 200 passed before the exit"
    );
}

/// A one-minute probe shelf at 2000 RPS whose every request takes `lat_ms`, with its criteria.
fn probe_shelf(lat_ms: f64) -> (ShelfResult, ShelfCriteria) {
    let pp = probe_plan(&open_plan(""), 2000.0);
    let mut acc = RunAccumulator::new(&pp, "s");
    for t in 0..60 {
        acc.push_second(&build(
            t,
            Phase::Measure,
            0,
            &sec(2000, vec![tag(2000, lat_ms), tag(0, 1.0)]),
        ));
    }
    let mut a = acc.finish();
    (a.shelves.remove(0), a.criteria)
}

/// A failed probe at `rate` whose parts took `stack`, `pg` and `generator` % of one core.
fn failed_probe_with_load(rate: f64, stack: f64, pg: f64, generator: f64) -> ProbeVerdict {
    let (shelf, criteria) = probe_shelf(400.0);
    let mut v = ProbeVerdict::from_shelf(&shelf, &criteria);
    assert!(v.failed(), "{}", v.summary());
    v.rate = rate;
    v.stack_cpu_pct = Some(stack);
    v.postgres_cpu_pct = Some(pg);
    v.generator_cpu_pct = generator;
    v
}

#[test]
fn a_ceiling_is_called_box_bound_only_when_the_shared_box_was_full() {
    // A 2-core box: where the stack failed, stack 110% + PostgreSQL 55% + generator 23% = 188%
    // of 200% — the box, not the stack's 2-core quota, was the limit.
    let full = vec![
        failed_probe_with_load(9600.0, 112.0, 54.0, 22.0),
        failed_probe_with_load(10400.0, 108.0, 56.0, 24.0),
        // far above the ceiling: not among the nearest failures
        failed_probe_with_load(40000.0, 10.0, 5.0, 5.0),
    ];
    let load = box_load(&full, 9300.0, 2).unwrap();
    assert_eq!(load.probes, 3);
    let near = box_load(&full[..2], 9300.0, 2).unwrap();
    assert!((near.total_pct() - 188.0).abs() < 1e-9, "{near:?}");
    let said = box_bound(&full[..2], 9300.0, 2, true, Some(2.0), Some(118.0)).unwrap();
    assert!(said.starts_with("BOX-BOUND"), "{said}");
    assert!(
        said.contains("188% of 200%") && said.contains("118 µs"),
        "{said}"
    );

    // The same figures with CPUs of their own: the ceiling is the stack's.
    assert!(box_bound(&full[..2], 9300.0, 2, false, Some(2.0), None).is_none());
    // A stack at its own 1-core quota on the shared box: its own limit binds.
    let own = vec![failed_probe_with_load(5000.0, 97.0, 60.0, 25.0)];
    assert!(box_bound(&own, 4800.0, 2, true, Some(1.0), None).is_none());
    // The box far from full where the stack failed (a lock, a pool): not the box.
    let idle = vec![failed_probe_with_load(5000.0, 60.0, 30.0, 10.0)];
    assert!(box_bound(&idle, 4800.0, 2, true, Some(2.0), None).is_none());
    // No failed probe above the ceiling (a lower bound): nothing to say.
    assert!(box_bound(&full, 50000.0, 2, true, Some(2.0), None).is_none());
    // A disturbed probe is not the stack's failure.
    let mut disturbed = full[..2].to_vec();
    for p in &mut disturbed {
        p.disturbed = Some("host stall".into());
    }
    assert!(box_load(&disturbed, 9300.0, 2).is_none());
}

#[test]
fn a_stepped_runs_failed_shelf_on_a_full_shared_box_is_box_bound() {
    let (mut shelf, _) = probe_shelf(400.0);
    assert_eq!(shelf.verdict, Verdict::Failed);
    let window = |cpu: f64| ResourceWindow {
        samples: 30,
        cpu_pct_mean: cpu,
        cpu_pct_max: cpu,
        rss_mb_mean: 100.0,
        rss_mb_max: 100.0,
        cgroup_mb_mean: None,
    };
    shelf.stack = Some(window(110.0));
    shelf.postgres = Some(window(58.0));
    shelf.generator = Some(window(21.0));
    let said = box_bound_shelf(&shelf, 2, true, Some(2.0), None).unwrap();
    assert!(
        said.contains("189% of 200%") && said.contains("1 failed shelf"),
        "{said}"
    );
    // its own CPUs: not the box
    assert!(box_bound_shelf(&shelf, 2, false, Some(2.0), None).is_none());
    // PostgreSQL not sampled: nothing is said
    shelf.postgres = None;
    assert!(box_bound_shelf(&shelf, 2, true, Some(2.0), None).is_none());
}

#[test]
fn a_lower_bound_above_a_neighbours_whole_interval_is_ranked_higher() {
    // a probe that passed at `rate`
    let passed = |rate: f64| {
        let (shelf, criteria) = probe_shelf(1.0);
        let mut v = ProbeVerdict::from_shelf(&shelf, &criteria);
        assert!(v.passed(), "{}", v.summary());
        v.rate = rate;
        v
    };
    // ktor: generator-bound above 5657, so only "≥ 5657"; mvc: 3837 (3600–3920)
    let stacks: Vec<Searched> = vec![
        (
            "mvc".into(),
            vec![passed(3600.0)],
            Some((3837.0, 3600.0, 3920.0)),
        ),
        ("ktor".into(), vec![passed(4000.0), passed(5657.0)], None),
    ];
    let r = rank(&stacks, 0.05);
    assert_eq!((r[0].a.as_str(), r[0].b.as_str()), ("ktor", "mvc"));
    assert_eq!(r[0].order, Order::Higher, "{}", r[0].describe());
    assert!((r[0].lo.unwrap() - 5657.0 / 3920.0).abs() < 1e-9);
    assert!(
        r[0].describe().contains("lower bound"),
        "{}",
        r[0].describe()
    );
    // a lower bound inside the neighbour's interval decides nothing
    let stacks: Vec<Searched> = vec![
        (
            "mvc".into(),
            vec![passed(3600.0)],
            Some((3837.0, 3600.0, 3920.0)),
        ),
        ("ktor".into(), vec![passed(3850.0)], None),
    ];
    let r = rank(&stacks, 0.05);
    assert_eq!(r[0].order, Order::NotComparable, "{}", r[0].describe());
}

#[test]
fn a_lower_bound_between_two_intervals_does_not_hide_their_order() {
    let passed = |rate: f64| {
        let (shelf, criteria) = probe_shelf(1.0);
        let mut v = ProbeVerdict::from_shelf(&shelf, &criteria);
        v.rate = rate;
        v
    };
    // §41's search: go-pgx 6666 (6255–7077), ktor-jdbc only ≥ 5907, spring-mvc-jdbc 3621
    // (3507–3709). The chain reads go-pgx ? ktor-jdbc > spring-mvc-jdbc; the intervals of go-pgx
    // and spring-mvc-jdbc are disjoint, so that pair is ranked across ktor-jdbc.
    let stacks: Vec<Searched> = vec![
        (
            "go".into(),
            vec![passed(6255.0)],
            Some((6666.0, 6255.0, 7077.0)),
        ),
        ("ktor".into(), vec![passed(5907.0)], None),
        (
            "mvc".into(),
            vec![passed(3507.0)],
            Some((3621.0, 3507.0, 3709.0)),
        ),
    ];
    let r = rank(&stacks, 0.05);
    assert_eq!(r.len(), 3, "{r:?}");
    assert_eq!(r[0].order, Order::NotComparable);
    assert_eq!((r[1].a.as_str(), r[1].order), ("ktor", Order::Higher));
    let x = &r[2];
    assert_eq!((x.a.as_str(), x.b.as_str()), ("go", "mvc"));
    assert_eq!(x.across.as_deref(), Some("ktor"));
    assert_eq!(x.order, Order::Higher, "{}", x.describe());
    assert!((x.ratio - 6666.0 / 3621.0).abs() < 1e-9);
    assert!(
        x.lo.unwrap() > 1.6 && x.hi.unwrap() < 2.1,
        "{}",
        x.describe()
    );
    assert!(x.describe().contains("across ktor"), "{}", x.describe());
    // nothing to rank across when the neighbour has an interval
    let plain: Vec<Searched> = vec![stacks[0].clone(), stacks[2].clone()];
    assert!(rank(&plain, 0.05).iter().all(|p| p.across.is_none()));
}

/// Little's law on closed-model levels: 10 and 50 connections whose throughput × mean latency is
/// (or is not) the connections held. Truth: at 10 connections and 5 ms, 2000 RPS; at 50 and 25 ms,
/// 2000 RPS.
#[test]
fn littles_law_is_checked_on_every_closed_level() {
    let run = |lat: [f64; 2], tput: [u64; 2]| {
        let parts = (0..3u32)
            .map(|rep| closed_repetition(rep, |lvl| sec(tput[lvl], vec![tag(tput[lvl], lat[lvl])])))
            .collect();
        StackAnalysis::combine(parts).unwrap()
    };
    let little = |a: &StackAnalysis| -> Vec<String> {
        a.warnings
            .iter()
            .filter(|w| w.kind == WarningKind::LittlesLaw)
            .map(|w| w.message.clone())
            .collect()
    };
    // Holds: 2000 × 5 ms = 10, 2000 × 25 ms = 50.
    let a = run([5.0, 25.0], [2000, 2000]);
    assert!(little(&a).is_empty(), "{:?}", little(&a));
    assert!((little_occupancy(&a.shelves[0]).unwrap() - 1.0).abs() < 0.01);
    // At c=50 the latency accounts for 40% of the connections' time (2000 × 10 ms = 20 of 50):
    // the generator re-sent late; c=10 still holds.
    let b = run([5.0, 10.0], [2000, 2000]);
    let w = little(&b);
    assert_eq!(w.len(), 3, "one per repetition of c=50: {w:?}");
    assert!(
        w.iter()
            .all(|m| m.contains("c=50") && m.contains("40%") && m.contains("re-sent late")),
        "{w:?}"
    );
    // More in flight than connections (2000 × 8 ms = 16 on 10): the figures are wrong.
    let c = run([8.0, 25.0], [2000, 2000]);
    let w = little(&c);
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(
        w.iter()
            .all(|m| m.contains("c=10") && m.contains("160%") && m.contains("do not trust")),
        "{w:?}"
    );
}

/// One repetition of the closed plan: 7 s of warm-up, then `each` every second of both levels.
fn one_closed_repetition(each: &Sec) -> StackAnalysis {
    closed_repetition(0, |_| each.clone())
}

/// Repetition `rep` of the closed plan: 7 s of warm-up, then 30 s of `level(i)` per level.
fn closed_repetition(rep: u32, level: impl Fn(usize) -> Sec) -> StackAnalysis {
    let p = closed_plan();
    let mut acc = RunAccumulator::for_repetition(&p, "s", rep);
    let mut t = 0u32;
    for _ in 0..7 {
        acc.push_second(&build(t, Phase::Warmup, 0, &sec(50, vec![tag(50, 3.0)])));
        t += 1;
    }
    for lvl in 0..2 {
        for _ in 0..30u32 {
            acc.push_second(&build(t, Phase::Measure, lvl, &level(lvl)));
            t += 1;
        }
    }
    acc.finish()
}

/// Truth test: a closed-model shelf stores its latencies as wrk would print them — the
/// correction of its own merged histogram with wrk's interval (the kept window over the
/// requests per connection), computed here by hand from the seconds fed in.
#[test]
fn a_closed_shelf_keeps_its_latencies_as_wrk_would_print_them() {
    // every second: 1990 requests at 5 ms and 10 stalled for 80 ms
    let a = one_closed_repetition(&sec(2000, vec![tag(1990, 5.0), tag(10, 80.0)]));
    let s = &a.shelves[0];
    let c = s.connections.unwrap() as u64;
    let kept = s.window.kept_s as u64;
    let mut h = ceiling_metrics::new_histogram();
    h.record_n(5_000, 1990 * kept).unwrap();
    h.record_n(80_000, 10 * kept).unwrap();
    let interval = kept * 1_000_000 / (s.requests / c);
    let want = crate::hist::wrk_corrected(&h, interval).unwrap();
    let got = s.wrk_latency.as_ref().expect("a closed shelf has it");
    assert_eq!(got.count, want.len());
    assert!(got.count > s.latency.count, "synthetic samples were added");
    assert_eq!(got, &Percentiles::of(&want));
    // the recorded figures are unchanged
    assert_eq!(s.latency.count, h.len());
}

/// Little's law allows for the window's edges: a short window whose slowest request is long can
/// read a few per cent over (requests in flight at its start carry time from before it), by at
/// most max latency / window. Seen: a 4-s quick window at c=100, slowest 205 ms, 106%.
#[test]
fn littles_law_allows_for_the_windows_edges() {
    let a = one_closed_repetition(&sec(2000, vec![tag(2000, 5.0)]));
    let mut s = a.shelves[0].clone();
    assert_eq!(s.connections, Some(10));
    assert_ne!(s.verdict, Verdict::Invalid, "{:?}", s.reasons);
    assert!(little_breaks(std::slice::from_ref(&s)).is_empty());
    // 2000 RPS × 5.4 ms = 10.8 on 10 connections: 108%, in a 4-s window
    s.latency.mean_ms = 5.4;
    s.window.kept_s = 4.0;
    s.latency.max_ms = 50.0; // the edges allow 1.25% over the 5%: a break
    assert_eq!(little_breaks(std::slice::from_ref(&s)).len(), 1);
    s.latency.max_ms = 205.0; // the edges allow 5.1% over the 5%: within
    assert!(little_breaks(std::slice::from_ref(&s)).is_empty());
    assert!((little_edge(&s) - 0.05125).abs() < 1e-9);
    // and below: 70% is under 80% − 5.1%
    s.latency.mean_ms = 3.5;
    assert_eq!(little_breaks(std::slice::from_ref(&s)).len(), 1);
}
