//! `ceiling pgbench`'s terminal summary, from its record (`ceiling_records::pgbench::PgbenchResult`,
//! its `pgbench.json`).

use ceiling_records::pgbench::PgbenchResult;

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
