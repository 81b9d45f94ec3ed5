//! The sentences that back a cause: the figures of the suspect seconds beside the rest of the
//! window, as the report prints them.

use super::*;

pub(super) fn evidence(
    kind: CauseKind,
    s: &[u32],
    r: &[u32],
    rows: &BTreeMap<u32, &TimeseriesRow>,
    sig: &BTreeMap<u32, &SignalRow>,
) -> Vec<String> {
    let mut v = Vec::new();
    let rs = |f: &dyn Fn(&TimeseriesRow) -> Option<f64>, set: &[u32]| -> Option<f64> {
        let x: Vec<f64> = set
            .iter()
            .filter_map(|t| rows.get(t).and_then(|r| f(r)))
            .collect();
        (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64)
    };
    let ss = |f: &dyn Fn(&SignalRow) -> Option<f64>, set: &[u32]| -> Option<f64> {
        let x: Vec<f64> = set
            .iter()
            .filter_map(|t| sig.get(t).and_then(|r| f(r)))
            .collect();
        (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64)
    };
    let share = |num: &dyn Fn(&SignalRow) -> Option<f64>, set: &[u32]| -> Option<f64> {
        let n: f64 = set
            .iter()
            .filter_map(|t| sig.get(t).and_then(|s| num(s)))
            .sum();
        let d: f64 = set
            .iter()
            .filter_map(|t| sig.get(t).and_then(|s| s.pg_active))
            .sum();
        (d > 0.0).then(|| n / d)
    };
    match kind {
        CauseKind::GeneratorBound => {
            if let Some(d) = ss(&|x| x.gen_run_delay_ms, s) {
                if d >= GENERATOR_STARVED_MS / 2.0 {
                    v.push(format!(
                        "the generator's threads waited {d:.0} ms per second for a CPU"
                    ));
                }
            }
            if let Some(l) = rs(&|r| Some(r.lag_p99_ms), s) {
                v.push(format!(
                    "schedule lag p99 {l:.1} ms on average in those seconds"
                ));
            }
            if let Some(c) = rs(&|r| Some(r.generator_cpu_pct), s) {
                v.push(format!("generator CPU {c:.0}% of a core"));
            }
            let of: u64 = s
                .iter()
                .filter_map(|t| rows.get(t))
                .map(|r| r.overflow)
                .sum();
            if of > 0 {
                v.push(format!("{of} requests refused for a full backlog"));
            }
        }
        CauseKind::DatabaseDown => {
            let n = s
                .iter()
                .filter(|t| sig.get(t).and_then(|x| x.pg_up) == Some(false))
                .count();
            v.push(format!(
                "PostgreSQL unreachable in {n} of {} suspect seconds",
                s.len()
            ));
            let ce: u64 = s
                .iter()
                .filter_map(|t| rows.get(t))
                .map(|r| r.err_5xx + r.err_connect)
                .sum();
            if ce > 0 {
                v.push(format!("{ce} 5xx/connect errors"));
            }
        }
        CauseKind::StackThrottled => {
            let f = |set: &[u32]| {
                let p: u64 = set
                    .iter()
                    .filter_map(|t| sig.get(t).and_then(|x| x.stack_periods))
                    .sum();
                let th: u64 = set
                    .iter()
                    .filter_map(|t| sig.get(t).and_then(|x| x.stack_throttled_periods))
                    .sum();
                (p > 0).then(|| th as f64 / p as f64)
            };
            if let Some(x) = f(s) {
                v.push(format!(
                    "throttled in {} of CFS periods (elsewhere {})",
                    pct(x),
                    f(r).map(pct).unwrap_or_else(|| "n/a".into())
                ));
            }
            if let Some(ms) = avg(s, sig, |x| x.stack_throttled_ms) {
                v.push(format!("{ms:.0} ms throttled per second"));
            }
            if let Some(l) = maxof(s, sig, |x| x.stack_cpu_limit_pct) {
                v.push(format!("quota {l:.0}% of a core"));
            }
        }
        CauseKind::DbCpu => {
            if let Some(c) = rs(&|r| r.postgres_cpu_pct, s) {
                let quota = avg(s, sig, |x| x.pg_cpu_limit_pct);
                v.push(format!(
                    "PostgreSQL CPU {c:.0}% of a core{} (elsewhere {})",
                    quota
                        .map(|q| format!(" of its {q:.0}% quota"))
                        .unwrap_or_default(),
                    rs(&|r| r.postgres_cpu_pct, r)
                        .map(|x| format!("{x:.0}%"))
                        .unwrap_or_else(|| "n/a".into())
                ));
            }
            if let (Some(b), Some(n)) = (
                avg(s, sig, |x| x.host_busy_pct),
                avg(s, sig, |x| x.host_cpus),
            ) {
                v.push(format!("host busy {b:.0}% of {:.0}%", n * 100.0));
            }
            if let Some(c) = rs(&|r| r.stack_cpu_pct, s) {
                v.push(format!("the stack {c:.0}% of a core"));
            }
            if let (Some(on), Some(act)) = (avg(s, sig, |x| x.pg_cpu), avg(s, sig, |x| x.pg_active))
            {
                v.push(format!(
                    "{on:.1} of {act:.1} active backends on CPU (not waiting) per sample"
                ));
            }
        }
        CauseKind::StackCpu => {
            if let Some(c) = rs(&|r| r.stack_cpu_pct, s) {
                let cap = avg(s, sig, capacity);
                v.push(format!(
                    "stack CPU {c:.0}% of a core{}",
                    cap.map(|k| format!(" of {k:.0}% available"))
                        .unwrap_or_default()
                ));
            }
            if let (Some(b), Some(n)) = (
                avg(s, sig, |x| x.host_busy_pct),
                avg(s, sig, |x| x.host_cpus),
            ) {
                v.push(format!("host {}% busy", (b / n).round()));
            }
        }
        CauseKind::RuntimePause => {
            if let Some(g) = avg(s, sig, |x| x.gc_pause_ms) {
                v.push(format!(
                    "GC paused {g:.0} ms per second in those seconds (elsewhere {})",
                    avg(r, sig, |x| x.gc_pause_ms)
                        .map(|x| format!("{x:.0} ms"))
                        .unwrap_or_else(|| "n/a".into())
                ));
            }
            if let Some(l) = maxof(s, sig, |x| x.event_loop_lag_ms) {
                v.push(format!("event-loop lag up to {l:.0} ms"));
            }
        }
        CauseKind::DbPoolExhausted => {
            if let (Some(u), Some(m)) = (
                avg(s, sig, |x| x.pool_in_use),
                maxof(s, sig, |x| x.pool_max),
            ) {
                v.push(format!("pool {u:.0} of {m:.0} connections in use"));
            }
            if let Some(p) = maxof(s, sig, |x| x.pool_pending) {
                v.push(format!("up to {p:.0} requests waiting for a connection"));
            }
            let (w, n): (f64, u64) = s
                .iter()
                .filter_map(|t| Some((sig.get(t)?.pool_wait_ms?, rows.get(t)?.achieved_rps)))
                .fold((0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
            if n > 0 && w > 0.0 {
                v.push(format!(
                    "requests waited {:.1} ms on average to acquire a connection",
                    w / n as f64
                ));
            }
            let empty: u64 = s
                .iter()
                .filter_map(|t| sig.get(t)?.pool_empty_acquires)
                .sum();
            if empty > 0 {
                v.push(format!("{empty} acquires found the pool empty"));
            }
            // a full pool while PostgreSQL has (nearly) nothing to do: the connections are held
            // by requests that are not in the database — a leak (connections never returned,
            // e.g. by requests cancelled mid-query) or a wait elsewhere while holding one
            let full: Vec<u32> = s
                .iter()
                .copied()
                .filter(|t| sig.get(t).is_some_and(|x| pool_full(x)))
                .collect();
            match avg(&full, sig, |x| x.pg_active) {
                Some(a) if a < 1.0 => {
                    v.insert(
                        1.min(v.len()),
                        format!(
                            "PostgreSQL had {a:.1} active backends meanwhile: the connections were held without work in the database (not returned to the pool, or held while waiting elsewhere)"
                        ),
                    );
                }
                _ => v.push("often a symptom: see the database's waits".into()),
            }
        }
        CauseKind::DbLockWait => {
            if let Some(x) = share(&|q| q.pg_lock, s) {
                v.push(format!(
                    "PostgreSQL backends waited on Lock {} of those seconds' active time (elsewhere {})",
                    pct(x),
                    share(&|q| q.pg_lock, r).map(pct).unwrap_or_else(|| "n/a".into())
                ));
            }
            if let Some(a) = avg(s, sig, |x| x.pg_active) {
                v.push(format!("{a:.1} active backends on average"));
            }
        }
        CauseKind::DbIo => {
            let parts = [
                ("IO:WALSync", share(&|q| q.pg_io_walsync, s)),
                ("IO:WALWrite", share(&|q| q.pg_io_walwrite, s)),
                (
                    "LWLock:WAL*",
                    share(
                        &|q| {
                            Some(
                                q.pg_wal?
                                    - q.pg_io_walsync.unwrap_or(0.0)
                                    - q.pg_io_walwrite.unwrap_or(0.0),
                            )
                        },
                        s,
                    ),
                ),
                ("IO:DataFileRead", share(&|q| q.pg_io_datafileread, s)),
                ("other IO", share(&|q| q.pg_io_other, s)),
            ];
            let mut p: Vec<String> = parts
                .iter()
                .filter_map(|(n, x)| x.filter(|x| *x >= 0.05).map(|x| format!("{n} {}", pct(x))))
                .collect();
            if p.is_empty() {
                p.push("I/O".into());
            }
            v.push(format!(
                "PostgreSQL backends waited on {} of those seconds' active time",
                p.join(", ")
            ));
            if let Some(a) = avg(s, sig, |x| x.disk_await_ms) {
                v.push(format!("disk {a:.1} ms per I/O"));
            }
            if let Some(w) = avg(s, sig, |x| x.host_iowait_pct) {
                v.push(format!("host iowait {w:.0}% of a core"));
            }
        }
        CauseKind::HostStall => {
            let froze = s
                .iter()
                .filter(|t| {
                    sig.get(t).is_some_and(|x| {
                        x.control_misses.unwrap_or(0) > 0
                            || x.control_max_ms.unwrap_or(0.0) >= 200.0
                    })
                })
                .count();
            if froze > 0 {
                v.push(format!(
                    "the control froze too in {froze} of {} suspect seconds",
                    s.len()
                ));
            } else if let Some(m) = maxof(s, sig, |x| x.control_max_ms) {
                v.push(format!("control slowest probe {m:.0} ms"));
            }
            if let Some(o) = avg(s, sig, |x| x.other_cpu_pct) {
                v.push(format!(
                    "processes outside the run used {o:.0}% of a core (elsewhere {})",
                    avg(r, sig, |x| x.other_cpu_pct)
                        .map(|x| format!("{x:.0}%"))
                        .unwrap_or_else(|| "n/a".into())
                ));
            }
            if let Some(st) = avg(s, sig, |x| x.host_steal_pct).filter(|x| *x >= 1.0) {
                v.push(format!("steal {st:.0}% of a core"));
            }
            if let Some(w) = avg(s, sig, |x| x.stack_run_delay_ms).filter(|w| *w >= 1.0) {
                v.push(format!(
                    "the stack's threads waited {w:.0} ms per second for a CPU (elsewhere {})",
                    avg(r, sig, |x| x.stack_run_delay_ms)
                        .map(|x| format!("{x:.0} ms"))
                        .unwrap_or_else(|| "n/a".into())
                ));
            }
            if let Some(q) = maxof(s, sig, |x| x.run_queue_max) {
                v.push(format!("run queue up to {q:.0}"));
            }
        }
        CauseKind::ListenOverflow => {
            let n: u64 = s
                .iter()
                .filter_map(|t| sig.get(t))
                .map(|x| x.listen_overflows.unwrap_or(0) + x.listen_drops.unwrap_or(0))
                .sum();
            v.push(format!("{n} listen-queue overflows/drops in those seconds"));
        }
        CauseKind::StackHung => {
            if let Some(c) = rs(&|r| r.stack_cpu_pct, s) {
                let cap = avg(s, sig, capacity);
                v.push(format!(
                    "the stack used {c:.0}% of a core{} meanwhile{}",
                    cap.map(|k| format!(" of {k:.0}% available"))
                        .unwrap_or_default(),
                    rs(&|r| r.stack_cpu_pct, r)
                        .map(|x| format!(" (elsewhere {x:.0}%)"))
                        .unwrap_or_default()
                ));
            }
            if let Some(a) = avg(s, sig, |x| x.pg_active) {
                v.push(format!(
                    "PostgreSQL had {a:.1} active backends: the requests were not in the database"
                ));
            }
            let offered: u64 = s
                .iter()
                .filter_map(|t| rows.get(t))
                .map(|r| r.offered_rps)
                .sum();
            let completed: u64 = s
                .iter()
                .filter_map(|t| rows.get(t))
                .map(|r| r.achieved_rps)
                .sum();
            let dead = s
                .iter()
                .filter(|t| rows.get(t).is_some_and(|r| r.achieved_rps == 0))
                .count();
            v.push(if dead > 0 {
                format!(
                    "nothing completed in {dead} of {} suspect seconds ({offered} requests offered in them, {completed} completed)",
                    s.len()
                )
            } else {
                format!("{completed} requests completed of {offered} offered in the suspect seconds")
            });
            if let Some(m) = maxof(s, sig, |x| x.control_max_ms) {
                v.push(format!(
                    "the control's slowest probe {m:.0} ms: the host kept answering"
                ));
            }
            let silent = s
                .iter()
                .filter(|t| sig.get(t).and_then(|x| x.runtime_scrape_ok) == Some(false))
                .count();
            if silent > 0 {
                v.push(format!(
                    "the stack's /metrics did not answer in {silent} of those seconds"
                ));
            }
        }
        // its evidence is the stand's record of the exit, added by `stack_exited`
        CauseKind::StackExited | CauseKind::Unexplained => {}
    }
    v
}
