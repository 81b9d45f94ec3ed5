//! The capacity search as an estimator (pure functions, no I/O).
//!
//! Each probe measures the **SLO margin** at one offered rate: for every term of the SLO, the
//! measured value over its limit (p99 / 350 ms, error rate / 1%, throughput shortfall / the
//! stability tolerance); the probe's margin is the largest term. A probe passes when its margin is
//! at most 1. The margin grows with the offered rate, so the ceiling is the rate where the margin
//! crosses 1.
//!
//! * **Fit.** `ln(margin)` against rate, made non-decreasing by isotonic regression
//!   (pool-adjacent-violators, one weight per probe). Isotonic regression assumes nothing about the
//!   curve's shape, so a smooth knee and a cliff are fitted alike, and a noisy probe that passes
//!   above a failing one is pooled with it instead of being believed.
//! * **Bracket.** The highest rate whose fitted margin is at most 1 and the lowest whose fitted
//!   margin is above 1. Within the bracket the crossing is placed by linear interpolation of `ln(margin)` (exact
//!   for a locally exponential knee; for a cliff, merely a point inside the bracket).
//! * **Interval.** A bootstrap over the probes. When rates near the crossing (mean margin within
//!   ×/÷[`NOISE_BAND`] of 1) were probed more than once, their within-rate spread is pooled and
//!   every replicate moves each rate's mean by that noise (σ² drawn from its χ² posterior, so few
//!   replicates give heavy tails, with one pseudo-observation at [`NOISE_PRIOR_SIGMA`] before any
//!   replicate exists). A rate far from the crossing moves by the spread of replicates of its own
//!   size instead (with [`NOISE_PRIOR_DF`] pseudo-observations): the knee's coin flips are not
//!   the noise of a p99 far below it. Each replicate refits and takes its bracket; the 95% interval runs
//!   from the 2.5th percentile of the replicates' lower ends to the 97.5th percentile of their upper
//!   ends. So the interval is never narrower than the bracket the data support (the search's
//!   resolution), and widens where replicates disagree (the service's noise). The search therefore
//!   replicates the bracket's ends before it calls the interval narrow. Coverage of a known ceiling
//!   is measured in `crates/search/tests/simulated_models.rs` (docs/benchmarks.md §8).

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// One measured margin at one offered rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Offered rate, requests/s.
    pub rate: f64,
    /// The probe's SLO margin (largest term; > 1 fails).
    pub margin: f64,
}

/// Margins below this are clamped (a term of exactly 0 would be −∞ in log space).
pub const MIN_MARGIN: f64 = 1e-6;
/// Margins above this are clamped (a probe where nothing completed has an unbounded margin).
pub const MAX_MARGIN: f64 = 1e6;

fn log_margin(m: f64) -> f64 {
    if m.is_nan() {
        return MAX_MARGIN.ln();
    }
    m.clamp(MIN_MARGIN, MAX_MARGIN).ln()
}

/// Pool-adjacent-violators: the non-decreasing sequence closest to `ys` in weighted least squares.
/// `ys` must already be ordered by the independent variable; `ws` are positive weights.
pub fn isotonic(ys: &[f64], ws: &[f64]) -> Vec<f64> {
    assert_eq!(ys.len(), ws.len(), "one weight per value");
    // Blocks of (mean, weight, length) kept non-decreasing by merging backwards.
    let mut blocks: Vec<(f64, f64, usize)> = Vec::with_capacity(ys.len());
    for (&y, &w) in ys.iter().zip(ws) {
        blocks.push((y, w, 1));
        while blocks.len() > 1 {
            let n = blocks.len();
            let (m2, w2, l2) = blocks[n - 1];
            let (m1, w1, l1) = blocks[n - 2];
            if m1 <= m2 {
                break;
            }
            blocks.truncate(n - 2);
            let w = w1 + w2;
            blocks.push(((m1 * w1 + m2 * w2) / w, w, l1 + l2));
        }
    }
    blocks
        .into_iter()
        .flat_map(|(m, _, l)| std::iter::repeat_n(m, l))
        .collect()
}

/// Observations grouped by rate, with the isotonic fit of their mean log margins.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// Distinct rates, ascending.
    pub rates: Vec<f64>,
    /// Fitted `ln(margin)` at each rate (non-decreasing).
    pub fitted: Vec<f64>,
    /// Observations at each rate.
    pub counts: Vec<usize>,
}

/// Where the fitted margin crosses 1, as far as the probes tell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bracket {
    /// No observations.
    Empty,
    /// Every rate probed passes: the ceiling is at least `highest`.
    AllPass {
        /// Highest passing rate.
        highest: f64,
    },
    /// Every rate probed fails: the ceiling is below `lowest`.
    AllFail {
        /// Lowest failing rate.
        lowest: f64,
    },
    /// Passes up to `lo`, fails from `hi`.
    Between {
        /// Highest rate whose fitted margin is ≤ 1.
        lo: f64,
        /// Lowest rate whose fitted margin is > 1.
        hi: f64,
    },
}

/// Groups `(rate, log margin)` pairs by rate (rates equal within 1e-9 relative), ascending.
fn group(obs: &[(f64, f64)]) -> Vec<(f64, Vec<f64>)> {
    let mut v: Vec<(f64, f64)> = obs.iter().copied().filter(|o| o.0.is_finite()).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut g: Vec<(f64, Vec<f64>)> = Vec::new();
    for (r, y) in v {
        match g.last_mut() {
            Some((gr, ys)) if (r - *gr).abs() <= 1e-9 * gr.abs().max(1.0) => ys.push(y),
            _ => g.push((r, vec![y])),
        }
    }
    g
}

impl Fit {
    /// Fits `obs`.
    pub fn of(obs: &[Observation]) -> Fit {
        let pairs: Vec<(f64, f64)> = obs.iter().map(|o| (o.rate, log_margin(o.margin))).collect();
        Fit::of_groups(&group(&pairs))
    }

    fn of_groups(g: &[(f64, Vec<f64>)]) -> Fit {
        let means: Vec<f64> = g
            .iter()
            .map(|(_, ys)| ys.iter().sum::<f64>() / ys.len() as f64)
            .collect();
        let ws: Vec<f64> = g.iter().map(|(_, ys)| ys.len() as f64).collect();
        let rates: Vec<f64> = g.iter().map(|(r, _)| *r).collect();
        let counts: Vec<usize> = g.iter().map(|(_, ys)| ys.len()).collect();
        Fit::of_means(&rates, &means, &ws, &counts)
    }

    /// Fits one mean per rate with explicit weights (the bootstrap's draws: a rate's weight is
    /// its precision, probes over the variance its mean was drawn with).
    fn of_means(rates: &[f64], means: &[f64], weights: &[f64], counts: &[usize]) -> Fit {
        Fit {
            rates: rates.to_vec(),
            fitted: isotonic(means, weights),
            counts: counts.to_vec(),
        }
    }

    /// The bracket of the crossing (a fitted `ln(margin)` > 0 fails).
    pub fn bracket(&self) -> Bracket {
        let Some(first_fail) = self.fitted.iter().position(|&f| f > 0.0) else {
            return match self.rates.last() {
                Some(&highest) => Bracket::AllPass { highest },
                None => Bracket::Empty,
            };
        };
        if first_fail == 0 {
            return Bracket::AllFail {
                lowest: self.rates[0],
            };
        }
        Bracket::Between {
            lo: self.rates[first_fail - 1],
            hi: self.rates[first_fail],
        }
    }

    /// The crossing by linear interpolation of the fitted `ln(margin)` inside the bracket.
    pub fn crossing(&self) -> Option<f64> {
        let i = self.fitted.iter().position(|&f| f > 0.0)?;
        if i == 0 {
            return None;
        }
        let (x0, x1) = (self.rates[i - 1], self.rates[i]);
        let (y0, y1) = (self.fitted[i - 1], self.fitted[i]);
        let t = if y1 > y0 { (0.0 - y0) / (y1 - y0) } else { 0.5 };
        Some(x0 + t.clamp(0.0, 1.0) * (x1 - x0))
    }

    /// Observations at `rate` (0 when never probed).
    pub fn count_at(&self, rate: f64) -> usize {
        self.rates
            .iter()
            .position(|&r| (r - rate).abs() <= 1e-9 * rate.abs().max(1.0))
            .map(|i| self.counts[i])
            .unwrap_or(0)
    }

    /// Fitted margin at `rate` (exact rates only).
    pub fn margin_at(&self, rate: f64) -> Option<f64> {
        self.rates
            .iter()
            .position(|&r| (r - rate).abs() <= 1e-9 * rate.abs().max(1.0))
            .map(|i| self.fitted[i].exp())
    }
}

/// How the margin rises through the ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Knee {
    /// The margin rises gradually: a few percent more load costs a few percent more latency.
    Smooth,
    /// The margin jumps (≥ ×[`CLIFF_RATIO`] across the final bracket): past the ceiling the
    /// service collapses (a queue that grows without bound), so stay well below it.
    Cliff,
}

/// Across the final bracket, a fitted margin that grows by at least this factor is a cliff.
pub const CLIFF_RATIO: f64 = 4.0;

/// The ceiling with its 95% interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityInterval {
    /// Point estimate: where the fitted margin crosses 1.
    pub estimate: f64,
    /// Lower end of the 95% interval.
    pub lo: f64,
    /// Upper end of the 95% interval (`f64::INFINITY` serialises as null: not bounded above).
    #[serde(with = "inf_as_null")]
    pub hi: f64,
    /// Highest rate whose fitted margin is ≤ 1.
    pub bracket_lo: f64,
    /// Lowest rate whose fitted margin is > 1.
    pub bracket_hi: f64,
    /// Fitted margin at `bracket_lo` and `bracket_hi`.
    pub margins: (f64, f64),
    /// Smooth or cliff.
    pub knee: Knee,
    /// Bootstrap replicates used (for the pooled line: its posterior draws).
    pub replicates: usize,
    /// How the interval was computed (absent in searches stored before pooling: the bracket's
    /// bootstrap).
    #[serde(default)]
    pub method: crate::pooled_fit::IntervalMethod,
    /// Where single probes of the search's length pass 90% → 10% (pooled searches with enough
    /// probes near the crossing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<crate::pooled_fit::TransitionZone>,
    /// Why the interval was revised after the probes' fit (a confirming shelf that failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revised: Option<String>,
}

impl CapacityInterval {
    /// Half-width of the interval as a fraction of the estimate (∞ when open above).
    pub fn half_width_rel(&self) -> f64 {
        if !self.hi.is_finite() || self.estimate <= 0.0 {
            return f64::INFINITY;
        }
        (self.hi - self.lo) / 2.0 / self.estimate
    }
}

/// An `f64` that may be `+∞` (an interval open above, a probe where nothing completed) as JSON:
/// null for ∞, read back as ∞ (serde_json writes any non-finite float as null and cannot read it
/// back as a float).
pub(crate) mod inf_as_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            v.serialize(s)
        } else {
            s.serialize_none()
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

/// Rates whose mean margin lies within ×/÷ this factor of 1 lend their replicates' spread to the
/// noise estimate: the noise that matters is the one near the crossing (far below it a p99 of 2 or
/// 3 ms is a large ratio that changes nothing; far above it an overloaded queue's p99 varies by
/// seconds).
pub const NOISE_BAND: f64 = 3.0;

/// Within-rate sum of squares and degrees of freedom of the log margins near the crossing: at
/// the bracket's two ends (`ends`), whatever their margins, and at any rate whose mean margin lies
/// within ×/÷[`NOISE_BAND`] of 1.
fn pooled_noise(
    groups: &[(f64, Vec<f64>)],
    means: &[f64],
    ends: Option<(f64, f64)>,
) -> (f64, usize) {
    let band = NOISE_BAND.ln();
    let is_end = |r: f64| {
        ends.is_some_and(|(lo, hi)| {
            (r - lo).abs() <= 1e-9 * lo.max(1.0) || (r - hi).abs() <= 1e-9 * hi.max(1.0)
        })
    };
    within_rates((0.0, 0), groups, means, |r, m| m.abs() < band || is_end(r))
}

/// `start` plus the within-rate sum of squares of the log margins, and its degrees of freedom,
/// over the rates probed more than once that `keep(rate, mean)` chooses.
fn within_rates(
    start: (f64, usize),
    groups: &[(f64, Vec<f64>)],
    means: &[f64],
    keep: impl Fn(f64, f64) -> bool,
) -> (f64, usize) {
    let (mut ss, mut df) = start;
    for ((r, ys), m) in groups.iter().zip(means) {
        if ys.len() >= 2 && keep(*r, *m) {
            ss += ys.iter().map(|y| (y - m).powi(2)).sum::<f64>();
            df += ys.len() - 1;
        }
    }
    (ss, df)
}

/// The prior on the noise of `ln(margin)` (one pseudo-observation), combined with the replicates'
/// own spread: a 0.3 standard deviation (×1.35 between probes) is what short probes on a shared
/// machine show on a quiet service.
pub const NOISE_PRIOR_SIGMA: f64 = 0.3;

/// The weight of that prior, in pseudo-observations: four, so that a rate with no replicates of
/// its own size moves by a t-distribution with 4 degrees of freedom around its mean (one
/// pseudo-observation made it a Cauchy: a margin of 0.11 failed in 4% of the replicates).
pub const NOISE_PRIOR_DF: usize = 4;

/// The noise of a rate whose mean log margin is `m`: the within-rate sum of squares and degrees of
/// freedom of the replicates whose mean lies within ×/÷[`NOISE_BAND`] of its own, plus the prior
/// ([`NOISE_PRIOR_DF`] pseudo-observations at [`NOISE_PRIOR_SIGMA`]).
fn local_noise(groups: &[(f64, Vec<f64>)], means: &[f64], m: f64) -> (f64, usize) {
    let band = NOISE_BAND.ln();
    let prior = (
        NOISE_PRIOR_DF as f64 * NOISE_PRIOR_SIGMA.powi(2),
        NOISE_PRIOR_DF,
    );
    within_rates(prior, groups, means, |_, mj| (mj - m).abs() < band)
}

/// The noise of the margins near the crossing: the pooled within-rate standard deviation of
/// `ln(margin)` over rates probed more than once that are the fit's bracket ends or whose mean
/// margin lies within ×/÷ `NOISE_BAND` (3) of 1, with its degrees of freedom; `None` before any
/// such replicate.
/// A standard deviation of 0.5 means repeated probes at one rate differ by a factor of ~1.6.
pub fn noise(obs: &[Observation]) -> Option<(f64, usize)> {
    let pairs: Vec<(f64, f64)> = obs.iter().map(|o| (o.rate, log_margin(o.margin))).collect();
    let groups = group(&pairs);
    let means: Vec<f64> = groups
        .iter()
        .map(|(_, ys)| ys.iter().sum::<f64>() / ys.len() as f64)
        .collect();
    let ends = match Fit::of_groups(&groups).bracket() {
        Bracket::Between { lo, hi } => Some((lo, hi)),
        _ => None,
    };
    let (ss, df) = pooled_noise(&groups, &means, ends);
    (df > 0).then(|| ((ss / df as f64).sqrt(), df))
}

/// A standard normal variate (Box–Muller).
fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Bootstrap replicates of [`interval`] (enough for stable 2.5/97.5 percentiles).
pub const BOOTSTRAP_REPLICATES: usize = 2000;

/// The ceiling and its 95% interval from every observation (see the module doc), or `None` when
/// the probes do not bracket a crossing. `seed` makes the bootstrap reproducible.
pub fn interval(obs: &[Observation], seed: u64) -> Option<CapacityInterval> {
    let fit = Fit::of(obs);
    let Bracket::Between { lo, hi } = fit.bracket() else {
        return None;
    };
    let estimate = fit.crossing()?;
    let pairs: Vec<(f64, f64)> = obs.iter().map(|o| (o.rate, log_margin(o.margin))).collect();
    let groups = group(&pairs);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut los = Vec::with_capacity(BOOTSTRAP_REPLICATES);
    let mut his = Vec::with_capacity(BOOTSTRAP_REPLICATES);
    let means: Vec<f64> = groups
        .iter()
        .map(|(_, ys)| ys.iter().sum::<f64>() / ys.len() as f64)
        .collect();
    let (ss, df) = pooled_noise(&groups, &means, Some((lo, hi)));
    // A weak prior on the noise (one pseudo-observation at σ = NOISE_PRIOR_SIGMA): two or three
    // replicates that happen to agree must not make a noisy service look exact.
    // With no replicate near the crossing yet, the prior alone sets the noise.
    let (ss, df) = (ss + NOISE_PRIOR_SIGMA.powi(2), df + 1);
    // Rates far from the crossing (mean margin beyond ×/÷NOISE_BAND of 1) move by the noise of
    // replicates of their own size instead: at a cliff a probe inside the transition zone is a
    // coin flip (ln margins of −0.3 and +1.1 at one rate), while a p99 of 40 ms far below the
    // knee moves by tens of percent, not by ×9. The knee's σ lent to every rate made such a rate
    // fail in some replicates and stretched the interval back to the first doubling's bracket (a
    // 16-core search of go-pgx: 16,000–32,000 around probes that bracketed 23,327–25,466).
    let band = NOISE_BAND.ln();
    let local: Vec<Option<(f64, usize)>> = means
        .iter()
        .map(|&m| (m.abs() >= band).then(|| local_noise(&groups, &means, m)))
        .collect();
    // Their σ² draws come from a generator of their own, so the draws near the crossing are the
    // same whether or not far rates exist.
    let mut rng_far = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0xFA2_0FF);
    let rates: Vec<f64> = groups.iter().map(|(r, _)| *r).collect();
    let counts: Vec<usize> = groups.iter().map(|(_, ys)| ys.len()).collect();
    let (mut drawn, mut weights) = (
        Vec::with_capacity(rates.len()),
        Vec::with_capacity(rates.len()),
    );
    for _ in 0..BOOTSTRAP_REPLICATES {
        // Parametric: each rate's mean moves by the pooled noise of the replicates near the
        // crossing (σ² drawn from its scaled-χ² posterior, so few replicates give heavier
        // tails), or by its own size's (above), weighted by how many probes that rate has.
        let chi2: f64 = (0..df).map(|_| normal(&mut rng).powi(2)).sum();
        let s2_near = ss / chi2.max(1e-12);
        drawn.clear();
        weights.clear();
        for ((g, m), own) in groups.iter().zip(&means).zip(&local) {
            let s2 = match own {
                Some((ss, df)) => {
                    let chi2: f64 = (0..*df).map(|_| normal(&mut rng_far).powi(2)).sum();
                    ss / chi2.max(1e-12)
                }
                None => s2_near,
            };
            let n = g.1.len() as f64;
            drawn.push(m + (s2 / n).sqrt() * normal(&mut rng));
            // Precision weights: rates near the crossing share one σ², so among them this is
            // the probe count as before; a far rate measured tightly is not averaged away by a
            // coin flip next to it.
            weights.push(n / s2.max(1e-12));
        }
        let f = Fit::of_means(&rates, &drawn, &weights, &counts);
        match f.bracket() {
            Bracket::Between { lo, hi } => {
                los.push(lo);
                his.push(hi);
            }
            // Every resampled rate passes: nothing bounds the ceiling from above.
            Bracket::AllPass { highest } => {
                los.push(highest);
                his.push(f64::INFINITY);
            }
            // Every resampled rate fails: the ceiling may be anywhere below the lowest rate.
            Bracket::AllFail { lowest } => {
                los.push(0.0);
                his.push(lowest);
            }
            Bracket::Empty => {}
        }
    }
    los.sort_by(f64::total_cmp);
    his.sort_by(f64::total_cmp);
    let q = |v: &[f64], p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    let ilo = q(&los, 0.025).min(lo);
    let ihi = q(&his, 0.975).max(hi);
    let m0 = fit.margin_at(lo).unwrap_or(f64::NAN);
    let m1 = fit.margin_at(hi).unwrap_or(f64::NAN);
    Some(CapacityInterval {
        estimate: estimate.clamp(ilo, ihi),
        lo: ilo,
        hi: ihi,
        bracket_lo: lo,
        bracket_hi: hi,
        margins: (m0, m1),
        knee: if m1 >= CLIFF_RATIO * m0 {
            Knee::Cliff
        } else {
            Knee::Smooth
        },
        replicates: los.len(),
        method: crate::pooled_fit::IntervalMethod::Bracket,
        zone: None,
        revised: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(rate: f64, margin: f64) -> Observation {
        Observation { rate, margin }
    }

    #[test]
    fn a_coin_flip_at_the_knee_does_not_unsettle_rates_far_from_it() {
        // The probes of a 16-core search of go-pgx (device machine, 2026-11-27): 23,327 passed at
        // a margin of 0.11, 25,466 failed at 5.9, and 26,378 was a coin flip (0.72, then 2.98).
        // The coin flip's spread belongs to the knee: the interval's lower end stays on the
        // probe that passed far below it instead of reaching back to the first doubling's 16,000.
        // (Its upper end may still reach 32,000: one degree of freedom at the knee gives heavy
        // tails there, and isotonic pooling lets strong passes at 26,378 and 27,141 outweigh the
        // failure at 25,466 — the cliff's repeats at the bracket's ends settle that.)
        let obs: Vec<_> = [
            (2000.0, 0.0040),
            (4000.0, 0.0028),
            (8000.0, 0.0025),
            (16000.0, 0.059),
            (32000.0, 10.68),
            (23327.0, 0.113),
            (27141.0, 1.57),
            (26378.0, 0.716),
            (26378.0, 2.98),
            (25466.0, 5.92),
        ]
        .iter()
        .map(|&(r, m)| o(r, m))
        .collect();
        let i = interval(&obs, 7).expect("bracketed");
        assert_eq!((i.bracket_lo, i.bracket_hi), (23327.0, 25466.0));
        assert_eq!(i.lo, 23327.0, "{i:?}");
        // Replicates at 25,466 that fail alike (5.9, 4.8, 6.5) settle the upper end too.
        let mut settled = obs.clone();
        settled.extend([
            o(25466.0, 4.8),
            o(25466.0, 6.5),
            o(23327.0, 0.12),
            o(23327.0, 0.10),
        ]);
        let j = interval(&settled, 7).expect("bracketed");
        assert_eq!((j.lo, j.hi), (23327.0, 25466.0), "{j:?}");
        // And a far rate whose own replicates disagree (one of three failed) widens the interval
        // past the bracket.
        let mut noisy = obs.clone();
        noisy.extend([o(23327.0, 2.5), o(23327.0, 0.005)]);
        let k = interval(&noisy, 7).expect("bracketed");
        assert!(k.lo < 23327.0, "{k:?}");
    }

    #[test]
    fn isotonic_pools_violators() {
        assert_eq!(
            isotonic(&[1.0, 3.0, 2.0, 4.0], &[1.0; 4]),
            vec![1.0, 2.5, 2.5, 4.0]
        );
        assert_eq!(isotonic(&[3.0, 2.0, 1.0], &[1.0; 3]), vec![2.0, 2.0, 2.0]);
        // Weights: a heavy low value pulls the pooled mean down.
        let f = isotonic(&[5.0, 1.0], &[1.0, 3.0]);
        assert!((f[0] - 2.0).abs() < 1e-12 && (f[1] - 2.0).abs() < 1e-12);
        assert!(isotonic(&[], &[]).is_empty());
    }

    #[test]
    fn bracket_and_crossing_of_a_smooth_curve() {
        // margin = (rate/1000)^4: crosses 1 at exactly 1000; log-linear interpolation between
        // 900 and 1100 lands near it.
        let obs: Vec<_> = [500.0, 900.0, 1100.0, 2000.0]
            .iter()
            .map(|&r| o(r, (r / 1000.0f64).powi(4)))
            .collect();
        let f = Fit::of(&obs);
        assert_eq!(
            f.bracket(),
            Bracket::Between {
                lo: 900.0,
                hi: 1100.0
            }
        );
        let c = f.crossing().unwrap();
        assert!((c - 1000.0).abs() < 15.0, "{c}");
    }

    #[test]
    fn a_noisy_pass_above_a_failure_is_pooled_not_believed() {
        let obs = [
            o(800.0, 0.5),
            o(1000.0, 3.0),
            o(1200.0, 0.9),
            o(1600.0, 10.0),
        ];
        let f = Fit::of(&obs);
        // 1000 and 1200 pool to a failing mean: the bracket is 800…1000.
        assert_eq!(
            f.bracket(),
            Bracket::Between {
                lo: 800.0,
                hi: 1000.0
            }
        );
    }

    #[test]
    fn interval_covers_the_bracket_and_widens_with_disagreeing_replicates() {
        let clean = [
            o(900.0, 0.2),
            o(900.0, 0.25),
            o(1000.0, 50.0),
            o(1000.0, 40.0),
        ];
        let i = interval(&clean, 1).unwrap();
        assert_eq!((i.lo, i.hi), (900.0, 1000.0));
        assert_eq!(i.knee, Knee::Cliff);
        assert!(i.estimate >= 900.0 && i.estimate <= 1000.0);
        // At 1000 one replicate passes: the bootstrap sometimes sees 1000 pass and the upper end
        // moves to the next failing rate.
        let noisy = [
            o(900.0, 0.6),
            o(900.0, 0.65),
            o(1000.0, 1.3),
            o(1000.0, 0.8),
            o(1200.0, 30.0),
        ];
        // Two rates near the crossing with two probes each: their spread is the noise estimate
        // (2 degrees of freedom: heavy tails), so the interval reaches past both neighbours.
        let j = interval(&noisy, 1).unwrap();
        assert!(j.lo <= 900.0 && j.hi >= 1200.0, "{j:?}");
        assert_eq!(j.knee, Knee::Smooth);
    }

    #[test]
    fn no_interval_without_a_bracket() {
        assert!(interval(&[o(100.0, 0.1), o(200.0, 0.3)], 1).is_none());
        assert!(interval(&[o(100.0, 2.0)], 1).is_none());
        assert_eq!(Fit::of(&[]).bracket(), Bracket::Empty);
        assert_eq!(
            Fit::of(&[o(100.0, 2.0)]).bracket(),
            Bracket::AllFail { lowest: 100.0 }
        );
    }
}
