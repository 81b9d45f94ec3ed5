//! The search on a simulated service with a known capacity: W workers, each serving one request in
//! exactly T (completion times are scheduled on a virtual clock, so timer jitter never accumulates
//! into lost capacity). Below W/T requests per second every request takes T; above it the queue
//! grows without bound and p99 leaves the SLO. The search must find W/T within its tolerance, and
//! its interval must be consistent with it.

use ceiling_analyze::ProbeKind;
use ceiling_plan::{parse_plan, Plan};
use ceiling_search::{search, LoadRunner, SearchOptions};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const WORKERS: usize = 4;
const SERVICE: Duration = Duration::from_millis(10);
const CAPACITY: f64 = WORKERS as f64 / 0.010; // 400 RPS

fn capacity_server() -> u16 {
    // Each request takes the worker that frees up first; completion times are computed on a
    // virtual clock, so sleep jitter never turns into lost capacity.
    ceiling_load::testing::spawn_fixed_capacity_server(WORKERS, SERVICE)
}

fn plan() -> Plan {
    let text = r#"
name = "sim"
[[stages]]
hold = 1
duration = "1s"
[[requests]]
name = "get"
path = "/"
[slo]
p99 = "50ms"
errors = "1%"
[analysis]
trim_head = "500ms"
trim_tail = "0s"
min_window = "1s"
# This test is about the search logic; on a shared 2-core CI machine the generator thread can be
# descheduled for tens of ms, which the default 10 ms lag bound would (rightly) call generator-bound.
max_schedule_lag = "150ms"
[search]
start_rate = 150
growth = 2.0
tolerance = 0.05
probe = "2s"
probe_trim = "500ms"
confirm = "0s"
drain = "500ms"
check = "1s"
repeat = 2
max_time = "5m"
"#;
    parse_plan(text, Path::new("sim.toml")).unwrap()
}

#[test]
fn finds_a_known_capacity_and_recovers_after_each_overload() {
    let port = capacity_server();
    let p = plan();
    let mut runner = LoadRunner::new(format!("http://127.0.0.1:{port}"));
    let mut log = |m: &str| eprintln!("{m}");
    let out = search(&p, &mut runner, &SearchOptions::default(), &mut log);
    eprintln!("{}", out.describe());
    // The queue grows without bound above 400 RPS; over a 2-s probe (0.5 s trimmed) p99 reaches
    // 50 ms at about 400·(1 + 0.04/2) = 408 RPS, so the true crossing lies in 400…408.
    let i = out
        .interval
        .clone()
        .expect("the probes bracket the capacity");
    assert!(
        i.lo <= 408.0 && i.hi >= CAPACITY,
        "interval {:.1}…{:.1} misses the known 400…408",
        i.lo,
        i.hi
    );
    assert!(out.ceiling_rps > 0.0);
    // Bracketing happened, and every failed probe that another measurement followed was followed
    // by a recovery that saw baseline latency before it ran. (A failed probe that ends the search
    // — its time budget ran out, which on a loaded machine can happen right after one — has no
    // next probe to protect, so it is not required to recover.)
    let n = out.probes.len();
    let failed: Vec<_> = out
        .probes
        .iter()
        .enumerate()
        .filter(|(_, v)| v.kind == ProbeKind::Probe && v.failed())
        .collect();
    assert!(!failed.is_empty());
    for (_, f) in failed.into_iter().filter(|(i, _)| i + 1 < n) {
        let r = f
            .recovery
            .as_ref()
            .expect("a failed probe is followed by a recovery");
        assert!(r.recovered, "{r:?}");
    }
    // The probe right after an overload sees the service unloaded: no passing probe below the
    // capacity shows a leftover queue (p50 stays near the 10 ms service time).
    for v in out
        .probes
        .iter()
        .filter(|v| v.kind == ProbeKind::Probe && v.rate < 380.0)
    {
        assert!(v.passed() && v.p50_ms < 30.0, "{}", v.summary());
    }
    assert_eq!(out.binding.as_deref(), Some("p99"), "{}", out.describe());
}

/// A service that sheds load: at most 300 requests per second get `200` (10 ms), the excess an
/// immediate `503`. With errors < 1% the true ceiling is 300 / 0.99 ≈ 303 RPS.
fn shedding_server() -> u16 {
    let window = Mutex::new((Instant::now(), 0u32));
    ceiling_load::testing::spawn_server_with(move |now| {
        let mut w = window.lock().unwrap();
        if now.duration_since(w.0) >= Duration::from_secs(1) {
            *w = (now, 0);
        }
        w.1 += 1;
        if w.1 > 300 {
            (now, 503)
        } else {
            (now + Duration::from_millis(10), 200)
        }
    })
}

#[test]
fn load_shedding_is_bound_by_errors() {
    let port = shedding_server();
    let mut p = plan();
    p.search.start_rate = 100.0;
    let mut runner = LoadRunner::new(format!("http://127.0.0.1:{port}"));
    let mut log = |m: &str| eprintln!("{m}");
    let out = search(&p, &mut runner, &SearchOptions::default(), &mut log);
    eprintln!("{}", out.describe());
    let i = out.interval.clone().expect("bracketed");
    // A 1-s window aligned to the server's clock can admit up to 2×300 across a boundary, so
    // allow the interval to sit anywhere from the capacity to a little above 303.
    assert!(i.lo <= 320.0 && i.hi >= 300.0, "{}", out.describe());
    assert_eq!(out.binding.as_deref(), Some("errors"), "{}", out.describe());
}
