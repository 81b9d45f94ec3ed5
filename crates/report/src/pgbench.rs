//! `ceiling pgbench`'s result (its `pgbench.json`) and its terminal summary.

/// What one pgbench run measured.
#[derive(Debug, Clone, serde::Serialize)]
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
    pub builtin: &'static str,
    /// Query protocol.
    pub protocol: &'static str,
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

/// The terminal summary of one pgbench run: its settings, then a Markdown table of throughput,
/// latency, failures and both sides' CPU per transaction.
pub fn text(r: &PgbenchResult) -> String {
    let opt =
        |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "–".into());
    format!(
        "pgbench {} ({} protocol), scale {}, {} clients, {} threads, {:.0} s — PostgreSQL {}\n\n\
         | tps | latency avg ms | failed | PostgreSQL CPU % | PG CPU µs/tx | pgbench CPU % | pgbench CPU µs/tx |\n\
         |---|---|---|---|---|---|---|\n\
         | {:.0} | {} | {} | {} | {} | {:.0} | {:.1} |",
        r.builtin,
        r.protocol,
        r.scale,
        r.clients,
        r.threads,
        r.seconds,
        r.postgres_version,
        r.tps,
        opt(r.latency_avg_ms, 3),
        r.failed,
        opt(r.postgres_cpu_pct, 0),
        opt(r.postgres_cpu_us_per_tx, 1),
        r.pgbench_cpu_pct,
        r.pgbench_cpu_us_per_tx,
    )
}
