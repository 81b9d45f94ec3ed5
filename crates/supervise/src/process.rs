//! Starting and stopping child processes the stand owns, and the registry that lets
//! [`cleanup_all`] (Ctrl-C) and [`sweep_stale`] (after a killed run) find them again.
//!
//! Every child gets its own process group (pgid = its pid), so stopping signals exactly the group
//! we created — never anything found by name. The registry is mirrored into a small JSON state
//! file, so a later run can clean up after one that was SIGKILLed; entries are matched by pid
//! *and* start time, so a reused pid is never signalled.

use crate::cgroup;
use crate::error::{IoContext, Result};
use crate::procfs::{self, ProcTable};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How to start a child.
#[derive(Debug, Clone, Default)]
pub struct SpawnSpec {
    /// What it is, for messages (`postgres`, `stack go-pgx`).
    pub label: String,
    /// The executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Working directory; the parent's when `None`.
    pub cwd: Option<PathBuf>,
    /// Environment variables set for it.
    pub env: Vec<(String, String)>,
    /// Environment variables removed for it.
    pub env_remove: Vec<String>,
    /// Where its stdout and stderr go (appended).
    pub log: PathBuf,
    /// `cgroup.procs` files the child writes itself into before `exec`, so nothing it forks
    /// escapes its group.
    pub cgroup_procs: Vec<CString>,
    /// CPUs the child is pinned to with `sched_setaffinity` before `exec` (inherited by all it
    /// starts), where a cpuset could not be applied through cgroups; empty = not pinned.
    pub affinity: Vec<u32>,
    /// `(uid, gid)` to run as (PostgreSQL refuses to run as root).
    pub user: Option<(u32, u32)>,
    /// Signal for a graceful stop and whether it goes to the whole group (stacks: SIGTERM to the
    /// group) or only the leader (postgres: SIGINT = fast shutdown to the postmaster).
    pub term_signal: i32,
    /// Whether `term_signal` goes to the whole process group.
    pub term_group: bool,
}

/// A child process in its own process group, registered for cleanup.
#[derive(Debug)]
pub struct Managed {
    child: Child,
    /// Its pid (also its process group id).
    pub pid: u32,
    /// Its start time in clock ticks since boot (`/proc/PID/stat`), so a reused pid is told
    /// apart from it.
    pub starttime: u64,
    /// Its log file.
    pub log: PathBuf,
    term_signal: i32,
    term_group: bool,
    exit: Option<ExitStatus>,
    reg: Option<u64>,
    stopped: bool,
}

impl Managed {
    /// Starts the child in its own process group and registers it for cleanup.
    pub fn spawn(spec: &SpawnSpec) -> Result<Managed> {
        if let Some(parent) = spec.log.parent() {
            std::fs::create_dir_all(parent)
                .ctx(|| format!("creating log directory {}", parent.display()))?;
        }
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.log)
            .ctx(|| format!("opening log {}", spec.log.display()))?;
        let log2 = log.try_clone().ctx(|| "duplicating log handle".into())?;
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2));
        if let Some(d) = &spec.cwd {
            cmd.current_dir(d);
        }
        for k in &spec.env_remove {
            cmd.env_remove(k);
        }
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
        cmd.process_group(0);
        let files = spec.cgroup_procs.clone();
        let user = spec.user;
        // The CPU mask is built before fork: the child only makes the system call.
        let affinity = crate::sys::cpu_mask(&spec.affinity);
        if !files.is_empty() || user.is_some() || affinity.is_some() {
            // SAFETY: the closure only calls async-signal-safe functions (open, write, close,
            // sched_setaffinity, setgroups, setgid, setuid) on C strings and a CPU mask made
            // before fork. It joins the cgroups first (writing to cgroup.procs needs root) and
            // drops privileges afterwards.
            unsafe {
                cmd.pre_exec(move || {
                    for f in &files {
                        let fd = libc::open(f.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                        if fd < 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        let r = libc::write(fd, b"0".as_ptr() as *const libc::c_void, 1);
                        let err = std::io::Error::last_os_error();
                        libc::close(fd);
                        if r != 1 {
                            return Err(err);
                        }
                    }
                    if let Some(mask) = &affinity {
                        rustix::thread::sched_setaffinity(None, mask)?;
                    }
                    if let Some((uid, gid)) = user {
                        if libc::setgroups(0, std::ptr::null()) != 0
                            || libc::setgid(gid) != 0
                            || libc::setuid(uid) != 0
                        {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
        }
        let child = cmd
            .spawn()
            .ctx(|| format!("starting {} ({})", spec.label, spec.program.display()))?;
        let pid = child.id();
        let starttime = procfs::read_stat(pid).map(|s| s.starttime).unwrap_or(0);
        let reg = registry_add(Entry::Process(ProcEntry {
            label: spec.label.clone(),
            pgid: pid,
            leader: pid,
            starttime,
            term_signal: spec.term_signal,
            term_group: spec.term_group,
        }));
        Ok(Managed {
            child,
            pid,
            starttime,
            log: spec.log.clone(),
            term_signal: spec.term_signal,
            term_group: spec.term_group,
            exit: None,
            reg: Some(reg),
            stopped: false,
        })
    }

    /// The leader's exit status once it exited (reaps it).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            if let Ok(Some(st)) = self.child.try_wait() {
                self.exit = Some(st);
            }
        }
        self.exit
    }

    /// True while the child has not exited (reaps it when it has).
    pub fn is_alive(&mut self) -> bool {
        self.try_wait().is_none()
    }

    /// Waits for the child to exit, but gives up when the run is cancelled (Ctrl-C, see
    /// [`crate::cancelled`]): the group is stopped (graceful signal, SIGKILL after `grace`) and
    /// `None` returned. Polls every 20 ms, so a cancel takes effect at once.
    pub fn wait_or_cancel(&mut self, grace: Duration) -> Option<ExitStatus> {
        loop {
            if let Some(st) = self.try_wait() {
                self.stop(Duration::from_secs(5));
                return Some(st);
            }
            if crate::interrupt::cancelled() {
                self.stop(grace);
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Graceful stop, then SIGKILL after `grace`. Idempotent.
    pub fn stop(&mut self, grace: Duration) -> StopReport {
        if self.stopped {
            return StopReport {
                already_stopped: true,
                ..Default::default()
            };
        }
        self.stopped = true;
        let pre_exit = self.try_wait();
        let p = ProcEntry {
            label: String::new(),
            pgid: self.pid,
            leader: self.pid,
            starttime: self.starttime,
            term_signal: self.term_signal,
            term_group: self.term_group,
        };
        let mut rep = stop_entry(&p, grace, &mut || {
            self.try_wait();
        });
        rep.exit_status = self.exit.or(pre_exit).map(describe_status);
        if self.exit.is_none() {
            // the leader was killed; reap it
            if let Ok(st) = self.child.wait() {
                self.exit = Some(st);
                rep.exit_status = Some(describe_status(st));
            }
        }
        if let Some(r) = self.reg.take() {
            registry_remove(r);
        }
        rep
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}

/// What stopping a process tree took.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StopReport {
    /// The process had already been stopped by an earlier call.
    pub already_stopped: bool,
    /// The graceful signal was not enough: SIGKILL was sent.
    pub killed: bool,
    /// Time from the first signal until everything was gone.
    pub took_ms: u64,
    /// The leader's exit status (`exit 0`, `signal 15`…).
    pub exit_status: Option<String>,
    /// Processes still alive afterwards (should be empty).
    pub leftover: Vec<u32>,
}

/// `exit N` or `signal N`.
pub fn describe_status(st: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown".into(),
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct ProcEntry {
    label: String,
    pgid: u32,
    leader: u32,
    starttime: u64,
    term_signal: i32,
    term_group: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) enum Entry {
    Process(ProcEntry),
    Cgroup(Vec<PathBuf>),
}

/// Processes that are ours for entry `p`: members of its process group (started no earlier than
/// the leader) plus descendants of the leader (with matching start time) that left the group.
fn entry_members(p: &ProcEntry, t: &ProcTable) -> Vec<u32> {
    let leader_ok = match t.procs.get(&p.leader) {
        Some(l) => l.starttime == p.starttime || p.starttime == 0,
        None => true,
    };
    if !leader_ok {
        // the pid now belongs to someone else: the group we created is long gone
        return Vec::new();
    }
    let mut v: Vec<u32> = t
        .procs
        .values()
        .filter(|s| s.pgrp == p.pgid && !s.is_dead() && s.starttime >= p.starttime)
        .map(|s| s.pid)
        .collect();
    if t.procs
        .get(&p.leader)
        .map(|l| l.starttime == p.starttime)
        .unwrap_or(false)
    {
        for d in t.tree(p.leader) {
            if !v.contains(&d) && t.procs.get(&d).map(|s| !s.is_dead()).unwrap_or(false) {
                v.push(d);
            }
        }
    }
    v
}

fn signal(pid: u32, sig: i32) {
    // pids come from groups/trees we created
    crate::sys::kill(pid, sig);
}

/// Stops one registered process tree: graceful signal, wait `grace`, SIGKILL, wait 3 s.
/// `poll` runs while waiting (the owner reaps its child there).
fn stop_entry(p: &ProcEntry, grace: Duration, poll: &mut dyn FnMut()) -> StopReport {
    let start = Instant::now();
    let mut rep = StopReport::default();
    let t = ProcTable::scan();
    let mut members = entry_members(p, &t);
    if members.is_empty() {
        poll();
        return rep;
    }
    if p.term_group {
        crate::sys::kill_group(p.pgid, p.term_signal);
        for &m in &members {
            if t.procs.get(&m).map(|s| s.pgrp != p.pgid).unwrap_or(false) {
                signal(m, p.term_signal);
            }
        }
    } else {
        signal(p.leader, p.term_signal);
    }
    let deadline = start + grace;
    while Instant::now() < deadline {
        poll();
        std::thread::sleep(Duration::from_millis(20));
        members = entry_members(p, &ProcTable::scan());
        if members.is_empty() {
            break;
        }
    }
    if !members.is_empty() {
        rep.killed = true;
        crate::sys::kill_group(p.pgid, libc::SIGKILL);
        for &m in &members {
            signal(m, libc::SIGKILL);
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            poll();
            std::thread::sleep(Duration::from_millis(20));
            members = entry_members(p, &ProcTable::scan());
            if members.is_empty() {
                break;
            }
        }
    }
    poll();
    rep.leftover = members;
    rep.took_ms = start.elapsed().as_millis() as u64;
    rep
}

// ---------------------------------------------------------------- registry

struct Registry {
    next: u64,
    entries: BTreeMap<u64, Entry>,
    state_dir: Option<PathBuf>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 1,
    entries: BTreeMap::new(),
    state_dir: None,
});

#[derive(Serialize, Deserialize)]
struct StateFile {
    owner_pid: u32,
    owner_starttime: u64,
    entries: Vec<Entry>,
}

fn lock() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn persist(r: &Registry) {
    let Some(dir) = &r.state_dir else { return };
    let me = std::process::id();
    let path = dir.join(format!("ceiling-{me}.json"));
    if r.entries.is_empty() {
        let _ = std::fs::remove_file(&path);
        return;
    }
    let sf = StateFile {
        owner_pid: me,
        owner_starttime: procfs::read_stat(me).map(|s| s.starttime).unwrap_or(0),
        entries: r.entries.values().cloned().collect(),
    };
    if std::fs::create_dir_all(dir).is_ok() {
        let tmp = dir.join(format!(".ceiling-{me}.json.tmp"));
        if std::fs::write(&tmp, serde_json::to_vec_pretty(&sf).unwrap_or_default()).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
}

pub(crate) fn registry_add(e: Entry) -> u64 {
    let mut r = lock();
    let id = r.next;
    r.next += 1;
    r.entries.insert(id, e);
    persist(&r);
    id
}

pub(crate) fn registry_remove(id: u64) {
    let mut r = lock();
    if r.entries.remove(&id).is_some() {
        persist(&r);
    }
}

/// Sets the directory where the registry of started processes and cgroups is mirrored
/// (`<dir>/ceiling-<pid>.json`), so [`sweep_stale`] can clean up after a run that was killed.
/// The CLI calls this once at start-up (e.g. with `.ceiling/run`).
pub fn set_state_dir(dir: &Path) {
    let mut r = lock();
    r.state_dir = Some(dir.to_path_buf());
    persist(&r);
}

/// Stops every process and removes every cgroup the stand started in this process that is still
/// registered: graceful signal (SIGTERM for stacks, fast shutdown for PostgreSQL), SIGKILL after
/// `grace`. Safe to call from a Ctrl-C handler thread and more than once; owners' later `stop()`
/// and `Drop` become no-ops. Returns one line per thing it had to stop.
pub fn cleanup_all(grace: Duration) -> Vec<String> {
    let entries: Vec<(u64, Entry)> = {
        let r = lock();
        r.entries.iter().map(|(k, v)| (*k, v.clone())).collect()
    };
    let mut out = Vec::new();
    for (id, e) in &entries {
        if let Entry::Process(p) = e {
            let rep = stop_entry(p, grace, &mut || {});
            out.push(format!(
                "stopped {} (pid {}){}",
                p.label,
                p.leader,
                if rep.killed { " with SIGKILL" } else { "" }
            ));
            registry_remove(*id);
        }
    }
    for (id, e) in &entries {
        if let Entry::Cgroup(dirs) = e {
            let failed = cgroup::kill_dirs(dirs, Duration::from_secs(3));
            out.push(format!(
                "removed cgroup {}",
                dirs.first()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            ));
            out.extend(
                failed
                    .into_iter()
                    .map(|f| format!("could not remove cgroup {f}")),
            );
            registry_remove(*id);
        }
    }
    out
}

/// Cleans up after earlier runs that died without cleaning up (e.g. SIGKILL): reads the state
/// files in `dir`, and for each whose owner process is gone, stops the process groups it had
/// started (matched by pid and start time) and removes its cgroups; then removes any
/// `ceiling-<pid>-*` cgroup below this process's own cgroups whose owner pid is gone. Returns
/// what it did.
pub fn sweep_stale(dir: &Path) -> Vec<String> {
    let mut out = sweep_state_files(dir);
    out.extend(sweep_orphan_cgroups(&cgroup::CgroupSystem::detect()));
    out
}

fn sweep_orphan_cgroups(sys: &cgroup::CgroupSystem) -> Vec<String> {
    let mut out = Vec::new();
    let mut roots: Vec<PathBuf> = sys.v1_own.values().cloned().collect();
    roots.extend(sys.v2_own.clone());
    roots.sort();
    roots.dedup();
    for root in roots {
        let Ok(rd) = std::fs::read_dir(&root) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix("ceiling-")
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == std::process::id() || procfs::read_stat(pid).is_some() || !e.path().is_dir() {
                continue;
            }
            let failed = cgroup::kill_dirs(&[e.path()], Duration::from_secs(3));
            out.push(format!("removed orphaned cgroup {}", e.path().display()));
            out.extend(failed);
        }
    }
    out
}

fn sweep_state_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let me = std::process::id();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("ceiling-")
            .and_then(|s| s.strip_suffix(".json"))
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let Ok(sf) = serde_json::from_str::<StateFile>(&text) else {
            let _ = std::fs::remove_file(e.path());
            continue;
        };
        let owner_alive = procfs::read_stat(sf.owner_pid)
            .map(|s| !s.is_dead() && s.starttime == sf.owner_starttime)
            .unwrap_or(false);
        if owner_alive {
            continue;
        }
        // processes first (graceful: PostgreSQL gets a fast shutdown), then their cgroups
        for en in &sf.entries {
            if let Entry::Process(p) = en {
                let rep = stop_entry(p, Duration::from_secs(10), &mut || {});
                if rep.took_ms > 0 || rep.killed {
                    out.push(format!(
                        "stopped leftover {} (pid {}) of dead run {}{}",
                        p.label,
                        p.leader,
                        sf.owner_pid,
                        if rep.killed { " with SIGKILL" } else { "" }
                    ));
                }
            }
        }
        for en in &sf.entries {
            if let Entry::Cgroup(dirs) = en {
                if dirs.iter().any(|d| d.exists()) {
                    let failed = cgroup::kill_dirs(dirs, Duration::from_secs(3));
                    out.push(format!(
                        "removed leftover cgroup {} of dead run {}",
                        dirs[0].display(),
                        sf.owner_pid
                    ));
                    out.extend(failed);
                }
            }
        }
        let _ = std::fs::remove_file(e.path());
    }
    out
}

/// The last `lines` lines of a log file (reads at most the last 64 KiB).
pub fn log_tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(64 * 1024);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let all: Vec<&str> = text.lines().collect();
    let from = all.len().saturating_sub(lines);
    all[from..].join("\n")
}

/// Looks a binary up on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// True when `p` is a file with an execute bit.
pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("ceiling-stand-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn tail_of_log() {
        let d = tmp("tail");
        let p = d.join("x.log");
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        assert_eq!(log_tail(&p, 2), "line 998\nline 999");
        assert_eq!(log_tail(&d.join("missing"), 5), "");
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn a_child_is_pinned_to_its_cpus_before_exec() {
        let d = tmp("affinity");
        let cpu = *crate::sys::this_process_cpus().last().unwrap();
        let spec = SpawnSpec {
            label: "sh".into(),
            program: "sh".into(),
            // the child and what it starts (grep) inherit the mask
            args: vec![
                "-c".into(),
                "grep Cpus_allowed_list /proc/self/status".into(),
            ],
            log: d.join("sh.log"),
            affinity: vec![cpu],
            term_signal: libc::SIGTERM,
            ..Default::default()
        };
        let mut m = Managed::spawn(&spec).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while m.is_alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = std::fs::read_to_string(d.join("sh.log")).unwrap();
        assert!(
            log.contains(&format!("Cpus_allowed_list:\t{cpu}\n")),
            "{log}"
        );
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn stops_group_including_grandchildren() {
        let d = tmp("group");
        let spec = SpawnSpec {
            label: "sh".into(),
            program: "sh".into(),
            // a child that ignores SIGTERM, so SIGKILL is needed
            args: vec![
                "-c".into(),
                "trap '' TERM; sleep 30 & sleep 30 & wait".into(),
            ],
            log: d.join("sh.log"),
            term_signal: libc::SIGTERM,
            term_group: true,
            ..Default::default()
        };
        let mut m = Managed::spawn(&spec).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let members = procfs::group_members(m.pid);
        assert!(members.len() >= 3, "{members:?}");
        assert!(m.is_alive());
        let rep = m.stop(Duration::from_millis(300));
        assert!(rep.killed);
        assert!(rep.leftover.is_empty());
        assert!(procfs::group_members(m.pid).is_empty());
        assert!(m.stop(Duration::from_secs(1)).already_stopped);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn which_finds_sh() {
        assert!(which("sh").is_some());
        assert!(which("definitely-not-a-binary-xyz").is_none());
    }
}
