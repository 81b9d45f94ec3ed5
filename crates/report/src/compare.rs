//! Comparisons rendered for a terminal, as Markdown and as HTML (JSON is their serde form):
//! `ceiling-compare` computes them as data, this module writes them with the formatters and
//! table layouts every other output uses.

use crate::fmt::{figure as num, md_table, text_table};
use crate::svg::esc;
use ceiling_compare::published::Point;
use ceiling_compare::runs::{Diff, Figure, RunComparison, Test};
use ceiling_compare::source::{Cell, RowStatus, SourceComparison, TableComparison};

/// ceiling's figure in a cell: `v ± h` for a symmetric 95% interval; a search whose interval is
/// open above shows it as `v (95% CI lo–∞)`, a bare lower bound as `≥ v`, and a search where no
/// rate passed as `< hi` (below the lowest rate that failed) — never `v ± —`.
fn cell_ours(c: &Cell) -> String {
    let Some(o) = c.ours else {
        return "—".into();
    };
    match (c.ours_range, c.ours_ci) {
        (Some((lo, hi)), _) if hi.is_infinite() && lo >= o => format!("≥ {}", num(o)),
        (Some((lo, hi)), _) if hi.is_infinite() => format!("{} (95% CI {}–∞)", num(o), num(lo)),
        (Some((lo, hi)), _) if lo == 0.0 && o == 0.0 => format!("< {}", num(hi)),
        (_, Some(h)) if h > 0.0 && h.is_finite() => format!("{} ± {}", num(o), num(h)),
        _ => num(o),
    }
}

fn ratio_text(c: &Cell) -> String {
    match (c.ratio, c.published) {
        (_, v) if c.ours.is_some_and(|o| v.contains(o)) => "in range".into(),
        (Some(r), _) => format!("×{}", num(r)),
        _ => String::new(),
    }
}

fn status_text(s: RowStatus) -> &'static str {
    match s {
        RowStatus::Matched => "",
        RowStatus::NoStack => "ceiling has no such stack",
        RowStatus::NotInRun => "stack not in this run",
        RowStatus::PointNotInRun => "this run has no such point",
    }
}

/// Rows of one table as plain cells: header then one line per (row, metric).
fn table_grid(t: &TableComparison) -> (Vec<String>, Vec<Vec<String>>) {
    let head = [
        "stack",
        "point",
        "figure",
        "source",
        "ceiling",
        "ceiling/source",
        "ceiling at",
    ];
    let mut rows = Vec::new();
    for r in &t.rows {
        let name = match &r.stack {
            Some(s) if s != &r.label => format!("{} ({s})", r.label),
            _ => r.label.clone(),
        };
        let at = match (&r.ours_at, r.verdict) {
            (Some(l), Some(v)) => format!("{l}, {}", v.name()),
            (Some(l), None) => l.clone(),
            _ => status_text(r.status).to_string(),
        };
        for (i, c) in r.cells.iter().enumerate() {
            let mut published = c.published.to_string();
            if r.approx {
                published = format!("~{published}");
            }
            let mut ours = cell_ours(c);
            if let Some(k) = &c.ours_is {
                if c.ours.is_some() {
                    ours = format!("{ours} ({k})");
                }
            }
            rows.push(vec![
                if i == 0 { name.clone() } else { String::new() },
                if i == 0 {
                    r.point.clone()
                } else {
                    String::new()
                },
                c.metric.heading().to_string(),
                published,
                ours,
                ratio_text(c),
                if i == 0 { at.clone() } else { String::new() },
            ]);
        }
    }
    (head.iter().map(|s| s.to_string()).collect(), rows)
}

fn order_lines(t: &TableComparison) -> Vec<String> {
    t.order
        .iter()
        .map(|o| {
            let at = if o.point.is_empty() {
                String::new()
            } else {
                format!(" at {}", o.point)
            };
            let pairs = |v: &[(String, String)], sep: &str| {
                v.iter()
                    .map(|(a, b)| format!("{a}{sep}{b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if o.agrees() {
                format!(
                    "order by {}{at} agrees: {}",
                    o.metric.heading(),
                    o.ours.join(" > ")
                )
            } else {
                // not swapped: a pair the source ranks that ceiling measured as a tie
                let (verdict, which) = if o.swapped.is_empty() {
                    (
                        "NOT CONFIRMED",
                        format!(
                            "within 2% or with overlapping intervals, not ranked: {}",
                            pairs(&o.unresolved, " > ")
                        ),
                    )
                } else {
                    ("DIFFERS", format!("swapped: {}", pairs(&o.swapped, "/")))
                };
                format!(
                    "order by {}{at} {verdict} — source: {}; ceiling: {} ({which})",
                    o.metric.heading(),
                    o.published.join(" > "),
                    o.ours.join(" > "),
                )
            }
        })
        .collect()
}

fn column_notes(t: &TableComparison) -> Vec<String> {
    t.columns
        .iter()
        .map(|(m, what)| format!("{}: the source's figure is {what}", m.heading()))
        .collect()
}

fn why_lines(t: &TableComparison) -> Vec<String> {
    t.rows
        .iter()
        .filter_map(|r| {
            Some(format!(
                "{} {}: {}",
                r.stack.as_deref().unwrap_or(&r.label),
                r.ours_at.as_deref().unwrap_or(""),
                r.why.as_deref()?
            ))
        })
        .collect()
}

/// A ratio as the source's "drop" columns read: ×0.15 (÷6.6) for a fall, ×2.3 for a rise.
fn ratio_word(r: Option<f64>) -> String {
    match r {
        None => "—".into(),
        Some(x) if x > 0.0 && x < 1.0 => format!("×{} (÷{})", num(x), num(1.0 / x)),
        Some(x) => format!("×{}", num(x)),
    }
}

fn ratio_lines(t: &TableComparison) -> Vec<String> {
    t.ratios
        .iter()
        .map(|r| {
            format!(
                "{} ÷ {} ({}): source {}, ceiling {}",
                r.label,
                r.base,
                r.metric.heading(),
                ratio_word(r.published),
                ratio_word(r.ours)
            )
        })
        .collect()
}

fn point_word(p: Point) -> &'static str {
    match p {
        Point::Ceiling => "ceilings",
        Point::Shelf => "shelves",
        Point::Level => "concurrency levels",
    }
}

/// The comparison with its source, for a terminal (`markdown = false`) or as Markdown.
pub fn source_text(c: &SourceComparison, markdown: bool) -> String {
    let mut s = String::new();
    let h = |s: &mut String, level: usize, t: &str| {
        if markdown {
            s.push_str(&format!("{} {t}\n\n", "#".repeat(level)));
        } else {
            s.push_str(&format!(
                "{t}\n{}\n",
                if level <= 2 {
                    "=".repeat(t.chars().count().min(100))
                } else {
                    "-".repeat(t.chars().count().min(100))
                }
            ));
        }
    };
    h(
        &mut s,
        2,
        &format!("Run {} beside source {} — {}", c.run_id, c.source, c.title),
    );
    s.push_str(&format!(
        "{}; figures from {} (read from the seed text {}). Plan `{}`.\n\n",
        c.published, c.file, c.seed, c.plan
    ));
    for n in &c.notices {
        s.push_str(&format!("{}{n}\n", if markdown { "> " } else { "! " }));
    }
    if !c.notices.is_empty() {
        s.push('\n');
    }
    for t in &c.tables {
        h(
            &mut s,
            3,
            &format!(
                "{} (source line {}, {})",
                t.title,
                t.line,
                point_word(t.point)
            ),
        );
        let (head, rows) = table_grid(t);
        if markdown {
            s.push_str(&md_table(&head, &rows));
        } else {
            s.push_str(&text_table(&head, &rows));
        }
        s.push('\n');
        let mut notes = Vec::new();
        notes.extend(ratio_lines(t));
        notes.extend(order_lines(t));
        notes.extend(t.differs.iter().cloned());
        notes.extend(column_notes(t));
        notes.extend(why_lines(t).into_iter().map(|w| format!("why: {w}")));
        if let Some(n) = &t.note {
            notes.push(n.clone());
        }
        for n in notes {
            s.push_str(&format!("- {n}\n"));
        }
        s.push('\n');
    }
    if !c.other_tables.is_empty() {
        h(&mut s, 3, "The source's other tables");
        for t in &c.other_tables {
            s.push_str(&format!(
                "- {} (`{}`): {}\n",
                t.title,
                t.id,
                match &t.plan {
                    Some(p) => format!("plan `{p}`"),
                    None => "no plan reproduces it yet".into(),
                }
            ));
        }
        s.push('\n');
    }
    h(&mut s, 3, "Conditions");
    let head: Vec<String> = ["", "source", "this run"]
        .iter()
        .map(|x| x.to_string())
        .collect();
    let rows: Vec<Vec<String>> = c
        .conditions
        .iter()
        .map(|k| {
            vec![
                k.key.clone(),
                k.source.clone().unwrap_or_else(|| "—".into()),
                k.run.clone().unwrap_or_else(|| "—".into()),
            ]
        })
        .collect();
    if markdown {
        s.push_str(&md_table(&head, &rows));
    } else {
        for r in &rows {
            s.push_str(&format!(
                "{}:\n  source:   {}\n  this run: {}\n",
                r[0], r[1], r[2]
            ));
        }
    }
    if !c.caveats.is_empty() {
        s.push('\n');
        h(&mut s, 3, "The source's caveats");
        for k in &c.caveats {
            s.push_str(&format!("- {k}\n"));
        }
    }
    s
}

/// The comparison with its source as an HTML section (self-contained, for report.html).
pub fn source_html(c: &SourceComparison) -> String {
    let mut s = format!(
        "<h2>Beside source {} — {}</h2><p>{}; figures from <code>{}</code> (seed text {}).</p>",
        esc(&c.source),
        esc(&c.title),
        esc(&c.published),
        esc(&c.file),
        esc(&c.seed)
    );
    for n in &c.notices {
        s.push_str(&format!("<p class=\"notice\">{}</p>", esc(n)));
    }
    for t in &c.tables {
        s.push_str(&format!(
            "<h3>{} <small>(source line {}, {})</small></h3><table class=\"compare\"><thead><tr>",
            esc(&t.title),
            t.line,
            point_word(t.point)
        ));
        let (head, rows) = table_grid(t);
        for x in &head {
            s.push_str(&format!("<th>{}</th>", esc(x)));
        }
        s.push_str("</tr></thead><tbody>");
        for r in &rows {
            s.push_str("<tr>");
            for x in r {
                s.push_str(&format!("<td>{}</td>", esc(x)));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table><ul>");
        for n in ratio_lines(t)
            .into_iter()
            .chain(order_lines(t))
            .chain(t.differs.iter().cloned())
            .chain(column_notes(t))
            .chain(why_lines(t).into_iter().map(|w| format!("why: {w}")))
            .chain(t.note.clone())
        {
            s.push_str(&format!("<li>{}</li>", esc(&n)));
        }
        s.push_str("</ul>");
    }
    s.push_str("<h3>Conditions</h3><table class=\"compare\"><thead><tr><th></th><th>source</th><th>this run</th></tr></thead><tbody>");
    for k in &c.conditions {
        s.push_str(&format!(
            "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
            esc(&k.key),
            esc(k.source.as_deref().unwrap_or("—")),
            esc(k.run.as_deref().unwrap_or("—"))
        ));
    }
    s.push_str("</tbody></table>");
    if !c.caveats.is_empty() {
        s.push_str("<h3>The source's caveats</h3><ul>");
        for k in &c.caveats {
            s.push_str(&format!("<li>{}</li>", esc(k)));
        }
        s.push_str("</ul>");
    }
    s
}

fn fig_text(f: &Figure) -> String {
    match f.ci95 {
        Some(h) if h > 0.0 => format!("{} ± {}", num(f.value), num(h)),
        _ => num(f.value),
    }
}

fn test_text(d: &Diff) -> String {
    match d.test {
        Test::Welch { df } => format!("Welch t, n={}/{}, df {:.1}", d.a.n, d.b.n, df),
        Test::Intervals { overlap } => format!(
            "95% intervals{}",
            if overlap { " overlap" } else { " apart" }
        ),
        Test::PairedRounds { rounds, paired } => {
            if paired {
                format!("ratio paired over {rounds} rounds")
            } else {
                format!("ratio, probes drawn unpaired ({rounds} shared rounds)")
            }
        }
        Test::None => "one value each".into(),
    }
}

/// Two runs compared, for a terminal (`markdown = false`) or as Markdown.
pub fn runs_text(c: &RunComparison, markdown: bool) -> String {
    let mut s = String::new();
    if markdown {
        s.push_str(&format!(
            "## B against A (plan `{}`)\n\n- A: {}\n- B: {}\n\n",
            c.plan, c.a, c.b
        ));
    } else {
        s.push_str(&format!(
            "B against A (plan {})\n  A: {}\n  B: {}\n\n",
            c.plan, c.a, c.b
        ));
    }
    for w in &c.warnings {
        s.push_str(&format!("{}{w}\n", if markdown { "> " } else { "! " }));
    }
    if !c.warnings.is_empty() {
        s.push('\n');
    }
    let head: Vec<String> = ["point", "quantity", "A", "B", "B/A", "test", "verdict"]
        .iter()
        .map(|x| x.to_string())
        .collect();
    for st in &c.stacks {
        let title = if st.a_stack == st.b_stack {
            st.a_stack.clone()
        } else {
            format!("A = {}, B = {}", st.a_stack, st.b_stack)
        };
        if markdown {
            s.push_str(&format!("### {title}\n\n"));
        } else {
            s.push_str(&format!("{title}\n"));
        }
        let mut rows = vec![diff_row("ceiling", &st.ceiling)];
        for p in &st.points {
            let verdicts = if p.a_verdict == p.b_verdict {
                p.a_verdict.name().to_string()
            } else {
                format!("{} → {}", p.a_verdict.name(), p.b_verdict.name())
            };
            for (i, d) in p.diffs.iter().enumerate() {
                let label = if i == 0 {
                    format!("{} ({verdicts})", p.point)
                } else {
                    String::new()
                };
                rows.push(diff_row(&label, d));
            }
        }
        if markdown {
            s.push_str(&md_table(&head, &rows));
        } else {
            s.push_str(&text_table(&head, &rows));
        }
        s.push('\n');
    }
    s
}

fn diff_row(point: &str, d: &Diff) -> Vec<String> {
    vec![
        point.to_string(),
        d.quantity.name().to_string(),
        fig_text(&d.a),
        fig_text(&d.b),
        match d.ratio_ci {
            Some((lo, hi)) => format!("{} [{}, {}]", num(d.ratio), num(lo), num(hi)),
            None => num(d.ratio),
        },
        test_text(d),
        d.verdict.clone(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ceiling_compare::published::{Metric, Value};

    fn cell(ours: f64, ci: Option<f64>, range: Option<(f64, f64)>) -> Cell {
        Cell {
            metric: Metric::Rps,
            published: Value::One(3000.0),
            ours: Some(ours),
            ours_ci: ci,
            ours_range: range,
            ratio: None,
            ours_is: None,
        }
    }

    #[test]
    fn a_fall_is_written_with_its_divisor_as_the_sources_drop_columns_read() {
        assert_eq!(ratio_word(Some(0.1)), "×0.100 (÷10)");
        assert_eq!(ratio_word(Some(0.25)), "×0.250 (÷4)");
        assert_eq!(ratio_word(Some(2.3)), "×2.30");
        assert_eq!(ratio_word(None), "—");
    }

    #[test]
    fn an_interval_open_above_is_shown_as_such_never_as_plus_minus_dash() {
        // a narrowed search: symmetric half-width
        assert_eq!(
            cell_ours(&cell(5710.0, Some(120.0), Some((5590.0, 5830.0)))),
            "5710 ± 120"
        );
        // a search whose bootstrap interval stayed open above (the half-width is infinite)
        let open = cell(9249.0, Some(f64::INFINITY), Some((4000.0, f64::INFINITY)));
        assert_eq!(cell_ours(&open), "9249 (95% CI 4000–∞)");
        // a lower bound: the figure is the bottom of its range
        assert_eq!(
            cell_ours(&cell(3919.0, None, Some((3919.0, f64::INFINITY)))),
            "≥ 3919"
        );
        // repetitions without a range
        assert_eq!(cell_ours(&cell(2000.0, None, None)), "2000");
    }
}
