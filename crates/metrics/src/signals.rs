//! `signals.csv`: one row per second of the run with the signals that explain its latency — the
//! host (CPU busy/iowait/steal, run queue, other processes' CPU, disk latency, listen-queue
//! overflows, retransmits), the stack's cgroup (throttling, memory limit, OOM kills, major faults),
//! PostgreSQL (sampled wait events, WAL syncs, checkpoints, commits), the control endpoint, and the
//! stack's runtime (GC pauses, DB pool) where its `/metrics` exposes them.
//!
//! Every column is optional: empty means "not sampled" (the source was unavailable, or this
//! stack does not expose it), never zero. Seconds use the same clock as `timeseries.csv`: the row
//! with `t = k` covers `[k, k+1)` seconds since the run started. Counters are deltas within the
//! second; "backends" columns are the mean number of PostgreSQL client backends per 100 ms sample.

use serde::{Deserialize, Serialize};
use std::io::Write;

/// One second of signals. See the module documentation for conventions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SignalRow {
    /// Seconds since the run started; the row covers `[t, t+1)`.
    pub t: u32,
    // ---- host ----
    /// CPUs of the host.
    pub host_cpus: Option<f64>,
    /// Host CPU busy (everything but idle and iowait), % of one core (200 = two cores).
    pub host_busy_pct: Option<f64>,
    /// Host iowait, % of one core.
    pub host_iowait_pct: Option<f64>,
    /// Host steal time (the hypervisor ran someone else), % of one core.
    pub host_steal_pct: Option<f64>,
    /// CPU of processes outside the run: host busy − stack − PostgreSQL − PgBouncer − generator,
    /// % of one core.
    pub other_cpu_pct: Option<f64>,
    /// Runnable tasks (`/proc/loadavg`), the largest of the second's 100 ms samples.
    pub run_queue_max: Option<f64>,
    /// Runnable tasks, mean over the second's samples.
    pub run_queue_mean: Option<f64>,
    /// Time the generator's threads spent runnable but waiting for a CPU in this second, summed
    /// over its threads (`/proc/self/task/*/schedstat`), ms: a generator starved of CPU sends and
    /// reads late, which inflates latency without showing as schedule lag alone.
    #[serde(default)]
    pub gen_run_delay_ms: Option<f64>,
    /// Busiest disk's busy time share (`/proc/diskstats` io_ticks), %.
    pub disk_busy_pct: Option<f64>,
    /// Mean time per completed disk I/O (reads, writes, flushes) over all disks, ms.
    pub disk_await_ms: Option<f64>,
    /// TCP listen-queue overflows (`TcpExt: ListenOverflows`).
    pub listen_overflows: Option<u64>,
    /// TCP SYNs dropped at listen (`TcpExt: ListenDrops`).
    pub listen_drops: Option<u64>,
    /// TCP segments retransmitted (`Tcp: RetransSegs`).
    pub retrans_segs: Option<u64>,
    // ---- the stack's cgroup and process tree ----
    /// The stack's CPU quota, % of one core (absent: no quota).
    pub stack_cpu_limit_pct: Option<f64>,
    /// CFS periods that elapsed while the stack's group was runnable.
    pub stack_periods: Option<u64>,
    /// Of those, periods in which the group was throttled (quota exhausted).
    pub stack_throttled_periods: Option<u64>,
    /// Time the group spent throttled, ms (summed over CPUs).
    pub stack_throttled_ms: Option<f64>,
    /// The stack's memory limit, MiB.
    pub stack_memory_limit_mb: Option<f64>,
    /// OOM kills in the stack's group.
    pub stack_oom_kills: Option<u64>,
    /// Major page faults of the stack's processes.
    pub stack_major_faults: Option<u64>,
    /// Time the stack's threads spent runnable but waiting for a CPU in this second, summed over
    /// its threads, ms: other processes (or its own surplus threads) holding the CPUs it may use.
    #[serde(default)]
    pub stack_run_delay_ms: Option<f64>,
    // ---- PostgreSQL ----
    /// PostgreSQL's CPU quota (its cgroup, when the plan sets `stand.postgres_cpus`), % of one
    /// core; absent: no quota.
    #[serde(default)]
    pub pg_cpu_limit_pct: Option<f64>,
    /// Whether the wait-event sampler reached PostgreSQL in this second.
    pub pg_up: Option<bool>,
    /// Wait-event samples taken in this second (10 when every 100 ms sample succeeded).
    pub pg_samples: Option<u32>,
    /// Active client backends (mean per sample).
    pub pg_active: Option<f64>,
    /// Active and not waiting: on CPU (or in a wait PostgreSQL does not instrument).
    pub pg_cpu: Option<f64>,
    /// Waiting on a heavyweight lock (`Lock:*`: relation, tuple, transactionid…).
    pub pg_lock: Option<f64>,
    /// Waiting on WAL: `IO:WALSync`, `IO:WALWrite` and `LWLock:WALWrite/WALInsert/WALBufMapping`
    /// (a backend queued behind the one flushing WAL).
    pub pg_wal: Option<f64>,
    /// Of `pg_wal`: `IO:WALSync` (fsync of WAL).
    pub pg_io_walsync: Option<f64>,
    /// Of `pg_wal`: `IO:WALWrite`.
    pub pg_io_walwrite: Option<f64>,
    /// `IO:DataFileRead`.
    pub pg_io_datafileread: Option<f64>,
    /// Other `IO:*` waits.
    pub pg_io_other: Option<f64>,
    /// Other `LWLock:*` waits (buffer mapping, lock manager…).
    pub pg_lwlock: Option<f64>,
    /// `Client:*` (waiting for the application to send or read).
    pub pg_client: Option<f64>,
    /// Everything else (`IPC`, `Timeout`, `BufferPin`, `Extension`, `Activity`).
    pub pg_other: Option<f64>,
    /// WAL flushes (`pg_stat_wal.wal_sync`).
    pub pg_wal_syncs: Option<u64>,
    /// Time in WAL flushes, ms (`wal_sync_time`; 0 unless `track_wal_io_timing` is on).
    pub pg_wal_sync_ms: Option<f64>,
    /// Checkpoints started (`pg_stat_bgwriter` timed + requested).
    pub pg_checkpoints: Option<u64>,
    /// Transactions committed in all databases (`pg_stat_database.xact_commit`).
    pub pg_commits: Option<u64>,
    // ---- the control ----
    /// Control probes intended in this second.
    pub control_probes: Option<u32>,
    /// Of those, probes that failed or took longer than the control's timeout.
    pub control_misses: Option<u32>,
    /// Slowest control probe (from its intended send time), ms.
    pub control_max_ms: Option<f64>,
    // ---- the stack's runtime (from its /metrics) ----
    /// Whether the stack's `/metrics` answered in this second.
    pub runtime_scrape_ok: Option<bool>,
    /// Stop-the-world GC pause time (Go `go_gc_duration_seconds`, JVM `jvm_gc_pause_seconds`,
    /// Node `nodejs_gc_duration_seconds`), ms.
    pub gc_pause_ms: Option<f64>,
    /// GC cycles (or pauses) in the second.
    pub gc_count: Option<u64>,
    /// Longest event-loop lag reported (Node `nodejs_eventloop_lag_max_seconds`, fastapi-asyncpg
    /// `python_eventloop_lag_max_seconds`), ms.
    pub event_loop_lag_ms: Option<f64>,
    /// The DB pool's size.
    pub pool_max: Option<f64>,
    /// Connections in use at the scrape.
    pub pool_in_use: Option<f64>,
    /// Requests waiting for a connection at the scrape (HikariCP, r2dbc-pool).
    pub pool_pending: Option<f64>,
    /// Acquires that found the pool empty (pgxpool).
    pub pool_empty_acquires: Option<u64>,
    /// Time spent acquiring connections, ms (summed over requests).
    pub pool_wait_ms: Option<f64>,
    /// Live heap at the scrape, MiB: the runtime's own figure, which [`Self::heap_kind`] names
    /// (source 000's "RAM" column; not RSS, which the resource samples carry).
    #[serde(default)]
    pub heap_used_mb: Option<f64>,
    /// Which runtime figure `heap_used_mb` is.
    #[serde(default)]
    pub heap_kind: Option<HeapKind>,
    /// Live threads at the scrape (JVM `jvm_threads_live_threads`, Go `go_threads`).
    #[serde(default)]
    pub threads: Option<f64>,
}

/// Which runtime reported a heap figure; they measure different things, so reports name it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum HeapKind {
    /// Micrometer's `jvm_memory_used_bytes{area="heap"}`: every heap pool's used bytes, garbage
    /// not yet collected included (so it saws between collections).
    JvmHeapUsed,
    /// client_golang's `go_memstats_alloc_bytes`: bytes of allocated heap objects.
    GoHeapAlloc,
    /// prom-client's `nodejs_heap_size_used_bytes`: V8's used heap.
    V8HeapUsed,
}

impl HeapKind {
    /// How a report labels the figure.
    pub fn label(self) -> &'static str {
        match self {
            HeapKind::JvmHeapUsed => "JVM heap used",
            HeapKind::GoHeapAlloc => "Go heap alloc",
            HeapKind::V8HeapUsed => "V8 heap used",
        }
    }
}

impl SignalRow {
    /// An empty row for second `t` (nothing sampled).
    pub fn new(t: u32) -> Self {
        SignalRow {
            t,
            ..Default::default()
        }
    }
}

/// Writes rows as CSV, flushing each one (a crash loses at most the rows not yet sealed).
pub struct SignalsWriter<W: Write> {
    csv: csv::Writer<W>,
}

impl<W: Write> SignalsWriter<W> {
    /// A writer that emits the header with the first row.
    pub fn new(out: W) -> Self {
        SignalsWriter {
            csv: csv::Writer::from_writer(out),
        }
    }
    /// A writer that continues a file whose header is already written (opened for appending).
    pub fn appending(out: W) -> Self {
        SignalsWriter {
            csv: csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(out),
        }
    }
    /// Writes and flushes one row.
    pub fn write(&mut self, row: &SignalRow) -> std::io::Result<()> {
        self.csv.serialize(row).map_err(std::io::Error::other)?;
        self.csv.flush()
    }
}

/// Reads `signals.csv` back (`ceiling report` recomputes attribution from it).
pub fn read_signals<R: std::io::Read>(r: R) -> Result<Vec<SignalRow>, String> {
    csv::Reader::from_reader(r)
        .deserialize()
        .collect::<Result<_, _>>()
        .map_err(|e| format!("signals.csv: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_empty_as_none() {
        let mut a = SignalRow::new(3);
        a.pg_lock = Some(4.5);
        a.pg_up = Some(true);
        a.listen_overflows = Some(0);
        let b = SignalRow::new(4);
        let mut buf = Vec::new();
        {
            let mut w = SignalsWriter::new(&mut buf);
            w.write(&a).unwrap();
            w.write(&b).unwrap();
        }
        let back = read_signals(&buf[..]).unwrap();
        assert_eq!(back, vec![a, b]);
        assert_eq!(back[1].pg_lock, None);
    }

    #[test]
    fn heap_kind_round_trips_and_old_files_still_read() {
        let mut a = SignalRow::new(1);
        a.heap_used_mb = Some(12.5);
        a.heap_kind = Some(HeapKind::JvmHeapUsed);
        let mut buf = Vec::new();
        SignalsWriter::new(&mut buf).write(&a).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.contains("jvm-heap-used"), "{text}");
        assert_eq!(read_signals(&buf[..]).unwrap(), vec![a]);
        // a signals.csv written before these columns existed
        let old = "t,pg_lock\n7,1.5\n";
        let back = read_signals(old.as_bytes()).unwrap();
        assert_eq!(back[0].t, 7);
        assert_eq!(back[0].heap_kind, None);
    }
}
