//! `ceiling search`: RPS@p99≤SLO found automatically, as an estimate with a 95% interval (baseline,
//! bracket, narrow on the fitted SLO margin, replicate, confirm; recovery after every overload),
//! for one or several stacks on the stand, or for any URL with or without a plan. The flags become
//! the plan's settings and a [`SearchSetup`] here; the search itself runs in `ceiling_lab`.

use crate::run_cmd::{write_and_print, StandArgs};
use anyhow::{bail, Context};
use ceiling_lab::{
    now_iso, repo_root, run_id, Progress, SearchContext, SearchOverrides, SearchSetup,
};
use ceiling_plan::{parse_duration, HttpUrl, Plan};
use ceiling_records::{RunReport, Series};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Arguments of `ceiling search`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ceiling search --url http://127.0.0.1:8080/ping --slo 'p99<=50ms,errors<1%'
  ceiling search --url http://127.0.0.1:8080/ping --slo 'p99<=20ms' --json
  ceiling search plans/000-status-mixed.toml --stacks go-pgx
  ceiling search plans/000-status-mixed.toml --stacks go-pgx,ktor-jdbc --max-time 40m
  ceiling search plans/000-status-mixed.toml --url http://127.0.0.1:8080 --data-dir .ceiling/data/seed-1 --slo 'p99<=200ms,errors<0.5%'")]
pub struct SearchArgs {
    /// Plan whose request mix, SLO and [search] settings to use. Without it, --url is searched
    /// alone (GET unless -m) with --slo and the defaults below.
    pub plan: Option<PathBuf>,
    /// HTTP method for --url without a plan.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Header `Name: value` for --url without a plan (repeatable).
    #[arg(short = 'H', long)]
    pub header: Vec<String>,
    /// Request body for --url without a plan.
    #[arg(long)]
    pub body: Option<String>,
    /// Print the outcome as JSON on stdout (ceiling, interval, status, binding term, every probe).
    #[arg(long)]
    pub json: bool,
    /// Stacks to search on the embedded stand, comma separated (default: the plan's target.stacks).
    #[arg(long, value_delimiter = ',', conflicts_with = "url")]
    pub stacks: Vec<String>,
    /// Search a service that is already running instead (loopback unless --allow-remote); several,
    /// comma separated and optionally named (`go=http://127.0.0.1:8080,mvc=http://127.0.0.1:8081`),
    /// are searched in interleaved rounds and ranked by the ratio of their ceilings.
    #[arg(long)]
    pub url: Option<String>,
    #[arg(long = "assert", value_name = "GATE", help = crate::gates::HELP)]
    pub asserts: Vec<String>,
    /// Serve the per-second figures in Prometheus' text format at http://ADDR/metrics while it
    /// runs (e.g. 127.0.0.1:9464; docs/grafana-dashboard.json reads them from Prometheus).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Data directory for `@data/` sources with --url.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// SLO override, e.g. `p99<=350ms,p95<=200ms,errors<1%`.
    #[arg(long)]
    pub slo: Option<String>,
    /// Probes at each end of the final bracket, with fresh seeds, before a cliff's interval may be
    /// called narrow (default: the plan's search.repeat; a knee with a local model needs none).
    #[arg(long)]
    pub repeat: Option<u32>,
    /// Wall-time budget per stack: its probes and checks, and each round's start, verify,
    /// warm-up and stop (default: the plan's search.max_time).
    #[arg(long)]
    pub max_time: Option<String>,
    /// First probe rate.
    #[arg(long)]
    pub start_rate: Option<f64>,
    /// Target half-width of the 95% interval as a fraction of the ceiling (0.05 = ±5%).
    #[arg(long)]
    pub tolerance: Option<f64>,
    /// Length of each probe shelf (default: the plan's search.probe).
    #[arg(long)]
    pub probe: Option<String>,
    /// Dropped from the start of each probe (default: the plan's search.probe_trim).
    #[arg(long)]
    pub probe_trim: Option<String>,
    /// Length of the confirming shelf at the interval's lower end (default: the plan's
    /// search.confirm; 0s = none); judged with the plan's [analysis] trimming, scaled down when
    /// the shelf is shorter than trim + min_window.
    #[arg(long)]
    pub confirm: Option<String>,
    /// Multiply the search's durations (probe, confirm, drain, budget) by the plan's quick_scale.
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub stand: StandArgs,
    /// Measure stacks even when `ceiling verify` fails for them (recorded).
    #[arg(long)]
    pub allow_unverified: bool,
    /// Allow a non-loopback --url.
    #[arg(long)]
    pub allow_remote: bool,
    /// Generator threads to start with (a generator-bound probe is retried with more; default:
    /// the plan's load.threads, else 1).
    #[arg(long)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub engine: crate::run_cmd::EngineArgs,
    /// With several stacks: probes per stack per round, stacks taking turns (A B A B …) so drift
    /// falls on all alike; each round starts the stack afresh (default 4; 0 = one stack after
    /// the other).
    #[arg(long)]
    pub round: Option<usize>,
    #[command(flatten)]
    pub agent: crate::agents::AgentFlags,
    /// With --url on another host: a `ceiling agent --sample-stack PID` beside the service,
    /// whose samples give the stack's CPU and memory (same token and clock bound as --agents).
    #[arg(long, value_name = "HOST:PORT", requires = "url")]
    pub stack_agent: Option<String>,
}

/// Parses `p99<=350ms,errors<1%` (the plan crate's grammar, [`ceiling_plan::SloSpec`]) into the
/// plan's SLO.
pub fn apply_slo(plan: &mut Plan, spec: &str) -> anyhow::Result<()> {
    ceiling_plan::SloSpec::parse(spec)
        .map_err(|e| anyhow::anyhow!("--slo {e}"))?
        .apply(&mut plan.slo);
    Ok(())
}

/// The plan of a bare-URL search: one request, the given SLO, and search settings sized for an
/// interactive question (10-s probes, a 30-s confirming shelf, a 15-minute budget).
fn bare_plan(a: &SearchArgs, url: &str) -> anyhow::Result<Plan> {
    if a.slo.is_none() {
        bail!("a bare --url has no SLO: pass one, e.g. --slo 'p99<=50ms,errors<1%' (or give a plan file)");
    }
    let mut p = ceiling_lab::load::url_plan(url, &a.method, &a.header, a.body.as_deref())?;
    p.name = "url".into();
    p.set_stages(vec![ceiling_plan::Stage::Hold {
        rate: 1.0,
        duration: std::time::Duration::from_secs(1),
    }]);
    let s = &mut p.search;
    s.start_rate = 100.0;
    s.probe = std::time::Duration::from_secs(10);
    s.probe_trim = std::time::Duration::from_secs(2);
    s.confirm = std::time::Duration::from_secs(30);
    s.drain = std::time::Duration::from_secs(2);
    s.max_time = std::time::Duration::from_secs(15 * 60);
    p.analysis.trim_head = std::time::Duration::from_secs(5);
    p.analysis.trim_tail = std::time::Duration::ZERO;
    p.analysis.min_window = std::time::Duration::from_secs(20);
    Ok(p)
}

/// What `--json` prints per searched target.
#[derive(serde::Serialize)]
struct JsonOut<'a> {
    target: &'a str,
    ceiling_rps: f64,
    lower_bound: bool,
    interval: Option<&'a ceiling_analyze::CapacityInterval>,
    status: ceiling_analyze::SearchStatus,
    binding: Option<&'a str>,
    cause: Option<&'a str>,
    stop: String,
    summary: String,
    elapsed_s: f64,
    baseline: Option<&'a ceiling_analyze::Baseline>,
    probes: &'a [ceiling_analyze::ProbeVerdict],
}

/// Runs `ceiling search`.
pub fn run(a: SearchArgs) -> anyhow::Result<ExitCode> {
    let gates = crate::gates::parse(&a.asserts)?;
    crate::gates::metrics_listen(a.metrics_listen.as_deref())?;
    let urls = a.url.as_deref().map(url_list).transpose()?;
    let mut plan = match (&a.plan, &urls) {
        (Some(p), _) => ceiling_plan::load_plan(p)?,
        (None, Some(u)) => {
            // one request for every service: their paths must agree
            let paths: Vec<String> = u
                .iter()
                .map(|(_, x)| HttpUrl::parse(x).map(|h| h.path))
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow::anyhow!("--url: {e}"))?;
            if paths.iter().any(|p| *p != paths[0]) {
                bail!("--url: without a plan every service gets the same request, but the paths differ ({}); give the same path, or a plan with the requests and base URLs", paths.join(", "));
            }
            bare_plan(&a, &u[0].1)?
        }
        (None, None) => bail!("give a plan file, or --url with --slo"),
    };
    if a.quick {
        plan = plan.scaled(plan.quick_scale);
    }
    ceiling_lab::apply_load_flags(&mut plan, &a.engine.flags(a.threads))?;
    if let Some(s) = &a.slo {
        apply_slo(&mut plan, s)?;
    }
    let d = |v: &Option<String>, what: &str| -> anyhow::Result<Option<Duration>> {
        v.as_deref()
            .map(|x| parse_duration(x).map_err(|e| anyhow::anyhow!("--{what}: {e}")))
            .transpose()
    };
    ceiling_lab::apply_search_overrides(
        &mut plan,
        &SearchOverrides {
            repeat: a.repeat,
            max_time: d(&a.max_time, "max-time")?,
            start_rate: a.start_rate,
            tolerance: a.tolerance,
            probe: d(&a.probe, "probe")?,
            probe_trim: d(&a.probe_trim, "probe-trim")?,
            confirm: d(&a.confirm, "confirm")?,
        },
    )?;
    if !a.stacks.is_empty() {
        plan.target.stacks = a.stacks.clone();
    }
    let stop = ceiling_lab::load::stop_on_signal();
    let id = run_id(&plan).replacen(&plan.name, &format!("search-{}", plan.name), 1);
    let dir = a.stand.results.join(&id);
    std::fs::create_dir_all(dir.join("logs"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let mut report = RunReport::new(&plan, id);
    report.started = now_iso();
    let mut series = Series::new();
    eprintln!("{}", ceiling_lab::describe_search(&plan, &dir));
    if plan.scaled_by != 1.0 {
        eprintln!(
            "note: SCALED search — probe and confirm durations × {}",
            plan.scaled_by
        );
    }
    if !plan.load.keep_alive {
        eprintln!("note: keep-alive off — a new TCP connection for every request, its set-up inside the latency");
    }
    let several = urls
        .as_ref()
        .map_or(plan.target.stacks.len() > 1, |u| u.len() > 1);
    let setup = SearchSetup {
        allow_unverified: a.allow_unverified,
        agents: a.agent.agents()?,
        per_round: ceiling_lab::per_round(a.round, several),
        data_dir: a.data_dir.clone(),
    };
    let mut checkpoint = |r: &RunReport, s: &Series| {
        crate::compare_cmd::write_reports(&dir, r, s)
            .map(|_| ())
            .map_err(ceiling_lab::LabError::checkpoint)
    };
    let mut cx = SearchContext {
        plan: &plan,
        setup: &setup,
        dir: &dir,
        stop: &stop,
        progress: Progress::new(|l| eprintln!("{l}"))
            .with_views(ceiling_report::live::TerminalView::maker()),
        checkpoint: &mut checkpoint,
    };
    // a stack died, or a part of the stand (PostgreSQL, PgBouncer) exited, under one of the probes
    let mut halted = false;
    if let Some(urls) = urls.as_ref().filter(|u| u.len() > 1) {
        if a.stack_agent.is_some() {
            bail!("--stack-agent samples one service; with several --url, leave it out");
        }
        for (_, u) in urls {
            ceiling_load::parse_target(u, a.allow_remote)?;
        }
        ceiling_lab::record_no_stand(&mut report);
        ceiling_lab::search_urls(&mut cx, urls, &mut report, &mut series)?;
    } else if let Some((_, url)) = urls.as_ref().and_then(|u| u.first()) {
        ceiling_load::parse_target(url, a.allow_remote)?;
        ceiling_lab::record_no_stand(&mut report);
        let stack_agent = a.agent.stack_agent(a.stack_agent.as_deref())?;
        ceiling_lab::search_url(&mut cx, "url", url, stack_agent, &mut report, &mut series)?;
    } else {
        let root = repo_root()?;
        if plan.target.stacks.is_empty() {
            bail!("no stacks: pass --stacks or --url");
        }
        let stand_opts = a.stand.options(&root, &dir);
        let mut stand = ceiling_lab::open_stand(&stand_opts, &plan.stand, &cx.progress)?;
        ceiling_lab::record_stand(&stand, &mut report);
        let names = plan.target.stacks.clone();
        let end = ceiling_lab::search_stacks(&mut cx, &mut stand, &names, &mut report, &mut series);
        stand.stop();
        halted = end?.halted;
    }
    if a.json {
        crate::compare_cmd::write_reports(&dir, &report, &series)?;
        let outs: Vec<JsonOut> = report
            .stacks
            .iter()
            .filter_map(|st| {
                let s = st.search.as_ref()?;
                Some(JsonOut {
                    target: &st.stack,
                    ceiling_rps: s.ceiling_rps,
                    lower_bound: s.status.is_lower_bound(),
                    interval: s.interval.as_ref(),
                    status: s.status,
                    binding: s.binding.as_deref(),
                    cause: s.cause.as_deref(),
                    stop: s.stop.to_string(),
                    summary: s.describe(),
                    elapsed_s: s.elapsed_s,
                    baseline: s.baseline.as_ref(),
                    probes: &s.probes,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&outs)?);
    } else {
        write_and_print(&dir, &report, &series)?;
    }
    if stop.load(Ordering::Relaxed) {
        return Ok(ExitCode::from(130));
    }
    // a stack or a part of the stand that died under a probe: the results are there, but not
    // whole
    let code = u8::from(report.stacks.is_empty() || halted);
    Ok(crate::gates::finish_report(&gates, &report, code))
}

/// `--url`'s list: `URL` or `NAME=URL`, comma separated. A comma that does not start a new
/// `http://…` (one inside a query) stays in its URL. Unnamed services are called by `host:port`.
fn url_list(text: &str) -> anyhow::Result<Vec<(String, String)>> {
    let starts = |piece: &str| {
        let piece = piece.trim();
        let url = piece.split_once('=').map_or(piece, |(n, u)| {
            if n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            {
                u
            } else {
                piece
            }
        });
        url.trim_start().starts_with("http://") || url.trim_start().starts_with("https://")
    };
    let mut items: Vec<String> = Vec::new();
    for piece in text.split(',') {
        match items.last_mut() {
            Some(last) if !starts(piece) => {
                last.push(',');
                last.push_str(piece);
            }
            _ => items.push(piece.to_string()),
        }
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for item in items {
        let item = item.trim();
        let (name, url) = match item.split_once('=') {
            Some((n, u)) if !n.contains("://") && starts(item) && !n.is_empty() => {
                (n.trim().to_string(), u.trim().to_string())
            }
            _ => {
                let u = HttpUrl::parse(item).map_err(|e| anyhow::anyhow!("--url: {e}"))?;
                (format!("{}:{}", u.host, u.port), item.to_string())
            }
        };
        if out.iter().any(|(n, _)| *n == name) {
            bail!(
                "--url: `{name}` is given twice; name the services apart (`a=http://…,b=http://…`)"
            );
        }
        out.push((name, url));
    }
    if out.is_empty() {
        bail!("--url: no URL given");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::url_list;

    #[test]
    fn a_url_list_takes_names_and_keeps_commas_inside_a_query() {
        let one = url_list("http://127.0.0.1:8080/status?ids=1,2,3").unwrap();
        assert_eq!(
            one,
            vec![(
                "127.0.0.1:8080".to_string(),
                "http://127.0.0.1:8080/status?ids=1,2,3".to_string()
            )]
        );
        let two = url_list("go=http://127.0.0.1:8080/, mvc=http://127.0.0.1:8081/").unwrap();
        assert_eq!(two[0], ("go".into(), "http://127.0.0.1:8080/".into()));
        assert_eq!(two[1], ("mvc".into(), "http://127.0.0.1:8081/".into()));
        let unnamed = url_list("http://127.0.0.1:1/,http://127.0.0.1:2/").unwrap();
        assert_eq!(unnamed[1].0, "127.0.0.1:2");
        let e = url_list("http://127.0.0.1:1/,http://127.0.0.1:1/x").unwrap_err();
        assert!(e.to_string().contains("given twice"), "{e}");
        assert!(url_list("ftp://x").is_err());
    }
}
