//! `ceiling run PLAN`: the lab end to end — embedded PostgreSQL, each stack in turn (build, start
//! under limits, verify, warm up, measure, stop, cool down), analysis by the plan's method, and
//! the report files in `results/<run-id>/`.

use crate::record::Recorder;
use anyhow::{bail, Context};
use ceiling_analyze::{PartExit, RunAccumulator, StackAnalysis, Warning, WarningKind};
use ceiling_load::{parse_target, LoadConfig};
use ceiling_plan::{OnPartExit, Plan, Stage};
use ceiling_report::{RunReport, Series};
use ceiling_stand::{LimitsApplied, Role, Sampler, Stand, StandOptions};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `ceiling run`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ceiling run plans/000-status-mixed.toml --quick --stacks go-pgx     (the demo: ~3 min)
  ceiling run plans/000-status-mixed.toml                              (source 000 at full length)
  ceiling run plans/003-people.toml --quick
  ceiling run plans/004-ping.toml --no-keep-alive                      (a new connection per request)
  ceiling run plans/004-db-ping-pgbouncer.toml --allow-unverified      (through PgBouncer, transaction pooling)
  ceiling run plans/000-status-mixed.toml --db-url postgres://bench:bench@127.0.0.1:5432/bench")]
pub struct RunArgs {
    /// Plan file (see plans/).
    pub plan: PathBuf,
    /// Multiply every duration by the plan's quick_scale (a scaled run; every output says so).
    #[arg(long)]
    pub quick: bool,
    /// Stacks to measure, comma separated (default: the plan's target.stacks).
    #[arg(long, value_delimiter = ',')]
    pub stacks: Vec<String>,
    #[command(flatten)]
    pub stand: StandArgs,
    /// Measure stacks even when `ceiling verify` fails for them (recorded in run.json).
    #[arg(long)]
    pub allow_unverified: bool,
    /// Rebuild stacks even when their source is unchanged.
    #[arg(long)]
    pub rebuild: bool,
    /// Generator threads (default: the plan's load.threads, else 1).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Open a new TCP connection for every request (overrides the plan's load.keep_alive; the
    /// connection's set-up is inside each request's latency).
    #[arg(long)]
    pub no_keep_alive: bool,
    /// No progress line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// The generator options `run` and `search` share with the plan: `--threads` and
/// `--no-keep-alive` override `[load] threads` and `keep_alive`, so run.json records what ran.
pub fn apply_load_flags(plan: &mut Plan, threads: Option<usize>, no_keep_alive: bool) {
    if let Some(t) = threads {
        plan.load.threads = t.clamp(1, 256);
    }
    if no_keep_alive {
        plan.load.keep_alive = false;
    }
}

/// Finds the repository root (the directory holding `contract/` and `stacks/`).
/// Where the stand's PostgreSQL comes from and where results go (`run`, `search`, `pgbench`).
#[derive(Args, Debug, Clone)]
pub struct StandArgs {
    /// Use an existing PostgreSQL (a superuser URL) instead of the embedded one (its `bench`
    /// database is recreated).
    #[arg(long)]
    pub db_url: Option<String>,
    /// Directory with PostgreSQL's `postgres` and `initdb` binaries (default: PATH,
    /// /usr/lib/postgresql/*/bin, or the plan's postgres_version from Maven Central).
    #[arg(long)]
    pub pg_bin: Option<PathBuf>,
    /// Where result directories go.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
}

impl StandArgs {
    /// Stand options for a run whose results directory is `dir` (logs in `dir/logs`).
    pub fn options(&self, root: &Path, dir: &Path) -> StandOptions {
        let mut opts = StandOptions::new(root);
        opts.log_dir = dir.join("logs");
        opts.db_url = self.db_url.clone();
        opts.pg_bin = self.pg_bin.clone();
        opts
    }
}

/// Writes a run's or search's result files, prints its table, and lists the files.
pub fn write_and_print(dir: &Path, report: &RunReport, series: &Series) -> anyhow::Result<()> {
    let files = crate::compare_cmd::write_reports(dir, report, series)?;
    println!("{}", ceiling_report::render_terminal(report));
    eprintln!("results: {}", file_list(&files));
    Ok(())
}

/// Paths joined by ", " for the console.
pub fn file_list(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn repo_root() -> anyhow::Result<PathBuf> {
    let mut dir = std::env::current_dir()?;
    loop {
        if dir.join("contract/schema.sql").is_file() && dir.join("stacks").is_dir() {
            return Ok(dir);
        }
        if !dir.pop() {
            bail!("run ceiling from inside its repository (no contract/schema.sql and stacks/ above the current directory)");
        }
    }
}

/// A run id: UTC time + plan name.
pub fn run_id(plan: &Plan) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    let (d, s) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let (y, m, dd) = civil(d);
    format!(
        "{y:04}{m:02}{dd:02}-{:02}{:02}{:02}-{}",
        s / 3600,
        s % 3600 / 60,
        s % 60,
        plan.name
    )
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// ISO-8601 UTC now.
pub fn now_iso() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    let (y, m, d) = civil(secs.div_euclid(86400));
    let s = secs.rem_euclid(86400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s % 3600 / 60,
        s % 60
    )
}

/// The plan as the engine runs it: closed-model repetitions become repeated passes over the stages.
pub fn engine_stages(plan: &Plan) -> (Vec<Stage>, u32) {
    let passes = if plan.is_open() {
        1
    } else {
        plan.load.repetitions.max(1)
    };
    let stages = (0..passes)
        .flat_map(|_| plan.stages.iter().cloned())
        .collect();
    (stages, passes)
}

/// Everything measured for one stack.
pub struct Measured {
    /// The analysis.
    pub analysis: StackAnalysis,
    /// Per-second rows (for the HTML report).
    pub rows: Vec<ceiling_metrics::TimeseriesRow>,
    /// Why the measurement ended early, if a watch stopped it.
    pub halt: Option<Halt>,
}

/// Why a measurement ended before its plan did, as the per-second watch saw it.
pub enum Halt {
    /// The stack under test died (its crash report).
    StackDied(String),
    /// A part of the stand the stack depends on exited (PostgreSQL).
    PartExited(PartExit),
}

/// Runs the plan's load against a started stack and analyses it. `alive` is polled every second;
/// when it returns an error message the measurement stops, the analysis carries the message, and
/// `stop` is set (the capacity search then stops too).
#[allow(clippy::too_many_arguments)] // the run's pieces, each owned by a different caller
pub fn measure(
    plan: &Plan,
    stack_name: &str,
    url: &str,
    data_dir: Option<&Path>,
    out_dir: &Path,
    sampler_targets: Vec<ceiling_stand::SampleTarget>,
    threads: usize,
    stop: Arc<AtomicBool>,
    quiet: bool,
    mut alive: impl FnMut() -> Option<String>,
) -> anyhow::Result<Measured> {
    let m = measure_watched(
        plan,
        stack_name,
        url,
        data_dir,
        out_dir,
        sampler_targets,
        threads,
        &stop,
        quiet,
        || alive().map(Halt::StackDied),
    )?;
    if matches!(m.halt, Some(Halt::StackDied(_))) {
        stop.store(true, Ordering::Relaxed);
    }
    Ok(m)
}

/// [`measure`] with a watch that can also report a part of the stand that exited. `stop` (Ctrl-C)
/// is only read: a halt stops this measurement alone, and the caller decides what comes next.
/// A part's exit marks the shelves it touched invalid ([`RunAccumulator::stand_part_exited`]).
#[allow(clippy::too_many_arguments)] // the run's pieces, each owned by a different caller
pub fn measure_watched(
    plan: &Plan,
    stack_name: &str,
    url: &str,
    data_dir: Option<&Path>,
    out_dir: &Path,
    sampler_targets: Vec<ceiling_stand::SampleTarget>,
    threads: usize,
    stop: &Arc<AtomicBool>,
    quiet: bool,
    mut watch: impl FnMut() -> Option<Halt>,
) -> anyhow::Result<Measured> {
    let target = parse_target(url, false).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut cfg =
        LoadConfig::from_plan(plan, target, data_dir).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (stages, passes) = engine_stages(plan);
    cfg.stages = stages;
    cfg.threads = threads.max(1);
    let total: Duration = cfg
        .warmup
        .iter()
        .chain(&cfg.stages)
        .filter_map(Stage::duration)
        .sum();
    if cfg
        .warmup
        .iter()
        .chain(&cfg.stages)
        .all(|s| s.duration().is_some())
    {
        cfg.hard_limit = total + cfg.timeout + Duration::from_secs(10);
    }
    // The engine's own flag: set by a halt (this measurement only) or, through the relay below,
    // by Ctrl-C (everything).
    let engine_stop = Arc::new(AtomicBool::new(false));
    cfg.stop = engine_stop.clone();
    let relay = StopRelay::start(stop.clone(), engine_stop.clone())?;
    let tags: Vec<String> = plan.requests.iter().map(|r| r.name.clone()).collect();
    let mut rec = Recorder::new(Some(out_dir), "", tags, Some(total), stack_name, quiet)?;
    let mut acc = RunAccumulator::with_passes(plan, stack_name, passes);
    let t0 = Instant::now();
    // signals on the same clock (host, stack cgroup, PostgreSQL waits, control, runtime)
    let mut sig_cfg = ceiling_stand::SignalConfig::from_targets(&sampler_targets, Some(url));
    sig_cfg.control_command = std::env::current_exe()
        .ok()
        .map(ceiling_stand::signals::control_command_of);
    let mut signals = ceiling_stand::SignalSampler::start(t0, sig_cfg);
    let (mut sampler, samples) = Sampler::with_channel(t0, Duration::from_secs(1), sampler_targets);
    let mut halt: Option<Halt> = None;
    // The last second after which the watch still found everything alive.
    let mut last_ok: Option<u32> = None;
    let res = ceiling_load::run(cfg, |s| {
        let fresh: Vec<_> = samples.try_iter().collect();
        for r in &fresh {
            acc.push_resource(r.clone());
        }
        signals.push_resources(&fresh);
        rec.signals(signals.take_sealed());
        rec.add_resources(fresh);
        rec.second(s);
        acc.push_second(s);
        if halt.is_none() {
            match watch() {
                None => last_ok = Some(s.t),
                Some(mut h) => {
                    if let Halt::PartExited(e) = &mut h {
                        // Alive when second `last_ok` was handed over (≈ its end + the engine's
                        // one-second delivery), so every second after it may be affected.
                        e.from_s = last_ok.map(|t| t as f64 + 1.0).unwrap_or(0.0);
                        if !quiet {
                            eprintln!();
                        }
                        eprintln!(
                            "[{stack_name}] {} EXITED ({}) at t≈{} s — stopping this stack's measurement; its shelves from then on are invalid",
                            e.part.title(),
                            e.status,
                            e.from_s
                        );
                        acc.stand_part_exited(e.clone());
                    }
                    halt = Some(h);
                    engine_stop.store(true, Ordering::Relaxed);
                }
            }
        }
    });
    relay.finish();
    sampler.stop();
    let rest: Vec<_> = samples.try_iter().collect();
    for r in &rest {
        acc.push_resource(r.clone());
    }
    signals.push_resources(&rest);
    rec.signals(signals.stop());
    let mut signal_notes = signals.notes();
    let cost = signals.cost();
    signal_notes.push(format!(
        "the signal sampler used {:.2}% of a core ({:.2} s in its threads, {:.2} s in the control, {:.2} s in its PostgreSQL backend over {:.0} s)",
        cost.cpu_pct(),
        cost.threads_cpu_s,
        cost.control_cpu_s,
        cost.postgres_cpu_s,
        cost.wall_s
    ));
    rec.add_resources(rest);
    rec.finish();
    let summary = res.map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut analysis = acc.finish();
    // why each failed shelf failed, from the same per-second rows the report shows
    ceiling_analyze::attribute_analysis(&mut analysis, &rec.rows, &rec.signal_rows);
    // and what the runtime held (heap, GC, threads) on every shelf
    ceiling_analyze::runtime_analysis(&mut analysis, &rec.signal_rows);
    for n in signal_notes {
        analysis.warnings.push(ceiling_analyze::Warning::new(
            ceiling_analyze::WarningKind::Other,
            format!("signals: {n}"),
        ));
    }
    match &halt {
        Some(Halt::StackDied(m)) => analysis.warnings.push(Warning::new(
            WarningKind::StackDied,
            format!("the stack died during the run: {m}"),
        )),
        Some(Halt::PartExited(_)) => {} // the analysis says it (warning, part_exits, reasons)
        None if summary.stopped_early => analysis.warnings.push(Warning::new(
            WarningKind::StoppedEarly,
            "the run was stopped early (signal or time bound); shelves after that point are missing",
        )),
        None => {}
    }
    if let Some(e) = rec.io_error.take() {
        analysis.warnings.push(Warning::new(WarningKind::Files, e));
    }
    Ok(Measured {
        analysis,
        rows: std::mem::take(&mut rec.rows),
        halt,
    })
}

/// Copies the run-wide stop flag (Ctrl-C) into one measurement's engine flag, every 50 ms, so a
/// halt of one measurement never looks like a Ctrl-C to the rest of the run.
struct StopRelay {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StopRelay {
    fn start(from: Arc<AtomicBool>, to: Arc<AtomicBool>) -> std::io::Result<StopRelay> {
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let thread = std::thread::Builder::new()
            .name("ceiling-stop-relay".into())
            .spawn(move || {
                while !d.load(Ordering::Relaxed) {
                    if from.load(Ordering::Relaxed) {
                        to.store(true, Ordering::Relaxed);
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })?;
        Ok(StopRelay {
            done,
            thread: Some(thread),
        })
    }

    fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs `ceiling run`.
pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let root = repo_root()?;
    let mut plan = ceiling_plan::load_plan(&a.plan).map_err(|e| anyhow::anyhow!("{e}"))?;
    if a.quick {
        plan = plan.scaled(plan.quick_scale);
    }
    if !a.stacks.is_empty() {
        plan.target.stacks = a.stacks.clone();
    }
    apply_load_flags(&mut plan, a.threads, a.no_keep_alive);
    if plan.target.stacks.is_empty() {
        bail!(
            "{}: no stacks to run: set target.stacks in the plan or pass --stacks",
            a.plan.display()
        );
    }
    // Unknown stacks and broken stack.toml files are reported before PostgreSQL starts.
    for name in &plan.target.stacks {
        ceiling_stand::StackSpec::load(&root.join("stacks"), name)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let id = run_id(&plan);
    let dir = a.stand.results.join(&id);
    std::fs::create_dir_all(dir.join("logs"))
        .with_context(|| format!("creating {}", dir.display()))?;
    // Set by the first Ctrl-C (see main): every step below stops on it.
    let stop = ceiling_stand::cancel_flag();

    let mut report = RunReport::new(&plan, id.clone());
    report.started = now_iso();
    eprintln!("ceiling run {} → {}", plan.name, dir.display());
    if plan.scaled_by != 1.0 {
        eprintln!("note: SCALED RUN — every duration × {} (--quick); numbers are indicative, not the source's full method", plan.scaled_by);
    }
    if !plan.load.keep_alive {
        eprintln!("note: keep-alive off — a new TCP connection for every request, its set-up inside the latency");
    }

    let opts = a.stand.options(&root, &dir);
    eprintln!(
        "stand: starting PostgreSQL{}…",
        match &plan.stand.pgbouncer {
            Some(b) => format!(
                " and PgBouncer ({} pooling, default_pool_size {})",
                b.pool_mode.as_str(),
                b.default_pool_size
            ),
            None => String::new(),
        }
    );
    let mut stand = match Stand::start(&opts, &plan.stand) {
        Ok(s) => s,
        Err(e) if ceiling_stand::cancelled() => {
            return stopped_early(&dir, &mut report, &series_none(), &e.to_string());
        }
        Err(e) => return Err(anyhow::anyhow!("{e}")),
    };
    eprintln!(
        "stand: PostgreSQL {} ready; preparing data (seed {})…",
        stand.postgres_version(),
        plan.stand.seed
    );
    let t = Instant::now();
    let data = match stand.prepare_data(plan.stand.seed) {
        Ok(d) => d,
        Err(e) if ceiling_stand::cancelled() => {
            stand.stop();
            return stopped_early(&dir, &mut report, &series_none(), &e.to_string());
        }
        Err(e) => return Err(anyhow::anyhow!("{e}")),
    };
    eprintln!(
        "stand: data ready in {:.1}s ({})",
        t.elapsed().as_secs_f64(),
        if data.reused { "reused" } else { "seeded" }
    );
    let data_dir = stand.data_dir().map(Path::to_path_buf);
    report.environment = serde_json::to_value(stand.fingerprint())?;
    if let Some(l) = stand.postgres_limits() {
        report.limits.insert("postgres".into(), l.clone());
    }
    if let Some(b) = stand.pgbouncer() {
        eprintln!(
            "stand: PgBouncer {} on 127.0.0.1:{} ({} pooling, default_pool_size {}); the stacks connect through it",
            b.binary().version,
            b.port(),
            b.settings().pool_mode.as_str(),
            b.settings().default_pool_size
        );
        report
            .limits
            .insert(Role::Pgbouncer.as_str().into(), b.limits_applied().clone());
    }
    let mut series = Series::new();
    let mut exit = ExitCode::SUCCESS;

    for (i, name) in plan.target.stacks.clone().iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            report
                .warnings
                .push(format!("stopped before stack `{name}`"));
            break;
        }
        if i > 0 && !plan.stand.cooldown.is_zero() {
            eprintln!(
                "cool-down {}…",
                ceiling_plan::format_duration(plan.stand.cooldown)
            );
            sleep_unless(plan.stand.cooldown, &stop);
        }
        match run_stack(
            &plan,
            &a,
            &mut stand,
            name,
            &dir,
            data_dir.as_deref(),
            &stop,
        ) {
            Ok((m, lim)) => {
                report.limits.insert(name.clone(), lim);
                series.insert(name.clone(), m.rows);
                report.stacks.push(m.analysis);
                if let Some(Halt::StackDied(_)) = m.halt {
                    // its analysis says so; the run goes on with the next stack
                    exit = ExitCode::from(1);
                }
                if let Some(Halt::PartExited(e)) = m.halt {
                    exit = ExitCode::from(1);
                    let what = format!("{} while `{name}` was measured", e.describe());
                    if !e.log_tail.is_empty() {
                        std::fs::write(
                            dir.join("logs")
                                .join(format!("{}-exit-{name}.txt", e.part.as_str())),
                            &e.log_tail,
                        )
                        .ok();
                    }
                    let last = i + 1 == plan.target.stacks.len();
                    match plan.stand.on_part_exit {
                        OnPartExit::Restart if !last && !stop.load(Ordering::Relaxed) => {
                            let part = e.part.title();
                            eprintln!(
                                "stand: restarting {part} (stand.on_part_exit = \"restart\")…"
                            );
                            let t = Instant::now();
                            // PostgreSQL's restart restarts PgBouncer too (a new port)
                            let restarted = if e.part == Role::Pgbouncer {
                                stand.restart_pgbouncer()
                            } else {
                                stand.restart_postgres()
                            };
                            match restarted {
                                Ok(_) => {
                                    eprintln!(
                                        "stand: {part} ready again in {:.1}s (PostgreSQL {})",
                                        t.elapsed().as_secs_f64(),
                                        stand.postgres_version()
                                    );
                                    report.warnings.push(format!(
                                        "{what}; {part} was restarted and the run went on with the next stack"
                                    ));
                                }
                                Err(err) => {
                                    let msg = format!(
                                        "{what}; restarting it failed, so the run stopped: {err}"
                                    );
                                    eprintln!("{msg}");
                                    report.warnings.push(msg);
                                    crate::compare_cmd::write_reports(&dir, &report, &series)?;
                                    break;
                                }
                            }
                        }
                        OnPartExit::Restart => report.warnings.push(what),
                        OnPartExit::Stop => {
                            let msg = format!(
                                "{what}; the run stopped there (stand.on_part_exit = \"stop\")"
                            );
                            eprintln!("{msg}");
                            report.warnings.push(msg);
                            crate::compare_cmd::write_reports(&dir, &report, &series)?;
                            break;
                        }
                    }
                }
            }
            Err(e) => {
                let msg = format!("stack `{name}` was not measured: {e:#}");
                eprintln!("{msg}");
                report.warnings.push(msg);
                exit = ExitCode::from(1);
            }
        }
        // Flush what we have after every stack, so an interrupted run keeps its results.
        crate::compare_cmd::write_reports(&dir, &report, &series)?;
    }
    stand.stop();
    write_and_print(&dir, &report, &series)?;
    if stop.load(Ordering::Relaxed) {
        return Ok(ExitCode::from(130));
    }
    Ok(exit)
}

fn series_none() -> Series {
    Series::new()
}

/// A run cancelled before any stack was measured: says where, writes the (empty) report so the
/// results directory explains itself, and exits 130.
fn stopped_early(
    dir: &Path,
    report: &mut RunReport,
    series: &Series,
    what: &str,
) -> anyhow::Result<ExitCode> {
    let msg = format!("stopped by a signal before any stack was measured: {what}");
    eprintln!("{msg}");
    report.warnings.push(msg);
    let files = crate::compare_cmd::write_reports(dir, report, series)?;
    eprintln!("results: {}", file_list(&files));
    Ok(ExitCode::from(130))
}

fn sleep_unless(d: Duration, stop: &AtomicBool) {
    let end = Instant::now() + d;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100).min(end - Instant::now()));
    }
}

/// Builds and starts a stack on a fresh database, runs the conformance suite, and restarts it on
/// a clean copy of the data (verify writes rows). Refuses an unverified stack unless allowed.
/// Returns the spec, the running stack and warnings for the report.
pub fn start_verified(
    plan: &Plan,
    stand: &Stand,
    name: &str,
    dir: &Path,
    allow_unverified: bool,
    rebuild: bool,
) -> anyhow::Result<(
    ceiling_stand::StackSpec,
    ceiling_stand::RunningStack,
    Vec<Warning>,
)> {
    let spec = stand.load_stack(name).map_err(|e| anyhow::anyhow!("{e}"))?;
    eprintln!("[{name}] building…");
    let t = Instant::now();
    let b = stand
        .build_stack(&spec, rebuild)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    eprintln!(
        "[{name}] build {} in {:.1}s",
        if b.skipped { "cached" } else { "done" },
        t.elapsed().as_secs_f64()
    );
    let mut warnings = Vec::new();
    if plan.stand.verify {
        let db = stand.reset_db().map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut stack = stand
            .start_stack(&spec, &plan.stand, db.clone())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        eprintln!("[{name}] verifying the contract at {}…", stack.url());
        let only = match &spec.conformance {
            Some(c) => {
                eprintln!(
                    "[{name}] PARTIAL CONTRACT (a baseline): checking {}",
                    c.describe()
                );
                warnings.push(Warning::new(WarningKind::PartialContract, format!(
                    "PARTIAL CONTRACT: a baseline that serves {}; its figures are a reference point, not a stack doing the API's work",
                    c.describe()
                )));
                c.only.clone()
            }
            None => Vec::new(),
        };
        let res = crate::verify_cmd::verify_stack(stand, &spec, &stack, &db, &only);
        stack.stop();
        match res {
            Ok(v) if v.failed == 0 => eprintln!("[{name}] verify: all {} cases passed", v.passed),
            Ok(v) => {
                let detail = format!(
                    "verify: {} of {} cases failed ({})",
                    v.failed,
                    v.passed + v.failed,
                    v.failed_names.join(", ")
                );
                std::fs::write(dir.join("logs").join(format!("verify-{name}.txt")), &v.text).ok();
                if !allow_unverified {
                    bail!("{detail}; refusing to measure a stack that does not do the contract's work (see logs/verify-{name}.txt; --allow-unverified overrides and is recorded)");
                }
                eprintln!("[{name}] {detail} — measuring anyway (--allow-unverified)");
                warnings.push(Warning::new(
                    WarningKind::Unverified,
                    format!("UNVERIFIED: {detail}; measured with --allow-unverified"),
                ));
            }
            Err(e) => {
                if !allow_unverified {
                    bail!("verify could not run: {e:#} (--allow-unverified measures anyway and records it)");
                }
                eprintln!(
                    "[{name}] verify could not run ({e:#}) — measuring anyway (--allow-unverified)"
                );
                warnings.push(Warning::new(
                    WarningKind::Unverified,
                    format!(
                        "UNVERIFIED: verify could not run ({e:#}); measured with --allow-unverified"
                    ),
                ));
            }
        }
    } else {
        warnings.push(Warning::new(
            WarningKind::VerifySkipped,
            "verify skipped: the plan sets stand.verify = false",
        ));
    }
    let db = stand.reset_db().map_err(|e| anyhow::anyhow!("{e}"))?;
    eprintln!("[{name}] starting on a fresh copy of the data…");
    let stack = stand
        .start_stack(&spec, &plan.stand, db)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    eprintln!(
        "[{name}] healthy at {}; limits: {}",
        stack.url(),
        stack.limits_applied().summary()
    );
    Ok((spec, stack, warnings))
}

/// One stack's lifecycle; returns the measurement and the limits record.
fn run_stack(
    plan: &Plan,
    a: &RunArgs,
    stand: &mut Stand,
    name: &str,
    dir: &Path,
    data_dir: Option<&Path>,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(Measured, LimitsApplied)> {
    let (_spec, mut stack, mut warnings) =
        start_verified(plan, stand, name, dir, a.allow_unverified, a.rebuild)?;
    let lim = stack.limits_applied().clone();
    let _ = stand.stat_statements_reset();
    let targets = stand.sampler_targets(Some(&stack), Some(std::process::id()));
    let out = dir.join(name);
    let url = stack.url();
    let res = measure_watched(
        plan,
        name,
        &url,
        data_dir,
        &out,
        targets,
        plan.load.threads,
        stop,
        a.quiet,
        || {
            // PostgreSQL first: a stack whose database died fails because of it.
            if let Some(status) = stand.postgres_exited() {
                return Some(Halt::PartExited(PartExit {
                    part: Role::Postgres,
                    from_s: 0.0, // set by measure_watched from the last second seen alive
                    status,
                    log_tail: stand.postgres().map(|p| p.log_tail(10)).unwrap_or_default(),
                }));
            }
            // then PgBouncer, when the stacks reach PostgreSQL through it
            if let Some(status) = stand.pgbouncer_exited() {
                return Some(Halt::PartExited(PartExit {
                    part: Role::Pgbouncer,
                    from_s: 0.0,
                    status,
                    log_tail: stand
                        .pgbouncer()
                        .map(|p| p.log_tail(10))
                        .unwrap_or_default(),
                }));
            }
            if stack.is_alive() {
                None
            } else {
                Some(Halt::StackDied(
                    stack.crash_report().unwrap_or_else(|| "exited".into()),
                ))
            }
        },
    );
    let pg_dead = matches!(
        res,
        Ok(Measured {
            halt: Some(Halt::PartExited(_)),
            ..
        })
    );
    let statements = if pg_dead {
        None
    } else {
        stand.stat_statements(true).ok()
    };
    // the bank's books, checked on this stack's own copy of the data before the next one
    let money = if pg_dead {
        None
    } else {
        match stand.money_check() {
            Ok(m) => m.filter(|m| m.touched()),
            Err(e) => {
                warnings.push(Warning::new(
                    WarningKind::Other,
                    format!("money conservation could not be checked: {e}"),
                ));
                None
            }
        }
    };
    let crash = if stack.is_alive() {
        None
    } else {
        stack.crash_report()
    };
    stack.stop();
    let mut m = res?;
    m.analysis.warnings.extend(warnings);
    if let Some(mc) = money {
        if !mc.conserved() {
            m.analysis
                .warnings
                .push(Warning::new(WarningKind::MoneyNotConserved, mc.describe()));
        }
        m.analysis.money = Some(mc);
    }
    if let Some(c) = crash {
        m.analysis.warnings.push(Warning::new(
            WarningKind::StackLog,
            format!("stack log tail:\n{c}"),
        ));
    }
    if let Some(st) = statements {
        std::fs::create_dir_all(&out).ok();
        std::fs::write(
            out.join("pg_stat_statements.json"),
            serde_json::to_string_pretty(&st)?,
        )
        .ok();
    }
    Ok((m, lim))
}
