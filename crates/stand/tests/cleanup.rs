//! Nothing survives: `cleanup_all` (the Ctrl-C path) and a run that is SIGKILLed (cleaned up by
//! `sweep_stale` at the next start). The killed run is a child process — this test binary
//! re-executed with a helper filter — that starts PostgreSQL (when installed) and the dummy stack,
//! both under cgroups, prints their pids and cgroup directories, and waits to be killed.

mod common;

use ceiling_stand::*;
use common::fake_db;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stacks")
}

fn plan_defaults() -> ceiling_plan::StandSettings {
    ceiling_plan::StandSettings {
        postgres_version: None,
        postgres_settings: Default::default(),
        seed: 1,
        pool_size: None,
        workers: None,
        cpus: None,
        memory_mb: None,
        memory_uncapped: false,
        postgres_cpus: None,
        cooldown: Duration::from_secs(0),
        verify: false,
        on_part_exit: Default::default(),
        placement: Default::default(),
        env: Default::default(),
        pgbouncer: None,
        tls: false,
    }
}

fn start_dummy(log: &Path, limits: Limits) -> RunningStack {
    let spec = StackSpec::load(&fixtures(), "dummy").unwrap();
    let mut l = StackLaunch::new(&spec, &plan_defaults(), fake_db(), log.to_path_buf());
    l.limits = limits;
    start_stack(&spec, &l, &CgroupSystem::detect()).unwrap()
}

/// Tests here touch the process-wide registry (cleanup_all stops everything in it): one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const STATE_ENV: &str = "CEILING_STAND_HELPER_STATE";
const NO_STACK_ENV: &str = "CEILING_STAND_HELPER_NO_STACK";

/// Not a test on its own: the body of the killed run (runs only when the parent sets the env).
#[test]
#[ignore]
fn helper_killed_run() {
    let Ok(state) = std::env::var(STATE_ENV) else {
        return;
    };
    let state = PathBuf::from(state);
    set_state_dir(&state.join("run"));
    let cgs = CgroupSystem::detect();
    let mut pg = None;
    if let Ok(bins) = find_postgres(None, None, &state, None) {
        let mut po = PgOptions::new(&state, bins.major, Default::default());
        po.limits = Limits {
            cpus: Some(1.0),
            memory_mb: Some(512),
            cpuset: None,
        };
        let p = EmbeddedPostgres::start(&bins, &po, &cgs).unwrap();
        println!("@@PG {} {}", p.pid(), p.limits_applied().groups.join(" "));
        pg = Some(p);
    }
    let mut st = None;
    if std::env::var(NO_STACK_ENV).is_err() {
        let s = start_dummy(
            &state.join("dummy.log"),
            Limits {
                cpus: Some(0.5),
                memory_mb: Some(128),
                cpuset: None,
            },
        );
        println!(
            "@@STACK {} {}",
            s.pid(),
            s.limits_applied().groups.join(" ")
        );
        st = Some(s);
    }
    println!("@@READY");
    std::thread::sleep(Duration::from_secs(120));
    drop((pg, st));
}

#[test]
fn killed_run_is_swept_by_the_next_start() {
    let _serial = serial();
    if which("python3").is_none() {
        eprintln!("skipping: python3 not on PATH");
        return;
    }
    let state = Path::new(env!("CARGO_TARGET_TMPDIR")).join("killed-run");
    let _ = std::fs::create_dir_all(&state);
    let (pids, groups) = run_and_kill_helper(&state, false);
    let want = if find_postgres(None, None, &state, None).is_ok() {
        2
    } else {
        1
    };
    assert_eq!(pids.len(), want, "{pids:?}");
    // everything it started is orphaned but alive
    for p in &pids {
        assert!(
            procfs::is_alive(*p),
            "pid {p} should have outlived its killed parent"
        );
    }
    let run_dir = state.join("run");
    assert!(
        std::fs::read_dir(&run_dir).unwrap().count() > 0,
        "state file missing"
    );
    let t0 = Instant::now();
    let swept = sweep_stale(&run_dir);
    eprintln!("swept in {:?}: {swept:#?}", t0.elapsed());
    for p in &pids {
        assert!(!procfs::is_alive(*p), "pid {p} survived the sweep");
        assert!(
            procfs::group_members(*p).is_empty(),
            "group {p} survived the sweep"
        );
    }
    for g in &groups {
        assert!(!Path::new(g).exists(), "cgroup {g} survived the sweep");
    }
    assert_eq!(
        std::fs::read_dir(&run_dir).unwrap().count(),
        0,
        "state file not removed"
    );
    // and the PostgreSQL data directory is usable again (crash recovery after the SIGKILL)
    if let Ok(bins) = find_postgres(None, None, &state, None) {
        let po = PgOptions::new(&state, bins.major, Default::default());
        let mut pg = EmbeddedPostgres::start(&bins, &po, &CgroupSystem::detect()).unwrap();
        assert_eq!(
            pg.admin().query_one("select 1").unwrap().as_deref(),
            Some("1")
        );
        pg.stop();
    }
}

/// Starts the helper, waits for READY, SIGKILLs it; returns the pids it reported.
fn run_and_kill_helper(state: &Path, no_stack: bool) -> (Vec<u32>, Vec<String>) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "helper_killed_run",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(STATE_ENV, state)
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    if no_stack {
        cmd.env(NO_STACK_ENV, "1");
    }
    let mut child = cmd.spawn().unwrap();
    let mut pids: Vec<u32> = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    let mut ready = false;
    let out = BufReader::new(child.stdout.take().unwrap());
    for line in out.lines() {
        let line = line.unwrap();
        eprintln!("helper: {line}");
        let Some(at) = line.find("@@") else { continue };
        let parts: Vec<&str> = line[at + 2..].split_whitespace().collect();
        match parts.first() {
            Some(&"PG") | Some(&"STACK") => {
                pids.push(parts[1].parse().unwrap());
                groups.extend(parts[2..].iter().map(|s| s.to_string()));
            }
            Some(&"READY") => {
                ready = true;
                break;
            }
            _ => {}
        }
    }
    assert!(ready, "helper did not get ready");
    // SIGKILL: no destructor, no handler runs
    child.kill().unwrap();
    child.wait().unwrap();
    (pids, groups)
}

#[test]
fn leftover_postmaster_is_stopped_by_the_next_start() {
    // A postmaster whose owner was SIGKILLed, found without the state file (e.g. the state dir
    // was deleted): the next start on the same data directory finds it through postmaster.pid.
    let _serial = serial();
    let state = Path::new(env!("CARGO_TARGET_TMPDIR")).join("leftover-pg");
    let Ok(bins) = find_postgres(None, None, &state, None) else {
        eprintln!("skipping: no PostgreSQL");
        return;
    };
    let (pids, groups) = run_and_kill_helper(&state, true);
    assert_eq!(pids.len(), 1);
    let old = pids[0];
    assert!(procfs::is_alive(old));
    let _ = std::fs::remove_dir_all(state.join("run")); // forget the state file
    let po = PgOptions::new(&state, bins.major, Default::default());
    let cgs = CgroupSystem::detect();
    let mut second = EmbeddedPostgres::start(&bins, &po, &cgs).unwrap();
    assert!(!procfs::is_alive(old), "old postmaster {old} still running");
    assert_ne!(second.pid(), old);
    // a concurrent second run on the same root is refused clearly
    let e = EmbeddedPostgres::start(&bins, &po, &cgs)
        .unwrap_err()
        .to_string();
    assert!(e.contains("in use by another ceiling run"), "{e}");
    second.stop();
    // the killed run's cgroups (no state file any more) are found by name and owner pid
    let swept = sweep_stale(&state.join("run"));
    eprintln!("{swept:#?}");
    for g in &groups {
        assert!(!Path::new(g).exists(), "cgroup {g} survived the sweep");
    }
}

#[test]
fn cleanup_all_stops_everything_registered() {
    let _serial = serial();
    if which("python3").is_none() {
        return;
    }
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cleanup-{}", std::process::id()));
    let mut st = start_dummy(
        &d.join("dummy.log"),
        Limits {
            cpus: Some(0.5),
            memory_mb: None,
            cpuset: None,
        },
    );
    let pid = st.pid();
    let groups = st.limits_applied().groups.clone();
    let done = cleanup_all(Duration::from_secs(3));
    assert!(done.iter().any(|l| l.contains("stack dummy")), "{done:?}");
    assert!(!procfs::is_alive(pid));
    assert!(groups.iter().all(|g| !Path::new(g).exists()), "{groups:?}");
    // the owner's stop and drop are harmless afterwards
    assert!(!st.is_alive());
    st.stop();
    let _ = std::fs::remove_dir_all(d);
}

const SIGNAL_ENV: &str = "CEILING_STAND_HELPER_SIGNAL";

/// Not a test on its own: a run that gets SIGTERM (runs only when the parent sets the env).
#[test]
#[ignore]
fn helper_signalled_run() {
    let Ok(dir) = std::env::var(SIGNAL_ENV) else {
        return;
    };
    install_signal_cleanup(Duration::from_secs(3)).unwrap();
    let st = start_dummy(
        &Path::new(&dir).join("dummy.log"),
        Limits {
            cpus: Some(0.5),
            memory_mb: None,
            cpuset: None,
        },
    );
    println!(
        "@@STACK {} {}",
        st.pid(),
        st.limits_applied().groups.join(" ")
    );
    println!("@@READY");
    let deadline = Instant::now() + Duration::from_secs(60);
    while interrupted().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // give the cleanup thread its moment, as a CLI writing partial results would
    std::thread::sleep(Duration::from_millis(500));
    println!("@@INTERRUPTED {:?}", interrupted());
    drop(st);
}

#[test]
fn sigterm_runs_cleanup() {
    if which("python3").is_none() {
        return;
    }
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("signalled-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "helper_signalled_run",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SIGNAL_ENV, &dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut pid = 0u32;
    let mut groups = Vec::new();
    for line in out.by_ref() {
        let line = line.unwrap();
        let Some(at) = line.find("@@") else { continue };
        let line = line[at + 2..].to_string();
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.first() == Some(&"STACK") {
            pid = parts[1].parse().unwrap();
            groups = parts[2..].iter().map(|s| s.to_string()).collect::<Vec<_>>();
        }
        if line == "READY" {
            break;
        }
    }
    assert!(pid > 0);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut saw = false;
    for line in out {
        let line = line.unwrap();
        eprintln!("helper: {line}");
        if line.contains("@@INTERRUPTED Some(15)") {
            saw = true;
        }
    }
    let st = child.wait().unwrap();
    assert!(saw, "helper did not see the signal");
    assert!(st.success(), "{st:?}");
    assert!(!procfs::is_alive(pid));
    assert!(groups.iter().all(|g| !Path::new(g).exists()), "{groups:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn generator_process_can_be_limited_and_restored() {
    let _serial = serial();
    let cgs = CgroupSystem::detect();
    let before = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let (cg, la) = limit_this_process(
        &cgs,
        Role::Generator,
        &Limits {
            cpus: Some(2.0),
            memory_mb: None,
            cpuset: None,
        },
    );
    eprintln!("{}", la.summary());
    let Some(mut cg) = cg else {
        eprintln!("skipping: no cgroup could be created here");
        return;
    };
    let inside = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    assert!(inside.contains(cg.name()), "{inside}");
    let dirs: Vec<PathBuf> = cg.dirs().iter().map(|d| d.path.clone()).collect();
    let failed = cg.remove();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(
        std::fs::read_to_string("/proc/self/cgroup").unwrap(),
        before
    );
    assert!(dirs.iter().all(|d| !d.exists()));
}
