//! The signal sampler: what explains a second's latency, sampled on the run's clock and joined
//! into one [`SignalRow`] per second (`signals.csv`).
//!
//! Three threads and one child process, all started by [`SignalSampler::start`]:
//! * `signals-host` (1 Hz, ticking 50 ms before each whole second of the run so a tick covers
//!   almost exactly one second): `/proc/stat` (busy, iowait, steal), `/proc/diskstats`,
//!   `/proc/net/netstat` + `/proc/net/snmp`, the stack's cgroup (`cpu.stat` throttling, quota,
//!   memory limit, OOM kills, major faults), and one scrape of the stack's `/metrics` (GC pauses,
//!   DB pool, event-loop lag — whatever that stack's standard exporter publishes);
//! * `signals-pg` (10 Hz): one persistent tokio-postgres connection reading `pg_stat_activity`
//!   (active client backends by wait event) every 100 ms, and once a second `pg_stat_wal`,
//!   `pg_stat_bgwriter`, `pg_stat_database`; plus `/proc/loadavg`'s runnable count (run queue);
//! * `signals-control`: reads the control child's probe lines ([`crate::control`]).
//!
//! Rows are sealed 3 s after their second ended (control probes time out after 2 s) and handed
//! out by [`SignalSampler::take_sealed`]; [`SignalSampler::stop`] seals the rest.
//!
//! Attribution of counters to seconds: a delta between ticks at `a` and `b` belongs to the second
//! holding `(a+b)/2`; 100 ms samples and probes belong to the second they were taken/intended in.

use crate::control;
use ceiling_metrics::{HeapKind, ResourceSample, Role, SignalRow};
use ceiling_pg::DbConfig;
use ceiling_supervise::hostprobe::{
    self, CgroupFiles, CpuTicks, DiskTotals, NetCounters, Throttling,
};
use ceiling_supervise::procfs;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the signal sampler watches besides the host.
#[derive(Debug, Clone, Default)]
pub struct SignalConfig {
    /// The stack's cgroup (throttling, quota, memory limit, OOM kills, major faults).
    pub stack_cgroup: Option<CgroupFiles>,
    /// The stack's base URL (`http://127.0.0.1:PORT`) for its `/metrics`.
    pub stack_url: Option<String>,
    /// PostgreSQL as a superuser (wait events of every backend).
    pub postgres: Option<DbConfig>,
    /// PostgreSQL's cgroup, when it has one (its CPU quota).
    pub postgres_cgroup: Option<CgroupFiles>,
    /// Command that runs the control (`[ceiling, control-server]`); `None`: no control.
    pub control_command: Option<Vec<String>>,
}

impl SignalConfig {
    /// Builds the configuration from the resource sampler's targets (the stack's cgroup, the
    /// database's connection) and the stack's URL.
    pub fn from_targets(targets: &[crate::SampleTarget], stack_url: Option<&str>) -> Self {
        let mut c = SignalConfig {
            stack_url: stack_url.map(str::to_string),
            ..Default::default()
        };
        for t in targets {
            if t.who == Role::Stack {
                c.stack_cgroup = t.cgroup.as_ref().map(|p| p.files());
            }
            if t.who == Role::Postgres && t.db.is_some() {
                c.postgres = t.db.clone();
                c.postgres_cgroup = t.cgroup.as_ref().map(|p| p.files());
            }
        }
        c
    }
}

/// One wait-event group of a 100 ms sample: `(wait_event_type, wait_event, backends)`; `None`
/// type = not waiting (on CPU).
pub type WaitCount = (Option<String>, Option<String>, i64);

/// Mean-per-sample accumulation of PostgreSQL wait-event counts in one second.
#[derive(Debug, Clone, Default)]
struct PgAcc {
    samples: u32,
    failed: u32,
    active: f64,
    cpu: f64,
    lock: f64,
    wal: f64,
    walsync: f64,
    walwrite: f64,
    datafileread: f64,
    io_other: f64,
    lwlock: f64,
    client: f64,
    other: f64,
}

/// One second being assembled.
#[derive(Debug, Clone, Default)]
struct Acc {
    row: SignalRow,
    pg: PgAcc,
    rq: Vec<u32>,
    control: Vec<Option<u64>>,
    cpu: BTreeMap<String, f64>,
}

/// Joins samples from the sampler's threads (and the resource sampler) into per-second rows.
/// Pure bookkeeping: no I/O, so it is tested on its own.
#[derive(Debug, Default)]
pub struct Joiner {
    seconds: BTreeMap<u32, Acc>,
    /// Rows below this second were sealed.
    sealed_below: u32,
}

fn second_of(t: f64) -> Option<u32> {
    (t >= 0.0).then(|| t.floor() as u32)
}

/// (cgroup/host) counter delta that survived a reset as `None`.
fn delta(now: u64, prev: u64) -> Option<u64> {
    now.checked_sub(prev)
}

impl Joiner {
    /// An empty joiner.
    pub fn new() -> Self {
        Self::default()
    }

    fn at(&mut self, t: f64) -> Option<&mut SignalRow> {
        self.acc(t).map(|a| &mut a.row)
    }

    fn acc(&mut self, t: f64) -> Option<&mut Acc> {
        let s = second_of(t)?;
        if s < self.sealed_below {
            return None; // too late: that row is already out
        }
        Some(self.seconds.entry(s).or_insert_with(|| Acc {
            row: SignalRow::new(s),
            ..Default::default()
        }))
    }

    /// A resource sample (stack, postgres, generator CPU) taken at `r.t`, covering the second
    /// before it.
    pub fn push_resource(&mut self, r: &ResourceSample) {
        if let Some(a) = self.acc(r.t - 0.5) {
            a.cpu.insert(r.who.as_str().to_string(), r.cpu_pct);
        }
    }

    /// One 100 ms wait-event sample at `t`: `(wait_event_type, wait_event, count)` of active
    /// client backends; `None` when PostgreSQL could not be reached.
    pub fn push_pg_sample(&mut self, t: f64, rows: Option<&[WaitCount]>) {
        let Some(a) = self.acc(t) else { return };
        let Some(rows) = rows else {
            a.pg.failed += 1;
            return;
        };
        let p = &mut a.pg;
        p.samples += 1;
        for (ty, ev, n) in rows {
            let n = *n as f64;
            p.active += n;
            let ev = ev.as_deref().unwrap_or("");
            match ty.as_deref() {
                None => p.cpu += n,
                Some("Lock") => p.lock += n,
                Some("IO") if ev == "WALSync" => {
                    p.wal += n;
                    p.walsync += n
                }
                Some("IO") if ev == "WALWrite" => {
                    p.wal += n;
                    p.walwrite += n
                }
                Some("IO") if ev.starts_with("WAL") => p.wal += n,
                Some("IO") if ev == "DataFileRead" => p.datafileread += n,
                Some("IO") => p.io_other += n,
                Some("LWLock") if matches!(ev, "WALWrite" | "WALInsert" | "WALBufMapping") => {
                    p.wal += n
                }
                Some("LWLock") => p.lwlock += n,
                Some("Client") => p.client += n,
                Some(_) => p.other += n,
            }
        }
    }

    /// Once-a-second PostgreSQL counters (deltas between two reads at `a` and `b`).
    pub fn push_pg_counters(
        &mut self,
        a: f64,
        b: f64,
        syncs: u64,
        sync_ms: f64,
        checkpoints: u64,
        commits: u64,
    ) {
        if let Some(r) = self.at((a + b) / 2.0) {
            r.pg_wal_syncs = Some(r.pg_wal_syncs.unwrap_or(0) + syncs);
            r.pg_wal_sync_ms = Some(r.pg_wal_sync_ms.unwrap_or(0.0) + sync_ms);
            r.pg_checkpoints = Some(r.pg_checkpoints.unwrap_or(0) + checkpoints);
            r.pg_commits = Some(r.pg_commits.unwrap_or(0) + commits);
        }
    }

    /// Runnable tasks at `t`.
    pub fn push_run_queue(&mut self, t: f64, running: u32) {
        if let Some(a) = self.acc(t) {
            a.rq.push(running);
        }
    }

    /// A control probe intended at `t`, with its latency (µs) or `None` for a miss.
    pub fn push_control(&mut self, t: f64, latency_us: Option<u64>) {
        if let Some(a) = self.acc(t) {
            a.control.push(latency_us);
        }
    }

    /// Fills fields of the row holding the midpoint of `(a, b)` (1 Hz counters).
    pub fn with_interval(&mut self, a: f64, b: f64, f: impl FnOnce(&mut SignalRow)) {
        if let Some(r) = self.at((a + b) / 2.0) {
            f(r);
        }
    }

    /// Seals and returns every row whose second ended more than `grace` seconds before `now`
    /// (all rows when `now` is `None`), in order.
    pub fn seal(&mut self, now: Option<f64>, grace: f64) -> Vec<SignalRow> {
        let limit = match now {
            Some(n) => (n - grace - 1.0).floor(),
            None => f64::INFINITY,
        };
        let keys: Vec<u32> = self
            .seconds
            .keys()
            .copied()
            .filter(|&k| (k as f64) <= limit)
            .collect();
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            let a = self.seconds.remove(&k).expect("key listed above");
            out.push(finish(a));
            self.sealed_below = self.sealed_below.max(k + 1);
        }
        out
    }
}

fn finish(a: Acc) -> SignalRow {
    let mut r = a.row;
    let p = a.pg;
    if p.samples + p.failed > 0 {
        r.pg_up = Some(p.samples > 0);
        r.pg_samples = Some(p.samples);
    }
    if p.samples > 0 {
        let n = p.samples as f64;
        r.pg_active = Some(p.active / n);
        r.pg_cpu = Some(p.cpu / n);
        r.pg_lock = Some(p.lock / n);
        r.pg_wal = Some(p.wal / n);
        r.pg_io_walsync = Some(p.walsync / n);
        r.pg_io_walwrite = Some(p.walwrite / n);
        r.pg_io_datafileread = Some(p.datafileread / n);
        r.pg_io_other = Some(p.io_other / n);
        r.pg_lwlock = Some(p.lwlock / n);
        r.pg_client = Some(p.client / n);
        r.pg_other = Some(p.other / n);
    }
    if !a.rq.is_empty() {
        r.run_queue_max = a.rq.iter().max().map(|&m| m as f64);
        r.run_queue_mean = Some(a.rq.iter().sum::<u32>() as f64 / a.rq.len() as f64);
    }
    if !a.control.is_empty() {
        r.control_probes = Some(a.control.len() as u32);
        r.control_misses = Some(a.control.iter().filter(|c| c.is_none()).count() as u32);
        r.control_max_ms = a
            .control
            .iter()
            .flatten()
            .max()
            .map(|&us| us as f64 / 1000.0);
        if r.control_misses.unwrap_or(0) > 0 {
            // a miss took at least the control's timeout
            r.control_max_ms = Some(
                r.control_max_ms
                    .unwrap_or(0.0)
                    .max(CONTROL_TIMEOUT.as_secs_f64() * 1000.0),
            );
        }
    }
    if let Some(host) = r.host_busy_pct {
        if let (Some(stack), Some(gen)) = (a.cpu.get("stack"), a.cpu.get("generator")) {
            let pg = a.cpu.get("postgres").copied().unwrap_or(0.0);
            // PgBouncer is a part of the run too, when the plan has one
            let pgb = a.cpu.get("pgbouncer").copied().unwrap_or(0.0);
            r.other_cpu_pct = Some((host - stack - gen - pg - pgb).max(0.0));
        }
    }
    r
}

/// A control probe slower than this counts as a miss.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(2);

/// Labels whose values split a metric into quantities of different kinds: a sample carrying one
/// is also summed under `name{label="value"}` (Micrometer's `jvm_memory_used_bytes` is heap and
/// non-heap under one name; the source 000 reported only `area="heap"`).
const SPLIT_LABELS: &[&str] = &["area"];

/// Prometheus text → sum of every sample per metric name (labels summed over), plus the sums per
/// value of each label in `SPLIT_LABELS` (today `area`) under `name{label="value"}`.
pub fn parse_prometheus(text: &str) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for l in text.lines() {
        if l.starts_with('#') || l.trim().is_empty() {
            continue;
        }
        let name_end = l.find(['{', ' ']).unwrap_or(l.len());
        let name = &l[..name_end];
        let rest = match l[name_end..].rfind('}') {
            Some(i) if l[name_end..].starts_with('{') => &l[name_end + i + 1..],
            _ => &l[name_end..],
        };
        let Some(v) = rest
            .split_ascii_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        else {
            continue;
        };
        if v.is_finite() {
            *m.entry(name.to_string()).or_insert(0.0) += v;
            if l[name_end..].starts_with('{') {
                let labels = &l[name_end..];
                for key in SPLIT_LABELS {
                    let pat = format!("{key}=\"");
                    // `{area="heap",…}` or `…,area="heap"}`: the key must start a label
                    let at = labels
                        .match_indices(&pat)
                        .find(|&(i, _)| matches!(labels.as_bytes()[i - 1], b'{' | b','))
                        .map(|(i, _)| i + pat.len());
                    if let Some(val) = at.and_then(|i| labels[i..].split('"').next()) {
                        *m.entry(format!("{name}{{{key}=\"{val}\"}}")).or_insert(0.0) += v;
                    }
                }
            }
        }
    }
    m
}

/// Runtime figures from one scrape (cumulative counters and gauges).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RuntimeScrape {
    /// Cumulative GC pause seconds.
    pub gc_pause_s: Option<f64>,
    /// Cumulative GC count.
    pub gc_count: Option<f64>,
    /// Event-loop lag max, seconds.
    pub loop_lag_s: Option<f64>,
    /// GC pause time in the last second, seconds: a window gauge (fastapi-asyncpg's
    /// `python_gc_pause_window_seconds`, one per uvicorn worker), used where a stack publishes no
    /// cumulative pause counter.
    pub gc_pause_window_s: Option<f64>,
    /// Pool size.
    pub pool_max: Option<f64>,
    /// In use.
    pub pool_in_use: Option<f64>,
    /// Waiting.
    pub pool_pending: Option<f64>,
    /// Cumulative empty acquires.
    pub pool_empty: Option<f64>,
    /// Cumulative acquire seconds.
    pub pool_wait_s: Option<f64>,
    /// Live heap, bytes, and which runtime's figure it is.
    pub heap: Option<(f64, HeapKind)>,
    /// Live threads (JVM threads, Go OS threads).
    pub threads: Option<f64>,
}

/// Picks the runtime figures each stack's standard exporter publishes (Go client_golang + the
/// go-pgx pool collector, Micrometer for the JVM stacks, prom-client for Node, and the event-loop
/// lag gauge fastapi-asyncpg adds to prometheus_client, which has none).
pub fn runtime_of(m: &BTreeMap<String, f64>) -> RuntimeScrape {
    let first = |names: &[&str]| names.iter().find_map(|n| m.get(*n).copied());
    RuntimeScrape {
        gc_pause_s: first(&[
            "go_gc_duration_seconds_sum",
            "jvm_gc_pause_seconds_sum",
            "nodejs_gc_duration_seconds_sum",
        ]),
        gc_count: first(&[
            "go_gc_duration_seconds_count",
            "jvm_gc_pause_seconds_count",
            "nodejs_gc_duration_seconds_count",
        ]),
        loop_lag_s: first(&[
            "nodejs_eventloop_lag_max_seconds",
            "python_eventloop_lag_max_seconds",
        ]),
        gc_pause_window_s: first(&["python_gc_pause_window_seconds"]),
        pool_max: first(&[
            "pgxpool_max_conns",
            "hikaricp_connections_max",
            "r2dbc_pool_max_allocated_connections",
        ]),
        pool_in_use: first(&[
            "pgxpool_acquired_conns",
            "hikaricp_connections_active",
            "r2dbc_pool_acquired_connections",
        ]),
        pool_pending: first(&[
            "hikaricp_connections_pending",
            "r2dbc_pool_pending_connections",
        ]),
        pool_empty: first(&["pgxpool_empty_acquire_count_total"]),
        pool_wait_s: first(&[
            "pgxpool_acquire_duration_seconds_total",
            "hikaricp_connections_acquire_seconds_sum",
        ]),
        // the quantity source 000 called RAM: what the runtime holds live on its heap
        heap: [
            (
                "jvm_memory_used_bytes{area=\"heap\"}",
                HeapKind::JvmHeapUsed,
            ),
            ("go_memstats_alloc_bytes", HeapKind::GoHeapAlloc),
            ("nodejs_heap_size_used_bytes", HeapKind::V8HeapUsed),
        ]
        .iter()
        .find_map(|(n, k)| m.get(*n).map(|v| (*v, *k))),
        threads: first(&["jvm_threads_live_threads", "go_threads"]),
    }
}

/// GET `http://addr/path` on a fresh connection (the workspace's one client, `ceiling_http`);
/// the body on a 200.
fn http_get(addr: std::net::SocketAddr, path: &str, timeout: Duration) -> Option<String> {
    let r = ceiling_http::blocking::get(addr, path, &[("Accept", "text/plain")], timeout).ok()?;
    // a metrics page over 8 MiB is not one this sampler reads (the client's own bound is 64)
    (r.status == 200 && r.body.len() <= MAX_METRICS_BODY).then(|| r.text())
}

/// The largest `/metrics` page read: far above any runtime's exposition, small enough to read
/// every second.
const MAX_METRICS_BODY: usize = 8 << 20;

/// The stack's address from its base URL: the stand's stacks are on loopback, a service measured
/// with `--url` may be on another host (its metrics endpoint is scraped there).
fn url_addr(url: &str) -> Option<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    let rest = url.strip_prefix("http://")?;
    let hostport = rest.split('/').next()?;
    hostport.to_socket_addrs().ok()?.next()
}

struct Shared {
    joiner: Mutex<Joiner>,
    sealed: Mutex<Vec<SignalRow>>,
    stop: AtomicBool,
    notes: Mutex<Vec<String>>,
    /// CPU time of the sampler's own threads, ns (each adds its own at exit).
    threads_cpu_ns: AtomicU64,
    /// CPU time of the PostgreSQL backend serving the sampler, ns (read at exit, same host).
    pg_backend_cpu_ns: AtomicU64,
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    ceiling_supervise::sys::thread_cpu_ns()
}

/// A process's CPU time (utime + stime), ns; `None` when it is gone or not visible.
fn process_cpu_ns(pid: u32) -> Option<u64> {
    let st = procfs::read_stat(pid)?;
    Some(st.cpu_ticks() * 1_000_000_000 / procfs::clk_tck())
}

/// What the signal sampler itself cost, measured at [`SignalSampler::stop`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SamplerCost {
    /// Wall time sampled, s.
    pub wall_s: f64,
    /// CPU of the sampler's threads in this process, s.
    pub threads_cpu_s: f64,
    /// CPU of the control child (serving and probing itself), s.
    pub control_cpu_s: f64,
    /// CPU of the PostgreSQL backend answering the wait-event queries, s.
    pub postgres_cpu_s: f64,
}

impl SamplerCost {
    /// Total CPU, % of one core over the wall time.
    pub fn cpu_pct(&self) -> f64 {
        if self.wall_s <= 0.0 {
            return 0.0;
        }
        (self.threads_cpu_s + self.control_cpu_s + self.postgres_cpu_s) / self.wall_s * 100.0
    }
}

impl Shared {
    fn note(&self, s: String) {
        let mut n = self.notes.lock().expect("notes lock");
        if !n.contains(&s) {
            n.push(s);
        }
    }
}

/// A running signal sampler. Stop it with [`SignalSampler::stop`] (or drop it).
pub struct SignalSampler {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    control: Option<Child>,
    run_start: Instant,
    cost: SamplerCost,
}

impl SignalSampler {
    /// Starts sampling; `run_start` is the run's clock (second 0 of `timeseries.csv`).
    pub fn start(run_start: Instant, cfg: SignalConfig) -> SignalSampler {
        let shared = Arc::new(Shared {
            joiner: Mutex::new(Joiner::new()),
            sealed: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            notes: Mutex::new(Vec::new()),
            threads_cpu_ns: AtomicU64::new(0),
            pg_backend_cpu_ns: AtomicU64::new(0),
        });
        let mut threads = Vec::new();
        let mut control = None;
        // control
        if let Some(cmd) = cfg.control_command.as_ref().filter(|c| !c.is_empty()) {
            match spawn_control(cmd) {
                Ok(mut child) => {
                    let out = child.stdout.take().expect("piped stdout");
                    let sh = shared.clone();
                    let base = control::monotonic_ns_of(run_start);
                    threads.push(
                        std::thread::Builder::new()
                            .name("signals-control".into())
                            .spawn(move || {
                                for line in BufReader::new(out).lines() {
                                    let Ok(line) = line else { break };
                                    if let Some((ns, lat)) = control::parse_line(&line) {
                                        let t = (ns as f64 - base as f64) / 1e9;
                                        sh.joiner.lock().expect("joiner").push_control(t, lat);
                                    }
                                }
                                sh.threads_cpu_ns
                                    .fetch_add(thread_cpu_ns(), Ordering::Relaxed);
                            })
                            .expect("spawning a thread"),
                    );
                    control = Some(child);
                }
                Err(e) => shared.note(format!("control not sampled: {e}")),
            }
        } else {
            shared.note("control not sampled: no control command".into());
        }
        // host + cgroup + runtime, 1 Hz
        {
            let sh = shared.clone();
            let cfg = cfg.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("signals-host".into())
                    .spawn(move || {
                        host_loop(run_start, cfg, sh.clone());
                        sh.threads_cpu_ns
                            .fetch_add(thread_cpu_ns(), Ordering::Relaxed);
                    })
                    .expect("spawning a thread"),
            );
        }
        // PostgreSQL + run queue, 10 Hz
        {
            let sh = shared.clone();
            let db = cfg.postgres.clone();
            if db.is_none() {
                shared.note("PostgreSQL wait events not sampled: no database connection".into());
            }
            threads.push(
                std::thread::Builder::new()
                    .name("signals-pg".into())
                    .spawn(move || {
                        fast_loop(run_start, db, sh.clone());
                        sh.threads_cpu_ns
                            .fetch_add(thread_cpu_ns(), Ordering::Relaxed);
                    })
                    .expect("spawning a thread"),
            );
        }
        SignalSampler {
            shared,
            threads,
            control,
            run_start,
            cost: SamplerCost::default(),
        }
    }

    /// The sampler's own CPU (valid after [`SignalSampler::stop`]). The stack's side of the
    /// `/metrics` scrapes is inside the stack's CPU and not separated here.
    pub fn cost(&self) -> SamplerCost {
        self.cost
    }

    /// Feeds the resource sampler's samples (CPU of the stack, PostgreSQL and generator), so
    /// rows can say how much CPU went to processes outside the run.
    pub fn push_resources<'a>(&self, rs: impl IntoIterator<Item = &'a ResourceSample>) {
        let mut j = self.shared.joiner.lock().expect("joiner");
        for r in rs {
            j.push_resource(r);
        }
    }

    /// Rows sealed since the last call, in order.
    pub fn take_sealed(&self) -> Vec<SignalRow> {
        std::mem::take(&mut *self.shared.sealed.lock().expect("sealed"))
    }

    /// What could not be sampled and why (for the report).
    pub fn notes(&self) -> Vec<String> {
        self.shared.notes.lock().expect("notes").clone()
    }

    /// Stops every thread and the control child; returns the rows not yet taken.
    pub fn stop(&mut self) -> Vec<SignalRow> {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(mut c) = self.control.take() {
            self.cost.control_cpu_s = process_cpu_ns(c.id()).unwrap_or(0) as f64 / 1e9;
            // our own child, by its handle (pid)
            let _ = c.kill();
            let _ = c.wait();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.cost.wall_s = self.run_start.elapsed().as_secs_f64();
        self.cost.threads_cpu_s = self.shared.threads_cpu_ns.load(Ordering::Relaxed) as f64 / 1e9;
        self.cost.postgres_cpu_s =
            self.shared.pg_backend_cpu_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let mut rows = self.take_sealed();
        rows.extend(self.shared.joiner.lock().expect("joiner").seal(None, 0.0));
        rows
    }
}

impl Drop for SignalSampler {
    fn drop(&mut self) {
        if !self.threads.is_empty() || self.control.is_some() {
            self.stop();
        }
    }
}

fn spawn_control(cmd: &[String]) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: pre_exec runs between fork and exec; the closure makes one async-signal-safe
    // system call (prctl PR_SET_PDEATHSIG) and allocates nothing. The child dies with us
    // instead of lingering.
    unsafe {
        c.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            Ok(())
        });
    }
    c.spawn()
}

/// Sleeps until `due` unless stopped; false when stopped.
fn sleep_until(due: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(Duration::from_millis(50)));
    }
}

struct HostPrev {
    t: f64,
    cpu: Option<CpuTicks>,
    disk: Option<DiskTotals>,
    net: NetCounters,
    thr: Option<Throttling>,
    oom: Option<u64>,
    majflt: Option<u64>,
    /// The generator process's run delay so far, ns.
    gen_wait: Option<u64>,
    /// The stack's threads' run delay so far, ns.
    stack_wait: Option<u64>,
    rt: Option<RuntimeScrape>,
}

fn host_loop(run_start: Instant, cfg: SignalConfig, sh: Arc<Shared>) {
    let clk = procfs::clk_tck() as f64;
    let ncpu = std::thread::available_parallelism()
        .map(|n| n.get() as f64)
        .unwrap_or(1.0);
    let disks = hostprobe::whole_disks();
    let mut buf = String::with_capacity(8192);
    let port = cfg.stack_url.as_deref().and_then(url_addr);
    if port.is_none() {
        sh.note("runtime (GC, DB pool) not sampled: no stack URL".into());
    }
    let cg = cfg.stack_cgroup.clone();
    let pg_cg = cfg.postgres_cgroup.clone();
    if cg.as_ref().map(|c| c.cpu_dir.is_none()).unwrap_or(true) {
        sh.note("stack throttling not sampled: the stack has no CPU cgroup".into());
    }
    if cg.as_ref().map(|c| c.memory_dir.is_none()).unwrap_or(true) {
        sh.note(
            "stack major faults and OOM kills not sampled: the stack has no memory cgroup".into(),
        );
    }
    let read_all = |buf: &mut String| {
        let t = run_start.elapsed().as_secs_f64();
        let cpu = procfs::read_into("/proc/stat", buf)
            .then(|| hostprobe::parse_proc_stat(buf))
            .flatten();
        let disk = procfs::read_into("/proc/diskstats", buf)
            .then(|| hostprobe::parse_diskstats(buf, &disks));
        let net = hostprobe::read_net(buf);
        let thr = cg.as_ref().and_then(|c| c.throttling(buf));
        let oom = cg.as_ref().and_then(|c| c.oom_kills(buf));
        let majflt = cg.as_ref().and_then(|c| c.major_faults(buf));
        let gen_wait = hostprobe::self_run_delay_ns(buf);
        let stack_wait = cg.as_ref().and_then(|c| c.threads_run_delay_ns(buf));
        (t, cpu, disk, net, thr, oom, majflt, gen_wait, stack_wait)
    };
    let scrape = |port: Option<std::net::SocketAddr>| -> Option<RuntimeScrape> {
        let body = http_get(port?, "/metrics", Duration::from_millis(300))?;
        Some(runtime_of(&parse_prometheus(&body)))
    };
    let (t, cpu, disk, net, thr, oom, majflt, gen_wait, stack_wait) = read_all(&mut buf);
    let mut prev = HostPrev {
        t,
        cpu,
        disk,
        net,
        thr,
        oom,
        majflt,
        gen_wait,
        stack_wait,
        rt: scrape(port),
    };
    let limit_pct = cg.as_ref().and_then(|c| c.cpu_limit_pct(&mut buf));
    let pg_limit_pct = pg_cg.as_ref().and_then(|c| c.cpu_limit_pct(&mut buf));
    let mem_limit = cg.as_ref().and_then(|c| c.memory_limit(&mut buf));
    let mut n: u32 = 1;
    loop {
        let due = run_start + Duration::from_secs(n as u64) - Duration::from_millis(50);
        n += 1;
        if !sleep_until(due, &sh.stop) {
            return;
        }
        if Instant::now() > due + Duration::from_millis(500) {
            // fell behind (the host is stalling us): keep the tick, deltas cover the longer span
        }
        let (t, cpu, disk, net, thr, oom, majflt, gen_wait, stack_wait) = read_all(&mut buf);
        let rt = scrape(port);
        let dt = (t - prev.t).max(1e-3);
        {
            let mut j = sh.joiner.lock().expect("joiner");
            j.with_interval(prev.t, t, |r| {
                r.host_cpus = Some(ncpu);
                if let (Some(a), Some(b)) = (cpu, prev.cpu) {
                    let p = |x: u64, y: u64| x.saturating_sub(y) as f64 / clk / dt * 100.0;
                    r.host_busy_pct = Some(p(a.busy, b.busy));
                    r.host_iowait_pct = Some(p(a.iowait, b.iowait));
                    r.host_steal_pct = Some(p(a.steal, b.steal));
                }
                if let (Some(a), Some(b)) = (&disk, &prev.disk) {
                    let ios = a.ios.saturating_sub(b.ios);
                    let ms = a.io_ms.saturating_sub(b.io_ms);
                    r.disk_await_ms = Some(if ios > 0 { ms as f64 / ios as f64 } else { 0.0 });
                    let busiest = a
                        .busy_ms
                        .iter()
                        .zip(&b.busy_ms)
                        .map(|(x, y)| x.saturating_sub(*y))
                        .max()
                        .unwrap_or(0);
                    r.disk_busy_pct = Some((busiest as f64 / (dt * 1000.0) * 100.0).min(100.0));
                }
                let d = |a: Option<u64>, b: Option<u64>| a.zip(b).and_then(|(a, b)| delta(a, b));
                r.listen_overflows = d(net.listen_overflows, prev.net.listen_overflows);
                r.listen_drops = d(net.listen_drops, prev.net.listen_drops);
                r.retrans_segs = d(net.retrans_segs, prev.net.retrans_segs);
                if let (Some(a), Some(b)) = (thr, prev.thr) {
                    r.stack_periods = delta(a.periods, b.periods);
                    r.stack_throttled_periods = delta(a.throttled, b.throttled);
                    r.stack_throttled_ms =
                        delta(a.throttled_us, b.throttled_us).map(|us| us as f64 / 1000.0);
                }
                r.stack_cpu_limit_pct = limit_pct;
                r.pg_cpu_limit_pct = pg_limit_pct;
                r.stack_memory_limit_mb = mem_limit.map(|b| b as f64 / 1048576.0);
                r.stack_oom_kills = d(oom, prev.oom);
                r.stack_major_faults = d(majflt, prev.majflt);
                r.gen_run_delay_ms = d(gen_wait, prev.gen_wait).map(|ns| ns as f64 / 1e6 / dt);
                r.stack_run_delay_ms =
                    d(stack_wait, prev.stack_wait).map(|ns| ns as f64 / 1e6 / dt);
                if port.is_some() {
                    r.runtime_scrape_ok = Some(rt.is_some());
                }
                if let (Some(a), Some(b)) = (rt, prev.rt) {
                    let dd =
                        |x: Option<f64>, y: Option<f64>| x.zip(y).map(|(x, y)| (x - y).max(0.0));
                    r.gc_pause_ms = dd(a.gc_pause_s, b.gc_pause_s).map(|s| s * 1000.0);
                    r.gc_count = dd(a.gc_count, b.gc_count).map(|c| c.round() as u64);
                    r.pool_empty_acquires =
                        dd(a.pool_empty, b.pool_empty).map(|c| c.round() as u64);
                    r.pool_wait_ms = dd(a.pool_wait_s, b.pool_wait_s).map(|s| s * 1000.0);
                }
                if let Some(a) = rt {
                    r.heap_used_mb = a.heap.map(|(b, _)| b / 1048576.0);
                    r.heap_kind = a.heap.map(|(_, k)| k);
                    r.threads = a.threads;
                    r.event_loop_lag_ms = a.loop_lag_s.map(|s| s * 1000.0);
                    if r.gc_pause_ms.is_none() {
                        // a window gauge is this second's figure as it stands, no difference
                        r.gc_pause_ms = a.gc_pause_window_s.map(|s| s * 1000.0);
                    }
                    r.pool_max = a.pool_max;
                    r.pool_in_use = a.pool_in_use;
                    r.pool_pending = a.pool_pending;
                }
            });
            let sealed = j.seal(Some(t), 3.0);
            if !sealed.is_empty() {
                sh.sealed.lock().expect("sealed").extend(sealed);
            }
        }
        prev = HostPrev {
            t,
            cpu,
            disk,
            net,
            thr,
            oom,
            majflt,
            gen_wait,
            stack_wait,
            // a failed scrape keeps the last good counters, so the next delta spans both seconds
            rt: rt.or(prev.rt),
        };
    }
}

const WAITS_SQL: &str = "select wait_event_type, wait_event, count(*) from pg_stat_activity \
     where backend_type = 'client backend' and state = 'active' and pid <> pg_backend_pid() \
     group by 1, 2";
const COUNTERS_SQL: &str = "select w.wal_sync::bigint, w.wal_sync_time::float8, \
     (b.checkpoints_timed + b.checkpoints_req)::bigint, \
     (select sum(xact_commit) from pg_stat_database)::bigint \
     from pg_stat_wal w, pg_stat_bgwriter b";
/// PostgreSQL 17 moved the checkpoint counters to `pg_stat_checkpointer`.
const COUNTERS_SQL_17: &str = "select w.wal_sync::bigint, w.wal_sync_time::float8, \
     (c.num_timed + c.num_requested)::bigint, \
     (select sum(xact_commit) from pg_stat_database)::bigint \
     from pg_stat_wal w, pg_stat_checkpointer c";

fn fast_loop(run_start: Instant, db: Option<DbConfig>, sh: Arc<Shared>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            sh.note(format!(
                "PostgreSQL wait events and run queue not sampled: {e}"
            ));
            return;
        }
    };
    rt.block_on(async move {
        let mut buf = String::with_capacity(128);
        // prepared once per connection: planning the query 10 times a second would cost
        // PostgreSQL more than executing it
        let mut client: Option<(
            tokio_postgres::Client,
            tokio_postgres::Statement,
            tokio_postgres::Statement,
        )> = None;
        let mut backend: Option<u32> = None;
        let mut last_connect: Option<Instant> = None;
        let mut prev_counters: Option<(f64, i64, f64, i64, i64)> = None;
        let mut i: u64 = 1;
        loop {
            let due = run_start + Duration::from_millis(100 * i);
            i += 1;
            loop {
                if sh.stop.load(Ordering::Relaxed) {
                    if let Some(ns) = backend.and_then(process_cpu_ns) {
                        sh.pg_backend_cpu_ns.fetch_add(ns, Ordering::Relaxed);
                    }
                    return;
                }
                let now = Instant::now();
                if now >= due {
                    break;
                }
                tokio::time::sleep((due - now).min(Duration::from_millis(50))).await;
            }
            let t = run_start.elapsed().as_secs_f64();
            if procfs::read_into("/proc/loadavg", &mut buf) {
                if let Some(n) = hostprobe::parse_loadavg_running(&buf) {
                    // the sampler itself is running while it reads
                    sh.joiner
                        .lock()
                        .expect("joiner")
                        .push_run_queue(t, n.saturating_sub(1));
                }
            }
            let Some(cfg) = &db else { continue };
            if client.as_ref().map(|c| c.0.is_closed()).unwrap_or(true) {
                client = None;
                if last_connect
                    .map(|l| l.elapsed() >= Duration::from_secs(1))
                    .unwrap_or(true)
                {
                    last_connect = Some(Instant::now());
                    match connect(cfg).await {
                        Ok(c) => {
                            // its CPU is the sampler's cost on PostgreSQL's side (same host)
                            if let Some(ns) = backend.and_then(process_cpu_ns) {
                                sh.pg_backend_cpu_ns.fetch_add(ns, Ordering::Relaxed);
                            }
                            backend = c
                                .query_one("select pg_backend_pid()", &[])
                                .await
                                .ok()
                                .map(|r| r.get::<_, i32>(0) as u32);
                            let v17 = c
                                .query_one("select current_setting('server_version_num')::int", &[])
                                .await
                                .ok()
                                .is_some_and(|r| r.get::<_, i32>(0) >= 170_000);
                            let counters = if v17 { COUNTERS_SQL_17 } else { COUNTERS_SQL };
                            match (c.prepare(WAITS_SQL).await, c.prepare(counters).await) {
                                (Ok(w), Ok(k)) => client = Some((c, w, k)),
                                (Err(e), _) | (_, Err(e)) => sh.note(format!(
                                    "PostgreSQL sampler could not prepare its queries: {e}"
                                )),
                            }
                        }
                        Err(e) => sh.note(format!(
                            "PostgreSQL sampler could not connect at least once: {e}"
                        )),
                    }
                }
            }
            let Some((c, waits_stmt, counters_stmt)) = &client else {
                sh.joiner.lock().expect("joiner").push_pg_sample(t, None);
                continue;
            };
            let waits =
                tokio::time::timeout(Duration::from_millis(500), c.query(waits_stmt, &[])).await;
            match waits {
                Ok(Ok(rows)) => {
                    let v: Vec<WaitCount> = rows
                        .iter()
                        .map(|r| (r.get(0), r.get(1), r.get(2)))
                        .collect();
                    sh.joiner
                        .lock()
                        .expect("joiner")
                        .push_pg_sample(t, Some(&v));
                }
                _ => {
                    sh.joiner.lock().expect("joiner").push_pg_sample(t, None);
                    continue;
                }
            }
            if i.is_multiple_of(10) {
                let q = tokio::time::timeout(
                    Duration::from_millis(500),
                    c.query_one(counters_stmt, &[]),
                )
                .await;
                if let Ok(Ok(r)) = q {
                    let now_c: (f64, i64, f64, i64, i64) = (
                        t,
                        r.get::<_, Option<i64>>(0).unwrap_or(0),
                        r.get::<_, Option<f64>>(1).unwrap_or(0.0),
                        r.get::<_, Option<i64>>(2).unwrap_or(0),
                        r.get::<_, Option<i64>>(3).unwrap_or(0),
                    );
                    if let Some(p) = prev_counters {
                        let d = |a: i64, b: i64| (a - b).max(0) as u64;
                        sh.joiner.lock().expect("joiner").push_pg_counters(
                            p.0,
                            now_c.0,
                            d(now_c.1, p.1),
                            (now_c.2 - p.2).max(0.0),
                            d(now_c.3, p.3),
                            d(now_c.4, p.4),
                        );
                    }
                    prev_counters = Some(now_c);
                }
            }
        }
    });
}

async fn connect(cfg: &DbConfig) -> Result<tokio_postgres::Client, String> {
    let mut c = tokio_postgres::Config::new();
    c.host(&cfg.host)
        .port(cfg.port)
        .user(&cfg.user)
        .dbname(&cfg.dbname)
        .application_name("ceiling-signals")
        .connect_timeout(Duration::from_secs(2));
    if !cfg.password.is_empty() {
        c.password(&cfg.password);
    }
    let (client, conn) = c
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// Where the control comes from: this executable's hidden `control-server` subcommand.
pub fn control_command_of(exe: PathBuf) -> Vec<String> {
    vec![exe.display().to_string(), "control-server".into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joiner_assigns_and_seals() {
        let mut j = Joiner::new();
        // 10 samples in second 2: 5 lock waiters in 4 of them, 1 on CPU in every one
        for k in 0..10 {
            let t = 2.0 + k as f64 / 10.0 + 0.01;
            let mut rows = vec![(None, None, 1)];
            if k < 4 {
                rows.push((Some("Lock".into()), Some("relation".into()), 5));
            }
            rows.push((Some("LWLock".into()), Some("WALWrite".into()), 1));
            j.push_pg_sample(t, Some(&rows));
        }
        j.push_pg_sample(3.5, None);
        j.push_control(2.1, Some(1500));
        j.push_control(2.2, None);
        j.with_interval(1.95, 2.95, |r| r.host_busy_pct = Some(150.0));
        j.push_resource(&ResourceSample {
            t: 2.95,
            who: Role::Stack,
            cpu_pct: 60.0,
            rss_bytes: 0,
            cgroup_memory_bytes: None,
        });
        j.push_resource(&ResourceSample {
            t: 2.95,
            who: Role::Generator,
            cpu_pct: 20.0,
            rss_bytes: 0,
            cgroup_memory_bytes: None,
        });
        assert!(
            j.seal(Some(5.5), 3.0).is_empty(),
            "second 2 ends at 3, sealed after 6"
        );
        let rows = j.seal(Some(6.1), 3.0);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(r.t, 2);
        assert_eq!(r.pg_samples, Some(10));
        assert!((r.pg_lock.unwrap() - 2.0).abs() < 1e-9, "{r:?}");
        assert!((r.pg_cpu.unwrap() - 1.0).abs() < 1e-9);
        assert!((r.pg_wal.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(r.control_probes, Some(2));
        assert_eq!(r.control_misses, Some(1));
        assert_eq!(r.control_max_ms, Some(2000.0));
        assert_eq!(r.other_cpu_pct, Some(70.0));
        // late samples for a sealed second are dropped, not misplaced
        j.push_pg_sample(2.5, None);
        let rest = j.seal(None, 0.0);
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].t, 3);
        assert_eq!(rest[0].pg_up, Some(false));
    }

    #[test]
    fn prometheus_and_runtime() {
        let text = "# HELP go_gc_duration_seconds x\n# TYPE go_gc_duration_seconds summary\ngo_gc_duration_seconds{quantile=\"0.5\"} 0.0001\ngo_gc_duration_seconds_sum 0.25\ngo_gc_duration_seconds_count 12\npgxpool_max_conns 64\npgxpool_acquired_conns 3\npgxpool_empty_acquire_count_total 7\njvm_gc_pause_seconds_sum{action=\"end of minor GC\",cause=\"G1 Evacuation Pause\"} 1.5\njvm_gc_pause_seconds_sum{action=\"end of major GC\",cause=\"x\"} 0.5\nweird line\n";
        let m = parse_prometheus(text);
        assert_eq!(m.get("go_gc_duration_seconds_sum"), Some(&0.25));
        assert_eq!(m.get("jvm_gc_pause_seconds_sum"), Some(&2.0));
        let r = runtime_of(&m);
        assert_eq!(r.gc_pause_s, Some(0.25));
        assert_eq!(r.gc_count, Some(12.0));
        assert_eq!(r.pool_max, Some(64.0));
        assert_eq!(r.pool_in_use, Some(3.0));
        assert_eq!(r.pool_empty, Some(7.0));
        assert_eq!(r.pool_pending, None);
        assert_eq!(r.heap, None);
        assert_eq!(
            url_addr("http://127.0.0.1:8080"),
            Some(([127, 0, 0, 1], 8080).into())
        );
        assert_eq!(
            url_addr("http://10.1.2.3:9000/api"),
            Some(([10, 1, 2, 3], 9000).into()),
            "a service on another host is scraped there"
        );
        assert_eq!(url_addr("http://127.0.0.1"), None);
    }

    /// Micrometer's memory gauges as Spring Boot 3 prints them: heap and non-heap pools under one
    /// name, told apart by `area`; only the heap pools are the source's RAM.
    #[test]
    fn jvm_heap_is_the_heap_area_only() {
        let text = "\
# TYPE jvm_memory_used_bytes gauge
jvm_memory_used_bytes{area=\"heap\",id=\"G1 Eden Space\"} 4194304.0
jvm_memory_used_bytes{area=\"nonheap\",id=\"Metaspace\"} 50000000.0
jvm_memory_used_bytes{id=\"G1 Old Gen\",area=\"heap\"} 2097152.0
jvm_memory_used_bytes{id=\"x\",subarea=\"heap\"} 1.0
jvm_threads_live_threads 31.0
go_memstats_alloc_bytes 9.0
";
        let m = parse_prometheus(text);
        assert_eq!(
            m.get("jvm_memory_used_bytes{area=\"heap\"}"),
            Some(&6291456.0)
        );
        assert_eq!(
            m.get("jvm_memory_used_bytes{area=\"nonheap\"}"),
            Some(&50000000.0)
        );
        let r = runtime_of(&m);
        // the JVM's name wins over a Go name in the same text (never both in one real stack)
        assert_eq!(r.heap, Some((6291456.0, HeapKind::JvmHeapUsed)));
        assert_eq!(r.threads, Some(31.0));
        let go = runtime_of(&parse_prometheus(
            "go_memstats_alloc_bytes 1048576\ngo_threads 9\n",
        ));
        assert_eq!(go.heap, Some((1048576.0, HeapKind::GoHeapAlloc)));
        assert_eq!(go.threads, Some(9.0));
    }

    /// Event-loop lag from Node's exporter and from the gauge fastapi-asyncpg adds (Python's
    /// exporter has none); both are worst-lag gauges in seconds.
    #[test]
    fn event_loop_lag_from_node_and_python() {
        let node = runtime_of(&parse_prometheus(
            "nodejs_eventloop_lag_max_seconds 0.25\nnodejs_gc_duration_seconds_sum 0.1\n",
        ));
        assert_eq!(node.loop_lag_s, Some(0.25));
        let py = runtime_of(&parse_prometheus(
            "# TYPE python_eventloop_lag_max_seconds gauge\npython_eventloop_lag_max_seconds 0.3\npython_gc_collections_total{generation=\"0\"} 9.0\n",
        ));
        assert_eq!(py.loop_lag_s, Some(0.3));
        assert_eq!(
            py.gc_pause_s, None,
            "Python's exporter counts collections, not pauses"
        );
        let py = runtime_of(&parse_prometheus(
            "python_gc_pause_window_seconds 0.042\npython_gc_pause_max_window_seconds 0.03\n",
        ));
        assert_eq!(py.gc_pause_window_s, Some(0.042));
        assert_eq!(py.gc_pause_s, None, "a window is not a counter");
    }
}
