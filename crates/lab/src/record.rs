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
        let signals_path = dir.map(|d| d.join(format!("{prefix}signals.csv")));
        let (hlog, csv) = match dir {
            Some(d) => {
                std::fs::create_dir_all(d)?;
                let hp = d.join(format!("{prefix}latency.hlog"));
                let h = HlogWriter::new(
                    BufWriter::new(File::create(&hp)?),
                    SystemTime::now(),
                    &format!("[ceiling {} {label}]", env!("CARGO_PKG_VERSION")),
                )?;
                let c = TimeseriesWriter::new(BufWriter::new(File::create(
                    d.join(format!("{prefix}timeseries.csv")),
                )?));
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
        })
    }

    /// Records sealed signal rows (`signals.csv`, flushed per row).
    pub fn signals(&mut self, rows: Vec<SignalRow>) {
        for r in rows {
            if self.signals_csv.is_none() {
                if let Some(p) = &self.signals_path {
                    match File::create(p) {
                        Ok(f) => self.signals_csv = Some(SignalsWriter::new(BufWriter::new(f))),
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
        if let Some(b) = &self.bar {
            let errs = row.achieved_rps - row.ok;
            b.set_position((s.t + 1) as u64);
            b.set_message(format!(
                "{} | {:>7} rps | p99 {:>8.2} ms | errors {} | stage {}",
                row.phase, row.achieved_rps, row.p99_ms, errs, row.stage
            ));
        }
        self.rows.push(row);
    }

    /// Stops the progress view.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
