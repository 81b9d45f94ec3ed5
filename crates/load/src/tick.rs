//! The ticked open-model engine (issue 36): the worker thread wakes once per tick, not once per
//! request.
//!
//! The tokio engine pays two wake-ups per request at the lab's rates — one for the timer that
//! sends it, one for the epoll event of its response — about 19 µs each on a small VM, so its CPU
//! per request grows as the rate falls (docs/benchmarks.md §36). Here the thread sleeps to the
//! next tick boundary (`clock_nanosleep`, absolute), and at each tick:
//!
//! 1. asks a private epoll which connections have bytes, **with a zero timeout** (responses never
//!    wake the thread), reads them, and takes each response's completion time from the kernel's
//!    receive timestamp of its last segment (`SO_TIMESTAMPNS`), so latency keeps the
//!    microsecond resolution the tick does not have;
//! 2. times out requests older than the request timeout;
//! 3. sends every request whose intended time is nearest this tick: the plan's arrivals moved
//!    to the nearest tick (at most half a tick earlier or later) are this engine's schedule.
//!    Latency runs from that quantised time — CO-correct as in the tokio engine: a tick the
//!    thread wakes late for, or a request that waits for a connection, has the delay inside its
//!    latency — and the schedule lag is how late the thread was for its tick;
//! 4. while requests wait for a connection (the connection cap reached), reads the connections
//!    every eighth of a tick until the next one, so a freed connection takes the next queued
//!    request then; such a request's schedule lag runs from when it could have gone (its
//!    intended time, or the freeing response's arrival if later) to its send — the part of its
//!    wait that was this engine's, not the service's;
//! 5. rotates the per-second record and watches the stop flag.
//!
//! What it gives up: arrivals are quantised to the tick (the requests due in one tick leave
//! together), and it speaks only HTTP/1.1 over cleartext with keep-alive; TLS, HTTP/2 and
//! keep-alive off stay on the tokio engine. Chosen with `LoadConfig::tick`.
//!
//! **The closed model** ([`run_closed`]) has no send times to tick: each connection sends its
//! next request as soon as its response is read, and the thread handles every response that
//! arrived together in one wake-up — on io_uring one `io_uring_enter` carries the sends the last
//! batch queued and waits for the next completions, so at saturation the syscalls per request
//! fall with the batch (engine.md §75). The tick only paces the housekeeping: timeouts, the
//! per-second record, the stop flag. Latency runs from when a connection's loop decided to send
//! (as the tokio engine's closed model), the response's time from the kernel's receive stamp.

use super::{start_closed_stage, ClosedShape, Ctx, Job, MAX_OPENING, PRECONNECT};
use crate::clock::now_ns;
use crate::schedule::{Schedule, TimedStage};
use crate::summary::{ResetExample, ResetKind};
use ceiling_metrics::{Outcome, Phase};
use std::cell::Cell;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, RawFd};

/// While requests wait for a connection, the connections are read this many times a tick.
const SUBTICKS: u64 = 8;
/// … but not more often than every 100 µs.
const MIN_SUBTICK_NS: u64 = 100_000;

/// The largest response the ticked engine buffers (headers and body); a larger one is counted
/// as malformed (`other`). API responses are far smaller.
const MAX_RESPONSE: usize = 4 << 20;

/// What a buffer holds of one HTTP/1.1 response.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// More bytes are needed.
    Partial,
    /// A whole response of `len` bytes with this status; `close`: the connection cannot be
    /// reused after it.
    Complete {
        status: u16,
        len: usize,
        close: bool,
    },
    /// A body delimited by the connection's close: complete when the peer closes.
    UntilClose { status: u16 },
    /// Not HTTP/1.1.
    Malformed,
}

/// Frames the first response in `buf` (interim 1xx responses skipped): Content-Length, chunked,
/// no body (HEAD, 204, 304), or delimited by close.
pub(crate) fn frame(buf: &[u8], head_only: bool) -> Frame {
    let mut at = 0;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 48];
        let mut resp = httparse::Response::new(&mut headers);
        let head = match resp.parse(&buf[at..]) {
            Ok(httparse::Status::Complete(h)) => h,
            Ok(httparse::Status::Partial) => return Frame::Partial,
            Err(_) => return Frame::Malformed,
        };
        let status = resp.code.unwrap_or(0);
        let Some(crate::http::BodyFraming {
            length,
            chunked,
            close,
        }) = crate::http::body_framing(&resp)
        else {
            return Frame::Malformed;
        };
        if (100..200).contains(&status) {
            at += head;
            continue;
        }
        let body = at + head;
        if head_only || status == 204 || status == 304 {
            return Frame::Complete {
                status,
                len: body,
                close,
            };
        }
        if chunked {
            return match chunked_end(&buf[body..]) {
                Ok(Some(n)) => Frame::Complete {
                    status,
                    len: body + n,
                    close,
                },
                Ok(None) => Frame::Partial,
                Err(()) => Frame::Malformed,
            };
        }
        return match length {
            Some(n) => match body.checked_add(n) {
                Some(total) if total <= buf.len() => Frame::Complete {
                    status,
                    len: total,
                    close,
                },
                Some(total) if total <= MAX_RESPONSE => Frame::Partial,
                _ => Frame::Malformed,
            },
            None => Frame::UntilClose { status },
        };
    }
}

/// The encoded length of a complete chunked body at the start of `b`, `None` while incomplete.
fn chunked_end(b: &[u8]) -> Result<Option<usize>, ()> {
    let line_end = |from: usize| {
        b[from..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|p| from + p)
    };
    let mut at = 0;
    loop {
        let Some(end) = line_end(at) else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&b[at..end]).map_err(|_| ())?;
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| ())?;
        at = end + 2;
        if size == 0 {
            // trailer fields, then an empty line
            loop {
                let Some(end) = line_end(at) else {
                    return Ok(None);
                };
                let empty = end == at;
                at = end + 2;
                if empty {
                    return Ok(Some(at));
                }
            }
        }
        let data_end = at.checked_add(size).ok_or(())?;
        if data_end + 2 > b.len() {
            return if data_end > MAX_RESPONSE {
                Err(())
            } else {
                Ok(None)
            };
        }
        if &b[data_end..data_end + 2] != b"\r\n" {
            return Err(());
        }
        at = data_end + 2;
    }
}

/// One connection of the ticked engine.
struct TConn {
    sock: std::net::TcpStream,
    /// Connecting (non-blocking connect in progress) since this time.
    connecting_since: Option<u64>,
    /// The request it carries, when busy: the job, when it was written, how much of it is left
    /// to write, and whether this is its idle-close retry.
    job: Option<(Job, u64, usize, bool)>,
    buf: Vec<u8>,
    /// Requests answered on it.
    served: u64,
    /// When it last went idle (0: never used).
    idle_since: u64,
    /// The kernel's receive time of the last bytes read (monotonic ns), 0 when unknown.
    rx_ns: u64,
    /// The peer closed it.
    eof: bool,
    /// io_uring back end: the bytes of the send in flight (the kernel reads them until the
    /// send completes; epoll writes straight from the job).
    out: Vec<u8>,
    /// io_uring back end: a send is in flight.
    sending: bool,
    /// io_uring back end: its multishot receive is armed.
    armed: bool,
    /// io_uring back end: operations not yet completed; the connection (its socket and `out`)
    /// is kept until they have, even after it is closed.
    pending: u8,
}

/// A private epoll, asked with a zero timeout only.
struct Poller {
    fd: RawFd,
    events: Vec<libc::epoll_event>,
}

impl Poller {
    fn new() -> std::io::Result<Poller> {
        // SAFETY: plain syscall; the fd is owned by Poller and closed in Drop.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Poller {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 1024],
        })
    }

    /// Watches `fd` (level-triggered) for input and, while `out`, for writability; `key` comes
    /// back with its events.
    fn watch(&self, fd: RawFd, key: usize, out: bool, op: libc::c_int) {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP | if out { libc::EPOLLOUT } else { 0 })
                as u32,
            u64: key as u64,
        };
        // SAFETY: valid epoll fd and event struct; errors (a closed fd) are ignored, as the
        // connection is then dropped by its own read or write.
        unsafe { libc::epoll_ctl(self.fd, op, fd, &mut ev) };
    }

    fn forget(&self, fd: RawFd) {
        // SAFETY: as above.
        unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }

    /// The connections with events, into `out`, waiting up to `timeout_ms` for the first (0:
    /// never waits, as a tick asks; the closed model waits for its next responses).
    fn wait_into(&mut self, out: &mut Vec<(usize, u32)>, timeout_ms: i32) {
        // SAFETY: the buffer is valid for `len` events.
        let n = unsafe {
            libc::epoll_wait(
                self.fd,
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout_ms,
            )
        };
        out.clear();
        out.extend(
            self.events[..n.max(0) as usize]
                .iter()
                .map(|e| (e.u64 as usize, e.events)),
        );
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.fd) };
    }
}

/// How the ticked engine talks to the kernel: a private epoll asked with a zero timeout plus a
/// syscall per write and read, or an io_uring that carries a tick's sends and its sleep in one
/// enter (`uring.rs`).
enum Io {
    Epoll(Poller),
    Uring(Box<crate::uring::Uring>),
}

/// Which back end a worker of the ticked engine ran on, in a phrase for the summary (`io_uring`,
/// or `epoll` with the reason io_uring was not used when it was asked for or left out).
fn open_io(want: ceiling_plan::IoBackend) -> Result<(Io, String), String> {
    let epoll = || Poller::new().map_err(|e| format!("cannot create an epoll instance: {e}"));
    match want {
        ceiling_plan::IoBackend::Epoll => Ok((Io::Epoll(epoll()?), "epoll".into())),
        ceiling_plan::IoBackend::IoUring => crate::uring::Uring::new()
            .map(|u| (Io::Uring(Box::new(u)), "io_uring".into()))
            .map_err(|why| format!("--io io_uring: {why}; use --io epoll (or auto)")),
        ceiling_plan::IoBackend::Auto => match crate::uring::Uring::new() {
            Ok(u) => Ok((Io::Uring(Box::new(u)), "io_uring".into())),
            Err(why) => Ok((
                Io::Epoll(epoll()?),
                format!("epoll (io_uring unavailable: {why})"),
            )),
        },
    }
}

/// Sleeps until the monotonic clock reads `at_ns` (absolute, so a late wake-up does not push
/// the next one later).
fn sleep_until(at_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (at_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: valid timespec; EINTR just wakes early, the loop copes.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC now, ns (to move the kernel's receive timestamps, which are
/// wall-clock times, onto the engine's monotonic clock).
fn realtime_offset() -> i128 {
    let mut rt = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut rt) };
    let mono = now_ns() as i128;
    (rt.tv_sec as i128) * 1_000_000_000 + rt.tv_nsec as i128 - mono
}

/// Reads what `fd` has into `buf` (up to `cap` bytes more): bytes read, whether the peer closed,
/// and the kernel's receive time of the last segment read (wall clock ns; 0 if none came).
fn read_stamped(fd: RawFd, buf: &mut Vec<u8>, cap: usize) -> std::io::Result<(usize, bool, i128)> {
    let mut total = 0;
    let mut stamp: i128 = 0;
    loop {
        if buf.len() >= cap {
            return Ok((total, false, stamp));
        }
        let old = buf.len();
        // read into the spare capacity: zeroing 16 KiB before every read cost more than the read
        buf.reserve(16384);
        let spare = buf.spare_capacity_mut();
        let mut iov = libc::iovec {
            iov_base: spare.as_mut_ptr().cast(),
            iov_len: spare.len(),
        };
        let mut cmsg = [0u64; 16];
        // SAFETY: msghdr points at valid buffers that outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cmsg.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cmsg) as _;
        // SAFETY: as above.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.kind() {
                std::io::ErrorKind::WouldBlock => Ok((total, false, stamp)),
                std::io::ErrorKind::Interrupted => continue,
                _ => Err(e),
            };
        }
        // SAFETY: the kernel wrote `n` bytes into the spare capacity.
        unsafe { buf.set_len(old + n as usize) };
        if n == 0 {
            return Ok((total, true, stamp));
        }
        total += n as usize;
        let short = (n as usize) < iov.iov_len;
        // SAFETY: walking the control buffer the kernel filled, with the libc macros.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    stamp = ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        if short {
            // A read that did not fill the space took everything queued: stop without the
            // recvmsg that would only say EAGAIN (level-triggered epoll reports anything that
            // arrives meanwhile at the next tick).
            return Ok((total, false, stamp));
        }
    }
}

/// Opens a non-blocking connection with receive timestamps on; `Ok(true)` when it connected at
/// once (loopback often does), `Ok(false)` while in progress.
fn open(addr: std::net::SocketAddr) -> std::io::Result<(std::net::TcpStream, bool)> {
    let domain = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain syscall; ownership moves into the TcpStream below.
    let fd = unsafe {
        libc::socket(
            domain,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh socket we own.
    let sock = unsafe { <std::net::TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let one: libc::c_int = 1;
    // SAFETY: valid option value pointers.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&one as *const libc::c_int).cast(),
            4,
        );
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            4,
        );
    }
    let (sa, len) = sockaddr(addr);
    // SAFETY: sa is a valid sockaddr of `len` bytes.
    let r = unsafe { libc::connect(fd, (&sa as *const libc::sockaddr_storage).cast(), len) };
    if r == 0 {
        return Ok((sock, true));
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINPROGRESS) {
        Ok((sock, false))
    } else {
        Err(e)
    }
}

fn sockaddr(addr: std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: zeroed sockaddr_storage is valid; we fill the variant that matches.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        std::net::SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            (
                ss,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        std::net::SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            (
                ss,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}

/// The pending error of a socket whose non-blocking connect finished.
fn take_error(sock: &std::net::TcpStream) -> Option<std::io::Error> {
    sock.take_error().ok().flatten()
}

/// The ticked engine's state for one worker.
struct Ticked<'a> {
    ctx: &'a Ctx,
    io: Io,
    /// io_uring back end: closed connections whose operations have not all completed, by key
    /// (the key is reused only once they have).
    parked: std::collections::HashMap<usize, TConn>,
    /// io_uring back end: this tick's completions (kept: no allocation per tick).
    cqes: Vec<crate::uring::Cqe>,
    conns: Vec<Option<TConn>>,
    free: Vec<usize>,
    idle: Vec<usize>,
    backlog: VecDeque<Job>,
    cap: usize,
    backlog_cap: usize,
    open: usize,
    opening: usize,
    offset: i128,
    /// The poller's events of this tick (kept: no allocation per tick).
    events: Vec<(usize, u32)>,
    /// The closed model's stage in progress ([`run_closed`]); `None`: the open model.
    closed: Option<ClosedStage>,
}

/// What is left of a closed-model stage on this worker.
struct ClosedStage {
    /// Requests it may still send (`u64::MAX`: bounded by time only).
    budget: u64,
    /// When it stops sending (monotonic ns; `u64::MAX`: bounded by its requests only).
    deadline: u64,
}

impl<'a> Ticked<'a> {
    /// The engine on this worker with its I/O back end (the configuration's, said once in the
    /// summary), at most `cap` connections and `backlog_cap` requests queued for one.
    fn open(ctx: &'a Ctx, cap: usize, backlog_cap: usize) -> Result<Ticked<'a>, String> {
        let (io, io_said) = open_io(ctx.cfg.io)?;
        ctx.connect_failures.said_io(io_said);
        Ok(Ticked {
            ctx,
            io,
            parked: std::collections::HashMap::new(),
            cqes: Vec::new(),
            conns: Vec::new(),
            free: Vec::new(),
            idle: Vec::new(),
            backlog: VecDeque::new(),
            cap,
            backlog_cap,
            open: 0,
            opening: 0,
            offset: realtime_offset(),
            events: Vec::new(),
            closed: None,
        })
    }

    /// The closed model: the next request of a connection's loop, if its stage still sends —
    /// latency runs from now, when the loop decided to send (as the tokio engine's closed model).
    fn closed_job(&mut self) -> Option<Job> {
        let cs = self.closed.as_mut()?;
        let now = now_ns();
        if self.ctx.stopping.get() || now >= cs.deadline || cs.budget == 0 {
            return None;
        }
        cs.budget -= 1;
        Some(self.ctx.offer(now, now))
    }

    /// The closed model: every loop of the stage has a connection — one whose connection was
    /// closed (by the server, a failure or a timeout) goes on over a new one, as the tokio
    /// engine's loop reconnects. At most `MAX_OPENING` connects at once; a refused connect is
    /// recorded and tried again after the next wake-up, not in a tight loop.
    fn top_up(&mut self, loops: usize) {
        let mut tries = loops;
        while self.open < loops && self.opening < MAX_OPENING && tries > 0 {
            tries -= 1;
            let Some(job) = self.closed_job() else {
                return;
            };
            self.connect(Some(job));
        }
    }

    /// The closed model's wait: until a response (or any event) arrives or `until` (absolute,
    /// monotonic ns), then handles what came; io_uring: the sends queued since the last wait
    /// leave in the same enter.
    fn wait_events(&mut self, until: u64) {
        let Io::Uring(u) = &mut self.io else {
            let left = until.saturating_sub(now_ns());
            return self.poll_for(left.div_ceil(1_000_000).min(i32::MAX as u64) as i32);
        };
        if u.wait_any(until).is_err() {
            sleep_until(until.min(now_ns() + 1_000_000));
        }
        self.complete();
    }

    /// A new connection (for `job`, or idle when `None`); when it cannot be opened the job is
    /// recorded as a connect error.
    fn connect(&mut self, job: Option<Job>) {
        let addr = self.ctx.cfg.target.addr;
        match open(addr) {
            Ok((sock, done)) => {
                let key = self.adopt(sock, done, None);
                match job {
                    Some(j) => self.assign(key, j, false),
                    None if done => self.idle.push(key),
                    None => {}
                }
            }
            Err(e) => {
                self.ctx
                    .connect_failures
                    .note(|| format!("connecting to {addr}: {e}"));
                if let Some(j) = job {
                    self.record(j.tag, j.intended, now_ns(), now_ns(), Outcome::Connect);
                }
            }
        }
    }

    /// Takes a new socket into the table (watched by the poller; connected when `done`, else
    /// connecting) carrying `job` if given; returns its key.
    fn adopt(
        &mut self,
        sock: std::net::TcpStream,
        done: bool,
        job: Option<(Job, u64, usize, bool)>,
    ) -> usize {
        let key = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        let fd = sock.as_raw_fd();
        self.conns[key] = Some(TConn {
            sock,
            connecting_since: (!done).then(now_ns),
            job,
            buf: Vec::new(),
            served: 0,
            idle_since: 0,
            rx_ns: 0,
            eof: false,
            out: Vec::new(),
            sending: false,
            armed: false,
            pending: 0,
        });
        match &mut self.io {
            Io::Epoll(p) => p.watch(fd, key, !done, libc::EPOLL_CTL_ADD),
            Io::Uring(u) => {
                let c = self.conns[key].as_mut().expect("just made");
                if done {
                    arm_recv(u, c, key);
                } else {
                    u.connecting(fd, key);
                    c.pending += 1;
                }
            }
        }
        self.open += 1;
        if done {
            self.ctx.conns.set(self.ctx.conns.get() + 1);
        } else {
            self.opening += 1;
        }
        key
    }

    /// Gives `job` to connection `key` and writes it if the connection is up.
    fn assign(&mut self, key: usize, job: Job, retry: bool) {
        let c = self.conns[key].as_mut().expect("live connection");
        let len = job.wire.as_bytes().len();
        c.job = Some((job, 0, len, retry));
        if c.connecting_since.is_none() {
            self.write(key);
        }
    }

    /// Writes what is left of connection `key`'s request.
    fn write(&mut self, key: usize) {
        let c = self.conns[key].as_mut().expect("live connection");
        let Some((job, sent, left, _)) = c.job.as_mut() else {
            return;
        };
        let bytes = job.wire.as_bytes();
        let from = bytes.len() - *left;
        if let Io::Uring(u) = &mut self.io {
            // queued now, sent by the tick's enter; the rest of a short send is queued again
            // when its completion says how much went
            if c.sending {
                return;
            }
            c.out.clear();
            c.out.extend_from_slice(&bytes[from..]);
            u.send(c.sock.as_raw_fd(), key, &c.out);
            c.sending = true;
            c.pending += 1;
            first_write(self.ctx, sent);
            return;
        }
        match std::io::Write::write(&mut c.sock, &bytes[from..]) {
            Ok(n) => {
                first_write(self.ctx, sent);
                *left -= n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => self.fail(key, ExchangeFailure::Write),
        }
    }

    /// Records one finished request: latency from its (quantised) intended time, or from its send
    /// if that was earlier (never but by the clock's own jitter).
    fn record(&self, tag: usize, intended: u64, sent: u64, done: u64, outcome: Outcome) {
        self.ctx
            .record(tag, intended.min(sent), sent, done, outcome);
    }

    /// Drops connection `key`.
    fn close(&mut self, key: usize) {
        if let Some(c) = self.conns[key].take() {
            if c.connecting_since.is_some() {
                self.opening -= 1;
            } else {
                self.ctx.conns.set(self.ctx.conns.get().saturating_sub(1));
            }
            self.open -= 1;
            match &self.io {
                Io::Epoll(p) => p.forget(c.sock.as_raw_fd()),
                Io::Uring(_) if c.pending > 0 => {
                    // the shutdown ends its receive and any send or connect in flight; the
                    // socket and its send buffer stay until their completions have come
                    // SAFETY: plain syscall on a socket we own.
                    unsafe { libc::shutdown(c.sock.as_raw_fd(), libc::SHUT_RDWR) };
                    self.parked.insert(key, c);
                    return;
                }
                Io::Uring(_) => {}
            }
            self.free.push(key);
        }
    }

    /// io_uring back end: one of connection `key`'s operations completed for good; false when
    /// the connection is closed (a parked one is let go with its last operation).
    fn op_done(&mut self, key: usize) -> bool {
        if let Some(c) = self.conns[key].as_mut() {
            c.pending = c.pending.saturating_sub(1);
            return true;
        }
        if let Some(p) = self.parked.get_mut(&key) {
            p.pending = p.pending.saturating_sub(1);
            if p.pending == 0 {
                self.parked.remove(&key);
                self.free.push(key);
            }
        }
        false
    }

    /// io_uring back end: handles this tick's completions.
    fn complete(&mut self) {
        let Io::Uring(u) = &mut self.io else {
            return;
        };
        let mut cqes = std::mem::take(&mut self.cqes);
        u.collect(&mut cqes);
        for cqe in &cqes {
            let (key, op) = crate::uring::split(cqe.user_data);
            match op {
                crate::uring::OP_RECV => self.on_recv(key, cqe.res, cqe.flags),
                crate::uring::OP_SEND => self.on_sent(key, cqe.res),
                crate::uring::OP_CONNECT => {
                    // the poll is done with; a connection closed meanwhile has nothing to finish
                    let live = self.op_done(key);
                    if live {
                        self.on_connect_ready(key);
                    }
                }
                _ => {}
            }
        }
        self.cqes = cqes;
        if let Io::Uring(u) = &mut self.io {
            u.publish();
        }
    }

    /// io_uring back end: a receive completion — bytes (appended, with their receive stamp), the
    /// peer's close, an error, or the end of the multishot (armed again while the connection
    /// lives).
    fn on_recv(&mut self, key: usize, res: i32, flags: u32) {
        let Io::Uring(u) = &mut self.io else {
            return;
        };
        // A multishot RECVMSG reports the peer's close as its last completion (no MORE) with a
        // buffer whose payload is empty — its `res` counts the header, so it is not 0.
        let more = crate::uring::more(flags);
        let mut closed = false;
        if let Some(bid) = crate::uring::buffer(flags) {
            if let Some(c) = self.conns[key].as_mut() {
                let (payload, stamp) = u.received(bid, res);
                closed = payload.is_empty() && !more;
                c.buf.extend_from_slice(payload);
                if stamp > 0 {
                    c.rx_ns = (stamp - self.offset).max(0) as u64;
                }
            }
            // whatever became of the connection, the buffer goes back
            u.recycle(bid);
        }
        if !more {
            if !self.op_done(key) {
                return;
            }
            if let Some(c) = self.conns[key].as_mut() {
                c.armed = false;
            }
        }
        let Some(c) = self.conns[key].as_mut() else {
            return;
        };
        if res == 0 || closed {
            c.eof = true;
        } else if res < 0 && res != -libc::ENOBUFS {
            if c.job.is_some() {
                let e = std::io::Error::from_raw_os_error(-res);
                return self.fail(key, ExchangeFailure::Read(e.to_string()));
            }
            // an idle connection that errs is done with, as one its peer closed (after_read)
            c.eof = true;
        }
        if res != -libc::ENOBUFS {
            self.after_read(key);
        }
        // the multishot ended (buffers ran out, or the kernel ended it): arm it again
        if let (Some(c), Io::Uring(u)) = (self.conns[key].as_mut(), &mut self.io) {
            if !c.armed && !c.eof && c.connecting_since.is_none() {
                arm_recv(u, c, key);
            }
        }
    }

    /// io_uring back end: a send completed — written on if it was short, or failed.
    fn on_sent(&mut self, key: usize, res: i32) {
        if !self.op_done(key) {
            return;
        }
        let c = self.conns[key].as_mut().expect("live connection");
        c.sending = false;
        if res < 0 {
            if c.job.is_some() {
                self.fail(key, ExchangeFailure::Write);
            }
            return;
        }
        if let Some((_, _, left, _)) = c.job.as_mut() {
            *left = left.saturating_sub(res as usize);
            if *left > 0 {
                self.write(key);
            }
        }
    }

    /// Connection `key` failed: its request is retried once on a new connection when the
    /// connection had sat idle and closed before any byte of the response (the idle-close race,
    /// as the tokio engine does), else recorded as the failure.
    fn fail(&mut self, key: usize, how: ExchangeFailure) {
        let Some(c) = self.conns[key].as_mut() else {
            return;
        };
        let (got, served, idle_since) = (c.buf.len(), c.served, c.idle_since);
        let Some((job, sent, _, retry)) = c.job.take() else {
            self.close(key);
            return;
        };
        let now = now_ns();
        let last_error = match &how {
            ExchangeFailure::Write => "write failed".to_string(),
            ExchangeFailure::Read(e) => e.clone(),
            ExchangeFailure::Closed => "closed".to_string(),
        };
        self.close(key);
        let closed_early =
            matches!(how, ExchangeFailure::Closed | ExchangeFailure::Write) && got == 0;
        if closed_early && idle_since > 0 && !retry {
            self.ctx.connect_failures.tally(|t| t.retried += 1);
            self.retry(job, sent);
            return;
        }
        let kind = if retry {
            ResetKind::RetryFailed
        } else if closed_early {
            ResetKind::ClosedWhenNew
        } else {
            ResetKind::MidResponse
        };
        let example = ResetExample {
            t: self.ctx.rec.borrow().cur.t,
            kind,
            bytes: got,
            served,
            idle_ms: if idle_since > 0 {
                sent.saturating_sub(idle_since) as f64 / 1e6
            } else {
                0.0
            },
            retry,
            error: last_error,
        };
        self.ctx.connect_failures.tally(|t| t.note(example));
        self.record(job.tag, job.intended, sent.max(1), now, Outcome::Reset);
    }

    /// Sends `job` again on a new connection (its latency still runs from its intended time).
    fn retry(&mut self, job: Job, sent: u64) {
        let addr = self.ctx.cfg.target.addr;
        match open(addr) {
            Ok((sock, done)) => {
                let len = job.wire.as_bytes().len();
                let key = self.adopt(sock, done, Some((job, sent, len, true)));
                if done {
                    // written from its start; `sent` stays the first write's time
                    self.write(key);
                }
            }
            Err(e) => {
                self.ctx
                    .connect_failures
                    .note(|| format!("connecting to {addr}: {e}"));
                self.ctx.connect_failures.tally(|t| {
                    t.note(ResetExample {
                        t: 0,
                        kind: ResetKind::RetryFailed,
                        bytes: 0,
                        served: 0,
                        idle_ms: 0.0,
                        retry: true,
                        error: format!("the retry's connect: {e}"),
                    })
                });
                self.record(job.tag, job.intended, sent.max(1), now_ns(), Outcome::Reset);
            }
        }
    }

    /// Handles the events of connection `key`.
    fn on_event(&mut self, key: usize, events: u32) {
        let Some(c) = self.conns[key].as_ref() else {
            return;
        };
        if c.connecting_since.is_some() {
            if events & (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP) as u32 == 0 {
                return;
            }
            self.on_connect_ready(key);
            return;
        }
        let input = libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR;
        if events & input as u32 != 0 {
            self.read(key);
        }
    }

    /// Connection `key`'s non-blocking connect finished: connected (its request written, or
    /// idle), or failed (its request recorded as a connect error).
    fn on_connect_ready(&mut self, key: usize) {
        let Some(c) = self.conns[key].as_ref() else {
            return;
        };
        if let Some(e) = take_error(&c.sock) {
            let addr = self.ctx.cfg.target.addr;
            self.ctx
                .connect_failures
                .note(|| format!("connecting to {addr}: {e}"));
            let job = self.conns[key].as_mut().and_then(|c| c.job.take());
            self.close(key);
            if let Some((j, _, _, _)) = job {
                let now = now_ns();
                self.record(j.tag, j.intended, now, now, Outcome::Connect);
            }
            return;
        }
        let fd = c.sock.as_raw_fd();
        let has_job = c.job.is_some();
        self.opening -= 1;
        self.ctx.conns.set(self.ctx.conns.get() + 1);
        let c = self.conns[key].as_mut().expect("live connection");
        match &mut self.io {
            Io::Epoll(p) => p.watch(fd, key, false, libc::EPOLL_CTL_MOD),
            Io::Uring(u) => arm_recv(u, c, key),
        }
        c.connecting_since = None;
        if has_job {
            self.write(key);
        } else {
            c.idle_since = now_ns();
            self.idle.push(key);
        }
    }

    /// Reads connection `key` and finishes its request if the response is complete.
    fn read(&mut self, key: usize) {
        let offset = self.offset;
        let Some(c) = self.conns[key].as_mut() else {
            return;
        };
        match read_stamped(c.sock.as_raw_fd(), &mut c.buf, MAX_RESPONSE + 1) {
            Ok((_, eof, stamp)) => {
                if stamp > 0 {
                    c.rx_ns = (stamp - offset).max(0) as u64;
                }
                c.eof |= eof;
            }
            Err(e) => {
                self.fail(key, ExchangeFailure::Read(e.to_string()));
                return;
            }
        }
        self.after_read(key);
    }

    /// Connection `key` has new bytes (or the peer's close): finishes its request if the
    /// response is complete; an idle connection that got either is dropped.
    fn after_read(&mut self, key: usize) {
        let Some(c) = self.conns[key].as_mut() else {
            return;
        };
        let Some((job, sent, _, _)) = c.job.as_ref() else {
            // bytes or a close on an idle connection: it is no longer usable
            if c.eof || !c.buf.is_empty() {
                self.idle.retain(|&k| k != key);
                self.close(key);
            }
            return;
        };
        let head_only = self.ctx.specs[job.tag].method == "HEAD";
        let now = now_ns();
        // the kernel's time of the last segment, never later than now nor before the send
        let done = if c.rx_ns > 0 {
            c.rx_ns.clamp(*sent, now)
        } else {
            now
        };
        let (eof, buffered) = (c.eof, c.buf.len());
        let (status, len, close) = match frame(&c.buf, head_only) {
            Frame::Partial if eof => return self.fail(key, ExchangeFailure::Closed),
            Frame::Partial => {
                if buffered > MAX_RESPONSE {
                    self.finish_malformed(key);
                }
                return;
            }
            Frame::UntilClose { status } if eof => (status, buffered, true),
            Frame::UntilClose { .. } => return,
            Frame::Complete { status, len, close } => (status, len, close),
            Frame::Malformed => return self.finish_malformed(key),
        };
        let c = self.conns[key].as_mut().expect("live connection");
        let (job, sent, _, _) = c.job.take().expect("checked above");
        c.buf.drain(..len);
        c.served += 1;
        let reuse = !(close || c.eof || !c.buf.is_empty());
        if reuse {
            c.idle_since = now;
        }
        let outcome = self.ctx.status_outcome(job.tag, status);
        self.record(job.tag, job.intended, sent, done, outcome);
        if reuse {
            self.take_next(key, done);
        } else {
            self.close(key);
        }
    }

    fn finish_malformed(&mut self, key: usize) {
        let c = self.conns[key].as_mut().expect("live connection");
        if let Some((job, sent, _, _)) = c.job.take() {
            self.record(job.tag, job.intended, sent, now_ns(), Outcome::Other);
        }
        self.close(key);
    }

    /// A connection free since `free_since` (its last response's arrival) takes the oldest
    /// queued request, else waits in the idle stack.
    ///
    /// A queued request's schedule lag is taken here, not when it was queued: from when it could
    /// have gone — its intended time, or the freeing response's arrival if that was later — to
    /// now. The wait before that was the service's (every connection held a request it had not
    /// answered); the wait after it is this engine's, which reads a freed connection only at its
    /// next read (⅛ tick apart while requests queue), and the generator-bound check must see it
    /// (benchmarks/engine.md §71).
    fn take_next(&mut self, key: usize, free_since: u64) {
        if self.closed.is_some() {
            // the closed model: the connection's loop sends its next request at once
            match self.closed_job() {
                Some(j) => self.assign(key, j, false),
                None => self.idle.push(key),
            }
            return;
        }
        if let Some(j) = self.backlog.pop_front() {
            self.ctx.backlog.set(self.backlog.len() as u64);
            self.ctx.note_lag(now_ns(), j.intended.max(free_since));
            self.assign(key, j, false);
        } else {
            self.idle.push(key);
        }
    }

    /// Handles every event the poller has now.
    fn poll(&mut self) {
        self.poll_for(0);
    }

    /// As [`Ticked::poll`], the epoll back end waiting up to `timeout_ms` for the first event.
    fn poll_for(&mut self, timeout_ms: i32) {
        let Io::Epoll(poller) = &mut self.io else {
            return self.complete();
        };
        let mut events = std::mem::take(&mut self.events);
        poller.wait_into(&mut events, timeout_ms);
        for &(k, ev) in &events {
            self.on_event(k, ev);
        }
        self.events = events;
    }

    /// One pass over the connections per tick: a request whose write was cut short is written
    /// on; a request older than the timeout ends as a timeout (its connection dropped), and so
    /// does a connect that takes longer.
    fn sweep(&mut self, now: u64) {
        let timeout = self.ctx.cfg.timeout.as_nanos() as u64;
        for key in 0..self.conns.len() {
            let Some(c) = self.conns[key].as_ref() else {
                continue;
            };
            if c.connecting_since.is_none()
                && c.job.as_ref().is_some_and(|(_, _, left, _)| *left > 0)
            {
                self.write(key);
            }
            let Some(c) = self.conns[key].as_ref() else {
                continue;
            };
            // from the first write, as the tokio engine's timeout runs from its send; a request
            // still waiting for its connection, from its intended time
            let since = match &c.job {
                Some((_, sent, _, _)) if *sent > 0 => *sent,
                Some((j, _, _, _)) => j.intended,
                None => continue,
            };
            if now.saturating_sub(since) > timeout {
                let c = self.conns[key].as_mut().expect("checked");
                let (job, sent, _, _) = c.job.take().expect("checked");
                if c.connecting_since.is_some() {
                    let addr = self.ctx.cfg.target.addr;
                    let t = self.ctx.cfg.timeout;
                    self.ctx
                        .connect_failures
                        .note(|| format!("connecting to {addr}: no answer within {t:?}"));
                }
                self.close(key);
                self.record(
                    job.tag,
                    job.intended,
                    if sent > 0 { sent } else { now },
                    now,
                    Outcome::Timeout,
                );
            }
        }
    }

    /// Hands out every send due before `until`: to an idle connection, a new one, the backlog,
    /// or (backlog full) counted as generator overload.
    fn dispatch(
        &mut self,
        sched: &mut std::iter::Peekable<Schedule>,
        start: u64,
        tick: u64,
        until: u64,
        now: u64,
    ) -> bool {
        loop {
            let Some(next) = sched.peek() else {
                return false;
            };
            if start + next.at > until {
                return true;
            }
            // the tick nearest the plan's time: the schedule this engine keeps
            let intended = start + (next.at + tick / 2) / tick * tick;
            sched.next();
            if let Some(key) = self.idle.pop() {
                let job = self.ctx.next_job(intended, now);
                self.assign(key, job, false);
            } else if self.open < self.cap && self.opening < MAX_OPENING {
                let job = self.ctx.next_job(intended, now);
                self.connect(Some(job));
            } else if self.backlog.len() < self.backlog_cap {
                // its lag is taken when a connection takes it (`take_next`)
                let job = self.ctx.offer(intended, now);
                self.backlog.push_back(job);
                self.ctx.backlog.set(self.backlog.len() as u64);
            } else {
                let _ = self.ctx.next_job(intended, now);
                self.ctx.rec.borrow_mut().cur.overflow += 1;
            }
        }
    }

    /// Sleeps to `at` (absolute, monotonic ns); io_uring: submitting what the tick queued, in
    /// the same enter.
    fn wait_until(&mut self, at: u64) {
        match &mut self.io {
            Io::Epoll(_) => sleep_until(at),
            Io::Uring(u) => {
                if u.wait_until(at).is_err() {
                    sleep_until(at);
                }
            }
        }
    }

    fn busy(&self) -> bool {
        !self.backlog.is_empty() || self.conns.iter().flatten().any(|c| c.job.is_some())
    }
}

/// A request's first bytes went (or, io_uring, were queued for this tick's enter): its send time,
/// and the second's count of requests sent.
fn first_write(ctx: &Ctx, sent: &mut u64) {
    if *sent == 0 {
        *sent = now_ns();
        let mut rec = ctx.rec.borrow_mut();
        rec.rotate(*sent);
        rec.cur.sent += 1;
    }
}

/// io_uring back end: arms connection `key`'s multishot receive (one operation pending).
fn arm_recv(u: &mut crate::uring::Uring, c: &mut TConn, key: usize) {
    u.recv(c.sock.as_raw_fd(), key);
    c.armed = true;
    c.pending += 1;
}

/// How an exchange failed.
enum ExchangeFailure {
    Write,
    Read(String),
    Closed,
}

/// Runs one worker's share of an open-model schedule on the ticked engine (see the module doc).
pub(super) fn run_open(
    ctx: &Ctx,
    stages: Vec<TimedStage>,
    shard: (u64, u64),
    start: u64,
    tick_ns: u64,
) -> Result<(), String> {
    let cfg = ctx.cfg.clone();
    let mut t = Ticked::open(
        ctx,
        (cfg.max_connections / shard.1 as usize).max(1),
        (cfg.max_backlog / shard.1 as usize).max(1),
    )?;
    let mut sched = Schedule::new(stages, cfg.arrivals, cfg.seed, shard).peekable();
    // Like wrk (and the tokio engine), open a first set of keep-alive connections before the
    // first intended send time.
    for _ in 0..t.cap.min(PRECONNECT) {
        t.connect(None);
    }
    while t.opening > 0 && now_ns() + 1_000_000 < start {
        t.wait_until(now_ns() + 1_000_000);
        t.poll();
    }
    let mut next_second = start + 1_000_000_000;
    // ticks at start + k·tick: the grid the schedule is quantised to
    let grid_after = |t: u64| start + t.saturating_sub(start).div_ceil(tick_ns) * tick_ns;
    let mut next_tick = grid_after(now_ns());
    let mut more = true;
    let mut drain_deadline: Option<u64> = None;
    loop {
        // (io_uring: the sends queued in the last tick leave here, in the enter that sleeps)
        t.wait_until(next_tick);
        let now = now_ns();
        // keep the wall-to-monotonic offset fresh (NTP may slew the wall clock)
        t.offset = realtime_offset();
        t.poll();
        t.sweep(now);
        if ctx.stopping.get() {
            break;
        }
        if more {
            more = t.dispatch(&mut sched, start, tick_ns, next_tick + tick_ns / 2, now);
        }
        // Requests queued for a connection (every one busy, the cap reached): read the
        // connections at a finer step until the next tick, so a freed one takes the next queued
        // request within an eighth of a tick, not at the next tick. Read only once a tick, a
        // connection would carry at most one request a tick, and the queue would be this
        // engine's, not the service's (benchmarks/engine.md §71). Costs wake-ups only while the
        // queue lasts.
        let sub = (tick_ns / SUBTICKS).max(MIN_SUBTICK_NS);
        let mut at = now + sub;
        while !t.backlog.is_empty() && at + sub / 2 < next_tick + tick_ns {
            t.wait_until(at);
            t.poll();
            at += sub;
        }
        if now >= next_second {
            ctx.close_second(now);
            next_second += 1_000_000_000;
        }
        if ctx.watch_stop(now, start) {
            break;
        }
        if !more {
            let deadline =
                *drain_deadline.get_or_insert(now + cfg.timeout.as_nanos() as u64 + 1_000_000_000);
            if !t.busy() || now > deadline {
                break;
            }
        }
        next_tick += tick_ns;
        if next_tick < now {
            // fell behind (a long stall of this thread): skip to the next boundary
            next_tick = grid_after(now);
        }
    }
    t.close_all();
    Ok(())
}

impl Ticked<'_> {
    /// Closes every connection and, on io_uring, waits (at most a second) for their last
    /// completions (their shutdowns end them at once), so the ring and its buffers can go.
    fn close_all(&mut self) {
        for k in 0..self.conns.len() {
            self.close(k);
        }
        self.idle.clear();
        let give_up = now_ns() + 1_000_000_000;
        while !self.parked.is_empty() && now_ns() < give_up {
            self.wait_until(now_ns() + 1_000_000);
            self.poll();
        }
    }
}

/// Runs one worker's share of a closed-model load on the ticked engine (the module doc's
/// "closed model"): per stage, its share of the connections, each a loop that sends its next
/// request as soon as its response is read, until the stage's time or requests run out; then
/// the requests in flight are answered (or time out) and the stage's connections closed, as
/// the tokio engine's loops end theirs. `live` names the stage each second belongs to.
pub(super) fn run_closed(
    ctx: &Ctx,
    stages: Vec<((Phase, usize), ClosedShape)>,
    shard: (u64, u64),
    live: &Cell<(Phase, usize)>,
    start: u64,
    tick_ns: u64,
) -> Result<(), String> {
    let cfg = ctx.cfg.clone();
    let mut t = Ticked::open(ctx, usize::MAX, 1)?;
    let timeout = cfg.timeout.as_nanos() as u64;
    // the per-second record's grid, as the tokio engine's ticker keeps it
    let mut next_second = start + 1_000_000_000;
    sleep_until(start);
    for (at, shape) in stages {
        if ctx.stopping.get() {
            break;
        }
        let (loops, budget, deadline) = start_closed_stage(ctx, live, at, shape, shard);
        t.closed = Some(ClosedStage { budget, deadline });
        let mut next_sweep = now_ns() + tick_ns;
        loop {
            t.top_up(loops);
            let now = now_ns();
            if now >= next_sweep {
                // keep the wall-to-monotonic offset fresh (NTP may slew the wall clock)
                t.offset = realtime_offset();
                t.sweep(now);
                next_sweep = now + tick_ns;
            }
            if now >= next_second {
                ctx.close_second(now);
                while next_second <= now {
                    next_second += 1_000_000_000;
                }
            }
            if ctx.watch_stop(now, start) {
                break;
            }
            let sending = t
                .closed
                .as_ref()
                .is_some_and(|cs| now < cs.deadline && cs.budget > 0);
            if !sending {
                // the stage sends no more: its last requests are answered or time out
                if !t.busy() || now > deadline.saturating_add(timeout + 1_000_000_000) {
                    break;
                }
            }
            let mut until = next_sweep.min(next_second);
            if sending {
                until = until.min(deadline);
            }
            t.wait_events(until);
        }
        t.closed = None;
        t.close_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_lengths_chunks_interims_and_close() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200";
        assert_eq!(
            frame(r, false),
            Frame::Complete {
                status: 200,
                len: 40,
                close: false
            }
        );
        assert_eq!(frame(&r[..39], false), Frame::Partial);
        let c = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nok\r\n0\r\nT: 1\r\n\r\n";
        assert_eq!(
            frame(c, false),
            Frame::Complete {
                status: 201,
                len: c.len(),
                close: false
            }
        );
        for cut in 1..c.len() {
            assert_eq!(frame(&c[..cut], false), Frame::Partial, "cut at {cut}");
        }
        let i = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(
            frame(i, false),
            Frame::Complete {
                status: 204,
                len: i.len(),
                close: false
            }
        );
        let h = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
        assert_eq!(
            frame(h, true),
            Frame::Complete {
                status: 200,
                len: h.len(),
                close: false
            }
        );
        let o = b"HTTP/1.0 200 OK\r\n\r\nbody";
        assert_eq!(frame(o, false), Frame::UntilClose { status: 200 });
        let k = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(
            frame(k, false),
            Frame::Complete {
                status: 200,
                len: k.len(),
                close: true
            }
        );
        assert_eq!(frame(b"garbage\r\n\r\n", false), Frame::Malformed);
        assert_eq!(
            frame(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false),
            Frame::Malformed
        );
        assert_eq!(
            frame(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX",
                false
            ),
            Frame::Malformed
        );
    }

    #[test]
    fn the_kernel_stamps_a_response_with_its_arrival_not_its_reading() {
        // A response read 50 ms after it arrived carries its arrival time.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (c, done) = open(addr).unwrap();
        let (mut s, _) = l.accept().unwrap();
        if !done {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::io::Write::write_all(&mut s, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").unwrap();
        let sent = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut buf = Vec::new();
        let (n, eof, stamp) = read_stamped(c.as_raw_fd(), &mut buf, 1 << 20).unwrap();
        assert_eq!((n, eof), (38, false));
        let arrived = (stamp - realtime_offset()) as u64;
        assert!(
            arrived >= sent.saturating_sub(2_000_000),
            "stamp before the write"
        );
        assert!(
            arrived < sent + 10_000_000,
            "stamped at reading, not arrival: {} ms",
            (arrived - sent) / 1_000_000
        );
    }
}
