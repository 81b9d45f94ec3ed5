//! Each cause's level per second, in [0, 1]: what the attribution averages over the suspect
//! seconds and the rest of the window.

use super::*;

/// Per-second level of one cause: `Some(level)` where it could be measured.
pub(super) type LevelFn<'a> = Box<dyn Fn(&TimeseriesRow, Option<&SignalRow>) -> Option<f64> + 'a>;

/// One cause as the attribution checks it: its kind, its level per second, whether its score is
/// its level (a fact) rather than a contrast, and what must be recorded to check it.
pub(super) struct Probe<'a> {
    pub(super) kind: CauseKind,
    pub(super) level: LevelFn<'a>,
    pub(super) absolute: bool,
    /// What must be recorded to check this cause.
    pub(super) needs: &'static str,
}

/// Mean of `f` over the seconds in `set` where it is measurable, each second weighted by
/// `weight(t)`; `None` when nowhere. Also the seconds where the level is ≥ 0.5.
pub(super) fn mean_over(
    set: &[u32],
    rows: &BTreeMap<u32, &TimeseriesRow>,
    sig: &BTreeMap<u32, &SignalRow>,
    f: &LevelFn,
    weight: &dyn Fn(u32) -> f64,
) -> Option<(f64, Vec<u32>)> {
    let mut sum = 0.0;
    let mut n = 0.0;
    let mut present = Vec::new();
    for t in set {
        let Some(r) = rows.get(t) else { continue };
        if let Some(l) = f(r, sig.get(t).copied()) {
            let l = clamp01(l);
            let w = weight(*t);
            sum += w * l;
            n += w;
            if l >= 0.5 {
                present.push(*t);
            }
        }
    }
    (n > 0.0).then(|| (sum / n, present))
}

/// Averages a signal over the suspect seconds (where recorded).
pub(super) fn avg(
    set: &[u32],
    sig: &BTreeMap<u32, &SignalRow>,
    f: impl Fn(&SignalRow) -> Option<f64>,
) -> Option<f64> {
    let v: Vec<f64> = set
        .iter()
        .filter_map(|t| sig.get(t).and_then(|s| f(s)))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

pub(super) fn maxof(
    set: &[u32],
    sig: &BTreeMap<u32, &SignalRow>,
    f: impl Fn(&SignalRow) -> Option<f64>,
) -> Option<f64> {
    set.iter()
        .filter_map(|t| sig.get(t).and_then(|s| f(s)))
        .reduce(f64::max)
}

/// How far the stack is CPU-bound in second `r`, 0…1: at 80–95% of its capacity (its quota, or
/// the host), or the host saturated with the stack the consumer of that busy time.
pub(super) fn stack_cpu_level(r: &TimeseriesRow, s: &SignalRow) -> Option<f64> {
    let cpu = r.stack_cpu_pct?;
    let cap = capacity(s)?;
    Some(near_quota(cpu, cap).max(host_saturated_by(s, cpu).unwrap_or(0.0)))
}

/// The stack's rule with PostgreSQL's process tree: at its own quota, or the host saturated with
/// PostgreSQL the consumer of the busy time.
pub(super) fn db_cpu_level(r: &TimeseriesRow, s: &SignalRow) -> Option<f64> {
    let pg = r.postgres_cpu_pct?;
    let quota_level = s
        .pg_cpu_limit_pct
        .filter(|l| *l > 0.0)
        .map(|l| near_quota(pg, l))
        .unwrap_or(0.0);
    match host_saturated_by(s, pg) {
        Some(host_level) => Some(quota_level.max(host_level)),
        None => s.pg_cpu_limit_pct.is_some().then_some(quota_level),
    }
}

/// 0 below 80% of `cap`, 1 from 95% on.
pub(super) fn near_quota(cpu: f64, cap: f64) -> f64 {
    clamp01((cpu / cap - 0.8) / 0.15)
}

/// How far the host is saturated (0 below 85% busy, 1 from 95%) times the share of its busy
/// time that `cpu` (% of a core) accounts for; `None` without the host's figures.
pub(super) fn host_saturated_by(s: &SignalRow, cpu: f64) -> Option<f64> {
    let busy = s.host_busy_pct.filter(|b| *b > 0.0)?;
    Some(host_saturation(s)? * clamp01(cpu / busy))
}

/// How far the host's CPUs are saturated: 0 below 85% busy, 1 from 95%; `None` without the
/// host's figures.
pub(super) fn host_saturation(s: &SignalRow) -> Option<f64> {
    match (s.host_busy_pct, s.host_cpus) {
        (Some(b), Some(c)) if c > 0.0 => Some(clamp01((b / (c * 100.0) - 0.85) / 0.1)),
        _ => None,
    }
}

/// Whether the disk answered its I/O in under a millisecond on average (known, and fast).
pub(super) fn device_fast(s: &SignalRow) -> bool {
    s.disk_await_ms.is_some_and(|a| a < 1.0)
}

/// The stack's CPU capacity in % of one core: its quota, capped by the host's CPUs.
pub(super) fn capacity(s: &SignalRow) -> Option<f64> {
    let host = s.host_cpus.map(|c| c * 100.0);
    match (s.stack_cpu_limit_pct, host) {
        (Some(l), Some(h)) => Some(l.min(h)),
        (l, h) => l.or(h),
    }
}

/// The share of the machine's CPUs stolen by the hypervisor at which steal alone accounts for a
/// stall fully (less counts in proportion).
pub(super) const STEAL_FULL: f64 = 0.5;

/// How far a host stall accounts for second `r`, 0…1: the control (a trivial process at the
/// stack's priority) slow or missing, the stack's threads waiting for a CPU, other processes'
/// CPU in proportion to that starvation, or steal. `p99_ms` is the latency the stall has to
/// account for.
pub(super) fn host_stall_level(p99_ms: f64, s: &SignalRow) -> Option<f64> {
    let cores = s.host_cpus.unwrap_or(1.0) * 100.0;
    // the control probes 10 times a second through one scheduling hop, the requests
    // several hops 300+ times a second: its slowest probe sees a fraction of the
    // delay the requests' tail sees, hence a quarter of their p99 (at least 10 ms)
    let scale = (0.25 * p99_ms).max(10.0);
    let control = s.control_probes.map(|_| {
        if s.control_misses.unwrap_or(0) > 0 {
            1.0
        } else {
            clamp01(s.control_max_ms.unwrap_or(0.0) / scale)
        }
    });
    let starved = match (control, s.run_queue_max, s.host_cpus) {
        (Some(c), _, _) => c,
        (None, Some(q), Some(n)) if n > 0.0 => clamp01((q / n - 1.0) / 2.0),
        _ => 0.0,
    };
    // …or the stack's own threads waited for a CPU: a hog on the CPUs the stack
    // runs on starves it without freezing a control that runs elsewhere (its own
    // surplus threads wait too, but then the CPU outside the run stays low)
    let starved = starved.max(
        s.stack_run_delay_ms
            .map(|d| clamp01(d / STACK_STARVED_MS))
            .unwrap_or(0.0),
    );
    let other = s
        .other_cpu_pct
        .map(|o| clamp01((o / cores - 0.1) / 0.3) * starved);
    // Steal counts fully when half the box was taken: a VM neighbour's 27% of one core (13% of
    // a 2-core box) in the second of an overload is this machine's weather, not the stall that
    // explains it (a search over real sockets saw exactly that, and re-ran a plain overload as
    // "disturbed" until its budget was gone).
    let steal = s.host_steal_pct.map(|x| clamp01(x / cores / STEAL_FULL));
    [other, steal, control]
        .into_iter()
        .flatten()
        .reduce(f64::max)
}

/// How far the stack's own runtime pauses (stop-the-world GC, event-loop stalls) account for
/// second `r`'s slowest request, 0…1; `None` when the stack publishes neither.
pub(super) fn runtime_pause_level(r: &TimeseriesRow, s: &SignalRow) -> Option<f64> {
    if s.gc_pause_ms.is_none() && s.event_loop_lag_ms.is_none() {
        return None;
    }
    let pause = s
        .gc_pause_ms
        .unwrap_or(0.0)
        .max(s.event_loop_lag_ms.unwrap_or(0.0));
    Some(pause / (0.5 * r.max_ms).max(50.0))
}

/// Every connection of the stack's DB pool in use, or requests waiting for one, at the scrape.
pub(super) fn pool_full(s: &SignalRow) -> bool {
    let full = match (s.pool_in_use, s.pool_max) {
        (Some(u), Some(m)) if m > 0.0 => u >= 0.95 * m,
        _ => false,
    };
    full || s.pool_pending.is_some_and(|p| p >= 1.0)
}

/// How far completions stopped in second `r`, 0…1: 1 when fewer than 10% of the requests
/// offered in it (open model) — or of the window's typical second, `typical` (closed model, whose
/// sends stop with the completions) — completed, 0 from half of them on.
pub(super) fn stalled_level(r: &TimeseriesRow, typical: f64) -> f64 {
    let of = |base: f64| {
        if base >= 10.0 {
            clamp01((0.5 - r.achieved_rps as f64 / base) / 0.4)
        } else {
            0.0
        }
    };
    of(r.offered_rps as f64).max(of(typical))
}

/// How far second `r` looks like a hang, 0…1: completions stopped ([`stalled_level`]) while the
/// stack was far from its CPU (1 below a quarter of its capacity, 0 from half), PostgreSQL had no
/// active backend (the requests were not in the database), and none of the causes that also
/// leave a stack idle accounts for it: the host (the control froze, the stack waited for a CPU),
/// a runtime pause, a full DB pool (its own cause, with its evidence). `None` without the
/// stack's CPU or PostgreSQL's activity.
pub(super) fn hang_level(r: &TimeseriesRow, s: &SignalRow, typical: f64) -> Option<f64> {
    let stalled = stalled_level(r, typical);
    let cap = capacity(s)?;
    let idle = 1.0 - clamp01((r.stack_cpu_pct? / cap - 0.25) / 0.25);
    let db_idle = 1.0 - clamp01(s.pg_active?);
    // nothing completing for a second is a wait of a second or more: the host explains it when
    // the control saw a comparable stall, not a few milliseconds of scheduling noise
    let host = host_stall_level(r.p99_ms.max(1000.0), s).unwrap_or(0.0);
    let pause = runtime_pause_level(r, s).map(clamp01).unwrap_or(0.0);
    let pool = if pool_full(s) { 1.0 } else { 0.0 };
    Some(stalled * idle * db_idle * (1.0 - host.max(pause).max(pool)))
}
