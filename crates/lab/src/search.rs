//! `ceiling search` as the lab runs it: the probe runner (every probe a watched measurement with
//! the stand's signals), the search's own settings from the command line applied to the plan
//! once, and the turn scheduler of a search of several stacks or services (A B A B …, each round
//! on a freshly started stack with the plan's warm-up), with the part-exit policy of
//! [`crate::handle_part_exit`]. The binary parses flags, prints the lines it is handed and writes
//! the reports; the steps and their order live here.

use crate::error::{refuse, Result};
use crate::measure::{measure_watched, Halt, MeasureSpec};
use crate::Progress;
use ceiling_agent::coordinator::Agents;
use ceiling_analyze::{probe_criteria, ProbeKind, StackAnalysis, StopReason, Warning, WarningKind};
use ceiling_metrics::TimeseriesRow;
use ceiling_plan::{Model, Plan, Stage};
use ceiling_records::{RunReport, Series};
use ceiling_search::{ProbeRunner, ProbeSpec, Search, SearchOptions};
use ceiling_stand::{SampleTarget, Stand};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The search's settings a command line may override (each `None`: the plan's `[search]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchOverrides {
    /// Probes at each end of a cliff's final bracket (`--repeat`), clamped to 1–100.
    pub repeat: Option<u32>,
    /// Time budget per stack (`--max-time`).
    pub max_time: Option<Duration>,
    /// First probe rate (`--start-rate`), at least 1.
    pub start_rate: Option<f64>,
    /// Target half-width of the 95% interval as a fraction (`--tolerance`), 0.001–0.5.
    pub tolerance: Option<f64>,
    /// Length of each probe (`--probe`).
    pub probe: Option<Duration>,
    /// Dropped from the start of each probe (`--probe-trim`), shorter than the probe.
    pub probe_trim: Option<Duration>,
    /// Length of the confirming shelf (`--confirm`; zero: none).
    pub confirm: Option<Duration>,
}

/// Applies `o` to `plan.search`, refusing values no search can use, and fits the plan's
/// `[analysis]` trimming to the confirming shelf: a confirming shelf shorter than the plan's
/// trims and window (sized for a source-length shelf, 20 min in plan 000) is judged with them
/// scaled in proportion, and its window leaves one second of slack so it can meet its minimum.
pub fn apply_search_overrides(plan: &mut Plan, o: &SearchOverrides) -> Result<()> {
    // A search's probes are open-model shelves (rates), whatever the plan's stages: a
    // closed-model plan lends its mix, SLO, warm-up and stand, and is recorded as what ran.
    plan.load.model = Model::Open;
    if let Some(r) = o.repeat {
        plan.search.repeat = r.clamp(1, 100);
    }
    if let Some(m) = o.max_time {
        plan.search.max_time = m;
    }
    if let Some(r) = o.start_rate {
        // written so that NaN is refused too
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(r >= 1.0) {
            refuse!("the search's start rate (--start-rate) must be at least 1 RPS");
        }
        plan.search.start_rate = r;
    }
    if let Some(t) = o.tolerance {
        if !(0.001..=0.5).contains(&t) {
            refuse!("the search's tolerance (--tolerance) must be between 0.001 and 0.5");
        }
        plan.search.tolerance = t;
    }
    if let Some(p) = o.probe {
        plan.search.probe = p;
    }
    if let Some(p) = o.probe_trim {
        plan.search.probe_trim = p;
    }
    if plan.search.probe_trim >= plan.search.probe {
        refuse!(
            "the probe's trim (--probe-trim, {}) must be shorter than the probe ({})",
            ceiling_plan::format_duration(plan.search.probe_trim),
            ceiling_plan::format_duration(plan.search.probe)
        );
    }
    if let Some(c) = o.confirm {
        plan.search.confirm = c;
    }
    let c = plan.search.confirm;
    if !c.is_zero() {
        let a = &mut plan.analysis;
        let need = a.trim_head + a.trim_tail + a.min_window;
        if c < need {
            let f = c.as_secs_f64() / need.as_secs_f64();
            a.trim_head = a.trim_head.mul_f64(f);
            a.trim_tail = a.trim_tail.mul_f64(f);
            a.min_window = a.min_window.mul_f64(f);
        }
        // Windows are counted in whole seconds: leave one second of slack so a full-length
        // confirming shelf can meet its own minimum window.
        let room = c
            .saturating_sub(a.trim_head + a.trim_tail)
            .as_secs()
            .saturating_sub(1);
        a.min_window = a.min_window.min(Duration::from_secs(room.max(1)));
    }
    Ok(())
}

/// One line saying how the search will go, for the top of its output.
pub fn describe_search(plan: &Plan, dir: &Path) -> String {
    let s = &plan.search;
    format!(
        "ceiling search {} → {}  SLO {}; probes of {} from {:.0} RPS (×{} until one fails), then placed around the pooled estimate (probes at one rate pool into one window) until the long-run ceiling's 95% interval is within ±{}% (a cliff: {} probes at each end of the bracket); confirm {}; budget {} per stack",
        plan.name,
        dir.display(),
        plan.slo.describe(),
        ceiling_plan::format_duration(s.probe),
        s.start_rate,
        s.growth,
        s.tolerance * 100.0,
        s.repeat,
        if s.confirm.is_zero() {
            "none".to_string()
        } else {
            ceiling_plan::format_duration(s.confirm)
        },
        ceiling_plan::format_duration(s.max_time)
    )
}

/// How a search runs beyond its plan: what the command line decided, typed once.
#[derive(Debug, Clone, Default)]
pub struct SearchSetup {
    /// Measure stacks even when the conformance suite fails for them (recorded).
    pub allow_unverified: bool,
    /// Generator agents that send every probe's load instead of this process.
    pub agents: Option<Agents>,
    /// Probes per stack per round when several are searched (`None`: each to the end in turn).
    pub per_round: Option<usize>,
    /// The data directory for `@data/` sources of a service that is already running.
    pub data_dir: Option<PathBuf>,
}

/// Probes per stack per round: `--round N` (0 = none), else 4 when several take turns.
pub fn per_round(round: Option<usize>, several: bool) -> Option<usize> {
    match round {
        Some(0) => None,
        Some(n) => Some(n),
        None if several => Some(4),
        None => None,
    }
}

/// What a search of several stacks or services shares: the plan, the setup, where it writes,
/// what stops it, and the two ways it talks back — progress lines, and a checkpoint with the
/// results so far after every round (the binary writes them, so an interrupted search keeps
/// what it measured).
pub struct SearchContext<'a> {
    /// The plan searched (its request mix, SLO and `[search]` settings).
    pub plan: &'a Plan,
    /// What the command line decided.
    pub setup: &'a SearchSetup,
    /// The run's results directory.
    pub dir: &'a Path,
    /// Ctrl-C.
    pub stop: &'a Arc<AtomicBool>,
    /// Lines for the person watching.
    pub progress: Progress,
    /// The results so far, after every round.
    pub checkpoint: &'a mut dyn FnMut(&RunReport, &Series) -> Result<()>,
}

/// Probes run through [`measure_watched`] (sampling, hlog, CSV per probe).
struct Runner<'a> {
    url: String,
    /// The stack's plain-HTTP URL for its `/metrics` (a stand stack; `url` may be its TLS port).
    metrics_url: Option<String>,
    stack: String,
    data_dir: Option<PathBuf>,
    dir: PathBuf,
    targets: Box<dyn Fn() -> Vec<SampleTarget> + 'a>,
    stop: Arc<AtomicBool>,
    /// The per-second watch ([`crate::watch`] on the stand; nothing for a bare URL).
    watch: Box<dyn FnMut() -> Option<Halt> + 'a>,
    /// What stopped a probe, when the watch did: the search of this stack ends there.
    halted: Option<Halt>,
    last_rows: Vec<TimeseriesRow>,
    t0: Instant,
    /// Generator agents for every probe.
    agents: Option<Agents>,
    /// The agent beside a remote stack.
    stack_agent: Option<Agents>,
    /// Lines a probe has for the person watching (a part of the stand that exited).
    progress: Progress,
}

impl Runner<'static> {
    /// The runner for a service that is already running at `url`: no stand to watch, the
    /// generator's own process sampled (and the service's, through `stack_agent`, when given).
    fn for_url(
        cx: &SearchContext<'_>,
        url: &str,
        name: &str,
        t0: Instant,
        stack_agent: Option<Agents>,
    ) -> Runner<'static> {
        Runner {
            url: url.to_string(),
            metrics_url: None,
            stack: name.to_string(),
            data_dir: cx.setup.data_dir.clone(),
            dir: cx.dir.join(name),
            targets: Box::new(|| {
                vec![SampleTarget::process(
                    ceiling_metrics::Role::Generator,
                    std::process::id(),
                )]
            }),
            stop: cx.stop.clone(),
            watch: Box::new(|| None),
            halted: None,
            last_rows: Vec::new(),
            t0,
            agents: cx.setup.agents.clone(),
            stack_agent,
            progress: cx.progress.clone(),
        }
    }
}

/// One sentence for a halt, as a probe's error.
fn halt_text(h: &Halt) -> String {
    match h {
        Halt::StackDied(m) => format!("the stack is not running: {m}"),
        Halt::PartExited(e) => format!(
            "{} — the probe measured a broken stand, not the stack, and the search of this stack stops here",
            e.describe()
        ),
    }
}

impl ProbeRunner for Runner<'_> {
    fn run(&mut self, plan: &Plan, spec: &ProbeSpec) -> Result<StackAnalysis, String> {
        if let Some(h) = self.halted.as_ref() {
            return Err(halt_text(h));
        }
        if let Some(h) = (self.watch)() {
            let e = halt_text(&h);
            self.halted = Some(h);
            return Err(e);
        }
        let sub = match spec.kind {
            ProbeKind::Check => "checks",
            _ => "probes",
        };
        let out = self.dir.join(sub).join(&spec.label);
        let offset = self.t0.elapsed().as_secs() as u32;
        let watch = &mut self.watch;
        let m = measure_watched(
            MeasureSpec {
                plan,
                stack: &self.stack,
                url: &self.url,
                metrics_url: self.metrics_url.as_deref(),
                data_dir: self.data_dir.as_deref(),
                out_dir: &out,
                sampler_targets: (self.targets)(),
                threads: spec.threads,
                quiet: true,
                agents: self.agents.as_ref(),
                stack_agent: self.stack_agent.as_ref(),
                round: None,
                progress: &self.progress,
            },
            &self.stop,
            watch,
        )
        .map_err(|e| format!("{e:#}"))?;
        if let Some(h) = m.halt {
            // The probe's figures are not the stack's: never a verdict, the search ends here.
            let e = halt_text(&h);
            self.halted = Some(h);
            return Err(e);
        }
        // One time axis for the whole search: each probe's seconds placed where the probe ran.
        if spec.kind != ProbeKind::Check {
            self.last_rows.extend(m.rows.into_iter().map(|mut r| {
                r.t += offset;
                r
            }));
        }
        Ok(m.analysis)
    }
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    fn idle(&mut self, d: Duration) {
        // Sleep in slices so Ctrl-C is seen within 100 ms.
        let end = Instant::now() + d;
        while !self.stopped() && Instant::now() < end {
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(100)));
        }
    }
    fn now_s(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }
}

/// The plan's warm-up (JIT, pools, caches), recorded under checks/ and never judged; the error
/// when it could not run. Nothing when the plan has none.
fn warm_up(
    plan: &Plan,
    runner: &mut Runner<'_>,
    round: u32,
    progress: &Progress,
) -> Option<String> {
    if plan.warmup.is_empty() {
        return None;
    }
    let mut wp = plan.clone();
    // The warm-up keeps its own model: a closed-model plan's warm-up (source 002's 100k requests
    // on 100 connections) runs as connections although the search's probes are rates.
    let warmup = std::mem::take(&mut wp.warmup);
    wp.set_stages(warmup);
    let spec = ProbeSpec {
        label: format!("warmup-{round}"),
        threads: plan.load.threads.max(1),
        kind: ProbeKind::Check,
    };
    let stages: Vec<String> = wp.stages.iter().map(Stage::describe).collect();
    progress.say(&format!("  warm-up: {}", stages.join(", then ")));
    runner.run(&wp, &spec).err()
}

/// Counts a round's start-up (start, verify, warm-up) in the search's budget, and says so.
fn charge_startup(search: &mut Search, spent: Duration, progress: &Progress) {
    search.charge(spent);
    progress.say(&format!(
        "  start-up: {:.0} s, counted in the budget ({} of {} spent)",
        spent.as_secs_f64(),
        ceiling_plan::format_duration(Duration::from_secs(search.used().as_secs())),
        ceiling_plan::format_duration(search.plan().search.max_time)
    ));
}

/// The generator's starting threads for a plan's search.
fn options_of(plan: &Plan) -> SearchOptions {
    SearchOptions {
        threads: plan.load.threads.max(1),
        ..Default::default()
    }
}

/// A service that is already running at `url`, searched alone to the end of its budget (the
/// plan's warm-up first, counted in it), its analysis added to `report` as `name` (with
/// `stack_agent` sampling it where it runs).
pub fn search_url(
    cx: &mut SearchContext<'_>,
    name: &str,
    url: &str,
    stack_agent: Option<Agents>,
    report: &mut RunReport,
    series: &mut Series,
) -> Result<()> {
    search_services(
        cx,
        &[(name.to_string(), url.to_string())],
        stack_agent,
        report,
        series,
    )
}

/// Services already running (`(name, url)`), searched in interleaved rounds (A B A B …,
/// [`SearchSetup::per_round`] probes each) so the machine's drift over the search falls on all
/// alike, and ranked by the paired ratio of their ceilings. Nothing is restarted between rounds
/// (ceiling did not start them); the plan's warm-up runs once per service, before its first
/// round, counted in its budget.
pub fn search_urls(
    cx: &mut SearchContext<'_>,
    urls: &[(String, String)],
    report: &mut RunReport,
    series: &mut Series,
) -> Result<()> {
    search_services(cx, urls, None, report, series)
}

/// [`search_url`] and [`search_urls`]: one service searched to its end, or several in rounds;
/// `stack_agent` samples the service when there is one.
fn search_services(
    cx: &mut SearchContext<'_>,
    urls: &[(String, String)],
    stack_agent: Option<Agents>,
    report: &mut RunReport,
    series: &mut Series,
) -> Result<()> {
    let per_round = cx.setup.per_round;
    if urls.len() > 1 {
        cx.progress.say(&format!(
            "services interleaved: {}",
            match per_round {
                Some(n) => format!("rounds of {n} probes per service (A B A B …)"),
                None => "no (--round 0): each service searched to the end in turn".into(),
            }
        ));
    }
    let t0 = Instant::now();
    let opts = options_of(cx.plan);
    let mut jobs: Vec<(StackJob, String)> = urls
        .iter()
        .map(|(name, url)| (StackJob::new(name, cx.plan, &opts), url.clone()))
        .collect();
    loop {
        let mut ran = false;
        for (job, url) in jobs.iter_mut() {
            if cx.stop.load(Ordering::Relaxed) {
                break;
            }
            if job.search.finished() || job.error.is_some() || !job.search.round_fits() {
                continue;
            }
            ran = true;
            let mut runner = Runner::for_url(cx, url, &job.name, t0, stack_agent.clone());
            job.rounds += 1;
            if urls.len() > 1 {
                cx.progress
                    .say(&format!("[{}] round {} ({url})…", job.name, job.rounds));
            }
            let warm = if job.rounds == 1 {
                let began = Instant::now();
                let w = warm_up(cx.plan, &mut runner, job.rounds, &cx.progress);
                if !cx.plan.warmup.is_empty() {
                    charge_startup(&mut job.search, began.elapsed(), &cx.progress);
                }
                w
            } else {
                None
            };
            match warm {
                Some(e) => job.error = Some(format!("warm-up failed: {e}")),
                None => {
                    let p = cx.progress.clone();
                    job.search
                        .run_round(&mut runner, per_round, &mut |l: &str| p.say(l));
                }
            }
            job.rows.extend(std::mem::take(&mut runner.last_rows));
        }
        report.stacks = jobs.iter().filter_map(|(j, _)| j.analysis()).collect();
        report.ranking = ceiling_analyze::rank_searched(&report.stacks, cx.plan.search.tolerance);
        for (j, _) in &jobs {
            series.insert(j.name.clone(), j.rows.clone());
        }
        (cx.checkpoint)(report, series)?;
        if !ran || cx.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
    }
}

/// What a search of stacks on the stand ended with, beyond its report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchEnd {
    /// A stack died, or a part of the stand exited, under one of the probes: the results are
    /// there, but not whole.
    pub halted: bool,
}

/// The stand's stacks `names`, searched: one stack to the end of its budget, or several in
/// rounds ([`SearchSetup::per_round`] probes each, A B A B …), each round on a freshly started
/// stack (verified on its first) with the plan's warm-up; ranked by the paired ratio of their
/// ceilings. After every round the report is brought up to date and handed to the checkpoint.
pub fn search_stacks(
    cx: &mut SearchContext<'_>,
    stand: &mut Stand,
    names: &[String],
    report: &mut RunReport,
    series: &mut Series,
) -> Result<SearchEnd> {
    let per_round = cx.setup.per_round;
    if names.len() > 1 {
        cx.progress.say(&format!(
            "stacks interleaved: {}",
            match per_round {
                Some(n) => format!("rounds of {n} probes per stack, each round on a freshly started stack (verify on the first)"),
                None => "no (--round 0): each stack searched to the end in turn".into(),
            }
        ));
    }
    let data_dir = stand.data_dir().map(Path::to_path_buf);
    let t0 = Instant::now();
    let opts = options_of(cx.plan);
    let mut jobs: Vec<StackJob> = names
        .iter()
        .map(|n| StackJob::new(n, cx.plan, &opts))
        .collect();
    let mut end = SearchEnd::default();
    let mut stop_all = false;
    loop {
        let mut ran = false;
        for job in jobs.iter_mut() {
            if cx.stop.load(Ordering::Relaxed) || stop_all {
                break;
            }
            if job.search.finished() || job.error.is_some() {
                continue;
            }
            if !job.search.round_fits() {
                // not started, not warmed up: the budget left holds no check and probe
                cx.progress.say(&format!(
                    "[{}] budget spent: no round {} (it could not hold a check and a probe)",
                    job.name,
                    job.rounds + 1
                ));
                continue;
            }
            ran = true;
            match stack_round(cx, stand, job, data_dir.as_deref(), t0, per_round) {
                Ok((lim, fairness)) => {
                    report.limits.insert(job.name.clone(), lim);
                    if let Some(f) = fairness {
                        report.fairness.insert(job.name.clone(), f);
                    }
                }
                Err(e) => job.error = Some(format!("{e:#}")),
            }
            stop_all |= job.stop_all;
            end.halted |= job.halted;
        }
        report.stacks = jobs.iter().filter_map(StackJob::analysis).collect();
        for st in &mut report.stacks {
            // a ceiling the shared box set is called that, with the stack's quota as recorded
            let quota = report.limits.get(&st.stack).and_then(|l| l.cpus);
            st.note_placement(stand.placement(), quota);
        }
        report.ranking = ceiling_analyze::rank_searched(&report.stacks, cx.plan.search.tolerance);
        report.warnings = jobs
            .iter()
            .filter_map(|j| {
                j.error.as_ref().filter(|_| j.rounds == 0).map(|e| {
                    Warning::new(
                        WarningKind::StackNotMeasured,
                        format!("stack `{}` was not searched: {e}", j.name),
                    )
                })
            })
            .collect();
        for j in &jobs {
            series.insert(j.name.clone(), j.rows.clone());
        }
        (cx.checkpoint)(report, series)?;
        if !ran || cx.stop.load(Ordering::Relaxed) || stop_all {
            return Ok(end);
        }
    }
}

/// One stack's search across rounds.
struct StackJob {
    name: String,
    search: Search,
    rows: Vec<TimeseriesRow>,
    warnings: Vec<Warning>,
    /// Why the stack could not run a round (build, start, verify, death).
    error: Option<String>,
    rounds: u32,
    /// The stack died, or a part of the stand exited, during one of its probes (its search ended
    /// there).
    halted: bool,
    /// …and the search of every stack stops (`stand.on_part_exit = "stop"`, or the part could
    /// not be restarted).
    stop_all: bool,
    /// The stack's artifact size and its memory at the end of its latest round.
    footprint: Option<ceiling_metrics::Footprint>,
}

impl StackJob {
    /// A search of `name` that has run no round yet.
    fn new(name: &str, plan: &Plan, opts: &SearchOptions) -> StackJob {
        StackJob {
            name: name.to_string(),
            // every round starts the stack afresh: a wedged stack ends its round, not its search
            search: Search::new(plan, opts).restarted_each_round(),
            rows: Vec::new(),
            warnings: Vec::new(),
            error: None,
            rounds: 0,
            halted: false,
            stop_all: false,
            footprint: None,
        }
    }

    /// The analysis so far (None when no round ran).
    fn analysis(&self) -> Option<StackAnalysis> {
        if self.rounds == 0 {
            return None;
        }
        // Conclude a copy: the search may go on after this report is written.
        let criteria = probe_criteria(self.search.plan());
        let stop = self
            .error
            .as_ref()
            .map(|e| StopReason::Error { message: e.clone() });
        let mut a =
            StackAnalysis::from_search(&self.name, criteria, self.search.clone().finish(stop));
        a.warnings.extend(self.warnings.iter().cloned());
        a.warnings.extend(self.search.wedges().iter().map(|w| {
            Warning::new(
                WarningKind::Other,
                format!("the stack did not recover after a failed probe and was restarted for the next round ({w})"),
            )
        }));
        a.footprint = self.footprint.clone();
        Some(a)
    }
}

/// Starts the stack (verifying it on its first round), runs its plan's warm-up if any, one round
/// of its search, and stops it.
fn stack_round(
    cx: &mut SearchContext<'_>,
    stand: &mut Stand,
    job: &mut StackJob,
    data_dir: Option<&Path>,
    t0: Instant,
    max_steps: Option<usize>,
) -> Result<(
    ceiling_stand::LimitsApplied,
    Option<ceiling_stand::Fairness>,
)> {
    let plan = cx.plan;
    let name = job.name.clone();
    // the start, verify and warm-up are the budget's, like the probes (`Search::charge`)
    let began = Instant::now();
    // verified on the first round; later rounds start the same (cached) build
    let (spec, mut stack, warnings) = crate::start_verified(
        plan,
        stand,
        &name,
        cx.dir,
        cx.setup.allow_unverified,
        false,
        job.rounds > 0,
        &cx.progress,
    )?;
    if job.rounds == 0 {
        job.warnings.extend(warnings);
    }
    job.rounds += 1;
    let lim = stack.limits_applied().clone();
    let url = crate::load_url(&stack);
    let metrics_url = Some(stack.url());
    let stack_cell = std::cell::RefCell::new(&mut stack);
    let stand_cell = std::cell::RefCell::new(&mut *stand);
    let mut runner = Runner {
        url,
        metrics_url,
        stack: name.clone(),
        data_dir: data_dir.map(Path::to_path_buf),
        dir: cx.dir.join(&name),
        targets: Box::new(|| {
            stand_cell
                .borrow()
                .sampler_targets(Some(&**stack_cell.borrow()), Some(std::process::id()))
        }),
        stop: cx.stop.clone(),
        watch: Box::new(|| {
            crate::watch(&mut stand_cell.borrow_mut(), &mut stack_cell.borrow_mut())
        }),
        halted: None,
        last_rows: Vec::new(),
        t0,
        agents: cx.setup.agents.clone(),
        stack_agent: None,
        progress: cx.progress.clone(),
    };
    cx.progress.say(&format!("[{name}] round {}…", job.rounds));
    // The plan's warm-up (JIT, pools, caches) on every fresh start, as `ceiling run` does.
    let warmup_failed = warm_up(plan, &mut runner, job.rounds, &cx.progress);
    charge_startup(&mut job.search, began.elapsed(), &cx.progress);
    if warmup_failed.is_none() {
        let p = cx.progress.clone();
        job.search
            .run_round(&mut runner, max_steps, &mut |l: &str| p.say(l));
    }
    job.rows.extend(std::mem::take(&mut runner.last_rows));
    let halted = runner.halted.take();
    drop(runner);
    let stopping = Instant::now();
    job.footprint = Some(crate::footprint_of(
        &spec,
        stack.is_alive().then(|| stack.pid()),
    ));
    stack.stop();
    job.search.charge(stopping.elapsed());
    match halted {
        Some(Halt::PartExited(e)) => part_exited(cx, stand, job, &e),
        // its search ended there (the stop reason quotes the crash report); the others go on
        Some(Halt::StackDied(_)) => job.halted = true,
        None => {}
    }
    if let Some(e) = warmup_failed {
        refuse!("warm-up failed: {e}");
    }
    Ok((lim, spec.fairness))
}

/// A part of the stand (PostgreSQL, PgBouncer) exited during one of `job`'s probes: the search
/// of this stack has ended (the probe was never judged); the stand's policy restarts the part so
/// the other stacks go on, or stops the whole search.
fn part_exited(
    cx: &mut SearchContext<'_>,
    stand: &mut Stand,
    job: &mut StackJob,
    e: &ceiling_analyze::PartExit,
) {
    job.halted = true;
    let what = format!("{} while `{}` was searched", e.describe(), job.name);
    let out = crate::handle_part_exit(
        cx.plan.stand.on_part_exit,
        stand,
        e,
        what,
        crate::Activity::Search,
        !cx.stop.load(Ordering::Relaxed),
        &cx.dir.join("logs"),
        &job.name,
        &mut |l: &str| cx.progress.say(l),
    );
    cx.progress.say(&out.message);
    job.stop_all |= out.stop_all;
    job.warnings
        .push(Warning::new(WarningKind::PartExited, out.message));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        ceiling_plan::parse_plan(
            "name = \"t\"\n[[stages]]\nhold = 10\nduration = \"5s\"\n[[requests]]\nname = \"g\"\npath = \"/\"\n[analysis]\ntrim_head = \"2m\"\ntrim_tail = \"1m\"\nmin_window = \"5m\"\n",
            Path::new("t.toml"),
        )
        .unwrap()
    }

    #[test]
    fn overrides_refuse_what_no_search_can_use() {
        let refused = |o: SearchOverrides| {
            apply_search_overrides(&mut plan(), &o)
                .unwrap_err()
                .to_string()
        };
        assert!(refused(SearchOverrides {
            start_rate: Some(f64::NAN),
            ..Default::default()
        })
        .contains("--start-rate"));
        assert!(refused(SearchOverrides {
            tolerance: Some(0.9),
            ..Default::default()
        })
        .contains("--tolerance"));
        let e = refused(SearchOverrides {
            probe: Some(Duration::from_secs(10)),
            probe_trim: Some(Duration::from_secs(10)),
            ..Default::default()
        });
        assert!(e.contains("--probe-trim") && e.contains("10s"), "{e}");
    }

    #[test]
    fn a_short_confirming_shelf_is_judged_with_the_plans_trims_in_proportion() {
        let mut p = plan();
        apply_search_overrides(
            &mut p,
            &SearchOverrides {
                confirm: Some(Duration::from_secs(80)),
                repeat: Some(1000),
                ..Default::default()
            },
        )
        .unwrap();
        // 2 + 1 + 5 min = 480 s of trims and window for an 80-s shelf: a sixth of each
        let near = |d: Duration, s: f64| (d.as_secs_f64() - s).abs() < 1e-6;
        assert!(
            near(p.analysis.trim_head, 20.0),
            "{:?}",
            p.analysis.trim_head
        );
        assert!(
            near(p.analysis.trim_tail, 10.0),
            "{:?}",
            p.analysis.trim_tail
        );
        // 50 s by proportion, but the window must fit: 80 − 30 − 1 s of slack
        assert_eq!(p.analysis.min_window, Duration::from_secs(49));
        assert_eq!(p.search.repeat, 100, "clamped");
        assert_eq!(p.search.confirm, Duration::from_secs(80));
    }

    #[test]
    fn rounds_are_four_probes_when_several_take_turns_unless_told() {
        assert_eq!(per_round(None, true), Some(4));
        assert_eq!(per_round(None, false), None);
        assert_eq!(per_round(Some(0), true), None);
        assert_eq!(per_round(Some(3), false), Some(3));
    }
}
