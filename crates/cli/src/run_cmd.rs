//! `ceiling run PLAN`: the lab end to end — embedded PostgreSQL, each stack in turn (build, start
//! under limits, verify, warm up, measure, stop, cool down), analysis by the plan's method, and
//! the report files in `results/<run-id>/`.

use anyhow::{bail, Context};
use ceiling_analyze::{Warning, WarningKind};
use ceiling_lab::{
    apply_load_flags, measure_stack, now_iso, repo_root, run_id, Halt, StackRunOptions,
};
use ceiling_plan::OnPartExit;
use ceiling_report::{RunReport, Series};
use ceiling_stand::{Role, Stand, StandOptions};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Arguments of `ceiling run`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ceiling run plans/000-status-mixed.toml --quick --stacks go-pgx     (the demo: ~3 min)
  ceiling run plans/000-status-mixed.toml                              (source 000 at full length)
  ceiling run plans/003-people.toml --quick
  ceiling run plans/004-ping.toml --no-keep-alive                      (a new connection per request)
  ceiling run plans/004-db-ping-pgbouncer.toml --allow-unverified      (through PgBouncer, transaction pooling)
  ceiling run plans/000-status-mixed.toml --db-url postgres://bench:bench@127.0.0.1:5432/bench
  ceiling run plans/004-ping.toml --url http://10.0.0.5:8080 --allow-remote --agents 10.0.0.2:7700,10.0.0.3:7700 --agent-token-file tok --stack-agent 10.0.0.5:7700
                                                                       (three machines: generators, the service, this coordinator)")]
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
    #[command(flatten)]
    pub agent: crate::agents::AgentFlags,
    /// Measure a service that is already running at this base URL with the plan's load and
    /// analysis, instead of the stand's stacks (no PostgreSQL or stack is started; loopback
    /// unless --allow-remote). With --db-url, that database's wait events are sampled too.
    #[arg(long, conflicts_with = "stacks")]
    pub url: Option<String>,
    /// Data directory for the plan's `@data/` sources with --url.
    #[arg(long, requires = "url")]
    pub data_dir: Option<PathBuf>,
    /// Allow a non-loopback --url (only a service you own).
    #[arg(long, requires = "url")]
    pub allow_remote: bool,
    /// With --url: a `ceiling agent --sample-stack PID` beside the service, whose samples give
    /// its CPU and memory (same token and clock bound as --agents).
    #[arg(long, value_name = "HOST:PORT", requires = "url")]
    pub stack_agent: Option<String>,
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
    /// Print run.json on stdout instead of the table (the files are written as always).
    #[arg(long)]
    pub json: bool,
}

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

/// [`write_and_print`], or with `--json` run.json's content on stdout instead of the table (and,
/// with `--quiet`, nothing else: a cluster's log of the run is then run.json).
fn write_and_print_as(
    a: &RunArgs,
    dir: &Path,
    report: &RunReport,
    series: &Series,
) -> anyhow::Result<()> {
    if !a.json {
        return write_and_print(dir, report, series);
    }
    let files = crate::compare_cmd::write_reports(dir, report, series)?;
    println!("{}", serde_json::to_string_pretty(report)?);
    if !a.quiet {
        eprintln!("results: {}", file_list(&files));
    }
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
    if let Some(url) = a.url.clone() {
        return run_url(&a, &plan, &url);
    }
    if plan.target.stacks.is_empty() {
        bail!(
            "{}: no stacks to run: set target.stacks in the plan or pass --stacks",
            a.plan.display()
        );
    }
    let agents = a.agent.agents()?;
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
    print_load_notes(&plan, agents.as_ref());
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
    report.environment = Some(stand.fingerprint());
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
            report.warnings.push(Warning::new(
                WarningKind::StoppedEarly,
                format!("stopped before stack `{name}`"),
            ));
            break;
        }
        if i > 0 && !plan.stand.cooldown.is_zero() {
            eprintln!(
                "cool-down {}…",
                ceiling_plan::format_duration(plan.stand.cooldown)
            );
            sleep_unless(plan.stand.cooldown, &stop);
        }
        match measure_stack(
            &plan,
            StackRunOptions {
                allow_unverified: a.allow_unverified,
                rebuild: a.rebuild,
                quiet: a.quiet,
                agents: agents.as_ref(),
            },
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
                            let restarted = ceiling_lab::restart_part(&mut stand, e.part);
                            match restarted {
                                Ok(_) => {
                                    eprintln!(
                                        "stand: {part} ready again in {:.1}s (PostgreSQL {})",
                                        t.elapsed().as_secs_f64(),
                                        stand.postgres_version()
                                    );
                                    report.warnings.push(Warning::new(WarningKind::PartExited, format!(
                                        "{what}; {part} was restarted and the run went on with the next stack"
                                    )));
                                }
                                Err(err) => {
                                    let msg = format!(
                                        "{what}; restarting it failed, so the run stopped: {err}"
                                    );
                                    eprintln!("{msg}");
                                    report
                                        .warnings
                                        .push(Warning::new(WarningKind::PartExited, msg));
                                    crate::compare_cmd::write_reports(&dir, &report, &series)?;
                                    break;
                                }
                            }
                        }
                        OnPartExit::Restart => report
                            .warnings
                            .push(Warning::new(WarningKind::PartExited, what)),
                        OnPartExit::Stop => {
                            let msg = format!(
                                "{what}; the run stopped there (stand.on_part_exit = \"stop\")"
                            );
                            eprintln!("{msg}");
                            report
                                .warnings
                                .push(Warning::new(WarningKind::PartExited, msg));
                            crate::compare_cmd::write_reports(&dir, &report, &series)?;
                            break;
                        }
                    }
                }
            }
            Err(e) => {
                let msg = format!("stack `{name}` was not measured: {e:#}");
                eprintln!("{msg}");
                report
                    .warnings
                    .push(Warning::new(WarningKind::StackNotMeasured, msg));
                exit = ExitCode::from(1);
            }
        }
        // Flush what we have after every stack, so an interrupted run keeps its results.
        crate::compare_cmd::write_reports(&dir, &report, &series)?;
    }
    stand.stop();
    write_and_print_as(&a, &dir, &report, &series)?;
    if stop.load(Ordering::Relaxed) {
        return Ok(ExitCode::from(130));
    }
    Ok(exit)
}

/// `ceiling run PLAN --url URL`: the plan's load and analysis against a service that is already
/// running (on this host, or with --allow-remote on another), with its resources from a
/// `--stack-agent` beside it when given. One "stack", named `url`.
fn run_url(a: &RunArgs, plan: &ceiling_plan::Plan, url: &str) -> anyhow::Result<ExitCode> {
    ceiling_load::parse_target(url, a.allow_remote).map_err(|e| anyhow::anyhow!("{e}"))?;
    let agents = a.agent.agents()?;
    let stack_agent = a.agent.stack_agent(a.stack_agent.as_deref())?;
    let id = run_id(plan);
    let dir = a.stand.results.join(&id);
    let name = "url";
    std::fs::create_dir_all(dir.join(name))
        .with_context(|| format!("creating {}", dir.display()))?;
    let stop = ceiling_stand::cancel_flag();
    let mut report = RunReport::new(plan, id);
    report.started = now_iso();
    report.environment = Some(ceiling_stand::fingerprint(
        None,
        &ceiling_stand::CgroupSystem::detect(),
    ));
    if !a.quiet {
        eprintln!(
            "ceiling run {} against {url} (no stand: the service is already running{}) → {}",
            plan.name,
            if stack_agent.is_some() {
                "; its CPU and memory from the agent beside it"
            } else {
                "; its CPU and memory are not sampled"
            },
            dir.display()
        );
        print_load_notes(plan, agents.as_ref());
    }
    let mut targets = vec![ceiling_stand::SampleTarget::process(
        Role::Generator,
        std::process::id(),
    )];
    // the service's database, when named: its wait events over SQL (no process to sample here)
    if let Some(db) = &a.stand.db_url {
        let cfg =
            ceiling_stand::DbConfig::from_url(db).map_err(|e| anyhow::anyhow!("--db-url: {e}"))?;
        targets.push(ceiling_stand::SampleTarget::process(Role::Postgres, 0).with_db(cfg));
    }
    let m = ceiling_lab::measure_watched(
        ceiling_lab::MeasureSpec {
            plan,
            stack: name,
            url,
            data_dir: a.data_dir.as_deref(),
            out_dir: &dir.join(name),
            sampler_targets: targets,
            threads: plan.load.threads,
            quiet: a.quiet,
            agents: agents.as_ref(),
            stack_agent: stack_agent.as_ref(),
        },
        &stop,
        || None,
    )?;
    let mut series = Series::new();
    series.insert(name.to_string(), m.rows);
    report.stacks.push(m.analysis);
    write_and_print_as(a, &dir, &report, &series)?;
    if stop.load(Ordering::Relaxed) {
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// The lines a run prints about how its load is made: scaled, and from which agents.
fn print_load_notes(plan: &ceiling_plan::Plan, agents: Option<&crate::agents::Agents>) {
    if plan.scaled_by != 1.0 {
        eprintln!("note: SCALED RUN — every duration × {} (--quick); numbers are indicative, not the source's full method", plan.scaled_by);
    }
    if let Some(g) = agents {
        eprintln!(
            "generator: {} agents ({}), their seconds merged here",
            g.addresses.len(),
            g.addresses.join(", ")
        );
    }
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
    report
        .warnings
        .push(Warning::new(WarningKind::StoppedEarly, msg));
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
