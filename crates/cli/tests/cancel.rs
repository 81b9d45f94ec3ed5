//! Ctrl-C in every phase: a SIGINT sent to the `ceiling` process (by its pid, as a terminal's
//! Ctrl-C reaches it — its children run in process groups of their own) must stop a stack build and
//! the seeding at once, write what exists and leave nothing running; a second one must force an
//! exit when the orderly stop would take long. Before, a build or the seeding ran to its end first,
//! and a second Ctrl-C did nothing.
//!
//! Each test builds a small repository of its own (a minimal contract and a stack made for the
//! test) in a temporary directory and runs `ceiling` there, with the stand's embedded PostgreSQL.
//! Skipped with a message when no PostgreSQL server binaries are installed, like the stand's tests.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const SCHEMA: &str = "create table status (id uuid primary key);
create table clients (id bigint primary key);
create table orders (id bigint primary key);
";

fn have_postgres() -> bool {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("postgres").is_file()))
        .unwrap_or(false);
    on_path || Path::new("/usr/lib/postgresql").exists()
}

/// A repository with `contract/` (schema + `seed`) and the given stacks (`name`, `stack.toml`).
fn repo(name: &str, seed: &str, stacks: &[(&str, &str)]) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cancel-{name}"));
    let _ = std::fs::remove_dir_all(root.join("contract"));
    let _ = std::fs::remove_dir_all(root.join("stacks"));
    let _ = std::fs::remove_dir_all(root.join("results"));
    std::fs::create_dir_all(root.join("contract")).unwrap();
    std::fs::write(root.join("contract/schema.sql"), SCHEMA).unwrap();
    std::fs::write(root.join("contract/seed.sql"), seed).unwrap();
    for (n, toml) in stacks {
        let d = root.join("stacks").join(n);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("stack.toml"), toml).unwrap();
        std::fs::write(d.join("health"), "ok").unwrap();
    }
    std::fs::write(
        root.join("plan.toml"),
        r#"
name = "cancel"
[[stages]]
hold = 20
duration = "60s"
[[requests]]
name = "health"
path = "/health"
[stand]
verify = false
cooldown = "0s"
"#,
    )
    .unwrap();
    root
}

/// `ceiling run plan.toml --stacks <stack>` in `root`, its stderr lines on a channel.
fn start_run(
    root: &Path,
    stack: &str,
) -> (Child, Receiver<String>, std::thread::JoinHandle<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ceiling"))
        .current_dir(root)
        .args(["run", "plan.toml", "-q", "--stacks", stack])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = channel();
    let err = child.stderr.take().unwrap();
    let t = std::thread::spawn(move || {
        let mut all = String::new();
        for l in BufReader::new(err).lines() {
            let l = l.unwrap_or_default();
            all.push_str(&l);
            all.push('\n');
            let _ = tx.send(l);
        }
        all
    });
    (child, rx, t)
}

fn wait_for(rx: &Receiver<String>, what: &str, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(l) if l.contains(what) => return,
            Ok(_) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Ok(Some(st)) = child.try_wait() {
                    panic!("ceiling ended ({st:?}) before `{what}`");
                }
            }
            Err(_) => panic!("ceiling's stderr closed before `{what}`"),
        }
    }
    panic!("no `{what}` within 300 s");
}

fn sigint(pid: u32) {
    // SAFETY: kill(2) on the ceiling process this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
}

fn wait_exit(child: &mut Child, limit: Duration) -> (ExitStatus, Duration) {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return (st, t.elapsed());
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("ceiling did not exit within 60 s of the signal (limit {limit:?})");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Processes whose command line contains `needle` (e.g. a marker argument of the test's build).
fn processes_with(needle: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'));
        if !zombie
            && String::from_utf8_lossy(&cmd)
                .replace('\0', " ")
                .contains(needle)
        {
            v.push(pid);
        }
    }
    v
}

/// Processes (not zombies) whose working directory is `dir`.
fn processes_in(dir: &Path) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap();
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'));
        if !zombie && std::fs::read_link(e.path().join("cwd")).ok().as_deref() == Some(&dir) {
            v.push(pid);
        }
    }
    v
}

/// The run's results directory holds a run.json that says it was stopped.
fn run_json_says_stopped(root: &Path) -> String {
    let dir = std::fs::read_dir(root.join("results"))
        .unwrap()
        .flatten()
        .next()
        .expect("a results directory")
        .path();
    let text = std::fs::read_to_string(dir.join("run.json")).unwrap();
    assert!(
        text.contains("stopped by a signal") || text.contains("cancelled"),
        "{text}"
    );
    text
}

/// Nothing of PostgreSQL is left: the data directory's postmaster.pid is gone with its server.
fn postgres_gone(root: &Path) {
    for e in std::fs::read_dir(root.join(".ceiling/pg"))
        .unwrap()
        .flatten()
    {
        let pidfile = e.path().join("data/postmaster.pid");
        if let Ok(t) = std::fs::read_to_string(&pidfile) {
            let pid: u32 = t.lines().next().unwrap().trim().parse().unwrap();
            // A server killed (not shut down) by a forced exit may linger a moment as a zombie
            // until its new parent reaps it: that is gone, not running.
            let running = || {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map(|st| {
                        !st.rsplit(')')
                            .next()
                            .unwrap_or("")
                            .trim_start()
                            .starts_with('Z')
                    })
                    .unwrap_or(false)
            };
            let t = Instant::now();
            while running() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert!(!running(), "PostgreSQL {pid} is still running");
        }
    }
}

/// The orderly stop after the first Ctrl-C must take under 2 s; on this shared 2-core machine the
/// test allows 1 s more before calling it a failure.
const STOP_LIMIT: Duration = Duration::from_secs(3);

#[test]
fn ctrl_c_stops_the_seeding_at_once() {
    if !have_postgres() {
        eprintln!("skipping: no PostgreSQL server binaries");
        return;
    }
    // The seeding is one psql; this one would take ten minutes.
    let root = repo(
        "seed",
        "select pg_sleep(600) /* ceiling-cancel-seed */;\n",
        &[("stubborn", STUBBORN)],
    );
    let (mut child, rx, err) = start_run(&root, "stubborn");
    wait_for(&rx, "preparing data", &mut child);
    std::thread::sleep(Duration::from_secs(2));
    sigint(child.id());
    let (st, took) = wait_exit(&mut child, STOP_LIMIT);
    let err = err.join().unwrap();
    eprintln!("seeding: stopped {took:?} after Ctrl-C\n{err}");
    assert_eq!(st.code(), Some(130), "{err}");
    assert!(took < STOP_LIMIT, "took {took:?}\n{err}");
    assert!(err.contains("cancelled while running SQL"), "{err}");
    run_json_says_stopped(&root);
    postgres_gone(&root);
}

#[test]
fn ctrl_c_stops_a_build_at_once() {
    if !have_postgres() {
        eprintln!("skipping: no PostgreSQL server binaries");
        return;
    }
    let root = repo(
        "build",
        "insert into clients values (1);\n",
        &[("slow", SLOW_BUILD)],
    );
    let (mut child, rx, err) = start_run(&root, "slow");
    wait_for(&rx, "[slow] building", &mut child);
    let t = Instant::now();
    while processes_with("ceiling-cancel-build-987").is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the build never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    sigint(child.id());
    let (st, took) = wait_exit(&mut child, STOP_LIMIT);
    let err = err.join().unwrap();
    eprintln!("build: stopped {took:?} after Ctrl-C\n{err}");
    assert_eq!(st.code(), Some(130), "{err}");
    assert!(took < STOP_LIMIT, "took {took:?}\n{err}");
    assert!(err.contains("cancelled while building slow"), "{err}");
    // The build ignored SIGTERM; it was killed (its shell and its sleep), not waited for.
    assert!(
        processes_with("ceiling-cancel-build-987").is_empty(),
        "the build survived"
    );
    assert!(
        processes_in(&root.join("stacks/slow")).is_empty(),
        "a build process survived"
    );
    let run = run_json_says_stopped(&root);
    assert!(run.contains("stack `slow` was not measured"), "{run}");
    postgres_gone(&root);
}

#[test]
fn second_ctrl_c_forces_the_exit() {
    if !have_postgres()
        || !Path::new("/usr/bin/python3").exists() && ceiling_testkit::on_path("python3").is_none()
    {
        eprintln!("skipping: needs PostgreSQL server binaries and python3");
        return;
    }
    // A stack that ignores SIGTERM: after the first Ctrl-C the run writes its results and then
    // waits the stack's 10 s grace for it to stop. The second Ctrl-C must not wait.
    let root = repo(
        "force",
        "insert into clients values (1);\n",
        &[("stubborn", STUBBORN)],
    );
    let (mut child, rx, err) = start_run(&root, "stubborn");
    wait_for(&rx, "[stubborn] healthy at", &mut child);
    std::thread::sleep(Duration::from_secs(3));
    let server = processes_with("ceiling-cancel-stubborn");
    assert!(!server.is_empty(), "the stack's server is not running");
    sigint(child.id());
    // the first one stops the measurement and writes the results…
    let t = Instant::now();
    let deadline = t + Duration::from_secs(10);
    let mut wrote = false;
    while Instant::now() < deadline && !wrote {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            wrote = l.starts_with("results:") || l.contains("stopping — writing");
        }
    }
    assert!(wrote, "no sign of the first Ctrl-C");
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited before the second Ctrl-C: the test proves nothing"
    );
    sigint(child.id());
    let (st, took) = wait_exit(&mut child, STOP_LIMIT);
    let err = err.join().unwrap();
    eprintln!("second Ctrl-C: exited {took:?} after it\n{err}");
    assert_eq!(st.code(), Some(130), "{err}");
    assert!(took < Duration::from_secs(5), "took {took:?}\n{err}");
    assert!(err.contains("forced"), "{err}");
    assert!(
        processes_with("ceiling-cancel-stubborn").is_empty(),
        "the stack survived"
    );
    assert!(
        processes_in(&root.join("stacks/stubborn")).is_empty(),
        "the stack's server survived"
    );
    postgres_gone(&root);
}

/// A build that takes 987 s and ignores SIGTERM.
const SLOW_BUILD: &str = r#"
name = "slow"
description = "a build that takes forever"
source = "none"
[build]
requires = ["sh"]
command = ["sh", "-c", "trap '' TERM; sleep 987; : ceiling-cancel-build-987"]
outputs = ["never"]
[run]
command = ["sh", "-c", "exit 1"]
health = "/health"
[settings]
pool_size = 1
workers = 1
[fairness]
pool_open_at_start = "none"
keep_alive_max_requests = 0
db_timeout = "n/a"
request_timing = "none"
json = "n/a"
runtime = "sh"
gc_heap = "n/a"
log_level = "n/a"
"#;

/// A static HTTP server (python3) that ignores SIGTERM.
const STUBBORN: &str = r#"
name = "stubborn"
description = "serves /health and ignores SIGTERM"
source = "none"
[run]
command = ["sh", "-c", "trap '' TERM; python3 -m http.server $HTTP_PORT --bind 127.0.0.1; : ceiling-cancel-stubborn"]
health = "/health"
startup_timeout_s = 20
[settings]
pool_size = 1
workers = 1
[fairness]
pool_open_at_start = "none"
keep_alive_max_requests = 0
db_timeout = "n/a"
request_timing = "none"
json = "n/a"
runtime = "sh"
gc_heap = "n/a"
log_level = "n/a"
"#;
