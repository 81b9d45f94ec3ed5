//! Minimal `/proc` parsing: process stat lines, memory, process trees and groups.
//!
//! This kernel family may lack `/proc/<pid>/task/<tid>/children` (CONFIG_PROC_CHILDREN), so trees
//! are found by one scan of `/proc/*/stat` (ppid links) — a few hundred small reads, cheap enough
//! for a 1 Hz sampler.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;

/// The fields of `/proc/<pid>/stat` the stand uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// Process id.
    pub pid: u32,
    /// Command name (`comm`, at most 15 bytes).
    pub comm: String,
    /// State letter (`R`, `S`, `Z`, …).
    pub state: char,
    /// Parent process id.
    pub ppid: u32,
    /// Process group id.
    pub pgrp: u32,
    /// User-mode CPU time, clock ticks (all threads).
    pub utime: u64,
    /// Kernel-mode CPU time, clock ticks (all threads).
    pub stime: u64,
    /// Start time after boot, clock ticks (identifies a process across PID reuse).
    pub starttime: u64,
    /// Resident set size, pages.
    pub rss_pages: u64,
}

impl ProcStat {
    /// utime + stime in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        self.utime + self.stime
    }
    /// True for zombies and dead processes.
    pub fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses one `/proc/<pid>/stat` line. The command name may contain spaces and parentheses, so the
/// fields after it are located from the last `)`.
pub fn parse_stat(line: &str) -> Option<ProcStat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let pid: u32 = line[..open].trim().parse().ok()?;
    let comm = line.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = line.get(close + 1..)?.split_ascii_whitespace().collect();
    // rest[0] is field 3 (state); field n is rest[n - 3].
    let f = |n: usize| -> Option<u64> { rest.get(n - 3)?.parse().ok() };
    Some(ProcStat {
        pid,
        comm,
        state: rest.first()?.chars().next()?,
        ppid: f(4)? as u32,
        pgrp: f(5)? as u32,
        utime: f(14)?,
        stime: f(15)?,
        starttime: f(22)?,
        rss_pages: f(24)?,
    })
}

/// Reads a small /proc file into `buf` (cleared first). Returns false when the file is gone.
pub fn read_into(path: &str, buf: &mut String) -> bool {
    buf.clear();
    match File::open(path) {
        Ok(mut f) => f.read_to_string(buf).is_ok(),
        Err(_) => false,
    }
}

/// Reads `/proc/<pid>/stat`; `None` when the process does not exist.
pub fn read_stat(pid: u32) -> Option<ProcStat> {
    let mut s = String::new();
    if !read_into(&format!("/proc/{pid}/stat"), &mut s) {
        return None;
    }
    parse_stat(&s)
}

/// `(resident, shared)` pages from `/proc/<pid>/statm`.
pub fn read_statm(pid: u32) -> Option<(u64, u64)> {
    let mut s = String::new();
    if !read_into(&format!("/proc/{pid}/statm"), &mut s) {
        return None;
    }
    parse_statm(&s)
}

/// Parses a statm line: `size resident shared text lib data dt` → `(resident, shared)`.
pub fn parse_statm(s: &str) -> Option<(u64, u64)> {
    let mut it = s.split_ascii_whitespace();
    let _size = it.next()?;
    let resident = it.next()?.parse().ok()?;
    let shared = it.next()?.parse().ok()?;
    Some((resident, shared))
}

/// Every numeric entry of `/proc`.
pub fn all_pids() -> Vec<u32> {
    let mut v = Vec::with_capacity(256);
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
                v.push(pid);
            }
        }
    }
    v
}

/// One scan of every process's stat line.
#[derive(Debug, Default)]
pub struct ProcTable {
    /// Stat lines by pid.
    pub procs: HashMap<u32, ProcStat>,
}

impl ProcTable {
    /// Scans `/proc` now.
    pub fn scan() -> ProcTable {
        let mut procs = HashMap::with_capacity(256);
        let mut buf = String::with_capacity(512);
        for pid in all_pids() {
            if read_into(&format!("/proc/{pid}/stat"), &mut buf) {
                if let Some(st) = parse_stat(&buf) {
                    procs.insert(pid, st);
                }
            }
        }
        ProcTable { procs }
    }

    /// `root` and all its descendants that are in the table (root first). Empty if root is gone.
    pub fn tree(&self, root: u32) -> Vec<u32> {
        if !self.procs.contains_key(&root) {
            return Vec::new();
        }
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for p in self.procs.values() {
            children.entry(p.ppid).or_default().push(p.pid);
        }
        let mut out = vec![root];
        let mut i = 0;
        while i < out.len() {
            if let Some(c) = children.get(&out[i]) {
                for &k in c {
                    if k != root && !out.contains(&k) {
                        out.push(k);
                    }
                }
            }
            i += 1;
        }
        out
    }

    /// Live (non-zombie) members of process group `pgid`.
    pub fn group_members(&self, pgid: u32) -> Vec<u32> {
        self.procs
            .values()
            .filter(|p| p.pgrp == pgid && !p.is_dead())
            .map(|p| p.pid)
            .collect()
    }
}

/// Live (non-zombie) members of process group `pgid`, from a fresh scan.
pub fn group_members(pgid: u32) -> Vec<u32> {
    ProcTable::scan().group_members(pgid)
}

/// True when `pid` exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    read_stat(pid).map(|s| !s.is_dead()).unwrap_or(false)
}

/// Memory of one process from `/proc/<pid>/smaps_rollup`, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SmapsMemory {
    /// `Rss`: resident, shared pages counted whole.
    pub rss: u64,
    /// `Private_Clean + Private_Dirty`: resident pages no other process maps — what source 003
    /// reported as a process's memory ("private memory at the end of the run").
    pub private: u64,
    /// `Pss`: resident, shared pages divided among their sharers.
    pub pss: u64,
}

impl SmapsMemory {
    /// Field-wise sum.
    pub fn add(&mut self, o: SmapsMemory) {
        self.rss += o.rss;
        self.private += o.private;
        self.pss += o.pss;
    }
}

/// Parses `smaps_rollup` (or a whole `smaps`, whose per-mapping fields are summed): `Rss`, `Pss`,
/// `Private_Clean`, `Private_Dirty` in kB. `None` when no `Rss` line is there.
pub fn parse_smaps(text: &str) -> Option<SmapsMemory> {
    let mut m = SmapsMemory::default();
    let mut seen = false;
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let kb = || -> Option<u64> {
            let mut it = rest.split_whitespace();
            let v = it.next()?.parse::<u64>().ok()?;
            (it.next() == Some("kB")).then_some(v * 1024)
        };
        match key {
            "Rss" => {
                if let Some(v) = kb() {
                    m.rss += v;
                    seen = true;
                }
            }
            "Pss" => m.pss += kb().unwrap_or(0),
            "Private_Clean" | "Private_Dirty" => m.private += kb().unwrap_or(0),
            _ => {}
        }
    }
    seen.then_some(m)
}

/// The summed smaps memory of `root` and its descendants now; `None` when the root is gone or no
/// process's `smaps_rollup` could be read (another user's process, a kernel without it).
pub fn smaps_of_tree(root: u32) -> Option<SmapsMemory> {
    let mut total = SmapsMemory::default();
    let mut any = false;
    let mut buf = String::with_capacity(2048);
    for pid in ProcTable::scan().tree(root) {
        if read_into(&format!("/proc/{pid}/smaps_rollup"), &mut buf) {
            if let Some(m) = parse_smaps(&buf) {
                total.add(m);
                any = true;
            }
        }
    }
    any.then_some(total)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
pub fn clk_tck() -> u64 {
    rustix::param::clock_ticks_per_second()
}

/// Memory page size in bytes.
pub fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_rollup_is_read_in_bytes() {
        let text = "00400000-7ffd1b3f1000 ---p 00000000 00:00 0                          [rollup]
Rss:              204800 kB
Pss:              150016 kB
Pss_Anon:         120000 kB
Shared_Clean:      51200 kB
Shared_Dirty:          0 kB
Private_Clean:      2048 kB
Private_Dirty:    151552 kB
Referenced:       204800 kB
Anonymous:        151552 kB
";
        let m = parse_smaps(text).unwrap();
        assert_eq!(m.rss, 200 * 1024 * 1024);
        assert_eq!(m.private, (2048 + 151552) * 1024);
        assert_eq!(m.pss, 150016 * 1024);
        assert_eq!(parse_smaps("nothing here\n"), None);
    }

    #[test]
    fn private_memory_of_this_process_grows_by_what_it_touches() {
        // truth: 96 MiB allocated and written page by page are private and resident
        let before = smaps_of_tree(std::process::id()).expect("smaps_rollup of this process");
        let mut v = vec![0u8; 96 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        let after = smaps_of_tree(std::process::id()).unwrap();
        std::hint::black_box(&v);
        let grew = after.private.saturating_sub(before.private);
        assert!(
            (90 << 20..=110 << 20).contains(&grew),
            "private grew by {} MiB",
            grew >> 20
        );
        assert!(after.rss >= after.private && after.pss >= after.private / 2);
    }

    #[test]
    fn parses_odd_comm() {
        let line = "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 7 3 1 2 20 0 1 0 5555 1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.pid, 1234);
        assert_eq!(s.comm, "a) b (c)");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.pgrp, 1234);
        assert_eq!((s.utime, s.stime), (7, 3));
        assert_eq!(s.starttime, 5555);
        assert_eq!(s.rss_pages, 250);
    }

    #[test]
    fn reads_own_process() {
        let me = std::process::id();
        let s = read_stat(me).unwrap();
        assert_eq!(s.pid, me);
        assert!(s.rss_pages > 0);
        let (res, _shared) = read_statm(me).unwrap();
        assert!(res > 0);
        assert!(is_alive(me));
        // burn a little CPU and check utime+stime moves
        let t0 = read_stat(me).unwrap().cpu_ticks();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(150) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(read_stat(me).unwrap().cpu_ticks() > t0);
    }

    #[test]
    fn finds_children_in_tree() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let t = ProcTable::scan();
        let tree = t.tree(std::process::id());
        assert!(tree.contains(&child.id()), "{tree:?}");
        assert_eq!(tree[0], std::process::id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!is_alive(child.id()));
    }

    #[test]
    fn statm_parse() {
        assert_eq!(parse_statm("100 20 5 1 0 30 0\n"), Some((20, 5)));
        assert_eq!(parse_statm("100"), None);
    }
}
