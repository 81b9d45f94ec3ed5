//! Two `ceiling load --shard I/2` processes against one service send exactly the arrivals of one
//! unsharded run between them, and `ceiling merge` adds their histograms exactly: the merged
//! request count is the sum, and the merged percentiles are those of a service whose latency is
//! known (every reply 20 ms after arrival).

use std::process::Command;
use std::time::Duration;

fn ceiling() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ceiling"))
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn two_shards_send_the_plan_between_them_and_merge_exactly() {
    let port = ceiling_load::testing::spawn_server(|now| now + Duration::from_millis(20));
    let url = format!("http://127.0.0.1:{port}/x");
    let base = std::env::temp_dir().join(format!("ceiling-shards-{}", std::process::id()));
    let dir = |n: &str| base.join(n);
    let load = |extra: &[&str], out: &str| {
        let mut c = ceiling();
        c.args([
            "load", "--url", &url, "--rate", "300", "-d", "3s", "-q", "--json", "--out",
        ])
        .arg(dir(out))
        .args(extra);
        c
    };
    let spawn = |mut c: Command| {
        c.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawning ceiling")
    };
    // both shards at once, as agents would run; each is awaited by its own handle
    let a = spawn(load(&["--shard", "0/2"], "a"));
    let b = spawn(load(&["--shard", "1/2"], "b"));
    let ra = json(&a.wait_with_output().unwrap());
    let rb = json(&b.wait_with_output().unwrap());
    let whole = json(&load(&[], "whole").output().unwrap());
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap();
    // a uniform schedule of 300 RPS for 3 s is 900 arrivals; the shards take alternate ones
    assert_eq!(n(&whole, "offered"), 900);
    assert_eq!((n(&ra, "offered"), n(&rb, "offered")), (450, 450));
    assert_eq!(
        n(&ra, "completed") + n(&rb, "completed"),
        n(&whole, "completed")
    );

    let merged = json(
        &ceiling()
            .args(["merge", "--json"])
            .arg(dir("a"))
            .arg(dir("b"))
            .output()
            .unwrap(),
    );
    assert_eq!(n(&merged, "completed"), 900);
    assert_eq!(merged["latency"]["count"].as_u64(), Some(900));
    // every reply comes 20 ms after it arrives: the merged median is 20 ms plus loopback and
    // scheduling (well under 5 ms on an idle machine; 15 allowed on a busy one)
    let p50 = merged["latency"]["p50_ms"].as_f64().unwrap();
    assert!((20.0..35.0).contains(&p50), "merged p50 {p50} ms");
    assert_eq!(merged["generator_bound"], false, "{merged}");

    // an unsharded input and a bad shard spec are clear errors
    let e = ceiling().args(["merge"]).arg(dir("a")).output().unwrap();
    assert!(!e.status.success());
    let e = ceiling()
        .args([
            "load", "--url", &url, "--rate", "10", "-d", "1s", "--shard", "2/2",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&e.stderr);
    assert!(!e.status.success() && err.contains("0 ≤ I < N"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_dir_all(&base).ok();
}

/// The ticked engine shards the same way on each of its I/O back ends (issue 36 item 3): two
/// `--shard I/2` processes with `--tick 2ms --io X` send the alternate arrivals of one 900-arrival
/// schedule, 450 each, every one answered, and each says which back end sent them; the merged
/// median is the service's known 20 ms (the 2-ms tick moves a send by at most one tick).
#[test]
fn the_ticked_engine_shards_on_both_io_back_ends() {
    let port = ceiling_load::testing::spawn_server(|now| now + Duration::from_millis(20));
    let url = format!("http://127.0.0.1:{port}/x");
    let base = std::env::temp_dir().join(format!("ceiling-tick-shards-{}", std::process::id()));
    for io in ["epoll", "io_uring"] {
        let spawn = |shard: &str| {
            ceiling()
                .args([
                    "load", "--url", &url, "--rate", "300", "-d", "3s", "-q", "--json",
                ])
                .args(["--tick", "2ms", "--io", io, "--shard", shard, "--out"])
                .arg(base.join(format!("{io}-{}", &shard[..1])))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawning ceiling")
        };
        let (a, b) = (spawn("0/2"), spawn("1/2"));
        for r in [
            json(&a.wait_with_output().unwrap()),
            json(&b.wait_with_output().unwrap()),
        ] {
            assert_eq!(r["offered"], 450, "{io}: {r}");
            assert_eq!(r["completed"], 450, "{io}: {r}");
            let engine = r["engine"].as_str().unwrap_or_default();
            assert!(engine.contains(&format!("I/O: {io}")), "{io}: {r}");
        }
        let merged = json(
            &ceiling()
                .args(["merge", "--json"])
                .arg(base.join(format!("{io}-0")))
                .arg(base.join(format!("{io}-1")))
                .output()
                .unwrap(),
        );
        assert_eq!(merged["latency"]["count"].as_u64(), Some(900), "{io}");
        let p50 = merged["latency"]["p50_ms"].as_f64().unwrap();
        assert!((20.0..37.0).contains(&p50), "{io}: merged p50 {p50} ms");
    }
    std::fs::remove_dir_all(&base).ok();
}
