//! A whole run of one stack: online accumulation of every shelf, then the stack's analysis and
//! its ceiling (RPS@p99≤SLO, source 000's "mean throughput of the last valid shelf").

use crate::closed::{aggregate_levels, LevelAggregate};
use crate::criteria::{LoadModel, ShelfCriteria};
use crate::layout::{shelf_specs, ShelfSpec};
use crate::search::{SearchOutcome, SearchStatus};
use crate::shelf::{ShelfAccumulator, ShelfResult};
use crate::verdict::{fmt_ms, verdict_of, Reason, Verdict};
use crate::warning::{Warning, WarningKind};
use ceiling_metrics::{ResourceSample, Role, Second};
use ceiling_plan::Plan;
use serde::{Deserialize, Serialize};

/// Accumulates a run online. Feed every [`Second`] as it arrives (in order; warm-up included)
/// with [`RunAccumulator::push_second`], resource samples with
/// [`RunAccumulator::push_resource`] as they arrive or all at once afterwards with
/// [`RunAccumulator::extend_resources`], then call [`RunAccumulator::finish`].
///
/// Memory: only the shelves whose stage is running hold histograms (two per request name plus
/// schedule lag); a finished shelf keeps its percentiles and a few numbers per kept second.
/// Resource samples (a few per second) are kept for the whole run.
pub struct RunAccumulator {
    stack: String,
    criteria: ShelfCriteria,
    shelves: Vec<ShelfAccumulator>,
    resources: Vec<ResourceSample>,
    last_t: Option<u32>,
    seconds: u64,
    warnings: Vec<Warning>,
    part_exits: Vec<PartExit>,
    /// The failed shelf (index, label) a `stop_at_failure` run stopped after.
    stopped_after: Option<(usize, String)>,
}

/// A part of the stand (PostgreSQL) that exited while a stack was measured. Stored with the
/// stack's analysis (run.json `part_exits`); the shelves it touched are invalid with
/// [`Reason::PartExited`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartExit {
    /// What exited.
    pub part: Role,
    /// The first second of the run (engine seconds, as [`Second::t`]) the exit may have affected:
    /// the part was last seen alive at the end of the second before.
    pub from_s: f64,
    /// How it ended: `signal 9`, `exit 1`.
    pub status: String,
    /// The end of its log, for the reader.
    #[serde(default)]
    pub log_tail: String,
}

/// The stack under test exited during its measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackExit {
    /// The first second (run clock) it may have affected: it was last seen alive the second before.
    pub at_s: f64,
    /// The stand's crash report: how it ended (first line), then the end of its log.
    pub report: String,
}

impl PartExit {
    /// One sentence: `PostgreSQL exited (signal 9) at t≈31 s`.
    pub fn describe(&self) -> String {
        format!(
            "{} exited{} at t≈{} s",
            self.part.title(),
            if self.status.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.status)
            },
            crate::criteria::trim_float(self.from_s)
        )
    }

    /// True when the exit may have touched `shelf`: it was reached, its stage had not ended
    /// before the exit, and its kept window either reaches past the exit or was not complete.
    /// A shelf whose kept window was complete and clean before the exit keeps its verdict.
    pub fn touches(&self, shelf: &ShelfResult) -> bool {
        let w = &shelf.window;
        let reached = w.seen_s > 0.0;
        let stage_after = w.stage_end_s.is_none_or(|e| e > self.from_s + 1e-9);
        let kept_after = w.kept_end_s.is_none_or(|e| e > self.from_s + 1e-9);
        let kept_short = w
            .planned_kept_s
            .is_some_and(|p| w.kept_s + 1e-9 < p.floor());
        reached && stage_after && (kept_after || kept_short)
    }
}

impl RunAccumulator {
    /// The shelves of `plan` (one pass over its stages), for `stack`.
    pub fn new(plan: &Plan, stack: &str) -> Self {
        Self::with_passes(plan, stack, 1)
    }

    /// For generators that run closed-model repetitions as `passes` consecutive passes over the
    /// measured stages within one run (stage indices keep counting: `pass · n + i`).
    pub fn with_passes(plan: &Plan, stack: &str, passes: u32) -> Self {
        let names = plan.requests.iter().map(|r| r.name.clone()).collect();
        Self::from_specs(
            stack,
            ShelfCriteria::from_plan(plan),
            names,
            shelf_specs(plan, passes),
        )
    }

    /// For one repetition run on its own (a separate generator run per repetition): every shelf is
    /// tagged with `repetition`. Combine the results with [`StackAnalysis::combine`].
    pub fn for_repetition(plan: &Plan, stack: &str, repetition: u32) -> Self {
        Self::for_round(plan, stack, repetition, 0.0)
    }

    /// For one round of a run whose repetitions are separate starts of the stack, written on one
    /// clock per stack (`ceiling run` with stacks taking turns): as
    /// [`RunAccumulator::for_repetition`], with the shelves' planned times moved `offset_s`
    /// seconds on. Feed it seconds whose `t` is moved by the same offset.
    pub fn for_round(plan: &Plan, stack: &str, repetition: u32, offset_s: f64) -> Self {
        let mut a = Self::new(plan, stack);
        for s in &mut a.shelves {
            let mut spec = s.spec().clone();
            spec.repetition = repetition;
            spec.start_s = spec.start_s.map(|t| t + offset_s);
            spec.end_s = spec.end_s.map(|t| t + offset_s);
            *s = ShelfAccumulator::new(
                spec,
                a.criteria.clone(),
                plan.requests.iter().map(|r| r.name.clone()).collect(),
            );
        }
        a
    }

    /// From explicit shelves (e.g. probes of a capacity search).
    pub fn from_specs(
        stack: &str,
        criteria: ShelfCriteria,
        request_names: Vec<String>,
        specs: Vec<ShelfSpec>,
    ) -> Self {
        let shelves = specs
            .into_iter()
            .map(|s| ShelfAccumulator::new(s, criteria.clone(), request_names.clone()))
            .collect();
        RunAccumulator {
            stack: stack.to_string(),
            criteria,
            shelves,
            resources: Vec::new(),
            last_t: None,
            seconds: 0,
            warnings: Vec::new(),
            part_exits: Vec::new(),
            stopped_after: None,
        }
    }

    /// Records that a part of the stand the stack depends on (PostgreSQL) exited. Every shelf it
    /// touched ([`PartExit::touches`]) becomes invalid with [`Reason::PartExited`] — not failed:
    /// the stack cannot answer without its database. Not for the stack under test itself (its
    /// crash is its own failure and is reported as a warning).
    pub fn stand_part_exited(&mut self, exit: PartExit) {
        self.part_exits.push(exit);
    }

    /// `[load] stop_at_failure`: the run stopped after shelf `shelf` (its index, `label`) failed;
    /// every later shelf is void ([`Reason::StoppedAfterFailure`]), whatever of it ran while
    /// the stop took effect.
    pub fn stopped_after(&mut self, shelf: usize, label: &str) {
        self.stopped_after = Some((shelf, label.to_string()));
    }

    /// Marks the shelves the recorded exits touched, and those after a stop at failure.
    fn apply_exits(&self, shelves: &mut [ShelfResult]) {
        if let Some((after, label)) = &self.stopped_after {
            for s in shelves.iter_mut().filter(|s| s.shelf > *after) {
                s.reasons.push(Reason::StoppedAfterFailure {
                    after: label.clone(),
                });
                s.verdict = verdict_of(&s.reasons);
            }
        }
        for s in shelves {
            for e in &self.part_exits {
                if e.touches(s) {
                    s.reasons.push(Reason::PartExited {
                        part: e.part,
                        from_s: e.from_s,
                        status: e.status.clone(),
                    });
                    s.verdict = verdict_of(&s.reasons);
                }
            }
        }
    }

    /// The shelves being accumulated, in order.
    pub fn specs(&self) -> impl Iterator<Item = &ShelfSpec> {
        self.shelves.iter().map(ShelfAccumulator::spec)
    }

    /// The criteria shelves are judged by.
    pub fn criteria(&self) -> &ShelfCriteria {
        &self.criteria
    }

    /// Adds one second. Returns the indices of shelves this second completed (their results are
    /// available from [`RunAccumulator::completed`] right away, e.g. for live progress).
    pub fn push_second(&mut self, s: &Second) -> Vec<usize> {
        if let Some(l) = self.last_t {
            if s.t <= l
                && !self
                    .warnings
                    .iter()
                    .any(|w| w.kind == WarningKind::SecondsOutOfOrder)
            {
                self.warnings.push(Warning::new(
                    WarningKind::SecondsOutOfOrder,
                    format!(
                        "seconds out of order (t={} after t={l}); the analysis assumes order",
                        s.t
                    ),
                ));
            }
        }
        self.last_t = Some(s.t);
        self.seconds += 1;
        let mut done = Vec::new();
        for (i, sh) in self.shelves.iter_mut().enumerate() {
            if sh.push(s) {
                done.push(i);
            }
        }
        done
    }

    /// How many shelves currently hold histograms (for sequential stages: at most one).
    pub fn live_shelves(&self) -> usize {
        self.shelves.iter().filter(|s| s.holds_histograms()).count()
    }

    /// Adds one resource sample.
    pub fn push_resource(&mut self, r: ResourceSample) {
        self.resources.push(r);
    }

    /// Adds resource samples collected separately.
    pub fn extend_resources(&mut self, rs: impl IntoIterator<Item = ResourceSample>) {
        self.resources.extend(rs);
    }

    /// Results of the shelves finished so far (judged with the resource samples seen so far).
    pub fn completed(&self) -> Vec<ShelfResult> {
        let mut v: Vec<ShelfResult> = self
            .shelves
            .iter()
            .filter_map(|s| s.result(&self.resources))
            .collect();
        self.apply_exits(&mut v);
        v
    }

    /// Ends the run: open shelves are closed (their trimmed tails dropped), every shelf judged,
    /// and the stack's ceiling computed.
    pub fn finish(mut self) -> StackAnalysis {
        for s in &mut self.shelves {
            s.finish();
        }
        let mut shelves: Vec<ShelfResult> = self
            .shelves
            .iter()
            .filter_map(|s| s.result(&self.resources))
            .collect();
        self.apply_exits(&mut shelves);
        let mut a = StackAnalysis::from_shelves(&self.stack, self.criteria, shelves);
        for e in &self.part_exits {
            let hit: Vec<&str> = a
                .shelves
                .iter()
                .filter(|s| {
                    s.reasons
                        .iter()
                        .any(|r| matches!(r, Reason::PartExited { part, .. } if *part == e.part))
                })
                .map(|s| s.label.as_str())
                .collect();
            a.warnings.insert(
                0,
                Warning::new(
                    WarningKind::PartExited,
                    format!(
                        "{} during the measurement; {} — the measurement of this stack stopped there",
                        e.describe(),
                        if hit.is_empty() {
                            "no shelf was running".to_string()
                        } else {
                            format!("invalid, not failed: {}", hit.join(", "))
                        }
                    ),
                ),
            );
        }
        a.part_exits = std::mem::take(&mut self.part_exits);
        if self.seconds == 0 {
            a.warnings.insert(
                0,
                Warning::new(WarningKind::NoSeconds, "no seconds were recorded"),
            );
        }
        if !self.resources.iter().any(|r| r.who == Role::Stack) && self.seconds > 0 {
            a.warnings.push(Warning::new(
                WarningKind::NoResourceSamples,
                "no resource samples of the stack: CPU and RAM are unknown",
            ));
        }
        let mut w = self.warnings;
        w.append(&mut a.warnings);
        a.warnings = w;
        a
    }
}

/// RPS@p99≤SLO for one stack and what it costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// Mean achieved throughput of the last valid shelf (closed model: last valid level, mean over
    /// its error-free repetitions, or all of them when every one had errors); 0 when no shelf passed.
    pub rps: f64,
    /// Whether a valid shelf exists.
    pub found: bool,
    /// Index of that shelf (open model) or level (closed model).
    pub index: Option<usize>,
    /// Its label (`hold 3000`, `c=50`).
    pub label: Option<String>,
    /// Its offered rate (open model), RPS.
    pub offered_rps: Option<f64>,
    /// Latency at the ceiling, ms.
    pub p50_ms: Option<f64>,
    /// p95 at the ceiling, ms.
    pub p95_ms: Option<f64>,
    /// p99 at the ceiling, ms.
    pub p99_ms: Option<f64>,
    /// Error rate at the ceiling.
    pub error_rate: Option<f64>,
    /// Stack CPU over the ceiling's window, % of one core.
    pub stack_cpu_pct: Option<f64>,
    /// Stack RSS over the window, MiB.
    pub stack_rss_mb: Option<f64>,
    /// PostgreSQL CPU over the window, % of one core.
    pub postgres_cpu_pct: Option<f64>,
    /// PostgreSQL RSS over the window, MiB.
    pub postgres_rss_mb: Option<f64>,
    /// Stack CPU µs per request at the ceiling.
    pub cpu_us_per_request: Option<f64>,
    /// Recommended working load as a fraction of the ceiling (the plan's `working_load`).
    pub working_load_fraction: f64,
    /// `working_load_fraction × rps`.
    pub working_load_rps: f64,
    /// True when a shelf after the ceiling (or, with no ceiling, any shelf) failed: the ceiling
    /// is bracketed from above. False means the stack may sustain more than the plan offered.
    pub bracketed: bool,
    /// First failed shelf/level after the ceiling.
    pub failed_after: Option<usize>,
    /// Invalid shelves/levels after the ceiling (e.g. generator-bound).
    pub invalid_after: Vec<usize>,
    /// Failed shelves/levels *before* the ceiling (a non-monotonic run: worth a second look).
    pub failed_before: Vec<usize>,
    /// One sentence: how the number came about.
    pub summary: String,
}

/// Everything the analysis says about one stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackAnalysis {
    /// Stack name.
    pub stack: String,
    /// Load model.
    pub model: LoadModel,
    /// `RPS@p99≤350ms`.
    pub metric: String,
    /// The rules applied.
    pub criteria: ShelfCriteria,
    /// Every shelf in run order (closed model: every level × repetition).
    pub shelves: Vec<ShelfResult>,
    /// Closed model: levels aggregated over repetitions (empty for the open model).
    #[serde(default)]
    pub levels: Vec<LevelAggregate>,
    /// The ceiling.
    pub ceiling: Ceiling,
    /// Capacity search results, when the stack was searched rather than stepped.
    #[serde(default)]
    pub search: Option<SearchOutcome>,
    /// Parts of the stand that exited while this stack was measured (run.json schema ≥ 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub part_exits: Vec<PartExit>,
    /// Money conservation in the bank tables after this stack's run, when the run touched them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub money: Option<ceiling_metrics::MoneyCheck>,
    /// The stack's own exit during its measurement, as the stand saw it; the attribution puts it
    /// first on the shelves it cut short ([`crate::stack_exited`]), also when `ceiling report`
    /// recomputes the attribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_exit: Option<StackExit>,
    /// What a settling warm-up (`[settle]`) did before the measured stages, when the plan had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settling: Option<crate::Settling>,
    /// The stack's deployable size and its memory at the end of the measurement, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<ceiling_metrics::Footprint>,
    /// Things a reader should know.
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

/// The warnings [`StackAnalysis::from_shelves`] derives from the shelves, levels and ceiling (the
/// kinds for which [`WarningKind::is_derived`] holds).
fn derived_warnings(
    shelves: &[ShelfResult],
    levels: &[LevelAggregate],
    ceiling: &Ceiling,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if ceiling.found && !ceiling.bracketed {
        warnings.push(Warning::new(WarningKind::NotBracketed, format!(
            "ceiling not bracketed: no shelf after `{}` failed, so the stack may sustain more than the plan offered",
            ceiling.label.as_deref().unwrap_or("?")
        )));
    }
    if !ceiling.failed_before.is_empty() {
        warnings.push(Warning::new(
            WarningKind::NonMonotonic,
            "non-monotonic: a shelf failed before the last valid one",
        ));
    }
    let gb: Vec<String> = shelves
        .iter()
        .filter(|s| s.is_generator_bound())
        .map(|s| s.label.clone())
        .collect();
    if !gb.is_empty() {
        warnings.push(Warning::new(WarningKind::GeneratorBound, format!(
            "generator-bound (invalid, not failed): {} — give the generator more CPU/connections or lower the rate",
            gb.join(", ")
        )));
    }
    for l in levels {
        if !l.with_errors.is_empty() {
            warnings.push(Warning::new(WarningKind::RepetitionErrors, format!(
                "{}: repetition{} {} had errors (source 003 kept only error-free runs; both aggregates reported, the error-free one first)",
                l.label,
                if l.with_errors.len() == 1 { "" } else { "s" },
                l.with_errors.iter().map(|r| format!("#{}", r + 1)).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    for b in crate::closed::little_breaks(shelves) {
        warnings.push(Warning::new(WarningKind::LittlesLaw, b.describe()));
    }
    for d in crate::closed::drift_of_shelves(shelves) {
        warnings.push(Warning::new(WarningKind::RepetitionDrift, format!(
            "repetitions drift: #{} ran at {:.0}% of the repetitions' median throughput ({} {} of {} levels) — usually a warm-up too short for the JIT, caches and pools, or the machine changing under the run; its figures are inside every level's mean and interval: lengthen the warm-up",
            d.repetition + 1,
            d.ratio * 100.0,
            if d.ratio < 1.0 { "slower at" } else { "faster at" },
            d.agreeing,
            d.levels
        )));
    }
    warnings
}

/// The warning a search's outcome carries when it is not narrowed (none when it is).
fn search_warning(outcome: &SearchOutcome) -> Option<Warning> {
    match outcome.status {
        SearchStatus::Narrowed => None,
        SearchStatus::Bracketed => Some(Warning::new(
            WarningKind::SearchNotNarrowed,
            match &outcome.thin_ends {
                Some(t) => format!(
                    "search not narrowed: a cliff's bracket within ±{:.0}% whose ends were not replicated — {} ({})",
                    outcome.tolerance * 100.0,
                    t.describe(),
                    outcome.stop
                ),
                None => format!(
                    "search not narrowed: the 95% interval is wider than ±{:.0}% ({})",
                    outcome.tolerance * 100.0,
                    outcome.stop
                ),
            },
        )),
        st if st.is_lower_bound() => Some(Warning::new(
            WarningKind::SearchNotBracketed,
            format!(
                "search not bracketed: {:.0} RPS is a lower bound ({})",
                outcome.ceiling_rps, outcome.stop
            ),
        )),
        _ => Some(Warning::new(
            WarningKind::SearchNotBracketed,
            match outcome.upper_bound_rps {
                Some(u) => format!(
                    "search found no ceiling: no rate passed, the ceiling is below {u:.0} RPS ({})",
                    outcome.describe()
                ),
                None => format!("search found no ceiling: {}", outcome.stop),
            },
        )),
    }
}

struct Candidate {
    index: usize,
    label: String,
    verdict: Verdict,
}

impl StackAnalysis {
    /// Recomputes the warnings derived from the shelves (a stored run read by a newer ceiling gets
    /// the rules it did not have), keeping every other warning in place. A search keeps its fit
    /// and its figures; what its probes say beyond the fit (the bound when no rate passed, the
    /// shorter probes' passes and failures) and its warning are said again.
    pub fn refresh_derived_warnings(&mut self) {
        if let Some(o) = &mut self.search {
            // a search's own account: what the probes say beyond the fit, said again
            o.fill_bounds();
            self.ceiling.summary = format!("capacity search: {}", o.describe());
            let w = search_warning(o);
            self.warnings.retain(|w| {
                !matches!(
                    w.kind,
                    WarningKind::SearchNotBracketed | WarningKind::SearchNotNarrowed
                )
            });
            self.warnings.extend(w);
            return;
        }
        self.warnings.retain(|w| !w.kind.is_derived());
        let fresh = derived_warnings(&self.shelves, &self.levels, &self.ceiling);
        self.warnings.splice(0..0, fresh);
    }

    /// Builds the analysis from judged shelves: closed-model levels, the ceiling, warnings.
    pub fn from_shelves(stack: &str, criteria: ShelfCriteria, shelves: Vec<ShelfResult>) -> Self {
        let levels = if criteria.model == LoadModel::Closed {
            aggregate_levels(&shelves)
        } else {
            Vec::new()
        };
        let ceiling = ceiling_of(&criteria, &shelves, &levels);
        let warnings = derived_warnings(&shelves, &levels, &ceiling);
        StackAnalysis {
            stack: stack.to_string(),
            model: criteria.model,
            metric: criteria.metric_name(),
            criteria,
            shelves,
            levels,
            ceiling,
            search: None,
            part_exits: Vec::new(),
            money: None,
            stack_exit: None,
            settling: None,
            footprint: None,
            warnings,
        }
    }

    /// Joins analyses of separately run repetitions of the same plan and stack: shelves are
    /// concatenated (renumbered) and levels, ceiling and warnings recomputed. Of what each part
    /// holds once, the result keeps the first warm-up's settling and the first exit of the
    /// stack, the last part's footprint (the stack at the end of its last run) and the first
    /// bank audit that found money not conserved, else the last one.
    pub fn combine(parts: Vec<StackAnalysis>) -> Option<StackAnalysis> {
        let first = parts.first()?;
        let stack = first.stack.clone();
        let criteria = first.criteria.clone();
        let settling = first.settling.clone();
        let footprint = parts.iter().rev().find_map(|p| p.footprint.clone());
        let stack_exit = parts.iter().find_map(|p| p.stack_exit.clone());
        let money = parts
            .iter()
            .filter_map(|p| p.money.clone())
            .find(|m| !m.conserved())
            .or_else(|| parts.iter().rev().find_map(|p| p.money.clone()));
        let mut warnings: Vec<Warning> = Vec::new();
        let mut shelves = Vec::new();
        let mut part_exits = Vec::new();
        for p in parts {
            part_exits.extend(p.part_exits);
            for w in p.warnings {
                // Warnings `from_shelves` derives are recomputed below; keep the others once.
                if !w.kind.is_derived() && !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
            for mut s in p.shelves {
                s.shelf = shelves.len();
                shelves.push(s);
            }
        }
        let mut a = StackAnalysis::from_shelves(&stack, criteria, shelves);
        warnings.append(&mut a.warnings);
        a.warnings = warnings;
        a.part_exits = part_exits;
        a.settling = settling;
        a.footprint = footprint;
        a.stack_exit = stack_exit;
        a.money = money;
        Some(a)
    }

    /// The analysis of a capacity search: the confirming shelves become the shelves, the ceiling
    /// is the search's estimate (or its lower bound, said so in the summary), with latency, CPU
    /// and memory averaged over the valid confirming shelves. Bracketed when the probes bracket
    /// the crossing (an interval exists).
    pub fn from_search(stack: &str, criteria: ShelfCriteria, outcome: SearchOutcome) -> Self {
        let mut shelves: Vec<ShelfResult> = Vec::new();
        for c in &outcome.confirms {
            let mut c = c.clone();
            c.shelf = shelves.len();
            shelves.push(c);
        }
        let mut a = StackAnalysis::from_shelves(stack, criteria, shelves);
        a.warnings.retain(|w| {
            !matches!(
                w.kind,
                WarningKind::NotBracketed | WarningKind::NonMonotonic | WarningKind::GeneratorBound
            )
        });
        let valid: Vec<&ShelfResult> = a.shelves.iter().filter(|s| s.is_valid()).collect();
        let avg = |f: &dyn Fn(&ShelfResult) -> Option<f64>| {
            let v: Vec<f64> = valid.iter().filter_map(|s| f(s)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let c = &mut a.ceiling;
        c.rps = outcome.ceiling_rps;
        c.found = c.rps > 0.0;
        c.index = None;
        c.label = Some("search".into());
        c.offered_rps = avg(&|s| Some(s.offered_rps));
        c.p50_ms = avg(&|s| Some(s.latency.p50_ms));
        c.p95_ms = avg(&|s| Some(s.latency.p95_ms));
        c.p99_ms = avg(&|s| Some(s.latency.p99_ms));
        c.error_rate = avg(&|s| Some(s.error_rate));
        c.stack_cpu_pct = avg(&|s| s.stack.as_ref().map(|w| w.cpu_pct_mean));
        c.stack_rss_mb = avg(&|s| s.stack.as_ref().map(|w| w.rss_mb_mean));
        c.postgres_cpu_pct = avg(&|s| s.postgres.as_ref().map(|w| w.cpu_pct_mean));
        c.postgres_rss_mb = avg(&|s| s.postgres.as_ref().map(|w| w.rss_mb_mean));
        c.cpu_us_per_request = avg(&|s| s.cpu_us_per_request);
        c.working_load_rps = c.rps * c.working_load_fraction;
        c.bracketed = outcome.interval.is_some();
        c.failed_after = None;
        c.invalid_after = Vec::new();
        c.failed_before = Vec::new();
        c.summary = format!("capacity search: {}", outcome.describe());
        a.warnings.extend(search_warning(&outcome));
        a.search = Some(outcome);
        a
    }

    /// Says, as a [`WarningKind::BoxBound`] warning, when this stack's search ceiling is the
    /// box's rather than the stack's ([`crate::box_bound`]): the parts shared the machine
    /// (`placement`) and used nearly all of it where the stack failed, the stack below its CPU
    /// quota `stack_quota` (cores); for a stepped run, the shelf that failed after the ceiling.
    /// Does nothing when the figures do not say.
    pub fn note_placement(
        &mut self,
        placement: &ceiling_metrics::Placement,
        stack_quota: Option<f64>,
    ) {
        let cpus = placement.cpus.len();
        let us = self.ceiling.cpu_us_per_request;
        let said = match &self.search {
            Some(o) => crate::box_bound(
                &o.probes,
                o.ceiling_rps,
                cpus,
                placement.shared,
                stack_quota,
                us,
            ),
            // a stepped run: the shelf that failed after the ceiling
            None => self
                .ceiling
                .failed_after
                .and_then(|i| self.shelves.iter().find(|s| s.shelf == i))
                .and_then(|s| crate::box_bound_shelf(s, cpus, placement.shared, stack_quota, us)),
        };
        self.warnings.retain(|w| w.kind != WarningKind::BoxBound);
        if let Some(message) = said {
            self.warnings
                .push(Warning::new(WarningKind::BoxBound, message));
        }
    }

    /// The shelf the ceiling came from (open model).
    pub fn ceiling_shelf(&self) -> Option<&ShelfResult> {
        match self.model {
            LoadModel::Open => self
                .ceiling
                .index
                .and_then(|i| self.shelves.iter().find(|s| s.shelf == i)),
            LoadModel::Closed => None,
        }
    }
}

fn ceiling_of(c: &ShelfCriteria, shelves: &[ShelfResult], levels: &[LevelAggregate]) -> Ceiling {
    let cands: Vec<Candidate> = match c.model {
        LoadModel::Open => shelves
            .iter()
            .map(|s| Candidate {
                index: s.shelf,
                label: s.label.clone(),
                verdict: s.verdict,
            })
            .collect(),
        LoadModel::Closed => levels
            .iter()
            .map(|l| Candidate {
                index: l.level,
                label: l.label.clone(),
                verdict: l.verdict,
            })
            .collect(),
    };
    let last = cands.iter().rposition(|x| x.verdict == Verdict::Valid);
    let mut ce = Ceiling {
        rps: 0.0,
        found: false,
        index: None,
        label: None,
        offered_rps: None,
        p50_ms: None,
        p95_ms: None,
        p99_ms: None,
        error_rate: None,
        stack_cpu_pct: None,
        stack_rss_mb: None,
        postgres_cpu_pct: None,
        postgres_rss_mb: None,
        cpu_us_per_request: None,
        working_load_fraction: c.working_load,
        working_load_rps: 0.0,
        bracketed: false,
        failed_after: None,
        invalid_after: Vec::new(),
        failed_before: Vec::new(),
        summary: String::new(),
    };
    let Some(pos) = last else {
        ce.bracketed = cands.iter().any(|x| x.verdict == Verdict::Failed);
        ce.failed_after = cands
            .iter()
            .find(|x| x.verdict == Verdict::Failed)
            .map(|x| x.index);
        ce.invalid_after = cands
            .iter()
            .filter(|x| x.verdict == Verdict::Invalid)
            .map(|x| x.index)
            .collect();
        ce.summary = match cands.iter().find(|x| x.verdict == Verdict::Failed) {
            Some(f) => {
                let why = shelves
                    .iter()
                    .find(|s| {
                        (c.model == LoadModel::Open && s.shelf == f.index)
                            || (c.model == LoadModel::Closed
                                && s.level == f.index
                                && s.verdict == Verdict::Failed)
                    })
                    .map(|s| s.reasons_text())
                    .unwrap_or_default();
                format!(
                    "0: no shelf passed; the first failed shelf was `{}` ({why})",
                    f.label
                )
            }
            None if cands.is_empty() => "0: the plan has no shelves".into(),
            None => "0: no shelf could be judged (all invalid)".into(),
        };
        return ce;
    };
    let cand = &cands[pos];
    ce.found = true;
    ce.index = Some(cand.index);
    ce.label = Some(cand.label.clone());
    ce.failed_after = cands[pos + 1..]
        .iter()
        .find(|x| x.verdict == Verdict::Failed)
        .map(|x| x.index);
    ce.bracketed = ce.failed_after.is_some();
    ce.invalid_after = cands[pos + 1..]
        .iter()
        .filter(|x| x.verdict == Verdict::Invalid)
        .map(|x| x.index)
        .collect();
    ce.failed_before = cands[..pos]
        .iter()
        .filter(|x| x.verdict == Verdict::Failed)
        .map(|x| x.index)
        .collect();
    match c.model {
        LoadModel::Open => {
            let s = shelves
                .iter()
                .find(|s| s.shelf == cand.index)
                .expect("candidate from shelves");
            ce.rps = s.achieved_rps;
            ce.offered_rps = Some(s.offered_rps);
            ce.p50_ms = Some(s.latency.p50_ms);
            ce.p95_ms = Some(s.latency.p95_ms);
            ce.p99_ms = Some(s.latency.p99_ms);
            ce.error_rate = Some(s.error_rate);
            ce.stack_cpu_pct = s.stack.as_ref().map(|w| w.cpu_pct_mean);
            ce.stack_rss_mb = s.stack.as_ref().map(|w| w.rss_mb_mean);
            ce.postgres_cpu_pct = s.postgres.as_ref().map(|w| w.cpu_pct_mean);
            ce.postgres_rss_mb = s.postgres.as_ref().map(|w| w.rss_mb_mean);
            ce.cpu_us_per_request = s.cpu_us_per_request;
        }
        LoadModel::Closed => {
            let l = levels
                .iter()
                .find(|l| l.level == cand.index)
                .expect("candidate from levels");
            if let Some(a) = l.headline() {
                ce.rps = a.throughput_rps.mean;
                ce.p50_ms = Some(a.p50_ms.mean);
                ce.p95_ms = Some(a.p95_ms.mean);
                ce.p99_ms = Some(a.p99_ms.mean);
                ce.error_rate = Some(a.error_rate.mean);
                ce.stack_cpu_pct = a.stack_cpu_pct.as_ref().map(|e| e.mean);
                ce.stack_rss_mb = a.stack_rss_mb.as_ref().map(|e| e.mean);
                ce.postgres_cpu_pct = a.postgres_cpu_pct.as_ref().map(|e| e.mean);
                ce.cpu_us_per_request = a.cpu_us_per_request.as_ref().map(|e| e.mean);
            }
            let pg_rss: Vec<f64> = shelves
                .iter()
                .filter(|s| s.level == l.level)
                .filter_map(|s| s.postgres.as_ref().map(|w| w.rss_mb_mean))
                .collect();
            ce.postgres_rss_mb =
                (!pg_rss.is_empty()).then(|| pg_rss.iter().sum::<f64>() / pg_rss.len() as f64);
        }
    }
    ce.working_load_rps = ce.rps * c.working_load;
    ce.summary = format!(
        "{:.0} RPS: mean throughput of `{}`, the last valid {} (p99 {} ms){}",
        ce.rps,
        cand.label,
        if c.model == LoadModel::Open {
            "shelf"
        } else {
            "level"
        },
        ce.p99_ms.map(fmt_ms).unwrap_or_else(|| "–".into()),
        match (ce.failed_after, ce.invalid_after.is_empty()) {
            (Some(i), _) => format!(
                "; `{}` failed",
                cands
                    .iter()
                    .find(|x| x.index == i)
                    .map(|x| x.label.as_str())
                    .unwrap_or("?")
            ),
            (None, false) => "; later shelves invalid, not failed: not bracketed".into(),
            (None, true) if pos + 1 == cands.len() => format!(
                "; it was the last {}: not bracketed",
                if c.model == LoadModel::Open {
                    "shelf"
                } else {
                    "level"
                }
            ),
            (None, true) => String::new(),
        }
    );
    ce
}
