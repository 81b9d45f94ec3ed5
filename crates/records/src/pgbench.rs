//! `ceiling pgbench`'s record, its `pgbench.json` (rendered by `ceiling_report::pgbench`).

/// What one pgbench run measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PgbenchResult {
    /// Schema version of this file.
    pub schema: u32,
    /// When the run started (UTC).
    pub started: String,
    /// PostgreSQL server version.
    pub postgres_version: String,
    /// The plan whose stand settings were used.
    pub plan: String,
    /// Built-in script.
    pub builtin: String,
    /// Query protocol.
    pub protocol: String,
    /// Clients, threads, scale, seconds.
    pub clients: u32,
    /// pgbench worker threads.
    pub threads: u32,
    /// Scale factor.
    pub scale: u32,
    /// Requested duration, seconds.
    pub seconds: f64,
    /// Transactions processed (pgbench's count).
    pub transactions: u64,
    /// Failed transactions (pgbench ≥ 15 reports them).
    pub failed: u64,
    /// Transactions per second, without initial connection time (pgbench's figure).
    pub tps: f64,
    /// Mean latency, ms (pgbench's figure).
    pub latency_avg_ms: Option<f64>,
    /// PostgreSQL's CPU over the run, % of one core (cgroup counter when limited, else /proc).
    pub postgres_cpu_pct: Option<f64>,
    /// PostgreSQL CPU per transaction, µs.
    pub postgres_cpu_us_per_tx: Option<f64>,
    /// pgbench's own CPU (user + system) over the run, % of one core.
    pub pgbench_cpu_pct: f64,
    /// pgbench's own CPU per transaction, µs.
    pub pgbench_cpu_us_per_tx: f64,
    /// The exact command line (password not included).
    pub command: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_json_reads_back_as_written() {
        let r = PgbenchResult {
            schema: 1,
            started: "2026-11-29T06:37:29Z".into(),
            postgres_version: "16.4".into(),
            plan: "000-status-mixed".into(),
            builtin: "select-only".into(),
            protocol: "prepared".into(),
            clients: 4,
            threads: 2,
            scale: 1,
            seconds: 5.0,
            transactions: 398_605,
            failed: 0,
            tps: 79_721.3,
            latency_avg_ms: Some(0.05),
            postgres_cpu_pct: Some(128.0),
            postgres_cpu_us_per_tx: Some(16.2),
            pgbench_cpu_pct: 70.0,
            pgbench_cpu_us_per_tx: 8.8,
            command: "pgbench -b select-only@1 -M prepared -c 4 -j 2 -T 5".into(),
        };
        let back: PgbenchResult =
            serde_json::from_str(&serde_json::to_string_pretty(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
