//! `timeseries.csv`: one row per second with the generator's view and, when the stand samples
//! them, the stack's, the database's (and PgBouncer's) and the generator's CPU and memory.

use crate::{Outcome, ResourceSample, Role, Second};
use serde::{Deserialize, Serialize};
use std::io::Write;

/// One row of `timeseries.csv`. Latencies in milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TimeseriesRow {
    /// Seconds since the run started.
    pub t: u32,
    /// `warmup` or `measure`.
    pub phase: String,
    /// Stage index within its phase.
    pub stage: usize,
    /// Requests scheduled (open) or sent (closed) in this second.
    pub offered_rps: u64,
    /// Requests that completed in this second (any outcome).
    pub achieved_rps: u64,
    /// Latency percentiles over all request names, ms.
    pub p50_ms: f64,
    /// p90, ms.
    pub p90_ms: f64,
    /// p95, ms.
    pub p95_ms: f64,
    /// p99, ms.
    pub p99_ms: f64,
    /// p99.9, ms.
    pub p999_ms: f64,
    /// Max, ms.
    pub max_ms: f64,
    /// Completed with an expected status.
    pub ok: u64,
    /// Unexpected 4xx.
    pub err_4xx: u64,
    /// Unexpected 5xx.
    pub err_5xx: u64,
    /// Timeouts.
    pub err_timeout: u64,
    /// Connect errors.
    pub err_connect: u64,
    /// Resets / closed mid-response.
    pub err_reset: u64,
    /// Other errors (unexpected 1xx-3xx, malformed).
    pub err_other: u64,
    /// Schedule lag p99, ms (open model).
    pub lag_p99_ms: f64,
    /// Requests waiting for a connection at the end of the second.
    pub backlog: u64,
    /// Requests refused because the backlog was full.
    pub overflow: u64,
    /// Open connections.
    pub connections: u64,
    /// Generator CPU, % of one core.
    pub generator_cpu_pct: f64,
    /// Stack process tree CPU, % of one core (empty when not sampled).
    pub stack_cpu_pct: Option<f64>,
    /// Stack process tree RSS, MiB.
    pub stack_rss_mb: Option<f64>,
    /// PostgreSQL CPU, % of one core.
    pub postgres_cpu_pct: Option<f64>,
    /// PostgreSQL RSS, MiB.
    pub postgres_rss_mb: Option<f64>,
    /// PgBouncer CPU, % of one core (empty when the plan has no PgBouncer; absent in older files).
    #[serde(default)]
    pub pgbouncer_cpu_pct: Option<f64>,
    /// PgBouncer RSS, MiB.
    #[serde(default)]
    pub pgbouncer_rss_mb: Option<f64>,
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl TimeseriesRow {
    /// Builds a row from a generator second and the resource samples taken in it.
    pub fn from_second(s: &Second, resources: &[ResourceSample]) -> Self {
        let h = s.latency();
        let c = s.counts();
        let q = |p: f64| {
            if h.is_empty() {
                0.0
            } else {
                ms(h.value_at_quantile(p))
            }
        };
        let pick = |who: Role| resources.iter().rev().find(|r| r.who == who);
        TimeseriesRow {
            t: s.t,
            phase: match s.phase {
                crate::Phase::Warmup => "warmup".into(),
                crate::Phase::Measure => "measure".into(),
            },
            stage: s.stage,
            offered_rps: s.offered,
            achieved_rps: c.total(),
            p50_ms: q(0.50),
            p90_ms: q(0.90),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: if h.is_empty() { 0.0 } else { ms(h.max()) },
            ok: c.get(Outcome::Ok),
            err_4xx: c.get(Outcome::Status4xx),
            err_5xx: c.get(Outcome::Status5xx),
            err_timeout: c.get(Outcome::Timeout),
            err_connect: c.get(Outcome::Connect),
            err_reset: c.get(Outcome::Reset),
            err_other: c.get(Outcome::Other) + c.get(Outcome::Unexpected),
            lag_p99_ms: if s.lag.is_empty() {
                0.0
            } else {
                ms(s.lag.value_at_quantile(0.99))
            },
            backlog: s.backlog,
            overflow: s.overflow,
            connections: s.connections,
            generator_cpu_pct: s.generator_cpu,
            stack_cpu_pct: pick(Role::Stack).map(|r| r.cpu_pct),
            stack_rss_mb: pick(Role::Stack).map(|r| r.rss_bytes as f64 / 1048576.0),
            postgres_cpu_pct: pick(Role::Postgres).map(|r| r.cpu_pct),
            postgres_rss_mb: pick(Role::Postgres).map(|r| r.rss_bytes as f64 / 1048576.0),
            pgbouncer_cpu_pct: pick(Role::Pgbouncer).map(|r| r.cpu_pct),
            pgbouncer_rss_mb: pick(Role::Pgbouncer).map(|r| r.rss_bytes as f64 / 1048576.0),
        }
    }
}

/// Writes rows as CSV, flushing each one (a crash loses at most the current second).
pub struct TimeseriesWriter<W: Write> {
    csv: csv::Writer<W>,
}

impl<W: Write> TimeseriesWriter<W> {
    /// A writer that emits the header with the first row.
    pub fn new(out: W) -> Self {
        TimeseriesWriter {
            csv: csv::Writer::from_writer(out),
        }
    }
    /// A writer that continues a file whose header is already written (opened for appending).
    pub fn appending(out: W) -> Self {
        TimeseriesWriter {
            csv: csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(out),
        }
    }
    /// Writes and flushes one row.
    pub fn write(&mut self, row: &TimeseriesRow) -> std::io::Result<()> {
        self.csv.serialize(row).map_err(std::io::Error::other)?;
        self.csv.flush()
    }
}

/// Reads `timeseries.csv` back (used by `ceiling report` and tests).
pub fn read_timeseries<R: std::io::Read>(r: R) -> Result<Vec<TimeseriesRow>, String> {
    csv::Reader::from_reader(r)
        .deserialize()
        .collect::<Result<_, _>>()
        .map_err(|e| format!("timeseries.csv: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_without_pgbouncer_columns_still_read() {
        let mut buf = Vec::new();
        TimeseriesWriter::new(&mut buf)
            .write(&TimeseriesRow {
                t: 3,
                phase: "measure".into(),
                postgres_cpu_pct: Some(12.5),
                pgbouncer_cpu_pct: Some(4.0),
                ..Default::default()
            })
            .unwrap();
        let text = String::from_utf8(buf).unwrap();
        let rows = read_timeseries(text.as_bytes()).unwrap();
        assert_eq!(rows[0].pgbouncer_cpu_pct, Some(4.0));
        // an older file: no PgBouncer columns at all
        let old: Vec<String> = text
            .lines()
            .map(|l| {
                let cols: Vec<&str> = l.split(',').collect();
                cols[..cols.len() - 2].join(",")
            })
            .collect();
        let rows = read_timeseries(old.join("\n").as_bytes()).unwrap();
        assert_eq!((rows[0].t, rows[0].postgres_cpu_pct), (3, Some(12.5)));
        assert_eq!(rows[0].pgbouncer_cpu_pct, None);
    }
}
