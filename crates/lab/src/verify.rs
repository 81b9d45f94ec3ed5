//! The conformance suite (crates/verify) as the lab runs it on a stack the stand started: the
//! database it checks, the fairness declarations resolved for this start.

use crate::error::{LabError, Result};
use ceiling_stand::{DbConfig, RunningStack, StackSpec, Stand};

/// The stand's database settings as the conformance suite takes them.
pub fn to_verify_db(a: &DbConfig) -> ceiling_verify::DbConfig {
    ceiling_verify::DbConfig {
        host: a.host.clone(),
        port: a.port,
        user: a.user.clone(),
        password: a.password.clone(),
        dbname: a.dbname.clone(),
    }
}

/// Runs the conformance suite against `url` (only `only`'s cases when not empty), with the
/// fairness group when the stack declares one.
pub fn run_suite(
    url: &str,
    db: ceiling_verify::DbConfig,
    only: &[String],
    fairness: Option<ceiling_verify::FairnessExpect>,
) -> Result<ceiling_verify::VerifyReport> {
    let mut cfg = ceiling_verify::VerifyConfig::new(url, db);
    cfg.only = only.to_vec();
    // a partial-contract stack is still held to what it declares about its pool and keep-alive
    if fairness.is_some() && !cfg.only.is_empty() && !cfg.only.iter().any(|o| o == "fairness") {
        cfg.only.push("fairness".into());
    }
    cfg.fairness = fairness;
    cfg.cancel = Some(ceiling_stand::cancel_flag());
    Ok(ceiling_verify::verify(&cfg)?)
}

/// What the stack's `[fairness]` table means for this start: the pool it was given
/// (`DB_POOL_SIZE`, `WORKERS` as the stand set them) and what it says it opens up front. The
/// pool is not checked behind PgBouncer (PostgreSQL sees PgBouncer's connections, not the
/// stack's).
pub fn fairness_expect(
    stand: &Stand,
    spec: &StackSpec,
    stack: &RunningStack,
) -> Result<Option<ceiling_verify::FairnessExpect>> {
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
    let open = f.open_at_start(size, workers).map_err(|e| {
        LabError::refused(format!(
            "{}: fairness.pool_open_at_start {e}",
            spec.file.display()
        ))
    })?;
    Ok(Some(ceiling_verify::FairnessExpect {
        // no pool visible behind PgBouncer, and none to bound in a stack without one
        pool: match (stand.pgbouncer(), open) {
            (None, Some(open_at_start)) => Some(ceiling_verify::PoolExpect {
                size,
                open_at_start,
            }),
            _ => None,
        },
        keep_alive_max_requests: f.keep_alive_max_requests,
    }))
}

/// Starts `spec` on a fresh copy of the data with `settings`, runs the conformance suite against
/// it (only `only`'s cases when not empty) with its fairness declarations, and stops it: the
/// check `ceiling verify STACK` prints and `ceiling run` requires before measuring. Statement
/// counting reads pg_stat_statements as the stand's superuser, on the stack's database.
pub fn verify_fresh(
    stand: &Stand,
    spec: &StackSpec,
    settings: &ceiling_plan::StandSettings,
    only: &[String],
    announce: impl FnOnce(&str),
) -> Result<ceiling_verify::VerifyReport> {
    let db = stand.fresh_db_for(spec)?;
    let mut stack = stand.start_stack(spec, settings, db.clone())?;
    announce(&stack.url());
    let admin = stand.admin().config.with_db(&db.dbname);
    let r = fairness_expect(stand, spec, &stack)
        .and_then(|f| run_suite(&stack.url(), to_verify_db(&admin), only, f));
    stack.stop();
    r
}

/// The cases to check for a stack: `requested` when given (`ceiling verify --only`), else the
/// groups a partial contract declares (`[conformance] only` in stack.toml), else every case.
/// The second value describes a declared partial contract (`ops, rows (…)`), so callers say
/// which baseline they are checking.
pub fn cases_for(
    spec: &ceiling_stand::StackSpec,
    requested: &[String],
) -> (Vec<String>, Option<String>) {
    match &spec.conformance {
        Some(c) if requested.is_empty() => (c.only.clone(), Some(c.describe())),
        Some(c) => (requested.to_vec(), Some(c.describe())),
        None => (requested.to_vec(), None),
    }
}
