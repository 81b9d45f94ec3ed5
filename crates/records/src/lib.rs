//! The records a run leaves, as types: `run.json` ([`RunReport`], versioned by
//! [`SCHEMA_VERSION`], older versions still read), the per-second files beside it read back
//! ([`load_series`], [`load_signals`], [`load_spectra`]), `ceiling load`'s `summary.json`
//! ([`load::LoadReport`]) and `ceiling pgbench`'s `pgbench.json` ([`pgbench::PgbenchResult`]).
//! Each is Serialize + Deserialize and becomes JSON once, at the edge; rendering them is
//! `ceiling-report`'s, making them the lab's and the analysis's.
//!
//! ```text
//! let mut rep = RunReport::new(&plan, run_id);          // plan summary, schema version, tool version
//! rep.stacks.push(analysis);                             // one StackAnalysis per stack
//! let back = read_run_json(&dir.join("run.json"))?;     // this schema or an older one
//! let series = load_series(&dir, &back);                 // each stack's timeseries.csv
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod load;
pub mod pgbench;

use ceiling_analyze::{LoadModel, ShelfCriteria, StackAnalysis, StageSpan, Warning, WarningKind};
use ceiling_metrics::{
    read_signals, read_timeseries, Environment, LimitsApplied, SignalRow, TimeseriesRow,
};
use ceiling_plan::{Plan, Segment};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

/// Version of the `run.json` layout; bumped on incompatible changes. Older versions are still read:
///
/// * 1 → 2: `limits` became typed records keyed by part (`postgres`) or stack name (it was the same
///   JSON, but `null` when empty); `limits_note` was dropped (the note is computed from `limits`);
///   warnings of a stack became `{"kind", "message"}` objects (bare strings read as kind `other`).
/// * 2 → 3: run-level `warnings` became `{"kind", "message"}` objects too (bare strings read as
///   kind `other`); `environment` is the typed fingerprint (the same fields; `null` when none was
///   taken).
pub const SCHEMA_VERSION: u32 = 3;

/// Per-second series of each stack, keyed by stack name (rows of its `timeseries.csv`).
pub type Series = BTreeMap<String, Vec<TimeseriesRow>>;

/// Per-second signals of each stack, keyed by stack name (rows of its `signals.csv`).
pub type SignalSeries = BTreeMap<String, Vec<SignalRow>>;

/// The tool that wrote the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// `ceiling`.
    pub name: String,
    /// Crate version.
    pub version: String,
}

/// One request of the mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestSummary {
    /// Name (histogram tag).
    pub name: String,
    /// Relative weight.
    pub weight: u32,
    /// HTTP method.
    pub method: String,
    /// Path template as written (`/status/${ids.id}`).
    pub path: String,
}

/// The plan, as far as a reader of the results needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanSummary {
    /// Plan name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Source benchmark id, if any.
    pub source: Option<String>,
    /// Plan file.
    pub file: String,
    /// Open or closed.
    pub model: LoadModel,
    /// `uniform` or `poisson`.
    pub arrivals: String,
    /// Keep-alive on.
    pub keep_alive: bool,
    /// Connection bound (open model).
    pub max_connections: usize,
    /// Request timeout, ms.
    pub timeout_ms: f64,
    /// Closed-model repetitions.
    pub repetitions: u32,
    /// How the repetitions were run: `0`, every repetition a pass over the levels in one start
    /// of each stack, the stacks one after the other; `n > 0`, each repetition a start of its
    /// own with its own warm-up, the stacks taking turns in `n` rounds (A B A B …) so the
    /// machine's drift falls on all alike (absent in older run.json files: 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interleaved_rounds: u32,
    /// Generator threads the run used (wrk's `-t`; absent in older run.json files).
    #[serde(default = "one_thread")]
    pub threads: usize,
    /// The ticked engine's tick, ms (`[load] tick`, `--tick`); absent: the default engine (and in
    /// run.json files older than 2026-11-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_ms: Option<f64>,
    /// The generator's threads ran under SCHED_FIFO (`[load] realtime`, `--realtime`); absent:
    /// normal scheduling (and in run.json files older than 2026-11-28).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub realtime: bool,
    /// The run was to stop after its first failed shelf (`[load] stop_at_failure`); absent: it
    /// runs every stage (and in run.json files older than 2026-11-29).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stop_at_failure: bool,
    /// The ticked engine's I/O back end as asked for (`[load] io`, `--io`) when not `auto`; the
    /// one each shelf ran on is in its notes (absent: auto, and in older run.json files).
    #[serde(default, skip_serializing_if = "is_auto")]
    pub io: ceiling_plan::IoBackend,
    /// The stand's settings as the run used them: pool size, workers, limits, the stacks' extra
    /// environment (`[stand.env]`), PgBouncer, PostgreSQL's version and settings (absent in older
    /// run.json files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stand: Option<ceiling_plan::StandSettings>,
    /// `[cost]`: prices for the cost table (absent in older run.json files and plans without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<ceiling_plan::CostSettings>,
    /// Factor every duration was scaled by (1 = the plan's own timings).
    pub scaled_by: f64,
    /// `p99≤350ms, errors<1%`: the SLO as people read it (limits rounded to a tenth of a
    /// second); the limits themselves are in `criteria`, which is what runs are compared on.
    pub slo: String,
    /// The judging rules.
    pub criteria: ShelfCriteria,
    /// Warm-up and measured stages with planned times.
    pub stages: Vec<StageSpan>,
    /// Request mix.
    pub requests: Vec<RequestSummary>,
    /// Planned length of the run, seconds: the warm-up and every repetition's pass over the
    /// levels ([`ceiling_plan::Plan::run_duration`]; in an interleaved run every repetition's
    /// warm-up too, [`ceiling_plan::Plan::run_duration_in_rounds`]; request-bounded stages
    /// count 0).
    pub total_duration_s: f64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_auto(io: &ceiling_plan::IoBackend) -> bool {
    *io == ceiling_plan::IoBackend::Auto
}

fn one_thread() -> usize {
    1
}

fn template_text(t: &ceiling_plan::Template) -> String {
    t.segments
        .iter()
        .map(|s| match s {
            Segment::Literal(x) => x.clone(),
            Segment::Column {
                source,
                column,
                count,
            } if *count > 1 => format!("${{{source}.{column}*{count}}}"),
            Segment::Column { source, column, .. } => format!("${{{source}.{column}}}"),
            Segment::Uuid => "${uuid}".into(),
            Segment::Int { lo, hi } => format!("${{int:{lo}:{hi}}}"),
        })
        .collect()
}

impl PlanSummary {
    /// Summarises `plan`.
    pub fn from_plan(plan: &Plan) -> Self {
        PlanSummary {
            name: plan.name.clone(),
            description: plan.description.clone(),
            source: plan.source.clone(),
            file: plan.file.display().to_string(),
            model: plan.load.model.into(),
            arrivals: format!("{:?}", plan.load.arrivals).to_lowercase(),
            keep_alive: plan.load.keep_alive,
            max_connections: plan.load.max_connections,
            timeout_ms: plan.load.timeout.as_secs_f64() * 1000.0,
            repetitions: plan.load.repetitions,
            interleaved_rounds: 0,
            threads: plan.load.threads,
            tick_ms: plan.load.tick.map(|t| t.as_secs_f64() * 1000.0),
            realtime: plan.load.realtime,
            stop_at_failure: plan.load.stop_at_failure,
            io: plan.load.io,
            stand: Some(plan.stand.clone()),
            cost: plan.cost.clone(),
            scaled_by: plan.scaled_by,
            slo: plan.slo.describe(),
            criteria: ShelfCriteria::from_plan(plan),
            stages: ceiling_analyze::stage_spans(plan, 1),
            requests: plan
                .requests
                .iter()
                .map(|r| RequestSummary {
                    name: r.name.clone(),
                    weight: r.weight,
                    method: r.method.clone(),
                    path: template_text(&r.path),
                })
                .collect(),
            total_duration_s: plan.run_duration().as_secs_f64(),
        }
    }
    /// True when durations were scaled (`--quick`).
    pub fn is_scaled(&self) -> bool {
        (self.scaled_by - 1.0).abs() > 1e-9
    }
}

impl RunReport {
    /// The ceiling's name as the stacks' analyses give it (`RPS@p99≤350ms`), `RPS@SLO` when no
    /// stack was analysed.
    pub fn metric_name(&self) -> String {
        self.stacks
            .first()
            .map(|a| a.metric.clone())
            .unwrap_or_else(|| "RPS@SLO".into())
    }

    /// The plan's working load (the fraction of a ceiling a stack is run at), 70% when unknown.
    pub fn working_load(&self) -> f64 {
        self.stacks
            .first()
            .map(|a| a.criteria.working_load)
            .unwrap_or(0.7)
    }

    /// The plan's `[cost]` over this run's ceilings: `None` without a `[cost]` (or without the
    /// plan's instance size), `Err` when the load to price is unknown.
    pub fn costs(&self) -> Option<Result<ceiling_analyze::CostTable, String>> {
        let c = self.plan.cost.as_ref()?;
        let st = self.plan.stand.as_ref()?;
        let (cpus, mem_mb) = (st.cpus?, st.memory_mb?);
        let ceilings: Vec<(String, f64)> = self
            .stacks
            .iter()
            .map(|a| (a.stack.clone(), a.ceiling.rps))
            .collect();
        Some(ceiling_analyze::cost_table(
            c,
            cpus,
            mem_mb as f64 / 1024.0,
            self.working_load(),
            &ceilings,
        ))
    }
}

/// Everything `run.json` holds. `ceiling report DIR` reads it back with [`read_run_json`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// [`SCHEMA_VERSION`] at writing time.
    pub schema_version: u32,
    /// Tool name and version.
    pub tool: ToolInfo,
    /// Run id (the results directory name).
    pub run_id: String,
    /// When the run started (RFC 3339, filled by the caller; may be empty).
    #[serde(default)]
    pub started: String,
    /// Machine, OS, CPU, versions of PostgreSQL and runtimes (the stand's fingerprint); `None`
    /// when the caller took none (old `run.json` files with `null`).
    #[serde(default)]
    pub environment: Option<Environment>,
    /// The plan.
    pub plan: PlanSummary,
    /// Resource limits as the stand applied them, keyed by what was limited: `postgres` for the
    /// stand's PostgreSQL, the stack's name for each stack. Whatever was requested but not applied
    /// is shown prominently ([`RunReport::limits_not_applied`]).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub limits: BTreeMap<String, LimitsApplied>,
    /// Where the generator, the stacks and PostgreSQL ran: CPU sets of their own, or shared (and
    /// then a ceiling is the box's); absent for a `--url` service and in older run.json files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<ceiling_metrics::Placement>,
    /// Each measured stack's `[fairness]` table as its stack.toml declared it for this run
    /// (pool opening, keep-alive limit, DB timeout, request timing, JSON, runtime, GC and heap,
    /// log level); absent for a `--url` service, a partial-contract baseline, and in older
    /// run.json files.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fairness: BTreeMap<String, ceiling_metrics::Fairness>,
    /// Per stack, in run order.
    pub stacks: Vec<StackAnalysis>,
    /// A search of several stacks: each adjacent pair (highest ceiling first) by the ratio of
    /// their ceilings with its 95% interval, paired by rounds ([`ceiling_analyze::rank`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranking: Vec<ceiling_analyze::PairRatio>,
    /// Run-level warnings (stack warnings live in each analysis); typed like theirs, and a bare
    /// string from an older run.json reads as kind `other`.
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

impl RunReport {
    /// An empty report for `plan` (no stacks yet; environment and limits null).
    pub fn new(plan: &Plan, run_id: impl Into<String>) -> Self {
        RunReport {
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo {
                name: "ceiling".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            run_id: run_id.into(),
            started: String::new(),
            environment: None,
            plan: PlanSummary::from_plan(plan),
            limits: BTreeMap::new(),
            placement: None,
            fairness: BTreeMap::new(),
            stacks: Vec::new(),
            ranking: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// One line per limited part whose requested limits were not all applied
    /// (`go-pgx (stack): cpus: no usable `cpu` cgroup controller…`); empty when all were.
    pub fn limits_not_applied(&self) -> Vec<String> {
        self.limits
            .iter()
            .filter_map(|(name, la)| {
                let note = la.not_applied_note()?;
                Some(if name == la.who.as_str() {
                    format!("{name}: {note}")
                } else {
                    format!("{name} ({}): {note}", la.who)
                })
            })
            .collect()
    }

    /// Serialises as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("RunReport is always serialisable")
    }

    /// What a ledger keeps of this run as evidence (`docs/evidence/`): every figure a table, a
    /// comparison or a claim reads — shelves, levels, ceilings, searches and their probes'
    /// verdicts, runtime figures — without the bulk that stays in the run's own results directory
    /// (each shelf's per-request table, each probe's pooled histograms). A run-level note
    /// says it is a digest; digesting a digest changes nothing.
    pub fn digest(&self) -> RunReport {
        let mut d = self.clone();
        let lean = |s: &mut ceiling_analyze::ShelfResult| s.per_request.clear();
        for a in &mut d.stacks {
            a.shelves.iter_mut().for_each(lean);
            if let Some(search) = &mut a.search {
                search.confirms.iter_mut().for_each(lean);
                for p in &mut search.probes {
                    p.counts = None;
                }
            }
        }
        let note = format!(
            "a digest of run {}: the shelves' per-request tables and the probes' histograms stay in \
             results/{} of the machine that ran it",
            d.run_id, d.run_id
        );
        if !d.warnings.iter().any(|w| w.message == note) {
            d.warnings.push(Warning::new(WarningKind::Other, note));
        }
        d
    }

    /// Parses `run.json` text of this or an older schema version (refuses a newer one).
    pub fn from_json(text: &str) -> Result<Self, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("run.json: {e}"))?;
        let ver = v
            .get("schema_version")
            .and_then(|x| x.as_u64())
            .unwrap_or(0);
        if ver > SCHEMA_VERSION as u64 {
            return Err(format!(
                "run.json has schema_version {ver}; this ceiling reads up to {SCHEMA_VERSION}"
            ));
        }
        serde_json::from_value(v).map_err(|e| format!("run.json: {e}"))
    }
}

/// `limits` was `null` in run.json schema 1 when nothing was recorded.
fn null_as_empty<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, LimitsApplied>, D::Error> {
    Ok(Option::<BTreeMap<String, LimitsApplied>>::deserialize(d)?.unwrap_or_default())
}

/// Reads `run.json`.
pub fn read_run_json(path: &Path) -> io::Result<RunReport> {
    let text = std::fs::read_to_string(path)?;
    RunReport::from_json(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}

/// Finds and reads each stack's per-second series in a results directory: `DIR/<stack>/timeseries.csv`,
/// else `DIR/timeseries-<stack>.csv`, else (single-stack runs) `DIR/timeseries.csv`. Missing or
/// unreadable files are skipped (the report then has no time charts for that stack).
pub fn load_series(dir: &Path, report: &RunReport) -> Series {
    let mut out = Series::new();
    for a in &report.stacks {
        let mut cands = vec![
            dir.join(&a.stack).join("timeseries.csv"),
            dir.join(format!("timeseries-{}.csv", a.stack)),
        ];
        if report.stacks.len() == 1 {
            cands.push(dir.join("timeseries.csv"));
        }
        for c in cands {
            if let Ok(f) = std::fs::File::open(&c) {
                if let Ok(rows) = read_timeseries(f) {
                    out.insert(a.stack.clone(), rows);
                    break;
                }
            }
        }
    }
    out
}

/// One shelf's latency percentile spectrum, read from the run's HdrHistogram log.
#[derive(Debug, Clone, PartialEq)]
pub struct ShelfSpectrum {
    /// Shelf label.
    pub label: String,
    /// Its verdict.
    pub verdict: ceiling_analyze::Verdict,
    /// `(nines, ms)`: nines = −log10(1 − q), so 1 is p90, 2 p99, 3 p99.9.
    pub points: Vec<(f64, f64)>,
}

/// Per stack, the spectrum of every shelf with requests, in shelf order.
pub type Spectra = BTreeMap<String, Vec<ShelfSpectrum>>;

/// The spectrum's resolution: quantiles at every quarter of a nine, up to this many nines (or
/// fewer when the shelf has too few requests to tell).
pub const SPECTRUM_MAX_NINES: f64 = 5.0;

/// Reads each stack's `DIR/<stack>/latency.hlog` once, merging every request name's per-second
/// histograms into each shelf's kept window (merged, never averaged), and returns the spectra.
/// Missing or unreadable logs are skipped (the chart is then left out).
pub fn load_spectra(dir: &Path, report: &RunReport) -> Spectra {
    let mut out = Spectra::new();
    for a in &report.stacks {
        let Ok(bytes) = std::fs::read(dir.join(&a.stack).join("latency.hlog")) else {
            continue;
        };
        let wins: Vec<(usize, f64, f64)> = a
            .shelves
            .iter()
            .enumerate()
            .filter(|(_, s)| s.requests > 0)
            .filter_map(|(i, s)| Some((i, s.window.kept_start_s?, s.window.kept_end_s?)))
            .collect();
        if wins.is_empty() {
            continue;
        }
        let mut hs: Vec<Option<hdrhistogram::Histogram<u64>>> = vec![None; wins.len()];
        let r = ceiling_metrics::visit_hlog(&bytes, |_, start, _, h| {
            for (k, (_, a, b)) in wins.iter().enumerate() {
                if start + 1e-6 >= *a && start < *b - 1e-6 {
                    match &mut hs[k] {
                        Some(acc) => {
                            let _ = acc.add(h);
                        }
                        None => hs[k] = Some(h.clone()),
                    }
                }
            }
        });
        if r.is_err() {
            continue;
        }
        let v: Vec<ShelfSpectrum> = wins
            .iter()
            .zip(hs)
            .filter_map(|((i, _, _), h)| {
                let h = h.filter(|h| !h.is_empty())?;
                let s = &a.shelves[*i];
                Some(ShelfSpectrum {
                    label: s.label.clone(),
                    verdict: s.verdict,
                    points: spectrum_points(&h),
                })
            })
            .collect();
        if !v.is_empty() {
            out.insert(a.stack.clone(), v);
        }
    }
    out
}

/// `(nines, ms)` at every quarter of a nine while the histogram holds enough values to resolve
/// it (at least 10 values above the quantile), then the maximum. Values are µs.
pub fn spectrum_points(h: &hdrhistogram::Histogram<u64>) -> Vec<(f64, f64)> {
    let n = h.len() as f64;
    let mut v = Vec::new();
    let mut k = 0.0;
    while k <= SPECTRUM_MAX_NINES + 1e-9 {
        let tail = 10f64.powf(-k);
        if tail * n < 10.0 {
            break;
        }
        let q = 1.0 - tail;
        v.push((k, h.value_at_quantile(q) as f64 / 1000.0));
        k += 0.25;
    }
    if n > 0.0 {
        // the maximum sits where one value is left above: the 1 − 1/n quantile
        let top = n.log10().max(v.last().map(|p| p.0 + 0.25).unwrap_or(0.0));
        v.push((top, h.max() as f64 / 1000.0));
    }
    v
}

/// Reads each stack's `DIR/<stack>/signals.csv` (missing or unreadable files are skipped: runs
/// recorded before signals existed, or stacks measured without them).
pub fn load_signals(dir: &Path, report: &RunReport) -> SignalSeries {
    let mut out = SignalSeries::new();
    for a in &report.stacks {
        if let Ok(f) = std::fs::File::open(dir.join(&a.stack).join("signals.csv")) {
            if let Ok(rows) = read_signals(f) {
                out.insert(a.stack.clone(), rows);
            }
        }
    }
    out
}

/// Recomputes every stack's attribution from its per-second rows and signals (what
/// `ceiling report DIR` does, so a changed attribution rule applies to old runs). Stacks without
/// per-second rows keep what run.json holds.
pub fn recompute_attribution(report: &mut RunReport, series: &Series, signals: &SignalSeries) {
    for a in &mut report.stacks {
        let Some(rows) = series.get(&a.stack) else {
            continue;
        };
        let sig = signals.get(&a.stack).map(Vec::as_slice).unwrap_or(&[]);
        ceiling_analyze::attribute_analysis(a, rows, sig);
        if !sig.is_empty() {
            ceiling_analyze::runtime_analysis(a, rows, sig);
        }
    }
}

/// Attributes the failed low-rate checks of every stored search that ran before checks were
/// attributed (their `why` is empty), from the files each check left in
/// `DIR/<stack>/checks/check-N/`, and gives a search that stopped because the service did not
/// recover the last check's why. A check's judged window is its whole length (no trim). Returns
/// how many checks were attributed.
pub fn attribute_stored_checks(dir: &Path, report: &mut RunReport) -> usize {
    use ceiling_analyze::{ProbeKind, StopReason};
    let mut n = 0;
    for a in &mut report.stacks {
        let ctx = ceiling_analyze::context_of(&a.criteria);
        let Some(o) = a.search.as_mut() else { continue };
        // each run of a search is numbered (its files' directory) and seeded by that number:
        // the first run (the baseline check) is number 1
        let Some(base) = o.probes.first().map(|p| p.seed.wrapping_sub(1)) else {
            continue;
        };
        for v in &mut o.probes {
            if v.kind != ProbeKind::Check || !v.failed() || v.why.is_some() {
                continue;
            }
            let d = dir
                .join(&a.stack)
                .join("checks")
                .join(format!("check-{}", v.seed.wrapping_sub(base)));
            let rows = std::fs::File::open(d.join("timeseries.csv"))
                .ok()
                .and_then(|f| read_timeseries(f).ok());
            let sig = std::fs::File::open(d.join("signals.csv"))
                .ok()
                .and_then(|f| read_signals(f).ok())
                .unwrap_or_default();
            let (Some(rows), true) = (rows, v.window_s > 0.0) else {
                continue;
            };
            let end = v.window_s.ceil() as u32;
            v.why = Some(ceiling_analyze::attribute(&rows, &sig, 0, end, &ctx).summary);
            n += 1;
        }
        let last = o
            .probes
            .iter()
            .rev()
            .find(|v| v.kind == ProbeKind::Check)
            .and_then(|v| v.why.clone());
        if let StopReason::NotRecovered { why, .. } = &mut o.stop {
            if why.is_none() {
                *why = last;
            }
        }
    }
    n
}
