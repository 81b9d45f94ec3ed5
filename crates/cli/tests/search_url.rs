//! `ceiling search --url` without a plan, through the binary: a bare URL needs an SLO, and a
//! service of known capacity (4 workers × 10 ms = 400 RPS behind an unbounded queue) is found
//! with `--json` giving the ceiling, its interval, the status and the binding term.

use std::process::Command;
use std::time::Duration;

fn ceiling() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ceiling"))
}

#[test]
fn a_bare_url_needs_an_slo() {
    let out = ceiling()
        .args(["search", "--url", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--slo"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_bare_url_is_searched_and_printed_as_json() {
    let port = ceiling_load::testing::spawn_fixed_capacity_server(4, Duration::from_millis(10));
    let dir = std::env::temp_dir().join(format!("ceiling-search-url-{}", std::process::id()));
    let out = ceiling()
        .args([
            "search",
            "--url",
            &format!("http://127.0.0.1:{port}/x"),
            "--slo",
            "p99<=50ms,errors<1%",
            "--start-rate",
            "150",
            "--probe",
            "2s",
            "--probe-trim",
            "500ms",
            "--confirm",
            "0s",
            "--repeat",
            "1",
            "--max-time",
            "3m",
            "--json",
            "--results",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let s = &v[0];
    assert_eq!(s["target"], "url");
    let c = s["ceiling_rps"].as_f64().unwrap();
    let lo = s["interval"]["lo"].as_f64().unwrap();
    let hi = s["interval"]["hi"].as_f64().unwrap();
    // The true crossing for 2-s probes lies in 400…408 (crates/search/tests/simulated_capacity.rs);
    // a loaded CI machine may shift it a little, never by a factor.
    assert!(lo <= 420.0 && hi >= 380.0 && lo <= c && c <= hi, "{s}");
    assert!(
        ["narrowed", "bracketed"].contains(&s["status"].as_str().unwrap()),
        "{s}"
    );
    assert_eq!(s["binding"], "p99");
    assert!(s["probes"].as_array().unwrap().len() >= 4);
    // The results directory has run.json with the environment filled in.
    let run = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert!(
        j["environment"].is_object(),
        "environment: {}",
        j["environment"]
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Two running services 25% apart (400 and 500 RPS of capacity behind FIFO queues), searched as
/// `--url a=…,b=…` in interleaved rounds over real sockets: both ceilings are found, and the
/// ranking puts the faster one first with a ratio interval that holds the true 1.25.
#[test]
fn several_urls_are_searched_in_turns_and_ranked_by_their_ratio() {
    let slow = ceiling_load::testing::spawn_fixed_capacity_server(4, Duration::from_millis(10));
    let fast = ceiling_load::testing::spawn_fixed_capacity_server(4, Duration::from_millis(8));
    let dir = std::env::temp_dir().join(format!("ceiling-search-urls-{}", std::process::id()));
    let out = ceiling()
        .args([
            "search",
            "--url",
            &format!("slow=http://127.0.0.1:{slow}/x,fast=http://127.0.0.1:{fast}/x"),
            "--slo",
            "p99<=50ms,errors<1%",
            "--start-rate",
            "150",
            "--probe",
            "2s",
            "--probe-trim",
            "500ms",
            "--confirm",
            "0s",
            "--repeat",
            "1",
            "--round",
            "3",
            "--max-time",
            "90s",
            "--results",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("[slow] round 2"),
        "the services took turns: {err}"
    );
    let run = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    let ceilings: Vec<(String, f64)> = j["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["stack"].as_str().unwrap().to_string(),
                s["search"]["ceiling_rps"].as_f64().unwrap(),
            )
        })
        .collect();
    let of = |n: &str| ceilings.iter().find(|(s, _)| s == n).unwrap().1;
    assert!(
        (380.0..=440.0).contains(&of("slow")),
        "{ceilings:?}\n{text}"
    );
    assert!(
        (470.0..=540.0).contains(&of("fast")),
        "{ceilings:?}\n{text}"
    );
    let pair = &j["ranking"][0];
    assert_eq!(pair["a"], "fast", "{pair}\n{text}");
    assert_eq!(pair["b"], "slow", "{pair}\n{text}");
    let lo = pair["lo"].as_f64().unwrap_or(f64::INFINITY);
    let hi = pair["hi"].as_f64().unwrap_or(f64::NEG_INFINITY);
    assert!(
        lo <= 1.25 && 1.25 <= hi,
        "ratio interval {lo}–{hi} misses 1.25: {pair}"
    );
    assert!(text.contains("ranking:"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}
