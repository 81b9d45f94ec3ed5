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
    (cg, la)
}
