//! `ceiling pgbench`'s measurement: the database's own ceiling on this machine. PostgreSQL's
//! pgbench against the stand's PostgreSQL (started with the plan's settings and limits), so a
//! stack's RPS@p99≤SLO can be read beside what the database alone sustains — with CPU per
//! transaction measured the way the stacks' CPU per request is.

use crate::error::{LabError, Result};
use crate::now_iso;
use crate::Progress;
use ceiling_stand::{Measurer, SampleTarget, Stand, StandError};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The scratch database pgbench initializes and drops (never the stacks' databases).
pub const PGBENCH_DB: &str = "ceiling_pgbench";

/// pgbench's built-in scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// One primary-key SELECT per transaction (`pgbench -S`): the read ceiling.
    SelectOnly,
    /// TPC-B-like without the branch/teller updates (`pgbench -N`).
    SimpleUpdate,
    /// TPC-B-like (pgbench's default).
    TpcbLike,
}

impl Builtin {
    /// pgbench's name for it (`-b NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Builtin::SelectOnly => "select-only",
            Builtin::SimpleUpdate => "simple-update",
            Builtin::TpcbLike => "tpcb-like",
        }
    }
}

/// pgbench's query protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// One simple-protocol query per statement.
    Simple,
    /// Extended protocol, unnamed statements.
    Extended,
    /// Extended protocol with prepared statements (what pgx, pgjdbc and r2dbc do for hot queries).
    Prepared,
}

impl Protocol {
    /// pgbench's name for it (`-M NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }
}

/// What one pgbench run is to do.
#[derive(Clone, Copy, Debug)]
pub struct PgbenchSpec<'a> {
    /// Built-in script.
    pub builtin: Builtin,
    /// Query protocol.
    pub protocol: Protocol,
    /// Client connections (`-c`).
    pub clients: u32,
    /// Worker threads (`-j`).
    pub threads: u32,
    /// Scale factor of its tables (`-i -s`).
    pub scale: u32,
    /// How long it runs (`-T`).
    pub duration: Duration,
    /// Where pgbench is, when not beside the stand's own server binaries.
    pub pg_bin: Option<&'a Path>,
}

/// What one pgbench run measured (the data lives with its rendering in the output layer).
pub use ceiling_records::pgbench::PgbenchResult;

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

/// pgbench next to the stand's own server binaries (or `pg_bin`), else where `psql` is looked for.
fn find_pgbench(stand: &Stand, pg_bin: Option<&Path>) -> Result<std::path::PathBuf> {
    let near = pg_bin
        .map(Path::to_path_buf)
        .or_else(|| stand.postgres().map(|pg| pg.binaries().bin_dir.clone()));
    Ok(ceiling_stand::find_pg_tool(
        "pgbench",
        near.as_deref(),
        "install PostgreSQL's server package (scripts/setup.sh core) or pass --pg-bin",
    )
    .map_err(StandError::from)?)
}

/// Runs `cmd`; its stdout and stderr together, or a refusal with their last 15 lines.
fn run_logged(cmd: &mut Command, what: &str) -> Result<String> {
    let out = cmd
        .output()
        .map_err(|e| LabError::io(format!("cannot start {what}"), e))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(LabError::refused(format!(
            "{what} failed ({}):\n{}",
            out.status,
            tail.join("\n")
        )));
    }
    Ok(text)
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| LabError::io(format!("writing {}", path.display()), e))
}

/// `ceiling pgbench` whole: PostgreSQL started with `settings` (the plan's stand), pgbench run
/// against it ([`pgbench`]), its database dropped and the stand stopped whatever happened, and
/// the result written to `dir/pgbench.json`.
pub fn pgbench_on_stand(
    spec: &PgbenchSpec<'_>,
    opts: &ceiling_stand::StandOptions,
    settings: &ceiling_plan::StandSettings,
    plan_name: &str,
    dir: &Path,
    progress: &Progress,
) -> Result<PgbenchResult> {
    std::fs::create_dir_all(dir.join("logs"))
        .map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
    progress.say("stand: starting PostgreSQL…");
    let mut stand = Stand::start(opts, settings)?;
    let result = pgbench(spec, &stand, plan_name, dir, progress);
    let _ = ceiling_stand::drop_database(stand.admin(), PGBENCH_DB);
    stand.stop();
    let r = result?;
    let path = dir.join("pgbench.json");
    let text = serde_json::to_string_pretty(&r)
        .map_err(|e| LabError::refused(format!("pgbench.json: {e}")))?;
    std::fs::write(&path, text)
        .map_err(|e| LabError::io(format!("writing {}", path.display()), e))?;
    Ok(r)
}

/// Runs pgbench as `spec` says against `stand`'s PostgreSQL (a scratch database, [`PGBENCH_DB`],
/// made afresh and left for the caller to drop), its logs in `dir/logs`; PostgreSQL's CPU is
/// sampled over the run as a stack's is, pgbench's own from its process.
pub fn pgbench(
    spec: &PgbenchSpec<'_>,
    stand: &Stand,
    plan_name: &str,
    dir: &Path,
    progress: &Progress,
) -> Result<PgbenchResult> {
    let pgbench = find_pgbench(stand, spec.pg_bin)?;
    let admin = stand.admin();
    ceiling_stand::drop_database(admin, PGBENCH_DB).map_err(StandError::from)?;
    admin
        .exec(&format!("create database {PGBENCH_DB}"))
        .map_err(StandError::from)?;
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
    progress.say(&format!("pgbench: initializing scale {} …", spec.scale));
    let t = Instant::now();
    let init = run_logged(
        base().args(["-i", "-q", "-s", &spec.scale.to_string(), PGBENCH_DB]),
        "pgbench -i",
    )?;
    write(&dir.join("logs/pgbench-init.txt"), &init)?;
    progress.say(&format!(
        "pgbench: initialized in {:.1}s",
        t.elapsed().as_secs_f64()
    ));

    let script = format!("{}@1", spec.builtin.name());
    let args: Vec<String> = vec![
        "-b".into(),
        script,
        "-M".into(),
        spec.protocol.name().into(),
        "-c".into(),
        spec.clients.to_string(),
        "-j".into(),
        spec.threads.to_string(),
        "-T".into(),
        spec.duration.as_secs().max(1).to_string(),
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
    progress.say(&format!("pgbench: {command}"));
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
    write(&dir.join("logs/pgbench.txt"), &out)?;
    let (transactions, failed, tps, latency_avg_ms) = parse_report(&out)
        .ok_or_else(|| LabError::refused(format!("cannot read pgbench's report:\n{out}")))?;
    let per_tx = |cpu_pct: f64| cpu_pct / 100.0 * wall * 1e6 / transactions.max(1) as f64;
    let postgres_cpu_pct = pg_sample.map(|s| s.cpu_pct);
    let pgbench_cpu_pct = client_us / 1e6 / wall * 100.0;
    Ok(PgbenchResult {
        schema: 1,
        started: now_iso(),
        postgres_version: stand.postgres_version().to_string(),
        plan: plan_name.to_string(),
        builtin: spec.builtin.name().to_string(),
        protocol: spec.protocol.name().to_string(),
        clients: spec.clients,
        threads: spec.threads,
        scale: spec.scale,
        seconds: spec.duration.as_secs_f64(),
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
