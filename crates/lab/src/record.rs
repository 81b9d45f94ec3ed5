//! Writing a run's per-second records as they arrive: the `.hlog` (one tag per request name),
//! `timeseries.csv`, and the live view's figures (the current stage judged against the SLO), handed
//! to a [`LiveView`] the caller chose — the lab draws nothing itself. Every second is flushed, so a
//! crash loses at most the second in flight.

use crate::error::{LabError, Result};
use ceiling_metrics::{
    HlogWriter, LiveSecond, LiveView, ResourceSample, Second, SignalRow, SignalsWriter,
    StageVerdict, TimeseriesRow, TimeseriesWriter,
};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Files and progress for one measured target.
pub struct Recorder {
    hlog: Option<HlogWriter<BufWriter<File>>>,
    csv: Option<TimeseriesWriter<BufWriter<File>>>,
    tags: Vec<String>,
    /// Where each second is drawn as it is recorded; `None`: quiet (every search probe).
    view: Option<Box<dyn LiveView>>,
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
    /// The clock's offset (seconds) of the seconds this recorder is given: the view counts from it.
    offset: u32,
    /// What is measured (a stack, `load`), for the live metrics ([`crate::live`]).
    label: String,
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
    /// The stage's merged figures against the SLO — the verdict as it stands, not the shelf's
    /// (that one keeps only the stable window and is judged at the end).
    fn verdict(&self, slo: &LiveSlo) -> StageVerdict {
        StageVerdict {
            seconds: self.seconds,
            percentiles: slo
                .limits
                .iter()
                .map(|&(p, limit)| {
                    let v = self.latency.value_at_quantile(p / 100.0) as f64 / 1000.0;
                    (p, v, limit)
                })
                .collect(),
            error_rate: if self.total > 0 {
                self.errors as f64 / self.total as f64
            } else {
                0.0
            },
            max_error_rate: slo.max_error_rate,
        }
    }
}

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
    /// Creates `dir/<prefix>.hlog` and `dir/<prefix>timeseries.csv` when `dir` is given; each
    /// second is handed to `view` when there is one.
    pub fn new(
        dir: Option<&Path>,
        prefix: &str,
        tags: Vec<String>,
        label: &str,
        view: Option<Box<dyn LiveView>>,
    ) -> Result<Self> {
        Self::open(dir, prefix, tags, label, view, None)
    }

    /// As [`Recorder::new`], continuing an earlier round's files in `dir` when they exist
    /// (`ceiling run` with stacks taking turns writes one set of files per stack): rows are
    /// appended, headers kept once, and the seconds given are expected on the stack's one clock,
    /// `offset` seconds on from this round's own start (the view counts from it).
    pub fn continuing(
        dir: &Path,
        tags: Vec<String>,
        label: &str,
        view: Option<Box<dyn LiveView>>,
        offset: u32,
    ) -> Result<Self> {
        Self::open(Some(dir), "", tags, label, view, Some(offset))
    }

    fn open(
        dir: Option<&Path>,
        prefix: &str,
        tags: Vec<String>,
        label: &str,
        view: Option<Box<dyn LiveView>>,
        continuing: Option<u32>,
    ) -> Result<Self> {
        let append = continuing.is_some();
        let signals_path = dir.map(|d| d.join(format!("{prefix}signals.csv")));
        let (hlog, csv) = match dir {
            Some(d) => {
                let io = |what: &Path| {
                    let what = what.display().to_string();
                    move |e: std::io::Error| LabError::io(format!("writing {what}"), e)
                };
                std::fs::create_dir_all(d).map_err(io(d))?;
                let hp = d.join(format!("{prefix}latency.hlog"));
                let h = match open_for(&hp, append).map_err(io(&hp))? {
                    (f, true) => HlogWriter::appending(BufWriter::new(f)),
                    (f, false) => HlogWriter::new(
                        BufWriter::new(f),
                        SystemTime::now(),
                        &format!("[ceiling {} {label}]", env!("CARGO_PKG_VERSION")),
                    )
                    .map_err(io(&hp))?,
                };
                let cp = d.join(format!("{prefix}timeseries.csv"));
                let c = match open_for(&cp, append).map_err(io(&cp))? {
                    (f, true) => TimeseriesWriter::appending(BufWriter::new(f)),
                    (f, false) => TimeseriesWriter::new(BufWriter::new(f)),
                };
                (Some(h), Some(c))
            }
            None => (None, None),
        };
        Ok(Recorder {
            hlog,
            csv,
            tags,
            view,
            rows: Vec::new(),
            pending_resources: Vec::new(),
            resources: Vec::new(),
            io_error: None,
            signals_path,
            signals_csv: None,
            signal_rows: Vec::new(),
            append,
            offset: continuing.unwrap_or(0),
            label: label.to_string(),
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
        let stage = if self.slo.is_some() && self.view.is_some() {
            self.note_stage(s);
            self.stage_so_far
                .as_ref()
                .zip(self.slo.as_ref())
                .map(|(st, slo)| st.verdict(slo))
        } else {
            None
        };
        if let Some(v) = self.view.as_mut() {
            v.second(&LiveSecond {
                row: &row,
                elapsed: (s.t + 1).saturating_sub(self.offset),
                stage: stage.as_ref(),
            });
        }
        crate::live::publish(&self.label, &row);
        self.rows.push(row);
    }

    /// Ends the live view (it clears what it drew).
    pub fn finish(&mut self) {
        if let Some(mut v) = self.view.take() {
            v.finish();
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
        // with a view: the stage is followed for it; the view sees what the recorder judged
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let view = Box::new(Kept(seen.clone()));
        let mut r = Recorder::new(None, "", vec!["get".into()], "x", Some(view))
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
        assert_eq!(v.seconds, 3);
        let (p, ms, limit) = v.percentiles[0];
        assert_eq!((p, limit), (99.0, 5.0));
        assert!((ms - 9.0).abs() < 0.01, "{v:?}");
        assert_eq!((v.error_rate, v.max_error_rate), (0.0, 0.01));
        assert!(!v.holds());
        // the next stage starts over
        let (stage, seconds, v) = feed(3, 1, 2000, 1);
        assert_eq!((stage, seconds), (1, 1));
        assert!(
            (v.percentiles[0].1 - 2.0).abs() < 0.01 && v.holds(),
            "{v:?}"
        );
        r.finish();
        // the view was handed every second, on the recorder's clock, with the verdict as judged
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(),
            [(1, 100), (2, 100), (3, 100), (4, 1)]
        );
        assert_eq!(seen[2].2.as_ref().map(|v| v.seconds), Some(3));
        assert!(seen.last().unwrap().3, "finished");
    }

    /// A view that keeps (elapsed, achieved requests, verdict, finished) of what it was handed.
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<(u32, u64, Option<StageVerdict>, bool)>>>;
    struct Kept(Seen);
    impl LiveView for Kept {
        fn second(&mut self, s: &LiveSecond<'_>) {
            self.0
                .lock()
                .unwrap()
                .push((s.elapsed, s.row.achieved_rps, s.stage.cloned(), false));
        }
        fn finish(&mut self) {
            if let Some(last) = self.0.lock().unwrap().last_mut() {
                last.3 = true;
            }
        }
    }

    #[test]
    fn a_quiet_recorder_judges_no_stage() {
        let mut r = Recorder::new(None, "", vec!["get".into()], "x", None)
            .unwrap()
            .with_slo(&ceiling_plan::Slo {
                limits: vec![],
                max_error_rate: 0.01,
                per_request: Default::default(),
            });
        r.second(&second(0, 1000));
        assert!(r.stage_so_far.is_none());
    }

    #[test]
    fn a_continued_recorder_appends_each_file_on_one_clock_with_one_header() {
        let dir = std::env::temp_dir().join(format!("ceiling-record-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let tags = vec!["get".to_string()];
        // round 1 at the clock's start, round 2 twelve seconds on (as measure_watched moves it)
        for (offset, us) in [(0u32, 1000u64), (12, 2000)] {
            let mut r = Recorder::continuing(&dir, tags.clone(), "x", None, offset).unwrap();
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
        let r = Recorder::new(Some(&dir), "", tags, "x", None).unwrap();
        drop(r);
        let csv = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
        assert!(csv.is_empty(), "header comes with the first row");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
