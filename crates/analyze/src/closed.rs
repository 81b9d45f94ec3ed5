//! Closed-model levels (source 003): every level is run `load.repetitions` times; repetitions
//! are summarised as mean and spread (min/max, standard deviation, Student-t 95% CI).
//! Source 003 kept only error-free runs; here both aggregates are reported and repetitions with
//! errors are flagged.

use crate::shelf::ShelfResult;
use crate::stats::Estimate;
use crate::verdict::{Reason, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Spread of each quantity over a set of repetitions of one level. Latency percentiles are the
/// spread of each repetition's own percentile (histograms are merged within a repetition, never
/// averaged within one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelStats {
    /// Repetitions summarised.
    pub n: usize,
    /// Achieved throughput, RPS.
    pub throughput_rps: Estimate,
    /// Median latency, ms.
    pub p50_ms: Estimate,
    /// p75, ms (source 004's column; absent in older run.json files).
    #[serde(default)]
    pub p75_ms: Option<Estimate>,
    /// p90, ms.
    pub p90_ms: Estimate,
    /// p95, ms.
    pub p95_ms: Estimate,
    /// p99, ms.
    pub p99_ms: Estimate,
    /// p99.9, ms.
    pub p999_ms: Estimate,
    /// Mean latency, ms.
    pub mean_ms: Estimate,
    /// Error rate (fraction).
    pub error_rate: Estimate,
    /// Stack CPU per request, µs (when sampled).
    pub cpu_us_per_request: Option<Estimate>,
    /// Stack CPU, % of one core.
    pub stack_cpu_pct: Option<Estimate>,
    /// Stack RSS, MiB.
    pub stack_rss_mb: Option<Estimate>,
    /// PostgreSQL CPU, % of one core.
    pub postgres_cpu_pct: Option<Estimate>,
    /// PgBouncer CPU, % of one core (when the plan has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgbouncer_cpu_pct: Option<Estimate>,
    /// The latencies as wrk would have printed them (its coordinated-omission correction of
    /// each repetition's histogram, [`crate::hist::wrk_corrected`]), for sources measured with
    /// wrk; absent when a repetition has none (older run.json files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrk: Option<WrkStats>,
}

/// A level's latencies after wrk's correction, over its repetitions (ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WrkStats {
    /// Mean.
    pub mean_ms: Estimate,
    /// Median.
    pub p50_ms: Estimate,
    /// p75.
    pub p75_ms: Estimate,
    /// p90.
    pub p90_ms: Estimate,
    /// p95.
    pub p95_ms: Estimate,
    /// p99.
    pub p99_ms: Estimate,
}

impl LevelStats {
    /// Summarises `shelves` (all of one level); `None` when empty.
    pub fn of(shelves: &[&ShelfResult]) -> Option<LevelStats> {
        if shelves.is_empty() {
            return None;
        }
        let e = |f: &dyn Fn(&ShelfResult) -> f64| {
            Estimate::of(&shelves.iter().map(|s| f(s)).collect::<Vec<_>>())
        };
        let o = |f: &dyn Fn(&ShelfResult) -> Option<f64>| {
            let v: Vec<f64> = shelves.iter().filter_map(|s| f(s)).collect();
            Estimate::of(&v)
        };
        Some(LevelStats {
            n: shelves.len(),
            throughput_rps: e(&|s| s.achieved_rps)?,
            p50_ms: e(&|s| s.latency.p50_ms)?,
            p75_ms: e(&|s| s.latency.p75_ms),
            p90_ms: e(&|s| s.latency.p90_ms)?,
            p95_ms: e(&|s| s.latency.p95_ms)?,
            p99_ms: e(&|s| s.latency.p99_ms)?,
            p999_ms: e(&|s| s.latency.p999_ms)?,
            mean_ms: e(&|s| s.latency.mean_ms)?,
            error_rate: e(&|s| s.error_rate)?,
            cpu_us_per_request: o(&|s| s.cpu_us_per_request),
            stack_cpu_pct: o(&|s| s.stack.as_ref().map(|w| w.cpu_pct_mean)),
            stack_rss_mb: o(&|s| s.stack.as_ref().map(|w| w.rss_mb_mean)),
            postgres_cpu_pct: o(&|s| s.postgres.as_ref().map(|w| w.cpu_pct_mean)),
            pgbouncer_cpu_pct: o(&|s| s.pgbouncer.as_ref().map(|w| w.cpu_pct_mean)),
            wrk: if shelves.iter().all(|s| s.wrk_latency.is_some()) {
                let w = |f: &dyn Fn(&crate::hist::Percentiles) -> f64| {
                    o(&|s| s.wrk_latency.as_ref().map(f))
                };
                (|| {
                    Some(WrkStats {
                        mean_ms: w(&|p| p.mean_ms)?,
                        p50_ms: w(&|p| p.p50_ms)?,
                        p75_ms: w(&|p| p.p75_ms)?,
                        p90_ms: w(&|p| p.p90_ms)?,
                        p95_ms: w(&|p| p.p95_ms)?,
                        p99_ms: w(&|p| p.p99_ms)?,
                    })
                })()
            } else {
                None
            },
        })
    }
}

/// One closed-model level over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelAggregate {
    /// Index of the stage in the plan's measured list.
    pub level: usize,
    /// `c=50`.
    pub label: String,
    /// Connections.
    pub connections: Option<usize>,
    /// Shelf indices of the repetitions (in `StackAnalysis::shelves`).
    pub shelves: Vec<usize>,
    /// Repetition numbers that were recorded.
    pub repetitions: Vec<u32>,
    /// Repetitions with at least one error (source 003 dropped these).
    pub with_errors: Vec<u32>,
    /// Repetitions whose verdict is not valid.
    pub not_valid: Vec<u32>,
    /// Over every recorded repetition.
    pub all: Option<LevelStats>,
    /// Over error-free repetitions only (source 003's rule); `None` when every repetition had errors.
    pub error_free: Option<LevelStats>,
    /// Valid when every recorded repetition is valid; failed when any failed; else invalid.
    pub verdict: Verdict,
    /// Distinct reasons over the repetitions.
    pub reasons: Vec<Reason>,
}

impl LevelAggregate {
    /// The aggregate to show first: error-free repetitions when there are any, else all.
    pub fn headline(&self) -> Option<&LevelStats> {
        self.error_free.as_ref().or(self.all.as_ref())
    }
}

/// Groups shelves by level (plan stage) and aggregates their repetitions; levels in plan order.
/// Shelves never reached are left out of the statistics.
pub fn aggregate_levels(shelves: &[ShelfResult]) -> Vec<LevelAggregate> {
    let mut by: BTreeMap<usize, Vec<&ShelfResult>> = BTreeMap::new();
    for s in shelves {
        by.entry(s.level).or_default().push(s);
    }
    by.into_iter()
        .map(|(level, reps)| {
            let reached: Vec<&ShelfResult> = reps
                .iter()
                .copied()
                .filter(|s| !s.reasons.iter().any(|r| matches!(r, Reason::NotReached)))
                .collect();
            let clean: Vec<&ShelfResult> = reached
                .iter()
                .copied()
                .filter(|s| s.errors == 0 && s.requests > 0)
                .collect();
            let verdict = if reached.is_empty() {
                Verdict::Invalid
            } else if reached.iter().all(|s| s.verdict == Verdict::Valid) {
                Verdict::Valid
            } else if reached.iter().any(|s| s.verdict == Verdict::Failed) {
                Verdict::Failed
            } else {
                Verdict::Invalid
            };
            let mut reasons: Vec<Reason> = Vec::new();
            for s in &reps {
                for r in &s.reasons {
                    if !reasons.iter().any(|x| {
                        std::mem::discriminant(x) == std::mem::discriminant(r)
                            && x.to_string() == r.to_string()
                    }) {
                        reasons.push(r.clone());
                    }
                }
            }
            LevelAggregate {
                level,
                label: reps[0].label.clone(),
                connections: reps[0].connections,
                shelves: reps.iter().map(|s| s.shelf).collect(),
                repetitions: reached.iter().map(|s| s.repetition).collect(),
                with_errors: reached
                    .iter()
                    .filter(|s| s.errors > 0)
                    .map(|s| s.repetition)
                    .collect(),
                not_valid: reached
                    .iter()
                    .filter(|s| s.verdict != Verdict::Valid)
                    .map(|s| s.repetition)
                    .collect(),
                all: LevelStats::of(&reached),
                error_free: LevelStats::of(&clean),
                verdict,
                reasons,
            }
        })
        .collect()
}

/// A repetition that ran consistently apart from the others (see [`repetition_drift`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RepetitionDrift {
    /// The repetition (0-based, as in [`ShelfResult::repetition`]).
    pub repetition: u32,
    /// Its throughput over the median of the repetitions at the same level, geometric mean over
    /// the levels (0.5 = half as fast).
    pub ratio: f64,
    /// Levels where it was on the same side of the others as `ratio` says.
    pub agreeing: usize,
    /// Levels compared.
    pub levels: usize,
}

/// How far a repetition must sit from the others, as a geometric-mean throughput ratio, to be
/// called drift (15%); and the share of levels that must agree on the direction (80%).
const DRIFT_RATIO: f64 = 0.85;
const DRIFT_AGREEMENT: f64 = 0.8;

/// Repetitions that ran consistently slower or faster than the others: at every level with at
/// least three repetitions, each repetition's throughput is divided by the level's median;
/// a repetition whose geometric-mean ratio is more than 15% away from 1, on the same side at 80%
/// or more of at least two levels, drifted. Noise scatters a repetition on both sides from level
/// to level; a warm-up too short (JIT, caches, pools) or a machine that changed under the run
/// moves it one way everywhere. `points` are `(level, repetition, throughput)`.
pub fn repetition_drift(points: &[(usize, u32, f64)]) -> Vec<RepetitionDrift> {
    let mut by_level: BTreeMap<usize, Vec<(u32, f64)>> = BTreeMap::new();
    for &(l, r, x) in points {
        if x > 0.0 && x.is_finite() {
            by_level.entry(l).or_default().push((r, x));
        }
    }
    let mut per_rep: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for reps in by_level.values().filter(|v| v.len() >= 3) {
        // the level's median over every repetition: robust to the one that drifted, where the
        // median of the *others* of three would be pulled halfway towards it
        let all: Vec<f64> = reps.iter().map(|(_, y)| *y).collect();
        let median = crate::stats::median(&all);
        for &(r, x) in reps {
            per_rep.entry(r).or_default().push((x / median).ln());
        }
    }
    per_rep
        .into_iter()
        .filter_map(|(repetition, logs)| {
            let levels = logs.len();
            if levels < 2 {
                return None;
            }
            let mean = logs.iter().sum::<f64>() / levels as f64;
            let agreeing = logs.iter().filter(|l| l.signum() == mean.signum()).count();
            let far = mean.abs() > (1.0 / DRIFT_RATIO).ln();
            (far && agreeing as f64 >= DRIFT_AGREEMENT * levels as f64).then(|| RepetitionDrift {
                repetition,
                ratio: mean.exp(),
                agreeing,
                levels,
            })
        })
        .collect()
}

/// [`repetition_drift`] over a closed-model run's reached shelves.
pub fn drift_of_shelves(shelves: &[ShelfResult]) -> Vec<RepetitionDrift> {
    let points: Vec<(usize, u32, f64)> = shelves
        .iter()
        .filter(|s| !s.reasons.iter().any(|r| matches!(r, Reason::NotReached)))
        .map(|s| (s.level, s.repetition, s.achieved_rps))
        .collect();
    repetition_drift(&points)
}

#[cfg(test)]
mod drift_tests {
    use super::*;

    /// `reps` repetitions at `levels` levels; throughput 1000·(level+1)·factor(rep, level).
    fn points(
        reps: u32,
        levels: usize,
        factor: impl Fn(u32, usize) -> f64,
    ) -> Vec<(usize, u32, f64)> {
        let mut v = Vec::new();
        for r in 0..reps {
            for l in 0..levels {
                v.push((l, r, 1000.0 * (l + 1) as f64 * factor(r, l)));
            }
        }
        v
    }

    #[test]
    fn a_cold_first_repetition_is_drift() {
        // source 003's shape: the first of five repetitions at half speed at every level
        let d = repetition_drift(&points(5, 11, |r, _| if r == 0 { 0.5 } else { 1.0 }));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].repetition, 0);
        assert!((d[0].ratio - 0.5).abs() < 1e-9);
        assert_eq!((d[0].agreeing, d[0].levels), (11, 11));
    }

    #[test]
    fn noise_is_not_drift() {
        // ±12% scattered from level to level (a fixed pseudo-random pattern), no direction
        let wobble = |r: u32, l: usize| {
            let k = (r as usize * 7 + l * 13) % 5;
            [0.88, 0.94, 1.0, 1.06, 1.12][k]
        };
        assert!(repetition_drift(&points(5, 11, wobble)).is_empty());
        // identical repetitions
        assert!(repetition_drift(&points(3, 3, |_, _| 1.0)).is_empty());
    }

    #[test]
    fn a_small_steady_offset_is_not_drift_and_one_level_proves_nothing() {
        assert!(repetition_drift(&points(5, 11, |r, _| if r == 0 { 0.9 } else { 1.0 })).is_empty());
        assert!(repetition_drift(&points(5, 1, |r, _| if r == 0 { 0.5 } else { 1.0 })).is_empty());
    }

    #[test]
    fn a_faster_last_repetition_is_drift_too() {
        let d = repetition_drift(&points(3, 4, |r, _| if r == 2 { 1.4 } else { 1.0 }));
        assert_eq!(d.iter().map(|d| d.repetition).collect::<Vec<_>>(), vec![2]);
    }
}

/// Little's law on a closed model: each connection is always either waiting for a response
/// (the latency) or between a response and its next request (the generator's turnaround), so
/// `connections = throughput × (mean latency + mean turnaround)`. The share of the connections'
/// time the recorded latency accounts for, `throughput × mean latency / connections`, is at most
/// 1 and close to it when the generator re-sends at once.
pub const LITTLE_LOW: f64 = 0.8;
/// Above 1 the law is broken outright (more requests in flight than connections): the latency or
/// the counts are wrong. The histogram's 3 significant digits and microsecond recording allow a
/// few percent; the window's edges allow more, by [`little_edge`].
pub const LITTLE_HIGH: f64 = 1.05;

/// How far the window's edges can move a shelf's occupancy: the requests completed in the window
/// carry their whole latency, including the part before the window began for those in flight at
/// its start, while those still in flight at its end carry none of theirs. Each connection has one
/// request in flight, so the two differ by at most one slowest latency per connection: the
/// occupancy errs by at most `max latency / window` either way. Seen: a 4-s quick window at
/// c=100 whose slowest request took 205 ms read 106%.
pub fn little_edge(s: &ShelfResult) -> f64 {
    if s.window.kept_s > 0.0 {
        s.latency.max_ms / (1000.0 * s.window.kept_s)
    } else {
        0.0
    }
}

/// A closed-model shelf where Little's law does not hold within [`LITTLE_LOW`]–[`LITTLE_HIGH`].
#[derive(Debug, Clone, PartialEq)]
pub struct LittleBreak {
    /// The shelf (`c=100`, with its repetition when there are several).
    pub label: String,
    /// Repetition (0-based).
    pub repetition: u32,
    /// Connections the level held.
    pub connections: usize,
    /// Completed requests per second.
    pub throughput_rps: f64,
    /// Mean latency, ms.
    pub mean_ms: f64,
    /// throughput × mean latency / connections.
    pub occupancy: f64,
}

impl LittleBreak {
    /// One line for the run's warnings.
    pub fn describe(&self) -> String {
        let what = if self.occupancy > 1.0 {
            "more requests in flight than connections — the latency or the counts are wrong: do not trust this level's figures"
        } else {
            "the connections were idle between a response and the next request for the rest of the time: the generator re-sent late (its own turnaround is not in the latency), so the throughput is partly the generator's and the latency understates a waiting client's"
        };
        format!(
            "Little's law: {}{} — {:.0} RPS × mean {:.3} ms = {:.1} requests in flight on {} connections ({:.0}%): {what}",
            self.label,
            if self.repetition > 0 {
                format!(" #{}", self.repetition + 1)
            } else {
                String::new()
            },
            self.throughput_rps,
            self.mean_ms,
            self.occupancy * self.connections as f64,
            self.connections,
            self.occupancy * 100.0
        )
    }
}

/// `throughput × mean latency / connections` of a closed-model shelf with completions; `None`
/// for an open-model shelf or one where nothing completed.
pub fn little_occupancy(s: &ShelfResult) -> Option<f64> {
    let c = s.connections.filter(|&c| c > 0)?;
    (s.requests > 0 && s.latency.count > 0)
        .then(|| s.achieved_rps * s.latency.mean_ms / 1000.0 / c as f64)
}

/// Every valid or failed closed-model shelf where Little's law does not hold (invalid shelves
/// are already set aside for their own reason).
pub fn little_breaks(shelves: &[ShelfResult]) -> Vec<LittleBreak> {
    shelves
        .iter()
        .filter(|s| s.verdict != Verdict::Invalid)
        .filter_map(|s| {
            let o = little_occupancy(s)?;
            let edge = little_edge(s);
            (!(LITTLE_LOW - edge..=LITTLE_HIGH + edge).contains(&o)).then(|| LittleBreak {
                label: s.label.clone(),
                repetition: s.repetition,
                connections: s.connections.unwrap_or(0),
                throughput_rps: s.achieved_rps,
                mean_ms: s.latency.mean_ms,
                occupancy: o,
            })
        })
        .collect()
}
