//! Where every stage and shelf lies in run time, known from the plan before the run starts.
//!
//! Stages run back to back: warm-up stages first, then the measured stages, each starting where
//! the previous one ended (t = 0 is the start of the run). A closed stage bounded by a request
//! count has no planned length; from there on start times are unknown and the analysis finds a
//! stage by the `stage` index carried by every [`ceiling_metrics::Second`] instead.

use crate::criteria::ShelfCriteria;
use ceiling_metrics::Phase;
use ceiling_plan::{Plan, Stage};
use serde::{Deserialize, Serialize};

/// One stage of the run, with its planned place in time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSpan {
    /// Warm-up or measured.
    pub phase: Phase,
    /// Index within its phase, as carried by `Second::stage`.
    pub index: usize,
    /// Index of the stage in the plan's list for its phase (differs from `index` only when the
    /// measured stages are run several passes, see [`shelf_specs`]).
    pub level: usize,
    /// Pass over the measured stages (0 unless the stage list is repeated).
    pub pass: u32,
    /// `ramp 0→1500`, `hold 1500`, `c=50`.
    pub label: String,
    /// Whether the analysis judges this stage (holds, closed levels; measured phase only).
    pub is_shelf: bool,
    /// Planned offered rate of a hold (RPS).
    pub rate: Option<f64>,
    /// Connections of a closed stage.
    pub connections: Option<usize>,
    /// Request bound of a closed stage.
    pub requests: Option<u64>,
    /// Planned start, seconds since the run start (`None` after a stage of unknown length).
    pub start_s: Option<f64>,
    /// Planned end (`None` when the start or the length is unknown).
    pub end_s: Option<f64>,
    /// Planned length (`None` for a stage bounded by a request count).
    #[serde(default)]
    pub duration_s: Option<f64>,
}

/// The stages of `plan` in run order, with planned times. `passes` > 1 repeats the measured
/// stages that many times (stage indices keep counting: pass p, stage i has index `p·n + i`);
/// use it when the generator runs closed-model repetitions as repeated passes in one run.
pub fn stage_spans(plan: &Plan, passes: u32) -> Vec<StageSpan> {
    let mut out = Vec::new();
    let mut clock: Option<f64> = Some(0.0);
    let mut push = |phase: Phase, index: usize, level: usize, pass: u32, st: &Stage| {
        let start = clock;
        let end = match (start, st.duration()) {
            (Some(s), Some(d)) => Some(s + d.as_secs_f64()),
            _ => None,
        };
        clock = end;
        let (rate, connections, requests) = match st {
            Stage::Hold { rate, .. } => (Some(*rate), None, None),
            Stage::Ramp { .. } => (None, None, None),
            Stage::Closed {
                connections,
                requests,
                ..
            } => (None, Some(*connections), *requests),
        };
        out.push(StageSpan {
            phase,
            index,
            level,
            pass,
            label: st.label(),
            is_shelf: phase == Phase::Measure && st.is_shelf(),
            rate,
            connections,
            requests,
            start_s: start,
            end_s: end,
            duration_s: st.duration().map(|d| d.as_secs_f64()),
        });
    };
    for (i, st) in plan.warmup.iter().enumerate() {
        push(Phase::Warmup, i, i, 0, st);
    }
    let n = plan.stages.len();
    for p in 0..passes.max(1) {
        for (i, st) in plan.stages.iter().enumerate() {
            push(Phase::Measure, p as usize * n + i, i, p, st);
        }
    }
    out
}

/// One shelf to analyse: which seconds belong to it and which of those are kept.
///
/// With a stage filter the stage is found by its index. Its start is the planned start when the
/// first second of the stage arrives on schedule (`t = ⌈start⌉`); when the generator drifted
/// (or the start is unknown) it is the first second seen, and the end is that plus the planned
/// duration (or, for request-bounded stages, when the stage index changes). Without a stage
/// filter (probes) the planned start and end select seconds by time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShelfSpec {
    /// Position in the list of shelves (0-based).
    pub shelf: usize,
    /// Seconds must carry this phase and stage index (`None` = any: a window in time only, for
    /// probes recorded outside a plan's stage list).
    pub stage: Option<(Phase, usize)>,
    /// Index of the stage in the plan's measured list (the closed-model level).
    pub level: usize,
    /// Repetition (closed model; 0 otherwise).
    pub repetition: u32,
    /// `hold 1500`, `c=50`.
    pub label: String,
    /// Planned offered rate (open model).
    pub rate: Option<f64>,
    /// Connections (closed model).
    pub connections: Option<usize>,
    /// Planned stage start (seconds since run start); `None` = the first second seen.
    pub start_s: Option<f64>,
    /// Planned stage end; `None` = when the stage index changes or the run finishes.
    pub end_s: Option<f64>,
    /// Planned stage length (`None` for a stage bounded by a request count).
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Dropped after the start, seconds.
    pub trim_head_s: f64,
    /// Dropped before the end, seconds.
    pub trim_tail_s: f64,
}

impl ShelfSpec {
    /// Planned kept window `[start + trim_head, end − trim_tail)`, when both ends are known.
    pub fn planned_window(&self) -> Option<(f64, f64)> {
        Some((
            self.start_s? + self.trim_head_s,
            self.end_s? - self.trim_tail_s,
        ))
    }
    /// Whole seconds the planned kept window holds (`None` when unknown).
    pub fn planned_kept_seconds(&self) -> Option<f64> {
        self.planned_window()
            .map(|(a, b)| (b.floor() - a.ceil()).max(0.0))
    }
}

/// The shelves of `plan`: holds (open model) or closed stages, each with its kept window, in run
/// order. `passes` as in [`stage_spans`]; with several passes the repetition is the pass number.
pub fn shelf_specs(plan: &Plan, passes: u32) -> Vec<ShelfSpec> {
    let c = ShelfCriteria::from_plan(plan);
    stage_spans(plan, passes)
        .into_iter()
        .filter(|s| s.is_shelf)
        .enumerate()
        .map(|(k, s)| ShelfSpec {
            shelf: k,
            stage: Some((Phase::Measure, s.index)),
            level: s.level,
            repetition: s.pass,
            label: s.label,
            rate: s.rate,
            connections: s.connections,
            start_s: s.start_s,
            end_s: s.end_s,
            duration_s: match (s.start_s, s.end_s) {
                (Some(a), Some(b)) => Some(b - a),
                _ => s.duration_s,
            },
            trim_head_s: c.trim_head_s,
            trim_tail_s: c.trim_tail_s,
        })
        .collect()
}
