//! Helpers for the capacity search (bracket by growth, bisect, confirm, repeat): judging one
//! probe shelf with the same rules as any shelf, and the statistics of repeated ceilings.

use crate::criteria::ShelfCriteria;
use crate::layout::ShelfSpec;
use crate::shelf::{ShelfAccumulator, ShelfResult};
use crate::stats::Estimate;
use crate::verdict::{Reason, Verdict};
use ceiling_plan::{Plan, Stage};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What one probe says to the search loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeVerdict {
    /// Offered rate of the probe (planned), RPS.
    pub rate: f64,
    /// Mean offered rate in the kept window.
    pub offered_rps: f64,
    /// Mean achieved throughput in the kept window.
    pub achieved_rps: f64,
    /// p50, ms.
    pub p50_ms: f64,
    /// p90, ms.
    pub p90_ms: f64,
    /// p99, ms.
    pub p99_ms: f64,
    /// Error rate.
    pub error_rate: f64,
    /// Stack CPU, % of one core (when sampled).
    pub stack_cpu_pct: Option<f64>,
    /// The shelf verdict.
    pub verdict: Verdict,
    /// Why not valid.
    pub reasons: Vec<Reason>,
}

impl ProbeVerdict {
    /// From a judged probe shelf (`rate` falls back to the offered mean when the shelf has none).
    pub fn from_shelf(s: &ShelfResult) -> Self {
        ProbeVerdict {
            rate: s.rate.unwrap_or(s.offered_rps),
            offered_rps: s.offered_rps,
            achieved_rps: s.achieved_rps,
            p50_ms: s.latency.p50_ms,
            p90_ms: s.latency.p90_ms,
            p99_ms: s.latency.p99_ms,
            error_rate: s.error_rate,
            stack_cpu_pct: s.stack.as_ref().map(|w| w.cpu_pct_mean),
            verdict: s.verdict,
            reasons: s.reasons.clone(),
        }
    }
    /// The stack held the SLO at this rate: search higher.
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Valid
    }
    /// The stack broke the SLO: this rate is an upper bracket.
    pub fn failed(&self) -> bool {
        self.verdict == Verdict::Failed
    }
    /// The generator could not drive this rate: the search cannot learn anything above it.
    pub fn generator_bound(&self) -> bool {
        self.reasons.iter().any(Reason::is_generator_bound)
    }
    /// `1500 RPS: valid (p99 35.2 ms)` or `… failed: p99 411 ms > 350 ms`.
    pub fn summary(&self) -> String {
        let why = if self.reasons.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                self.reasons
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        };
        format!(
            "{:.0} RPS: {} (achieved {:.0}, p99 {:.1} ms){why}",
            self.rate, self.verdict, self.achieved_rps, self.p99_ms
        )
    }
}

/// Criteria for probes: the plan's rules, with the probe's own trimming (`search.probe_trim` at
/// the head, nothing at the tail) and a minimum window of `probe − probe_trim`.
pub fn probe_criteria(plan: &Plan) -> ShelfCriteria {
    let mut c = ShelfCriteria::from_plan(plan);
    c.trim_head_s = plan.search.probe_trim.as_secs_f64();
    c.trim_tail_s = 0.0;
    c.min_window_s = (plan.search.probe.as_secs_f64() - c.trim_head_s)
        .floor()
        .max(1.0);
    c
}

/// An accumulator for one probe at `rate` that starts at `start_s` seconds of the generator's
/// run clock and lasts `search.probe`; seconds are selected by time only (any stage index).
/// Feed it seconds, call `finish()` (or let the next second past the end close it), then
/// `result(&resources)` and [`ProbeVerdict::from_shelf`].
pub fn probe_accumulator(plan: &Plan, rate: f64, start_s: f64, shelf: usize) -> ShelfAccumulator {
    let c = probe_criteria(plan);
    let spec = ShelfSpec {
        shelf,
        stage: None,
        level: shelf,
        repetition: 0,
        label: format!("probe {rate:.0}"),
        rate: Some(rate),
        connections: None,
        start_s: Some(start_s),
        end_s: Some(start_s + plan.search.probe.as_secs_f64()),
        duration_s: Some(plan.search.probe.as_secs_f64()),
        trim_head_s: c.trim_head_s,
        trim_tail_s: 0.0,
    };
    ShelfAccumulator::new(
        spec,
        c,
        plan.requests.iter().map(|r| r.name.clone()).collect(),
    )
}

/// A one-shelf plan for a probe at `rate` (no warm-up, a hold of `search.probe`, analysed with
/// [`probe_criteria`]'s trimming and window), for search loops that run each probe as its own
/// generator run; analyse it with `RunAccumulator::new(&probe_plan, stack)`.
pub fn probe_plan(plan: &Plan, rate: f64) -> Plan {
    let mut p = plan.clone();
    p.warmup.clear();
    p.stages = vec![Stage::Hold {
        rate,
        duration: plan.search.probe,
    }];
    p.analysis.trim_head = plan.search.probe_trim;
    p.analysis.trim_tail = Duration::ZERO;
    p.analysis.min_window = plan.search.probe.saturating_sub(plan.search.probe_trim);
    p
}

/// A one-shelf plan for the confirming shelf at `rate`: a hold of `search.confirm` judged with
/// the plan's own analysis settings (trim head/tail, minimum window).
pub fn confirm_plan(plan: &Plan, rate: f64) -> Plan {
    let mut p = plan.clone();
    p.warmup.clear();
    p.stages = vec![Stage::Hold {
        rate,
        duration: plan.search.confirm,
    }];
    p
}

/// Mean and 95% confidence interval of repeated ceilings (Student t; n = 1 gives no interval).
pub fn ceiling_estimate(ceilings: &[f64]) -> Option<Estimate> {
    Estimate::of(ceilings)
}

/// One repetition of the whole search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchRepeat {
    /// Probes in the order run.
    pub probes: Vec<ProbeVerdict>,
    /// The confirming shelf, when one was run.
    pub confirm: Option<ShelfResult>,
    /// The ceiling this repetition found (0 when none): the confirmed shelf's achieved rate.
    pub ceiling_rps: f64,
    /// Why the search stopped early (time budget, generator-bound, max rate…), if it did.
    pub stopped: Option<String>,
}

/// The whole capacity search of one stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchOutcome {
    /// Every repetition.
    pub repeats: Vec<SearchRepeat>,
    /// Mean and 95% CI of the repetitions' ceilings.
    pub estimate: Option<Estimate>,
}

impl SearchOutcome {
    /// Collects repetitions and computes the estimate of their ceilings.
    pub fn new(repeats: Vec<SearchRepeat>) -> Self {
        let v: Vec<f64> = repeats.iter().map(|r| r.ceiling_rps).collect();
        SearchOutcome {
            estimate: ceiling_estimate(&v),
            repeats,
        }
    }
}
