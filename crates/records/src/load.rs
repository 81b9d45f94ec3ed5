//! `ceiling load`'s record, its `summary.json`: the figures of one load as data, judged by
//! `ceiling_lab::load_report` and rendered by `ceiling_report::load`.

pub use ceiling_analyze::Percentiles;

/// One request of the plan's mix, as the load went.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TagReport {
    /// The request's name in the plan.
    pub name: String,
    /// Completed requests (any outcome).
    pub requests: u64,
    /// Completed per second, over the same seconds as [`LoadReport::achieved_rps`].
    pub rps: f64,
    /// Latency from the intended send time (open model) or the write (closed).
    pub latency: Percentiles,
    /// Service time: from the request's write to its response.
    pub service: Percentiles,
    /// Requests by outcome other than ok.
    pub errors: std::collections::BTreeMap<String, u64>,
}

/// The machine-readable summary of `ceiling load`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadReport {
    /// Version of this file's layout.
    pub schema_version: u32,
    /// The target.
    pub url: String,
    /// `open` or `closed`.
    pub model: String,
    /// Factor every duration was scaled by (`--quick`).
    pub scaled_by: f64,
    /// Seconds recorded in the measured phase.
    pub measured_seconds: u32,
    /// The measured duration the offered rate is over, seconds: the plan's measured stages when
    /// the run ran them in full, else the seconds in which requests were offered.
    pub measured_duration_s: f64,
    /// Requests the schedule offered.
    pub offered: u64,
    /// Offered per second.
    pub offered_rps: f64,
    /// Requests completed (any outcome).
    pub completed: u64,
    /// Completed per second: over [`LoadReport::measured_duration_s`], or over
    /// [`LoadReport::measured_seconds`] when replies kept coming more than a second past the
    /// planned end (a service that queued what it could not serve).
    pub achieved_rps: f64,
    /// Where latency is measured from.
    pub latency_origin: String,
    /// Latency over every request.
    pub latency: Percentiles,
    /// Service time over every request.
    pub service: Percentiles,
    /// How late the generator dispatched its sends (its own punctuality).
    pub schedule_lag: Percentiles,
    /// Requests by outcome other than ok.
    pub errors: std::collections::BTreeMap<String, u64>,
    /// Errors over completed.
    pub error_rate: f64,
    /// Requests refused for a full backlog (the connection cap reached).
    pub overflow: u64,
    /// The same per request of the plan.
    pub per_request: Vec<TagReport>,
    /// The generator's CPU over the run, seconds.
    pub generator_cpu_seconds: f64,
    /// The generator's CPU per completed request, µs.
    pub generator_cpu_us_per_request: f64,
    /// The generator's mean CPU, % of one core.
    pub generator_cpu_mean_pct: f64,
    /// The generator's busiest second, % of one core.
    pub generator_cpu_max_pct: f64,
    /// The generator was the limit: the figures describe it, not the service.
    pub generator_bound: bool,
    /// Why (or that it kept up), in one sentence.
    pub generator_verdict: String,
    /// Connections that could not be opened (their requests were never sent).
    pub connect_failures: u64,
    /// The first connection failure, e.g. `connecting to 127.0.0.1:9: Connection refused (os error 111)`.
    pub connect_error: Option<String>,
    /// No request reached the service: every connection attempt failed.
    pub no_connection: bool,
    /// The `reset` errors taken apart by what the connection did, and the idle-close retries
    /// (absent when there were neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_resets: Option<String>,
    /// The TLS handshakes of an https run (absent for cleartext).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsReport>,
    /// HTTP/2's connections (absent for HTTP/1.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2: Option<H2Report>,
    /// The ticked engine and its tick, when `--tick` chose it (absent: the default engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Real-time scheduling of the generator's threads, when `--realtime` asked for it (absent:
    /// normal scheduling at nice −10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime: Option<String>,
    /// One line: what this result is (the connection failure, generator-bound, or fine).
    pub verdict: String,
    /// Stopped before the plan's end (a signal, an agent lost).
    pub stopped_early: bool,
    /// Per generator agent, when the load came from agents (`--agents`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<AgentReport>>,
}

/// The TLS handshakes of an https run: timed from the TCP connection to the end of the handshake,
/// apart from the requests' latency (a request that needed a new connection has its handshake in
/// its latency too).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TlsReport {
    /// Protocol version (`TLSv1_3`) and ALPN protocol, as negotiated.
    pub version: Option<String>,
    /// ALPN protocol as negotiated.
    pub alpn: Option<String>,
    /// Handshakes done.
    pub handshakes: u64,
    /// Of which resumed an earlier session.
    pub resumed: u64,
    /// Median handshake.
    pub handshake_p50_ms: f64,
    /// 99th percentile handshake.
    pub handshake_p99_ms: f64,
    /// Longest handshake.
    pub handshake_max_ms: f64,
    /// What the client trusted: the system's roots, a CA file, or nothing (`--insecure`).
    pub trust: String,
    /// All of it in one line, as the terminal shows it.
    pub line: String,
}

/// What HTTP/2 multiplexing did: connections opened, the streams setting, the most in use on one.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct H2Report {
    /// The streams setting.
    pub streams_per_connection: usize,
    /// Connections opened.
    pub connections: u64,
    /// The most streams in use on one connection.
    pub max_streams_in_use: usize,
    /// All of it in one line, as the terminal shows it.
    pub line: String,
}

/// One generator agent's part of a run with `--agents`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentReport {
    /// `host:port` it was reached at.
    pub address: String,
    /// The name it gave.
    pub name: String,
    /// Its clock − this one's, µs, and the round trip that bounds the error (± half of it).
    pub clock_offset_us: i64,
    /// Round trip of the clock probe that bounds the offset's error.
    pub clock_rtt_us: i64,
    /// Its share of the schedule, `I/N`.
    pub shard: String,
    /// Requests its share offered.
    pub offered: u64,
    /// Requests it wrote.
    pub sent: u64,
    /// Requests it completed.
    pub completed: u64,
    /// Its own schedule lag.
    pub schedule_lag: Percentiles,
    /// Its mean CPU, % of one core.
    pub generator_cpu_mean_pct: f64,
    /// Its busiest second, % of one core.
    pub generator_cpu_max_pct: f64,
    /// It was the limit.
    pub generator_bound: bool,
    /// Why (or that it kept up).
    pub generator_verdict: String,
    /// Its own `reset` errors taken apart and its idle-close retries (absent when neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_resets: Option<String>,
    /// Its TLS handshakes (https targets; the merged `tls` adds every agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_handshakes: Option<u64>,
    /// Its HTTP/2 connections (with --http2; the merged `http2` adds every agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2_connections: Option<u64>,
    /// Set when the agent vanished before it said it was done: what happened, and how much of
    /// its record arrived (everything that arrived is in the merged figures).
    pub lost: Option<String>,
}
