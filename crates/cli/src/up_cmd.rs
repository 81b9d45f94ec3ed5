//! `ceiling up STACK`: a verified reference stack kept running on the embedded stand, so one's
//! own tools (wrk, k6, a profiler, a browser) can be pointed at it. The stand does what a run
//! does before it measures — PostgreSQL with the plan's settings, the data, the build, the
//! conformance suite, a fresh copy of the data, the stack under the plan's limits and placement —
//! then prints where everything is and waits. It stops by itself after `--for` (every process
//! ceiling starts is bounded in time), on Ctrl-C, or when the stack dies (exit 1, with its log).

use anyhow::Context;
use ceiling_lab::repo_root;
use ceiling_plan::{format_duration, parse_duration};
use ceiling_stand::{StandOptions, BENCH, BENCH_PASSWORD};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Arguments of `ceiling up`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ceiling up go-pgx                                        (source 000's stand settings, up to 1 h)
  ceiling up spring-mvc-jdbc --plan plans/003-people.toml --for 15m
  wrk -t1 -c64 -d30s http://127.0.0.1:PORT/status/ID       (in another terminal: the URL and an id file are printed)")]
pub struct UpArgs {
    /// The stack to keep running (see stacks/).
    pub stack: String,
    /// The plan whose `[stand]` settings start PostgreSQL and the stack (limits, pool size,
    /// workers, `[stand.env]`, PgBouncer, placement).
    #[arg(long, default_value = "plans/000-status-mixed.toml")]
    pub plan: PathBuf,
    /// Stop by itself after this long.
    #[arg(long = "for", value_name = "DURATION", default_value = "1h")]
    pub stay: String,
    /// Keep it running even when `ceiling verify` fails for it (said so).
    #[arg(long)]
    pub allow_unverified: bool,
    /// Rebuild the stack even when its source is unchanged.
    #[arg(long)]
    pub rebuild: bool,
}

/// Runs `ceiling up`.
pub fn run(a: UpArgs) -> anyhow::Result<ExitCode> {
    let root = repo_root()?;
    let plan = ceiling_plan::load_plan(&a.plan)?;
    let stay = parse_duration(&a.stay).map_err(|e| anyhow::anyhow!("--for: {e}"))?;
    if stay.is_zero() {
        anyhow::bail!("--for must be longer than 0s");
    }
    // A stack that does not exist (or a broken stack.toml) is known before PostgreSQL starts.
    ceiling_stand::StackSpec::load(&root.join("stacks"), &a.stack)?;
    let mut opts = StandOptions::new(&root);
    let dir = opts.cache_dir.join("up").join(&a.stack);
    std::fs::create_dir_all(dir.join("logs"))
        .with_context(|| format!("creating {}", dir.display()))?;
    opts.log_dir = dir.join("logs");
    let progress = ceiling_lab::Progress::new(|l| eprintln!("{l}"))
        .with_views(ceiling_report::live::TerminalView::maker());
    let mut stand = ceiling_lab::open_stand(&opts, &plan.stand, &progress)?;
    let (_spec, mut stack, warnings) = ceiling_lab::start_verified(
        &plan,
        &stand,
        &a.stack,
        &dir,
        a.allow_unverified,
        a.rebuild,
        false,
        &progress,
    )?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let env = |k: &str| {
        stack
            .env()
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    println!("{} is up at {}", a.stack, stack.url());
    if let Some(ca) = stack.tls_cert() {
        println!(
            "  and with TLS at {} (certificate: {}; e.g. curl --cacert it)",
            stack.load_url(),
            ca.display()
        );
    }
    println!(
        "  its database: postgres://{BENCH}:{BENCH_PASSWORD}@{}:{}/{} (a fresh copy of the seed data)",
        env("DB_HOST"),
        env("DB_PORT"),
        env("DB_NAME")
    );
    if let Some(d) = stand.data_dir() {
        println!(
            "  ids for requests: {} (status_ids.csv, client_ids.csv, …)",
            d.display()
        );
    }
    println!("  limits: {}", stack.limits_applied().summary());
    println!("  its log: {}", stack.log_path().display());
    println!("stops by itself in {} — or Ctrl-C", format_duration(stay));
    let t = Instant::now();
    let code = loop {
        if ceiling_stand::cancelled() {
            eprintln!("stopping (Ctrl-C)…");
            break 0;
        }
        if !stack.is_alive() {
            eprintln!(
                "{} exited: {}\n{}",
                a.stack,
                stack.exit_status().unwrap_or_default(),
                stack.log_tail(20)
            );
            break 1;
        }
        if t.elapsed() >= stay {
            eprintln!("stopping: {} have passed (--for)", format_duration(stay));
            break 0;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    stack.stop();
    stand.stop();
    Ok(ExitCode::from(code))
}
