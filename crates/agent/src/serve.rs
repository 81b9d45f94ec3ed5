//! The agent's side of a session, and its accept loop: `ceiling agent` parses its flags and
//! prints; what it does with a coordinator lives here.
//!
//! One session: the handshake ([`crate::session::agent_open`]: token, clock probes), the job's data
//! files (offered by digest, those this agent lacks sent piece by piece, kept in its
//! [`DataCache`]), then either `Run` — the typed [`Job`] checked by [`Job::config`] against this
//! agent's own target rule, started at the coordinator's instant, every recorded second streamed
//! back, `Done` with the engine's tallies — or `Sample`: the watched processes' resources, one
//! sample a second on the run's clock. The coordinator going away (EOF) or Ctrl-C stops the run;
//! what was recorded so far is still sent while the channel lasts.

use crate::cache::{DataCache, SessionFiles};
use crate::error::{refusal, refuse, Context, Result};
use crate::session::{self, now_us};
use crate::{encode_line, read_message, write_message, Job, Message, WireSecond};
use ceiling_load::{target_of, LoadConfig};
use ceiling_plan::HttpUrl;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::BufReader;

/// What this agent allows and watches: its own flags, which no coordinator can change.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Targets that are not loopback are allowed (`--allow-remote`).
    pub allow_remote: bool,
    /// The process tree sampled as the stack under test when a coordinator asks.
    pub sample_stack: Option<u32>,
    /// The process tree sampled as PostgreSQL.
    pub sample_postgres: Option<u32>,
}

/// How the accept loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// One session served (`once`).
    Once,
    /// Stopped by a signal (Ctrl-C, SIGTERM).
    Signal,
}

/// Serves coordinators on `listener` one session at a time, until a signal — or after the first
/// session when `once`. Each session's start and end are said to `say`; a session that fails
/// ends with its reason and the next is served.
pub fn serve_sessions(
    listener: TcpListener,
    opts: &ServeOptions,
    token: &str,
    name: &str,
    once: bool,
    say: &dyn Fn(&str),
) -> Result<Served> {
    listener.set_nonblocking(true)?;
    let mut cache = DataCache::new();
    loop {
        if ceiling_stand::cancelled() {
            return Ok(Served::Signal);
        }
        let (sock, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) => return Err(e).context("accepting a coordinator"),
        };
        say(&format!("session from {peer}"));
        match serve(sock, opts, token, name, &mut cache) {
            Ok(line) => say(&format!("session from {peer}: {line}")),
            Err(e) => say(&format!("session from {peer} ended: {e:#}")),
        }
        if once {
            return Ok(Served::Once);
        }
    }
}

/// One session on the agent's side: handshake, the job's data, Start or Run, the run, Done.
fn serve(
    sock: TcpStream,
    opts: &ServeOptions,
    token: &str,
    name: &str,
    cache: &mut DataCache,
) -> Result<String> {
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
                    refuse!("refused: {reason}");
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
            refuse!("the coordinator sent more than one message before its run started");
        }
        let s = r.into_inner().reunite(w).expect("halves of one stream");
        Ok::<_, crate::error::AgentError>((first, s.into_std()?))
    })?;
    drop(rt);
    sock.set_nonblocking(false)?;
    let mut out = sock.try_clone()?;
    let refuse = |out: &mut TcpStream, reason: String| -> Result<String> {
        let _ = out.write_all(&encode_line(&Message::Refused {
            reason: reason.clone(),
        })?);
        refuse!("refused: {reason}")
    };
    let (cfg, shard, start_at_us) = match first {
        None => return Ok("the coordinator closed after the clock probes".into()),
        Some(Message::Run {
            job,
            shard,
            start_at_us,
        }) => {
            // Job::config refuses a share that is not one, beside the job's other checks
            match job_config(&job, &files, shard, opts.allow_remote) {
                Ok(c) => (c, shard, start_at_us),
                Err(e) => return refuse(&mut out, format!("{e:#}")),
            }
        }
        Some(Message::Sample { start_at_us, max_s }) => {
            return sample(sock, out, opts, start_at_us, max_s);
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
    ceiling_stand::link(stop.clone());
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
        resets: crate::WireResets::from_tally(&summary.resets),
        tls: summary
            .tls
            .as_ref()
            .map(|t| Box::new(crate::WireTls::from_tally(t))),
        h2: summary.h2.as_ref().map(crate::WireH2::from_tally),
        io: summary.io.clone(),
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
    opts: &ServeOptions,
    start_at_us: i64,
    max_s: u64,
) -> Result<String> {
    use ceiling_stand::{SampleTarget, Sampler};
    let mut targets = Vec::new();
    if let Some(pid) = opts.sample_stack {
        targets.push(SampleTarget::tree(ceiling_metrics::Role::Stack, pid, None));
    }
    if let Some(pid) = opts.sample_postgres {
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
        refuse!("refused: {reason}");
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
        resets: crate::WireResets::default(),
        tls: None,
        h2: None,
        io: None,
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
) -> Result<LoadConfig> {
    let parsed = HttpUrl::parse(&job.url).map_err(|e| refusal!("target: {e}"))?;
    let target = target_of(
        &parsed,
        &job.url,
        allow_remote,
        &ceiling_load::tls_defaults(),
    )
    .map_err(|e| {
        refusal!("{e} (this agent's rule: start it with --allow-remote to allow this target)")
    })?;
    job.config(target, files.files.clone(), shard)
        .map_err(crate::error::AgentError::Refused)
}
