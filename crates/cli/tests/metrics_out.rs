//! `--metrics-listen`: while `ceiling load` runs, its endpoint is scraped and parsed with a
//! Prometheus text-format parser (the `prometheus-parse` crate); every second seen there must be
//! the second `timeseries.csv` recorded — the same offered and achieved requests and p99.

use prometheus_parse::{Scrape, Value};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The body of a `200` answer to `GET path`.
fn http_get(addr: &str, path: &str) -> Option<String> {
    match ceiling_testkit::http_get(addr, path)? {
        (200, body) => Some(body),
        _ => None,
    }
}

fn gauge(scrape: &Scrape, name: &str, quantile: Option<&str>) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && quantile.is_none_or(|q| s.labels.get("quantile") == Some(q)))
        .and_then(|s| match s.value {
            Value::Gauge(v) | Value::Counter(v) | Value::Untyped(v) => Some(v),
            _ => None,
        })
}

#[test]
fn a_scrape_during_a_load_shows_the_seconds_timeseries_csv_records() {
    let port = ceiling_load::testing::spawn_fixed_capacity_server(4, Duration::from_millis(2));
    let out = std::env::temp_dir().join(format!("ceiling-metrics-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ceiling"))
        .args([
            "load",
            "--url",
            &format!("http://127.0.0.1:{port}/x"),
            "--rate",
            "300",
            "--duration",
            "6s",
            "--metrics-listen",
            "127.0.0.1:0",
            "-q",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut addr = None;
    let mut said = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while addr.is_none() && Instant::now() < deadline {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            break;
        }
        said.push_str(&line);
        addr = line
            .strip_prefix("metrics: http://")
            .and_then(|r| r.split('/').next())
            .map(str::to_string);
    }
    let addr = addr.unwrap_or_else(|| panic!("no `metrics:` line: {said}"));
    // (t, offered, achieved, p99 in seconds) of every scrape that had a second
    let mut seen: Vec<(u32, f64, f64, f64)> = Vec::new();
    let mut requests_total = 0.0;
    while child.try_wait().unwrap().is_none() {
        if let Some(body) = http_get(&addr, "/metrics") {
            let scrape = Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
            requests_total = gauge(&scrape, "ceiling_requests_total", None).unwrap_or(0.0);
            if let (Some(t), Some(o), Some(a), Some(p)) = (
                gauge(&scrape, "ceiling_second", None),
                gauge(&scrape, "ceiling_offered_rps", None),
                gauge(&scrape, "ceiling_achieved_rps", None),
                gauge(&scrape, "ceiling_latency_seconds", Some("0.99")),
            ) {
                seen.push((t as u32, o, a, p));
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let mut rest = String::new();
    err.read_to_string(&mut rest).ok();
    assert!(child.wait().unwrap().success(), "{said}{rest}");
    seen.dedup_by_key(|s| s.0);
    assert!(seen.len() >= 4, "too few seconds scraped: {seen:?}");
    let csv = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let rows = ceiling_metrics::read_timeseries(csv.as_bytes()).unwrap();
    for (t, offered, achieved, p99_s) in &seen {
        let row = rows
            .iter()
            .find(|r| r.t == *t)
            .unwrap_or_else(|| panic!("second {t} scraped but not in timeseries.csv"));
        assert_eq!(*offered, row.offered_rps as f64, "second {t}");
        assert_eq!(*achieved, row.achieved_rps as f64, "second {t}");
        assert!(
            (p99_s * 1000.0 - row.p99_ms).abs() < 1e-6,
            "second {t}: {p99_s} s vs {} ms",
            row.p99_ms
        );
    }
    // the counter adds up the seconds published before the last scrape
    let total: u64 = rows.iter().map(|r| r.achieved_rps).sum();
    assert!(
        requests_total > 0.0 && requests_total <= total as f64,
        "{requests_total} of {total}"
    );
    std::fs::remove_dir_all(&out).ok();
}
