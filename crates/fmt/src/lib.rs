//! How ceiling writes figures and tables, one set for every output: the terminal tables and
//! summary.md (`ceiling-report`), comparisons and the claims ledger (rendered there too), and the
//! sentences the analysis writes into its causes and warnings (`ceiling-analyze`). A figure is
//! written the same way wherever it appears, so a reader can set two outputs side by side.
//!
//! A missing value is `–` (en dash) in a report's cells and `—` (em dash) in a comparison's,
//! where the long dash marks "the source gave none"; each formatter says which it writes.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// Milliseconds with sensible precision: `0.412`, `35.2`, `411`; `–` when not finite.
pub fn fmt_ms(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// An SLO margin (measured over limit): `0.12`, `3.4`, `1.2e3`; `∞` when unbounded.
pub fn margin(m: f64) -> String {
    if !m.is_finite() {
        "∞".into()
    } else if m >= 1000.0 {
        format!("{m:.1e}")
    } else if m >= 10.0 {
        format!("{m:.0}")
    } else {
        format!("{m:.2}")
    }
}

/// A share as a whole percentage, always rounded: `87%` (the analysis's sentences).
pub fn whole_pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// Requests per second: `2915`, `12.5`, `0`.
pub fn rps(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x == 0.0 {
        "0".into()
    } else if x.abs() < 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// An error fraction as a percentage: `0.24%`, `0%`, `12.3%`.
pub fn pct(frac: f64) -> String {
    let p = frac * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p < 0.01 {
        "<0.01%".into()
    } else if p < 10.0 {
        format!("{p:.2}%")
    } else {
        format!("{p:.1}%")
    }
}

/// A change or a half-width as a percentage, whole from 10%: `12%`, `4.5%`, `-3.0%`.
pub fn change(x: f64) -> String {
    let p = x * 100.0;
    if p.abs() >= 10.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// A figure as a reader of a comparison wants it (published and measured side by side):
/// integers without decimals, small values with 2–3 significant digits.
pub fn figure(x: f64) -> String {
    if !x.is_finite() {
        // a missing figure in a comparison's table (its cells use the long dash)
        "—".into()
    } else if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        // 3–4 significant digits, as milliseconds are written
        fmt_ms(x)
    }
}

/// CPU in % of one core: `190%`.
pub fn cpu(p: Option<f64>) -> String {
    p.map(|p| format!("{p:.0}%")).unwrap_or_else(|| "–".into())
}

/// MiB: `70 MiB`.
pub fn mib(x: Option<f64>) -> String {
    x.map(|x| {
        if x < 10.0 {
            format!("{x:.1} MiB")
        } else {
            format!("{x:.0} MiB")
        }
    })
    .unwrap_or_else(|| "–".into())
}

/// Optional milliseconds: `35.2 ms`.
pub fn ms_opt(x: Option<f64>) -> String {
    x.map(|x| format!("{} ms", fmt_ms(x)))
        .unwrap_or_else(|| "–".into())
}

/// Microseconds: `1520 µs`.
pub fn us(x: Option<f64>) -> String {
    x.map(|x| {
        if x < 10.0 {
            format!("{x:.1} µs")
        } else {
            format!("{x:.0} µs")
        }
    })
    .unwrap_or_else(|| "–".into())
}

/// Plain number with a sensible number of decimals.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A fraction as a whole percentage: `70%`.
pub fn frac_pct(f: f64) -> String {
    let p = f * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// Aligns rows into a plain-text table with a header rule; numeric-looking cells right-aligned.
pub fn text_table(header: &[String], rows: &[Vec<String>]) -> String {
    let n = header.len();
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let numeric = |s: &str| {
        s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit() || c == '<' || c == '–')
    };
    let right: Vec<bool> = (0..n)
        .map(|i| {
            i > 0
                && rows
                    .iter()
                    .all(|r| r.get(i).map(|c| numeric(c)).unwrap_or(true))
        })
        .collect();
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate().take(n) {
            let pad = w[i] - c.chars().count();
            if i > 0 {
                s.push_str("  ");
            }
            if right[i] {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                if i + 1 < n {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(header);
    out.push('\n');
    out.push_str(
        &w.iter()
            .map(|k| "─".repeat(*k))
            .collect::<Vec<_>>()
            .join("  "),
    );
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}

/// A GitHub-flavoured Markdown table (pipes in cells escaped).
pub fn md_table(header: &[String], rows: &[Vec<String>]) -> String {
    let esc = |s: &String| s.replace('|', "\\|");
    let numeric = |s: &str| {
        s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit() || c == '<' || c == '–')
    };
    let mut out = format!(
        "| {} |\n",
        header.iter().map(esc).collect::<Vec<_>>().join(" | ")
    );
    let align = |i: usize| {
        i > 0
            && rows
                .iter()
                .all(|r| r.get(i).map(|c| numeric(c)).unwrap_or(true))
    };
    out.push_str(&format!(
        "|{}\n",
        (0..header.len())
            .map(|i| if align(i) { "---:|" } else { "---|" })
            .collect::<String>()
    ));
    for r in rows {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(esc).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_their_precision_and_say_when_missing() {
        assert_eq!(fmt_ms(0.4123), "0.412");
        assert_eq!(fmt_ms(35.24), "35.2");
        assert_eq!(fmt_ms(411.4), "411");
        assert_eq!(fmt_ms(f64::NAN), "–");
        assert_eq!(rps(2915.4), "2915");
        assert_eq!(rps(0.0), "0");
        assert_eq!(pct(0.0024), "0.24%");
        assert_eq!(pct(0.00001), "<0.01%");
        assert_eq!(change(0.123), "12%");
        assert_eq!(change(-0.03), "-3.0%");
        assert_eq!(figure(3000.0), "3000");
        assert_eq!(
            figure(f64::NAN),
            "—",
            "a comparison's missing figure is the long dash"
        );
        assert_eq!(margin(f64::INFINITY), "∞");
        assert_eq!(margin(1234.0), "1.2e3");
        assert_eq!(whole_pct(0.874), "87%");
        assert_eq!(frac_pct(0.7), "70%");
    }

    #[test]
    fn tables_align_numbers_right_and_escape_pipes() {
        let head = vec!["stack".to_string(), "rps".to_string()];
        let rows = vec![
            vec!["go-pgx".to_string(), "15866".to_string()],
            vec!["a|b".to_string(), "7".to_string()],
        ];
        let t = text_table(&head, &rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[2], "go-pgx  15866");
        assert_eq!(lines[3], "a|b         7");
        let md = md_table(&head, &rows);
        assert!(md.contains("|---|---:|"), "{md}");
        assert!(md.contains("| a\\|b | 7 |"), "{md}");
    }
}
