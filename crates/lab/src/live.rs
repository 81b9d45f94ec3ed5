//! Metrics out while a run runs (`--metrics-listen 127.0.0.1:9464` on `load`, `run` and
//! `search`): the latest recorded second of whatever is being measured, served in Prometheus'
//! text exposition format (version 0.0.4, which Prometheus, Grafana Agent and OpenMetrics
//! scrapers all read) at `/metrics`, so a run can be watched live (docs/grafana-dashboard.json).
//! The figures are the very rows written to `timeseries.csv`, published as each second is
//! recorded ([`crate::Recorder::second`]); nothing is sampled twice.

use crate::error::{LabError, Result};
use ceiling_metrics::TimeseriesRow;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// What the endpoint serves: the latest second and the totals since it started.
#[derive(Default)]
struct State {
    /// The measured target's name (a stack, `url`, `load`).
    target: String,
    row: Option<TimeseriesRow>,
    requests: u64,
    errors: u64,
}

static STATE: OnceLock<Mutex<State>> = OnceLock::new();

/// Serves `/metrics` on `addr` (`127.0.0.1:9464`; port 0 picks a free one) from a thread that
/// lives as long as the process. Returns the bound address.
pub fn serve(addr: &str) -> Result<SocketAddr> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| LabError::io(format!("--metrics-listen {addr}: cannot listen"), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| LabError::io(format!("--metrics-listen {addr}"), e))?;
    STATE.get_or_init(|| Mutex::new(State::default()));
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for conn in listener.incoming().flatten() {
                // one scraper at a time is plenty; a slow one cannot hold the run
                let _ = answer(conn);
            }
        })
        .map_err(|e| LabError::io("starting the metrics thread", e))?;
    Ok(local)
}

/// Publishes one recorded second of `target` (nothing when no endpoint was started).
pub fn publish(target: &str, row: &TimeseriesRow) {
    let Some(state) = STATE.get() else {
        return;
    };
    if let Ok(mut s) = state.lock() {
        if s.target != target {
            s.target = target.to_string();
        }
        s.requests += row.achieved_rps;
        s.errors += errors_of(row);
        s.row = Some(row.clone());
    }
}

fn errors_of(r: &TimeseriesRow) -> u64 {
    r.err_4xx + r.err_5xx + r.err_timeout + r.err_connect + r.err_reset + r.err_other
}

fn answer(mut conn: TcpStream) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // read the headers to their end, so closing does not reset the scraper's connection
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let path = request.split_whitespace().nth(1).unwrap_or("");
    let (status, body, ctype) = if path == "/metrics" || path.starts_with("/metrics?") {
        (
            "200 OK",
            render(),
            "text/plain; version=0.0.4; charset=utf-8",
        )
    } else {
        ("404 Not Found", "see /metrics\n".to_string(), "text/plain")
    };
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The exposition text of the current state.
fn render() -> String {
    let Some(state) = STATE.get() else {
        return String::new();
    };
    let s = match state.lock() {
        Ok(s) => s,
        Err(p) => p.into_inner(),
    };
    render_state(&s)
}

fn render_state(s: &State) -> String {
    let mut out = String::new();
    let esc = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"");
    let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{{{labels}}} {v}");
        }
    };
    let target = format!("target=\"{}\"", esc(&s.target));
    family(
        "ceiling_requests_total",
        "counter",
        "Requests completed since the endpoint started.",
        &[(target.clone(), s.requests as f64)],
    );
    family(
        "ceiling_errors_total",
        "counter",
        "Requests that ended in an error since the endpoint started.",
        &[(target.clone(), s.errors as f64)],
    );
    let Some(r) = &s.row else {
        return out;
    };
    let l = format!("{target},phase=\"{}\",stage=\"{}\"", esc(&r.phase), r.stage);
    let g = |v: f64| vec![(l.clone(), v)];
    family(
        "ceiling_second",
        "gauge",
        "The run's second (since its start) the other gauges describe.",
        &g(r.t as f64),
    );
    family(
        "ceiling_offered_rps",
        "gauge",
        "Requests offered in that second.",
        &g(r.offered_rps as f64),
    );
    family(
        "ceiling_achieved_rps",
        "gauge",
        "Requests completed in that second.",
        &g(r.achieved_rps as f64),
    );
    family(
        "ceiling_errors",
        "gauge",
        "Requests that ended in an error in that second.",
        &g(errors_of(r) as f64),
    );
    let q = |quantile: &str, ms: f64| (format!("{l},quantile=\"{quantile}\""), ms / 1000.0);
    family(
        "ceiling_latency_seconds",
        "gauge",
        "Latency from the intended send time over that second, by quantile.",
        &[
            q("0.5", r.p50_ms),
            q("0.9", r.p90_ms),
            q("0.95", r.p95_ms),
            q("0.99", r.p99_ms),
            q("0.999", r.p999_ms),
            q("1", r.max_ms),
        ],
    );
    family(
        "ceiling_schedule_lag_p99_seconds",
        "gauge",
        "The generator's own lateness (p99) in that second.",
        &g(r.lag_p99_ms / 1000.0),
    );
    family(
        "ceiling_backlog",
        "gauge",
        "Requests waiting for a connection at the end of that second.",
        &g(r.backlog as f64),
    );
    family(
        "ceiling_connections",
        "gauge",
        "Open connections.",
        &g(r.connections as f64),
    );
    family(
        "ceiling_generator_cpu_cores",
        "gauge",
        "The generator's CPU in that second, in cores.",
        &g(r.generator_cpu_pct / 100.0),
    );
    let opt = |name: &str, help: &str, v: Option<f64>| (name.to_string(), help.to_string(), v);
    for (name, help, v) in [
        opt(
            "ceiling_stack_cpu_cores",
            "The stack's CPU, in cores.",
            r.stack_cpu_pct.map(|p| p / 100.0),
        ),
        opt(
            "ceiling_stack_rss_bytes",
            "The stack's resident memory.",
            r.stack_rss_mb.map(|m| m * 1_048_576.0),
        ),
        opt(
            "ceiling_postgres_cpu_cores",
            "PostgreSQL's CPU, in cores.",
            r.postgres_cpu_pct.map(|p| p / 100.0),
        ),
        opt(
            "ceiling_postgres_rss_bytes",
            "PostgreSQL's resident memory.",
            r.postgres_rss_mb.map(|m| m * 1_048_576.0),
        ),
    ] {
        if let Some(v) = v {
            family(&name, "gauge", &help, &g(v));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_names_every_figure_of_the_row_with_its_labels() {
        let row = TimeseriesRow {
            t: 12,
            phase: "measure".into(),
            offered_rps: 1500,
            achieved_rps: 1498,
            ok: 1490,
            err_5xx: 8,
            p99_ms: 35.5,
            stack_cpu_pct: Some(95.0),
            ..Default::default()
        };
        let s = State {
            target: "go-pgx".into(),
            row: Some(row),
            requests: 9000,
            errors: 8,
        };
        let text = render_state(&s);
        for line in [
            "ceiling_requests_total{target=\"go-pgx\"} 9000",
            "ceiling_second{target=\"go-pgx\",phase=\"measure\",stage=\"0\"} 12",
            "ceiling_offered_rps{target=\"go-pgx\",phase=\"measure\",stage=\"0\"} 1500",
            "ceiling_errors{target=\"go-pgx\",phase=\"measure\",stage=\"0\"} 8",
            "ceiling_latency_seconds{target=\"go-pgx\",phase=\"measure\",stage=\"0\",quantile=\"0.99\"} 0.0355",
            "ceiling_stack_cpu_cores{target=\"go-pgx\",phase=\"measure\",stage=\"0\"} 0.95",
            "# TYPE ceiling_requests_total counter",
        ] {
            assert!(text.lines().any(|l| l == line), "missing `{line}` in\n{text}");
        }
        // figures that were not sampled are left out, never written as 0
        assert!(!text.contains("ceiling_postgres_cpu_cores"), "{text}");
    }
}
