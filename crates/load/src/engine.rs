//! The engine: worker threads (one tokio current-thread runtime each) that send the plan's load,
//! and an aggregator that merges their per-second records and hands them out in order.
//!
//! Open model: a dispatcher walks the schedule of intended send times and hands each request to
//! an idle keep-alive connection, opening connections up to the cap; when none is free the request
//! waits in a bounded backlog (counted each second) and its latency still runs from its *intended*
//! time. Closed model: N connection loops send-wait-send.

use crate::clock::{now_ns, thread_cpu_ns};
use crate::h2link::H2Pool;
use crate::http::{Conn, ExchangeError};
use crate::request::{load_table, Mix, Table, Wire};
use crate::schedule::{timed_stages, Schedule, TimedStage};
use crate::summary::{H2Tally, ResetExample, ResetKind, ResetTally};
use crate::timer::PreciseTimer;
use crate::tls::TlsTally;
use crate::{LoadConfig, LoadError, Summary};
use ceiling_metrics::{record_us, Outcome, Phase, Second, TagSecond};
use ceiling_plan::{Model, RequestSpec, Stage};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;

#[path = "tick.rs"]
mod tick;

/// Scheduling priority of generator worker threads (see `worker`).
pub const GENERATOR_NICE: i32 = -10;

/// Granularity of the open model's send timer (adds at most this much schedule lag).
const TIMER_GRID_NS: u64 = 200_000;

/// A finishing connection dispatches due sends itself only when the first is this late (the timer
/// task is behind); otherwise the timer's grid batches them (fewer wake-ups, less CPU).
const COMPLETION_BACKSTOP_NS: u64 = TIMER_GRID_NS;

/// Keep-alive connections each open-model worker opens before the schedule starts.
const PRECONNECT: usize = 64;

/// Connections allowed to be in their first connect at once (open model).
const MAX_OPENING: usize = 64;

enum Msg {
    Second(Second),
    Done,
    Failed(String),
}

/// Where in the plan a moment of the run is.
#[derive(Clone)]
enum StageClock {
    /// Open model: stage boundaries known in advance (ns since start): (phase, index, end).
    Fixed(Vec<(Phase, usize, u64)>),
    /// Closed model: set by the runner as it moves through stages.
    Live(Rc<Cell<(Phase, usize)>>),
}

impl StageClock {
    fn at(&self, t_ns: u64) -> (Phase, usize) {
        match self {
            StageClock::Fixed(v) => v
                .iter()
                .find(|(_, _, end)| t_ns < *end)
                .or(v.last())
                .map(|(p, i, _)| (*p, *i))
                .unwrap_or((Phase::Measure, 0)),
            StageClock::Live(c) => c.get(),
        }
    }
}

/// Per-second records handed back by the aggregator for reuse (see `Second::reset`): the
/// engine then allocates its histograms once, not every second.
type SecondPool = Arc<std::sync::Mutex<Vec<Second>>>;

/// Takes a record from `pool` (reset as second `t`), or allocates one.
fn pooled_second(pool: &SecondPool, t: u32, phase: Phase, stage: usize, ntags: usize) -> Second {
    match pool.lock().ok().and_then(|mut p| p.pop()) {
        Some(mut s) if s.tags.len() == ntags => {
            s.reset(t, phase, stage);
            s
        }
        _ => Second::new(t, phase, stage, ntags),
    }
}

/// Per-worker recorder of the current second.
struct Recorder {
    start: u64,
    cur: Second,
    pool: SecondPool,
    tx: mpsc::Sender<Msg>,
    clock: StageClock,
    ntags: usize,
    /// This worker thread's CPU time at the start of the current second.
    cpu_mark: u64,
}

impl Recorder {
    #[inline]
    fn sec(&self, ns: u64) -> u32 {
        (ns.saturating_sub(self.start) / 1_000_000_000) as u32
    }
    /// Moves to the second containing `ns`, sending finished seconds (empty ones included).
    #[inline]
    fn rotate(&mut self, ns: u64) {
        let t = self.sec(ns);
        while self.cur.t < t {
            let nt = self.cur.t + 1;
            let (phase, stage) = self.clock.at(nt as u64 * 1_000_000_000);
            let next = pooled_second(&self.pool, nt, phase, stage, self.ntags);
            let mut done = std::mem::replace(&mut self.cur, next);
            // The generator's own CPU: this worker thread's time over the second just closed.
            let cpu = thread_cpu_ns();
            done.generator_cpu = cpu.saturating_sub(self.cpu_mark) as f64 / 1e7;
            self.cpu_mark = cpu;
            let _ = self.tx.send(Msg::Second(done));
        }
    }
    #[inline]
    fn tag(&mut self, now: u64, tag: usize) -> &mut TagSecond {
        self.rotate(now);
        &mut self.cur.tags[tag]
    }
    fn flush(&mut self) {
        let cpu = thread_cpu_ns();
        self.cur.generator_cpu = cpu.saturating_sub(self.cpu_mark) as f64 / 1e7;
        let (phase, stage) = (self.cur.phase, self.cur.stage);
        let last = std::mem::replace(&mut self.cur, Second::new(u32::MAX, phase, stage, 0));
        let _ = self.tx.send(Msg::Second(last));
    }
}

/// Connections that could not be opened, over every worker: how many, and the first error as a
/// sentence (`connecting to 127.0.0.1:9: Connection refused (os error 111)`), so a run against a
/// port where nothing listens says so instead of blaming the generator; and the connections'
/// resets and idle-close retries ([`ResetTally`]). Touched only on failure or retry.
#[derive(Default)]
struct ConnectFailures {
    count: std::sync::atomic::AtomicU64,
    first: std::sync::OnceLock<String>,
    /// The resets and idle-close retries of every worker (rare: locked only when one happens).
    resets: std::sync::Mutex<ResetTally>,
    /// The TLS handshakes of every worker (locked once per new connection, https targets only).
    tls: std::sync::Mutex<Option<TlsTally>>,
    /// The HTTP/2 connections of every worker (added at each worker's end).
    h2: std::sync::Mutex<Option<H2Tally>>,
    /// The ticked engine's I/O back end, as its workers said it (`None`: the tokio engine).
    io: std::sync::Mutex<Option<String>>,
}

impl ConnectFailures {
    fn note(&self, what: impl FnOnce() -> String) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.first.get_or_init(what);
    }

    /// A ticked worker's back end; workers that differ (one fell back) are all said.
    fn said_io(&self, what: String) {
        if let Ok(mut io) = self.io.lock() {
            match io.as_mut() {
                None => *io = Some(what),
                Some(s) if !s.split("; ").any(|x| x == what) => {
                    s.push_str("; ");
                    s.push_str(&what);
                }
                Some(_) => {}
            }
        }
    }

    fn tally(&self, f: impl FnOnce(&mut ResetTally)) {
        if let Ok(mut t) = self.resets.lock() {
            f(&mut t);
        }
    }
}

/// What every task of a worker shares.
struct Ctx {
    connect_failures: Arc<ConnectFailures>,
    cfg: Arc<LoadConfig>,
    specs: Vec<RequestSpec>,
    rec: RefCell<Recorder>,
    mix: RefCell<(Mix, ChaCha8Rng)>,
    stopping: Cell<bool>,
    conns: Cell<u64>,
    backlog: Cell<u64>,
    /// HTTP/2's shared connections (`None`: HTTP/1.1, a connection per slot).
    h2: Option<H2Pool>,
}

impl Ctx {
    /// Opens a connection to the target (TCP, and TLS for https), recording its handshake.
    /// With HTTP/2 the "connection" is a stream slot on a shared connection ([`H2Pool`]).
    async fn connect(&self) -> std::io::Result<Conn> {
        let (c, handshake) = match &self.h2 {
            Some(pool) => {
                let (slot, h) = pool.attach(&self.cfg.target).await?;
                (Conn::h2(slot), h)
            }
            None => Conn::connect(&self.cfg.target).await?,
        };
        if let (Some(h), Some(tls)) = (handshake, &self.cfg.target.tls) {
            if let Ok(mut t) = self.connect_failures.tls.lock() {
                t.get_or_insert_with(|| TlsTally::new(tls.trust())).note(&h);
            }
        }
        Ok(c)
    }

    /// Closes the second in progress at `now`, with the connections open and the requests queued
    /// for one at its end (each engine, at each second's boundary).
    fn close_second(&self, now: u64) {
        let mut rec = self.rec.borrow_mut();
        rec.cur.connections = self.conns.get();
        rec.cur.backlog = self.backlog.get();
        rec.rotate(now);
    }

    /// Whether the run stops now: asked to (the stop flag), past its hard time bound from
    /// `start`, or already stopping; sets `stopping` when so.
    fn watch_stop(&self, now: u64, start: u64) -> bool {
        if self.cfg.stop.load(Ordering::Relaxed)
            || now > start + self.cfg.hard_limit.as_nanos() as u64
        {
            self.stopping.set(true);
        }
        self.stopping.get()
    }

    /// The mix's next request for the send intended at `intended` and dispatched at `now`:
    /// counted as offered, its schedule lag recorded. Schedule lag = how late the generator
    /// itself dispatched this request: its own punctuality, which the generator-bound check
    /// judges. Waiting for a connection afterwards (all busy, new ones being accepted by a loaded
    /// service) is the service's side: it is inside the latency from the intended time, and
    /// hitting the connection cap shows as backlog/overflow. (The ticked engine, which reads a
    /// freed connection only at its next tick, counts that wait as its own: tick.rs.)
    fn next_job(&self, intended: u64, now: u64) -> Job {
        let job = self.offer(intended, now);
        self.note_lag(now, intended);
        job
    }

    /// The mix's next request for the send intended at `intended`, counted as offered at `now`;
    /// its schedule lag is left to the caller ([`Ctx::note_lag`]): the ticked engine takes it
    /// when a queued request gets its connection.
    fn offer(&self, intended: u64, now: u64) -> Job {
        let (tag, wire) = {
            let mut m = self.mix.borrow_mut();
            let (mix, rng) = &mut *m;
            let tag = mix.pick(rng);
            (tag, mix.render(tag, rng))
        };
        let mut rec = self.rec.borrow_mut();
        rec.rotate(now);
        rec.cur.offered += 1;
        Job {
            intended,
            tag,
            wire,
        }
    }

    /// Records one request's schedule lag: how long after `from` (when it could have gone) the
    /// generator sent it at `now`.
    fn note_lag(&self, now: u64, from: u64) {
        let mut rec = self.rec.borrow_mut();
        rec.rotate(now);
        record_us(&mut rec.cur.lag, now.saturating_sub(from) / 1000);
    }

    fn outcome(
        &self,
        tag: usize,
        r: Result<crate::http::Response, ExchangeError>,
    ) -> (Outcome, bool) {
        match r {
            Ok(resp) => (self.status_outcome(tag, resp.status), resp.reusable),
            Err(ExchangeError::Reset) | Err(ExchangeError::Closed) => (Outcome::Reset, false),
            Err(ExchangeError::Malformed) => (Outcome::Other, false),
        }
    }

    /// Sends one request on `conn` (connecting first if needed) and records it.
    /// `intended` is the latency origin: the schedule's time (open model); without it (closed
    /// model) the moment this call started, so a connection opened for the request — every
    /// request with keep-alive off — has its set-up inside the latency. Service time runs from the
    /// write either way.
    async fn exchange(
        &self,
        conn: &mut Option<Conn>,
        tag: usize,
        wire: &Wire,
        intended: Option<u64>,
    ) {
        let head_only = self.specs[tag].method == "HEAD";
        let timeout = self.cfg.timeout;
        let mut outcome = Outcome::Ok;
        let started = now_ns();
        let mut sent = started;
        if conn.is_none() {
            let addr = self.cfg.target.addr;
            match tokio::time::timeout(timeout, self.connect()).await {
                Ok(Ok(c)) => {
                    *conn = Some(c);
                    self.conns.set(self.conns.get() + 1);
                }
                Ok(Err(e)) => {
                    outcome = Outcome::Connect;
                    self.connect_failures
                        .note(|| format!("connecting to {addr}: {e}"));
                }
                Err(_) => {
                    outcome = Outcome::Timeout;
                    self.connect_failures
                        .note(|| format!("connecting to {addr}: no answer within {timeout:?}"));
                }
            }
            sent = now_ns();
        }
        if let Some(c) = conn.as_mut() {
            if intended.is_some() {
                let mut rec = self.rec.borrow_mut();
                rec.rotate(sent);
                rec.cur.sent += 1;
            } else {
                let mut rec = self.rec.borrow_mut();
                rec.rotate(sent);
                rec.cur.sent += 1;
                rec.cur.offered += 1;
            }
            // how long this connection sat idle before the request (a reset's evidence)
            let idle_ns = if c.idle_since_ns > 0 {
                sent.saturating_sub(c.idle_since_ns)
            } else {
                0
            };
            let served_before = c.served;
            let mut res = tokio::time::timeout(timeout, async {
                c.send(wire.as_bytes()).await?;
                c.receive(head_only).await
            })
            .await;
            // The idle-close race: a connection that sat idle — kept alive after a response, or
            // opened ahead of the schedule and not used yet — may have been closed by the server
            // meanwhile (its idle timeout, or its wait for a first request: Go's
            // ReadHeaderTimeout, Tomcat's connectionTimeout), and then fails before any byte of
            // the response. Like HTTP clients (and source 000's JMeter with one retry), send it
            // again once on a new connection; the latency still runs from the intended send
            // time, so the retry's cost stays in the measurement. A connection opened for this
            // very request is not retried: its close is the server's answer.
            let mut retried = false;
            let mut retry_connect: Option<String> = None;
            if matches!(res, Ok(Err(ExchangeError::Closed))) && c.idle_since_ns > 0 {
                retried = true;
                self.connect_failures.tally(|t| t.retried += 1);
                let left =
                    timeout.saturating_sub(Duration::from_nanos(now_ns().saturating_sub(sent)));
                res = tokio::time::timeout(left, async {
                    *c = self.connect().await.map_err(|e| {
                        retry_connect = Some(format!("the retry's connect: {e}"));
                        ExchangeError::Reset
                    })?;
                    c.send(wire.as_bytes()).await?;
                    c.receive(head_only).await
                })
                .await;
            }
            let keep = match res {
                Ok(r) => {
                    let failed = r.as_ref().err().copied();
                    let (o, reusable) = self.outcome(tag, r);
                    outcome = o;
                    if let Some(e) = failed.filter(|_| o == Outcome::Reset) {
                        // what the connection did, for the run's reset tally
                        let kind =
                            if retried && (retry_connect.is_some() || e == ExchangeError::Closed) {
                                ResetKind::RetryFailed
                            } else if e == ExchangeError::Closed {
                                ResetKind::ClosedWhenNew
                            } else {
                                ResetKind::MidResponse
                            };
                        let example = ResetExample {
                            t: self.rec.borrow().cur.t,
                            kind,
                            bytes: if retry_connect.is_some() { 0 } else { c.got },
                            served: if retried { c.served } else { served_before },
                            idle_ms: if retried { 0.0 } else { idle_ns as f64 / 1e6 },
                            retry: retried,
                            error: retry_connect
                                .take()
                                .or_else(|| c.last_error.clone())
                                .unwrap_or_else(|| "closed".to_string()),
                        };
                        self.connect_failures.tally(|t| t.note(example));
                    }
                    reusable && self.cfg.keep_alive
                }
                Err(_) => {
                    outcome = Outcome::Timeout;
                    false
                }
            };
            if !keep {
                *conn = None;
                self.conns.set(self.conns.get() - 1);
            }
        }
        let done = now_ns();
        if let Some(c) = conn.as_mut() {
            c.idle_since_ns = done;
        }
        self.record(tag, intended.unwrap_or(started), sent, done, outcome);
    }

    /// What a response's status means for request `tag`: ok, or the unexpected status's outcome.
    fn status_outcome(&self, tag: usize, status: u16) -> Outcome {
        if self.specs[tag].expects(status) {
            Outcome::Ok
        } else {
            Outcome::for_unexpected_status(status)
        }
    }

    /// Records one finished request of `tag`: latency from `origin`, service time from `sent`.
    fn record(&self, tag: usize, origin: u64, sent: u64, done: u64, outcome: Outcome) {
        let mut rec = self.rec.borrow_mut();
        let ts = rec.tag(done, tag);
        record_us(&mut ts.latency, done.saturating_sub(origin) / 1000);
        record_us(&mut ts.service, done.saturating_sub(sent) / 1000);
        ts.counts.add(outcome);
    }
}

/// A request waiting for a connection.
struct Job {
    intended: u64,
    tag: usize,
    wire: Wire,
}

/// An idle connection waiting for its next job.
struct Slot {
    job: Cell<Option<Job>>,
    waker: Cell<Option<Waker>>,
    closed: Cell<bool>,
}

/// Open-model shared state.
struct Dispatch {
    /// The worker's share of the schedule of intended send times.
    sched: RefCell<std::iter::Peekable<Schedule>>,
    /// Absolute start of the schedule (ns, monotonic).
    start: u64,
    /// This worker's share of the connection cap and of the backlog bound.
    cap: usize,
    backlog_cap: usize,
    /// Idle connections, used last-in first-out so a hot set of connections does the work.
    idle: RefCell<Vec<Rc<Slot>>>,
    backlog: RefCell<VecDeque<Job>>,
    open_tasks: Cell<usize>,
    /// Connection tasks started but not yet through their first connect.
    opening: Cell<usize>,
}

fn wake_slot(s: &Slot) {
    if let Some(w) = s.waker.take() {
        w.wake();
    }
}

async fn next_job(slot: &Rc<Slot>, d: &Dispatch) -> Option<Job> {
    d.idle.borrow_mut().push(slot.clone());
    wait_job(slot).await
}

/// Waits until the dispatcher hands this (already idle) connection a job, or closes it.
async fn wait_job(slot: &Rc<Slot>) -> Option<Job> {
    poll_fn(|cx| {
        if let Some(j) = slot.job.take() {
            return Poll::Ready(Some(j));
        }
        if slot.closed.get() {
            return Poll::Ready(None);
        }
        slot.waker.set(Some(cx.waker().clone()));
        Poll::Pending
    })
    .await
}

async fn open_conn_task(ctx: Rc<Ctx>, d: Rc<Dispatch>, first: Option<Job>) {
    let slot = Rc::new(Slot {
        job: Cell::new(None),
        waker: Cell::new(None),
        closed: Cell::new(false),
    });
    let mut conn: Option<Conn> = None;
    let mut first_done = false;
    let mut job = match first {
        Some(j) => j,
        None => {
            // Pre-opened before the schedule starts: connect, then wait for work.
            if let Ok(Ok(mut c)) = tokio::time::timeout(ctx.cfg.timeout, ctx.connect()).await {
                // idle from now until the dispatcher hands it a request
                c.idle_since_ns = now_ns();
                conn = Some(c);
                ctx.conns.set(ctx.conns.get() + 1);
            }
            first_done = true;
            d.opening.set(d.opening.get() - 1);
            match next_job(&slot, &d).await {
                Some(j) => j,
                None => {
                    if conn.is_some() {
                        ctx.conns.set(ctx.conns.get() - 1);
                    }
                    d.open_tasks.set(d.open_tasks.get() - 1);
                    return;
                }
            }
        }
    };
    if !first_done {
        // A new connection for a waiting request: it counts as "opening" only until connected.
        if let Ok(Ok(c)) = tokio::time::timeout(ctx.cfg.timeout, ctx.connect()).await {
            conn = Some(c);
            ctx.conns.set(ctx.conns.get() + 1);
        }
        // (A failed connect is retried, and recorded, by the exchange below.)
        d.opening.set(d.opening.get() - 1);
    }
    loop {
        ctx.exchange(&mut conn, job.tag, &job.wire, Some(job.intended))
            .await;
        // Requests queued for a connection go first (oldest first).
        let queued = d.backlog.borrow_mut().pop_front();
        if let Some(j) = queued {
            ctx.backlog.set(d.backlog.borrow().len() as u64);
            // Sends the timer task is late with are dispatched here too (see below).
            dispatch_due(&ctx, &d, now_ns(), COMPLETION_BACKSTOP_NS);
            job = j;
            continue;
        }
        // Completion-driven backstop: when the timer task is late (it is queued behind every
        // connection made ready by the same epoll turn; at tens of thousands of requests per
        // second such a burst held the schedule back by a millisecond or more), the finishing
        // connection dispatches what is due, on top of the idle stack so it takes the first send
        // itself. Sends that are not late yet are left to the timer's grid, which batches them.
        d.idle.borrow_mut().push(slot.clone());
        dispatch_due(&ctx, &d, now_ns(), COMPLETION_BACKSTOP_NS);
        job = match wait_job(&slot).await {
            Some(j) => j,
            None => break,
        };
    }
    if conn.is_some() {
        ctx.conns.set(ctx.conns.get() - 1);
    }
    d.open_tasks.set(d.open_tasks.get() - 1);
}

/// Dispatches every send of the schedule that is due at `now`: to an idle connection, to a new
/// connection, to the backlog, or (backlog full) counted as generator overload. Returns the next
/// intended send time, or `None` when the schedule is exhausted. Called by the timer task and by
/// every connection as it finishes an exchange (the backstop: only when the first due send is at
/// least `min_late_ns` late).
fn dispatch_due(ctx: &Rc<Ctx>, d: &Rc<Dispatch>, now: u64, min_late_ns: u64) -> Option<u64> {
    if ctx.stopping.get() {
        return None;
    }
    let mut sched = d.sched.borrow_mut();
    let first = d.start + sched.peek()?.at;
    if first.saturating_add(min_late_ns) > now {
        return Some(first);
    }
    loop {
        let intended = d.start + sched.peek()?.at;
        if intended > now {
            return Some(intended);
        }
        sched.next();
        let job = ctx.next_job(intended, now);
        let idle = d.idle.borrow_mut().pop();
        if let Some(slot) = idle {
            slot.job.set(Some(job));
            wake_slot(&slot);
        } else if d.open_tasks.get() < d.cap && d.opening.get() < MAX_OPENING {
            // A new connection only when every open one is busy, and only a bounded number
            // connecting at once: otherwise a burst of arrivals during the first connects opens
            // a connection per arrival (a connect storm); the others wait in the backlog and
            // go to the first connections that come up, still timed from their intended time.
            d.open_tasks.set(d.open_tasks.get() + 1);
            d.opening.set(d.opening.get() + 1);
            tokio::task::spawn_local(open_conn_task(ctx.clone(), d.clone(), Some(job)));
        } else if d.backlog.borrow().len() < d.backlog_cap {
            d.backlog.borrow_mut().push_back(job);
            ctx.backlog.set(d.backlog.borrow().len() as u64);
        } else {
            // Generator overload: the request is counted, never silently dropped.
            ctx.rec.borrow_mut().cur.overflow += 1;
        }
    }
}

async fn run_open(
    ctx: Rc<Ctx>,
    stages: Vec<TimedStage>,
    shard: (u64, u64),
    start: u64,
) -> Result<(), String> {
    let cfg = ctx.cfg.clone();
    let d = Rc::new(Dispatch {
        sched: RefCell::new(Schedule::new(stages, cfg.arrivals, cfg.seed, shard).peekable()),
        start,
        // Each worker may hold its share of the connection cap and of the backlog.
        cap: (cfg.max_connections / shard.1 as usize).max(1),
        backlog_cap: (cfg.max_backlog / shard.1 as usize).max(1),
        idle: RefCell::new(Vec::new()),
        backlog: RefCell::new(VecDeque::new()),
        open_tasks: Cell::new(0),
        opening: Cell::new(0),
    });
    let mut timer = PreciseTimer::new().map_err(|e| format!("cannot create timerfd: {e}"))?;
    // Like wrk, open a first set of keep-alive connections before the first intended send time,
    // so the start of the run does not measure connection set-up.
    if cfg.keep_alive {
        for _ in 0..d.cap.min(PRECONNECT) {
            d.open_tasks.set(d.open_tasks.get() + 1);
            d.opening.set(d.opening.get() + 1);
            tokio::task::spawn_local(open_conn_task(ctx.clone(), d.clone(), None));
        }
        let wait_until = start.saturating_sub(1_000_000);
        while d.opening.get() > 0 && now_ns() < wait_until {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    // The timer task: dispatches when no connection finishes in time to do it (low rates, idle
    // gaps, a stalled service).
    poll_fn(|cx| loop {
        if ctx.stopping.get() {
            return Poll::Ready(());
        }
        match dispatch_due(&ctx, &d, now_ns(), 0) {
            None => return Poll::Ready(()),
            Some(at) => {
                // Wake on a TIMER_GRID_NS grid: sends due within one slot go out in one wake-up.
                // Each wake-up costs a timerfd re-arm and an epoll round trip; at tens of thousands
                // of requests per second, waking once per request would cost more than the request.
                // Sends between timer wake-ups are dispatched by the connections as they finish.
                timer.arm(at.div_ceil(TIMER_GRID_NS) * TIMER_GRID_NS);
                if timer.poll_fired(cx).is_pending() {
                    return Poll::Pending;
                }
            }
        }
    })
    .await;
    // Drain: let in-flight requests finish (each is bounded by the request timeout).
    let drain_deadline = now_ns() + cfg.timeout.as_nanos() as u64 + 1_000_000_000;
    while (d.idle.borrow().len() < d.open_tasks.get() || !d.backlog.borrow().is_empty())
        && now_ns() < drain_deadline
        && !ctx.stopping.get()
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for s in d.idle.borrow_mut().drain(..) {
        s.closed.set(true);
        wake_slot(&s);
    }
    tokio::task::yield_now().await;
    Ok(())
}

/// A closed stage as a worker runs it: its connections, its duration and its request count
/// (either bound may be absent).
type ClosedShape = (usize, Option<Duration>, Option<u64>);

/// A closed-model plan's stages in the order they run — the warm-up's, then the measured ones —
/// each with its phase and index (stages of another model are left out: a plan is one model).
fn closed_stages(cfg: &LoadConfig) -> Vec<((Phase, usize), ClosedShape)> {
    let warmup = cfg
        .warmup
        .iter()
        .enumerate()
        .map(|(i, s)| (Phase::Warmup, i, s));
    let measure = cfg
        .stages
        .iter()
        .enumerate()
        .map(|(i, s)| (Phase::Measure, i, s));
    warmup
        .chain(measure)
        .filter_map(|(phase, i, s)| match s {
            Stage::Closed {
                connections,
                duration,
                requests,
            } => Some(((phase, i), (*connections, *duration, *requests))),
            _ => None,
        })
        .collect()
}

/// A closed stage starts on this worker (both engines): the seconds from now on are its own
/// (`live` and the second in progress), and its share — the connections this worker runs, its
/// request budget (`u64::MAX`: bounded by time only) and its end (monotonic ns; `u64::MAX`:
/// bounded by its requests only).
fn start_closed_stage(
    ctx: &Ctx,
    live: &Cell<(Phase, usize)>,
    (phase, idx): (Phase, usize),
    (connections, duration, requests): ClosedShape,
    shard: (u64, u64),
) -> (usize, u64, u64) {
    live.set((phase, idx));
    {
        let mut rec = ctx.rec.borrow_mut();
        rec.rotate(now_ns());
        // The second in which a stage starts belongs to it.
        rec.cur.phase = phase;
        rec.cur.stage = idx;
    }
    let n = closed_share(connections as u64, shard) as usize;
    let budget = requests
        .map(|r| closed_request_share(r, connections as u64, shard))
        .unwrap_or(u64::MAX);
    let deadline = duration
        .map(|d| now_ns() + d.as_nanos() as u64)
        .unwrap_or(u64::MAX);
    (n, budget, deadline)
}

/// Worker `shard.0`'s share of `total` among `shard.1` workers (the first `total % n` get one more).
fn closed_share(total: u64, shard: (u64, u64)) -> u64 {
    total / shard.1 + u64::from(shard.0 < total % shard.1)
}

/// Worker `shard.0`'s share of a closed stage's request count: in proportion to the connections
/// it runs, so a worker without connections gets no requests it could never send (with more
/// threads than connections, an even split of the requests would lose the idle workers' part).
/// The shares sum to `requests` exactly.
fn closed_request_share(requests: u64, connections: u64, shard: (u64, u64)) -> u64 {
    let connections = connections.max(1);
    // Connections held by the workers before this one, and by this one and those before it.
    let before = |i: u64| i * (connections / shard.1) + i.min(connections % shard.1);
    let upto = |i: u64| (requests as u128 * before(i) as u128 / connections as u128) as u64;
    upto(shard.0 + 1) - upto(shard.0)
}

async fn run_closed(
    ctx: Rc<Ctx>,
    stages: Vec<((Phase, usize), ClosedShape)>,
    shard: (u64, u64),
    live: Rc<Cell<(Phase, usize)>>,
) -> Result<(), String> {
    for (at, shape) in stages {
        if ctx.stopping.get() {
            break;
        }
        let (n, budget, deadline) = start_closed_stage(&ctx, &live, at, shape, shard);
        let budget = Rc::new(Cell::new(budget));
        let mut tasks = Vec::new();
        for _ in 0..n {
            let ctx = ctx.clone();
            let budget = budget.clone();
            tasks.push(tokio::task::spawn_local(async move {
                let mut conn: Option<Conn> = None;
                while !ctx.stopping.get() && now_ns() < deadline && budget.get() > 0 {
                    budget.set(budget.get() - 1);
                    let (tag, wire) = {
                        let mut m = ctx.mix.borrow_mut();
                        let (mix, rng) = &mut *m;
                        let tag = mix.pick(rng);
                        (tag, mix.render(tag, rng))
                    };
                    ctx.exchange(&mut conn, tag, &wire, None).await;
                }
                if conn.is_some() {
                    ctx.conns.set(ctx.conns.get() - 1);
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    }
    Ok(())
}

/// Runs one worker thread's share of the load.
fn worker(
    connect_failures: Arc<ConnectFailures>,
    pool: SecondPool,
    cfg: Arc<LoadConfig>,
    tables: HashMap<String, Arc<Table>>,
    shard: (u64, u64),
    start: u64,
    tx: mpsc::Sender<Msg>,
) {
    let fail = |m: String| {
        let _ = tx.send(Msg::Failed(m));
    };
    // The generator must keep its schedule even when the service under test saturates the
    // machine (on a small box they share cores): raise this worker thread's priority (nice -10;
    // only the generator's threads, never the stack's or PostgreSQL's). Without the privilege the
    // thread keeps its normal priority, and the lag self-check still catches any effect.
    // (PRIO_PROCESS with a thread id sets that one thread's nice value on Linux.)
    // With --realtime the thread goes further: SCHED_FIFO, ahead of every normal thread (checked
    // before the run started; refused here only if the privilege went away meanwhile).
    if cfg.realtime {
        if let Err(e) = crate::realtime::enter() {
            return fail(crate::realtime::refusal(&e).to_string());
        }
        if !crate::realtime::is_fifo() {
            return fail("--realtime: the kernel accepted SCHED_FIFO for a generator thread but reads back another policy".into());
        }
    } else {
        let _ =
            rustix::process::setpriority_process(Some(rustix::thread::gettid()), GENERATOR_NICE);
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the generator runtime: {e}")),
    };
    let host = cfg.target.host_header.clone();
    let mix = match Mix::new(
        &cfg.requests,
        tables,
        &host,
        &cfg.target.base_path,
        cfg.keep_alive,
    ) {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    let h2 = match cfg.http2 {
        Some(streams) => match H2Pool::new(&cfg.target, streams) {
            Ok(p) => Some(p),
            Err(e) => return fail(e),
        },
        None => None,
    };
    let ntags = cfg.requests.len();
    let live = Rc::new(Cell::new((Phase::Measure, 0)));
    let (clock, open_stages) = match cfg.model {
        Model::Open => {
            let w = timed_stages(&cfg.warmup, 0);
            let wend = w.last().map(|s| s.end).unwrap_or(0);
            let m = timed_stages(&cfg.stages, wend);
            let mut bounds: Vec<_> = w
                .iter()
                .enumerate()
                .map(|(i, s)| (Phase::Warmup, i, s.end))
                .collect();
            bounds.extend(
                m.iter()
                    .enumerate()
                    .map(|(i, s)| (Phase::Measure, i, s.end)),
            );
            let all: Vec<TimedStage> = w.into_iter().chain(m).collect();
            (StageClock::Fixed(bounds), all)
        }
        Model::Closed => {
            let first = if cfg.warmup.is_empty() {
                Phase::Measure
            } else {
                Phase::Warmup
            };
            live.set((first, 0));
            (StageClock::Live(live.clone()), Vec::new())
        }
    };
    let (p0, s0) = clock.at(0);
    let rec = Recorder {
        start,
        cur: Second::new(0, p0, s0, ntags),
        pool,
        tx: tx.clone(),
        clock,
        ntags,
        cpu_mark: thread_cpu_ns(),
    };
    // Shards draw different request streams from one seed.
    let rng = ChaCha8Rng::seed_from_u64(
        cfg.seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(shard.0),
    );
    let ctx = Rc::new(Ctx {
        connect_failures,
        cfg: cfg.clone(),
        specs: cfg.requests.clone(),
        rec: RefCell::new(rec),
        mix: RefCell::new((mix, rng)),
        stopping: Cell::new(false),
        conns: Cell::new(0),
        backlog: Cell::new(0),
        h2,
    });
    // The ticked engine (open model, HTTP/1.1 over cleartext): one wake-up per tick, on this
    // thread, without the runtime.
    let local = tokio::task::LocalSet::new();
    let tick_ns = cfg.tick.map(|t| t.as_nanos().max(1) as u64);
    let result = if let (Some(tick_ns), Model::Open) = (tick_ns, cfg.model) {
        tick::run_open(&ctx, open_stages, shard, start, tick_ns)
    } else if let (Some(tick_ns), Model::Closed) = (tick_ns, cfg.model) {
        // The ticked engine's closed model: each connection sends on as soon as its response is
        // read, one wake-up per batch of responses; the tick paces only the housekeeping.
        tick::run_closed(&ctx, closed_stages(&cfg), shard, &live, start, tick_ns)
    } else {
        local.block_on(&rt, async {
            // Ticker: closes each second on time even when nothing completes, and watches the stop flag.
            let tick_ctx = ctx.clone();
            let ticker = tokio::task::spawn_local(async move {
                let mut next = start + 1_000_000_000;
                loop {
                    let wait = next.saturating_sub(now_ns());
                    tokio::time::sleep(Duration::from_nanos(wait)).await;
                    tick_ctx.close_second(now_ns());
                    next += 1_000_000_000;
                    tick_ctx.watch_stop(now_ns(), start);
                }
            });
            let r = match cfg.model {
                Model::Open => run_open(ctx.clone(), open_stages, shard, start).await,
                Model::Closed => run_closed(ctx.clone(), closed_stages(&cfg), shard, live).await,
            };
            ticker.abort();
            r
        })
    };
    {
        let mut rec = ctx.rec.borrow_mut();
        rec.rotate(now_ns());
        rec.cur.connections = ctx.conns.get();
        rec.flush();
    }
    if let (Some(p), Ok(mut t)) = (&ctx.h2, ctx.connect_failures.h2.lock()) {
        let t = t.get_or_insert(H2Tally {
            streams: p.streams,
            connections: 0,
            max_streams_in_use: 0,
        });
        t.connections += p.opened.get();
        t.max_streams_in_use = t.max_streams_in_use.max(p.max_attached.get());
    }
    match result {
        Ok(()) => {
            let _ = tx.send(Msg::Done);
        }
        Err(e) => fail(e),
    }
}

/// The ticked engine hands out a tick's sends at the tick: with every connection idle and a fast
/// service it carries `max_connections` requests a tick, and what is due beyond that queues for
/// a connection (read every eighth of a tick while it does, tick.rs). A plan that offers more
/// than `max_connections / tick` a second is refused before anything starts — its every tick
/// would queue by construction, the generator's queue and not the service's (measured before
/// the finer reading existed: 64 connections, a 2-ms tick, 67,000/s offered → ~33,500/s carried
/// and p99 10.9 s, with every send "on time"; docs/benchmarks/engine.md §70).
fn check_tick_capacity(cfg: &LoadConfig) -> Result<(), LoadError> {
    let Some(tick) = cfg.tick.filter(|t| !t.is_zero()) else {
        return Ok(());
    };
    let peak = cfg
        .warmup
        .iter()
        .chain(&cfg.stages)
        .map(|s| match s {
            Stage::Ramp { from, to, .. } => from.max(*to),
            Stage::Hold { rate, .. } => *rate,
            Stage::Closed { .. } => 0.0,
        })
        .fold(0.0, f64::max);
    let carry = cfg.max_connections as f64 / tick.as_secs_f64();
    if peak > carry {
        let need = (peak * tick.as_secs_f64()).ceil() as u64;
        return Err(LoadError::Runtime(format!(
            "the ticked engine carries at most one request per connection a tick: {} connections every {:?} carry at most {carry:.0} requests/s, below the {peak:.0}/s offered; allow at least {need} connections (--max-connections, [load] max_connections; twice that leaves room for the service's own time), use a shorter tick, or the default engine",
            cfg.max_connections, tick
        )));
    }
    Ok(())
}

/// Runs the load described by `cfg`, calling `on_second` for every merged second, in order.
pub fn run(cfg: LoadConfig, mut on_second: impl FnMut(&Second)) -> Result<Summary, LoadError> {
    if cfg.tick.is_some() {
        let why = match () {
            _ if cfg.target.tls.is_some() => Some("TLS"),
            _ if cfg.http2.is_some() => Some("HTTP/2"),
            _ if !cfg.keep_alive => Some("keep-alive off"),
            _ => None,
        };
        if let Some(why) = why {
            return Err(LoadError::Runtime(format!(
                "the ticked engine runs over HTTP/1.1 cleartext with keep-alive only, not {why}: use the default engine"
            )));
        }
        check_tick_capacity(&cfg)?;
    }
    if cfg.realtime {
        crate::realtime::check()?;
    }
    let cfg = Arc::new(cfg);
    let mut tables = HashMap::new();
    for (name, path) in &cfg.data {
        let t = load_table(path).map_err(|e| LoadError::Data(e.to_string()))?;
        tables.insert(name.clone(), Arc::new(t));
    }
    let threads = cfg.threads.max(1);
    let (tx, rx) = mpsc::channel();
    let start = now_ns() + 150_000_000; // time for the workers to start and pre-open connections
    let mut handles = Vec::new();
    let pool: SecondPool = Arc::default();
    let connect_failures: Arc<ConnectFailures> = Arc::default();
    // Enough records for every shard's current second plus the ones in flight; more would only
    // hold memory.
    let pool_cap = 2 * threads + 2;
    // this process's share (i mod n), split among its threads: worker t takes i·T + t mod n·T
    let (pi, pn) = cfg.process_shard;
    let (pi, pn) = if pn == 0 || pi >= pn {
        (0, 1)
    } else {
        (pi, pn)
    };
    for i in 0..threads {
        let shard = (pi * threads as u64 + i as u64, pn * threads as u64);
        let (cfg, tables, tx, pool) = (cfg.clone(), tables.clone(), tx.clone(), pool.clone());
        let cf = connect_failures.clone();
        let h = std::thread::Builder::new()
            .name(format!("ceiling-load-{i}"))
            .spawn(move || worker(cf, pool, cfg, tables, shard, start, tx))
            .map_err(|e| LoadError::Runtime(format!("cannot start a generator thread: {e}")))?;
        handles.push(h);
    }
    drop(tx);

    let ntags = cfg.requests.len();
    let mut summary = Summary::new(&cfg.requests);
    let mut pending: HashMap<u32, (Second, usize)> = HashMap::new();
    let mut next_t = 0u32;
    let mut done = 0usize;
    let mut failure = None;
    // Generator CPU per second is the sum of the worker threads' own CPU time (Second::merge adds
    // it up): the stand's sampler and file writing run on other threads and are not counted.
    let recycle = |s: Second| {
        if let Ok(mut p) = pool.lock() {
            if p.len() < pool_cap && s.tags.len() == ntags {
                p.push(s);
            }
        }
    };
    let mut emit = |s: Second, summary: &mut Summary| {
        summary.add(&s);
        on_second(&s);
        recycle(s);
    };
    while done < threads {
        let msg = match rx.recv_timeout(Duration::from_secs(5)) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        match msg {
            Msg::Second(s) => {
                // The first shard's record of a second becomes the merged one; the others are
                // merged into it and recycled.
                match pending.entry(s.t) {
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert((s, 1));
                    }
                    std::collections::hash_map::Entry::Occupied(mut e) => {
                        let (base, n) = e.get_mut();
                        base.merge(&s);
                        base.phase = s.phase;
                        base.stage = s.stage;
                        *n += 1;
                        recycle(s);
                    }
                }
                while pending.get(&next_t).is_some_and(|(_, n)| *n == threads) {
                    let (s, _) = pending.remove(&next_t).unwrap();
                    emit(s, &mut summary);
                    next_t += 1;
                }
            }
            Msg::Done => done += 1,
            Msg::Failed(e) => {
                failure = Some(e);
                done += 1;
                cfg.stop.store(true, Ordering::Relaxed);
            }
        }
    }
    for h in handles {
        let _ = h.join();
    }
    // The last, partial second: merge what every shard had when it finished.
    let mut rest: Vec<_> = pending.into_iter().collect();
    rest.sort_by_key(|(t, _)| *t);
    for (_, (s, _)) in rest {
        emit(s, &mut summary);
    }
    if let Some(e) = failure {
        return Err(LoadError::Runtime(e));
    }
    summary.stopped_early =
        cfg.stop.load(Ordering::Relaxed) || now_ns() > start + cfg.hard_limit.as_nanos() as u64;
    summary.connect_failures = connect_failures.count.load(Ordering::Relaxed);
    summary.connect_error = connect_failures.first.get().cloned();
    if let Ok(t) = connect_failures.resets.lock() {
        summary.resets = t.clone();
    }
    if let Ok(mut t) = connect_failures.tls.lock() {
        summary.tls = t.take();
    }
    if let Ok(mut io) = connect_failures.io.lock() {
        summary.io = io.take();
    }
    if let Ok(mut t) = connect_failures.h2.lock() {
        summary.h2 = t.take();
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::{closed_request_share, closed_share};

    #[test]
    fn closed_shares_sum_to_the_totals_and_follow_the_connections() {
        for (requests, connections, workers) in [(101, 2, 4), (1001, 7, 3), (5, 8, 3), (0, 3, 2)] {
            let conns: Vec<u64> = (0..workers)
                .map(|i| closed_share(connections, (i, workers)))
                .collect();
            let reqs: Vec<u64> = (0..workers)
                .map(|i| closed_request_share(requests, connections, (i, workers)))
                .collect();
            assert_eq!(conns.iter().sum::<u64>(), connections);
            assert_eq!(reqs.iter().sum::<u64>(), requests, "{reqs:?}");
            for (c, r) in conns.iter().zip(&reqs) {
                if *c == 0 {
                    assert_eq!(*r, 0, "a worker without connections gets no requests");
                }
            }
        }
    }
}
