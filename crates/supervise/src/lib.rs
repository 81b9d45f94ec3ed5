//! Process supervision for the stand: the part of ceiling that starts, limits, watches and stops
//! other programs.
//!
//! - [`process`]: children spawned in their own process groups (so only ceiling decides how they
//!   stop), a registry of everything started — [`cleanup_all`] stops it, [`sweep_stale`] cleans up
//!   after a run that was SIGKILLed — and how an exit is described.
//! - [`cgroup`]: CPU, memory and cpuset limits through cgroups v2 or v1, behind one interface;
//!   what could not be applied is reported in a [`LimitsApplied`], never dropped.
//! - [`procfs`], [`hostprobe`]: allocation-free readers of `/proc` (a process tree's CPU and
//!   memory, the host's CPU, disks, network counters, a cgroup's throttling).
//! - [`interrupt`]: Ctrl-C, SIGTERM and SIGHUP for the whole program — the first cancels
//!   ([`cancelled`]), the second forces.
//! - [`sys`]: the few system calls, through rustix.
//!
//! PostgreSQL and PgBouncer (`ceiling-pg`) and the stacks (`ceiling-stand`) are built on it; it
//! knows nothing of either.

#![warn(missing_docs)]

pub mod cgroup;
mod error;
pub mod hostprobe;
pub mod interrupt;
pub mod process;
pub mod procfs;
pub mod sys;

pub use ceiling_metrics::{Limits, LimitsApplied, Role};
pub use cgroup::{cpu_quota, parse_cpu_list, CgDir, Cgroup, CgroupSystem, CgroupVersion};
pub use error::{IoContext, Result, SuperviseError};
pub use interrupt::{cancel, cancel_flag, cancelled, install_signal_cleanup, interrupted, link};
pub use process::{
    cleanup_all, describe_status, log_tail, set_state_dir, sweep_stale, which, Managed, SpawnSpec,
    StopReport,
};

/// Puts this whole process (all threads) into a new cgroup `who` with `limits` — how the
/// in-process load generator is limited or pinned. Dropping the returned group moves this
/// process back to where it was and removes the group.
pub fn limit_this_process(
    cgroups: &CgroupSystem,
    who: Role,
    limits: &Limits,
) -> (Option<Cgroup>, LimitsApplied) {
    let (cg, mut la) = cgroups.create(who, who.as_str(), limits);
    if let Some(c) = &cg {
        if let Err(e) = c.add_pid(std::process::id()) {
            la.problems
                .push(format!("moving this process into {}: {e}", c.name()));
            la.cpus = None;
            la.memory_mb = None;
            la.cpuset = None;
        }
    }
    let pin = affinity_fallback(limits, &mut la);
    if !pin.is_empty() {
        if let Err(e) = sys::pin_this_process(&pin) {
            la.cpuset = None;
            la.problems.push(format!(
                "cpuset: pinning this process with sched_setaffinity: {e}"
            ));
        }
    }
    (cg, la)
}

/// Where a requested cpuset could not be applied through cgroups (no usable `cpuset` controller,
/// e.g. cgroup v2 without delegation), the CPUs to pin the process to with `sched_setaffinity`
/// instead — a weaker fence (a process may change its own affinity; none of ours do), said in
/// `la`'s notes — and `la` updated as if applied. Empty when nothing is to be pinned.
pub fn affinity_fallback(limits: &Limits, la: &mut LimitsApplied) -> Vec<u32> {
    let Some(want) = limits.cpuset.as_deref() else {
        return Vec::new();
    };
    if la.cpuset.is_some() {
        return Vec::new();
    }
    let Some(cpus) = parse_cpu_list(want).filter(|c| !c.is_empty()) else {
        return Vec::new();
    };
    let why: Vec<String> = la
        .problems
        .iter()
        .filter(|p| p.starts_with("cpuset:"))
        .cloned()
        .collect();
    la.problems.retain(|p| !p.starts_with("cpuset:"));
    la.cpuset = Some(want.to_string());
    la.notes.push(format!(
        "cpuset {want} applied with sched_setaffinity, not a cgroup ({})",
        if why.is_empty() {
            "no cgroup was made".to_string()
        } else {
            why.join("; ")
        }
    ));
    la.mechanism = match la.mechanism.as_str() {
        "" | "none" => "sched_setaffinity".into(),
        m => format!("{m} + sched_setaffinity"),
    };
    cpus
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpuset_no_cgroup_could_apply_falls_back_to_affinity() {
        let want = Limits {
            cpus: Some(2.0),
            memory_mb: None,
            cpuset: Some("1-2,4".into()),
        };
        let mut la =
            LimitsApplied::not_applied(Role::Stack, &want, "no usable `cpuset` controller");
        assert_eq!(affinity_fallback(&want, &mut la), vec![1, 2, 4]);
        assert_eq!(la.cpuset.as_deref(), Some("1-2,4"));
        assert_eq!(la.mechanism, "sched_setaffinity");
        // the CPU quota's problem stays; the cpuset's is now a note saying how it was applied
        assert_eq!(
            la.problems,
            vec!["cpus: no usable `cpuset` controller".to_string()]
        );
        assert!(la.notes[0].contains("sched_setaffinity"), "{:?}", la.notes);
        // applied by a cgroup, or not asked for: nothing to pin
        assert!(affinity_fallback(&want, &mut la).is_empty());
        let mut none = LimitsApplied::new(Role::Stack, &Limits::default());
        assert!(affinity_fallback(&Limits::default(), &mut none).is_empty());
    }
}
