//! A source's published tables as data: the format of `plans/published/<source>.toml`
//! (documented in `plans/published/README.md`) and its loader.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a published-tables file could not be used; the message names the file and line.
#[derive(Debug, thiserror::Error)]
pub enum PublishedError {
    /// The file could not be read.
    #[error("{path}: {err}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        err: std::io::Error,
    },
    /// The file is not valid TOML or does not follow the format.
    #[error("{path}:{line}: {msg}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem (1 when unknown).
        line: usize,
        /// What is wrong and what to do.
        msg: String,
    },
}

/// One published quantity (a column of a source's table). The serialised names are the keys of
/// `plans/published/README.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Achieved requests per second (the ceiling, for `point = "ceiling"`).
    Rps,
    /// Mean latency, ms.
    AvgMs,
    /// Standard deviation of latency, ms.
    StdevMs,
    /// Median latency, ms.
    P50Ms,
    /// 75th percentile, ms.
    P75Ms,
    /// 90th percentile, ms.
    P90Ms,
    /// 95th percentile, ms.
    P95Ms,
    /// 99th percentile, ms.
    P99Ms,
    /// Maximum latency, ms.
    MaxMs,
    /// Failed or non-2xx responses, % of requests.
    ErrorsPct,
    /// Failed or non-2xx responses, count.
    Errors,
    /// Requests completed, count.
    Requests,
    /// The service's CPU, % of one core.
    CpuPct,
    /// The service's CPU per request, µs.
    CpuUsPerRequest,
    /// The service's memory, MiB.
    MemMib,
    /// Response bytes per second, MiB/s.
    TransferMibS,
    /// Artifact size, MiB.
    JarMib,
    /// Instances needed (cost tables).
    Instances,
    /// Cost per year, USD.
    CostUsdYear,
}

impl Metric {
    /// Every metric, in the order columns are shown.
    pub const ALL: [Metric; 19] = [
        Metric::Rps,
        Metric::AvgMs,
        Metric::StdevMs,
        Metric::P50Ms,
        Metric::P75Ms,
        Metric::P90Ms,
        Metric::P95Ms,
        Metric::P99Ms,
        Metric::MaxMs,
        Metric::ErrorsPct,
        Metric::Errors,
        Metric::Requests,
        Metric::CpuPct,
        Metric::CpuUsPerRequest,
        Metric::MemMib,
        Metric::TransferMibS,
        Metric::JarMib,
        Metric::Instances,
        Metric::CostUsdYear,
    ];

    /// The key as written in the data file (`p99_ms`).
    pub fn key(self) -> &'static str {
        match self {
            Metric::Rps => "rps",
            Metric::AvgMs => "avg_ms",
            Metric::StdevMs => "stdev_ms",
            Metric::P50Ms => "p50_ms",
            Metric::P75Ms => "p75_ms",
            Metric::P90Ms => "p90_ms",
            Metric::P95Ms => "p95_ms",
            Metric::P99Ms => "p99_ms",
            Metric::MaxMs => "max_ms",
            Metric::ErrorsPct => "errors_pct",
            Metric::Errors => "errors",
            Metric::Requests => "requests",
            Metric::CpuPct => "cpu_pct",
            Metric::CpuUsPerRequest => "cpu_us_per_request",
            Metric::MemMib => "mem_mib",
            Metric::TransferMibS => "transfer_mib_s",
            Metric::JarMib => "jar_mib",
            Metric::Instances => "instances",
            Metric::CostUsdYear => "cost_usd_year",
        }
    }

    /// A column heading (`p99 ms`).
    pub fn heading(self) -> &'static str {
        match self {
            Metric::Rps => "RPS",
            Metric::AvgMs => "avg ms",
            Metric::StdevMs => "stdev ms",
            Metric::P50Ms => "p50 ms",
            Metric::P75Ms => "p75 ms",
            Metric::P90Ms => "p90 ms",
            Metric::P95Ms => "p95 ms",
            Metric::P99Ms => "p99 ms",
            Metric::MaxMs => "max ms",
            Metric::ErrorsPct => "errors %",
            Metric::Errors => "errors",
            Metric::Requests => "requests",
            Metric::CpuPct => "CPU %",
            Metric::CpuUsPerRequest => "CPU µs/req",
            Metric::MemMib => "memory MiB",
            Metric::TransferMibS => "MiB/s",
            Metric::JarMib => "jar MiB",
            Metric::Instances => "instances",
            Metric::CostUsdYear => "USD/year",
        }
    }

    /// True when more is better (throughput); false when less is (latency, errors, cost).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Rps | Metric::Requests | Metric::TransferMibS)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// A published figure: one number, or the range the source printed (`~95—100`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// One number.
    One(f64),
    /// `[low, high]`.
    Range([f64; 2]),
}

impl Value {
    /// The number compared against: the value, or a range's midpoint.
    pub fn central(self) -> f64 {
        match self {
            Value::One(x) => x,
            Value::Range([a, b]) => (a + b) / 2.0,
        }
    }
    /// True when `x` lies inside a range (never for one number).
    pub fn contains(self, x: f64) -> bool {
        matches!(self, Value::Range([a, b]) if x >= a.min(b) && x <= a.max(b))
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::One(x) => f.write_str(&num(*x)),
            Value::Range([a, b]) => write!(f, "{}–{}", num(*a), num(*b)),
        }
    }
}

pub use ceiling_fmt::figure as num;

/// What a table's row is a point of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Point {
    /// The stack's RPS@SLO (and the figures at it).
    Ceiling,
    /// An open-model shelf at a given offered rate (rows give `rate`).
    Shelf,
    /// A closed-model concurrency level (rows give `connections`).
    Level,
}

/// How the stacks reached PostgreSQL in a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolMode {
    /// Straight to PostgreSQL.
    Direct,
    /// Through PgBouncer in session mode.
    Session,
    /// Through PgBouncer in transaction mode.
    Transaction,
}

/// What a source's memory column measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryKind {
    /// Resident memory of the process (tree): what ceiling samples for every stack.
    #[default]
    Rss,
    /// The runtime's live heap (JVM heap used, Go heap alloc) from its metrics endpoint.
    RuntimeHeap,
    /// Something else (private memory from smaps, a container's usage); compared with RSS and
    /// flagged as different in kind.
    Other,
}

/// One row of a published table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// The stack as the source names it.
    pub label: String,
    /// ceiling's stack for it, when there is one.
    #[serde(default)]
    pub stack: Option<String>,
    /// `point = "shelf"`: the offered rate, RPS.
    #[serde(default)]
    pub rate: Option<f64>,
    /// `point = "level"`: the concurrency.
    #[serde(default)]
    pub connections: Option<u64>,
    /// The source wrote "~" before its figures.
    #[serde(default)]
    pub approx: bool,
    /// Anything a reader must know about this row.
    #[serde(default)]
    pub note: Option<String>,
    /// The plan that reproduces this row, for a summary table whose rows come from different
    /// plans (keep-alive on beside off); the table's `plan` otherwise.
    #[serde(default)]
    pub plan: Option<String>,
    /// The label of another row of the table that this row's first figure is divided by: the
    /// source's "drop" or "overhead" columns, computed here from the rows rather than retyped.
    #[serde(default)]
    pub ratio_to: Option<String>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub rps: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub avg_ms: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub stdev_ms: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub p50_ms: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub p75_ms: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub p90_ms: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub p95_ms: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub p99_ms: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub max_ms: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub errors_pct: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub errors: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub requests: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub cpu_pct: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub cpu_us_per_request: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub mem_mib: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub transfer_mib_s: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub jar_mib: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub instances: Option<Value>,
    #[allow(missing_docs)]
    #[serde(default)]
    pub cost_usd_year: Option<Value>,
}

impl Row {
    /// The published value of `m`, if the row has one.
    pub fn value(&self, m: Metric) -> Option<Value> {
        match m {
            Metric::Rps => self.rps,
            Metric::AvgMs => self.avg_ms,
            Metric::StdevMs => self.stdev_ms,
            Metric::P50Ms => self.p50_ms,
            Metric::P75Ms => self.p75_ms,
            Metric::P90Ms => self.p90_ms,
            Metric::P95Ms => self.p95_ms,
            Metric::P99Ms => self.p99_ms,
            Metric::MaxMs => self.max_ms,
            Metric::ErrorsPct => self.errors_pct,
            Metric::Errors => self.errors,
            Metric::Requests => self.requests,
            Metric::CpuPct => self.cpu_pct,
            Metric::CpuUsPerRequest => self.cpu_us_per_request,
            Metric::MemMib => self.mem_mib,
            Metric::TransferMibS => self.transfer_mib_s,
            Metric::JarMib => self.jar_mib,
            Metric::Instances => self.instances,
            Metric::CostUsdYear => self.cost_usd_year,
        }
    }
    /// Every published (metric, value) of the row, in column order.
    pub fn values(&self) -> Vec<(Metric, Value)> {
        Metric::ALL
            .iter()
            .filter_map(|&m| self.value(m).map(|v| (m, v)))
            .collect()
    }
}

/// One published table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// Unique in the file.
    pub id: String,
    /// As the source titles it (translated).
    pub title: String,
    /// First line of the table in the seed text.
    pub line: usize,
    /// The ceiling plan that reproduces it; `None` when none does yet.
    #[serde(default)]
    pub plan: Option<String>,
    /// What a row is a point of.
    pub point: Point,
    /// Anything a reader must know about the table.
    #[serde(default)]
    pub note: Option<String>,
    /// The one endpoint the table's load hits, when it is one.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Keep-alive, when the source states it for this table.
    #[serde(default)]
    pub keep_alive: Option<bool>,
    /// How the stacks reached PostgreSQL.
    #[serde(default)]
    pub pool_mode: Option<PoolMode>,
    /// Per-application limits, when tables differ by size.
    #[serde(default)]
    pub size: Option<String>,
    /// What each metric column meant in this source.
    #[serde(default)]
    pub columns: BTreeMap<Metric, String>,
    /// Which quantity the `mem_mib` column is, so ceiling sets the same one beside it.
    #[serde(default)]
    pub memory: MemoryKind,
    /// The rows, as published.
    #[serde(default)]
    pub rows: Vec<Row>,
}

impl Table {
    /// The plan that reproduces a row: its own, else the table's.
    pub fn row_plan<'a>(&'a self, r: &'a Row) -> Option<&'a str> {
        r.plan.as_deref().or(self.plan.as_deref())
    }

    /// Every plan the table's rows need, in first-use order; empty when no plan reproduces it.
    /// A table with a row that no plan reproduces needs none (it cannot be reproduced whole).
    pub fn plans(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in &self.rows {
            match self.row_plan(r) {
                Some(p) if !out.contains(&p) => out.push(p),
                Some(_) => {}
                None => return Vec::new(),
            }
        }
        out
    }

    /// The metrics any row of the table has, in column order.
    pub fn metrics(&self) -> Vec<Metric> {
        Metric::ALL
            .iter()
            .copied()
            .filter(|&m| self.rows.iter().any(|r| r.value(m).is_some()))
            .collect()
    }
}

/// Everything one source published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// The plans' `source` (`000`).
    pub source: String,
    /// The source's title (translated).
    pub title: String,
    /// Where and when it was published.
    pub published: String,
    /// The seed text the numbers were read from.
    pub seed: String,
    /// Where the source lives, when the text names it.
    #[serde(default)]
    pub url: Option<String>,
    /// How the source measured, in its own terms.
    #[serde(default)]
    pub conditions: BTreeMap<String, String>,
    /// The source's caveats and the flaws ceiling's reading found.
    #[serde(default)]
    pub caveats: Vec<String>,
    /// The source's latencies are wrk's, which wrk corrects for coordinated omission before
    /// printing: the comparison then sets the same correction of ceiling's histograms beside
    /// them (closed-model runs recorded since it was added), the recorded figure in the note.
    #[serde(default)]
    pub wrk_latencies: bool,
    /// Every published table.
    #[serde(default)]
    pub tables: Vec<Table>,
    /// The file it was read from (set by the loader).
    #[serde(skip)]
    pub file: PathBuf,
}

impl Published {
    /// The tables that runs of these plans reproduce whole: every plan a table needs is among
    /// them (a summary table of two plans needs both runs).
    pub fn tables_of_plans<'a>(
        &'a self,
        plans: &'a [&'a str],
    ) -> impl Iterator<Item = &'a Table> + 'a {
        self.tables.iter().filter(move |t| {
            let need = t.plans();
            !need.is_empty() && need.iter().all(|p| plans.contains(p))
        })
    }
}

/// `plans/published/<source>.toml` for a plan file in `plans/`, or for the current directory's
/// `plans/` when the plan's own directory has no `published/` beside it.
pub fn published_path(plan_file: &Path, source: &str) -> PathBuf {
    let beside = plan_file
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("published")
        .join(format!("{source}.toml"));
    if beside.exists() {
        return beside;
    }
    Path::new("plans")
        .join("published")
        .join(format!("{source}.toml"))
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The line of the first `label = "<label>"` after the table `id = "<table>"`, for errors found
/// after parsing.
fn line_of_row(text: &str, table: &str, label: Option<&str>) -> usize {
    let t = text.find(&format!("id = \"{table}\"")).unwrap_or(0);
    let at = label
        .and_then(|l| text[t..].find(&format!("label = \"{l}\"")).map(|o| t + o))
        .unwrap_or(t);
    line_of(text, at)
}

/// Parses a published-tables file's text; `path` is only used in errors.
pub fn parse_published(text: &str, path: &Path) -> Result<Published, PublishedError> {
    let invalid = |line: usize, msg: String| PublishedError::Invalid {
        path: path.to_path_buf(),
        line,
        msg,
    };
    let mut p: Published = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        invalid(line, e.message().trim().to_string())
    })?;
    p.file = path.to_path_buf();
    let mut ids = std::collections::BTreeSet::new();
    for t in &p.tables {
        let here = |label: Option<&str>| line_of_row(text, &t.id, label);
        if t.id.is_empty()
            || !t
                .id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(invalid(
                here(None),
                format!(
                    "table id `{}`: use lower-case letters, digits and `-`",
                    t.id
                ),
            ));
        }
        if !ids.insert(t.id.clone()) {
            return Err(invalid(
                here(None),
                format!("table id `{}` appears twice", t.id),
            ));
        }
        if t.rows.is_empty() {
            return Err(invalid(here(None), format!("table `{}` has no rows", t.id)));
        }
        for r in &t.rows {
            let at = here(Some(&r.label));
            match t.point {
                Point::Shelf if r.rate.is_none() => {
                    return Err(invalid(at, format!(
                        "table `{}` is a table of shelves (point = \"shelf\"): row `{}` needs `rate`",
                        t.id, r.label
                    )))
                }
                Point::Level if r.connections.is_none() => {
                    return Err(invalid(at, format!(
                        "table `{}` is a table of levels (point = \"level\"): row `{}` needs `connections`",
                        t.id, r.label
                    )))
                }
                _ => {}
            }
            if let Some(base) = &r.ratio_to {
                let b = t.rows.iter().find(|x| &x.label == base);
                let shared =
                    b.is_some_and(|b| r.values().iter().any(|(m, _)| b.value(*m).is_some()));
                if base == &r.label || !shared {
                    return Err(invalid(at, format!(
                        "row `{}` of table `{}`: `ratio_to = \"{base}\"` must name another row of the table with a figure in common",
                        r.label, t.id
                    )));
                }
            }
            if r.values().is_empty() {
                return Err(invalid(
                    at,
                    format!("row `{}` of table `{}` has no figure", r.label, t.id),
                ));
            }
            for (m, v) in r.values() {
                let ok = match v {
                    Value::One(x) => x.is_finite(),
                    Value::Range([a, b]) => a.is_finite() && b.is_finite() && a <= b,
                };
                if !ok {
                    return Err(invalid(at, format!(
                        "row `{}` of table `{}`: `{m}` must be a number or [low, high] with low ≤ high",
                        r.label, t.id
                    )));
                }
            }
        }
    }
    Ok(p)
}

/// Reads and checks a published-tables file.
pub fn load_published(path: &Path) -> Result<Published, PublishedError> {
    let text = std::fs::read_to_string(path).map_err(|err| PublishedError::Read {
        path: path.to_path_buf(),
        err,
    })?;
    parse_published(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
source = "000"
title = "t"
published = "p"
seed = "000_x.txt"
[conditions]
tool = "JMeter"
[[tables]]
id = "mixed"
title = "Mixed"
line = 706
plan = "000-status-mixed"
point = "ceiling"
[tables.columns]
mem_mib = "heap"
[[tables.rows]]
label = "go-pgx"
stack = "go-pgx"
rps = 2915
cpu_pct = [95, 100]
approx = true
"#;

    #[test]
    fn reads_numbers_and_ranges() {
        let p = parse_published(GOOD, Path::new("000.toml")).unwrap();
        let r = &p.tables[0].rows[0];
        assert_eq!(r.rps, Some(Value::One(2915.0)));
        assert_eq!(r.cpu_pct, Some(Value::Range([95.0, 100.0])));
        assert_eq!(r.cpu_pct.unwrap().central(), 97.5);
        assert_eq!(p.tables[0].metrics(), vec![Metric::Rps, Metric::CpuPct]);
        assert_eq!(p.tables[0].columns[&Metric::MemMib], "heap");
        assert_eq!(p.tables_of_plans(&["000-status-mixed"]).count(), 1);
    }

    #[test]
    fn unknown_column_is_an_error_at_its_line() {
        let bad = GOOD.replace("rps = 2915", "rpz = 2915");
        let e = parse_published(&bad, Path::new("000.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("000.toml:19:"), "{e}");
        assert!(e.contains("rpz"), "{e}");
    }

    #[test]
    fn a_shelf_row_without_a_rate_is_named() {
        let bad = GOOD.replace("point = \"ceiling\"", "point = \"shelf\"");
        let e = parse_published(&bad, Path::new("000.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("000.toml:17:"), "{e}");
        assert!(e.contains("needs `rate`"), "{e}");
    }

    #[test]
    fn an_inverted_range_is_refused() {
        let bad = GOOD.replace("[95, 100]", "[100, 95]");
        let e = parse_published(&bad, Path::new("000.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("low ≤ high"), "{e}");
    }

    #[test]
    fn every_metric_key_round_trips() {
        for m in Metric::ALL {
            let s = serde_json::to_string(&m).unwrap();
            assert_eq!(s, format!("\"{}\"", m.key()));
        }
    }
}
