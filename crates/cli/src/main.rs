//! `ceiling`: find the highest load a web stack sustains within its latency SLO, and what it costs.

mod load_cmd;
mod record;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// ceiling — RPS@p99≤SLO, measured honestly.
#[derive(Parser)]
#[command(name = "ceiling", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Send load to an HTTP service (open model by rate, or closed by connections) and report
    /// latency from the intended send time, per request name.
    Load(load_cmd::LoadArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Load(a) => load_cmd::run(a),
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
