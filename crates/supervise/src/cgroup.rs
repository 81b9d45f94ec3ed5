//! CPU, memory and cpuset limits through cgroups — v2 where the controller is delegated to us,
//! v1 where that is what the machine has — behind one interface.
//!
//! Groups are created *below the cgroup this process already runs in* (in every hierarchy), named
//! `ceiling-<our pid>-<seq>-<name>`, so they stay inside whatever limits the machine put on us. A process
//! joins its group from inside the child before `exec` (see [`Cgroup::procs_files`]), so nothing it
//! forks escapes. Whatever cannot be applied is reported in a [`LimitsApplied`], never dropped.

pub use ceiling_metrics::{Limits, LimitsApplied, Role};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// cgroup hierarchy version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CgroupVersion {
    /// Legacy per-controller hierarchies.
    V1,
    /// The unified hierarchy.
    V2,
}

/// What this machine offers, seen from this process.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CgroupSystem {
    /// The v2 hierarchy: our own cgroup directory in it.
    pub v2_own: Option<PathBuf>,
    /// Controllers listed in our v2 cgroup's `cgroup.controllers`.
    pub v2_controllers: Vec<String>,
    /// v1 hierarchies: controller → our own cgroup directory in the hierarchy that has it.
    pub v1_own: BTreeMap<String, PathBuf>,
}

/// A parsed `/proc/self/mountinfo` cgroup line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CgMount {
    pub root: String,
    pub mountpoint: PathBuf,
    pub v2: bool,
    pub controllers: Vec<String>,
}

/// Parses mountinfo text into cgroup mounts.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<CgMount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split(' ').collect();
        let post: Vec<&str> = post.split(' ').collect();
        if pre.len() < 5 || post.len() < 3 {
            continue;
        }
        let fstype = post[0];
        let v2 = match fstype {
            "cgroup2" => true,
            "cgroup" => false,
            _ => continue,
        };
        let controllers = if v2 {
            Vec::new()
        } else {
            post[2]
                .split(',')
                .filter(|o| {
                    !matches!(*o, "rw" | "ro") && !o.starts_with("name=") && !o.contains('=')
                })
                .filter(|o| KNOWN_V1.contains(o))
                .map(|o| o.to_string())
                .collect()
        };
        out.push(CgMount {
            root: unescape(pre[3]),
            mountpoint: PathBuf::from(unescape(pre[4])),
            v2,
            controllers,
        });
    }
    out
}

const KNOWN_V1: &[&str] = &[
    "cpu",
    "cpuacct",
    "cpuset",
    "memory",
    "devices",
    "freezer",
    "blkio",
    "pids",
    "net_cls",
    "net_prio",
    "perf_event",
    "hugetlb",
    "rdma",
    "misc",
];

fn unescape(s: &str) -> String {
    // mountinfo escapes space, tab, newline and backslash as \ooo
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            if let Ok(v) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("x"), 8)
            {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses `/proc/<pid>/cgroup`: `(hierarchy controllers, path)`; v2 has an empty controller list.
pub(crate) fn parse_proc_cgroup(text: &str) -> Vec<(Vec<String>, String)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            let _id = it.next()?;
            let ctl = it.next()?;
            let path = it.next()?;
            let ctls = ctl
                .split(',')
                .filter(|c| !c.is_empty())
                .map(|c| c.to_string())
                .collect();
            Some((ctls, path.to_string()))
        })
        .collect()
}

/// `mountpoint` + (`path` relative to the mount's `root`).
pub(crate) fn own_dir(m: &CgMount, path: &str) -> PathBuf {
    let rel = if m.root != "/" && path.starts_with(&m.root) {
        &path[m.root.len()..]
    } else {
        path
    };
    let rel = rel.trim_start_matches('/');
    if rel.is_empty() {
        m.mountpoint.clone()
    } else {
        m.mountpoint.join(rel)
    }
}

impl CgroupSystem {
    /// Detects the hierarchies and our place in them from `/proc/self/mountinfo` and
    /// `/proc/self/cgroup`.
    pub fn detect() -> CgroupSystem {
        let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let pc = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        Self::from_texts(&mi, &pc, |p| std::fs::read_to_string(p).ok())
    }

    pub(crate) fn from_texts(
        mountinfo: &str,
        proc_cgroup: &str,
        read: impl Fn(&Path) -> Option<String>,
    ) -> CgroupSystem {
        let mounts = parse_mountinfo(mountinfo);
        let mine = parse_proc_cgroup(proc_cgroup);
        let mut sys = CgroupSystem::default();
        for m in &mounts {
            if m.v2 {
                if sys.v2_own.is_some() {
                    continue;
                }
                if let Some((_, path)) = mine.iter().find(|(c, _)| c.is_empty()) {
                    let dir = own_dir(m, path);
                    sys.v2_controllers = read(&dir.join("cgroup.controllers"))
                        .map(|s| s.split_whitespace().map(|x| x.to_string()).collect())
                        .unwrap_or_default();
                    sys.v2_own = Some(dir);
                }
            } else {
                for c in &m.controllers {
                    if sys.v1_own.contains_key(c) {
                        continue;
                    }
                    if let Some((_, path)) = mine.iter().find(|(cs, _)| cs.contains(c)) {
                        sys.v1_own.insert(c.clone(), own_dir(m, path));
                    }
                }
            }
        }
        sys
    }

    /// `v2` / `v1` / `hybrid` / `none`, as the fingerprint records it.
    pub fn mode(&self) -> &'static str {
        let v1 = ["cpu", "memory", "cpuset"]
            .iter()
            .any(|c| self.v1_own.contains_key(*c));
        match (self.v2_own.is_some(), v1) {
            (true, true) => "hybrid",
            (true, false) => "v2",
            (false, true) => "v1",
            (false, false) => "none",
        }
    }

    /// A human description: which hierarchies are mounted and which controllers each offers.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(d) = &self.v2_own {
            parts.push(format!(
                "v2 at {} with controllers [{}]",
                d.display(),
                self.v2_controllers.join(", ")
            ));
        }
        if !self.v1_own.is_empty() {
            parts.push(format!(
                "v1 controllers [{}]",
                self.v1_own.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        if parts.is_empty() {
            "no cgroup hierarchy mounted".into()
        } else {
            parts.join("; ")
        }
    }

    /// Creates a group `ceiling-<pid>-<seq>-<name>` with `limits` (plus CPU accounting, even when no
    /// limit is requested) and reports what was applied. Returns `None` for the group when nothing
    /// could be created at all.
    pub fn create(
        &self,
        who: Role,
        name: &str,
        limits: &Limits,
    ) -> (Option<Cgroup>, LimitsApplied) {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let gname = format!("ceiling-{}-{n}-{}", std::process::id(), sanitize(name));
        let mut la = LimitsApplied::new(who, limits);
        let mut cg = Cgroup {
            name: gname.clone(),
            dirs: Vec::new(),
            restore: BTreeMap::new(),
            reg: None,
        };

        // Which controllers are needed, and where each one lives.
        let mut wanted: Vec<&str> = Vec::new();
        if limits.cpus.is_some() {
            wanted.push("cpu");
        }
        if limits.memory_mb.is_some() {
            wanted.push("memory");
        }
        if limits.cpuset.is_some() {
            wanted.push("cpuset");
        }
        let mut v2_ctls: Vec<&str> = Vec::new();
        let mut v1_ctls: Vec<&str> = Vec::new();
        for c in &wanted {
            if self.v2_controllers.iter().any(|x| x == c) && self.v2_own.is_some() {
                match self.enable_v2(c) {
                    Ok(()) => {
                        v2_ctls.push(c);
                        continue;
                    }
                    Err(e) if self.v1_own.contains_key(*c) => {
                        la.notes.push(format!(
                            "v2 controller {c} could not be enabled ({e}); using v1"
                        ));
                    }
                    Err(e) => {
                        let hint = if e.raw_os_error() == Some(libc::EBUSY) {
                            " (this process's own cgroup holds processes, so it cannot delegate controllers; \
                             run ceiling inside a delegated cgroup, e.g. `systemd-run --scope -p Delegate=yes ceiling ...`)"
                        } else {
                            ""
                        };
                        la.problems.push(format!(
                            "{}: cgroup v2 controller `{c}` could not be enabled: {e}{hint}",
                            field_of(c)
                        ));
                        continue;
                    }
                }
            }
            if self.v1_own.contains_key(*c) {
                v1_ctls.push(c);
            } else {
                la.problems.push(format!(
                    "{}: no usable `{c}` cgroup controller ({})",
                    field_of(c),
                    self.describe()
                ));
            }
        }
        // Accounting: v2 cpu.stat exists in every v2 group; on v1 use cpuacct.
        let v2_dir_wanted = self.v2_own.is_some();
        if !v2_dir_wanted && self.v1_own.contains_key("cpuacct") && !v1_ctls.contains(&"cpuacct") {
            v1_ctls.push("cpuacct");
        }

        if v2_dir_wanted {
            let dir = self.v2_own.as_ref().unwrap().join(&gname);
            match mkdir(&dir) {
                Ok(()) => {
                    cg.restore.insert(dir.clone(), self.v2_own.clone().unwrap());
                    cg.dirs.push(CgDir {
                        version: CgroupVersion::V2,
                        controllers: v2_ctls.iter().map(|s| s.to_string()).collect(),
                        path: dir,
                    });
                }
                Err(e) => {
                    for c in &v2_ctls {
                        la.problems.push(format!(
                            "{}: could not create v2 group {}: {e}",
                            field_of(c),
                            dir.display()
                        ));
                    }
                    v2_ctls.clear();
                }
            }
        }
        // v1: one directory per hierarchy (controllers mounted together share it).
        let mut v1_dirs: BTreeMap<PathBuf, (PathBuf, Vec<String>)> = BTreeMap::new();
        for c in &v1_ctls {
            let own = &self.v1_own[*c];
            let dir = own.join(&gname);
            v1_dirs
                .entry(dir)
                .or_insert_with(|| (own.clone(), Vec::new()))
                .1
                .push(c.to_string());
        }
        for (dir, (own, ctls)) in v1_dirs {
            match mkdir(&dir) {
                Ok(()) => {
                    cg.restore.insert(dir.clone(), own);
                    cg.dirs.push(CgDir {
                        version: CgroupVersion::V1,
                        controllers: ctls,
                        path: dir,
                    });
                }
                Err(e) => {
                    for c in &ctls {
                        if c != "cpuacct" {
                            la.problems.push(format!(
                                "{}: could not create v1 group {}: {e}",
                                field_of(c),
                                dir.display()
                            ));
                        }
                    }
                }
            }
        }

        // Write the limits.
        let mut used: Vec<String> = Vec::new();
        for d in &cg.dirs {
            for c in &d.controllers {
                let r = match (c.as_str(), d.version) {
                    ("cpu", v) => write_cpu(&d.path, v, limits.cpus.unwrap_or(0.0))
                        .map(|_| la.cpus = limits.cpus),
                    ("memory", v) => write_memory(&d.path, v, limits.memory_mb.unwrap_or(0))
                        .map(|_| la.memory_mb = limits.memory_mb),
                    ("cpuset", v) => {
                        let own = cg.restore.get(&d.path).cloned().unwrap_or_default();
                        write_cpuset(&d.path, &own, v, limits.cpuset.as_deref().unwrap_or(""))
                            .map(|_| la.cpuset = limits.cpuset.clone())
                    }
                    _ => Ok(()),
                };
                match r {
                    Ok(()) => used.push(format!(
                        "{}:{c}",
                        if d.version == CgroupVersion::V1 {
                            "v1"
                        } else {
                            "v2"
                        }
                    )),
                    Err(e) => la.problems.push(format!(
                        "{}: writing the limit in {} failed: {e}",
                        field_of(c),
                        d.path.display()
                    )),
                }
            }
        }
        la.groups = cg
            .dirs
            .iter()
            .map(|d| d.path.display().to_string())
            .collect();
        let v1: Vec<&str> = used.iter().filter_map(|u| u.strip_prefix("v1:")).collect();
        let v2: Vec<&str> = used.iter().filter_map(|u| u.strip_prefix("v2:")).collect();
        let mut mech = Vec::new();
        if !v2.is_empty() {
            mech.push(format!("cgroup v2 ({})", v2.join(", ")));
        }
        if !v1.is_empty() {
            mech.push(format!("cgroup v1 ({})", v1.join(", ")));
        }
        la.mechanism = if mech.is_empty() {
            "none".into()
        } else {
            mech.join(" + ")
        };
        if cg.dirs.is_empty() {
            (None, la)
        } else {
            cg.reg = Some(crate::process::registry_add(crate::process::Entry::Cgroup(
                cg.dirs.iter().map(|d| d.path.clone()).collect(),
            )));
            (Some(cg), la)
        }
    }

    fn enable_v2(&self, c: &str) -> std::io::Result<()> {
        let own = self
            .v2_own
            .as_ref()
            .ok_or_else(|| std::io::Error::other("no v2 hierarchy"))?;
        let sc = own.join("cgroup.subtree_control");
        let cur = std::fs::read_to_string(&sc).unwrap_or_default();
        if cur.split_whitespace().any(|x| x == c) {
            return Ok(());
        }
        std::fs::write(&sc, format!("+{c}"))
    }
}

fn field_of(c: &str) -> &'static str {
    match c {
        "cpu" => "cpus",
        "memory" => "memory_mb",
        "cpuset" => "cpuset",
        _ => "accounting",
    }
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn mkdir(p: &Path) -> std::io::Result<()> {
    match std::fs::create_dir(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// `(quota_us, period_us)` for a CPU count: period 100 ms, quota = cpus × period (min 1 ms).
pub fn cpu_quota(cpus: f64) -> (u64, u64) {
    let period = 100_000u64;
    let quota = ((cpus * period as f64).round() as u64).max(1000);
    (quota, period)
}

fn write_cpu(dir: &Path, v: CgroupVersion, cpus: f64) -> std::io::Result<()> {
    let (q, p) = cpu_quota(cpus);
    match v {
        CgroupVersion::V2 => std::fs::write(dir.join("cpu.max"), format!("{q} {p}")),
        CgroupVersion::V1 => {
            std::fs::write(dir.join("cpu.cfs_period_us"), p.to_string())?;
            std::fs::write(dir.join("cpu.cfs_quota_us"), q.to_string())
        }
    }
}

fn write_memory(dir: &Path, v: CgroupVersion, mb: u64) -> std::io::Result<()> {
    let bytes = mb * 1024 * 1024;
    match v {
        CgroupVersion::V2 => {
            std::fs::write(dir.join("memory.max"), bytes.to_string())?;
            // like docker without memswap_limit on a swapless host: no swap beyond the limit
            let _ = std::fs::write(dir.join("memory.swap.max"), "0");
            Ok(())
        }
        CgroupVersion::V1 => {
            std::fs::write(dir.join("memory.limit_in_bytes"), bytes.to_string())?;
            let msw = dir.join("memory.memsw.limit_in_bytes");
            if msw.exists() {
                let _ = std::fs::write(msw, bytes.to_string());
            }
            Ok(())
        }
    }
}

fn write_cpuset(dir: &Path, own: &Path, v: CgroupVersion, cpus: &str) -> std::io::Result<()> {
    parse_cpu_list(cpus)
        .ok_or_else(|| std::io::Error::other(format!("`{cpus}` is not a cpu list like 0-1,3")))?;
    match v {
        CgroupVersion::V2 => {
            std::fs::write(dir.join("cpuset.cpus"), cpus)?;
            Ok(())
        }
        CgroupVersion::V1 => {
            // v1 groups start with empty cpus and mems; both must be set before a task can join.
            let mems =
                std::fs::read_to_string(own.join("cpuset.mems")).unwrap_or_else(|_| "0".into());
            std::fs::write(dir.join("cpuset.mems"), mems.trim())?;
            std::fs::write(dir.join("cpuset.cpus"), cpus)
        }
    }
}

/// Parses a cpu list (`0-2,5`) into cpu numbers; `None` when malformed.
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            return None;
        }
        if let Some((a, b)) = part.split_once('-') {
            let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            if a > b {
                return None;
            }
            out.extend(a..=b);
        } else {
            out.push(part.parse().ok()?);
        }
    }
    Some(out)
}

/// One directory of a group (one per hierarchy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgDir {
    /// v1 or v2.
    pub version: CgroupVersion,
    /// Controllers configured in it (empty for a v2 accounting-only group).
    pub controllers: Vec<String>,
    /// The directory.
    pub path: PathBuf,
}

/// A created group (possibly spanning several v1 hierarchies). Removed on [`Cgroup::remove`] or
/// drop: remaining tasks are killed (except this process, which is moved back), then the
/// directories are deleted.
#[derive(Debug)]
pub struct Cgroup {
    name: String,
    dirs: Vec<CgDir>,
    /// group dir → the directory this process came from (to move ourselves back).
    restore: BTreeMap<PathBuf, PathBuf>,
    /// Registry entry (for cleanup_all / sweep_stale).
    reg: Option<u64>,
}

impl Cgroup {
    /// The group's name (`ceiling-<pid>-<seq>-<name>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The group's directories.
    pub fn dirs(&self) -> &[CgDir] {
        &self.dirs
    }

    /// `cgroup.procs` paths as C strings, prepared before `fork` so a child can join every
    /// hierarchy from `pre_exec` by writing `0` (async-signal-safe: only open/write/close).
    pub fn procs_files(&self) -> Vec<CString> {
        self.dirs
            .iter()
            .filter_map(|d| {
                CString::new(
                    d.path
                        .join("cgroup.procs")
                        .as_os_str()
                        .as_encoded_bytes()
                        .to_vec(),
                )
                .ok()
            })
            .collect()
    }

    /// Moves an existing process (all its threads) into the group.
    pub fn add_pid(&self, pid: u32) -> std::io::Result<()> {
        for d in &self.dirs {
            std::fs::write(d.path.join("cgroup.procs"), pid.to_string())?;
        }
        Ok(())
    }

    /// Pids currently in the group (union over its hierarchies).
    pub fn pids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = Vec::new();
        for d in &self.dirs {
            if let Ok(s) = std::fs::read_to_string(d.path.join("cgroup.procs")) {
                for p in s.lines().filter_map(|l| l.trim().parse().ok()) {
                    if !v.contains(&p) {
                        v.push(p);
                    }
                }
            }
        }
        v
    }

    /// Memory charged to the group (v2 `memory.current`, v1 `memory.usage_in_bytes`), when a
    /// memory controller is attached.
    pub fn memory_bytes(&self) -> Option<u64> {
        let d = self
            .dirs
            .iter()
            .find(|d| d.controllers.iter().any(|c| c == "memory"))?;
        let f = match d.version {
            CgroupVersion::V2 => "memory.current",
            CgroupVersion::V1 => "memory.usage_in_bytes",
        };
        read_u64(&d.path.join(f))
    }

    /// CPU time used by everything that ever ran in the group (including exited processes), in
    /// microseconds: v2 `cpu.stat usage_usec` or v1 `cpuacct.usage`.
    pub fn cpu_usage_us(&self) -> Option<u64> {
        for d in &self.dirs {
            match d.version {
                CgroupVersion::V2 => {
                    if let Ok(s) = std::fs::read_to_string(d.path.join("cpu.stat")) {
                        if let Some(v) = s.lines().find_map(|l| l.strip_prefix("usage_usec ")) {
                            return v.trim().parse().ok();
                        }
                    }
                }
                CgroupVersion::V1 => {
                    if let Some(ns) = read_u64(&d.path.join("cpuacct.usage")) {
                        return Some(ns / 1000);
                    }
                }
            }
        }
        None
    }

    /// Number of OOM kills inside the group so far (v2 `memory.events`, v1 `memory.oom_control`).
    pub fn oom_kills(&self) -> Option<u64> {
        let d = self
            .dirs
            .iter()
            .find(|d| d.controllers.iter().any(|c| c == "memory"))?;
        let f = match d.version {
            CgroupVersion::V2 => "memory.events",
            CgroupVersion::V1 => "memory.oom_control",
        };
        let s = std::fs::read_to_string(d.path.join(f)).ok()?;
        s.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|v| v.trim().parse().ok())
    }

    /// Kills every task left in the group (moving this process back out instead), waits until
    /// the group is empty (up to 5 s), and removes its directories. Idempotent. Returns the
    /// directories that could not be removed.
    pub fn remove(&mut self) -> Vec<String> {
        let me = std::process::id();
        let dirs = std::mem::take(&mut self.dirs);
        if dirs.is_empty() {
            return Vec::new();
        }
        for d in &dirs {
            if let Some(own) = self.restore.get(&d.path) {
                if read_pids(&d.path).contains(&me) {
                    let _ = std::fs::write(own.join("cgroup.procs"), me.to_string());
                }
            }
        }
        let failed = kill_dirs(
            &dirs.iter().map(|d| d.path.clone()).collect::<Vec<_>>(),
            Duration::from_secs(5),
        );
        if let Some(r) = self.reg.take() {
            crate::process::registry_remove(r);
        }
        failed
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

fn read_pids(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// SIGKILLs every task in the directories (never this process), waits until they are empty,
/// removes them. Returns directories that could not be removed, with the reason.
pub(crate) fn kill_dirs(dirs: &[PathBuf], wait: Duration) -> Vec<String> {
    let me = std::process::id();
    for d in dirs {
        if read_pids(d).contains(&me) {
            if let Some(parent) = d.parent() {
                let _ = std::fs::write(parent.join("cgroup.procs"), me.to_string());
            }
        }
    }
    let deadline = Instant::now() + wait;
    loop {
        let mut any = false;
        for d in dirs {
            for p in read_pids(d) {
                if p != me {
                    any = true;
                    // a pid read from our own cgroup
                    crate::sys::kill(p, libc::SIGKILL);
                }
            }
        }
        if !any || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut failed = Vec::new();
    for d in dirs {
        let mut last = None;
        for _ in 0..50 {
            match std::fs::remove_dir(d) {
                Ok(()) => {
                    last = None;
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    last = None;
                    break;
                }
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(e) = last {
            failed.push(format!("{}: {e}", d.display()));
        }
    }
    failed
}

fn read_u64(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MI: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const PC: &str = "\
9:name=systemd:/
4:memory:/process_api/abc
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
";

    #[test]
    fn detects_hybrid_layout() {
        let sys = CgroupSystem::from_texts(MI, PC, |p| {
            assert_eq!(p, Path::new("/sys/fs/cgroup/unified/cgroup.controllers"));
            Some("\n".into())
        });
        assert_eq!(
            sys.v2_own.as_deref(),
            Some(Path::new("/sys/fs/cgroup/unified"))
        );
        assert!(sys.v2_controllers.is_empty());
        assert_eq!(
            sys.v1_own["memory"],
            PathBuf::from("/sys/fs/cgroup/memory/process_api/abc")
        );
        assert_eq!(sys.v1_own["cpu"], PathBuf::from("/sys/fs/cgroup/cpu"));
        assert!(!sys.v1_own.contains_key("name=systemd"));
        assert_eq!(sys.mode(), "hybrid");
    }

    #[test]
    fn detects_pure_v2_with_nested_root() {
        let mi = "30 1 0:26 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        let pc = "0::/user.slice/session-1.scope\n";
        let sys = CgroupSystem::from_texts(mi, pc, |_| Some("cpuset cpu io memory pids\n".into()));
        assert_eq!(
            sys.v2_own.as_deref(),
            Some(Path::new("/sys/fs/cgroup/session-1.scope"))
        );
        assert_eq!(
            sys.v2_controllers,
            vec!["cpuset", "cpu", "io", "memory", "pids"]
        );
        assert_eq!(sys.mode(), "v2");
    }

    #[test]
    fn combined_v1_mount() {
        let mi = "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        let pc = "1:cpu,cpuacct:/x\n";
        let sys = CgroupSystem::from_texts(mi, pc, |_| None);
        assert_eq!(
            sys.v1_own["cpu"],
            PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/x")
        );
        assert_eq!(
            sys.v1_own["cpuacct"],
            PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/x")
        );
        assert_eq!(sys.mode(), "v1");
    }

    #[test]
    fn quota_and_cpu_lists() {
        assert_eq!(cpu_quota(2.0), (200_000, 100_000));
        assert_eq!(cpu_quota(0.5), (50_000, 100_000));
        assert_eq!(cpu_quota(0.001), (1000, 100_000));
        assert_eq!(parse_cpu_list("0-2,5"), Some(vec![0, 1, 2, 5]));
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list("2-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
        assert_eq!(parse_cpu_list(""), None);
    }

    #[test]
    fn not_applied_lists_each_limit() {
        let l = Limits {
            cpus: Some(2.0),
            memory_mb: Some(512),
            cpuset: None,
        };
        let la = LimitsApplied::not_applied(Role::Stack, &l, "no cgroups");
        assert_eq!(la.problems.len(), 2);
        assert!(!la.fully_applied());
        assert!(la.summary().contains("NOT APPLIED"), "{}", la.summary());
    }

    #[test]
    fn unescapes_mountinfo_paths() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }
}
