//! Helpers for the capacity search: judging one probe shelf with the same rules as any shelf,
//! its SLO margins, and the conclusion of a search from all its probes (see [`crate::capacity`]).

use crate::capacity::{self, Bracket, CapacityInterval, Fit, Knee, Observation};
use crate::criteria::ShelfCriteria;
use crate::layout::ShelfSpec;
use crate::pool::{LatencyCounts, ProbeCounts};
use crate::pooled_fit::{pooled_interval, transition_zone, IntervalMethod, PooledFit, Sample};
use crate::shelf::{ShelfAccumulator, ShelfResult};
use crate::verdict::{Reason, Verdict};
use ceiling_plan::{pct_name, Plan, Stage};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One term of the SLO at one probe: the measured value over its limit (> 1 breaks the SLO).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarginTerm {
    /// `p99`, `p99 of get_batch`, `errors`, `throughput`.
    pub term: String,
    /// Measured value (ms for latency, a fraction for errors and throughput shortfall).
    pub measured: f64,
    /// The limit, in the same unit.
    pub limit: f64,
    /// measured / limit (∞, null in JSON, when nothing completed or a limit of 0 was exceeded).
    #[serde(with = "crate::capacity::inf_as_null")]
    pub margin: f64,
}

/// What a search run was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// A short probe shelf.
    #[default]
    Probe,
    /// A full-length confirming shelf.
    Confirm,
    /// A short low-rate check of the service's health (baseline, recovery).
    Check,
}

/// How the service came back after a failed or invalid probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// Seconds from the end of the probe until the service was judged back (or given up).
    pub waited_s: f64,
    /// Low-rate checks run.
    pub checks: u32,
    /// Whether a check saw baseline latency again within the bound.
    pub recovered: bool,
    /// p99 of the last check, ms.
    pub check_p99_ms: f64,
    /// The threshold it was held to, ms.
    pub threshold_ms: f64,
}

/// The service's latency at a low rate, measured when the search starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Rate of the check, RPS.
    pub rate: f64,
    /// p50, ms.
    pub p50_ms: f64,
    /// p99, ms.
    pub p99_ms: f64,
    /// Error rate.
    pub error_rate: f64,
}

impl Baseline {
    /// A check is back to baseline when its p99 is within max(3 × baseline p99, baseline p99 +
    /// 5 ms): loose enough for a shared machine's jitter, tight enough to see a queue that has
    /// not drained (a leftover backlog adds its whole length to every request behind it).
    pub fn threshold_ms(&self) -> f64 {
        (3.0 * self.p99_ms).max(self.p99_ms + 5.0)
    }
}

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
    /// Probe, confirming shelf or check.
    #[serde(default)]
    pub kind: ProbeKind,
    /// Every SLO term's margin.
    #[serde(default)]
    pub terms: Vec<MarginTerm>,
    /// The largest term's margin (> 1 fails; ∞, null in JSON, when nothing completed).
    #[serde(default, with = "crate::capacity::inf_as_null")]
    pub margin: f64,
    /// Generator threads used.
    #[serde(default)]
    pub threads: usize,
    /// Request-stream seed.
    #[serde(default)]
    pub seed: u64,
    /// Schedule lag p99 of the generator, ms.
    #[serde(default)]
    pub lag_p99_ms: f64,
    /// Mean generator CPU, % of one core.
    #[serde(default)]
    pub generator_cpu_pct: f64,
    /// Seconds since the search started when this probe began.
    #[serde(default)]
    pub started_s: f64,
    /// The recovery that followed this probe (failed or invalid probes only).
    #[serde(default)]
    pub recovery: Option<Recovery>,
    /// Why it failed, from the attribution of its recorded signals (failed or invalid probes
    /// run with signals only).
    #[serde(default)]
    pub why: Option<String>,
    /// Length of the judged window, seconds (planned kept seconds); 0 in runs before it was
    /// recorded. A probe longer than the search's shortest pools with the weight of its length.
    #[serde(default)]
    pub window_s: f64,
    /// What the probe adds to a pool of probes at its rate (histograms and counts of its kept
    /// window; absent in searches stored before pooling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<crate::pool::ProbeCounts>,
    /// The round of an interleaved search it ran in (1-based; 0 before rounds were recorded):
    /// stacks' probes of one round ran side by side, which pairs them for a ranking.
    #[serde(default)]
    pub round: u32,
    /// The attribution's top cause, when the probe failed and its signals were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_cause: Option<crate::attribution::CauseKind>,
    /// Why the probe was judged disturbed by its environment (a host stall, the generator, the
    /// database unreachable) and left out of the fit, re-run after recovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<String>,
    /// PostgreSQL's mean CPU in the kept window (PgBouncer's added when there is one), % of one
    /// core, when sampled: with the stack's and the generator's, what the box's parts took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_cpu_pct: Option<f64>,
}

impl ProbeVerdict {
    /// From a judged probe shelf (`rate` falls back to the offered mean when the shelf has none),
    /// with every SLO term's margin under `c`.
    pub fn from_shelf(s: &ShelfResult, c: &ShelfCriteria) -> Self {
        let terms = margin_terms(s, c);
        let counts = probe_counts(s, c, &terms);
        let margin =
            terms
                .iter()
                .map(|t| t.margin)
                .fold(0.0, |a: f64, b| if b.is_nan() { a } else { a.max(b) });
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
            kind: ProbeKind::Probe,
            terms,
            margin,
            threads: 0,
            seed: 0,
            lag_p99_ms: s.lag_p99_ms,
            generator_cpu_pct: s.generator_cpu_mean,
            started_s: 0.0,
            recovery: None,
            why: s.attribution.as_ref().map(|a| a.summary.clone()),
            window_s: s.window.planned_kept_s.unwrap_or(s.window.kept_s),
            counts: Some(counts),
            round: 0,
            top_cause: s.attribution.as_ref().and_then(|a| a.top()).map(|t| t.kind),
            disturbed: None,
            postgres_cpu_pct: s
                .postgres
                .as_ref()
                .map(|w| w.cpu_pct_mean + s.pgbouncer.as_ref().map_or(0.0, |b| b.cpu_pct_mean)),
        }
    }
    /// Whether the pooled fit uses this probe: not a check, not invalid, not disturbed.
    pub fn pooled(&self) -> bool {
        self.kind != ProbeKind::Check
            && self.verdict != Verdict::Invalid
            && self.disturbed.is_none()
    }
    /// The margin the fit uses: a failed shelf is over the SLO even when its margin terms do not
    /// show why.
    pub fn fit_margin(&self) -> f64 {
        if self.failed() {
            self.margin.max(1.0 + 1e-9)
        } else {
            self.margin
        }
    }
    /// The environment, not the service, made this probe fail: the attribution's top cause is a
    /// host stall, the generator or PostgreSQL unreachable. Such a probe is re-run, not pooled.
    pub fn environment_cause(&self) -> Option<crate::attribution::CauseKind> {
        use crate::attribution::CauseKind as K;
        self.top_cause
            .filter(|_| self.failed())
            .filter(|k| matches!(k, K::HostStall | K::GeneratorBound | K::DatabaseDown))
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
    /// The term with the largest margin (`p99 of get_batch`), if any.
    pub fn binding(&self) -> Option<&MarginTerm> {
        self.terms
            .iter()
            .filter(|t| !t.margin.is_nan())
            .max_by(|a, b| a.margin.total_cmp(&b.margin))
    }
    /// `1500 RPS: valid (p99 35.2 ms, margin 0.10)` or `… failed: p99 411 ms > 350 ms`.
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
        let kind = match self.kind {
            ProbeKind::Probe => "",
            ProbeKind::Confirm => " (confirming shelf)",
            ProbeKind::Check => " (check)",
        };
        format!(
            "{:.0} RPS{kind}: {} (achieved {:.0}, p99 {:.1} ms, margin {}){why}",
            self.rate,
            self.verdict,
            self.achieved_rps,
            self.p99_ms,
            fmt_margin(self.margin)
        )
    }
}

/// What a judged shelf adds to a pool of probes at its rate (see [`crate::pool`]).
fn probe_counts(s: &ShelfResult, c: &ShelfCriteria, terms: &[MarginTerm]) -> ProbeCounts {
    let latency = s
        .slo_checks
        .iter()
        .filter_map(|chk| {
            let l = &chk.limit;
            Some(LatencyCounts {
                term: match &l.request {
                    Some(r) => format!("{} of {r}", pct_name(l.percentile)),
                    None => pct_name(l.percentile),
                },
                percentile: l.percentile,
                limit_ms: l.limit_ms,
                hist: chk.hist.0.clone()?,
            })
        })
        .collect();
    let shortfall = terms
        .iter()
        .find(|t| t.term == "throughput")
        .map_or(0.0, |t| t.measured);
    ProbeCounts {
        window_s: s.window.kept_s,
        requests: s.requests,
        errors: s.errors,
        error_limit: c.max_error_rate,
        shortfall,
        shortfall_limit: c.stability,
        nothing_completed: s
            .reasons
            .iter()
            .any(|r| matches!(r, Reason::NothingCompleted { .. })),
        latency,
    }
}

pub use ceiling_fmt::margin as fmt_margin;

/// The SLO margins of a judged shelf: every latency limit (measured / limit), the error rate over
/// the maximum, and the throughput shortfall over the stability tolerance (the worst of the window
/// deviation and any unstable block). A shelf where nothing completed gets an unbounded margin.
pub fn margin_terms(s: &ShelfResult, c: &ShelfCriteria) -> Vec<MarginTerm> {
    let mut v = Vec::new();
    for chk in &s.slo_checks {
        let Some(m) = chk.measured_ms else { continue };
        let l = &chk.limit;
        let term = match &l.request {
            Some(r) => format!("{} of {r}", pct_name(l.percentile)),
            None => pct_name(l.percentile),
        };
        v.push(MarginTerm {
            term,
            measured: m,
            limit: l.limit_ms,
            margin: if l.limit_ms > 0.0 {
                m / l.limit_ms
            } else {
                f64::INFINITY
            },
        });
    }
    // `errors < max` fails at equality: a limit of 0 makes any error infinitely over.
    v.push(MarginTerm {
        term: "errors".into(),
        measured: s.error_rate,
        limit: c.max_error_rate,
        margin: if c.max_error_rate > 0.0 {
            s.error_rate / c.max_error_rate
        } else if s.error_rate > 0.0 {
            f64::INFINITY
        } else {
            0.0
        },
    });
    if c.stability > 0.0 {
        let mut dev = (-s.stability.window_deviation).max(0.0);
        for r in &s.reasons {
            if let Reason::Unstable { deviation, .. } = r {
                dev = dev.max(deviation.abs());
            }
        }
        v.push(MarginTerm {
            term: "throughput".into(),
            measured: dev,
            limit: c.stability,
            margin: dev / c.stability,
        });
    }
    if s.reasons
        .iter()
        .any(|r| matches!(r, Reason::NothingCompleted { .. }))
    {
        v.push(MarginTerm {
            term: "nothing completed".into(),
            measured: 0.0,
            limit: 0.0,
            margin: f64::INFINITY,
        });
    }
    v
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

/// `plan` reduced to one open-model hold at `rate` for `duration`, without its warm-up: the one
/// shape every probe, confirming shelf and check takes. A search's probes are open-model shelves
/// whatever the plan's own stages are, so a closed-model plan (source 002's connection levels)
/// lends its mix, SLO and stand to the search and the hold is sent as a rate (it would send
/// nothing under the closed model: an engine runs only its plan's model's stages).
fn hold_plan(plan: &Plan, rate: f64, duration: Duration) -> Plan {
    let mut p = plan.clone();
    p.warmup.clear();
    p.load.stop_at_failure = false; // one shelf: its verdict is the probe's
    p.set_stages(vec![Stage::Hold { rate, duration }]);
    p
}

/// A one-shelf plan for a probe at `rate` (no warm-up, a hold of `search.probe`, analysed with
/// [`probe_criteria`]'s trimming and window), for search loops that run each probe as its own
/// generator run; analyse it with `RunAccumulator::new(&probe_plan, stack)`.
pub fn probe_plan(plan: &Plan, rate: f64) -> Plan {
    let mut p = hold_plan(plan, rate, plan.search.probe);
    p.analysis.trim_head = plan.search.probe_trim;
    p.analysis.trim_tail = Duration::ZERO;
    p.analysis.min_window = plan.search.probe.saturating_sub(plan.search.probe_trim);
    p
}

/// A one-shelf plan for the confirming shelf at `rate`: a hold of `search.confirm` judged with
/// the plan's own analysis settings (trim head/tail, minimum window).
pub fn confirm_plan(plan: &Plan, rate: f64) -> Plan {
    hold_plan(plan, rate, plan.search.confirm)
}

/// A check plan: `rate` for `duration`, every second kept (no trimming), judged only for its
/// latency and errors.
pub fn check_plan(plan: &Plan, rate: f64, duration: Duration) -> Plan {
    let mut p = hold_plan(plan, rate, duration);
    p.analysis.trim_head = Duration::ZERO;
    p.analysis.trim_tail = Duration::ZERO;
    p.analysis.min_window = Duration::from_secs(1);
    p
}

/// What the search established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchStatus {
    /// Bracketed, and the 95% interval's half-width is within the tolerance.
    Narrowed,
    /// Bracketed, but the budget ended before the interval was within the tolerance.
    Bracketed,
    /// Every probe passed (max rate or budget reached): the ceiling is at least the value.
    LowerBound,
    /// Every probe the service could be judged on passed; above them the generator, not the
    /// service, was the limit: the ceiling is at least the value.
    GeneratorBound,
    /// The service did not come back to baseline after an overload: what was established is
    /// reported, nothing above it.
    NotRecovered,
    /// Every probe failed, down to the lowest rate tried.
    NoPass,
    /// Nothing could be judged (stopped, or the service did not answer).
    NoData,
}

impl SearchStatus {
    /// `narrowed`, `bracketed`, `lower bound`, …
    pub fn name(self) -> &'static str {
        match self {
            SearchStatus::Narrowed => "narrowed",
            SearchStatus::Bracketed => "bracketed",
            SearchStatus::LowerBound => "lower bound",
            SearchStatus::GeneratorBound => "generator-bound (lower bound)",
            SearchStatus::NotRecovered => "service did not recover (lower bound)",
            SearchStatus::NoPass => "no rate passed",
            SearchStatus::NoData => "no data",
        }
    }
    /// True when `ceiling_rps` is only a lower bound.
    pub fn is_lower_bound(self) -> bool {
        matches!(
            self,
            SearchStatus::LowerBound | SearchStatus::GeneratorBound | SearchStatus::NotRecovered
        )
    }
}

/// Why the search loop ended (the loop's own account; the status follows from it and the data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopReason {
    /// The interval reached the tolerance (and the confirming shelf, when configured, passed).
    Converged,
    /// The time budget ran out.
    Budget,
    /// Ctrl-C.
    Signal,
    /// Every probe up to `search.max_rate` passed.
    MaxRate {
        /// The maximum rate.
        rate: f64,
    },
    /// The generator could not drive `rate` even with more threads.
    GeneratorLimit {
        /// Lowest rate the generator could not drive.
        rate: f64,
    },
    /// After a probe at `after` the service did not come back within the bound.
    NotRecovered {
        /// The probe's rate.
        after: f64,
        /// Seconds waited.
        waited_s: f64,
        /// Why the last check failed, from the attribution of its window (absent when it was
        /// run without signals, and in older run.json files).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    /// The SLO failed even at the lowest rate worth probing.
    BelowMinimum,
    /// The confirming shelf kept failing.
    ConfirmFailed,
    /// The environment disturbed too many probes (host stalls, the generator, the database
    /// unreachable): what the probes measured was the machine, not the service.
    Disturbed {
        /// Probes disturbed.
        probes: u32,
    },
    /// A probe could not run at all (the stack died, a bad plan…).
    Error {
        /// What happened.
        message: String,
    },
}

impl StopReason {
    /// The reason without its evidence (a not-recovered stop's why), for one-line summaries that
    /// say the evidence elsewhere; `Display` gives both.
    pub fn brief(&self) -> String {
        match self {
            StopReason::NotRecovered {
                after, waited_s, ..
            } => StopReason::NotRecovered {
                after: *after,
                waited_s: *waited_s,
                why: None,
            }
            .to_string(),
            other => other.to_string(),
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Converged => f.write_str("the interval reached the tolerance"),
            StopReason::Budget => f.write_str("the time budget (--max-time) ran out"),
            StopReason::Signal => f.write_str("stopped by signal"),
            StopReason::MaxRate { rate } => {
                write!(f, "the SLO still held at search.max_rate = {rate:.0} RPS")
            }
            StopReason::GeneratorLimit { rate } => write!(
                f,
                "at {rate:.0} RPS the generator, not the service, was the limit (retried with more threads)"
            ),
            StopReason::NotRecovered {
                after,
                waited_s,
                why,
            } => {
                write!(
                    f,
                    "after the probe at {after:.0} RPS the service did not return to baseline latency within {waited_s:.0} s"
                )?;
                match why {
                    Some(w) => write!(f, " (the last check: {w})"),
                    None => Ok(()),
                }
            }
            StopReason::BelowMinimum => f.write_str("the SLO failed even at the lowest rate worth probing"),
            StopReason::ConfirmFailed => f.write_str("the confirming shelf failed at every rate tried"),
            StopReason::Disturbed { probes } => write!(
                f,
                "{probes} probes were disturbed by the environment (host stalls, the generator, the database): the machine, not the service, was being measured"
            ),
            StopReason::Error { message } => write!(f, "{message}"),
        }
    }
}

/// The ends of a cliff's final bracket, probed fewer times than the search asks before it calls
/// the cliff's interval narrow (`search.repeat`, `--repeat`): one probe at each end of a cliff
/// says where the service passed and failed once, not that it does so again — at a metastable
/// knee the same rate passes and fails in turn (benchmarks/search.md §65).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThinEnds {
    /// The bracket's lower end (highest passing rate of the fit), RPS.
    pub lo: f64,
    /// The bracket's upper end (lowest failing rate of the fit), RPS.
    pub hi: f64,
    /// Probes pooled at `lo`, in probe windows of the search's length.
    pub at_lo: f64,
    /// Probes pooled at `hi`, likewise.
    pub at_hi: f64,
    /// Probes the search asks at each end (`search.repeat`).
    pub repeat: u32,
}

impl ThinEnds {
    /// The search's rule for a cliff's bracket `lo`–`hi` (no local line through the margins): its
    /// ends are replicated until each has `repeat` probes (at least one) before the width counts.
    /// `None` when both have them. The loop (`ceiling_search`) probes the thinner end next; a
    /// search's conclusion calls such a bracket not narrowed.
    pub fn of(fit: &PooledFit, lo: f64, hi: f64, repeat: u32) -> Option<ThinEnds> {
        let repeat = repeat.max(1);
        let (at_lo, at_hi) = (fit.weight_at(lo), fit.weight_at(hi));
        (at_lo.min(at_hi) < f64::from(repeat)).then_some(ThinEnds {
            lo,
            hi,
            at_lo,
            at_hi,
            repeat,
        })
    }

    /// The end with fewer probes (the lower one on a tie): where the next replicate goes.
    pub fn thinner_end(&self) -> f64 {
        if self.at_lo <= self.at_hi {
            self.lo
        } else {
            self.hi
        }
    }

    /// `1184 and 1244 probed 1 and 1 times, 3 each asked before a cliff is called narrow`.
    pub fn describe(&self) -> String {
        format!(
            "{:.0} and {:.0} probed {} and {} times, {} each asked before a cliff is called narrow",
            self.lo,
            self.hi,
            fmt_count(self.at_lo),
            fmt_count(self.at_hi),
            self.repeat
        )
    }
}

/// A probe count that may be fractional (a shorter probe weighs less): `1`, `2.5`.
fn fmt_count(w: f64) -> String {
    if (w - w.round()).abs() < 0.05 {
        format!("{:.0}", w.round())
    } else {
        format!("{w:.1}")
    }
}

/// The whole capacity search of one stack: every probe, the estimate and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchOutcome {
    /// Every probe, confirming shelf and check, in the order run.
    pub probes: Vec<ProbeVerdict>,
    /// The confirming shelves (full results), in the order run.
    #[serde(default)]
    pub confirms: Vec<ShelfResult>,
    /// Low-rate latency at the start.
    pub baseline: Option<Baseline>,
    /// What was established.
    pub status: SearchStatus,
    /// The ceiling: the interval's estimate when bracketed, the highest passing rate for a lower
    /// bound, 0 when no rate passed.
    pub ceiling_rps: f64,
    /// When no rate passed: the lowest rate that failed, which the ceiling is below (absent in
    /// older run.json files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_bound_rps: Option<f64>,
    /// The highest rate a probe passed that the fit left out because it was shorter than the
    /// lengthened probes ([`fit_window_s`]): what the service held for a short while only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shorter_passed_rps: Option<f64>,
    /// The lowest rate a probe failed that the fit left out because it was shorter: where the
    /// service already broke within a short probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shorter_failed_rps: Option<f64>,
    /// 95% interval (bracketed searches only).
    pub interval: Option<CapacityInterval>,
    /// The SLO term that bound the ceiling (largest margin at the lowest failing rate).
    pub binding: Option<String>,
    /// Why the probes at the lowest failing rate failed (their attribution), when recorded.
    #[serde(default)]
    pub cause: Option<String>,
    /// The tolerance asked for (half-width as a fraction of the estimate).
    pub tolerance: f64,
    /// A cliff's bracket within the tolerance whose ends have fewer probes than the search
    /// replicates before calling a cliff narrow (its budget ran out first): the search is then
    /// `bracketed`, not `narrowed`. `None` otherwise, and for searches stored before 2026-11-29.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thin_ends: Option<ThinEnds>,
    /// Why the loop ended.
    pub stop: StopReason,
    /// Wall time of the search, seconds.
    pub elapsed_s: f64,
}

impl SearchOutcome {
    /// Concludes a search from its probes: every probe at one rate pooled into one window (checks,
    /// invalid and disturbed probes left out), the ceiling and its interval from the pooled fit
    /// ([`crate::PooledFit`]), the transition zone of single probes, and — so that a result never
    /// contradicts its own evidence — a confirming shelf that failed bounds the ceiling below its
    /// rate. `repeat`: the probes a cliff's bracket needs at each end before it is called narrow
    /// (the search loop's own rule, so a search its budget ended is never called narrower than
    /// the loop would have); 0 counts as 1.
    pub fn conclude(
        probes: Vec<ProbeVerdict>,
        confirms: Vec<ShelfResult>,
        baseline: Option<Baseline>,
        tolerance: f64,
        repeat: u32,
        stop: StopReason,
        elapsed_s: f64,
    ) -> SearchOutcome {
        let smp = samples(&probes);
        let fit = PooledFit::of(&smp);
        let mut interval = pooled_interval(&smp, 0x5EED);
        if let Some(i) = interval.as_mut() {
            i.zone = transition_zone(&smp, standard_window_s(&probes), 0x20E5);
            revise_by_confirms(i, &probes);
        }
        // As the loop decides (`ceiling_search`'s `next`): without a local line through the
        // pooled margins (a cliff), the bracket's ends are replicated before the width counts.
        let thin_ends = match (&interval, fit.bracket()) {
            (Some(i), Bracket::Between { lo, hi }) if i.method == IntervalMethod::Bracket => {
                ThinEnds::of(&fit, lo, hi, repeat)
            }
            _ => None,
        };
        let (status, ceiling) = match (&interval, fit.bracket()) {
            (Some(i), _) => (
                if i.half_width_rel() <= tolerance && thin_ends.is_none() {
                    SearchStatus::Narrowed
                } else {
                    SearchStatus::Bracketed
                },
                i.estimate,
            ),
            (None, Bracket::AllPass { highest }) => (
                match stop {
                    StopReason::GeneratorLimit { .. } => SearchStatus::GeneratorBound,
                    StopReason::NotRecovered { .. } => SearchStatus::NotRecovered,
                    _ => SearchStatus::LowerBound,
                },
                highest,
            ),
            (None, Bracket::AllFail { .. }) => (SearchStatus::NoPass, 0.0),
            (None, _) => (SearchStatus::NoData, 0.0),
        };
        let lowest_fail = match fit.bracket() {
            Bracket::Between { hi, .. } => Some(hi),
            Bracket::AllFail { lowest } => Some(lowest),
            _ => None,
        };
        let binding = lowest_fail.and_then(|r| binding_term(&probes, r));
        let cause = lowest_fail.and_then(|r| {
            probes
                .iter()
                .filter(|p| p.failed() && (p.rate - r).abs() <= 1e-9 * r.max(1.0))
                .find_map(|p| p.why.clone())
        });
        let upper_bound_rps = match (status, fit.bracket()) {
            (SearchStatus::NoPass, Bracket::AllFail { lowest }) => Some(lowest),
            _ => None,
        };
        SearchOutcome {
            probes,
            confirms,
            baseline,
            status,
            ceiling_rps: ceiling,
            upper_bound_rps,
            shorter_passed_rps: None,
            shorter_failed_rps: None,
            interval,
            binding,
            cause,
            tolerance,
            thin_ends,
            stop,
            elapsed_s,
        }
    }

    /// One line: `1012 RPS (95% CI 960–1050, ±4.4%, narrowed; bound by p99 of get; cliff)`.
    pub fn describe(&self) -> String {
        let bind = self
            .binding
            .as_ref()
            .map(|b| format!("; bound by {b}"))
            .unwrap_or_default();
        match (&self.interval, self.status) {
            (Some(i), st) => format!(
                "{:.0} RPS (95% CI {:.0}–{}, ±{:.1}%, {}{bind}; {} knee){}{}",
                self.ceiling_rps,
                i.lo,
                if i.hi.is_finite() {
                    format!("{:.0}", i.hi)
                } else {
                    "∞".into()
                },
                if i.half_width_rel().is_finite() {
                    i.half_width_rel() * 100.0
                } else {
                    f64::INFINITY
                },
                st.name(),
                match i.knee {
                    Knee::Smooth => "smooth",
                    Knee::Cliff => "cliff",
                },
                i.zone
                    .as_ref()
                    .map(|z| format!("; {}", z.describe()))
                    .unwrap_or_default()
                    + &self
                        .thin_ends
                        .map(|t| format!("; not narrowed: {}", t.describe()))
                        .unwrap_or_default(),
                i.revised
                    .as_ref()
                    .map(|r| format!("; revised: {r}"))
                    .unwrap_or_default(),
            ),
            (None, st) if st.is_lower_bound() => {
                // what the shorter probes saw above it, left out of the fit
                let shorter = self
                    .shorter_failed_rps
                    .filter(|&r| r > self.ceiling_rps)
                    .map(|r| format!("; shorter probes failed from {r:.0} RPS"))
                    .unwrap_or_default();
                format!(
                    "≥ {:.0} RPS ({}: {}{shorter})",
                    self.ceiling_rps,
                    st.name(),
                    self.stop.brief()
                )
            }
            (None, st) => {
                let shorter = self
                    .shorter_passed_rps
                    .map(|r| {
                        format!(
                            "; shorter probes passed up to {r:.0} RPS, held for a short while only"
                        )
                    })
                    .unwrap_or_default();
                match self.upper_bound_rps {
                    Some(u) => format!(
                        "< {u:.0} RPS ({}: {}{shorter})",
                        self.longest_probes(st),
                        self.stop.brief()
                    ),
                    None => format!("0 RPS ({}: {}{shorter})", st.name(), self.stop.brief()),
                }
            }
        }
    }

    /// Sets what the probes say beyond the fit ([`SearchOutcome::upper_bound_rps`], the shorter
    /// probes' highest pass and lowest failure) from the probes and the status. Run by
    /// [`SearchOutcome::conclude`], and by `ceiling report` on a search stored before these
    /// fields existed.
    pub fn fill_bounds(&mut self) {
        let obs = observations(&self.probes);
        self.upper_bound_rps = match (self.status, Fit::of(&obs).bracket()) {
            (SearchStatus::NoPass, Bracket::AllFail { lowest }) => Some(lowest),
            _ => None,
        };
        let w = fit_window_s(&self.probes) * 0.99;
        let shorter = || {
            self.probes
                .iter()
                .filter(move |p| p.kind == ProbeKind::Probe && p.window_s < w)
        };
        self.shorter_passed_rps = shorter()
            .filter(|p| p.verdict == Verdict::Valid)
            .map(|p| p.rate)
            .reduce(f64::max);
        self.shorter_failed_rps = shorter()
            .filter(|p| p.failed())
            .map(|p| p.rate)
            .reduce(f64::min);
    }

    /// `no rate passed`, or `no rate passed in 120-s probes` after a lengthening.
    fn longest_probes(&self, st: SearchStatus) -> String {
        match self.shorter_passed_rps {
            Some(_) => format!(
                "{} in the lengthened probes ({:.0}-s windows)",
                st.name(),
                fit_window_s(&self.probes)
            ),
            None => st.name().to_string(),
        }
    }
}

/// The window every observation must have: the longest probe window so far (a search that
/// lengthened its probes because short ones were too noisy fits the long ones only; confirming
/// shelves are longer still and always count). 0 when no probe recorded its window.
pub fn fit_window_s(probes: &[ProbeVerdict]) -> f64 {
    probes
        .iter()
        .filter(|p| p.kind == ProbeKind::Probe)
        .map(|p| p.window_s)
        .fold(0.0, f64::max)
}

/// The rate a confirming shelf checks, and whether the fit bracketed the ceiling: the 95%
/// interval's lower end when it did, else the highest rate that held; `None` when nothing passed.
pub fn confirm_rate(probes: &[ProbeVerdict]) -> Option<(f64, bool)> {
    let smp = samples(probes);
    if let Some(i) = pooled_interval(&smp, 0x5EED) {
        return Some((i.lo, true));
    }
    match PooledFit::of(&smp).bracket() {
        Bracket::AllPass { highest } => Some((highest, false)),
        _ => None,
    }
}

/// The standard probe length of a search: the shortest probe window (kept seconds), 0 when none
/// was recorded. Longer probes (lengthened, confirming shelves) pool with the weight of their
/// length over it.
pub fn standard_window_s(probes: &[ProbeVerdict]) -> f64 {
    let w = probes
        .iter()
        .filter(|p| p.kind == ProbeKind::Probe && p.window_s > 0.0)
        .map(|p| p.window_s)
        .fold(f64::INFINITY, f64::min);
    if w.is_finite() {
        w
    } else {
        0.0
    }
}

/// The probes the pooled fit uses: checks, invalid probes and probes disturbed by their
/// environment left out; each weighs its window over the standard probe's.
pub fn samples(probes: &[ProbeVerdict]) -> Vec<Sample<'_>> {
    let base = standard_window_s(probes);
    probes
        .iter()
        .filter(|p| p.pooled())
        .map(|p| Sample {
            rate: p.rate,
            margin: p.fit_margin(),
            counts: p.counts.as_ref(),
            weight: if base > 0.0 && p.window_s > 0.0 {
                p.window_s / base
            } else {
                1.0
            },
            standard: p.kind == ProbeKind::Probe
                && (base <= 0.0 || (p.window_s - base).abs() <= 0.01 * base),
        })
        .collect()
}

/// A confirming shelf that failed at rate `c` bounds the ceiling below `c`: the interval's upper
/// end moves down to `c` (its lower end below it, to the highest rate that held under `c` when
/// it was above), the estimate into what is left, and the interval says why.
fn revise_by_confirms(i: &mut CapacityInterval, probes: &[ProbeVerdict]) {
    let failed = probes
        .iter()
        .filter(|p| p.kind == ProbeKind::Confirm && p.failed() && p.disturbed.is_none())
        .min_by(|a, b| a.rate.total_cmp(&b.rate));
    let Some(f) = failed else { return };
    let c = f.rate;
    if i.hi <= c && i.estimate < c {
        return;
    }
    let held_below = probes
        .iter()
        .filter(|p| p.kind != ProbeKind::Check && p.passed() && p.rate < c)
        .map(|p| p.rate)
        .fold(0.0, f64::max);
    i.hi = i.hi.min(c);
    if i.lo >= c {
        i.lo = held_below.min(c);
    }
    if i.estimate >= c {
        i.estimate = (i.lo + i.hi) / 2.0;
    }
    i.revised = Some(format!(
        "the confirming shelf at {c:.0} RPS failed ({}): the ceiling is below it",
        f.binding()
            .map(|t| format!("{} margin {}", t.term, fmt_margin(t.margin)))
            .unwrap_or_else(|| format!("margin {}", fmt_margin(f.margin)))
    ));
}

/// The probes' margins as observations: checks and invalid probes excluded, and probes shorter
/// than the longest probe so far ([`fit_window_s`]) left out of the fit (they stay in the record).
pub fn observations(probes: &[ProbeVerdict]) -> Vec<Observation> {
    let w = fit_window_s(probes) * 0.99;
    probes
        .iter()
        .filter(|p| p.kind != ProbeKind::Check && p.verdict != Verdict::Invalid)
        .filter(|p| p.window_s >= w)
        .map(|p| Observation {
            rate: p.rate,
            margin: p.fit_margin(),
        })
        .collect()
}

/// The term with the largest mean log margin among the probes at `rate`.
fn binding_term(probes: &[ProbeVerdict], rate: f64) -> Option<String> {
    let mut sums: Vec<(String, f64, usize)> = Vec::new();
    for p in probes.iter().filter(|p| {
        p.kind != ProbeKind::Check
            && p.verdict != Verdict::Invalid
            && (p.rate - rate).abs() <= 1e-9 * rate.max(1.0)
    }) {
        for t in &p.terms {
            let y = t
                .margin
                .clamp(capacity::MIN_MARGIN, capacity::MAX_MARGIN)
                .ln();
            match sums.iter_mut().find(|s| s.0 == t.term) {
                Some(s) => {
                    s.1 += y;
                    s.2 += 1;
                }
                None => sums.push((t.term.clone(), y, 1)),
            }
        }
    }
    sums.into_iter()
        .map(|(t, s, n)| (t, s / n as f64))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(t, _)| t)
}
