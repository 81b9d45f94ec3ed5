//! Generator agents: `ceiling agent` (serves one coordinator at a time) and the coordinator side of
//! `ceiling load --agents` (issue 15, first step: `load` only; `run` and `search` still generate
//! from one process).
//!
//! A session: the coordinator connects, presents the shared token and probes the agent's clock
//! ([`ceiling_agent::session`]); when every agent's offset is within the bound it sends each agent
//! `Start` with its share of the schedule (`I/N`: every N-th intended send time from I, so the
//! agents' arrivals together are the plan's) and a start instant on that agent's own clock. Each
//! agent runs the ordinary engine and streams every recorded second back as it is recorded; the
//! coordinator adds the seconds of all agents with the same index (HdrHistogram addition, never
//! averaged percentiles) and feeds them to the same recorder, files and report as a local run.
//! An agent that vanishes is reported with what it had sent; what arrived is kept.

use crate::load_cmd::{build_plan_from, install_ctrlc, LoadArgs};
use anyhow::{bail, Context};
use ceiling_agent::session::{self, now_us, Opened};
use ceiling_agent::{encode_line, read_message, write_message, Message, WireSecond};
use ceiling_load::{target_of, LoadConfig, Summary};
use ceiling_metrics::Second;
use ceiling_plan::{parse_duration, HttpUrl, Plan};
use clap::Args;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};

/// Clock probes per agent; the one with the smallest round trip gives the offset.
const CLOCK_PROBES: usize = 16;

/// Time between the Start messages and the common start instant.
const START_LEAD: Duration = Duration::from_millis(1000);

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
    /// Directory of data files for plans that use `@data/...` sources (on this host).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Serve one session, then exit (default: serve sessions one after another until Ctrl-C).
    #[arg(long)]
    pub once: bool,
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
        match serve(sock, &a, &token, &name) {
            Ok(line) => eprintln!("session from {peer}: {line}"),
            Err(e) => eprintln!("session from {peer} ended: {e:#}"),
        }
        if a.once {
            return Ok(ExitCode::SUCCESS);
        }
    }
}

/// One session on the agent's side: handshake, Start, the run, Done.
fn serve(sock: TcpStream, a: &AgentArgs, token: &str, name: &str) -> anyhow::Result<String> {
    sock.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (first, sock) = rt.block_on(async {
        let s = tokio::net::TcpStream::from_std(sock)?;
        let (r, mut w) = s.into_split();
        let mut r = BufReader::new(r);
        let first = tokio::time::timeout(
            Duration::from_secs(30),
            session::agent_open(&mut r, &mut w, token, name),
        )
        .await
        .context("the coordinator did not finish its handshake within 30 s")??;
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
    let Some(Message::Start {
        spec,
        plan_toml,
        plan_name,
        shard,
        start_at_us,
    }) = first
    else {
        return Ok("the coordinator closed after the clock probes".into());
    };
    let mut args: LoadArgs = match serde_json::from_value(spec) {
        Ok(x) => x,
        Err(e) => return refuse(&mut out, format!("cannot read the run's arguments: {e}")),
    };
    if shard.1 == 0 || shard.0 >= shard.1 {
        return refuse(
            &mut out,
            format!("shard {}/{} is not I/N with I < N", shard.0, shard.1),
        );
    }
    args.data_dir = a.data_dir.clone();
    let name_path = PathBuf::from(plan_name.unwrap_or_else(|| "<coordinator's plan>".into()));
    let plan = match build_plan_from(
        &args,
        plan_toml.as_deref().map(|t| (t, name_path.as_path())),
    ) {
        Ok(p) => p,
        Err(e) => return refuse(&mut out, format!("{e:#}")),
    };
    let cfg = match agent_config(&args, &plan, shard, a.allow_remote) {
        Ok(c) => c,
        Err(e) => return refuse(&mut out, format!("{e:#}")),
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
    let mut watch = sock.try_clone()?;
    let watch_stop = stop.clone();
    let gone = Arc::new(AtomicBool::new(false));
    let gone2 = gone.clone();
    let watcher = std::thread::spawn(move || {
        let mut b = [0u8; 64];
        // Nothing more is expected from the coordinator: any read that returns ends the run.
        let _ = watch.read(&mut b);
        gone2.store(true, Ordering::Relaxed);
        watch_stop.store(true, Ordering::Relaxed);
    });
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
            let _ = watcher.join();
            return r;
        }
    };
    let done = Message::Done {
        sent: summary.sent,
        connect_failures: summary.connect_failures,
        connect_error: summary.connect_error.clone(),
        stopped_early: summary.stopped_early,
        cpu_s,
    };
    let _ = out.write_all(&encode_line(&done)?);
    let _ = out.flush();
    let _ = sock.shutdown(std::net::Shutdown::Write);
    // Wait (bounded) for the coordinator to close its side, then make sure the watcher ends.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while !gone.load(Ordering::Relaxed) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = sock.shutdown(std::net::Shutdown::Both);
    let _ = watcher.join();
    Ok(format!(
        "shard {}/{}: sent {} of {} scheduled{}",
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

/// The engine's configuration on an agent: the coordinator's plan, this agent's target rule.
fn agent_config(
    args: &LoadArgs,
    plan: &Plan,
    shard: (u64, u64),
    allow_remote: bool,
) -> anyhow::Result<LoadConfig> {
    let url = args
        .url
        .clone()
        .or(plan.target.url.clone())
        .context("no target in the coordinator's run")?;
    let mut parsed = HttpUrl::parse(&url).map_err(|e| anyhow::anyhow!("target: {e}"))?;
    if args.plan.is_none() {
        parsed.path = "/".into();
    }
    // The agent's own rule: loopback unless this agent was started with --allow-remote.
    let target = target_of(&parsed, &url, allow_remote).map_err(|e| {
        anyhow::anyhow!(
            "{e} (this agent's rule: start it with --allow-remote to allow this target)"
        )
    })?;
    let mut cfg = LoadConfig::from_plan(plan, target, args.data_dir.as_deref())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    cfg.threads = plan.load.threads.clamp(1, 64);
    cfg.process_shard = shard;
    if let Some(m) = &args.max_time {
        cfg.hard_limit = parse_duration(m).map_err(|e| anyhow::anyhow!("--max-time: {e}"))?;
    }
    Ok(cfg)
}

/// One agent's part of a coordinated run.
pub struct AgentRun {
    /// `host:port` as given.
    pub address: String,
    /// The name the agent gave.
    pub name: String,
    /// Agent clock − coordinator clock, µs.
    pub offset_us: i64,
    /// Round trip of the probe that gave the offset, µs.
    pub rtt_us: i64,
    /// Its share of the schedule.
    pub shard: (u64, u64),
    /// Its own seconds added up (its lag, CPU and counts: its generator verdict).
    pub summary: Summary,
    /// Its process CPU over the run, seconds (from its Done).
    pub cpu_s: f64,
    /// Why and when it vanished, if it did.
    pub lost: Option<String>,
}

/// The outcome of [`coordinate`].
pub struct Coordinated {
    /// Every agent's seconds merged by index (what a local run's summary would be).
    pub merged: Summary,
    /// Per agent.
    pub agents: Vec<AgentRun>,
}

enum Event {
    Msg(Message),
    Gone(String),
}

/// Runs `a`'s load on the agents `a.agents`, merging their seconds into `on_second` as a local
/// run would emit them (in order of the second's index), and returns the merged summary.
pub fn coordinate(
    a: &LoadArgs,
    plan: &Plan,
    hard_limit: Duration,
    mut on_second: impl FnMut(&Second),
) -> anyhow::Result<Coordinated> {
    let token = read_token(a.agent_token_file.as_deref())?;
    let bound = parse_duration(&a.max_clock_offset)
        .map_err(|e| anyhow::anyhow!("--max-clock-offset: {e}"))?;
    if a.shard.is_some() {
        bail!("--shard and --agents do not combine: the agents take the shares");
    }
    let n = a.agents.len() as u64;
    let mut spec = a.clone();
    spec.out = None;
    spec.json = false;
    spec.quiet = true;
    spec.shard = None;
    spec.data_dir = None;
    let spec = serde_json::to_value(&spec)?;
    let (plan_toml, plan_name) = match &a.plan {
        Some(p) => (
            Some(std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?),
            Some(p.display().to_string()),
        ),
        None => (None, None),
    };
    let stop = Arc::new(AtomicBool::new(false));
    install_ctrlc(stop.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        // Open every session and measure every clock before any agent starts.
        let mut opened: Vec<Opened> = Vec::new();
        let mut chans = Vec::new();
        for addr in &a.agents {
            let s =
                tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
                    .await
                    .with_context(|| format!("agent {addr}: no answer within 5 s"))?
                    .with_context(|| {
                        format!(
                    "agent {addr}: cannot connect (is `ceiling agent --listen {addr}` running?)"
                )
                    })?;
            s.set_nodelay(true)?;
            let (r, mut w) = s.into_split();
            let mut r = BufReader::new(r);
            let o = tokio::time::timeout(
                Duration::from_secs(10),
                session::coordinator_open(&mut r, &mut w, &token, CLOCK_PROBES),
            )
            .await
            .with_context(|| format!("agent {addr}: handshake took more than 10 s"))?
            .with_context(|| format!("agent {addr}"))?;
            opened.push(o);
            chans.push((r, w));
        }
        session::check_offsets(&opened, bound.as_micros() as i64)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let start = now_us() + START_LEAD.as_micros() as i64;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Event)>();
        let mut writers = Vec::new();
        for (i, ((mut r, mut w), o)) in chans.into_iter().zip(&opened).enumerate() {
            let m = Message::Start {
                spec: spec.clone(),
                plan_toml: plan_toml.clone(),
                plan_name: plan_name.clone(),
                shard: (i as u64, n),
                start_at_us: start + o.offset_us,
            };
            write_message(&mut w, &m)
                .await
                .with_context(|| format!("agent {}: sending its start", a.agents[i]))?;
            writers.push(w);
            let tx = tx.clone();
            tokio::spawn(async move {
                loop {
                    match read_message(&mut r).await {
                        Ok(Some(m)) => {
                            let done = matches!(m, Message::Done { .. } | Message::Refused { .. });
                            if tx.send((i, Event::Msg(m))).is_err() || done {
                                return;
                            }
                        }
                        Ok(None) => {
                            let _ = tx.send((
                                i,
                                Event::Gone("closed the channel before it was done".into()),
                            ));
                            return;
                        }
                        Err(e) => {
                            let _ = tx.send((i, Event::Gone(format!("channel error: {e}"))));
                            return;
                        }
                    }
                }
            });
        }
        drop(tx);

        let mut agents: Vec<AgentRun> = a
            .agents
            .iter()
            .zip(&opened)
            .enumerate()
            .map(|(i, (addr, o))| AgentRun {
                address: addr.clone(),
                name: o.agent.clone(),
                offset_us: o.offset_us,
                rtt_us: o.rtt_us,
                shard: (i as u64, n),
                summary: Summary::new(&plan.requests),
                cpu_s: 0.0,
                lost: None,
            })
            .collect();
        let mut finished = vec![false; agents.len()];
        let mut last_t: Vec<Option<u32>> = vec![None; agents.len()];
        let mut pending: BTreeMap<u32, Second> = BTreeMap::new();
        let mut merged = Summary::new(&plan.requests);
        let (mut failures, mut first_error, mut stopped_early) = (0u64, None::<String>, false);
        let mut refusals = Vec::new();
        // Bounded: the run's own bound plus the start lead and a margin for the last records.
        let deadline =
            tokio::time::Instant::now() + hard_limit + START_LEAD + Duration::from_secs(15);
        let mut half_closed = false;
        loop {
            if finished.iter().all(|f| *f) {
                break;
            }
            if stop.load(Ordering::Relaxed) && !half_closed {
                // Ctrl-C: tell every agent (EOF on its channel) and keep reading what they send.
                half_closed = true;
                for w in &mut writers {
                    let _ = w.shutdown().await;
                }
            }
            let ev = tokio::select! {
                ev = rx.recv() => ev,
                _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                _ = tokio::time::sleep_until(deadline) => None,
            };
            let Some((i, ev)) = ev else {
                for (k, f) in finished.iter_mut().enumerate() {
                    if !*f {
                        *f = true;
                        agents[k].lost = Some(format!(
                            "no word from it by the run's time bound (last second recorded: {})",
                            last_t[k].map_or("none".into(), |t| t.to_string())
                        ));
                    }
                }
                break;
            };
            match ev {
                Event::Msg(Message::Second(w)) => {
                    let s = w.to_second().map_err(|e| {
                        anyhow::anyhow!(
                            "agent {}: a second that does not decode: {e}",
                            agents[i].address
                        )
                    })?;
                    agents[i].summary.add(&s);
                    last_t[i] = Some(s.t);
                    match pending.get_mut(&s.t) {
                        Some(m) => m.merge(&s),
                        None => {
                            pending.insert(s.t, s);
                        }
                    }
                }
                Event::Msg(Message::Done {
                    connect_failures,
                    connect_error,
                    stopped_early: se,
                    cpu_s,
                    ..
                }) => {
                    finished[i] = true;
                    agents[i].cpu_s = cpu_s;
                    agents[i].summary.connect_failures = connect_failures;
                    agents[i].summary.connect_error = connect_error.clone();
                    agents[i].summary.stopped_early = se;
                    failures += connect_failures;
                    if first_error.is_none() {
                        first_error = connect_error;
                    }
                    stopped_early |= se;
                }
                Event::Msg(Message::Refused { reason }) => {
                    finished[i] = true;
                    refusals.push(format!("agent {}: {reason}", agents[i].address));
                    // Without this agent the schedule is incomplete: stop the others.
                    stop.store(true, Ordering::Relaxed);
                }
                Event::Msg(other) => {
                    finished[i] = true;
                    agents[i].lost = Some(format!("sent an unexpected message: {other:?}"));
                }
                Event::Gone(why) => {
                    finished[i] = true;
                    agents[i].lost = Some(format!(
                        "{why}; its record of {} measured requests over {} s arrived and is kept",
                        agents[i].summary.sent,
                        last_t[i].map_or(0, |t| t + 1)
                    ));
                }
            }
            // A second is complete when every agent still running has recorded it.
            let complete = (0..agents.len())
                .filter(|k| !finished[*k])
                .map(|k| last_t[k])
                .min()
                .unwrap_or(Some(u32::MAX));
            if let Some(upto) = complete {
                while let Some(e) = pending.first_entry() {
                    if *e.key() > upto {
                        break;
                    }
                    let s = e.remove();
                    merged.add(&s);
                    on_second(&s);
                }
            }
        }
        for (_, s) in std::mem::take(&mut pending) {
            merged.add(&s);
            on_second(&s);
        }
        if !refusals.is_empty() {
            bail!("{}", refusals.join("; "));
        }
        merged.connect_failures = failures;
        merged.connect_error = first_error;
        merged.stopped_early =
            stopped_early || half_closed || agents.iter().any(|g| g.lost.is_some());
        Ok(Coordinated { merged, agents })
    })
}
