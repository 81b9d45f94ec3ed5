//! The few system calls the stand makes directly, through rustix's safe wrappers, so the rest of
//! the crate has no `unsafe` for them. Signals are plain numbers (`libc::SIGTERM`…) where they
//! come from configuration (a stack's stop signal); an unknown number is not sent.

use std::os::fd::AsFd;

use rustix::process::{Pid, Signal};

fn pid_of(pid: u32) -> Option<Pid> {
    Pid::from_raw(i32::try_from(pid).ok()?)
}

/// `kill(pid, sig)`; false when the process is gone, not ours, or the signal is unknown.
pub fn kill(pid: u32, sig: i32) -> bool {
    match (pid_of(pid), Signal::from_named_raw(sig)) {
        (Some(p), Some(s)) => rustix::process::kill_process(p, s).is_ok(),
        _ => false,
    }
}

/// `kill(-pgid, sig)`: every process of a process group; false as for [`kill`].
pub fn kill_group(pgid: u32, sig: i32) -> bool {
    match (pid_of(pgid), Signal::from_named_raw(sig)) {
        (Some(p), Some(s)) => rustix::process::kill_process_group(p, s).is_ok(),
        _ => false,
    }
}

/// True when this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// An exclusive, non-blocking `flock` on an open file: false when another process holds it.
pub fn try_lock_exclusive(f: &impl AsFd) -> bool {
    rustix::fs::flock(f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
}

/// A CPU mask of `cpus` for `sched_setaffinity`; `None` when `cpus` is empty (nothing to pin) or
/// names no CPU this kernel can address.
pub fn cpu_mask(cpus: &[u32]) -> Option<rustix::thread::CpuSet> {
    let mut set = rustix::thread::CpuSet::new();
    let mut any = false;
    for &c in cpus {
        if (c as usize) < rustix::thread::CpuSet::MAX_CPU {
            set.set(c as usize);
            any = true;
        }
    }
    any.then_some(set)
}

/// The CPUs this process may run on (its affinity), ascending; empty when it cannot be read.
pub fn this_process_cpus() -> Vec<u32> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| set.is_set(c))
            .map(|c| c as u32)
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Pins every thread of this process to `cpus` (threads started later inherit it from the thread
/// that starts them). How the in-process generator keeps to its CPUs where no cpuset cgroup can
/// be used.
pub fn pin_this_process(cpus: &[u32]) -> std::io::Result<()> {
    let mask = cpu_mask(cpus)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no CPU to pin to"))?;
    for entry in std::fs::read_dir("/proc/self/task")? {
        let tid = entry?.file_name().to_string_lossy().parse::<u32>().ok();
        if let Some(pid) = tid.and_then(pid_of) {
            // a thread that ended meanwhile is no error
            match rustix::thread::sched_setaffinity(Some(pid), &mask) {
                Ok(()) | Err(rustix::io::Errno::SRCH) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// CPU time of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC now, ns.
pub fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_can_be_pinned_and_freed_again() {
        let all = this_process_cpus();
        assert!(!all.is_empty(), "no CPU in this process's affinity");
        let one = [*all.last().unwrap()];
        pin_this_process(&one).unwrap();
        // every thread, this one included, now runs on that CPU only
        assert_eq!(this_process_cpus(), one);
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        assert!(
            status.contains(&format!("Cpus_allowed_list:\t{}", one[0])),
            "{status}"
        );
        pin_this_process(&all).unwrap();
        assert_eq!(this_process_cpus(), all);
        assert!(cpu_mask(&[]).is_none());
    }

    #[test]
    fn kill_reaches_a_child_and_refuses_nonsense() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(kill(child.id(), libc::SIGTERM));
        let st = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(st.signal(), Some(libc::SIGTERM));
        assert!(!kill(0, libc::SIGTERM), "pid 0 would be our own group");
        assert!(!kill(child.id(), 12345), "unknown signal");
    }

    #[test]
    fn flock_excludes_a_second_holder() {
        let dir = std::env::temp_dir().join(format!("ceiling-sys-{}", std::process::id()));
        let f1 = std::fs::File::create(&dir).unwrap();
        let f2 = std::fs::File::open(&dir).unwrap();
        assert!(try_lock_exclusive(&f1));
        assert!(!try_lock_exclusive(&f2));
        drop(f1);
        assert!(try_lock_exclusive(&f2));
        let _ = std::fs::remove_file(&dir);
    }
}
