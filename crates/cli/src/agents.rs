//! Generator agents: `ceiling agent` (serves one coordinator at a time) and the agent flags
//! `load`, `run` and `search` share. The coordinator side is the lab's (`ceiling_lab::load` for
//! `ceiling load --agents`, the probe runner for `run|search --agents`), through
//! [`ceiling_agent::coordinator::open_job`] and its `Session::run_job`.
//!
//! A session: the coordinator connects, presents the shared token and probes the agent's clock
//! ([`ceiling_agent::session`]); when every agent's offset is within the bound it sends each agent
//! its data files (offered by digest, [`Message::Offer`]; only those the agent does not hold
//! from an earlier session travel, [`Message::Data`]) and then `Run` with the measurement's typed
//! [`ceiling_agent::Job`] (the engine's configuration, the same for `load`, `run` and `search`),
//! carrying its share of the
//! schedule (`I/N`: every N-th intended send time from I, so the agents' arrivals together are the
//! plan's) and a start instant on that agent's own clock. Each agent runs the ordinary engine and
//! streams every recorded second back as it is recorded; the coordinator adds the seconds of all
//! agents with the same index (HdrHistogram addition, never averaged percentiles) and feeds them to
//! the same recorder, files and report as a local run. An agent that vanishes is reported with
//! what it had sent; what arrived is kept.

use anyhow::{bail, Context};
pub use ceiling_agent::coordinator::Agents;
use ceiling_agent::serve::{serve_sessions, ServeOptions, Served};
use ceiling_plan::parse_duration;
use clap::Args;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The agent options `run`, `search` and `load` share.
#[derive(Args, Debug, Clone, Default)]
pub struct AgentFlags {
    /// Generator agents (`ceiling agent --listen ADDR`) that send the load instead of this
    /// process, comma separated: each takes every N-th intended send time, their seconds are
    /// merged exactly (histograms added), one generator-bound agent makes a shelf invalid, and an
    /// agent lost mid-run invalidates the shelves it no longer covered.
    #[arg(long, value_delimiter = ',')]
    pub agents: Vec<String>,
    /// File holding the agents' shared token (else the CEILING_AGENT_TOKEN environment variable).
    #[arg(long, value_name = "FILE")]
    pub agent_token_file: Option<PathBuf>,
    /// Refuse to start when an agent's clock differs from this one's by more than this (plus
    /// half the probe's round trip).
    #[arg(long, default_value = "5ms")]
    pub max_clock_offset: String,
}

impl AgentFlags {
    /// The agents to use, or `None` for a local generator.
    pub fn agents(&self) -> anyhow::Result<Option<Agents>> {
        agents_of(
            &self.agents,
            self.agent_token_file.as_deref(),
            &self.max_clock_offset,
        )
    }

    /// The agent beside a remote stack (`--stack-agent`), with the same token and clock bound.
    pub fn stack_agent(&self, address: Option<&str>) -> anyhow::Result<Option<Agents>> {
        match address {
            None => Ok(None),
            Some(a) => agents_of(
                &[a.to_string()],
                self.agent_token_file.as_deref(),
                &self.max_clock_offset,
            ),
        }
    }
}

/// The agents named on a command line (`None`: none), with the token read and the bound parsed.
fn agents_of(
    addresses: &[String],
    token_file: Option<&Path>,
    max_clock_offset: &str,
) -> anyhow::Result<Option<Agents>> {
    if addresses.is_empty() {
        return Ok(None);
    }
    let token = read_token(token_file)?;
    let max_clock_offset =
        parse_duration(max_clock_offset).map_err(|e| anyhow::anyhow!("--max-clock-offset: {e}"))?;
    Ok(Some(Agents {
        addresses: addresses.to_vec(),
        token,
        max_clock_offset,
    }))
}

/// Arguments of `ceiling agent`.
#[derive(Args, Debug)]
#[command(after_help = "Example (two agents on this machine, one coordinator):
  echo \"$TOKEN\" > tok
  ceiling agent --listen 127.0.0.1:7701 --token-file tok &
  ceiling agent --listen 127.0.0.1:7702 --token-file tok &
  ceiling load --url http://127.0.0.1:8080/ping --rate 20000 --duration 30s \\
      --agents 127.0.0.1:7701,127.0.0.1:7702 --agent-token-file tok")]
pub struct AgentArgs {
    /// Address to listen on for a coordinator (`ip:port`; any address of this host you own).
    #[arg(long)]
    pub listen: String,
    /// File holding the shared token (else the CEILING_AGENT_TOKEN environment variable); at
    /// least 16 characters. A coordinator without it is refused.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Name reported to the coordinator (default: the listen address).
    #[arg(long)]
    pub name: Option<String>,
    /// Allow targets that are not loopback (only addresses you own). The coordinator cannot
    /// grant this: the agent's own flag decides.
    #[arg(long)]
    pub allow_remote: bool,
    /// Serve one session, then exit (default: serve sessions one after another until Ctrl-C).
    #[arg(long)]
    pub once: bool,
    /// Also sample this process tree as the stack under test when a coordinator asks (a remote
    /// stack beside this agent: `ceiling search --url … --stack-agent THIS_ADDRESS`).
    #[arg(long, value_name = "PID")]
    pub sample_stack: Option<u32>,
    /// And this process tree as PostgreSQL.
    #[arg(long, value_name = "PID")]
    pub sample_postgres: Option<u32>,
}

/// The shared token from a file or CEILING_AGENT_TOKEN.
pub fn read_token(file: Option<&Path>) -> anyhow::Result<String> {
    let t = match file {
        Some(f) => std::fs::read_to_string(f)
            .with_context(|| format!("reading the agent token file {}", f.display()))?,
        None => std::env::var("CEILING_AGENT_TOKEN").map_err(|_| {
            anyhow::anyhow!(
                "no agent token: pass --token-file FILE (or --agent-token-file) or set CEILING_AGENT_TOKEN"
            )
        })?,
    };
    let t = t.trim().to_string();
    if t.chars().count() < 16 {
        bail!(
            "the agent token is {} characters; use at least 16 (e.g. `openssl rand -hex 16`)",
            t.chars().count()
        );
    }
    Ok(t)
}

/// Runs `ceiling agent`.
pub fn agent(a: AgentArgs) -> anyhow::Result<ExitCode> {
    let token = read_token(a.token_file.as_deref())?;
    for pid in [a.sample_stack, a.sample_postgres].into_iter().flatten() {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            bail!("--sample-stack/--sample-postgres {pid}: no such process on this host");
        }
    }
    let listener = TcpListener::bind(&a.listen)
        .with_context(|| format!("--listen {}: cannot listen there", a.listen))?;
    let addr = listener.local_addr()?;
    let name = a.name.clone().unwrap_or_else(|| addr.to_string());
    eprintln!(
        "ceiling agent `{name}` listening on {addr} (targets: loopback{})",
        if a.allow_remote {
            " and remote"
        } else {
            " only"
        }
    );
    let opts = ServeOptions {
        allow_remote: a.allow_remote,
        sample_stack: a.sample_stack,
        sample_postgres: a.sample_postgres,
    };
    match serve_sessions(listener, &opts, &token, &name, a.once, &|l| {
        eprintln!("{l}")
    })? {
        Served::Once => Ok(ExitCode::SUCCESS),
        Served::Signal => {
            eprintln!("agent stopped by signal");
            Ok(ExitCode::from(130))
        }
    }
}
