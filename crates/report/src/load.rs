//! The report of `ceiling load` (its `summary.json`) and its terminal tables: the figures of one
//! load as data, judged by `ceiling_lab::load_report`, and rendered here with the rest of
//! ceiling's output.

use std::fmt::Write;

pub use ceiling_analyze::Percentiles;

/// One request of the plan's mix, as the load went.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TagReport {
    /// The request's name in the plan.
    pub name: String,
    /// Completed requests (any outcome).
    pub requests: u64,
    /// Completed per second, over the same seconds as [`LoadReport::achieved_rps`].
    pub rps: f64,
    /// Latency from the intended send time (open model) or the write (closed).
    pub latency: Percentiles,
    /// Service time: from the request's write to its response.
    pub service: Percentiles,
    /// Requests by outcome other than ok.
    pub errors: std::collections::BTreeMap<&'static str, u64>,
}

/// The machine-readable summary of `ceiling load`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadReport {
    /// Version of this file's layout.
    pub schema_version: u32,
    /// The target.
    pub url: String,
    /// `open` or `closed`.
    pub model: String,
    /// Factor every duration was scaled by (`--quick`).
    pub scaled_by: f64,
    /// Seconds recorded in the measured phase.
    pub measured_seconds: u32,
    /// The measured duration the offered rate is over, seconds: the plan's measured stages when
    /// the run ran them in full, else the seconds in which requests were offered.
    pub measured_duration_s: f64,
    /// Requests the schedule offered.
    pub offered: u64,
    /// Offered per second.
    pub offered_rps: f64,
    /// Requests completed (any outcome).
    pub completed: u64,
    /// Completed per second: over [`LoadReport::measured_duration_s`], or over
    /// [`LoadReport::measured_seconds`] when replies kept coming more than a second past the
    /// planned end (a service that queued what it could not serve).
    pub achieved_rps: f64,
    /// Where latency is measured from.
    pub latency_origin: String,
    /// Latency over every request.
    pub latency: Percentiles,
    /// Service time over every request.
    pub service: Percentiles,
    /// How late the generator dispatched its sends (its own punctuality).
    pub schedule_lag: Percentiles,
    /// Requests by outcome other than ok.
    pub errors: std::collections::BTreeMap<&'static str, u64>,
    /// Errors over completed.
    pub error_rate: f64,
    /// Requests refused for a full backlog (the connection cap reached).
    pub overflow: u64,
    /// The same per request of the plan.
    pub per_request: Vec<TagReport>,
    /// The generator's CPU over the run, seconds.
    pub generator_cpu_seconds: f64,
    /// The generator's CPU per completed request, µs.
    pub generator_cpu_us_per_request: f64,
    /// The generator's mean CPU, % of one core.
    pub generator_cpu_mean_pct: f64,
    /// The generator's busiest second, % of one core.
    pub generator_cpu_max_pct: f64,
    /// The generator was the limit: the figures describe it, not the service.
    pub generator_bound: bool,
    /// Why (or that it kept up), in one sentence.
    pub generator_verdict: String,
    /// Connections that could not be opened (their requests were never sent).
    pub connect_failures: u64,
    /// The first connection failure, e.g. `connecting to 127.0.0.1:9: Connection refused (os error 111)`.
    pub connect_error: Option<String>,
    /// No request reached the service: every connection attempt failed.
    pub no_connection: bool,
    /// The `reset` errors taken apart by what the connection did, and the idle-close retries
    /// (absent when there were neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_resets: Option<String>,
    /// The TLS handshakes of an https run (absent for cleartext).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsReport>,
    /// HTTP/2's connections (absent for HTTP/1.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2: Option<H2Report>,
    /// The ticked engine and its tick, when `--tick` chose it (absent: the default engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Real-time scheduling of the generator's threads, when `--realtime` asked for it (absent:
    /// normal scheduling at nice −10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime: Option<String>,
    /// One line: what this result is (the connection failure, generator-bound, or fine).
    pub verdict: String,
    /// Stopped before the plan's end (a signal, an agent lost).
    pub stopped_early: bool,
    /// Per generator agent, when the load came from agents (`--agents`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<AgentReport>>,
}

/// The TLS handshakes of an https run: timed from the TCP connection to the end of the handshake,
/// apart from the requests' latency (a request that needed a new connection has its handshake in
/// its latency too).
#[derive(Debug, Clone, serde::Serialize)]
pub struct TlsReport {
    /// Protocol version (`TLSv1_3`) and ALPN protocol, as negotiated.
    pub version: Option<String>,
    /// ALPN protocol as negotiated.
    pub alpn: Option<String>,
    /// Handshakes done.
    pub handshakes: u64,
    /// Of which resumed an earlier session.
    pub resumed: u64,
    /// Median handshake.
    pub handshake_p50_ms: f64,
    /// 99th percentile handshake.
    pub handshake_p99_ms: f64,
    /// Longest handshake.
    pub handshake_max_ms: f64,
    /// What the client trusted: the system's roots, a CA file, or nothing (`--insecure`).
    pub trust: String,
    /// All of it in one line, as the terminal shows it.
    pub line: String,
}

/// What HTTP/2 multiplexing did: connections opened, the streams setting, the most in use on one.
#[derive(Debug, Clone, serde::Serialize)]
pub struct H2Report {
    /// The streams setting.
    pub streams_per_connection: usize,
    /// Connections opened.
    pub connections: u64,
    /// The most streams in use on one connection.
    pub max_streams_in_use: usize,
    /// All of it in one line, as the terminal shows it.
    pub line: String,
}

/// One generator agent's part of a run with `--agents`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AgentReport {
    /// `host:port` it was reached at.
    pub address: String,
    /// The name it gave.
    pub name: String,
    /// Its clock − this one's, µs, and the round trip that bounds the error (± half of it).
    pub clock_offset_us: i64,
    /// Round trip of the clock probe that bounds the offset's error.
    pub clock_rtt_us: i64,
    /// Its share of the schedule, `I/N`.
    pub shard: String,
    /// Requests its share offered.
    pub offered: u64,
    /// Requests it wrote.
    pub sent: u64,
    /// Requests it completed.
    pub completed: u64,
    /// Its own schedule lag.
    pub schedule_lag: Percentiles,
    /// Its mean CPU, % of one core.
    pub generator_cpu_mean_pct: f64,
    /// Its busiest second, % of one core.
    pub generator_cpu_max_pct: f64,
    /// It was the limit.
    pub generator_bound: bool,
    /// Why (or that it kept up).
    pub generator_verdict: String,
    /// Its own `reset` errors taken apart and its idle-close retries (absent when neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_resets: Option<String>,
    /// Its TLS handshakes (https targets; the merged `tls` adds every agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_handshakes: Option<u64>,
    /// Its HTTP/2 connections (with --http2; the merged `http2` adds every agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2_connections: Option<u64>,
    /// Set when the agent vanished before it said it was done: what happened, and how much of
    /// its record arrived (everything that arrived is in the merged figures).
    pub lost: Option<String>,
}

/// The terminal table of one load: requests and rates, errors, the connection, TLS, HTTP/2 and
/// engine lines, latency, service time and schedule lag percentiles, the per-request table of a
/// mix, the generator's CPU and the verdict. Starts with an empty line.
pub fn text(r: &LoadReport) -> String {
    let mut o = String::new();
    let row = |o: &mut String, name: &str, p: &Percentiles| {
        let _ = writeln!(
            o,
            "  {:<22} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            name, p.p50_ms, p.p90_ms, p.p95_ms, p.p99_ms, p.p999_ms, p.max_ms
        );
    };
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "  Requests      offered {} ({:.1}/s)   completed {} ({:.1}/s)   over {} s{}",
        r.offered,
        r.offered_rps,
        r.completed,
        r.achieved_rps,
        trim_secs(r.measured_duration_s),
        if r.scaled_by != 1.0 {
            format!("   [scaled ×{}]", r.scaled_by)
        } else {
            String::new()
        }
    );
    let errs = if r.errors.is_empty() {
        "none".to_string()
    } else {
        r.errors
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(o, "  Errors        {errs} ({:.3}%)", r.error_rate * 100.0);
    if let (Some(e), false) = (&r.connect_error, r.no_connection) {
        let _ = writeln!(
            o,
            "  Connections   {} could not be opened (first: {e})",
            r.connect_failures
        );
    }
    let lines = [
        ("Resets", r.connection_resets.as_deref()),
        ("TLS", r.tls.as_ref().map(|t| t.line.as_str())),
        ("HTTP/2", r.http2.as_ref().map(|h| h.line.as_str())),
        ("Engine", r.engine.as_deref()),
        ("Scheduling", r.realtime.as_deref()),
    ];
    for (label, line) in lines {
        if let Some(line) = line {
            let _ = writeln!(o, "  {label:<13} {line}");
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "ms", "p50", "p90", "p95", "p99", "p99.9", "max"
    );
    let origin = if r.model == "open" {
        "intended"
    } else {
        "closed"
    };
    row(&mut o, &format!("latency ({origin})"), &r.latency);
    row(&mut o, "service time", &r.service);
    if r.model == "open" {
        row(&mut o, "schedule lag", &r.schedule_lag);
    }
    if r.per_request.len() > 1 {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "per request", "rps", "p50", "p90", "p99", "p99.9", "max", "errors"
        );
        for t in &r.per_request {
            let _ = writeln!(
                o,
                "  {:<22} {:>9.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9}",
                t.name,
                t.rps,
                t.latency.p50_ms,
                t.latency.p90_ms,
                t.latency.p99_ms,
                t.latency.p999_ms,
                t.latency.max_ms,
                t.errors.values().sum::<u64>()
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "  Generator     {:.2} CPU-s, {:.2} µs CPU/request, mean {:.0}% / max {:.0}% of a core",
        r.generator_cpu_seconds,
        r.generator_cpu_us_per_request,
        r.generator_cpu_mean_pct,
        r.generator_cpu_max_pct
    );
    let _ = writeln!(o, "  Verdict       {}", r.verdict);
    o
}

/// The agents' table: each one's share, what it sent, its lag, CPU, clock offset and verdict.
/// Starts with an empty line.
pub fn agents_text(agents: &[AgentReport]) -> String {
    let mut o = String::new();
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "  {:<16} {:<22} {:>6} {:>10} {:>10} {:>12} {:>8} {:>13}  verdict",
        "agent", "address", "shard", "sent", "completed", "lag p99 ms", "CPU max", "clock offset"
    );
    for g in agents {
        let verdict = match (&g.lost, g.generator_bound) {
            (Some(l), _) => format!("LOST: {l}"),
            (None, true) => "generator-bound".to_string(),
            (None, false) => "kept up".to_string(),
        };
        let _ = writeln!(
            o,
            "  {:<16} {:<22} {:>6} {:>10} {:>10} {:>12.3} {:>7.0}% {:>6.2} ±{:.2} ms  {}",
            g.name,
            g.address,
            g.shard,
            g.sent,
            g.completed,
            g.schedule_lag.p99_ms,
            g.generator_cpu_max_pct,
            g.clock_offset_us as f64 / 1000.0,
            g.clock_rtt_us as f64 / 2000.0,
            verdict
        );
    }
    o
}

/// `2`, `2.5`: seconds without trailing zeros.
fn trim_secs(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_lose_trailing_zeros_only() {
        assert_eq!(trim_secs(2.0), "2");
        assert_eq!(trim_secs(2.5), "2.5");
        assert_eq!(trim_secs(10.125), "10.125");
    }
}
