//! The validated plan model. Every field has a default that reproduces source 000's method.

use crate::template::Template;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// A validated plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Short name, used in result directories and reports.
    pub name: String,
    /// One line about what the plan reproduces.
    pub description: String,
    /// Source benchmark id (`"000"`…`"004"`), if the plan reproduces one.
    pub source: Option<String>,
    /// Where the plan file lives; relative data paths resolve against it.
    pub file: PathBuf,
    /// What to send load to.
    pub target: Target,
    /// How the generator behaves.
    pub load: LoadSettings,
    /// Warm-up stages run before the measured stages (not analysed).
    pub warmup: Vec<Stage>,
    /// `[settle]`: before the run, the last warm-up stage repeated in steps until the stack's
    /// throughput stops changing (closed model only); `None` = the warm-up as written only.
    pub settle: Option<SettleSettings>,
    /// The measured load profile.
    pub stages: Vec<Stage>,
    /// Named CSV data sources referenced by request templates.
    pub data: BTreeMap<String, DataSource>,
    /// The weighted request mix.
    pub requests: Vec<RequestSpec>,
    /// Service-level objective used to judge shelves and searches.
    pub slo: Slo,
    /// Shelf analysis settings.
    pub analysis: AnalysisSettings,
    /// Stand settings (database, stacks, limits).
    pub stand: StandSettings,
    /// Capacity-search settings.
    pub search: SearchSettings,
    /// `[cost]`: what the measured ceilings cost to run (source 002's table); `None` = no cost table.
    pub cost: Option<CostSettings>,
    /// Factor applied by `--quick` to every duration (1.0 = the source's timings).
    pub quick_scale: f64,
    /// The factor this plan was scaled by (1.0 unless [`Plan::scaled`] was applied).
    pub scaled_by: f64,
}

/// The load model, derived from the stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// Rate-driven: a schedule of intended send times; latency from the intended time.
    Open,
    /// Concurrency-driven: N connections, each send-wait-send.
    Closed,
}

/// Inter-arrival distribution for the open model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Evenly spaced intended send times.
    Uniform,
    /// Exponential inter-arrival times (a Poisson process) with the stage's rate.
    Poisson,
}

/// What the load goes to.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// Base URL (`http://127.0.0.1:8080`); `ceiling run` fills it from the stand.
    pub url: Option<String>,
    /// Stacks `ceiling run` measures, in order.
    pub stacks: Vec<String>,
}

/// Generator settings.
#[derive(Debug, Clone)]
pub struct LoadSettings {
    /// Open (rate) or closed (concurrency) model.
    pub model: Model,
    /// Arrival process for the open model.
    pub arrivals: Arrivals,
    /// Reuse connections (HTTP keep-alive). Off = a new TCP connection per request.
    pub keep_alive: bool,
    /// Upper bound on concurrent connections in the open model.
    pub max_connections: usize,
    /// Per-request timeout; a request past it counts as `timeout`.
    pub timeout: Duration,
    /// Seed for data row choice, request mix and Poisson arrivals.
    pub seed: u64,
    /// Requests allowed to wait for a free connection before the generator reports overload.
    pub max_backlog: usize,
    /// Repetitions of every closed-model level (source 003 used 5).
    pub repetitions: u32,
    /// Generator threads (`[load] threads`; wrk's `-t`). `ceiling run/search/load --threads`
    /// overrides it.
    pub threads: usize,
    /// HTTP/2 with this many concurrent streams per connection (`[load] http2_streams`; `ceiling
    /// load --http2`); `None`: HTTP/1.1.
    pub http2_streams: Option<usize>,
    /// The ticked engine with this tick (`[load] tick = "2ms"`; `ceiling load --tick`): the open
    /// model's sends due within a tick leave in one wake-up, the closed model's connections send
    /// on as their responses are read, one wake-up per batch (the tick then paces only timeouts
    /// and the per-second record); responses are timed by the kernel's receive stamps (issue 36,
    /// experimental); `None`: the default engine.
    pub tick: Option<Duration>,
    /// The generator's threads under real-time scheduling (`[load] realtime = true`; `--realtime`):
    /// `SCHED_FIFO`, ahead of the stack's and PostgreSQL's threads on a box where they share
    /// cores. Needs `CAP_SYS_NICE`; refused before the run without it.
    pub realtime: bool,
    /// The ticked engine's I/O back end (`[load] io = "auto" | "epoll" | "io_uring"`; `--io`).
    pub io: IoBackend,
    /// `[load] stop_at_failure = true`: the run ends as soon as a shelf is judged failed (the
    /// stack's failure, not an invalid shelf), so a stepped profile written past any plausible
    /// ceiling — the source's method continued — stops where it brackets instead of loading a
    /// failed stack for the rest of its stages.
    pub stop_at_failure: bool,
}

/// Which I/O back end the ticked engine uses (`[load] io`; `--io`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoBackend {
    /// io_uring where the kernel gives what it needs, else epoll (said in the summary).
    #[default]
    Auto,
    /// The epoll back end.
    Epoll,
    /// io_uring, refused with the reason where the kernel cannot give it.
    IoUring,
}

impl IoBackend {
    /// `auto`, `epoll` or `io_uring`, as [`IoBackend::parse`] reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            IoBackend::Auto => "auto",
            IoBackend::Epoll => "epoll",
            IoBackend::IoUring => "io_uring",
        }
    }

    /// Parses `auto`, `epoll` or `io_uring` (as plans and the CLI write it).
    pub fn parse(s: &str) -> Result<IoBackend, String> {
        match s {
            "auto" => Ok(IoBackend::Auto),
            "epoll" => Ok(IoBackend::Epoll),
            "io_uring" | "io-uring" | "uring" => Ok(IoBackend::IoUring),
            other => Err(format!(
                "unknown I/O back end {other:?}: use auto, epoll or io_uring"
            )),
        }
    }
}

/// One stage of the load profile.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// Open model: rate changes linearly from `from` to `to` RPS.
    Ramp {
        from: f64,
        to: f64,
        duration: Duration,
    },
    /// Open model: constant rate; a shelf the analysis judges.
    Hold { rate: f64, duration: Duration },
    /// Closed model: `connections` loops for a duration or a request count.
    Closed {
        connections: usize,
        duration: Option<Duration>,
        requests: Option<u64>,
    },
}

impl Stage {
    /// The stage's duration (for closed stages bounded by a request count: `None`).
    pub fn duration(&self) -> Option<Duration> {
        match self {
            Stage::Ramp { duration, .. } | Stage::Hold { duration, .. } => Some(*duration),
            Stage::Closed { duration, .. } => *duration,
        }
    }
    /// The load model the stage belongs to (ramps and holds: open; connection levels: closed).
    pub fn model(&self) -> Model {
        match self {
            Stage::Ramp { .. } | Stage::Hold { .. } => Model::Open,
            Stage::Closed { .. } => Model::Closed,
        }
    }
    /// A short description with its length: `hold 150 for 1m`, `c=100 for 30s`,
    /// `c=100 × 100000 requests`.
    pub fn describe(&self) -> String {
        match self {
            Stage::Closed {
                duration: None,
                requests: Some(n),
                ..
            } => format!("{} × {n} requests", self.label()),
            s => match s.duration() {
                Some(d) => format!("{} for {}", s.label(), crate::format_duration(d)),
                None => s.label(),
            },
        }
    }
    /// True for stages the analysis judges as shelves (holds and closed levels).
    pub fn is_shelf(&self) -> bool {
        !matches!(self, Stage::Ramp { .. })
    }
    /// A short label: `ramp 0→1500`, `hold 1500`, `c=50`.
    pub fn label(&self) -> String {
        match self {
            Stage::Ramp { from, to, .. } => format!("ramp {from:.0}→{to:.0}"),
            Stage::Hold { rate, .. } => format!("hold {rate:.0}"),
            Stage::Closed { connections, .. } => format!("c={connections}"),
        }
    }
}

/// A CSV file of values requests draw from.
#[derive(Debug, Clone)]
pub struct DataSource {
    /// Resolved path. A path starting with `@data/` is resolved against the stand's data directory
    /// at run time (see [`DataSource::needs_stand`]).
    pub path: PathBuf,
    /// True when the path is in the stand's data directory (`@data/...`).
    pub needs_stand: bool,
}

/// One named request of the mix. Serialisable so a coordinator can send it to its generator
/// agents as it is (`ceiling_agent::Job`), templates and all.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RequestSpec {
    /// Name used as the histogram tag and in reports.
    pub name: String,
    /// Relative weight in the mix.
    pub weight: u32,
    /// HTTP method.
    pub method: String,
    /// Path and query template, e.g. `/status/${status_ids.id}`.
    pub path: Template,
    /// Extra headers (values may be templates).
    pub headers: Vec<(String, Template)>,
    /// Body template.
    pub body: Option<Template>,
    /// Expected status codes; any other status counts as an error. Empty = any 2xx.
    pub expect: Vec<u16>,
}

impl RequestSpec {
    /// Whether `status` is what this request expects.
    pub fn expects(&self, status: u16) -> bool {
        if self.expect.is_empty() {
            (200..300).contains(&status)
        } else {
            self.expect.contains(&status)
        }
    }
}

/// A latency limit at a percentile.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PercentileLimit {
    /// Percentile, e.g. 99.0 or 99.9.
    pub percentile: f64,
    /// Latency that must not be exceeded at that percentile.
    #[serde(with = "duration_ms")]
    pub limit: Duration,
}

/// The service-level objective.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Slo {
    /// Overall percentile limits (source 000: p99 ≤ 350 ms).
    pub limits: Vec<PercentileLimit>,
    /// Error rate must be strictly below this fraction (source 000: 1%).
    pub max_error_rate: f64,
    /// Per-request percentile limits.
    pub per_request: BTreeMap<String, Vec<PercentileLimit>>,
}

impl Slo {
    /// `p99≤350ms, errors<1%` style description.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .limits
            .iter()
            .map(|l| {
                format!(
                    "{}≤{}",
                    pct_name(l.percentile),
                    crate::format_duration(l.limit)
                )
            })
            .collect();
        for (name, ls) in &self.per_request {
            for l in ls {
                parts.push(format!(
                    "{name}:{}≤{}",
                    pct_name(l.percentile),
                    crate::format_duration(l.limit)
                ));
            }
        }
        parts.push(format!("errors<{}%", self.max_error_rate * 100.0));
        parts.join(", ")
    }
}

/// `99.0 → "p99"`, `99.9 → "p99.9"`.
pub fn pct_name(p: f64) -> String {
    if (p - p.round()).abs() < 1e-9 {
        format!("p{}", p as u64)
    } else {
        format!("p{p}")
    }
}

/// How shelves are judged (source 000's method by default).
#[derive(Debug, Clone, serde::Serialize)]
pub struct AnalysisSettings {
    /// Dropped from the start of every shelf.
    #[serde(with = "duration_ms")]
    pub trim_head: Duration,
    /// Dropped from the end of every shelf.
    #[serde(with = "duration_ms")]
    pub trim_tail: Duration,
    /// A shelf's kept window must be at least this long to be valid.
    #[serde(with = "duration_ms")]
    pub min_window: Duration,
    /// Per-second achieved throughput must stay within ±this fraction of its mean.
    pub stability: f64,
    /// Recommended working load as a fraction of the ceiling.
    pub working_load: f64,
    /// A shelf whose schedule lag p99 exceeds this is generator-bound (invalid).
    #[serde(with = "duration_ms")]
    pub max_schedule_lag: Duration,
    /// A shelf where the generator's own CPU exceeds this % of one core is generator-bound.
    pub max_generator_cpu: f64,
}

/// Embedded stand settings.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StandSettings {
    /// PostgreSQL major version wanted (`None` = whatever the system has).
    pub postgres_version: Option<u32>,
    /// `postgresql.conf` settings (source 000's by default).
    pub postgres_settings: BTreeMap<String, String>,
    /// Seed for the data.
    pub seed: u64,
    /// Overrides of the stacks' `[settings]`: pool size.
    pub pool_size: Option<u32>,
    /// Overrides of the stacks' `[settings]`: workers.
    pub workers: Option<u32>,
    /// Overrides of the stacks' `[limits]`: CPUs.
    pub cpus: Option<f64>,
    /// Overrides of the stacks' `[limits]`: memory in MiB.
    pub memory_mb: Option<u64>,
    /// `memory_uncapped = true`: the stacks run without a memory limit, even one their stack.toml
    /// declares (source 003's JVMs ran with -Xmx8g and no container cap). Never with `memory_mb`.
    #[serde(default)]
    pub memory_uncapped: bool,
    /// CPU limit for PostgreSQL (None = unlimited).
    pub postgres_cpus: Option<f64>,
    /// Pause between stacks, letting the machine settle.
    #[serde(with = "duration_ms")]
    pub cooldown: Duration,
    /// Run `ceiling verify` before measuring each stack.
    pub verify: bool,
    /// What to do when a part of the stand (PostgreSQL, PgBouncer) exits while a stack is measured.
    pub on_part_exit: OnPartExit,
    /// `[stand.env]`: extra environment for every stack of the plan, the same for all (after each
    /// stack's `run.env`, so the plan's value wins; the env contract's names are refused).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `[stand.pgbouncer]`: PgBouncer between the stacks and PostgreSQL (`None`: direct).
    #[serde(default)]
    pub pgbouncer: Option<PgBouncerSettings>,
    /// `stand.placement`: whether the generator, the stack and PostgreSQL get CPUs of their own.
    #[serde(default)]
    pub placement: PlacementMode,
    /// `stand.tls`: the load goes over HTTPS to a TLS port the stack opens beside its plain one,
    /// with a throwaway certificate the stand makes (what TLS costs a stack). The stack must say
    /// it can (`[run] tls = true` in its stack.toml).
    #[serde(default)]
    pub tls: bool,
}

/// `stand.placement`: where the lab's parts run. A part that shares cores with the stack takes
/// CPU from it, so on a small machine the ceiling found is the box's (generator + stack +
/// PostgreSQL), not the stack's; with disjoint CPU sets each part's cost stays its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlacementMode {
    /// Disjoint CPU sets for the generator, the stack and PostgreSQL when the machine has at
    /// least three times the stack's CPUs; shared (and said so) when it does not. The default.
    #[default]
    Auto,
    /// Every part may run on every CPU, as the sources ran them on one host.
    Shared,
}

impl PlacementMode {
    /// The plan's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PlacementMode::Auto => "auto",
            PlacementMode::Shared => "shared",
        }
    }
}

/// The environment the stand sets for every stack (the env contract, `contract/API.md`); neither a
/// stack's `run.env` nor a plan's `[stand.env]` may set them.
pub const CONTRACT_ENV: &[&str] = &[
    "HTTP_PORT",
    "DB_HOST",
    "DB_PORT",
    "DB_NAME",
    "DB_USER",
    "DB_PASSWORD",
    "DB_POOL_SIZE",
    "WORKERS",
];

/// `[stand.pgbouncer]`: the stand starts PgBouncer (Debian's `pgbouncer`) in front of its
/// PostgreSQL and the stacks' `DB_HOST`/`DB_PORT` point at it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PgBouncerSettings {
    /// `pool_mode`: when a server connection goes back to the pool.
    pub pool_mode: PoolMode,
    /// `default_pool_size`: server connections per database/user pair (source 004: 50).
    pub default_pool_size: u32,
    /// `max_client_conn`: client connections PgBouncer accepts (default 1000).
    pub max_client_conn: u32,
    /// `max_prepared_statements` (PgBouncer ≥ 1.21: protocol-level prepared statements tracked
    /// across transaction pooling); `None` = not set (PgBouncer's default, 0 before 1.22).
    pub max_prepared_statements: Option<u32>,
}

/// PgBouncer's `pool_mode`. `statement` is not offered: the contract's transfer is a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolMode {
    /// A server connection belongs to a client for the client's whole session.
    Session,
    /// A server connection is a client's for one transaction only (breaks named prepared
    /// statements that outlive it).
    Transaction,
}

impl PoolMode {
    /// `session` or `transaction`, as PgBouncer's configuration writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            PoolMode::Session => "session",
            PoolMode::Transaction => "transaction",
        }
    }
}

/// `stand.on_part_exit`: what a run does after a part of the stand exited mid-measurement. Either
/// way that stack's measurement stops and its affected shelves are invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnPartExit {
    /// Restart the part and go on with the next stack (the default).
    #[default]
    Restart,
    /// Stop the run cleanly: write what was measured and exit.
    Stop,
}

/// `[settle]`: a warm-up long enough that the repetitions stop drifting. Before the measured run
/// (and its `[[warmup]]` as written), the last warm-up stage is run in steps of `step`; after each step the
/// last `steps` steps' throughputs are compared, and the warm-up ends when every one of them is
/// within ±`within` of their median and the first and last of them are within `within` of each
/// other (no trend), or when `max` of settling has passed (the run goes on, warned). A closed
/// model's throughput is the quantity: at a fixed number of connections it is what a warming JIT,
/// pool or cache moves. Not scaled by `--quick`, like the warm-up.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SettleSettings {
    /// Length of one step.
    #[serde(with = "duration_ms")]
    pub step: Duration,
    /// Steps compared (at least 2).
    pub steps: u32,
    /// Agreement asked of them, as a fraction of their median throughput.
    pub within: f64,
    /// Longest the settling may run after the warm-up stages.
    #[serde(with = "duration_ms")]
    pub max: Duration,
}

/// `[cost]`: instances needed and their yearly price, from each stack's measured ceiling (source
/// 002's table). An instance is the plan's stack size (`stand.cpus`, `stand.memory_mb`, its GiB
/// priced as the price list's GB); it serves its ceiling × `analysis.working_load`. The load to
/// serve is `target_rps`, or what the `reference` stack serves with `min_instances` instances;
/// every stack gets at least `min_instances` (the source: one per availability zone).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CostSettings {
    /// Currency of the prices (`RUB`, `USD`).
    pub currency: String,
    /// Price of one vCPU for one hour.
    pub cpu_hour: f64,
    /// Price of one GB of memory for one hour.
    pub gb_hour: f64,
    /// Services in the system priced (the source: 10 microservices).
    pub services: u32,
    /// Fewest instances a service runs (the source: 3, one per availability zone).
    pub min_instances: u32,
    /// The stack whose `min_instances` instances define the load (exclusive with `target_rps`).
    pub reference: Option<String>,
    /// The load to serve, RPS (exclusive with `reference`).
    pub target_rps: Option<f64>,
}

/// Capacity search settings (`ceiling search`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct SearchSettings {
    /// First probe rate.
    pub start_rate: f64,
    /// Bracketing growth factor (2.0 = doubling).
    pub growth: f64,
    /// Bisection stops when the bracket is within ±this fraction of its midpoint.
    pub tolerance: f64,
    /// Length of each probe shelf (trimming included).
    #[serde(with = "duration_ms")]
    pub probe: Duration,
    /// Dropped from the start of each probe.
    #[serde(with = "duration_ms")]
    pub probe_trim: Duration,
    /// Length of the confirming shelf (0 = no confirming shelf).
    #[serde(with = "duration_ms")]
    pub confirm: Duration,
    /// Idle time after a failed or invalid probe before each recovery check.
    #[serde(with = "duration_ms")]
    pub drain: Duration,
    /// Probes at each end of the final bracket (fresh seeds) before the interval may be called
    /// narrow: replicates are what let the interval see the service's own noise.
    pub repeat: u32,
    /// Hard bound on each stack's search, wall time: its probes and checks, and the start,
    /// verify, warm-up and stop of each round (charged by the lab, `Search::charge`).
    #[serde(with = "duration_ms")]
    pub max_time: Duration,
    /// Never probe above this rate.
    pub max_rate: f64,
    /// Length of a low-rate health check (baseline at the start, recovery after an overload).
    #[serde(with = "duration_ms")]
    pub check: Duration,
    /// Rate of the checks (default: a tenth of `start_rate`, within 10…200 RPS).
    pub check_rate: Option<f64>,
    /// Longest wait for the service to return to baseline after an overload.
    #[serde(with = "duration_ms")]
    pub recovery_max: Duration,
    /// Longest probe the search may lengthen to when repeated probes at one rate disagree too
    /// much to narrow (see `ceiling_search`); `None` (the default) or equal to `probe`: never
    /// lengthen — replicates pool into longer windows instead.
    #[serde(default, with = "opt_duration_ms")]
    pub max_probe: Option<Duration>,
}

impl SearchSettings {
    /// The longest probe the search may use (see [`SearchSettings::max_probe`]).
    pub fn longest_probe(&self) -> Duration {
        self.max_probe.unwrap_or(self.probe).max(self.probe)
    }
}

impl Plan {
    /// True when the stages are open-model.
    pub fn is_open(&self) -> bool {
        self.load.model == Model::Open
    }

    /// Replaces the measured stages, and the load model with theirs (a plan's stages are all of
    /// one model; the parser refuses a mix). The one way code outside the parser changes what a
    /// plan sends — a probe's hold, a warm-up run as its own plan, `ceiling load --rate` — so
    /// the model can never disagree with the stages (an engine runs only its plan's model's
    /// stages: a hold under the closed model sends nothing). Empty `stages` keep the model.
    pub fn set_stages(&mut self, stages: Vec<Stage>) {
        if let Some(first) = stages.first() {
            self.load.model = first.model();
        }
        self.stages = stages;
    }

    /// Total duration of warm-up + measured stages (closed stages bounded by count contribute 0).
    pub fn total_duration(&self) -> Duration {
        self.warmup
            .iter()
            .chain(&self.stages)
            .filter_map(Stage::duration)
            .sum()
    }

    /// Planned length of a `ceiling run` of this plan: the warm-up once, then the measured
    /// stages once per repetition (a closed model's repetitions are passes over its stages; an
    /// open model runs them once). Count-bounded stages contribute 0.
    pub fn run_duration(&self) -> Duration {
        let (warmup, stages, passes) = self.run_parts();
        warmup + stages * passes
    }

    /// As [`Plan::run_duration`] for a run that measures each repetition of a closed model in a
    /// start of the stack of its own (`ceiling run` with several stacks taking turns): every
    /// repetition then has its own warm-up before its pass over the levels.
    pub fn run_duration_in_rounds(&self) -> Duration {
        let (warmup, stages, rounds) = self.run_parts();
        (warmup + stages) * rounds
    }

    /// The warm-up's planned length, one pass over the measured stages, and how many passes a
    /// run makes (a closed model's repetitions; 1 for an open model).
    fn run_parts(&self) -> (Duration, Duration, u32) {
        let passes = if self.is_open() {
            1
        } else {
            self.load.repetitions.max(1)
        };
        let warmup: Duration = self.warmup.iter().filter_map(Stage::duration).sum();
        let stages: Duration = self.stages.iter().filter_map(Stage::duration).sum();
        (warmup, stages, passes)
    }

    /// A copy with every measured duration multiplied by `factor` (rates, counts and the warm-up
    /// unchanged). Used by `--quick`; the report says the run was scaled.
    pub fn scaled(&self, factor: f64) -> Plan {
        let s = |d: Duration| Duration::from_secs_f64(d.as_secs_f64() * factor);
        let sc = |st: &Stage| match st {
            Stage::Ramp { from, to, duration } => Stage::Ramp {
                from: *from,
                to: *to,
                duration: s(*duration),
            },
            Stage::Hold { rate, duration } => Stage::Hold {
                rate: *rate,
                duration: s(*duration),
            },
            Stage::Closed {
                connections,
                duration,
                requests,
            } => Stage::Closed {
                connections: *connections,
                duration: duration.map(s),
                requests: *requests,
            },
        };
        let mut p = self.clone();
        // Warm-up is not scaled: it exists to reach steady state (JIT, pools, caches), which takes
        // as long in a short run as in a long one.
        p.stages = self.stages.iter().map(sc).collect();
        p.analysis.trim_head = s(p.analysis.trim_head);
        p.analysis.trim_tail = s(p.analysis.trim_tail);
        p.analysis.min_window = s(p.analysis.min_window);
        p.stand.cooldown = s(p.stand.cooldown);
        p.search.probe = s(p.search.probe);
        p.search.probe_trim = s(p.search.probe_trim);
        p.search.confirm = s(p.search.confirm);
        p.search.drain = s(p.search.drain);
        p.search.max_time = s(p.search.max_time);
        p.search.max_probe = p.search.max_probe.map(s);
        p.scaled_by = self.scaled_by * factor;
        p
    }
}

/// Serde helper: durations as milliseconds (f64) in JSON.
pub mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    /// Serialize as fractional milliseconds.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }
    /// Deserialize from fractional milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        of_ms::<D::Error>(ms)
    }

    /// Milliseconds as a duration (negative as zero); an error, not a panic, past what a
    /// duration holds (a run.json edited by hand: found by crates/report/tests/bad_input.rs).
    pub(crate) fn of_ms<E: serde::de::Error>(ms: f64) -> Result<Duration, E> {
        Duration::try_from_secs_f64(ms.max(0.0) / 1000.0)
            .map_err(|e| E::custom(format!("{ms} ms is not a duration: {e}")))
    }
}

/// Serde helper: optional durations as milliseconds (f64 or null) in JSON.
pub mod opt_duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    /// Serialize as fractional milliseconds or null.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_f64(d.as_secs_f64() * 1000.0),
            None => s.serialize_none(),
        }
    }
    /// Deserialize from fractional milliseconds or null.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(super::duration_ms::of_ms::<D::Error>)
            .transpose()
    }
}

impl Plan {
    /// `"open"` or `"closed"`.
    pub fn model_name(&self) -> &'static str {
        match self.load.model {
            Model::Open => "open",
            Model::Closed => "closed",
        }
    }
}
