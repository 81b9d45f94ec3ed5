//! ceiling's output layer: terminal tables, `summary.md`, `shelves.csv` and a self-contained
//! `report.html` with inline SVG charts, rendered from the records (`ceiling_records`: `run.json`
//! and the files beside it), and `run.json` written beside them; comparisons ([`compare`]) and
//! the claims ledger ([`claims`]) rendered from what `ceiling-compare` computes; the live view
//! ([`live`]). Every figure goes through one set of formatters ([`fmt`], `ceiling-fmt`). Pure
//! rendering plus plain file writes; no processes, no sockets.
//!
//! ```text
//! let mut rep = ceiling_records::RunReport::new(&plan, run_id);
//! rep.stacks.push(analysis);                             // one StackAnalysis per stack
//! print!("{}", render_terminal(&rep));
//! write_all(&dir, &rep, &series)?;                      // run.json, summary.md, shelves.csv, report.html
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod claims;
pub mod compare;
pub mod fmt;
mod html;
pub mod live;
pub mod load;
pub mod pgbench;
pub mod svg;
mod tables;

pub use html::{render_html, render_html_full, render_html_with, HtmlSection};
pub use tables::{
    closed_table, cost_table, fairness_table, request_table, runtime_table, search_table,
    shelf_table, summary_table, Table,
};

use ceiling_analyze::{LoadModel, StackAnalysis};
use ceiling_records::{load_signals, load_spectra, PlanSummary, RunReport, Series};
use std::io;
use std::path::{Path, PathBuf};

fn trim(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// How the generator ran when it was not the default (the ticked engine, real-time scheduling),
/// in one line; `None` for the default engine at normal priority.
pub fn generator_line(p: &PlanSummary) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(t) = p.tick_ms {
        let io = match p.io {
            ceiling_plan::IoBackend::Auto => String::new(),
            io => format!(", I/O {} (asked)", io.as_str()),
        };
        parts.push(format!(
            "the ticked engine, tick {}{io}",
            ceiling_plan::format_duration(std::time::Duration::from_secs_f64(t / 1000.0))
        ));
    }
    if p.realtime {
        parts.push(
            "its threads under SCHED_FIFO (real-time priority 1, ahead of the stack and PostgreSQL)"
                .to_string(),
        );
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// One line per failed or invalid shelf that has an attribution: `hold 3000 failed: p99 714 ms
/// — 2 freezes of ~1 s at 183 s, 220 s; … — likely …`.
pub fn why_lines(a: &StackAnalysis) -> Vec<String> {
    a.shelves
        .iter()
        .filter_map(|s| {
            let at = s.attribution.as_ref()?;
            Some(format!(
                "{} {}: p99 {} ms, errors {} — {}",
                s.label,
                s.verdict,
                ceiling_analyze::fmt_ms(s.latency.p99_ms),
                fmt::frac_pct(s.error_rate),
                at.summary
            ))
        })
        .collect()
}

/// `, 3 repetitions, each a start of its own, the stacks taking turns` for an interleaved run.
fn interleaved_note(r: &RunReport) -> String {
    if r.plan.interleaved_rounds > 0 {
        format!(
            ", {} repetitions, each a start of its own, the stacks taking turns",
            r.plan.interleaved_rounds
        )
    } else {
        String::new()
    }
}

/// Things a reader must see before any number: scaled plan, limits not applied, a part of the
/// stand that died under a stack, generator-bound shelves.
pub fn notices(r: &RunReport) -> Vec<String> {
    let mut v = Vec::new();
    if r.plan.is_scaled() {
        v.push(format!(
            "SCALED RUN: every duration was multiplied by {} (e.g. --quick). Windows are shorter than the plan's; numbers are indicative and not comparable with full-length runs.",
            trim(r.plan.scaled_by)
        ));
    }
    let not_applied = r.limits_not_applied();
    if !not_applied.is_empty() {
        v.push(format!(
            "LIMITS NOT APPLIED: {}. These parts ran without (some of) their planned CPU/memory limits.",
            not_applied.join("; ")
        ));
    }
    for a in &r.stacks {
        if let Some(m) = a.money.as_ref().filter(|m| !m.conserved()) {
            v.push(format!("`{}`: {}", a.stack, m.describe()));
        }
        for e in &a.part_exits {
            v.push(format!(
                "{} EXITED while `{}` was measured: {}. Its shelves from then on are invalid, not failed — the stack was not at fault.",
                e.part.title().to_uppercase(),
                a.stack,
                e.describe()
            ));
        }
    }
    let gb: Vec<String> = r
        .stacks
        .iter()
        .flat_map(|a| {
            a.shelves
                .iter()
                .filter(|s| s.is_generator_bound())
                .map(move |s| format!("{}/{}", a.stack, s.label))
        })
        .collect();
    if !gb.is_empty() {
        v.push(format!(
            "GENERATOR-BOUND shelves (invalid, not failed): {}.",
            gb.join(", ")
        ));
    }
    v
}

/// The terminal report: notices, the summary table, each stack's ceiling sentence and shelf
/// table, and warnings.
pub fn render_terminal(r: &RunReport) -> String {
    let mut s = String::new();
    let notices = notices(r);
    for n in &notices {
        s.push_str(&format!("!! {n}\n"));
    }
    if !notices.is_empty() {
        s.push('\n');
    }
    s.push_str(&format!(
        "{} — plan `{}` ({} model{}), SLO {}\n\n",
        r.run_id,
        r.plan.name,
        model_name(r.plan.model),
        interleaved_note(r),
        r.plan.criteria.describe()
    ));
    if let Some(p) = &r.placement {
        s.push_str(&format!("placement: {}\n\n", p.describe()));
    }
    if let Some(g) = generator_line(&r.plan) {
        s.push_str(&format!("generator: {g}\n\n"));
    }
    if !r.ranking.is_empty() {
        s.push_str(&format!("ranking: {}\n", ranking_line(r)));
        for p in &r.ranking {
            s.push_str(&format!("  {}\n", p.describe()));
        }
        s.push('\n');
    }
    s.push_str(&summary_table(r).to_text());
    if let Some(t) = cost_table(r) {
        s.push('\n');
        s.push_str(&t.to_text());
    }
    for a in &r.stacks {
        s.push_str(&format!("\n{} — {}\n", a.stack, a.ceiling.summary));
        s.push_str(&shelf_table(a).to_text());
        for w in why_lines(a) {
            s.push_str(&format!("why: {w}\n"));
        }
        if let Some(t) = runtime_table(a) {
            s.push('\n');
            s.push_str(&t.to_text());
        }
        if let Some(m) = &a.money {
            s.push_str(&format!("{}\n", m.describe()));
        }
        if let Some(f) = &a.footprint {
            s.push_str(&format!("{}\n", f.describe()));
        }
        // an unsettled warm-up is among the warnings below
        if let Some(w) = a.settling.as_ref().filter(|w| w.settled) {
            s.push_str(&format!("{}\n", w.describe()));
        }
        if !a.levels.is_empty() {
            s.push('\n');
            s.push_str(&closed_table(a).to_text());
        }
        if a.search.is_some() {
            s.push('\n');
            s.push_str(&search_table(a).to_text());
        }
        for w in &a.warnings {
            s.push_str(&format!("warning: {w}\n"));
        }
    }
    for w in &r.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

/// `go-pgx > spring-mvc-jdbc ≈ ktor-jdbc ~ spring-webflux-r2dbc`: the stacks by ceiling, each
/// adjacent pair joined by its verdict (`>` ranked, `≈` tied, `~` not decided, `?` no interval).
pub fn ranking_line(r: &RunReport) -> String {
    let mut s = String::new();
    // the chain's links only: a pair ranked across a `?` is a line of its own below it
    for (k, p) in r.ranking.iter().filter(|p| p.across.is_none()).enumerate() {
        if k == 0 {
            s.push_str(&p.a);
        }
        let op = match p.order {
            ceiling_analyze::Order::Higher => ">",
            ceiling_analyze::Order::Lower => "<",
            ceiling_analyze::Order::Tied => "≈",
            ceiling_analyze::Order::Unresolved => "~",
            ceiling_analyze::Order::NotComparable => "?",
        };
        s.push_str(&format!(" {op} {}", p.b));
    }
    s
}

fn model_name(m: LoadModel) -> &'static str {
    match m {
        LoadModel::Open => "open",
        LoadModel::Closed => "closed",
    }
}

/// `summary.md`: source 000's table and, per stack, the shelf, per-request and closed-model tables.
pub fn render_summary_md(r: &RunReport) -> String {
    let mut s = format!("# ceiling — {}\n\n", r.run_id);
    let notices = notices(r);
    for n in &notices {
        s.push_str(&format!("> **⚠ {n}**\n>\n"));
    }
    if !notices.is_empty() {
        s.push('\n');
    }
    s.push_str(&format!(
        "Plan `{}`{} — {} model{}, SLO **{}**. Method (source 000): per shelf drop the first {} s and last {} s; a shelf is valid when every latency limit holds, errors < {}, throughput stable within ±{} (achieved vs offered, {} s blocks), window ≥ {} s, and the generator kept up. {} = mean throughput of the last valid shelf; 0 = no shelf passed. Working load = {} of it.\n\n",
        r.plan.name,
        r.plan.source.as_ref().map(|x| format!(" (source {x})")).unwrap_or_default(),
        model_name(r.plan.model),
        interleaved_note(r),
        r.plan.slo,
        trim(r.plan.criteria.trim_head_s),
        trim(r.plan.criteria.trim_tail_s),
        fmt::frac_pct(r.plan.criteria.max_error_rate),
        fmt::frac_pct(r.plan.criteria.stability),
        r.plan.criteria.stability_block_s,
        trim(r.plan.criteria.min_window_s),
        r.metric_name(),
        fmt::frac_pct(r.plan.criteria.working_load),
    ));
    if let Some(p) = &r.placement {
        s.push_str(&format!("**Placement:** {}\n\n", p.describe()));
    }
    if !r.ranking.is_empty() {
        s.push_str(&format!("**Ranking:** {}\n\n", ranking_line(r)));
        for p in &r.ranking {
            s.push_str(&format!("- {}\n", p.describe()));
        }
        s.push('\n');
    }
    s.push_str(&summary_table(r).to_markdown());
    if let Some(t) = cost_table(r) {
        s.push_str("\n### Cost\n\n");
        s.push_str(&t.to_markdown());
    }
    for a in &r.stacks {
        s.push_str(&format!("\n## {}\n\n{}\n\n", a.stack, a.ceiling.summary));
        for w in &a.warnings {
            s.push_str(&format!("- ⚠ {w}\n"));
        }
        if !a.warnings.is_empty() {
            s.push('\n');
        }
        s.push_str("### Shelves\n\n");
        s.push_str(&shelf_table(a).to_markdown());
        if let Some(t) = runtime_table(a) {
            s.push_str("\n### Memory and runtime\n\n");
            s.push_str(&t.to_markdown());
        }
        let why = why_lines(a);
        if !why.is_empty() {
            s.push_str("\n### Why\n\n");
            for w in &why {
                s.push_str(&format!("- {w}\n"));
            }
            s.push_str("\n| shelf | cause | score | evidence |\n|---|---|---:|---|\n");
            for sh in &a.shelves {
                for c in sh.attribution.iter().flat_map(|x| &x.causes) {
                    s.push_str(&format!(
                        "| {} | {} | {:.2} | {} |\n",
                        sh.label,
                        c.kind.phrase(),
                        c.score,
                        c.evidence.join("; ").replace('|', "/")
                    ));
                }
            }
        }
        if !a.levels.is_empty() {
            s.push_str("\n### Levels (closed model)\n\n");
            s.push_str(&closed_table(a).to_markdown());
        }
        if a.search.is_some() {
            s.push_str("\n### Capacity search\n\n");
            s.push_str(&search_table(a).to_markdown());
        }
        s.push_str("\n### Per request\n\n");
        s.push_str(&request_table(a).to_markdown());
    }
    if !r.warnings.is_empty() {
        s.push_str("\n## Warnings\n\n");
        for w in &r.warnings {
            s.push_str(&format!("- {w}\n"));
        }
    }
    s
}

/// `shelves.csv`: one row per stack and shelf, raw numbers (ms, RPS, % of a core, MiB).
pub fn render_shelves_csv(r: &RunReport) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let classes = [
        "ok",
        "unexpected",
        "4xx",
        "5xx",
        "timeout",
        "connect",
        "reset",
        "other",
    ];
    let mut header: Vec<String> = [
        "stack",
        "shelf",
        "label",
        "level",
        "repetition",
        "rate",
        "connections",
        "kept_start_s",
        "kept_end_s",
        "kept_s",
        "offered_rps",
        "achieved_rps",
        "ok_rps",
        "requests",
        "errors",
        "error_rate",
        "mean_ms",
        "p50_ms",
        "p75_ms",
        "p90_ms",
        "p95_ms",
        "p99_ms",
        "p999_ms",
        "max_ms",
        "service_p99_ms",
        "lag_p99_ms",
        "generator_cpu_pct",
        "overflow",
        "stack_cpu_pct",
        "stack_rss_mb",
        "postgres_cpu_pct",
        "postgres_rss_mb",
        "pgbouncer_cpu_pct",
        "pgbouncer_rss_mb",
        "cpu_us_per_request",
        "postgres_cpu_us_per_request",
        "stability_window_dev",
        "stability_worst_block_dev",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(classes.iter().map(|c| format!("n_{c}")));
    header.extend(["verdict".to_string(), "reasons".to_string()]);
    w.write_record(&header).expect("in-memory csv");
    let o = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    for a in &r.stacks {
        for s in &a.shelves {
            let mut rec: Vec<String> = vec![
                a.stack.clone(),
                s.shelf.to_string(),
                s.label.clone(),
                s.level.to_string(),
                s.repetition.to_string(),
                o(s.rate),
                s.connections.map(|c| c.to_string()).unwrap_or_default(),
                o(s.window.kept_start_s),
                o(s.window.kept_end_s),
                s.window.kept_s.to_string(),
                s.offered_rps.to_string(),
                s.achieved_rps.to_string(),
                s.ok_rps.to_string(),
                s.requests.to_string(),
                s.errors.to_string(),
                s.error_rate.to_string(),
                s.latency.mean_ms.to_string(),
                s.latency.p50_ms.to_string(),
                s.latency.p75_ms.to_string(),
                s.latency.p90_ms.to_string(),
                s.latency.p95_ms.to_string(),
                s.latency.p99_ms.to_string(),
                s.latency.p999_ms.to_string(),
                s.latency.max_ms.to_string(),
                s.service.p99_ms.to_string(),
                s.lag_p99_ms.to_string(),
                s.generator_cpu_mean.to_string(),
                s.overflow.to_string(),
                o(s.stack.as_ref().map(|w| w.cpu_pct_mean)),
                o(s.stack.as_ref().map(|w| w.rss_mb_mean)),
                o(s.postgres.as_ref().map(|w| w.cpu_pct_mean)),
                o(s.postgres.as_ref().map(|w| w.rss_mb_mean)),
                o(s.pgbouncer.as_ref().map(|w| w.cpu_pct_mean)),
                o(s.pgbouncer.as_ref().map(|w| w.rss_mb_mean)),
                o(s.cpu_us_per_request),
                o(s.postgres_cpu_us_per_request),
                s.stability.window_deviation.to_string(),
                s.stability.worst_block_deviation.to_string(),
            ];
            rec.extend(
                classes
                    .iter()
                    .map(|c| s.outcomes.get(*c).copied().unwrap_or(0).to_string()),
            );
            rec.push(s.verdict.to_string());
            rec.push(s.reasons_text());
            w.write_record(&rec).expect("in-memory csv");
        }
    }
    String::from_utf8(w.into_inner().expect("in-memory csv")).expect("csv of utf-8 strings")
}

/// Writes `run.json`, `summary.md`, `shelves.csv` and `report.html` into `dir` (created if
/// needed); returns the paths written.
///
/// `report.html` draws each stack's signals from `DIR/<stack>/signals.csv` when present.
pub fn write_all(dir: &Path, report: &RunReport, series: &Series) -> io::Result<Vec<PathBuf>> {
    write_all_with(dir, report, series, &[])
}

/// [`write_all`] with extra sections in report.html.
pub fn write_all_with(
    dir: &Path,
    report: &RunReport,
    series: &Series,
    extras: &[HtmlSection],
) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let signals = load_signals(dir, report);
    let spectra = load_spectra(dir, report);
    let files = [
        ("run.json", report.to_json()),
        ("summary.md", render_summary_md(report)),
        ("shelves.csv", render_shelves_csv(report)),
        (
            "report.html",
            html::render_html_full(report, series, &signals, &spectra, extras)
                .map_err(io::Error::other)?,
        ),
    ];
    let mut out = Vec::new();
    for (name, text) in files {
        let p = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &p)?;
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
