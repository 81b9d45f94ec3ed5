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

mod evidence;
mod levels;
use evidence::evidence;
use levels::*;

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

use ceiling_fmt::whole_pct as pct;

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
                // Backends waiting on WAL flushes while the device answers in under a
                // millisecond and every CPU is busy wait for a core, not for the disk: the
                // process that would finish the flush is itself waiting to run (§65: go-pgx's
                // failed probes, disk await 0.06 ms, the box 197% of 200% busy). Discounted by
                // the box's saturation then; a slow device keeps the whole level.
                let for_a_core = if device_fast(s) {
                    host_saturation(s).unwrap_or(0.0)
                } else {
                    0.0
                };
                Some(io / s.pg_active?.max(1.0) * (1.0 - for_a_core))
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
mod tests;
