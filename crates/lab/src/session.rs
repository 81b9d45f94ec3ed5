//! The stand opened for a command — PostgreSQL (and PgBouncer when the plan asks) started on its
//! CPUs, the seed data ready — and what a report records of it. `ceiling run`, `search` and `up`
//! open it the same way, saying each step to the person watching.

use crate::error::Result;
use crate::Progress;
use ceiling_plan::StandSettings;
use ceiling_records::RunReport;
use ceiling_stand::{Role, Stand, StandError, StandOptions};
use std::time::Instant;

/// Starts the stand with `settings` and prepares its data (`settings.seed`), saying each step to
/// `progress`: PostgreSQL (and PgBouncer) started, the data seeded or reused, the CPU placement.
/// A stand whose data could not be prepared is stopped before the error is returned; a
/// cancelled start (Ctrl-C) is an error that says so ([`StandError::is_cancelled`]).
pub fn open_stand(
    opts: &StandOptions,
    settings: &StandSettings,
    progress: &Progress,
) -> Result<Stand, StandError> {
    progress.say(&format!(
        "stand: starting PostgreSQL{}…",
        match &settings.pgbouncer {
            Some(b) => format!(
                " and PgBouncer ({} pooling, default_pool_size {})",
                b.pool_mode.as_str(),
                b.default_pool_size
            ),
            None => String::new(),
        }
    ));
    let mut stand = Stand::start(opts, settings)?;
    progress.say(&format!(
        "stand: PostgreSQL {} ready; preparing data (seed {})…",
        stand.postgres_version(),
        settings.seed
    ));
    let t = Instant::now();
    let data = match stand.prepare_data(settings.seed) {
        Ok(d) => d,
        Err(e) => {
            stand.stop();
            return Err(e);
        }
    };
    progress.say(&format!(
        "stand: data ready in {:.1}s ({})",
        t.elapsed().as_secs_f64(),
        if data.reused { "reused" } else { "seeded" }
    ));
    progress.say(&format!(
        "stand: placement: {}",
        stand.placement().describe()
    ));
    if let Some(b) = stand.pgbouncer() {
        progress.say(&format!(
            "stand: PgBouncer {} on 127.0.0.1:{} ({} pooling, default_pool_size {}); the stacks connect through it",
            b.binary().version,
            b.port(),
            b.settings().pool_mode.as_str(),
            b.settings().default_pool_size
        ));
    }
    Ok(stand)
}

/// What a report records when no stand runs (a service at `--url`): this machine's fingerprint,
/// without a database or limits of the lab's.
pub fn record_no_stand(report: &mut RunReport) {
    report.environment = Some(ceiling_stand::fingerprint(
        None,
        &ceiling_stand::CgroupSystem::detect(),
    ));
}

/// What a report records of the stand: the machine's fingerprint, the limits applied to
/// PostgreSQL, PgBouncer and the generator, and the CPU placement.
pub fn record_stand(stand: &Stand, report: &mut RunReport) {
    report.environment = Some(stand.fingerprint());
    if let Some(l) = stand.postgres_limits() {
        report
            .limits
            .insert(Role::Postgres.as_str().into(), l.clone());
    }
    if let Some(l) = stand.pgbouncer_limits() {
        report
            .limits
            .insert(Role::Pgbouncer.as_str().into(), l.clone());
    }
    if let Some(l) = stand.generator_limits() {
        report
            .limits
            .insert(Role::Generator.as_str().into(), l.clone());
    }
    report.placement = Some(stand.placement().clone());
}
