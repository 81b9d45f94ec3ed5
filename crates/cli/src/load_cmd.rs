//! `ceiling load`: the load engine on its own, against any HTTP service on loopback.

use anyhow::{bail, Context};
use ceiling_lab::Recorder;
use ceiling_load::{target_of, LoadConfig, Summary};
use ceiling_metrics::Outcome;
use ceiling_plan::{
    format_duration, parse_duration, Arrivals, HttpUrl, Model, Plan, RequestSpec, Stage, Template,
};
use clap::Args;
use hdrhistogram::Histogram;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Arguments of `ceiling load`.
#[derive(Args, Debug, Clone)]
#[command(after_help = "Examples:
  ceiling load --url http://127.0.0.1:8080/ping --rate 5000 --duration 30s
  ceiling load --url http://127.0.0.1:8080/ping --connections 64 --duration 10s   (closed model, like wrk -c64)
  ceiling load plans/000-status-mixed.toml --url http://127.0.0.1:8080 --data-dir .ceiling/data --quick
  ceiling load --url http://127.0.0.1:8080/ --rate 2000 --duration 1m --arrivals poisson --out results/x --json
  ceiling load --url http://127.0.0.1:8080/ping --rate 20000 --agents 10.0.0.2:7700,10.0.0.3:7700 --agent-token-file tok   (see `ceiling agent`)")]
pub struct LoadArgs {
    /// Plan file (TOML) with stages and a weighted request mix. Without it, --url is requested alone.
    pub plan: Option<PathBuf>,
    /// Target URL (overrides the plan's target.url). Must be loopback unless --allow-remote.
    #[arg(long)]
    pub url: Option<String>,
    #[arg(long = "assert", value_name = "GATE", help = crate::gates::HELP)]
    pub asserts: Vec<String>,
    /// Serve the per-second figures in Prometheus' text format at http://ADDR/metrics while it
    /// runs (e.g. 127.0.0.1:9464; docs/grafana-dashboard.json reads them from Prometheus).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Open model: hold this rate (requests/s) for --duration.
    #[arg(long, conflicts_with = "connections")]
    pub rate: Option<f64>,
    /// Closed model: this many connections, each send-wait-send.
    #[arg(long, short = 'c')]
    pub connections: Option<usize>,
    /// Duration of the single stage made from --rate/--connections (default 10s).
    #[arg(long, short = 'd')]
    pub duration: Option<String>,
    /// Closed model: stop after this many requests instead of a duration.
    #[arg(long, requires = "connections")]
    pub requests: Option<u64>,
    /// HTTP method for --url without a plan.
    #[arg(long, short = 'm', default_value = "GET")]
    pub method: String,
    /// Header `Name: value` for --url without a plan (repeatable).
    #[arg(long, short = 'H')]
    pub header: Vec<String>,
    /// Request body for --url without a plan.
    #[arg(long)]
    pub body: Option<String>,
    /// Arrival process for the open model: uniform or poisson.
    #[arg(long)]
    pub arrivals: Option<String>,
    /// Open a new TCP connection for every request.
    #[arg(long)]
    pub no_keep_alive: bool,
    /// Speak HTTP/2 (ALPN `h2` over https, prior knowledge — h2c — over http), up to --streams
    /// requests at once on each connection; --max-connections then caps requests in flight.
    #[arg(long, conflicts_with = "no_keep_alive")]
    pub http2: bool,
    /// Concurrent streams per HTTP/2 connection (with --http2; default: the plan's
    /// load.http2_streams, else 100).
    #[arg(long, requires = "http2")]
    pub streams: Option<usize>,
    /// The ticked engine with this tick (e.g. `1ms`): the open model over HTTP/1.1 cleartext
    /// with keep-alive, woken once per tick instead of once per request — the requests due within
    /// a tick leave together (at most half a tick early or late), responses are timed by the
    /// kernel's receive stamps. Experimental (issue 36): not the default.
    #[arg(long, conflicts_with_all = ["http2", "no_keep_alive"])]
    pub tick: Option<String>,
    /// Request timeout (default: the plan's, else 10s).
    #[arg(long)]
    pub timeout: Option<String>,
    /// Connection cap for the open model.
    #[arg(long)]
    pub max_connections: Option<usize>,
    /// This process's share of the schedule, `I/N` (0 ≤ I < N): N generator processes started
    /// with 0/N … (N−1)/N send exactly the plan's arrivals between them (each a 1/N share,
    /// interleaved in time); merge their results with `ceiling merge` (histograms added, never
    /// percentiles averaged). Start them together: each counts time from its own start.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,
    /// Generator threads (each its own event loop and shard of the schedule; default: the plan's
    /// load.threads, else 1).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Seed for the request stream and Poisson arrivals.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Directory of the stand's data files, for plans that use `@data/...` sources.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Scale every duration of the plan by its quick_scale (a scaled run; the output says so).
    #[arg(long)]
    pub quick: bool,
    /// Write latency.hlog, timeseries.csv and summary.json into this directory.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Allow a non-loopback target (only addresses you own).
    #[arg(long)]
    pub allow_remote: bool,
    /// Hard bound on the run's length (default: planned length + timeout + 10s).
    #[arg(long)]
    pub max_time: Option<String>,
    /// No progress line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Generator agents (`ceiling agent --listen ADDR`) that send the load instead of this
    /// process, comma-separated `host:port`: agent i of N sends every N-th intended send time
    /// from i, all start together, and their per-second histograms are merged exactly here.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT,…")]
    pub agents: Vec<String>,
    /// File holding the agents' shared token (else the CEILING_AGENT_TOKEN environment variable).
    #[arg(long, value_name = "FILE")]
    pub agent_token_file: Option<PathBuf>,
    /// Refuse to start when an agent's clock differs from this one's by more than this (plus
    /// half the probe's round trip).
    #[arg(long, default_value = "5ms")]
    pub max_clock_offset: String,
}

fn dur(s: &str, what: &str) -> anyhow::Result<Duration> {
    parse_duration(s).map_err(|e| anyhow::anyhow!("--{what}: {e}"))
}

/// A plan of one request to `url` (its path; method, headers and body as given), no stages yet:
/// what `ceiling load` and `ceiling search` use when there is no plan file.
pub fn url_plan(
    url: &str,
    method: &str,
    header: &[String],
    body: Option<&str>,
) -> anyhow::Result<Plan> {
    // Without a plan the URL's whole path (and query) is the one request's path.
    let path = HttpUrl::parse(url)
        .map_err(|e| anyhow::anyhow!("--url: {e}"))?
        .path;
    let mut headers = Vec::new();
    for h in header {
        let (k, v) = h
            .split_once(':')
            .with_context(|| format!("--header `{h}`: write `Name: value`"))?;
        headers.push((
            k.trim().to_string(),
            Template {
                segments: vec![ceiling_plan::Segment::Literal(v.trim().to_string())],
            },
        ));
    }
    let text = "name = \"adhoc\"\n[[requests]]\nname = \"request\"\npath = \"/\"\n[[stages]]\nhold = 1\nduration = \"1s\"\n".to_string();
    let mut p = ceiling_plan::parse_plan(&text, std::path::Path::new("<flags>"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    p.requests = vec![RequestSpec {
        name: "request".into(),
        weight: 1,
        method: method.to_ascii_uppercase(),
        path: Template {
            segments: vec![ceiling_plan::Segment::Literal(path)],
        },
        headers,
        body: body.map(|b| Template {
            segments: vec![ceiling_plan::Segment::Literal(b.to_string())],
        }),
        expect: vec![],
    }];
    p.stages.clear();
    Ok(p)
}

/// Builds the plan from a file or from flags.
/// Builds the plan from the file `a.plan` names, or from the flags alone, with the flags applied.
fn build_plan(a: &LoadArgs) -> anyhow::Result<Plan> {
    let mut plan = match &a.plan {
        Some(p) => ceiling_plan::load_plan(p).map_err(|e| anyhow::anyhow!("{e}"))?,
        None => {
            let url = a.url.as_deref().context("give a plan file or --url")?;
            if a.rate.is_none() && a.connections.is_none() {
                bail!("say how much load: --rate R (open model, requests/s) or --connections N (closed model)");
            }
            url_plan(url, &a.method, &a.header, a.body.as_deref())?
        }
    };
    if a.quick {
        plan = plan.scaled(plan.quick_scale);
    }
    let d = match &a.duration {
        Some(s) => Some(dur(s, "duration")?),
        None => None,
    };
    if let Some(r) = a.rate {
        if !(r > 0.0 && r <= 10_000_000.0) {
            bail!("--rate must be above 0 and at most 10,000,000");
        }
        plan.stages = vec![Stage::Hold {
            rate: r,
            duration: d.unwrap_or(Duration::from_secs(10)),
        }];
        plan.warmup.clear();
        plan.load.model = Model::Open;
    } else if let Some(c) = a.connections {
        if c == 0 {
            bail!("--connections must be at least 1");
        }
        let duration = if a.requests.is_some() {
            d
        } else {
            Some(d.unwrap_or(Duration::from_secs(10)))
        };
        plan.stages = vec![Stage::Closed {
            connections: c,
            duration,
            requests: a.requests,
        }];
        plan.warmup.clear();
        plan.load.model = Model::Closed;
    }
    if plan.stages.is_empty() {
        bail!("the plan has no stages: add [[stages]] or pass --rate/--connections");
    }
    if let Some(s) = &a.arrivals {
        plan.load.arrivals = match s.as_str() {
            "uniform" => Arrivals::Uniform,
            "poisson" => Arrivals::Poisson,
            _ => bail!("--arrivals: `{s}` is not uniform or poisson"),
        };
    }
    if a.http2 {
        plan.load.http2_streams = Some(a.streams.or(plan.load.http2_streams).unwrap_or(100).max(1));
    }
    if a.no_keep_alive {
        plan.load.keep_alive = false;
    }
    if let Some(t) = a.threads {
        plan.load.threads = t;
    }
    if let Some(t) = &a.timeout {
        plan.load.timeout = dur(t, "timeout")?;
    }
    if let Some(m) = a.max_connections {
        plan.load.max_connections = m.max(1);
    }
    if let Some(s) = a.seed {
        plan.load.seed = s;
    }
    Ok(plan)
}

/// Runs `ceiling load`.
pub fn run(a: LoadArgs) -> anyhow::Result<ExitCode> {
    let gates = crate::gates::parse(&a.asserts)?;
    crate::gates::metrics_listen(a.metrics_listen.as_deref())?;
    let plan = build_plan(&a)?;
    let url = a
        .url
        .clone()
        .or(plan.target.url.clone())
        .context("no target: pass --url or set target.url in the plan")?;
    let mut parsed = HttpUrl::parse(&url).map_err(|e| anyhow::anyhow!("target: {e}"))?;
    if a.plan.is_none() {
        // The whole URL path is the request path (see build_plan); the base is just the origin.
        parsed.path = "/".into();
    }
    let tls = ceiling_load::tls_defaults();
    if !parsed.tls && tls.is_set() {
        bail!("`{url}` is cleartext http: --cacert and --insecure apply to https:// URLs only");
    }
    let target =
        target_of(&parsed, &url, a.allow_remote, &tls).map_err(|e| anyhow::anyhow!("{e}"))?;
    // what agents send to: the base the requests' paths are relative to
    let base_url = parsed.to_string();
    if plan.settle.is_some() && !a.quiet {
        eprintln!("note: [settle] is applied by `ceiling run`; `ceiling load` sends the warm-up as written");
    }
    let mut cfg = LoadConfig::from_plan(&plan, target, a.data_dir.as_deref())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    cfg.threads = plan.load.threads.clamp(1, 64);
    if let Some(t) = &a.tick {
        cfg.tick = Some(dur(t, "tick")?);
    }
    if let Some(sh) = a.shard {
        cfg.process_shard = sh;
    }
    if let Some(m) = &a.max_time {
        cfg.hard_limit = dur(m, "max-time")?;
    }
    let stop = cfg.stop.clone();
    let tick = cfg.tick;
    install_ctrlc(stop.clone());

    let mut label = describe(&plan, &url, cfg.threads);
    if let Some((i, n)) = a.shard {
        label.push_str(&format!(" — shard {i}/{n} of the schedule"));
    }
    if !a.quiet && !a.json {
        eprintln!("{label}");
        if plan.scaled_by != 1.0 {
            eprintln!("note: scaled run — every duration × {}", plan.scaled_by);
        }
    }
    let tags: Vec<String> = plan.requests.iter().map(|r| r.name.clone()).collect();
    let total = if plan.stages.iter().all(|s| s.duration().is_some()) {
        Some(plan.total_duration())
    } else {
        None
    };
    let mut rec = Recorder::new(a.out.as_deref(), "", tags, total, "load", a.quiet || a.json)?
        .with_slo(&plan.slo);
    let (summary, cpu, agents) = if a.agents.is_empty() {
        let cpu0 = ceiling_load::process_cpu_ns();
        let summary =
            ceiling_load::run(cfg, |s| rec.second(s)).map_err(|e| anyhow::anyhow!("{e}"))?;
        let cpu = (ceiling_load::process_cpu_ns() - cpu0) as f64 / 1e9;
        (summary, cpu, None)
    } else {
        let ran = crate::agents::coordinate(&a, &cfg, &base_url, |s| rec.second(s))?;
        let cpu = ran.agents.iter().map(|g| g.cpu_s).sum();
        (ran.merged, cpu, Some(ran.agents))
    };
    rec.finish();
    let mut report = LoadReport::new(&plan, &url, &summary, cpu);
    report.engine = tick.map(ceiling_load::describe_tick);
    if let Some(agents) = &agents {
        report.judge_by_agents(&plan, &url, agents);
    }
    if let Some(dir) = &a.out {
        std::fs::write(
            dir.join("summary.json"),
            serde_json::to_string_pretty(&report)?,
        )?;
    }
    if let Some(e) = &rec.io_error {
        eprintln!("warning: {e}");
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
        if let Some(ag) = &report.agents {
            print_agents(ag);
        }
    }
    if stop.load(Ordering::Relaxed) {
        eprintln!("stopped early by signal; the results above cover the time that ran");
        return Ok(ExitCode::from(130));
    }
    // Nothing reached the service, or an agent vanished with part of the schedule: a failed
    // or incomplete measurement, whatever the numbers say.
    let lost = report
        .agents
        .as_ref()
        .is_some_and(|g| g.iter().any(|x| x.lost.is_some()));
    let code = u8::from(report.no_connection || lost);
    if gates.is_empty() {
        return Ok(ExitCode::from(code));
    }
    let figures = ceiling_compare::gate::LoadFigures {
        p50_ms: report.latency.p50_ms,
        p90_ms: report.latency.p90_ms,
        p95_ms: report.latency.p95_ms,
        p99_ms: report.latency.p99_ms,
        p999_ms: report.latency.p999_ms,
        error_rate: report.error_rate,
        achieved_rps: report.achieved_rps,
        generator_bound: report.generator_bound,
    };
    Ok(crate::gates::finish(
        &ceiling_compare::gate::judge_load(&gates, &figures),
        code,
    ))
}

fn describe(plan: &Plan, url: &str, threads: usize) -> String {
    let stages: Vec<String> = plan
        .stages
        .iter()
        .map(|s| match s {
            Stage::Closed {
                duration, requests, ..
            } => format!(
                "{} for {}",
                s.label(),
                requests
                    .map(|n| format!("{n} requests"))
                    .or(duration.map(format_duration))
                    .unwrap_or_default()
            ),
            _ => format!(
                "{} for {}",
                s.label(),
                format_duration(s.duration().unwrap_or_default())
            ),
        })
        .collect();
    format!(
        "ceiling load → {url}  {} model{}, {}, {}, {} thread{}",
        plan.model_name(),
        if plan.is_open() {
            format!(" ({:?} arrivals)", plan.load.arrivals).to_lowercase()
        } else {
            String::new()
        },
        stages.join(", "),
        match plan.load.http2_streams {
            Some(n) => format!("HTTP/2 ≤ {n} streams per connection"),
            None if plan.load.keep_alive => "keep-alive on".to_string(),
            None => "keep-alive off".to_string(),
        },
        threads,
        if threads == 1 { "" } else { "s" }
    )
}

/// Percentiles in milliseconds.
#[derive(serde::Serialize)]
pub struct Percentiles {
    pub(crate) count: u64,
    pub(crate) p50_ms: f64,
    pub(crate) p90_ms: f64,
    pub(crate) p95_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) p999_ms: f64,
    pub(crate) max_ms: f64,
}

impl Percentiles {
    pub(crate) fn of(h: &Histogram<u64>) -> Self {
        let q = |p: f64| {
            if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(p) as f64 / 1000.0
            }
        };
        Percentiles {
            count: h.len(),
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: if h.is_empty() {
                0.0
            } else {
                h.max() as f64 / 1000.0
            },
        }
    }
}

#[derive(serde::Serialize)]
struct TagReport {
    name: String,
    requests: u64,
    rps: f64,
    latency: Percentiles,
    service: Percentiles,
    errors: std::collections::BTreeMap<&'static str, u64>,
}

/// The machine-readable summary of `ceiling load`.
#[derive(serde::Serialize)]
pub struct LoadReport {
    schema_version: u32,
    url: String,
    model: String,
    scaled_by: f64,
    measured_seconds: u32,
    /// The measured duration the rates are over, seconds: the plan's measured stages when the run
    /// ran them in full, else the seconds in which requests were offered.
    measured_duration_s: f64,
    offered: u64,
    offered_rps: f64,
    completed: u64,
    achieved_rps: f64,
    latency_origin: String,
    latency: Percentiles,
    service: Percentiles,
    schedule_lag: Percentiles,
    errors: std::collections::BTreeMap<&'static str, u64>,
    error_rate: f64,
    overflow: u64,
    per_request: Vec<TagReport>,
    generator_cpu_seconds: f64,
    generator_cpu_us_per_request: f64,
    generator_cpu_mean_pct: f64,
    generator_cpu_max_pct: f64,
    generator_bound: bool,
    generator_verdict: String,
    /// Connections that could not be opened (their requests were never sent).
    connect_failures: u64,
    /// The first connection failure, e.g. `connecting to 127.0.0.1:9: Connection refused (os error 111)`.
    connect_error: Option<String>,
    /// No request reached the service: every connection attempt failed.
    no_connection: bool,
    /// The `reset` errors taken apart by what the connection did, and the idle-close retries
    /// (absent when there were neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    connection_resets: Option<String>,
    /// The TLS handshakes of an https run (absent for cleartext).
    #[serde(skip_serializing_if = "Option::is_none")]
    tls: Option<TlsReport>,
    /// HTTP/2's connections (absent for HTTP/1.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    http2: Option<H2Report>,
    /// The ticked engine and its tick, when `--tick` chose it (absent: the default engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    engine: Option<String>,
    /// One line: what this result is (the connection failure, generator-bound, or fine).
    verdict: String,
    stopped_early: bool,
    /// Per generator agent, when the load came from agents (`--agents`).
    #[serde(skip_serializing_if = "Option::is_none")]
    agents: Option<Vec<AgentReport>>,
}

/// The TLS handshakes of an https run: timed from the TCP connection to the end of the handshake,
/// apart from the requests' latency (a request that needed a new connection has its handshake in
/// its latency too).
#[derive(serde::Serialize)]
pub struct TlsReport {
    /// Protocol version (`TLSv1_3`) and ALPN protocol, as negotiated.
    version: Option<String>,
    alpn: Option<String>,
    handshakes: u64,
    /// Of which resumed an earlier session.
    resumed: u64,
    handshake_p50_ms: f64,
    handshake_p99_ms: f64,
    handshake_max_ms: f64,
    /// What the client trusted: the system's roots, a CA file, or nothing (`--insecure`).
    trust: String,
    /// All of it in one line, as the terminal shows it.
    line: String,
}

impl TlsReport {
    fn new(t: &ceiling_load::TlsTally) -> TlsReport {
        let ms = |q: f64| t.handshake_us.value_at_quantile(q) as f64 / 1000.0;
        TlsReport {
            version: t.version.clone(),
            alpn: t.alpn.clone(),
            handshakes: t.handshakes,
            resumed: t.resumed,
            handshake_p50_ms: ms(0.5),
            handshake_p99_ms: ms(0.99),
            handshake_max_ms: t.handshake_us.max() as f64 / 1000.0,
            trust: t.trust.clone(),
            line: t.describe(),
        }
    }
}

/// What HTTP/2 multiplexing did: connections opened, the streams setting, the most in use on one.
#[derive(serde::Serialize)]
pub struct H2Report {
    streams_per_connection: usize,
    connections: u64,
    max_streams_in_use: usize,
    /// All of it in one line, as the terminal shows it.
    line: String,
}

/// One generator agent's part of a run with `--agents`.
#[derive(serde::Serialize)]
pub struct AgentReport {
    /// `host:port` it was reached at.
    address: String,
    /// The name it gave.
    name: String,
    /// Its clock − this one's, µs, and the round trip that bounds the error (± half of it).
    clock_offset_us: i64,
    clock_rtt_us: i64,
    /// Its share of the schedule, `I/N`.
    shard: String,
    offered: u64,
    sent: u64,
    completed: u64,
    schedule_lag: Percentiles,
    generator_cpu_mean_pct: f64,
    generator_cpu_max_pct: f64,
    generator_bound: bool,
    generator_verdict: String,
    /// Its own `reset` errors taken apart and its idle-close retries (absent when neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    connection_resets: Option<String>,
    /// Its TLS handshakes (https targets; the merged `tls` adds every agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_handshakes: Option<u64>,
    /// Its HTTP/2 connections (with --http2; the merged `http2` adds every agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    http2_connections: Option<u64>,
    /// Set when the agent vanished before it said it was done: what happened, and how much of
    /// its record arrived (everything that arrived is in the merged figures).
    lost: Option<String>,
}

fn error_map(c: &ceiling_metrics::Counts) -> std::collections::BTreeMap<&'static str, u64> {
    Outcome::ALL
        .iter()
        .filter(|o| **o != Outcome::Ok && c.get(**o) > 0)
        .map(|o| (o.name(), c.get(*o)))
        .collect()
}

impl LoadReport {
    fn new(plan: &Plan, url: &str, s: &Summary, cpu_s: f64) -> Self {
        // Rates are over the time load was offered: the plan's measured stages when they ran to
        // the end (a 2 s stage is 2 s, although replies to its last requests arrive in a third
        // second), else the seconds that offered requests.
        let planned: Option<f64> = plan
            .stages
            .iter()
            .map(|st| st.duration().map(|d| d.as_secs_f64()))
            .sum();
        let secs = match planned {
            Some(p) if !s.stopped_early && p > 0.0 => p,
            _ => s.offered_seconds.max(1) as f64,
        };
        let c = s.counts();
        let lag = Percentiles::of(&s.lag);
        let open = plan.is_open();
        // Requests whose connection could not be opened were dispatched on time but never
        // written: the service's side, not the generator's.
        let unsent_by_service = s.connect_failures.min(s.offered);
        let reasons: Vec<String> = ceiling_analyze::generator_reasons(
            &ceiling_analyze::GeneratorHealth {
                open,
                lag_p99_ms: lag.p99_ms,
                cpu_mean_pct: s.generator_cpu_mean,
                overflow: s.overflow,
                sends: Some((s.sent + unsent_by_service, s.offered)),
            },
            plan.analysis.max_schedule_lag.as_secs_f64() * 1000.0,
            plan.analysis.max_generator_cpu,
        )
        .iter()
        .filter_map(ceiling_analyze::Reason::generator_detail)
        .collect();
        let bound = !reasons.is_empty();
        let answered = c.total() - c.get(Outcome::Connect);
        let no_connection = s.connect_failures > 0 && answered == 0;
        let generator_verdict = if bound {
            format!(
                "GENERATOR-BOUND — this result describes the generator, not the service: {}",
                reasons.join("; ")
            )
        } else {
            "the generator kept up (lag, CPU and backlog within bounds)".into()
        };
        let connect_error = s.connect_error.clone();
        let verdict = if no_connection {
            format!(
                "NO CONNECTION — no request reached {url}: {}; is the service running and listening there?",
                connect_error.as_deref().unwrap_or("every connection attempt failed")
            )
        } else {
            generator_verdict.clone()
        };
        LoadReport {
            schema_version: 1,
            url: url.to_string(),
            model: plan.model_name().into(),
            scaled_by: plan.scaled_by,
            measured_seconds: s.measured_seconds,
            measured_duration_s: secs,
            offered: s.offered,
            offered_rps: s.offered as f64 / secs,
            completed: c.total(),
            achieved_rps: c.total() as f64 / secs,
            latency_origin: if open {
                "intended send time".into()
            } else {
                "request write (closed model)".into()
            },
            latency: Percentiles::of(&s.latency()),
            service: Percentiles::of(&{
                let mut h = ceiling_metrics::new_histogram();
                for t in &s.tags {
                    ceiling_metrics::merge_into(&mut h, &t.service);
                }
                h
            }),
            schedule_lag: lag,
            errors: error_map(&c),
            error_rate: if c.total() > 0 {
                c.errors() as f64 / c.total() as f64
            } else {
                0.0
            },
            overflow: s.overflow,
            per_request: s
                .tags
                .iter()
                .map(|t| TagReport {
                    name: t.name.clone(),
                    requests: t.counts.total(),
                    rps: t.counts.total() as f64 / secs,
                    latency: Percentiles::of(&t.latency),
                    service: Percentiles::of(&t.service),
                    errors: error_map(&t.counts),
                })
                .collect(),
            generator_cpu_seconds: cpu_s,
            generator_cpu_us_per_request: if c.total() > 0 {
                cpu_s * 1e6 / c.total() as f64
            } else {
                0.0
            },
            generator_cpu_mean_pct: s.generator_cpu_mean,
            generator_cpu_max_pct: s.generator_cpu_max,
            generator_bound: bound,
            generator_verdict,
            connect_failures: s.connect_failures,
            connect_error,
            no_connection,
            connection_resets: s.resets.describe(),
            tls: s.tls.as_ref().map(TlsReport::new),
            http2: s.h2.map(|h| H2Report {
                streams_per_connection: h.streams,
                connections: h.connections,
                max_streams_in_use: h.max_streams_in_use,
                line: h.describe(),
            }),
            verdict,
            engine: None,
            stopped_early: s.stopped_early,
            agents: None,
        }
    }

    /// With generator agents the generator's verdict is each agent's own (one generator-bound
    /// agent makes the whole result generator-bound; their CPU figures are not added into one
    /// process's), and an agent that vanished makes the result incomplete.
    fn judge_by_agents(&mut self, plan: &Plan, url: &str, agents: &[crate::agents::AgentRun]) {
        let mut per = Vec::new();
        let mut bound = Vec::new();
        let mut lost = Vec::new();
        for g in agents {
            let r = LoadReport::new(plan, url, &g.summary, g.cpu_s);
            if r.generator_bound {
                bound.push(format!("{} ({})", g.name, r.generator_verdict));
            }
            if let Some(l) = &g.lost {
                lost.push(format!("{}: {l}", g.name));
            }
            per.push(AgentReport {
                address: g.address.clone(),
                name: g.name.clone(),
                clock_offset_us: g.offset_us,
                clock_rtt_us: g.rtt_us,
                shard: format!("{}/{}", g.shard.0, g.shard.1),
                offered: r.offered,
                sent: g.summary.sent,
                completed: r.completed,
                schedule_lag: r.schedule_lag,
                generator_cpu_mean_pct: r.generator_cpu_mean_pct,
                generator_cpu_max_pct: r.generator_cpu_max_pct,
                generator_bound: r.generator_bound,
                generator_verdict: r.generator_verdict,
                connection_resets: r.connection_resets,
                tls_handshakes: g.summary.tls.as_ref().map(|t| t.handshakes),
                http2_connections: g.summary.h2.map(|h| h.connections),
                lost: g.lost.clone(),
            });
        }
        self.generator_bound = !bound.is_empty() || !lost.is_empty();
        self.generator_verdict = if !lost.is_empty() {
            format!(
                "INCOMPLETE — an agent vanished mid-run ({}); the figures hold what arrived",
                lost.join("; ")
            )
        } else if !bound.is_empty() {
            format!(
                "GENERATOR-BOUND — this result describes the generators, not the service: {}",
                bound.join("; ")
            )
        } else {
            format!(
                "the generators kept up (each of {} agents within its lag, CPU and backlog bounds)",
                agents.len()
            )
        };
        if !self.no_connection {
            self.verdict = self.generator_verdict.clone();
        }
        self.stopped_early |= !lost.is_empty();
        self.agents = Some(per);
    }
}

fn print_agents(agents: &[AgentReport]) {
    println!();
    println!(
        "  {:<16} {:<22} {:>6} {:>10} {:>10} {:>12} {:>8} {:>13}  verdict",
        "agent", "address", "shard", "sent", "completed", "lag p99 ms", "CPU max", "clock offset"
    );
    for g in agents {
        let verdict = match (&g.lost, g.generator_bound) {
            (Some(l), _) => format!("LOST: {l}"),
            (None, true) => "generator-bound".to_string(),
            (None, false) => "kept up".to_string(),
        };
        println!(
            "  {:<16} {:<22} {:>6} {:>10} {:>10} {:>12.3} {:>7.0}% {:>6.2} ±{:.2} ms  {}",
            g.name,
            g.address,
            g.shard,
            g.sent,
            g.completed,
            g.schedule_lag.p99_ms,
            g.generator_cpu_max_pct,
            g.clock_offset_us as f64 / 1000.0,
            g.clock_rtt_us as f64 / 2000.0,
            verdict
        );
    }
}

fn print_report(r: &LoadReport) {
    let row = |name: &str, p: &Percentiles| {
        println!(
            "  {:<22} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            name, p.p50_ms, p.p90_ms, p.p95_ms, p.p99_ms, p.p999_ms, p.max_ms
        )
    };
    println!();
    println!(
        "  Requests      offered {} ({:.1}/s)   completed {} ({:.1}/s)   over {} s{}",
        r.offered,
        r.offered_rps,
        r.completed,
        r.achieved_rps,
        trim_secs(r.measured_duration_s),
        if r.scaled_by != 1.0 {
            format!("   [scaled ×{}]", r.scaled_by)
        } else {
            String::new()
        }
    );
    let errs = if r.errors.is_empty() {
        "none".to_string()
    } else {
        r.errors
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("  Errors        {errs} ({:.3}%)", r.error_rate * 100.0);
    if let (Some(e), false) = (&r.connect_error, r.no_connection) {
        println!(
            "  Connections   {} could not be opened (first: {e})",
            r.connect_failures
        );
    }
    if let Some(line) = &r.connection_resets {
        println!("  Resets        {line}");
    }
    if let Some(t) = &r.tls {
        println!("  TLS           {}", t.line);
    }
    if let Some(h) = &r.http2 {
        println!("  HTTP/2        {}", h.line);
    }
    if let Some(e) = &r.engine {
        println!("  Engine        {e}");
    }
    println!();
    println!(
        "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "ms", "p50", "p90", "p95", "p99", "p99.9", "max"
    );
    row(
        &format!(
            "latency ({})",
            if r.model == "open" {
                "intended"
            } else {
                "closed"
            }
        ),
        &r.latency,
    );
    row("service time", &r.service);
    if r.model == "open" {
        row("schedule lag", &r.schedule_lag);
    }
    if r.per_request.len() > 1 {
        println!();
        println!(
            "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "per request", "rps", "p50", "p90", "p99", "p99.9", "max", "errors"
        );
        for t in &r.per_request {
            println!(
                "  {:<22} {:>9.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9}",
                t.name,
                t.rps,
                t.latency.p50_ms,
                t.latency.p90_ms,
                t.latency.p99_ms,
                t.latency.p999_ms,
                t.latency.max_ms,
                t.errors.values().sum::<u64>()
            );
        }
    }
    println!();
    println!(
        "  Generator     {:.2} CPU-s, {:.2} µs CPU/request, mean {:.0}% / max {:.0}% of a core",
        r.generator_cpu_seconds,
        r.generator_cpu_us_per_request,
        r.generator_cpu_mean_pct,
        r.generator_cpu_max_pct
    );
    println!("  Verdict       {}", r.verdict);
}

/// `2`, `2.5`: seconds without trailing zeros.
fn trim_secs(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Sets `stop` on the first Ctrl-C/SIGTERM so the engine winds down and results are kept. The
/// handlers themselves are installed once, in `main` ([`ceiling_stand::install_signal_cleanup`]).
pub fn install_ctrlc(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    ceiling_stand::link(stop);
}

/// `I/N` with 0 ≤ I < N ≤ 1024.
fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}`: write the shard as I/N, e.g. 0/2"))?;
    let i: u64 = i
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: I must be a number"))?;
    let n: u64 = n
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: N must be a number"))?;
    if n == 0 || n > 1024 || i >= n {
        return Err(format!("`{s}`: need 0 ≤ I < N ≤ 1024"));
    }
    Ok((i, n))
}
