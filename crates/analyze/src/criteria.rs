//! What a shelf is judged against: the plan's SLO and analysis settings, copied into a
//! serializable form (kept in `run.json` next to every verdict).

use ceiling_plan::{pct_name, Model, Plan};
use serde::{Deserialize, Serialize};

/// Default length of the blocks the stability rule compares (seconds). See [`ShelfCriteria`].
pub const STABILITY_BLOCK_SECS: u32 = 10;

/// Open (rate-driven) or closed (concurrency-driven) load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadModel {
    /// Rate-driven: shelves are `hold` stages.
    Open,
    /// Concurrency-driven: every `connections` stage is a level.
    Closed,
}

impl From<Model> for LoadModel {
    fn from(m: Model) -> Self {
        match m {
            Model::Open => LoadModel::Open,
            Model::Closed => LoadModel::Closed,
        }
    }
}

/// One latency limit: `percentile` of `request` (or of all requests when `None`) ≤ `limit_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloLimit {
    /// Request name for per-request limits; `None` = over all requests.
    pub request: Option<String>,
    /// Percentile, e.g. 99.0.
    pub percentile: f64,
    /// Limit in milliseconds (inclusive: the measured value must be ≤ the limit).
    pub limit_ms: f64,
}

impl SloLimit {
    /// `p99≤350ms` or `get:p99≤100ms`.
    pub fn describe(&self) -> String {
        let base = format!(
            "{}≤{}ms",
            pct_name(self.percentile),
            trim_float(self.limit_ms)
        );
        match &self.request {
            Some(r) => format!("{r}:{base}"),
            None => base,
        }
    }
}

pub(crate) fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// The rules a shelf is judged by (source 000's method with the plan's numbers).
///
/// A shelf is **valid** when, over its kept window `[start + trim_head, end − trim_tail)`:
/// 1. every latency limit holds (overall and per request; measured from merged histograms);
/// 2. errors / completed < `max_error_rate` (errors = every outcome but `ok`);
/// 3. throughput is stable (see below);
/// 4. the kept window is at least `min_window_s` long (whole seconds);
///
/// and the generator kept up: schedule-lag p99 ≤ `max_schedule_lag_ms`, mean generator CPU ≤
/// `max_generator_cpu`, and no request was refused for a full backlog. A generator-bound shelf is
/// **invalid**, not failed.
///
/// **Stability rule** (`stability` = s, `stability_block_s` = B): the kept window is cut into
/// consecutive blocks of B seconds (a trailing remainder shorter than B/2 joins the previous
/// block; a window shorter than B is one block).
/// * Open model: the window's mean achieved rate A (completed requests per second, any outcome)
///   must be within ±s of its mean offered rate O (`|A−O| ≤ s·O`), and in every block
///   `|A_b − O_b| ≤ s·O_b`. Comparing with the offered count of the *same* block cancels the
///   arrival noise of Poisson schedules, and 10 s blocks smooth the 1 s bucketing noise, while a
///   stall or a growing queue of a few seconds still shows.
/// * Closed model (no offered rate): every block's mean achieved rate must be within ±s of the
///   window mean (`|A_b − A| ≤ s·A`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShelfCriteria {
    /// Load model of the plan.
    pub model: LoadModel,
    /// Latency limits (overall first, then per request).
    pub limits: Vec<SloLimit>,
    /// Error rate must be strictly below this fraction (0.01 = 1%); a window without errors
    /// always passes.
    pub max_error_rate: f64,
    /// Allowed relative deviation of throughput (0.05 = ±5%).
    pub stability: f64,
    /// Block length of the stability rule, seconds.
    pub stability_block_s: u32,
    /// Dropped from the start of every shelf, seconds.
    pub trim_head_s: f64,
    /// Dropped from the end of every shelf, seconds.
    pub trim_tail_s: f64,
    /// Minimum kept window, seconds.
    pub min_window_s: f64,
    /// Schedule-lag p99 above this (ms) makes a shelf generator-bound.
    pub max_schedule_lag_ms: f64,
    /// Mean generator CPU (% of one core) above this makes a shelf generator-bound.
    pub max_generator_cpu: f64,
    /// Recommended working load as a fraction of the ceiling.
    pub working_load: f64,
}

impl ShelfCriteria {
    /// The criteria of `plan` (its `[slo]` and `[analysis]`).
    pub fn from_plan(plan: &Plan) -> Self {
        let a = &plan.analysis;
        let mut limits: Vec<SloLimit> = plan
            .slo
            .limits
            .iter()
            .map(|l| SloLimit {
                request: None,
                percentile: l.percentile,
                limit_ms: l.limit.as_secs_f64() * 1000.0,
            })
            .collect();
        for (name, ls) in &plan.slo.per_request {
            for l in ls {
                limits.push(SloLimit {
                    request: Some(name.clone()),
                    percentile: l.percentile,
                    limit_ms: l.limit.as_secs_f64() * 1000.0,
                });
            }
        }
        ShelfCriteria {
            model: plan.load.model.into(),
            limits,
            max_error_rate: plan.slo.max_error_rate,
            stability: a.stability,
            stability_block_s: STABILITY_BLOCK_SECS,
            trim_head_s: a.trim_head.as_secs_f64(),
            trim_tail_s: a.trim_tail.as_secs_f64(),
            min_window_s: a.min_window.as_secs_f64(),
            max_schedule_lag_ms: a.max_schedule_lag.as_secs_f64() * 1000.0,
            max_generator_cpu: a.max_generator_cpu,
            working_load: a.working_load,
        }
    }

    /// The same SLO as `other`: the same latency limits (request, percentile, limit) and error
    /// bound, compared as numbers — not as their descriptions, which round a limit to a tenth of
    /// a second (`1.25s` and `1.2s` both read `p99≤1.2s`). Equal within a part in 10⁹, which a
    /// run.json's round trip keeps.
    pub fn same_slo(&self, other: &ShelfCriteria) -> bool {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12);
        self.limits.len() == other.limits.len()
            && self.limits.iter().zip(&other.limits).all(|(a, b)| {
                a.request == b.request
                    && close(a.percentile, b.percentile)
                    && close(a.limit_ms, b.limit_ms)
            })
            && close(self.max_error_rate, other.max_error_rate)
    }

    /// The headline limit: the overall p99 limit if there is one, else the first overall limit.
    pub fn headline_limit(&self) -> Option<&SloLimit> {
        let overall = self.limits.iter().filter(|l| l.request.is_none());
        overall
            .clone()
            .find(|l| (l.percentile - 99.0).abs() < 1e-9)
            .or_else(|| self.limits.iter().find(|l| l.request.is_none()))
    }

    /// `p99≤350ms, errors<1%, stable ±5% (10 s blocks), window≥600s`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self.limits.iter().map(SloLimit::describe).collect();
        parts.push(format!(
            "errors<{}%",
            trim_float(self.max_error_rate * 100.0)
        ));
        parts.push(format!(
            "stable ±{}% ({} s blocks)",
            trim_float(self.stability * 100.0),
            self.stability_block_s
        ));
        parts.push(format!("window≥{}s", trim_float(self.min_window_s)));
        parts.join(", ")
    }

    /// The name of the metric: `RPS@p99≤350ms`.
    pub fn metric_name(&self) -> String {
        match self.headline_limit() {
            Some(l) => format!(
                "RPS@{}≤{}ms",
                pct_name(l.percentile),
                trim_float(l.limit_ms)
            ),
            None => "RPS@SLO".to_string(),
        }
    }
}
