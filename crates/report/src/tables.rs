//! The tables every output shares (terminal, summary.md, report.html, CSV): one source of truth.

use crate::fmt::{cpu, frac_pct, mib, ms_opt, num, pct, rps, us};
use ceiling_analyze::{fmt_ms, LoadModel, ShelfResult, StackAnalysis, Verdict};
use ceiling_records::RunReport;
use serde::Serialize;

/// A rendered table: header, rows of cells, a CSS class per row (`valid`, `failed`,
/// `invalid`, or empty) and footnotes.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Table {
    /// Column headings.
    pub header: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
    /// One class per row.
    pub classes: Vec<String>,
    /// Notes printed under the table.
    pub notes: Vec<String>,
}

impl Table {
    /// Plain text (terminal).
    pub fn to_text(&self) -> String {
        let mut s = crate::fmt::text_table(&self.header, &self.rows);
        for n in &self.notes {
            s.push_str(n);
            s.push('\n');
        }
        s
    }
    /// Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = crate::fmt::md_table(&self.header, &self.rows);
        if !self.notes.is_empty() {
            s.push('\n');
            for n in &self.notes {
                s.push_str(&format!("{n}  \n"));
            }
        }
        s
    }
}

fn h(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Each measured stack's `[fairness]` table as the run recorded it, one row per stack; `None`
/// when the run recorded none (a `--url` service, an older run.json).
pub fn fairness_table(r: &RunReport) -> Option<Table> {
    if r.fairness.is_empty() {
        return None;
    }
    let mut t = Table {
        header: [
            "stack",
            "pool opened at start",
            "keep-alive limit",
            "DB timeout",
            "request timing",
            "JSON",
            "runtime",
            "GC / heap",
            "log level",
        ]
        .map(String::from)
        .to_vec(),
        notes: vec![
            "As each stack's stack.toml declared them for this run; `ceiling verify` measured the pool's opening and the keep-alive limit on the running stack before it was measured (docs/fairness.md).".into(),
        ],
        ..Default::default()
    };
    for (name, f) in &r.fairness {
        t.rows.push(vec![
            name.clone(),
            f.pool_open_at_start.clone(),
            if f.keep_alive_max_requests == 0 {
                "none".into()
            } else {
                f.keep_alive_max_requests.to_string()
            },
            f.db_timeout.clone(),
            f.request_timing.clone(),
            f.json.clone(),
            f.runtime.clone(),
            f.gc_heap.clone(),
            f.log_level.clone(),
        ]);
        t.classes.push(String::new());
    }
    Some(t)
}

/// The plan's `[cost]` table over the run's ceilings (source 002's): instances per service and
/// their yearly price; `None` when the plan has no `[cost]`. A target that cannot be known (the
/// reference stack has no ceiling) is a table with no rows and a note saying why.
pub fn cost_table(r: &RunReport) -> Option<Table> {
    let c = r.plan.cost.as_ref()?;
    let costs = r.costs()?;
    let wl = r.working_load();
    let mut t = Table {
        header: vec![
            "Stack".into(),
            r.metric_name(),
            format!("per instance ({})", frac_pct(wl)),
            "instances per service".into(),
            format!("{}/year, {} services", c.currency, c.services),
        ],
        ..Default::default()
    };
    match costs {
        Err(e) => t.notes.push(format!("Cost not computed: {e}.")),
        Ok(ct) => {
            for row in &ct.rows {
                t.rows.push(vec![
                    row.stack.clone(),
                    rps(row.ceiling_rps),
                    rps(row.per_instance_rps),
                    row.instances
                        .map(|n| n.to_string())
                        .unwrap_or_else(|| "— (no ceiling)".into()),
                    row.yearly.map(money).unwrap_or_else(|| "—".into()),
                ]);
                t.classes.push(String::new());
            }
            t.notes.push(format!(
                "Load per service: {} RPS ({}). Instance: {} vCPU + {} GB at {} {}/vCPU-hour + {} {}/GB-hour = {} {}/year; at least {} instance(s) per service. Prices are the plan's; instances are whole, each loaded to {} of its measured ceiling.",
                rps(ct.target_rps),
                ct.target_from,
                (ct.cpus * 100.0).round() / 100.0,
                (ct.memory_gb * 100.0).round() / 100.0,
                c.cpu_hour,
                c.currency,
                c.gb_hour,
                c.currency,
                money(ct.instance_year),
                c.currency,
                c.min_instances,
                frac_pct(wl)
            ));
        }
    }
    Some(t)
}

/// A price with thousands separators and two decimals (`1,984,140.00`).
fn money(x: f64) -> String {
    let cents = (x * 100.0).round() as i128;
    let (whole, frac) = (cents / 100, (cents % 100).abs());
    let digits = whole.abs().to_string();
    let mut grouped = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    format!("{}{grouped}.{frac:02}", if whole < 0 { "-" } else { "" })
}

/// The shelf whose figures the summary row shows when no shelf passed: the first failed one,
/// else the first judged one.
fn fallback_shelf(a: &StackAnalysis) -> Option<&ShelfResult> {
    a.shelves
        .iter()
        .find(|s| s.verdict == Verdict::Failed)
        .or_else(|| a.shelves.iter().find(|s| s.requests > 0))
}

/// Source 000's table: Stack | RPS@p99≤SLO | p95 | p99 | errors | CPU | RAM, plus CPU µs per
/// request and the recommended working load. One row per stack.
pub fn summary_table(r: &RunReport) -> Table {
    let wl = r.working_load();
    let mut t = Table {
        header: vec![
            "Stack".into(),
            r.metric_name(),
            "p95".into(),
            "p99".into(),
            "errors".into(),
            "CPU (% of a core)".into(),
            "RAM (RSS)".into(),
            "CPU µs/request".into(),
            format!("working load {}", frac_pct(wl)),
        ],
        ..Default::default()
    };
    let mut dagger = false;
    for a in &r.stacks {
        let c = &a.ceiling;
        let mut rps_cell = rps(c.rps);
        if let Some(se) = a.search.as_ref() {
            let from_search = c.label.as_deref() == Some("search");
            let what = match (&se.interval, se.status) {
                (Some(i), _) => format!(
                    "{} (95% CI {}–{}{})",
                    rps(se.ceiling_rps),
                    rps(i.lo),
                    if i.hi.is_finite() {
                        rps(i.hi)
                    } else {
                        "∞".into()
                    },
                    if se.status == ceiling_analyze::SearchStatus::Narrowed {
                        ""
                    } else {
                        ", not narrowed"
                    }
                ),
                (None, st) if st.is_lower_bound() => format!("≥ {}", rps(se.ceiling_rps)),
                // no rate passed: below the lowest that failed
                (None, _) => match se.upper_bound_rps {
                    Some(u) => format!("< {}", rps(u)),
                    None => "0".into(),
                },
            };
            rps_cell = if from_search {
                what
            } else {
                format!("{rps_cell} (search {what})")
            };
        }
        if !c.found {
            let f = fallback_shelf(a);
            let mark = if f.is_some() {
                dagger = true;
                " †"
            } else {
                ""
            };
            t.rows.push(vec![
                a.stack.clone(),
                rps_cell,
                f.map(|s| format!("{} ms{mark}", fmt_ms(s.latency.p95_ms)))
                    .unwrap_or_else(|| "–".into()),
                f.map(|s| format!("{} ms{mark}", fmt_ms(s.latency.p99_ms)))
                    .unwrap_or_else(|| "–".into()),
                f.map(|s| format!("{}{mark}", pct(s.error_rate)))
                    .unwrap_or_else(|| "–".into()),
                f.map(|s| cpu(s.stack.as_ref().map(|w| w.cpu_pct_mean)) + mark)
                    .unwrap_or_else(|| "–".into()),
                f.map(|s| mib(s.stack.as_ref().map(|w| w.rss_mb_mean)) + mark)
                    .unwrap_or_else(|| "–".into()),
                "–".into(),
                // a search that found no rate to pass has a bound, not a load to run at
                if a.search
                    .as_ref()
                    .is_some_and(|s| s.upper_bound_rps.is_some())
                {
                    "–".into()
                } else {
                    "0".into()
                },
            ]);
            t.classes.push("failed".into());
        } else {
            t.rows.push(vec![
                a.stack.clone(),
                rps_cell,
                ms_opt(c.p95_ms),
                ms_opt(c.p99_ms),
                c.error_rate.map(pct).unwrap_or_else(|| "–".into()),
                cpu(c.stack_cpu_pct),
                mib(c.stack_rss_mb),
                us(c.cpu_us_per_request),
                rps(c.working_load_rps),
            ]);
            t.classes.push(if c.bracketed {
                "valid".into()
            } else {
                "unbracketed".into()
            });
        }
    }
    if dagger {
        t.notes
            .push("† no shelf passed (RPS 0): figures of the first failed shelf.".into());
    }
    let unbracketed: Vec<&str> = r
        .stacks
        .iter()
        .filter(|a| a.ceiling.found && !a.ceiling.bracketed)
        .map(|a| a.stack.as_str())
        .collect();
    if !unbracketed.is_empty() {
        t.notes.push(format!(
            "Not bracketed (no later shelf failed; the stack may sustain more): {}.",
            unbracketed.join(", ")
        ));
    }
    t
}

/// The stack's memory as both quantities, and its runtime, per shelf: RSS (what ceiling's RAM
/// column is) beside the runtime's live heap (what source 000 called RAM), GC and threads.
/// `None` when no shelf has a runtime figure (the stack's `/metrics` exposes none of them).
pub fn runtime_table(a: &StackAnalysis) -> Option<Table> {
    if a.shelves.iter().all(|s| s.runtime.is_none()) {
        return None;
    }
    let kind = a
        .shelves
        .iter()
        .filter_map(|s| s.runtime.as_ref()?.heap_kind)
        .next();
    let mut t = Table {
        header: h(&[
            "shelf",
            "stack RSS",
            "heap mean",
            "heap min–max",
            "GCs",
            "GC pause",
            "threads",
            "p99 follows ρ: GC / heap / CPU",
        ]),
        ..Default::default()
    };
    let rho = |x: Option<f64>| x.map(|v| format!("{v:+.2}")).unwrap_or_else(|| "–".into());
    for s in &a.shelves {
        let Some(r) = &s.runtime else { continue };
        t.rows.push(vec![
            s.label.clone(),
            mib(s.stack.as_ref().map(|w| w.rss_mb_mean)),
            mib(r.heap_mb_mean),
            match (r.heap_mb_min, r.heap_mb_max) {
                (Some(lo), Some(hi)) => format!("{}–{}", mib(Some(lo)), mib(Some(hi))),
                _ => "–".into(),
            },
            r.gc_count
                .map(|c| c.to_string())
                .unwrap_or_else(|| "–".into()),
            r.gc_pause_ms_per_s
                .map(|p| format!("{p:.1} ms/s"))
                .unwrap_or_else(|| "–".into()),
            r.threads_mean
                .map(|n| format!("{n:.0}"))
                .unwrap_or_else(|| "–".into()),
            match &r.tail {
                Some(f) => format!("{} / {} / {}", rho(f.gc_pause), rho(f.heap), rho(f.cpu)),
                None => "–".into(),
            },
        ]);
        t.classes.push(s.verdict.to_string());
    }
    t.notes.push(format!(
        "Heap = {} from the stack's /metrics, sampled each second over the kept window (source \
         000's \"RAM\"); RSS = resident memory of the process tree (ceiling's RAM column). \
         ρ = Spearman's rank correlation of each second's p99 with that second's GC pause, live \
         heap and stack CPU over the window (|ρ| < 0.2: no relation; a correlation, not a cause).",
        kind.map(|k| k.label())
            .unwrap_or("the runtime's heap figure")
    ));
    Some(t)
}

/// Every shelf of one stack: offered vs achieved, percentiles, errors, generator, resources,
/// verdict and reasons.
pub fn shelf_table(a: &StackAnalysis) -> Table {
    let mut t = Table {
        header: h(&[
            "shelf",
            "offered",
            "achieved",
            "p50",
            "p90",
            "p95",
            "p99",
            "p99.9",
            "max",
            "errors",
            "gen lag p99",
            "gen CPU",
            "gen µs/req",
            "stack CPU",
            "stack RSS",
            "PG CPU",
            "CPU µs/req",
            "window",
            "verdict",
            "reasons",
        ]),
        ..Default::default()
    };
    for s in &a.shelves {
        let label =
            if a.model == LoadModel::Closed && a.levels.iter().any(|l| l.repetitions.len() > 1) {
                format!("{} #{}", s.label, s.repetition + 1)
            } else {
                s.label.clone()
            };
        t.rows.push(vec![
            label,
            rps(s.offered_rps),
            rps(s.achieved_rps),
            fmt_ms(s.latency.p50_ms),
            fmt_ms(s.latency.p90_ms),
            fmt_ms(s.latency.p95_ms),
            fmt_ms(s.latency.p99_ms),
            fmt_ms(s.latency.p999_ms),
            fmt_ms(s.latency.max_ms),
            pct(s.error_rate),
            fmt_ms(s.lag_p99_ms),
            format!("{:.0}%", s.generator_cpu_mean),
            // what the generator took per request, beside the stack's own (issue 36 item 5)
            us(s.generator_cpu_us_per_request()),
            cpu(s.stack.as_ref().map(|w| w.cpu_pct_mean)),
            mib(s.stack.as_ref().map(|w| w.rss_mb_mean)),
            cpu(s.postgres.as_ref().map(|w| w.cpu_pct_mean)),
            us(s.cpu_us_per_request),
            format!("{} s", s.window.kept_s),
            s.verdict.to_string(),
            s.reasons_text(),
        ]);
        t.classes.push(s.verdict.to_string());
    }
    t.notes.push(
        "Latency in ms from the intended send time; rates in RPS; CPU in % of one core; gen µs/req: the generator's CPU per achieved request, CPU µs/req: the stack's.".into(),
    );
    t
}

/// Per-request percentiles of every shelf.
pub fn request_table(a: &StackAnalysis) -> Table {
    let mut t = Table {
        header: h(&[
            "shelf",
            "request",
            "requests",
            "errors",
            "p50",
            "p90",
            "p95",
            "p99",
            "p99.9",
            "max",
            "service p99",
        ]),
        ..Default::default()
    };
    for s in &a.shelves {
        for q in &s.per_request {
            t.rows.push(vec![
                s.label.clone(),
                q.name.clone(),
                q.requests.to_string(),
                pct(q.error_rate),
                fmt_ms(q.latency.p50_ms),
                fmt_ms(q.latency.p90_ms),
                fmt_ms(q.latency.p95_ms),
                fmt_ms(q.latency.p99_ms),
                fmt_ms(q.latency.p999_ms),
                fmt_ms(q.latency.max_ms),
                fmt_ms(q.service.p99_ms),
            ]);
            t.classes.push(s.verdict.to_string());
        }
    }
    t
}

fn spread(e: &ceiling_analyze::Estimate, f: &dyn Fn(f64) -> String) -> String {
    match e.ci95 {
        Some(h) => format!("{} ± {} ({}–{})", f(e.mean), f(h), f(e.min), f(e.max)),
        None => f(e.mean),
    }
}

/// Closed-model levels: mean ± 95% CI (min–max) over repetitions.
pub fn closed_table(a: &StackAnalysis) -> Table {
    let mut t = Table {
        header: h(&[
            "level",
            "reps",
            "kept",
            "throughput RPS",
            "mean ms",
            "p50 ms",
            "p75 ms",
            "p99 ms",
            "errors",
            "CPU µs/req",
            "stack CPU",
            "RSS MiB",
            "errors in reps",
            "verdict",
        ]),
        ..Default::default()
    };
    for l in &a.levels {
        let Some(s) = l.headline() else {
            t.rows.push(vec![
                l.label.clone(),
                "0".into(),
                "–".into(),
                "–".into(),
                "–".into(),
                "–".into(),
                "–".into(),
                "–".into(),
                "–".into(),
                "–".into(),
                "–".into(),
                "–".into(),
                "–".into(),
                l.verdict.to_string(),
            ]);
            t.classes.push(l.verdict.to_string());
            continue;
        };
        let kept = if l.error_free.is_some() {
            "error-free"
        } else {
            "all (every rep had errors)"
        };
        t.rows.push(vec![
            l.label.clone(),
            l.repetitions.len().to_string(),
            format!("{} ({})", s.n, kept),
            spread(&s.throughput_rps, &rps),
            spread(&s.mean_ms, &|x| fmt_ms(x)),
            spread(&s.p50_ms, &|x| fmt_ms(x)),
            s.p75_ms
                .as_ref()
                .map(|e| spread(e, &|x| fmt_ms(x)))
                .unwrap_or_else(|| "–".into()),
            spread(&s.p99_ms, &|x| fmt_ms(x)),
            spread(&s.error_rate, &|x| format!("{:.2}%", x * 100.0)),
            s.cpu_us_per_request
                .as_ref()
                .map(|e| spread(e, &num))
                .unwrap_or_else(|| "–".into()),
            s.stack_cpu_pct
                .as_ref()
                .map(|e| spread(e, &|x| format!("{x:.0}%")))
                .unwrap_or_else(|| "–".into()),
            s.stack_rss_mb
                .as_ref()
                .map(|e| spread(e, &num))
                .unwrap_or_else(|| "–".into()),
            if l.with_errors.is_empty() {
                "none".into()
            } else {
                format!(
                    "⚑ reps {}",
                    l.with_errors
                        .iter()
                        .map(|r| format!("#{}", r + 1))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            l.verdict.to_string(),
        ]);
        t.classes.push(l.verdict.to_string());
    }
    t.notes.push(
        "mean ± 95% CI (Student t) (min–max) over the kept repetitions; source 003 kept only error-free runs — repetitions with errors are flagged ⚑ and left out when any error-free one exists; \"all\" aggregates are in run.json."
            .into(),
    );
    t
}

/// Capacity-search probes of one stack (empty when it was not searched).
pub fn search_table(a: &StackAnalysis) -> Table {
    let mut t = Table {
        header: h(&[
            "#",
            "kind",
            "rate",
            "achieved",
            "p50",
            "p99",
            "errors",
            "margin",
            "binding",
            "verdict",
            "stack CPU",
            "PG CPU",
            "gen CPU",
            "recovery",
            "reasons",
        ]),
        ..Default::default()
    };
    if let Some(s) = &a.search {
        for (i, p) in s.probes.iter().enumerate() {
            let kind = match p.kind {
                ceiling_analyze::ProbeKind::Probe => "probe",
                ceiling_analyze::ProbeKind::Confirm => "confirm",
                ceiling_analyze::ProbeKind::Check => "check",
            };
            let is_check = p.kind == ceiling_analyze::ProbeKind::Check;
            t.rows.push(vec![
                format!("{}", i + 1),
                kind.into(),
                rps(p.rate),
                rps(p.achieved_rps),
                fmt_ms(p.p50_ms),
                fmt_ms(p.p99_ms),
                pct(p.error_rate),
                if is_check {
                    "–".into()
                } else {
                    ceiling_analyze::fmt_margin(p.margin)
                },
                if is_check {
                    "–".into()
                } else {
                    p.binding().map(|b| b.term.clone()).unwrap_or_default()
                },
                if is_check {
                    "check".into()
                } else {
                    p.verdict.to_string()
                },
                // what each part took, so a box-bound result shows where the cores went
                cpu(p.stack_cpu_pct),
                cpu(p.postgres_cpu_pct),
                cpu(Some(p.generator_cpu_pct)),
                p.recovery
                    .as_ref()
                    .map(|r| {
                        format!(
                            "{} {:.1} s",
                            if r.recovered {
                                "back in"
                            } else {
                                "NOT back after"
                            },
                            r.waited_s
                        )
                    })
                    .unwrap_or_default(),
                p.reasons
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join("; "),
            ]);
            t.classes.push(if is_check {
                "invalid".into()
            } else {
                p.verdict.to_string()
            });
        }
        if let Some(b) = &s.baseline {
            t.notes.push(format!(
                "baseline at {} RPS: p50 {} ms, p99 {} ms; after a failed or invalid probe, low-rate checks run until p99 ≤ {} ms",
                rps(b.rate),
                fmt_ms(b.p50_ms),
                fmt_ms(b.p99_ms),
                fmt_ms(b.threshold_ms())
            ));
        }
        t.notes.push(format!(
            "ceiling {} — {:.1} min; stopped because {}",
            s.describe(),
            s.elapsed_s / 60.0,
            s.stop
        ));
        if let Some(c) = &s.cause {
            t.notes
                .push(format!("why the lowest failing rate failed: {c}"));
        }
        t.notes.push("margin = measured / limit of each SLO term (p99 / limit, errors / max, throughput shortfall / stability); probes at one rate pool into one window, and the ceiling is where the pooled margin crosses 1 — the SLO held over the long run; CPU columns: % of one core over the probe's window (docs/architecture.md)".into());
    }
    t
}
