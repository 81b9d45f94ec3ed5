//! Truth tests of the search as an estimator, on simulated services whose ceiling is computed in
//! advance from their model: a cliff (fixed capacity, unbounded FIFO queue), a smooth knee, a
//! noisy knee and a service that sheds load with 503s. The simulation runs on a virtual clock (no
//! sockets, no sleeping), so each model is searched over many seeded trials, and the test reports
//! how often the 95% interval contains the true ceiling (its coverage) and requires most of them
//! to. The same models also check the recovery rule: a probe never starts while the previous
//! probe's queue is still there.
//!
//! The engine, the analysis and the search loop are the production ones; only the service and
//! the generator's per-second records are simulated.

use ceiling_analyze::{RunAccumulator, SearchOutcome, SearchStatus, StackAnalysis, StopReason};
use ceiling_metrics::{Outcome, Phase, Second, SignalRow, TimeseriesRow};
use ceiling_plan::{parse_plan, Plan, Stage};
use ceiling_search::{search, ProbeRunner, ProbeSpec, SearchOptions};
use rand::SeedableRng;
use rand_distr_free::normal;
use std::path::Path;
use std::time::Duration;

/// Box–Muller, so the test needs no extra crate.
mod rand_distr_free {
    use rand::Rng;
    pub fn normal(rng: &mut impl Rng) -> f64 {
        let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = rng.gen();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

const LIMIT_MS: f64 = 50.0;

#[derive(Clone, Copy, Debug)]
enum Model {
    /// Capacity `c` RPS; beyond it a FIFO queue grows without bound (and keeps draining at `c`
    /// after the probe ends). Service time 2 ms.
    Cliff { c: f64 },
    /// The cliff of a slower service whose latency jitters: capacity `c`, a service time of
    /// `service_ms` (p99 a quarter of the limit or so, as the 400-RPS FIFO service of the CLI's
    /// tests: margin ≈ 0.25, inside the local model's band) scaled every second by a lognormal
    /// factor of sd `sigma` (log scale), and the FIFO queue beyond `c`. Replicates below the
    /// knee differ a little; across it the margin jumps ×4 and more — a quiet step, which a line
    /// through it misplaces (crates/analyze/tests/recorded_probes.rs).
    JitteryCliff { c: f64, service_ms: f64, sigma: f64 },
    /// p99 = 5 ms / (1 − rate/mu): a smooth knee.
    Knee { mu: f64 },
    /// The knee with a multiplicative noise of sd `sigma` (log scale) per probe: the machine's
    /// run-to-run drift.
    Noisy { mu: f64, sigma: f64 },
    /// The knee with stalls: a probe's p99 varies with sd `sigma8` (log scale) for an 8-s window,
    /// shrinking as 1/√window (a longer window averages over more stalls) — go-pgx on a 2-core
    /// machine, where 15-s probes at one rate differed by ×10.
    Stalls { mu: f64, sigma8: f64 },
    /// The knee with bursts: every `block_s` seconds a new factor, lognormal with sd `sigma`
    /// (log scale), scales every latency of that block — stalls that come and go within a probe,
    /// so a longer window averages over more of them and the long-run (pooled) distribution is
    /// the same however the time is cut into probes. A single probe's p99 is a coin flip over a
    /// range of rates (the transition zone), and the pooled SLO fails well below where a single
    /// probe passes half the time.
    Bursty { mu: f64, sigma: f64, block_s: u32 },
    /// Capacity `c`; the excess is answered at once with 503 (errors = (rate − c)/rate).
    Shed { c: f64 },
    /// A healthy service (capacity far away) driven by a generator that cannot send more than
    /// `g` RPS on time, whatever its threads: every probe above `g` is generator-bound.
    GenLimited { g: f64 },
    /// As [`Model::GenLimited`], but the generator is starved of CPU by the other parts on a
    /// shared box (12% of a core while late), not busy: more threads cannot help.
    GenStarved { g: f64 },
    /// Healthy (3 ms) up to `c`; a probe above `c` wedges it for good: from then on nothing
    /// completes, its CPU idles and PostgreSQL has no active backend. With `pool_held` its DB
    /// pool stays full (every connection checked out, requests queued for one: the WebFlux/R2DBC
    /// leak of docs/benchmarks.md §29); without, its `/metrics` stops answering too (a stopped or
    /// deadlocked process). The signals are simulated per second, the attribution is the
    /// production one.
    Wedge { c: f64, pool_held: bool },
}

impl Model {
    /// The true ceiling of the model under the test plan's SLO (p99 ≤ 50 ms, errors < 1%,
    /// throughput within 5%), for probes of `window` kept seconds after `head` trimmed ones.
    fn truth(self, head: f64, window: f64) -> f64 {
        match self {
            // The queue at second t of the probe is (r − c)·t requests, i.e. (r − c)·t/c seconds
            // of waiting; the window's p99 is (nearly) its last second's wait. Solve wait = limit.
            Model::Cliff { c } => {
                let t = head + window;
                c * (1.0 + (LIMIT_MS / 1000.0 - 0.002) / t)
            }
            // The same, less the service time (its jitter moves this by under 0.1%).
            Model::JitteryCliff { c, service_ms, .. } => {
                let t = head + window;
                c * (1.0 + (LIMIT_MS - service_ms) / 1000.0 / t)
            }
            Model::Knee { mu } | Model::Stalls { mu, .. } => mu * (1.0 - 5.0 / LIMIT_MS),
            // A per-probe factor on every latency: in the long run the pooled p99 is the
            // mixture's, like the bursty model's with one burst per probe.
            Model::Noisy { mu, sigma } => mu * (1.0 - 5.0 * bursty_pooled_v1(sigma) / LIMIT_MS),
            Model::Shed { c } => c / 0.99,
            Model::Bursty { mu, sigma, .. } => {
                mu * (1.0 - 5.0 * bursty_pooled_v1(sigma) / LIMIT_MS)
            }
            Model::GenLimited { g } | Model::GenStarved { g } => g,
            Model::Wedge { c, .. } => c,
        }
    }
}

/// A simulated service + generator on a virtual clock.
struct Sim {
    model: Model,
    now: f64,
    /// Seconds of queued work left (cliff only) at `now`.
    backlog_s: f64,
    rng: rand_chacha::ChaCha8Rng,
    /// Largest backlog found at the start of a probe (must stay 0: recovery works).
    inherited_s: f64,
    /// The wedge model's state: wedged since a probe above its capacity.
    wedged: bool,
    /// Every this-many-th probe, a CPU hog outside the run stalls the host for 4 of its seconds
    /// (seen by the control, as the stand's signals would show it): an environment failure,
    /// not the service's. With it, every probe records its signals for the attribution.
    stall_every: Option<u32>,
    /// Probes run so far (confirming shelves and checks not counted).
    probes_run: u32,
    /// Rates of the probes a stall was injected into.
    stalled_at: Vec<f64>,
}

impl Sim {
    fn new(model: Model, seed: u64) -> Sim {
        Sim {
            model,
            now: 0.0,
            backlog_s: 0.0,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
            inherited_s: 0.0,
            wedged: false,
            stall_every: None,
            probes_run: 0,
            stalled_at: Vec::new(),
        }
    }

    /// One second of a FIFO queue of capacity `c` offered `rate`: work arriving is rate × 1/c
    /// seconds, served 1 s. Returns the requests done and the second's worst wait, ms.
    fn queue_second(&mut self, rate: f64, c: f64) -> (f64, f64) {
        let start = self.backlog_s;
        self.backlog_s = (self.backlog_s + rate / c - 1.0).max(0.0);
        let done = if start + rate / c > 1.0 { c } else { rate };
        (done, 1000.0 * start.max(self.backlog_s))
    }

    /// Records `n` requests at `lat_ms` with jitter spread over 20 quantile points.
    fn record(s: &mut Second, n: u64, lat_ms: f64, spread: f64, outcome: Outcome) {
        if n == 0 {
            return;
        }
        let pts = 20u64.min(n);
        for k in 0..pts {
            let cnt = n / pts + u64::from(k < n % pts);
            // Quantiles of a distribution whose top point is `lat_ms`, the bottom lat/spread.
            let q = k as f64 / (pts - 1).max(1) as f64;
            let v = lat_ms / spread.powf(1.0 - q);
            let us = (v * 1000.0).clamp(1.0, 3.6e9) as u64;
            s.tags[0].latency.saturating_record_n(us, cnt);
            s.tags[0].service.saturating_record_n(us, cnt);
            for _ in 0..cnt {
                s.tags[0].counts.add(outcome);
            }
        }
    }
}

impl ProbeRunner for Sim {
    fn run(&mut self, plan: &Plan, spec: &ProbeSpec) -> Result<StackAnalysis, String> {
        let (rate, dur) = match plan.stages[..] {
            [Stage::Hold { rate, duration }] => (rate, duration.as_secs_f64()),
            _ => return Err("the simulation runs one hold stage".into()),
        };
        if spec.kind == ceiling_analyze::ProbeKind::Probe {
            self.inherited_s = self.inherited_s.max(self.backlog_s);
            self.probes_run += 1;
        }
        let stalled = spec.kind == ceiling_analyze::ProbeKind::Probe
            && self
                .stall_every
                .is_some_and(|k| self.probes_run.is_multiple_of(k));
        if stalled {
            self.stalled_at.push(rate);
        }
        // A per-probe factor for the noisy model (drawn once per run).
        let noise = match self.model {
            Model::Noisy { sigma, .. } => (sigma * normal(&mut self.rng)).exp(),
            Model::Stalls { sigma8, .. } => {
                let window = (dur - 2.0).max(1.0);
                (sigma8 * (8.0 / window).sqrt() * normal(&mut self.rng)).exp()
            }
            _ => 1.0,
        };
        let mut acc = RunAccumulator::new(plan, &spec.label);
        let (mut rows, mut signals) = (Vec::new(), Vec::new());
        let mut burst = 1.0;
        if let Model::Wedge { c, .. } = self.model {
            self.wedged |= rate > c;
        }
        for t in 0..dur.round() as u32 {
            let mut s = Second::new(t, Phase::Measure, 0, 1);
            let r = rate.round() as u64;
            s.offered = r;
            s.sent = r;
            let gen_bound =
                matches!(self.model, Model::GenLimited { g } | Model::GenStarved { g } if rate > g);
            ceiling_metrics::record_us(&mut s.lag, if gen_bound { 50_000 } else { 100 });
            s.generator_cpu = match (gen_bound, self.model) {
                (true, Model::GenStarved { .. }) => 12.0,
                (true, _) => 100.0,
                _ => 10.0,
            };
            match self.model {
                Model::Cliff { c } => {
                    let (done, wait_ms) = self.queue_second(rate, c);
                    Sim::record(&mut s, done.round() as u64, 2.0 + wait_ms, 1.5, Outcome::Ok);
                }
                Model::JitteryCliff {
                    c,
                    service_ms,
                    sigma,
                } => {
                    let (done, wait_ms) = self.queue_second(rate, c);
                    let jitter = (sigma * normal(&mut self.rng)).exp();
                    Sim::record(
                        &mut s,
                        done.round() as u64,
                        service_ms * jitter + wait_ms,
                        1.2,
                        Outcome::Ok,
                    );
                }
                Model::Bursty {
                    mu, sigma, block_s, ..
                } => {
                    if t % block_s == 0 {
                        burst = (sigma * normal(&mut self.rng)).exp();
                    }
                    let rho = rate / mu;
                    let p99 = if rho < 1.0 {
                        5.0 / (1.0 - rho)
                    } else {
                        60_000.0
                    } * burst;
                    Sim::record(&mut s, r, p99, 5.0, Outcome::Ok);
                }
                Model::Knee { mu } | Model::Noisy { mu, .. } | Model::Stalls { mu, .. } => {
                    let rho = rate / mu;
                    let p99 = if rho < 1.0 {
                        5.0 / (1.0 - rho)
                    } else {
                        60_000.0
                    } * noise;
                    let hog = stalled && (4..8).contains(&t);
                    Sim::record(
                        &mut s,
                        r,
                        if hog { p99.max(3000.0) } else { p99 },
                        5.0,
                        Outcome::Ok,
                    );
                    if self.stall_every.is_some() {
                        let mut row = TimeseriesRow::from_second(&s, &[]);
                        row.stack_cpu_pct = Some(if hog { 20.0 } else { 60.0 });
                        rows.push(row);
                        signals.push(stall_signals(t, hog));
                    }
                }
                Model::GenLimited { .. } | Model::GenStarved { .. } => {
                    Sim::record(&mut s, r, 3.0, 2.0, Outcome::Ok);
                }
                Model::Shed { c } => {
                    let ok = rate.min(c).round() as u64;
                    Sim::record(&mut s, ok, 4.0, 2.0, Outcome::Ok);
                    Sim::record(&mut s, r - ok, 0.5, 1.2, Outcome::Status5xx);
                }
                Model::Wedge { pool_held, .. } => {
                    if !self.wedged {
                        Sim::record(&mut s, r, 3.0, 2.0, Outcome::Ok);
                    }
                    let mut row = TimeseriesRow::from_second(&s, &[]);
                    row.stack_cpu_pct = Some(if self.wedged { 4.0 } else { 40.0 });
                    rows.push(row);
                    signals.push(wedge_signals(t, self.wedged, pool_held));
                }
            }
            acc.push_second(&s);
        }
        self.now += dur;
        let mut a = acc.finish();
        if !rows.is_empty() {
            ceiling_analyze::attribute_analysis(&mut a, &rows, &signals);
        }
        Ok(a)
    }
    fn idle(&mut self, d: Duration) {
        self.now += d.as_secs_f64();
        self.backlog_s = (self.backlog_s - d.as_secs_f64()).max(0.0);
    }
    fn now_s(&self) -> f64 {
        self.now
    }
}

/// The wedge model's signals in second `t`: a healthy 2-core host, the control prompt; a pool of
/// 64, in use as the model says.
fn wedge_signals(t: u32, wedged: bool, pool_held: bool) -> SignalRow {
    let scraped = !wedged || pool_held;
    SignalRow {
        t,
        host_cpus: Some(2.0),
        host_busy_pct: Some(if wedged { 10.0 } else { 60.0 }),
        other_cpu_pct: Some(2.0),
        stack_cpu_limit_pct: Some(200.0),
        pg_up: Some(true),
        pg_samples: Some(10),
        pg_active: Some(if wedged { 0.0 } else { 1.0 }),
        control_probes: Some(10),
        control_misses: Some(0),
        control_max_ms: Some(0.3),
        runtime_scrape_ok: Some(scraped),
        pool_max: scraped.then_some(64.0),
        pool_in_use: scraped.then_some(if wedged { 64.0 } else { 3.0 }),
        pool_pending: scraped.then_some(if wedged { 140.0 } else { 0.0 }),
        ..Default::default()
    }
}

/// The signals of second `t` on a 2-core host: healthy, or (`hog`) a process outside the run
/// holding 1.2 cores, the run queue long and the control (a trivial process beside the stack)
/// waiting 1.5 s — how the stand sees a host stall.
fn stall_signals(t: u32, hog: bool) -> SignalRow {
    SignalRow {
        t,
        host_cpus: Some(2.0),
        host_busy_pct: Some(if hog { 200.0 } else { 90.0 }),
        other_cpu_pct: Some(if hog { 120.0 } else { 2.0 }),
        run_queue_max: Some(if hog { 8.0 } else { 1.0 }),
        stack_cpu_limit_pct: Some(200.0),
        pg_up: Some(true),
        pg_samples: Some(10),
        pg_active: Some(1.0),
        control_probes: Some(10),
        control_misses: Some(0),
        control_max_ms: Some(if hog { 1500.0 } else { 0.3 }),
        ..Default::default()
    }
}

fn plan() -> Plan {
    let text = r#"
name = "sim"
[[stages]]
hold = 1
duration = "1s"
[[requests]]
name = "get"
path = "/"
[slo]
p99 = "50ms"
errors = "1%"
[analysis]
trim_head = "2s"
trim_tail = "0s"
min_window = "8s"
[search]
start_rate = 100
probe = "10s"
probe_trim = "2s"
confirm = "0s"
drain = "1s"
check = "2s"
repeat = 2
tolerance = 0.05
max_time = "2h"
"#;
    parse_plan(text, Path::new("sim.toml")).unwrap()
}

struct Tally {
    trials: usize,
    covered: usize,
    narrowed: usize,
    /// Trials whose search lengthened its probes.
    lengthened: usize,
    virtual_min: Vec<f64>,
}

fn trials(model: Model, n: u64) -> Tally {
    trials_with(model, n, plan())
}

fn trials_with(model: Model, n: u64, p: Plan) -> Tally {
    let truth = model.truth(2.0, 8.0);
    let mut t = Tally {
        trials: 0,
        covered: 0,
        narrowed: 0,
        lengthened: 0,
        virtual_min: vec![],
    };
    for seed in 0..n {
        let mut sim = Sim::new(model, seed);
        let mut pl = p.clone();
        pl.load.seed = seed * 7919;
        let show = std::env::var("SIM_SHOW_SEED").ok() == Some(format!("{seed}"));
        let out: SearchOutcome = search(&pl, &mut sim, &SearchOptions::default(), &mut |m| {
            if show {
                eprintln!("{m}");
            }
        });
        assert_eq!(
            sim.inherited_s, 0.0,
            "{model:?} seed {seed}: a probe inherited a backlog"
        );
        assert!(
            out.ceiling_rps > 0.0,
            "{model:?} seed {seed}: probes passed but the ceiling is 0: {}",
            out.describe()
        );
        t.trials += 1;
        t.virtual_min.push(out.elapsed_s / 60.0);
        let longest = out
            .probes
            .iter()
            .filter(|v| v.kind == ceiling_analyze::ProbeKind::Probe)
            .map(|v| v.window_s)
            .fold(0.0, f64::max);
        t.lengthened += usize::from(longest > 8.5);
        if out.status == SearchStatus::Narrowed {
            t.narrowed += 1;
            let i = out.interval.as_ref().unwrap();
            assert!(i.half_width_rel() <= 0.05 + 1e-9);
            if i.lo <= truth && truth <= i.hi {
                t.covered += 1;
            } else {
                eprintln!(
                    "{model:?} seed {seed}: truth {truth:.1} outside {} (longest probe window {longest} s)",
                    out.describe()
                );
            }
        }
    }
    let mut v = t.virtual_min.clone();
    v.sort_by(f64::total_cmp);
    eprintln!(
        "{model:?}: truth {truth:.1} RPS; {} trials, {} lengthened their probes, {} narrowed to ±5%, interval covered the truth in {} ({:.0}%); search time median {:.1} min (virtual)",
        t.trials,
        t.lengthened,
        t.narrowed,
        t.covered,
        100.0 * t.covered as f64 / t.narrowed.max(1) as f64,
        v[v.len() / 2]
    );
    t
}

fn check(t: &Tally, min_coverage: f64) {
    assert_eq!(
        t.narrowed, t.trials,
        "every trial narrows within the budget"
    );
    let cov = t.covered as f64 / t.narrowed as f64;
    assert!(cov >= min_coverage, "coverage {cov:.2} < {min_coverage}");
}

#[test]
fn cliff_is_found_and_probes_never_inherit_a_backlog() {
    // Deterministic model: every trial must cover.
    let t = trials(Model::Cliff { c: 1000.0 }, 40);
    check(&t, 1.0);
}

#[test]
fn a_jittery_cliff_is_found_within_its_step() {
    // A quiet step: below 1000 RPS the p99 is 12 ms ± 15% (margin ≈ 0.24), above it the queue.
    // The pooled line through such a step once concluded 10% below a rate that passed (the
    // CLI's 400-RPS FIFO service with 1-s windows, docs/benchmarks/search.md §62). This model
    // covers the class over many seeds but did not reproduce that fault (it passes with the fix
    // taken out: 10-s windows put the step's failing side far above margin 1, outside the line's
    // band); the regression test is the recorded probes' in crates/analyze/tests/.
    let t = trials(
        Model::JitteryCliff {
            c: 1000.0,
            service_ms: 12.0,
            sigma: 0.15,
        },
        40,
    );
    check(&t, 0.95);
}

#[test]
fn smooth_knee() {
    let t = trials(Model::Knee { mu: 1200.0 }, 40);
    check(&t, 1.0);
}

#[test]
fn noisy_knee_interval_covers_the_truth_in_most_trials() {
    // sigma 0.15: p99 varies ±15% from probe to probe, more than this machine's usual drift.
    let t = trials(
        Model::Noisy {
            mu: 1200.0,
            sigma: 0.15,
        },
        200,
    );
    check(&t, 0.90);
    // ±15% per probe is not what lengthening is for
    assert_eq!(
        t.lengthened, 0,
        "a σ = 0.15 service made the search lengthen its probes"
    );
}

#[test]
fn lengthening_probes_is_opt_in() {
    // σ 0.9 at 8-s windows (×2.5 between replicates). With `search.max_probe` above the probe
    // the search lengthens its probes when replicates disagree (they then pool with the weight of
    // their length); by default it never does — replicates pool into longer windows instead.
    // (The stalls model's spread shrinks with the window, so it has no single long-run ceiling:
    // coverage is measured on the bursty model above.)
    let model = Model::Stalls {
        mu: 1200.0,
        sigma8: 0.9,
    };
    let mut p = plan();
    p.search.max_probe = Some(Duration::from_secs(30));
    p.search.max_time = Duration::from_secs(1200);
    let lengthened = |p: &Plan| {
        (0..10u64)
            .filter(|&seed| {
                let mut sim = Sim::new(model, seed);
                let mut pl = p.clone();
                pl.load.seed = seed * 7919;
                let out = search(&pl, &mut sim, &SearchOptions::default(), &mut |_| {});
                out.probes
                    .iter()
                    .any(|v| v.kind == ceiling_analyze::ProbeKind::Probe && v.window_s > 8.5)
            })
            .count()
    };
    let with = lengthened(&p);
    assert!(
        with >= 8,
        "only {with} of 10 trials lengthened with max_probe set"
    );
    p.search.max_probe = None;
    assert_eq!(
        lengthened(&p),
        0,
        "a search lengthened its probes without max_probe"
    );
}

#[test]
fn load_shedding_503s() {
    let t = trials(Model::Shed { c: 800.0 }, 40);
    check(&t, 1.0);
}

#[test]
fn a_generator_limit_gives_a_lower_bound_never_zero() {
    let p = plan();
    let mut sim = Sim::new(Model::GenLimited { g: 600.0 }, 1);
    let mut log = |m: &str| eprintln!("{m}");
    let out = search(&p, &mut sim, &SearchOptions::default(), &mut log);
    eprintln!("{}", out.describe());
    assert_eq!(
        out.status,
        SearchStatus::GeneratorBound,
        "{}",
        out.describe()
    );
    assert!(out.interval.is_none());
    // What the service held is reported as a lower bound close under the generator's limit.
    assert!(
        out.ceiling_rps >= 0.95 * 600.0 && out.ceiling_rps <= 600.0,
        "{}",
        out.describe()
    );
    assert!(out.describe().starts_with("≥ "), "{}", out.describe());
    // Every generator-bound probe was retried (with more threads first) after a recovery.
    let invalid: Vec<_> = out
        .probes
        .iter()
        .filter(|v| v.kind == ceiling_analyze::ProbeKind::Probe && v.generator_bound())
        .collect();
    assert!(invalid.len() >= 3);
    assert!(invalid
        .iter()
        .all(|v| v.recovery.as_ref().is_some_and(|r| r.recovered)));
    assert!(invalid.iter().any(|v| v.threads > 1) || SearchOptions::default().max_threads == 1);
}

#[test]
fn a_starved_generator_is_retried_without_more_threads() {
    // Truth: the generator falls behind above 600 RPS while using 12% of a core — starved by the
    // stack and PostgreSQL on a shared box (ktor-jdbc on the 2-core machine, docs/benchmarks.md
    // §41), not busy. Another thread cannot give it CPU: its probes are retried with the same
    // one thread, and the rate still caps the search when every retry is starved.
    let p = plan();
    let mut sim = Sim::new(Model::GenStarved { g: 600.0 }, 1);
    let mut lines = Vec::new();
    let mut log = |m: &str| lines.push(m.to_string());
    let out = search(&p, &mut sim, &SearchOptions::default(), &mut log);
    assert_eq!(
        out.status,
        SearchStatus::GeneratorBound,
        "{}",
        out.describe()
    );
    assert!(
        out.ceiling_rps >= 0.95 * 600.0 && out.ceiling_rps <= 600.0,
        "{}",
        out.describe()
    );
    let starved: Vec<_> = out
        .probes
        .iter()
        .filter(|v| v.kind == ceiling_analyze::ProbeKind::Probe && v.generator_bound())
        .collect();
    assert!(starved.len() >= 3, "retried: {}", starved.len());
    assert!(
        starved.iter().all(|v| v.threads == 1),
        "no retry with more threads"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("starved") && l.contains("same 1 thread")),
        "the log says why: {lines:?}"
    );
    // and what would remove it, unless it is already on
    assert!(
        lines
            .iter()
            .any(|l| l.contains("starved") && l.contains("--realtime")),
        "{lines:?}"
    );
    let mut rt = plan();
    rt.load.realtime = true;
    let mut sim = Sim::new(Model::GenStarved { g: 600.0 }, 1);
    let mut lines = Vec::new();
    let mut log = |m: &str| lines.push(m.to_string());
    search(&rt, &mut sim, &SearchOptions::default(), &mut log);
    assert!(
        lines.iter().any(|l| l.contains("starved"))
            && !lines.iter().any(|l| l.contains("--realtime")),
        "{lines:?}"
    );
}

#[test]
fn a_budget_too_short_to_narrow_still_keeps_time_for_the_confirming_shelf() {
    // the stalls model cannot narrow in 12 virtual minutes; the search must stop probing in
    // time to run its 60-s confirming shelf inside the budget, and say it was not narrowed
    let mut p = plan();
    p.search.confirm = Duration::from_secs(60);
    p.search.max_probe = Some(Duration::from_secs(30));
    p.search.max_time = Duration::from_secs(12 * 60);
    for seed in 0..5 {
        let mut sim = Sim::new(
            Model::Stalls {
                mu: 1200.0,
                sigma8: 0.9,
            },
            seed,
        );
        let mut pl = p.clone();
        pl.load.seed = seed * 7919;
        let out = search(&pl, &mut sim, &SearchOptions::default(), &mut |_| {});
        assert!(
            out.elapsed_s <= p.search.max_time.as_secs_f64() + 1e-6,
            "seed {seed}: {} s > budget",
            out.elapsed_s
        );
        if out.status == SearchStatus::Narrowed {
            continue; // a lucky trial narrowed and confirmed the usual way
        }
        assert_eq!(
            out.stop,
            StopReason::Budget,
            "seed {seed}: {}",
            out.describe()
        );
        assert!(
            out.probes
                .iter()
                .any(|v| v.kind == ceiling_analyze::ProbeKind::Confirm),
            "seed {seed}: the budget ended without the confirming shelf: {}",
            out.describe()
        );
        assert!(!out.confirms.is_empty(), "seed {seed}");
    }
}

#[test]
fn a_service_restarted_each_round_is_bracketed_although_every_overload_wedges_it() {
    // Source 002's WebFlux + R2DBC service on 2026-11-29: healthy up to its capacity, wedged for
    // good by any probe above it (the pool keeps its connections). Searched in rounds on a
    // freshly started service each (the lab's stacks), a wedge ends the round only: the next
    // round's start clears it, and the search brackets the capacity — the truth, 700 RPS — with
    // an interval, where a search that cannot restart the service ends at the first wedge with
    // a lower bound (the test above).
    let c = 700.0;
    for seed in 0..5u64 {
        let mut pl = plan();
        pl.load.seed = seed * 7919;
        pl.search.max_time = Duration::from_secs(3600);
        let mut s =
            ceiling_search::Search::new(&pl, &SearchOptions::default()).restarted_each_round();
        let mut sim = Sim::new(Model::Wedge { c, pool_held: true }, seed);
        let mut rounds = 0;
        while s.round_fits() && rounds < 60 {
            rounds += 1;
            sim.wedged = false; // a fresh start
            if s.run_round(&mut sim, Some(4), &mut |_| {}) {
                break;
            }
        }
        let wedges = s.wedges().len();
        let out = s.finish(None);
        eprintln!(
            "seed {seed}: {} rounds, {wedges} wedges: {}",
            rounds,
            out.describe()
        );
        assert!(
            wedges >= 1,
            "seed {seed}: no probe wedged it: {}",
            out.describe()
        );
        assert!(
            !matches!(out.stop, StopReason::NotRecovered { .. }),
            "seed {seed}: the search ended at a wedge: {}",
            out.stop
        );
        let iv = out
            .interval
            .as_ref()
            .unwrap_or_else(|| panic!("seed {seed}: no interval: {}", out.describe()));
        assert!(
            iv.lo <= c * 1.01 && iv.hi >= c * 0.99,
            "seed {seed}: the interval misses the capacity {c}: {}",
            out.describe()
        );
        // never a ceiling above what wedged it
        assert!(
            out.ceiling_rps <= c * 1.05,
            "seed {seed}: {}",
            out.describe()
        );
    }
}

#[test]
fn a_service_wedged_by_a_probe_ends_the_search_with_the_checks_why() {
    // both wedges: the search stops at the first probe above the capacity (the checks after it
    // never see a completion), keeps what passed below it, and its stop reason says why the last
    // check failed — from that check's own signals, not the probe's
    for (pool_held, want) in [
        (true, "the stack's DB pool is exhausted"),
        (false, "the stack stopped answering while idle"),
    ] {
        let mut sim = Sim::new(
            Model::Wedge {
                c: 700.0,
                pool_held,
            },
            1,
        );
        let mut log = |m: &str| eprintln!("{m}");
        let out = search(&plan(), &mut sim, &SearchOptions::default(), &mut log);
        eprintln!("{}\n{}", out.describe(), out.stop);
        let StopReason::NotRecovered { after, why, .. } = &out.stop else {
            panic!("pool_held {pool_held}: {:?}", out.stop);
        };
        assert!(*after > 700.0, "{after}");
        let why = why.as_deref().expect("the failed check was attributed");
        assert!(
            why.starts_with("nothing completed in the 2 s window"),
            "{why}"
        );
        assert!(why.contains(want), "pool_held {pool_held}: {why}");
        if pool_held {
            // the pool's evidence says the connections were held outside the database
            assert!(why.contains("without work in the database"), "{why}");
        }
        assert!(out.stop.to_string().contains(want), "{}", out.stop);
        // the checks that failed carry the same why; every probe below the capacity passed
        let check = out
            .probes
            .iter()
            .rev()
            .find(|v| v.kind == ceiling_analyze::ProbeKind::Check)
            .unwrap();
        assert!(
            check.failed() && check.why.as_deref() == Some(why),
            "{check:?}"
        );
        assert!(out
            .probes
            .iter()
            .filter(|v| v.rate <= 700.0 && v.kind == ceiling_analyze::ProbeKind::Probe)
            .all(|v| v.passed()));
        assert!(
            out.ceiling_rps > 0.0 && out.ceiling_rps <= 700.0,
            "{}",
            out.describe()
        );
    }
}

/// Φ, the standard normal CDF (Abramowitz–Stegun 7.1.26 through erf; error < 1.5e-7).
fn phi(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    if x >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// The 20 quantile points `Sim::record` spreads a second over (spread 5), relative to its top.
fn record_points() -> Vec<f64> {
    (0..20)
        .map(|k| 1.0 / 5.0f64.powf(1.0 - k as f64 / 19.0))
        .collect()
}

/// The bursty model's long-run p99 over its unburst top latency: the v with 1% of the pooled
/// mass above it, the mass of each point spread by the lognormal burst factor.
fn bursty_pooled_v1(sigma: f64) -> f64 {
    let pts = record_points();
    let tail = |v: f64| -> f64 {
        pts.iter()
            .map(|q| 0.05 * (1.0 - phi((v / q).ln() / sigma)))
            .sum()
    };
    let (mut lo, mut hi) = (0.01f64, 1000.0f64);
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if tail(mid) > 0.01 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo * hi).sqrt()
}

/// The bursty model's true transition zone for probes of the test plan (10 s, the first 2
/// trimmed): the rates where a single probe passes 90% and 10% of the time, by Monte Carlo over
/// the probe's bursts (a probe's p99 over its unburst top latency does not depend on the rate).
fn bursty_zone(mu: f64, sigma: f64, block_s: u32, draws: usize) -> (f64, f64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xB0);
    let pts = record_points();
    let mut m = Vec::with_capacity(draws);
    for _ in 0..draws {
        let mut vals = Vec::with_capacity(160);
        let mut burst = 1.0;
        for t in 0..10u32 {
            if t % block_s == 0 {
                burst = (sigma * normal(&mut rng)).exp();
            }
            if t >= 2 {
                vals.extend(pts.iter().map(|q| q * burst));
            }
        }
        vals.sort_by(f64::total_cmp);
        // the smallest value with at least 99% of the window at or below it
        m.push(vals[(0.99 * vals.len() as f64).ceil() as usize - 1]);
    }
    m.sort_by(f64::total_cmp);
    let q = |p: f64| m[(p * (m.len() - 1) as f64).round() as usize];
    // passes when top·M ≤ limit, top = 5/(1 − r/mu)
    let rate = |mq: f64| mu * (1.0 - 5.0 * mq / LIMIT_MS);
    (rate(q(0.9)), rate(q(0.1)))
}

/// What the bursty-knee trials found.
struct BurstyTally {
    trials: usize,
    narrowed: usize,
    covered: usize,
    zones: usize,
    zone_covered: usize,
    median_past_bracket: usize,
}

impl BurstyTally {
    /// At least 90% of the trials narrowed, and the interval covered the truth in at least 90% of
    /// those.
    fn assert_narrowed_and_covered(&self) {
        assert_90(self.narrowed, self.trials, "narrowed");
        assert_90(self.covered, self.narrowed, "coverage");
    }
}

/// Asserts that `part` is at least 90% of `whole` (`what` names the count in the message).
fn assert_90(part: usize, whole: usize, what: &str) {
    assert!(
        part * 10 >= whole * 9,
        "{what}: {part} of {whole}, under 90%"
    );
}

/// Searches the bursty knee (`sigma` per 8-s block) over `n` seeded trials (`SIM_TRIALS`
/// overrides; `SIM_SHOW_SEED` prints one search) and counts how often the interval covers the
/// long-run ceiling and the zone's outer bounds cover the true 90% → 10% band.
fn bursty_trials(sigma: f64, n: u64) -> (BurstyTally, f64, (f64, f64)) {
    let model = Model::Bursty {
        mu: 1200.0,
        sigma,
        block_s: 8,
    };
    let truth = model.truth(2.0, 8.0);
    let (z90, z10) = bursty_zone(1200.0, sigma, 8, 40_000);
    let n: u64 = std::env::var("SIM_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n);
    let mut t = BurstyTally {
        trials: n as usize,
        narrowed: 0,
        covered: 0,
        zones: 0,
        zone_covered: 0,
        median_past_bracket: 0,
    };
    let mut past_bracket = Vec::new();
    for seed in 0..n {
        let mut sim = Sim::new(model, seed);
        let mut pl = plan();
        pl.load.seed = seed * 7919;
        let show = std::env::var("SIM_SHOW_SEED").ok() == Some(format!("{seed}"));
        let out = search(&pl, &mut sim, &SearchOptions::default(), &mut |m| {
            if show {
                eprintln!("{m}");
            }
        });
        let probes: Vec<_> = out
            .probes
            .iter()
            .filter(|v| v.kind == ceiling_analyze::ProbeKind::Probe)
            .collect();
        if let Some(first_fail) = probes.iter().position(|v| v.failed()) {
            past_bracket.push(probes.len() - first_fail - 1);
        }
        let Some(i) = out.interval.as_ref() else {
            eprintln!("σ {sigma} seed {seed}: no interval: {}", out.describe());
            continue;
        };
        if out.status == SearchStatus::Narrowed {
            t.narrowed += 1;
            if i.lo <= truth && truth <= i.hi {
                t.covered += 1;
            } else {
                eprintln!(
                    "σ {sigma} seed {seed}: truth {truth:.1} outside {}",
                    out.describe()
                );
            }
        }
        if let Some(z) = &i.zone {
            t.zones += 1;
            if z.outer_lo <= z90 && z10 <= z.outer_hi {
                t.zone_covered += 1;
            } else {
                eprintln!(
                    "σ {sigma} seed {seed}: zone {z90:.0}–{z10:.0} outside {}",
                    z.describe()
                );
            }
        }
    }
    past_bracket.sort();
    t.median_past_bracket = past_bracket[past_bracket.len() / 2];
    eprintln!(
        "bursty σ {sigma}: pooled ceiling {truth:.1} RPS, single probes pass 90% → 10% between {z90:.1} and {z10:.1} RPS; {} trials, {} narrowed to ±5%, interval covered the pooled ceiling in {} ({:.0}%); {} reported a zone, its outer bounds covered the true zone in {} ({:.0}%); probes past the bracket: median {}",
        t.trials,
        t.narrowed,
        t.covered,
        100.0 * t.covered as f64 / t.narrowed.max(1) as f64,
        t.zones,
        t.zone_covered,
        100.0 * t.zone_covered as f64 / t.zones.max(1) as f64,
        t.median_past_bracket
    );
    (t, truth, (z90, z10))
}

#[test]
fn a_bursty_knee_pools_to_the_long_run_ceiling_far_below_where_single_probes_pass_half_the_time() {
    // σ 0.5 per 8-s block: a single probe's p99 varies by ~×1.5, and the SLO over the long run
    // fails well below where a single probe passes half the time.
    let (t, truth, (z90, z10)) = bursty_trials(0.5, 40);
    // The two are far apart (more than the ±5% tolerance): the long-run ceiling lies below most
    // of the zone.
    assert!(truth < z90 + 0.25 * (z10 - z90) && (z90 + z10) / 2.0 / truth > 1.06);
    t.assert_narrowed_and_covered();
    assert!(
        t.zones * 10 >= t.trials * 9,
        "only {} of {} reported a zone",
        t.zones,
        t.trials
    );
    assert!(
        t.zone_covered * 10 >= t.zones * 9,
        "zone coverage {}/{} < 90%",
        t.zone_covered,
        t.zones
    );
    // Measured 2026-11-27: median 72 probes past the bracket — a long-run tail made by rare
    // bursts needs them (docs/benchmarks.md §34); the bar is set just above so a regression
    // shows.
    assert!(
        t.median_past_bracket <= 80,
        "median {} probes past the bracket",
        t.median_past_bracket
    );
}

#[test]
fn a_sharp_bursty_knee_narrows_within_ten_probes_past_the_bracket() {
    // σ 0.15 per block: replicates disagree near the knee (a zone of a few percent), the search
    // pools them and narrows to ±5% quickly.
    let (t, _, _) = bursty_trials(0.15, 40);
    t.assert_narrowed_and_covered();
    assert!(
        t.median_past_bracket <= 10,
        "median {} probes past the bracket",
        t.median_past_bracket
    );
}

#[test]
fn the_bursty_models_pooled_truth_is_what_a_large_pool_of_its_probes_shows() {
    // The analytic long-run ceiling against 3000 simulated probes pooled by the production code.
    let model = Model::Bursty {
        mu: 1200.0,
        sigma: 0.5,
        block_s: 8,
    };
    let truth = model.truth(2.0, 8.0);
    let p = plan();
    let crit = ceiling_analyze::probe_criteria(&p);
    for (rate, want_above) in [(truth * 0.97, false), (truth * 1.03, true)] {
        let mut sim = Sim::new(model, 9);
        let probe = ceiling_analyze::probe_plan(&p, rate);
        let counts: Vec<_> = (0..3000)
            .map(|k| {
                let spec = ProbeSpec {
                    label: format!("p{k}"),
                    threads: 1,
                    kind: ceiling_analyze::ProbeKind::Probe,
                };
                let a = sim.run(&probe, &spec).unwrap();
                ceiling_analyze::ProbeVerdict::from_shelf(&a.shelves[0], &crit)
                    .counts
                    .unwrap()
            })
            .collect();
        let refs: Vec<_> = counts.iter().collect();
        let (m, _) = ceiling_analyze::pooled_margin(&refs, &vec![1; refs.len()]);
        eprintln!(
            "bursty at {rate:.0} RPS (truth {truth:.1}): pooled margin of 3000 probes {m:.3}"
        );
        assert_eq!(m > 1.0, want_above, "{rate}: {m}");
    }
}

/// Two simulated services searched in interleaved rounds of 4 probes (A B A B …) until both
/// concluded or `rounds` ran out; `each_round` may change the services before each round (the
/// box's drift). Returns both analyses, named "a" and "b", and their ranking's pair as
/// `ceiling search` ranks them.
fn search_pair(
    pl: &Plan,
    (mut ma, mut mb): (Sim, Sim),
    rounds: usize,
    mut each_round: impl FnMut(&mut Sim, &mut Sim),
) -> (Vec<StackAnalysis>, ceiling_analyze::PairRatio) {
    let mut sa = ceiling_search::Search::new(pl, &SearchOptions::default());
    let mut sb = ceiling_search::Search::new(pl, &SearchOptions::default());
    for _ in 0..rounds {
        each_round(&mut ma, &mut mb);
        let da = sa.run_round(&mut ma, Some(4), &mut |_| {});
        let db = sb.run_round(&mut mb, Some(4), &mut |_| {});
        if da && db {
            break;
        }
    }
    let criteria = ceiling_analyze::probe_criteria(pl);
    let stacks = vec![
        StackAnalysis::from_search("a", criteria.clone(), sa.finish(None)),
        StackAnalysis::from_search("b", criteria, sb.finish(None)),
    ];
    let pair = ceiling_analyze::rank_searched(&stacks, 0.05)[0].clone();
    (stacks, pair)
}

/// How the ranking of a pair whose true ratio a/b is known did over seeded trials.
#[derive(Default)]
struct RankTally {
    trials: usize,
    compared: usize,
    paired: usize,
    covered: usize,
    ranked: usize,
    /// b ranked above a: the wrong order, decided.
    wrong: usize,
}

impl RankTally {
    fn add(&mut self, seed: u64, p: &ceiling_analyze::PairRatio, truth: f64) {
        self.trials += 1;
        let (Some(lo), Some(hi)) = (p.lo, p.hi) else {
            eprintln!("seed {seed}: not compared: {}", p.describe());
            return;
        };
        if p.a == "b" && p.order == ceiling_analyze::Order::Higher {
            self.wrong += 1;
        }
        self.compared += 1;
        self.paired += usize::from(p.paired);
        let ratio = if p.a == "a" { truth } else { 1.0 / truth };
        let covered = lo <= ratio && ratio <= hi;
        self.covered += usize::from(covered);
        let miss = if covered {
            String::new()
        } else {
            format!(" — ratio {ratio:.3} outside")
        };
        eprintln!("seed {seed}: {}{miss}", p.describe());
        self.ranked += usize::from(p.a == "a" && p.order == ceiling_analyze::Order::Higher);
    }

    /// Says the tally; never b ranked above a, compared in ≥ 90% of trials, the interval
    /// covering the truth in ≥ 90% of those.
    fn assert_covered(&self, what: &str, truth: f64) {
        let t = self;
        eprintln!(
            "{what}: {} trials, {} compared ({} paired), the ratio's interval covered ×{truth:.3} in {}, a ranked above b in {}",
            t.trials, t.compared, t.paired, t.covered, t.ranked
        );
        assert_eq!(t.wrong, 0, "b ranked above a");
        assert_90(t.compared, t.trials, "compared");
        assert_90(t.covered, t.compared, "coverage");
    }
}

#[test]
fn two_services_ten_percent_apart_are_ranked_by_their_paired_ratio() {
    // Two noisy knees whose long-run ceilings differ by exactly ×1.1, searched in interleaved
    // rounds of 4 probes (A B A B …); the ratio's 95% interval (paired by rounds when the draws
    // keep both brackets, else from the two intervals) covers 1.1 in most trials and
    // excludes 1 (A ranked above B) in most.
    let (a, b) = (
        Model::Noisy {
            mu: 1320.0,
            sigma: 0.15,
        },
        Model::Noisy {
            mu: 1200.0,
            sigma: 0.15,
        },
    );
    let truth = a.truth(2.0, 8.0) / b.truth(2.0, 8.0);
    let mut tally = RankTally::default();
    for seed in 0..20u64 {
        let mut pa = plan();
        pa.load.seed = seed * 7919;
        let sims = (Sim::new(a, seed), Sim::new(b, 1000 + seed));
        let (stacks, p) = search_pair(&pa, sims, 100, |_, _| {});
        // `ceiling compare` of the two stacks of this search reads the ranking's own paired
        // interval (B against A: a over b), not two intervals taken for normals
        let mut run = ceiling_records::RunReport::new(&pa, "t");
        run.stacks = stacks;
        let c = ceiling_compare::compare_stacks(&run, "b", "a").unwrap();
        let ceiling = &c.stacks[0].ceiling;
        if p.a == "a" && p.lo.is_some() {
            assert!(
                matches!(
                    ceiling.test,
                    ceiling_compare::runs::Test::PairedRounds { .. }
                ),
                "{:?}",
                ceiling.test
            );
            assert_eq!(ceiling.ratio_ci, p.lo.zip(p.hi), "seed {seed}");
        }
        tally.add(seed, &p, truth);
    }
    tally.assert_covered("ranking", truth);
    assert!(
        tally.ranked * 10 >= tally.compared * 8,
        "ranked {}/{}",
        tally.ranked,
        tally.compared
    );
}

#[test]
fn two_services_on_a_drifting_box_keep_their_pairing_and_coverage() {
    // The box of docs/benchmarks/search.md §63: between rounds the whole machine moves (another
    // tenant, WAL stalls), every stack of a round alike — here a shared lognormal factor of sd
    // 0.15 on both services' capacity, drawn afresh each round, so a stack's ceiling wanders by
    // ±30% over a search while the ratio of the two stays exactly ×1.1. A stack fails in the
    // rounds where the box was slow, and a paired draw that leaves those rounds out has no
    // bracket. The pairing must survive that (paired by round in most trials, covering ×1.1,
    // never ranking b above a).
    let (mu_a, mu_b, sigma) = (1320.0, 1200.0, 0.05);
    let noisy = |mu: f64| Model::Noisy { mu, sigma };
    let truth = noisy(mu_a).truth(2.0, 8.0) / noisy(mu_b).truth(2.0, 8.0);
    let mut tally = RankTally::default();
    for seed in 0..20u64 {
        let mut pa = plan();
        pa.load.seed = seed * 7919;
        let sims = (
            Sim::new(noisy(mu_a), seed),
            Sim::new(noisy(mu_b), 1000 + seed),
        );
        let mut box_rng = rand_chacha::ChaCha8Rng::seed_from_u64(77 + seed);
        let (_, p) = search_pair(&pa, sims, 8, |ma, mb| {
            let box_speed = (0.15 * normal(&mut box_rng)).exp();
            ma.model = noisy(mu_a * box_speed);
            mb.model = noisy(mu_b * box_speed);
        });
        tally.add(seed, &p, truth);
    }
    // Measured 2026-11-29 (docs/benchmarks/search.md §83): 14 of 20 paired (7 before paired
    // draws that lose a bracket were set aside), the interval covering ×1.1 in 18 (15 before),
    // never the wrong order — and a ranked above b in only 7: each search's pooled estimate
    // moves with the rounds its probes fell in, so the paired interval is honest but wide. What
    // would decide more is a joint fit with a factor per round (not built); the test holds what
    // the estimator promises, and says the rest.
    tally.assert_covered("drifting box", truth);
    let t = &tally;
    assert!(
        t.paired * 3 >= t.compared * 2,
        "paired {}/{}",
        t.paired,
        t.compared
    );
}

/// Host stalls injected into one probe in five (a CPU hog outside the run, seen by the control):
/// the attribution names the host, the search keeps those probes as disturbed — out of the fit —
/// and runs the rate again, so the interval still covers the service's own ceiling.
#[test]
fn host_stalls_in_one_probe_in_five_are_rerun_not_counted() {
    let model = Model::Knee { mu: 1000.0 };
    let truth = model.truth(2.0, 8.0);
    let n = 20;
    let (mut narrowed, mut covered, mut injected, mut disturbed_total) = (0, 0, 0, 0);
    for seed in 0..n {
        let mut sim = Sim::new(model, seed);
        sim.stall_every = Some(5);
        let mut pl = plan();
        pl.load.seed = seed * 7919;
        let out = search(&pl, &mut sim, &SearchOptions::default(), &mut |_| {});
        let disturbed: Vec<_> = out
            .probes
            .iter()
            .filter(|p| p.disturbed.is_some())
            .collect();
        for p in &disturbed {
            assert!(!p.pooled(), "seed {seed}: a disturbed probe in the fit");
            assert!(
                sim.stalled_at.iter().any(|r| (r - p.rate).abs() < 0.5),
                "seed {seed}: a probe at {} RPS judged disturbed without a stall ({:?})",
                p.rate,
                p.disturbed
            );
        }
        // below the knee a stalled probe fails only because of the stall: each one is caught
        let below = sim.stalled_at.iter().filter(|&&r| r < truth).count();
        let caught_below = disturbed.iter().filter(|p| p.rate < truth).count();
        assert_eq!(
            caught_below,
            below,
            "seed {seed}: stalls below the ceiling at {:?}, judged disturbed: {:?}; {}",
            sim.stalled_at,
            disturbed.iter().map(|p| p.rate).collect::<Vec<_>>(),
            out.describe()
        );
        injected += sim.stalled_at.len();
        disturbed_total += disturbed.len();
        if out.status == SearchStatus::Narrowed {
            narrowed += 1;
            let i = out.interval.as_ref().unwrap();
            if i.lo <= truth && truth <= i.hi {
                covered += 1;
            } else {
                eprintln!("seed {seed}: truth {truth:.1} outside {}", out.describe());
            }
        } else {
            eprintln!("seed {seed}: not narrowed: {}", out.describe());
        }
    }
    eprintln!(
        "stalls in one probe in five: {injected} injected, {disturbed_total} judged disturbed and re-run; {narrowed}/{n} narrowed, {covered} covered the truth {truth:.1}"
    );
    assert!(
        injected >= n as usize,
        "too few stalls injected to test anything"
    );
    assert_eq!(narrowed, n, "every search concludes despite the stalls");
    assert!(covered as f64 >= 0.9 * n as f64, "coverage {covered}/{n}");
}

#[test]
fn no_round_starts_that_the_budget_cannot_hold_a_probe_in() {
    // A budget that ends between two rounds with room for a baseline check but not for a check
    // and a probe: the lab asks `round_fits` before starting (and warming up) a stack for the
    // next round, and the answer is no — the search ends on its budget after round 1, with no
    // round that started and ran no probe. The budget is set from round 1's own length (the
    // simulation is deterministic per seed), so the truth is known: round 1 leaves
    // check + probe/2 of it.
    let model = Model::Noisy {
        mu: 1200.0,
        sigma: 0.3,
    };
    let per_round = Some(3);
    for seed in 0..5 {
        let mut pl = plan();
        pl.load.seed = seed * 7919;
        let round_one = {
            let mut s = ceiling_search::Search::new(&pl, &SearchOptions::default());
            s.run_round(&mut Sim::new(model, seed), per_round, &mut |_| {});
            s.finish(None).elapsed_s
        };
        let left = pl.search.check + pl.search.probe / 2;
        pl.search.max_time = Duration::from_secs_f64(round_one) + left;
        let mut s = ceiling_search::Search::new(&pl, &SearchOptions::default());
        let mut sim = Sim::new(model, seed);
        let mut started = 0;
        while s.round_fits() {
            started += 1;
            if s.run_round(&mut sim, per_round, &mut |_| {}) {
                break;
            }
        }
        assert!(
            s.finished(),
            "seed {seed}: the loop ended with the search open"
        );
        let out = s.finish(None);
        assert_eq!(started, 1, "seed {seed}: {}", out.describe());
        assert_eq!(out.stop, StopReason::Budget, "seed {seed}");
        assert!(
            (out.elapsed_s - round_one).abs() < 1e-6,
            "seed {seed}: round 1 ran differently"
        );
        assert!(
            out.probes.iter().all(|v| v.round == 1),
            "seed {seed}: a second round ran: {}",
            out.describe()
        );
    }
}

#[test]
fn a_rounds_start_up_is_charged_to_the_budget_so_rounds_end_within_it() {
    // `--max-time` is the wall time a stack's search may take. In rounds on a freshly started
    // service each round begins with a start-up (start, verify, warm-up) that the lab charges
    // (`Search::charge`); with 60-s start-ups and budgets of 10–12 min, the rounds, their
    // start-ups and the stops between them must end within the budget (the last stop aside),
    // and no round may start whose start-up leaves no time for a probe — the truth is the
    // simulated clock itself. Without the charges the same loop runs past the budget, and
    // without the start-up in `round_fits` some budget starts a round that probes nothing
    // (both checked: this test fails when either is taken out).
    let model = Model::Noisy {
        mu: 1200.0,
        sigma: 0.3,
    };
    let startup = Duration::from_secs(60);
    let stop = Duration::from_secs(5);
    let run = |seed: u64, budget: Duration, charged: bool| {
        let mut pl = plan();
        pl.load.seed = seed * 7919;
        pl.search.max_time = budget;
        // an interval no search narrows to: the budget, not convergence, ends every search
        pl.search.tolerance = 0.002;
        let mut s = ceiling_search::Search::new(&pl, &SearchOptions::default());
        let mut sim = Sim::new(model, seed);
        let (mut rounds, mut empty_rounds) = (0, 0);
        while s.round_fits() {
            rounds += 1;
            sim.idle(startup);
            if charged {
                s.charge(startup);
            }
            let before = sim.probes_run;
            let ended = s.run_round(&mut sim, Some(3), &mut |_| {});
            if sim.probes_run == before {
                empty_rounds += 1;
            }
            sim.idle(stop);
            if charged {
                s.charge(stop);
            }
            if ended {
                break;
            }
        }
        (sim.now_s(), rounds, empty_rounds, s.used().as_secs_f64())
    };
    let mut overran_uncharged = 0;
    let mut cases = 0;
    for seed in 0..2 {
        for extra in (0..120).step_by(12) {
            let budget = Duration::from_secs(600 + extra);
            cases += 1;
            let (wall, rounds, empty, used) = run(seed, budget, true);
            let case = format!("seed {seed}, budget {} s", budget.as_secs());
            assert!(rounds >= 2, "{case}: {rounds} round(s)");
            // the last round may run to the budget's end; only its stop comes after
            assert!(
                wall <= (budget + stop).as_secs_f64() + 1e-6,
                "{case}: {wall:.0} s of wall time ({rounds} rounds)"
            );
            assert_eq!(empty, 0, "{case}: a round started that ran no probe");
            assert!(
                (used - wall).abs() < 1e-6,
                "{case}: the budget counted {used:.0} s of {wall:.0}"
            );
            let (wall_uncharged, _, _, _) = run(seed, budget, false);
            if wall_uncharged > (budget + stop).as_secs_f64() {
                overran_uncharged += 1;
            }
        }
    }
    assert_eq!(
        overran_uncharged, cases,
        "uncharged, some searches ended within their budget anyway: the test cannot tell"
    );
}
