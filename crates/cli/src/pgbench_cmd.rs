//! `ceiling pgbench`: the database's own ceiling on this machine. PostgreSQL's pgbench (built-in
//! select-only script by default) against the stand's PostgreSQL, started with the plan's settings
//! and limits, so a stack's RPS@p99≤SLO can be read beside what the database alone sustains — and
//! with CPU per transaction measured the same way as the stacks' CPU per request.

use crate::run_cmd::StandArgs;
use anyhow::{bail, Context};
use ceiling_lab::{now_iso, repo_root, run_id};
use ceiling_stand::Stand;
use ceiling_stand::{Measurer, SampleTarget};
use clap::{Args, ValueEnum};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// The scratch database pgbench initializes and drops (never the stacks' databases).
const PGBENCH_DB: &str = "ceiling_pgbench";

/// pgbench's built-in scripts.
#[derive(Clone, Copy, Debug, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    /// One primary-key SELECT per transaction (`pgbench -S`): the read ceiling.
    SelectOnly,
    /// TPC-B-like without the branch/teller updates (`pgbench -N`).
    SimpleUpdate,
    /// TPC-B-like (pgbench's default).
    TpcbLike,
}

impl Builtin {
    fn name(self) -> &'static str {
        match self {
            Builtin::SelectOnly => "select-only",
            Builtin::SimpleUpdate => "simple-update",
            Builtin::TpcbLike => "tpcb-like",
        }
    }
}

/// pgbench's query protocols.
#[derive(Clone, Copy, Debug, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// One simple-protocol query per statement.
    Simple,
    /// Extended protocol, unnamed statements.
    Extended,
    /// Extended protocol with prepared statements (what pgx, pgjdbc and r2dbc do for hot queries).
    Prepared,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }
}

/// Arguments of `ceiling pgbench`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ceiling pgbench plans/000-status-mixed.toml                  (select-only, 64 clients, 60 s)
  ceiling pgbench plans/000-status-mixed.toml --clients 32 --duration 30s --builtin simple-update

pgbench runs on the same machine as PostgreSQL (as the generator does in a run), over TCP on
loopback. Its own CPU is reported separately from PostgreSQL's.")]
pub struct PgbenchArgs {
    /// The plan whose stand settings (PostgreSQL version, postgresql.conf settings, CPU limit) to use.
    pub plan: PathBuf,
    /// Client connections (pgbench -c).
    #[arg(long, default_value_t = 64)]
    pub clients: u32,
    /// pgbench worker threads (pgbench -j).
    #[arg(long, default_value_t = 2)]
    pub threads: u32,
    /// How long to run (pgbench -T), e.g. 60s, 2m.
    #[arg(long, default_value = "60s")]
    pub duration: String,
    /// Scale factor of the pgbench tables (pgbench -i -s; 100,000 accounts per unit).
    #[arg(long, default_value_t = 10)]
    pub scale: u32,
    /// Built-in script.
    #[arg(long, value_enum, default_value_t = Builtin::SelectOnly)]
    pub builtin: Builtin,
    /// Query protocol (pgbench -M).
    #[arg(long, value_enum, default_value_t = Protocol::Prepared)]
    pub protocol: Protocol,
    #[command(flatten)]
    pub stand: StandArgs,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// What one pgbench run measured.
#[derive(Debug, Serialize)]
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

/// Parses pgbench's report: (transactions, failed, tps, latency average ms).
pub fn parse_report(out: &str) -> Option<(u64, u64, f64, Option<f64>)> {
    let after = |prefix: &str| -> Option<&str> {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(prefix).map(str::trim))
    };
    let first_num = |s: &str| -> Option<f64> {
        s.split_whitespace()
            .next()
            .and_then(|w| w.split('/').next())
            .and_then(|w| w.parse().ok())
    };
    let tx = after("number of transactions actually processed:").and_then(first_num)? as u64;
    let failed = after("number of failed transactions:")
        .and_then(first_num)
        .unwrap_or(0.0) as u64;
    // pgbench 15+: "tps = 1234.5 (without initial connection time)"; older ones print two lines
    // ("including connections establishing" / "excluding ..."): take the excluding one.
    let tps = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("tps = "))
        .find(|l| l.contains("without initial connection") || l.contains("excluding"))
        .or_else(|| out.lines().find_map(|l| l.trim().strip_prefix("tps = ")))
        .and_then(first_num)?;
    let lat = after("latency average =").and_then(first_num);
    Some((tx, failed, tps, lat))
}

/// CPU (user + system) of waited-for children so far, µs: `cutime` + `cstime` of
/// /proc/self/stat (clock-tick resolution, fine for runs of seconds). 0 if unreadable.
fn children_cpu_us() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    // Fields after the command name (which may hold spaces) start at `state`, field 3;
    // cutime and cstime are fields 16 and 17.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0;
    };
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(12).copied().unwrap_or(0) + f.get(13).copied().unwrap_or(0);
    ticks * 1_000_000 / rustix::param::clock_ticks_per_second().max(1)
}

/// pgbench next to the stand's own server binaries (or --pg-bin), else where `psql` is looked for.
fn find_pgbench(stand: &Stand, pg_bin: Option<&Path>) -> anyhow::Result<PathBuf> {
    let near = pg_bin
        .map(Path::to_path_buf)
        .or_else(|| stand.postgres().map(|pg| pg.binaries().bin_dir.clone()));
    ceiling_stand::find_pg_tool(
        "pgbench",
        near.as_deref(),
        "install PostgreSQL's server package (scripts/setup.sh core) or pass --pg-bin",
    )
    .map_err(|e| anyhow::anyhow!("{e}"))
}

fn run_logged(cmd: &mut Command, what: &str) -> anyhow::Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {what}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("{what} failed ({}):\n{}", out.status, tail.join("\n"));
    }
    Ok(text)
}

/// Runs `ceiling pgbench`.
pub fn run(a: PgbenchArgs) -> anyhow::Result<ExitCode> {
    let root = repo_root()?;
    let plan = ceiling_plan::load_plan(&a.plan).map_err(|e| anyhow::anyhow!("{e}"))?;
    let secs = ceiling_plan::parse_duration(&a.duration)
        .map_err(|e| anyhow::anyhow!("--duration {}: {e}", a.duration))?;
    if secs < Duration::from_secs(1) || secs > Duration::from_secs(3600) {
        bail!("--duration {}: must be between 1s and 1h", a.duration);
    }
    if a.clients == 0 || a.threads == 0 || a.scale == 0 {
        bail!("--clients, --threads and --scale must be at least 1");
    }
    let id = format!("{}-pgbench", run_id(&plan));
    let dir = a.stand.results.join(&id);
    std::fs::create_dir_all(dir.join("logs"))
        .with_context(|| format!("creating {}", dir.display()))?;

    let opts = a.stand.options(&root, &dir);
    eprintln!("stand: starting PostgreSQL…");
    let mut stand = Stand::start(&opts, &plan.stand).map_err(|e| anyhow::anyhow!("{e}"))?;
    let result = measure(&a, &stand, &plan.name, secs, &dir);
    let _ = ceiling_stand::drop_database(stand.admin(), PGBENCH_DB);
    stand.stop();
    let r = result?;
    std::fs::write(dir.join("pgbench.json"), serde_json::to_string_pretty(&r)?)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!("{}", render(&r));
    }
    eprintln!("results: {}", dir.join("pgbench.json").display());
    Ok(ExitCode::SUCCESS)
}

fn measure(
    a: &PgbenchArgs,
    stand: &Stand,
    plan_name: &str,
    secs: Duration,
    dir: &Path,
) -> anyhow::Result<PgbenchResult> {
    let pgbench = find_pgbench(stand, a.stand.pg_bin.as_deref())?;
    let admin = stand.admin();
    ceiling_stand::drop_database(admin, PGBENCH_DB).map_err(|e| anyhow::anyhow!("{e}"))?;
    admin
        .exec(&format!("create database {PGBENCH_DB}"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let c = &admin.config;
    let conn_args = [
        "-h".to_string(),
        c.host.clone(),
        "-p".into(),
        c.port.to_string(),
        "-U".into(),
        c.user.clone(),
    ];
    let base = || {
        let mut cmd = Command::new(&pgbench);
        cmd.env("PGPASSWORD", &c.password).args(&conn_args);
        cmd
    };
    eprintln!("pgbench: initializing scale {} …", a.scale);
    let t = Instant::now();
    let init = run_logged(
        base().args(["-i", "-q", "-s", &a.scale.to_string(), PGBENCH_DB]),
        "pgbench -i",
    )?;
    std::fs::write(dir.join("logs/pgbench-init.txt"), &init)?;
    eprintln!("pgbench: initialized in {:.1}s", t.elapsed().as_secs_f64());

    let script = format!("{}@1", a.builtin.name());
    let args: Vec<String> = vec![
        "-b".into(),
        script,
        "-M".into(),
        a.protocol.name().into(),
        "-c".into(),
        a.clients.to_string(),
        "-j".into(),
        a.threads.to_string(),
        "-T".into(),
        secs.as_secs().max(1).to_string(),
        // the tables were just vacuumed by -i
        "-n".into(),
        PGBENCH_DB.into(),
    ];
    let command = format!(
        "{} {} {}",
        pgbench.display(),
        conn_args.join(" "),
        args.join(" ")
    );
    eprintln!("pgbench: {command}");
    let mut targets = Vec::new();
    if let Some(pg) = stand.postgres() {
        targets.push(SampleTarget::tree(
            ceiling_stand::Role::Postgres,
            pg.pid(),
            pg.cgroup().map(ceiling_stand::CgroupProbe::of),
        ));
    }
    let mut meter = Measurer::new(targets);
    let start = Instant::now();
    meter.tick(start);
    let cpu0 = children_cpu_us();
    let out = run_logged(base().args(&args), "pgbench")?;
    let wall = start.elapsed().as_secs_f64();
    let client_us = children_cpu_us().saturating_sub(cpu0) as f64;
    let pg_sample = meter
        .tick(start)
        .into_iter()
        .find(|s| s.who == ceiling_stand::Role::Postgres);
    std::fs::write(dir.join("logs/pgbench.txt"), &out)?;
    let (transactions, failed, tps, latency_avg_ms) =
        parse_report(&out).with_context(|| format!("cannot read pgbench's report:\n{out}"))?;
    let per_tx = |cpu_pct: f64| cpu_pct / 100.0 * wall * 1e6 / transactions.max(1) as f64;
    let postgres_cpu_pct = pg_sample.map(|s| s.cpu_pct);
    let pgbench_cpu_pct = client_us / 1e6 / wall * 100.0;
    Ok(PgbenchResult {
        schema: 1,
        started: now_iso(),
        postgres_version: stand.postgres_version().to_string(),
        plan: plan_name.to_string(),
        builtin: a.builtin.name(),
        protocol: a.protocol.name(),
        clients: a.clients,
        threads: a.threads,
        scale: a.scale,
        seconds: secs.as_secs_f64(),
        transactions,
        failed,
        tps,
        latency_avg_ms,
        postgres_cpu_pct,
        postgres_cpu_us_per_tx: postgres_cpu_pct.map(per_tx),
        pgbench_cpu_pct,
        pgbench_cpu_us_per_tx: per_tx(pgbench_cpu_pct),
        command,
    })
}

fn render(r: &PgbenchResult) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    const PG15: &str = "pgbench (15.10 (Debian 15.10-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 10
query mode: prepared
number of clients: 64
number of threads: 2
maximum number of tries: 1
duration: 60 s
number of transactions actually processed: 1234567
number of failed transactions: 0 (0.000%)
latency average = 3.108 ms
initial connection time = 95.123 ms
tps = 20576.101234 (without initial connection time)
";

    #[test]
    fn parses_pgbench_15_report() {
        let (tx, failed, tps, lat) = parse_report(PG15).unwrap();
        assert_eq!(tx, 1234567);
        assert_eq!(failed, 0);
        assert!((tps - 20576.101234).abs() < 1e-6);
        assert_eq!(lat, Some(3.108));
    }

    #[test]
    fn parses_old_two_tps_lines_taking_excluding() {
        let old = "number of transactions actually processed: 100/100\n\
                   tps = 50.0 (including connections establishing)\n\
                   tps = 60.0 (excluding connections establishing)\n";
        let (tx, _, tps, lat) = parse_report(old).unwrap();
        assert_eq!(tx, 100);
        assert_eq!(tps, 60.0);
        assert_eq!(lat, None);
    }

    #[test]
    fn garbage_is_none() {
        assert!(parse_report("connection to server failed").is_none());
    }
}
