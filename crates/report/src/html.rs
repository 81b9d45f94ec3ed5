//! `report.html`: one self-contained page (inline CSS, inline SVG charts, no scripts, no external
//! resources), rendered with a minijinja template.

use crate::fmt;
use crate::svg::{self, Band, Bar, Chart, HLine, Mark, Series as Line, PALETTE};
use crate::tables::{
    closed_table, cost_table, fairness_table, request_table, runtime_table, search_table,
    shelf_table, summary_table, Table,
};
use ceiling_analyze::{fmt_ms, StackAnalysis, Verdict};
use ceiling_metrics::{Phase, SignalRow, TimeseriesRow};
use ceiling_records::{RunReport, Series, ShelfSpectrum, SignalSeries, Spectra};
use serde::Serialize;

/// Most points drawn per time series; longer series are bucketed (latency: max of the bucket,
/// rates and resources: mean).
pub const MAX_POINTS: usize = 1200;

const VALID: &str = "#059669";
const FAILED: &str = "#dc2626";
const INVALID: &str = "#9ca3af";

fn verdict_color(v: Verdict) -> &'static str {
    match v {
        Verdict::Valid => VALID,
        Verdict::Failed => FAILED,
        Verdict::Invalid => INVALID,
    }
}

fn verdict_mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Valid => "✓",
        Verdict::Failed => "✗",
        Verdict::Invalid => "?",
    }
}

#[derive(Clone, Copy)]
enum Agg {
    Max,
    Mean,
}

/// (t, value) points of one column, bucketed to at most [`MAX_POINTS`].
fn points(
    rows: &[TimeseriesRow],
    f: impl Fn(&TimeseriesRow) -> Option<f64>,
    agg: Agg,
) -> Vec<(f64, f64)> {
    let k = rows.len().div_ceil(MAX_POINTS).max(1);
    rows.chunks(k)
        .map(|c| {
            let vals: Vec<f64> = c.iter().filter_map(&f).filter(|v| v.is_finite()).collect();
            let v = if vals.is_empty() {
                f64::NAN
            } else {
                match agg {
                    Agg::Max => vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    Agg::Mean => vals.iter().sum::<f64>() / vals.len() as f64,
                }
            };
            (c[0].t as f64, v)
        })
        .collect()
}

fn shelf_bands(r: &RunReport, a: &StackAnalysis, rows: &[TimeseriesRow]) -> Vec<Band> {
    let mut bands = Vec::new();
    // Warm-up: from the planned spans, else from the rows' phase column.
    let warm_end = r
        .plan
        .stages
        .iter()
        .filter(|s| s.phase == Phase::Warmup)
        .filter_map(|s| s.end_s)
        .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))))
        .or_else(|| {
            rows.iter()
                .filter(|r| r.phase == "warmup")
                .map(|r| r.t as f64 + 1.0)
                .reduce(f64::max)
        });
    if let Some(e) = warm_end {
        if e > 0.0 {
            bands.push(Band {
                x0: 0.0,
                x1: e,
                fill: "#6b7280".into(),
                opacity: 0.10,
                label: Some("warm-up".into()),
                title: Some("warm-up (not analysed)".into()),
            });
        }
    }
    for s in &a.shelves {
        let col = verdict_color(s.verdict).to_string();
        if let (Some(x0), Some(x1)) = (s.window.stage_start_s, s.window.stage_end_s) {
            bands.push(Band {
                x0,
                x1,
                fill: col.clone(),
                opacity: 0.06,
                label: None,
                title: None,
            });
        }
        if let (Some(x0), Some(x1)) = (s.window.kept_start_s, s.window.kept_end_s) {
            let tip = format!(
                "{} — {}: achieved {} RPS, p99 {} ms{}",
                s.label,
                s.verdict,
                fmt::rps(s.achieved_rps),
                fmt_ms(s.latency.p99_ms),
                if s.reasons.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", s.reasons_text())
                }
            );
            bands.push(Band {
                x0,
                x1,
                fill: col,
                opacity: 0.16,
                label: Some(format!("{} {}", verdict_mark(s.verdict), s.label)),
                title: Some(tip),
            });
        }
    }
    bands
}

fn band_legend() -> Vec<(String, String)> {
    vec![
        ("kept window: valid".into(), VALID.into()),
        ("failed".into(), FAILED.into()),
        ("invalid".into(), INVALID.into()),
    ]
}

fn slo_lines(a: &StackAnalysis) -> Vec<HLine> {
    a.criteria
        .limits
        .iter()
        .filter(|l| l.request.is_none())
        .map(|l| HLine {
            y: l.limit_ms,
            label: format!("SLO {}", l.describe()),
            color: "#b91c1c".into(),
        })
        .collect()
}

/// Freezes and tail seconds found by attribution, as dark bands (drawn over the shelves').
fn why_bands(a: &StackAnalysis) -> Vec<Band> {
    let mut v = Vec::new();
    for s in &a.shelves {
        let Some(at) = &s.attribution else { continue };
        for f in &at.freezes {
            v.push(Band {
                x0: f.start as f64,
                x1: (f.start + f.len) as f64,
                fill: "#111827".into(),
                opacity: 0.28,
                label: None,
                title: Some(format!(
                    "freeze at {} s ({} s): achieved down to {:.0}% of offered, max {} ms{}",
                    f.start,
                    f.len,
                    f.min_achieved_ratio * 100.0,
                    fmt_ms(f.max_ms),
                    at.top()
                        .map(|c| format!(" — likely {}", c.kind.phrase()))
                        .unwrap_or_default()
                )),
            });
        }
    }
    v
}

/// Signals on the latency chart's time axis: PostgreSQL backends by wait, and the stalls
/// (throttling, other processes, the control, GC pauses). Empty without signals.
fn why_charts(a: &StackAnalysis, sig: &[SignalRow], bands: &[Band]) -> Vec<String> {
    if sig.is_empty() {
        return vec![];
    }
    let x_label = "time since run start (s)";
    let pts = |f: &dyn Fn(&SignalRow) -> Option<f64>| -> Vec<(f64, f64)> {
        let k = sig.len().div_ceil(MAX_POINTS).max(1);
        sig.chunks(k)
            .map(|c| {
                let v: Vec<f64> = c.iter().filter_map(f).filter(|x| x.is_finite()).collect();
                let y = if v.is_empty() {
                    f64::NAN
                } else {
                    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                };
                (c[0].t as f64, y)
            })
            .collect()
    };
    let mut out = Vec::new();
    if sig.iter().any(|s| s.pg_samples.is_some()) {
        let mut c = Chart::new(
            format!(
                "{} — PostgreSQL: active backends by what they wait on",
                a.stack
            ),
            x_label,
            "backends (mean per 100 ms sample)",
        );
        c.subtitle = "pg_stat_activity sampled every 100 ms (client backends, state active). Dark bands: freezes found by attribution.".into();
        c.series = vec![
            Line::line("on CPU", PALETTE[2], pts(&|s| s.pg_cpu)),
            Line::line("Lock", PALETTE[1], pts(&|s| s.pg_lock)),
            Line::line("WAL (IO + LWLock)", PALETTE[4], pts(&|s| s.pg_wal)),
            Line::line(
                "data-file & other IO",
                PALETTE[3],
                pts(&|s| Some(s.pg_io_datafileread? + s.pg_io_other.unwrap_or(0.0))),
            ),
            Line::line("other LWLock", PALETTE[5], pts(&|s| s.pg_lwlock)),
            Line::line("Client", PALETTE[7], pts(&|s| s.pg_client)),
        ];
        c.bands = bands.to_vec();
        out.push(svg::render(&c));
    }
    let mut c = Chart::new(
        format!("{} — stalls: stack, host, control, runtime", a.stack),
        x_label,
        "% or ms (see legend)",
    );
    c.subtitle = "Per second: CFS periods throttled (%), CPU of processes outside the run (% of a core), the control's slowest probe (ms, 2000 = missed), GC pause (ms), host iowait (% of a core).".into();
    c.series = vec![
        Line::line(
            "stack throttled (% of periods)",
            PALETTE[1],
            pts(&|s| {
                let p = s.stack_periods? as f64;
                Some(if p > 0.0 {
                    s.stack_throttled_periods? as f64 / p * 100.0
                } else {
                    0.0
                })
            }),
        ),
        Line::line(
            "other processes (% of a core)",
            PALETTE[3],
            pts(&|s| s.other_cpu_pct),
        ),
        Line::line(
            "control slowest (ms)",
            "#111827",
            pts(&|s| s.control_max_ms),
        ),
        Line::line("GC pause (ms)", PALETTE[4], pts(&|s| s.gc_pause_ms)),
        Line::line(
            "iowait (% of a core)",
            PALETTE[5],
            pts(&|s| s.host_iowait_pct),
        ),
    ];
    c.series
        .retain(|l| l.points.iter().any(|p| p.1.is_finite()));
    c.bands = bands.to_vec();
    out.push(svg::render(&c));
    out
}

fn time_charts(r: &RunReport, a: &StackAnalysis, rows: &[TimeseriesRow]) -> Vec<String> {
    let mut bands = shelf_bands(r, a, rows);
    bands.extend(why_bands(a));
    let x_label = "time since run start (s)";
    let mut out = Vec::new();

    let mut c = Chart::new(
        format!("{} — latency over time", a.stack),
        x_label,
        "latency (ms, log scale)",
    );
    c.subtitle = "Per-second percentiles from the intended send time (no coordinated omission). Shaded: shelves, darker = kept window.".into();
    c.y_log = true;
    c.series = vec![
        Line::line(
            "p50",
            PALETTE[2],
            points(rows, |r| Some(r.p50_ms), Agg::Max),
        ),
        Line::line(
            "p90",
            PALETTE[3],
            points(rows, |r| Some(r.p90_ms), Agg::Max),
        ),
        Line::line(
            "p99",
            PALETTE[1],
            points(rows, |r| Some(r.p99_ms), Agg::Max),
        ),
    ];
    c.bands = bands.clone();
    c.band_legend = band_legend();
    c.hlines = slo_lines(a);
    out.push(svg::render(&c));

    let mut c = Chart::new(
        format!("{} — offered vs achieved throughput", a.stack),
        x_label,
        "requests per second",
    );
    c.subtitle =
        "Offered = scheduled (open model) or sent (closed); achieved = completed, any outcome."
            .into();
    let mut off = Line::line(
        "offered (dashed)",
        "#111827",
        points(rows, |r| Some(r.offered_rps as f64), Agg::Mean),
    );
    off.dashed = true;
    off.width = 1.3;
    c.series = vec![
        Line::line(
            "achieved",
            PALETTE[0],
            points(rows, |r| Some(r.achieved_rps as f64), Agg::Mean),
        ),
        Line::line(
            "errors/s",
            PALETTE[1],
            points(
                rows,
                |r| {
                    Some(
                        (r.err_4xx
                            + r.err_5xx
                            + r.err_timeout
                            + r.err_connect
                            + r.err_reset
                            + r.err_other) as f64,
                    )
                },
                Agg::Mean,
            ),
        ),
        off,
    ];
    c.bands = bands.clone();
    c.band_legend = band_legend();
    out.push(svg::render(&c));

    let mut c = Chart::new(
        format!("{} — CPU over time", a.stack),
        x_label,
        "CPU (% of one core)",
    );
    c.subtitle = "Process-tree CPU; 200% = two cores busy.".into();
    c.series = vec![Line::line(
        "stack",
        PALETTE[0],
        points(rows, |r| r.stack_cpu_pct, Agg::Mean),
    )];
    if rows.iter().any(|r| r.postgres_cpu_pct.is_some()) {
        c.series.push(Line::line(
            "postgres",
            PALETTE[4],
            points(rows, |r| r.postgres_cpu_pct, Agg::Mean),
        ));
    }
    if rows.iter().any(|r| r.pgbouncer_cpu_pct.is_some()) {
        c.series.push(Line::line(
            "pgbouncer",
            PALETTE[5],
            points(rows, |r| r.pgbouncer_cpu_pct, Agg::Mean),
        ));
    }
    let mut g = Line::line(
        "generator",
        PALETTE[7],
        points(rows, |r| Some(r.generator_cpu_pct), Agg::Mean),
    );
    g.dashed = true;
    c.series.push(g);
    c.bands = bands.clone();
    c.width = 640.0;
    c.height = 300.0;
    out.push(svg::render(&c));

    let mut c = Chart::new(
        format!("{} — memory over time", a.stack),
        x_label,
        "RSS (MiB)",
    );
    c.subtitle = "Resident set size of the process tree.".into();
    c.series = vec![Line::line(
        "stack",
        PALETTE[0],
        points(rows, |r| r.stack_rss_mb, Agg::Mean),
    )];
    if rows.iter().any(|r| r.postgres_rss_mb.is_some()) {
        c.series.push(Line::line(
            "postgres",
            PALETTE[4],
            points(rows, |r| r.postgres_rss_mb, Agg::Mean),
        ));
    }
    if rows.iter().any(|r| r.pgbouncer_rss_mb.is_some()) {
        c.series.push(Line::line(
            "pgbouncer",
            PALETTE[5],
            points(rows, |r| r.pgbouncer_rss_mb, Agg::Mean),
        ));
    }
    c.bands = bands;
    c.width = 640.0;
    c.height = 300.0;
    out.push(svg::render(&c));
    out
}

fn curve_chart(a: &StackAnalysis) -> String {
    let mut shelves: Vec<_> = a.shelves.iter().filter(|s| s.requests > 0).collect();
    shelves.sort_by(|x, y| {
        x.rate
            .unwrap_or(x.offered_rps)
            .total_cmp(&y.rate.unwrap_or(y.offered_rps))
            .then(x.shelf.cmp(&y.shelf))
    });
    let mut c = Chart::new(
        format!("{} — latency vs throughput", a.stack),
        "achieved throughput (RPS)",
        "latency (ms, log scale)",
    );
    c.subtitle = "One point per shelf; dot fill by verdict (green valid, red failed, grey invalid); probes of a capacity search as small dots.".into();
    c.y_log = true;
    c.y_zero = false;
    c.height = 340.0;
    let fills: Vec<String> = shelves
        .iter()
        .map(|s| verdict_color(s.verdict).to_string())
        .collect();
    let titles: Vec<String> = shelves
        .iter()
        .map(|s| {
            format!(
                "{} ({}): {} RPS, p50 {} / p90 {} / p99 {} ms",
                s.label,
                s.verdict,
                fmt::rps(s.achieved_rps),
                fmt_ms(s.latency.p50_ms),
                fmt_ms(s.latency.p90_ms),
                fmt_ms(s.latency.p99_ms)
            )
        })
        .collect();
    for (name, col, f) in [
        (
            "p50",
            PALETTE[2],
            (|s: &ceiling_analyze::ShelfResult| s.latency.p50_ms)
                as fn(&ceiling_analyze::ShelfResult) -> f64,
        ),
        ("p90", PALETTE[3], |s| s.latency.p90_ms),
        ("p99", PALETTE[1], |s| s.latency.p99_ms),
    ] {
        let mut l = Line::line_dots(
            name,
            col,
            shelves.iter().map(|s| (s.achieved_rps, f(s))).collect(),
        );
        l.dot_fills = fills.clone();
        l.titles = titles.clone();
        c.series.push(l);
    }
    if let Some(se) = &a.search {
        let probes: Vec<_> = se
            .probes
            .iter()
            .filter(|p| p.kind != ceiling_analyze::ProbeKind::Check && p.achieved_rps > 0.0)
            .collect();
        if !probes.is_empty() {
            let mut l = Line::line(
                "probe p99",
                PALETTE[4],
                probes.iter().map(|p| (p.achieved_rps, p.p99_ms)).collect(),
            );
            l.mark = Mark::Dots;
            l.dot_fills = probes
                .iter()
                .map(|p| verdict_color(p.verdict).to_string())
                .collect();
            l.titles = probes.iter().map(|p| p.summary()).collect();
            c.series.push(l);
        }
    }
    c.hlines = slo_lines(a);
    svg::render(&c)
}

fn overview_charts(r: &RunReport) -> Vec<String> {
    let mut out = Vec::new();
    if r.stacks.is_empty() {
        return out;
    }
    let metric = r.stacks[0].metric.clone();
    let bars: Vec<Bar> = r
        .stacks
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let est = a.search.as_ref().and_then(|s| s.interval.as_ref());
            let note = if a.ceiling.found {
                format!(
                    "{} RPS · p99 {}{}{}",
                    fmt::rps(a.ceiling.rps),
                    fmt::ms_opt(a.ceiling.p99_ms),
                    a.ceiling
                        .stack_cpu_pct
                        .map(|c| format!(" · CPU {c:.0}%"))
                        .unwrap_or_default(),
                    if a.ceiling.bracketed {
                        ""
                    } else {
                        " · not bracketed"
                    }
                )
            } else {
                "0 — no shelf passed".to_string()
            };
            Bar {
                label: a.stack.clone(),
                value: a.ceiling.rps,
                range: est.and_then(|i| i.hi.is_finite().then_some((i.lo, i.hi))),
                color: PALETTE[i % PALETTE.len()].into(),
                note,
                marker: a.ceiling.found.then_some(a.ceiling.working_load_rps),
            }
        })
        .collect();
    out.push(svg::bar_chart(
        &format!("Ceiling by stack: {metric}"),
        &format!(
            "Mean throughput of the last valid shelf; dashed tick = working load ({}); whiskers = 95% interval of a capacity search.",
            fmt::frac_pct(r.plan.criteria.working_load)
        ),
        "requests per second",
        &bars,
        960.0,
    ));
    if r.stacks.len() > 1 {
        let mut c = Chart::new(
            "p99 latency vs throughput, all stacks",
            "achieved throughput (RPS)",
            "p99 latency (ms, log scale)",
        );
        c.subtitle =
            "One point per shelf with completed requests, in order of offered load.".into();
        c.y_log = true;
        c.y_zero = false;
        c.height = 360.0;
        for (i, a) in r.stacks.iter().enumerate() {
            let mut sh: Vec<_> = a.shelves.iter().filter(|s| s.requests > 0).collect();
            sh.sort_by(|x, y| {
                x.rate
                    .unwrap_or(x.offered_rps)
                    .total_cmp(&y.rate.unwrap_or(y.offered_rps))
            });
            let mut l = Line::line_dots(
                a.stack.clone(),
                PALETTE[i % PALETTE.len()],
                sh.iter()
                    .map(|s| (s.achieved_rps, s.latency.p99_ms))
                    .collect(),
            );
            l.titles = sh
                .iter()
                .map(|s| {
                    format!(
                        "{} {} ({}): {} RPS, p99 {} ms",
                        a.stack,
                        s.label,
                        s.verdict,
                        fmt::rps(s.achieved_rps),
                        fmt_ms(s.latency.p99_ms)
                    )
                })
                .collect();
            c.series.push(l);
        }
        c.hlines = slo_lines(&r.stacks[0]);
        out.push(svg::render(&c));
    }
    out.extend(resource_charts(r));
    out
}

/// Each shelf's latency percentile spectrum (merged histograms), one line per shelf.
fn spectrum_chart(r: &RunReport, a: &StackAnalysis, v: &[ShelfSpectrum]) -> String {
    let mut c = Chart::new(
        format!("{} — latency percentile spectrum per shelf", a.stack),
        "percentile, in nines (1 = p90, 2 = p99, 3 = p99.9, 4 = p99.99)",
        "latency (ms, log scale)",
    );
    c.subtitle = "Each shelf's kept window, every request name merged from the HdrHistogram log (latency from the intended send time); the last point of a line is the maximum. Dashed lines: the SLO's latency limits.".into();
    c.y_log = true;
    c.y_zero = false;
    c.height = 340.0;
    for (i, s) in v.iter().enumerate() {
        let mut l = Line::line_dots(
            format!("{} ({})", s.label, s.verdict),
            PALETTE[i % PALETTE.len()],
            s.points.clone(),
        );
        l.titles = s
            .points
            .iter()
            .map(|(k, ms)| {
                format!(
                    "{}: p{} = {} ms",
                    s.label,
                    trim_q(100.0 * (1.0 - 10f64.powf(-k))),
                    fmt_ms(*ms)
                )
            })
            .collect();
        c.series.push(l);
    }
    c.hlines = slo_lines(a);
    let _ = r;
    svg::render(&c)
}

fn trim_q(p: f64) -> String {
    let s = if p < 99.0 {
        format!("{p:.1}")
    } else {
        format!("{p:.4}")
    };
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Stack CPU and RSS against offered load, every stack on one chart each.
fn resource_charts(r: &RunReport) -> Vec<String> {
    let mut out = Vec::new();
    type Pick = fn(&ceiling_analyze::ShelfResult) -> Option<f64>;
    let picks: [(&str, &str, Pick, Pick); 2] = [
        (
            "CPU against offered load",
            "CPU (% of one core)",
            |s| s.stack.as_ref().map(|w| w.cpu_pct_mean),
            |s| s.postgres.as_ref().map(|w| w.cpu_pct_mean),
        ),
        (
            "Memory against offered load",
            "RSS (MiB)",
            |s| s.stack.as_ref().map(|w| w.rss_mb_mean),
            |_| None,
        ),
    ];
    for (title, y, stack_of, pg_of) in picks {
        let mut c = Chart::new(title, "offered load (RPS; closed model: connections)", y);
        c.subtitle = "Mean over each shelf's kept window, from the kernel's accounting of the process tree (cgroup); solid = the stack, dashed = PostgreSQL.".into();
        c.height = 300.0;
        let mut any = false;
        for (i, a) in r.stacks.iter().enumerate() {
            let mut sh: Vec<_> = a.shelves.iter().filter(|s| s.requests > 0).collect();
            let x = |s: &ceiling_analyze::ShelfResult| {
                s.rate
                    .or(s.connections.map(|c| c as f64))
                    .unwrap_or(s.offered_rps)
            };
            sh.sort_by(|p, q| x(p).total_cmp(&x(q)));
            let pts: Vec<(f64, f64)> = sh
                .iter()
                .filter_map(|s| Some((x(s), stack_of(s)?)))
                .collect();
            if !pts.is_empty() {
                any = true;
                c.series.push(Line::line_dots(
                    a.stack.clone(),
                    PALETTE[i % PALETTE.len()],
                    pts,
                ));
            }
            let pg: Vec<(f64, f64)> = sh.iter().filter_map(|s| Some((x(s), pg_of(s)?))).collect();
            if !pg.is_empty() {
                let mut l = Line::line_dots(
                    format!("PostgreSQL under {}", a.stack),
                    PALETTE[i % PALETTE.len()],
                    pg,
                );
                l.dashed = true;
                c.series.push(l);
            }
        }
        if any {
            out.push(svg::render(&c));
        }
    }
    out
}

#[derive(Serialize)]
struct StackView {
    why: Vec<String>,
    why_charts: Vec<String>,
    name: String,
    anchor: String,
    summary: String,
    ceiling_class: String,
    warnings: Vec<String>,
    /// A settled warm-up's line (an unsettled one is among the warnings).
    warmup: Option<String>,
    /// The artifact size and the memory at the end, when recorded.
    footprint: Option<String>,
    charts: Vec<String>,
    curve: String,
    spectrum: String,
    shelves: Table,
    requests: Table,
    closed: Option<Table>,
    search: Option<Table>,
    runtime: Option<Table>,
    no_series: bool,
}

#[derive(Serialize)]
struct KV {
    k: String,
    v: String,
}

/// Renders the page. `series` maps stack names to their per-second rows; a stack without rows
/// gets no time charts (its tables and latency–throughput curve are still drawn).
pub fn render_html(r: &RunReport, series: &Series) -> Result<String, String> {
    render_html_with(r, series, &SignalSeries::new())
}

/// [`render_html`] with each stack's signals drawn on the latency chart's time axis.
pub fn render_html_with(
    r: &RunReport,
    series: &Series,
    signals: &SignalSeries,
) -> Result<String, String> {
    render_html_full(r, series, signals, &Spectra::new(), &[])
}

/// A section another crate adds to report.html (e.g. the comparison with the plan's source):
/// a card after the stacks, linked from the navigation bar.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HtmlSection {
    /// Anchor id (`source`).
    pub id: String,
    /// Navigation label.
    pub title: String,
    /// The card's content: trusted, self-contained HTML (no scripts, no external resources).
    pub html: String,
}

/// [`render_html_with`] plus extra sections.
pub fn render_html_full(
    r: &RunReport,
    series: &Series,
    signals: &SignalSeries,
    spectra: &Spectra,
    extras: &[HtmlSection],
) -> Result<String, String> {
    let stacks: Vec<StackView> = r
        .stacks
        .iter()
        .map(|a| {
            let rows = series.get(&a.stack).map(Vec::as_slice).unwrap_or(&[]);
            let sig = signals.get(&a.stack).map(Vec::as_slice).unwrap_or(&[]);
            let mut wb = shelf_bands(r, a, rows);
            wb.extend(why_bands(a));
            StackView {
                why: crate::why_lines(a),
                why_charts: if rows.is_empty() {
                    vec![]
                } else {
                    why_charts(a, sig, &wb)
                },
                name: a.stack.clone(),
                anchor: format!(
                    "stack-{}",
                    a.stack
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                        .collect::<String>()
                ),
                summary: a.ceiling.summary.clone(),
                ceiling_class: if !a.ceiling.found {
                    "failed".into()
                } else if a.ceiling.bracketed {
                    "valid".into()
                } else {
                    "unbracketed".into()
                },
                warnings: a.warnings.iter().map(ToString::to_string).collect(),
                warmup: a
                    .settling
                    .as_ref()
                    .filter(|w| w.settled)
                    .map(|w| w.describe()),
                footprint: a.footprint.as_ref().map(|f| f.describe()),
                charts: if rows.is_empty() {
                    vec![]
                } else {
                    time_charts(r, a, rows)
                },
                curve: curve_chart(a),
                spectrum: spectra
                    .get(&a.stack)
                    .map(|v| spectrum_chart(r, a, v))
                    .unwrap_or_default(),
                shelves: shelf_table(a),
                requests: request_table(a),
                closed: (!a.levels.is_empty()).then(|| closed_table(a)),
                search: a.search.as_ref().map(|_| search_table(a)),
                runtime: runtime_table(a),
                no_series: rows.is_empty(),
            }
        })
        .collect();
    let p = &r.plan;
    let c = &p.criteria;
    let plan_kv = vec![
        KV {
            k: "plan".into(),
            v: format!(
                "{}{}",
                p.name,
                p.source
                    .as_ref()
                    .map(|s| format!(" (source {s})"))
                    .unwrap_or_default()
            ),
        },
        KV {
            k: "description".into(),
            v: p.description.clone(),
        },
        KV {
            k: "model".into(),
            v: format!("{:?}", p.model).to_lowercase()
                + &format!(
                    ", arrivals {}, keep-alive {}, max connections {}, timeout {} ms",
                    p.arrivals,
                    if p.keep_alive { "on" } else { "off" },
                    p.max_connections,
                    p.timeout_ms
                ),
        },
        KV {
            k: "SLO".into(),
            v: c.describe(),
        },
        KV {
            k: "trimming".into(),
            v: format!(
                "first {} s and last {} s of every shelf dropped",
                c.trim_head_s, c.trim_tail_s
            ),
        },
        KV {
            k: "generator-bound when".into(),
            v: format!(
                "schedule lag p99 > {} ms, generator CPU > {}% of a core, or any backlog overflow",
                c.max_schedule_lag_ms, c.max_generator_cpu
            ),
        },
        KV {
            k: "stages".into(),
            v: p.stages
                .iter()
                .map(|s| {
                    format!(
                        "{}{}",
                        if s.phase == Phase::Warmup {
                            "warm-up "
                        } else {
                            ""
                        },
                        s.label
                    )
                })
                .collect::<Vec<_>>()
                .join(" → "),
        },
        KV {
            k: "requests".into(),
            v: p.requests
                .iter()
                .map(|q| format!("{} {} {} ×{}", q.name, q.method, q.path, q.weight))
                .collect::<Vec<_>>()
                .join(" · "),
        },
        KV {
            k: "scaled by".into(),
            v: format!("{}", p.scaled_by),
        },
        KV {
            k: "repetitions".into(),
            v: if p.interleaved_rounds > 0 {
                format!(
                    "{}, each a start of its own with its warm-up, the stacks taking turns (A B A B …)",
                    p.repetitions
                )
            } else {
                p.repetitions.to_string()
            },
        },
    ];
    let mut env = minijinja::Environment::new();
    env.add_template("report.html", TEMPLATE)
        .map_err(|e| e.to_string())?;
    let tmpl = env.get_template("report.html").map_err(|e| e.to_string())?;
    tmpl.render(minijinja::context! {
        run_id => r.run_id,
        started => r.started,
        tool => format!("{} {}", r.tool.name, r.tool.version),
        schema_version => r.schema_version,
        notices => crate::notices(r),
        metric => r.metric_name(),
        method => format!(
            "Source 000's method: for each shelf the first {} s and the last {} s are dropped; a shelf is valid when every latency limit holds ({}), errors < {}, throughput is stable within ±{} (achieved vs offered over the window and in every {} s block), the kept window is ≥ {} s, and the generator kept up. The ceiling is the mean throughput of the last valid shelf; 0 means no shelf passed. CPU and RAM are averaged over the same window; the recommended working load is {} of the ceiling.",
            c.trim_head_s, c.trim_tail_s,
            c.limits.iter().map(|l| l.describe()).collect::<Vec<_>>().join(", "),
            fmt::frac_pct(c.max_error_rate), fmt::frac_pct(c.stability), c.stability_block_s, c.min_window_s, fmt::frac_pct(c.working_load)
        ),
        summary => summary_table(r),
        cost => cost_table(r),
        fairness => fairness_table(r),
        extras => extras,
        overview => overview_charts(r),
        stacks => stacks,
        plan => plan_kv,
        warnings => r.warnings.iter().map(|w| w.message.as_str()).collect::<Vec<_>>(),
        environment => serde_json::to_string_pretty(&r.environment).unwrap_or_default(),
        limits => serde_json::to_string_pretty(&r.limits).unwrap_or_default(),
        limits_note => {
            let n = r.limits_not_applied();
            (!n.is_empty()).then(|| n.join("; "))
        },
    })
    .map_err(|e| e.to_string())
}

const TEMPLATE: &str = r##"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ceiling — {{ run_id }}</title>
<style>
:root { --fg:#111827; --muted:#6b7280; --line:#e5e7eb; --valid:#059669; --failed:#dc2626; --invalid:#6b7280; --accent:#2563eb; }
* { box-sizing: border-box; }
body { margin:0; font: 14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif; color:var(--fg); background:#f3f4f6; }
header { background:#111827; color:#f9fafb; padding:20px 32px; }
header h1 { margin:0; font-size:22px; font-weight:650; letter-spacing:.2px; }
header .meta { color:#9ca3af; font-size:13px; margin-top:4px; }
nav { background:#1f2937; padding:8px 32px; font-size:13px; }
nav a { color:#d1d5db; text-decoration:none; margin-right:18px; }
main { max-width:1440px; margin:0 auto; padding:20px 32px 48px; }
section.card { background:#fff; border:1px solid var(--line); border-radius:10px; padding:18px 22px; margin:18px 0; box-shadow:0 1px 2px rgba(0,0,0,.04); }
h2 { font-size:19px; margin:0 0 10px; }
h3 { font-size:15px; margin:18px 0 8px; color:#374151; }
.notice { background:#fef3c7; border:1px solid #f59e0b; color:#78350f; border-radius:8px; padding:10px 14px; margin:10px 0; font-weight:600; }
.warn { color:#92400e; background:#fffbeb; border-left:3px solid #f59e0b; padding:6px 10px; margin:6px 0; font-size:13px; }
.method { color:#374151; font-size:13px; }
.ceiling { font-size:15px; padding:8px 12px; border-radius:6px; margin:6px 0 12px; border-left:4px solid var(--valid); background:#ecfdf5; }
.ceiling.failed { border-color:var(--failed); background:#fef2f2; }
.ceiling.unbracketed { border-color:#d97706; background:#fffbeb; }
.tablewrap { overflow-x:auto; }
table { border-collapse:collapse; width:100%; font-size:12px; font-variant-numeric: tabular-nums; }
th, td { padding:4px 6px; border-bottom:1px solid var(--line); text-align:right; white-space:nowrap; }
th { background:#f9fafb; color:#374151; font-weight:600; position:sticky; top:0; }
th:first-child, td:first-child { text-align:left; }
td.reasons, td.text { text-align:left; white-space:normal; min-width:180px; color:#374151; }
tr.failed td:first-child { box-shadow: inset 3px 0 0 var(--failed); }
tr.valid td:first-child { box-shadow: inset 3px 0 0 var(--valid); }
tr.invalid td:first-child { box-shadow: inset 3px 0 0 var(--invalid); }
tr.unbracketed td:first-child { box-shadow: inset 3px 0 0 #d97706; }
td:first-child { padding-left:10px; }
.summary table { font-size:14px; }
.summary td:nth-child(2) { font-weight:700; }
.badge { display:inline-block; padding:0 7px; border-radius:10px; font-size:11.5px; font-weight:600; color:#fff; }
.badge.valid { background:var(--valid); } .badge.failed { background:var(--failed); } .badge.invalid { background:var(--invalid); }
.notes { color:var(--muted); font-size:12px; margin:6px 0 0; }
.chart { display:block; margin:10px 0 4px; border:1px solid #f0f1f3; border-radius:6px; }
.grid2 { display:grid; grid-template-columns: 1fr 1fr; gap:12px; }
@media (max-width: 1000px) { .grid2 { grid-template-columns: 1fr; } }
details { margin:10px 0; } summary { cursor:pointer; color:#1f2937; font-weight:600; }
pre { background:#f9fafb; border:1px solid var(--line); border-radius:6px; padding:10px; font-size:12px; overflow-x:auto; }
dl.kv { display:grid; grid-template-columns: 200px 1fr; gap:4px 16px; margin:0; font-size:13px; }
dl.kv dt { color:var(--muted); } dl.kv dd { margin:0; }
footer { color:var(--muted); font-size:12px; text-align:center; padding:18px; }
</style>
</head>
<body>
<header>
  <h1>ceiling — {{ run_id }}</h1>
  <div class="meta">{{ metric }} · {{ tool }} · run.json schema {{ schema_version }}{% if started %} · started {{ started }}{% endif %}</div>
</header>
<nav><a href="#summary">Summary</a>{% for s in stacks %}<a href="#{{ s.anchor }}">{{ s.name }}</a>{% endfor %}{% for x in extras %}<a href="#{{ x.id }}">{{ x.title }}</a>{% endfor %}<a href="#plan">Plan &amp; environment</a></nav>
<main>
{% for n in notices %}<div class="notice">⚠ {{ n }}</div>
{% endfor %}
{% macro table(t, reasons_col) %}
<div class="tablewrap"><table>
<thead><tr>{% for h in t.header %}<th{% if reasons_col and loop.last %} style="text-align:left"{% endif %}>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>
{% for row in t.rows %}{% set cls = t.classes[loop.index0] %}<tr class="{{ cls }}">{% for c in row %}{% if reasons_col and loop.last %}<td class="reasons">{{ c }}</td>{% elif c in ["valid", "failed", "invalid"] %}<td><span class="badge {{ c }}">{{ c }}</span></td>{% else %}<td>{{ c }}</td>{% endif %}{% endfor %}</tr>
{% endfor %}
</tbody></table></div>
{% for n in t.notes %}<p class="notes">{{ n }}</p>{% endfor %}
{% endmacro %}
<section class="card summary" id="summary">
  <h2>Summary</h2>
  <p class="method">{{ method }}</p>
  {{ table(summary, false) }}
  {% if cost %}<h3>Cost</h3>{{ table(cost, false) }}{% endif %}
  {% for c in overview %}{{ c|safe }}{% endfor %}
</section>
{% for s in stacks %}
<section class="card" id="{{ s.anchor }}">
  <h2>{{ s.name }}</h2>
  <div class="ceiling {{ s.ceiling_class }}">{{ s.summary }}</div>
  {% for w in s.warnings %}<div class="warn">⚠ {{ w }}</div>{% endfor %}
  {% if s.warmup %}<p class="notes">{{ s.warmup }}</p>{% endif %}
  {% if s.footprint %}<p class="notes">{{ s.footprint }}</p>{% endif %}
  {% if s.no_series %}<p class="notes">No per-second series for this stack: time charts omitted.</p>{% endif %}
  {% if s.charts %}
  {{ s.charts[0]|safe }}
  {{ s.charts[1]|safe }}
  <div class="grid2">{{ s.charts[2]|safe }}{{ s.charts[3]|safe }}</div>
  {% endif %}
  {% if s.why %}<h3>Why</h3><ul>{% for w in s.why %}<li>{{ w }}</li>{% endfor %}</ul>{% endif %}
  {% for c in s.why_charts %}{{ c|safe }}{% endfor %}
  {{ s.curve|safe }}
  {{ s.spectrum|safe }}
  <h3>Shelves</h3>
  {{ table(s.shelves, true) }}
  {% if s.runtime %}<h3>Memory and runtime</h3>{{ table(s.runtime, false) }}{% endif %}
  {% if s.closed %}<h3>Levels (closed model, over repetitions)</h3>{{ table(s.closed, false) }}{% endif %}
  {% if s.search %}<h3>Capacity search</h3>{{ table(s.search, true) }}{% endif %}
  <details><summary>Per-request percentiles ({{ s.requests.rows|length }} rows)</summary>{{ table(s.requests, false) }}</details>
</section>
{% endfor %}
{% for x in extras %}<section class="card" id="{{ x.id }}">{{ x.html|safe }}</section>
{% endfor %}
<section class="card" id="plan">
  <h2>Plan &amp; environment</h2>
  <dl class="kv">{% for kv in plan %}<dt>{{ kv.k }}</dt><dd>{{ kv.v }}</dd>{% endfor %}</dl>
  {% if limits_note %}<div class="notice">⚠ Limits not applied: {{ limits_note }}</div>{% endif %}
  {% for w in warnings %}<div class="warn">⚠ {{ w }}</div>{% endfor %}
  {% if fairness %}<h3>Fairness: each stack's settings</h3>{{ table(fairness, false) }}{% endif %}
  <details><summary>Resource limits</summary><pre>{{ limits }}</pre></details>
  <details><summary>Environment fingerprint</summary><pre>{{ environment }}</pre></details>
</section>
</main>
<footer>Generated by {{ tool }}. Self-contained: no scripts, no external resources. Latency is measured from the intended send time; histograms are merged, never averaged.</footer>
</body>
</html>
"##;
