//! A sub-millisecond timer for the tokio reactor.
//!
//! tokio's own timer wheel has a 1 ms resolution, which alone would put up to 1 ms of schedule lag
//! on every intended send time. A `timerfd` armed with an absolute CLOCK_MONOTONIC deadline is an
//! hrtimer: it becomes readable within microseconds of the deadline and wakes the same epoll the
//! runtime already waits on, so precise scheduling costs one `timerfd_settime` per re-arm.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::task::{Context, Poll};
use tokio::io::unix::AsyncFd;

/// A re-armable one-shot timer on CLOCK_MONOTONIC with nanosecond deadlines.
pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
    armed_for: u64,
}

impl PreciseTimer {
    /// Creates the timer (must be called inside a tokio runtime with I/O enabled).
    pub fn new() -> io::Result<Self> {
        // Ask the kernel not to coalesce our wake-ups (default slack is 50 µs).
        // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64) };
        // SAFETY: timerfd_create returns a new fd or -1.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: we own the fd and it stays open for the AsyncFd's lifetime (it owns it).
        let fd =
            unsafe { AsyncFd::register(owned) }.map_err(|e| io::Error::other(e.to_string()))?;
        Ok(PreciseTimer { fd, armed_for: 0 })
    }

    /// Arms the timer for the absolute monotonic time `deadline_ns` (no-op if already armed for it).
    pub fn arm(&mut self, deadline_ns: u64) {
        if self.armed_for == deadline_ns {
            return;
        }
        self.armed_for = deadline_ns;
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline_ns % 1_000_000_000).max(1) as libc::c_long,
            },
        };
        // SAFETY: valid fd and itimerspec; TFD_TIMER_ABSTIME makes the deadline absolute.
        unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }

    /// Ready once the armed deadline has passed.
    pub fn poll_fired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let mut guard = match self.fd.poll_read_ready(cx) {
                Poll::Ready(Ok(g)) => g,
                Poll::Ready(Err(_)) => return Poll::Ready(()),
                Poll::Pending => return Poll::Pending,
            };
            let mut buf = [0u8; 8];
            // SAFETY: reading 8 bytes (the expiration count) into a valid buffer.
            let n =
                unsafe { libc::read(self.fd.get_ref().as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
            if n == 8 {
                self.armed_for = 0;
                return Poll::Ready(());
            }
            guard.clear_ready();
        }
    }
}
