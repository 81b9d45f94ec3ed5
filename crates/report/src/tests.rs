//! Reports rendered from synthetic runs.

use crate::*;
use ceiling_analyze::{
    ProbeVerdict, RunAccumulator, SearchOutcome, StopReason, Warning, WarningKind,
};
use ceiling_metrics::{Limits, LimitsApplied, ResourceSample, Role, Second, TimeseriesRow};
use ceiling_plan::parse_plan;
use ceiling_records::*;

const PLAN: &str = r#"
name = "demo-000"
description = "Source 000's stepped profile, shortened"
source = "000"
[data.ids]
csv = "@data/status_ids.csv"
[[warmup]]
hold = 300
duration = "20s"
[[stages]]
ramp = { from = 0, to = 1500 }
duration = "20s"
[[stages]]
hold = 1500
duration = "60s"
[[stages]]
ramp = { from = 1500, to = 3000 }
duration = "20s"
[[stages]]
hold = 3000
duration = "60s"
[[stages]]
ramp = { from = 3000, to = 4500 }
duration = "20s"
[[stages]]
hold = 4500
duration = "60s"
[[requests]]
name = "get_by_id"
weight = 70
path = "/status/${ids.id}"
expect = [200, 404]
[[requests]]
name = "get_batch"
weight = 20
path = "/status?ids=${ids.id*10}"
[[requests]]
name = "post"
weight = 5
method = "POST"
path = "/status"
body = '{"id":"${uuid}","status":${int:0:9}}'
[[requests]]
name = "put"
weight = 5
method = "PUT"
path = "/status/${ids.id}"
body = '{"status":${int:0:9}}'
[slo]
p99 = "350ms"
errors = "1%"
[analysis]
trim_head = "10s"
trim_tail = "5s"
min_window = "30s"
"#;

/// A deterministic pseudo-random stream.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Latency (ms) at quantile q for a stack whose median is `base` and whose tail grows with `stress`.
fn lat(q: f64, base: f64, stress: f64) -> f64 {
    base * (1.0 + 3.0 * q.powi(4) + stress * q.powi(30))
}

/// Simulates one stack: `profile(rate) -> (median ms, tail stress, error fraction)`.
fn simulate(
    plan: &ceiling_plan::Plan,
    stack: &str,
    seed: u64,
    profile: impl Fn(f64) -> (f64, f64, f64),
) -> (ceiling_analyze::StackAnalysis, Vec<TimeseriesRow>) {
    let mut rng = Lcg(seed);
    let mut acc = RunAccumulator::new(plan, stack);
    let mut rows = Vec::new();
    let weights = [70.0, 20.0, 5.0, 5.0];
    for sp in ceiling_analyze::stage_spans(plan, 1) {
        let (a, b) = (sp.start_s.unwrap() as u32, sp.end_s.unwrap() as u32);
        let st = if sp.phase == ceiling_metrics::Phase::Warmup {
            &plan.warmup[sp.level]
        } else {
            &plan.stages[sp.level]
        };
        for t in a..b {
            let rate = match st {
                ceiling_plan::Stage::Ramp { from, to, duration } => {
                    from + (to - from) * (t - a) as f64 / duration.as_secs_f64()
                }
                ceiling_plan::Stage::Hold { rate, .. } => *rate,
                _ => unreachable!(),
            };
            let offered = (rate * (1.0 + 0.04 * (rng.next() - 0.5))).round() as u64;
            let (base, stress, err) = profile(rate);
            let mut s = Second::new(t, sp.phase, sp.index, 4);
            s.offered = offered;
            s.sent = offered;
            for (i, w) in weights.iter().enumerate() {
                let n = (offered as f64 * w / 100.0).round() as u64;
                let tag = &mut s.tags[i];
                let mult = [1.0, 2.2, 1.6, 1.4][i];
                for k in 0..n {
                    let q = (k as f64 + rng.next()) / n as f64;
                    let v = (lat(q, base * mult, stress) * 1000.0) as u64;
                    ceiling_metrics::record_us(&mut tag.latency, v);
                    ceiling_metrics::record_us(&mut tag.service, v * 2 / 3);
                    tag.counts.add(if rng.next() < err {
                        ceiling_metrics::Outcome::Status5xx
                    } else {
                        ceiling_metrics::Outcome::Ok
                    });
                }
            }
            for _ in 0..20 {
                ceiling_metrics::record_us(&mut s.lag, 50 + (rng.next() * 400.0) as u64);
            }
            s.generator_cpu = 8.0 + rate / 150.0;
            s.connections = (rate * base / 1000.0).ceil() as u64 + 4;
            let res = vec![
                ResourceSample {
                    t: t as f64 + 1.0,
                    who: Role::Stack,
                    cpu_pct: (rate / 30.0 + 5.0 * rng.next()).min(200.0),
                    rss_bytes: ((60.0 + rate / 100.0) * 1048576.0) as u64,
                    cgroup_memory_bytes: None,
                },
                ResourceSample {
                    t: t as f64 + 1.0,
                    who: Role::Postgres,
                    cpu_pct: rate / 45.0,
                    rss_bytes: 420 << 20,
                    cgroup_memory_bytes: None,
                },
            ];
            rows.push(TimeseriesRow::from_second(&s, &res));
            acc.push_second(&s);
            acc.extend_resources(res);
        }
    }
    (acc.finish(), rows)
}

/// The demo run, simulated once and shared by the tests (a scaled copy only changes the summary).
fn demo(scale: f64) -> (RunReport, Series) {
    static DEMO: std::sync::OnceLock<(RunReport, Series)> = std::sync::OnceLock::new();
    let (mut rep, series) = DEMO.get_or_init(simulate_demo).clone();
    rep.plan.scaled_by = scale;
    (rep, series)
}

fn simulate_demo() -> (RunReport, Series) {
    let plan = parse_plan(PLAN, std::path::Path::new("plans/demo.toml")).unwrap();
    let mut rep = RunReport::new(&plan, "20260101-120000-demo");
    rep.started = "2026-01-01T12:00:00Z".into();
    rep.environment = Some(ceiling_metrics::Environment {
        os: "Linux 6.8".into(),
        usable_cpus: 8,
        postgres: Some("16.4".into()),
        ..Default::default()
    });
    for (name, who) in [
        ("postgres", Role::Postgres),
        ("go-pgx", Role::Stack),
        ("spring-mvc-jdbc", Role::Stack),
    ] {
        let mut la = LimitsApplied::new(
            who,
            &Limits {
                cpus: Some(2.0),
                memory_mb: Some(1024),
                cpuset: None,
            },
        );
        la.cpus = Some(2.0);
        la.memory_mb = Some(1024);
        la.mechanism = "cgroup v2 (cpu, memory)".into();
        rep.limits.insert(name.into(), la);
    }
    let mut series = Series::new();
    let (go, rows) = simulate(&plan, "go-pgx", 1, |r| {
        (4.0 + r / 600.0, if r > 4000.0 { 120.0 } else { 1.5 }, 0.002)
    });
    series.insert("go-pgx".into(), rows);
    rep.stacks.push(go);
    let (mvc, rows) = simulate(&plan, "spring-mvc-jdbc", 2, |r| {
        (30.0 + r / 40.0, 3.0, 0.001)
    });
    series.insert("spring-mvc-jdbc".into(), rows);
    rep.stacks.push(mvc);
    let (mut wf, rows) = simulate(&plan, "webflux-r2dbc", 3, |r| (6.0 + r / 900.0, 1.0, 0.0));
    let probes: Vec<ProbeVerdict> = wf
        .shelves
        .iter()
        .map(|sh| ProbeVerdict::from_shelf(sh, &wf.criteria))
        .collect();
    wf.search = Some(SearchOutcome::conclude(
        probes,
        vec![],
        None,
        0.05,
        1,
        StopReason::Budget,
        600.0,
    ));
    series.insert("webflux-r2dbc".into(), rows);
    rep.stacks.push(wf);
    (rep, series)
}

#[test]
fn demo_verdicts_are_what_the_profiles_say() {
    let (rep, _) = demo(1.0);
    let go = &rep.stacks[0];
    assert_eq!(go.shelves.len(), 3);
    assert!(
        go.shelves[0].is_valid() && go.shelves[1].is_valid(),
        "{}",
        go.shelves[1].reasons_text()
    );
    assert_eq!(
        go.shelves[2].verdict,
        ceiling_analyze::Verdict::Failed,
        "{:?}",
        go.shelves[2].latency
    );
    assert!(go.ceiling.bracketed);
    assert!((go.ceiling.rps - 3000.0).abs() < 60.0, "{}", go.ceiling.rps);
    assert_eq!(rep.stacks[1].ceiling.rps, 0.0);
    assert!(!rep.stacks[2].ceiling.bracketed);
}

#[test]
fn html_report_is_self_contained_with_svg_charts() {
    let (rep, series) = demo(1.0);
    let html = render_html(&rep, &series).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // 4 time charts + 1 curve per stack, ceiling bars, the all-stacks curve, and CPU and memory
    // against offered load (no spectra: render_html reads no hlog).
    assert_eq!(html.matches("<svg").count(), 3 * 5 + 4, "svg count");
    assert_eq!(html.matches("</svg>").count(), html.matches("<svg").count());
    for needle in [
        "latency over time",
        "offered vs achieved throughput",
        "CPU over time",
        "memory over time",
        "latency vs throughput",
        "Ceiling by stack",
        "p99 latency vs throughput, all stacks",
        "CPU against offered load",
        "Memory against offered load",
    ] {
        assert!(html.contains(needle), "missing chart: {needle}");
    }
    // Axis labels and units, legend, shelves shaded with labels.
    assert!(
        html.contains("time since run start (s)")
            && html.contains("latency (ms, log scale)")
            && html.contains("RSS (MiB)")
    );
    assert!(
        html.contains("✓ hold 1500") && html.contains("✗ hold 4500") && html.contains("warm-up")
    );
    assert!(html.contains("SLO p99≤350ms"));
    // Self-contained: no external resources or URLs at all, no scripts.
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "external URL in the page"
    );
    for bad in ["<script", "src=", "<link", "@import", "<iframe"] {
        assert!(!html.contains(bad), "found {bad}");
    }
    for (i, _) in html.match_indices("url(") {
        assert!(
            html[i..].starts_with("url(#clip"),
            "non-local url(): {}",
            &html[i..i + 30]
        );
    }
    // Clip-path ids are unique on the page.
    let ids: Vec<&str> = html
        .match_indices("<clipPath id=\"")
        .map(|(i, _)| &html[i + 15..i + 35])
        .collect();
    let uniq: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), uniq.len());
    assert_eq!(
        render_html(&rep, &series).unwrap(),
        html,
        "deterministic output"
    );
    // Tables.
    assert!(
        html.contains("RPS@p99≤350ms")
            && html.contains("spring-mvc-jdbc")
            && html.contains("get_batch")
    );
    assert!(html.contains("Capacity search"));
    assert!(!html.contains("SCALED RUN"));
}

#[test]
fn notices_for_scaled_runs_and_missing_limits() {
    let (mut rep, series) = demo(0.05);
    // Every limit of the demo was applied: no notice.
    assert!(rep.limits_not_applied().is_empty());
    assert!(!render_terminal(&rep).contains("LIMITS NOT APPLIED"));
    // The record the stand writes when a stack's cgroup could not be created.
    let la = LimitsApplied::not_applied(
        Role::Stack,
        &Limits {
            cpus: Some(2.0),
            memory_mb: None,
            cpuset: None,
        },
        "cgroup v2 is read-only in this container",
    );
    rep.limits.insert("go-pgx".into(), la);
    assert_eq!(
        rep.limits_not_applied(),
        vec!["go-pgx (stack): cpus: cgroup v2 is read-only in this container".to_string()]
    );
    let html = render_html(&rep, &series).unwrap();
    assert!(html.contains("SCALED RUN: every duration was multiplied by 0.05"));
    assert!(html.contains(
        "LIMITS NOT APPLIED: go-pgx (stack): cpus: cgroup v2 is read-only in this container"
    ));
    let md = render_summary_md(&rep);
    assert!(md.contains("**⚠ SCALED RUN") && md.contains("LIMITS NOT APPLIED: go-pgx (stack)"));
    let term = render_terminal(&rep);
    assert!(term.starts_with("!! SCALED RUN"));
    assert!(
        term.contains("!! LIMITS NOT APPLIED: go-pgx (stack): cpus:"),
        "{term}"
    );
    // The note survives run.json: `ceiling report` shows it too.
    let back = RunReport::from_json(&rep.to_json()).unwrap();
    assert_eq!(back.limits_not_applied(), rep.limits_not_applied());
}

/// A run.json as schema 1 wrote it: `limits` null or the same records, a `limits_note` field, and
/// stack warnings as bare strings.
fn as_schema_1(rep: &RunReport, limits_null: bool) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&rep.to_json()).unwrap();
    v["schema_version"] = 1.into();
    v["limits_note"] = serde_json::Value::Null;
    if limits_null {
        v["limits"] = serde_json::Value::Null;
    }
    let ws: Vec<serde_json::Value> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].clone())
        .collect();
    v["warnings"] = ws.into();
    for st in v["stacks"].as_array_mut().unwrap() {
        let ws: Vec<serde_json::Value> = st["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["message"].clone())
            .collect();
        st["warnings"] = ws.into();
    }
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn reads_schema_1_run_json() {
    let (mut rep, series) = demo(1.0);
    rep.limits.insert(
        "go-pgx".into(),
        LimitsApplied::not_applied(
            Role::Stack,
            &Limits {
                cpus: Some(1.0),
                ..Default::default()
            },
            "no cgroups",
        ),
    );
    rep.stacks[0].warnings.push(Warning::new(
        WarningKind::StoppedEarly,
        "the run was stopped early (signal or time bound); shelves after that point are missing",
    ));
    rep.warnings.push(Warning::new(
        WarningKind::StackNotMeasured,
        "stack `ktor-jdbc` was not measured: build failed",
    ));
    let old = as_schema_1(&rep, false);
    assert!(old.contains("\"limits_note\": null") && old.contains("\"schema_version\": 1"));
    let back = RunReport::from_json(&old).unwrap();
    assert_eq!(back.schema_version, 1);
    assert_eq!(back.limits, rep.limits);
    assert_eq!(back.limits_not_applied(), rep.limits_not_applied());
    assert_eq!(back.stacks.len(), rep.stacks.len());
    // run-level warnings written as bare strings read back as kind `other`, same words
    assert_eq!(back.warnings.len(), 1);
    assert_eq!(back.warnings[0].message, rep.warnings[0].message);
    assert_eq!(back.warnings[0].kind, WarningKind::Other);
    for (a, b) in back.stacks.iter().zip(&rep.stacks) {
        let text = |w: &Vec<Warning>| w.iter().map(|w| w.message.clone()).collect::<Vec<_>>();
        assert_eq!(text(&a.warnings), text(&b.warnings));
        assert!(a.warnings.iter().all(|w| w.kind == WarningKind::Other));
        assert_eq!(a.shelves, b.shelves);
        assert_eq!(a.ceiling, b.ceiling);
    }
    // `ceiling report` renders it like the original.
    assert_eq!(render_summary_md(&back), render_summary_md(&rep));
    render_html(&back, &series).unwrap();
    // limits = null (nothing recorded) reads as empty
    let back = RunReport::from_json(&as_schema_1(&rep, true)).unwrap();
    assert!(back.limits.is_empty());
}

#[test]
fn summary_tables_follow_source_000() {
    let (rep, _) = demo(1.0);
    let t = summary_table(&rep);
    assert_eq!(
        t.header[..7],
        [
            "Stack",
            "RPS@p99≤350ms",
            "p95",
            "p99",
            "errors",
            "CPU (% of a core)",
            "RAM (RSS)"
        ]
        .map(String::from)
    );
    assert_eq!(t.header[8], "working load 70%");
    assert_eq!(t.rows.len(), 3);
    assert_eq!(t.rows[1][1], "0");
    assert!(t.rows[1][3].ends_with('†'), "{:?}", t.rows[1]);
    // The search beside the plan's shelves: its estimate and 95% interval (or its lower bound).
    assert!(t.rows[2][1].contains("(search "), "{}", t.rows[2][1]);
    let md = render_summary_md(&rep);
    assert!(md.contains("| Stack | RPS@p99≤350ms | p95 | p99 | errors |"));
    assert!(
        md.contains("## go-pgx") && md.contains("### Shelves") && md.contains("### Per request")
    );
    assert!(md.contains("no shelf passed"));
    let term = render_terminal(&rep);
    assert!(term.contains("go-pgx") && term.contains("hold 4500") && term.contains("failed"));
    // Every data row of the terminal table is aligned to the header's width or wider.
    println!("{term}");
}

#[test]
fn csv_has_one_row_per_shelf() {
    let (rep, _) = demo(1.0);
    let text = render_shelves_csv(&rep);
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let h = r.headers().unwrap().clone();
    assert!(
        h.iter().any(|c| c == "p99_ms")
            && h.iter().any(|c| c == "n_5xx")
            && h.iter().any(|c| c == "verdict")
    );
    let recs: Vec<_> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(recs.len(), 9);
    let vi = h.iter().position(|c| c == "verdict").unwrap();
    assert_eq!(&recs[2][vi], "failed");
    assert_eq!(&recs[0][0], "go-pgx");
}

#[test]
fn run_json_round_trips_and_files_are_written() {
    let (rep, series) = demo(1.0);
    // Exact: serde_json's `float_roundtrip` feature makes every f64 read back bit for bit.
    let back = RunReport::from_json(&rep.to_json()).unwrap();
    let (a, b) = (back.to_json(), rep.to_json());
    if let Some(i) = a.bytes().zip(b.bytes()).position(|(x, y)| x != y) {
        panic!(
            "run.json differs after a round trip at {i}: {:?} vs {:?}",
            &a[i.saturating_sub(80)..(i + 40).min(a.len())],
            &b[i.saturating_sub(80)..(i + 40).min(b.len())]
        );
    }
    assert_eq!(a.len(), b.len());
    assert_eq!(back, rep);
    let newer = rep.to_json().replacen(
        &format!("\"schema_version\": {SCHEMA_VERSION}"),
        "\"schema_version\": 99",
        1,
    );
    assert!(RunReport::from_json(&newer)
        .unwrap_err()
        .contains("schema_version 99"));

    let dir = std::env::temp_dir().join(format!("ceiling-report-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = write_all(&dir, &rep, &series).unwrap();
    assert_eq!(files.len(), 4);
    for f in &files {
        assert!(std::fs::metadata(f).unwrap().len() > 100, "{}", f.display());
    }
    // `ceiling report DIR`: read back and find the series.
    for (stack, rows) in &series {
        std::fs::create_dir_all(dir.join(stack)).unwrap();
        let mut w = ceiling_metrics::TimeseriesWriter::new(
            std::fs::File::create(dir.join(stack).join("timeseries.csv")).unwrap(),
        );
        for r in rows {
            w.write(r).unwrap();
        }
    }
    let rep2 = read_run_json(&dir.join("run.json")).unwrap();
    let s2 = load_series(&dir, &rep2);
    assert_eq!(s2.len(), 3);
    assert_eq!(rep2.stacks[0].shelves.len(), rep.stacks[0].shelves.len());
    assert!(render_html(&rep2, &s2).unwrap().matches("<svg").count() == 19);
    if let Ok(keep) = std::env::var("CEILING_REPORT_DEMO_DIR") {
        write_all(std::path::Path::new(&keep), &rep, &series).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn each_stacks_fairness_is_recorded_and_shown() {
    let (mut rep, series) = demo(0.05);
    let html = render_html(&rep, &series).unwrap();
    assert!(
        !html.contains("Fairness: each stack"),
        "nothing recorded, nothing shown"
    );
    rep.fairness.insert(
        "spring-mvc-jdbc".into(),
        ceiling_metrics::Fairness {
            pool_open_at_start: "all".into(),
            keep_alive_max_requests: 0,
            db_timeout: "5 s".into(),
            request_timing: "none".into(),
            json: "Jackson 2.17".into(),
            runtime: "Temurin 25.0.1".into(),
            gc_heap: "G1, Xmx 768m".into(),
            log_level: "WARN".into(),
        },
    );
    let back = RunReport::from_json(&rep.to_json()).unwrap();
    assert_eq!(back.fairness, rep.fairness);
    let html = render_html(&rep, &series).unwrap();
    assert!(html.contains("Fairness: each stack"));
    assert!(html.contains("Temurin 25.0.1") && html.contains("G1, Xmx 768m"));
    // a run.json written before runs recorded it reads as none
    let mut v: serde_json::Value = serde_json::from_str(&rep.to_json()).unwrap();
    v.as_object_mut().unwrap().remove("fairness");
    assert!(RunReport::from_json(&v.to_string())
        .unwrap()
        .fairness
        .is_empty());
}

#[test]
fn closed_model_report() {
    let text = r#"
name = "c003"
[load]
repetitions = 3
[[stages]]
connections = 4
duration = "20s"
[[stages]]
connections = 50
duration = "20s"
[[requests]]
name = "people"
path = "/people"
[slo]
p99 = "100ms"
[analysis]
trim_head = "2s"
trim_tail = "2s"
min_window = "10s"
"#;
    let plan = parse_plan(text, std::path::Path::new("c.toml")).unwrap();
    let mut acc = RunAccumulator::with_passes(&plan, "mvc-jdbc", 3);
    let mut t = 0;
    for pass in 0..3u32 {
        for lvl in 0..2usize {
            for _ in 0..20 {
                let n = [800u64, 3000][lvl] + pass as u64 * 20;
                let mut s = Second::new(
                    t,
                    ceiling_metrics::Phase::Measure,
                    pass as usize * 2 + lvl,
                    1,
                );
                s.offered = n;
                for k in 0..n {
                    ceiling_metrics::record_us(
                        &mut s.tags[0].latency,
                        2000 + k % 700 * (1 + lvl as u64 * 20),
                    );
                    s.tags[0].counts.add(if pass == 2 && lvl == 1 && k == 0 {
                        ceiling_metrics::Outcome::Reset
                    } else {
                        ceiling_metrics::Outcome::Ok
                    });
                }
                acc.push_second(&s);
                acc.push_resource(ResourceSample {
                    t: t as f64 + 1.0,
                    who: Role::Stack,
                    cpu_pct: 100.0 + lvl as f64 * 150.0,
                    rss_bytes: 200 << 20,
                    cgroup_memory_bytes: None,
                });
                t += 1;
            }
        }
    }
    let a = acc.finish();
    let mut rep = RunReport::new(&plan, "closed");
    rep.stacks.push(a);
    let md = render_summary_md(&rep);
    println!("{}", render_terminal(&rep));
    assert!(md.contains("### Levels (closed model)"), "{md}");
    assert!(md.contains("⚑ reps #3"));
    let tb = closed_table(&rep.stacks[0]);
    assert_eq!(tb.rows.len(), 2);
    assert!(tb.rows[0][3].starts_with("820 ± "), "{:?}", tb.rows[0]);
    let html = render_html(&rep, &Series::new()).unwrap();
    assert!(html.contains("Levels (closed model, over repetitions)"));
    assert!(html.contains("No per-second series"));
}

/// The limits record exactly as the stand produces it when a cgroup cannot be had — here a machine
/// without any cgroup hierarchy — stored the way `ceiling run` stores it, must raise the notice in
/// every output and survive run.json. (Before records were typed, `ceiling run` looked for JSON keys
/// the stand never wrote, and this notice could not appear.)
#[test]
fn limits_record_from_the_stand_raises_the_notice() {
    let (mut rep, series) = demo(1.0);
    let none = ceiling_stand::CgroupSystem::default();
    let (group, la) = none.create(
        Role::Stack,
        "go-pgx",
        &Limits {
            cpus: Some(2.0),
            memory_mb: Some(1024),
            cpuset: None,
        },
    );
    assert!(group.is_none());
    assert!(!la.fully_applied(), "{la:?}");
    rep.limits.insert("go-pgx".into(), la);
    let notes = rep.limits_not_applied();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("go-pgx (stack): cpus: ") && notes[0].contains("memory_mb: "),
        "{notes:?}"
    );
    let term = render_terminal(&rep);
    assert!(
        term.contains("!! LIMITS NOT APPLIED: go-pgx (stack): cpus:"),
        "{term}"
    );
    let html = render_html(&rep, &series).unwrap();
    assert!(html.contains("LIMITS NOT APPLIED: go-pgx (stack)"));
    let back = RunReport::from_json(&rep.to_json()).unwrap();
    assert!(render_terminal(&back).contains("!! LIMITS NOT APPLIED: go-pgx (stack)"));
}

#[test]
fn a_dead_postgres_is_a_notice_in_every_output() {
    let (mut rep, series) = demo(1.0);
    rep.stacks[0].part_exits.push(ceiling_analyze::PartExit {
        part: Role::Postgres,
        from_s: 31.0,
        status: "signal 9".into(),
        log_tail: String::new(),
    });
    let want =
        "POSTGRESQL EXITED while `go-pgx` was measured: PostgreSQL exited (signal 9) at t≈31 s";
    assert!(render_terminal(&rep).contains(&format!("!! {want}")));
    assert!(render_summary_md(&rep).contains(want));
    assert!(render_html(&rep, &series)
        .unwrap()
        .contains("POSTGRESQL EXITED while"));
    let back = RunReport::from_json(&rep.to_json()).unwrap();
    assert_eq!(back.stacks[0].part_exits, rep.stacks[0].part_exits);
}

/// The percentile spectrum is read from the hlog, merged over each shelf's kept window: a known
/// uniform 1…100 ms distribution gives p90 ≈ 90 ms and p99 ≈ 99 ms, and the chart is drawn.
#[test]
fn percentile_spectrum_from_the_hlog() {
    let (rep, series) = demo(1.0);
    let dir = std::env::temp_dir().join(format!("ceiling-spectrum-test-{}", std::process::id()));
    let stack = rep.stacks[0].stack.clone();
    std::fs::create_dir_all(dir.join(&stack)).unwrap();
    let f = std::fs::File::create(dir.join(&stack).join("latency.hlog")).unwrap();
    let mut w = ceiling_metrics::HlogWriter::new(f, std::time::SystemTime::now(), "test").unwrap();
    let end = rep.stacks[0]
        .shelves
        .iter()
        .filter_map(|s| s.window.kept_end_s)
        .fold(0.0, f64::max) as u64;
    for t in 0..end {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for ms in 1..=100u64 {
            h.record_n(ms * 1000, 10).unwrap();
        }
        // two tags: both are merged
        for tag in ["get_by_id", "put"] {
            w.write(
                &h,
                std::time::Duration::from_secs(t),
                std::time::Duration::from_secs(1),
                tag,
            )
            .unwrap();
        }
    }
    w.flush().unwrap();
    drop(w);
    let spectra = load_spectra(&dir, &rep);
    let v = &spectra[&stack];
    assert_eq!(
        v.len(),
        rep.stacks[0]
            .shelves
            .iter()
            .filter(|s| s.requests > 0)
            .count()
    );
    let at = |k: f64| {
        v[0].points
            .iter()
            .find(|p| (p.0 - k).abs() < 1e-9)
            .map(|p| p.1)
            .unwrap()
    };
    assert!((at(1.0) - 90.0).abs() <= 1.0, "p90 {}", at(1.0));
    assert!((at(2.0) - 99.0).abs() <= 1.0, "p99 {}", at(2.0));
    assert!(
        v[0].points.windows(2).all(|p| p[1].1 >= p[0].1),
        "non-decreasing"
    );
    let html = html::render_html_full(&rep, &series, &SignalSeries::new(), &spectra, &[]).unwrap();
    assert!(html.contains("latency percentile spectrum per shelf"));
    std::fs::remove_dir_all(&dir).ok();
}

/// The outputs a user reads, as snapshots (crates/report/src/snapshots/): any change to the
/// terminal table or summary.md shows up as a reviewed diff. Update with
/// `INSTA_UPDATE=always cargo test -p ceiling-report` and read the diff before committing.
#[test]
fn terminal_and_markdown_outputs_are_as_reviewed() {
    let (rep, _) = demo(0.1);
    insta::assert_snapshot!("terminal_demo", render_terminal(&rep));
    insta::assert_snapshot!("summary_md_demo", render_summary_md(&rep));
}

/// `<tag` start tags in `s` (followed by a space, `>` or `/`, so `<tr` is not `<track`).
fn start_tags(s: &str, tag: &str) -> usize {
    let open = format!("<{tag}");
    s.match_indices(&open)
        .filter(|(i, _)| {
            matches!(
                s.as_bytes().get(i + open.len()),
                Some(b' ' | b'>' | b'/' | b'\n')
            )
        })
        .count()
}

/// Element names in document order (lower-cased), without the ones an HTML parser adds by itself
/// (`html`, `head`, `body`, `tbody`).
fn element_sequence(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    for (i, _) in s.match_indices('<') {
        let name: String = b[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-')
            .map(|c| c.to_ascii_lowercase() as char)
            .collect();
        if name.starts_with(|c: char| c.is_ascii_alphabetic())
            && !matches!(name.as_str(), "html" | "head" | "body" | "tbody")
        {
            out.push(name);
        }
    }
    out
}

/// A Chromium on PATH (`chromium` on Debian; scripts/setup.sh core installs it).
fn browser() -> Option<std::path::PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|b| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(b))
                    .find(|f| f.is_file())
            })
        })
}

/// Runs headless Chromium on `page` with `args`, bounded to 90 s by coreutils' `timeout`.
fn chromium(browser: &std::path::Path, args: &[&str], page: &std::path::Path) -> Vec<u8> {
    let out = std::process::Command::new("timeout")
        .arg("90")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The report in a real browser (headless Chromium): the page parses into the document ceiling
/// wrote — the same elements in the same order, nothing dropped, moved or closed early by the
/// HTML parser's error recovery (checked to catch a div inside a table), no script — and it paints: a screenshot of it is far larger
/// than one of an empty page of the same size. Skipped with a message when Chromium is missing,
/// unless `CEILING_REQUIRE_BROWSER` is set (`make test` sets it).
#[test]
fn html_report_renders_in_a_real_browser() {
    let Some(browser) = browser() else {
        assert!(
            std::env::var_os("CEILING_REQUIRE_BROWSER").is_none(),
            "CEILING_REQUIRE_BROWSER is set and no chromium is on PATH (scripts/setup.sh core installs it)"
        );
        eprintln!("skipped: no chromium on PATH (scripts/setup.sh core installs it)");
        return;
    };
    let (rep, series) = simulate_demo();
    let html = render_html(&rep, &series).unwrap();
    let dir = std::env::temp_dir().join(format!("ceiling-browser-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    std::fs::write(&page, &html).unwrap();
    let blank = dir.join("blank.html");
    std::fs::write(&blank, "<!doctype html><html><body></body></html>").unwrap();

    let dom = String::from_utf8(chromium(&browser, &["--dump-dom"], &page)).unwrap();
    assert!(start_tags(&html, "svg") >= 10, "the demo has its charts");
    // the same elements, in the same document order: an element the HTML parser dropped, moved
    // (foster-parenting out of a table) or closed early would change the sequence
    let (ours, browsers) = (element_sequence(&html), element_sequence(&dom));
    if let Some(i) = (0..ours.len().min(browsers.len())).find(|&i| ours[i] != browsers[i]) {
        panic!(
            "element {i} differs: ceiling wrote <{}>, the browser has <{}> (context: {:?})",
            ours[i],
            browsers[i],
            &ours[i.saturating_sub(3)..(i + 3).min(ours.len())]
        );
    }
    assert_eq!(ours.len(), browsers.len(), "element count");
    assert_eq!(start_tags(&dom, "script"), 0);
    // the comparison can fail: a div inside a table is moved out of it by the parser
    let bad = dir.join("bad.html");
    let bad_html = "<!doctype html><html><body><table><tr><td>a</td></tr><div>moved</div></table></body></html>";
    std::fs::write(&bad, bad_html).unwrap();
    let bad_dom = String::from_utf8(chromium(&browser, &["--dump-dom"], &bad)).unwrap();
    assert_ne!(element_sequence(bad_html), element_sequence(&bad_dom));

    let shot = |p: &std::path::Path, name: &str| {
        let png = dir.join(name);
        let arg = format!("--screenshot={}", png.display());
        chromium(&browser, &[&arg, "--window-size=1280,3000"], p);
        let bytes = std::fs::read(&png).expect("a screenshot");
        assert!(bytes.starts_with(b"\x89PNG"), "{name} is a PNG");
        bytes.len()
    };
    let (painted, empty) = (shot(&page, "report.png"), shot(&blank, "blank.png"));
    assert!(
        painted > 20 * empty,
        "the report's screenshot ({painted} B) is hardly more than an empty page's ({empty} B)"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_cost_table_prices_the_measured_ceilings() {
    let (mut rep, series) = demo(1.0);
    let sized = |rep: &mut RunReport| {
        let st = rep.plan.stand.as_mut().unwrap();
        st.cpus = Some(1.0);
        st.memory_mb = Some(1024);
    };
    sized(&mut rep);
    rep.plan.cost = Some(ceiling_plan::CostSettings {
        currency: "RUB".into(),
        cpu_hour: 1.12,
        gb_hour: 0.39,
        services: 10,
        min_instances: 3,
        reference: Some("go-pgx".into()),
        target_rps: None,
    });
    let md = render_summary_md(&rep);
    assert!(md.contains("### Cost"), "{md}");
    // go-pgx defines the load (3 instances, 396,828.00 RUB for 10 services at 13,227.60 each);
    // spring-mvc-jdbc passed no shelf: no count
    let go = md
        .lines()
        .find(|l| l.starts_with("| go-pgx") && l.contains("396,828.00"))
        .expect(&md);
    assert!(go.contains("| 3 |"), "{go}");
    assert!(md.contains("— (no ceiling)"), "{md}");
    assert!(md.contains("13,227.60 RUB/year"), "{md}");
    let ct = rep.costs().unwrap().unwrap();
    let wf = ct.rows.iter().find(|r| r.stack == "webflux-r2dbc").unwrap();
    let go = &ct.rows[0];
    // the truth: instances = max(3, ⌈3 × go's ceiling ÷ its own ceiling⌉)
    let want = ((3.0 * go.ceiling_rps / wf.ceiling_rps) - 1e-9)
        .ceil()
        .max(3.0) as u32;
    assert_eq!(wf.instances, Some(want));
    assert!(render_html(&rep, &series)
        .unwrap()
        .contains("<h3>Cost</h3>"));
    assert!(render_terminal(&rep).contains("instances per service"));
    // priced against a stack without a ceiling: said, not computed
    rep.plan.cost.as_mut().unwrap().reference = Some("spring-mvc-jdbc".into());
    let md = render_summary_md(&rep);
    assert!(
        md.contains("Cost not computed: the reference stack `spring-mvc-jdbc` has no ceiling"),
        "{md}"
    );
    // a plan without [cost]: no table
    rep.plan.cost = None;
    assert!(!render_summary_md(&rep).contains("### Cost"));
}

#[test]
fn the_generators_engine_and_scheduling_are_recorded_and_said() {
    // the default engine at normal priority: nothing said, nothing stored
    let (rep, _) = demo(1.0);
    assert!(generator_line(&rep.plan).is_none());
    let json = serde_json::to_string(&rep).unwrap();
    assert!(!json.contains("tick_ms") && !json.contains("\"realtime\""));
    // a ticked, real-time run: stored in run.json, read back, and said under the placement
    let mut rep = rep;
    rep.plan.tick_ms = Some(2.0);
    rep.plan.realtime = true;
    let back = RunReport::from_json(&serde_json::to_string(&rep).unwrap()).unwrap();
    assert_eq!((back.plan.tick_ms, back.plan.realtime), (Some(2.0), true));
    let text = render_terminal(&back);
    assert!(
        text.contains("generator: the ticked engine, tick 2ms; its threads under SCHED_FIFO"),
        "{text}"
    );
}
