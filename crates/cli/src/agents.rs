//! Generator agents: `ceiling agent` (serves one coordinator at a time) and the coordinator side of
//! `ceiling load --agents` (`ceiling run|search --agents` coordinate from the lab, through
//! [`ceiling_agent::coordinator::open_job`] and its `Session::run_job`).
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

use crate::load_cmd::{install_ctrlc, LoadArgs};
use anyhow::{bail, Context};
use ceiling_agent::cache::{DataCache, SessionFiles};
pub use ceiling_agent::coordinator::{AgentRun, Agents, Coordinated};
use ceiling_agent::session::{self, now_us};
use ceiling_agent::{encode_line, read_message, write_message, Job, Message, WireSecond};
use ceiling_load::{target_of, LoadConfig};
use ceiling_metrics::Second;
use ceiling_plan::{parse_duration, HttpUrl};
use clap::Args;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::BufReader;

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
    listener.set_nonblocking(true)?;
    eprintln!(
        "ceiling agent `{name}` listening on {addr} (targets: loopback{})",
        if a.allow_remote {
            " and remote"
        } else {
            " only"
        }
    );
    let mut cache = DataCache::new();
    loop {
        if ceiling_stand::cancelled() {
            eprintln!("agent stopped by signal");
            return Ok(ExitCode::from(130));
        }
        let (sock, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) => return Err(e).context("accepting a coordinator"),
        };
        eprintln!("session from {peer}");
        match serve(sock, &a, &token, &name, &mut cache) {
            Ok(line) => eprintln!("session from {peer}: {line}"),
            Err(e) => eprintln!("session from {peer} ended: {e:#}"),
        }
        if a.once {
            return Ok(ExitCode::SUCCESS);
        }
    }
}

/// One session on the agent's side: handshake, the job's data, Start or Run, the run, Done.
fn serve(
    sock: TcpStream,
    a: &AgentArgs,
    token: &str,
    name: &str,
    cache: &mut DataCache,
) -> anyhow::Result<String> {
    sock.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut files = SessionFiles::default();
    let (first, sock) = rt.block_on(async {
        let s = tokio::net::TcpStream::from_std(sock)?;
        let (r, mut w) = s.into_split();
        let mut r = BufReader::new(r);
        let mut first = tokio::time::timeout(
            Duration::from_secs(30),
            session::agent_open(&mut r, &mut w, token, name),
        )
        .await
        .context("the coordinator did not finish its handshake within 30 s")??;
        // A run's data files: offered by digest, those this agent lacks then come piece by
        // piece before its Run.
        if let Some(Message::Offer { files: offered }) = &first {
            let want = match cache.begin(offered) {
                Ok((session, want)) => {
                    files = session;
                    want
                }
                Err(e) => {
                    let reason = format!("{e:#}");
                    write_message(
                        &mut w,
                        &Message::Refused {
                            reason: reason.clone(),
                        },
                    )
                    .await?;
                    bail!("refused: {reason}");
                }
            };
            write_message(&mut w, &Message::Want { names: want }).await?;
            first = tokio::time::timeout(Duration::from_secs(60), read_message(&mut r))
                .await
                .context("the coordinator sent nothing for 60 s after its data offer")??;
        }
        while let Some(Message::Data { name, text, last }) = &first {
            cache.append(&mut files, name, text, *last)?;
            first = tokio::time::timeout(Duration::from_secs(60), read_message(&mut r))
                .await
                .context("the coordinator stopped for 60 s in the middle of its data")??;
        }
        if !r.buffer().is_empty() {
            bail!("the coordinator sent more than one message before its run started");
        }
        let s = r.into_inner().reunite(w).expect("halves of one stream");
        anyhow::Ok((first, s.into_std()?))
    })?;
    drop(rt);
    sock.set_nonblocking(false)?;
    let mut out = sock.try_clone()?;
    let refuse = |out: &mut TcpStream, reason: String| -> anyhow::Result<String> {
        let _ = out.write_all(&encode_line(&Message::Refused {
            reason: reason.clone(),
        })?);
        bail!("refused: {reason}")
    };
    let (cfg, shard, start_at_us) = match first {
        None => return Ok("the coordinator closed after the clock probes".into()),
        Some(Message::Run {
            job,
            shard,
            start_at_us,
        }) => {
            // Job::config refuses a share that is not one, beside the job's other checks
            match job_config(&job, &files, shard, a.allow_remote) {
                Ok(c) => (c, shard, start_at_us),
                Err(e) => return refuse(&mut out, format!("{e:#}")),
            }
        }
        Some(Message::Sample { start_at_us, max_s }) => {
            return sample(sock, out, a, start_at_us, max_s);
        }
        Some(other) => return refuse(&mut out, format!("expected a start, got {}", other.kind())),
    };
    let data_note = if files.received + files.from_cache > 0 {
        format!(
            "; data: {} received, {} from its cache",
            files.received, files.from_cache
        )
    } else {
        String::new()
    };
    let lead_us = start_at_us - now_us();
    if lead_us > 60_000_000 {
        return refuse(
            &mut out,
            format!(
                "start {} s in the future (more than 60 s): clocks disagree?",
                lead_us / 1_000_000
            ),
        );
    }
    // The coordinator going away (EOF on the channel) or Ctrl-C here stops the run; what was
    // recorded so far is still sent while the channel lasts.
    let stop = cfg.stop.clone();
    install_ctrlc(stop.clone());
    let watch = EofWatch::start(&sock, Some(stop.clone()))?;
    if lead_us > 0 {
        let until = std::time::Instant::now() + Duration::from_micros(lead_us as u64);
        while std::time::Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1).min(until - std::time::Instant::now()));
        }
    }
    out.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut write_failed = false;
    let cpu0 = ceiling_load::process_cpu_ns();
    let result = ceiling_load::run(cfg, |s| {
        if write_failed {
            return;
        }
        let line = encode_line(&Message::Second(Box::new(WireSecond::from_second(s))));
        if line.map(|l| out.write_all(&l)).map_or(true, |r| r.is_err()) {
            // The channel is gone: stop sending load nobody will see.
            write_failed = true;
            stop.store(true, Ordering::Relaxed);
        }
    });
    let cpu_s = (ceiling_load::process_cpu_ns() - cpu0) as f64 / 1e9;
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            let r = refuse(&mut out, format!("the run failed on the agent: {e}"));
            let _ = sock.shutdown(std::net::Shutdown::Both);
            let _ = watch.thread.join();
            return r;
        }
    };
    let done = Message::Done {
        sent: summary.sent,
        connect_failures: summary.connect_failures,
        connect_error: summary.connect_error.clone(),
        stopped_early: summary.stopped_early,
        cpu_s,
        resets: ceiling_agent::WireResets::from_tally(&summary.resets),
        tls: summary
            .tls
            .as_ref()
            .map(|t| Box::new(ceiling_agent::WireTls::from_tally(t))),
        h2: summary.h2.as_ref().map(ceiling_agent::WireH2::from_tally),
    };
    let _ = out.write_all(&encode_line(&done)?);
    let _ = out.flush();
    watch.finish(&sock);
    Ok(format!(
        "shard {}/{}: sent {} of {} scheduled{}{data_note}",
        shard.0,
        shard.1,
        summary.sent,
        summary.offered,
        if summary.stopped_early {
            " (stopped early)"
        } else {
            ""
        }
    ))
}

/// A sampling session: the watched processes' resources, one sample a second on the run's clock
/// (second 0 = `start_at_us` on this host's clock), until the coordinator closes its side, `max_s`
/// passes or Ctrl-C.
fn sample(
    sock: TcpStream,
    mut out: TcpStream,
    a: &AgentArgs,
    start_at_us: i64,
    max_s: u64,
) -> anyhow::Result<String> {
    use ceiling_stand::{SampleTarget, Sampler};
    let mut targets = Vec::new();
    if let Some(pid) = a.sample_stack {
        targets.push(SampleTarget::tree(ceiling_metrics::Role::Stack, pid, None));
    }
    if let Some(pid) = a.sample_postgres {
        targets.push(SampleTarget::tree(
            ceiling_metrics::Role::Postgres,
            pid,
            None,
        ));
    }
    if targets.is_empty() {
        let reason = "this agent watches no process: start it with --sample-stack PID".to_string();
        let _ = out.write_all(&encode_line(&Message::Refused {
            reason: reason.clone(),
        })?);
        bail!("refused: {reason}");
    }
    let d = start_at_us - now_us();
    let now = std::time::Instant::now();
    let run_start = if d >= 0 {
        now + Duration::from_micros(d as u64)
    } else {
        now.checked_sub(Duration::from_micros(d.unsigned_abs()))
            .unwrap_or(now)
    };
    let (mut sampler, rx) = Sampler::with_channel(run_start, Duration::from_secs(1), targets);
    let watch = EofWatch::start(&sock, None)?;
    out.set_write_timeout(Some(Duration::from_secs(5)))?;
    let until = run_start + Duration::from_secs(max_s);
    let mut n = 0u64;
    while !watch.gone.load(Ordering::Relaxed)
        && std::time::Instant::now() < until
        && !ceiling_stand::cancelled()
    {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(s) => {
                if encode_line(&Message::Resource(s))
                    .map(|l| out.write_all(&l))
                    .map_or(true, |r| r.is_err())
                {
                    break;
                }
                n += 1;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    sampler.stop();
    let _ = out.write_all(&encode_line(&Message::Done {
        sent: 0,
        connect_failures: 0,
        connect_error: None,
        stopped_early: false,
        cpu_s: 0.0,
        resets: ceiling_agent::WireResets::default(),
        tls: None,
        h2: None,
    })?);
    watch.finish(&sock);
    Ok(format!("sampled {n} times"))
}

/// The coordinator's side of a session after its start: nothing more is expected from it, so any
/// read that returns (EOF, its Ctrl-C, its end) means it is gone — and stops `stop`, if given.
struct EofWatch {
    gone: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl EofWatch {
    fn start(sock: &TcpStream, stop: Option<Arc<AtomicBool>>) -> std::io::Result<EofWatch> {
        let mut watch = sock.try_clone()?;
        let gone = Arc::new(AtomicBool::new(false));
        let g = gone.clone();
        let thread = std::thread::spawn(move || {
            let mut b = [0u8; 64];
            let _ = watch.read(&mut b);
            g.store(true, Ordering::Relaxed);
            if let Some(s) = stop {
                s.store(true, Ordering::Relaxed);
            }
        });
        Ok(EofWatch { gone, thread })
    }

    /// Closes this side for writing, waits (at most 5 s) for the coordinator to close its own,
    /// then closes the socket and joins the watcher.
    fn finish(self, sock: &TcpStream) {
        let _ = sock.shutdown(std::net::Shutdown::Write);
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while !self.gone.load(Ordering::Relaxed) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = sock.shutdown(std::net::Shutdown::Both);
        let _ = self.thread.join();
    }
}

/// The engine's configuration on an agent: the coordinator's job, this agent's target rule,
/// the data files the coordinator sent.
fn job_config(
    job: &Job,
    files: &SessionFiles,
    shard: (u64, u64),
    allow_remote: bool,
) -> anyhow::Result<LoadConfig> {
    let parsed = HttpUrl::parse(&job.url).map_err(|e| anyhow::anyhow!("target: {e}"))?;
    let target = target_of(
        &parsed,
        &job.url,
        allow_remote,
        &ceiling_load::tls_defaults(),
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "{e} (this agent's rule: start it with --allow-remote to allow this target)"
        )
    })?;
    job.config(target, files.files.clone(), shard)
        .map_err(anyhow::Error::msg)
}

/// Runs `ceiling load`'s configured engine (`cfg`, sending to the base URL `url`) on the agents
/// `a.agents` as one [`Job`] with the plan's data files, merging their seconds into `on_second`
/// as a local run would emit them (in order of the second's index), and returns the merged
/// summary.
pub fn coordinate(
    a: &LoadArgs,
    cfg: &LoadConfig,
    url: &str,
    on_second: impl FnMut(&Second),
) -> anyhow::Result<Coordinated> {
    let agents = agents_of(
        &a.agents,
        a.agent_token_file.as_deref(),
        &a.max_clock_offset,
    )?
    .context("no agents given")?;
    if a.shard.is_some() {
        bail!("--shard and --agents do not combine: the agents take the shares");
    }
    let job = Job::of_config(cfg, url);
    let session = ceiling_agent::coordinator::open_job(&agents, &cfg.data)?;
    let stop = Arc::new(AtomicBool::new(false));
    install_ctrlc(stop.clone());
    let at = now_us() + ceiling_agent::coordinator::START_LEAD.as_micros() as i64;
    session.run_job(at, &job, &stop, on_second)
}
