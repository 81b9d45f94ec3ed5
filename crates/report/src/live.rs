//! The live view on stderr while a measurement runs, as oha draws one: a progress bar with the
//! second's figures, sparklines of the last seconds and the current stage judged against the SLO
//! (on a terminal); a plain line every few seconds otherwise (a CI log). The lab hands it each
//! recorded second ([`ceiling_metrics::LiveView`]); it only draws.

use ceiling_metrics::{LiveSecond, LiveView, StageVerdict, ViewMaker};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// Seconds the sparklines cover.
const LIVE_SECONDS: usize = 40;

/// Without a terminal, a plain progress line every this many seconds.
const PLAIN_EVERY_S: u32 = 10;

/// The view `ceiling load`, `run` and `search` draw on stderr.
pub struct TerminalView {
    bar: ProgressBar,
    label: String,
    /// stderr is a terminal: the bar is drawn; else plain lines are printed.
    terminal: bool,
    /// The last [`LIVE_SECONDS`] seconds' achieved rate and p99.
    recent: VecDeque<(f64, f64)>,
}

impl TerminalView {
    /// A view for `label`'s measurement, expected to last `total` (`None`: a spinner).
    pub fn new(label: &str, total: Option<Duration>) -> TerminalView {
        let bar = match total {
            Some(t) => ProgressBar::new(t.as_secs().max(1)),
            None => ProgressBar::new_spinner(),
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:.bold} [{elapsed_precise}] {bar:20.cyan/blue} {pos}/{len}s {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(250));
        TerminalView {
            bar,
            label: label.to_string(),
            terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            recent: VecDeque::with_capacity(LIVE_SECONDS),
        }
    }

    /// A maker of these views, for `ceiling_lab::Progress::with_view`.
    pub fn maker() -> ViewMaker {
        Arc::new(|label: &str, total: Option<Duration>| {
            Box::new(TerminalView::new(label, total)) as Box<dyn LiveView>
        })
    }
}

impl LiveView for TerminalView {
    fn second(&mut self, s: &LiveSecond<'_>) {
        let line = second_line(s);
        if self.recent.len() == LIVE_SECONDS {
            self.recent.pop_front();
        }
        self.recent
            .push_back((s.row.achieved_rps as f64, s.row.p99_ms));
        if self.terminal {
            // a second line: the last seconds at a glance — a dip in throughput or a p99 spike
            // shows where the single figures above hide it — and a third: the stage so far
            let max_p99 = self.recent.iter().map(|r| r.1).fold(0.0, f64::max);
            let mut live = format!(
                "{line}\n  last {}s  rps {}  p99 {} (max {max_p99:.1} ms)",
                self.recent.len(),
                sparkline(self.recent.iter().map(|r| r.0)),
                sparkline(self.recent.iter().map(|r| r.1)),
            );
            if let Some(v) = s.stage {
                live.push_str(&format!("\n  {}", verdict_line(v)));
            }
            self.bar.set_position(s.elapsed as u64);
            self.bar.set_message(live);
        } else if s.elapsed.is_multiple_of(PLAIN_EVERY_S) {
            eprintln!("[{}] {}s {line}", self.label, s.elapsed);
        }
    }

    fn finish(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// The second's line: what was offered and done, the latency, and whether the generator itself
/// kept up (its lag and CPU) — a slow generator must never look like a slow stack.
pub fn second_line(s: &LiveSecond<'_>) -> String {
    let row = s.row;
    format!(
        "{} {} | {:>6} → {:>6} rps | p50 {:>7.2} p99 {:>8.2} ms | errors {} | gen lag p99 {:.2} ms, CPU {:.0}%",
        row.phase,
        row.stage,
        row.offered_rps,
        row.achieved_rps,
        row.p50_ms,
        row.p99_ms,
        row.achieved_rps.saturating_sub(row.ok),
        row.lag_p99_ms,
        row.generator_cpu_pct
    )
}

/// `stage so far (12 s): p99 3.2 ms ≤ 350, errors 0.00% < 1%`: the stage's merged figures
/// against the SLO, a ✗ where a limit is broken.
pub fn verdict_line(v: &StageVerdict) -> String {
    let mut parts = Vec::new();
    for &(p, ms, limit) in &v.percentiles {
        parts.push(format!(
            "{} {ms:.1} ms {} {limit}",
            ceiling_plan::pct_name(p),
            if ms <= limit { "≤" } else { "> ✗" }
        ));
    }
    parts.push(format!(
        "errors {:.2}% {} {}%",
        v.error_rate * 100.0,
        if v.error_rate < v.max_error_rate {
            "<"
        } else {
            "≥ ✗"
        },
        v.max_error_rate * 100.0
    ));
    format!("stage so far ({} s): {}", v.seconds, parts.join(", "))
}

/// `values` as a one-character-per-value bar chart (`▁▂▃▄▅▆▇█`), scaled from 0 to their maximum;
/// a value that is not finite is a space.
pub fn sparkline(values: impl IntoIterator<Item = f64>) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let v: Vec<f64> = values.into_iter().collect();
    let max = v
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max);
    v.iter()
        .map(|&x| {
            if !x.is_finite() {
                ' '
            } else if max <= 0.0 {
                BARS[0]
            } else {
                BARS[((x.max(0.0) / max) * 7.0).round().min(7.0) as usize]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparklines_scale_from_zero_to_the_maximum() {
        assert_eq!(sparkline([0.0, 1.0, 2.0, 4.0, 8.0]), "▁▂▃▅█");
        assert_eq!(sparkline([5.0, 5.0]), "██");
        assert_eq!(sparkline([0.0, 0.0]), "▁▁");
        assert_eq!(sparkline([1.0, f64::NAN, 2.0]), "▅ █");
        assert_eq!(sparkline(std::iter::empty()), "");
    }

    #[test]
    fn the_verdict_line_marks_each_broken_limit() {
        let v = StageVerdict {
            seconds: 3,
            percentiles: vec![(99.0, 9.0, 5.0), (50.0, 1.0, 2.0)],
            error_rate: 0.02,
            max_error_rate: 0.01,
        };
        assert_eq!(
            verdict_line(&v),
            "stage so far (3 s): p99 9.0 ms > ✗ 5, p50 1.0 ms ≤ 2, errors 2.00% ≥ ✗ 1%"
        );
        let ok = StageVerdict {
            error_rate: 0.0,
            percentiles: vec![(99.0, 2.0, 5.0)],
            ..v
        };
        assert_eq!(
            verdict_line(&ok),
            "stage so far (3 s): p99 2.0 ms ≤ 5, errors 0.00% < 1%"
        );
    }
}
