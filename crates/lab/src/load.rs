//! `ceiling load`: the engine on its own — or its generator agents — against a service that is
//! already running. The plan comes from a plan file or from the flags alone ([`load_plan`]); the
//! load is sent, each second recorded as it arrives ([`Recorder`]), and the whole judged by the
//! generator-bound rule every command shares ([`crate::load_report`]). The binary parses its
//! flags into [`LoadOptions`] and [`LoadRunOptions`] once, and prints the [`LoadOutcome`].

use crate::error::{refuse, LabError, Result};
use crate::load_report::{self, LoadReport};
use crate::measure::{apply_engine_flags, LoadFlags};
use crate::Recorder;
use ceiling_agent::coordinator::{open_job, Agents, START_LEAD};
use ceiling_agent::session::now_us;
use ceiling_agent::Job;
use ceiling_metrics::LiveView;
use ceiling_plan::{Arrivals, HttpUrl, Plan, RequestSpec, Segment, Stage, Template};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What `ceiling load` sends: a plan file, or one request to a URL, and the flags that make or
/// change its stages and its engine.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions<'a> {
    /// The plan file; `None`: one request to `url`, its whole path (and query) the request's.
    pub plan_file: Option<&'a Path>,
    /// The target URL (overrides the plan's `target.url`).
    pub url: Option<&'a str>,
    /// Without a plan file: the request's method.
    pub method: &'a str,
    /// Without a plan file: its headers, `Name: value` each.
    pub headers: &'a [String],
    /// Without a plan file: its body.
    pub body: Option<&'a str>,
    /// Open model: hold this rate (requests/s) for `duration` — the plan's stages and warm-up
    /// replaced.
    pub rate: Option<f64>,
    /// Closed model: this many connections for `duration` or `requests` — the plan's stages
    /// and warm-up replaced.
    pub connections: Option<usize>,
    /// The single stage's length (default 10 s, or none when `requests` bounds a closed stage).
    pub duration: Option<Duration>,
    /// Closed model: stop after this many requests.
    pub requests: Option<u64>,
    /// The open model's arrival process.
    pub arrivals: Option<Arrivals>,
    /// Speak HTTP/2, `streams` per connection (default: the plan's, else 100).
    pub http2: bool,
    /// HTTP/2 streams per connection.
    pub streams: Option<usize>,
    /// Scale every duration by the plan's `quick_scale`.
    pub quick: bool,
    /// The request timeout.
    pub timeout: Option<Duration>,
    /// The connection cap.
    pub max_connections: Option<usize>,
    /// The seed of the request stream and Poisson arrivals.
    pub seed: Option<u64>,
    /// The generator's options `run` and `search` share (threads, keep-alive off, the tick, its
    /// I/O back end, real-time scheduling).
    pub engine: LoadFlags<'a>,
}

/// Where the load goes and who sends it.
#[derive(Debug, Clone, Default)]
pub struct LoadRunOptions<'a> {
    /// The target URL as given (else the plan's `target.url`).
    pub url: Option<&'a str>,
    /// A non-loopback target is allowed (only addresses the user owns).
    pub allow_remote: bool,
    /// The stand's data files, for plans with `@data/…` sources.
    pub data_dir: Option<&'a Path>,
    /// This process's share of the schedule, `(I, N)`.
    pub shard: Option<(u64, u64)>,
    /// Hard bound on the run's length (default: the planned length + timeout + 10 s).
    pub max_time: Option<Duration>,
    /// Generator agents that send the load instead of this process.
    pub agents: Option<Agents>,
    /// Write `latency.hlog`, `timeseries.csv` and `summary.json` here.
    pub out: Option<&'a Path>,
}

/// What a `ceiling load` run gave.
#[derive(Debug)]
pub struct LoadOutcome {
    /// The judged summary (also in `summary.json` when there is an output directory).
    pub report: LoadReport,
    /// A signal stopped the run before its end: the report covers the time that ran.
    pub stopped: bool,
    /// Writing the per-second files failed (the run went on; the report is whole).
    pub io_error: Option<String>,
}

/// A plan of one request to `url` (its path; method, headers and body as given), no stages yet:
/// what `ceiling load` and `ceiling search` use when there is no plan file.
pub fn url_plan(url: &str, method: &str, header: &[String], body: Option<&str>) -> Result<Plan> {
    // Without a plan the URL's whole path (and query) is the one request's path.
    let path = HttpUrl::parse(url)
        .map_err(|error| LabError::Flag {
            flag: "--url",
            error,
        })?
        .path;
    let mut headers = Vec::new();
    for h in header {
        let Some((k, v)) = h.split_once(':') else {
            refuse!("--header `{h}`: write `Name: value`");
        };
        headers.push((k.trim().to_string(), literal(v.trim())));
    }
    let text = "name = \"adhoc\"\n[[requests]]\nname = \"request\"\npath = \"/\"\n[[stages]]\nhold = 1\nduration = \"1s\"\n";
    let mut p = ceiling_plan::parse_plan(text, Path::new("<flags>"))
        .map_err(|e| LabError::refused(e.to_string()))?;
    p.requests = vec![RequestSpec {
        name: "request".into(),
        weight: 1,
        method: method.to_ascii_uppercase(),
        path: literal(&path),
        headers,
        body: body.map(literal),
        expect: vec![],
    }];
    p.stages.clear();
    Ok(p)
}

fn literal(s: &str) -> Template {
    Template {
        segments: vec![Segment::Literal(s.to_string())],
    }
}

/// The plan `ceiling load` runs: the file's, or one request to the URL, with the options applied
/// (a rate or connections replace its stages and warm-up).
pub fn load_plan(o: &LoadOptions) -> Result<Plan> {
    let mut plan = match o.plan_file {
        Some(p) => ceiling_plan::load_plan(p).map_err(|e| LabError::refused(e.to_string()))?,
        None => {
            let Some(url) = o.url else {
                refuse!("give a plan file or --url");
            };
            if o.rate.is_none() && o.connections.is_none() {
                refuse!("say how much load: --rate R (open model, requests/s) or --connections N (closed model)");
            }
            url_plan(url, o.method, o.headers, o.body)?
        }
    };
    if o.quick {
        plan = plan.scaled(plan.quick_scale);
    }
    if let Some(r) = o.rate {
        if !(r > 0.0 && r <= 10_000_000.0) {
            refuse!("--rate must be above 0 and at most 10,000,000");
        }
        plan.set_stages(vec![Stage::Hold {
            rate: r,
            duration: o.duration.unwrap_or(Duration::from_secs(10)),
        }]);
        plan.warmup.clear();
    } else if let Some(c) = o.connections {
        if c == 0 {
            refuse!("--connections must be at least 1");
        }
        let duration = match o.requests {
            Some(_) => o.duration,
            None => Some(o.duration.unwrap_or(Duration::from_secs(10))),
        };
        plan.set_stages(vec![Stage::Closed {
            connections: c,
            duration,
            requests: o.requests,
        }]);
        plan.warmup.clear();
    }
    if plan.stages.is_empty() {
        refuse!("the plan has no stages: add [[stages]] or pass --rate/--connections");
    }
    if let Some(a) = o.arrivals {
        plan.load.arrivals = a;
    }
    if o.http2 {
        plan.load.http2_streams = Some(o.streams.or(plan.load.http2_streams).unwrap_or(100).max(1));
    }
    if let Some(t) = o.timeout {
        plan.load.timeout = t;
    }
    if let Some(m) = o.max_connections {
        plan.load.max_connections = m.max(1);
    }
    if let Some(s) = o.seed {
        plan.load.seed = s;
    }
    apply_engine_flags(&mut plan, &o.engine)?;
    Ok(plan)
}

/// The generator threads `ceiling load` runs `plan` with: the plan's (or `--threads`), 1 to 64.
pub fn generator_threads(plan: &Plan) -> usize {
    plan.load.threads.clamp(1, 64)
}

/// The URL the load goes to: the option's, else the plan's `target.url`.
pub fn target_url(plan: &Plan, url: Option<&str>) -> Result<String> {
    match url.map(str::to_string).or(plan.target.url.clone()) {
        Some(u) => Ok(u),
        None => refuse!("no target: pass --url or set target.url in the plan"),
    }
}

/// Sends `plan`'s load (made by [`load_plan`]; `from_file`: it came from a plan file, so the
/// URL is a base its requests' paths are relative to) and judges it. Every second goes to `view`
/// as it is recorded, and to the output directory's files. A first Ctrl-C or SIGTERM winds the
/// engine (or the agents) down and the seconds that ran are kept and judged.
pub fn run_load(
    plan: &Plan,
    from_file: bool,
    o: &LoadRunOptions,
    view: Option<Box<dyn LiveView>>,
) -> Result<LoadOutcome> {
    let url = target_url(plan, o.url)?;
    let mut parsed = HttpUrl::parse(&url).map_err(|e| LabError::refused(format!("target: {e}")))?;
    if !from_file {
        // The whole URL path is the request path (see `url_plan`); the base is just the origin.
        parsed.path = "/".into();
    }
    let tls = ceiling_load::tls_defaults();
    if !parsed.tls && tls.is_set() {
        refuse!("`{url}` is cleartext http: --cacert and --insecure apply to https:// URLs only");
    }
    let target = ceiling_load::target_of(&parsed, &url, o.allow_remote, &tls)?;
    // what agents send to: the base the requests' paths are relative to
    let base_url = parsed.to_string();
    let mut cfg = ceiling_load::LoadConfig::from_plan(plan, target, o.data_dir)?;
    cfg.threads = generator_threads(plan);
    if plan.load.realtime && o.agents.is_none() {
        // refused before any load is sent; agents check on their own hosts
        ceiling_load::realtime::check()?;
    }
    if let Some(sh) = o.shard {
        if o.agents.is_some() {
            refuse!("--shard and --agents do not combine: the agents take the shares");
        }
        cfg.process_shard = sh;
    }
    if let Some(m) = o.max_time {
        cfg.hard_limit = m;
    }
    let stop = cfg.stop.clone();
    ceiling_stand::link(stop.clone());
    let (tick, model) = (cfg.tick, cfg.model);
    let realtime = cfg.realtime.then_some(cfg.threads);
    let tags: Vec<String> = plan.requests.iter().map(|r| r.name.clone()).collect();
    let mut rec = Recorder::new(o.out, "", tags, "load", view)?.with_slo(&plan.slo);
    let (summary, cpu, agents) = match &o.agents {
        None => {
            let cpu0 = ceiling_load::process_cpu_ns();
            let summary = ceiling_load::run(cfg, |s| rec.second(s))?;
            let cpu = (ceiling_load::process_cpu_ns() - cpu0) as f64 / 1e9;
            (summary, cpu, None)
        }
        Some(agents) => {
            let job = Job::of_config(&cfg, &base_url);
            let session = open_job(agents, &cfg.data)?;
            let at = now_us() + START_LEAD.as_micros() as i64;
            let ran = session.run_job(at, &job, &stop, |s| rec.second(s))?;
            let cpu = ran.agents.iter().map(|g| g.cpu_s).sum();
            (ran.merged, cpu, Some(ran.agents))
        }
    };
    rec.finish();
    let mut report = load_report::judge(plan, &url, &summary, cpu);
    report.engine = tick.map(|t| ceiling_load::describe_engine(t, model, summary.io.as_deref()));
    report.realtime = realtime.map(ceiling_load::realtime::describe);
    if let Some(agents) = &agents {
        load_report::judge_by_agents(&mut report, plan, &url, agents);
    }
    if let Some(dir) = o.out {
        let path = dir.join("summary.json");
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| LabError::refused(format!("summary.json: {e}")))?;
        std::fs::write(&path, text)
            .map_err(|e| LabError::io(format!("writing {}", path.display()), e))?;
    }
    Ok(LoadOutcome {
        report,
        stopped: stop.load(Ordering::Relaxed),
        io_error: rec.io_error.clone(),
    })
}

/// A stop flag that a first Ctrl-C or SIGTERM sets (the handlers are installed once, by the
/// binary's `main`, [`ceiling_stand::install_signal_cleanup`]).
pub fn stop_on_signal() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    ceiling_stand::link(stop.clone());
    stop
}
