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
