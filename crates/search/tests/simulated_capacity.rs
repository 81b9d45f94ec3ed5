//! The search on a simulated service with a known capacity: W workers, each serving one request in
//! exactly T (completion times are scheduled on a virtual clock, so timer jitter never accumulates
//! into lost capacity). Below W/T requests per second every request takes T; above it the queue
//! grows without bound and p99 leaves the SLO. The search must find W/T within its tolerance, and
//! its interval must be consistent with it.

use ceiling_plan::{parse_plan, Plan};
use ceiling_search::{search, LoadRunner};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WORKERS: usize = 4;
const SERVICE: Duration = Duration::from_millis(10);
const CAPACITY: f64 = WORKERS as f64 / 0.010; // 400 RPS

fn capacity_server() -> u16 {
    // Each request takes the worker that frees up first; completion times are computed on a
    // virtual clock, so sleep jitter never turns into lost capacity.
    let free = Mutex::new(vec![Instant::now(); WORKERS]);
    ceiling_load::testing::spawn_server(move |now| {
        let mut f = free.lock().unwrap();
        let (i, t) = f
            .iter()
            .enumerate()
            .min_by_key(|(_, t)| **t)
            .map(|(i, t)| (i, *t))
            .unwrap();
        let done = t.max(now) + SERVICE;
        f[i] = done;
        done
    })
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
confirm = "3s"
drain = "1s"
repeat = 3
max_time = "5m"
"#;
    parse_plan(text, Path::new("sim.toml")).unwrap()
}

#[test]
fn finds_a_known_capacity_within_tolerance() {
    let port = capacity_server();
    let p = plan();
    let mut runner = LoadRunner {
        url: format!("http://127.0.0.1:{port}"),
        data_dir: None,
        threads: 1,
        stop: Arc::new(AtomicBool::new(false)),
        allow_remote: false,
    };
    let mut log = |m: &str| eprintln!("{m}");
    let out = search(&p, &mut runner, &mut log);
    let tol = p.search.tolerance;
    assert_eq!(out.repeats.len(), 3, "{out:?}");
    for r in &out.repeats {
        assert!(r.stopped.is_none(), "repeat stopped: {:?}", r.stopped);
        assert!(
            r.ceiling_rps >= CAPACITY * (1.0 - tol) && r.ceiling_rps <= CAPACITY * (1.0 + tol),
            "repeat ceiling {:.1} is not within ±{}% of the known {CAPACITY}",
            r.ceiling_rps,
            tol * 100.0
        );
        // Bracketing happened: some probe above the ceiling failed.
        assert!(r
            .probes
            .iter()
            .any(|v| v.failed() && v.rate > r.ceiling_rps));
    }
    let e = out.estimate.expect("three repeats give an estimate");
    let half = e.ci95.expect("n = 3 gives an interval");
    // The confirmed ceiling is a lower bound with resolution `tolerance`: the known capacity must
    // lie in [mean − ci, (mean + ci)·(1 + tolerance)].
    eprintln!(
        "ceiling {:.1} ± {:.1} (95% CI), repeats {:?}",
        e.mean,
        half,
        out.repeats
            .iter()
            .map(|r| r.ceiling_rps)
            .collect::<Vec<_>>()
    );
    assert!(
        CAPACITY >= e.mean - half - 1.0 && CAPACITY <= (e.mean + half) * (1.0 + tol) + 1.0,
        "interval does not contain {CAPACITY}"
    );
}
