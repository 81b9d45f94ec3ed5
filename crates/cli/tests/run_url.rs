//! `ceiling run PLAN --url` against a service whose capacity is known: a stepped profile written
//! past the ceiling with `[load] stop_at_failure` stops after the first failed shelf, so the
//! source's own method brackets without loading a failed service for the rest of its stages.
//!
//! The service: 4 workers × 10 ms behind an unbounded FIFO queue, 400 RPS of capacity. Below it a
//! shelf's p99 is ~10–20 ms; at 600 RPS the queue grows by 200 requests a second and the p99
//! passes 50 ms within the first second of the window.

use std::process::Command;
use std::time::Duration;

#[test]
fn a_stepped_profile_stops_after_its_first_failed_shelf() {
    let port = ceiling_load::testing::spawn_fixed_capacity_server(4, Duration::from_millis(10));
    let dir = std::env::temp_dir().join(format!("ceiling-run-url-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("steps.toml");
    // 200 and 300 pass, 600 fails; 800 (10 s) is cut as soon as the stop takes effect
    std::fs::write(
        &plan,
        r#"name = "steps"
description = "a stepped profile past the ceiling, stopped at the first failure"
[load]
stop_at_failure = true
timeout = "5s"
[[stages]]
hold = 200
duration = "4s"
[[stages]]
hold = 300
duration = "4s"
[[stages]]
hold = 600
duration = "4s"
[[stages]]
hold = 800
duration = "10s"
[[requests]]
name = "x"
path = "/x"
expect = [200]
[slo]
p99 = "50ms"
errors = "1%"
[analysis]
trim_head = "1s"
trim_tail = "0s"
min_window = "2s"
stability = 1.0
"#,
    )
    .unwrap();
    let results = dir.join("results");
    let out = Command::new(env!("CARGO_BIN_EXE_ceiling"))
        .arg("run")
        .arg(&plan)
        .args(["--url", &format!("http://127.0.0.1:{port}"), "-q"])
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("shelf `hold 600` failed") && err.contains("stop_at_failure"),
        "the stop is said where it happens: {err}"
    );
    let run = ceiling_testkit::only_run(&results);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        j["plan"]["stop_at_failure"], true,
        "recorded: {}",
        j["plan"]
    );
    let stack = &j["stacks"][0];
    let shelves = stack["shelves"].as_array().unwrap();
    let verdict = |label: &str| {
        shelves
            .iter()
            .find(|s| s["label"] == label)
            .map(|s| s["verdict"].as_str().unwrap_or("").to_string())
    };
    assert_eq!(verdict("hold 200").as_deref(), Some("valid"), "{shelves:?}");
    assert_eq!(verdict("hold 300").as_deref(), Some("valid"), "{shelves:?}");
    assert_eq!(
        verdict("hold 600").as_deref(),
        Some("failed"),
        "{shelves:?}"
    );
    // the last shelf is void, and cut: the engine hands a second over after it ends, so the stop
    // takes a second or two — not the shelf's 10 s
    let last = shelves
        .iter()
        .find(|s| s["label"] == "hold 800")
        .expect("the cut shelf is listed");
    assert_eq!(last["verdict"], "invalid", "{last}");
    assert!(
        last["reasons"]
            .to_string()
            .contains("stopped_after_failure"),
        "{}",
        last["reasons"]
    );
    let seen = last["window"]["seen_s"].as_f64().unwrap_or(0.0);
    assert!(
        seen <= 4.0,
        "hold 800 ran {seen} s of 10: the stop did not take"
    );
    // the ceiling is bracketed by the profile itself: 300 held, 600 failed
    let warnings = stack["warnings"].to_string();
    assert!(warnings.contains("stopped_at_failure"), "{warnings}");
    assert!(!warnings.contains("not_bracketed"), "{warnings}");
    std::fs::remove_dir_all(&dir).ok();
}
