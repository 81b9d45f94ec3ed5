//! Host-wide and cgroup counters for the signal sampler, parsed from `/proc` and cgroup files.
//! Pure parsers (unit-tested on fixed text) plus small readers; every reader returns `None` when
//! its file is missing, so a kernel without a counter leaves the column empty instead of failing.

use crate::procfs;
use std::path::{Path, PathBuf};

/// Host CPU counters from the `cpu ` line of `/proc/stat`, clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// user + nice + system + irq + softirq (guest time is inside user).
    pub busy: u64,
    /// iowait.
    pub iowait: u64,
    /// steal.
    pub steal: u64,
}

/// Parses the first (`cpu `) line of `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_ascii_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal guest guest_nice
    let g = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    Some(CpuTicks {
        busy: g(0) + g(1) + g(2) + g(5) + g(6),
        iowait: g(4),
        steal: g(7),
    })
}

/// `running` of `/proc/loadavg` (`0.50 0.40 0.30 3/345 1234` → 3): runnable tasks right now,
/// the sampler itself included.
pub fn parse_loadavg_running(text: &str) -> Option<u32> {
    let f = text.split_ascii_whitespace().nth(3)?;
    f.split('/').next()?.parse().ok()
}

/// The run delay of one task from its `schedstat` (`cpu_ns wait_ns timeslices` → wait_ns): time
/// spent runnable on a run queue, waiting for a CPU.
pub fn parse_schedstat_wait_ns(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Run delay summed over every thread of this process (`/proc/self/task/*/schedstat`), ns;
/// `None` when the kernel does not expose schedstat.
pub fn self_run_delay_ns(buf: &mut String) -> Option<u64> {
    let mut total = 0u64;
    let mut any = false;
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let path = e.path().join("schedstat");
        if path
            .to_str()
            .is_some_and(|p| crate::procfs::read_into(p, buf))
        {
            if let Some(w) = parse_schedstat_wait_ns(buf) {
                total = total.saturating_add(w);
                any = true;
            }
        }
    }
    any.then_some(total)
}

/// Cumulative disk counters summed over whole disks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskTotals {
    /// Completed reads + writes + flushes.
    pub ios: u64,
    /// Milliseconds spent on them (as the kernel counts: summed over requests).
    pub io_ms: u64,
    /// The busiest disk's io_ticks (ms with I/O in flight), per disk in `disks` order.
    pub busy_ms: Vec<u64>,
}

/// Parses `/proc/diskstats` for the named disks (whole devices; partitions would double count).
pub fn parse_diskstats(text: &str, disks: &[String]) -> DiskTotals {
    let mut t = DiskTotals::default();
    for name in disks {
        let Some(line) = text
            .lines()
            .find(|l| l.split_ascii_whitespace().nth(2) == Some(name.as_str()))
        else {
            t.busy_ms.push(0);
            continue;
        };
        let v: Vec<u64> = line
            .split_ascii_whitespace()
            .skip(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        // 0 reads, 3 ms reading, 4 writes, 7 ms writing, 9 io_ticks, 15 flushes, 16 ms flushing
        // (discards, 11-14, are left out: they are not on any request's path)
        t.ios += g(0) + g(4) + g(15);
        t.io_ms += g(3) + g(7) + g(16);
        t.busy_ms.push(g(9));
    }
    t
}

/// Whole disks worth watching: `/sys/block` entries that are not loop, ram or zram devices.
pub fn whole_disks() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/block")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| {
                    !n.starts_with("loop") && !n.starts_with("ram") && !n.starts_with("zram")
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Finds `key` in a `/proc/net/netstat` or `/proc/net/snmp` file, where each section is a
/// header line (`TcpExt: A B C`) followed by a value line (`TcpExt: 1 2 3`).
pub fn parse_net_counter(text: &str, section: &str, key: &str) -> Option<u64> {
    let prefix = format!("{section}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&prefix));
    while let (Some(h), Some(v)) = (lines.next(), lines.next()) {
        let pos = h.split_ascii_whitespace().position(|k| k == key);
        if let Some(p) = pos {
            return v.split_ascii_whitespace().nth(p)?.parse().ok();
        }
    }
    None
}

/// TCP counters the attribution uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetCounters {
    /// `TcpExt: ListenOverflows`.
    pub listen_overflows: Option<u64>,
    /// `TcpExt: ListenDrops`.
    pub listen_drops: Option<u64>,
    /// `Tcp: RetransSegs`.
    pub retrans_segs: Option<u64>,
}

/// CFS bandwidth counters of a cgroup (`cpu.stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttling {
    /// `nr_periods`.
    pub periods: u64,
    /// `nr_throttled`.
    pub throttled: u64,
    /// `throttled_time` (v1, ns) or `throttled_usec` (v2) in microseconds.
    pub throttled_us: u64,
}

/// Parses a v1 or v2 `cpu.stat`.
pub fn parse_cpu_stat(text: &str) -> Option<Throttling> {
    let get = |k: &str| {
        text.lines().find_map(|l| {
            let mut it = l.split_ascii_whitespace();
            (it.next() == Some(k))
                .then(|| it.next()?.parse::<u64>().ok())
                .flatten()
        })
    };
    Some(Throttling {
        periods: get("nr_periods")?,
        throttled: get("nr_throttled")?,
        throttled_us: get("throttled_usec")
            .or_else(|| get("throttled_time").map(|ns| ns / 1000))?,
    })
}

/// Reads a small file into a string; `None` when missing.
fn read(path: &Path, buf: &mut String) -> Option<()> {
    procfs::read_into(path.to_str()?, buf).then_some(())
}

/// The cgroup files of one group the signal sampler reads (v1 or v2).
#[derive(Debug, Clone, Default)]
pub struct CgroupFiles {
    /// Directory holding `cpu.stat` with throttling counters (v1 cpu controller, or v2).
    pub cpu_dir: Option<PathBuf>,
    /// Directory of the memory controller.
    pub memory_dir: Option<PathBuf>,
    /// `cpu_dir` is a cgroup v2 directory (v2 file names).
    pub cpu_v2: bool,
    /// `memory_dir` is a cgroup v2 directory.
    pub memory_v2: bool,
}

impl CgroupFiles {
    /// Throttling counters.
    pub fn throttling(&self, buf: &mut String) -> Option<Throttling> {
        read(&self.cpu_dir.as_ref()?.join("cpu.stat"), buf)?;
        parse_cpu_stat(buf)
    }

    /// The CPU quota in % of one core (`None`: unlimited or unreadable).
    pub fn cpu_limit_pct(&self, buf: &mut String) -> Option<f64> {
        let d = self.cpu_dir.as_ref()?;
        if self.cpu_v2 {
            read(&d.join("cpu.max"), buf)?;
            let mut it = buf.split_ascii_whitespace();
            let q: f64 = it.next()?.parse().ok()?;
            let p: f64 = it.next()?.parse().ok()?;
            return (p > 0.0).then(|| q / p * 100.0);
        }
        read(&d.join("cpu.cfs_quota_us"), buf)?;
        let q: i64 = buf.trim().parse().ok()?;
        read(&d.join("cpu.cfs_period_us"), buf)?;
        let p: i64 = buf.trim().parse().ok()?;
        (q > 0 && p > 0).then(|| q as f64 / p as f64 * 100.0)
    }

    /// Time every thread of the group has spent runnable but waiting for a CPU, ns: the run delay
    /// of `/proc/<tid>/schedstat` summed over the group's threads (`cgroup.threads` in v2, `tasks`
    /// in v1). A thread that exits takes its share with it, so a second with exits reads low.
    pub fn threads_run_delay_ns(&self, buf: &mut String) -> Option<u64> {
        let d = self.cpu_dir.as_ref()?;
        read(
            &d.join(if self.cpu_v2 {
                "cgroup.threads"
            } else {
                "tasks"
            }),
            buf,
        )?;
        let tids: Vec<u32> = buf
            .split_ascii_whitespace()
            .filter_map(|t| t.parse().ok())
            .collect();
        let mut total = 0u64;
        let mut any = false;
        for tid in tids {
            if crate::procfs::read_into(&format!("/proc/{tid}/schedstat"), buf) {
                if let Some(w) = parse_schedstat_wait_ns(buf) {
                    total = total.saturating_add(w);
                    any = true;
                }
            }
        }
        any.then_some(total)
    }

    /// Memory limit, bytes (`None`: unlimited).
    pub fn memory_limit(&self, buf: &mut String) -> Option<u64> {
        let d = self.memory_dir.as_ref()?;
        let f = if self.memory_v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        read(&d.join(f), buf)?;
        let v: u64 = buf.trim().parse().ok()?;
        // v1 reports "unlimited" as a huge page-aligned number
        (v < (1u64 << 60)).then_some(v)
    }

    /// OOM kills so far (v1 `memory.oom_control`, v2 `memory.events`).
    pub fn oom_kills(&self, buf: &mut String) -> Option<u64> {
        let d = self.memory_dir.as_ref()?;
        let f = if self.memory_v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        read(&d.join(f), buf)?;
        buf.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|v| v.trim().parse().ok())
    }

    /// Major faults of the group so far (v1 `total_pgmajfault`, v2 `pgmajfault` in memory.stat).
    pub fn major_faults(&self, buf: &mut String) -> Option<u64> {
        let d = self.memory_dir.as_ref()?;
        read(&d.join("memory.stat"), buf)?;
        let key = if self.memory_v2 {
            "pgmajfault "
        } else {
            "total_pgmajfault "
        };
        buf.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
    }
}

/// Reads the host's TCP counters.
pub fn read_net(buf: &mut String) -> NetCounters {
    let mut n = NetCounters::default();
    if procfs::read_into("/proc/net/netstat", buf) {
        n.listen_overflows = parse_net_counter(buf, "TcpExt", "ListenOverflows");
        n.listen_drops = parse_net_counter(buf, "TcpExt", "ListenDrops");
    }
    if procfs::read_into("/proc/net/snmp", buf) {
        n.retrans_segs = parse_net_counter(buf, "Tcp", "RetransSegs");
    }
    n
}

#[cfg(test)]
mod tests {

    /// The group's threads' run delay, read through a `tasks` file naming this process's own
    /// threads: more busy threads than CPUs make them queue, and the sum must grow by roughly the
    /// queueing the test caused (at least a tenth of it).
    #[test]
    fn a_groups_threads_waiting_for_a_cpu_are_counted() {
        let dir = std::env::temp_dir().join(format!("ceiling-rundelay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // 2 × CPUs busy threads for 400 ms: about half of their time is spent queued
        let (tx, rx) = std::sync::mpsc::channel();
        let burners: Vec<_> = (0..2 * cpus)
            .map(|_| {
                let (stop, tx) = (stop.clone(), tx.clone());
                std::thread::spawn(move || {
                    tx.send(rustix::thread::gettid().as_raw_nonzero().get())
                        .unwrap();
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let tids: Vec<i32> = (0..2 * cpus).map(|_| rx.recv().unwrap()).collect();
        std::fs::write(
            dir.join("tasks"),
            tids.iter().map(|t| format!("{t}\n")).collect::<String>(),
        )
        .unwrap();
        let files = CgroupFiles {
            cpu_dir: Some(dir.clone()),
            memory_dir: None,
            cpu_v2: false,
            memory_v2: false,
        };
        let mut buf = String::new();
        let before = files
            .threads_run_delay_ns(&mut buf)
            .expect("schedstat readable");
        std::thread::sleep(std::time::Duration::from_millis(400));
        let after = files
            .threads_run_delay_ns(&mut buf)
            .expect("schedstat readable");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for b in burners {
            b.join().unwrap();
        }
        std::fs::remove_dir_all(&dir).ok();
        // cpus threads' worth of queueing for 400 ms = cpus × 400 ms; a tenth of it at least
        let waited_ms = (after - before) as f64 / 1e6;
        assert!(
            waited_ms >= 0.1 * cpus as f64 * 400.0,
            "{waited_ms:.1} ms queued over 400 ms with {} threads on {cpus} CPUs",
            2 * cpus
        );
    }

    use super::*;

    #[test]
    fn proc_stat_line() {
        let t = parse_proc_stat(
            "cpu  100 5 50 1000 30 2 3 7 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1 2 3\n",
        )
        .unwrap();
        assert_eq!(
            t,
            CpuTicks {
                busy: 160,
                iowait: 30,
                steal: 7
            }
        );
        assert_eq!(parse_proc_stat("intr 1 2\n"), None);
    }

    #[test]
    fn loadavg_running() {
        assert_eq!(
            parse_loadavg_running("4.20 1.37 0.49 7/133 6324\n"),
            Some(7)
        );
        assert_eq!(parse_loadavg_running("garbage"), None);
    }

    #[test]
    fn diskstats_whole_disks() {
        let text = " 254       0 vda 28000 5205 2476826 17049 6031 17368 1702472 11148 0 7020 28698 3904 21 146776 488 255 12\n 254       1 vda1 1 1 1 1 1 1 1 1 0 1 1 0 0 0 0 0 0\n";
        let t = parse_diskstats(text, &["vda".to_string()]);
        assert_eq!(t.ios, 28000 + 6031 + 255);
        assert_eq!(t.io_ms, 17049 + 11148 + 12);
        assert_eq!(t.busy_ms, vec![7020]);
    }

    #[test]
    fn net_counters() {
        let netstat = "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 0 12 13\nIpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(
            parse_net_counter(netstat, "TcpExt", "ListenOverflows"),
            Some(12)
        );
        assert_eq!(
            parse_net_counter(netstat, "TcpExt", "ListenDrops"),
            Some(13)
        );
        assert_eq!(parse_net_counter(netstat, "IpExt", "Nope"), None);
        let snmp = "Ip: Forwarding\nIp: 1\nTcp: RtoAlgorithm RetransSegs InErrs\nTcp: 1 99 0\n";
        assert_eq!(parse_net_counter(snmp, "Tcp", "RetransSegs"), Some(99));
    }

    #[test]
    fn cpu_stat_v1_and_v2() {
        let v1 = "nr_periods 100\nnr_throttled 40\nthrottled_time 2000000000\n";
        assert_eq!(
            parse_cpu_stat(v1),
            Some(Throttling {
                periods: 100,
                throttled: 40,
                throttled_us: 2_000_000
            })
        );
        let v2 = "usage_usec 5\nuser_usec 3\nsystem_usec 2\nnr_periods 10\nnr_throttled 1\nthrottled_usec 500\n";
        assert_eq!(
            parse_cpu_stat(v2),
            Some(Throttling {
                periods: 10,
                throttled: 1,
                throttled_us: 500
            })
        );
        assert_eq!(parse_cpu_stat("usage_usec 5\n"), None);
    }
}
