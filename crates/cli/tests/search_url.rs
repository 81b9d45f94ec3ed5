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

/// `ceiling search --url` of the 400-RPS FIFO service on `port` without a plan, 2-s probes from
/// 150 RPS, no confirming shelf, `--json`, results under `dir`; `more` flags appended.
fn search_fifo(port: u16, dir: &std::path::Path, more: &[&str]) -> std::process::Output {
    ceiling()
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
            "--json",
            "--results",
        ])
        .arg(dir)
        .args(more)
        .output()
        .unwrap()
}

#[test]
fn a_bare_url_is_searched_and_printed_as_json() {
    let port = ceiling_load::testing::spawn_fixed_capacity_server(4, Duration::from_millis(10));
    let dir = std::env::temp_dir().join(format!("ceiling-search-url-{}", std::process::id()));
    let out = search_fifo(port, &dir, &["--repeat", "1", "--max-time", "3m"]);
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
    let run = ceiling_testkit::only_run(&dir);
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
/// `--url a=…,b=…` in interleaved rounds over real sockets, with a **closed-model plan** (source
/// 002's shape: a warm-up of a request count on N connections, levels of connections): the
/// warm-up runs as connections before each round and the probes as rates (under the plan's own
/// model they sent nothing, and the search blamed the service). They take turns, each gets a result
/// that never exceeds its capacity, and the ranking never gives a wrong order. How close the
/// ceilings and the ratio come to the truth is not asserted from one 90-s trial: five runs on
/// 2026-11-27/28 gave slow "≥ 300" (no bracket in its budget), fast 448 (445–487) beside its 2-s
/// probes passing up to 485, ×1.33 (1.26–1.45), ×1.26 (0.95–1.56, not decided), and once slow 144
/// (140–600) after probes had bracketed it at 403–409 — a fault of the pooled fit on few short
/// probes, fixed since (`crates/analyze/tests/recorded_probes.rs`). Accuracy and coverage are
/// asserted where trials are many: the single-URL test above, `crates/search/tests/` (seeded,
/// virtual clock) and bench/search-coverage.sh (real sockets).
#[test]
fn several_urls_are_searched_in_turns_and_ranked_by_their_ratio() {
    let slow = ceiling_load::testing::spawn_fixed_capacity_server(4, Duration::from_millis(10));
    let fast = ceiling_load::testing::spawn_fixed_capacity_server(4, Duration::from_millis(8));
    let dir = std::env::temp_dir().join(format!("ceiling-search-urls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("closed.toml");
    std::fs::write(
        &plan,
        r#"name = "closed-levels"
description = "a closed-model plan searched: warm-up on connections, probes as rates"
[load]
timeout = "5s"
repetitions = 2
[[warmup]]
connections = 4
requests = 200
[[stages]]
connections = 4
duration = "2s"
[[stages]]
connections = 16
duration = "2s"
[[requests]]
name = "x"
path = "/x"
expect = [200]
[slo]
p99 = "50ms"
errors = "1%"
[search]
drain = "2s"   # as a bare URL's search (the default 5 s is sized for a stack and its database)
"#,
    )
    .unwrap();
    let results = dir.join("results");
    let out = ceiling()
        .arg("search")
        .arg(&plan)
        .args([
            "--url",
            &format!("slow=http://127.0.0.1:{slow},fast=http://127.0.0.1:{fast}"),
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
        .arg(&results)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("[slow] round 2"),
        "the services took turns: {err}"
    );
    assert!(
        err.contains("warm-up: c=4 × 200 requests"),
        "the closed warm-up ran as connections: {err}"
    );
    let run = ceiling_testkit::only_run(&results);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    // what ran is recorded: rates, whatever the plan's stages were
    assert_eq!(j["plan"]["model"], "open", "{}", j["plan"]);
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
    // Never more than a service can do: a ceiling above its capacity (400, 500) is wrong.
    assert!(of("slow") <= 440.0, "{ceilings:?}\n{text}");
    assert!(of("fast") <= 550.0, "{ceilings:?}\n{text}");
    let pair = &j["ranking"][0];
    let lo = pair["lo"].as_f64().unwrap_or(f64::NAN);
    let hi = pair["hi"].as_f64().unwrap_or(f64::NAN);
    // Never a wrong order: slow is never ranked above fast, and a ratio interval, when there is
    // one, never lies wholly beyond the true ×1.25 (with 10% for the two queues' different
    // headroom under one p99 limit) nor wholly below 1.
    let wrong = if pair["a"] == "slow" {
        pair["order"] == "higher"
    } else {
        pair["order"] == "lower" || (lo.is_finite() && (lo > 1.25 * 1.1 || hi < 1.0))
    };
    assert!(!wrong, "{pair}\n{text}");
    assert!(text.contains("ranking:"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 35 item 7: the shipped command's coverage over real sockets, on the wall clock — `ceiling
/// search --url` against a fixed-capacity FIFO service whose crossing for 2-s probes is known
/// (4 workers × 10 ms: 400–408 RPS, `crates/search/tests/simulated_capacity.rs`), repeated
/// `CEILING_COVERAGE_TRIALS` times (default 10), each on a fresh service. About a minute a trial:
/// not part of `make test`; `bench/search-coverage.sh` runs it and keeps the tally it prints
/// (the virtual-clock coverage of the same statistics is `crates/search/tests/`).
#[test]
#[ignore = "a benchmark: bench/search-coverage.sh"]
fn coverage_over_real_sockets() {
    let n: usize = std::env::var("CEILING_COVERAGE_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let (truth_lo, truth_hi) = (400.0, 408.0);
    let mut rows: Vec<(f64, f64, f64, String, usize, f64)> = Vec::new();
    for trial in 0..n {
        let port = ceiling_load::testing::spawn_fixed_capacity_server(4, Duration::from_millis(10));
        let dir = std::env::temp_dir().join(format!(
            "ceiling-search-coverage-{}-{trial}",
            std::process::id()
        ));
        let out = search_fifo(port, &dir, &["--max-time", "4m"]);
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        let s = &v[0];
        let c = s["ceiling_rps"].as_f64().unwrap_or(f64::NAN);
        let lo = s["interval"]["lo"].as_f64().unwrap_or(f64::NAN);
        let hi = s["interval"]["hi"].as_f64().unwrap_or(f64::NAN);
        let status = s["status"].as_str().unwrap_or("?").to_string();
        let probes = s["probes"].as_array().map_or(0, Vec::len);
        let elapsed = s["elapsed_s"].as_f64().unwrap_or(f64::NAN);
        eprintln!(
            "trial {trial}: {c:.0} RPS (95% CI {lo:.0}–{hi:.0}), {status}, {probes} probes, {elapsed:.0} s"
        );
        rows.push((c, lo, hi, status, probes, elapsed));
    }
    // the interval covers the truth when it reaches into the true crossing's range
    let covered = rows
        .iter()
        .filter(|r| r.1 <= truth_hi && r.2 >= truth_lo)
        .count();
    let narrowed = rows.iter().filter(|r| r.3 == "narrowed").count();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let half = median(
        rows.iter()
            .map(|r| (r.2 - r.1) / 2.0 / r.0 * 100.0)
            .collect(),
    );
    let probes = median(rows.iter().map(|r| r.4 as f64).collect());
    let secs = median(rows.iter().map(|r| r.5).collect());
    eprintln!(
        "coverage over real sockets: {n} trials, the 95% interval reached the true {truth_lo:.0}–{truth_hi:.0} in {covered}, narrowed in {narrowed}; median half-width ±{half:.1}%, median {probes:.0} probes, {secs:.0} s"
    );
    assert!(covered * 10 >= n * 8, "coverage {covered}/{n}");
}
