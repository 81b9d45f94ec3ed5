//! The ceiling from pooled probes: where the SLO, judged over all the probes at a rate as one
//! window, just holds — with a 95% interval — and the **transition zone** where a single probe
//! of the search's length passes with probability 90% → 10%.
//!
//! The two differ, and both matter. A service whose p99 over 20 s is a coin flip at rate r (one
//! probe catches a stall, the next does not) has no single "pass/fail" rate: replicates that
//! disagree are the knee, not noise to be averaged away by longer probes. The ceiling is where the
//! SLO holds over the long run (the pooled window); the zone says how sharp the knee is.
//!
//! * **Groups.** Probes at one rate pool into one window ([`crate::pool::pooled_margin`]); the
//!   group's `y = ln(pooled margin)` weighs as many probe-lengths as it holds.
//! * **Bracket.** An isotonic (non-decreasing) fit of `y` over rate, as before: the highest rate
//!   that holds and the lowest that fails.
//! * **Local model.** Near the crossing (groups whose pooled margin is within ×/÷[`LOCAL_BAND`]
//!   of 1, on both sides of it) `y` is fitted by weighted least squares as a line in `ln(rate)`;
//!   the ceiling is where the line crosses 0. The noise σ² of one probe's log margin comes from
//!   the spread of replicates at one rate once they give at least three degrees of freedom, else
//!   from the residuals around the line. The 95% interval is the crossing under 120 draws of the
//!   line and σ from their posterior (flat priors, σ² from its scaled χ², so few probes give heavy
//!   tails; the pooled window's margin of each draw from its bursts model), widened ×1.3 for the
//!   search's optional stopping, and open above when more than 5% of the draws find no crossing.
//!   Where the replicates say the service is quiet (σ ≤ 0.2) the interval is hulled with the
//!   isotonic bracket, which holds the truth of a noise-free service whatever the curve's shape;
//!   the line may not.
//! * **Fallback.** Without a local model (a cliff: nothing probed near margin 1; too few probes;
//!   a step across the bracket of ×4 and four replicate σ whose line would cross outside it),
//!   the isotonic bootstrap of [`crate::capacity::interval`] gives the interval.
//! * **Transition zone.** The probes' own log margins (each judged alone) near the crossing,
//!   fitted as a line in `ln(rate)` with normal residuals of σ₁: a single probe passes at rate r
//!   with probability Φ(−(a₁ + b₁·ln r)/σ₁). The zone runs from the 90% to the 10% point; its
//!   outer bounds (2.5th percentile of the lower end, 97.5th of the upper) come from the
//!   posterior of (a₁, b₁, σ₁) under flat priors, simulated.
//!
//! Coverage of known ceilings and zones is measured in `crates/search/tests/`.

use crate::capacity::{self, Bracket, CapacityInterval, Knee, Observation, CLIFF_RATIO};
use crate::pool::{pooled_margin, ProbeCounts};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// Probes whose own margin lies within ×/÷ this factor of 1 make the local model.
pub const LOCAL_BAND: f64 = 4.0;
/// Replicate degrees of freedom (probes at one rate) from which the bursts' σ is taken from the
/// replicates alone.
const MIN_REPLICATE_DF: usize = 3;
/// How much the local model's posterior interval is widened for the search's optional stopping.
const STOPPING_WIDEN: f64 = 1.3;
/// Draws of the local model's posterior for its interval.
const LOCAL_DRAWS: usize = 120;
/// Half-width (in ln rate) of the window of probes the local model keeps around its crossing.
const LOCAL_SPAN: f64 = 0.12;
/// How far (in ln rate) the local model's crossing may lie outside the rates it was fitted on.
const EXTRAPOLATE: f64 = 0.15;
/// A step across the bracket this many replicate σ high (and ×[`CLIFF_RATIO`]) is a cliff, not
/// noise.
const CLIFF_SIGMAS: f64 = 4.0;
/// Replicates' spread below this σ of one probe's ln(margin): the service is quiet, and the
/// isotonic bracket (which then holds the truth whatever the curve) widens the interval.
const QUIET_SIGMA: f64 = 0.2;
/// Fewest probes (counting replicates) in the local model.
pub const LOCAL_MIN_PROBES: f64 = 4.0;
/// z of the 90% point of a standard normal (the zone's ends).
const Z90: f64 = 1.281_551_565_545;
/// Draws of the zone's posterior.
const ZONE_DRAWS: usize = 2000;
/// Margins are clamped into [1e-6, 1e6] before the log (a term of 0; nothing completed).
const CLAMP: (f64, f64) = (1e-6, 1e6);

fn ln_margin(m: f64) -> f64 {
    if m.is_nan() {
        return CLAMP.1.ln();
    }
    m.clamp(CLAMP.0, CLAMP.1).ln()
}

/// One probe as the fit sees it.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// Offered rate, RPS.
    pub rate: f64,
    /// The probe's own SLO margin (its verdict alone).
    pub margin: f64,
    /// Its counts, for pooling (absent in searches stored before pooling: the group's margin is
    /// then the geometric mean of its probes').
    pub counts: Option<&'a ProbeCounts>,
    /// Probe-lengths it counts for (a confirming shelf of 3 min beside 30-s probes: 6).
    pub weight: f64,
    /// A probe of the search's own length (the zone is about those).
    pub standard: bool,
}

/// Probes at one rate, pooled.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Rate, RPS.
    pub rate: f64,
    /// ln of the pooled margin.
    pub y: f64,
    /// The term that bound the pooled margin.
    pub term: String,
    /// Probe-lengths pooled.
    pub weight: f64,
    /// Probes pooled.
    pub n: usize,
}

/// The local model near the crossing: the slope of one probe's log margin over ln(rate), and
/// every probe there moved along it to a common rate, where their exceedances (the share of
/// requests over each latency limit, the error rate, the shortfall) are averaged as one window's.
#[derive(Debug, Clone, PartialEq)]
pub struct Local {
    /// d ln(margin) / d ln(rate), fitted on the probes' own margins.
    pub b: f64,
    /// ln of the rate where the pooled SLO just holds.
    pub x0: f64,
    /// σ of one probe's ln(margin) around the slope.
    pub sigma: f64,
    /// Probes in the model (counting draws).
    pub n: f64,
    /// Lowest and highest ln(rate) in the model.
    pub x_range: (f64, f64),
    /// The probes in the model (index, weight).
    sel: Vec<(usize, f64)>,
    /// x̄, ȳ, Sxx, Σw and the sum of squares σ was estimated from.
    stats: (f64, f64, f64, f64, f64),
    /// σ's degrees of freedom.
    sigma_df: f64,
    /// σ of one probe's ln(margin) from replicates alone (probes at one rate), when any rate
    /// in the model has two or more.
    pub pure_sigma: Option<f64>,
}

impl Local {
    /// Where the pooled SLO just holds, RPS.
    pub fn crossing(&self) -> f64 {
        self.x0.exp()
    }
}

/// The pooled fit of a search's probes.
#[derive(Debug, Clone, PartialEq)]
pub struct PooledFit {
    /// Groups by rate, ascending.
    pub groups: Vec<Group>,
    /// Isotonic fit of the groups' y.
    pub fitted: Vec<f64>,
    /// The local line, when the probes near the crossing support one.
    pub local: Option<Local>,
}

/// Groups samples by rate (equal within 1e-9 relative), each drawn `times[i]` times.
fn groups(samples: &[Sample], times: &[u32]) -> Vec<Group> {
    let mut idx: Vec<usize> = (0..samples.len())
        .filter(|&i| times[i] > 0 && samples[i].rate.is_finite())
        .collect();
    idx.sort_by(|&a, &b| samples[a].rate.total_cmp(&samples[b].rate));
    let mut out: Vec<Group> = Vec::new();
    let mut i = 0;
    while i < idx.len() {
        let r = samples[idx[i]].rate;
        let mut j = i;
        while j < idx.len() && (samples[idx[j]].rate - r).abs() <= 1e-9 * r.abs().max(1.0) {
            j += 1;
        }
        let members = &idx[i..j];
        let weight: f64 = members
            .iter()
            .map(|&k| samples[k].weight * times[k] as f64)
            .sum();
        let n: usize = members.iter().map(|&k| times[k] as usize).sum();
        let counts: Option<Vec<&ProbeCounts>> =
            members.iter().map(|&k| samples[k].counts).collect();
        let (y, term) = match counts {
            Some(c) => {
                let t: Vec<u32> = members.iter().map(|&k| times[k]).collect();
                let (m, term) = pooled_margin(&c, &t);
                (ln_margin(m), term)
            }
            None => (
                members
                    .iter()
                    .map(|&k| ln_margin(samples[k].margin) * samples[k].weight * times[k] as f64)
                    .sum::<f64>()
                    / weight,
                "margin".into(),
            ),
        };
        out.push(Group {
            rate: r,
            y,
            term,
            weight,
            n,
        });
        i = j;
    }
    out
}

impl PooledFit {
    /// Fits `samples` (every one once).
    pub fn of(samples: &[Sample]) -> PooledFit {
        PooledFit::drawn(samples, &vec![1; samples.len()])
    }

    /// Fits `samples`, each counted `times[i]` times (a bootstrap draw).
    pub fn drawn(samples: &[Sample], times: &[u32]) -> PooledFit {
        let groups = groups(samples, times);
        let ys: Vec<f64> = groups.iter().map(|g| g.y).collect();
        let ws: Vec<f64> = groups.iter().map(|g| g.weight).collect();
        let fitted = capacity::isotonic(&ys, &ws);
        let mut fit = PooledFit {
            groups,
            fitted,
            local: None,
        };
        let reach = match fit.bracket() {
            Bracket::Between { lo, hi } => Some((lo.ln(), hi.ln(), fit.iso_crossing())),
            _ => None,
        };
        fit.local = local_model(samples, times, reach);
        // A cliff — the pooled margin jumps ×CLIFF_RATIO or more between the bracket's two rates —
        // is a step, not a line: a line through it is too shallow, so the failing probes moved
        // down it still fail below rates that passed, and its crossing lands outside the bracket
        // (a quiet 400-RPS queue bracketed at 380–409 once gave 342: crates/analyze/tests/
        // recorded_probes.rs). The step itself is then the evidence: the isotonic bootstrap.
        // A step is told from noise by the replicates: the jump must exceed what probes at one
        // rate differ by (a σ = 0.9 service's pooled margins jump ×4 between neighbours by chance,
        // and its long-run crossing may lie outside the bracket).
        if let (Bracket::Between { lo, hi }, Some(l)) = (fit.bracket(), &fit.local) {
            let jump = fit
                .margin_at(lo)
                .zip(fit.margin_at(hi))
                .map_or(0.0, |(m0, m1)| (m1 / m0).ln());
            let quiet_step = l
                .pure_sigma
                .is_some_and(|s| jump >= CLIFF_RATIO.ln().max(CLIFF_SIGMAS * s));
            let x = l.crossing();
            if quiet_step && (x < lo || x > hi) {
                fit.local = None;
            }
        }
        fit
    }

    /// The bracket of the pooled crossing.
    pub fn bracket(&self) -> Bracket {
        let Some(first_fail) = self.fitted.iter().position(|&f| f > 0.0) else {
            return match self.groups.last() {
                Some(g) => Bracket::AllPass { highest: g.rate },
                None => Bracket::Empty,
            };
        };
        if first_fail == 0 {
            return Bracket::AllFail {
                lowest: self.groups[0].rate,
            };
        }
        Bracket::Between {
            lo: self.groups[first_fail - 1].rate,
            hi: self.groups[first_fail].rate,
        }
    }

    /// The isotonic crossing (log-linear interpolation inside the bracket).
    fn iso_crossing(&self) -> Option<f64> {
        let i = self.fitted.iter().position(|&f| f > 0.0)?;
        if i == 0 {
            return None;
        }
        let (x0, x1) = (self.groups[i - 1].rate.ln(), self.groups[i].rate.ln());
        let (y0, y1) = (self.fitted[i - 1], self.fitted[i]);
        let t = if y1 > y0 { -y0 / (y1 - y0) } else { 0.5 };
        Some((x0 + t.clamp(0.0, 1.0) * (x1 - x0)).exp())
    }

    /// The point estimate: the local line's crossing when there is one (within the rates it was
    /// fitted on), else the isotonic crossing.
    pub fn estimate(&self) -> Option<f64> {
        match &self.local {
            Some(l)
                if l.crossing().ln() >= l.x_range.0 - EXTRAPOLATE
                    && l.crossing().ln() <= l.x_range.1 + EXTRAPOLATE =>
            {
                Some(l.crossing())
            }
            _ => self.iso_crossing(),
        }
    }

    /// Pooled margin of the group at `rate` (exact rates only).
    pub fn margin_at(&self, rate: f64) -> Option<f64> {
        self.groups
            .iter()
            .position(|g| (g.rate - rate).abs() <= 1e-9 * rate.abs().max(1.0))
            .map(|i| self.fitted[i].exp())
    }

    /// Probe-lengths pooled at `rate`.
    pub fn weight_at(&self, rate: f64) -> f64 {
        self.groups
            .iter()
            .find(|g| (g.rate - rate).abs() <= 1e-9 * rate.abs().max(1.0))
            .map_or(0.0, |g| g.weight)
    }
}

/// The local model (see the module doc), or `None` when the probes near the crossing are too
/// few, do not straddle it, or show no rise with the rate. `reach`: the isotonic bracket of the
/// pooled groups (ln of its ends) and its crossing, when they bracket.
fn local_model(
    samples: &[Sample],
    times: &[u32],
    reach: Option<(f64, f64, Option<f64>)>,
) -> Option<Local> {
    let band = LOCAL_BAND.ln();
    let first = fit_near(samples, times, |s| ln_margin(s.margin).abs() <= band)?;
    // Then only the probes within ±LOCAL_SPAN (in ln rate) of that crossing, where the curve is
    // nearly straight: a probe moved far along a wrong slope would own the pooled tail.
    let mut l = first;
    // A first line over the whole band is bent by the knee's curve: its low-rate probes' large
    // residuals, moved to the crossing as bursts, can pull its crossing far below the pooled
    // groups' own bracket — to rates whose pooled probes pass (a 400-RPS queue bracketed at
    // 403–409 once gave 144: crates/analyze/tests/recorded_probes.rs). The pooled evidence wins:
    // such a crossing is re-centred on the isotonic crossing before the local refits.
    // (Beyond 4 × LOCAL_SPAN in ln rate — ×/÷1.6 — the line's crossing contradicts the pooled
    // groups; nearer, a bursty knee's long-run crossing may lie a little outside their bracket.)
    let far = 4.0 * LOCAL_SPAN;
    let outside = |x: f64| reach.is_some_and(|(lo, hi, _)| x < lo - far || x > hi + far);
    let mut centre = l.crossing().ln();
    if outside(centre) {
        if let Some((_, _, Some(iso))) = reach {
            centre = iso.ln();
        }
    }
    for round in 0..2 {
        let xc = if round == 0 {
            centre
        } else {
            l.crossing().ln()
        };
        let mut span = LOCAL_SPAN;
        let next = loop {
            match fit_near(samples, times, |s| (s.rate.ln() - xc).abs() <= span) {
                Some(n) => break Some(n),
                None if span < 4.0 * LOCAL_SPAN => span *= 2.0,
                None => break None,
            }
        };
        match next {
            Some(n) => l = n,
            None => break,
        }
    }
    // Still beyond the pooled bracket's reach: no local model (the isotonic bootstrap instead).
    if outside(l.crossing().ln()) {
        return None;
    }
    Some(l)
}

/// The local model over the probes `keep` selects (drawn `times[i]` times).
fn fit_near(samples: &[Sample], times: &[u32], keep: impl Fn(&Sample) -> bool) -> Option<Local> {
    let sel: Vec<(usize, f64)> = (0..samples.len())
        .filter(|&i| times[i] > 0 && keep(&samples[i]))
        .map(|i| (i, samples[i].weight * times[i] as f64))
        .collect();
    let n: f64 = sel.iter().map(|&(i, _)| times[i] as f64).sum();
    let y = |i: usize| ln_margin(samples[i].margin);
    let x = |i: usize| samples[i].rate.ln();
    if n < LOCAL_MIN_PROBES
        || !sel.iter().any(|&(i, _)| y(i) <= 0.0)
        || !sel.iter().any(|&(i, _)| y(i) > 0.0)
    {
        return None;
    }
    let sw: f64 = sel.iter().map(|p| p.1).sum();
    let xbar = sel.iter().map(|&(i, w)| w * x(i)).sum::<f64>() / sw;
    let ybar = sel.iter().map(|&(i, w)| w * y(i)).sum::<f64>() / sw;
    let sxx: f64 = sel.iter().map(|&(i, w)| w * (x(i) - xbar).powi(2)).sum();
    if sxx <= 1e-12 {
        return None;
    }
    let b = sel
        .iter()
        .map(|&(i, w)| w * (x(i) - xbar) * (y(i) - ybar))
        .sum::<f64>()
        / sxx;
    if b <= 0.0 {
        return None;
    }
    let ss: f64 = sel
        .iter()
        .map(|&(i, w)| w * (y(i) - ybar - b * (x(i) - xbar)).powi(2))
        .sum();
    // The bursts' spread: from replicates at one rate when there are enough (pure noise), else
    // from the residuals around the line (which a curved knee inflates).
    let (mut ssw, mut dfw) = (0.0, 0usize);
    let mut k = 0;
    let mut order: Vec<usize> = sel.iter().map(|p| p.0).collect();
    order.sort_by(|&a, &b| samples[a].rate.total_cmp(&samples[b].rate));
    while k < order.len() {
        let r = samples[order[k]].rate;
        let mut j = k;
        let mut ys = Vec::new();
        while j < order.len() && (samples[order[j]].rate - r).abs() <= 1e-9 * r.max(1.0) {
            if samples[order[j]].standard {
                ys.extend(std::iter::repeat_n(y(order[j]), times[order[j]] as usize));
            }
            j += 1;
        }
        if ys.len() >= 2 {
            let m = ys.iter().sum::<f64>() / ys.len() as f64;
            ssw += ys.iter().map(|v| (v - m).powi(2)).sum::<f64>();
            dfw += ys.len() - 1;
        }
        k = j;
    }
    let pure_sigma = (dfw > 0).then(|| (ssw / dfw as f64).sqrt());
    let (ss, sigma_df) = if dfw >= MIN_REPLICATE_DF {
        (ssw, dfw as f64)
    } else {
        (ss, (sw - 2.0).max(1.0))
    };
    let sigma = (ss / sigma_df).sqrt();
    let x_range = sel
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |r, &(i, _)| {
            (r.0.min(x(i)), r.1.max(x(i)))
        });
    let (a_, z_) = (x_range.0 - EXTRAPOLATE, x_range.1 + EXTRAPOLATE);
    let model = Bursts::of(samples, times, &sel);
    let line = Line {
        xbar,
        ybar,
        b,
        sigma,
    };
    let x0 = solve(a_, z_, |x| model.margin(&line, x))?;
    Some(Local {
        b,
        x0,
        sigma,
        n,
        x_range,
        sel,
        stats: (xbar, ybar, sxx, sw, ss),
        sigma_df,
        pure_sigma,
    })
}

impl Local {
    /// The 95% interval of the crossing, RPS: the crossing under draws of the line and of σ from
    /// their posterior (flat priors; σ² from its scaled-χ² with n − 2 degrees of freedom), so few
    /// probes — whose bursts are few — give wide intervals. `hi` is ∞ when more than 5% of the
    /// draws find no crossing.
    pub fn interval(&self, samples: &[Sample]) -> (f64, f64) {
        let times = vec![1u32; samples.len()];
        let model = Bursts::of(samples, &times, &self.sel);
        let (xbar, ybar, sxx, sw, ss) = self.stats;
        let (a_, z_) = (self.x_range.0 - EXTRAPOLATE, self.x_range.1 + EXTRAPOLATE);
        let df = self.sigma_df;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x10CA1 ^ self.sel.len() as u64);
        let mut xs = Vec::with_capacity(LOCAL_DRAWS);
        let mut failed = 0;
        for _ in 0..LOCAL_DRAWS {
            let chi2: f64 = (0..df.round() as usize)
                .map(|_| normal(&mut rng).powi(2))
                .sum();
            let s2 = ss / chi2.max(1e-12);
            let d = Line {
                xbar,
                ybar: ybar + (s2 / sw).sqrt() * normal(&mut rng),
                b: self.b + (s2 / sxx).sqrt() * normal(&mut rng),
                sigma: s2.sqrt(),
            };
            if d.b <= 0.0 {
                failed += 1;
                continue;
            }
            match solve(a_ - 0.2, z_ + 0.2, |x| model.margin(&d, x)) {
                Some(x) => xs.push(x),
                None => failed += 1,
            }
        }
        if failed * 20 > LOCAL_DRAWS || xs.len() < 10 {
            return (a_.exp(), f64::INFINITY);
        }
        xs.sort_by(f64::total_cmp);
        let q = |p: f64| xs[((xs.len() as f64 - 1.0) * p).round() as usize];
        // Widened around the estimate: the posterior knows nothing of the search stopping as soon
        // as its interval looks narrow (which favours lucky draws); the factor is calibrated on
        // the simulated knees of crates/search/tests/simulated_models.rs.
        let (lo, hi) = (q(0.025).min(self.x0), q(0.975).max(self.x0));
        (
            (self.x0 - STOPPING_WIDEN * (self.x0 - lo)).exp(),
            (self.x0 + STOPPING_WIDEN * (hi - self.x0)).exp(),
        )
    }
}

/// Where the increasing `f` crosses 1 within [a, z] (bisection on ln rate), `None` when it does
/// not.
fn solve(a: f64, z: f64, f: impl Fn(f64) -> f64) -> Option<f64> {
    let (fa, fz) = (f(a), f(z));
    if !(fa <= 1.0 && fz > 1.0) {
        return None;
    }
    let (mut lo, mut hi) = (a, z);
    for _ in 0..30 {
        let mid = (lo + hi) / 2.0;
        if f(mid) <= 1.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some((lo + hi) / 2.0)
}

/// The local line of one probe's ln(margin) over ln(rate), with the probes' spread σ around it.
struct Line {
    xbar: f64,
    ybar: f64,
    b: f64,
    sigma: f64,
}

impl Line {
    fn at(&self, x: f64) -> f64 {
        self.ybar + self.b * (x - self.xbar)
    }
}

/// Standard normal quadrature: nodes every 0.5 from −4 to 4, weights ∝ φ.
fn quadrature() -> Vec<(f64, f64)> {
    let nodes: Vec<f64> = (-8..=8).map(|k| k as f64 * 0.5).collect();
    let w: Vec<f64> = nodes.iter().map(|z| (-z * z / 2.0).exp()).collect();
    let sw: f64 = w.iter().sum();
    nodes.into_iter().zip(w).map(|(z, w)| (z, w / sw)).collect()
}

/// One latency term of a probe, laid out for [`Bursts::margin`]'s inner loop, which asks millions
/// of times per interval "what share of this window lies above `limit / factor`": its limit and
/// allowance (1 − percentile), and the share above each log bucket from the window's first
/// occupied one to its last (dense, so the question is a subtraction, a floor and an index rather
/// than an `exp`, a division and a binary search; the answer is the same one, compared in ln).
struct TermShape {
    /// ln(limit in µs) in bucket steps, counted from the first occupied bucket: a bucket
    /// `first + j` lies at or below `limit / e^f` when `j ≤ limit_steps − f / LOG_STEP`.
    limit_steps: f64,
    /// The share of requests the term allows above its limit (1 − percentile).
    allowed: f64,
    /// `above[j]`: the share of the window above the last occupied bucket ≤ `first + j`; empty
    /// for a window without requests (whose share above anything is 1).
    above: Vec<f64>,
}

impl TermShape {
    fn of(l: &crate::pool::LatencyCounts) -> TermShape {
        let total = l.hist.len().max(1) as f64;
        let mut left = l.hist.len() as f64;
        let first = l.hist.0.first().map_or(0, |&(b, _)| i64::from(b));
        let mut above = Vec::new();
        for &(b, n) in &l.hist.0 {
            let j = (i64::from(b) - first) as usize;
            // buckets between two occupied ones keep the share above the lower one
            let prev = above.last().copied().unwrap_or(1.0);
            above.resize(j, prev);
            left -= n as f64;
            above.push(left / total);
        }
        TermShape {
            limit_steps: (1000.0 * l.limit_ms).ln() / crate::pool::LOG_STEP - first as f64,
            allowed: (1.0 - l.percentile / 100.0).max(1e-9),
            above,
        }
    }

    /// The share of the window above `limit / e^f`.
    #[inline]
    fn share_above(&self, f_steps: f64) -> f64 {
        let j = self.limit_steps - f_steps;
        // NaN and anything below the first bucket: the whole window lies above
        if j.is_nan() || j < 0.0 {
            return 1.0;
        }
        // truncation is the floor here (j ≥ 0), without a call to libm's floor (no SSE4.1 in the
        // baseline target); the cast saturates
        match self.above.get(j as usize) {
            Some(&a) => a,
            None => self.above.last().copied().unwrap_or(1.0),
        }
    }
}

/// One probe's window for the pooled model: per latency term its values (ms, ascending) with
/// the share of the window above each, and its error and shortfall rates.
struct ProbeShape {
    x: f64,
    y: f64,
    w: f64,
    latency: Vec<TermShape>,
    err: f64,
    err_limit: f64,
    short: f64,
    short_limit: f64,
    dead: bool,
}

/// The probes near the crossing as a model of the pooled window at any rate: each probe's
/// window moved to the line at that rate (its own burst — its residual from the line — taken
/// out), then spread again over the bursts the line's σ says occur (a lognormal factor on all its
/// latencies). So the pooled tail comes from every probe's shape and from σ, which every probe
/// measures, not only from the few probes that happened to catch a burst. Probes without counts
/// (stored before pooling) pool as their margin, moved the same way.
struct Bursts {
    probes: Vec<ProbeShape>,
    quad: Vec<(f64, f64)>,
}

impl Bursts {
    fn of(samples: &[Sample], times: &[u32], sel: &[(usize, f64)]) -> Bursts {
        let mut probes = Vec::new();
        for &(i, _) in sel {
            let s = &samples[i];
            let w0 = s.counts.map_or(s.weight, |c| c.requests.max(1) as f64);
            let shape = match s.counts {
                Some(c) => ProbeShape {
                    x: s.rate.ln(),
                    y: ln_margin(s.margin),
                    w: w0 * times[i] as f64,
                    latency: c.latency.iter().map(TermShape::of).collect(),
                    err: if c.requests > 0 {
                        c.errors as f64 / c.requests as f64
                    } else {
                        0.0
                    },
                    err_limit: c.error_limit,
                    short: c.shortfall,
                    short_limit: c.shortfall_limit,
                    dead: c.nothing_completed,
                },
                None => ProbeShape {
                    x: s.rate.ln(),
                    y: ln_margin(s.margin),
                    w: w0 * times[i] as f64,
                    latency: Vec::new(),
                    err: 0.0,
                    err_limit: 0.0,
                    short: 0.0,
                    short_limit: 0.0,
                    dead: false,
                },
            };
            probes.push(shape);
        }
        Bursts {
            probes,
            quad: quadrature(),
        }
    }

    /// The pooled margin at ln(rate) `x` under `line`: the largest SLO term's pooled exceedance
    /// over its allowance (latency terms: the share of requests over the limit).
    fn margin(&self, line: &Line, x: f64) -> f64 {
        let sw: f64 = self.probes.iter().map(|p| p.w).sum();
        let nterms = self
            .probes
            .iter()
            .map(|p| p.latency.len())
            .max()
            .unwrap_or(0);
        let mut worst = 0.0f64;
        // the burst factors' ln in bucket steps, once per call rather than once per probe
        let steps: Vec<(f64, f64)> = self
            .quad
            .iter()
            .map(|&(z, wq)| (line.sigma * z / crate::pool::LOG_STEP, wq))
            .collect();
        for k in 0..nterms {
            let mut e = 0.0;
            for p in &self.probes {
                let Some(term) = p.latency.get(k) else {
                    continue;
                };
                // ln of the factor that takes this probe to the line at x, burst removed
                let base = (line.at(x) - p.y) / crate::pool::LOG_STEP;
                let mut share = 0.0;
                for &(z, wq) in &steps {
                    share += wq * term.share_above(base + z);
                }
                e += p.w * share / term.allowed;
            }
            worst = worst.max(e / sw);
        }
        let (mut err, mut short, mut plain) = (0.0, 0.0, 0.0);
        for p in &self.probes {
            if p.dead {
                return CLAMP.1;
            }
            if p.latency.is_empty() {
                plain += p.w * ((line.at(x) - p.y).exp() * p.y.exp());
            }
            if p.err_limit > 0.0 {
                err += p.w * p.err * (line.b * (x - p.x)).exp() / p.err_limit;
            } else if p.err > 0.0 {
                return CLAMP.1;
            }
            if p.short_limit > 0.0 {
                short += p.w * p.short * (line.b * (x - p.x)).exp() / p.short_limit;
            }
        }
        worst.max(err / sw).max(short / sw).max(plain / sw)
    }
}

/// How the interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// The isotonic bracket with a bootstrap of the margins' noise (searches stored before
    /// pooling; cliffs; too few probes near the crossing).
    #[default]
    Bracket,
    /// The local line through the pooled margins: the crossing under draws from its posterior
    /// (hulled with the bracket on a quiet service).
    PooledLine,
}

/// Where a single probe of the search's length passes with probability 90% (`lo`) → 10% (`hi`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransitionZone {
    /// Rate where a single probe passes 90% of the time, RPS.
    pub lo: f64,
    /// Rate where it passes 10% of the time, RPS.
    pub hi: f64,
    /// 2.5th percentile of `lo` (the zone's outer lower bound).
    pub outer_lo: f64,
    /// 97.5th percentile of `hi` (`∞`, null in JSON: not bounded).
    #[serde(with = "crate::capacity::inf_as_null")]
    pub outer_hi: f64,
    /// Kept seconds of the probes it is about.
    pub probe_s: f64,
    /// Probes it was fitted on.
    pub probes: usize,
    /// σ of one probe's ln(margin) around the line.
    pub sigma: f64,
}

impl TransitionZone {
    /// Width of the zone as a fraction of its middle.
    pub fn width_rel(&self) -> f64 {
        (self.hi - self.lo) / ((self.hi + self.lo) / 2.0)
    }
    /// `sharp: single 20-s probes pass 90% → 10% between 22,013 and 24,187 RPS`.
    pub fn describe(&self) -> String {
        format!(
            "knee {}: single {:.0}-s probes pass 90% → 10% between {:.0} and {:.0} RPS (outer 95%: {:.0}–{})",
            if self.width_rel() <= 0.10 { "sharp" } else { "gradual" },
            self.probe_s,
            self.lo,
            self.hi,
            self.outer_lo,
            if self.outer_hi.is_finite() {
                format!("{:.0}", self.outer_hi)
            } else {
                "∞".into()
            }
        )
    }
}

/// A standard normal variate (Box–Muller).
fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// The transition zone of the standard probes near the crossing (groups within ×/÷
/// [`LOCAL_BAND`] of 1, and at least 4 probes), `None` without one; `probe_s` is their length.
pub fn transition_zone(samples: &[Sample], probe_s: f64, seed: u64) -> Option<TransitionZone> {
    let band = LOCAL_BAND.ln();
    let pts: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.standard && ln_margin(s.margin).abs() <= band)
        .map(|s| (s.rate.ln(), ln_margin(s.margin)))
        .collect();
    let n = pts.len();
    if n < 4 || !pts.iter().any(|p| p.1 <= 0.0) || !pts.iter().any(|p| p.1 > 0.0) {
        return None;
    }
    let nf = n as f64;
    let xbar = pts.iter().map(|p| p.0).sum::<f64>() / nf;
    let ybar = pts.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = pts.iter().map(|p| (p.0 - xbar).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = pts.iter().map(|p| (p.0 - xbar) * (p.1 - ybar)).sum::<f64>() / sxx;
    if b <= 0.0 {
        return None;
    }
    let ss: f64 = pts
        .iter()
        .map(|p| (p.1 - ybar - b * (p.0 - xbar)).powi(2))
        .sum();
    let df = n - 2;
    let sigma = (ss / df as f64).sqrt();
    let ends = |ybar: f64, b: f64, s: f64| {
        (
            (xbar + (-Z90 * s - ybar) / b).exp(),
            (xbar + (Z90 * s - ybar) / b).exp(),
        )
    };
    let (lo, hi) = ends(ybar, b, sigma);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (mut los, mut his) = (
        Vec::with_capacity(ZONE_DRAWS),
        Vec::with_capacity(ZONE_DRAWS),
    );
    for _ in 0..ZONE_DRAWS {
        let chi2: f64 = (0..df).map(|_| normal(&mut rng).powi(2)).sum();
        let s2 = ss / chi2.max(1e-12);
        let s = s2.sqrt();
        let bd = b + (s2 / sxx).sqrt() * normal(&mut rng);
        let yd = ybar + (s2 / nf).sqrt() * normal(&mut rng);
        if bd <= 0.0 {
            los.push(0.0);
            his.push(f64::INFINITY);
            continue;
        }
        let (l, h) = ends(yd, bd, s);
        los.push(l);
        his.push(h);
    }
    los.sort_by(f64::total_cmp);
    his.sort_by(f64::total_cmp);
    let q = |v: &[f64], p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    Some(TransitionZone {
        lo,
        hi,
        outer_lo: q(&los, 0.025).min(lo),
        outer_hi: q(&his, 0.975).max(hi),
        probe_s,
        probes: n,
        sigma,
    })
}

/// The ceiling with its 95% interval from pooled probes (see the module doc), or `None` when the
/// probes do not bracket a crossing. `seed` makes the fallback bootstrap reproducible.
pub fn pooled_interval(samples: &[Sample], seed: u64) -> Option<CapacityInterval> {
    let fit = PooledFit::of(samples);
    let Bracket::Between { lo, hi } = fit.bracket() else {
        return None;
    };
    let estimate = fit.estimate()?;
    let m0 = fit.margin_at(lo).unwrap_or(f64::NAN);
    let m1 = fit.margin_at(hi).unwrap_or(f64::NAN);
    let knee = if m1 >= CLIFF_RATIO * m0 {
        Knee::Cliff
    } else {
        Knee::Smooth
    };
    if let Some(l) = &fit.local {
        let (mut blo, mut bhi) = l.interval(samples);
        // Where the draws find no crossing the interval is open; rates whose pooled margin is
        // off by more than ×LOCAL_BAND still bound it (they failed, or held, beyond doubt).
        let band = LOCAL_BAND.ln();
        if let Some(g) = fit.groups.iter().find(|g| g.y > band && g.rate > estimate) {
            bhi = bhi.min(g.rate);
        }
        if let Some(g) = fit
            .groups
            .iter()
            .rev()
            .find(|g| g.y < -band && g.rate < estimate)
        {
            blo = blo.max(g.rate);
        }
        // The isotonic bracket holds the truth of a quiet service whatever its curve.
        let (ilo, ihi) = if l.sigma <= QUIET_SIGMA {
            (blo.min(lo), bhi.max(hi))
        } else {
            (blo, bhi)
        };
        return Some(CapacityInterval {
            estimate: estimate.clamp(ilo, ihi),
            lo: ilo,
            hi: ihi,
            bracket_lo: lo,
            bracket_hi: hi,
            margins: (m0, m1),
            knee,
            replicates: LOCAL_DRAWS,
            method: IntervalMethod::PooledLine,
            zone: None,
            revised: None,
        });
    }
    // No local model: the isotonic bootstrap over the probes' own margins (as before pooling),
    // else — when those do not bracket although the pooled groups do — over the groups, each as
    // many observations as the probe-lengths it pooled.
    let singles: Vec<Observation> = samples
        .iter()
        .map(|s| Observation {
            rate: s.rate,
            margin: s.margin,
        })
        .collect();
    let groups: Vec<Observation> = fit
        .groups
        .iter()
        .flat_map(|g| {
            std::iter::repeat_n(
                Observation {
                    rate: g.rate,
                    margin: g.y.exp(),
                },
                (g.weight.round() as usize).max(1),
            )
        })
        .collect();
    let mut i = capacity::interval(&singles, seed).or_else(|| capacity::interval(&groups, seed))?;
    // The bootstrap's estimate is the probes' isotonic crossing; keep the pooled one.
    i.estimate = estimate.clamp(i.lo, i.hi);
    i.bracket_lo = lo;
    i.bracket_hi = hi;
    i.margins = (m0, m1);
    i.knee = knee;
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(rate: f64, margin: f64) -> Sample<'static> {
        Sample {
            rate,
            margin,
            counts: None,
            weight: 1.0,
            standard: true,
        }
    }

    #[test]
    fn a_local_model_through_noisy_margins_narrows_past_the_bracket() {
        // ln margin = 8·ln(r/1000) ± 0.1 (no counts: each probe pools as its margin): the
        // crossing is at 1000, inside an interval narrower than ±5%.
        let mut v = Vec::new();
        let noise = [0.1, -0.1, 0.05, -0.05, 0.08, -0.08, 0.0, 0.02];
        for (k, r) in [900.0, 950.0, 980.0, 1020.0, 1050.0, 1100.0, 960.0, 1040.0]
            .iter()
            .enumerate()
        {
            v.push(s(*r, (8.0 * (r / 1000.0f64).ln() + noise[k]).exp()));
        }
        let i = pooled_interval(&v, 1).unwrap();
        assert_eq!(i.method, IntervalMethod::PooledLine);
        assert!(i.lo <= 1000.0 && 1000.0 <= i.hi, "{i:?}");
        assert!(i.half_width_rel() < 0.05, "{i:?}");
        assert!((i.estimate / 1000.0 - 1.0).abs() < 0.02, "{i:?}");
    }

    #[test]
    fn margins_that_do_not_rise_make_no_local_model() {
        // Noise only: the slope is not positive, nothing is fitted locally.
        let v: Vec<_> = [(900.0, 1.5), (950.0, 0.6), (1000.0, 1.4), (1050.0, 0.7)]
            .iter()
            .map(|&(r, m)| s(r, m))
            .collect();
        assert!(PooledFit::of(&v).local.is_none());
    }

    #[test]
    fn the_zone_brackets_where_single_probes_disagree() {
        // Single probes: ln margin = 10·ln(r/1000) + N(0, 0.5) (deterministic stand-ins). The
        // 90% → 10% points are at ln r = ±1.28·0.5/10 → 1000·e^∓0.064 = 938 … 1066.
        let zs = [
            -1.2, 0.3, 0.8, -0.5, 1.1, -0.9, 0.1, -0.2, 0.6, -0.7, 1.4, -1.3,
        ];
        let rates = [900.0, 940.0, 970.0, 1000.0, 1030.0, 1060.0, 1100.0];
        let mut v = Vec::new();
        let mut k = 0;
        for _ in 0..3 {
            for r in rates {
                v.push(s(
                    r,
                    (10.0 * (r / 1000.0f64).ln() + 0.5 * zs[k % zs.len()]).exp(),
                ));
                k += 1;
            }
        }
        let z = transition_zone(&v, 20.0, 3).unwrap();
        assert!(z.lo < 1000.0 && z.hi > 1000.0, "{z:?}");
        assert!(z.outer_lo <= 938.0 && z.outer_hi >= 1066.0, "{z:?}");
        assert!(z.describe().contains("single 20-s probes"));
    }
}
