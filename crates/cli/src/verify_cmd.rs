//! `ceiling verify`: the conformance suite (crates/verify) against a stack — started by the stand
//! when given a stack name, or already running at `--url` with `--db-url` for the database truth.

use crate::run_cmd::repo_root;
use anyhow::{bail, Context};
use ceiling_stand::{DbConfig, RunningStack, StackSpec, Stand, StandOptions};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// What `ceiling run` needs to know from a verify pass.
pub struct VerifySummary {
    /// Cases passed.
    pub passed: usize,
    /// Cases failed.
    pub failed: usize,
    /// Names of failed cases.
    pub failed_names: Vec<String>,
    /// The full text report.
    pub text: String,
}

fn to_verify_db(a: &DbConfig) -> ceiling_verify::DbConfig {
    ceiling_verify::DbConfig {
        host: a.host.clone(),
        port: a.port,
        user: a.user.clone(),
        password: a.password.clone(),
        dbname: a.dbname.clone(),
    }
}

fn run_suite(
    url: &str,
    db: ceiling_verify::DbConfig,
    only: &[String],
    fairness: Option<ceiling_verify::FairnessExpect>,
) -> anyhow::Result<ceiling_verify::VerifyReport> {
    let mut cfg = ceiling_verify::VerifyConfig::new(url, db);
    cfg.only = only.to_vec();
    // a partial-contract stack is still held to what it declares about its pool and keep-alive
    if fairness.is_some() && !cfg.only.is_empty() && !cfg.only.iter().any(|o| o == "fairness") {
        cfg.only.push("fairness".into());
    }
    cfg.fairness = fairness;
    cfg.cancel = Some(ceiling_stand::cancel_flag());
    ceiling_verify::verify(&cfg).map_err(|e| anyhow::anyhow!("{e}"))
}

/// What the stack's `[fairness]` table means for this start: the pool it was given
/// (`DB_POOL_SIZE`, `WORKERS` as the stand set them) and what it says it opens up front. The
/// pool is not checked behind PgBouncer (PostgreSQL sees PgBouncer's connections, not the
/// stack's).
fn fairness_expect(
    stand: &Stand,
    spec: &StackSpec,
    stack: &RunningStack,
) -> anyhow::Result<Option<ceiling_verify::FairnessExpect>> {
    let Some(f) = &spec.fairness else {
        return Ok(None);
    };
    let env = |k: &str, default: u32| {
        stack
            .env()
            .iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| v.parse::<u32>().ok())
            .unwrap_or(default)
    };
    let size = env("DB_POOL_SIZE", spec.settings.pool_size);
    let workers = env("WORKERS", spec.settings.workers);
    let open = f
        .open_at_start(size, workers)
        .map_err(|e| anyhow::anyhow!("{}: fairness.pool_open_at_start {e}", spec.file.display()))?;
    Ok(Some(ceiling_verify::FairnessExpect {
        pool: stand
            .pgbouncer()
            .is_none()
            .then_some(ceiling_verify::PoolExpect {
                size,
                open_at_start: open,
            }),
        keep_alive_max_requests: f.keep_alive_max_requests,
    }))
}

/// Runs the conformance suite against a started stack whose database is `db` (only `only`'s
/// cases when not empty: a baseline's declared part of the contract), and the `fairness` group
/// against what its stack.toml declares. Statement counting reads pg_stat_statements as the
/// stand's superuser, on the stack's database.
pub fn verify_stack(
    stand: &Stand,
    spec: &StackSpec,
    stack: &RunningStack,
    db: &DbConfig,
    only: &[String],
) -> anyhow::Result<VerifySummary> {
    let admin = stand.admin().config.with_db(&db.dbname);
    let fairness = fairness_expect(stand, spec, stack)?;
    let r = run_suite(&stack.url(), to_verify_db(&admin), only, fairness)?;
    Ok(VerifySummary {
        passed: r.passed(),
        failed: r.failed(),
        failed_names: r.failures().map(|c| c.name.clone()).collect(),
        text: ceiling_verify::render_text(&r),
    })
}

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
        ceiling_load::parse_target(url, false).map_err(|e| anyhow::anyhow!("{e}"))?;
        let db = ceiling_verify::DbConfig::from_url(a.db_url.as_deref().unwrap_or_default())
            .map_err(|e| anyhow::anyhow!("--db-url: {e}"))?;
        run_suite(url, db, &a.only, None)?
    } else {
        let Some(name) = &a.stack else {
            bail!("give a stack name (see stacks/) or --url with --db-url")
        };
        let root = repo_root()?;
        // A stack that does not exist (or has a broken stack.toml) is known before PostgreSQL starts.
        let spec =
            StackSpec::load(&root.join("stacks"), name).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut opts = StandOptions::new(&root);
        opts.db_url = a.db_url.clone();
        let log_dir: PathBuf = opts.cache_dir.join("logs");
        opts.log_dir = log_dir;
        let settings = match &a.plan {
            Some(p) => ceiling_plan::load_plan(p).map_err(|e| anyhow::anyhow!("{e}"))?.stand,
            None => ceiling_plan::parse_plan("name = \"verify\"\n[[requests]]\nname = \"x\"\npath = \"/\"\n[[stages]]\nhold = 1\nduration = \"1s\"\n", std::path::Path::new("<verify>"))
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .stand,
        };
        eprintln!(
            "stand: starting PostgreSQL{}…",
            if settings.pgbouncer.is_some() {
                " and PgBouncer"
            } else {
                ""
            }
        );
        let mut stand = Stand::start(&opts, &settings).map_err(|e| anyhow::anyhow!("{e}"))?;
        stand
            .prepare_data(settings.seed)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        eprintln!("[{name}] building…");
        stand
            .build_stack(&spec, a.rebuild)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let db = stand.reset_db().map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut stack = stand
            .start_stack(&spec, &settings, db.clone())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        eprintln!("[{name}] verifying {}…", stack.url());
        let admin = stand.admin().config.with_db(&db.dbname);
        let mut only = a.only.clone();
        if let (true, Some(c)) = (only.is_empty(), &spec.conformance) {
            eprintln!(
                "[{name}] PARTIAL CONTRACT (a baseline): checking {}",
                c.describe()
            );
            only = c.only.clone();
        }
        let r = fairness_expect(&stand, &spec, &stack)
            .and_then(|f| run_suite(&stack.url(), to_verify_db(&admin), &only, f))
            .context("running the conformance suite");
        stack.stop();
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
