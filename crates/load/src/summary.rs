//! Whole-run totals, built from the same per-second records the files get.

use ceiling_metrics::{merge_into, new_histogram, Counts, Phase, Second};
use ceiling_plan::RequestSpec;
use hdrhistogram::Histogram;

/// Totals for one request name (measured phase only).
#[derive(Debug, Clone)]
pub struct TagTotals {
    /// Request name.
    pub name: String,
    /// Latency (from intended send time in the open model).
    pub latency: Histogram<u64>,
    /// Service time (from the write).
    pub service: Histogram<u64>,
    /// Outcomes.
    pub counts: Counts,
}

/// What a run did, over its measured phase.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Per request name, plan order.
    pub tags: Vec<TagTotals>,
    /// Schedule lag (open model).
    pub lag: Histogram<u64>,
    /// Requests scheduled (open) or sent (closed).
    pub offered: u64,
    /// Requests written.
    pub sent: u64,
    /// Requests refused because the backlog was full.
    pub overflow: u64,
    /// Largest backlog seen at a second boundary.
    pub max_backlog: u64,
    /// Seconds recorded (warm-up included).
    pub seconds: u32,
    /// Seconds in the measured phase (including the last one, in which only replies may arrive).
    pub measured_seconds: u32,
    /// Seconds of the measured phase in which requests were offered: the measured duration to
    /// one second, for runs that did not run their planned length (stopped, or bounded by a count).
    pub offered_seconds: u32,
    /// Mean and max generator CPU, % of one core (measured phase).
    pub generator_cpu_mean: f64,
    /// Max generator CPU.
    pub generator_cpu_max: f64,
    /// Stopped by Ctrl-C or the hard time bound.
    pub stopped_early: bool,
    /// Connections that could not be opened (refused, unreachable or timed out), over the whole
    /// run: the requests they were for were never sent.
    pub connect_failures: u64,
    /// The first connection failure as a sentence (`connecting to 127.0.0.1:9: Connection refused
    /// (os error 111)`), if any.
    pub connect_error: Option<String>,
}

impl Summary {
    /// An empty summary for a plan's request names (what a coordinator merging other processes'
    /// seconds starts from).
    pub fn new(reqs: &[RequestSpec]) -> Self {
        Summary {
            tags: reqs
                .iter()
                .map(|r| TagTotals {
                    name: r.name.clone(),
                    latency: new_histogram(),
                    service: new_histogram(),
                    counts: Counts::default(),
                })
                .collect(),
            lag: new_histogram(),
            offered: 0,
            sent: 0,
            overflow: 0,
            max_backlog: 0,
            seconds: 0,
            measured_seconds: 0,
            offered_seconds: 0,
            generator_cpu_mean: 0.0,
            generator_cpu_max: 0.0,
            stopped_early: false,
            connect_failures: 0,
            connect_error: None,
        }
    }

    /// Adds one recorded second (only the measured phase counts towards the totals).
    pub fn add(&mut self, s: &Second) {
        self.seconds = self.seconds.max(s.t + 1);
        if s.phase != Phase::Measure {
            return;
        }
        for (a, b) in self.tags.iter_mut().zip(&s.tags) {
            merge_into(&mut a.latency, &b.latency);
            merge_into(&mut a.service, &b.service);
            a.counts.merge(&b.counts);
        }
        merge_into(&mut self.lag, &s.lag);
        self.offered += s.offered;
        self.sent += s.sent;
        if s.offered > 0 {
            self.offered_seconds += 1;
        }
        self.overflow += s.overflow;
        self.max_backlog = self.max_backlog.max(s.backlog);
        let n = self.measured_seconds as f64;
        self.generator_cpu_mean = (self.generator_cpu_mean * n + s.generator_cpu) / (n + 1.0);
        self.generator_cpu_max = self.generator_cpu_max.max(s.generator_cpu);
        self.measured_seconds += 1;
    }

    /// Latency over all request names.
    pub fn latency(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        for t in &self.tags {
            merge_into(&mut h, &t.latency);
        }
        h
    }

    /// Outcomes over all request names.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for t in &self.tags {
            c.merge(&t.counts);
        }
        c
    }
}
