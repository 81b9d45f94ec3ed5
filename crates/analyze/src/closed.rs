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
