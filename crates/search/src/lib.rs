//! `ceiling search`: find RPS@p99≤SLO automatically, as an estimate with a 95% interval.
//!
//! Every probe is a short open-model shelf judged by the plan's own rules, and a measurement of
//! the SLO **margin** at its rate (`ceiling_analyze::margin_terms`). The loop:
//!
//! 1. **Baseline.** A short check at a low rate records the service's unloaded latency.
//! 2. **Bracket.** Probes grow the rate (×`growth`) until one fails (or shrink it until one
//!    passes).
//! 3. **Narrow.** A bracket wider than ±`tolerance` is narrowed at the pooled estimate, kept
//!    inside its middle 60% (a safeguarded regula falsi: fast on a smooth knee, never slower than
//!    bisection on a cliff).
//! 4. **Pool.** Probes at one rate are one longer window (`ceiling_analyze::pooled_margin`); near
//!    the crossing a local model (`ceiling_analyze::PooledFit`) gives the rate where the SLO holds
//!    over the long run, its 95% interval and the transition zone of single probes. Probes go
//!    alternately just below and just above the estimate, on a grid of `tolerance`/2 so they
//!    pool; a cliff (no local model) replicates the bracket's ends until each has `repeat`
//!    probes. The loop stops when the interval's half-width is within `tolerance` of the
//!    estimate, or the budget ends — the outcome says which. Disagreeing replicates are the
//!    knee's transition zone, not noise to be averaged away.
//! 5. **Lengthen, when asked.** With `search.max_probe` above `search.probe`, probes are
//!    lengthened ×3 when replicates near the crossing differ by more than ~×1.65 (σ of
//!    `ln(margin)` > [`LENGTHEN_SIGMA`] over at least [`LENGTHEN_MIN_DF`] degrees of freedom) and
//!    the interval is still wide; longer probes pool with the weight of their length.
//! 6. **Confirm.** When `search.confirm` is set, a full-length shelf at the interval's lower end;
//!    it pools with the probes, and one that fails revises the result below its rate.
//!
//! **Disturbed probes.** A failure the attribution lays on the environment (a host stall, the
//! generator, PostgreSQL unreachable) is kept as disturbed, left out of the fit and re-run after
//! recovery, at most [`MAX_DISTURBED`] times.
//!
//! **Recovery.** After a probe that failed or was invalid, no probe runs until low-rate checks
//! see baseline latency again (bounded by `search.recovery_max`, each wait recorded): a probe never
//! inherits another probe's backlog. A service that never recovers ends the search with what was
//! established. **Invalid probes** are retried after recovery, with one more generator thread when
//! the generator was the limit — but with the same threads when it was starved of CPU rather than
//! busy (late while using less than [`STARVED_GENERATOR_CPU`] per thread: another thread would
//! wait the same); a rate the generator cannot drive caps the search, and what the service held
//! below it is reported as a lower bound — never as 0.
#![forbid(unsafe_code)]

use ceiling_analyze::{
    capacity_noise, check_plan, confirm_plan, confirm_rate, observations, pooled_interval,
    probe_plan, samples, Baseline, Bracket, IntervalMethod, PooledFit, ProbeKind, ProbeVerdict,
    Recovery, SearchOutcome, ShelfCriteria, StackAnalysis, StopReason, ThinEnds, Verdict,
};
use ceiling_plan::Plan;
use std::time::{Duration, Instant};

/// What to run: a label for files and progress, the generator threads, and the purpose.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSpec {
    /// `probe-1200-3`, `check-7`, `confirm-950-1`.
    pub label: String,
    /// Generator threads for this run.
    pub threads: usize,
    /// Probe, confirming shelf or check.
    pub kind: ProbeKind,
}

/// Runs one shelf (a one-stage plan) and returns its analysis. Implemented by the CLI (with the
/// stand's sampling and files) and by [`LoadRunner`] (plain engine, for `--url` and tests).
pub trait ProbeRunner {
    /// Runs `plan` (one hold stage) as `spec` says.
    fn run(&mut self, plan: &Plan, spec: &ProbeSpec) -> Result<StackAnalysis, String>;
    /// True once the user asked to stop.
    fn stopped(&self) -> bool {
        false
    }
    /// Sleeps for `d` (a simulated runner advances its clock instead).
    fn idle(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
    /// Seconds since the runner was made (a simulated runner returns its virtual clock).
    fn now_s(&self) -> f64;
}

/// A probe runner on the bare load engine.
pub struct LoadRunner {
    /// Target base URL.
    pub url: String,
    /// Directory for `@data/` sources.
    pub data_dir: Option<std::path::PathBuf>,
    /// Stop flag (Ctrl-C).
    pub stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Allow a non-loopback target.
    pub allow_remote: bool,
    /// When the runner was made.
    pub t0: Instant,
}

impl LoadRunner {
    /// A runner for `url` (loopback unless `allow_remote`).
    pub fn new(url: impl Into<String>) -> LoadRunner {
        LoadRunner {
            url: url.into(),
            data_dir: None,
            stop: Default::default(),
            allow_remote: false,
            t0: Instant::now(),
        }
    }
}

impl ProbeRunner for LoadRunner {
    fn run(&mut self, plan: &Plan, spec: &ProbeSpec) -> Result<StackAnalysis, String> {
        let target =
            ceiling_load::parse_target(&self.url, self.allow_remote).map_err(|e| e.to_string())?;
        let mut cfg = ceiling_load::LoadConfig::from_plan(plan, target, self.data_dir.as_deref())
            .map_err(|e| e.to_string())?;
        cfg.threads = spec.threads.max(1);
        cfg.stop = self.stop.clone();
        let mut acc = ceiling_analyze::RunAccumulator::new(plan, &spec.label);
        ceiling_load::run(cfg, |s| {
            acc.push_second(s);
        })
        .map_err(|e| e.to_string())?;
        Ok(acc.finish())
    }
    fn stopped(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::Relaxed)
    }
    fn now_s(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }
}

/// Progress messages for the terminal.
pub type Log<'a> = &'a mut dyn FnMut(&str);

/// Confirming shelves tried before giving up.
pub const CONFIRM_ATTEMPTS: u32 = 3;
/// A generator-bound probe whose generator used less than this much CPU per thread (% of one
/// core) was starved, not busy: a busy event loop that falls behind runs near 100%.
pub const STARVED_GENERATOR_CPU: f64 = 50.0;

/// Runs of one probe rate when the generator or the window made it invalid.
pub const INVALID_ATTEMPTS: u32 = 3;
/// Never probe below this rate when bracketing downwards.
pub const MIN_RATE: f64 = 1.0;

/// The request-stream seed of the `k`-th run of a search (deterministic, distinct per run: the
/// same seed would replay the same POSTed ids, and later probes would collide with rows the
/// earlier ones created).
pub fn probe_seed(plan: &Plan, k: u64) -> u64 {
    plan.load.seed.wrapping_add(1_000 + k)
}

/// Settings of one search beyond the plan's `[search]` table.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Generator threads to start with.
    pub threads: usize,
    /// Most generator threads a retry may use (the machine's cores by default).
    pub max_threads: usize,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            threads: 1,
            max_threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        }
    }
}

/// The low rate used for baseline and recovery checks: the plan's `search.check_rate`, else a
/// tenth of the start rate within 10…200 RPS.
pub fn check_rate(plan: &Plan) -> f64 {
    plan.search
        .check_rate
        .unwrap_or((plan.search.start_rate / 10.0).clamp(10.0, 200.0))
}

struct Searcher<'a> {
    plan: &'a Plan,
    runner: &'a mut dyn ProbeRunner,
    log: Log<'a>,
    probe_criteria: ShelfCriteria,
    deadline_s: f64,
    t0: f64,
    /// What the search has learnt so far (kept by [`Search`] between rounds).
    st: &'a mut State,
}

/// The state a search carries from probe to probe and from round to round.
#[derive(Debug, Clone)]
struct State {
    threads: usize,
    max_threads: usize,
    /// Runs so far (seeds and labels are numbered by it).
    runs: u64,
    probes: Vec<ProbeVerdict>,
    confirms: Vec<ceiling_analyze::ShelfResult>,
    baseline: Option<Baseline>,
    /// Lowest rate the generator could not drive.
    gen_cap: Option<f64>,
    confirms_tried: u32,
    /// Rate of the last confirming shelf that passed.
    confirmed: Option<f64>,
    /// Length of a probe now (`search.probe`, ×3 per lengthening when `search.max_probe` allows).
    probe_len: Duration,
    /// Probes the environment disturbed (re-run, not pooled).
    disturbed: u32,
    /// The round being run (1-based).
    round: u32,
}

/// Probes disturbed by their environment (a host stall, the generator, the database unreachable)
/// that a search re-runs before it stops: past this, the machine, not the service, is what is
/// being measured.
pub const MAX_DISTURBED: u32 = 5;

/// Repeated probes whose `ln(margin)` spread (pooled σ near the crossing) exceeds this are too
/// short for the service: a factor of e^0.5 ≈ 1.65 between replicates at one rate.
pub const LENGTHEN_SIGMA: f64 = 0.5;
/// Degrees of freedom of that spread before it is believed.
pub const LENGTHEN_MIN_DF: usize = 2;

/// One step's result: go on, or stop with a reason.
type Flow = Result<(), StopReason>;

impl Searcher<'_> {
    fn left_s(&self) -> f64 {
        self.deadline_s - self.runner.now_s()
    }

    /// True when one more probe (with the recovery that may follow it) would leave too little
    /// of the budget for the confirming shelf, none has run yet, and the probes bracket a
    /// ceiling to confirm.
    fn confirm_is_due(&self) -> bool {
        let s = &self.plan.search;
        if s.confirm.is_zero() || self.st.confirms_tried > 0 {
            return false;
        }
        let probes = || self.st.probes.iter().filter(|p| p.kind == ProbeKind::Probe);
        let bracketed = probes().any(|p| p.passed()) && probes().any(|p| !p.passed());
        // a probe, the recovery after it, and some slack for starting each shelf
        let next_probe = self.st.probe_len + s.drain + s.recovery_max + Duration::from_secs(10);
        bracketed && self.left_s() < (next_probe + s.confirm).as_secs_f64()
    }

    fn guard(&self, cost: Duration) -> Flow {
        if self.runner.stopped() {
            return Err(StopReason::Signal);
        }
        if cost.as_secs_f64() > self.left_s() {
            return Err(StopReason::Budget);
        }
        Ok(())
    }

    /// Runs one shelf and judges it.
    fn run_one(
        &mut self,
        plan: &Plan,
        kind: ProbeKind,
        rate: f64,
    ) -> Result<ProbeVerdict, StopReason> {
        self.st.runs += 1;
        let label = match kind {
            ProbeKind::Probe => format!("probe-{rate:.0}-{}", self.st.runs),
            ProbeKind::Confirm => format!("confirm-{rate:.0}-{}", self.st.runs),
            ProbeKind::Check => format!("check-{}", self.st.runs),
        };
        let mut plan = plan.clone();
        plan.load.seed = probe_seed(self.plan, self.st.runs);
        let spec = ProbeSpec {
            label,
            threads: self.st.threads,
            kind,
        };
        let started_s = self.runner.now_s() - self.t0;
        let a = self
            .runner
            .run(&plan, &spec)
            .map_err(|e| StopReason::Error {
                message: format!("{} at {rate:.0} RPS could not run: {e}", spec.label),
            })?;
        if self.runner.stopped() {
            return Err(StopReason::Signal);
        }
        let Some(shelf) = a.shelves.first() else {
            return Err(StopReason::Error {
                message: format!("{} at {rate:.0} RPS produced no shelf", spec.label),
            });
        };
        let crit = match kind {
            ProbeKind::Probe => &self.probe_criteria,
            _ => &a.criteria,
        };
        let mut v = ProbeVerdict::from_shelf(shelf, crit);
        v.rate = rate;
        v.kind = kind;
        v.threads = self.st.threads;
        v.seed = plan.load.seed;
        v.started_s = started_s;
        v.round = self.st.round;
        if kind == ProbeKind::Confirm {
            self.st.confirms.push(shelf.clone());
        }
        Ok(v)
    }

    /// A low-rate check: its p99 and error rate.
    fn check(&mut self) -> Result<ProbeVerdict, StopReason> {
        let rate = check_rate(self.plan);
        let plan = check_plan(self.plan, rate, self.plan.search.check);
        self.guard(self.plan.search.check)?;
        let v = self.run_one(&plan, ProbeKind::Check, rate)?;
        self.st.probes.push(v.clone());
        Ok(v)
    }

    fn measure_baseline(&mut self) -> Flow {
        // The lowest p99 of up to three checks: a check disturbed by the machine (the generator
        // fell behind, or a hiccup put its p99 over half the SLO) is tried again, so one bad
        // second does not loosen every later recovery threshold.
        let half_slo = self
            .plan
            .slo
            .limits
            .iter()
            .map(|l| l.limit.as_secs_f64() * 1000.0)
            .fold(f64::INFINITY, f64::min)
            / 2.0;
        let mut best: Option<ProbeVerdict> = None;
        for _ in 0..3 {
            let v = self.check()?;
            let disturbed = v.generator_bound() || v.p99_ms > half_slo;
            if best.as_ref().is_none_or(|b| v.p99_ms < b.p99_ms) {
                best = Some(v);
            }
            if !disturbed {
                break;
            }
        }
        let v = best.expect("at least one check ran");
        let b = Baseline {
            rate: v.rate,
            p50_ms: v.p50_ms,
            p99_ms: v.p99_ms,
            error_rate: v.error_rate,
        };
        (self.log)(&format!(
            "  baseline at {:.0} RPS: p50 {:.2} ms, p99 {:.2} ms, errors {:.2}% (recovered means p99 ≤ {:.2} ms)",
            b.rate,
            b.p50_ms,
            b.p99_ms,
            b.error_rate * 100.0,
            b.threshold_ms()
        ));
        if v.offered_rps <= 0.0 {
            // Nothing was sent: the generator's fault (or the plan's), never the service's.
            return Err(StopReason::Error {
                message: format!(
                    "the generator sent nothing in the check at {:.0} RPS: a fault of ceiling's or of the plan's load settings, not of the service (please report it)",
                    b.rate
                ),
            });
        }
        if v.achieved_rps <= 0.0 || b.error_rate >= self.plan.slo.max_error_rate.max(1e-9) {
            return Err(StopReason::Error {
                message: format!(
                    "the service is not healthy at a low rate before any probe ({:.0} RPS: {:.1}% errors, achieved {:.0}/s)",
                    b.rate,
                    b.error_rate * 100.0,
                    v.achieved_rps
                ),
            });
        }
        self.st.baseline = Some(b);
        Ok(())
    }

    /// Waits until a low-rate check sees baseline latency again.
    fn recover(&mut self, after: f64) -> Result<Recovery, StopReason> {
        let s = &self.plan.search;
        let (drain, max) = (s.drain, s.recovery_max);
        let threshold = self
            .st
            .baseline
            .as_ref()
            .map(|b| b.threshold_ms())
            .unwrap_or(f64::INFINITY);
        let t = self.runner.now_s();
        let mut checks = 0;
        loop {
            self.runner.idle(drain);
            let c = self.check()?;
            checks += 1;
            let ok = c.achieved_rps > 0.0
                && c.p99_ms <= threshold
                && c.error_rate < self.plan.slo.max_error_rate.max(1e-9);
            let waited_s = self.runner.now_s() - t;
            if ok || waited_s >= max.as_secs_f64() {
                let r = Recovery {
                    waited_s,
                    checks,
                    recovered: ok,
                    check_p99_ms: c.p99_ms,
                    threshold_ms: threshold,
                };
                (self.log)(&format!(
                    "    {} after {:.1} s ({} check{}, last p99 {:.2} ms, threshold {:.2} ms)",
                    if ok { "recovered" } else { "NOT recovered" },
                    waited_s,
                    checks,
                    if checks == 1 { "" } else { "s" },
                    c.p99_ms,
                    threshold
                ));
                if !ok {
                    // the check's window was attributed like any probe's: say why it failed
                    if let Some(w) = &c.why {
                        (self.log)(&format!("    why: {w}"));
                    }
                    return Err(StopReason::NotRecovered {
                        after,
                        waited_s,
                        why: c.why.clone(),
                    });
                }
                return Ok(r);
            }
        }
    }

    /// Probes `rate` (with retries when invalid) and records it. `Ok(true)` when a judged
    /// observation was added.
    fn probe(&mut self, rate: f64, kind: ProbeKind) -> Result<bool, StopReason> {
        let dur = match kind {
            ProbeKind::Confirm => self.plan.search.confirm,
            _ => self.st.probe_len,
        };
        for attempt in 0..INVALID_ATTEMPTS {
            self.guard(dur)?;
            let plan = match kind {
                ProbeKind::Confirm => confirm_plan(self.plan, rate),
                _ => {
                    let mut p = self.plan.clone();
                    p.search.probe = self.st.probe_len;
                    probe_plan(&p, rate)
                }
            };
            let mut v = self.run_one(&plan, kind, rate)?;
            (self.log)(&format!("  {}", v.summary()));
            if let Some(w) = v.why.as_ref().filter(|_| !v.passed()) {
                (self.log)(&format!("    why: {w}"));
            }
            if v.passed() {
                self.st.probes.push(v);
                return Ok(true);
            }
            // A failure the attribution lays on the environment is not the service's: kept in the
            // record as disturbed, left out of the fit, and the rate probed again after recovery.
            let env = v.environment_cause();
            if let Some(k) = env {
                self.st.disturbed += 1;
                v.disturbed = Some(format!(
                    "{} (disturbed probe {} of at most {MAX_DISTURBED})",
                    k.phrase(),
                    self.st.disturbed
                ));
                (self.log)(&format!(
                    "    disturbed: {} — not the service's; re-run after recovery",
                    k.phrase()
                ));
            }
            let gen = v.generator_bound();
            let gen_cpu = v.generator_cpu_pct;
            let late = v
                .reasons
                .iter()
                .any(|r| matches!(r, ceiling_analyze::Reason::GeneratorLag { .. }));
            let starved = gen && late && gen_cpu < STARVED_GENERATOR_CPU * v.threads.max(1) as f64;
            let invalid = v.verdict == Verdict::Invalid || env.is_some();
            let idx = self.st.probes.len();
            self.st.probes.push(v.clone());
            let rec = self.recover(rate);
            if let Ok(r) = &rec {
                v.recovery = Some(r.clone());
                self.st.probes[idx] = v;
            }
            rec?;
            if !invalid {
                return Ok(true);
            }
            if env.is_some() {
                if self.st.disturbed >= MAX_DISTURBED {
                    return Err(StopReason::Disturbed {
                        probes: self.st.disturbed,
                    });
                }
                continue;
            }
            // Late while using little CPU: the generator waited for a core the stack and
            // PostgreSQL held (a shared box); it was not short of threads, and another thread
            // would only add to the contention. Retried as it is: the stack's demand comes and
            // goes (ktor-jdbc at 5657 RPS on the 2-core box failed this way twice, then held).
            if starved {
                // Under SCHED_FIFO it would have run ahead of them (engine.md §50, search.md
                // §51): say so where it is not on.
                let hint = if self.plan.load.realtime {
                    ""
                } else {
                    " (--realtime runs the generator ahead of the stack and PostgreSQL)"
                };
                (self.log)(&format!(
                    "    the generator was starved of CPU, not busy ({gen_cpu:.0}% of a core while late): retrying with the same {} thread{} after recovery{hint}",
                    self.st.threads,
                    if self.st.threads == 1 { "" } else { "s" }
                ));
            } else if gen && self.st.threads < self.st.max_threads {
                self.st.threads += 1;
                (self.log)(&format!(
                    "    the generator was the limit: retrying with {} threads",
                    self.st.threads
                ));
            } else if attempt + 1 < INVALID_ATTEMPTS {
                (self.log)("    invalid probe: retrying after recovery");
            }
            if gen && attempt + 1 == INVALID_ATTEMPTS {
                self.st.gen_cap = Some(self.st.gen_cap.map_or(rate, |c| c.min(rate)));
            }
        }
        Ok(false)
    }

    /// Lengthens the probes when the plan allows it (`search.max_probe` above `search.probe`) and
    /// replicates near the crossing disagree too much to narrow. Not the default: replicates pool
    /// into longer windows anyway, and their disagreement is the knee's transition zone. Longer
    /// probes pool with the weight of their length. True when it did.
    fn maybe_lengthen(&mut self) -> bool {
        let s = &self.plan.search;
        let longest = s.longest_probe();
        if self.st.probe_len >= longest {
            return false;
        }
        let obs = observations(&self.st.probes);
        let Some((sigma, df)) = capacity_noise(&obs) else {
            return false;
        };
        if df < LENGTHEN_MIN_DF || sigma <= LENGTHEN_SIGMA {
            return false;
        }
        let smp = samples(&self.st.probes);
        let Some(iv) = pooled_interval(&smp, 0x5EED) else {
            return false;
        };
        if iv.half_width_rel() <= s.tolerance {
            return false;
        }
        let next = (self.st.probe_len * 3).min(longest);
        (self.log)(&format!(
            "  probes at one rate disagree (σ of ln margin {sigma:.2} over {df} replicate degrees of freedom; {:.0}–{:.0} RPS so far): lengthening probes {} → {} (search.max_probe); shorter ones stay pooled, by their length",
            iv.lo,
            iv.hi,
            ceiling_plan::format_duration(self.st.probe_len),
            ceiling_plan::format_duration(next),
        ));
        self.st.probe_len = next;
        true
    }

    /// The next rate to probe, or `None` when the interval is narrow enough.
    ///
    /// Bracketing grows or shrinks the rate; a wide bracket is narrowed at the pooled estimate
    /// (kept inside its middle 60%); then probes go where they shrink the interval most: with a
    /// pooled line, alternately just below and just above the estimate on a grid of
    /// `tolerance`/2 steps (so later probes land on earlier rates and pool with them); without
    /// one (a cliff), at the bracket's ends until each has `repeat` probes, then where the sign
    /// of the margin is least certain.
    fn next(&self) -> Result<Option<(f64, ProbeKind)>, StopReason> {
        let s = &self.plan.search;
        let smp = samples(&self.st.probes);
        let fit = PooledFit::of(&smp);
        let cap = self.st.gen_cap.unwrap_or(f64::INFINITY);
        let round = |r: f64| r.round().max(MIN_RATE);
        match fit.bracket() {
            Bracket::Empty => Ok(Some((
                round(s.start_rate.min(s.max_rate).min(cap * 0.5)),
                ProbeKind::Probe,
            ))),
            Bracket::AllPass { highest } => {
                if highest >= s.max_rate {
                    return Err(StopReason::MaxRate { rate: s.max_rate });
                }
                let mut next = (highest * s.growth).min(s.max_rate);
                if next >= cap {
                    // The generator cannot drive `cap`: probe between, while that still narrows.
                    if cap <= highest * (1.0 + s.tolerance) {
                        return Err(StopReason::GeneratorLimit { rate: cap });
                    }
                    next = (highest * cap).sqrt();
                }
                Ok(Some((round(next), ProbeKind::Probe)))
            }
            Bracket::AllFail { lowest } => {
                let next = lowest / s.growth;
                if next < MIN_RATE {
                    return Err(StopReason::BelowMinimum);
                }
                Ok(Some((round(next), ProbeKind::Probe)))
            }
            Bracket::Between { lo, hi } => {
                let est = fit.estimate().unwrap_or((lo * hi).sqrt());
                // The bracket bounds what the probes can resolve: narrow it first.
                if (hi - lo) / 2.0 > s.tolerance * est {
                    let (a, b) = (lo + 0.2 * (hi - lo), hi - 0.2 * (hi - lo));
                    let r = round(est.clamp(a, b));
                    if r > lo && r < hi && r < cap {
                        return Ok(Some((r, ProbeKind::Probe)));
                    }
                }
                let iv = pooled_interval(&smp, 0x5EED);
                let line = iv
                    .as_ref()
                    .is_some_and(|i| i.method == IntervalMethod::PooledLine);
                if !line {
                    // Replicate the bracket's ends (they pool) until each has `repeat` probes.
                    if let Some(t) = ThinEnds::of(&fit, lo, hi, s.repeat) {
                        return Ok(Some((t.thinner_end(), ProbeKind::Probe)));
                    }
                }
                // Around the estimate: ±tol/2, then ±tol, on the side with fewer probes.
                let probed: Vec<f64> = smp.iter().map(|x| x.rate).collect();
                let around = |centre: f64| {
                    let near = |r: f64| (r / centre - 1.0).abs() <= 3.0 * s.tolerance;
                    let below = smp
                        .iter()
                        .filter(|x| near(x.rate) && x.rate < centre)
                        .count();
                    let above = smp
                        .iter()
                        .filter(|x| near(x.rate) && x.rate >= centre)
                        .count();
                    let d = if ((below + above) / 2) % 2 == 0 {
                        s.tolerance / 2.0
                    } else {
                        s.tolerance
                    };
                    let side = if below <= above { -1.0 } else { 1.0 };
                    let r = snap_to(centre * (1.0 + side * d), s.tolerance, &probed);
                    round(if r >= cap {
                        snap_to(centre * (1.0 - d), s.tolerance, &probed)
                    } else {
                        r
                    })
                };
                match iv {
                    Some(i) if i.half_width_rel() <= s.tolerance => Ok(None),
                    Some(i) if line => Ok(Some((around(i.estimate), ProbeKind::Probe))),
                    Some(i) => {
                        // Cliff: probe again where the sign of the margin is least certain —
                        // among the rates inside the interval, the one whose fitted log margin is
                        // nearest 0 relative to its standard error (∝ 1/√weight).
                        let r = fit
                            .groups
                            .iter()
                            .zip(&fit.fitted)
                            .filter(|(g, _)| g.rate >= i.lo && g.rate <= i.hi && g.rate < cap)
                            .min_by(|(ga, fa), (gb, fb)| {
                                let za = fa.abs() * ga.weight.sqrt();
                                let zb = fb.abs() * gb.weight.sqrt();
                                za.total_cmp(&zb)
                            })
                            .map(|(g, _)| g.rate)
                            .unwrap_or(lo);
                        Ok(Some((r, ProbeKind::Probe)))
                    }
                    None => Ok(Some((around(est), ProbeKind::Probe))),
                }
            }
        }
    }
}

/// `r` on a logarithmic grid of `tolerance`/2 steps, so probes placed near one estimate fall on
/// the same rates and pool.
fn snap(r: f64, tolerance: f64) -> f64 {
    let g = (1.0 + tolerance / 2.0).ln();
    ((r.ln() / g).round() * g).exp()
}

/// [`snap`], or the nearest rate already `probed` within half a grid step of it: probes pool
/// only at equal rates, and a rate placed by doubling (8000) is not on the grid (8007) — §55's
/// search ran 8000 twice and 8007 once, three replicates the fit saw as two rates.
fn snap_to(r: f64, tolerance: f64, probed: &[f64]) -> f64 {
    let s = snap(r, tolerance);
    let half = (1.0 + tolerance / 2.0).ln() / 2.0;
    let off = |p: f64| (p.ln() - s.ln()).abs();
    probed
        .iter()
        .copied()
        .filter(|&p| p > 0.0 && off(p) <= half)
        .min_by(|&a, &b| off(a).total_cmp(&off(b)))
        .unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placed_rate_snaps_to_a_probed_rate_within_half_a_grid_step() {
        let tol = 0.05;
        // 8007 is the grid's point nearest 8000 · 1.0005; 8000 was probed: it is chosen
        assert_eq!(snap(8004.0, tol).round(), 8007.0);
        assert_eq!(snap_to(8004.0, tol, &[4000.0, 8000.0]), 8000.0);
        // nothing probed near: the grid's point
        assert_eq!(snap_to(8004.0, tol, &[4000.0, 9000.0]).round(), 8007.0);
        // two near: the nearer to the grid's point
        assert_eq!(snap_to(8004.0, tol, &[7960.0, 8010.0]), 8010.0);
        // beyond half a step (1.25%): not taken
        assert_eq!(snap_to(8004.0, tol, &[8120.0]).round(), 8007.0);
    }
}

/// A search that can run in rounds (several stacks interleaved A B A B …, each round on a freshly
/// started service): the state between rounds is every probe, the generator's cap and threads.
#[derive(Debug, Clone)]
pub struct Search {
    plan: Plan,
    state: State,
    /// Budget spent so far, seconds: the rounds, and what the caller charged for starting,
    /// verifying and warming up the service before them ([`Search::charge`]).
    used_s: f64,
    /// Charged since the latest round began, seconds (the service's stop after it, the next
    /// start and warm-up).
    between_s: f64,
    /// What was charged between the two latest rounds (before the first: its start-up),
    /// seconds: what the next round is expected to need before its first check.
    last_startup_s: f64,
    /// Runner clock when the first round began (probe start times are relative to it).
    t0: Option<f64>,
    rounds: u32,
    stop: Option<StopReason>,
    /// The caller starts the service afresh for every round ([`Search::restarted_each_round`]).
    fresh_rounds: bool,
    /// Rounds that ended on a service that did not recover, said as the log said them.
    wedges: Vec<String>,
}

impl Search {
    /// A search of `plan`'s service with `opts`.
    pub fn new(plan: &Plan, opts: &SearchOptions) -> Search {
        Search {
            plan: plan.clone(),
            state: State {
                threads: opts.threads.max(1),
                max_threads: opts.max_threads.max(opts.threads).max(1),
                runs: 0,
                probes: Vec::new(),
                confirms: Vec::new(),
                baseline: None,
                gen_cap: None,
                confirms_tried: 0,
                confirmed: None,
                probe_len: plan.search.probe,
                disturbed: 0,
                round: 0,
            },
            used_s: 0.0,
            between_s: 0.0,
            last_startup_s: 0.0,
            t0: None,
            rounds: 0,
            stop: None,
            fresh_rounds: false,
            wedges: Vec::new(),
        }
    }

    /// For a caller that starts the service afresh before every round (the lab's stacks): a
    /// service that does not return to its baseline after a failed probe — wedged, e.g. a pool
    /// that keeps its connections after an overload (source 002's WebFlux + R2DBC service) — ends
    /// the round, not the search. The failed probe counts as judged; the next round's fresh
    /// start clears the wedge and the search goes on placing probes, so a service that wedges
    /// above its ceiling still gets a bracketed interval instead of a lower bound. The budget
    /// bounds how often it can happen; every such round is said in [`Search::wedges`]. A
    /// service the caller cannot restart (`--url`) keeps the old rule: the search ends there.
    pub fn restarted_each_round(mut self) -> Search {
        self.fresh_rounds = true;
        self
    }

    /// The rounds that ended on a service that did not recover (each a sentence), when the
    /// search goes on after them ([`Search::restarted_each_round`]).
    pub fn wedges(&self) -> &[String] {
        &self.wedges
    }

    /// True once the search has ended (converged, budget, a stop…).
    pub fn finished(&self) -> bool {
        self.stop.is_some()
    }

    /// Whether what is left of the budget holds the latest start-up charged ([`Search::charge`]),
    /// a round's baseline check and the shortest shelf the round could run (a probe, or the
    /// confirming shelf when that is all a round would do). When it does not, the search ends
    /// here on its budget — so a caller asks this *before* starting a service and warming it up
    /// for a round that could not run one probe (§53: a Spring stack started, warmed up and
    /// stopped for nothing).
    pub fn round_fits(&mut self) -> bool {
        if self.stop.is_some() {
            return false;
        }
        let s = &self.plan.search;
        let left = s.max_time.as_secs_f64() - self.used_s;
        let shelf = if s.confirm.is_zero() {
            self.state.probe_len
        } else {
            self.state.probe_len.min(s.confirm)
        };
        if left < self.last_startup_s + (s.check + shelf).as_secs_f64() {
            self.stop = Some(StopReason::Budget);
            return false;
        }
        true
    }

    /// Runs one round on `runner`: a baseline check (the service may be freshly started), then
    /// at most `max_steps` probes (`None`: until the search ends). Returns true when the search
    /// has ended. Runners of one search should share a clock (`ProbeRunner::now_s`).
    pub fn run_round(
        &mut self,
        runner: &mut dyn ProbeRunner,
        max_steps: Option<usize>,
        log: Log,
    ) -> bool {
        if self.stop.is_some() {
            return true;
        }
        let start = runner.now_s();
        let t0 = *self.t0.get_or_insert(start);
        self.last_startup_s = std::mem::take(&mut self.between_s);
        self.rounds += 1;
        self.state.round = self.rounds;
        let plan = self.plan.clone();
        let mut st = Searcher {
            plan: &plan,
            deadline_s: start + plan.search.max_time.as_secs_f64() - self.used_s,
            t0,
            runner,
            log,
            probe_criteria: ceiling_analyze::probe_criteria(&plan),
            st: &mut self.state,
        };
        let mut r = run_loop(&mut st, max_steps);
        if self.fresh_rounds && matches!(r, Some(StopReason::NotRecovered { .. })) {
            let stop = r.take().expect("matched above");
            (st.log)(&format!(
                "  round ended: {stop} — the next round starts the service afresh (the failed probe counts)"
            ));
            self.wedges.push(format!("round {}: {stop}", self.rounds));
        }
        if let Some(stop) = &r {
            (st.log)(&format!("  search ended: {stop}"));
        }
        let end = st.runner.now_s();
        self.used_s += end - start;
        self.stop = r;
        self.stop.is_some()
    }

    /// Charges the budget with time spent for the search outside its rounds: starting,
    /// verifying and warming up the service before a round, stopping it after. `--max-time` is
    /// the wall time a stack's search may take, so a search of four stacks in rounds of a
    /// freshly started service each ends within four budgets, not four budgets plus every
    /// start-up (§53: 100 min for four 15-min budgets plus their warm-ups). The charge is also
    /// what [`Search::round_fits`] expects the next round's start-up to cost (what was charged
    /// between the two latest rounds).
    pub fn charge(&mut self, spent: Duration) {
        let s = spent.as_secs_f64();
        self.used_s += s;
        self.between_s += s;
    }

    /// The budget spent so far: every round, and every charge.
    pub fn used(&self) -> Duration {
        Duration::from_secs_f64(self.used_s.max(0.0))
    }

    /// The plan searched.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Rounds run so far.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Concludes the search (`stop` says why when it ended early, e.g. the stack died between
    /// rounds).
    pub fn finish(self, stop: Option<StopReason>) -> SearchOutcome {
        SearchOutcome::conclude(
            self.state.probes,
            self.state.confirms,
            self.state.baseline,
            self.plan.search.tolerance,
            self.plan.search.repeat,
            stop.or(self.stop).unwrap_or(StopReason::Budget),
            self.used_s,
        )
    }
}

/// Runs the whole search on one service within `plan.search.max_time`.
pub fn search(
    plan: &Plan,
    runner: &mut dyn ProbeRunner,
    opts: &SearchOptions,
    log: Log,
) -> SearchOutcome {
    let mut s = Search::new(plan, opts);
    s.run_round(runner, None, log);
    s.finish(None)
}

/// One round: baseline, then probes until the search ends (`Some`) or `max_steps` ran (`None`).
fn run_loop(s: &mut Searcher, max_steps: Option<usize>) -> Option<StopReason> {
    if let Err(e) = s.measure_baseline() {
        return Some(e);
    }
    let mut steps = 0;
    loop {
        if max_steps.is_some_and(|m| steps >= m) {
            return None;
        }
        steps += 1;
        s.maybe_lengthen();
        if s.confirm_is_due() {
            // the budget keeps the confirming shelf's time: confirm what the probes support so
            // far, then stop (the outcome still says the interval was not narrowed)
            (s.log)(&format!(
                "  the budget keeps {} for the confirming shelf: no more probes",
                ceiling_plan::format_duration(s.plan.search.confirm)
            ));
            return Some(match confirm(s) {
                Ok(_) => StopReason::Budget,
                Err(e) => e,
            });
        }
        let next = match s.next() {
            Ok(n) => n,
            Err(e) => return Some(e),
        };
        let step = match next {
            Some((rate, kind)) => s.probe(rate, kind).map(|_| ()),
            None => {
                if s.plan.search.confirm.is_zero() {
                    return Some(StopReason::Converged);
                }
                // A passing confirming shelf pools with the probes; the search ends when the
                // interval is still narrow with it and it confirmed (about) the interval's lower end.
                let lo = confirm_rate(&s.st.probes).map_or(0.0, |c| c.0);
                let tol = s.plan.search.tolerance;
                if s.st.confirmed.is_some_and(|c| c >= lo * (1.0 - tol)) {
                    return Some(StopReason::Converged);
                }
                if s.st.confirms_tried == CONFIRM_ATTEMPTS {
                    return Some(if s.st.confirmed.is_some() {
                        StopReason::Converged
                    } else {
                        StopReason::ConfirmFailed
                    });
                }
                confirm(s).map(|_| ())
            }
        };
        if let Err(e) = step {
            return Some(e);
        }
    }
}

/// Runs the confirming shelf at the interval's lower end (or, when the lengthened probes all
/// passed, at their highest rate: [`ceiling_analyze::confirm_rate`]); true when it passed (or
/// there is no rate to confirm).
fn confirm(s: &mut Searcher) -> Result<bool, StopReason> {
    s.st.confirms_tried += 1;
    let (lo, bracketed) = confirm_rate(&s.st.probes).unwrap_or((0.0, false));
    let lo = lo.round();
    if lo < MIN_RATE {
        return Ok(true);
    }
    // said only when it fits: a confirm announced and then refused by the budget (§53's Spring
    // MVC) reads as if it ran
    s.guard(s.plan.search.confirm)?;
    (s.log)(&format!(
        "  confirming {lo:.0} RPS ({}) for {}",
        if bracketed {
            "the interval's lower end"
        } else {
            "the highest rate the lengthened probes passed"
        },
        ceiling_plan::format_duration(s.plan.search.confirm)
    ));
    s.probe(lo, ProbeKind::Confirm)?;
    let passed =
        s.st.probes
            .last()
            .is_some_and(|p| p.kind == ProbeKind::Confirm && p.passed());
    if passed {
        s.st.confirmed = Some(lo);
    }
    Ok(passed)
}

/// Wall time a search may take at most (for messages): the budget.
pub fn budget(plan: &Plan) -> Duration {
    plan.search.max_time
}
