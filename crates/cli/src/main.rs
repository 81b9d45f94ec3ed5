//! `ceiling`: find the highest load a web stack sustains within its latency SLO, and what it costs.
#![forbid(unsafe_code)]
// The doc comments of the argument structs are the `--help` text users read (clap shows them
// verbatim), so they are written for a terminal, not for rustdoc: `results/<run-id>/` and
// `[analysis]` are literal text there.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

mod agents;
mod claims_cmd;
mod compare_cmd;
mod gates;
mod k8s_cmd;
mod load_cmd;
mod merge_cmd;
mod pgbench_cmd;
mod report_cmd;
mod run_cmd;
mod search_cmd;
mod up_cmd;
mod verify_cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// ceiling — RPS@p99≤SLO, measured honestly.
#[derive(Parser)]
#[command(
    name = "ceiling",
    version,
    about = "ceiling — the highest load a web stack sustains within its latency SLO (RPS@p99≤SLO), and what it costs",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// For https:// targets: trust only the CA certificates in this PEM file (instead of the
    /// system's roots). An agent takes its own.
    #[arg(long, global = true, value_name = "FILE")]
    cacert: Option<std::path::PathBuf>,
    /// For https:// targets: do not check the server's certificate chain or name (a test
    /// service's self-signed certificate). An agent takes its own.
    #[arg(long, global = true)]
    insecure: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Send load to an HTTP service (open model by rate, or closed by connections) and report
    /// latency from the intended send time, per request name.
    Load(load_cmd::LoadArgs),
    /// Run a plan end to end on the embedded stand: PostgreSQL, each stack in turn under limits,
    /// conformance check, load, analysis (RPS@p99≤SLO), reports in results/<run-id>/.
    Run(run_cmd::RunArgs),
    /// Find RPS@p99≤SLO automatically: probes fitted monotonically on every SLO term until the
    /// ceiling's 95% interval is within the tolerance, recovery checked between probes, then a
    /// confirming shelf; several stacks take turns and end in one table.
    Search(search_cmd::SearchArgs),
    /// Rebuild summary.md, shelves.csv and report.html of a results directory from its run.json
    /// and per-second files, and print the table.
    Report(report_cmd::ReportArgs),
    /// Merge the outputs of several `ceiling load --shard I/N` processes exactly (histograms
    /// added, never percentiles averaged).
    Merge(merge_cmd::MergeArgs),
    /// Set a run beside its source's published tables (--source), or compare two runs or two
    /// stacks of one run with significance (Welch's t on repetitions, intervals for searches).
    Compare(compare_cmd::CompareArgs),
    /// Every source's claims (plans/published/claims/) judged against the latest runs in
    /// results/: holds, does not hold, not decided, or not testable here (why); --write
    /// regenerates docs/claims.md.
    Claims(claims_cmd::ClaimsArgs),
    /// Check that a stack does the contract's work: every positive and negative case, payloads
    /// against the database, statements counted in pg_stat_statements, money conserved.
    Verify(verify_cmd::VerifyArgs),
    /// The database's own ceiling: pgbench (select-only by default) against the stand's
    /// PostgreSQL with a plan's settings, with PostgreSQL's CPU per transaction.
    Pgbench(pgbench_cmd::PgbenchArgs),
    /// Serve as a generator agent: a coordinator's `ceiling load --agents` hands this process a
    /// share of its schedule, and the recorded seconds stream back to it.
    Agent(agents::AgentArgs),
    /// Keep a verified reference stack running on the embedded stand (PostgreSQL with the plan's
    /// settings, the stack under its limits) to point your own tools at; stops by itself after
    /// --for, on Ctrl-C, or when the stack dies.
    Up(up_cmd::UpArgs),
    /// Render a plan as Kubernetes manifests (PostgreSQL, each stack with requests = limits,
    /// generator agents as an Indexed Job, roles on different nodes), a Dockerfile per stack and a
    /// run script. Renders only; nothing is applied to a cluster.
    K8s(k8s_cmd::K8sArgs),
    /// Internal: the control endpoint a run probes to tell a host stall from a stack stall
    /// (serves and probes itself over loopback, one line per probe on stdout).
    #[command(hide = true)]
    ControlServer,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    ceiling_load::set_tls_defaults(ceiling_load::TlsOptions {
        cacert: cli.cacert.clone(),
        insecure: cli.insecure,
    });
    // The one place signals are handled: the first Ctrl-C cancels whatever runs (each command
    // writes what it has), the second stops everything ceiling started and exits.
    if let Err(e) = ceiling_stand::install_signal_cleanup(std::time::Duration::from_millis(500)) {
        eprintln!("warning: Ctrl-C handling could not be installed: {e}");
    }
    let res = match cli.cmd {
        Cmd::Load(a) => load_cmd::run(a),
        Cmd::Agent(a) => agents::agent(a),
        Cmd::K8s(a) => k8s_cmd::run(a),
        Cmd::Run(a) => run_cmd::run(a),
        Cmd::Search(a) => search_cmd::run(a),
        Cmd::Report(a) => report_cmd::run(a),
        Cmd::Compare(a) => compare_cmd::run(a),
        Cmd::Claims(a) => claims_cmd::run(a),
        Cmd::Merge(a) => merge_cmd::run(a),
        Cmd::Verify(a) => verify_cmd::run(a),
        Cmd::Pgbench(a) => pgbench_cmd::run(a),
        Cmd::Up(a) => up_cmd::run(a),
        Cmd::ControlServer => {
            // runs until the parent stops reading (or kills us by pid)
            let _ = ceiling_stand::control::serve_and_probe(
                std::time::Duration::from_millis(100),
                ceiling_stand::signals::CONTROL_TIMEOUT,
                std::io::stdout().lock(),
            );
            Ok(ExitCode::SUCCESS)
        }
    };
    match res {
        Ok(code) => code,
        // A step that stopped because of Ctrl-C: not a failure of the tool, and said so.
        Err(e) if ceiling_stand::cancelled() => {
            eprintln!("stopped by a signal: {e:#}");
            ExitCode::from(128 + ceiling_stand::interrupted().unwrap_or(2) as u8)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
