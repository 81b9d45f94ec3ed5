//! One monotonic clock for the whole engine (CLOCK_MONOTONIC, read through the vDSO), in
//! nanoseconds, so intended send times, timerfd deadlines and measurements share one time base.

use rustix::time::{clock_gettime, ClockId, Timespec};

fn ns(ts: Timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline]
pub fn now_ns() -> u64 {
    ns(clock_gettime(ClockId::Monotonic))
}

/// CPU time (user + system) of the whole process, in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    ns(clock_gettime(ClockId::ProcessCPUTime))
}

/// CPU time (user + system) of the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    ns(clock_gettime(ClockId::ThreadCPUTime))
}
