//! A stack's whole turn in a run, watched: the sequence `ceiling run` repeats for every stack.

use crate::error::Result;
use crate::measure::{measure_watched, Halt, MeasureSpec, Measured, Round};
use crate::start::start_verified;
use ceiling_analyze::{PartExit, Warning, WarningKind};
use ceiling_metrics::Footprint;
use ceiling_plan::Plan;
use ceiling_stand::{LimitsApplied, Role, RunningStack, StackSpec, Stand};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Where the load goes on a started stack: its TLS port when the plan asks (`[stand] tls`), the
/// stand's certificate then trusted by the engine for the rest of this process; else its plain
/// URL. `RunningStack::url` stays the place for health, conformance and `/metrics`.
pub fn load_url(stack: &ceiling_stand::RunningStack) -> String {
    if let Some(ca) = stack.tls_cert() {
        ceiling_load::trust_also(ca);
    }
    stack.load_url()
}

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
pub fn restart_part(stand: &mut Stand, part: Role) -> Result<String> {
    let r = if part == Role::Pgbouncer {
        stand.restart_pgbouncer()
    } else {
        stand.restart_postgres()
    };
    Ok(r?)
}

/// How [`measure_stack`] treats a stack.
#[derive(Debug, Clone, Copy, Default)]
pub struct StackRunOptions<'a> {
    /// Measure a stack even when the conformance suite fails for it (recorded as a warning).
    pub allow_unverified: bool,
    /// Rebuild the stack even when its source is unchanged.
    pub rebuild: bool,
    /// No progress line.
    pub quiet: bool,
    /// Generator agents that send the load instead of this process (`--agents`).
    pub agents: Option<&'a ceiling_agent::coordinator::Agents>,
    /// One round of an interleaved run (one repetition, on the stack's one clock); `None`: the
    /// whole plan in this start.
    pub round: Option<Round>,
    /// Where the steps are said (`None`: nowhere).
    pub progress: Option<&'a crate::Progress>,
}

/// One stack's lifecycle in a run: start it verified, measure it while PostgreSQL, PgBouncer and
/// the stack are watched every second, then read its statements and the bank's books on its own
/// copy of the data, and stop it; its steps said to `opts.progress`. Returns the measurement and
/// the limits record. With [`StackRunOptions::round`], this start measures one repetition (one pass
/// over the levels after the plan's warm-up), its records appended to the stack's earlier rounds
/// ([`Round`]).
pub fn measure_stack(
    plan: &Plan,
    opts: StackRunOptions<'_>,
    stand: &mut Stand,
    name: &str,
    dir: &Path,
    data_dir: Option<&Path>,
    stop: &Arc<AtomicBool>,
) -> Result<(Measured, LimitsApplied)> {
    let round = opts.round;
    let none = crate::Progress::none();
    let progress = opts.progress.unwrap_or(&none);
    let (stack_spec, mut stack, mut warnings) = start_verified(
        plan,
        stand,
        name,
        dir,
        opts.allow_unverified,
        opts.rebuild,
        opts.round.is_some_and(|r| r.repetition > 0),
        progress,
    )?;
    let lim = stack.limits_applied().clone();
    let _ = stand.stat_statements_reset();
    let targets = stand.sampler_targets(Some(&stack), Some(std::process::id()));
    let out = dir.join(name);
    let url = load_url(&stack);
    let plain = stack.url();
    let spec = MeasureSpec {
        plan,
        stack: name,
        url: &url,
        metrics_url: Some(&plain),
        data_dir,
        out_dir: &out,
        sampler_targets: targets,
        threads: plan.load.threads,
        quiet: opts.quiet,
        agents: opts.agents,
        stack_agent: None, // the stand samples its own stacks
        round,
        progress,
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
    // what the stack holds now, before it stops: its memory as source 003 read it
    let footprint = footprint_of(&stack_spec, stack.is_alive().then(|| stack.pid()));
    stack.stop();
    let mut m = res?;
    m.analysis.warnings.extend(warnings);
    m.analysis.footprint = Some(footprint);
    m.fairness = stack_spec.fairness.clone();
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
        let file = match round {
            Some(r) => format!("pg_stat_statements.rep{}.json", r.repetition + 1),
            None => "pg_stat_statements.json".into(),
        };
        // a record beside the run's; failing to keep it does not void the measurement
        if let Ok(text) = serde_json::to_string_pretty(&st) {
            std::fs::write(out.join(file), text).ok();
        }
    }
    Ok((m, lim))
}

/// The stack's artifact size (from `[build] artifact`) and, while `pid` runs, its process tree's
/// private and resident memory from smaps.
pub fn footprint_of(spec: &StackSpec, pid: Option<u32>) -> Footprint {
    let paths: Vec<String> = spec
        .build
        .as_ref()
        .map(|b| b.artifact.clone())
        .unwrap_or_default();
    // every path must be there: a size that silently left out a part would be smaller than true
    let sizes: Option<Vec<u64>> = paths.iter().map(|p| size_of(&spec.dir.join(p))).collect();
    let mem = pid.and_then(ceiling_stand::procfs::smaps_of_tree);
    Footprint {
        artifact: (!paths.is_empty()).then(|| paths.join(" + ")),
        artifact_bytes: sizes.filter(|_| !paths.is_empty()).map(|v| v.iter().sum()),
        private_bytes_at_end: mem.map(|m| m.private),
        rss_bytes_at_end: mem.map(|m| m.rss),
    }
}

/// A file's size, or the sum of the files under a directory (symlinks not followed); `None` when
/// the path is missing.
fn size_of(path: &Path) -> Option<u64> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.is_file() {
        return Some(meta.len());
    }
    if !meta.is_dir() {
        return Some(0);
    }
    let mut total = 0;
    for e in std::fs::read_dir(path).ok()?.flatten() {
        total += size_of(&e.path()).unwrap_or(0);
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_artifact_is_every_declared_path_summed_and_missing_is_unknown() {
        // a stack's name must be its folder's
        let base = std::env::temp_dir().join(format!("ceiling-artifact-{}", std::process::id()));
        let dir = base.join("t");
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(dir.join("target/libs/x")).unwrap();
        std::fs::write(dir.join("target/app.jar"), vec![0u8; 1000]).unwrap();
        std::fs::write(dir.join("target/libs/a.jar"), vec![0u8; 300]).unwrap();
        std::fs::write(dir.join("target/libs/x/b.jar"), vec![0u8; 20]).unwrap();
        let toml = |artifact: &str| {
            format!(
                "name = \"t\"\n[build]\ncommand = [\"true\"]\nartifact = {artifact}\n[run]\ncommand = [\"true\"]\n[settings]\npool_size = 1\nworkers = 1\n[conformance]\nonly = [\"ops\"]\nreason = \"a test stack\"\n"
            )
        };
        let spec = |a: &str| StackSpec::parse_str(&toml(a), &dir.join("stack.toml"), &dir).unwrap();
        let f = footprint_of(&spec(r#"["target/app.jar", "target/libs"]"#), None);
        assert_eq!(f.artifact.as_deref(), Some("target/app.jar + target/libs"));
        assert_eq!(f.artifact_bytes, Some(1320));
        assert_eq!(f.private_bytes_at_end, None);
        let f = footprint_of(&spec(r#"["target/app.jar", "target/missing.jar"]"#), None);
        assert_eq!(
            f.artifact_bytes, None,
            "a missing part makes the size unknown"
        );
        let f = footprint_of(&spec("[]"), Some(std::process::id()));
        assert_eq!((f.artifact, f.artifact_bytes), (None, None));
        // this process's own memory, read through the same path as a stack's
        assert!(f.private_bytes_at_end.unwrap() > 0 && f.rss_bytes_at_end.unwrap() > 0);
        let _ = std::fs::remove_dir_all(&base);
    }
}
