//! The load engine behind `ceiling load`, `ceiling run` and `ceiling search`.
//!
//! - **Open model** (default): one schedule of intended send times (uniform or Poisson) from the
//!   plan's ramp and hold stages; latency is measured from the *intended* send time, so a stalled
//!   server cannot hide its stall by slowing the generator down (no coordinated omission). Service
//!   time (from the actual write) and schedule lag (write − intended) are kept separately.
//! - **Closed model**: N connections, each send-wait-send, for a duration or a request count.
//! - Per-second, per-request-name HdrHistograms ([`ceiling_metrics::Second`]) handed to the caller
//!   as each second ends, so files can be flushed every second.
//!
//! Safety: targets must be loopback unless the caller allows remote ones, and every run has a
//! hard time bound.

mod clock;
mod engine;
mod h2link;
mod http;
pub mod realtime;
mod request;
mod schedule;
mod summary;
pub mod testing;
mod timer;
mod tls;
mod uring;

pub use ceiling_plan::IoBackend;
pub use clock::{now_ns, process_cpu_ns};
pub use engine::run;
pub use request::{load_table, Table};
pub use schedule::{timed_stages, Arrival, Schedule, TimedStage};
pub use summary::{H2Tally, ResetExample, ResetKind, ResetTally, Summary, TagTotals};
pub use tls::{TlsClient, TlsOptions, TlsTally};

use ceiling_plan::{Arrivals, HttpUrl, Model, Plan, RequestSpec, Stage};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// A resolved HTTP target.
#[derive(Debug, Clone)]
pub struct Target {
    /// Address to connect to.
    pub addr: SocketAddr,
    /// `Host` header value.
    pub host_header: String,
    /// Path prefix from the URL (no trailing slash), prepended to every request path.
    pub base_path: String,
    /// TLS client for an `https` URL; `None` for cleartext.
    pub tls: Option<TlsClient>,
}

/// Errors from the engine, each saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The target URL is unusable or not allowed.
    #[error("target: {0}")]
    Target(String),
    /// A data file could not be loaded.
    #[error("data: {0}")]
    Data(String),
    /// The generator itself failed.
    #[error("generator: {0}")]
    Runtime(String),
}

/// How this process checks https servers unless told otherwise: set once at start from the
/// command line (`--cacert`, `--insecure`), read by every [`parse_target`].
static TLS_DEFAULTS: std::sync::OnceLock<TlsOptions> = std::sync::OnceLock::new();

/// Sets how this process checks https servers ([`parse_target`]'s options). The first call wins;
/// later ones return `false`.
pub fn set_tls_defaults(opts: TlsOptions) -> bool {
    TLS_DEFAULTS.set(opts).is_ok()
}

/// Certificates trusted besides the roots of [`TlsOptions`]: the stand's own throwaway
/// certificate for the stacks' TLS ports ([`trust_also`]).
static EXTRA_ROOTS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Trusts the certificates in this PEM file too, for every https target this process opens
/// from now on (the stand's certificate: `[stand] tls = true`). Idempotent.
pub fn trust_also(pem: &std::path::Path) {
    let mut v = EXTRA_ROOTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !v.iter().any(|p| p == pem) {
        v.push(pem.to_path_buf());
    }
}

/// The files [`trust_also`] added.
pub(crate) fn extra_roots() -> Vec<PathBuf> {
    EXTRA_ROOTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// What the ticked engine with this tick does to the arrivals and the timing under `model`, in
/// one phrase (the `Engine` line of `ceiling load`, a note in run.json).
pub fn describe_tick(tick: Duration, model: Model) -> String {
    match model {
        Model::Open => format!(
            "the ticked engine, tick {}: the requests due within a tick leave together (at most {} early or late), responses timed by the kernel's receive stamps",
            ceiling_plan::format_duration(tick),
            ceiling_plan::format_duration(tick / 2)
        ),
        Model::Closed => format!(
            "the ticked engine, closed model: each connection sends on as its response is read, one wake-up per batch of responses (the {} tick paces only timeouts and the per-second record), responses timed by the kernel's receive stamps",
            ceiling_plan::format_duration(tick)
        ),
    }
}

/// [`describe_tick`] with the I/O back end a run used ([`Summary::io`]), as the load summary and
/// each shelf's notes say it.
pub fn describe_engine(tick: Duration, model: Model, io: Option<&str>) -> String {
    match io {
        Some(io) => format!("{}; I/O: {io}", describe_tick(tick, model)),
        None => describe_tick(tick, model),
    }
}

/// The options [`set_tls_defaults`] set (system roots, full check if never set).
pub fn tls_defaults() -> TlsOptions {
    TLS_DEFAULTS.get().cloned().unwrap_or_default()
}

/// Parses and resolves `http[s]://host[:port][/base]` (the syntax is [`HttpUrl::parse`]'s, the
/// one URL parser of the workspace). Non-loopback addresses are refused unless `allow_remote`. The
/// path becomes the base prepended to every request path; a base with a query is refused. An
/// https server is checked as [`tls_defaults`] says.
pub fn parse_target(url: &str, allow_remote: bool) -> Result<Target, LoadError> {
    let u = HttpUrl::parse(url).map_err(LoadError::Target)?;
    target_of(&u, url, allow_remote, &tls_defaults())
}

/// Resolves a parsed URL (see [`parse_target`]); `shown` is the URL as the user wrote it; `tls`
/// says how an https server is checked (ignored for http).
pub fn target_of(
    u: &HttpUrl,
    shown: &str,
    allow_remote: bool,
    tls: &TlsOptions,
) -> Result<Target, LoadError> {
    if u.path.contains('?') {
        return Err(LoadError::Target(format!(
            "`{shown}`: a base URL cannot carry a query; put it in the request paths"
        )));
    }
    let authority = u.authority();
    let addrs: Vec<SocketAddr> = authority
        .to_socket_addrs()
        .map_err(|e| LoadError::Target(format!("cannot resolve `{}` in `{shown}`: {e}", u.host)))?
        .collect();
    let addr = *addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .ok_or_else(|| LoadError::Target(format!("`{}` resolves to no address", u.host)))?;
    if !allow_remote && !is_loopback(addr.ip()) {
        return Err(LoadError::Target(format!(
            "`{shown}` resolves to {}, which is not loopback; ceiling sends load only to this machine unless you pass --allow-remote for an address you own",
            addr.ip()
        )));
    }
    let tls = if u.tls {
        Some(
            TlsClient::new(&u.host, tls, &[b"http/1.1"])
                .map_err(|e| LoadError::Target(format!("`{shown}`: {e}")))?,
        )
    } else {
        None
    };
    Ok(Target {
        addr,
        host_header: authority,
        base_path: u.base_path().to_string(),
        tls,
    })
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v) => v.is_loopback(),
        IpAddr::V6(v) => v.is_loopback() || v.to_ipv4_mapped().is_some_and(|m| m.is_loopback()),
    }
}

/// Everything the engine needs for one run.
#[derive(Debug)]
pub struct LoadConfig {
    /// Where to send.
    pub target: Target,
    /// Open or closed.
    pub model: Model,
    /// Arrival process (open model).
    pub arrivals: Arrivals,
    /// Keep-alive on (reuse connections) or off (one connection per request).
    pub keep_alive: bool,
    /// Connection cap (open model); with HTTP/2, the cap on requests in flight (stream slots).
    pub max_connections: usize,
    /// HTTP/2 with this many concurrent streams per connection (h2c with prior knowledge over
    /// cleartext, ALPN `h2` over TLS); `None`: HTTP/1.1.
    pub http2: Option<usize>,
    /// Request timeout.
    pub timeout: Duration,
    /// Seed for the request stream and Poisson arrivals.
    pub seed: u64,
    /// Backlog bound before overload is reported.
    pub max_backlog: usize,
    /// Warm-up stages (recorded with phase `warmup`).
    pub warmup: Vec<Stage>,
    /// Measured stages.
    pub stages: Vec<Stage>,
    /// The request mix.
    pub requests: Vec<RequestSpec>,
    /// Data source name → CSV path (already resolved).
    pub data: BTreeMap<String, PathBuf>,
    /// Generator threads (each one tokio runtime and a shard of the schedule).
    pub threads: usize,
    /// Hard bound on the whole run; the engine stops by itself past it.
    pub hard_limit: Duration,
    /// Set to stop early (Ctrl-C); results so far are kept.
    pub stop: Arc<AtomicBool>,
    /// This process's share of the schedule, `(i, n)`: a 1/n share of the plan's arrivals (of
    /// every n·T consecutive arrivals, the T that its T threads take), so `n` generator processes
    /// with `i = 0…n−1` send exactly the plan's arrivals between them, interleaved in time.
    /// Connection and backlog caps are divided alike. `(0, 1)`: the whole schedule.
    pub process_shard: (u64, u64),
    /// The ticked engine with this tick (`None`: the tokio engine): the open model over HTTP/1.1
    /// cleartext with keep-alive, sends due within a tick out in one wake-up, responses read at
    /// the ticks and timed by the kernel's receive timestamps (see `tick.rs`). [`run`] refuses it
    /// for anything else.
    pub tick: Option<Duration>,
    /// The ticked engine's I/O back end: io_uring where the kernel has what it needs, else
    /// epoll ([`IoBackend`]); the one used is in [`Summary::io`].
    pub io: IoBackend,
    /// Run the generator's threads under `SCHED_FIFO` ([`realtime`]): ahead of the stack's and
    /// PostgreSQL's threads where they share cores. [`run`] refuses it without the privilege.
    pub realtime: bool,
}

impl LoadConfig {
    /// Builds a config from a plan. `data_dir` resolves `@data/...` sources.
    pub fn from_plan(
        plan: &Plan,
        target: Target,
        data_dir: Option<&std::path::Path>,
    ) -> Result<LoadConfig, LoadError> {
        let mut data = BTreeMap::new();
        for (name, src) in &plan.data {
            let path = if src.needs_stand {
                let dir = data_dir.ok_or_else(|| {
                    LoadError::Data(format!("data source `{name}` is in the stand's data directory (@data/); run it with `ceiling run`, or pass --data-dir"))
                })?;
                dir.join(&src.path)
            } else {
                src.path.clone()
            };
            data.insert(name.clone(), path);
        }
        let planned = plan.total_duration();
        let count_bound = plan
            .warmup
            .iter()
            .chain(&plan.stages)
            .any(|s| s.duration().is_none());
        let hard_limit = if count_bound {
            Duration::from_secs(3600)
        } else {
            planned + plan.load.timeout + Duration::from_secs(10)
        };
        Ok(LoadConfig {
            target,
            model: plan.load.model,
            arrivals: plan.load.arrivals,
            keep_alive: plan.load.keep_alive,
            max_connections: plan.load.max_connections,
            http2: plan.load.http2_streams,
            timeout: plan.load.timeout,
            seed: plan.load.seed,
            max_backlog: plan.load.max_backlog,
            warmup: plan.warmup.clone(),
            stages: plan.stages.clone(),
            requests: plan.requests.clone(),
            data,
            threads: plan.load.threads.max(1),
            hard_limit,
            stop: Arc::new(AtomicBool::new(false)),
            process_shard: (0, 1),
            tick: plan.load.tick,
            io: plan.load.io,
            realtime: plan.load.realtime,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn refuses_remote_targets() {
        assert!(
            parse_target("http://127.0.0.1:8080/api/", false)
                .unwrap()
                .base_path
                == "/api"
        );
        assert!(parse_target("http://localhost:9", false).is_ok());
        let e = parse_target("http://10.1.2.3:80", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not loopback") && e.contains("--allow-remote"),
            "{e}"
        );
        assert!(parse_target("http://10.1.2.3:80", true).is_ok());
        let insecure = TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        };
        let u = HttpUrl::parse("https://127.0.0.1").unwrap();
        let t = target_of(&u, "https://127.0.0.1", false, &insecure).unwrap();
        assert!(t.tls.is_some());
        assert_eq!(t.addr.port(), 443);
        let u = HttpUrl::parse("http://127.0.0.1:1").unwrap();
        let t = target_of(&u, "http://127.0.0.1:1", false, &insecure).unwrap();
        assert!(t.tls.is_none());
        let u = HttpUrl::parse("https://127.0.0.1:1").unwrap();
        let missing = TlsOptions {
            cacert: Some("/nonexistent/ca.pem".into()),
            ..TlsOptions::default()
        };
        let e = target_of(&u, "https://127.0.0.1:1", false, &missing)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--cacert /nonexistent/ca.pem"), "{e}");
        assert!(parse_target("ftp://x", false).is_err());
        assert!(parse_target("http://127.0.0.1:8080/?a=1", false).is_err());
        let t = parse_target("http://[::1]:8080", false).unwrap();
        assert_eq!(t.host_header, "[::1]:8080");
        assert_eq!(t.base_path, "");
    }
}
