//! Writing a run's per-second records as they arrive: the `.hlog` (one tag per request name),
//! `timeseries.csv`, and the live one-line progress view. Every second is flushed, so a crash
//! loses at most the second in flight.

use ceiling_metrics::{
    HlogWriter, ResourceSample, Second, SignalRow, SignalsWriter, TimeseriesRow, TimeseriesWriter,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Files and progress for one measured target.
pub struct Recorder {
    hlog: Option<HlogWriter<BufWriter<File>>>,
    csv: Option<TimeseriesWriter<BufWriter<File>>>,
    tags: Vec<String>,
    bar: Option<ProgressBar>,
    /// Rows kept in memory (small: scalars only) for reports.
    pub rows: Vec<TimeseriesRow>,
    /// Resource samples waiting to be joined to their second.
    pending_resources: Vec<ResourceSample>,
    /// Every resource sample of the run.
    pub resources: Vec<ResourceSample>,
    /// First I/O error, reported at the end instead of aborting the run.
    pub io_error: Option<String>,
    /// `signals.csv` path (next to timeseries.csv), created with its first row.
    signals_path: Option<std::path::PathBuf>,
    signals_csv: Option<SignalsWriter<BufWriter<File>>>,
    /// Signal rows of the run (one per second; small), for attribution.
    pub signal_rows: Vec<SignalRow>,
    /// Continuing the files of an earlier round: they are appended to, headers kept once.
    append: bool,
    /// The clock's offset (seconds) of the seconds this recorder is given, for the progress bar.
    bar_offset: u32,
    /// What is measured (a stack, `load`), for the live metrics ([`crate::live`]).
    label: String,
    /// stderr is a terminal: the progress bar is drawn; else plain lines are printed.
    terminal: bool,
    /// The last [`LIVE_SECONDS`] seconds' achieved rate and p99, for the live view's sparklines.
    recent: std::collections::VecDeque<(f64, f64)>,
    /// The SLO the live view judges the current stage against ([`Recorder::with_slo`]).
    slo: Option<LiveSlo>,
    /// The current stage so far: its key (phase, index), latency merged over every request name
    /// and every second of it, requests and errors.
    stage_so_far: Option<StageSoFar>,
}

/// What the live view checks a stage against: overall percentile limits and the error bound.
#[derive(Debug, Clone)]
pub struct LiveSlo {
    /// (percentile, limit in ms), e.g. (99.0, 350.0).
    pub limits: Vec<(f64, f64)>,
    /// Error rate must stay below this fraction.
    pub max_error_rate: f64,
}

struct StageSoFar {
    key: (ceiling_metrics::Phase, usize),
    latency: hdrhistogram::Histogram<u64>,
    total: u64,
    errors: u64,
    seconds: u32,
}

impl StageSoFar {
    /// `stage so far (12 s): p99 3.2 ms ≤ 350 ✓, errors 0.00% < 1% ✓`: the stage's merged
    /// figures against the SLO — the verdict as it stands, not the shelf's (that one keeps only
    /// the stable window and is judged at the end).
    fn verdict(&self, slo: &LiveSlo) -> String {
        let mut parts = Vec::new();
        for &(p, limit) in &slo.limits {
            let v = self.latency.value_at_quantile(p / 100.0) as f64 / 1000.0;
            let name = ceiling_plan::pct_name(p);
            parts.push(format!(
                "{name} {v:.1} ms {} {limit}",
                if v <= limit { "≤" } else { "> ✗" }
            ));
        }
        let rate = if self.total > 0 {
            self.errors as f64 / self.total as f64
        } else {
            0.0
        };
        parts.push(format!(
            "errors {:.2}% {} {}%",
            rate * 100.0,
            if rate < slo.max_error_rate {
                "<"
            } else {
                "≥ ✗"
            },
            slo.max_error_rate * 100.0
        ));
        format!("stage so far ({} s): {}", self.seconds, parts.join(", "))
    }
}

/// Seconds the live view's sparklines cover.
const LIVE_SECONDS: usize = 40;

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

/// Without a terminal, a plain progress line every this many seconds.
const PLAIN_EVERY_S: u32 = 10;

/// Opens `path` for writing: appended to when `append` and it already holds something (the
/// header is there), else created afresh. Returns the file and whether it was appended to.
fn open_for(path: &Path, append: bool) -> std::io::Result<(File, bool)> {
    if append && std::fs::metadata(path).is_ok_and(|m| m.len() > 0) {
        let f = std::fs::OpenOptions::new().append(true).open(path)?;
        return Ok((f, true));
    }
    Ok((File::create(path)?, false))
}

impl Recorder {
    /// Creates `dir/<prefix>.hlog` and `dir/<prefix>timeseries.csv` when `dir` is given.
    pub fn new(
        dir: Option<&Path>,
        prefix: &str,
        tags: Vec<String>,
        total: Option<Duration>,
        label: &str,
        quiet: bool,
    ) -> anyhow::Result<Self> {
        Self::open(dir, prefix, tags, total, label, quiet, None)
    }

    /// As [`Recorder::new`], continuing an earlier round's files in `dir` when they exist
    /// (`ceiling run` with stacks taking turns writes one set of files per stack): rows are
    /// appended, headers kept once, and the seconds given are expected on the stack's one clock,
    /// `offset` seconds on from this round's own start (the progress bar counts from it).
    pub fn continuing(
        dir: &Path,
        tags: Vec<String>,
        total: Option<Duration>,
        label: &str,
        quiet: bool,
        offset: u32,
    ) -> anyhow::Result<Self> {
        Self::open(Some(dir), "", tags, total, label, quiet, Some(offset))
    }

    fn open(
        dir: Option<&Path>,
        prefix: &str,
        tags: Vec<String>,
        total: Option<Duration>,
        label: &str,
        quiet: bool,
        continuing: Option<u32>,
    ) -> anyhow::Result<Self> {
        let append = continuing.is_some();
        let signals_path = dir.map(|d| d.join(format!("{prefix}signals.csv")));
        let (hlog, csv) = match dir {
            Some(d) => {
                std::fs::create_dir_all(d)?;
                let hp = d.join(format!("{prefix}latency.hlog"));
                let h = match open_for(&hp, append)? {
                    (f, true) => HlogWriter::appending(BufWriter::new(f)),
                    (f, false) => HlogWriter::new(
                        BufWriter::new(f),
                        SystemTime::now(),
                        &format!("[ceiling {} {label}]", env!("CARGO_PKG_VERSION")),
                    )?,
                };
                let c = match open_for(&d.join(format!("{prefix}timeseries.csv")), append)? {
                    (f, true) => TimeseriesWriter::appending(BufWriter::new(f)),
                    (f, false) => TimeseriesWriter::new(BufWriter::new(f)),
                };
                (Some(h), Some(c))
            }
            None => (None, None),
        };
        let bar = if quiet {
            None
        } else {
            let b = match total {
                Some(t) => ProgressBar::new(t.as_secs().max(1)),
                None => ProgressBar::new_spinner(),
            };
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix:.bold} [{elapsed_precise}] {bar:20.cyan/blue} {pos}/{len}s {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.set_prefix(label.to_string());
            b.enable_steady_tick(Duration::from_millis(250));
            Some(b)
        };
        Ok(Recorder {
            hlog,
            csv,
            tags,
            bar,
            rows: Vec::new(),
            pending_resources: Vec::new(),
            resources: Vec::new(),
            io_error: None,
            signals_path,
            signals_csv: None,
            signal_rows: Vec::new(),
            append,
            bar_offset: continuing.unwrap_or(0),
            label: label.to_string(),
            terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            recent: std::collections::VecDeque::with_capacity(LIVE_SECONDS),
            slo: None,
            stage_so_far: None,
        })
    }

    /// Judges the current stage against `slo` on the live view as it runs.
    pub fn with_slo(mut self, slo: &ceiling_plan::Slo) -> Self {
        self.slo = Some(LiveSlo {
            limits: slo
                .limits
                .iter()
                .map(|l| (l.percentile, l.limit.as_secs_f64() * 1000.0))
                .collect(),
            max_error_rate: slo.max_error_rate,
        });
        self
    }

    /// Adds a second to the current stage's figures, starting them over when the stage changes.
    fn note_stage(&mut self, s: &Second) {
        let key = (s.phase, s.stage);
        if self.stage_so_far.as_ref().is_none_or(|st| st.key != key) {
            self.stage_so_far = Some(StageSoFar {
                key,
                latency: ceiling_metrics::new_histogram(),
                total: 0,
                errors: 0,
                seconds: 0,
            });
        }
        if let Some(st) = self.stage_so_far.as_mut() {
            for t in &s.tags {
                let _ = st.latency.add(&t.latency);
                st.total += t.counts.total();
                st.errors += t.counts.errors();
            }
            st.seconds += 1;
        }
    }

    /// Records sealed signal rows (`signals.csv`, flushed per row).
    pub fn signals(&mut self, rows: Vec<SignalRow>) {
        for r in rows {
            if self.signals_csv.is_none() {
                if let Some(p) = &self.signals_path {
                    match open_for(p, self.append) {
                        Ok((f, true)) => {
                            self.signals_csv = Some(SignalsWriter::appending(BufWriter::new(f)))
                        }
                        Ok((f, false)) => {
                            self.signals_csv = Some(SignalsWriter::new(BufWriter::new(f)))
                        }
                        Err(e) => {
                            self.io_error
                                .get_or_insert(format!("creating {}: {e}", p.display()));
                            self.signals_path = None;
                        }
                    }
                }
            }
            if let Some(w) = self.signals_csv.as_mut() {
                if let Err(e) = w.write(&r) {
                    self.io_error
                        .get_or_insert(format!("writing signals.csv: {e}"));
                }
            }
            self.signal_rows.push(r);
        }
    }

    /// Adds resource samples (joined to the second they fall in).
    pub fn add_resources(&mut self, samples: impl IntoIterator<Item = ResourceSample>) {
        for s in samples {
            self.resources.push(s.clone());
            self.pending_resources.push(s);
        }
    }

    /// Records one second: hlog intervals, a CSV row, the progress line.
    pub fn second(&mut self, s: &Second) {
        let (now, later): (Vec<_>, Vec<_>) = self
            .pending_resources
            .drain(..)
            .partition(|r| r.t < (s.t + 1) as f64);
        self.pending_resources = later;
        let row = TimeseriesRow::from_second(s, &now);
        if let Some(h) = self.hlog.as_mut() {
            let start = Duration::from_secs(s.t as u64);
            let mut res = Ok(());
            for (tag, ts) in self.tags.iter().zip(&s.tags) {
                res = res.and(h.write(&ts.latency, start, Duration::from_secs(1), tag));
            }
            res = res.and(h.flush());
            if let Err(e) = res {
                self.io_error
                    .get_or_insert(format!("writing the hlog: {e}"));
            }
        }
        if let Some(c) = self.csv.as_mut() {
            if let Err(e) = c.write(&row) {
                self.io_error
                    .get_or_insert(format!("writing timeseries.csv: {e}"));
            }
        }
        // only a drawn view reads it: a quiet recorder (every search probe) merges nothing
        if self.slo.is_some() && self.bar.is_some() {
            self.note_stage(s);
        }
        if let Some(b) = &self.bar {
            let errs = row.achieved_rps - row.ok;
            let elapsed = (s.t + 1).saturating_sub(self.bar_offset);
            // the live line: what was offered and done, the latency, and whether the generator
            // itself kept up (its lag and CPU) — a slow generator must never look like a slow stack
            let line = format!(
                "{} {} | {:>6} → {:>6} rps | p50 {:>7.2} p99 {:>8.2} ms | errors {} | gen lag p99 {:.2} ms, CPU {:.0}%",
                row.phase,
                row.stage,
                row.offered_rps,
                row.achieved_rps,
                row.p50_ms,
                row.p99_ms,
                errs,
                row.lag_p99_ms,
                row.generator_cpu_pct
            );
            if self.recent.len() == LIVE_SECONDS {
                self.recent.pop_front();
            }
            self.recent.push_back((row.achieved_rps as f64, row.p99_ms));
            if self.terminal {
                // a second line, as oha draws it: the last seconds at a glance — a dip in
                // throughput or a p99 spike shows where the single figures above hide it — and a
                // third: the current stage so far against the SLO
                let max_p99 = self.recent.iter().map(|r| r.1).fold(0.0, f64::max);
                let mut live = format!(
                    "{line}\n  last {}s  rps {}  p99 {} (max {max_p99:.1} ms)",
                    self.recent.len(),
                    sparkline(self.recent.iter().map(|r| r.0)),
                    sparkline(self.recent.iter().map(|r| r.1)),
                );
                if let (Some(slo), Some(st)) = (&self.slo, &self.stage_so_far) {
                    live.push_str(&format!("\n  {}", st.verdict(slo)));
                }
                b.set_position(elapsed as u64);
                b.set_message(live);
            } else if elapsed.is_multiple_of(PLAIN_EVERY_S) {
                // not a terminal (a CI log): a plain line every few seconds instead of a bar
                eprintln!("[{}] {elapsed}s {line}", self.label);
            }
        }
        crate::live::publish(&self.label, &row);
        self.rows.push(row);
    }

    /// Stops the progress view.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ceiling_metrics::{Phase, SignalRow};

    fn second(t: u32, us: u64) -> Second {
        let mut s = Second::new(t, Phase::Measure, 0, 1);
        s.tags[0].latency.record(us).unwrap();
        s
    }

    #[test]
    fn the_stage_so_far_is_judged_on_its_merged_seconds_and_starts_over_with_the_next() {
        let slo = ceiling_plan::Slo {
            limits: vec![ceiling_plan::PercentileLimit {
                percentile: 99.0,
                limit: Duration::from_millis(5),
            }],
            max_error_rate: 0.01,
            per_request: Default::default(),
        };
        // not quiet: the stage is followed for a view that is drawn
        let mut r = Recorder::new(None, "", vec!["get".into()], None, "x", false)
            .unwrap()
            .with_slo(&slo);
        // `n` requests at `us` in second `t` of `stage`, and the live verdict after it
        let mut feed = |t: u32, stage: usize, us: u64, n: usize| {
            let mut s = Second::new(t, Phase::Measure, stage, 1);
            for _ in 0..n {
                s.tags[0].latency.record(us).unwrap();
                s.tags[0].counts.add(ceiling_metrics::Outcome::Ok);
            }
            r.second(&s);
            let st = r.stage_so_far.as_ref().unwrap();
            (st.key.1, st.seconds, st.verdict(r.slo.as_ref().unwrap()))
        };
        // stage 0: two seconds at 1 ms and one at 9 ms, 100 requests each: its p99 is 9 ms
        feed(0, 0, 1000, 100);
        feed(1, 0, 1000, 100);
        let (_, _, v) = feed(2, 0, 9000, 100);
        assert!(v.starts_with("stage so far (3 s): p99 9.0 ms > ✗ 5"), "{v}");
        assert!(v.contains("errors 0.00% < 1%"), "{v}");
        // the next stage starts over
        let (stage, seconds, v) = feed(3, 1, 2000, 1);
        assert_eq!((stage, seconds), (1, 1));
        assert!(v.starts_with("stage so far (1 s): p99 2.0 ms ≤ 5"), "{v}");
    }

    #[test]
    fn sparklines_scale_from_zero_to_the_maximum() {
        assert_eq!(sparkline([0.0, 1.0, 2.0, 4.0, 8.0]), "▁▂▃▅█");
        assert_eq!(sparkline([5.0, 5.0]), "██");
        assert_eq!(sparkline([0.0, 0.0]), "▁▁");
        assert_eq!(sparkline([1.0, f64::NAN, 2.0]), "▅ █");
        assert_eq!(sparkline(std::iter::empty()), "");
    }

    #[test]
    fn a_continued_recorder_appends_each_file_on_one_clock_with_one_header() {
        let dir = std::env::temp_dir().join(format!("ceiling-record-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let tags = vec!["get".to_string()];
        // round 1 at the clock's start, round 2 twelve seconds on (as measure_watched moves it)
        for (offset, us) in [(0u32, 1000u64), (12, 2000)] {
            let mut r = Recorder::continuing(&dir, tags.clone(), None, "x", true, offset).unwrap();
            for k in 0..2 {
                r.signals(vec![SignalRow::new(offset + k)]);
                r.second(&second(offset + k, us));
            }
            r.finish();
            assert!(r.io_error.is_none(), "{:?}", r.io_error);
        }
        let csv = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
        let rows = ceiling_metrics::read_timeseries(csv.as_bytes()).unwrap();
        assert_eq!(rows.iter().map(|r| r.t).collect::<Vec<_>>(), [0, 1, 12, 13]);
        let sig = std::fs::read_to_string(dir.join("signals.csv")).unwrap();
        let sig = ceiling_metrics::read_signals(sig.as_bytes()).unwrap();
        assert_eq!(sig.iter().map(|r| r.t).collect::<Vec<_>>(), [0, 1, 12, 13]);
        let hlog = std::fs::read(dir.join("latency.hlog")).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&hlog)
                .matches("#[StartTime:")
                .count(),
            1
        );
        let iv = ceiling_metrics::read_hlog(&hlog).unwrap();
        let at: Vec<(f64, u64)> = iv
            .iter()
            .map(|i| (i.start, i.histogram.max() / 1000))
            .collect();
        assert_eq!(at, [(0.0, 1), (1.0, 1), (12.0, 2), (13.0, 2)]);
        // a fresh recorder starts its files over
        let r = Recorder::new(Some(&dir), "", tags, None, "x", true).unwrap();
        drop(r);
        let csv = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
        assert!(csv.is_empty(), "header comes with the first row");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
