//! The resource sampler: one thread, once per interval, CPU and memory of the stack's process
//! tree, PostgreSQL's (postmaster + backends) and the generator's process.
//!
//! Cost per tick: one scan of `/proc/*/stat` (only when a tree is sampled) plus one `statm` read
//! per sampled process and two small cgroup files; a few milliseconds of CPU per second even with
//! hundreds of backends.
//!
//! * CPU: when the target has a cgroup with CPU accounting (`cpuacct.usage` or v2 `cpu.stat`),
//!   that exact counter (it includes processes that exited); otherwise the sum over the tree of
//!   per-process `utime+stime` deltas (a process that exits mid-interval loses its last partial
//!   interval).
//! * `rss_bytes`: Σ(resident − shared) over the tree + the largest `shared` — so PostgreSQL's
//!   shared buffers, mapped by every backend, count once instead of once per backend.
//! * `cgroup_memory_bytes`: the cgroup's memory usage when a memory limit is in force.

use ceiling_metrics::{ResourceSample, Role};
use ceiling_supervise::cgroup::{CgDir, CgroupVersion};
use ceiling_supervise::procfs::{self, ProcTable};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Read-only view of a cgroup for the sampler (paths only; cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct CgroupProbe {
    memory: Option<PathBuf>,
    cpu_v1: Option<PathBuf>,
    cpu_v2: Option<PathBuf>,
    /// Directories the signal sampler reads (throttling, limits, OOM kills, major faults).
    files: ceiling_supervise::hostprobe::CgroupFiles,
}

impl CgroupProbe {
    /// A probe over a group's directories.
    pub fn new(dirs: &[CgDir]) -> CgroupProbe {
        let mut p = CgroupProbe::default();
        for d in dirs {
            let has = |c: &str| d.controllers.iter().any(|x| x == c);
            match d.version {
                CgroupVersion::V2 => {
                    if has("memory") {
                        p.memory = Some(d.path.join("memory.current"));
                        p.files.memory_dir = Some(d.path.clone());
                        p.files.memory_v2 = true;
                    }
                    p.cpu_v2 = Some(d.path.join("cpu.stat"));
                    // an accounting-only v2 group has no throttling counters
                    if has("cpu") {
                        p.files.cpu_dir = Some(d.path.clone());
                        p.files.cpu_v2 = true;
                    }
                }
                CgroupVersion::V1 => {
                    if has("memory") {
                        p.memory = Some(d.path.join("memory.usage_in_bytes"));
                        p.files.memory_dir = Some(d.path.clone());
                        p.files.memory_v2 = false;
                    }
                    if has("cpu") {
                        p.files.cpu_dir = Some(d.path.clone());
                        p.files.cpu_v2 = false;
                    }
                    if d.path.join("cpuacct.usage").exists() {
                        p.cpu_v1 = Some(d.path.join("cpuacct.usage"));
                    }
                }
            }
        }
        p
    }

    /// The files the signal sampler reads.
    pub fn files(&self) -> ceiling_supervise::hostprobe::CgroupFiles {
        self.files.clone()
    }

    fn memory_bytes(&self, buf: &mut String) -> Option<u64> {
        let p = self.memory.as_ref()?;
        read_u64(p, buf)
    }

    fn cpu_us(&self, buf: &mut String) -> Option<u64> {
        if let Some(p) = &self.cpu_v1 {
            return read_u64(p, buf).map(|ns| ns / 1000);
        }
        let p = self.cpu_v2.as_ref()?;
        if !procfs::read_into(p.to_str()?, buf) {
            return None;
        }
        buf.lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .and_then(|v| v.trim().parse().ok())
    }
}

fn read_u64(p: &Path, buf: &mut String) -> Option<u64> {
    if !procfs::read_into(p.to_str()?, buf) {
        return None;
    }
    buf.trim().parse().ok()
}

impl CgroupProbe {
    /// A read-only probe of a group the stand created.
    pub fn of(cg: &ceiling_supervise::Cgroup) -> CgroupProbe {
        CgroupProbe::new(cg.dirs())
    }
}

/// One thing to sample.
#[derive(Debug, Clone)]
pub struct SampleTarget {
    /// Which part of the run this is.
    pub who: Role,
    /// Root pid.
    pub pid: u32,
    /// Include all descendants (stack, postgres) or just the process (generator).
    pub tree: bool,
    /// The target's cgroup, for exact CPU and memory usage.
    pub cgroup: Option<CgroupProbe>,
    /// For `postgres`: a superuser connection, so the signal sampler can read wait events.
    /// A target with pid 0 carries only this (an external server: no process to sample).
    pub db: Option<ceiling_pg::DbConfig>,
}

impl SampleTarget {
    /// A process tree (`stack`, `postgres`).
    pub fn tree(who: Role, pid: u32, cgroup: Option<CgroupProbe>) -> SampleTarget {
        SampleTarget {
            who,
            pid,
            tree: true,
            cgroup,
            db: None,
        }
    }
    /// A single process with all its threads (the generator: usually `std::process::id()`).
    pub fn process(who: Role, pid: u32) -> SampleTarget {
        SampleTarget {
            who,
            pid,
            tree: false,
            cgroup: None,
            db: None,
        }
    }
    /// Adds the database connection (the `postgres` target).
    pub fn with_db(mut self, db: ceiling_pg::DbConfig) -> SampleTarget {
        self.db = Some(db);
        self
    }
}

/// Per-target state between ticks.
#[derive(Default)]
struct TargetState {
    /// (pid, starttime) → cpu ticks at the last tick.
    ticks: HashMap<(u32, u64), u64>,
    cg_cpu_us: Option<u64>,
}

/// Computes samples; the thread in [`Sampler`] calls [`Measurer::tick`] once per interval.
pub struct Measurer {
    targets: Vec<SampleTarget>,
    state: Vec<TargetState>,
    last: Option<Instant>,
    clk: f64,
    page: u64,
    buf: String,
}

impl Measurer {
    /// A measurer for these targets.
    pub fn new(targets: Vec<SampleTarget>) -> Measurer {
        let n = targets.len();
        Measurer {
            targets,
            state: (0..n).map(|_| TargetState::default()).collect(),
            last: None,
            clk: procfs::clk_tck() as f64,
            page: procfs::page_size(),
            buf: String::with_capacity(1024),
        }
    }

    /// Reads every target now. The first call only records a baseline and returns nothing;
    /// later calls return one sample per target whose root process still exists.
    pub fn tick(&mut self, run_start: Instant) -> Vec<ResourceSample> {
        let now = Instant::now();
        let dt = self.last.map(|l| now.duration_since(l).as_secs_f64());
        self.last = Some(now);
        let table = if self.targets.iter().any(|t| t.tree) {
            Some(ProcTable::scan())
        } else {
            None
        };
        let t = now.saturating_duration_since(run_start).as_secs_f64();
        let mut out = Vec::new();
        for (i, target) in self.targets.iter().enumerate() {
            if target.pid == 0 {
                continue; // a connection-only target (external PostgreSQL)
            }
            let st = &mut self.state[i];
            // processes
            let stats: Vec<procfs::ProcStat> = if target.tree {
                let tb = table.as_ref().unwrap();
                tb.tree(target.pid)
                    .iter()
                    .filter_map(|p| tb.procs.get(p).cloned())
                    .collect()
            } else {
                procfs::read_stat(target.pid).into_iter().collect()
            };
            let alive = stats.first().map(|s| !s.is_dead()).unwrap_or(false);
            // CPU from /proc
            let mut delta_ticks = 0u64;
            let mut next = HashMap::with_capacity(stats.len());
            for s in &stats {
                let key = (s.pid, s.starttime);
                let now_t = s.cpu_ticks();
                let prev = st.ticks.get(&key).copied().unwrap_or(0);
                delta_ticks += now_t.saturating_sub(prev);
                next.insert(key, now_t);
            }
            st.ticks = next;
            // CPU from the cgroup (exact)
            let cg_cpu = target.cgroup.as_ref().and_then(|c| c.cpu_us(&mut self.buf));
            let prev_cg = st.cg_cpu_us;
            st.cg_cpu_us = cg_cpu;
            let Some(dt) = dt else { continue };
            if !alive || dt <= 0.0 {
                continue;
            }
            let cpu_pct = match (cg_cpu, prev_cg) {
                (Some(a), Some(b)) => a.saturating_sub(b) as f64 / 1e6 / dt * 100.0,
                _ => delta_ticks as f64 / self.clk / dt * 100.0,
            };
            // memory
            let mut private = 0u64;
            let mut max_shared = 0u64;
            for s in &stats {
                if s.is_dead() {
                    continue;
                }
                let (res, shared) =
                    if procfs::read_into(&format!("/proc/{}/statm", s.pid), &mut self.buf) {
                        procfs::parse_statm(&self.buf).unwrap_or((s.rss_pages, 0))
                    } else {
                        (s.rss_pages, 0)
                    };
                private += res.saturating_sub(shared);
                max_shared = max_shared.max(shared);
            }
            let rss_bytes = (private + max_shared) * self.page;
            let cgroup_memory_bytes = target
                .cgroup
                .as_ref()
                .and_then(|c| c.memory_bytes(&mut self.buf));
            out.push(ResourceSample {
                t,
                who: target.who,
                cpu_pct,
                rss_bytes,
                cgroup_memory_bytes,
            });
        }
        out
    }
}

/// A running sampler thread. Stop it with [`Sampler::stop`] (or drop it).
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling `targets` every `interval` (1 s in runs), calling `sink` with each sample
    /// (`t` = seconds since `run_start`). Ticks are scheduled on absolute times, so they do not
    /// drift, and fall slightly before each multiple of `interval` (by interval/20, at most
    /// 50 ms): the sample taken at 0.95 s, 1.95 s… then covers almost exactly one second of the
    /// run's clock (second 0, 1, …) and is ready before the generator delivers that second.
    pub fn start(
        run_start: Instant,
        interval: Duration,
        targets: Vec<SampleTarget>,
        mut sink: impl FnMut(ResourceSample) + Send + 'static,
    ) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("ceiling-sampler".into())
            .spawn(move || {
                let mut m = Measurer::new(targets);
                m.tick(run_start);
                let lead = (interval / 20).min(Duration::from_millis(50));
                let mut n: u32 = 1;
                let mut next = run_start + interval - lead;
                while !stop2.load(Ordering::Relaxed) {
                    let now = Instant::now();
                    if now < next {
                        // sleep in small steps so stop() returns quickly
                        std::thread::sleep((next - now).min(Duration::from_millis(50)));
                        continue;
                    }
                    for s in m.tick(run_start) {
                        sink(s);
                    }
                    // the next multiple of `interval` still ahead (skips ticks missed in a stall)
                    loop {
                        n += 1;
                        next = run_start + interval * n - lead;
                        if next > Instant::now() {
                            break;
                        }
                    }
                }
            })
            .expect("spawning the sampler thread");
        Sampler {
            stop,
            handle: Some(handle),
        }
    }

    /// Like [`Sampler::start`], delivering samples through a channel.
    pub fn with_channel(
        run_start: Instant,
        interval: Duration,
        targets: Vec<SampleTarget>,
    ) -> (Sampler, Receiver<ResourceSample>) {
        let (tx, rx) = channel();
        let s = Sampler::start(run_start, interval, targets, move |x| {
            let _ = tx.send(x);
        });
        (s, rx)
    }

    /// Stops the thread and waits for it. Idempotent.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_self_and_busy_child() {
        // a child that burns one core
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let me = std::process::id();
        let start = Instant::now();
        let mut m = Measurer::new(vec![
            SampleTarget::tree(Role::Stack, child.id(), None),
            SampleTarget::process(Role::Generator, me),
        ]);
        assert!(m.tick(start).is_empty());
        std::thread::sleep(Duration::from_millis(600));
        let s = m.tick(start);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(s.len(), 2);
        let stack = s.iter().find(|x| x.who == Role::Stack).unwrap();
        // one busy core; the machine may be shared, so only check it is clearly measured and
        // physically possible (clock ticks are 10 ms, so allow some slack above 100%)
        assert!(stack.cpu_pct > 5.0 && stack.cpu_pct < 130.0, "{stack:?}");
        assert!(stack.rss_bytes > 0);
        assert!(stack.t > 0.5);
        let gen = s.iter().find(|x| x.who == Role::Generator).unwrap();
        assert!(gen.rss_bytes > 0);
        assert!(gen.cpu_pct < 100.0, "{gen:?}");
        // a gone target yields no sample
        let s = m.tick(start);
        assert!(s.iter().all(|x| x.who != Role::Stack), "{s:?}");
    }

    #[test]
    fn sampler_thread_delivers_and_stops() {
        let (mut s, rx) = Sampler::with_channel(
            Instant::now(),
            Duration::from_millis(100),
            vec![SampleTarget::process(Role::Generator, std::process::id())],
        );
        let first = rx.recv_timeout(Duration::from_secs(3)).unwrap();
        assert_eq!(first.who, Role::Generator);
        s.stop();
        while rx.try_recv().is_ok() {}
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    }
}
