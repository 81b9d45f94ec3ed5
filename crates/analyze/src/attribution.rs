//! Why a shelf (or a search probe) failed: a pure function over the recorded per-second series
//! (`timeseries.csv` rows and `signals.csv` rows) of its window.
//!
//! 1. **Suspect seconds.** *Freezes*: seconds where completions collapse while load is still
//!    offered (achieved < 50 % of offered, or of the window's typical second: a closed model
//!    stops sending when its requests stop completing) or whose slowest request is far above the window's
//!    normal (max ≥ 10 × the median per-second p99 and ≥ 100 ms); consecutive ones are merged.
//!    *Tail seconds*: the fewest seconds that hold 80 % of the window's bad requests (errors, plus
//!    requests over the SLO estimated from each second's percentiles — p99 > SLO means ≥ 1 % of
//!    that second's requests were over it, p90 > SLO ≥ 10 %, and so on).
//! 2. **Levels.** For every cause a level in [0, 1] per second (e.g. the share of active
//!    PostgreSQL backends waiting on a lock; the share of CFS periods throttled), averaged over
//!    the suspect seconds (`S`, each weighted by its bad requests + 1, so the seconds where most
//!    requests went wrong count most) and over the rest of the window (`R`, unweighted).
//! 3. **Score** = ½·level(S) + ½·max(0, level(S) − level(R)): half "how strongly is it there when
//!    things go wrong", half "how much more than when they do not". A cause that is present all
//!    the time (a stack saturated at its quota for the whole shelf) still scores through the
//!    first half; one that is always there but harmless is discounted by the second.
//!    `R` counts only with ≥ 3 seconds; with fewer, the score is level(S).
//! 4. Causes scoring ≥ [`MIN_SCORE`] are reported, best first, with evidence strings and the
//!    seconds where their signal was present; when none does, the answer is
//!    [`CauseKind::Unexplained`] with the best near-miss as evidence.
//!
//! Other processes' CPU counts toward a host stall only in proportion to the scheduling delay the
//! control saw (≥ 25 ms = full), so a host busy with other work that still answers promptly is
//! not blamed.
//!
//! A window where nothing completed (a search's low-rate check after an overload that wedged the
//! stack) is attributed too: every second is a freeze, so every second is a suspect. Two causes
//! answer the question such a window asks — *where are the requests?* A full DB pool while
//! PostgreSQL has no active backend is [`CauseKind::DbPoolExhausted`] with that contrast as its
//! evidence (connections held without work in the database: a leak, e.g. R2DBC's on cancelled
//! requests). Completions stopped while the stack idles, PostgreSQL idles, the host answers
//! promptly and no pause or full pool accounts for it is [`CauseKind::StackHung`]: a stopped or
//! deadlocked process, not a slow one.
//!
//! Generator-bound and database-down are absolute (a fact, not a contrast): their level in `S`
//! is their score. A second is generator-bound when its schedule lag p99 exceeds the plan's limit
//! *and* is at least half its latency p99 (the generator's lateness accounts for the latency;
//! during a service freeze sends are delayed a little too, while connections are opened), or the
//! generator's CPU exceeded its limit, or requests were refused for a full backlog.

use ceiling_metrics::{SignalRow, TimeseriesRow};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Causes below this score are not reported.
pub const MIN_SCORE: f64 = 0.2;

/// The stack's threads waiting this long for a CPU per second (summed over threads) count as
/// fully starved in the host-stall rule. go-pgx's threads wait ~100 ms/s on an idle 2-core box
/// beside the generator (2026-11-25), hence a scale well above that.
const STACK_STARVED_MS: f64 = 500.0;

/// A second in which the generator's threads together waited this long for a CPU (run delay,
/// ms per second) is generator-bound: the generator, not the service, set its latency.
pub const GENERATOR_STARVED_MS: f64 = 250.0;

/// How far a starved generator can inflate a second's p99 beyond its own schedule lag. It reads
/// responses late as well as sending late (the injected fault of docs/benchmarks.md §9: lag p99
/// 139 ms, p99 3.7 s, 27×), but a service that leaves requests unanswered for seconds while the
/// generator keeps its schedule within tens of ms is not the generator's doing (source 001's Java
/// as published at 250 RPS, §27: the generator waited 600 ms/s for a CPU, lag p99 14 ms, p99 10 s
/// of timeouts — 700×).
pub const STARVED_MAX_INFLATION: f64 = 100.0;

/// What made a window slow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// The stack used (nearly) all the CPU it could get: its quota, or the host's CPUs.
    StackCpu,
    /// The stack's cgroup CPU quota throttled it (CFS periods with the quota exhausted).
    StackThrottled,
    /// Stop-the-world GC or event-loop stalls in the stack's runtime.
    RuntimePause,
    /// Every connection of the stack's DB pool was in use, requests queued for one.
    DbPoolExhausted,
    /// PostgreSQL used (nearly) all the CPU it could get — its quota, or the host's CPUs with
    /// PostgreSQL the largest consumer (query work, or a process forked per connection when a
    /// stack opens one per request).
    DbCpu,
    /// PostgreSQL backends waited on heavyweight locks.
    DbLockWait,
    /// PostgreSQL backends waited on WAL flushes/writes or data-file I/O.
    DbIo,
    /// The host itself: other processes' CPU, steal, or the control endpoint froze too.
    HostStall,
    /// The kernel dropped connections at the stack's listen queue.
    ListenOverflow,
    /// The generator fell behind its schedule (the measurement, not the stack).
    GeneratorBound,
    /// PostgreSQL could not be reached.
    DatabaseDown,
    /// The stack's process exited during the window (crashed, killed, or ended itself): known from
    /// the stand's supervision, not inferred from signals ([`stack_exited`]).
    StackExited,
    /// The stack stopped answering while idle: completions collapsed with load still offered, yet
    /// the stack was far from its CPU, PostgreSQL had no active backend, the host answered
    /// promptly and neither a runtime pause nor a full DB pool accounts for it — a hang (a
    /// deadlock, a stopped process, a wait on something outside the recorded signals).
    StackHung,
    /// No recorded signal explains the suspect seconds.
    Unexplained,
}

impl CauseKind {
    /// Every kind, in report order.
    pub const ALL: [CauseKind; 14] = [
        CauseKind::StackCpu,
        CauseKind::StackThrottled,
        CauseKind::RuntimePause,
        CauseKind::DbPoolExhausted,
        CauseKind::DbCpu,
        CauseKind::DbLockWait,
        CauseKind::DbIo,
        CauseKind::HostStall,
        CauseKind::ListenOverflow,
        CauseKind::GeneratorBound,
        CauseKind::DatabaseDown,
        CauseKind::StackExited,
        CauseKind::StackHung,
        CauseKind::Unexplained,
    ];

    /// A short phrase for one-line verdicts.
    pub fn phrase(self) -> &'static str {
        match self {
            CauseKind::StackCpu => "the stack is CPU-bound",
            CauseKind::StackThrottled => "the stack is throttled by its CPU quota",
            CauseKind::RuntimePause => "runtime pauses (GC / event loop)",
            CauseKind::DbPoolExhausted => "the stack's DB pool is exhausted",
            CauseKind::DbCpu => "PostgreSQL is CPU-bound",
            CauseKind::DbLockWait => "PostgreSQL lock waits",
            CauseKind::DbIo => "PostgreSQL WAL/disk I/O",
            CauseKind::HostStall => "a host stall, not the stack",
            CauseKind::ListenOverflow => "listen-queue overflow",
            CauseKind::GeneratorBound => "the generator fell behind (measurement invalid)",
            CauseKind::DatabaseDown => "PostgreSQL was unreachable",
            CauseKind::StackExited => "the stack's process exited",
            CauseKind::StackHung => {
                "the stack stopped answering while idle (a hang, not its CPU, the database or the host)"
            }
            CauseKind::Unexplained => "unexplained by the recorded signals",
        }
    }
}

/// One ranked cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    /// What.
    pub kind: CauseKind,
    /// Strength in [0, 1] (see the module documentation).
    pub score: f64,
    /// Human-readable evidence, strongest first.
    pub evidence: Vec<String>,
    /// Suspect seconds (run clock) where this cause's signal was present.
    pub seconds: Vec<u32>,
}

/// A run of consecutive frozen seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Freeze {
    /// First second (run clock).
    pub start: u32,
    /// Length, seconds.
    pub len: u32,
    /// Lowest achieved/offered ratio in it.
    pub min_achieved_ratio: f64,
    /// Slowest request in it, ms.
    pub max_ms: f64,
}

/// The thresholds attribution needs from the plan.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AttributionContext {
    /// The SLO's latency limit over all requests, ms (the strictest when several).
    pub slo_ms: f64,
    /// Schedule lag p99 above this makes a second generator-bound, ms.
    pub max_lag_ms: f64,
    /// Generator CPU above this makes a second generator-bound, % of one core.
    pub max_generator_cpu: f64,
}

/// Attribution of one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// First second analysed (run clock).
    pub start: u32,
    /// One past the last second analysed.
    pub end: u32,
    /// Frozen stretches.
    pub freezes: Vec<Freeze>,
    /// Seconds holding 80 % of the bad requests, in time order.
    pub tail_seconds: Vec<u32>,
    /// Estimated bad requests (errors + over the SLO) in the window.
    pub bad_requests: f64,
    /// Seconds of the window with a signals row.
    pub signal_seconds: u32,
    /// Ranked causes (score ≥ [`MIN_SCORE`]), or one [`CauseKind::Unexplained`].
    pub causes: Vec<Cause>,
    /// Signals that were not recorded for this window (so a cause could not be checked).
    pub not_sampled: Vec<String>,
    /// One sentence: what froze, when, and the likely cause with its evidence.
    pub summary: String,
}

impl Attribution {
    /// The best cause.
    pub fn top(&self) -> Option<&Cause> {
        self.causes.first()
    }
}

fn clamp01(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// Estimated requests over `slo_ms` in a second, from its percentiles (a lower bound of the
/// bracket the SLO falls in).
pub fn over_slo_estimate(r: &TimeseriesRow, slo_ms: f64) -> f64 {
    let n = r.achieved_rps as f64;
    if n == 0.0 {
        return 0.0;
    }
    for (v, frac) in [
        (r.p50_ms, 0.5),
        (r.p90_ms, 0.10),
        (r.p95_ms, 0.05),
        (r.p99_ms, 0.01),
        (r.p999_ms, 0.001),
    ] {
        if v > slo_ms {
            return frac * n;
        }
    }
    if r.max_ms > slo_ms {
        1.0
    } else {
        0.0
    }
}

fn errors(r: &TimeseriesRow) -> u64 {
    r.err_4xx + r.err_5xx + r.err_timeout + r.err_connect + r.err_reset + r.err_other
}

/// The crate's one median ([`crate::stats::median`]), 0 for no seconds at all.
fn median(v: Vec<f64>) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        crate::stats::median(&v)
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn secs_list(v: &[u32]) -> String {
    let mut s: Vec<String> = v.iter().take(6).map(|x| format!("{x} s")).collect();
    if v.len() > 6 {
        s.push(format!("… ({} in all)", v.len()));
    }
    s.join(", ")
}

/// The fewest seconds, heaviest first, that hold 80% of `total` (each second's weight in
/// `weights`; seconds of no weight never count), in time order.
fn seconds_holding_most(weights: &[(u32, f64)], total: f64) -> Vec<u32> {
    let mut sorted = weights.to_vec();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = Vec::new();
    let mut acc = 0.0;
    for (t, w) in sorted {
        if total <= 0.0 || acc >= 0.8 * total || w <= 0.0 {
            break;
        }
        acc += w;
        out.push(t);
    }
    out.sort_unstable();
    out
}

/// Per-second level of one cause: `Some(level)` where it could be measured.
type LevelFn<'a> = Box<dyn Fn(&TimeseriesRow, Option<&SignalRow>) -> Option<f64> + 'a>;

struct Probe<'a> {
    kind: CauseKind,
    level: LevelFn<'a>,
    absolute: bool,
    /// What must be recorded to check this cause.
    needs: &'static str,
}

/// Mean of `f` over the seconds in `set` where it is measurable, each second weighted by
/// `weight(t)`; `None` when nowhere. Also the seconds where the level is ≥ 0.5.
fn mean_over(
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
fn avg(
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

fn maxof(
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
fn stack_cpu_level(r: &TimeseriesRow, s: &SignalRow) -> Option<f64> {
    let cpu = r.stack_cpu_pct?;
    let cap = capacity(s)?;
    Some(near_quota(cpu, cap).max(host_saturated_by(s, cpu).unwrap_or(0.0)))
}

/// The stack's rule with PostgreSQL's process tree: at its own quota, or the host saturated with
/// PostgreSQL the consumer of the busy time.
fn db_cpu_level(r: &TimeseriesRow, s: &SignalRow) -> Option<f64> {
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
fn near_quota(cpu: f64, cap: f64) -> f64 {
    clamp01((cpu / cap - 0.8) / 0.15)
}

/// How far the host is saturated (0 below 85% busy, 1 from 95%) times the share of its busy
/// time that `cpu` (% of a core) accounts for; `None` without the host's figures.
fn host_saturated_by(s: &SignalRow, cpu: f64) -> Option<f64> {
    match (s.host_busy_pct, s.host_cpus) {
        (Some(b), Some(c)) if b > 0.0 => {
            Some(clamp01((b / (c * 100.0) - 0.85) / 0.1) * clamp01(cpu / b))
        }
        _ => None,
    }
}

/// The stack's CPU capacity in % of one core: its quota, capped by the host's CPUs.
fn capacity(s: &SignalRow) -> Option<f64> {
    let host = s.host_cpus.map(|c| c * 100.0);
    match (s.stack_cpu_limit_pct, host) {
        (Some(l), Some(h)) => Some(l.min(h)),
        (l, h) => l.or(h),
    }
}

/// The share of the machine's CPUs stolen by the hypervisor at which steal alone accounts for a
/// stall fully (less counts in proportion).
const STEAL_FULL: f64 = 0.5;

/// How far a host stall accounts for second `r`, 0…1: the control (a trivial process at the
/// stack's priority) slow or missing, the stack's threads waiting for a CPU, other processes'
/// CPU in proportion to that starvation, or steal. `p99_ms` is the latency the stall has to
/// account for.
fn host_stall_level(p99_ms: f64, s: &SignalRow) -> Option<f64> {
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
fn runtime_pause_level(r: &TimeseriesRow, s: &SignalRow) -> Option<f64> {
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
fn pool_full(s: &SignalRow) -> bool {
    let full = match (s.pool_in_use, s.pool_max) {
        (Some(u), Some(m)) if m > 0.0 => u >= 0.95 * m,
        _ => false,
    };
    full || s.pool_pending.is_some_and(|p| p >= 1.0)
}

/// How far completions stopped in second `r`, 0…1: 1 when fewer than 10% of the requests
/// offered in it (open model) — or of the window's typical second, `typical` (closed model, whose
/// sends stop with the completions) — completed, 0 from half of them on.
fn stalled_level(r: &TimeseriesRow, typical: f64) -> f64 {
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
fn hang_level(r: &TimeseriesRow, s: &SignalRow, typical: f64) -> Option<f64> {
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

/// Attributes the seconds `[start, end)` of a run. `rows` and `signals` may hold the whole run
/// (they are filtered by `t`); `signals` may be empty (old runs): then only the generator's own
/// signals can be checked, and `not_sampled` says so.
pub fn attribute(
    rows: &[TimeseriesRow],
    signals: &[SignalRow],
    start: u32,
    end: u32,
    ctx: &AttributionContext,
) -> Attribution {
    let rows: BTreeMap<u32, &TimeseriesRow> = rows
        .iter()
        .filter(|r| r.t >= start && r.t < end)
        .map(|r| (r.t, r))
        .collect();
    let sig: BTreeMap<u32, &SignalRow> = signals
        .iter()
        .filter(|r| r.t >= start && r.t < end)
        .map(|r| (r.t, r))
        .collect();
    let all: Vec<u32> = rows.keys().copied().collect();
    // a second's completions in the window's typical second (a closed model's sends stop with
    // its completions, so a hang shows against this, not against what was offered)
    let typical = median(rows.values().map(|r| r.achieved_rps as f64).collect());

    // 1. freezes
    let base_p99 = median(rows.values().map(|r| r.p99_ms).collect());
    let frozen: Vec<u32> = rows
        .values()
        .filter(|r| {
            // fewer than half completed, against what was offered or (a closed model stops
            // sending when its requests stop completing) against the window's typical second
            let collapse = stalled_level(r, typical) > 0.0;
            let spike = r.max_ms >= (10.0 * base_p99).max(100.0);
            collapse || spike
        })
        .map(|r| r.t)
        .collect();
    let mut freezes: Vec<Freeze> = Vec::new();
    for t in &frozen {
        let r = rows[t];
        let base = (r.offered_rps as f64).max(typical);
        let ratio = if base > 0.0 {
            (r.achieved_rps as f64 / base).min(1.0)
        } else {
            1.0
        };
        match freezes.last_mut() {
            Some(f) if f.start + f.len == *t => {
                f.len += 1;
                f.min_achieved_ratio = f.min_achieved_ratio.min(ratio);
                f.max_ms = f.max_ms.max(r.max_ms);
            }
            _ => freezes.push(Freeze {
                start: *t,
                len: 1,
                min_achieved_ratio: ratio,
                max_ms: r.max_ms,
            }),
        }
    }

    // 2. tail seconds
    let bad: Vec<(u32, f64)> = rows
        .values()
        .map(|r| (r.t, over_slo_estimate(r, ctx.slo_ms) + errors(r) as f64))
        .collect();
    let total_bad: f64 = bad.iter().map(|b| b.1).sum();
    let tail = seconds_holding_most(&bad, total_bad);

    // where the bad requests waited: one that completed at t after L ms was delayed over the
    // seconds [t − L, t], and its cause acted there, not at its completion — the requests a 20-s
    // stall holds all complete in the catch-up seconds after it, when the stall is gone. Each
    // second's bad requests are spread evenly over the seconds their typical latency spans (the
    // p50 when the median request was bad, else the p99), and the seconds holding 80% of that
    // weight are suspects too.
    let mut waited: BTreeMap<u32, f64> = BTreeMap::new();
    for (t, b) in &bad {
        if *b <= 0.0 {
            continue;
        }
        let r = rows[t];
        let typical = if r.p50_ms > ctx.slo_ms {
            r.p50_ms
        } else {
            r.p99_ms
        };
        let back = ((typical / 1000.0).floor().max(0.0) as u32).min(t - start);
        let share = b / f64::from(back + 1);
        for u in (t - back)..=*t {
            *waited.entry(u).or_default() += share;
        }
    }
    let by_wait: Vec<(u32, f64)> = waited.iter().map(|(t, w)| (*t, *w)).collect();
    let wait_tail = seconds_holding_most(&by_wait, total_bad);

    // suspect seconds S and the rest R
    let mut s_set: Vec<u32> = frozen
        .iter()
        .chain(&tail)
        .chain(wait_tail.iter().filter(|t| rows.contains_key(t)))
        .copied()
        .collect();
    s_set.sort_unstable();
    s_set.dedup();
    let r_set: Vec<u32> = all
        .iter()
        .copied()
        .filter(|t| s_set.binary_search(t).is_err())
        .collect();

    let mut not_sampled = Vec::new();
    if sig.is_empty() {
        not_sampled.push("no signals were recorded for this window (signals.csv missing): only the generator's own health could be checked".to_string());
    }

    // 3. levels per cause
    let lag = ctx.max_lag_ms;
    let gcpu = ctx.max_generator_cpu;
    let probes: Vec<Probe> = vec![
        Probe {
            kind: CauseKind::GeneratorBound,
            absolute: true,
            needs: "",
            // late beyond the limit *and* late enough to account for the second's latency (a
            // service freeze also delays sends a little while connections are opened; then the
            // latency is far above the lag), or out of CPU, or refusing requests
            // … or starved: its threads waited for a CPU *and* it fell behind its schedule
            // beyond the limit (a starved generator also reads responses late, which inflates
            // latency far beyond its schedule lag). Waiting for a CPU alone is not enough: a
            // stack that saturates a small shared host makes every thread wait, the
            // generator's too, while the generator still keeps its send times (go-pgx at
            // 8000 RPS on 2 cores: 380 ms/s of run-queue wait, lag p99 7 ms, p99 863 ms — the
            // stack's latency, not the generator's).
            level: Box::new(move |r, s| {
                let late = r.lag_p99_ms > lag && r.lag_p99_ms >= 0.5 * r.p99_ms;
                let starved = r.lag_p99_ms > lag
                    && r.p99_ms <= STARVED_MAX_INFLATION * r.lag_p99_ms
                    && s.and_then(|s| s.gen_run_delay_ms)
                        .is_some_and(|d| d >= GENERATOR_STARVED_MS);
                Some(
                    if late || starved || r.generator_cpu_pct > gcpu || r.overflow > 0 {
                        1.0
                    } else {
                        0.0
                    },
                )
            }),
        },
        Probe {
            kind: CauseKind::DatabaseDown,
            absolute: true,
            needs: "PostgreSQL sampler",
            level: Box::new(|_, s| s?.pg_up.map(|up| if up { 0.0 } else { 1.0 })),
        },
        Probe {
            kind: CauseKind::StackThrottled,
            absolute: false,
            needs: "the stack's cgroup cpu.stat",
            level: Box::new(|_, s| {
                let s = s?;
                let p = s.stack_periods? as f64;
                let th = s.stack_throttled_periods? as f64;
                Some(if p > 0.0 { th / p } else { 0.0 })
            }),
        },
        Probe {
            kind: CauseKind::StackCpu,
            absolute: false,
            needs: "host CPU and the stack's CPU",
            level: Box::new(|r, s| {
                let s = s?;
                let level = stack_cpu_level(r, s)?;
                // at its quota, "throttled" is the sharper diagnosis: rank it first
                let throttled = match (s.stack_periods, s.stack_throttled_periods) {
                    (Some(p), Some(t)) if p > 0 => t as f64 / p as f64,
                    _ => 0.0,
                };
                Some(level * (1.0 - 0.5 * clamp01(throttled)))
            }),
        },
        Probe {
            kind: CauseKind::RuntimePause,
            absolute: false,
            needs: "the stack's /metrics (GC pauses or event-loop lag)",
            level: Box::new(|r, s| runtime_pause_level(r, s?)),
        },
        Probe {
            kind: CauseKind::DbPoolExhausted,
            absolute: false,
            needs: "the stack's /metrics (DB pool)",
            level: Box::new(|r, s| {
                let s = s?;
                // time spent acquiring (pgxpool, HikariCP) per completed request, against the
                // second's p99: waiting for a connection accounts for the latency
                let waited = match s.pool_wait_ms {
                    Some(w) if r.achieved_rps > 0 => {
                        clamp01(w / r.achieved_rps as f64 / (0.1 * r.p99_ms).max(1.0))
                    }
                    _ => 0.0,
                };
                if s.pool_max.is_none() && s.pool_pending.is_none() && s.pool_wait_ms.is_none() {
                    return None;
                }
                // a pool full of connections whose backends wait in PostgreSQL is a symptom of
                // those waits: discount it by the share of active backends waiting there
                let waiting = match s.pg_active {
                    Some(a) if a > 0.0 => clamp01(
                        (s.pg_lock.unwrap_or(0.0)
                            + s.pg_wal.unwrap_or(0.0)
                            + s.pg_io_datafileread.unwrap_or(0.0)
                            + s.pg_io_other.unwrap_or(0.0)
                            + s.pg_lwlock.unwrap_or(0.0))
                            / a,
                    ),
                    _ => 0.0,
                };
                // … and a pool full of connections held by requests the kernel is throttling (the
                // stack's CPU quota ran out) is a symptom of the throttling: discount it by the
                // share of CFS periods throttled
                let throttled = match (s.stack_periods, s.stack_throttled_periods) {
                    (Some(p), Some(t)) if p > 0 => clamp01(t as f64 / p as f64),
                    _ => 0.0,
                };
                // … and a pool full while the CPUs are saturated is a symptom of that: the
                // requests holding the connections wait for a CPU (the stack's, or PostgreSQL's
                // backends'), and more connections would not serve more. A closed model at its
                // limit fills any pool smaller than its connections (source 002's WebFlux at
                // 1000 connections over a pool of 100: pool full, 800 waiting, the stack 161% of
                // a core and the host 99% busy — the CPU is the ceiling, not the pool).
                let busy = stack_cpu_level(r, s)
                    .unwrap_or(0.0)
                    .max(db_cpu_level(r, s).unwrap_or(0.0));
                let flag: f64 = if pool_full(s) { 1.0 } else { 0.0 };
                Some(flag.max(waited) * (1.0 - waiting.max(throttled).max(busy)))
            }),
        },
        Probe {
            kind: CauseKind::DbCpu,
            absolute: false,
            needs: "host CPU and PostgreSQL's CPU",
            // the stack's CPU rule with PostgreSQL's process tree: at its own quota, or the host
            // saturated with PostgreSQL the largest share of the busy time
            level: Box::new(|r, s| db_cpu_level(r, s?)),
        },
        Probe {
            kind: CauseKind::DbLockWait,
            absolute: false,
            needs: "PostgreSQL wait events",
            level: Box::new(|_, s| {
                let s = s?;
                Some(s.pg_lock? / s.pg_active?.max(1.0))
            }),
        },
        Probe {
            kind: CauseKind::DbIo,
            absolute: false,
            needs: "PostgreSQL wait events",
            level: Box::new(|_, s| {
                let s = s?;
                let io =
                    s.pg_wal? + s.pg_io_datafileread.unwrap_or(0.0) + s.pg_io_other.unwrap_or(0.0);
                Some(io / s.pg_active?.max(1.0))
            }),
        },
        Probe {
            kind: CauseKind::HostStall,
            absolute: false,
            needs: "host CPU and the control",
            // the control (a trivial process at the stack's priority) accounts for the second's
            // latency: its slowest probe is comparable to the requests' p99, or it missed. Other
            // processes' CPU counts in proportion to that delay, so a host busy with other work
            // that still answers promptly is not blamed for a stack's own slowness.
            // a second where nothing completed held its requests for the whole second at least:
            // the control must have seen a comparable stall, not its p99 of 0
            level: Box::new(|r, s| {
                let p99 = if r.achieved_rps == 0 && r.offered_rps > 0 {
                    r.p99_ms.max(1000.0)
                } else {
                    r.p99_ms
                };
                host_stall_level(p99, s?)
            }),
        },
        Probe {
            kind: CauseKind::StackHung,
            absolute: false,
            needs: "the stack's CPU and PostgreSQL's activity",
            level: Box::new(move |r, s| hang_level(r, s?, typical)),
        },
        Probe {
            kind: CauseKind::ListenOverflow,
            absolute: false,
            needs: "/proc/net/netstat",
            level: Box::new(|_, s| {
                let s = s?;
                let n = s.listen_overflows? + s.listen_drops.unwrap_or(0);
                Some(if n > 0 { 1.0 } else { 0.0 })
            }),
        },
    ];

    let mut causes: Vec<Cause> = Vec::new();
    let mut near_miss: Option<(CauseKind, f64)> = None;
    // suspect seconds weigh by the bad requests that waited through them (+1, so a freeze with
    // few completions counts): a cause present where most requests were held outranks one
    // present at the edges
    let w_s = |t: u32| waited.get(&t).copied().unwrap_or(0.0) + 1.0;
    let w_r = |_: u32| 1.0;
    for p in &probes {
        let Some((ls, present)) = mean_over(&s_set, &rows, &sig, &p.level, &w_s) else {
            if !p.needs.is_empty() && !sig.is_empty() && !s_set.is_empty() {
                not_sampled.push(format!(
                    "{:?}: not checked ({} not recorded)",
                    p.kind, p.needs
                ));
            }
            continue;
        };
        let score = if p.absolute {
            ls
        } else {
            let lr = if r_set.len() >= 3 {
                mean_over(&r_set, &rows, &sig, &p.level, &w_r)
                    .map(|x| x.0)
                    .unwrap_or(0.0)
            } else {
                0.0
            };
            0.5 * ls + 0.5 * (ls - lr).max(0.0)
        };
        // the pool is a gauge read at each scrape: in a suspect second where the stack did not
        // answer its /metrics there is no reading, and a pool read full only in the seconds
        // around such a silence (the backlog a stopped stack drains when it resumes) cannot
        // outrank what held the requests in the silence itself — weigh it by the share of the
        // suspect seconds' weight where it was read
        let score = if p.kind == CauseKind::DbPoolExhausted {
            let (mut read, mut silent) = (0.0, 0.0);
            for t in &s_set {
                let (Some(r), Some(x)) = (rows.get(t), sig.get(t)) else {
                    continue;
                };
                if (p.level)(r, Some(x)).is_some() {
                    read += w_s(*t);
                } else if x.runtime_scrape_ok == Some(false) {
                    silent += w_s(*t);
                }
            }
            if read + silent > 0.0 {
                score * read / (read + silent)
            } else {
                score
            }
        } else {
            score
        };
        if score >= MIN_SCORE {
            causes.push(Cause {
                kind: p.kind,
                score,
                evidence: evidence(p.kind, &s_set, &r_set, &rows, &sig),
                seconds: present,
            });
        } else if near_miss.map(|n| score > n.1).unwrap_or(true) && score > 0.0 {
            near_miss = Some((p.kind, score));
        }
    }
    causes.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.kind.cmp(&b.kind)));
    if causes.is_empty() && !s_set.is_empty() {
        let mut ev = vec![format!(
            "no recorded signal stood out in the {} suspect second{}",
            s_set.len(),
            if s_set.len() == 1 { "" } else { "s" }
        )];
        if let Some((k, sc)) = near_miss {
            ev.push(format!(
                "closest: {} (score {sc:.2} < {MIN_SCORE})",
                k.phrase()
            ));
        }
        ev.extend(not_sampled.iter().cloned());
        causes.push(Cause {
            kind: CauseKind::Unexplained,
            score: 0.0,
            evidence: ev,
            seconds: s_set.clone(),
        });
    }

    let mut summary = summary_of(&freezes, &tail, &s_set, all.len(), &causes);
    let offered: u64 = rows.values().map(|r| r.offered_rps).sum();
    if offered > 0 && rows.values().all(|r| r.achieved_rps == 0) {
        // the freezes say the same in more words: say it plainly
        let rest = summary
            .split_once(" — ")
            .map(|(_, c)| format!(" — {c}"))
            .unwrap_or_default();
        summary = format!(
            "nothing completed in the {} s window ({offered} requests offered){rest}",
            all.len()
        );
    }
    Attribution {
        start,
        end,
        freezes,
        tail_seconds: tail,
        bad_requests: total_bad,
        signal_seconds: sig.len() as u32,
        causes,
        not_sampled,
        summary,
    }
}

/// The thresholds for a stack analysed with `criteria`: the strictest latency limit over all
/// requests (else the strictest per-request one; 1 s when the SLO has no latency limit), and the
/// generator-bound limits.
pub fn context_of(criteria: &crate::ShelfCriteria) -> AttributionContext {
    let overall = criteria
        .limits
        .iter()
        .filter(|l| l.request.is_none())
        .map(|l| l.limit_ms)
        .reduce(f64::min);
    let any = criteria.limits.iter().map(|l| l.limit_ms).reduce(f64::min);
    AttributionContext {
        slo_ms: overall.or(any).unwrap_or(1000.0),
        max_lag_ms: criteria.max_schedule_lag_ms,
        max_generator_cpu: criteria.max_generator_cpu,
    }
}

/// Attributes every shelf of `a` that is not valid (failed, or invalid but measured) over its
/// kept window, from the run's per-second rows and signals (both for the whole run). Valid
/// shelves and shelves without a kept window are left without attribution.
pub fn attribute_analysis(
    a: &mut crate::StackAnalysis,
    rows: &[TimeseriesRow],
    signals: &[SignalRow],
) {
    let ctx = context_of(&a.criteria);
    for s in &mut a.shelves {
        s.attribution = None;
        // a window where nothing completed is attributed too (a hang, a wedged pool): only
        // one to which nothing was even offered has nothing to explain
        if s.is_valid() || (s.requests == 0 && s.offered_rps <= 0.0) {
            continue;
        }
        let (Some(k0), Some(k1)) = (s.window.kept_start_s, s.window.kept_end_s) else {
            continue;
        };
        let (start, end) = (k0.floor().max(0.0) as u32, k1.ceil().max(0.0) as u32);
        if end <= start {
            continue;
        }
        s.attribution = Some(attribute(rows, signals, start, end, &ctx));
    }
    if let Some(e) = a.stack_exit.clone() {
        stack_exited(a, e.at_s, &e.report);
    }
}

fn evidence(
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

/// Puts the stack's exit first among the causes of every shelf it touched: each shelf that did
/// not pass and whose kept window (or, for a shelf cut short before its window began, the part of
/// its stage that ran) ends after `at_s` (run clock, the last second the stack was seen alive + 1). `report` is the stand's crash report: its first line says how the
/// process ended, its last log line usually why (e.g. `log.Fatal`'s message). The exit is a fact
/// the stand observed, so it scores 1 and outranks every inferred cause; those stay below it
/// (a saturated host may be why the stack died, or what its death left behind).
pub fn stack_exited(a: &mut crate::StackAnalysis, at_s: f64, report: &str) {
    let how = report.lines().next().unwrap_or("exited").trim().to_string();
    let last_log = report
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with("---") && *l != how);
    for s in &mut a.shelves {
        if s.is_valid() {
            continue;
        }
        // the kept window; for a shelf the exit cut short before its window began, the part of
        // its stage that was run (it has no kept window, but it is the shelf the exit ended)
        let (k0, k1) = match (s.window.kept_start_s, s.window.kept_end_s) {
            (Some(k0), Some(k1)) if s.requests > 0 => (k0, k1),
            _ => match (s.window.stage_start_s, s.window.stage_end_s) {
                (Some(a0), Some(a1)) if s.window.seen_s > 0.0 => (a0, a1),
                _ => continue,
            },
        };
        if k1 <= at_s {
            continue;
        }
        let (start, end) = (k0.floor().max(0.0) as u32, k1.ceil().max(0.0) as u32);
        let from = (at_s.max(k0).floor() as u32).min(end);
        let mut evidence = vec![format!("{how} at t≈{at_s:.0} s")];
        if let Some(l) = last_log {
            evidence.push(format!("its last log line: {l}"));
        }
        let cause = Cause {
            kind: CauseKind::StackExited,
            score: 1.0,
            evidence,
            seconds: (from..end).collect(),
        };
        let at = s.attribution.get_or_insert_with(|| Attribution {
            start,
            end,
            freezes: Vec::new(),
            tail_seconds: Vec::new(),
            bad_requests: 0.0,
            signal_seconds: 0,
            causes: Vec::new(),
            not_sampled: Vec::new(),
            summary: String::new(),
        });
        at.causes.retain(|c| c.kind != CauseKind::Unexplained);
        at.causes.insert(0, cause);
        let before = std::mem::take(&mut at.summary);
        at.summary = if before.is_empty() {
            format!("the stack's process exited at t≈{at_s:.0} s ({how})")
        } else {
            format!("the stack's process exited at t≈{at_s:.0} s ({how}); the signals: {before}")
        };
    }
}

fn summary_of(
    freezes: &[Freeze],
    tail: &[u32],
    s: &[u32],
    window: usize,
    causes: &[Cause],
) -> String {
    let mut parts = Vec::new();
    if !freezes.is_empty() {
        let mean_len = freezes.iter().map(|f| f.len as f64).sum::<f64>() / freezes.len() as f64;
        let at: Vec<String> = freezes
            .iter()
            .take(4)
            .map(|f| format!("{} s", f.start))
            .collect();
        let more = if freezes.len() > 4 { " …" } else { "" };
        parts.push(format!(
            "{} freeze{} of ~{:.0} s at {}{more}",
            freezes.len(),
            if freezes.len() == 1 { "" } else { "s" },
            mean_len.max(1.0),
            at.join(", ")
        ));
    }
    if !tail.is_empty() {
        parts.push(format!(
            "80% of the slow/failed requests in {} of {window} s{}",
            tail.len(),
            if tail.len() <= 3 {
                format!(" ({})", secs_list(tail))
            } else {
                String::new()
            }
        ));
    }
    if s.is_empty() {
        return "no freeze and no request over the SLO in the window".into();
    }
    let mut out = parts.join("; ");
    match causes.first() {
        Some(c) if c.kind == CauseKind::Unexplained => {
            out.push_str(&format!(" — {}", c.kind.phrase()));
            if let Some(e) = c.evidence.get(1) {
                out.push_str(&format!(" ({e})"));
            }
        }
        Some(c) => {
            out.push_str(&format!(" — likely {}", c.kind.phrase()));
            if !c.evidence.is_empty() {
                out.push_str(&format!(
                    ": {}",
                    c.evidence[..c.evidence.len().min(2)].join(", ")
                ));
            }
            let also: Vec<&str> = causes[1..]
                .iter()
                .take(2)
                .map(|c| c.kind.phrase())
                .collect();
            if !also.is_empty() {
                out.push_str(&format!("; also {}", also.join(", ")));
            }
        }
        None => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: AttributionContext = AttributionContext {
        slo_ms: 100.0,
        max_lag_ms: 10.0,
        max_generator_cpu: 90.0,
    };

    /// 60 healthy seconds at 1000 RPS and a healthy host, stack and database.
    fn healthy() -> (Vec<TimeseriesRow>, Vec<SignalRow>) {
        let rows = (0..60)
            .map(|t| TimeseriesRow {
                t,
                phase: "measure".into(),
                offered_rps: 1000,
                achieved_rps: 1000,
                ok: 1000,
                p50_ms: 1.0,
                p90_ms: 2.0,
                p95_ms: 3.0,
                p99_ms: 5.0,
                p999_ms: 9.0,
                max_ms: 15.0,
                lag_p99_ms: 0.2,
                generator_cpu_pct: 10.0,
                stack_cpu_pct: Some(60.0),
                postgres_cpu_pct: Some(30.0),
                ..Default::default()
            })
            .collect();
        let sig = (0..60)
            .map(|t| SignalRow {
                t,
                host_cpus: Some(2.0),
                host_busy_pct: Some(110.0),
                host_iowait_pct: Some(0.0),
                host_steal_pct: Some(0.0),
                other_cpu_pct: Some(10.0),
                run_queue_max: Some(2.0),
                disk_await_ms: Some(0.5),
                listen_overflows: Some(0),
                listen_drops: Some(0),
                stack_cpu_limit_pct: Some(200.0),
                stack_periods: Some(10),
                stack_throttled_periods: Some(0),
                stack_throttled_ms: Some(0.0),
                pg_up: Some(true),
                pg_samples: Some(10),
                pg_active: Some(2.0),
                pg_cpu: Some(1.5),
                pg_lock: Some(0.0),
                pg_wal: Some(0.1),
                pg_io_walsync: Some(0.1),
                pg_io_walwrite: Some(0.0),
                pg_io_datafileread: Some(0.0),
                pg_io_other: Some(0.0),
                pg_lwlock: Some(0.0),
                pg_client: Some(0.4),
                pg_other: Some(0.0),
                control_probes: Some(10),
                control_misses: Some(0),
                control_max_ms: Some(1.0),
                runtime_scrape_ok: Some(true),
                gc_pause_ms: Some(1.0),
                gc_count: Some(1),
                pool_max: Some(64.0),
                pool_in_use: Some(3.0),
                ..Default::default()
            })
            .collect();
        (rows, sig)
    }

    /// A second in which nothing completed: no requests, no latency.
    fn silent(r: &mut TimeseriesRow) {
        r.achieved_rps = 0;
        r.ok = 0;
        latency(r, [0.0; 6]);
    }

    /// Sets a second's p50, p90, p95, p99, p99.9 and max (ms).
    fn latency(r: &mut TimeseriesRow, [p50, p90, p95, p99, p999, max]: [f64; 6]) {
        r.p50_ms = p50;
        r.p90_ms = p90;
        r.p95_ms = p95;
        r.p99_ms = p99;
        r.p999_ms = p999;
        r.max_ms = max;
    }

    /// Two ~1 s freezes at 20 s and 40 s: completions collapse, the max is near a second.
    fn freeze(rows: &mut [TimeseriesRow]) {
        for t in [20usize, 40] {
            let r = &mut rows[t];
            r.achieved_rps = 300;
            r.ok = 300;
            latency(r, [400.0, 800.0, 850.0, 900.0, 950.0, 980.0]);
            rows[t + 1].achieved_rps = 1700;
            rows[t + 1].p99_ms = 300.0;
            rows[t + 1].max_ms = 500.0;
        }
    }

    fn top(rows: &[TimeseriesRow], sig: &[SignalRow]) -> Attribution {
        attribute(rows, sig, 0, 60, &CTX)
    }

    fn at(sig: &mut [SignalRow], f: impl Fn(&mut SignalRow)) {
        for t in [20usize, 21, 40, 41] {
            f(&mut sig[t]);
        }
    }

    fn assert_top(a: &Attribution, k: CauseKind) {
        assert_eq!(a.top().map(|c| c.kind), Some(k), "{a:#?}");
        assert!(a.top().unwrap().score >= MIN_SCORE || k == CauseKind::Unexplained);
        assert!(!a.top().unwrap().evidence.is_empty(), "{a:#?}");
    }

    #[test]
    fn healthy_window_has_nothing_to_explain() {
        let (rows, sig) = healthy();
        let a = top(&rows, &sig);
        assert!(a.freezes.is_empty());
        assert!(a.tail_seconds.is_empty());
        assert!(a.causes.is_empty(), "{a:#?}");
    }

    #[test]
    fn freezes_are_found_and_merged() {
        let (mut rows, sig) = healthy();
        freeze(&mut rows);
        rows[22].achieved_rps = 100; // a third frozen second right after a catch-up second
        let a = top(&rows, &sig);
        let starts: Vec<(u32, u32)> = a.freezes.iter().map(|f| (f.start, f.len)).collect();
        assert_eq!(starts, vec![(20, 3), (40, 2)], "{a:#?}");
        assert!(a.tail_seconds.contains(&20) && a.tail_seconds.contains(&40));
        assert!(a.summary.contains("2 freezes"), "{}", a.summary);
    }

    #[test]
    fn lock_waits() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        at(&mut sig, |s| {
            s.pg_active = Some(16.0);
            s.pg_lock = Some(14.0);
            s.pg_cpu = Some(1.0);
            s.pool_in_use = Some(64.0);
        });
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::DbLockWait);
        assert!(a.summary.contains("lock"), "{}", a.summary);
    }

    #[test]
    fn wal_io_with_the_control_frozen_is_a_host_io_stall() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        at(&mut sig, |s| {
            s.pg_active = Some(20.0);
            s.pg_wal = Some(17.0);
            s.pg_io_walsync = Some(17.0);
            s.pg_cpu = Some(1.0);
            s.disk_await_ms = Some(400.0);
            s.host_iowait_pct = Some(80.0);
        });
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::DbIo);
        assert!(
            a.top().unwrap().evidence[0].contains("IO:WALSync"),
            "{a:#?}"
        );
        assert!(
            !a.causes.iter().any(|c| c.kind == CauseKind::HostStall),
            "control fine: {a:#?}"
        );
        // the same with the control frozen: the host is named too
        at(&mut sig, |s| {
            s.control_misses = Some(3);
            s.control_max_ms = Some(2000.0);
        });
        let a = top(&rows, &sig);
        let kinds: Vec<CauseKind> = a.causes.iter().map(|c| c.kind).collect();
        assert!(
            kinds.contains(&CauseKind::DbIo) && kinds.contains(&CauseKind::HostStall),
            "{a:#?}"
        );
    }

    #[test]
    fn throttled_by_quota_all_window() {
        let (mut rows, mut sig) = healthy();
        for r in rows.iter_mut() {
            r.p50_ms = 150.0;
            r.p90_ms = 400.0;
            r.p99_ms = 700.0;
            r.max_ms = 900.0;
            r.stack_cpu_pct = Some(19.5);
        }
        for s in sig.iter_mut() {
            s.stack_cpu_limit_pct = Some(20.0);
            s.stack_periods = Some(10);
            s.stack_throttled_periods = Some(10);
            s.stack_throttled_ms = Some(700.0);
        }
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::StackThrottled);
        assert!(
            a.causes.iter().any(|c| c.kind == CauseKind::StackCpu),
            "{a:#?}"
        );
    }

    /// The stack saturating a 2-core host without a CPU quota: p99 `p99_ms`, stack at 150%.
    fn saturated_host(p99_ms: f64) -> (Vec<TimeseriesRow>, Vec<SignalRow>) {
        let (mut rows, mut sig) = healthy();
        for r in rows.iter_mut() {
            r.p50_ms = 150.0;
            r.p99_ms = p99_ms;
            r.max_ms = p99_ms + 200.0;
            r.stack_cpu_pct = Some(150.0);
        }
        for s in sig.iter_mut() {
            s.stack_cpu_limit_pct = None;
            s.stack_periods = None;
            s.stack_throttled_periods = None;
            s.host_busy_pct = Some(199.0);
            s.other_cpu_pct = Some(5.0);
        }
        (rows, sig)
    }

    #[test]
    fn cpu_bound_on_a_saturated_host_without_quota() {
        let (rows, sig) = saturated_host(600.0);
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::StackCpu);
    }

    /// PostgreSQL saturating the host (a process forked per connection): the stack is light.
    #[test]
    fn postgres_cpu_bound_on_a_saturated_host() {
        let (mut rows, mut sig) = healthy();
        for t in 30..60 {
            let r = &mut rows[t];
            r.p50_ms = 80.0;
            r.p99_ms = 400.0;
            r.max_ms = 600.0;
            r.stack_cpu_pct = Some(25.0);
            r.postgres_cpu_pct = Some(165.0);
            sig[t].host_busy_pct = Some(196.0);
            sig[t].pg_cpu = Some(6.0);
            sig[t].pg_active = Some(7.0);
        }
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::DbCpu);
        assert!(
            !a.causes.iter().any(|c| c.kind == CauseKind::StackCpu),
            "{:?}",
            a.causes
        );
        let ev = a.causes[0].evidence.join("; ");
        // "elsewhere" is the window's other seconds: the healthy half and the slow seconds
        // outside the 80% tail, so between the two levels
        assert!(
            ev.contains("PostgreSQL CPU 165% of a core (elsewhere "),
            "{ev}"
        );
        // the same seconds with the stack the consumer are the stack's
        let (mut rows, sig2) = (rows, sig);
        for r in rows.iter_mut().skip(30) {
            r.stack_cpu_pct = Some(165.0);
            r.postgres_cpu_pct = Some(25.0);
        }
        assert_top(&top(&rows, &sig2), CauseKind::StackCpu);
    }

    /// PostgreSQL at its own CPU quota while the host has room.
    #[test]
    fn postgres_at_its_quota() {
        let (mut rows, mut sig) = healthy();
        for s in sig.iter_mut() {
            s.pg_cpu_limit_pct = Some(100.0);
        }
        for r in rows.iter_mut().skip(30) {
            r.p99_ms = 400.0;
            r.max_ms = 600.0;
            r.postgres_cpu_pct = Some(98.0);
        }
        assert_top(&top(&rows, &sig), CauseKind::DbCpu);
    }

    #[test]
    fn gc_pauses() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        at(&mut sig, |s| s.gc_pause_ms = Some(700.0));
        assert_top(&top(&rows, &sig), CauseKind::RuntimePause);
    }

    #[test]
    fn pool_exhausted_without_database_waits() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        at(&mut sig, |s| {
            s.pool_in_use = Some(64.0);
            s.pool_pending = Some(40.0);
        });
        assert_top(&top(&rows, &sig), CauseKind::DbPoolExhausted);
    }

    /// A closed model at its limit: every connection beyond the pool waits for one, so the pool
    /// is full — but the stack's CPU is saturated, and that is the ceiling (source 002's WebFlux
    /// at 1000 connections, pool 100). Without the saturation the pool stays the cause.
    #[test]
    fn a_full_pool_on_a_saturated_cpu_is_the_cpus_symptom() {
        let (mut rows, mut sig) = healthy();
        for (r, s) in rows.iter_mut().zip(sig.iter_mut()).skip(30) {
            r.p50_ms = 780.0;
            r.p99_ms = 1040.0;
            r.max_ms = 1190.0;
            r.stack_cpu_pct = Some(161.0);
            r.postgres_cpu_pct = Some(30.0);
            s.host_busy_pct = Some(198.0);
            s.pool_in_use = Some(100.0);
            s.pool_max = Some(100.0);
            s.pool_pending = Some(800.0);
        }
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::StackCpu);
        // the same pool with the host at half its capacity: the pool is the cause
        for (r, s) in rows.iter_mut().zip(sig.iter_mut()).skip(30) {
            r.stack_cpu_pct = Some(60.0);
            s.host_busy_pct = Some(100.0);
        }
        assert_top(&top(&rows, &sig), CauseKind::DbPoolExhausted);
    }

    #[test]
    fn pool_acquire_wait_accounts_for_the_latency() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        for s in sig.iter_mut() {
            s.pool_wait_ms = Some(200.0); // 0.2 ms per request normally
        }
        at(&mut sig, |s| {
            s.pool_in_use = Some(42.0);
            s.pool_wait_ms = Some(120_000.0); // 400 ms per request in the freeze
            s.pool_empty_acquires = Some(1000);
        });
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::DbPoolExhausted);
        assert!(
            a.top()
                .unwrap()
                .evidence
                .iter()
                .any(|e| e.contains("to acquire")),
            "{a:#?}"
        );
    }

    #[test]
    fn a_cpu_hog_outside_the_run() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        at(&mut sig, |s| {
            s.other_cpu_pct = Some(120.0);
            s.host_busy_pct = Some(200.0);
            s.run_queue_max = Some(8.0);
            // the control, one scheduling hop, waited about half as long as the requests
            s.control_max_ms = Some(400.0);
        });
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::HostStall);
        assert!(
            a.top()
                .unwrap()
                .evidence
                .iter()
                .any(|e| e.contains("outside the run")),
            "{a:#?}"
        );
    }

    /// A hog on the stack's CPUs: the control, running elsewhere, answers promptly, but the
    /// stack's threads wait for a CPU while processes outside the run hold them.
    #[test]
    fn a_hog_on_the_stacks_cpus_is_a_host_stall_though_the_control_is_prompt() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        at(&mut sig, |s| {
            s.other_cpu_pct = Some(95.0);
            s.host_busy_pct = Some(190.0);
            s.control_max_ms = Some(2.0);
            s.stack_run_delay_ms = Some(600.0);
        });
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::HostStall);
        let ev = a.top().unwrap().evidence.join("; ");
        assert!(
            ev.contains("the stack's threads waited 600 ms per second for a CPU"),
            "{ev}"
        );
        // the same waits with nothing else on the host are the stack's own threads queueing
        // behind each other: not a host stall
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        at(&mut sig, |s| {
            s.other_cpu_pct = Some(5.0);
            s.control_max_ms = Some(2.0);
            s.stack_run_delay_ms = Some(600.0);
        });
        let a = top(&rows, &sig);
        assert!(
            !a.causes.iter().any(|c| c.kind == CauseKind::HostStall),
            "{:?}",
            a.causes
        );
    }

    /// A 20-s stall whose requests all complete in the three catch-up seconds after it (the
    /// CPU-hog run of 2026-11-25: the hogs held the stack's CPU 8–29 s, p99 20.9 s at 30–32 s).
    /// The hog is visible only while it runs; the catch-up seconds show the consequences — the
    /// generator reading a burst of responses late, PostgreSQL's WAL queue under the burst of
    /// writes. The cause is where the requests waited, not where they completed.
    #[test]
    fn a_long_stall_is_explained_where_its_requests_waited_not_where_they_completed() {
        let (mut rows, mut sig) = healthy();
        for t in 10..30 {
            silent(&mut rows[t]);
            rows[t].stack_cpu_pct = Some(1.0);
            sig[t].other_cpu_pct = Some(100.0);
            sig[t].host_busy_pct = Some(150.0);
            sig[t].control_max_ms = Some(2.0);
            sig[t].stack_run_delay_ms = Some(900.0);
        }
        for t in 30..33 {
            let r = &mut rows[t];
            r.achieved_rps = 7000;
            r.ok = 7000;
            latency(
                r,
                [10_000.0, 18_000.0, 19_000.0, 20_000.0, 20_500.0, 20_900.0],
            );
            r.lag_p99_ms = 15.0;
            sig[t].gen_run_delay_ms = Some(400.0);
            sig[t].pg_active = Some(5.0);
            sig[t].pg_wal = Some(4.0);
            sig[t].pg_lwlock = Some(4.0);
        }
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::HostStall);
        assert_eq!(
            a.tail_seconds,
            vec![30, 31, 32],
            "completions are still where they were"
        );
    }

    #[test]
    fn a_busy_host_that_answers_promptly_is_not_blamed() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        for s in sig.iter_mut() {
            s.other_cpu_pct = Some(150.0); // other work all along
            s.host_busy_pct = Some(200.0);
            s.control_max_ms = Some(5.0);
        }
        at(&mut sig, |s| {
            s.pg_active = Some(16.0);
            s.pg_lock = Some(14.0);
        });
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::DbLockWait);
        assert!(
            !a.causes.iter().any(|c| c.kind == CauseKind::HostStall),
            "{a:#?}"
        );
    }

    #[test]
    fn steal() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        at(&mut sig, |s| s.host_steal_pct = Some(90.0));
        assert_top(&top(&rows, &sig), CauseKind::HostStall);
    }

    #[test]
    fn listen_overflow() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        at(&mut sig, |s| s.listen_overflows = Some(120));
        assert_top(&top(&rows, &sig), CauseKind::ListenOverflow);
    }

    #[test]
    fn generator_bound_wins_over_what_it_distorts() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        for t in [20usize, 40] {
            rows[t].lag_p99_ms = 700.0;
        }
        at(&mut sig, |s| s.control_max_ms = Some(90.0));
        assert_top(&top(&rows, &sig), CauseKind::GeneratorBound);
    }

    #[test]
    fn a_starved_generator_is_generator_bound_though_its_lag_is_small() {
        // the generator's threads waited 600 ms/s for a CPU during the freeze; its schedule lag
        // stayed far below the latency (it sends late, but reads even later), and PostgreSQL's
        // WAL waits were there too
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        for t in [20usize, 40] {
            rows[t].lag_p99_ms = 40.0;
        }
        at(&mut sig, |s| {
            s.gen_run_delay_ms = Some(600.0);
            s.pg_wal = s.pg_active.map(|a| a * 0.5);
        });
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::GeneratorBound);
        assert!(
            a.causes[0]
                .evidence
                .iter()
                .any(|e| e.contains("waited 600 ms per second for a CPU")),
            "{:?}",
            a.causes[0]
        );
    }

    #[test]
    fn a_service_that_stops_answering_is_not_blamed_on_a_starved_generator() {
        // source 001's Java as published at 250 RPS (docs/benchmarks.md §27): the box saturated,
        // the generator's threads waited 600 ms/s for a CPU and its lag p99 passed the limit (the
        // shelf is invalid), but the requests waited seconds in the stack's full accept queue —
        // far more than a generator 14 ms behind its schedule can add
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        for t in [20usize, 40] {
            let r = &mut rows[t];
            r.lag_p99_ms = 14.0;
            r.p99_ms = 2000.0;
            r.p999_ms = 2100.0;
            r.max_ms = 2200.0;
        }
        at(&mut sig, |s| {
            s.gen_run_delay_ms = Some(600.0);
            s.listen_overflows = Some(120);
        });
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::ListenOverflow);
        assert!(
            a.causes.iter().all(|c| c.kind != CauseKind::GeneratorBound),
            "{:?}",
            a.causes
        );
        // the same seconds with the latency a starved generator can make (≤ 100× its lag): it
        // is a suspect again
        for t in [20usize, 40] {
            rows[t].lag_p99_ms = 40.0;
        }
        let a = top(&rows, &sig);
        assert!(
            a.causes.iter().any(|c| c.kind == CauseKind::GeneratorBound),
            "{:?}",
            a.causes
        );
    }

    #[test]
    fn a_generator_waiting_for_cpu_on_a_saturated_host_but_on_time_is_not_the_cause() {
        // the stack saturates a 2-core host: every thread waits for a CPU, the generator's too
        // (350 ms/s), but its schedule lag stays within the limit while p99 is the stack's
        let (mut rows, mut sig) = saturated_host(800.0);
        for r in rows.iter_mut() {
            r.lag_p99_ms = 4.0;
        }
        for s in sig.iter_mut() {
            s.gen_run_delay_ms = Some(350.0);
        }
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::StackCpu);
        assert!(
            a.causes.iter().all(|c| c.kind != CauseKind::GeneratorBound),
            "{:?}",
            a.causes
        );
    }

    #[test]
    fn a_pool_starved_by_cpu_throttling_is_throttling() {
        // a 0.1-CPU quota: every period throttled, and the pool full because the requests holding
        // its connections cannot run (go-pgx under crates/cli/tests/attribution.rs's quota test)
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        at(&mut sig, |s| {
            s.stack_periods = Some(10);
            s.stack_throttled_periods = Some(10);
            s.pool_max = Some(16.0);
            s.pool_in_use = Some(16.0);
            s.pool_wait_ms = Some(5000.0);
        });
        assert_top(&top(&rows, &sig), CauseKind::StackThrottled);
    }

    #[test]
    fn database_down() {
        let (mut rows, mut sig) = healthy();
        freeze(&mut rows);
        for t in [20usize, 40] {
            rows[t].err_5xx = 500;
        }
        at(&mut sig, |s| {
            s.pg_up = Some(false);
            s.pg_active = None;
            s.pg_lock = None;
            s.pg_wal = None;
            s.pg_cpu = None;
        });
        assert_top(&top(&rows, &sig), CauseKind::DatabaseDown);
    }

    /// A window where nothing completes (a search's low-rate check after an overload): every
    /// second offered, none answered.
    fn nothing_completes(rows: &mut [TimeseriesRow]) {
        for r in rows.iter_mut() {
            r.offered_rps = 200;
            silent(r);
            r.stack_cpu_pct = Some(8.0);
            r.postgres_cpu_pct = Some(0.5);
        }
    }

    #[test]
    fn a_pool_held_while_postgres_idles_is_the_pool_with_that_evidence() {
        // spring-webflux-r2dbc after 2 min at 6750 RPS (docs/benchmarks.md §29): the checks
        // saw nothing complete while the R2DBC pool had 64 of 64 connections in use and
        // hundreds waiting, PostgreSQL no active backend and the stack a few % of a core
        let (mut rows, mut sig) = healthy();
        nothing_completes(&mut rows);
        for s in sig.iter_mut() {
            s.pool_in_use = Some(64.0);
            s.pool_pending = Some(300.0);
            s.pg_active = Some(0.0);
            s.pg_cpu = Some(0.0);
            s.pg_wal = Some(0.0);
            s.pg_io_walsync = Some(0.0);
            s.pg_client = Some(0.0);
            s.host_busy_pct = Some(8.0);
            s.gc_pause_ms = Some(0.0);
        }
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::DbPoolExhausted);
        let ev = &a.top().unwrap().evidence;
        assert!(ev[1].contains("without work in the database"), "{ev:?}");
        assert!(
            a.summary
                .starts_with("nothing completed in the 60 s window (12000 requests offered)"),
            "{}",
            a.summary
        );
        assert!(
            a.summary.contains("without work in the database"),
            "{}",
            a.summary
        );
        // the hang rule stands aside: the full pool is the more specific answer
        assert!(
            a.causes.iter().all(|c| c.kind != CauseKind::StackHung),
            "{a:#?}"
        );
        // with PostgreSQL busy on those connections the pool is a symptom again: no such line
        for s in sig.iter_mut() {
            s.pg_active = Some(60.0);
            s.pg_lock = Some(58.0);
        }
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::DbLockWait);
        assert!(a
            .causes
            .iter()
            .flat_map(|c| &c.evidence)
            .all(|e| !e.contains("without work in the database")));
    }

    #[test]
    fn a_stopped_stack_is_a_hang() {
        // SIGSTOP for 10 s: nothing completes, the stack's CPU is 0 and its /metrics silent,
        // PostgreSQL idle, the host and the control fine; then the backlog drains
        let (mut rows, mut sig) = healthy();
        for t in 20..30 {
            let r = &mut rows[t];
            silent(r);
            r.stack_cpu_pct = Some(0.0);
            let s = &mut sig[t];
            s.pg_active = Some(0.0);
            s.host_busy_pct = Some(15.0);
            s.runtime_scrape_ok = Some(false);
            s.gc_pause_ms = None;
            s.gc_count = None;
            s.pool_max = None;
            s.pool_in_use = None;
        }
        // the resumed stack drains its backlog through a full pool, read by the first scrape
        // that answers (the only pool reading near the stop)
        sig[30].pool_in_use = Some(64.0);
        sig[30].pool_pending = Some(900.0);
        sig[30].pg_active = Some(0.0);
        let r = &mut rows[30];
        r.achieved_rps = 11_000;
        r.ok = 11_000;
        latency(r, [5000.0, 9000.0, 9500.0, 9900.0, 10_000.0, 10_050.0]);
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::StackHung);
        let ev = a.top().unwrap().evidence.join("; ");
        assert!(ev.contains("nothing completed in 10 of"), "{ev}");
        assert!(ev.contains("/metrics did not answer in 10"), "{ev}");
        // the same stall with the control frozen is the host's, not a hang
        for s in &mut sig[20..30] {
            s.control_misses = Some(10);
            s.control_max_ms = Some(1000.0);
        }
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::HostStall);
        assert!(
            a.causes.iter().all(|c| c.kind != CauseKind::StackHung),
            "{a:#?}"
        );
        // … and with the stack busy (a spin, a GC storm) it is not a hang either
        for t in 20..30 {
            sig[t].control_misses = Some(0);
            sig[t].control_max_ms = Some(1.0);
            rows[t].stack_cpu_pct = Some(199.0);
        }
        let a = top(&rows, &sig);
        assert!(
            a.causes.iter().all(|c| c.kind != CauseKind::StackHung),
            "{a:#?}"
        );
    }

    #[test]
    fn a_closed_model_hang_is_seen_against_the_typical_second() {
        // a closed model sends only as requests complete: when the stack stops, the sends stop
        // too (offered 0), so the stall shows against the window's typical second, not against
        // what was offered
        let (mut rows, mut sig) = healthy();
        for t in 20..26 {
            silent(&mut rows[t]);
            rows[t].offered_rps = 0;
            rows[t].stack_cpu_pct = Some(0.5);
            sig[t].pg_active = Some(0.0);
            sig[t].runtime_scrape_ok = Some(false);
            sig[t].gc_pause_ms = None;
            sig[t].pool_max = None;
            sig[t].pool_in_use = None;
        }
        // the requests held by the stop complete when it ends, 6 s late
        let r = &mut rows[26];
        latency(r, [3000.0, 5500.0, 5800.0, 6000.0, 6000.0, 6010.0]);
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::StackHung);
        // the whole stop is a freeze (with the catch-up second's 6-s request), nothing
        // completing in it, and the hang is present in each second of the stop
        let f: Vec<(u32, u32, f64)> = a
            .freezes
            .iter()
            .map(|f| (f.start, f.len, f.min_achieved_ratio))
            .collect();
        assert_eq!(f, vec![(20, 7, 0.0)], "{a:#?}");
        assert_eq!(
            a.top().unwrap().seconds,
            (20..26).collect::<Vec<u32>>(),
            "{a:#?}"
        );
    }

    #[test]
    fn a_quiet_window_at_low_load_is_not_a_hang() {
        // idle stack, idle database, every request answered: nothing stopped
        let (mut rows, mut sig) = healthy();
        for r in rows.iter_mut() {
            r.offered_rps = 20;
            r.achieved_rps = 20;
            r.stack_cpu_pct = Some(1.0);
        }
        for s in sig.iter_mut() {
            s.pg_active = Some(0.0);
        }
        freeze(&mut rows);
        for t in [20usize, 40] {
            rows[t].achieved_rps = 20; // slow, not stopped
        }
        let a = top(&rows, &sig);
        assert!(
            a.causes.iter().all(|c| c.kind != CauseKind::StackHung),
            "{a:#?}"
        );
    }

    #[test]
    fn unexplained_when_nothing_fits() {
        let (mut rows, sig) = healthy();
        freeze(&mut rows);
        let a = top(&rows, &sig);
        assert_top(&a, CauseKind::Unexplained);
        assert!(a.summary.contains("unexplained"), "{}", a.summary);
    }

    #[test]
    fn without_signals_only_the_generator_is_checked() {
        let (mut rows, _) = healthy();
        freeze(&mut rows);
        let a = top(&rows, &[]);
        assert_top(&a, CauseKind::Unexplained);
        assert!(
            a.not_sampled.iter().any(|n| n.contains("no signals")),
            "{a:#?}"
        );
    }

    #[test]
    fn over_slo_estimate_brackets() {
        let (rows, _) = healthy();
        let mut r = rows[0].clone();
        assert_eq!(over_slo_estimate(&r, 100.0), 0.0);
        r.max_ms = 150.0;
        assert_eq!(over_slo_estimate(&r, 100.0), 1.0);
        r.p99_ms = 120.0;
        assert_eq!(over_slo_estimate(&r, 100.0), 10.0);
        r.p50_ms = 101.0;
        assert_eq!(over_slo_estimate(&r, 100.0), 500.0);
    }

    #[test]
    fn every_kind_has_a_phrase_and_serialises() {
        for k in CauseKind::ALL {
            assert!(!k.phrase().is_empty());
            let j = serde_json::to_string(&k).unwrap();
            let back: CauseKind = serde_json::from_str(&j).unwrap();
            assert_eq!(back, k);
        }
    }
}
