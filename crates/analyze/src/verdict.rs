//! Shelf verdicts and the reasons behind them.

use crate::criteria::trim_float;
use ceiling_metrics::Role;
use ceiling_plan::pct_name;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The outcome of judging one shelf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every rule holds: the stack sustained this load within the SLO.
    Valid,
    /// The stack broke a rule (latency, errors, stability): the load is above its ceiling.
    Failed,
    /// The shelf cannot be judged: the generator was the bottleneck, the window was too short,
    /// or the shelf was not (fully) run. Says nothing about the stack.
    Invalid,
}

impl Verdict {
    /// `valid`, `failed`, `invalid`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::Failed => "failed",
            Verdict::Invalid => "invalid",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a shelf is not valid. Each reason is either a failure of the stack or makes the shelf
/// invalid ([`Reason::verdict`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// A latency percentile exceeded its limit (stack failure).
    Latency {
        /// Request name for a per-request limit, `None` for the overall one.
        request: Option<String>,
        /// Percentile, e.g. 99.0.
        percentile: f64,
        /// Measured value, ms.
        measured_ms: f64,
        /// Limit, ms.
        limit_ms: f64,
    },
    /// Error rate at or above the maximum (stack failure).
    Errors {
        /// Errors / completed.
        rate: f64,
        /// The plan's maximum.
        max: f64,
        /// Requests with any outcome but `ok`.
        errors: u64,
        /// Completed requests.
        requests: u64,
    },
    /// Throughput not stable within ±stability (stack failure). See `ShelfCriteria`.
    Unstable {
        /// What deviated: `window mean vs offered` or `block at t=…`.
        detail: String,
        /// The relative deviation found (signed; −0.12 = 12% below).
        deviation: f64,
        /// The allowed deviation.
        max: f64,
    },
    /// Requests were offered but none completed in the window (stack failure).
    NothingCompleted {
        /// Requests offered in the window.
        offered: u64,
    },
    /// The generator fell behind its schedule (invalid: generator-bound).
    GeneratorLag {
        /// Schedule-lag p99 in the window, ms.
        p99_ms: f64,
        /// Allowed maximum, ms.
        max_ms: f64,
    },
    /// The generator fell behind its schedule, but the stack failed by more than that lateness
    /// can explain (see `outweigh_generator_lag` in shelf.rs): a note beside the stack's
    /// failure, neither a failure nor a reason to void the shelf.
    GeneratorLagOutweighed {
        /// Schedule-lag p99 in the window, ms.
        p99_ms: f64,
        /// Allowed maximum, ms.
        max_ms: f64,
        /// The worst schedule lag in the window, ms: the most the generator's lateness (and the
        /// burst it sends on catching up) can have added to any request's latency.
        lag_max_ms: f64,
    },
    /// The generator's own CPU was saturated (invalid: generator-bound).
    GeneratorCpu {
        /// Mean generator CPU in the window, % of one core.
        mean_pct: f64,
        /// Allowed maximum.
        max_pct: f64,
    },
    /// The generator refused requests because its backlog was full (invalid: generator-bound).
    BacklogOverflow {
        /// Requests refused in the window.
        refused: u64,
    },
    /// The generator wrote fewer than 99% of the requests its schedule offered, not counting
    /// those the service kept from being written by refusing their connections (invalid:
    /// generator-bound). Judged where a run records its sends as a whole (`ceiling load`).
    Unsent {
        /// Requests written, plus those whose connection the service refused.
        sent: u64,
        /// Requests the schedule offered.
        offered: u64,
    },
    /// The kept window is shorter than the minimum (invalid).
    WindowTooShort {
        /// Kept seconds.
        kept_s: f64,
        /// Required seconds.
        min_s: f64,
    },
    /// The run ended before the shelf was complete (invalid).
    Incomplete {
        /// Seconds of the stage recorded.
        seen_s: f64,
        /// Planned length of the stage.
        planned_s: f64,
    },
    /// No second of the shelf was recorded (invalid).
    NotReached,
    /// A part of the stand the stack depends on (PostgreSQL) exited while the shelf ran: its
    /// numbers describe a broken stand, not the stack (invalid, whatever else they show).
    PartExited {
        /// What exited.
        part: Role,
        /// The first second (since the run's start) the exit may have affected.
        from_s: f64,
        /// How it ended (`signal 9`, `exit 1`).
        status: String,
    },
    /// Nothing was offered or completed in the window (invalid).
    NoData,
    /// The shelf came after one the stack failed, in a run that stops there (`[load]
    /// stop_at_failure`): the stop cut it short or it never ran (invalid, whatever its seconds
    /// show — the engine hands a second over after it ends, so a stop takes a second or two).
    StoppedAfterFailure {
        /// The failed shelf the run stopped after.
        after: String,
    },
}

impl Reason {
    /// [`Verdict::Failed`] for stack failures, [`Verdict::Invalid`] otherwise.
    pub fn verdict(&self) -> Verdict {
        match self {
            Reason::Latency { .. }
            | Reason::Errors { .. }
            | Reason::Unstable { .. }
            | Reason::NothingCompleted { .. } => Verdict::Failed,
            _ => Verdict::Invalid,
        }
    }
    /// True for reasons that void a shelf whatever else it shows: the generator was the bottleneck,
    /// or a part of the stand died under it. [`verdict_of`] makes such a shelf invalid, never failed.
    pub fn voids_shelf(&self) -> bool {
        self.is_generator_bound()
            || matches!(
                self,
                Reason::PartExited { .. } | Reason::StoppedAfterFailure { .. }
            )
    }
    /// For a generator-bound reason, what fell behind, without the `generator-bound:` label (a
    /// verdict that already says so quotes this); `None` for every other reason.
    pub fn generator_detail(&self) -> Option<String> {
        Some(match self {
            Reason::GeneratorLag { p99_ms, max_ms } => format!(
                "schedule lag p99 {} ms > {} ms",
                fmt_ms(*p99_ms),
                fmt_ms(*max_ms)
            ),
            Reason::GeneratorCpu { mean_pct, max_pct } => {
                format!("generator CPU {mean_pct:.0}% > {}%", trim_float(*max_pct))
            }
            Reason::BacklogOverflow { refused } => {
                format!("{refused} requests refused (backlog full)")
            }
            Reason::Unsent { sent, offered } => {
                format!("only {sent} of {offered} scheduled requests were sent")
            }
            _ => return None,
        })
    }
    /// True for reasons that mean the generator, not the stack, was the bottleneck.
    pub fn is_generator_bound(&self) -> bool {
        matches!(
            self,
            Reason::GeneratorLag { .. }
                | Reason::GeneratorCpu { .. }
                | Reason::BacklogOverflow { .. }
                | Reason::Unsent { .. }
        )
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Latency {
                request,
                percentile,
                measured_ms,
                limit_ms,
            } => {
                let who = request
                    .as_ref()
                    .map(|r| format!("{r} "))
                    .unwrap_or_default();
                write!(
                    f,
                    "{who}{} {} ms > {} ms",
                    pct_name(*percentile),
                    fmt_ms(*measured_ms),
                    fmt_ms(*limit_ms)
                )
            }
            Reason::Errors {
                rate,
                max,
                errors,
                requests,
            } => write!(
                f,
                "errors {}% ≥ {}% ({errors} of {requests})",
                trim_float((rate * 100.0 * 100.0).round() / 100.0),
                trim_float(max * 100.0)
            ),
            Reason::Unstable {
                detail,
                deviation,
                max,
            } => write!(
                f,
                "unstable: {detail} {:+.1}% (allowed ±{}%)",
                deviation * 100.0,
                trim_float(max * 100.0)
            ),
            Reason::NothingCompleted { offered } => {
                write!(f, "no request completed ({offered} offered)")
            }
            Reason::GeneratorLagOutweighed {
                p99_ms,
                max_ms,
                lag_max_ms,
            } => write!(
                f,
                "generator behind (schedule lag p99 {} ms > {} ms, worst {} ms), but the stack failed beyond what that lag explains",
                fmt_ms(*p99_ms),
                fmt_ms(*max_ms),
                fmt_ms(*lag_max_ms)
            ),
            Reason::GeneratorLag { .. }
            | Reason::GeneratorCpu { .. }
            | Reason::BacklogOverflow { .. }
            | Reason::Unsent { .. } => write!(
                f,
                "generator-bound: {}",
                self.generator_detail().unwrap_or_default()
            ),
            Reason::WindowTooShort { kept_s, min_s } => {
                write!(
                    f,
                    "window {} s < {} s",
                    trim_float(*kept_s),
                    trim_float(*min_s)
                )
            }
            Reason::Incomplete { seen_s, planned_s } => {
                write!(
                    f,
                    "incomplete: {} s of {} s recorded",
                    trim_float(*seen_s),
                    trim_float(*planned_s)
                )
            }
            Reason::NotReached => f.write_str("not reached"),
            Reason::PartExited {
                part,
                from_s,
                status,
            } => {
                let st = if status.is_empty() {
                    String::new()
                } else {
                    format!(", {status}")
                };
                write!(
                    f,
                    "{} exited during the shelf (t≈{} s{st})",
                    part.title(),
                    trim_float(*from_s)
                )
            }
            Reason::NoData => f.write_str("no requests in the window"),
            Reason::StoppedAfterFailure { after } => write!(
                f,
                "not run to its end: the run stopped after `{after}` failed (stop_at_failure)"
            ),
        }
    }
}

/// The generator's own health over a window: what [`generator_reasons`] judges.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GeneratorHealth {
    /// Open model: a schedule to keep (the closed model has no schedule lag).
    pub open: bool,
    /// Schedule-lag p99, ms.
    pub lag_p99_ms: f64,
    /// Mean generator CPU, % of one core.
    pub cpu_mean_pct: f64,
    /// Requests refused because the backlog was full.
    pub overflow: u64,
    /// (requests written or kept from being written by the service's refused connections,
    /// requests the schedule offered), where the run records them as a whole; `None` for a
    /// shelf, whose seconds record lag and overflow but not sends.
    pub sends: Option<(u64, u64)>,
}

/// The one generator-bound rule, for a shelf, a probe and `ceiling load` alike: schedule lag p99
/// above `max_lag_ms` (open model), mean generator CPU above `max_cpu_pct`, any backlog
/// overflow, or (where sends are recorded) fewer than 99% of the scheduled requests written.
/// Each reason makes the result describe the generator, not the service.
pub fn generator_reasons(h: &GeneratorHealth, max_lag_ms: f64, max_cpu_pct: f64) -> Vec<Reason> {
    let mut out = Vec::new();
    if h.open && h.lag_p99_ms > max_lag_ms {
        out.push(Reason::GeneratorLag {
            p99_ms: h.lag_p99_ms,
            max_ms: max_lag_ms,
        });
    }
    if h.cpu_mean_pct > max_cpu_pct {
        out.push(Reason::GeneratorCpu {
            mean_pct: h.cpu_mean_pct,
            max_pct: max_cpu_pct,
        });
    }
    if h.overflow > 0 {
        out.push(Reason::BacklogOverflow {
            refused: h.overflow,
        });
    }
    if let Some((sent, offered)) = h.sends {
        if h.open && (sent as f64) < 0.99 * offered as f64 {
            out.push(Reason::Unsent { sent, offered });
        }
    }
    out
}

pub use ceiling_fmt::fmt_ms;

/// Combines reasons into a verdict: any generator-bound reason or a part of the stand that exited
/// → invalid (the measurement cannot be trusted); else any stack failure → failed (even in a short window, the stack demonstrably
/// failed); else any other reason (window too short, incomplete, not reached) → invalid; else valid.
pub fn verdict_of(reasons: &[Reason]) -> Verdict {
    if reasons.iter().any(Reason::voids_shelf) {
        Verdict::Invalid
    } else if reasons.iter().any(|r| r.verdict() == Verdict::Failed) {
        Verdict::Failed
    } else if reasons.is_empty() {
        Verdict::Valid
    } else {
        Verdict::Invalid
    }
}

#[cfg(test)]
mod generator_rule_tests {
    use super::*;

    #[test]
    fn one_rule_names_each_way_the_generator_falls_behind() {
        let fine = GeneratorHealth {
            open: true,
            lag_p99_ms: 0.2,
            cpu_mean_pct: 40.0,
            overflow: 0,
            sends: Some((1000, 1000)),
        };
        assert!(generator_reasons(&fine, 10.0, 90.0).is_empty());
        let late = GeneratorHealth {
            lag_p99_ms: 12.0,
            ..fine
        };
        assert!(matches!(
            generator_reasons(&late, 10.0, 90.0)[..],
            [Reason::GeneratorLag { .. }]
        ));
        // the closed model keeps no schedule: its lag is not judged
        let closed = GeneratorHealth {
            open: false,
            sends: Some((10, 1000)),
            ..late
        };
        assert!(generator_reasons(&closed, 10.0, 90.0).is_empty());
        let busy = GeneratorHealth {
            cpu_mean_pct: 95.0,
            overflow: 3,
            sends: Some((980, 1000)),
            ..fine
        };
        let r = generator_reasons(&busy, 10.0, 90.0);
        assert_eq!(r.len(), 3, "{r:?}");
        assert!(r.iter().all(Reason::is_generator_bound));
        assert_eq!(verdict_of(&r), Verdict::Invalid);
        assert_eq!(
            r[2].to_string(),
            "generator-bound: only 980 of 1000 scheduled requests were sent"
        );
        // a shelf records no sends: only lag, CPU and overflow are judged
        let shelf = GeneratorHealth {
            sends: None,
            ..busy
        };
        assert_eq!(generator_reasons(&shelf, 10.0, 90.0).len(), 2);
    }
}
