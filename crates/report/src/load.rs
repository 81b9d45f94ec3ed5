//! `ceiling load`'s terminal tables, from its record (`ceiling_records::load::LoadReport`, its
//! `summary.json`), rendered here with the rest of ceiling's output.

use ceiling_records::load::{AgentReport, LoadReport, Percentiles};
use std::fmt::Write;

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
