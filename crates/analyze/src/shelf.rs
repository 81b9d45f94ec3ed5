//! Online accumulation of one shelf and its verdict.

use crate::criteria::{LoadModel, ShelfCriteria, SloLimit};
use crate::hist::{ms, percentile_ms, Percentiles, Sparse};
use crate::layout::ShelfSpec;
use crate::resources::{window_of, ResourceWindow};
use crate::verdict::{generator_reasons, verdict_of, GeneratorHealth, Reason, Verdict};
use ceiling_metrics::{merge_into, new_histogram, Counts, Outcome, ResourceSample, Role, Second};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

const EPS: f64 = 1e-6;

/// Scalars of one kept second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Kept {
    t: u32,
    offered: u64,
    completed: u64,
    generator_cpu: f64,
    overflow: u64,
    backlog: u64,
    connections: u64,
}

impl Kept {
    fn of(s: &Second) -> Self {
        Kept {
            t: s.t,
            offered: s.offered,
            completed: s.counts().total(),
            generator_cpu: s.generator_cpu,
            overflow: s.overflow,
            backlog: s.backlog,
            connections: s.connections,
        }
    }
}

/// Dense merged histograms of the kept window.
struct Dense {
    latency: Vec<Histogram<u64>>,
    service: Vec<Histogram<u64>>,
    counts: Vec<Counts>,
    lag: Histogram<u64>,
}

impl Dense {
    fn new() -> Self {
        Dense {
            latency: Vec::new(),
            service: Vec::new(),
            counts: Vec::new(),
            lag: new_histogram(),
        }
    }
    fn ensure(&mut self, ntags: usize) {
        while self.latency.len() < ntags {
            self.latency.push(new_histogram());
            self.service.push(new_histogram());
            self.counts.push(Counts::default());
        }
    }
    fn add(&mut self, s: &Second) {
        self.ensure(s.tags.len());
        for (i, t) in s.tags.iter().enumerate() {
            merge_into(&mut self.latency[i], &t.latency);
            merge_into(&mut self.service[i], &t.service);
            self.counts[i].merge(&t.counts);
        }
        merge_into(&mut self.lag, &s.lag);
    }
    fn add_compact(&mut self, c: &Compact) {
        self.ensure(c.tags.len());
        for (i, (l, sv, n)) in c.tags.iter().enumerate() {
            l.add_to(&mut self.latency[i]);
            sv.add_to(&mut self.service[i]);
            self.counts[i].merge(n);
        }
        c.lag.add_to(&mut self.lag);
    }
}

/// A second held back until it is known not to fall in the trimmed tail (stages of unknown end).
struct Compact {
    kept: Kept,
    tags: Vec<(Sparse, Sparse, Counts)>,
    lag: Sparse,
}

impl Compact {
    fn of(s: &Second) -> Self {
        Compact {
            kept: Kept::of(s),
            tags: s
                .tags
                .iter()
                .map(|t| (Sparse::of(&t.latency), Sparse::of(&t.service), t.counts))
                .collect(),
            lag: Sparse::of(&s.lag),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Active,
    Done,
}

/// Accumulates one shelf from the seconds of a run, online: every pushed second is either
/// ignored (another stage, trimmed head or tail) or merged into the shelf's histograms. Only the
/// merged histograms (overall per request name, latency and service, plus schedule lag) and a
/// few scalars per kept second are held; they are allocated at the first kept second and
/// released when the shelf ends.
pub struct ShelfAccumulator {
    spec: ShelfSpec,
    criteria: ShelfCriteria,
    names: Vec<String>,
    state: State,
    observed_start: Option<u32>,
    /// Effective stage start and end, resolved at the first second of the stage.
    start: Option<f64>,
    end: Option<f64>,
    seen: u32,
    dense: Option<Box<Dense>>,
    delay: VecDeque<Compact>,
    kept: Vec<Kept>,
    measure: Option<ShelfMeasure>,
}

impl ShelfAccumulator {
    /// A shelf judged by `criteria`; `request_names` in plan order (the order of `Second::tags`).
    pub fn new(spec: ShelfSpec, criteria: ShelfCriteria, request_names: Vec<String>) -> Self {
        ShelfAccumulator {
            spec,
            criteria,
            names: request_names,
            state: State::Waiting,
            observed_start: None,
            start: None,
            end: None,
            seen: 0,
            dense: None,
            delay: VecDeque::new(),
            kept: Vec::new(),
            measure: None,
        }
    }

    /// The shelf's specification.
    pub fn spec(&self) -> &ShelfSpec {
        &self.spec
    }

    /// True once the shelf's stage has ended (or [`ShelfAccumulator::finish`] was called).
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// True while the shelf holds merged histograms (from its first kept second until it ends).
    pub fn holds_histograms(&self) -> bool {
        self.dense.is_some()
    }

    /// Offers one second (seconds arrive in order). Returns true when this second ended the shelf.
    pub fn push(&mut self, s: &Second) -> bool {
        if self.state == State::Done {
            return false;
        }
        let in_stage = match self.spec.stage {
            Some((ph, idx)) => s.phase == ph && s.stage == idx,
            None => true,
        };
        let t = s.t as f64;
        let by_time = self.spec.stage.is_none();
        if by_time {
            let before = self.spec.start_s.is_some_and(|st| t + EPS < st);
            let past = self.spec.end_s.is_some_and(|e| t + EPS >= e);
            if before || past {
                if self.state == State::Active && past {
                    self.finalize();
                    return true;
                }
                return false;
            }
        } else if !in_stage {
            if self.state == State::Active {
                self.finalize();
                return true;
            }
            return false;
        }
        if self.observed_start.is_none() {
            self.observed_start = Some(s.t);
            let on_schedule = self
                .spec
                .start_s
                .is_some_and(|st| (st.ceil() - t).abs() < EPS || (by_time && st <= t));
            if on_schedule {
                self.start = self.spec.start_s;
                self.end = self.spec.end_s;
            } else {
                self.start = Some(t);
                self.end = self.spec.duration_s.map(|d| t + d);
            }
        }
        self.state = State::Active;
        self.seen += 1;
        let start = self.start.unwrap_or(t);
        if t + EPS < start + self.spec.trim_head_s {
            return false;
        }
        match self.end {
            Some(end) => {
                if t + 1.0 <= end - self.spec.trim_tail_s + EPS {
                    self.dense
                        .get_or_insert_with(|| Box::new(Dense::new()))
                        .add(s);
                    self.kept.push(Kept::of(s));
                }
            }
            None => {
                let tail = self.spec.trim_tail_s.ceil().max(0.0) as usize;
                if tail == 0 {
                    self.dense
                        .get_or_insert_with(|| Box::new(Dense::new()))
                        .add(s);
                    self.kept.push(Kept::of(s));
                } else {
                    self.delay.push_back(Compact::of(s));
                    while self.delay.len() > tail {
                        let c = self.delay.pop_front().expect("non-empty");
                        self.dense
                            .get_or_insert_with(|| Box::new(Dense::new()))
                            .add_compact(&c);
                        self.kept.push(c.kept);
                    }
                }
            }
        }
        false
    }

    /// Ends the shelf (end of run): seconds still in the tail delay line are trimmed.
    pub fn finish(&mut self) {
        if self.state != State::Done {
            self.finalize();
        }
    }

    fn finalize(&mut self) {
        let reached = self.state != State::Waiting;
        self.state = State::Done;
        self.delay.clear();
        let dense = self.dense.take();
        let mut overall_lat = new_histogram();
        let mut overall_svc = new_histogram();
        let mut counts = Counts::default();
        let mut per_request = Vec::new();
        let mut lag = (0.0, 0.0);
        let mut checks = Vec::new();
        if let Some(d) = &dense {
            for i in 0..d.latency.len() {
                merge_into(&mut overall_lat, &d.latency[i]);
                merge_into(&mut overall_svc, &d.service[i]);
                counts.merge(&d.counts[i]);
                per_request.push(RequestStats::new(
                    self.names
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| format!("#{i}")),
                    &d.counts[i],
                    &d.latency[i],
                    &d.service[i],
                ));
            }
            if !d.lag.is_empty() {
                lag = (ms(d.lag.value_at_quantile(0.99)), ms(d.lag.max()));
            }
        }
        for l in &self.criteria.limits {
            let h = match &l.request {
                None => Some(&overall_lat),
                Some(name) => {
                    let i = self.names.iter().position(|n| n == name);
                    i.and_then(|i| dense.as_ref().and_then(|d| d.latency.get(i)))
                }
            };
            let measured = h.and_then(|h| percentile_ms(h, l.percentile));
            checks.push(SloCheck {
                limit: l.clone(),
                hist: crate::pool::Transient(h.map(crate::pool::LogHist::of)),
                measured_ms: measured,
                ok: !matches!(measured, Some(m) if m > l.limit_ms + 1e-9),
            });
        }
        // wrk's interval: the kept window's time over the requests per connection
        let wrk_latency = self.spec.connections.and_then(|c| {
            let per_conn = counts.total() / (c.max(1) as u64);
            let window_us = self.kept.len() as u64 * 1_000_000;
            (per_conn > 0)
                .then(|| crate::hist::wrk_corrected(&overall_lat, window_us / per_conn))
                .flatten()
                .map(|h| Percentiles::of(&h))
        });
        self.measure = Some(ShelfMeasure {
            reached,
            seen: self.seen,
            observed_start: self.observed_start,
            start: self.start,
            end: self.end,
            kept: std::mem::take(&mut self.kept),
            wrk_latency,
            latency: Percentiles::of(&overall_lat),
            service: Percentiles::of(&overall_svc),
            counts,
            per_request,
            lag_p99_ms: lag.0,
            lag_max_ms: lag.1,
            checks,
        });
    }

    /// Judges the shelf with the resource samples given (any order; only those of the kept
    /// window are used). `None` until the shelf is done.
    pub fn result(&self, resources: &[ResourceSample]) -> Option<ShelfResult> {
        let m = self.measure.as_ref()?;
        Some(judge(&self.spec, &self.criteria, m, resources))
    }
}

/// A finalized shelf before resources are attached.
struct ShelfMeasure {
    reached: bool,
    seen: u32,
    observed_start: Option<u32>,
    start: Option<f64>,
    end: Option<f64>,
    kept: Vec<Kept>,
    latency: Percentiles,
    wrk_latency: Option<Percentiles>,
    service: Percentiles,
    counts: Counts,
    per_request: Vec<RequestStats>,
    lag_p99_ms: f64,
    lag_max_ms: f64,
    checks: Vec<SloCheck>,
}

/// Outcome counts by class name (`ok`, `4xx`, `5xx`, `timeout`, …), non-zero classes only.
pub fn outcome_map(c: &Counts) -> BTreeMap<String, u64> {
    Outcome::ALL
        .iter()
        .filter(|o| c.get(**o) > 0)
        .map(|o| (o.name().to_string(), c.get(*o)))
        .collect()
}

/// One request name's results in a shelf.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestStats {
    /// Request name.
    pub name: String,
    /// Completed requests (any outcome).
    pub requests: u64,
    /// Requests with an outcome other than `ok`.
    pub errors: u64,
    /// errors / requests (0 when none).
    pub error_rate: f64,
    /// Counts by outcome class (non-zero only).
    pub outcomes: BTreeMap<String, u64>,
    /// Latency from the intended send time.
    pub latency: Percentiles,
    /// Service time (from the actual write).
    pub service: Percentiles,
}

impl RequestStats {
    fn new(name: String, c: &Counts, lat: &Histogram<u64>, svc: &Histogram<u64>) -> Self {
        RequestStats {
            name,
            requests: c.total(),
            errors: c.errors(),
            error_rate: rate(c.errors(), c.total()),
            outcomes: outcome_map(c),
            latency: Percentiles::of(lat),
            service: Percentiles::of(svc),
        }
    }
}

fn rate(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// One latency limit checked against a shelf.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloCheck {
    /// The limit.
    pub limit: SloLimit,
    /// Measured value (ms); `None` when the window has no samples of that request.
    pub measured_ms: Option<f64>,
    /// Whether the limit holds (true without samples).
    pub ok: bool,
    /// The window's histogram for this limit, for pooling probes (not stored in run.json: a
    /// probe keeps it in its [`crate::ProbeCounts`]).
    #[serde(skip)]
    pub hist: crate::pool::Transient<crate::pool::LogHist>,
}

/// Where the shelf lies and how much of it was kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShelfWindow {
    /// Stage start, seconds since run start (planned, or the first second seen).
    pub stage_start_s: Option<f64>,
    /// Stage end (planned, or one past the last second seen).
    pub stage_end_s: Option<f64>,
    /// First kept second.
    pub kept_start_s: Option<f64>,
    /// End of the last kept second (exclusive).
    pub kept_end_s: Option<f64>,
    /// Number of kept seconds.
    pub kept_s: f64,
    /// Seconds of the stage recorded (kept or trimmed).
    pub seen_s: f64,
    /// Planned number of kept seconds, when the stage's times are known.
    pub planned_kept_s: Option<f64>,
}

/// The stability rule's evidence (see [`ShelfCriteria`] for the rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    /// Whether the rule holds.
    pub ok: bool,
    /// Block length, seconds.
    pub block_s: u32,
    /// Open model: (achieved − offered) / offered over the window; closed model: 0.
    pub window_deviation: f64,
    /// The largest block deviation (signed).
    pub worst_block_deviation: f64,
    /// Start (run seconds) of the block with the largest deviation.
    pub worst_block_start_s: Option<u32>,
    /// Mean achieved RPS of every block.
    pub blocks_achieved_rps: Vec<f64>,
    /// Mean offered RPS of every block.
    pub blocks_offered_rps: Vec<f64>,
}

/// The full result for one shelf.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShelfResult {
    /// Position in the list of shelves (0-based).
    pub shelf: usize,
    /// Measured stage index (`Second::stage`), if the shelf was a stage.
    pub stage: Option<usize>,
    /// Stage index in the plan's measured list (closed-model level).
    pub level: usize,
    /// Repetition (closed model).
    pub repetition: u32,
    /// `hold 1500`, `c=50`.
    pub label: String,
    /// Planned offered rate (open model), RPS.
    pub rate: Option<f64>,
    /// Connections (closed model).
    pub connections: Option<usize>,
    /// Window.
    pub window: ShelfWindow,
    /// Mean offered rate in the kept window (scheduled, open; sent, closed), RPS.
    pub offered_rps: f64,
    /// Mean achieved throughput: completed requests (any outcome) per second of the window.
    pub achieved_rps: f64,
    /// Completed with an expected status, per second.
    pub ok_rps: f64,
    /// Completed requests in the window.
    pub requests: u64,
    /// Requests with any outcome but `ok`.
    pub errors: u64,
    /// errors / requests.
    pub error_rate: f64,
    /// Counts by outcome class (non-zero only).
    pub outcomes: BTreeMap<String, u64>,
    /// Latency from the intended send time, all requests.
    pub latency: Percentiles,
    /// Service time, all requests.
    pub service: Percentiles,
    /// Closed model only: `latency` as wrk would print it, after its coordinated-omission
    /// correction ([`crate::hist::wrk_corrected`]), for comparisons with sources measured with
    /// wrk. Absent for open-model shelves and in older run.json files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrk_latency: Option<Percentiles>,
    /// Per request name, plan order.
    pub per_request: Vec<RequestStats>,
    /// Every latency limit of the SLO checked.
    pub slo_checks: Vec<SloCheck>,
    /// Schedule lag p99, ms (open model; 0 when not recorded).
    pub lag_p99_ms: f64,
    /// Schedule lag max, ms.
    pub lag_max_ms: f64,
    /// Mean generator CPU (from the generator's own per-second figure), % of one core.
    pub generator_cpu_mean: f64,
    /// Max generator CPU in one second.
    pub generator_cpu_max: f64,
    /// Largest backlog at the end of a second.
    pub backlog_max: u64,
    /// Requests refused for a full backlog.
    pub overflow: u64,
    /// Most open connections.
    pub connections_max: u64,
    /// Stability evidence.
    pub stability: Stability,
    /// Stack process tree over the window.
    pub stack: Option<ResourceWindow>,
    /// PostgreSQL over the window.
    pub postgres: Option<ResourceWindow>,
    /// PgBouncer over the window (when the plan put one between the stacks and PostgreSQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgbouncer: Option<ResourceWindow>,
    /// Generator process (as sampled by the stand) over the window.
    pub generator: Option<ResourceWindow>,
    /// Stack CPU time per completed request: mean CPU% / 100 × window seconds / requests, µs.
    pub cpu_us_per_request: Option<f64>,
    /// PostgreSQL CPU time per completed request, µs.
    pub postgres_cpu_us_per_request: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Every rule that did not hold (empty when valid).
    pub reasons: Vec<Reason>,
    /// Why the shelf failed (its freezes, tail seconds and ranked causes), computed from the
    /// recorded per-second series by [`crate::attribute_analysis`]; `None` for valid shelves and
    /// before attribution ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<crate::attribution::Attribution>,
    /// The stack's runtime over the kept window (heap, GC, threads from its `/metrics`), filled
    /// by [`crate::runtime_analysis`]; `None` when the stack exposes none of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<crate::runtime::RuntimeWindow>,
}

/// CPU per completed request, µs, of a part that used `cpu_pct_mean` % of a core over `kept_s`
/// seconds in which `requests` completed; `None` when none did.
pub fn cpu_us_per_request(cpu_pct_mean: f64, kept_s: f64, requests: u64) -> Option<f64> {
    (requests > 0).then(|| cpu_pct_mean / 100.0 * kept_s * 1e6 / requests as f64)
}

impl ShelfResult {
    /// The generator's CPU per completed request over the kept window, µs, by the rule of the
    /// stack's [`ShelfResult::cpu_us_per_request`]: what the generator took beside the stack.
    pub fn generator_cpu_us_per_request(&self) -> Option<f64> {
        cpu_us_per_request(self.generator_cpu_mean, self.window.kept_s, self.requests)
    }
    /// True when valid.
    pub fn is_valid(&self) -> bool {
        self.verdict == Verdict::Valid
    }
    /// True when a reason says the generator was the bottleneck.
    pub fn is_generator_bound(&self) -> bool {
        self.reasons.iter().any(Reason::is_generator_bound)
    }
    /// Reasons joined with `; `.
    pub fn reasons_text(&self) -> String {
        self.reasons
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    }
    /// A request's stats by name.
    pub fn request(&self, name: &str) -> Option<&RequestStats> {
        self.per_request.iter().find(|r| r.name == name)
    }
}

/// Cuts `n` seconds into blocks of `b`: a trailing remainder shorter than b/2 joins the previous
/// block; fewer than `b` seconds make one block. Returns (start, len) pairs.
pub(crate) fn blocks(n: usize, b: usize) -> Vec<(usize, usize)> {
    let b = b.max(1);
    if n == 0 {
        return Vec::new();
    }
    if n <= b {
        return vec![(0, n)];
    }
    let mut out: Vec<(usize, usize)> = (0..n / b).map(|i| (i * b, b)).collect();
    let rem = n % b;
    if rem > 0 {
        if rem * 2 < b {
            out.last_mut().expect("n > b").1 += rem;
        } else {
            out.push((n - rem, rem));
        }
    }
    out
}

fn stability(kept: &[Kept], c: &ShelfCriteria) -> Stability {
    let n = kept.len();
    let offered: u64 = kept.iter().map(|k| k.offered).sum();
    let achieved: u64 = kept.iter().map(|k| k.completed).sum();
    let dev = |a: f64, o: f64| {
        if o > 0.0 {
            (a - o) / o
        } else if a > 0.0 {
            1.0
        } else {
            0.0
        }
    };
    let mean_a = if n > 0 {
        achieved as f64 / n as f64
    } else {
        0.0
    };
    let window_deviation = match c.model {
        LoadModel::Open => dev(achieved as f64, offered as f64),
        LoadModel::Closed => 0.0,
    };
    let mut st = Stability {
        ok: true,
        block_s: c.stability_block_s,
        window_deviation,
        worst_block_deviation: 0.0,
        worst_block_start_s: None,
        blocks_achieved_rps: Vec::new(),
        blocks_offered_rps: Vec::new(),
    };
    for (start, len) in blocks(n, c.stability_block_s as usize) {
        let sl = &kept[start..start + len];
        let a = sl.iter().map(|k| k.completed).sum::<u64>() as f64 / len as f64;
        let o = sl.iter().map(|k| k.offered).sum::<u64>() as f64 / len as f64;
        st.blocks_achieved_rps.push(a);
        st.blocks_offered_rps.push(o);
        let d = match c.model {
            LoadModel::Open => dev(a, o),
            LoadModel::Closed => dev(a, mean_a),
        };
        if st.worst_block_start_s.is_none() || d.abs() > st.worst_block_deviation.abs() {
            st.worst_block_deviation = d;
            st.worst_block_start_s = Some(sl[0].t);
        }
    }
    let tol = c.stability + 1e-12;
    st.ok = n > 0 && window_deviation.abs() <= tol && st.worst_block_deviation.abs() <= tol;
    st
}

/// A generator behind its schedule voids a shelf, because its lateness — and the burst it sends
/// on catching up — can make a stack look slow. It cannot make it look slower than that: latency
/// runs from the intended send time, so lateness adds at most the window's worst lag to a
/// request, and a burst of at most that lag's worth of arrivals adds at most about as much
/// queueing. A generator starved of CPU also reads responses late, which the attribution bounds
/// at `STARVED_MAX_INFLATION` × its lag p99. So when the schedule lag is the only generator-bound
/// reason and the stack failed beyond both — a latency limit exceeded by the **service time**
/// (from the actual send) by more than the worst lag, and by the measured latency beyond that
/// bound — or with errors at or above the plan's rate that are not timeouts (refusals,
/// resets, 5xx: the stack's own) — the shelf is the stack's failure, with the lag kept as a
/// note. This is the box-bound case of a 2-core machine: a stack that saturates the machine
/// also delays the generator's threads (1–2% of a core, 15–60 ms late) while its own answers
/// take seconds.
fn outweigh_generator_lag(reasons: &mut [Reason], m: &ShelfMeasure, c: &ShelfCriteria) {
    let voiding: Vec<&Reason> = reasons.iter().filter(|r| r.voids_shelf()).collect();
    if !matches!(voiding[..], [Reason::GeneratorLag { .. }]) {
        return;
    }
    let lag = m.lag_max_ms;
    if !lag.is_finite() || lag < 0.0 {
        return;
    }
    let latency_beyond = m.checks.iter().any(|ch| {
        let service = match &ch.limit.request {
            None => Some(&m.service),
            Some(name) => m
                .per_request
                .iter()
                .find(|r| &r.name == name)
                .map(|r| &r.service),
        };
        // … and beyond what a *starved* generator can do, which reads responses late as well
        // as sending late: the attribution's own bound (crate::STARVED_MAX_INFLATION × its lag
        // p99), so a shelf called failed here is never blamed on the generator there
        !ch.ok
            && ch
                .measured_ms
                .is_some_and(|v| v > crate::attribution::STARVED_MAX_INFLATION * m.lag_p99_ms)
            && service
                .and_then(|s| s.get(ch.limit.percentile))
                .is_some_and(|v| v - lag > ch.limit.limit_ms)
    });
    let requests = m.counts.total();
    let hard_errors = m
        .counts
        .errors()
        .saturating_sub(m.counts.get(Outcome::Timeout));
    let errors_beyond = hard_errors > 0 && rate(hard_errors, requests) >= c.max_error_rate;
    if latency_beyond || errors_beyond {
        for r in reasons.iter_mut() {
            if let Reason::GeneratorLag { p99_ms, max_ms } = *r {
                *r = Reason::GeneratorLagOutweighed {
                    p99_ms,
                    max_ms,
                    lag_max_ms: lag,
                };
            }
        }
    }
}

fn judge(
    spec: &ShelfSpec,
    c: &ShelfCriteria,
    m: &ShelfMeasure,
    resources: &[ResourceSample],
) -> ShelfResult {
    let kept_s = m.kept.len() as f64;
    let offered: u64 = m.kept.iter().map(|k| k.offered).sum();
    let requests = m.counts.total();
    let errors = m.counts.errors();
    let per_s = |x: u64| if kept_s > 0.0 { x as f64 / kept_s } else { 0.0 };
    let (kept_start, kept_end) = match (m.kept.first(), m.kept.last()) {
        (Some(a), Some(b)) => (Some(a.t as f64), Some(b.t as f64 + 1.0)),
        _ => (None, None),
    };
    let stage_start = m.start.or(spec.start_s);
    let stage_end = m
        .end
        .or(m.observed_start.map(|t| t as f64 + m.seen as f64))
        .or(spec.end_s);
    let window = ShelfWindow {
        stage_start_s: stage_start,
        stage_end_s: stage_end,
        kept_start_s: kept_start,
        kept_end_s: kept_end,
        kept_s,
        seen_s: m.seen as f64,
        planned_kept_s: spec.planned_kept_seconds(),
    };
    let gen_mean = if m.kept.is_empty() {
        0.0
    } else {
        m.kept.iter().map(|k| k.generator_cpu).sum::<f64>() / kept_s
    };
    let gen_max = m.kept.iter().map(|k| k.generator_cpu).fold(0.0, f64::max);
    let overflow: u64 = m.kept.iter().map(|k| k.overflow).sum();
    let stab = stability(&m.kept, c);

    let win = kept_start.zip(kept_end);
    let stack = win.and_then(|(a, b)| window_of(resources, Role::Stack, a, b));
    let postgres = win.and_then(|(a, b)| window_of(resources, Role::Postgres, a, b));
    let pgbouncer = win.and_then(|(a, b)| window_of(resources, Role::Pgbouncer, a, b));
    let generator = win.and_then(|(a, b)| window_of(resources, Role::Generator, a, b));
    let cpu_per = |w: &Option<ResourceWindow>| {
        w.as_ref()
            .and_then(|w| cpu_us_per_request(w.cpu_pct_mean, kept_s, requests))
    };

    let mut reasons = Vec::new();
    if !m.reached {
        reasons.push(Reason::NotReached);
    } else {
        // Generator-bound first (the one rule, crate::verdict::generator_reasons).
        reasons.extend(generator_reasons(
            &GeneratorHealth {
                open: c.model == LoadModel::Open,
                lag_p99_ms: m.lag_p99_ms,
                cpu_mean_pct: gen_mean,
                overflow,
                sends: None,
            },
            c.max_schedule_lag_ms,
            c.max_generator_cpu,
        ));
        // The stack's rules.
        if requests == 0 {
            if offered > 0 {
                reasons.push(Reason::NothingCompleted { offered });
            } else if !m.kept.is_empty() {
                reasons.push(Reason::NoData);
            }
        } else {
            for ch in &m.checks {
                if !ch.ok {
                    reasons.push(Reason::Latency {
                        request: ch.limit.request.clone(),
                        percentile: ch.limit.percentile,
                        measured_ms: ch.measured_ms.unwrap_or(f64::NAN),
                        limit_ms: ch.limit.limit_ms,
                    });
                }
            }
            let er = rate(errors, requests);
            if errors > 0 && er >= c.max_error_rate {
                reasons.push(Reason::Errors {
                    rate: er,
                    max: c.max_error_rate,
                    errors,
                    requests,
                });
            }
            if !stab.ok {
                let tol = c.stability + 1e-12;
                if stab.window_deviation.abs() > tol {
                    reasons.push(Reason::Unstable {
                        detail: "achieved vs offered".into(),
                        deviation: stab.window_deviation,
                        max: c.stability,
                    });
                } else {
                    let what = match c.model {
                        LoadModel::Open => "achieved vs offered",
                        LoadModel::Closed => "vs window mean",
                    };
                    reasons.push(Reason::Unstable {
                        detail: format!(
                            "{} s block at t={}s {what}",
                            c.stability_block_s,
                            stab.worst_block_start_s.unwrap_or(0)
                        ),
                        deviation: stab.worst_block_deviation,
                        max: c.stability,
                    });
                }
            }
        }
        // Window length.
        let min_s = c.min_window_s.floor();
        if kept_s + EPS < min_s || m.kept.is_empty() {
            reasons.push(Reason::WindowTooShort {
                kept_s,
                min_s: c.min_window_s,
            });
        }
        if let Some(d) = spec.duration_s {
            if (m.seen as f64) + 1.0 + EPS < d.floor() {
                reasons.push(Reason::Incomplete {
                    seen_s: m.seen as f64,
                    planned_s: d,
                });
            }
        }
    }
    outweigh_generator_lag(&mut reasons, m, c);
    let verdict = verdict_of(&reasons);
    ShelfResult {
        shelf: spec.shelf,
        stage: spec.stage.map(|(_, i)| i),
        level: spec.level,
        repetition: spec.repetition,
        label: spec.label.clone(),
        rate: spec.rate,
        connections: spec.connections,
        window,
        offered_rps: per_s(offered),
        achieved_rps: per_s(requests),
        ok_rps: per_s(m.counts.get(Outcome::Ok)),
        requests,
        errors,
        error_rate: rate(errors, requests),
        outcomes: outcome_map(&m.counts),
        latency: m.latency.clone(),
        wrk_latency: m.wrk_latency.clone(),
        service: m.service.clone(),
        per_request: m.per_request.clone(),
        slo_checks: m.checks.clone(),
        lag_p99_ms: m.lag_p99_ms,
        lag_max_ms: m.lag_max_ms,
        generator_cpu_mean: gen_mean,
        generator_cpu_max: gen_max,
        backlog_max: m.kept.iter().map(|k| k.backlog).max().unwrap_or(0),
        overflow,
        connections_max: m.kept.iter().map(|k| k.connections).max().unwrap_or(0),
        stability: stab,
        cpu_us_per_request: cpu_per(&stack),
        postgres_cpu_us_per_request: cpu_per(&postgres),
        stack,
        postgres,
        pgbouncer,
        generator,
        verdict,
        reasons,
        attribution: None,
        runtime: None,
    }
}

#[cfg(test)]
mod tests {
    use super::blocks;
    #[test]
    fn block_cutting() {
        assert_eq!(blocks(0, 10), vec![]);
        assert_eq!(blocks(7, 10), vec![(0, 7)]);
        assert_eq!(blocks(20, 10), vec![(0, 10), (10, 10)]);
        assert_eq!(blocks(24, 10), vec![(0, 10), (10, 14)]);
        assert_eq!(blocks(25, 10), vec![(0, 10), (10, 10), (20, 5)]);
    }
}
