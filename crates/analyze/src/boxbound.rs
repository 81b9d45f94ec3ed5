//! Whether a search's ceiling is the stack's or the box's.
//!
//! When the generator, the stack and PostgreSQL share a machine's CPUs (a 2-core box; the stand's
//! `placement` says so), whatever the generator and PostgreSQL spend is taken from the stack. If,
//! where the stack fails, the three together use nearly every CPU the machine has while the stack
//! is still below its own quota, the ceiling found is the machine's with all three on it — a
//! figure about this box, not about the stack. The stack's CPU per request is then the figure
//! that compares stacks. This module says which, from the probes' own resource samples.

use crate::search::ProbeVerdict;

/// The parts together used at least this share of the machine's CPUs at the failing probes.
pub const BOX_BUSY: f64 = 0.85;

/// The stack used at least this share of its own CPU quota: its own limit binds, not the box.
pub const OWN_QUOTA: f64 = 0.9;

/// Failed probes nearest above the ceiling that are looked at.
const NEAREST: usize = 3;

/// What the box's parts took, on average, at the failing probes nearest above a ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxLoad {
    /// Probes averaged.
    pub probes: usize,
    /// Their lowest and highest rate, RPS.
    pub rates: (f64, f64),
    /// The stack's CPU, % of one core.
    pub stack_pct: f64,
    /// PostgreSQL's (and PgBouncer's), % of one core.
    pub postgres_pct: f64,
    /// The generator's, % of one core.
    pub generator_pct: f64,
    /// The machine's CPUs, as % of one core (200 for two).
    pub capacity_pct: f64,
}

impl BoxLoad {
    /// The three parts together, % of one core.
    pub fn total_pct(&self) -> f64 {
        self.stack_pct + self.postgres_pct + self.generator_pct
    }

    /// `188% of 200% (stack 110%, PostgreSQL 55%, generator 23%) at 2 failed probes, 9600–10400 RPS`.
    pub fn describe(&self) -> String {
        let rates = if (self.rates.1 - self.rates.0).abs() < 0.5 {
            format!("{:.0} RPS", self.rates.0)
        } else {
            format!("{:.0}–{:.0} RPS", self.rates.0, self.rates.1)
        };
        format!(
            "{:.0}% of {:.0}% (stack {:.0}%, PostgreSQL {:.0}%, generator {:.0}%) at {} failed probe{}, {rates}",
            self.total_pct(),
            self.capacity_pct,
            self.stack_pct,
            self.postgres_pct,
            self.generator_pct,
            self.probes,
            if self.probes == 1 { "" } else { "s" },
        )
    }
}

/// What the parts took at the (up to three) failed probes nearest above `ceiling_rps` on a
/// machine of `cpus` CPUs; `None` when no such probe has the stack's and PostgreSQL's CPU sampled.
/// Disturbed probes (a host stall, the generator) are not the stack's failures and are left out.
pub fn box_load(probes: &[ProbeVerdict], ceiling_rps: f64, cpus: usize) -> Option<BoxLoad> {
    if cpus == 0 || ceiling_rps <= 0.0 {
        return None;
    }
    let mut above: Vec<(&ProbeVerdict, f64, f64)> = probes
        .iter()
        .filter(|p| p.pooled() && p.failed() && p.rate >= ceiling_rps)
        .filter_map(|p| Some((p, p.stack_cpu_pct?, p.postgres_cpu_pct?)))
        .collect();
    above.sort_by(|a, b| a.0.rate.total_cmp(&b.0.rate));
    above.truncate(NEAREST);
    if above.is_empty() {
        return None;
    }
    let n = above.len() as f64;
    let mean = |f: &dyn Fn(&(&ProbeVerdict, f64, f64)) -> f64| above.iter().map(f).sum::<f64>() / n;
    Some(BoxLoad {
        probes: above.len(),
        rates: (above[0].0.rate, above[above.len() - 1].0.rate),
        stack_pct: mean(&|x| x.1),
        postgres_pct: mean(&|x| x.2),
        generator_pct: mean(&|x| x.0.generator_cpu_pct),
        capacity_pct: 100.0 * cpus as f64,
    })
}

/// The box-bound verdict on a search's `probes` and its `ceiling_rps`, as the warning's sentence:
/// the parts `shared` a machine of `cpus` CPUs, together took at least [`BOX_BUSY`] of them where
/// the stack failed, and the stack was below [`OWN_QUOTA`] of its CPU quota `stack_quota` (cores;
/// none = the machine). `None` when the ceiling is the stack's (its own quota binds), when the
/// parts had CPUs of their own, or when the probes do not say.
pub fn box_bound(
    probes: &[ProbeVerdict],
    ceiling_rps: f64,
    cpus: usize,
    shared: bool,
    stack_quota: Option<f64>,
    cpu_us_per_request: Option<f64>,
) -> Option<String> {
    if !shared {
        return None;
    }
    verdict(
        box_load(probes, ceiling_rps, cpus)?,
        cpus,
        stack_quota,
        cpu_us_per_request,
    )
}

/// [`box_bound`] for a stepped run: the shelf that failed after the ceiling (`failed`) and what
/// each part took over its window.
pub fn box_bound_shelf(
    failed: &crate::ShelfResult,
    cpus: usize,
    shared: bool,
    stack_quota: Option<f64>,
    cpu_us_per_request: Option<f64>,
) -> Option<String> {
    if !shared || cpus == 0 || failed.verdict != crate::Verdict::Failed {
        return None;
    }
    let rate = failed.rate.unwrap_or(failed.offered_rps);
    let load = BoxLoad {
        probes: 1,
        rates: (rate, rate),
        stack_pct: failed.stack.as_ref()?.cpu_pct_mean,
        postgres_pct: failed.postgres.as_ref()?.cpu_pct_mean
            + failed.pgbouncer.as_ref().map_or(0.0, |b| b.cpu_pct_mean),
        generator_pct: failed
            .generator
            .as_ref()
            .map_or(failed.generator_cpu_mean, |g| g.cpu_pct_mean),
        capacity_pct: 100.0 * cpus as f64,
    };
    verdict(load, cpus, stack_quota, cpu_us_per_request)
        .map(|m| m.replace("failed probe", "failed shelf"))
}

fn verdict(
    load: BoxLoad,
    cpus: usize,
    stack_quota: Option<f64>,
    cpu_us_per_request: Option<f64>,
) -> Option<String> {
    let quota_pct = 100.0 * stack_quota.unwrap_or(cpus as f64).min(cpus as f64);
    if load.total_pct() < BOX_BUSY * load.capacity_pct || load.stack_pct >= OWN_QUOTA * quota_pct {
        return None;
    }
    Some(format!(
        "BOX-BOUND: the generator, the stack and PostgreSQL share this machine's {cpus} CPUs, and where the stack failed they took {} — the stack itself below its quota ({:.0}%): the ceiling is the box's with all three on it, not the stack's alone; compare stacks here by CPU per request{}, or give each part CPUs of its own (a machine with ≥ 3 × the stack's cores: stand.placement = \"auto\")",
        load.describe(),
        quota_pct,
        cpu_us_per_request
            .map(|us| format!(" (this stack: {us:.0} µs at its confirming shelf)"))
            .unwrap_or_default(),
    ))
}
