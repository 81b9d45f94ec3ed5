//! `ceiling run PLAN`: the lab end to end — embedded PostgreSQL, each stack in turn (build, start
//! under limits, verify, warm up, measure, stop, cool down), analysis by the plan's method, and
//! the report files in `results/<run-id>/`. The flags become the plan's settings and a
//! [`RunSetup`] here; the stacks' turns run in `ceiling_lab`.

use anyhow::{bail, Context};
use ceiling_analyze::{Warning, WarningKind};
use ceiling_lab::{
    apply_load_flags, now_iso, repo_root, rounds_of, run_id, Progress, RunContext, RunSetup,
};
use ceiling_records::{RunReport, Series};
use ceiling_stand::{Role, StandOptions};
use clap::Args;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

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
    /// Measure each stack's repetitions in one start, the stacks one after the other. By
    /// default a closed model's repetitions of several stacks are interleaved: each repetition
    /// is a start of its own with the plan's warm-up, the stacks taking turns (A B A B …), so
    /// the machine's drift falls on all alike.
    #[arg(long)]
    pub no_interleave: bool,
    #[command(flatten)]
    pub agent: crate::agents::AgentFlags,
    /// Measure a service that is already running at this base URL with the plan's load and
    /// analysis, instead of the stand's stacks (no PostgreSQL or stack is started; loopback
    /// unless --allow-remote). With --db-url, that database's wait events are sampled too.
    #[arg(long, conflicts_with = "stacks")]
    pub url: Option<String>,
    #[arg(long = "assert", value_name = "GATE", help = crate::gates::HELP)]
    pub asserts: Vec<String>,
    /// Serve the per-second figures in Prometheus' text format at http://ADDR/metrics while it
    /// runs (e.g. 127.0.0.1:9464; docs/grafana-dashboard.json reads them from Prometheus).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
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
    #[command(flatten)]
    pub engine: EngineArgs,
    /// No progress line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Print run.json on stdout instead of the table (the files are written as always).
    #[arg(long)]
    pub json: bool,
}

/// How the generator runs (`run`, `search`): keep-alive, the ticked engine, real-time scheduling.
#[derive(Args, Debug, Clone)]
pub struct EngineArgs {
    /// Open a new TCP connection for every request (overrides the plan's load.keep_alive; the
    /// connection's set-up is inside each request's latency).
    #[arg(long)]
    pub no_keep_alive: bool,
    /// The ticked engine with this tick (e.g. `2ms`; overrides the plan's load.tick): the open
    /// model woken once per tick instead of once per request, the closed model once per batch of
    /// responses, responses timed by the kernel's receive stamps (experimental, issue 36;
    /// HTTP/1.1 cleartext with keep-alive only).
    #[arg(long)]
    pub tick: Option<String>,
    /// The ticked engine's I/O back end (overrides the plan's load.io): `auto` (io_uring where
    /// the kernel has what it needs, else epoll, said in each shelf's notes), `epoll` or
    /// `io_uring` (refused with the reason where the kernel cannot give it).
    #[arg(long, value_name = "auto|epoll|io_uring")]
    pub io: Option<String>,
    /// Run the generator's threads under real-time scheduling (SCHED_FIFO priority 1; overrides
    /// the plan's load.realtime): on a box where the generator shares cores with the stack and
    /// PostgreSQL it is then never the part that waits for a core. Needs CAP_SYS_NICE (root);
    /// refused before anything starts without it. Recorded in run.json.
    #[arg(long)]
    pub realtime: bool,
}

impl EngineArgs {
    /// The options as the lab takes them, with `--threads` (whose help differs per command).
    pub fn flags(&self, threads: Option<usize>) -> ceiling_lab::LoadFlags<'_> {
        ceiling_lab::LoadFlags {
            threads,
            no_keep_alive: self.no_keep_alive,
            tick: self.tick.as_deref(),
            io: self.io.as_deref(),
            realtime: self.realtime,
        }
    }
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
    let gates = crate::gates::parse(&a.asserts)?;
    crate::gates::metrics_listen(a.metrics_listen.as_deref())?;
    let root = repo_root()?;
    let mut plan = ceiling_plan::load_plan(&a.plan)?;
    if a.quick {
        plan = plan.scaled(plan.quick_scale);
    }
    if !a.stacks.is_empty() {
        plan.target.stacks = a.stacks.clone();
    }
    apply_load_flags(&mut plan, &a.engine.flags(a.threads))?;
    if let Some(url) = a.url.clone() {
        return run_url(&a, &plan, &url, &gates);
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
        ceiling_stand::StackSpec::load(&root.join("stacks"), name)?;
    }
    let rounds = rounds_of(&plan, a.no_interleave);
    if rounds > 0 {
        let mut seen = BTreeSet::new();
        if let Some(twice) = plan.target.stacks.iter().find(|s| !seen.insert(*s)) {
            bail!(
                "stack `{twice}` is listed twice: an interleaved run keeps one set of files per stack — list each stack once, or pass --no-interleave"
            );
        }
    }
    let id = run_id(&plan);
    let dir = a.stand.results.join(&id);
    std::fs::create_dir_all(dir.join("logs"))
        .with_context(|| format!("creating {}", dir.display()))?;
    // Set by the first Ctrl-C (see main): every step below stops on it.
    let stop = ceiling_stand::cancel_flag();

    let mut report = RunReport::new(&plan, id.clone());
    report.started = now_iso();
    if rounds > 0 {
        report.plan.interleaved_rounds = rounds;
        report.plan.total_duration_s = plan.run_duration_in_rounds().as_secs_f64();
    }
    eprintln!("ceiling run {} → {}", plan.name, dir.display());
    print_load_notes(&plan, agents.as_ref());
    if !plan.load.keep_alive {
        eprintln!("note: keep-alive off — a new TCP connection for every request, its set-up inside the latency");
    }

    let opts = a.stand.options(&root, &dir);
    let progress =
        Progress::new(|l| eprintln!("{l}")).with_views(ceiling_report::live::TerminalView::maker());
    let mut stand = match ceiling_lab::open_stand(&opts, &plan.stand, &progress) {
        Ok(s) => s,
        Err(e) if ceiling_stand::cancelled() => {
            return stopped_early(&dir, &mut report, &Series::new(), &e.to_string());
        }
        Err(e) => return Err(e.into()),
    };
    ceiling_lab::record_stand(&stand, &mut report);
    let mut series = Series::new();
    let setup = RunSetup {
        allow_unverified: a.allow_unverified,
        rebuild: a.rebuild,
        quiet: a.quiet,
        agents,
        rounds,
    };
    let mut checkpoint = |r: &RunReport, s: &Series| {
        crate::compare_cmd::write_reports(&dir, r, s)
            .map(|_| ())
            .map_err(ceiling_lab::LabError::checkpoint)
    };
    let ran = ceiling_lab::run_stacks(
        &mut RunContext {
            plan: &plan,
            setup: &setup,
            dir: &dir,
            stop: &stop,
            progress,
            checkpoint: &mut checkpoint,
        },
        &mut stand,
        &mut report,
        &mut series,
    );
    stand.stop();
    let exit = ran?;
    write_and_print_as(&a, &dir, &report, &series)?;
    if stop.load(Ordering::Relaxed) {
        return Ok(ExitCode::from(130));
    }
    Ok(crate::gates::finish_report(&gates, &report, exit))
}

/// `ceiling run PLAN --url URL`: the plan's load and analysis against a service that is already
/// running (on this host, or with --allow-remote on another), with its resources from a
/// `--stack-agent` beside it when given. One "stack", named `url`.
fn run_url(
    a: &RunArgs,
    plan: &ceiling_plan::Plan,
    url: &str,
    gates: &[ceiling_compare::gate::Gate],
) -> anyhow::Result<ExitCode> {
    ceiling_load::parse_target(url, a.allow_remote)?;
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
    ceiling_lab::record_no_stand(&mut report);
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
            metrics_url: None,
            data_dir: a.data_dir.as_deref(),
            out_dir: &dir.join(name),
            sampler_targets: targets,
            threads: plan.load.threads,
            quiet: a.quiet,
            agents: agents.as_ref(),
            stack_agent: stack_agent.as_ref(),
            round: None,
            progress: &Progress::new(|l| eprintln!("{l}"))
                .with_views(ceiling_report::live::TerminalView::maker()),
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
    Ok(crate::gates::finish_report(gates, &report, 0))
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
