//! Small inline-SVG charts (line, dots, shaded bands, horizontal bars), generated as strings.
//! No scripts, no external resources; the SVG carries no namespace URL (inline SVG in HTML5
//! needs none), so a page embedding it references nothing outside itself.

use std::fmt::Write;

/// Colours for series, in order.
pub const PALETTE: [&str; 8] = [
    "#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563",
];

/// Escapes text for SVG/HTML content and attributes.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// A line through the points.
    Line,
    /// A line with a dot on every point.
    LineDots,
    /// Dots only.
    Dots,
}

/// One data series.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// CSS colour.
    pub color: String,
    /// (x, y) points; a non-finite y breaks the line.
    pub points: Vec<(f64, f64)>,
    /// Line, line with dots, or dots.
    pub mark: Mark,
    /// Dashed line.
    pub dashed: bool,
    /// Line width in px.
    pub width: f64,
    /// Optional tooltip per point (dots).
    pub titles: Vec<String>,
    /// Optional fill per dot (e.g. by verdict); empty = the series colour.
    pub dot_fills: Vec<String>,
}

impl Series {
    /// A plain line.
    pub fn line(
        name: impl Into<String>,
        color: impl Into<String>,
        points: Vec<(f64, f64)>,
    ) -> Self {
        Series {
            name: name.into(),
            color: color.into(),
            points,
            mark: Mark::Line,
            dashed: false,
            width: 1.6,
            titles: vec![],
            dot_fills: vec![],
        }
    }
    /// A line with dots.
    pub fn line_dots(
        name: impl Into<String>,
        color: impl Into<String>,
        points: Vec<(f64, f64)>,
    ) -> Self {
        Series {
            mark: Mark::LineDots,
            width: 2.0,
            ..Series::line(name, color, points)
        }
    }
}

/// A shaded x-range (a shelf).
#[derive(Debug, Clone)]
pub struct Band {
    /// Start (data units).
    pub x0: f64,
    /// End.
    pub x1: f64,
    /// Fill colour.
    pub fill: String,
    /// Fill opacity.
    pub opacity: f64,
    /// Label drawn at the top when it fits.
    pub label: Option<String>,
    /// Tooltip.
    pub title: Option<String>,
}

/// A horizontal reference line (an SLO limit).
#[derive(Debug, Clone)]
pub struct HLine {
    /// Value.
    pub y: f64,
    /// Label at the right end.
    pub label: String,
    /// Colour.
    pub color: String,
}

/// An x/y chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// Small text under the title.
    pub subtitle: String,
    /// X axis label with unit.
    pub x_label: String,
    /// Y axis label with unit.
    pub y_label: String,
    /// Width in px (the SVG scales to its container).
    pub width: f64,
    /// Height in px.
    pub height: f64,
    /// Logarithmic y axis.
    pub y_log: bool,
    /// Start the linear y axis at 0.
    pub y_zero: bool,
    /// Fixed x range.
    pub x_range: Option<(f64, f64)>,
    /// Series.
    pub series: Vec<Series>,
    /// Shaded x ranges, drawn under the series.
    pub bands: Vec<Band>,
    /// Reference lines.
    pub hlines: Vec<HLine>,
    /// Extra legend entries for bands: (label, colour).
    pub band_legend: Vec<(String, String)>,
}

impl Chart {
    /// An empty chart with sensible defaults (960×320, linear y from 0).
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Chart {
            title: title.into(),
            subtitle: String::new(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            width: 960.0,
            height: 320.0,
            y_log: false,
            y_zero: true,
            x_range: None,
            series: vec![],
            bands: vec![],
            hlines: vec![],
            band_legend: vec![],
        }
    }
}

/// Tick values 1-2-2.5-5 × 10^k covering `[lo, hi]` with about `n` ticks.
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else if lo == 0.0 {
        (0.0, 1.0)
    } else {
        (lo - lo.abs() * 0.5, hi + hi.abs() * 0.5)
    };
    let raw = (hi - lo) / (n.max(2) - 1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * 0.999)
        .unwrap_or(10.0 * mag);
    let a = (lo / step).floor();
    let b = (hi / step).ceil();
    (a as i64..=b as i64).map(|i| i as f64 * step).collect()
}

/// Short tick label: `1.5k`, `2M`, `0.25`, `40`.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    let t = |x: f64, suf: &str| {
        let s = format!("{x:.2}");
        format!("{}{suf}", s.trim_end_matches('0').trim_end_matches('.'))
    };
    if a >= 1e6 {
        t(v / 1e6, "M")
    } else if a >= 1e4 {
        t(v / 1e3, "k")
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        t(v, "")
    }
}

struct Scale {
    d0: f64,
    d1: f64,
    p0: f64,
    p1: f64,
    log: bool,
}

impl Scale {
    fn map(&self, v: f64) -> f64 {
        let (a, b, x) = if self.log {
            (self.d0.log10(), self.d1.log10(), v.max(1e-12).log10())
        } else {
            (self.d0, self.d1, v)
        };
        if b == a {
            return (self.p0 + self.p1) / 2.0;
        }
        self.p0 + (x - a) / (b - a) * (self.p1 - self.p0)
    }
}

const FONT: &str =
    "font-family=\"system-ui,-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif\"";

fn text_w(s: &str, px: f64) -> f64 {
    s.chars().count() as f64 * px * 0.56
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// Renders the chart as an `<svg>` element.
pub fn render(c: &Chart) -> String {
    let (w, h) = (c.width, c.height);
    // Legend layout (rows of entries under the x label).
    let mut legend: Vec<(String, String, bool)> = c
        .series
        .iter()
        .map(|s| (s.name.clone(), s.color.clone(), false))
        .collect();
    legend.extend(
        c.band_legend
            .iter()
            .map(|(l, col)| (l.clone(), col.clone(), true)),
    );
    let mut rows: Vec<Vec<(String, String, bool, f64)>> = vec![vec![]];
    let mut x = 0.0;
    let avail = w - 90.0;
    for (name, col, band) in legend {
        let ew = 26.0 + text_w(&name, 12.0) + 18.0;
        if x + ew > avail && !rows.last().expect("one row").is_empty() {
            rows.push(vec![]);
            x = 0.0;
        }
        rows.last_mut().expect("one row").push((name, col, band, x));
        x += ew;
    }
    let legend_h = if rows[0].is_empty() {
        0.0
    } else {
        rows.len() as f64 * 18.0 + 4.0
    };
    let (ml, mr, mt) = (70.0, 22.0, if c.subtitle.is_empty() { 34.0 } else { 50.0 });
    let mb = 46.0 + legend_h;
    let (px0, px1, py0, py1) = (ml, w - mr, mt, h - mb);

    // Extents.
    let mut xs: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|v| v.is_finite())
        .collect();
    for b in &c.bands {
        xs.push(b.x0);
        xs.push(b.x1);
    }
    let mut ys: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite() && (!c.y_log || *v > 0.0))
        .collect();
    ys.extend(c.hlines.iter().map(|l| l.y).filter(|v| v.is_finite()));
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" width=\"100%\" preserveAspectRatio=\"xMidYMid meet\" role=\"img\" aria-label=\"{}\" {FONT} font-size=\"12\">",
        esc(&c.title)
    );
    let _ = write!(
        out,
        "<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>"
    );
    let _ = write!(
        out,
        "<text x=\"{ml}\" y=\"20\" font-size=\"15\" font-weight=\"600\" fill=\"#111827\">{}</text>",
        esc(&c.title)
    );
    if !c.subtitle.is_empty() {
        let _ = write!(
            out,
            "<text x=\"{ml}\" y=\"37\" font-size=\"12\" fill=\"#6b7280\">{}</text>",
            esc(&c.subtitle)
        );
    }
    if xs.is_empty() || ys.is_empty() {
        let _ = write!(
            out,
            "<rect x=\"{px0}\" y=\"{py0}\" width=\"{}\" height=\"{}\" fill=\"#f9fafb\" stroke=\"#e5e7eb\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#9ca3af\">no data</text></svg>",
            px1 - px0,
            py1 - py0,
            (px0 + px1) / 2.0,
            (py0 + py1) / 2.0
        );
        return out;
    }
    let (mut x_lo, mut x_hi) = c.x_range.unwrap_or((
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    ));
    if x_hi <= x_lo {
        x_hi = x_lo + 1.0;
        x_lo -= 1.0;
    }
    if c.x_range.is_none() && c.series.iter().any(|s| s.mark != Mark::Line) {
        // Room for the dots at both ends.
        let pad = (x_hi - x_lo) * 0.04;
        x_lo = if x_lo >= 0.0 {
            (x_lo - pad).max(0.0)
        } else {
            x_lo - pad
        };
        x_hi += pad;
    }
    let y_min = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let y_max = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (y_lo, y_hi, y_ticks): (f64, f64, Vec<(f64, bool)>) = if c.y_log {
        let a = y_min.log10().floor() as i32;
        let mut b = y_max.log10().ceil() as i32;
        if b <= a {
            b = a + 1;
        }
        let decades = b - a;
        let mut t = Vec::new();
        for k in a..=b {
            let base = 10f64.powi(k);
            t.push((base, true));
            if k < b {
                for m in [2.0, 5.0] {
                    t.push((m * base, decades <= 3));
                }
            }
        }
        (10f64.powi(a), 10f64.powi(b), t)
    } else {
        let lo = if c.y_zero { y_min.min(0.0) } else { y_min };
        let t = nice_ticks(lo, y_max * if y_max > 0.0 { 1.04 } else { 1.0 }, 6);
        (
            t[0],
            *t.last().expect("ticks"),
            t.into_iter().map(|v| (v, true)).collect(),
        )
    };
    let xs_ = Scale {
        d0: x_lo,
        d1: x_hi,
        p0: px0,
        p1: px1,
        log: false,
    };
    let ys_ = Scale {
        d0: y_lo,
        d1: y_hi,
        p0: py1,
        p1: py0,
        log: c.y_log,
    };
    // A page-unique id: charts on one page differ by title (stack name and chart kind).
    let clip = format!(
        "clip{:016x}",
        fnv(&format!(
            "{}|{}|{w}|{h}|{}|{}",
            c.title,
            c.subtitle,
            rows.len(),
            c.series.len()
        ))
    );
    let _ = write!(out, "<defs><clipPath id=\"{clip}\"><rect x=\"{px0}\" y=\"{py0}\" width=\"{}\" height=\"{}\"/></clipPath></defs>", px1 - px0, py1 - py0);
    let _ = write!(
        out,
        "<rect x=\"{px0}\" y=\"{py0}\" width=\"{}\" height=\"{}\" fill=\"#fcfcfd\"/>",
        px1 - px0,
        py1 - py0
    );
    // Bands.
    let _ = write!(out, "<g clip-path=\"url(#{clip})\">");
    for b in &c.bands {
        let (a, z) = (xs_.map(b.x0).max(px0), xs_.map(b.x1).min(px1));
        if z <= a {
            continue;
        }
        let _ = write!(out, "<rect x=\"{a:.1}\" y=\"{py0}\" width=\"{:.1}\" height=\"{}\" fill=\"{}\" fill-opacity=\"{}\">", z - a, py1 - py0, b.fill, b.opacity);
        if let Some(t) = &b.title {
            let _ = write!(out, "<title>{}</title>", esc(t));
        }
        out.push_str("</rect>");
    }
    out.push_str("</g>");
    // Grid and ticks.
    for (v, labelled) in &y_ticks {
        let y = ys_.map(*v);
        if y < py0 - 0.5 || y > py1 + 0.5 {
            continue;
        }
        let _ = write!(out, "<line x1=\"{px0}\" x2=\"{px1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{}\" stroke-width=\"1\"/>", if *labelled { "#e5e7eb" } else { "#f3f4f6" });
        if *labelled {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#4b5563\">{}</text>",
                px0 - 6.0,
                y + 4.0,
                tick_label(*v)
            );
        }
    }
    let nx = ((px1 - px0) / 90.0).clamp(3.0, 12.0) as usize;
    for v in nice_ticks(x_lo, x_hi, nx) {
        if v < x_lo - 1e-9 || v > x_hi + 1e-9 {
            continue;
        }
        let x = xs_.map(v);
        let _ = write!(
            out,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{py0}\" y2=\"{py1}\" stroke=\"#f0f1f3\"/>"
        );
        let _ = write!(
            out,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{py1}\" y2=\"{}\" stroke=\"#9ca3af\"/>",
            py1 + 4.0
        );
        let _ = write!(
            out,
            "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#4b5563\">{}</text>",
            py1 + 17.0,
            tick_label(v)
        );
    }
    // Band labels (above the series, inside the plot).
    for b in &c.bands {
        if let Some(l) = &b.label {
            let (a, z) = (xs_.map(b.x0).max(px0), xs_.map(b.x1).min(px1));
            if z - a > text_w(l, 11.0) + 6.0 {
                let _ = write!(out, "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#374151\">{}</text>", (a + z) / 2.0, py0 + 13.0, esc(l));
            }
        }
    }
    // Reference lines.
    for l in &c.hlines {
        let y = ys_.map(l.y);
        if y < py0 || y > py1 {
            continue;
        }
        let _ = write!(out, "<line x1=\"{px0}\" x2=\"{px1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>", l.color);
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\" fill=\"{}\">{}</text>",
            px1 - 4.0,
            y - 4.0,
            l.color,
            esc(&l.label)
        );
    }
    // Series.
    let _ = write!(out, "<g clip-path=\"url(#{clip})\">");
    for s in &c.series {
        if s.mark != Mark::Dots {
            let mut d = String::new();
            let mut pen = false;
            for &(x, y) in &s.points {
                if !x.is_finite() || !y.is_finite() || (c.y_log && y <= 0.0) {
                    pen = false;
                    continue;
                }
                let _ = write!(
                    d,
                    "{}{:.1},{:.1}",
                    if pen { "L" } else { "M" },
                    xs_.map(x),
                    ys_.map(y)
                );
                pen = true;
            }
            if !d.is_empty() {
                let _ = write!(
                    out,
                    "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\" stroke-linecap=\"round\"{}/>",
                    s.color,
                    s.width,
                    if s.dashed { " stroke-dasharray=\"5 4\"" } else { "" }
                );
            }
        }
        if s.mark != Mark::Line {
            for (i, &(x, y)) in s.points.iter().enumerate() {
                if !x.is_finite() || !y.is_finite() || (c.y_log && y <= 0.0) {
                    continue;
                }
                let fill = s
                    .dot_fills
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| s.color.clone());
                let _ = write!(out, "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{fill}\" stroke=\"{}\" stroke-width=\"1.5\">", xs_.map(x), ys_.map(y), s.color);
                if let Some(t) = s.titles.get(i) {
                    let _ = write!(out, "<title>{}</title>", esc(t));
                }
                out.push_str("</circle>");
            }
        }
    }
    out.push_str("</g>");
    // Frame and axis labels.
    let _ = write!(out, "<rect x=\"{px0}\" y=\"{py0}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#d1d5db\"/>", px1 - px0, py1 - py0);
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#374151\">{}</text>",
        (px0 + px1) / 2.0,
        py1 + 34.0,
        esc(&c.x_label)
    );
    let _ = write!(
        out,
        "<text transform=\"translate(16,{:.1}) rotate(-90)\" text-anchor=\"middle\" fill=\"#374151\">{}</text>",
        (py0 + py1) / 2.0,
        esc(&c.y_label)
    );
    // Legend.
    for (ri, row) in rows.iter().enumerate() {
        let y = py1 + 52.0 + ri as f64 * 18.0;
        for (name, col, band, x) in row {
            let lx = px0 + x;
            if *band {
                let _ = write!(out, "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"18\" height=\"11\" fill=\"{col}\" fill-opacity=\"0.35\" stroke=\"{col}\" stroke-opacity=\"0.6\"/>", y - 9.0);
            } else {
                let _ = write!(out, "<line x1=\"{lx:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{col}\" stroke-width=\"3\" stroke-linecap=\"round\"/>", lx + 18.0, y - 4.0, y - 4.0);
            }
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{y:.1}\" fill=\"#374151\">{}</text>",
                lx + 24.0,
                esc(name)
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// One bar of a horizontal bar chart.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Category label (left).
    pub label: String,
    /// Value.
    pub value: f64,
    /// Error bar (low, high), e.g. a 95% CI.
    pub range: Option<(f64, f64)>,
    /// Bar colour.
    pub color: String,
    /// Text after the bar (value and notes).
    pub note: String,
    /// Optional marker (e.g. the working load) drawn as a tick on the bar.
    pub marker: Option<f64>,
}

/// Renders a horizontal bar chart.
pub fn bar_chart(title: &str, subtitle: &str, x_label: &str, bars: &[Bar], width: f64) -> String {
    let label_w = bars
        .iter()
        .map(|b| text_w(&b.label, 13.0))
        .fold(60.0, f64::max)
        + 20.0;
    let note_w = bars
        .iter()
        .map(|b| text_w(&b.note, 12.0))
        .fold(40.0, f64::max)
        + 14.0;
    let row = 34.0;
    let mt = if subtitle.is_empty() { 36.0 } else { 52.0 };
    let h = mt + bars.len().max(1) as f64 * row + 44.0;
    let (px0, px1) = (label_w, (width - note_w).max(label_w + 100.0));
    let max = bars
        .iter()
        .map(|b| b.range.map(|r| r.1).unwrap_or(b.value).max(b.value))
        .fold(0.0, f64::max);
    let ticks = nice_ticks(0.0, if max > 0.0 { max } else { 1.0 }, 6);
    let hi = *ticks.last().expect("ticks");
    let sx = |v: f64| px0 + v / hi * (px1 - px0);
    let mut out = String::new();
    let _ = write!(out, "<svg class=\"chart\" viewBox=\"0 0 {width} {h}\" width=\"100%\" role=\"img\" aria-label=\"{}\" {FONT} font-size=\"12\">", esc(title));
    let _ = write!(
        out,
        "<rect width=\"{width}\" height=\"{h}\" fill=\"#ffffff\"/>"
    );
    let _ = write!(
        out,
        "<text x=\"12\" y=\"20\" font-size=\"15\" font-weight=\"600\" fill=\"#111827\">{}</text>",
        esc(title)
    );
    if !subtitle.is_empty() {
        let _ = write!(
            out,
            "<text x=\"12\" y=\"37\" fill=\"#6b7280\">{}</text>",
            esc(subtitle)
        );
    }
    let py1 = mt + bars.len().max(1) as f64 * row;
    for t in &ticks {
        let x = sx(*t);
        let _ = write!(
            out,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{mt}\" y2=\"{py1}\" stroke=\"#eef0f3\"/>"
        );
        let _ = write!(
            out,
            "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#4b5563\">{}</text>",
            py1 + 16.0,
            tick_label(*t)
        );
    }
    for (i, b) in bars.iter().enumerate() {
        let y = mt + i as f64 * row + 6.0;
        let bh = row - 12.0;
        let _ = write!(out, "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"13\" fill=\"#111827\">{}</text>", px0 - 8.0, y + bh / 2.0 + 4.5, esc(&b.label));
        let bw = (sx(b.value) - px0).max(if b.value > 0.0 { 1.0 } else { 0.0 });
        let _ = write!(out, "<rect x=\"{px0}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{bh}\" rx=\"3\" fill=\"{}\"><title>{}: {}</title></rect>", b.color, esc(&b.label), esc(&b.note));
        if let Some(m) = b.marker {
            let x = sx(m);
            let _ = write!(out, "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ffffff\" stroke-width=\"2\" stroke-dasharray=\"3 2\"/>", y + 1.0, y + bh - 1.0);
        }
        if let Some((lo, hi_)) = b.range {
            let (a, z, cy) = (sx(lo), sx(hi_), y + bh / 2.0);
            let _ = write!(out, "<path d=\"M{a:.1},{cy:.1}L{z:.1},{cy:.1}M{a:.1},{:.1}L{a:.1},{:.1}M{z:.1},{:.1}L{z:.1},{:.1}\" stroke=\"#111827\" stroke-width=\"1.5\" fill=\"none\"/>", cy - 6.0, cy + 6.0, cy - 6.0, cy + 6.0);
        }
        let nx = sx(b.range.map(|r| r.1).unwrap_or(b.value).max(b.value)) + 8.0;
        let _ = write!(
            out,
            "<text x=\"{nx:.1}\" y=\"{:.1}\" fill=\"#111827\">{}</text>",
            y + bh / 2.0 + 4.0,
            esc(&b.note)
        );
    }
    let _ = write!(
        out,
        "<line x1=\"{px0}\" x2=\"{px0}\" y1=\"{mt}\" y2=\"{py1}\" stroke=\"#9ca3af\"/>"
    );
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#374151\">{}</text>",
        (px0 + px1) / 2.0,
        py1 + 34.0,
        esc(x_label)
    );
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn ticks_are_nice() {
        assert_eq!(
            nice_ticks(0.0, 3000.0, 6),
            vec![0.0, 1000.0, 2000.0, 3000.0]
        );
        assert_eq!(
            nice_ticks(0.0, 97.0, 6),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(tick_label(1500.0), "1500");
        assert_eq!(tick_label(15000.0), "15k");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(2_000_000.0), "2M");
    }
    #[test]
    fn renders_empty_and_full() {
        let mut c = Chart::new("t <x>", "time (s)", "ms");
        assert!(render(&c).contains("no data"));
        c.series.push(Series::line(
            "p99",
            PALETTE[0],
            vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, 3.0)],
        ));
        c.y_log = true;
        let s = render(&c);
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("t &lt;x&gt;"));
        assert_eq!(s.matches("<path").count(), 1);
    }
}
