//! `ceiling pgbench`: the database's own ceiling on this machine — flags parsed here; the stand
//! started with the plan's settings, pgbench run and the result written by
//! `ceiling_lab::pgbench::pgbench_on_stand`; the result printed here.

use crate::run_cmd::StandArgs;
use anyhow::bail;
use ceiling_lab::pgbench::{pgbench_on_stand, Builtin, PgbenchSpec, Protocol};
use ceiling_lab::{repo_root, run_id, Progress};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// pgbench's built-in scripts (`--builtin`).
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BuiltinArg {
    /// One primary-key SELECT per transaction (`pgbench -S`): the read ceiling.
    SelectOnly,
    /// TPC-B-like without the branch/teller updates (`pgbench -N`).
    SimpleUpdate,
    /// TPC-B-like (pgbench's default).
    TpcbLike,
}

impl From<BuiltinArg> for Builtin {
    fn from(b: BuiltinArg) -> Builtin {
        match b {
            BuiltinArg::SelectOnly => Builtin::SelectOnly,
            BuiltinArg::SimpleUpdate => Builtin::SimpleUpdate,
            BuiltinArg::TpcbLike => Builtin::TpcbLike,
        }
    }
}

/// pgbench's query protocols (`--protocol`).
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ProtocolArg {
    /// One simple-protocol query per statement.
    Simple,
    /// Extended protocol, unnamed statements.
    Extended,
    /// Extended protocol with prepared statements (what pgx, pgjdbc and r2dbc do for hot queries).
    Prepared,
}

impl From<ProtocolArg> for Protocol {
    fn from(p: ProtocolArg) -> Protocol {
        match p {
            ProtocolArg::Simple => Protocol::Simple,
            ProtocolArg::Extended => Protocol::Extended,
            ProtocolArg::Prepared => Protocol::Prepared,
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
    #[arg(long, value_enum, default_value_t = BuiltinArg::SelectOnly)]
    pub builtin: BuiltinArg,
    /// Query protocol (pgbench -M).
    #[arg(long, value_enum, default_value_t = ProtocolArg::Prepared)]
    pub protocol: ProtocolArg,
    #[command(flatten)]
    pub stand: StandArgs,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `ceiling pgbench`.
pub fn run(a: PgbenchArgs) -> anyhow::Result<ExitCode> {
    let root = repo_root()?;
    let plan = ceiling_plan::load_plan(&a.plan)?;
    let duration = ceiling_plan::parse_duration(&a.duration)
        .map_err(|e| anyhow::anyhow!("--duration {}: {e}", a.duration))?;
    if duration < Duration::from_secs(1) || duration > Duration::from_secs(3600) {
        bail!("--duration {}: must be between 1s and 1h", a.duration);
    }
    if a.clients == 0 || a.threads == 0 || a.scale == 0 {
        bail!("--clients, --threads and --scale must be at least 1");
    }
    let spec = PgbenchSpec {
        builtin: a.builtin.into(),
        protocol: a.protocol.into(),
        clients: a.clients,
        threads: a.threads,
        scale: a.scale,
        duration,
        pg_bin: a.stand.pg_bin.as_deref(),
    };
    let id = format!("{}-pgbench", run_id(&plan));
    let dir = a.stand.results.join(&id);
    let opts = a.stand.options(&root, &dir);
    let progress = Progress::new(|l| eprintln!("{l}"));
    let r = pgbench_on_stand(&spec, &opts, &plan.stand, &plan.name, &dir, &progress)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!("{}", ceiling_report::pgbench::text(&r));
    }
    eprintln!("results: {}", dir.join("pgbench.json").display());
    Ok(ExitCode::SUCCESS)
}
