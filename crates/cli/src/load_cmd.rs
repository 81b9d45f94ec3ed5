//! `ceiling load`: the load engine on its own, against any HTTP service on loopback — its flags
//! parsed into [`ceiling_lab::load`]'s options, the run done there, the report printed here.

use anyhow::bail;
use ceiling_lab::load::{self, LoadOptions, LoadOutcome, LoadRunOptions};
use ceiling_plan::{format_duration, parse_duration, Arrivals, Plan, Stage};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
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
    /// The ticked engine with this tick (e.g. `1ms`), over HTTP/1.1 cleartext with keep-alive:
    /// the open model woken once per tick instead of once per request — the requests due within
    /// a tick leave together (at most half a tick early or late); the closed model (-c) woken
    /// once per batch of responses, each connection sending on at once (the tick paces only
    /// timeouts); responses timed by the kernel's receive stamps. Experimental (issue 36).
    #[arg(long, conflicts_with_all = ["http2", "no_keep_alive"])]
    pub tick: Option<String>,
    /// The ticked engine's I/O back end: `auto` (io_uring where the kernel has what it needs,
    /// else epoll, said in the output), `epoll` or `io_uring` (refused with the reason where the
    /// kernel cannot give it). Default: the plan's load.io, else auto.
    #[arg(long, requires = "tick", value_name = "auto|epoll|io_uring")]
    pub io: Option<String>,
    /// Run the generator's threads under real-time scheduling (SCHED_FIFO priority 1; overrides
    /// the plan's load.realtime): never waiting for a core behind the service's threads on a
    /// shared box. Needs CAP_SYS_NICE (root); refused before any load is sent without it.
    #[arg(long)]
    pub realtime: bool,
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

fn opt_dur(s: &Option<String>, what: &str) -> anyhow::Result<Option<Duration>> {
    s.as_deref().map(|s| dur(s, what)).transpose()
}

/// Runs `ceiling load`: the flags parsed once into the lab's options, the load run by
/// [`ceiling_lab::load::run_load`], its report printed.
pub fn run(a: LoadArgs) -> anyhow::Result<ExitCode> {
    let gates = crate::gates::parse(&a.asserts)?;
    crate::gates::metrics_listen(a.metrics_listen.as_deref())?;
    let arrivals = match a.arrivals.as_deref() {
        None => None,
        Some("uniform") => Some(Arrivals::Uniform),
        Some("poisson") => Some(Arrivals::Poisson),
        Some(s) => bail!("--arrivals: `{s}` is not uniform or poisson"),
    };
    let options = LoadOptions {
        plan_file: a.plan.as_deref(),
        url: a.url.as_deref(),
        method: &a.method,
        headers: &a.header,
        body: a.body.as_deref(),
        rate: a.rate,
        connections: a.connections,
        duration: opt_dur(&a.duration, "duration")?,
        requests: a.requests,
        arrivals,
        http2: a.http2,
        streams: a.streams,
        quick: a.quick,
        timeout: opt_dur(&a.timeout, "timeout")?,
        max_connections: a.max_connections,
        seed: a.seed,
        engine: ceiling_lab::LoadFlags {
            threads: a.threads,
            no_keep_alive: a.no_keep_alive,
            tick: a.tick.as_deref(),
            io: a.io.as_deref(),
            realtime: a.realtime,
        },
    };
    let plan = load::load_plan(&options)?;
    let agents = crate::agents::AgentFlags {
        agents: a.agents.clone(),
        agent_token_file: a.agent_token_file.clone(),
        max_clock_offset: a.max_clock_offset.clone(),
    }
    .agents()?;
    let run = LoadRunOptions {
        url: a.url.as_deref(),
        allow_remote: a.allow_remote,
        data_dir: a.data_dir.as_deref(),
        shard: a.shard,
        max_time: opt_dur(&a.max_time, "max-time")?,
        agents,
        out: a.out.as_deref(),
    };
    let url = load::target_url(&plan, run.url)?;
    if !a.quiet && !a.json {
        if plan.settle.is_some() {
            eprintln!("note: [settle] is applied by `ceiling run`; `ceiling load` sends the warm-up as written");
        }
        let mut label = describe(&plan, &url, load::generator_threads(&plan));
        if let Some((i, n)) = a.shard {
            label.push_str(&format!(" — shard {i}/{n} of the schedule"));
        }
        eprintln!("{label}");
        if plan.scaled_by != 1.0 {
            eprintln!("note: scaled run — every duration × {}", plan.scaled_by);
        }
    }
    let total = if plan.stages.iter().all(|s| s.duration().is_some()) {
        Some(plan.total_duration())
    } else {
        None
    };
    let view = (!a.quiet && !a.json).then(|| {
        Box::new(ceiling_report::live::TerminalView::new("load", total))
            as Box<dyn ceiling_metrics::LiveView>
    });
    let LoadOutcome {
        report,
        stopped,
        io_error,
    } = load::run_load(&plan, a.plan.is_some(), &run, view)?;
    if let Some(e) = &io_error {
        eprintln!("warning: {e}");
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", ceiling_report::load::text(&report));
        if let Some(ag) = &report.agents {
            print!("{}", ceiling_report::load::agents_text(ag));
        }
    }
    if stopped {
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
