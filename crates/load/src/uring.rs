//! The ticked engine's io_uring back end (issue 36): **one `io_uring_enter` a tick** (the closed
//! model: one per batch of responses, [`Uring::wait_any`]).
//!
//! The epoll back end of `tick.rs` pays, per tick, a `clock_nanosleep` and an `epoll_wait`, and per
//! request a `write` and a `recvmsg`, each entered cold after the thread slept (engine.md §52).
//! Here a tick's sends are queued as `SEND` entries and go to the kernel in the same
//! `io_uring_enter` that then sleeps to the next tick boundary (an absolute timeout,
//! `IORING_ENTER_ABS_TIMER`); responses arrive through one **multishot `RECVMSG`** per connection
//! into a ring of **provided buffers**, each buffer carrying the kernel's receive stamp
//! (`SCM_TIMESTAMPNS`) in its control data, so responses keep the microsecond timing of the epoll
//! back end. The ring is set up with `DEFER_TASKRUN`: receive completions are not run, and the
//! thread not woken, until the next tick's enter asks for them.
//!
//! What the ring needs (kernel ≥ 6.12: deferred task work, provided-buffer rings, multishot
//! `recvmsg`, absolute waits) is checked when it is set up; without it the engine says why and
//! keeps the epoll back end ([`Uring::new`]'s error).

use io_uring::types::BufRingEntry;
use io_uring::{cqueue, opcode, squeue, types, EnterFlags, IoUring};

/// A connection's multishot receive.
pub(crate) const OP_RECV: u8 = 1;
/// A send of (the rest of) a request.
pub(crate) const OP_SEND: u8 = 2;
/// A non-blocking connect's completion (a one-shot poll for writability).
pub(crate) const OP_CONNECT: u8 = 3;

/// The operation's completion tag: the connection's key and what the operation was.
pub(crate) fn user_data(key: usize, op: u8) -> u64 {
    ((key as u64) << 8) | op as u64
}

/// The connection key and operation of a completion's tag.
pub(crate) fn split(user_data: u64) -> (usize, u8) {
    ((user_data >> 8) as usize, (user_data & 0xff) as u8)
}

/// The provided-buffer group every receive draws from.
const BGID: u16 = 0;
/// Buffers in the ring (a power of two): far more than the responses of one tick at the lab's
/// rates; when they run out a receive ends with ENOBUFS and is armed again after the tick.
const BUFS: u16 = 1024;
/// One buffer: the `recvmsg` header, the control data, then the payload; a larger response
/// spans several buffers (completions), appended in order.
const BUF_SIZE: usize = 4096;
/// Entries of the submission queue; a tick that queues more submits early.
const SQ_ENTRIES: u32 = 1024;
/// Completions the wait asks for: never reached in a tick, so the wait ends at the tick boundary
/// (with `DEFER_TASKRUN` the kernel wakes the thread only when this many are ready).
const WAIT_FOR: usize = 1 << 20;

/// One completion, copied out of the completion queue.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cqe {
    pub user_data: u64,
    pub res: i32,
    pub flags: u32,
}

/// A ring, its provided buffers and the `msghdr` its receives share.
pub(crate) struct Uring {
    ring: IoUring,
    /// The buffer ring's entries (page-aligned, shared with the kernel) and the buffers; dropped
    /// after `ring`, so the kernel never holds them past the ring's teardown.
    mem: BufMem,
    /// The ring's tail as this thread has advanced it (published with [`Uring::publish`]).
    tail: u16,
    /// What every multishot `RECVMSG` asks for: no address, room for one timestamp.
    msghdr: Box<libc::msghdr>,
    /// Sends queued since the completions were last collected: each will post a completion of
    /// its own, so [`Uring::wait_any`] waits for one more than these.
    sends: usize,
}

/// Memory the kernel reads and writes through the buffer ring.
struct BufMem {
    /// `BUFS` entries of the buffer ring (mmap'ed, page-aligned).
    entries: *mut BufRingEntry,
    entries_len: usize,
    /// `BUFS × BUF_SIZE` bytes of buffers.
    bufs: *mut u8,
}

impl Drop for BufMem {
    fn drop(&mut self) {
        // SAFETY: both mappings were made by `BufMem::new` with these lengths, and the ring
        // that used them is gone (field order in `Uring`).
        unsafe {
            libc::munmap(self.entries.cast(), self.entries_len);
            libc::munmap(self.bufs.cast(), BUFS as usize * BUF_SIZE);
        }
    }
}

impl BufMem {
    fn new() -> std::io::Result<BufMem> {
        let map = |len: usize| {
            // SAFETY: an anonymous private mapping; checked below.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(p)
            }
        };
        let entries_len = BUFS as usize * std::mem::size_of::<BufRingEntry>();
        let entries = map(entries_len)?;
        let bufs = match map(BUFS as usize * BUF_SIZE) {
            Ok(b) => b,
            Err(e) => {
                // SAFETY: mapped just above.
                unsafe { libc::munmap(entries, entries_len) };
                return Err(e);
            }
        };
        Ok(BufMem {
            entries: entries.cast(),
            entries_len,
            bufs: bufs.cast(),
        })
    }
}

impl Uring {
    /// Sets up a ring for one worker thread, or says why this kernel (or its sandbox) cannot
    /// give one the ticked engine can use.
    pub(crate) fn new() -> Result<Uring, String> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .setup_cqsize(8 * SQ_ENTRIES)
            .build(SQ_ENTRIES)
            .map_err(|e| format!("io_uring_setup: {e}"))?;
        if !ring.params().is_feature_ext_arg() {
            return Err("the kernel's io_uring has no timed waits (IORING_FEAT_EXT_ARG)".into());
        }
        let mut probe = io_uring::Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(|e| format!("io_uring probe: {e}"))?;
        for (code, name) in [
            (opcode::RecvMsgMulti::CODE, "RECVMSG"),
            (opcode::Send::CODE, "SEND"),
            (opcode::PollAdd::CODE, "POLL_ADD"),
        ] {
            if !probe.is_supported(code) {
                return Err(format!("the kernel's io_uring lacks {name}"));
            }
        }
        let mem = BufMem::new().map_err(|e| format!("buffers for io_uring: {e}"))?;
        // SAFETY: `mem` outlives the registration (it is dropped after the ring).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(mem.entries as u64, BUFS, BGID, 0)
        }
        .map_err(|e| format!("io_uring provided-buffer ring: {e}"))?;
        // SAFETY: zeroed msghdr is valid; only the name and control lengths matter to a
        // multishot RECVMSG.
        let mut msghdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: plain arithmetic macro.
        msghdr.msg_controllen =
            unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::timespec>() as u32) } as _;
        let mut u = Uring {
            ring,
            mem,
            tail: 0,
            msghdr,
            sends: 0,
        };
        for bid in 0..BUFS {
            u.recycle(bid);
        }
        u.publish();
        // An absolute wait (kernel ≥ 6.12) that ends at once: a time already past.
        match u.wait_until(1) {
            Ok(()) => Ok(u),
            Err(e) => Err(format!("the kernel's io_uring has no absolute waits: {e}")),
        }
    }

    /// Queues `entry`, submitting what is queued first when the queue is full.
    fn push(&mut self, entry: squeue::Entry) {
        loop {
            // SAFETY: every entry's buffers (the request bytes in the connection's `out`, the
            // boxed msghdr, the buffer ring) outlive the operation: the engine keeps a
            // connection until all its operations have completed.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
            let _ = self.ring.submit();
        }
    }

    /// Arms a multishot receive on `fd` for connection `key`.
    pub(crate) fn recv(&mut self, fd: i32, key: usize) {
        let e = opcode::RecvMsgMulti::new(types::Fd(fd), &*self.msghdr, BGID)
            .build()
            .user_data(user_data(key, OP_RECV));
        self.push(e);
    }

    /// Queues a send of `bytes` on `fd` (the caller keeps `bytes` until its completion).
    pub(crate) fn send(&mut self, fd: i32, key: usize, bytes: &[u8]) {
        let e = opcode::Send::new(types::Fd(fd), bytes.as_ptr(), bytes.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(user_data(key, OP_SEND));
        self.push(e);
        self.sends += 1;
    }

    /// Asks to hear when `fd`'s non-blocking connect finishes (writable, or an error).
    pub(crate) fn connecting(&mut self, fd: i32, key: usize) {
        let e = opcode::PollAdd::new(types::Fd(fd), (libc::POLLOUT | libc::POLLERR) as u32)
            .build()
            .user_data(user_data(key, OP_CONNECT));
        self.push(e);
    }

    /// Submits what is queued and sleeps until the monotonic clock reads `at_ns` (absolute), in
    /// one `io_uring_enter`; receive completions wait, unrun, for [`Uring::collect`].
    pub(crate) fn wait_until(&mut self, at_ns: u64) -> std::io::Result<()> {
        self.enter(WAIT_FOR, at_ns)
    }

    /// Submits what is queued and waits until a completion beyond the queued sends' own is ready
    /// (a response, most often) or the monotonic clock reads `until_ns` (absolute), in one
    /// `io_uring_enter`: the closed model's wait for its next responses, its sends leaving in the
    /// same enter. Waiting for one completion only, the sends — done at once, inline — would end
    /// the wait, and every batch would cost two enters.
    pub(crate) fn wait_any(&mut self, until_ns: u64) -> std::io::Result<()> {
        self.enter(self.sends + 1, until_ns)
    }

    /// One `io_uring_enter`: submits what is queued and waits for `want` completions or until
    /// the monotonic clock reads `until_ns` (absolute); the timeout and a signal are not errors.
    fn enter(&mut self, want: usize, until_ns: u64) -> std::io::Result<()> {
        let ts = types::Timespec::new()
            .sec(until_ns / 1_000_000_000)
            .nsec((until_ns % 1_000_000_000) as u32);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self
            .ring
            .submitter()
            .submit_with_args_and_flags(want, &args, EnterFlags::ABS_TIMER)
        {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Runs the completions the kernel deferred (when it flagged some) and copies every
    /// completion into `out`.
    pub(crate) fn collect(&mut self, out: &mut Vec<Cqe>) {
        out.clear();
        self.sends = 0;
        if self.ring.submission().taskrun() || self.ring.submission().cq_overflow() {
            // with the TASKRUN flag set, the crate's submit enters with GETEVENTS
            let _ = self.ring.submit();
        }
        out.extend(self.ring.completion().map(|c| Cqe {
            user_data: c.user_data(),
            res: c.result(),
            flags: c.flags(),
        }));
    }

    /// What a receive completion of `res` bytes in buffer `bid` holds: the payload and the
    /// kernel's receive stamp (wall clock ns; 0 when none came).
    pub(crate) fn received(&self, bid: u16, res: i32) -> (&[u8], i128) {
        let len = (res.max(0) as usize).min(BUF_SIZE);
        // SAFETY: buffer `bid` lies within the mapping, and the kernel has finished writing
        // `res` bytes into it (the completion says so); it is not handed back until recycled.
        let buf =
            unsafe { std::slice::from_raw_parts(self.mem.bufs.add(bid as usize * BUF_SIZE), len) };
        let Ok(out) = types::RecvMsgOut::parse(buf, &self.msghdr) else {
            return (&[], 0);
        };
        // the parser's slices borrow it, not the buffer: take the payload's place in the buffer
        let payload = out.payload_data();
        let at = payload.as_ptr() as usize - buf.as_ptr() as usize;
        let len = payload.len();
        let stamp = stamp(out.control_data());
        (&buf[at..at + len], stamp)
    }

    /// Hands buffer `bid` back to the kernel (seen by it at the next [`Uring::publish`]).
    pub(crate) fn recycle(&mut self, bid: u16) {
        let at = (self.tail & (BUFS - 1)) as usize;
        // SAFETY: `at` < BUFS; the entry is ours to write until the tail is published.
        unsafe {
            let e = &mut *self.mem.entries.add(at);
            e.set_addr(self.mem.bufs.add(bid as usize * BUF_SIZE) as u64);
            e.set_len(BUF_SIZE as u32);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Publishes the recycled buffers to the kernel.
    pub(crate) fn publish(&mut self) {
        // SAFETY: the tail field lies in the first entry of the mapped ring; the kernel reads it
        // with acquire semantics.
        unsafe {
            let tail = BufRingEntry::tail(self.mem.entries) as *const std::sync::atomic::AtomicU16;
            (*tail).store(self.tail, std::sync::atomic::Ordering::Release);
        }
    }
}

/// The `SCM_TIMESTAMPNS` stamp in a `recvmsg` control buffer (wall clock ns), 0 if none.
fn stamp(control: &[u8]) -> i128 {
    let hdr = std::mem::size_of::<libc::cmsghdr>();
    let mut at = 0;
    while at + hdr <= control.len() {
        // SAFETY: at least a header's bytes remain; read unaligned.
        let c: libc::cmsghdr = unsafe { std::ptr::read_unaligned(control[at..].as_ptr().cast()) };
        let len = c.cmsg_len as usize;
        if len < hdr {
            return 0;
        }
        // SAFETY: plain arithmetic macro.
        let data = at + unsafe { libc::CMSG_LEN(0) } as usize;
        if c.cmsg_level == libc::SOL_SOCKET
            && c.cmsg_type == libc::SCM_TIMESTAMPNS
            && data + std::mem::size_of::<libc::timespec>() <= control.len()
        {
            // SAFETY: bounds checked just above.
            let ts: libc::timespec =
                unsafe { std::ptr::read_unaligned(control[data..].as_ptr().cast()) };
            return ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
        }
        // SAFETY: plain arithmetic macro.
        at += unsafe { libc::CMSG_SPACE((len - (data - at)) as u32) } as usize;
    }
    0
}

/// Whether the multishot operation of this completion goes on.
pub(crate) fn more(flags: u32) -> bool {
    cqueue::more(flags)
}

/// The provided buffer this completion used, if any.
pub(crate) fn buffer(flags: u32) -> Option<u16> {
    cqueue::buffer_select(flags)
}
