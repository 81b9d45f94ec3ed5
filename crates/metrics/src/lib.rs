//! Recorded measurements: per-second interval histograms, outcome counts, resource samples, and
//! their files (HdrHistogram interval log `.hlog`, `timeseries.csv`).
//!
//! This is the boundary between the instrument (the `load` and `stand` crates, which produce
//! [`Second`]s and [`ResourceSample`]s) and the pure analysis (`analyze`, `report`, which only read
//! them). Histograms are never averaged: windows are merged exactly with [`merge_into`].
#![forbid(unsafe_code)]

mod audit;
mod environment;
mod fairness;
mod footprint;
mod hlog;
mod parts;
mod placement;
mod signals;
mod timeseries;
mod view;

pub use audit::MoneyCheck;
pub use environment::{Environment, PgBouncerRecord};
pub use fairness::Fairness;
pub use footprint::Footprint;
pub use hlog::{read_hlog, visit_hlog, HlogInterval, HlogWriter};
pub use parts::{Limits, LimitsApplied, Role};
pub use placement::{cpu_list, Placement};
pub use signals::{read_signals, HeapKind, SignalRow, SignalsWriter};
pub use timeseries::{read_timeseries, TimeseriesRow, TimeseriesWriter};
pub use view::{LiveSecond, LiveView, StageVerdict, ViewMaker};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency tracked: one hour in microseconds (values above are clamped and counted).
pub const MAX_LATENCY_US: u64 = 3_600_000_000;

/// A latency histogram in microseconds, 1 µs … 1 h, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("static histogram bounds are valid")
}

/// Records `us` microseconds, clamping into the histogram's range (never panics, never drops).
#[inline]
pub fn record_us(h: &mut Histogram<u64>, us: u64) {
    h.saturating_record(us.clamp(1, MAX_LATENCY_US));
}

/// Adds `src` into `dst` (exact merge; both have the standard bounds).
pub fn merge_into(dst: &mut Histogram<u64>, src: &Histogram<u64>) {
    dst.add(src)
        .expect("histograms with identical bounds always merge");
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A status the plan expects for this request.
    Ok,
    /// Unexpected 1xx/2xx/3xx status.
    Unexpected,
    /// Unexpected 4xx.
    Status4xx,
    /// Unexpected 5xx.
    Status5xx,
    /// No complete response within the plan's timeout.
    Timeout,
    /// The TCP connection could not be opened.
    Connect,
    /// The connection was reset or closed mid-response.
    Reset,
    /// Anything else (malformed response…).
    Other,
}

impl Outcome {
    /// All outcomes, in report order.
    pub const ALL: [Outcome; 8] = [
        Outcome::Ok,
        Outcome::Unexpected,
        Outcome::Status4xx,
        Outcome::Status5xx,
        Outcome::Timeout,
        Outcome::Connect,
        Outcome::Reset,
        Outcome::Other,
    ];
    /// Column / key name.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Unexpected => "unexpected",
            Outcome::Status4xx => "4xx",
            Outcome::Status5xx => "5xx",
            Outcome::Timeout => "timeout",
            Outcome::Connect => "connect",
            Outcome::Reset => "reset",
            Outcome::Other => "other",
        }
    }
    /// The outcome for an HTTP status the request did not expect.
    pub fn for_unexpected_status(status: u16) -> Outcome {
        match status {
            400..=499 => Outcome::Status4xx,
            500..=599 => Outcome::Status5xx,
            _ => Outcome::Unexpected,
        }
    }
}

/// Counts per outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts(pub [u64; 8]);

impl Counts {
    /// Adds one of `o`.
    #[inline]
    pub fn add(&mut self, o: Outcome) {
        self.0[o as usize] += 1;
    }
    /// Count of `o`.
    pub fn get(&self, o: Outcome) -> u64 {
        self.0[o as usize]
    }
    /// All completed requests (every outcome).
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    /// Everything but [`Outcome::Ok`].
    pub fn errors(&self) -> u64 {
        self.total() - self.get(Outcome::Ok)
    }
    /// Adds another set of counts.
    pub fn merge(&mut self, o: &Counts) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}

/// One request name's measurements during one second.
#[derive(Debug, Clone)]
pub struct TagSecond {
    /// Latency from the intended send time (open model) or from the write (closed model), µs.
    pub latency: Histogram<u64>,
    /// Service time: from the actual write of the request to the end of the response, µs.
    pub service: Histogram<u64>,
    /// Outcomes of requests that finished in this second.
    pub counts: Counts,
}

impl TagSecond {
    /// Empty measurements.
    pub fn new() -> Self {
        TagSecond {
            latency: new_histogram(),
            service: new_histogram(),
            counts: Counts::default(),
        }
    }
    /// Resets to empty, keeping allocations.
    pub fn reset(&mut self) {
        self.latency.reset();
        self.service.reset();
        self.counts = Counts::default();
    }
    /// Adds another tag-second into this one.
    pub fn merge(&mut self, o: &TagSecond) {
        merge_into(&mut self.latency, &o.latency);
        merge_into(&mut self.service, &o.service);
        self.counts.merge(&o.counts);
    }
}

impl Default for TagSecond {
    fn default() -> Self {
        Self::new()
    }
}

/// Which part of a run a second belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Warm-up stages: recorded, never analysed.
    Warmup,
    /// Measured stages.
    Measure,
}

/// Everything the generator measured in one second of a run.
#[derive(Debug, Clone)]
pub struct Second {
    /// Seconds since the start of the run (warm-up included); the second covers `[t, t+1)`.
    pub t: u32,
    /// Warm-up or measured.
    pub phase: Phase,
    /// Index of the stage (within its phase) active at the start of this second.
    pub stage: usize,
    /// Requests whose intended send time fell in this second (open model), or sent (closed).
    pub offered: u64,
    /// Requests actually written in this second.
    pub sent: u64,
    /// Per request name, in plan order.
    pub tags: Vec<TagSecond>,
    /// Schedule lag (actual write − intended send time), µs; open model only.
    pub lag: Histogram<u64>,
    /// Requests waiting for a connection at the end of the second.
    pub backlog: u64,
    /// Requests refused because the backlog bound was reached (generator overload).
    pub overflow: u64,
    /// Open connections at the end of the second.
    pub connections: u64,
    /// The generator's own CPU time in this second, % of one core.
    pub generator_cpu: f64,
}

impl Second {
    /// An empty second for `ntags` request names.
    pub fn new(t: u32, phase: Phase, stage: usize, ntags: usize) -> Self {
        Second {
            t,
            phase,
            stage,
            offered: 0,
            sent: 0,
            tags: (0..ntags).map(|_| TagSecond::new()).collect(),
            lag: new_histogram(),
            backlog: 0,
            overflow: 0,
            connections: 0,
            generator_cpu: 0.0,
        }
    }
    /// Empties this second for reuse as second `t` (keeps every histogram's allocation: the
    /// generator recycles its per-second records instead of allocating ~0.2 MB of histograms
    /// per request name every second, which the allocator turned into slow RSS growth).
    pub fn reset(&mut self, t: u32, phase: Phase, stage: usize) {
        self.t = t;
        self.phase = phase;
        self.stage = stage;
        self.offered = 0;
        self.sent = 0;
        for tag in &mut self.tags {
            tag.reset();
        }
        self.lag.reset();
        self.backlog = 0;
        self.overflow = 0;
        self.connections = 0;
        self.generator_cpu = 0.0;
    }
    /// Outcome counts over all request names.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for t in &self.tags {
            c.merge(&t.counts);
        }
        c
    }
    /// Latency histogram over all request names.
    pub fn latency(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        for t in &self.tags {
            merge_into(&mut h, &t.latency);
        }
        h
    }
    /// Merges another generator shard's record of the same second.
    pub fn merge(&mut self, o: &Second) {
        self.offered += o.offered;
        self.sent += o.sent;
        for (a, b) in self.tags.iter_mut().zip(&o.tags) {
            a.merge(b);
        }
        merge_into(&mut self.lag, &o.lag);
        self.backlog += o.backlog;
        self.overflow += o.overflow;
        self.connections += o.connections;
        self.generator_cpu += o.generator_cpu;
    }
}

/// One sample of a measured process tree's resources.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ResourceSample {
    /// Seconds since the start of the run.
    pub t: f64,
    /// What was sampled.
    pub who: Role,
    /// CPU used since the previous sample, % of one core (200 = two cores busy).
    pub cpu_pct: f64,
    /// Resident set size of the whole process tree, bytes.
    pub rss_bytes: u64,
    /// The cgroup's memory usage, bytes, when the process runs in a limited cgroup.
    pub cgroup_memory_bytes: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn counts_and_merge() {
        let mut s = Second::new(0, Phase::Measure, 0, 2);
        record_us(&mut s.tags[0].latency, 1000);
        s.tags[0].counts.add(Outcome::Ok);
        record_us(&mut s.tags[1].latency, 0); // clamps to 1 µs, never dropped
        s.tags[1].counts.add(Outcome::Status5xx);
        let mut o = s.clone();
        o.merge(&s);
        assert_eq!(o.counts().total(), 4);
        assert_eq!(o.counts().errors(), 2);
        assert_eq!(o.latency().len(), 4);
        assert_eq!(Outcome::for_unexpected_status(404), Outcome::Status4xx);
    }
}
