//! `ceiling search`: RPS@p99≤SLO found automatically, as an estimate with a 95% interval (baseline,
//! bracket, narrow on the fitted SLO margin, replicate, confirm; recovery after every overload),
//! for one or several stacks on the stand, or for any URL with or without a plan.

use crate::load_cmd::install_ctrlc;
use crate::run_cmd::{write_and_print, StandArgs};
use anyhow::{bail, Context};
use ceiling_analyze::ProbeKind;
use ceiling_analyze::{probe_criteria, StackAnalysis};
use ceiling_lab::{measure_watched, now_iso, repo_root, run_id, Halt, MeasureSpec};
use ceiling_plan::{parse_duration, HttpUrl, Plan};
use ceiling_report::{RunReport, Series};
use ceiling_search::{search, ProbeRunner, ProbeSpec, Search, SearchOptions};
use ceiling_stand::{SampleTarget, Stand};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

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
    /// Time budget per stack (default: the plan's search.max_time).
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
    /// Open a new TCP connection for every request (overrides the plan's load.keep_alive; the
    /// connection's set-up is inside each request's latency).
    #[arg(long)]
    pub no_keep_alive: bool,
    /// The ticked engine with this tick (e.g. `2ms`; overrides the plan's load.tick): the open
    /// model woken once per tick instead of once per request, responses timed by the kernel's
    /// receive stamps (experimental, issue 36; HTTP/1.1 cleartext with keep-alive only).
    #[arg(long)]
    pub tick: Option<String>,
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

/// Probes run through `measure` (sampling, hlog, CSV per probe).
struct Runner<'a> {
    url: String,
    /// The stack's plain-HTTP URL for its `/metrics` (a stand stack; `url` may be its TLS port).
    metrics_url: Option<String>,
    stack: String,
    data_dir: Option<PathBuf>,
    dir: PathBuf,
    targets: Box<dyn Fn() -> Vec<SampleTarget> + 'a>,
    stop: Arc<AtomicBool>,
    /// The per-second watch ([`ceiling_lab::watch`] on the stand; nothing for a bare URL).
    watch: Box<dyn FnMut() -> Option<Halt> + 'a>,
    /// What stopped a probe, when the watch did: the search of this stack ends there.
    halted: Option<Halt>,
    last_rows: Vec<ceiling_metrics::TimeseriesRow>,
    t0: Instant,
    /// Generator agents for every probe (`--agents`).
    agents: Option<crate::agents::Agents>,
    /// The agent beside a remote stack (`--stack-agent`).
    stack_agent: Option<crate::agents::Agents>,
}

impl Runner<'static> {
    /// The runner for a service that is already running at `url`: no stand to watch, the
    /// generator's own process sampled (and the service's, through `stack_agent`, when given).
    fn for_url(
        url: &str,
        name: &str,
        a: &SearchArgs,
        dir: &Path,
        stop: &Arc<AtomicBool>,
        t0: Instant,
        stack_agent: Option<crate::agents::Agents>,
    ) -> anyhow::Result<Runner<'static>> {
        Ok(Runner {
            url: url.to_string(),
            metrics_url: None,
            stack: name.to_string(),
            data_dir: a.data_dir.clone(),
            dir: dir.join(name),
            targets: Box::new(|| {
                vec![SampleTarget::process(
                    ceiling_metrics::Role::Generator,
                    std::process::id(),
                )]
            }),
            stop: stop.clone(),
            watch: Box::new(|| None),
            halted: None,
            last_rows: Vec::new(),
            t0,
            agents: a.agent.agents()?,
            stack_agent,
        })
    }
}

/// One sentence for a halt, as a probe's error.
fn halt_text(h: &Halt) -> String {
    match h {
        Halt::StackDied(m) => format!("the stack is not running: {m}"),
        Halt::PartExited(e) => format!(
            "{} — the probe measured a broken stand, not the stack, and the search of this stack stops here",
            e.describe()
        ),
    }
}

impl ProbeRunner for Runner<'_> {
    fn run(&mut self, plan: &Plan, spec: &ProbeSpec) -> Result<StackAnalysis, String> {
        if let Some(h) = self.halted.as_ref() {
            return Err(halt_text(h));
        }
        if let Some(h) = (self.watch)() {
            let e = halt_text(&h);
            self.halted = Some(h);
            return Err(e);
        }
        let sub = match spec.kind {
            ProbeKind::Check => "checks",
            _ => "probes",
        };
        let out = self.dir.join(sub).join(&spec.label);
        let offset = self.t0.elapsed().as_secs() as u32;
        let watch = &mut self.watch;
        let m = measure_watched(
            MeasureSpec {
                plan,
                stack: &self.stack,
                url: &self.url,
                metrics_url: self.metrics_url.as_deref(),
                data_dir: self.data_dir.as_deref(),
                out_dir: &out,
                sampler_targets: (self.targets)(),
                threads: spec.threads,
                quiet: true,
                agents: self.agents.as_ref(),
                stack_agent: self.stack_agent.as_ref(),
                round: None,
            },
            &self.stop,
            watch,
        )
        .map_err(|e| format!("{e:#}"))?;
        if let Some(h) = m.halt {
            // The probe's figures are not the stack's: never a verdict, the search ends here.
            let e = halt_text(&h);
            self.halted = Some(h);
            return Err(e);
        }
        // One time axis for the whole search: each probe's seconds placed where the probe ran.
        if spec.kind != ProbeKind::Check {
            self.last_rows.extend(m.rows.into_iter().map(|mut r| {
                r.t += offset;
                r
            }));
        }
        Ok(m.analysis)
    }
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    fn idle(&mut self, d: std::time::Duration) {
        // Sleep in slices so Ctrl-C is seen within 100 ms.
        let end = Instant::now() + d;
        while !self.stopped() && Instant::now() < end {
            std::thread::sleep((end - Instant::now()).min(std::time::Duration::from_millis(100)));
        }
    }
    fn now_s(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }
}

/// The plan of a bare-URL search: one request, the given SLO, and search settings sized for an
/// interactive question (10-s probes, a 30-s confirming shelf, a 15-minute budget).
fn bare_plan(a: &SearchArgs, url: &str) -> anyhow::Result<Plan> {
    if a.slo.is_none() {
        bail!("a bare --url has no SLO: pass one, e.g. --slo 'p99<=50ms,errors<1%' (or give a plan file)");
    }
    let mut p = crate::load_cmd::url_plan(url, &a.method, &a.header, a.body.as_deref())?;
    p.name = "url".into();
    p.stages = vec![ceiling_plan::Stage::Hold {
        rate: 1.0,
        duration: std::time::Duration::from_secs(1),
    }];
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
        (Some(p), _) => ceiling_plan::load_plan(p).map_err(|e| anyhow::anyhow!("{e}"))?,
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
    ceiling_lab::apply_load_flags(&mut plan, a.threads, a.no_keep_alive, a.tick.as_deref())?;
    if let Some(s) = &a.slo {
        apply_slo(&mut plan, s)?;
    }
    if let Some(r) = a.repeat {
        plan.search.repeat = r.clamp(1, 100);
    }
    if let Some(m) = &a.max_time {
        plan.search.max_time = parse_duration(m).map_err(|e| anyhow::anyhow!("--max-time: {e}"))?;
    }
    if let Some(r) = a.start_rate {
        // written so that NaN is refused too
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(r >= 1.0) {
            bail!("--start-rate must be at least 1");
        }
        plan.search.start_rate = r;
    }
    if let Some(t) = a.tolerance {
        if !(0.001..=0.5).contains(&t) {
            bail!("--tolerance must be between 0.001 and 0.5");
        }
        plan.search.tolerance = t;
    }
    let d = |v: &Option<String>, what: &str| -> anyhow::Result<Option<std::time::Duration>> {
        v.as_deref()
            .map(|x| parse_duration(x).map_err(|e| anyhow::anyhow!("--{what}: {e}")))
            .transpose()
    };
    if let Some(p) = d(&a.probe, "probe")? {
        plan.search.probe = p;
    }
    if let Some(p) = d(&a.probe_trim, "probe-trim")? {
        plan.search.probe_trim = p;
    }
    if plan.search.probe_trim >= plan.search.probe {
        bail!(
            "--probe-trim must be shorter than the probe ({})",
            ceiling_plan::format_duration(plan.search.probe)
        );
    }
    if let Some(c) = d(&a.confirm, "confirm")? {
        plan.search.confirm = c;
    }
    let c = plan.search.confirm;
    if !c.is_zero() {
        // Judge a shorter confirming shelf proportionally: keep the plan's trims and window as
        // fractions of a shelf of source length (20 min in plan 000).
        let a_ = &mut plan.analysis;
        let need = a_.trim_head + a_.trim_tail + a_.min_window;
        if c < need {
            let f = c.as_secs_f64() / need.as_secs_f64();
            a_.trim_head = a_.trim_head.mul_f64(f);
            a_.trim_tail = a_.trim_tail.mul_f64(f);
            a_.min_window = a_.min_window.mul_f64(f);
        }
        // Windows are counted in whole seconds: leave one second of slack so a full-length
        // confirming shelf can meet its own minimum window.
        let room = c
            .saturating_sub(a_.trim_head + a_.trim_tail)
            .as_secs()
            .saturating_sub(1);
        a_.min_window = a_
            .min_window
            .min(std::time::Duration::from_secs(room.max(1)));
    }
    let stop = Arc::new(AtomicBool::new(false));
    install_ctrlc(stop.clone());
    let id = run_id(&plan).replacen(&plan.name, &format!("search-{}", plan.name), 1);
    let dir = a.stand.results.join(&id);
    std::fs::create_dir_all(dir.join("logs"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let mut report = RunReport::new(&plan, id);
    report.started = now_iso();
    let mut series = Series::new();
    // a stack died, or a part of the stand (PostgreSQL, PgBouncer) exited, under one of the probes
    let mut halted = false;
    eprintln!(
        "ceiling search {} → {}  SLO {}; probes of {} from {:.0} RPS (×{} until one fails), then placed around the pooled estimate (probes at one rate pool into one window) until the long-run ceiling's 95% interval is within ±{}% (a cliff: {} probes at each end of the bracket); confirm {}; budget {} per stack",
        plan.name,
        dir.display(),
        plan.slo.describe(),
        ceiling_plan::format_duration(plan.search.probe),
        plan.search.start_rate,
        plan.search.growth,
        plan.search.tolerance * 100.0,
        plan.search.repeat,
        if plan.search.confirm.is_zero() {
            "none".to_string()
        } else {
            ceiling_plan::format_duration(plan.search.confirm)
        },
        ceiling_plan::format_duration(plan.search.max_time)
    );
    if plan.scaled_by != 1.0 {
        eprintln!(
            "note: SCALED search — probe and confirm durations × {}",
            plan.scaled_by
        );
    }
    let mut log = |m: &str| eprintln!("{m}");
    if !plan.load.keep_alive {
        eprintln!("note: keep-alive off — a new TCP connection for every request, its set-up inside the latency");
    }
    let opts = SearchOptions {
        threads: plan.load.threads.max(1),
        ..Default::default()
    };

    if let Some(urls) = urls.as_ref().filter(|u| u.len() > 1) {
        if a.stack_agent.is_some() {
            bail!("--stack-agent samples one service; with several --url, leave it out");
        }
        for (_, u) in urls {
            ceiling_load::parse_target(u, a.allow_remote).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        report.environment = Some(ceiling_stand::fingerprint(
            None,
            &ceiling_stand::CgroupSystem::detect(),
        ));
        search_urls(
            &plan,
            &a,
            urls,
            &dir,
            &stop,
            &opts,
            &mut report,
            &mut series,
            &mut log,
        )?;
    } else if let Some((_, url)) = urls.as_ref().and_then(|u| u.first()) {
        let name = "url".to_string();
        ceiling_load::parse_target(url, a.allow_remote).map_err(|e| anyhow::anyhow!("{e}"))?;
        report.environment = Some(ceiling_stand::fingerprint(
            None,
            &ceiling_stand::CgroupSystem::detect(),
        ));
        let stack_agent = a.agent.stack_agent(a.stack_agent.as_deref())?;
        let mut runner = Runner::for_url(url, &name, &a, &dir, &stop, Instant::now(), stack_agent)?;
        let out = search(&plan, &mut runner, &opts, &mut log);
        series.insert(name.clone(), std::mem::take(&mut runner.last_rows));
        report.stacks.push(StackAnalysis::from_search(
            &name,
            probe_criteria(&plan),
            out,
        ));
    } else {
        let root = repo_root()?;
        if !a.stacks.is_empty() {
            plan.target.stacks = a.stacks.clone();
        }
        if plan.target.stacks.is_empty() {
            bail!("no stacks: pass --stacks or --url");
        }
        let stand_opts = a.stand.options(&root, &dir);
        let mut stand =
            Stand::start(&stand_opts, &plan.stand).map_err(|e| anyhow::anyhow!("{e}"))?;
        stand
            .prepare_data(plan.stand.seed)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        report.environment = Some(stand.fingerprint());
        if let Some(l) = stand.postgres_limits() {
            report.limits.insert("postgres".into(), l.clone());
        }
        if let Some(l) = stand.pgbouncer_limits() {
            report.limits.insert("pgbouncer".into(), l.clone());
        }
        if let Some(l) = stand.generator_limits() {
            report.limits.insert("generator".into(), l.clone());
        }
        report.placement = Some(stand.placement().clone());
        eprintln!("stand: placement: {}", stand.placement().describe());
        let data_dir = stand.data_dir().map(Path::to_path_buf);
        let names = plan.target.stacks.clone();
        // Several stacks: rounds of a few probes each, A B A B …, so the machine's drift over the
        // search falls on every stack alike. One stack: one round to the end.
        let per_round = match a.round {
            Some(0) => None,
            Some(n) => Some(n),
            None if names.len() > 1 => Some(4),
            None => None,
        };
        if names.len() > 1 {
            eprintln!(
                "stacks interleaved: {}",
                match per_round {
                    Some(n) => format!("rounds of {n} probes per stack, each round on a freshly started stack (verify on the first)"),
                    None => "no (--round 0): each stack searched to the end in turn".into(),
                }
            );
        }
        let t0 = Instant::now();
        let mut jobs: Vec<StackJob> = names
            .iter()
            .map(|n| StackJob::new(n, &plan, &opts))
            .collect();
        let mut stop_all = false;
        loop {
            let mut ran = false;
            for job in jobs.iter_mut() {
                if stop.load(Ordering::Relaxed) || stop_all {
                    break;
                }
                if job.search.finished() || job.error.is_some() {
                    continue;
                }
                let max_steps = per_round;
                ran = true;
                match stack_round(
                    &plan,
                    &a,
                    &mut stand,
                    job,
                    &dir,
                    data_dir.as_deref(),
                    &stop,
                    t0,
                    max_steps,
                    &mut log,
                ) {
                    Ok((lim, fairness)) => {
                        report.limits.insert(job.name.clone(), lim);
                        if let Some(f) = fairness {
                            report.fairness.insert(job.name.clone(), f);
                        }
                    }
                    Err(e) => job.error = Some(format!("{e:#}")),
                }
                stop_all |= job.stop_all;
                halted |= job.halted;
            }
            // Results so far, after every round: an interrupted search keeps what it measured.
            report.stacks = jobs.iter().filter_map(StackJob::analysis).collect();
            for st in &mut report.stacks {
                // a ceiling the shared box set is called that, with the stack's quota as recorded
                let quota = report.limits.get(&st.stack).and_then(|l| l.cpus);
                st.note_placement(stand.placement(), quota);
            }
            report.ranking = ranking(&report.stacks, plan.search.tolerance);
            report.warnings = jobs
                .iter()
                .filter_map(|j| {
                    j.error.as_ref().filter(|_| j.rounds == 0).map(|e| {
                        ceiling_analyze::Warning::new(
                            ceiling_analyze::WarningKind::StackNotMeasured,
                            format!("stack `{}` was not searched: {e}", j.name),
                        )
                    })
                })
                .collect();
            for j in &jobs {
                series.insert(j.name.clone(), j.rows.clone());
            }
            crate::compare_cmd::write_reports(&dir, &report, &series)?;
            if !ran || stop.load(Ordering::Relaxed) || stop_all {
                break;
            }
        }
        stand.stop();
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

/// `--url A,B,…`: services already running, searched in interleaved rounds (A B A B …, `--round`
/// probes each) so the machine's drift over the search falls on all alike, and ranked by the
/// paired ratio of their ceilings. Nothing is restarted between rounds (ceiling did not start
/// them); the plan's warm-up runs once per service, before its first round.
#[allow(clippy::too_many_arguments)]
fn search_urls(
    plan: &Plan,
    a: &SearchArgs,
    urls: &[(String, String)],
    dir: &Path,
    stop: &Arc<AtomicBool>,
    opts: &SearchOptions,
    report: &mut RunReport,
    series: &mut Series,
    log: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let per_round = match a.round {
        Some(0) => None,
        Some(n) => Some(n),
        None => Some(4),
    };
    eprintln!(
        "services interleaved: {}",
        match per_round {
            Some(n) => format!("rounds of {n} probes per service (A B A B …)"),
            None => "no (--round 0): each service searched to the end in turn".into(),
        }
    );
    let t0 = Instant::now();
    let mut jobs: Vec<(StackJob, String)> = urls
        .iter()
        .map(|(name, url)| (StackJob::new(name, plan, opts), url.clone()))
        .collect();
    loop {
        let mut ran = false;
        for (job, url) in jobs.iter_mut() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if job.search.finished() || job.error.is_some() {
                continue;
            }
            ran = true;
            let mut runner = Runner::for_url(url, &job.name, a, dir, stop, t0, None)?;
            job.rounds += 1;
            log(&format!("[{}] round {} ({url})…", job.name, job.rounds));
            let warm = if job.rounds == 1 {
                warm_up(plan, &mut runner, job.rounds, log)
            } else {
                None
            };
            match warm {
                Some(e) => job.error = Some(format!("warm-up failed: {e}")),
                None => {
                    job.search.run_round(&mut runner, per_round, log);
                }
            }
            job.rows.extend(std::mem::take(&mut runner.last_rows));
        }
        // Results so far, after every round: an interrupted search keeps what it measured.
        report.stacks = jobs.iter().filter_map(|(j, _)| j.analysis()).collect();
        report.ranking = ranking(&report.stacks, plan.search.tolerance);
        for (j, _) in &jobs {
            series.insert(j.name.clone(), j.rows.clone());
        }
        crate::compare_cmd::write_reports(dir, report, series)?;
        if !ran || stop.load(Ordering::Relaxed) {
            return Ok(());
        }
    }
}

/// The plan's warm-up (JIT, pools, caches), recorded under checks/ and never judged; the error
/// when it could not run. Nothing when the plan has none.
fn warm_up(
    plan: &Plan,
    runner: &mut Runner<'_>,
    round: u32,
    log: &mut dyn FnMut(&str),
) -> Option<String> {
    if plan.warmup.is_empty() {
        return None;
    }
    let mut wp = plan.clone();
    wp.stages = wp.warmup.clone();
    wp.warmup.clear();
    let spec = ProbeSpec {
        label: format!("warmup-{round}"),
        threads: plan.load.threads.max(1),
        kind: ProbeKind::Check,
    };
    log(&format!(
        "  warm-up: {}",
        ceiling_plan::format_duration(wp.total_duration())
    ));
    runner.run(&wp, &spec).err()
}

/// The ranking of several searched stacks (empty for one): the ratio of each adjacent pair's
/// ceilings, paired by rounds.
pub(crate) fn ranking(stacks: &[StackAnalysis], tolerance: f64) -> Vec<ceiling_analyze::PairRatio> {
    let searched: Vec<ceiling_analyze::Searched> = stacks
        .iter()
        .filter_map(|a| {
            let s = a.search.as_ref()?;
            Some((
                a.stack.clone(),
                s.probes.clone(),
                s.interval.as_ref().map(|i| (s.ceiling_rps, i.lo, i.hi)),
            ))
        })
        .collect();
    if searched.len() < 2 {
        return Vec::new();
    }
    ceiling_analyze::rank(&searched, tolerance)
}

/// One stack's search across rounds.
struct StackJob {
    name: String,
    search: Search,
    rows: Vec<ceiling_metrics::TimeseriesRow>,
    warnings: Vec<ceiling_analyze::Warning>,
    /// Why the stack could not run a round (build, start, verify, death).
    error: Option<String>,
    rounds: u32,
    /// The stack died, or a part of the stand exited, during one of its probes (its search ended
    /// there).
    halted: bool,
    /// …and the search of every stack stops (`stand.on_part_exit = "stop"`, or the part could
    /// not be restarted).
    stop_all: bool,
    /// The stack's artifact size and its memory at the end of its latest round.
    footprint: Option<ceiling_metrics::Footprint>,
}

impl StackJob {
    /// A search of `name` that has run no round yet.
    fn new(name: &str, plan: &Plan, opts: &SearchOptions) -> StackJob {
        StackJob {
            name: name.to_string(),
            search: Search::new(plan, opts),
            rows: Vec::new(),
            warnings: Vec::new(),
            error: None,
            rounds: 0,
            halted: false,
            stop_all: false,
            footprint: None,
        }
    }

    /// The analysis so far (None when no round ran).
    fn analysis(&self) -> Option<StackAnalysis> {
        if self.rounds == 0 {
            return None;
        }
        // Conclude a copy: the search may go on after this report is written.
        let criteria = probe_criteria(self.search.plan());
        let stop = self
            .error
            .as_ref()
            .map(|e| ceiling_analyze::StopReason::Error { message: e.clone() });
        let mut a =
            StackAnalysis::from_search(&self.name, criteria, self.search.clone().finish(stop));
        a.warnings.extend(self.warnings.iter().cloned());
        a.footprint = self.footprint.clone();
        Some(a)
    }
}

/// Starts the stack (verifying it on its first round), runs its plan's warm-up if any, one round
/// of its search, and stops it.
#[allow(clippy::too_many_arguments)]
fn stack_round(
    plan: &Plan,
    a: &SearchArgs,
    stand: &mut Stand,
    job: &mut StackJob,
    dir: &Path,
    data_dir: Option<&Path>,
    stop: &Arc<AtomicBool>,
    t0: Instant,
    max_steps: Option<usize>,
    log: &mut dyn FnMut(&str),
) -> anyhow::Result<(
    ceiling_stand::LimitsApplied,
    Option<ceiling_stand::Fairness>,
)> {
    let name = job.name.clone();
    // verified on the first round; later rounds start the same (cached) build
    let (spec, mut stack, warnings) = ceiling_lab::start_verified(
        plan,
        stand,
        &name,
        dir,
        a.allow_unverified,
        false,
        job.rounds > 0,
    )?;
    if job.rounds == 0 {
        job.warnings.extend(warnings);
    }
    job.rounds += 1;
    let lim = stack.limits_applied().clone();
    let url = ceiling_lab::load_url(&stack);
    let metrics_url = Some(stack.url());
    let stack_cell = std::cell::RefCell::new(&mut stack);
    let stand_cell = std::cell::RefCell::new(&mut *stand);
    let mut runner = Runner {
        url,
        metrics_url,
        stack: name.clone(),
        data_dir: data_dir.map(Path::to_path_buf),
        dir: dir.join(&name),
        targets: Box::new(|| {
            stand_cell
                .borrow()
                .sampler_targets(Some(&**stack_cell.borrow()), Some(std::process::id()))
        }),
        stop: stop.clone(),
        watch: Box::new(|| {
            ceiling_lab::watch(&mut stand_cell.borrow_mut(), &mut stack_cell.borrow_mut())
        }),
        halted: None,
        last_rows: Vec::new(),
        t0,
        agents: a.agent.agents()?,
        stack_agent: None,
    };
    log(&format!("[{name}] round {}…", job.rounds));
    // The plan's warm-up (JIT, pools, caches) on every fresh start, as `ceiling run` does.
    let warmup_failed = warm_up(plan, &mut runner, job.rounds, log);
    if warmup_failed.is_none() {
        job.search.run_round(&mut runner, max_steps, log);
    }
    job.rows.extend(std::mem::take(&mut runner.last_rows));
    let halted = runner.halted.take();
    drop(runner);
    job.footprint = Some(ceiling_lab::footprint_of(
        &spec,
        stack.is_alive().then(|| stack.pid()),
    ));
    stack.stop();
    match halted {
        Some(Halt::PartExited(e)) => part_exited(plan, stand, job, dir, stop, &e, log),
        // its search ended there (the stop reason quotes the crash report); the others go on
        Some(Halt::StackDied(_)) => job.halted = true,
        None => {}
    }
    if let Some(e) = warmup_failed {
        bail!("warm-up failed: {e}");
    }
    Ok((lim, spec.fairness))
}

/// A part of the stand (PostgreSQL, PgBouncer) exited during one of `job`'s probes: the search
/// of this stack has ended (the probe was never judged); the stand's policy (`lab`) restarts the
/// part so the other stacks go on, or stops the whole search.
fn part_exited(
    plan: &Plan,
    stand: &mut Stand,
    job: &mut StackJob,
    dir: &Path,
    stop: &Arc<AtomicBool>,
    e: &ceiling_analyze::PartExit,
    log: &mut dyn FnMut(&str),
) {
    job.halted = true;
    let what = format!("{} while `{}` was searched", e.describe(), job.name);
    let out = ceiling_lab::handle_part_exit(
        plan.stand.on_part_exit,
        stand,
        e,
        what,
        ceiling_lab::Activity::Search,
        !stop.load(Ordering::Relaxed),
        &dir.join("logs"),
        &job.name,
        log,
    );
    log(&out.message);
    job.stop_all |= out.stop_all;
    job.warnings.push(ceiling_analyze::Warning::new(
        ceiling_analyze::WarningKind::PartExited,
        out.message,
    ));
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
