//! A stack made ready to measure: built, started on a fresh database, checked by the conformance
//! suite, and started again on a clean copy of the data.

use crate::error::{refuse, Result};
use crate::verify::verify_fresh;
use crate::Progress;
use ceiling_analyze::{Warning, WarningKind};
use ceiling_plan::Plan;
use ceiling_stand::Stand;
use std::path::Path;
use std::time::Instant;

/// Builds and starts a stack on a fresh database, runs the conformance suite, and restarts it on
/// a clean copy of the data (verify writes rows). Refuses an unverified stack unless allowed.
/// `verified_before`: this build was verified by an earlier start in the same run or search (a
/// later round), so the suite is not run again and nothing is said about it. Returns the spec,
/// the running stack and warnings for the report; each step is said to `progress` as it begins.
#[allow(clippy::too_many_arguments)]
pub fn start_verified(
    plan: &Plan,
    stand: &Stand,
    name: &str,
    dir: &Path,
    allow_unverified: bool,
    rebuild: bool,
    verified_before: bool,
    progress: &Progress,
) -> Result<(
    ceiling_stand::StackSpec,
    ceiling_stand::RunningStack,
    Vec<Warning>,
)> {
    let spec = stand.load_stack(name)?;
    progress.say(&format!("[{name}] building…"));
    let t = Instant::now();
    let b = stand.build_stack(&spec, rebuild)?;
    progress.say(&format!(
        "[{name}] build {} in {:.1}s",
        if b.skipped { "cached" } else { "done" },
        t.elapsed().as_secs_f64()
    ));
    let mut warnings = Vec::new();
    if verified_before {
        // the first round's verdict (and its warnings) stands for the same build
    } else if plan.stand.verify {
        let (only, partial) = crate::verify::cases_for(&spec, &[]);
        if let Some(what) = partial {
            progress.say(&format!(
                "[{name}] PARTIAL CONTRACT (a baseline): checking {what}"
            ));
            warnings.push(Warning::new(WarningKind::PartialContract, format!(
                "PARTIAL CONTRACT: a baseline that serves {what}; its figures are a reference point, not a stack doing the API's work"
            )));
        }
        let res = verify_fresh(stand, &spec, &plan.stand, &only, |url| {
            progress.say(&format!("[{name}] verifying the contract at {url}…"))
        });
        match res {
            Ok(r) if r.failed() == 0 => {
                progress.say(&format!("[{name}] verify: all {} cases passed", r.passed()))
            }
            Ok(r) => {
                let failed: Vec<&str> = r.failures().map(|c| c.name.as_str()).collect();
                let detail = format!(
                    "verify: {} of {} cases failed ({})",
                    r.failed(),
                    r.passed() + r.failed(),
                    failed.join(", ")
                );
                let text = ceiling_verify::render_text(&r);
                std::fs::write(dir.join("logs").join(format!("verify-{name}.txt")), text).ok();
                if !allow_unverified {
                    refuse!("{detail}; refusing to measure a stack that does not do the contract's work (see logs/verify-{name}.txt; --allow-unverified overrides and is recorded)");
                }
                progress.say(&format!(
                    "[{name}] {detail} — measuring anyway (--allow-unverified)"
                ));
                warnings.push(Warning::new(
                    WarningKind::Unverified,
                    format!("UNVERIFIED: {detail}; measured with --allow-unverified"),
                ));
            }
            Err(e) => {
                if !allow_unverified {
                    refuse!("verify could not run: {e:#} (--allow-unverified measures anyway and records it)");
                }
                progress.say(&format!(
                    "[{name}] verify could not run ({e:#}) — measuring anyway (--allow-unverified)"
                ));
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
    let db = stand.fresh_db_for(&spec)?;
    if let Some(d) = &spec.database {
        progress.say(&format!(
            "[{name}] SCHEMA CHANGED by the stack: {}",
            d.describe()
        ));
        warnings.push(Warning::new(
            WarningKind::SchemaChanged,
            format!(
                "SCHEMA CHANGED: the stack ran its own {} on its copy of the data; its figures are not on the contract's schema",
                d.describe()
            ),
        ));
    }
    progress.say(&format!("[{name}] starting on a fresh copy of the data…"));
    let stack = stand.start_stack(&spec, &plan.stand, db)?;
    progress.say(&format!(
        "[{name}] healthy at {}; limits: {}",
        stack.url(),
        stack.limits_applied().summary()
    ));
    Ok((spec, stack, warnings))
}
