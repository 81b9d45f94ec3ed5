//! `ceiling verify`: the conformance suite (crates/verify) against a stack — started by the stand
//! when given a stack name, or already running at `--url` with `--db-url` for the database truth.

use anyhow::{bail, Context};
use ceiling_lab::{repo_root, run_suite};
use ceiling_stand::{StackSpec, StandOptions};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `ceiling verify`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ceiling verify go-pgx                      (the stand starts PostgreSQL and the stack)
  ceiling verify --url http://127.0.0.1:8080 --db-url postgres://postgres:pw@127.0.0.1:5432/bench
  ceiling verify go-pgx --only status,sql-transfer --json
  ceiling verify go-pgx --plan plans/004-db-ping-pgbouncer-unprepared.toml   (the plan's [stand]: PgBouncer, env, PostgreSQL)")]
pub struct VerifyArgs {
    /// A stack in stacks/ to build, start and check.
    #[arg(conflicts_with = "url")]
    pub stack: Option<String>,
    /// Check a service that is already running.
    #[arg(long, requires = "db_url")]
    pub url: Option<String>,
    /// The service's database, as a role that can read pg_stat_statements (with --url; or an
    /// existing server for the stand to use with a stack name).
    #[arg(long)]
    pub db_url: Option<String>,
    /// Only these cases or groups (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Rebuild the stack even when its source is unchanged.
    #[arg(long)]
    pub rebuild: bool,
    /// Start the stand and the stack with this plan's `[stand]` settings (PostgreSQL's version
    /// and settings, PgBouncer, pool size, workers, `[stand.env]`) instead of the defaults.
    #[arg(long, conflicts_with = "url")]
    pub plan: Option<PathBuf>,
}

/// Runs `ceiling verify`.
pub fn run(a: VerifyArgs) -> anyhow::Result<ExitCode> {
    let report = if let Some(url) = &a.url {
        ceiling_load::parse_target(url, false)?;
        let db = ceiling_verify::DbConfig::from_url(a.db_url.as_deref().unwrap_or_default())
            .map_err(|e| anyhow::anyhow!("--db-url: {e}"))?;
        run_suite(url, db, &a.only, None)?
    } else {
        let Some(name) = &a.stack else {
            bail!("give a stack name (see stacks/) or --url with --db-url")
        };
        let root = repo_root()?;
        // A stack that does not exist (or has a broken stack.toml) is known before PostgreSQL starts.
        let spec = StackSpec::load(&root.join("stacks"), name)?;
        let mut opts = StandOptions::new(&root);
        opts.db_url = a.db_url.clone();
        let log_dir: PathBuf = opts.cache_dir.join("logs");
        opts.log_dir = log_dir;
        let settings = match &a.plan {
            Some(p) => ceiling_plan::load_plan(p)?.stand,
            None => ceiling_plan::parse_plan("name = \"verify\"\n[[requests]]\nname = \"x\"\npath = \"/\"\n[[stages]]\nhold = 1\nduration = \"1s\"\n", std::path::Path::new("<verify>"))?
                .stand,
        };
        let mut stand = ceiling_lab::open_stand(
            &opts,
            &settings,
            &ceiling_lab::Progress::new(|l| eprintln!("{l}"))
                .with_views(ceiling_report::live::TerminalView::maker()),
        )?;
        eprintln!("[{name}] building…");
        let r = stand
            .build_stack(&spec, a.rebuild)
            .map_err(anyhow::Error::from)
            .and_then(|_| {
                let (only, partial) = ceiling_lab::verify::cases_for(&spec, &a.only);
                if let (true, Some(what)) = (a.only.is_empty(), partial) {
                    eprintln!("[{name}] PARTIAL CONTRACT (a baseline): checking {what}");
                }
                ceiling_lab::verify::verify_fresh(&stand, &spec, &settings, &only, |url| {
                    eprintln!("[{name}] verifying {url}…")
                })
                .context("running the conformance suite")
            });
        stand.stop();
        r?
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{}", ceiling_verify::render_text(&report));
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
