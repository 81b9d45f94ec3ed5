//! PostgreSQL killed (SIGKILL, by its pid) in the middle of a measured `ceiling run`: the run must
//! name it at once, mark the shelf it hit invalid — not failed, although go-pgx answered with
//! errors — restart PostgreSQL (`stand.on_part_exit = "restart"`) and measure the next stack on
//! the new server. Before, the run carried on and reported the shelves as failed ("errors 100%")
//! with no word about the database.
//!
//! Needs PostgreSQL server binaries and Go (to build go-pgx); skipped with a message without them,
//! like the stand's own integration tests.

use ceiling_testkit::repo_root;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The two tests start a stand each over the same `.ceiling/` cache: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

const PLAN: &str = r#"
name = "pg-dies"
description = "PostgreSQL is killed during the second shelf of the first stack"
[target]
stacks = ["go-pgx", "go-pgx"]
[[warmup]]
hold = 50
duration = "2s"
[[stages]]
hold = 50
duration = "8s"
[[stages]]
hold = 100
duration = "24s"
[[requests]]
name = "db"
path = "/db/ping"
expect = [200]
[slo]
p99 = "500ms"
errors = "1%"
[analysis]
trim_head = "1s"
trim_tail = "1s"
min_window = "4s"
stability = 0.5
[stand]
verify = false
cooldown = "0s"
on_part_exit = "restart"
"#;

/// The pid of the PostgreSQL server the `ceiling` process `owner` started, from the stand's
/// registry of the processes it started (`.ceiling/run/ceiling-<pid>.json`).
fn postgres_pid(root: &Path, owner: u32) -> Option<u32> {
    let text =
        std::fs::read_to_string(root.join(format!(".ceiling/run/ceiling-{owner}.json"))).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["entries"].as_array()?.iter().find_map(|e| {
        let p = &e["Process"];
        (p["label"] == "postgres")
            .then(|| p["leader"].as_u64())?
            .map(|x| x as u32)
    })
}

/// A `ceiling` command this test started: its stdout and stderr read on threads (stderr also
/// line by line through `lines`), once go-pgx is healthy.
struct Started {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
}

/// Starts `ceiling ARGS…` in the repository and waits until go-pgx is healthy (building it may
/// take a while the first time).
fn start_until_healthy(root: &Path, args: &[&std::ffi::OsStr]) -> Started {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ceiling"))
        .current_dir(root)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut all = String::new();
        for l in BufReader::new(stderr).lines() {
            let l = l.unwrap_or_default();
            all.push_str(&l);
            all.push('\n');
            let _ = tx.send(l);
        }
        all
    });
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        match lines.recv_timeout(Duration::from_secs(1)) {
            Ok(l) if l.contains("[go-pgx] healthy at") => break,
            Ok(_) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(_) => panic!("ceiling ended before measuring: {:?}", child.wait()),
        }
        assert!(Instant::now() < deadline, "go-pgx never became healthy");
    }
    Started {
        child,
        lines,
        out,
        err,
    }
}

/// The test's scratch directory `name` with `plan_text` written to `<plan>.toml`: the repository
/// root, the plan file and the results directory; `None` (and a message) where PostgreSQL server
/// binaries or Go are missing.
fn prepare(name: &str, plan: &str, plan_text: &str) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let have_pg = ["/usr/lib/postgresql", "/usr/local/pgsql"]
        .iter()
        .any(|d| Path::new(d).exists())
        || ceiling_testkit::on_path("postgres").is_some();
    if !have_pg || ceiling_testkit::on_path("go").is_none() {
        eprintln!("skipping: needs PostgreSQL server binaries and Go");
        return None;
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let file = tmp.join(format!("{plan}.toml"));
    std::fs::write(&file, plan_text).unwrap();
    Some((repo_root(), file, tmp.join("results")))
}

/// SIGKILL to the PostgreSQL server the `ceiling` process `owner` started.
fn kill_postgres(root: &Path, owner: u32) {
    let pid = postgres_pid(root, owner).expect("the command's PostgreSQL in its registry");
    // SAFETY: kill(2) on the PostgreSQL server of the ceiling command this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
}

/// The one results directory under `results` and its run.json.
fn results_of(results: &Path) -> (PathBuf, serde_json::Value) {
    let dir = std::fs::read_dir(results)
        .unwrap()
        .flatten()
        .find(|e| e.path().join("run.json").exists())
        .expect("a results directory")
        .path();
    let run =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    (dir, run)
}

#[test]
fn killed_postgres_invalidates_the_shelf_and_the_run_goes_on() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((root, plan, results)) = prepare("postgres-exit", "pg-dies", PLAN) else {
        return;
    };
    let Started {
        mut child,
        lines: rx,
        out: out_thread,
        err: err_thread,
    } = start_until_healthy(
        &root,
        &[
            "run".as_ref(),
            plan.as_os_str(),
            "--results".as_ref(),
            results.as_os_str(),
            "-q".as_ref(),
        ],
    );
    let owner = child.id();
    // Warm-up 0–2 s, `hold 50` 2–10 s (kept 3–9), `hold 100` 10–34 s (kept 11–33): kill at ≈16 s.
    std::thread::sleep(Duration::from_secs(16));
    kill_postgres(&root, owner);
    let killed_at = Instant::now();
    let mut named_after = None;
    let status = loop {
        while let Ok(l) = rx.try_recv() {
            if l.contains("PostgreSQL EXITED") && named_after.is_none() {
                named_after = Some(killed_at.elapsed());
            }
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if killed_at.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("ceiling run did not finish");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = out_thread.join().unwrap();
    let err = err_thread.join().unwrap();
    let ctx = format!("--- stdout\n{out}\n--- stderr\n{err}");
    // Detected within the second it happened (the watch runs every second).
    let named_after = named_after.unwrap_or_else(|| panic!("the exit was never named\n{ctx}"));
    assert!(
        named_after < Duration::from_secs(3),
        "named after {named_after:?}\n{ctx}"
    );
    assert!(err.contains("PostgreSQL EXITED (signal 9)"), "{ctx}");
    assert!(err.contains("restarting PostgreSQL"), "{ctx}");
    assert_eq!(status.code(), Some(1), "{ctx}");

    // run.json: the shelf PostgreSQL died under is invalid with that reason; the shelf before it
    // is valid; the second stack, on the restarted server, is measured normally.
    let (dir, run) = results_of(&results);
    let stacks = run["stacks"].as_array().unwrap();
    assert_eq!(stacks.len(), 2, "{ctx}");
    let first = &stacks[0];
    let verdicts: Vec<&str> = first["shelves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["valid", "invalid"], "{first:#}");
    let reasons = &first["shelves"][1]["reasons"];
    assert!(
        reasons
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["kind"] == "part_exited" && r["part"] == "postgres"),
        "{reasons:#}"
    );
    assert_eq!(first["part_exits"][0]["part"], "postgres", "{first:#}");
    assert_eq!(first["part_exits"][0]["status"], "signal 9", "{first:#}");
    let second: Vec<&str> = stacks[1]["shelves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(second, ["valid", "valid"], "{:#}", stacks[1]);
    // The terminal table and the report say it too.
    assert!(
        out.contains("!! POSTGRESQL EXITED while `go-pgx` was measured"),
        "{ctx}"
    );
    assert!(out.contains("PostgreSQL exited during the shelf"), "{ctx}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("POSTGRESQL EXITED while"));
    // Nothing it started is left: the new server was stopped at the end.
    if let Some(p) = postgres_pid(&root, owner) {
        panic!("registry still lists PostgreSQL {p}");
    }
}

const SEARCH_PLAN: &str = r#"
name = "pg-dies-search"
description = "PostgreSQL is killed during the search's first probes"
[target]
stacks = ["go-pgx"]
[[stages]]
hold = 50
duration = "6s"
[[requests]]
name = "db"
path = "/db/ping"
expect = [200]
[slo]
p99 = "500ms"
errors = "1%"
[analysis]
trim_head = "1s"
trim_tail = "0s"
min_window = "4s"
stability = 0.5
[search]
start_rate = 50
probe = "6s"
probe_trim = "1s"
confirm = "8s"
drain = "1s"
repeat = 1
max_time = "3m"
[stand]
verify = false
on_part_exit = "restart"
"#;

/// The same fault under `ceiling search`: the probe PostgreSQL died under is never judged (a dead
/// database is not the stack's ceiling), the stack's search ends naming the exit, PostgreSQL is
/// restarted, and the command exits 1 with its results written. Before, the search watched only
/// the stack and judged probes against a dead database.
#[test]
fn killed_postgres_ends_the_search_without_a_verdict_on_the_stack() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((root, plan, results)) =
        prepare("postgres-exit-search", "pg-dies-search", SEARCH_PLAN)
    else {
        return;
    };
    let Started {
        mut child,
        out: out_thread,
        err: err_thread,
        ..
    } = start_until_healthy(
        &root,
        &[
            "search".as_ref(),
            plan.as_os_str(),
            "--results".as_ref(),
            results.as_os_str(),
        ],
    );
    let owner = child.id();
    // into the first probes (each 6 s at 50 RPS and up)
    std::thread::sleep(Duration::from_secs(9));
    kill_postgres(&root, owner);
    let killed_at = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if killed_at.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("ceiling search did not finish after PostgreSQL died");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = out_thread.join().unwrap();
    let err = err_thread.join().unwrap();
    let ctx = format!("--- stdout\n{out}\n--- stderr\n{err}");
    assert!(
        killed_at.elapsed() < Duration::from_secs(60),
        "took {:?} to end\n{ctx}",
        killed_at.elapsed()
    );
    assert_eq!(status.code(), Some(1), "{ctx}");
    assert!(err.contains("PostgreSQL exited (signal 9)"), "{ctx}");
    assert!(err.contains("restarting PostgreSQL"), "{ctx}");
    let (_, run) = results_of(&results);
    let st = &run["stacks"][0];
    let search = &st["search"];
    // the search ended on the exit, and named it
    assert!(
        search["stop"].to_string().contains("PostgreSQL exited"),
        "{search:#}"
    );
    // no probe was judged against the dead database: every recorded probe finished before the
    // exit, so none of them failed (go-pgx holds 50–200 RPS with room to spare)
    for p in search["probes"].as_array().unwrap() {
        assert_ne!(p["verdict"], "failed", "a probe judged failed: {p:#}");
    }
    assert!(
        st["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["kind"] == "part_exited"),
        "{:#}",
        st["warnings"]
    );
    if let Some(p) = postgres_pid(&root, owner) {
        panic!("registry still lists PostgreSQL {p}");
    }
}
