//! A stack's whole turn in a run, watched: the sequence `ceiling run` repeats for every stack.

use crate::measure::{measure_watched, Halt, MeasureSpec, Measured};
use crate::start::start_verified;
use ceiling_analyze::{PartExit, Warning, WarningKind};
use ceiling_plan::Plan;
use ceiling_stand::{LimitsApplied, Role, RunningStack, Stand};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The per-second watch of a measurement: PostgreSQL first (a stack whose database died fails
/// because of it), then PgBouncer when the stacks reach PostgreSQL through it, then the stack.
/// `None` while all three run. `ceiling run` and `ceiling search` both watch with it.
pub fn watch(stand: &mut Stand, stack: &mut RunningStack) -> Option<Halt> {
    if let Some(status) = stand.postgres_exited() {
        return Some(Halt::PartExited(PartExit {
            part: Role::Postgres,
            from_s: 0.0, // set by measure_watched from the last second seen alive
            status,
            log_tail: stand.postgres().map(|p| p.log_tail(10)).unwrap_or_default(),
        }));
    }
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
}

/// Starts a part of the stand again after it exited mid-measurement (`stand.on_part_exit =
/// "restart"`): PgBouncer alone, or PostgreSQL (whose restart restarts PgBouncer too, on a new
/// port). Start stacks afresh after it. Returns the old part's log tail.
pub fn restart_part(stand: &mut Stand, part: Role) -> anyhow::Result<String> {
    let r = if part == Role::Pgbouncer {
        stand.restart_pgbouncer()
    } else {
        stand.restart_postgres()
    };
    r.map_err(|e| anyhow::anyhow!("{e}"))
}

/// How [`measure_stack`] treats a stack.
#[derive(Debug, Clone, Copy, Default)]
pub struct StackRunOptions {
    /// Measure a stack even when the conformance suite fails for it (recorded as a warning).
    pub allow_unverified: bool,
    /// Rebuild the stack even when its source is unchanged.
    pub rebuild: bool,
    /// No progress line.
    pub quiet: bool,
}

/// One stack's lifecycle in a run: start it verified, measure it while PostgreSQL, PgBouncer and
/// the stack are watched every second, then read its statements and the bank's books on its own
/// copy of the data, and stop it. Returns the measurement and the limits record.
pub fn measure_stack(
    plan: &Plan,
    opts: StackRunOptions,
    stand: &mut Stand,
    name: &str,
    dir: &Path,
    data_dir: Option<&Path>,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(Measured, LimitsApplied)> {
    let (_spec, mut stack, mut warnings) =
        start_verified(plan, stand, name, dir, opts.allow_unverified, opts.rebuild)?;
    let lim = stack.limits_applied().clone();
    let _ = stand.stat_statements_reset();
    let targets = stand.sampler_targets(Some(&stack), Some(std::process::id()));
    let out = dir.join(name);
    let url = stack.url();
    let spec = MeasureSpec {
        plan,
        stack: name,
        url: &url,
        data_dir,
        out_dir: &out,
        sampler_targets: targets,
        threads: plan.load.threads,
        quiet: opts.quiet,
    };
    let res = measure_watched(spec, stop, || watch(stand, &mut stack));
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
