//! Every claim of every source, with a verdict.
//!
//! A source's claims are data (`plans/published/claims/<source>.toml`): the author's statement,
//! the seed line it comes from, the plan whose runs can answer it, and the check it becomes — a
//! threshold on one stack's figure, a ratio of two stacks' figures, or an order of stacks.
//! [`evaluate`] judges each against the latest run of its plan that has the stacks it names:
//! **holds**, **does not hold**, **not decided** (the figures' uncertainty straddles the claim) or
//! **not testable here** (no run, no such shelf — said why, never guessed). A figure with a 95%
//! interval (a search's ceiling) is judged by its whole interval; a single value by itself, and
//! the verdict says "one run" — but an order of two single values is decided only when they are
//! more than [`SINGLE_VALUES_APART`] apart (one run's noise is no order).

use crate::published::PublishedError;
use ceiling_analyze::{Estimate, ShelfResult, StackAnalysis, Verdict};
use ceiling_records::RunReport;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One source's claims file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsFile {
    /// The source (`000`).
    pub source: String,
    /// The seed text the lines refer to.
    pub seed: String,
    /// The claims that become checks.
    #[serde(default)]
    pub claims: Vec<Claim>,
    /// Statements with no measurable content here, and why.
    #[serde(default)]
    pub untestable: Vec<Untestable>,
}

/// A claim that cannot be checked here.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Untestable {
    /// The statement.
    pub text: String,
    /// Its seed line.
    pub line: u32,
    /// Why it is not testable here.
    pub why: String,
}

/// What a claim checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// One stack's figure against a value.
    Threshold,
    /// Stack `a`'s figure over stack `b`'s against a value.
    Ratio,
    /// Stacks from the highest figure to the lowest.
    Order,
}

/// One claim.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// Unique id (`000-mvc-zero`).
    pub id: String,
    /// The claim, close to the author's words.
    pub text: String,
    /// The seed line.
    pub line: u32,
    /// The author's words, copied.
    #[serde(default)]
    pub quote: String,
    /// The plan whose runs answer it (none: not testable).
    pub plan: Option<String>,
    /// Other plans whose runs measure the same figure the same way — a plan that runs only the
    /// levels the claims read, at the same length (`003-people-claims` beside `003-people`). A
    /// run of any of them answers: the latest unscaled one first, as for `plan` alone.
    #[serde(default)]
    pub also: Vec<String>,
    /// The check.
    pub kind: ClaimKind,
    /// Threshold: the stack.
    pub stack: Option<String>,
    /// Ratio: the numerator's stack.
    pub a: Option<String>,
    /// Ratio: the denominator's stack.
    pub b: Option<String>,
    /// Ratio: the denominator's plan, when it is another plan's figure (source 004's keep-alive
    /// impact: a stack's RPS with keep-alive on over the same stack's with it off). Default: `plan`.
    pub b_plan: Option<String>,
    /// Ratio: the denominator's shelf or level, when it is another one (one stack at two
    /// levels: `c=1000` over `c=100`). Default: `point`.
    pub b_point: Option<String>,
    /// Order: the stacks, highest first.
    #[serde(default)]
    pub stacks: Vec<String>,
    /// The figure: `ceiling`, `rps`, `p99_ms`, `p50_ms`, `mean_ms`, `errors_pct`, `cpu_pct`,
    /// `rss_mib` (all but `ceiling` at `point`).
    #[serde(default = "ceiling_metric")]
    pub metric: String,
    /// The shelf or level (`hold 3000`, `c=100`).
    pub point: Option<String>,
    /// `<`, `<=`, `>`, `>=` or `~`.
    pub op: Option<String>,
    /// The value compared with.
    pub value: Option<f64>,
    /// With `~`: the relative tolerance (default 10%). In an order of single values: how far
    /// apart they must be to decide it (default [`SINGLE_VALUES_APART`]).
    pub within: Option<f64>,
    /// How the claim became this check.
    pub note: Option<String>,
}

fn ceiling_metric() -> String {
    "ceiling".into()
}

/// How far apart two single values (one run each, no interval) must be for an order claim to
/// be decided by them: 10%, unless the claim's `within` says otherwise. A p99 or a CPU share of
/// one shelf moves by more than a few percent from one run to the next on a shared machine.
pub const SINGLE_VALUES_APART: f64 = 0.10;

/// A claim's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimVerdict {
    /// The figures show it.
    Holds,
    /// The figures show the opposite.
    DoesNotHold,
    /// The figures' uncertainty straddles the claim.
    NotDecided,
    /// No run here can answer it (the reason is given).
    NotTestable,
}

impl ClaimVerdict {
    /// For tables.
    pub fn label(self) -> &'static str {
        match self {
            ClaimVerdict::Holds => "holds",
            ClaimVerdict::DoesNotHold => "does not hold",
            ClaimVerdict::NotDecided => "not decided",
            ClaimVerdict::NotTestable => "not testable here",
        }
    }
}

/// One claim judged.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimResult {
    /// The claim's id.
    pub id: String,
    /// The claim.
    pub text: String,
    /// Its seed line.
    pub line: u32,
    /// The verdict.
    pub verdict: ClaimVerdict,
    /// What ceiling measured (`go-pgx 9249 RPS (95% CI 8800–9700)`), or why nothing.
    pub ours: String,
    /// The run that answered it.
    pub run: Option<String>,
    /// The run of a ratio's denominator, when it came from another run (`b_plan`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_run: Option<String>,
    /// What differs or what the reader must know (a scaled run, one run, the claim's note).
    pub notes: Vec<String>,
}

/// Reads a claims file, with errors that name the file and line.
pub fn load_claims(path: &Path) -> Result<ClaimsFile, PublishedError> {
    let text = std::fs::read_to_string(path).map_err(|err| PublishedError::Read {
        path: path.to_path_buf(),
        err,
    })?;
    toml::from_str(&text).map_err(|e| PublishedError::Invalid {
        path: path.to_path_buf(),
        line: e.span().map_or(1, |s| {
            text[..s.start.min(text.len())].matches('\n').count() + 1
        }),
        msg: e.message().to_string(),
    })
}

/// A figure with its 95% interval when it has one.
#[derive(Debug, Clone, Copy)]
struct Fig {
    value: f64,
    ci: Option<(f64, f64)>,
    /// Only a lower bound is known (nothing above it failed).
    lower_bound: bool,
}

impl Fig {
    fn show(&self, stack: &str, unit: &str) -> String {
        let v = if self.lower_bound {
            format!("≥ {:.0}", self.value)
        } else if self.value.abs() >= 100.0 {
            format!("{:.0}", self.value)
        } else {
            format!("{:.2}", self.value)
        };
        match self.ci {
            Some((lo, hi)) => format!("{stack} {v}{unit} (95% CI {lo:.0}–{hi:.0})"),
            None => format!("{stack} {v}{unit}"),
        }
    }
}

fn figure(
    a: &StackAnalysis,
    metric: &str,
    point: Option<&str>,
) -> Result<(Fig, &'static str), String> {
    if metric == "ceiling" {
        return Ok(match &a.search {
            Some(s) => (
                Fig {
                    value: s.ceiling_rps,
                    ci: s.interval.as_ref().map(|i| (i.lo, i.hi)),
                    lower_bound: s.status.is_lower_bound(),
                },
                " RPS",
            ),
            None => (
                Fig {
                    value: a.ceiling.rps,
                    ci: None,
                    lower_bound: !a.ceiling.bracketed && a.ceiling.rps > 0.0,
                },
                " RPS",
            ),
        });
    }
    let point =
        point.ok_or_else(|| format!("`{metric}` needs a point (a shelf or level label)"))?;
    let at: Vec<_> = a.shelves.iter().filter(|s| s.label == point).collect();
    if at.is_empty() {
        let mut labels: Vec<&str> = a.shelves.iter().map(|s| s.label.as_str()).collect();
        labels.dedup();
        return Err(format!(
            "{} has no shelf `{point}` (it has: {})",
            a.stack,
            labels.join(", ")
        ));
    }
    // A shelf the generator could not drive says nothing of the stack's latency, errors or
    // resources there; its throughput is what the stack did at least (a faster generator gets
    // more through the same connections), so `rps` becomes a lower bound. Shelves invalid for
    // another reason (a window too short, a part of the stand that exited) are left out.
    let bound = at
        .iter()
        .filter(|s| s.verdict == Verdict::Invalid && s.is_generator_bound())
        .count();
    let shelves: Vec<_> = at
        .iter()
        .filter(|s| s.verdict != Verdict::Invalid || s.is_generator_bound())
        .copied()
        .collect();
    if shelves.is_empty() {
        return Err(format!(
            "{} at `{point}`: every repetition invalid ({}) — nothing to judge",
            a.stack,
            at[0].reasons_text()
        ));
    }
    if bound > 0 && metric != "rps" {
        return Err(format!(
            "{} at `{point}`: generator-bound in {bound} of {} repetitions — its `{metric}` describes the generator, not the stack",
            a.stack,
            shelves.len()
        ));
    }
    let unit = unit_of(metric)?;
    let vals: Vec<f64> = shelves
        .iter()
        .map(|s| shelf_value(s, metric))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("{} at `{point}`: `{metric}` was not sampled", a.stack))?;
    // repetitions of a level: a Student-t interval of their mean
    let est = Estimate::of(&vals).ok_or_else(|| format!("{} at `{point}`: no figure", a.stack))?;
    let mean = est.mean;
    let ci = est.ci95.map(|_| (est.ci_low(), est.ci_high()));
    Ok((
        match bound {
            // what the stack did at least: the mean of what the generator got through
            0 => Fig {
                value: mean,
                ci,
                lower_bound: false,
            },
            _ => Fig {
                value: mean,
                ci: None,
                lower_bound: true,
            },
        },
        unit,
    ))
}

/// The unit a metric's figures are shown in; an error for a metric no claim can name.
fn unit_of(metric: &str) -> Result<&'static str, String> {
    Ok(match metric {
        "rps" => " RPS",
        "p99_ms" | "p50_ms" | "mean_ms" => " ms",
        "errors_pct" => "%",
        "cpu_pct" => "% CPU",
        "rss_mib" => " MiB",
        other => return Err(format!("`{other}` is not a metric a claim can name")),
    })
}

/// One shelf's figure for `metric` (a metric [`unit_of`] knows); `None` when it was not sampled.
fn shelf_value(s: &ShelfResult, metric: &str) -> Option<f64> {
    match metric {
        "rps" => Some(s.achieved_rps),
        "p99_ms" => Some(s.latency.p99_ms),
        "p50_ms" => Some(s.latency.p50_ms),
        "mean_ms" => Some(s.latency.mean_ms),
        "errors_pct" => Some(s.error_rate * 100.0),
        "cpu_pct" => s.stack.as_ref().map(|w| w.cpu_pct_mean),
        "rss_mib" => s.stack.as_ref().map(|w| w.rss_mb_mean),
        _ => None,
    }
}

/// The ratio of `a`'s figure to `b`'s at `point`, paired by repetition, when the run
/// interleaved its repetitions (`plan.interleaved_rounds` > 1: repetition i of every stack ran
/// in the same round, one after the other, so the machine's drift between rounds falls on both
/// and cancels in their ratio). Every repetition must be valid on both sides, at least three
/// pairs, every figure positive; `None` otherwise (the unpaired intervals are used then). The
/// ratio is the geometric mean of the per-round ratios, its 95% interval a Student t on their
/// logarithms.
fn paired_ratio(
    run: &RunReport,
    a: &StackAnalysis,
    b: &StackAnalysis,
    metric: &str,
    point: Option<&str>,
) -> Option<PairedRatio> {
    if run.plan.interleaved_rounds < 2 || metric == "ceiling" {
        return None;
    }
    let point = point?;
    let reps = |x: &StackAnalysis| -> Option<Vec<(u32, f64)>> {
        let at: Vec<&ShelfResult> = x.shelves.iter().filter(|s| s.label == point).collect();
        if at.is_empty() || at.iter().any(|s| s.verdict == Verdict::Invalid) {
            return None;
        }
        at.iter()
            .map(|s| {
                shelf_value(s, metric)
                    .filter(|v| *v > 0.0)
                    .map(|v| (s.repetition, v))
            })
            .collect()
    };
    let (ra, rb) = (reps(a)?, reps(b)?);
    let logs: Vec<f64> = ra
        .iter()
        .filter_map(|(i, va)| {
            rb.iter()
                .find(|(j, _)| j == i)
                .map(|(_, vb)| (va / vb).ln())
        })
        .collect();
    if logs.len() < 3 {
        return None;
    }
    let est = Estimate::of(&logs)?;
    Some(PairedRatio {
        ratio: est.mean.exp(),
        lo: est.ci_low().exp(),
        hi: est.ci_high().exp(),
        pairs: est.n,
    })
}

/// A ratio of two stacks' figures paired by round ([`paired_ratio`]).
struct PairedRatio {
    ratio: f64,
    lo: f64,
    hi: f64,
    pairs: usize,
}

/// Whether `x op value` holds (with `~`: within `within` relative).
fn holds(op: &str, x: f64, value: f64, within: f64) -> Option<bool> {
    Some(match op {
        "<" => x < value,
        "<=" => x <= value,
        ">" => x > value,
        ">=" => x >= value,
        "~" => (x - value).abs() <= within * value.abs().max(f64::EPSILON),
        _ => return None,
    })
}

/// Judges `op value` on a range of the figure (its interval, or the point): holds when every
/// end holds, does not when none does, not decided otherwise. A lower bound proves only what is
/// below it.
fn judge_range(op: &str, f: &Fig, value: f64, within: f64) -> Result<ClaimVerdict, String> {
    let check =
        |x: f64| holds(op, x, value, within).ok_or_else(|| format!("`{op}` is not a comparison"));
    if f.lower_bound {
        // the true value is somewhere at or above f.value
        let at = check(f.value)?;
        return Ok(match (op, at) {
            (">" | ">=", true) => ClaimVerdict::Holds,
            ("<" | "<=", false) => ClaimVerdict::DoesNotHold,
            // already above the band, and the truth is higher still
            ("~", false) if f.value > value => ClaimVerdict::DoesNotHold,
            _ => ClaimVerdict::NotDecided,
        });
    }
    let (lo, hi) = f.ci.unwrap_or((f.value, f.value));
    if op == "~" {
        // approximately equal: the interval inside the band holds; disjoint from it does not
        let band = (value - within * value.abs(), value + within * value.abs());
        return Ok(if lo >= band.0 && hi <= band.1 {
            ClaimVerdict::Holds
        } else if hi < band.0 || lo > band.1 {
            ClaimVerdict::DoesNotHold
        } else {
            ClaimVerdict::NotDecided
        });
    }
    Ok(match (check(lo)?, check(hi)?) {
        (true, true) => ClaimVerdict::Holds,
        (false, false) => ClaimVerdict::DoesNotHold,
        _ => ClaimVerdict::NotDecided,
    })
}

/// Stack `n` of `run` (present: [`find_run`] checked every stack it needs).
fn stack_in<'r>(run: &'r RunReport, n: &str) -> &'r StackAnalysis {
    run.stacks
        .iter()
        .find(|a| a.stack == n)
        .expect("find_run checked")
}

/// The stacks a claim needs.
fn stacks_of(c: &Claim) -> Vec<String> {
    match c.kind {
        ClaimKind::Threshold => c.stack.iter().cloned().collect(),
        ClaimKind::Ratio => c.a.iter().chain(c.b.iter()).cloned().collect(),
        ClaimKind::Order => c.stacks.clone(),
    }
}

/// The latest run of the claim's `plans` holding every stack it needs: unscaled ones first.
fn run_for<'a>(c: &Claim, plans: &[&str], runs: &'a [RunReport]) -> Option<&'a RunReport> {
    let need = match c.kind {
        // a ratio across runs or points: the numerator's run needs the numerator's stack only
        ClaimKind::Ratio if c.b_plan.is_some() || c.b_point.is_some() => {
            c.a.iter().cloned().collect()
        }
        _ => stacks_of(c),
    };
    find_run(plans, &need, &c.metric, c.point.as_deref(), runs)
}

/// The claim's plan and its `also` plans, the plan first (none: not testable).
fn plans_of(c: &Claim) -> Option<Vec<&str>> {
    let plan = c.plan.as_deref()?;
    Some(
        std::iter::once(plan)
            .chain(c.also.iter().map(String::as_str))
            .collect(),
    )
}

/// The latest run of one of `plans` holding every stack of `need` (with `point` measured, when `metric`
/// is read at one): unscaled ones first; failing that, the latest run of the plan, which says
/// which points it has.
fn find_run<'a>(
    plans: &[&str],
    need: &[String],
    metric: &str,
    point: Option<&str>,
    runs: &'a [RunReport],
) -> Option<&'a RunReport> {
    // a figure at a point needs a run that measured that shelf or level (a search has none)
    let has = |a: &StackAnalysis| {
        metric == "ceiling" || point.is_none_or(|p| a.shelves.iter().any(|s| s.label == p))
    };
    let fits = |r: &RunReport, strict: bool| {
        plans.contains(&r.plan.name.as_str())
            && need.iter().all(|n| {
                r.stacks
                    .iter()
                    .any(|a| &a.stack == n && (!strict || has(a)))
            })
    };
    let latest = |scaled: bool, strict: bool| {
        runs.iter()
            .filter(|r| fits(r, strict) && r.plan.is_scaled() == scaled)
            .max_by(|x, y| x.run_id.cmp(&y.run_id))
    };
    // without a run that measured the point, the latest run of the plan says which points it has
    latest(false, true)
        .or_else(|| latest(true, true))
        .or_else(|| latest(false, false))
        .or_else(|| latest(true, false))
}

/// Judges every claim of `file` against `runs` (any number, any plans: each claim picks the
/// latest run of its own plan that has its stacks).
pub fn evaluate(file: &ClaimsFile, runs: &[RunReport]) -> Vec<ClaimResult> {
    file.claims.iter().map(|c| evaluate_one(c, runs)).collect()
}

fn evaluate_one(c: &Claim, runs: &[RunReport]) -> ClaimResult {
    let mut r = ClaimResult {
        id: c.id.clone(),
        text: c.text.clone(),
        line: c.line,
        verdict: ClaimVerdict::NotTestable,
        ours: String::new(),
        run: None,
        b_run: None,
        notes: c.note.iter().cloned().collect(),
    };
    let Some(plans) = plans_of(c) else {
        r.ours = "no plan reproduces this".into();
        return r;
    };
    let Some(run) = run_for(c, &plans, runs) else {
        r.ours = format!(
            "no run of plan `{}` with {} here",
            plans.join("` or `"),
            stacks_of(c).join(", ")
        );
        return r;
    };
    r.run = Some(run.run_id.clone());
    if run.plan.is_scaled() {
        r.notes.push(format!(
            "a SCALED run (durations ×{}): indicative only",
            run.plan.scaled_by
        ));
    }
    // a ratio whose denominator is another plan's figure, or another point's
    let cross = c.kind == ClaimKind::Ratio && (c.b_plan.is_some() || c.b_point.is_some());
    // the denominator's plan: its own when named, else the claim's (and its `also` plans)
    let b_plans = match c.b_plan.as_deref() {
        Some(b) => vec![b],
        None => plans.clone(),
    };
    let b_point = c.b_point.as_deref().or(c.point.as_deref());
    let b_run = match (cross, c.b.as_deref()) {
        (true, Some(b)) => {
            let Some(br) = find_run(&b_plans, &[b.to_string()], &c.metric, b_point, runs) else {
                r.ours = format!("no run of plan `{}` with {b} here", b_plans.join("` or `"));
                return r;
            };
            if br.run_id != run.run_id {
                r.b_run = Some(br.run_id.clone());
                if br.plan.is_scaled() {
                    r.notes.push(format!(
                        "the denominator's run is SCALED (durations ×{}): indicative only",
                        br.plan.scaled_by
                    ));
                }
            }
            Some(br)
        }
        _ => None,
    };
    let stack = |n: &str| stack_in(run, n);
    let searched = |n: &String| {
        run.stacks
            .iter()
            .chain(b_run.iter().flat_map(|br| br.stacks.iter()))
            .any(|a| &a.stack == n && a.search.is_some())
    };
    if c.metric == "ceiling" && stacks_of(c).iter().any(searched) {
        r.notes.push(
            "ceilings from `ceiling search` (where the SLO holds over the long run), not the plan's stepped profile".into(),
        );
    }
    let within = c.within.unwrap_or(0.1);
    let outcome: Result<(ClaimVerdict, String), String> = (|| match c.kind {
        ClaimKind::Threshold => {
            let name = c
                .stack
                .as_deref()
                .ok_or("a threshold claim names a `stack`")?;
            let (f, unit) = figure(stack(name), &c.metric, c.point.as_deref())?;
            let (op, value) = (
                c.op.as_deref().unwrap_or(">="),
                c.value.ok_or("no `value`")?,
            );
            Ok((judge_range(op, &f, value, within)?, f.show(name, unit)))
        }
        ClaimKind::Ratio => {
            let (an, bn) = (
                c.a.as_deref().ok_or("a ratio claim names `a`")?,
                c.b.as_deref().ok_or("a ratio claim names `b`")?,
            );
            let (fa, unit) = figure(stack(an), &c.metric, c.point.as_deref())?;
            let (fb, _) = match b_run {
                Some(br) => figure(stack_in(br, bn), &c.metric, b_point)?,
                None => figure(stack(bn), &c.metric, c.point.as_deref())?,
            };
            // across runs or points each side says where its figure comes from
            let label = |n: &str, plan: &str, point: Option<&str>| {
                if cross {
                    let at = point.map(|p| format!(", {p}")).unwrap_or_default();
                    format!("{n} ({plan}{at})")
                } else {
                    n.to_string()
                }
            };
            let (la, lb) = (
                label(an, &run.plan.name, c.point.as_deref()),
                label(bn, &b_run.unwrap_or(run).plan.name, b_point),
            );
            if fb.value <= 0.0 {
                return Err(format!("{bn}'s figure is {} — no ratio", fb.value));
            }
            // paired by round where the run interleaved its repetitions; else the two relative
            // half-widths in quadrature (a normal approximation of each)
            let paired = if cross || fa.lower_bound || fb.lower_bound {
                None
            } else if c.metric == "ceiling" {
                // two searched ceilings of one run: the search's own ratio (its probes
                // bootstrapped, paired by rounds where they share enough)
                crate::runs::searched_ratio(stack(an), stack(bn)).map(|p| PairedRatio {
                    ratio: p.ratio,
                    lo: p.lo.unwrap_or(p.ratio),
                    hi: p.hi.unwrap_or(p.ratio),
                    pairs: if p.paired { p.rounds } else { 0 },
                })
            } else {
                paired_ratio(run, stack(an), stack(bn), &c.metric, c.point.as_deref())
            };
            let (ratio, fr) = match &paired {
                Some(p) => (
                    p.ratio,
                    Fig {
                        value: p.ratio,
                        ci: Some((p.lo, p.hi)),
                        lower_bound: false,
                    },
                ),
                None => {
                    let ratio = fa.value / fb.value;
                    let rel = |f: &Fig| {
                        f.ci.map_or(0.0, |(lo, hi)| {
                            (hi - lo) / 2.0 / f.value.abs().max(f64::EPSILON)
                        })
                    };
                    let h = ratio * (rel(&fa).powi(2) + rel(&fb).powi(2)).sqrt();
                    (
                        ratio,
                        Fig {
                            value: ratio,
                            ci: (h > 0.0).then_some((ratio - h, ratio + h)),
                            lower_bound: false,
                        },
                    )
                }
            };
            let (op, value) = (
                c.op.as_deref().unwrap_or(">="),
                c.value.ok_or("no `value`")?,
            );
            let mut v = judge_range(op, &fr, value, within)?;
            // a lower bound in the numerator only proves "at least" (the true ratio is at or
            // above the measured one); in the denominator "at most"
            if (fa.lower_bound || fb.lower_bound) && v != ClaimVerdict::NotDecided {
                use ClaimVerdict::{DoesNotHold, Holds};
                let provable = match (op, v) {
                    (">" | ">=", Holds) | ("<" | "<=", DoesNotHold) => {
                        fa.lower_bound && !fb.lower_bound
                    }
                    (">" | ">=", DoesNotHold) | ("<" | "<=", Holds) => {
                        fb.lower_bound && !fa.lower_bound
                    }
                    // about equal: refuted only when the bound pushes the ratio further from
                    // the band than it already lies
                    ("~", DoesNotHold) => {
                        let (lo, hi) = fr.ci.unwrap_or((fr.value, fr.value));
                        let band = (value - within * value.abs(), value + within * value.abs());
                        (fb.lower_bound && !fa.lower_bound && hi < band.0)
                            || (fa.lower_bound && !fb.lower_bound && lo > band.1)
                    }
                    _ => false,
                };
                if !provable {
                    v = ClaimVerdict::NotDecided;
                }
            }
            Ok((
                v,
                format!(
                    "{an}/{bn} = {ratio:.2}{}{} ({}, {})",
                    fr.ci
                        .map(|(lo, hi)| format!(" (95% CI {lo:.2}–{hi:.2})"))
                        .unwrap_or_default(),
                    paired
                        .as_ref()
                        .map(|p| if p.pairs > 0 {
                            format!(", paired over {} rounds", p.pairs)
                        } else {
                            ", unpaired, as the search ranks them".to_string()
                        })
                        .unwrap_or_default(),
                    fa.show(&la, unit),
                    fb.show(&lb, unit)
                ),
            ))
        }
        ClaimKind::Order => {
            if c.stacks.len() < 2 {
                return Err("an order claim lists at least two `stacks`".into());
            }
            let figs: Vec<(String, Fig, &str)> = c
                .stacks
                .iter()
                .map(|n| {
                    figure(stack(n), &c.metric, c.point.as_deref()).map(|(f, u)| (n.clone(), f, u))
                })
                .collect::<Result<_, _>>()?;
            let mut v = ClaimVerdict::Holds;
            let mut pairs_shown = Vec::new();
            let apart = c.within.unwrap_or(SINGLE_VALUES_APART);
            for w in figs.windows(2) {
                let (hi, lo) = (&w[0].1, &w[1].1);
                // Two single values (one run each, no interval): what one run shows of a
                // difference smaller than `apart` is the run's noise, not an order.
                if hi.ci.is_none() && lo.ci.is_none() && !hi.lower_bound && !lo.lower_bound {
                    if hi.value > lo.value * (1.0 + apart) {
                        continue;
                    }
                    if lo.value > hi.value * (1.0 + apart) {
                        v = ClaimVerdict::DoesNotHold;
                        break;
                    }
                    pairs_shown.push(format!(
                        "{} and {} within {:.0}% of each other in one run: not an order",
                        w[0].0,
                        w[1].0,
                        apart * 100.0
                    ));
                    v = ClaimVerdict::NotDecided;
                    continue;
                }
                // paired by round where the run interleaved its repetitions
                if !hi.lower_bound && !lo.lower_bound {
                    if let Some(p) = paired_ratio(
                        run,
                        stack(&w[0].0),
                        stack(&w[1].0),
                        &c.metric,
                        c.point.as_deref(),
                    ) {
                        pairs_shown.push(format!(
                            "{}/{} = {:.2} (95% CI {:.2}–{:.2}, paired over {} rounds)",
                            w[0].0, w[1].0, p.ratio, p.lo, p.hi, p.pairs
                        ));
                        if p.lo > 1.0 {
                            continue;
                        }
                        if p.hi < 1.0 {
                            v = ClaimVerdict::DoesNotHold;
                            break;
                        }
                        v = ClaimVerdict::NotDecided;
                        continue;
                    }
                }
                let hi_range = hi.ci.unwrap_or((
                    hi.value,
                    if hi.lower_bound {
                        f64::INFINITY
                    } else {
                        hi.value
                    },
                ));
                let lo_range = lo.ci.unwrap_or((
                    lo.value,
                    if lo.lower_bound {
                        f64::INFINITY
                    } else {
                        lo.value
                    },
                ));
                if hi_range.0 > lo_range.1 {
                    continue; // apart, in the claimed order
                }
                if hi_range.1 < lo_range.0 {
                    v = ClaimVerdict::DoesNotHold;
                    break;
                }
                v = ClaimVerdict::NotDecided;
            }
            let mut shown: Vec<String> = figs.iter().map(|(n, f, u)| f.show(n, u)).collect();
            shown.extend(pairs_shown);
            Ok((v, shown.join("; ")))
        }
    })();
    match outcome {
        Ok((v, ours)) => {
            r.verdict = v;
            r.ours = ours;
            let interval = r.ours.contains("95% CI");
            if !interval && !run.plan.is_scaled() {
                r.notes
                    .push("one run, no interval: judged on the point value".into());
            }
        }
        Err(why) => {
            r.verdict = ClaimVerdict::NotTestable;
            r.ours = why;
        }
    }
    r
}

/// The runs a ledger is judged on, and where they came from.
#[derive(Debug, Default)]
pub struct LedgerRuns {
    /// Every run, one per run id.
    pub runs: Vec<RunReport>,
    /// How many came from a results directory (full runs).
    pub from_results: usize,
    /// How many came from the evidence directory only (digests of runs this machine lacks).
    pub from_evidence: usize,
    /// Files that could not be read, each with why (left out, never guessed around).
    pub unreadable: Vec<String>,
}

/// Reads the runs a ledger can be judged on: every `*/run.json` under `results` (this machine's
/// runs) and every `*.json` in `evidence` (the digests a ledger keeps of the runs it cites, so a
/// fresh checkout without `results/` judges the same). A run in both is taken from `results`.
/// A missing directory holds no runs.
pub fn load_ledger_runs(results: &Path, evidence: &Path) -> LedgerRuns {
    let mut out = LedgerRuns::default();
    for dir_entry in sorted_entries(results) {
        let path = dir_entry.join("run.json");
        if path.is_file() {
            if let Some(r) = read_into(&path, &mut out) {
                out.runs.push(r);
                out.from_results += 1;
            }
        }
    }
    add_evidence(evidence, &mut out);
    out
}

/// The runs of `evidence` alone: those the committed ledger was judged on (its digests), so
/// judging the claims on them gives the ledger as it stands — what [`changed_verdicts`] compares
/// a new judgement with.
pub fn load_evidence_runs(evidence: &Path) -> LedgerRuns {
    let mut out = LedgerRuns::default();
    add_evidence(evidence, &mut out);
    out
}

fn add_evidence(evidence: &Path, out: &mut LedgerRuns) {
    for path in sorted_entries(evidence) {
        if path.extension().is_some_and(|x| x == "json") {
            if let Some(r) = read_into(&path, out) {
                if !out.runs.iter().any(|x| x.run_id == r.run_id) {
                    out.runs.push(r);
                    out.from_evidence += 1;
                }
            }
        }
    }
}

/// A run read, or why not kept in `out.unreadable`.
fn read_into(path: &Path, out: &mut LedgerRuns) -> Option<RunReport> {
    match ceiling_records::read_run_json(path) {
        Ok(r) => Some(r),
        Err(e) => {
            out.unreadable.push(e.to_string());
            None
        }
    }
}

/// A claim whose verdict differs between two judgements (the ledger's evidence, and the runs at
/// hand now).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictChange {
    /// The claim's id.
    pub id: String,
    /// Its verdict before (`None`: the claim was not judged before — new in its file).
    pub from: Option<ClaimVerdict>,
    /// Its verdict now.
    pub to: ClaimVerdict,
    /// The run that answers it now.
    pub run: Option<String>,
}

/// The claims of `after` whose verdict differs from `before`'s (matched by id), in `after`'s
/// order. A claim's figure may move without its verdict moving: only verdicts count here.
pub fn changed_verdicts(before: &[ClaimResult], after: &[ClaimResult]) -> Vec<VerdictChange> {
    after
        .iter()
        .filter_map(|a| {
            let from = before.iter().find(|b| b.id == a.id).map(|b| b.verdict);
            (from != Some(a.verdict)).then(|| VerdictChange {
                id: a.id.clone(),
                from,
                to: a.verdict,
                run: a.run.clone(),
            })
        })
        .collect()
}

fn sorted_entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// What [`keep_evidence`] changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct EvidenceKept {
    /// Digests written (`<run-id>.json`).
    pub written: Vec<String>,
    /// Digests removed because no claim cites their run any more.
    pub removed: Vec<String>,
}

/// Keeps `evidence` holding a digest ([`RunReport::digest`]) of every run the judged claims cite,
/// as `<run-id>.json`. With `prune` (the whole ledger was judged, not a `--source` subset) the
/// `*.json` files of runs no claim cites are removed, so the directory holds exactly the ledger's
/// evidence.
pub fn keep_evidence(
    judged: &[(ClaimsFile, Vec<ClaimResult>)],
    runs: &[RunReport],
    evidence: &Path,
    prune: bool,
) -> std::io::Result<EvidenceKept> {
    let cited: std::collections::BTreeSet<&str> = judged
        .iter()
        .flat_map(|(_, rs)| {
            rs.iter()
                .flat_map(|r| r.run.as_deref().into_iter().chain(r.b_run.as_deref()))
        })
        .collect();
    std::fs::create_dir_all(evidence)?;
    let mut kept = EvidenceKept::default();
    for id in &cited {
        let Some(run) = runs.iter().find(|r| r.run_id == *id) else {
            continue;
        };
        let path = evidence.join(format!("{id}.json"));
        let text = run.digest().to_json() + "\n";
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text)?;
            kept.written.push(id.to_string());
        }
    }
    if prune {
        for path in sorted_entries(evidence) {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            if path.extension().is_some_and(|x| x == "json") && !cited.contains(stem) {
                std::fs::remove_file(&path)?;
                kept.removed.push(stem.to_string());
            }
        }
    }
    Ok(kept)
}
