//! A run beside its source's published tables.

use crate::published::{MemoryKind, Metric, Point, PoolMode, Published, Row, Table, Value};
use ceiling_analyze::{LevelAggregate, SearchStatus, ShelfResult, StackAnalysis, Verdict};
use ceiling_records::RunReport;
use serde::Serialize;
use std::collections::BTreeMap;

/// One figure of a row: the source's and ceiling's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// The quantity.
    pub metric: Metric,
    /// What the source published.
    pub published: Value,
    /// What ceiling measured at the same point; `None` when ceiling does not record it.
    pub ours: Option<f64>,
    /// Half-width of ceiling's 95% interval for it, when there were repetitions or a search.
    pub ours_ci: Option<f64>,
    /// Where ceiling's figure may lie, when it is not a point: a search's 95% interval,
    /// `[value, ∞)` for a lower bound (a search that never failed, or stopped by its budget
    /// before a probe failed), or `[0, rate)` when no rate passed, below the lowest that failed.
    /// Stacks whose ranges overlap are not ranked against each other.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ours_range: Option<(f64, f64)>,
    /// `ours / published` (against a range's midpoint); `None` when either is missing or the
    /// published value is 0.
    pub ratio: Option<f64>,
    /// What ceiling's figure is where the quantity could be mistaken (memory: RSS of the
    /// process tree, or the runtime's heap as the source took it).
    pub ours_is: Option<String>,
}

/// Whether a published row could be set beside the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    /// Both sides are there.
    Matched,
    /// ceiling has no stack for the source's row.
    NoStack,
    /// ceiling has the stack, but this run did not measure it.
    NotInRun,
    /// The run measured the stack, but not at the row's rate or concurrency.
    PointNotInRun,
}

/// One published row beside ceiling's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowComparison {
    /// The stack as the source names it.
    pub label: String,
    /// ceiling's stack.
    pub stack: Option<String>,
    /// The row's rate or concurrency (`1500 RPS`, `c=100`), empty for a ceiling row.
    pub point: String,
    /// The plan the row was read from (its own, else the table's).
    pub plan: Option<String>,
    /// Whether both sides are there.
    pub status: RowStatus,
    /// ceiling's shelf or level the figures come from (`hold 1500`, `c=100`), with its verdict.
    pub ours_at: Option<String>,
    /// ceiling's verdict there.
    pub verdict: Option<Verdict>,
    /// The figures.
    pub cells: Vec<Cell>,
    /// Why ceiling's shelf failed there (its attribution summary), when it did.
    pub why: Option<String>,
    /// The source wrote "~".
    pub approx: bool,
    /// The row's note.
    pub note: Option<String>,
}

/// Whether the source and ceiling rank the stacks the same way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderAgreement {
    /// The quantity ranked.
    pub metric: Metric,
    /// The point the ranking is at (`1500 RPS`, `c=100`, or empty for ceilings).
    pub point: String,
    /// The stacks, best first, by the source; stacks within 2% of each other share one entry
    /// (`a = b`).
    pub published: Vec<String>,
    /// The stacks, best first, by ceiling, ties grouped the same way, and stacks whose ranges
    /// overlap grouped as `a ~ b`.
    pub ours: Vec<String>,
    /// Pairs ranked the other way round (`go-pgx > ktor-jdbc` by the source, the reverse by
    /// ceiling); ties (within 2%) on either side are not counted.
    pub swapped: Vec<(String, String)>,
    /// Pairs the source ranks (`a > b`) that ceiling cannot rank: measured within 2% of each
    /// other, or with ranges that overlap (a search's interval, a lower bound): neither confirmed
    /// nor reversed.
    pub unresolved: Vec<(String, String)>,
}

impl OrderAgreement {
    /// True when no pair is swapped and every pair the source ranks, ceiling ranks too.
    pub fn agrees(&self) -> bool {
        self.swapped.is_empty() && self.unresolved.is_empty()
    }
}

/// One published table beside the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableComparison {
    /// The table's id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its first line in the seed text.
    pub line: usize,
    /// What a row is a point of.
    pub point: Point,
    /// The table's note.
    pub note: Option<String>,
    /// What the source's columns meant.
    pub columns: BTreeMap<Metric, String>,
    /// The columns shown.
    pub metrics: Vec<Metric>,
    /// Row by row.
    pub rows: Vec<RowComparison>,
    /// Stack order, per point, on the table's first quantity ceiling measured.
    pub order: Vec<OrderAgreement>,
    /// Rows divided by other rows (`ratio_to`), the source's and ceiling's.
    pub ratios: Vec<RatioComparison>,
    /// Table conditions that differ from the run's (`keep-alive: source off, run on`).
    pub differs: Vec<String>,
}

/// One row divided by another of its table (the source's "drop" column), both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatioComparison {
    /// The row divided.
    pub label: String,
    /// The row it is divided by.
    pub base: String,
    /// The figure divided.
    pub metric: Metric,
    /// The source's ratio, from its own figures; `None` when the base is 0.
    pub published: Option<f64>,
    /// ceiling's ratio, when both rows were measured.
    pub ours: Option<f64>,
}

/// A table of the source that this run's plan does not reproduce.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OtherTable {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// The plan that reproduces it (`a + b` when it needs runs of two); `None` when none does
    /// yet.
    pub plan: Option<String>,
}

/// One condition of measurement, as the source stated it and as the run recorded it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Condition {
    /// `hardware`, `tool`, `database`…
    pub key: String,
    /// The source's words.
    pub source: Option<String>,
    /// The run's record.
    pub run: Option<String>,
}

/// A run beside its source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceComparison {
    /// Source id.
    pub source: String,
    /// Its title.
    pub title: String,
    /// Where and when it was published.
    pub published: String,
    /// The seed text the figures were read from.
    pub seed: String,
    /// The published-tables file.
    pub file: String,
    /// The run (`a + b` for several runs side by side).
    pub run_id: String,
    /// The run's plan (`a + b` for several).
    pub plan: String,
    /// Things to read before any number (scaled run…).
    pub notices: Vec<String>,
    /// The tables this run's plan reproduces.
    pub tables: Vec<TableComparison>,
    /// The source's other tables and the plans that reproduce them.
    pub other_tables: Vec<OtherTable>,
    /// Conditions of measurement, side by side.
    pub conditions: Vec<Condition>,
    /// The source's caveats.
    pub caveats: Vec<String>,
}

/// Sets `run` beside the tables of `published` that its plan reproduces.
pub fn compare_with_source(run: &RunReport, published: &Published) -> SourceComparison {
    compare_runs_with_source(&[run], published)
}

/// Sets several runs of one source beside its tables: each table whose plans are all among the
/// runs' (a summary table of keep-alive on and off needs a run of each), every row read from the
/// run of its plan. The first run gives the conditions; when two runs share a plan, the first of
/// them is used. `runs` must not be empty.
pub fn compare_runs_with_source(runs: &[&RunReport], published: &Published) -> SourceComparison {
    let run = runs[0];
    let plans: Vec<&str> = runs.iter().map(|r| r.plan.name.as_str()).collect();
    let tables: Vec<TableComparison> = published
        .tables_of_plans(&plans)
        .map(|t| table(runs, t, published.wrk_latencies))
        .collect();
    let other_tables = published
        .tables
        .iter()
        .filter(|t| !tables.iter().any(|x| x.id == t.id))
        .map(|t| OtherTable {
            id: t.id.clone(),
            title: t.title.clone(),
            plan: (!t.plans().is_empty()).then(|| t.plans().join(" + ")),
        })
        .collect();
    let mut notices = Vec::new();
    for r in runs {
        if r.plan.is_scaled() {
            notices.push(format!(
                "SCALED RUN{}: every duration was multiplied by {}; the source's figures come from its full-length runs, ceiling's from shorter windows.",
                if runs.len() > 1 { format!(" ({})", r.run_id) } else { String::new() },
                r.plan.scaled_by
            ));
        }
        if published.source.as_str() != r.plan.source.as_deref().unwrap_or("") {
            notices.push(format!(
                "the plan of run {} names source {}, not {}",
                r.run_id,
                r.plan.source.as_deref().unwrap_or("(none)"),
                published.source
            ));
        }
    }
    for (i, p) in plans.iter().enumerate() {
        if plans[..i].contains(p) {
            notices.push(format!(
                "two runs of plan `{p}` were given; each stack's rows come from the first of them that measured it ({} before {}); the runs were made one after the other, not interleaved",
                runs[plans.iter().position(|x| x == p).expect("present")].run_id,
                runs[i].run_id
            ));
        }
    }
    if runs.len() > 1 {
        notices.push(format!(
            "{} runs side by side ({}); the conditions below are the first run's",
            runs.len(),
            runs.iter()
                .map(|r| format!("{} = `{}`", r.run_id, r.plan.name))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if tables.is_empty() {
        notices.push(format!(
            "no table of source {} is reproduced by plan{} `{}`; the plans that do are listed below",
            published.source,
            if plans.len() > 1 { "s" } else { "" },
            plans.join("` + `")
        ));
    }
    SourceComparison {
        source: published.source.clone(),
        title: published.title.clone(),
        published: published.published.clone(),
        seed: published.seed.clone(),
        file: published.file.display().to_string(),
        run_id: runs
            .iter()
            .map(|r| r.run_id.as_str())
            .collect::<Vec<_>>()
            .join(" + "),
        plan: plans.join(" + "),
        notices,
        tables,
        other_tables,
        conditions: conditions(run, published),
        caveats: published.caveats.clone(),
    }
}

/// The figures ceiling has at one point of one stack.
enum Ours<'a> {
    Shelf(&'a ShelfResult),
    Level(&'a LevelAggregate),
}

/// The run that reproduces a row: the first of `runs` whose plan is the row's and that measured
/// the row's stack (one stack per run is how full-length runs are made), else the first whose
/// plan is the row's.
fn run_of<'a>(runs: &[&'a RunReport], t: &Table, r: &Row) -> &'a RunReport {
    let plan = t.row_plan(r);
    let of_plan = || {
        runs.iter()
            .copied()
            .filter(move |x| Some(x.plan.name.as_str()) == plan)
    };
    of_plan()
        .find(|x| {
            r.stack
                .as_ref()
                .is_some_and(|s| x.stacks.iter().any(|a| &a.stack == s))
        })
        .or_else(|| of_plan().next())
        .unwrap_or(runs[0])
}

fn table(runs: &[&RunReport], t: &Table, wrk: bool) -> TableComparison {
    let metrics = t.metrics();
    let rows: Vec<RowComparison> = t
        .rows
        .iter()
        .map(|r| row(run_of(runs, t, r), t, r, &metrics, wrk))
        .collect();
    let order = order(t, &rows, &metrics);
    let ratios = ratios(t, &rows);
    // the runs this table's rows came from, each once
    let mut used: Vec<&RunReport> = Vec::new();
    for r in &t.rows {
        let x = run_of(runs, t, r);
        if !used.iter().any(|u| std::ptr::eq(*u, x)) {
            used.push(x);
        }
    }
    let run = used[0];
    let mut differs = Vec::new();
    if let Some(k) = t.keep_alive {
        for x in &used {
            if k != x.plan.keep_alive {
                differs.push(format!(
                    "keep-alive: the source's table {}, {} {}",
                    on_off(k),
                    if used.len() > 1 {
                        format!("run {}", x.run_id)
                    } else {
                        "this run".to_string()
                    },
                    on_off(x.plan.keep_alive)
                ));
            }
        }
    }
    if let Some(m) = t.pool_mode {
        if m != PoolMode::Direct {
            differs.push(format!(
                "the source's table went through PgBouncer ({m:?} mode); ceiling's stand connects the stacks to PostgreSQL directly"
            ).to_lowercase().replacen("pgbouncer", "PgBouncer", 1).replacen("postgresql", "PostgreSQL", 1));
        }
    }
    if let Some(size) = &t.size {
        let ours: Vec<String> = run
            .limits
            .iter()
            .filter(|(name, _)| name.as_str() != "postgres")
            .map(|(name, l)| {
                format!(
                    "{name} {} CPU / {} MiB",
                    l.cpus
                        .map(crate::published::num)
                        .unwrap_or_else(|| "no cap".into()),
                    l.memory_mb
                        .map(|m| m.to_string())
                        .unwrap_or_else(|| "no cap".into())
                )
            })
            .collect();
        differs.push(format!(
            "size: the source's table {size}; this run {}",
            if ours.is_empty() {
                "recorded no limits".to_string()
            } else {
                ours.join(", ")
            }
        ));
    }
    TableComparison {
        id: t.id.clone(),
        title: t.title.clone(),
        line: t.line,
        point: t.point,
        note: t.note.clone(),
        columns: t.columns.clone(),
        metrics,
        rows,
        order,
        ratios,
        differs,
    }
}

/// The rows with `ratio_to`: each divided by its base row, on the first figure both published.
fn ratios(t: &Table, rows: &[RowComparison]) -> Vec<RatioComparison> {
    t.rows
        .iter()
        .zip(rows)
        .filter_map(|(r, ours)| {
            let base_label = r.ratio_to.as_ref()?;
            let (bi, b) = t
                .rows
                .iter()
                .enumerate()
                .find(|(_, x)| &x.label == base_label)?;
            let (metric, top) = r
                .values()
                .into_iter()
                .find(|(m, _)| b.value(*m).is_some())?;
            let bottom = b.value(metric)?.central();
            let ours_of = |c: &RowComparison| {
                c.cells
                    .iter()
                    .find(|c| c.metric == metric)
                    .and_then(|c| c.ours)
            };
            let ours = match (ours_of(ours), ours_of(&rows[bi])) {
                (Some(x), Some(y)) if y != 0.0 => Some(x / y),
                _ => None,
            };
            Some(RatioComparison {
                label: r.label.clone(),
                base: b.label.clone(),
                metric,
                published: (bottom != 0.0).then(|| top.central() / bottom),
                ours,
            })
        })
        .collect()
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

fn point_text(t: &Table, r: &Row) -> String {
    match t.point {
        Point::Ceiling => String::new(),
        Point::Shelf => format!("{} RPS", crate::published::num(r.rate.unwrap_or(f64::NAN))),
        Point::Level => format!("c={}", r.connections.unwrap_or(0)),
    }
}

/// The stack's shelf at the ceiling (or, with no ceiling, its first failed shelf: the figures a
/// source prints beside a 0).
fn ceiling_shelf(a: &StackAnalysis) -> Option<&ShelfResult> {
    if a.ceiling.found {
        if let Some(i) = a.ceiling.index {
            return a.shelves.iter().find(|s| s.shelf == i);
        }
        // a search: its last valid confirming shelf
        return a
            .search
            .as_ref()
            .and_then(|s| s.confirms.iter().rev().find(|c| c.is_valid()));
    }
    a.shelves
        .iter()
        .find(|s| s.verdict == Verdict::Failed)
        .or_else(|| {
            a.search
                .as_ref()
                .and_then(|s| s.confirms.iter().find(|c| c.verdict == Verdict::Failed))
        })
}

fn find_point<'a>(a: &'a StackAnalysis, t: &Table, r: &Row) -> Option<Ours<'a>> {
    match t.point {
        Point::Ceiling => ceiling_shelf(a).map(Ours::Shelf),
        Point::Shelf => {
            let rate = r.rate?;
            a.shelves
                .iter()
                .find(|s| {
                    s.rate
                        .is_some_and(|x| (x - rate).abs() <= 0.01 * rate.max(1.0))
                })
                .map(Ours::Shelf)
        }
        Point::Level => {
            let c = r.connections? as usize;
            a.levels
                .iter()
                .find(|l| l.connections == Some(c))
                .map(Ours::Level)
        }
    }
}

/// The range ceiling's ceiling may lie in, when a search gave it: its 95% interval, or from the
/// figure up when the search only established a lower bound.
fn ours_range(a: &StackAnalysis, t: &Table, m: Metric) -> Option<(f64, f64)> {
    if t.point != Point::Ceiling || m != Metric::Rps {
        return None;
    }
    let s = a.search.as_ref()?;
    match (&s.interval, s.status) {
        (Some(i), _) => Some((i.lo, i.hi)),
        (
            None,
            SearchStatus::LowerBound | SearchStatus::GeneratorBound | SearchStatus::NotRecovered,
        ) => Some((s.ceiling_rps, f64::INFINITY)),
        (None, SearchStatus::NoPass) => s.upper_bound_rps.map(|u| (0.0, u)),
        _ => None,
    }
}

/// ceiling's figure for `m` at a point: value, 95% half-width, and how it differs in kind.
/// `wrk`: the source's latencies are wrk's, corrected for coordinated omission before printing;
/// ceiling's latency figures are then the same correction of its own histograms where the run
/// has them (closed-model levels), said so in the kind, with the recorded figure beside.
fn ours_value(
    a: &StackAnalysis,
    t: &Table,
    at: Option<&Ours>,
    m: Metric,
    wrk: bool,
) -> (Option<f64>, Option<f64>, Option<String>) {
    let wrk_kind = |recorded: Option<f64>| {
        Some(format!(
            "wrk-corrected, as the source's wrk printed (recorded: {})",
            recorded.map_or("—".into(), |v| format!("{v:.3} ms"))
        ))
    };
    if wrk {
        match at {
            Some(Ours::Shelf(s)) => {
                if let Some(w) = &s.wrk_latency {
                    if let Some(v) = latency_of(w, m).filter(|_| m != Metric::MaxMs) {
                        return (Some(v), None, wrk_kind(latency_of(&s.latency, m)));
                    }
                }
            }
            Some(Ours::Level(l)) => {
                if let Some(h) = l.headline() {
                    if let Some(w) = &h.wrk {
                        let pick = |m: Metric| match m {
                            Metric::AvgMs => Some((&w.mean_ms, Some(&h.mean_ms))),
                            Metric::P50Ms => Some((&w.p50_ms, Some(&h.p50_ms))),
                            Metric::P75Ms => Some((&w.p75_ms, h.p75_ms.as_ref())),
                            Metric::P90Ms => Some((&w.p90_ms, Some(&h.p90_ms))),
                            Metric::P95Ms => Some((&w.p95_ms, Some(&h.p95_ms))),
                            Metric::P99Ms => Some((&w.p99_ms, Some(&h.p99_ms))),
                            _ => None,
                        };
                        if let Some((e, rec)) = pick(m) {
                            return (Some(e.mean), e.ci95, wrk_kind(rec.map(|r| r.mean)));
                        }
                    }
                }
            }
            None => {}
        }
    }
    // the ceiling row's RPS is the ceiling itself (0 when none), interval from the search
    if t.point == Point::Ceiling && m == Metric::Rps {
        if let Some(s) = &a.search {
            let ci = s.interval.as_ref().map(|i| (i.hi - i.lo) / 2.0);
            return (Some(s.ceiling_rps), ci, None);
        }
        return (Some(a.ceiling.rps), None, None);
    }
    // a build fact, the same at every point: the deployable's size as this run's stack had it
    if m == Metric::JarMib {
        return (
            a.footprint.as_ref().and_then(|f| f.artifact_mib()),
            None,
            None,
        );
    }
    let mem_kind = |_: ()| {
        Some(match t.memory {
            MemoryKind::Rss => "RSS of the process tree".to_string(),
            _ => "RSS of the process tree; the source's column is another quantity".to_string(),
        })
    };
    match at {
        // the source tabulated the runtime's heap, and the stack's /metrics gave ceiling the same
        Some(Ours::Shelf(s))
            if m == Metric::MemMib
                && t.memory == MemoryKind::RuntimeHeap
                && s.runtime.as_ref().is_some_and(|r| r.heap_mb_mean.is_some()) =>
        {
            let r = s.runtime.as_ref().expect("checked");
            let what = r.heap_kind.map(|k| k.label()).unwrap_or("runtime heap");
            (
                r.heap_mb_mean,
                None,
                Some(format!("{what} from /metrics, as the source (RSS {})", {
                    s.stack
                        .as_ref()
                        .map(|w| format!("{:.0} MiB", w.rss_mb_mean))
                        .unwrap_or_else(|| "not sampled".into())
                })),
            )
        }
        Some(Ours::Shelf(s)) => {
            let v = match m {
                Metric::Rps => Some(s.achieved_rps),
                Metric::AvgMs
                | Metric::P50Ms
                | Metric::P75Ms
                | Metric::P90Ms
                | Metric::P95Ms
                | Metric::P99Ms
                | Metric::MaxMs => latency_of(&s.latency, m),
                Metric::ErrorsPct => Some(s.error_rate * 100.0),
                Metric::Errors => Some(s.errors as f64),
                Metric::Requests => Some(s.requests as f64),
                Metric::CpuPct => s.stack.as_ref().map(|w| w.cpu_pct_mean),
                Metric::CpuUsPerRequest => s.cpu_us_per_request,
                Metric::MemMib => s.stack.as_ref().map(|w| w.rss_mb_mean),
                _ => None,
            };
            let kind = if m == Metric::MemMib {
                mem_kind(())
            } else {
                None
            };
            (v, None, kind)
        }
        Some(Ours::Level(l)) => {
            let Some(h) = l.headline() else {
                return (None, None, None);
            };
            let e = match m {
                Metric::Rps => Some(&h.throughput_rps),
                Metric::AvgMs => Some(&h.mean_ms),
                Metric::P50Ms => Some(&h.p50_ms),
                Metric::P75Ms => h.p75_ms.as_ref(),
                Metric::P90Ms => Some(&h.p90_ms),
                Metric::P95Ms => Some(&h.p95_ms),
                Metric::P99Ms => Some(&h.p99_ms),
                Metric::CpuPct => h.stack_cpu_pct.as_ref(),
                Metric::CpuUsPerRequest => h.cpu_us_per_request.as_ref(),
                Metric::MemMib => h.stack_rss_mb.as_ref(),
                Metric::ErrorsPct => None,
                _ => None,
            };
            if m == Metric::ErrorsPct {
                return (
                    Some(h.error_rate.mean * 100.0),
                    h.error_rate.ci95.map(|c| c * 100.0),
                    None,
                );
            }
            let kind = if m == Metric::MemMib {
                mem_kind(())
            } else {
                None
            };
            (e.map(|e| e.mean), e.and_then(|e| e.ci95), kind)
        }
        None => (None, None, None),
    }
}

/// A latency figure of a shelf's percentiles (recorded, or as wrk would print them): the one
/// mapping from a table's latency columns to [`ceiling_analyze::Percentiles`].
fn latency_of(p: &ceiling_analyze::Percentiles, m: Metric) -> Option<f64> {
    match m {
        Metric::AvgMs => Some(p.mean_ms),
        Metric::P50Ms => Some(p.p50_ms),
        Metric::P75Ms => Some(p.p75_ms),
        Metric::P90Ms => Some(p.p90_ms),
        Metric::P95Ms => Some(p.p95_ms),
        Metric::P99Ms => Some(p.p99_ms),
        Metric::MaxMs => Some(p.max_ms),
        _ => None,
    }
}

fn row(run: &RunReport, t: &Table, r: &Row, metrics: &[Metric], wrk: bool) -> RowComparison {
    let base = |status| RowComparison {
        label: r.label.clone(),
        stack: r.stack.clone(),
        point: point_text(t, r),
        plan: t.row_plan(r).map(str::to_string),
        status,
        ours_at: None,
        verdict: None,
        cells: r
            .values()
            .into_iter()
            .map(|(metric, published)| Cell {
                metric,
                published,
                ours: None,
                ours_ci: None,
                ours_range: None,
                ratio: None,
                ours_is: None,
            })
            .collect(),
        why: None,
        approx: r.approx,
        note: r.note.clone(),
    };
    let Some(stack) = &r.stack else {
        return base(RowStatus::NoStack);
    };
    let Some(a) = run.stacks.iter().find(|a| &a.stack == stack) else {
        return base(RowStatus::NotInRun);
    };
    let at = find_point(a, t, r);
    if at.is_none() && t.point != Point::Ceiling {
        return base(RowStatus::PointNotInRun);
    }
    let mut out = base(RowStatus::Matched);
    let (ours_at, verdict, why) = match &at {
        Some(Ours::Shelf(s)) => (
            Some(s.label.clone()),
            Some(s.verdict),
            s.attribution.as_ref().map(|x| x.summary.clone()),
        ),
        Some(Ours::Level(l)) => (Some(l.label.clone()), Some(l.verdict), None),
        None => (None, None, None),
    };
    out.ours_at = ours_at.or_else(|| {
        let s = a.search.as_ref().filter(|_| t.point == Point::Ceiling)?;
        Some(match &s.interval {
            Some(i) => format!(
                "search: 95% CI {}–{}, {} (no confirming shelf)",
                crate::published::num(i.lo),
                crate::published::num(i.hi),
                s.status.name()
            ),
            None => format!("search: {} (no confirming shelf)", s.status.name()),
        })
    });
    out.verdict = verdict;
    out.why = why;
    // every column of the table, so rows line up; cells for metrics the row lacks are skipped
    out.cells = metrics
        .iter()
        .filter_map(|&m| {
            let published = r.value(m)?;
            let (ours, ours_ci, ours_is) = if m == Metric::Instances {
                // the plan's [cost] over this run's ceilings (the run's own prices and load)
                let n = run
                    .costs()
                    .and_then(Result::ok)
                    .and_then(|ct| ct.rows.into_iter().find(|x| &x.stack == stack))
                    .and_then(|x| x.instances);
                (n.map(f64::from), None, None)
            } else {
                ours_value(a, t, at.as_ref(), m, wrk)
            };
            let p = published.central();
            let range = ours_range(a, t, m);
            // a search where no rate passed has no figure to divide, only a bound
            let bound_only = range.is_some_and(|(lo, hi)| lo == 0.0 && hi.is_finite());
            let ratio = match ours {
                Some(o) if p != 0.0 && !bound_only => Some(o / p),
                _ => None,
            };
            Some(Cell {
                metric: m,
                published,
                ours,
                ours_ci,
                ours_range: range,
                ratio,
                ours_is,
            })
        })
        .collect();
    out
}

/// One stack's figures at a point, for ranking.
struct Ranked {
    name: String,
    published: f64,
    ours: f64,
    /// Where `ours` may lie (`(ours, ours)` for a point figure).
    range: (f64, f64),
}

/// The stacks' order by the table's first column ceiling measured, per point.
/// Two figures within this fraction of the larger are a tie when stacks are ranked: a smaller
/// difference is inside the precision of either side (ceiling holds a shelf's achieved rate to the
/// plan's stability band; the sources print rounded, often graph-read, figures).
const TIE: f64 = 0.02;

fn order(t: &Table, rows: &[RowComparison], metrics: &[Metric]) -> Vec<OrderAgreement> {
    let Some(&metric) = metrics.iter().find(|&&m| {
        rows.iter()
            .any(|r| r.cells.iter().any(|c| c.metric == m && c.ours.is_some()))
    }) else {
        return Vec::new();
    };
    // (stack, published, ours, ours' range)
    let mut by_point: BTreeMap<String, Vec<Ranked>> = BTreeMap::new();
    // a summary table's rows come from several plans (keep-alive on and off): stacks are ranked
    // within one plan, never against themselves under another
    let several = t.plans().len() > 1;
    for r in rows.iter().filter(|r| r.status == RowStatus::Matched) {
        let Some(c) = r.cells.iter().find(|c| c.metric == metric) else {
            continue;
        };
        let Some(o) = c.ours else { continue };
        let name = r.stack.clone().unwrap_or_else(|| r.label.clone());
        let key = match (&r.plan, several) {
            (Some(p), true) if r.point.is_empty() => format!("plan {p}"),
            (Some(p), true) => format!("{}, plan {p}", r.point),
            _ => r.point.clone(),
        };
        by_point.entry(key).or_default().push(Ranked {
            name,
            published: c.published.central(),
            ours: o,
            range: c.ours_range.unwrap_or((o, o)),
        });
    }
    by_point
        .into_iter()
        .filter(|(_, v)| v.len() >= 2)
        .map(|(point, v)| {
            let better = |x: f64, y: f64| {
                if metric.higher_is_better() {
                    x > y
                } else {
                    x < y
                }
            };
            // figures this close are not an order (two stacks holding the plan's top shelf, or a
            // source's "~3000" beside "~2915" read off a graph): neither side ranks them
            let close = |x: f64, y: f64| (x - y).abs() <= TIE * x.abs().max(y.abs());
            let clearly = |x: f64, y: f64| better(x, y) && !close(x, y);
            // ceiling ranks x above y only when their figures differ by more than TIE and their
            // ranges (a search's interval, a lower bound's [value, ∞)) do not overlap
            let apart = |x: &Ranked, y: &Ranked| x.range.1 < y.range.0 || y.range.1 < x.range.0;
            let ours_clearly = |x: &Ranked, y: &Ranked| clearly(x.ours, y.ours) && apart(x, y);
            // best first; neighbours that are not clearly apart from their group's first are one
            // group: `a = b` (within TIE) or `a ~ b` (ranges overlap)
            let rank = |key: &dyn Fn(&Ranked) -> f64, ours: bool| {
                let mut w: Vec<&Ranked> = v.iter().collect();
                w.sort_by(|a, b| {
                    let o = key(a).total_cmp(&key(b));
                    if metric.higher_is_better() {
                        o.reverse()
                    } else {
                        o
                    }
                });
                let mut groups: Vec<(&Ranked, String)> = Vec::new();
                for e in w {
                    match groups.last_mut() {
                        Some((first, names)) if close(key(first), key(e)) => {
                            names.push_str(" = ");
                            names.push_str(&e.name);
                        }
                        Some((first, names)) if ours && !apart(first, e) => {
                            names.push_str(" ~ ");
                            names.push_str(&e.name);
                        }
                        _ => groups.push((e, e.name.clone())),
                    }
                }
                groups.into_iter().map(|(_, n)| n).collect::<Vec<_>>()
            };
            let (mut swapped, mut unresolved) = (Vec::new(), Vec::new());
            for a in &v {
                for b in &v {
                    if !clearly(a.published, b.published) {
                        continue;
                    }
                    if ours_clearly(b, a) {
                        swapped.push((a.name.clone(), b.name.clone()));
                    } else if !ours_clearly(a, b) {
                        unresolved.push((a.name.clone(), b.name.clone()));
                    }
                }
            }
            OrderAgreement {
                metric,
                point,
                published: rank(&|e| e.published, false),
                ours: rank(&|e| e.ours, true),
                swapped,
                unresolved,
            }
        })
        .collect()
}

/// The run's environment fingerprint, when it took one.
fn env(run: &RunReport) -> Option<&ceiling_metrics::Environment> {
    run.environment.as_ref()
}

/// A text field of the fingerprint, `None` when empty.
fn nonempty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The run's record of the conditions a source states (`hardware`, `limits`, `tool`, …).
fn run_condition(run: &RunReport, key: &str) -> Option<String> {
    match key {
        "hardware" => {
            let e = env(run)?;
            let cpu = nonempty(&e.cpu_model)?;
            // the model name a hypervisor shows may hide the generation: the signature says it
            let cpu = match nonempty(&e.cpu_signature) {
                Some(sig) => format!("{cpu} ({sig})"),
                None => cpu,
            };
            let cores = if e.usable_cpus > 0 {
                e.usable_cpus.to_string()
            } else {
                "?".into()
            };
            let mem = if e.memory_bytes > 0 {
                format!(
                    ", {:.1} GiB RAM",
                    e.memory_bytes as f64 / (1u64 << 30) as f64
                )
            } else {
                String::new()
            };
            Some(format!(
                "{cpu}, {cores} usable CPUs{mem}; generator, database and stacks on one machine"
            ))
        }
        "os" => env(run).and_then(|e| nonempty(&e.os)).map(|os| {
            match env(run).and_then(|e| nonempty(&e.kernel)) {
                Some(k) => format!("{os}, kernel {k}"),
                None => os,
            }
        }),
        "limits" => {
            let v: Vec<String> = run
                .limits
                .iter()
                .map(|(name, l)| {
                    format!(
                        "{name}: {} CPU, {} MiB",
                        l.cpus
                            .map(crate::published::num)
                            .unwrap_or_else(|| "no cap".into()),
                        l.memory_mb
                            .map(|m| m.to_string())
                            .unwrap_or_else(|| "no cap".into())
                    )
                })
                .collect();
            (!v.is_empty()).then(|| v.join("; "))
        }
        "tool" => Some(format!(
            "ceiling {} ({} model, {} arrivals, up to {} connections, keep-alive {})",
            run.tool.version,
            match run.plan.model {
                ceiling_analyze::LoadModel::Open => "open",
                ceiling_analyze::LoadModel::Closed => "closed",
            },
            run.plan.arrivals,
            run.plan.max_connections,
            on_off(run.plan.keep_alive)
        )),
        "duration" => {
            // from the stored stages (one pass) and repetitions, so runs recorded before
            // `total_duration_s` counted the repetitions read right too
            let of = |ph: ceiling_metrics::Phase| -> f64 {
                run.plan
                    .stages
                    .iter()
                    .filter(|s| s.phase == ph)
                    .filter_map(|s| s.duration_s)
                    .sum::<f64>()
                    + 0.0 // an empty sum is −0.0, which would print as "-0"
            };
            let (warm, pass) = (
                of(ceiling_metrics::Phase::Warmup),
                of(ceiling_metrics::Phase::Measure),
            );
            let passes = match run.plan.model {
                ceiling_analyze::LoadModel::Closed => run.plan.repetitions.max(1),
                ceiling_analyze::LoadModel::Open => 1,
            };
            let mut s = if passes > 1 && run.plan.interleaved_rounds > 0 && warm == 0.0 {
                // a warm-up bounded by its request count has no planned length (said below)
                format!(
                    "{:.0} s planned in total: {pass:.0} s of levels × {passes} repetitions, each a start of its own with its warm-up, the stacks taking turns",
                    pass * passes as f64
                )
            } else if passes > 1 && run.plan.interleaved_rounds > 0 {
                format!(
                    "{:.0} s planned in total: ({warm:.0} s of warm-up + {pass:.0} s of levels) × {passes} repetitions, each a start of its own, the stacks taking turns",
                    (warm + pass) * passes as f64
                )
            } else if passes > 1 {
                format!(
                    "{:.0} s planned in total: {pass:.0} s of levels × {passes} repetitions",
                    warm + pass * passes as f64
                )
            } else {
                format!("{:.0} s planned in total", warm + pass)
            };
            // an interleaved run's warm-ups are inside the sum already
            let each = run.plan.interleaved_rounds > 0 && passes > 1;
            if warm > 0.0 {
                if !each {
                    s.push_str(&format!(", after a {warm:.0}-s warm-up"));
                }
            } else if run
                .plan
                .stages
                .iter()
                .any(|st| st.phase == ceiling_metrics::Phase::Warmup && st.duration_s.is_none())
            {
                s.push_str(", after a warm-up bounded by its request count");
            }
            if run.plan.is_scaled() {
                s.push_str(&format!(" (scaled by {})", run.plan.scaled_by));
            }
            Some(s)
        }
        "database" => env(run)
            .and_then(|e| e.postgres.clone())
            .map(|v| format!("PostgreSQL {v}")),
        // the stand hands every stack DB_POOL_SIZE: the plan's [stand] pool_size over each
        // stack.toml's own (older run.json files recorded no stand settings: unknown)
        "pools" => run.plan.stand.as_ref().map(|st| match st.pool_size {
            Some(n) => format!(
                "every stack's database pool {n} connections (the plan's [stand] pool_size, over each stack.toml's own)"
            ),
            None => "each stack's own pool size (its stack.toml [settings] pool_size)".into(),
        }),
        "load" => Some(
            run.plan
                .requests
                .iter()
                .map(|q| format!("{} {} {} ×{}", q.name, q.method, q.path, q.weight))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        "method" => Some(format!(
            "{} (ceiling's analysis of the plan's shelves)",
            run.plan.criteria.describe()
        )),
        "warmup" => {
            let w: Vec<&str> = run
                .plan
                .stages
                .iter()
                .filter(|s| s.phase == ceiling_metrics::Phase::Warmup)
                .map(|s| s.label.as_str())
                .collect();
            Some(if w.is_empty() {
                "none".into()
            } else {
                format!("warm-up {} (not analysed)", w.join(", "))
            })
        }
        "repetitions" => Some(
            if run.plan.repetitions > 1 && run.plan.interleaved_rounds > 0 {
                format!(
                "{} repetitions per level, each a start of its own with its warm-up, the stacks taking turns (A B A B …)",
                run.plan.repetitions
            )
            } else if run.plan.repetitions > 1 {
                format!(
                "{} repetitions per level, passes over the levels in one start of each stack, the stacks one after the other",
                run.plan.repetitions
            )
            } else {
                "one run".into()
            },
        ),
        "versions" => {
            let path = env(run)
                .map(|e| {
                    // each value is the tool's own `--version` line, which names the tool
                    e.toolchains
                        .values()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .filter(|s| !s.is_empty())
                // what `--version` says on PATH, not what each stack runs on (a stack may bring its
                // own JDK: its stack.toml [fairness] runtime says which)
                .map(|s| format!("this machine's tools on PATH: {s}"));
            // each stack's own runtime, as its [fairness] table declared it for this run
            let stacks: Vec<String> = run
                .fairness
                .iter()
                .map(|(name, f)| format!("{name}: {}", f.runtime))
                .collect();
            let own = if stacks.is_empty() {
                "each stack's own runtime: its stack.toml [fairness] (not recorded by this run)"
                    .to_string()
            } else {
                format!(
                    "each stack's own runtime (its [fairness], recorded in run.json): {}",
                    stacks.join("; ")
                )
            };
            match path {
                Some(p) => Some(format!("{p} ({own})")),
                None if !stacks.is_empty() => Some(own),
                None => None,
            }
        }
        _ => None,
    }
}

const RUN_KEYS: [&str; 8] = [
    "hardware",
    "os",
    "limits",
    "tool",
    "duration",
    "database",
    "repetitions",
    "versions",
];

fn conditions(run: &RunReport, p: &Published) -> Vec<Condition> {
    let mut keys: Vec<String> = p.conditions.keys().cloned().collect();
    for k in RUN_KEYS {
        if !keys.iter().any(|x| x == k) {
            keys.push(k.to_string());
        }
    }
    keys.into_iter()
        .map(|k| Condition {
            source: p.conditions.get(&k).cloned(),
            run: run_condition(run, &k),
            key: k,
        })
        .filter(|c| c.source.is_some() || c.run.is_some())
        .collect()
}
