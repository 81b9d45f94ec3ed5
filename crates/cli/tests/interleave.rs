//! `ceiling run` of two stacks with a closed model's repetitions: the stacks take turns, one
//! repetition per start (A B A B), and each stack's rounds are written on one clock so its files
//! and its analysis agree — the same seconds `ceiling report` reads back to recompute a shelf.
//!
//! The truth is the schedule itself: the turns' order on stderr, each repetition's shelves in
//! run.json, one header per file, seconds that only go forward, and every shelf's kept window
//! holding exactly the requests its row of the CSV counts.
//!
//! Needs PostgreSQL server binaries, Go (go-pgx) and nginx (nginx-static); skipped with a message
//! without them, like the other stand tests.

use ceiling_testkit::repo_root;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Why the environment cannot run this test, if it cannot.
fn missing() -> Option<String> {
    let root = repo_root();
    if let Err(e) =
        ceiling_stand::find_postgres(Some(15), None, &root.join(".ceiling"), None).map(|_| ())
    {
        return Some(format!("no PostgreSQL 15 binaries: {e}"));
    }
    if Command::new("go").arg("version").output().is_err() {
        return Some("no Go toolchain".into());
    }
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"];
    if !nginx.iter().any(|p| Path::new(p).exists())
        && Command::new("nginx").arg("-v").output().is_err()
    {
        return Some("no nginx (scripts/setup.sh bench installs it)".into());
    }
    None
}

const PLAN: &str = r#"
name = "interleave"
description = "two stacks, two repetitions of two levels: the stacks take turns"
[target]
stacks = ["go-pgx", "nginx-static"]
[load]
repetitions = 2
[[warmup]]
connections = 2
duration = "2s"
[[stages]]
connections = 2
duration = "5s"
[[stages]]
connections = 4
duration = "5s"
[[requests]]
name = "ping"
path = "/ping"
expect = [200]
[slo]
p99 = "1s"
errors = "1%"
[analysis]
trim_head = "1s"
trim_tail = "1s"
min_window = "2s"
stability = 0.9
[stand]
cooldown = "0s"
"#;

#[test]
fn stacks_take_turns_and_each_stacks_rounds_share_one_clock() {
    if let Some(why) = missing() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let root = repo_root();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interleave");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let plan = tmp.join("interleave.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let results = tmp.join("results");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ceiling"))
        .current_dir(&root)
        .arg("run")
        .arg(&plan)
        .args(["-q", "--results"])
        .arg(&results)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning ceiling");
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || std::io::read_to_string(out).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
    // the run is bounded (≈ 50 s of load, a build of go-pgx the first time); this bound is wider
    let end = Instant::now() + Duration::from_secs(900);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > end {
            let _ = child.kill(); // this test's own child, by its handle
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(
        status.is_some_and(|s| s.success()),
        "ceiling run failed or overran ({status:?}):\n{err}\n{out}"
    );

    // the turns, in order: A B A B
    let turns: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("(repetition ") && l.starts_with('['))
        .collect();
    assert_eq!(
        turns,
        [
            "[go-pgx] (repetition 1 of 2)",
            "[nginx-static] (repetition 1 of 2)",
            "[go-pgx] (repetition 2 of 2)",
            "[nginx-static] (repetition 2 of 2)",
        ],
        "{err}"
    );

    let dir = ceiling_testkit::only_run(&results);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["plan"]["interleaved_rounds"], 2);
    // every repetition's warm-up is planned: (2 + 10) s × 2
    assert_eq!(run["plan"]["total_duration_s"], 24.0);
    let stacks = run["stacks"].as_array().unwrap();
    assert_eq!(stacks.len(), 2);
    for st in stacks {
        let name = st["stack"].as_str().unwrap();
        let shelves = st["shelves"].as_array().unwrap();
        let reps: Vec<(u64, u64)> = shelves
            .iter()
            .map(|s| {
                (
                    s["repetition"].as_u64().unwrap(),
                    s["level"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(reps, [(0, 0), (0, 1), (1, 0), (1, 1)], "{name}");
        for l in st["levels"].as_array().unwrap() {
            assert_eq!(l["repetitions"], serde_json::json!([0, 1]), "{name}");
        }

        // one file per stack, one header, seconds only forward across the rounds
        let csv = std::fs::read_to_string(dir.join(name).join("timeseries.csv")).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
        let (ct, cphase, cach) = (col("t"), col("phase"), col("achieved_rps"));
        let rows: Vec<(u32, String, u64)> = lines
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (
                    f[ct]
                        .parse()
                        .unwrap_or_else(|_| panic!("{name}: a second header? {l}")),
                    f[cphase].to_string(),
                    f[cach].parse().unwrap(),
                )
            })
            .collect();
        assert!(
            rows.windows(2).all(|w| w[0].0 < w[1].0),
            "{name}: t goes back"
        );
        let warmups = rows
            .windows(2)
            .filter(|w| w[0].1 == "measure" && w[1].1 == "warmup")
            .count();
        assert_eq!(
            warmups, 1,
            "{name}: the second round's warm-up follows the first's levels"
        );
        let hlog = std::fs::read_to_string(dir.join(name).join("latency.hlog")).unwrap();
        assert_eq!(
            hlog.matches("#[StartTime:").count(),
            1,
            "{name}: one hlog header"
        );

        // each shelf's window, on the stack's clock, holds exactly the requests it counted
        let mut starts = Vec::new();
        for s in shelves {
            let w = &s["window"];
            let (k0, k1) = (
                w["kept_start_s"].as_f64().unwrap() as u32,
                w["kept_end_s"].as_f64().unwrap() as u32,
            );
            let inside: u64 = rows
                .iter()
                .filter(|r| r.0 >= k0 && r.0 < k1)
                .map(|r| {
                    assert_eq!(r.1, "measure", "{name}: a kept second in the warm-up");
                    r.2
                })
                .sum();
            assert_eq!(inside, s["requests"].as_u64().unwrap(), "{name}: {s}");
            starts.push(k0);
        }
        assert!(
            starts[2] > starts[1] + 10,
            "{name}: the second round is later on the clock ({starts:?})"
        );
    }

    // verified on the first round; the later rounds start the same build, and say nothing else
    assert_eq!(err.matches("[go-pgx] verify: all").count(), 1, "{err}");
    for st in stacks {
        assert!(
            !st["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w["kind"] == "verify_skipped"),
            "{}",
            st["stack"]
        );
        // each round's sampler note is its own, named by its repetition
        let notes: Vec<&str> = st["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w["message"].as_str())
            .filter(|m| m.starts_with("signals"))
            .collect();
        for rep in [1, 2] {
            assert!(
                notes.iter().any(|m| m.starts_with(&format!(
                    "signals (repetition {rep}): the signal sampler used"
                ))),
                "{}: {notes:?}",
                st["stack"]
            );
        }
    }

    // `ceiling report` reads the same files back and agrees
    let before = run["stacks"].clone();
    let rep = Command::new(env!("CARGO_BIN_EXE_ceiling"))
        .current_dir(&root)
        .arg("report")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    for (a, b) in before
        .as_array()
        .unwrap()
        .iter()
        .zip(again["stacks"].as_array().unwrap())
    {
        assert_eq!(
            a["shelves"].as_array().unwrap().len(),
            b["shelves"].as_array().unwrap().len()
        );
        assert_eq!(a["ceiling"]["rps"], b["ceiling"]["rps"]);
    }
}
