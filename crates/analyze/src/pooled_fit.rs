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
//!   the ceiling is where the line crosses 0, its 95% interval by **Fieller's theorem** (exact
//!   for a ratio of normal estimates: unbounded when the slope is not clearly positive). The
//!   noise σ² of one probe's log margin is estimated from the residuals around the line and the
//!   spread of replicates at one rate, with one pseudo-observation at [`NOISE_PRIOR_SIGMA`] so two
//!   lucky probes cannot make a noisy service look exact. The interval reported is the hull of
//!   Fieller's interval and the isotonic bracket (the bracket holds the truth for a noise-free
//!   service whatever the curve's shape; the line may not).
//! * **Fallback.** Without a local model (a cliff: nothing probed near margin 1; too few probes),
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
use crate::stats::t_975;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// Probes whose own margin lies within ×/÷ this factor of 1 make the local model.
pub const LOCAL_BAND: f64 = 4.0;
/// Half-width (in ln rate) of the window of probes the local model keeps around its crossing.
const LOCAL_SPAN: f64 = 0.12;
/// How far (in ln rate) the local model's crossing may lie outside the rates it was fitted on.
const EXTRAPOLATE: f64 = 0.05;
/// Replicates' spread below this σ of one probe's ln(margin): the service is quiet, and the
/// isotonic bracket (which then holds the truth whatever the curve) widens the interval.
const QUIET_SIGMA: f64 = 0.1;
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
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Local {
    /// d ln(margin) / d ln(rate), fitted on the probes' own margins.
    pub b: f64,
    /// ln of the rate where the pooled SLO just holds.
    pub x0: f64,
    /// 95% interval of the crossing, RPS (`hi` = ∞ when not bounded above).
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// σ of one probe's ln(margin) around the slope.
    pub sigma: f64,
    /// Probes in the model (counting draws).
    pub n: f64,
    /// Lowest and highest ln(rate) in the model.
    pub x_range: (f64, f64),
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
        let counts: Option<Vec<&ProbeCounts>> = members.iter().map(|&k| samples[k].counts).collect();
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
        let local = local_model(samples, times);
        PooledFit {
            groups,
            fitted,
            local,
        }
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
        match self.local {
            Some(l) if l.crossing().ln() >= l.x_range.0 - EXTRAPOLATE
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
/// few, do not straddle it, or show no rise with the rate.
fn local_model(samples: &[Sample], times: &[u32]) -> Option<Local> {
    let band = LOCAL_BAND.ln();
    let first = fit_near(samples, times, |s| ln_margin(s.margin).abs() <= band)?;
    // Then only the probes within ±LOCAL_SPAN (in ln rate) of that crossing, where the curve is
    // nearly straight: a probe moved far along a wrong slope would own the pooled tail.
    let mut l = first;
    for _ in 0..2 {
        let xc = l.crossing().ln();
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
    let sigma = (ss / (sw - 2.0).max(1.0)).sqrt();
    let x_range = sel.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |r, &(i, _)| {
        (r.0.min(x(i)), r.1.max(x(i)))
    });
    let (a_, z_) = (x_range.0 - EXTRAPOLATE, x_range.1 + EXTRAPOLATE);
    let pooled = |x0: f64| Exceedance::at(samples, times, &sel, b, x0);
    // The pooled margin rises with x0 (every probe's latencies scale up along the slope).
    let x0 = solve(a_, z_, |x0| pooled(x0).mean())?;
    // The interval by inverting the test of "the pooled SLO just holds at x0": the lower end is
    // where the exceedance's upper 95% bound reaches the allowance, the upper end where its lower
    // bound does (Student's t over the probes, n − 2 degrees of freedom for the fitted slope).
    let t = t_975((n.round() as usize).saturating_sub(2).max(1));
    let lo = solve(a_, x0, |x0| pooled(x0).bound(t)).unwrap_or(a_);
    let hi = solve(x0, z_, |x0| pooled(x0).bound(-t)).unwrap_or(f64::INFINITY);
    Some(Local {
        b,
        x0,
        lo: lo.exp(),
        hi: hi.exp(),
        sigma,
        n,
        x_range,
    })
}

/// Where the increasing `f` crosses 1 within [a, z] (bisection on ln rate), `None` when it does
/// not.
fn solve(a: f64, z: f64, f: impl Fn(f64) -> f64) -> Option<f64> {
    let (fa, fz) = (f(a), f(z));
    if !(fa <= 1.0 && fz > 1.0) {
        return None;
    }
    let (mut lo, mut hi) = (a, z);
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if f(mid) <= 1.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some((lo + hi) / 2.0)
}

/// Every SLO term's per-probe exceedance over its allowance, with the probes moved to one rate.
struct Exceedance {
    /// Per term: (Σw·e, Σw·e², Σw, Σw²) over the probes.
    terms: Vec<(f64, f64, f64, f64)>,
}

impl Exceedance {
    /// The selected probes moved along slope `b` to ln(rate) `x0`: each probe's latencies scaled
    /// by e^{b·(x0 − x)}, so its share of requests over a limit L is its share over
    /// L·e^{−b·(x0 − x)}; its error and shortfall rates scale by the same factor. Each probe
    /// weighs its requests (the pooled window's share). Probes without counts (stored before
    /// pooling) contribute their moved margin as one term.
    fn at(samples: &[Sample], times: &[u32], sel: &[(usize, f64)], b: f64, x0: f64) -> Exceedance {
        let mut terms: Vec<(f64, f64, f64, f64)> = Vec::new();
        let mut add = |k: usize, w: f64, e: f64| {
            if terms.len() <= k {
                terms.resize(k + 1, (0.0, 0.0, 0.0, 0.0));
            }
            let t = &mut terms[k];
            t.0 += w * e;
            t.1 += w * e * e;
            t.2 += w;
            t.3 += w * w;
        };
        for &(i, _) in sel {
            let s = &samples[i];
            let f = (b * (x0 - s.rate.ln())).exp();
            for _ in 0..times[i] {
                let Some(c) = s.counts else {
                    add(0, s.weight, s.margin * f);
                    continue;
                };
                let w = c.requests.max(1) as f64;
                let mut k = 0;
                for l in &c.latency {
                    let allowed = (1.0 - l.percentile / 100.0).max(1e-9);
                    add(k, w, l.hist.share_above(l.limit_ms / f) / allowed);
                    k += 1;
                }
                let err = if c.requests > 0 {
                    c.errors as f64 / c.requests as f64
                } else {
                    0.0
                };
                add(
                    k,
                    w,
                    if c.nothing_completed {
                        CLAMP.1
                    } else if c.error_limit > 0.0 {
                        err * f / c.error_limit
                    } else if err > 0.0 {
                        CLAMP.1
                    } else {
                        0.0
                    },
                );
                if c.shortfall_limit > 0.0 {
                    add(k + 1, w, c.shortfall * f / c.shortfall_limit);
                }
            }
        }
        Exceedance { terms }
    }

    /// The pooled margin: the largest term's weighted mean.
    fn mean(&self) -> f64 {
        self.terms
            .iter()
            .map(|t| if t.2 > 0.0 { t.0 / t.2 } else { 0.0 })
            .fold(0.0, f64::max)
    }

    /// The largest term's mean + `t` standard errors (weighted; effective n = (Σw)²/Σw²).
    fn bound(&self, t: f64) -> f64 {
        self.terms
            .iter()
            .filter(|x| x.2 > 0.0)
            .map(|&(s1, s2, sw, sw2)| {
                let m = s1 / sw;
                let var = (s2 / sw - m * m).max(0.0);
                let n_eff = sw * sw / sw2;
                let se = if n_eff > 1.0 {
                    (var * n_eff / (n_eff - 1.0) / n_eff).sqrt()
                } else {
                    f64::INFINITY
                };
                m + t * se
            })
            .fold(0.0, f64::max)
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
    /// Fieller's interval of the local line through the pooled margins, hulled with the
    /// bracket.
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
pub fn transition_zone(
    samples: &[Sample],
    fit: &PooledFit,
    probe_s: f64,
    seed: u64,
) -> Option<TransitionZone> {
    let band = LOCAL_BAND.ln();
    let _ = fit;
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
    let (mut los, mut his) = (Vec::with_capacity(ZONE_DRAWS), Vec::with_capacity(ZONE_DRAWS));
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
    if let Some(l) = fit.local {
        if let Some((blo, bhi)) = Some((l.lo, l.hi)).filter(|i| i.1.is_finite()) {
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
                replicates: 0,
                method: IntervalMethod::PooledLine,
                zone: None,
                revised: None,
            });
        }
    }
    // No usable line: the isotonic bootstrap over the probes' own margins (as before pooling).
    let obs: Vec<Observation> = samples
        .iter()
        .map(|s| Observation {
            rate: s.rate,
            margin: s.margin,
        })
        .collect();
    let mut i = capacity::interval(&obs, seed)?;
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
    fn a_line_through_noisy_margins_narrows_past_the_bracket() {
        // ln margin = 8·ln(r/1000) ± 0.1: the line crosses at 1000.
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
        assert!((i.estimate / 1000.0 - 1.0).abs() < 0.01, "{i:?}");
    }

    #[test]
    fn a_flat_line_gives_no_fieller_interval() {
        // Margins that do not rise with the rate (noise only): the slope is not significant.
        let v: Vec<_> = [(900.0, 1.5), (950.0, 0.6), (1000.0, 1.4), (1050.0, 0.7)]
            .iter()
            .map(|&(r, m)| s(r, m))
            .collect();
        let f = PooledFit::of(&v);
        assert!(f.local.unwrap().fieller().is_none());
    }

    #[test]
    fn the_zone_brackets_where_single_probes_disagree() {
        // Single probes: ln margin = 10·ln(r/1000) + N(0, 0.5) (deterministic stand-ins). The
        // 90% → 10% points are at ln r = ±1.28·0.5/10 → 1000·e^∓0.064 = 938 … 1066.
        let zs = [-1.2, 0.3, 0.8, -0.5, 1.1, -0.9, 0.1, -0.2, 0.6, -0.7, 1.4, -1.3];
        let rates = [900.0, 940.0, 970.0, 1000.0, 1030.0, 1060.0, 1100.0];
        let mut v = Vec::new();
        let mut k = 0;
        for _ in 0..3 {
            for r in rates {
                v.push(s(r, (10.0 * (r / 1000.0f64).ln() + 0.5 * zs[k % zs.len()]).exp()));
                k += 1;
            }
        }
        let f = PooledFit::of(&v);
        let z = transition_zone(&v, &f, 20.0, 3).unwrap();
        assert!(z.lo < 1000.0 && z.hi > 1000.0, "{z:?}");
        assert!(z.outer_lo <= 938.0 && z.outer_hi >= 1066.0, "{z:?}");
        assert!(z.describe().contains("single 20-s probes"));
    }
}
