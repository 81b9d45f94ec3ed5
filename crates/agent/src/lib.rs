//! The generator-agent control protocol (issue 15).
//!
//! The messages a coordinator and an agent exchange ([`Message`]), their framing (one JSON object
//! per line, bounded in length: [`write_message`], [`read_message`]), the shared token check
//! ([`token_matches`], constant time in the token's content), the exact wire form of a per-second
//! record ([`WireSecond`]: every HdrHistogram in hdrhistogram's V2 + deflate serialisation, base64
//! in JSON, so a [`Second`] crosses the wire without losing a count), the session opening with its
//! clock probes ([`session`]) and the coordinator that hands out shares and merges the seconds
//! exactly ([`coordinator`]). Every measurement — `ceiling load`, a shelf or probe of `ceiling
//! run|search` — is sent as a typed [`Job`] (the engine's configuration: request mix, stages,
//! generator settings, the target's URL) with its data files: offered by content digest ([`Message::Offer`]), the
//! agent answers which it lacks ([`Message::Want`]), and only those travel ([`Message::Data`]) —
//! so a search's probes send a plan's 37-MB id file to each agent once, not once per probe.
//!
//! An agent beside a remote stack samples its CPU and memory for the coordinator ([`sampling`]).
//! The agent's side of a session and its accept loop are [`serve`]; `ceiling agent` (the CLI)
//! parses its flags and prints.
#![forbid(unsafe_code)]

pub mod cache;
pub mod coordinator;
pub mod error;
pub mod sampling;
pub mod serve;
pub mod session;

pub use error::AgentError;

use base64::Engine as _;
use ceiling_load::{ResetExample, ResetKind, ResetTally};
use ceiling_metrics::{Counts, Phase, Second, TagSecond};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// Protocol version sent in [`Message::Hello`]; peers with another version are refused.
pub const PROTOCOL_VERSION: u32 = 6;

/// Longest accepted line (one message), bytes; longer input is refused, never buffered unbounded.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Errors of the protocol layer.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// Reading or writing the socket failed.
    #[error("control channel I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A line was not a valid message.
    #[error("malformed message: {0}")]
    Json(#[from] serde_json::Error),
    /// A line exceeded [`MAX_LINE_BYTES`].
    #[error("message longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    /// A histogram field could not be decoded.
    #[error("histogram `{field}`: {reason}")]
    Histogram {
        /// Which field of the record.
        field: String,
        /// What went wrong.
        reason: String,
    },
}

/// One message of the control channel, in either direction.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// Coordinator → agent, first message: protocol version and the shared token.
    Hello {
        /// [`PROTOCOL_VERSION`] of the sender.
        version: u32,
        /// The shared secret given to both sides.
        token: String,
    },
    /// Agent → coordinator: the hello was accepted.
    Welcome {
        /// The agent's name (host name or `--name`).
        agent: String,
    },
    /// Coordinator → agent: a clock probe; the agent answers [`Message::Pong`].
    Ping {
        /// Coordinator's clock at send, µs since the Unix epoch.
        t0_us: i64,
    },
    /// Agent → coordinator: answer to a probe.
    Pong {
        /// The probe's `t0_us`, echoed.
        t0_us: i64,
        /// Agent's clock when the probe arrived, µs since the Unix epoch.
        t1_us: i64,
        /// Agent's clock when the answer left, µs since the Unix epoch.
        t2_us: i64,
    },
    /// Agent → coordinator: one recorded second, sent as soon as it is recorded.
    Second(Box<WireSecond>),
    /// Either side: the request was refused, with the reason; the sender closes the channel.
    Refused {
        /// Why, in words naming the problem.
        reason: String,
    },
    /// Coordinator → agent, after the clock probes of a session with data files: the files the
    /// job needs, by content; the agent answers [`Message::Want`] with those it does not hold.
    Offer {
        /// Every data file of the job.
        files: Vec<OfferedFile>,
    },
    /// Agent → coordinator, the answer to [`Message::Offer`]: the sources (by name) whose file
    /// the agent lacks; the coordinator then sends exactly those as [`Message::Data`].
    Want {
        /// Names of the offered sources to send.
        names: Vec<String>,
    },
    /// Coordinator → agent, before [`Message::Run`]: a piece of one of the job's data files
    /// (CSV text; files are split into pieces of at most [`DATA_CHUNK_BYTES`] so no line nears
    /// [`MAX_LINE_BYTES`]). The agent appends the pieces in order; `last` closes the file.
    Data {
        /// The plan's data source name (`[data.NAME]`).
        name: String,
        /// The next piece of the file's text.
        text: String,
        /// True on the file's last piece.
        last: bool,
    },
    /// Coordinator → agent, after the clock probes and the job's [`Message::Data`]: run this
    /// share of one measurement ([`Job`]: a `ceiling load` run, or a shelf, pass or probe of
    /// `ceiling run` or `ceiling search`).
    Run {
        /// What to send, where, for how long.
        job: Box<Job>,
        /// This agent's share of the schedule: it sends every `shard.1`-th intended send time
        /// starting at `shard.0`.
        shard: (u64, u64),
        /// When to start, on the **agent's** clock (µs since the Unix epoch): the coordinator's
        /// start plus the measured offset, so all agents start together.
        start_at_us: i64,
    },
    /// Coordinator → agent beside a remote stack (`ceiling agent --sample-stack PID`): sample
    /// the processes it watches once a second on the run's clock, whose second 0 is
    /// `start_at_us` on the agent's clock, until the coordinator closes its side or `max_s`
    /// seconds have passed; each sample comes back as a [`Message::Resource`].
    Sample {
        /// The run's start on the agent's clock, µs since the Unix epoch.
        start_at_us: i64,
        /// Upper bound on the sampling, seconds (the run's own bound).
        max_s: u64,
    },
    /// Agent → coordinator: one resource sample of a watched process (its `t` on the run's clock).
    Resource(ceiling_metrics::ResourceSample),
    /// Agent → coordinator: the shard finished; no more seconds follow.
    Done {
        /// Requests the agent sent in total.
        sent: u64,
        /// Connections the agent could not open (their requests were never sent).
        #[serde(default)]
        connect_failures: u64,
        /// The first connection failure, as a sentence.
        #[serde(default)]
        connect_error: Option<String>,
        /// The agent's run was stopped early (Ctrl-C, its time bound, the coordinator gone).
        #[serde(default)]
        stopped_early: bool,
        /// The agent process's CPU over its run, seconds.
        #[serde(default)]
        cpu_s: f64,
        /// What its connections did when requests ended as `reset`, and its idle-close retries
        /// (absent from an agent older than this field: read as none).
        #[serde(default)]
        resets: WireResets,
        /// Its TLS handshakes (https targets; absent from an older agent or over cleartext).
        #[serde(default)]
        tls: Option<Box<WireTls>>,
        /// Its HTTP/2 connections (absent from an older agent or over HTTP/1.1).
        #[serde(default)]
        h2: Option<WireH2>,
        /// The ticked engine's I/O back end on this agent (`io_uring`, or `epoll` and why;
        /// absent for the default engine or from an older agent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        io: Option<String>,
    },
}

impl Message {
    /// The message's type as it travels (`hello`, `start`, `data`…), for errors and refusals.
    pub fn kind(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
            .unwrap_or_else(|| "?".into())
    }
}

/// One data file as a coordinator offers it ([`Message::Offer`]): the agent keeps files it was
/// sent by their digest, so a file it already holds need not travel again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OfferedFile {
    /// The plan's data source name (`[data.NAME]`).
    pub name: String,
    /// SHA-256 of the file's bytes, lowercase hex ([`sha256_hex`]).
    pub sha256: String,
    /// The file's length, bytes.
    pub bytes: u64,
}

impl OfferedFile {
    /// The offer for source `name` whose file holds `text`.
    pub fn of(name: &str, text: &str) -> Self {
        OfferedFile {
            name: name.to_string(),
            sha256: sha256_hex(text.as_bytes()),
            bytes: text.len() as u64,
        }
    }
}

/// SHA-256 of `bytes` as lowercase hex: the key under which an agent keeps a data file.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex(&sha2::Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Longest piece of a data file in one [`Message::Data`], bytes.
pub const DATA_CHUNK_BYTES: usize = 4 * 1024 * 1024;

/// One measurement as an agent runs it — a `ceiling load` run, or one shelf, pass or probe of
/// `ceiling run` / `ceiling search`: the engine's whole configuration as the coordinator decided
/// it (the request mix with its templates, the stages, the seed, the generator settings), typed,
/// so an agent parses no plan file and no command line. The data files the requests read are
/// offered before it by content ([`Message::Offer`]) and those the agent lacks follow as
/// [`Message::Data`] pieces, so an agent needs none of the coordinator's files. Built with
/// [`Job::of_config`]; [`Job::config`] checks it on the agent (the wire is not trusted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// The service's base URL (the agent's own target rule still applies).
    pub url: String,
    /// The request mix, templates as the plan wrote them.
    pub requests: Vec<ceiling_plan::RequestSpec>,
    /// The data sources the requests read, by name; their files come before the job.
    pub data: Vec<String>,
    /// Open or closed model.
    pub model: ceiling_plan::Model,
    /// Arrival process (open model).
    pub arrivals: ceiling_plan::Arrivals,
    /// HTTP keep-alive.
    pub keep_alive: bool,
    /// HTTP/2 with this many streams per connection; `None`: HTTP/1.1.
    pub http2_streams: Option<usize>,
    /// The ticked engine's tick, µs; `None`: the default engine.
    pub tick_us: Option<u64>,
    /// The generator's threads under `SCHED_FIFO` (`--realtime`): each agent checks its own
    /// privilege and refuses the job without it.
    pub realtime: bool,
    /// The ticked engine's I/O back end (`auto`, `epoll`, `io_uring`): each agent sets up its own
    /// and says which it ran on.
    pub io: String,
    /// Warm-up stages (recorded with phase `warmup`).
    pub warmup: Vec<WireStage>,
    /// Measured stages.
    pub stages: Vec<WireStage>,
    /// Seed of the request stream.
    pub seed: u64,
    /// Connection cap of the whole schedule (each agent takes its share).
    pub max_connections: usize,
    /// Backlog bound of the whole schedule before overload is reported (each agent its share).
    pub max_backlog: usize,
    /// Request timeout, ms.
    pub timeout_ms: u64,
    /// Generator threads on each agent.
    pub threads: usize,
    /// The engine's bound on the whole run, ms.
    pub hard_limit_ms: u64,
}

/// Most requests in a job's mix, stages in it, and connections or generator threads an agent
/// accepts from a coordinator (far above any plan; a bound so a bad message cannot make the agent
/// allocate without limit).
pub const JOB_MAX_REQUESTS: usize = 1_000;
/// See [`JOB_MAX_REQUESTS`].
pub const JOB_MAX_STAGES: usize = 10_000;
/// See [`JOB_MAX_REQUESTS`].
pub const JOB_MAX_CONNECTIONS: usize = 1_000_000;
/// See [`JOB_MAX_REQUESTS`].
pub const JOB_MAX_THREADS: usize = 256;

impl Job {
    /// What the engine configured as `cfg` would run, as a job for agents sending to `url` (the
    /// base URL: the requests' paths are relative to it). The data sources are `cfg.data`'s names;
    /// their files travel beside the job.
    pub fn of_config(cfg: &ceiling_load::LoadConfig, url: &str) -> Job {
        Job {
            url: url.to_string(),
            requests: cfg.requests.clone(),
            data: cfg.data.keys().cloned().collect(),
            model: cfg.model,
            arrivals: cfg.arrivals,
            keep_alive: cfg.keep_alive,
            http2_streams: cfg.http2,
            tick_us: cfg
                .tick
                .map(|t| u64::try_from(t.as_micros()).unwrap_or(u64::MAX)),
            realtime: cfg.realtime,
            io: cfg.io.as_str().to_string(),
            warmup: cfg.warmup.iter().map(WireStage::from).collect(),
            stages: cfg.stages.iter().map(WireStage::from).collect(),
            seed: cfg.seed,
            max_connections: cfg.max_connections,
            max_backlog: cfg.max_backlog,
            timeout_ms: ms(cfg.timeout),
            threads: cfg.threads,
            hard_limit_ms: ms(cfg.hard_limit),
        }
    }

    /// The engine's configuration for this job on an agent: `target` (already checked by the
    /// agent's own rule), `data` the files the coordinator sent by source name, `shard` this
    /// agent's share. Refuses, with a sentence naming the field, a job no plan could have made:
    /// no requests, a template reading a source that was not sent, a count or bound out of range.
    pub fn config(
        &self,
        target: ceiling_load::Target,
        data: std::collections::BTreeMap<String, std::path::PathBuf>,
        shard: (u64, u64),
    ) -> Result<ceiling_load::LoadConfig, String> {
        use ceiling_plan::Segment;
        use std::time::Duration;
        if self.requests.is_empty() || self.requests.len() > JOB_MAX_REQUESTS {
            return Err(format!(
                "job: {} requests in the mix (1 to {JOB_MAX_REQUESTS})",
                self.requests.len()
            ));
        }
        if self.stages.is_empty() || self.warmup.len() + self.stages.len() > JOB_MAX_STAGES {
            return Err(format!(
                "job: {} stages and {} warm-up stages (1 to {JOB_MAX_STAGES} in all)",
                self.stages.len(),
                self.warmup.len()
            ));
        }
        for name in &self.data {
            if !data.contains_key(name) {
                return Err(format!(
                    "job: the coordinator sent no complete data for source `{name}`"
                ));
            }
        }
        for r in &self.requests {
            if r.weight == 0 {
                return Err(format!("job: request `{}` has weight 0", r.name));
            }
            let templates = std::iter::once(&r.path)
                .chain(r.headers.iter().map(|(_, t)| t))
                .chain(r.body.iter());
            for seg in templates.flat_map(|t| &t.segments) {
                match seg {
                    Segment::Column { source, count, .. } => {
                        if !self.data.contains(source) {
                            return Err(format!(
                                "job: request `{}` reads data source `{source}`, which the job does not name",
                                r.name
                            ));
                        }
                        if !(1..=10_000).contains(count) {
                            return Err(format!(
                                "job: request `{}` reads {count} rows of `{source}` at once (1 to 10000)",
                                r.name
                            ));
                        }
                    }
                    Segment::Int { lo, hi } if lo > hi => {
                        return Err(format!(
                            "job: request `{}` has an integer range {lo}..{hi} that is empty",
                            r.name
                        ))
                    }
                    _ => {}
                }
            }
        }
        for s in self.warmup.iter().chain(&self.stages) {
            let ok = match *s {
                WireStage::Ramp { from, to, .. } => {
                    [from, to]
                        .iter()
                        .all(|r| r.is_finite() && (0.0..=1e7).contains(r))
                        && from.max(to) > 0.0
                }
                WireStage::Hold { rate, .. } => rate.is_finite() && rate > 0.0 && rate <= 1e7,
                WireStage::Closed {
                    connections,
                    duration_ms,
                    requests,
                } => {
                    (1..=JOB_MAX_CONNECTIONS).contains(&connections)
                        && (duration_ms.is_some() || requests.is_some())
                }
            };
            if !ok {
                return Err(format!("job: a stage out of range: {s:?}"));
            }
        }
        if shard.1 == 0 || shard.0 >= shard.1 {
            return Err(format!("job: share {}/{} is not a share", shard.0, shard.1));
        }
        Ok(ceiling_load::LoadConfig {
            target,
            model: self.model,
            arrivals: self.arrivals,
            keep_alive: self.keep_alive,
            max_connections: self.max_connections.clamp(1, JOB_MAX_CONNECTIONS),
            http2: self.http2_streams.map(|n| n.clamp(1, 1_000)),
            timeout: Duration::from_millis(self.timeout_ms.max(1)),
            seed: self.seed,
            max_backlog: self.max_backlog.min(100_000_000),
            warmup: self.warmup.iter().map(ceiling_plan::Stage::from).collect(),
            stages: self.stages.iter().map(ceiling_plan::Stage::from).collect(),
            requests: self.requests.clone(),
            data,
            threads: self.threads.clamp(1, JOB_MAX_THREADS),
            hard_limit: Duration::from_millis(self.hard_limit_ms),
            stop: Default::default(),
            process_shard: shard,
            tick: self.tick_us.map(Duration::from_micros),
            io: ceiling_load::IoBackend::parse(&self.io).map_err(|e| format!("job: {e}"))?,
            realtime: self.realtime,
        })
    }
}

/// A load stage on the wire (the plan's [`ceiling_plan::Stage`], durations in ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WireStage {
    /// Open model, rate changing linearly.
    Ramp {
        /// Start rate, RPS.
        from: f64,
        /// End rate, RPS.
        to: f64,
        /// Length, ms.
        duration_ms: u64,
    },
    /// Open model, constant rate.
    Hold {
        /// Rate, RPS.
        rate: f64,
        /// Length, ms.
        duration_ms: u64,
    },
    /// Closed model.
    Closed {
        /// Connections, each send-wait-send.
        connections: usize,
        /// Length, ms, if bounded by time.
        duration_ms: Option<u64>,
        /// Requests, if bounded by count.
        requests: Option<u64>,
    },
}

fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl From<&ceiling_plan::Stage> for WireStage {
    fn from(s: &ceiling_plan::Stage) -> Self {
        use ceiling_plan::Stage;
        match s {
            Stage::Ramp { from, to, duration } => WireStage::Ramp {
                from: *from,
                to: *to,
                duration_ms: ms(*duration),
            },
            Stage::Hold { rate, duration } => WireStage::Hold {
                rate: *rate,
                duration_ms: ms(*duration),
            },
            Stage::Closed {
                connections,
                duration,
                requests,
            } => WireStage::Closed {
                connections: *connections,
                duration_ms: duration.map(ms),
                requests: *requests,
            },
        }
    }
}

impl From<&WireStage> for ceiling_plan::Stage {
    fn from(s: &WireStage) -> Self {
        use ceiling_plan::Stage;
        use std::time::Duration;
        match s {
            WireStage::Ramp {
                from,
                to,
                duration_ms,
            } => Stage::Ramp {
                from: *from,
                to: *to,
                duration: Duration::from_millis(*duration_ms),
            },
            WireStage::Hold { rate, duration_ms } => Stage::Hold {
                rate: *rate,
                duration: Duration::from_millis(*duration_ms),
            },
            WireStage::Closed {
                connections,
                duration_ms,
                requests,
            } => Stage::Closed {
                connections: *connections,
                duration: duration_ms.map(Duration::from_millis),
                requests: *requests,
            },
        }
    }
}

/// Splits a data file's text into [`Message::Data`] pieces of at most [`DATA_CHUNK_BYTES`]
/// (cut at line ends where possible, never inside a UTF-8 character). An empty file is one
/// empty last piece.
pub fn data_messages(name: &str, text: &str) -> Vec<Message> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        if rest.len() <= DATA_CHUNK_BYTES {
            out.push(Message::Data {
                name: name.to_string(),
                text: rest.to_string(),
                last: true,
            });
            return out;
        }
        let mut cut = DATA_CHUNK_BYTES;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if let Some(nl) = rest[..cut].rfind('\n') {
            cut = nl + 1;
        }
        out.push(Message::Data {
            name: name.to_string(),
            text: rest[..cut].to_string(),
            last: false,
        });
        rest = &rest[cut..];
    }
}

/// The agent's admission rule for a target: the URL the coordinator asks for must be the one its
/// plan names (`plan_target`, compared after resolution, so `localhost` and `127.0.0.1` on the same
/// port agree), and it must be loopback unless the agent itself was started with `--allow-remote`
/// (the coordinator cannot grant that). Returns the resolved target or the reason for refusal.
pub fn admit_target(
    requested: &str,
    plan_target: &str,
    allow_remote: bool,
) -> Result<ceiling_load::Target, String> {
    let want = ceiling_load::parse_target(requested, allow_remote).map_err(|e| e.to_string())?;
    let named = ceiling_load::parse_target(plan_target, true).map_err(|e| e.to_string())?;
    if want.addr != named.addr || want.base_path != named.base_path {
        return Err(format!(
            "target `{requested}` is not the plan's target `{plan_target}`; an agent sends only to the target its plan names"
        ));
    }
    Ok(want)
}

/// Clock offset of an agent from one NTP-style round trip (`t0` coordinator send, `t1` agent
/// receive, `t2` agent send, `t3` coordinator receive, all µs): `(offset, round_trip)`, where
/// `offset` is agent clock − coordinator clock. The sample with the smallest round trip bounds the
/// offset's error by half that round trip.
pub fn clock_offset(t0: i64, t1: i64, t2: i64, t3: i64) -> (i64, i64) {
    let offset = ((t1 - t0) + (t2 - t3)) / 2;
    let rtt = (t3 - t0) - (t2 - t1);
    (offset, rtt)
}

/// Whether `given` equals `expected`, taking time independent of where they differ (it still
/// depends on the length of `expected`). `subtle` is not in this workspace's offline registry, so
/// this is the usual XOR fold behind [`std::hint::black_box`].
pub fn token_matches(given: &str, expected: &str) -> bool {
    let (g, e) = (given.as_bytes(), expected.as_bytes());
    let mut diff = (g.len() ^ e.len()) as u64;
    for (i, &b) in e.iter().enumerate() {
        let x = g.get(i).copied().unwrap_or(!b);
        diff |= u64::from(std::hint::black_box(x ^ b));
    }
    std::hint::black_box(diff) == 0
}

/// One message as a JSON line (with its newline), for a blocking writer.
pub fn encode_line(m: &Message) -> Result<Vec<u8>, ProtocolError> {
    let mut v = serde_json::to_vec(m)?;
    v.push(b'\n');
    Ok(v)
}

/// Writes one message as a JSON line and flushes it.
pub async fn write_message<W: AsyncWrite + Unpin>(
    w: &mut W,
    m: &Message,
) -> Result<(), ProtocolError> {
    let mut line = serde_json::to_vec(m)?;
    line.push(b'\n');
    w.write_all(&line).await?;
    w.flush().await?;
    Ok(())
}

/// Reads one message; `Ok(None)` when the peer closed the channel cleanly between messages.
pub async fn read_message<R: AsyncBufRead + Unpin>(
    r: &mut R,
) -> Result<Option<Message>, ProtocolError> {
    let mut line = Vec::new();
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            if line.is_empty() {
                return Ok(None);
            }
            return Err(ProtocolError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        if line.len() + chunk.len() > MAX_LINE_BYTES {
            return Err(ProtocolError::TooLong);
        }
        line.extend_from_slice(chunk);
        let n = chunk.len();
        r.consume(n);
        if done {
            return Ok(Some(serde_json::from_slice(&line)?));
        }
    }
}

/// A request name's second on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireTag {
    /// Latency histogram, V2 + deflate, base64.
    pub latency: String,
    /// Service-time histogram, V2 + deflate, base64.
    pub service: String,
    /// Outcome counts.
    pub counts: Counts,
}

/// A [`Second`] on the wire: the same fields, histograms serialised exactly.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireSecond {
    /// See [`Second::t`].
    pub t: u32,
    /// See [`Second::phase`].
    pub phase: Phase,
    /// See [`Second::stage`].
    pub stage: usize,
    /// See [`Second::offered`].
    pub offered: u64,
    /// See [`Second::sent`].
    pub sent: u64,
    /// See [`Second::tags`].
    pub tags: Vec<WireTag>,
    /// Schedule-lag histogram, V2 + deflate, base64.
    pub lag: String,
    /// See [`Second::backlog`].
    pub backlog: u64,
    /// See [`Second::overflow`].
    pub overflow: u64,
    /// See [`Second::connections`].
    pub connections: u64,
    /// See [`Second::generator_cpu`].
    pub generator_cpu: f64,
}

fn encode(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serialising into a Vec cannot fail for a valid histogram");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

fn decode(s: &str, field: &str) -> Result<Histogram<u64>, ProtocolError> {
    let err = |reason: String| ProtocolError::Histogram {
        field: field.to_string(),
        reason,
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| err(format!("base64: {e}")))?;
    let h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| err(format!("{e:?}")))?;
    // Bring it to the local bounds so it merges with local histograms exactly.
    let mut out = ceiling_metrics::new_histogram();
    out.add(&h).map_err(|e| err(format!("{e:?}")))?;
    Ok(out)
}

impl WireSecond {
    /// The wire form of a recorded second.
    pub fn from_second(s: &Second) -> Self {
        WireSecond {
            t: s.t,
            phase: s.phase,
            stage: s.stage,
            offered: s.offered,
            sent: s.sent,
            tags: s
                .tags
                .iter()
                .map(|t| WireTag {
                    latency: encode(&t.latency),
                    service: encode(&t.service),
                    counts: t.counts,
                })
                .collect(),
            lag: encode(&s.lag),
            backlog: s.backlog,
            overflow: s.overflow,
            connections: s.connections,
            generator_cpu: s.generator_cpu,
        }
    }

    /// The recorded second back, every histogram count intact.
    pub fn to_second(&self) -> Result<Second, ProtocolError> {
        let mut tags = Vec::with_capacity(self.tags.len());
        for (i, t) in self.tags.iter().enumerate() {
            tags.push(TagSecond {
                latency: decode(&t.latency, &format!("tags[{i}].latency"))?,
                service: decode(&t.service, &format!("tags[{i}].service"))?,
                counts: t.counts,
            });
        }
        let mut s = Second::new(self.t, self.phase, self.stage, 0);
        s.offered = self.offered;
        s.sent = self.sent;
        s.tags = tags;
        s.lag = decode(&self.lag, "lag")?;
        s.backlog = self.backlog;
        s.overflow = self.overflow;
        s.connections = self.connections;
        s.generator_cpu = self.generator_cpu;
        Ok(s)
    }
}

/// A [`ResetTally`] on the wire: an agent's, in its [`Message::Done`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WireResets {
    /// See [`ResetTally::retried`].
    pub retried: u64,
    /// Resets cut mid-response ([`ResetKind::MidResponse`]).
    pub mid_response: u64,
    /// Resets of a new connection closed before any byte ([`ResetKind::ClosedWhenNew`]).
    pub closed_when_new: u64,
    /// Idle-close retries that failed too ([`ResetKind::RetryFailed`]).
    pub retry_failed: u64,
    /// See [`ResetTally::examples`].
    pub examples: Vec<WireResetExample>,
}

/// A [`ResetExample`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireResetExample {
    /// See [`ResetExample::t`].
    pub t: u32,
    /// See [`ResetExample::kind`].
    pub kind: WireResetKind,
    /// See [`ResetExample::bytes`].
    pub bytes: u64,
    /// See [`ResetExample::served`].
    pub served: u64,
    /// See [`ResetExample::idle_ms`].
    pub idle_ms: f64,
    /// See [`ResetExample::retry`].
    pub retry: bool,
    /// See [`ResetExample::error`].
    pub error: String,
}

/// A [`ResetKind`] on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireResetKind {
    /// [`ResetKind::MidResponse`].
    MidResponse,
    /// [`ResetKind::ClosedWhenNew`].
    ClosedWhenNew,
    /// [`ResetKind::RetryFailed`].
    RetryFailed,
}

/// A [`ceiling_load::TlsTally`] on the wire: the counts, the handshake histogram exactly (V2 +
/// deflate, base64) and what was negotiated and trusted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireTls {
    /// See [`ceiling_load::TlsTally::handshakes`].
    pub handshakes: u64,
    /// See [`ceiling_load::TlsTally::resumed`].
    pub resumed: u64,
    /// Handshake durations (µs), V2 + deflate, base64.
    pub handshake_us: String,
    /// See [`ceiling_load::TlsTally::version`].
    pub version: Option<String>,
    /// See [`ceiling_load::TlsTally::alpn`].
    pub alpn: Option<String>,
    /// See [`ceiling_load::TlsTally::trust`].
    pub trust: String,
}

impl WireTls {
    /// The wire form of a run's handshakes.
    pub fn from_tally(t: &ceiling_load::TlsTally) -> Self {
        WireTls {
            handshakes: t.handshakes,
            resumed: t.resumed,
            handshake_us: encode(&t.handshake_us),
            version: t.version.clone(),
            alpn: t.alpn.clone(),
            trust: t.trust.clone(),
        }
    }

    /// The tally back, its histogram intact.
    pub fn to_tally(&self) -> Result<ceiling_load::TlsTally, ProtocolError> {
        Ok(ceiling_load::TlsTally {
            handshakes: self.handshakes,
            resumed: self.resumed,
            handshake_us: decode(&self.handshake_us, "tls.handshake_us")?,
            version: self.version.clone(),
            alpn: self.alpn.clone(),
            trust: self.trust.clone(),
        })
    }
}

/// A [`ceiling_load::H2Tally`] on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireH2 {
    /// See [`ceiling_load::H2Tally::streams`].
    pub streams: usize,
    /// See [`ceiling_load::H2Tally::connections`].
    pub connections: u64,
    /// See [`ceiling_load::H2Tally::max_streams_in_use`].
    pub max_streams_in_use: usize,
}

impl WireH2 {
    /// The wire form.
    pub fn from_tally(t: &ceiling_load::H2Tally) -> Self {
        WireH2 {
            streams: t.streams,
            connections: t.connections,
            max_streams_in_use: t.max_streams_in_use,
        }
    }

    /// The tally back.
    pub fn to_tally(self) -> ceiling_load::H2Tally {
        ceiling_load::H2Tally {
            streams: self.streams,
            connections: self.connections,
            max_streams_in_use: self.max_streams_in_use,
        }
    }
}

impl WireResets {
    /// The wire form of a run's tally.
    pub fn from_tally(t: &ResetTally) -> Self {
        WireResets {
            retried: t.retried,
            mid_response: t.get(ResetKind::MidResponse),
            closed_when_new: t.get(ResetKind::ClosedWhenNew),
            retry_failed: t.get(ResetKind::RetryFailed),
            examples: t
                .examples
                .iter()
                .map(|e| WireResetExample {
                    t: e.t,
                    kind: match e.kind {
                        ResetKind::MidResponse => WireResetKind::MidResponse,
                        ResetKind::ClosedWhenNew => WireResetKind::ClosedWhenNew,
                        ResetKind::RetryFailed => WireResetKind::RetryFailed,
                    },
                    bytes: e.bytes as u64,
                    served: e.served,
                    idle_ms: e.idle_ms,
                    retry: e.retry,
                    error: e.error.clone(),
                })
                .collect(),
        }
    }

    /// The tally back (at most [`ResetTally::EXAMPLES`] examples, whatever arrived).
    pub fn to_tally(&self) -> ResetTally {
        let mut by_kind = [0u64; 3];
        by_kind[ResetKind::MidResponse as usize] = self.mid_response;
        by_kind[ResetKind::ClosedWhenNew as usize] = self.closed_when_new;
        by_kind[ResetKind::RetryFailed as usize] = self.retry_failed;
        ResetTally {
            retried: self.retried,
            by_kind,
            examples: self
                .examples
                .iter()
                .take(ResetTally::EXAMPLES)
                .map(|e| ResetExample {
                    t: e.t,
                    kind: match e.kind {
                        WireResetKind::MidResponse => ResetKind::MidResponse,
                        WireResetKind::ClosedWhenNew => ResetKind::ClosedWhenNew,
                        WireResetKind::RetryFailed => ResetKind::RetryFailed,
                    },
                    bytes: e.bytes as usize,
                    served: e.served,
                    idle_ms: e.idle_ms,
                    retry: e.retry,
                    error: e.error.clone(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ceiling_metrics::{record_us, Outcome};

    #[test]
    fn a_reset_tally_crosses_the_wire_intact_and_an_old_done_reads_as_none() {
        let mut t = ResetTally {
            retried: 7,
            ..Default::default()
        };
        for (i, kind) in [
            ResetKind::MidResponse,
            ResetKind::MidResponse,
            ResetKind::ClosedWhenNew,
            ResetKind::RetryFailed,
        ]
        .into_iter()
        .enumerate()
        {
            t.note(ResetExample {
                t: i as u32,
                kind,
                bytes: 3 * i,
                served: i as u64,
                idle_ms: 1.5 * i as f64,
                retry: kind == ResetKind::RetryFailed,
                error: format!("e{i}"),
            });
        }
        let line = serde_json::to_string(&WireResets::from_tally(&t)).unwrap();
        let back: WireResets = serde_json::from_str(&line).unwrap();
        assert_eq!(back.to_tally(), t);
        assert_eq!(back.mid_response, 2, "{line}");
        // an agent from before the field: its Done has no `resets`
        let old = r#"{"type":"done","sent":3}"#;
        match serde_json::from_str::<Message>(old).unwrap() {
            Message::Done { resets, .. } => assert_eq!(resets.to_tally(), ResetTally::default()),
            m => panic!("{m:?}"),
        }
    }

    fn sample(seed: u64) -> Second {
        let mut s = Second::new(7, Phase::Measure, 2, 2);
        s.offered = 100 + seed;
        s.sent = 99 + seed;
        for i in 0..1000u64 {
            let v = (i * 7919 + seed * 104_729) % 2_000_000 + 1;
            record_us(&mut s.tags[(i % 2) as usize].latency, v);
            record_us(&mut s.tags[(i % 2) as usize].service, v / 2 + 1);
            record_us(&mut s.lag, v % 5000 + 1);
            s.tags[(i % 2) as usize].counts.add(Outcome::Ok);
        }
        s.backlog = 3;
        s.overflow = 1;
        s.connections = 40;
        s.generator_cpu = 37.5;
        s
    }

    #[test]
    fn a_second_crosses_the_wire_exactly() {
        let s = sample(1);
        let json =
            serde_json::to_string(&Message::Second(Box::new(WireSecond::from_second(&s)))).unwrap();
        let Message::Second(w) = serde_json::from_str(&json).unwrap() else {
            panic!("not a second");
        };
        let back = w.to_second().unwrap();
        assert_eq!(back.tags.len(), 2);
        for (a, b) in s.tags.iter().zip(&back.tags) {
            assert_eq!(a.latency, b.latency);
            assert_eq!(a.service, b.service);
            assert_eq!(a.counts, b.counts);
        }
        assert_eq!(s.lag, back.lag);
        assert_eq!(
            (
                s.t,
                s.stage,
                s.offered,
                s.sent,
                s.backlog,
                s.overflow,
                s.connections
            ),
            (
                back.t,
                back.stage,
                back.offered,
                back.sent,
                back.backlog,
                back.overflow,
                back.connections
            )
        );
        assert_eq!(s.generator_cpu, back.generator_cpu);
    }

    #[test]
    fn merging_decoded_shards_equals_merging_the_originals() {
        let (a, b) = (sample(1), sample(2));
        let mut local = a.clone();
        local.merge(&b);
        let mut remote = WireSecond::from_second(&a).to_second().unwrap();
        remote.merge(&WireSecond::from_second(&b).to_second().unwrap());
        assert_eq!(local.tags[0].latency, remote.tags[0].latency);
        assert_eq!(local.tags[1].service, remote.tags[1].service);
        assert_eq!(local.lag, remote.lag);
        assert_eq!(local.counts(), remote.counts());
        assert_eq!(local.sent, remote.sent);
    }

    #[test]
    fn a_corrupt_histogram_names_its_field() {
        let mut w = WireSecond::from_second(&sample(1));
        w.tags[1].service = "not base64!".into();
        let e = w.to_second().unwrap_err().to_string();
        assert!(e.contains("tags[1].service"), "{e}");
    }

    #[test]
    fn tokens_compare_exactly() {
        assert!(token_matches("s3cret", "s3cret"));
        assert!(!token_matches("s3creT", "s3cret"));
        assert!(!token_matches("s3cre", "s3cret"));
        assert!(!token_matches("s3crett", "s3cret"));
        assert!(!token_matches("", "s3cret"));
    }

    #[test]
    fn agents_admit_only_the_plans_loopback_target() {
        assert!(admit_target("http://127.0.0.1:8080", "http://127.0.0.1:8080", false).is_ok());
        let other = admit_target("http://127.0.0.1:9090", "http://127.0.0.1:8080", false);
        assert!(other.unwrap_err().contains("not the plan's target"));
        let remote = admit_target("http://192.0.2.7:8080", "http://192.0.2.7:8080", false);
        assert!(remote.unwrap_err().contains("--allow-remote"));
        assert!(admit_target("http://192.0.2.7:8080", "http://192.0.2.7:8080", true).is_ok());
    }

    #[test]
    fn stages_cross_the_wire_unchanged() {
        use ceiling_plan::Stage;
        use std::time::Duration;
        let stages = vec![
            Stage::Ramp {
                from: 0.0,
                to: 1500.5,
                duration: Duration::from_millis(600_250),
            },
            Stage::Hold {
                rate: 3000.0,
                duration: Duration::from_secs(1200),
            },
            Stage::Closed {
                connections: 64,
                duration: None,
                requests: Some(10_000),
            },
        ];
        for st in &stages {
            let w = WireStage::from(st);
            let json = serde_json::to_string(&w).unwrap();
            let back: WireStage = serde_json::from_str(&json).unwrap();
            assert_eq!(&Stage::from(&back), st, "{json}");
        }
    }

    /// A plan with templates over a data source, headers, a body, Poisson arrivals and HTTP/2.
    fn job_plan() -> (
        ceiling_load::LoadConfig,
        std::collections::BTreeMap<String, std::path::PathBuf>,
    ) {
        let toml = r#"
name = "job"
[load]
arrivals = "poisson"
http2_streams = 8
seed = 7
max_connections = 300
timeout = "3s"
threads = 3
[data.ids]
csv = "@data/ids.csv"
[[warmup]]
hold = 50
duration = "2s"
[[stages]]
ramp = { from = 10, to = 200 }
duration = "5s"
[[stages]]
hold = 200
duration = "10s"
[[requests]]
name = "batch"
weight = 3
method = "POST"
path = "/items?ids=${ids.id*10}"
headers = { "X-Request-Id" = "${uuid}" }
body = '{"n": ${int:1:9}, "id": "${ids.id}"}'
expect = [200, 201]
[[requests]]
name = "ping"
path = "/ping"
"#;
        let plan = ceiling_plan::parse_plan(toml, std::path::Path::new("job.toml")).unwrap();
        let target = ceiling_load::parse_target("http://127.0.0.1:8080/api", false).unwrap();
        let mut cfg =
            ceiling_load::LoadConfig::from_plan(&plan, target, Some(std::path::Path::new("/d")))
                .unwrap();
        cfg.tick = Some(std::time::Duration::from_micros(2500));
        cfg.realtime = true;
        cfg.io = ceiling_load::IoBackend::Epoll;
        let sent: std::collections::BTreeMap<_, _> = [(
            "ids".to_string(),
            std::path::PathBuf::from("/agent/cache/ab12"),
        )]
        .into();
        (cfg, sent)
    }

    #[test]
    fn a_job_carries_the_engines_whole_configuration() {
        let (cfg, sent) = job_plan();
        let job = Job::of_config(&cfg, "http://127.0.0.1:8080/api");
        let line = encode_line(&Message::Run {
            job: Box::new(job.clone()),
            shard: (1, 3),
            start_at_us: 5,
        })
        .unwrap();
        let back: Message = serde_json::from_slice(&line).unwrap();
        let Message::Run { job: back, .. } = back else {
            panic!("not a run")
        };
        assert_eq!(*back, job);
        let target = ceiling_load::parse_target(&back.url, false).unwrap();
        let got = back.config(target, sent.clone(), (1, 3)).unwrap();
        // everything the engine reads, as the coordinator configured it
        assert_eq!(got.requests, cfg.requests);
        assert_eq!(got.stages, cfg.stages);
        assert_eq!(got.warmup, cfg.warmup);
        assert_eq!(
            (
                got.model,
                got.arrivals,
                got.keep_alive,
                got.http2,
                got.tick,
                got.realtime,
                got.io
            ),
            (
                cfg.model,
                cfg.arrivals,
                cfg.keep_alive,
                cfg.http2,
                cfg.tick,
                true,
                ceiling_load::IoBackend::Epoll
            )
        );
        assert_eq!(
            (got.seed, got.max_connections, got.max_backlog, got.timeout),
            (cfg.seed, cfg.max_connections, cfg.max_backlog, cfg.timeout)
        );
        assert_eq!((got.threads, got.hard_limit), (cfg.threads, cfg.hard_limit));
        assert_eq!(got.target.base_path, "/api");
        // the agent's files, not the coordinator's paths; its own share
        assert_eq!(got.data, sent);
        assert_eq!(got.process_shard, (1, 3));
    }

    #[test]
    fn an_agent_refuses_a_job_no_plan_could_make() {
        let (cfg, sent) = job_plan();
        let good = Job::of_config(&cfg, "http://127.0.0.1:8080");
        let target = || ceiling_load::parse_target("http://127.0.0.1:8080", false).unwrap();
        let refuse = |j: &Job, data: &std::collections::BTreeMap<String, std::path::PathBuf>| {
            j.config(target(), data.clone(), (0, 1)).unwrap_err()
        };
        let e = refuse(&good, &Default::default());
        assert!(e.contains("no complete data for source `ids`"), "{e}");
        let mut j = good.clone();
        j.data.clear();
        let e = refuse(&j, &sent);
        assert!(
            e.contains("reads data source `ids`, which the job does not name"),
            "{e}"
        );
        let mut j = good.clone();
        j.requests.clear();
        assert!(refuse(&j, &sent).contains("0 requests"));
        let mut j = good.clone();
        j.requests[0].weight = 0;
        assert!(refuse(&j, &sent).contains("weight 0"));
        let mut j = good.clone();
        if let ceiling_plan::Segment::Column { count, .. } = j.requests[0]
            .path
            .segments
            .iter_mut()
            .find(|s| matches!(s, ceiling_plan::Segment::Column { .. }))
            .unwrap()
        {
            *count = 1 << 40;
        }
        assert!(refuse(&j, &sent).contains("rows of `ids` at once"));
        let mut j = good.clone();
        j.stages[1] = WireStage::Hold {
            rate: f64::NAN,
            duration_ms: 1000,
        };
        assert!(refuse(&j, &sent).contains("a stage out of range"));
        let mut j = good.clone();
        j.stages = vec![WireStage::Closed {
            connections: 0,
            duration_ms: Some(1000),
            requests: None,
        }];
        assert!(refuse(&j, &sent).contains("a stage out of range"));
        let e = good.config(target(), sent.clone(), (3, 3)).unwrap_err();
        assert!(e.contains("is not a share"), "{e}");
        assert!(good.config(target(), sent, (0, 1)).is_ok());
    }

    #[test]
    fn data_is_cut_into_pieces_that_join_back_at_line_ends() {
        // three pieces' worth of 37-byte lines (a UUID CSV), one multi-byte character at a cut
        let line = format!("{}\n", "é".repeat(18));
        let n = 3 * DATA_CHUNK_BYTES / line.len();
        let text: String = line.repeat(n);
        let msgs = data_messages("ids", &text);
        assert!(msgs.len() >= 3, "{} pieces", msgs.len());
        let mut joined = String::new();
        for (i, m) in msgs.iter().enumerate() {
            let Message::Data { name, text, last } = m else {
                panic!("not data: {m:?}")
            };
            assert_eq!(name, "ids");
            assert_eq!(*last, i + 1 == msgs.len());
            assert!(text.len() <= DATA_CHUNK_BYTES);
            if !last {
                assert!(text.ends_with('\n'), "piece {i} cut inside a line");
            }
            joined.push_str(text);
        }
        assert_eq!(joined, text);
        assert!(matches!(
            &data_messages("empty", "")[..],
            [Message::Data { last: true, .. }]
        ));
    }

    #[test]
    fn a_file_is_offered_by_its_sha256() {
        // FIPS 180-2's "abc" test vector
        let o = OfferedFile::of("ids", "abc");
        assert_eq!(
            o.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!((o.name.as_str(), o.bytes), ("ids", 3));
    }

    #[test]
    fn clock_offset_recovers_a_known_skew() {
        // Agent clock 5 ms ahead; 300 µs each way; 50 µs in the agent.
        let (t0, skew) = (1_000_000, 5_000);
        let t1 = t0 + 300 + skew;
        let t2 = t1 + 50;
        let t3 = t2 - skew + 300;
        assert_eq!(clock_offset(t0, t1, t2, t3), (5_000, 600));
    }

    #[test]
    fn tls_and_h2_tallies_travel_exactly() {
        let mut h = ceiling_metrics::new_histogram();
        for us in [800u64, 900, 1200, 45_000] {
            h.record(us).unwrap();
        }
        let t = ceiling_load::TlsTally {
            handshakes: 4,
            resumed: 3,
            handshake_us: h,
            version: Some("TLSv1_3".into()),
            alpn: Some("h2".into()),
            trust: "--cacert ca.pem".into(),
        };
        let done = Message::Done {
            sent: 4,
            connect_failures: 0,
            connect_error: None,
            stopped_early: false,
            cpu_s: 0.1,
            resets: WireResets::default(),
            tls: Some(Box::new(WireTls::from_tally(&t))),
            h2: Some(WireH2::from_tally(&ceiling_load::H2Tally {
                streams: 16,
                connections: 2,
                max_streams_in_use: 11,
            })),
            io: Some("io_uring".into()),
        };
        let line = serde_json::to_string(&done).unwrap();
        let Message::Done { tls, h2, io, .. } = serde_json::from_str::<Message>(&line).unwrap()
        else {
            panic!("{line}")
        };
        assert_eq!(io.as_deref(), Some("io_uring"), "the back end travels");
        let back = tls.expect("tls travels").to_tally().unwrap();
        assert_eq!((back.handshakes, back.resumed), (4, 3));
        assert_eq!(back.handshake_us.len(), 4);
        assert_eq!(back.handshake_us.max(), t.handshake_us.max());
        assert_eq!(
            (back.version.as_deref(), back.alpn.as_deref()),
            (Some("TLSv1_3"), Some("h2"))
        );
        assert_eq!(back.trust, "--cacert ca.pem");
        let h2 = h2.expect("h2 travels").to_tally();
        assert_eq!(
            (h2.streams, h2.connections, h2.max_streams_in_use),
            (16, 2, 11)
        );
        // an agent from before the fields
        match serde_json::from_str::<Message>(r#"{"type":"done","sent":3}"#).unwrap() {
            Message::Done { tls, h2, .. } => assert!(tls.is_none() && h2.is_none()),
            m => panic!("{m:?}"),
        }
    }

    #[tokio::test]
    async fn messages_frame_over_a_socket_and_overlong_lines_are_refused() {
        let (a, b) = tokio::io::duplex(1 << 20);
        let mut r = tokio::io::BufReader::new(b);
        let mut w = a;
        let hello = Message::Hello {
            version: PROTOCOL_VERSION,
            token: "t".into(),
        };
        write_message(&mut w, &hello).await.unwrap();
        write_message(
            &mut w,
            &Message::Done {
                sent: 9,
                connect_failures: 0,
                connect_error: None,
                stopped_early: false,
                cpu_s: 0.5,
                resets: WireResets::default(),
                tls: None,
                h2: None,
                io: None,
            },
        )
        .await
        .unwrap();
        drop(w);
        assert!(matches!(
            read_message(&mut r).await.unwrap(),
            Some(Message::Hello {
                version: PROTOCOL_VERSION,
                ..
            })
        ));
        assert!(matches!(
            read_message(&mut r).await.unwrap(),
            Some(Message::Done { sent: 9, .. })
        ));
        assert!(read_message(&mut r).await.unwrap().is_none());

        let big = vec![b'x'; MAX_LINE_BYTES + 10];
        let mut r = tokio::io::BufReader::new(big.as_slice());
        assert!(matches!(
            read_message(&mut r).await,
            Err(ProtocolError::TooLong)
        ));
    }
}
