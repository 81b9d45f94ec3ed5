//! Real-time scheduling of the generator's threads (`--realtime`, `[load] realtime = true`).
//!
//! Why: on a box where the generator shares cores with the stack and PostgreSQL, the kernel's
//! fair scheduler lets a runnable generator thread wait behind a dozen runnable stack threads.
//! Measured on the 2-core box (docs/benchmarks/engine.md §50, ktor-jdbc at 6,000 RPS): the
//! generator's schedule lag p99 was 82–302 ms at nice −10 and 0.08–0.10 ms under `SCHED_FIFO`
//! priority 1, for the same 7–10% of a core. The generator is then never the part that waits.
//!
//! What it costs: a real-time thread runs before every normal thread on its core, so the
//! generator's own CPU is taken from the stack first (it was before too, only later). The kernel
//! caps real-time threads at `sched_rt_runtime_us` of every `sched_rt_period_us` (95% by
//! default): a generator bug cannot lock a core for good. The engine never spins; it sleeps in
//! epoll or on its timer between sends.
//!
//! Policy `SCHED_FIFO | SCHED_RESET_ON_FORK` at priority 1 (the lowest real-time priority):
//! threads the runtime may start later (a blocking pool) are normal threads again. Needs
//! `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` of at least 1; without either, [`check`] refuses the run
//! before any load is sent, saying so.

use crate::LoadError;

/// The real-time priority the generator's threads take (1: the lowest; above every normal thread).
pub const PRIORITY: i32 = 1;

/// Puts the calling thread under `SCHED_FIFO` at [`PRIORITY`]; the OS error when refused.
pub(crate) fn enter() -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: PRIORITY,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param that outlives the call.
    let rc = unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether the calling thread runs under `SCHED_FIFO` now (what [`enter`] did, read back).
pub(crate) fn is_fifo() -> bool {
    // SAFETY: pid 0 is the calling thread; no pointers are passed.
    let policy = unsafe { libc::sched_getscheduler(0) };
    policy >= 0 && (policy & !libc::SCHED_RESET_ON_FORK) == libc::SCHED_FIFO
}

/// Checks, before any load is sent, that this process may put its threads under `SCHED_FIFO`
/// (on a scratch thread, so the caller's own scheduling is untouched). The error says what is
/// missing and what to do.
pub fn check() -> Result<(), LoadError> {
    let tried = std::thread::Builder::new()
        .name("ceiling-rt-check".into())
        .spawn(enter)
        .map_err(|e| LoadError::Runtime(format!("cannot start a thread: {e}")))?
        .join()
        .map_err(|_| LoadError::Runtime("the real-time check's thread panicked".into()))?;
    tried.map_err(|e| refusal(&e))
}

/// The refusal for an OS error from [`enter`].
pub(crate) fn refusal(e: &std::io::Error) -> LoadError {
    let why = if e.raw_os_error() == Some(libc::EPERM) {
        "this process has neither CAP_SYS_NICE nor an RLIMIT_RTPRIO of at least 1: run it as root, \
         give the binary the capability (`sudo setcap cap_sys_nice+ep $(command -v ceiling)`), \
         raise `ulimit -r`, or leave --realtime out"
            .to_string()
    } else {
        format!("{e}")
    };
    LoadError::Runtime(format!(
        "--realtime ([load] realtime): cannot run the generator's threads under SCHED_FIFO: {why}"
    ))
}

/// What real-time scheduling meant for a run of `threads` generator threads, in one phrase (the
/// note run.json and `ceiling load` keep), with the kernel's cap on real-time threads as read now.
pub fn describe(threads: usize) -> String {
    let cap = match (
        read_us("/proc/sys/kernel/sched_rt_runtime_us"),
        read_us("/proc/sys/kernel/sched_rt_period_us"),
    ) {
        (Some(r), _) if r < 0 => "uncapped by the kernel (sched_rt_runtime_us = -1)".to_string(),
        (Some(r), Some(p)) if p > 0 => format!(
            "capped by the kernel at {:.0}% of each core",
            100.0 * r as f64 / p as f64
        ),
        _ => "the kernel's cap unknown".to_string(),
    };
    let s = if threads == 1 { "" } else { "s" };
    format!(
        "real-time: its {threads} thread{s} under SCHED_FIFO priority {PRIORITY}, ahead of the stack's and PostgreSQL's ({cap})"
    )
}

fn read_us(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether this process may use real-time scheduling (`CAP_SYS_NICE` in its effective set, or an
/// `RLIMIT_RTPRIO` ≥ [`PRIORITY`]), read from the kernel's own records — independently of
/// [`check`], so tests can tell which answer is right.
pub fn privileged() -> bool {
    const CAP_SYS_NICE: u32 = 23;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let cap = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .is_some_and(|bits| bits & (1 << CAP_SYS_NICE) != 0);
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let rtprio = limits
        .lines()
        .find(|l| l.starts_with("Max realtime priority"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|soft| {
            soft.parse::<i64>()
                .ok()
                .or((soft == "unlimited").then_some(i64::MAX))
        })
        .is_some_and(|n| n >= i64::from(PRIORITY));
    cap || rtprio
}

/// The scheduling policy of each of this process's threads named `prefix…`, read from
/// `/proc/self/task/*/stat` (field 41: 0 normal, 1 `SCHED_FIFO`); for tests and self-checks.
pub fn thread_policies(prefix: &str) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in dir.flatten() {
        let p = task.path();
        let Ok(comm) = std::fs::read_to_string(p.join("comm")) else {
            continue;
        };
        let comm = comm.trim().to_string();
        if !comm.starts_with(prefix) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(p.join("stat")) else {
            continue;
        };
        // fields after the command's closing parenthesis start at field 3
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(policy) = rest
            .split_whitespace()
            .nth(41 - 3)
            .and_then(|f| f.parse().ok())
        {
            out.push((comm, policy));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_agrees_with_the_privilege_the_kernel_records() {
        assert_eq!(check().is_ok(), privileged(), "{:?}", check().err());
        if let Err(e) = check() {
            let e = e.to_string();
            assert!(
                e.contains("--realtime") && e.contains("CAP_SYS_NICE"),
                "{e}"
            );
        }
        // the scratch thread's policy never leaks into the caller's
        assert!(!is_fifo());
    }

    #[test]
    fn a_thread_that_enters_reads_back_fifo_and_its_policy_shows_in_proc() {
        if !privileged() {
            return assert!(enter().is_err());
        }
        let h = std::thread::Builder::new()
            .name("rt-probe-thread".into())
            .spawn(|| {
                enter().unwrap();
                let fifo = is_fifo();
                let seen = thread_policies("rt-probe-thr");
                // a thread it starts is normal again (SCHED_RESET_ON_FORK)
                let child = std::thread::spawn(is_fifo).join().unwrap();
                (fifo, seen, child)
            })
            .unwrap();
        let (fifo, seen, child) = h.join().unwrap();
        assert!(fifo);
        assert_eq!(seen, vec![("rt-probe-thread".to_string(), 1)]);
        assert!(!child);
    }

    #[test]
    fn the_description_names_the_policy_and_the_kernel_cap() {
        let d = describe(2);
        assert!(d.contains("2 threads under SCHED_FIFO priority 1"), "{d}");
        assert!(
            d.contains("capped") || d.contains("uncapped") || d.contains("unknown"),
            "{d}"
        );
    }
}
