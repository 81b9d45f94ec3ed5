//! Pure analysis of recorded runs: shelves, validity, RPS@p99≤SLO, closed-model repetitions and
//! search statistics. No I/O, no processes.
//!
//! # Use during a run
//! ```text
//! let mut acc = RunAccumulator::new(&plan, "go-pgx");
//! for each Second s (in order, warm-up included):  acc.push_second(&s);
//! for each ResourceSample r (any time):             acc.push_resource(r);   // or extend_resources(vec)
//! let analysis: StackAnalysis = acc.finish();       // shelves, verdicts, ceiling, levels
//! ```
//! The method is source 000's: per shelf, drop `trim_head` and `trim_tail`; valid when every
//! latency limit holds, errors < max, throughput stable (rule in [`ShelfCriteria`]) and the
//! window is long enough; generator-bound shelves are invalid, not failed; RPS@p99≤SLO is the
//! mean throughput of the last valid shelf, 0 when none passed.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod attribution;
mod boxbound;
mod capacity;
mod closed;
mod cost;
mod criteria;
mod hist;
mod layout;
mod pool;
mod pooled_fit;
mod ranking;
mod resources;
mod run;
mod runtime;
mod search;
mod settle;
mod shelf;
mod stats;
mod verdict;
mod warning;

pub use attribution::{
    attribute, attribute_analysis, context_of, over_slo_estimate, stack_exited, Attribution,
    AttributionContext, Cause, CauseKind, Freeze, MIN_SCORE,
};
pub use boxbound::{box_bound, box_bound_shelf, box_load, BoxLoad, BOX_BUSY, OWN_QUOTA};
pub use capacity::{
    interval as capacity_interval, isotonic, noise as capacity_noise, Bracket, CapacityInterval,
    Fit, Knee, Observation, CLIFF_RATIO,
};
pub use closed::{
    aggregate_levels, drift_of_shelves, little_breaks, little_edge, little_occupancy,
    repetition_drift, LevelAggregate, LevelStats, LittleBreak, RepetitionDrift, WrkStats,
    LITTLE_HIGH, LITTLE_LOW,
};
pub use cost::{cost_table, CostRow, CostTable, HOURS_PER_YEAR};
pub use criteria::{LoadModel, ShelfCriteria, SloLimit, STABILITY_BLOCK_SECS};
pub use hist::{percentile_ms, wrk_corrected, Percentiles, WRK_CORRECTION_MAX_STEPS};
pub use layout::{shelf_specs, stage_spans, ShelfSpec, StageSpan};
pub use pool::{pooled_margin, LatencyCounts, LogHist, PooledHist, ProbeCounts};
pub use pooled_fit::{
    pooled_interval, transition_zone, Group, IntervalMethod, Local, PooledFit, Sample,
    TransitionZone, LOCAL_BAND,
};
pub use ranking::{
    pair_ratio, rank, rank_searched, CeilingCi, Order, PairRatio, Searched, SearchedRef,
    MIN_PAIRED_ROUNDS,
};
pub use resources::{window_of, ResourceWindow};
pub use run::{Ceiling, PartExit, RunAccumulator, StackAnalysis, StackExit};
pub use runtime::{runtime_analysis, runtime_window, tail_follows, RuntimeWindow, TailFollows};
pub use search::{
    check_plan, confirm_plan, confirm_rate, fit_window_s, fmt_margin, margin_terms, observations,
    probe_accumulator, probe_criteria, probe_plan, samples, standard_window_s, Baseline,
    MarginTerm, ProbeKind, ProbeVerdict, Recovery, SearchOutcome, SearchStatus, StopReason,
    ThinEnds,
};
pub use settle::{is_settled, Settling, WarmupStep};
pub use shelf::{
    outcome_map, RequestStats, ShelfAccumulator, ShelfResult, ShelfWindow, SloCheck, Stability,
};
pub use stats::{mean, median, spearman, stddev, t_975, Estimate};
pub use verdict::{fmt_ms, generator_reasons, verdict_of, GeneratorHealth, Reason, Verdict};
pub use warning::{Warning, WarningKind};

#[cfg(test)]
mod tests;
