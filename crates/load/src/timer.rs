//! A sub-millisecond timer for the tokio reactor.
//!
//! tokio's own timer wheel has a 1 ms resolution, which alone would put up to 1 ms of schedule lag
//! on every intended send time. A `timerfd` armed with an absolute CLOCK_MONOTONIC deadline is an
//! hrtimer: it becomes readable within microseconds of the deadline and wakes the same epoll the
//! runtime already waits on, so precise scheduling costs one `timerfd_settime` per re-arm.

use std::io;
use std::num::NonZeroU64;
use std::os::fd::OwnedFd;
use std::task::{Context, Poll};

use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// A re-armable one-shot timer on CLOCK_MONOTONIC with nanosecond deadlines.
pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
    armed_for: u64,
}

impl PreciseTimer {
    /// Creates the timer (must be called inside a tokio runtime with I/O enabled).
    pub fn new() -> io::Result<Self> {
        // Ask the kernel not to coalesce our wake-ups (default slack is 50 µs). Best effort: a
        // refusal leaves the default, and the schedule-lag self-check sees any effect.
        let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1));
        let owned = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // SAFETY: `owned` is an OwnedFd the AsyncFd takes ownership of, so the descriptor stays
        // open and unchanged until the AsyncFd drops it.
        let fd = unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(PreciseTimer { fd, armed_for: 0 })
    }

    /// Arms the timer for the absolute monotonic time `deadline_ns` (no-op if already armed for it).
    pub fn arm(&mut self, deadline_ns: u64) {
        if self.armed_for == deadline_ns {
            return;
        }
        self.armed_for = deadline_ns;
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            // a zero it_value would disarm the timer: the deadline is at least 1 ns
            it_value: Timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as _,
                tv_nsec: (deadline_ns % 1_000_000_000).max(1) as _,
            },
        };
        // ABSTIME: the deadline is a point on CLOCK_MONOTONIC, not a delay. It cannot fail for a
        // valid timerfd and a normalised time.
        let _ = timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::ABSTIME, &spec);
    }

    /// Ready once the armed deadline has passed.
    pub fn poll_fired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let mut guard = match self.fd.poll_read_ready(cx) {
                Poll::Ready(Ok(g)) => g,
                Poll::Ready(Err(_)) => return Poll::Ready(()),
                Poll::Pending => return Poll::Pending,
            };
            // the expiration count: 8 bytes once the deadline has passed, EAGAIN before
            let mut buf = [0u8; 8];
            if let Ok(8) = rustix::io::read(self.fd.get_ref(), &mut buf) {
                self.armed_for = 0;
                return Poll::Ready(());
            }
            guard.clear_ready();
        }
    }
}
