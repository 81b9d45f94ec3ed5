//! Ranking searched stacks by the ratio of their ceilings, with a 95% interval.
//!
//! Stacks searched together take turns in rounds (A B A B …); the machine's drift between rounds
//! (another tenant, a warmer cache, thermal limits) moves every stack of a round alike. A
//! **paired block bootstrap** keeps that pairing: each draw picks rounds with replacement and
//! takes every probe of both stacks from the rounds drawn, refits both ceilings and keeps their
//! ratio, so drift between rounds cancels in the ratio instead of widening it. With fewer than
//! [`MIN_PAIRED_ROUNDS`] rounds the stacks' probes are drawn independently (unpaired: said so).
//!
//! A paired draw can lose a stack's bracket: on a box that drifts, a stack fails in the rounds
//! where the box was slow, and a draw that leaves those rounds out has no failure to place its
//! crossing. Such draws are set aside, up to [`MAX_LOST_PAIRED`] of them, and the interval is
//! read from the rest — conditional on the rounds drawn holding both crossings. What decides
//! whether a draw keeps its brackets is the box's speed in the rounds drawn, which moves both
//! stacks alike and so not their ratio: on a simulated box drifting ±15% between rounds
//! (`two_services_on_a_drifting_box_keep_their_pairing_and_coverage`) 14 of 20 pairs stay
//! paired (7 when such draws count against the pairing) and the interval covers the true ratio
//! in 18 (15).
//!
//! A pair is ranked only when the ratio's interval excludes 1; it is **tied** when the interval
//! lies within 1 ± the search's tolerance; otherwise it is unresolved (more probes would tell).

use crate::pooled_fit::PooledFit;
use crate::search::{samples, ProbeVerdict};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// A search's ceiling with its 95% interval: (estimate, lo, hi), RPS.
pub type CeilingCi = (f64, f64, f64);
/// One stack as [`pair_ratio`] reads it: its name, its probes, its ceiling with an interval.
pub type SearchedRef<'a> = (&'a str, &'a [ProbeVerdict], Option<CeilingCi>);
/// One stack as [`rank`] reads it.
pub type Searched = (String, Vec<ProbeVerdict>, Option<CeilingCi>);

/// Fewest rounds with probes of both stacks for the paired bootstrap.
pub const MIN_PAIRED_ROUNDS: usize = 4;
/// Bootstrap draws.
const DRAWS: usize = 400;
/// Largest share of paired draws that may lose a bracket and be set aside (see the module doc);
/// past it the rounds cannot pair the two stacks and their own intervals are combined. Draws
/// that are not paired may lose 5%, as a search's own interval.
pub const MAX_LOST_PAIRED: f64 = 0.25;

/// What the ratio's interval says about a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The first stack's ceiling is higher (the interval lies above 1).
    Higher,
    /// The first stack's ceiling is lower (the interval lies below 1).
    Lower,
    /// Within 1 ± tolerance: tied at the search's resolution.
    Tied,
    /// The interval holds 1 but is wider than the tolerance: not decided.
    Unresolved,
    /// One of the two has no ceiling with an interval (a lower bound, no pass, no data).
    NotComparable,
}

/// The ratio of two stacks' ceilings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRatio {
    /// The first stack (the higher point estimate).
    pub a: String,
    /// The second stack.
    pub b: String,
    /// Ceiling of `a` over ceiling of `b` (NaN, null in JSON, when not comparable).
    #[serde(with = "nan_as_null")]
    pub ratio: f64,
    /// 95% interval of the ratio (`None` when not comparable).
    pub lo: Option<f64>,
    /// Upper end.
    pub hi: Option<f64>,
    /// Paired by rounds (true) or drawn independently.
    pub paired: bool,
    /// Rounds with probes of both.
    pub rounds: usize,
    /// The verdict.
    pub order: Order,
    /// The tolerance the verdict used.
    pub tolerance: f64,
    /// Set on a pair ranked across a neighbour that could not be compared (a lower bound
    /// between them in the order): that neighbour's name. Such a pair is not a link of the
    /// chain; it says what the chain's `?` hides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across: Option<String>,
}

impl PairRatio {
    /// `go-pgx > ktor-jdbc: ×1.32 (95% CI 1.21–1.44, paired over 6 rounds)`.
    pub fn describe(&self) -> String {
        let iv = match (self.lo, self.hi) {
            (Some(lo), None) => format!(
                " (≥ ×{lo:.2}: {}'s lower bound is above {}'s whole interval)",
                self.a, self.b
            ),
            (Some(lo), Some(hi)) => format!(
                " (95% CI {lo:.2}–{hi:.2}, {})",
                if self.paired {
                    format!("paired over {} rounds", self.rounds)
                } else if self.rounds >= MIN_PAIRED_ROUNDS {
                    // paired draws were tried and lost a bracket too often (pair_ratio)
                    format!(
                        "unpaired: draws of its {} rounds lost a bracket, so the two intervals are combined",
                        self.rounds
                    )
                } else {
                    format!(
                        "unpaired: {} round{} shared, {MIN_PAIRED_ROUNDS} needed to pair",
                        self.rounds,
                        if self.rounds == 1 { "" } else { "s" }
                    )
                }
            ),
            _ => String::new(),
        };
        let op = match self.order {
            Order::Higher => ">",
            Order::Lower => "<",
            Order::Tied => "≈",
            Order::Unresolved => "~",
            Order::NotComparable => "?",
        };
        let what = match self.order {
            Order::Tied => format!(", tied within ±{:.0}%", self.tolerance * 100.0),
            Order::Unresolved => ", not decided".into(),
            Order::NotComparable => {
                ", not comparable (a ceiling that is only a lower bound, or none)".into()
            }
            _ => String::new(),
        };
        if self.ratio.is_nan() {
            // nothing to divide: one side has no ceiling to set against the other
            return format!("{} {op} {}{}", self.a, self.b, what.replacen(",", ":", 1));
        }
        let across = self
            .across
            .as_ref()
            .map(|c| format!(" — across {c}, which could not be placed between them"))
            .unwrap_or_default();
        format!(
            "{} {op} {}: ×{:.2}{iv}{what}{across}",
            self.a, self.b, self.ratio
        )
    }
}

fn estimate(probes: &[ProbeVerdict], times: &[u32]) -> Option<f64> {
    let smp = samples(probes);
    // samples() drops checks, invalid and disturbed probes: carry the draw counts along.
    let kept: Vec<u32> = probes
        .iter()
        .zip(times)
        .filter(|(p, _)| p.pooled())
        .map(|(_, &t)| t)
        .collect();
    let fit = PooledFit::drawn(&smp, &kept);
    match fit.bracket() {
        crate::capacity::Bracket::Between { .. } => fit.estimate(),
        _ => None,
    }
}

/// The ratio of `a`'s ceiling to `b`'s (each search's estimate with its 95% interval, `None`
/// when it has none) with its 95% interval from their probes; see the module doc.
pub fn pair_ratio(a: SearchedRef, b: SearchedRef, tolerance: f64, seed: u64) -> PairRatio {
    let rounds_of = |p: &[ProbeVerdict]| {
        let mut r: Vec<u32> = p.iter().map(|v| v.round).filter(|&r| r > 0).collect();
        r.sort();
        r.dedup();
        r
    };
    let (ra, rb) = (rounds_of(a.1), rounds_of(b.1));
    let shared: Vec<u32> = ra.iter().copied().filter(|r| rb.contains(r)).collect();
    let mut out = PairRatio {
        a: a.0.to_string(),
        b: b.0.to_string(),
        ratio: f64::NAN,
        lo: None,
        hi: None,
        paired: shared.len() >= MIN_PAIRED_ROUNDS,
        rounds: shared.len(),
        order: Order::NotComparable,
        tolerance,
        across: None,
    };
    let (Some((ca, alo, ahi)), Some((cb, blo, bhi))) = (a.2, b.2) else {
        return out;
    };
    out.ratio = ca / cb;
    // Paired when there are rounds enough; when too many paired draws lose a bracket (a round
    // holds most of one stack's failures), the probes are drawn independently instead.
    let (lo, hi) = match draws(a.1, b.1, &shared, out.paired, seed) {
        Some(mut logs) => {
            logs.sort_by(f64::total_cmp);
            let q = |p: f64| logs[((logs.len() as f64 - 1.0) * p).round() as usize].exp();
            (q(0.025).min(out.ratio), q(0.975).max(out.ratio))
        }
        None => {
            // Too few probes on one side of a crossing for draws to keep it: the two searches'
            // own intervals, independent, their log half-widths added in quadrature.
            out.paired = false;
            let r = out.ratio.ln();
            let down = ((ca / alo).ln().powi(2) + (bhi / cb).ln().powi(2)).sqrt();
            let up = ((ahi / ca).ln().powi(2) + (cb / blo).ln().powi(2)).sqrt();
            ((r - down).exp(), (r + up).exp())
        }
    };
    out.lo = Some(lo);
    out.hi = Some(hi);
    out.order = if lo > 1.0 {
        Order::Higher
    } else if hi < 1.0 {
        Order::Lower
    } else if lo >= 1.0 - tolerance && hi <= 1.0 + tolerance {
        Order::Tied
    } else {
        Order::Unresolved
    };
    out
}

/// ln(ratio) of the two stacks' ceilings over bootstrap draws (rounds drawn with replacement when
/// `paired`, else each stack's probes); `None` when more of the draws lose a bracket than may be
/// set aside: [`MAX_LOST_PAIRED`] of them paired, 5% unpaired.
fn draws(
    a: &[ProbeVerdict],
    b: &[ProbeVerdict],
    shared: &[u32],
    paired: bool,
    seed: u64,
) -> Option<Vec<f64>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut logs = Vec::with_capacity(DRAWS);
    let mut failed = 0usize;
    for _ in 0..DRAWS {
        let (ta, tb) = if paired {
            let mut per_round = vec![0u32; shared.len()];
            for _ in 0..shared.len() {
                per_round[rng.gen_range(0..shared.len())] += 1;
            }
            let t = |p: &[ProbeVerdict]| -> Vec<u32> {
                p.iter()
                    .map(|v| {
                        shared
                            .iter()
                            .position(|&r| r == v.round)
                            .map_or(0, |k| per_round[k])
                    })
                    .collect()
            };
            (t(a), t(b))
        } else {
            let mut t = |p: &[ProbeVerdict]| -> Vec<u32> {
                let mut t = vec![0u32; p.len()];
                for _ in 0..p.len() {
                    t[rng.gen_range(0..p.len())] += 1;
                }
                t
            };
            (t(a), t(b))
        };
        match (estimate(a, &ta), estimate(b, &tb)) {
            (Some(x), Some(y)) if x > 0.0 && y > 0.0 => logs.push((x / y).ln()),
            _ => failed += 1,
        }
    }
    let may_lose = if paired {
        (DRAWS as f64 * MAX_LOST_PAIRED) as usize
    } else {
        DRAWS / 20
    };
    (failed <= may_lose && logs.len() >= 10).then_some(logs)
}

/// The ranking of several searched stacks' analyses (empty for fewer than two searched): [`rank`]
/// over each one's probes and ceiling, as `ceiling search` prints it and `ceiling report`
/// recomputes it from run.json.
pub fn rank_searched(stacks: &[crate::StackAnalysis], tolerance: f64) -> Vec<PairRatio> {
    let searched: Vec<Searched> = stacks
        .iter()
        .filter_map(|a| {
            let s = a.search.as_ref()?;
            Some((
                a.stack.clone(),
                s.probes.clone(),
                s.interval.as_ref().map(|i| (s.ceiling_rps, i.lo, i.hi)),
            ))
        })
        .collect();
    if searched.len() < 2 {
        return Vec::new();
    }
    rank(&searched, tolerance)
}

/// Every adjacent pair of `stacks` in the order of their ceilings (highest first): `(name,
/// probes, ceiling with an interval)`. A stack without an interval is placed by its lower bound
/// (the highest rate a pooled probe passed): above a neighbour's whole interval it is ranked
/// higher (the ratio then a lower bound), else not comparable. Where a link is not comparable,
/// the stacks on either side of the lower bound that broke it are ranked against each other too
/// (marked [`PairRatio::across`]): a `?` in the chain does not hide an order the intervals prove.
pub fn rank(stacks: &[Searched], tolerance: f64) -> Vec<PairRatio> {
    // What is known of a ceiling without an interval: a lower bound, the highest rate a pooled
    // probe passed (a search that ended generator-bound, or that nothing above failed).
    let lower = |k: usize| -> Option<f64> {
        stacks[k]
            .1
            .iter()
            .filter(|p| p.pooled() && p.passed())
            .map(|p| p.rate)
            .reduce(f64::max)
    };
    let key = |k: usize| {
        stacks[k]
            .2
            .map(|c| c.0)
            .or_else(|| lower(k))
            .unwrap_or(f64::NEG_INFINITY)
    };
    let mut order: Vec<usize> = (0..stacks.len()).collect();
    order.sort_by(|&i, &j| key(j).total_cmp(&key(i)));
    let mut out: Vec<PairRatio> = order
        .windows(2)
        .map(|w| {
            let (x, y) = (&stacks[w[0]], &stacks[w[1]]);
            let mut p = pair_ratio((&x.0, &x.1, x.2), (&y.0, &y.1, y.2), tolerance, 0x2A4C);
            // a lower bound above the other's whole interval proves the order (not the ratio)
            if let (None, Some((cy, _, hy)), Some(lx)) = (x.2, y.2, lower(w[0])) {
                p.ratio = lx / cy;
                if lx > hy {
                    p.order = Order::Higher;
                    p.lo = Some(lx / hy);
                }
            }
            p
        })
        .collect();
    // Across a lower bound: x ? y with y only a lower bound — rank x against the next stack that
    // has an interval, when x has one.
    let mut across = Vec::new();
    for (k, w) in order.windows(2).enumerate() {
        let (x, y) = (&stacks[w[0]], &stacks[w[1]]);
        if out[k].order != Order::NotComparable || x.2.is_none() || y.2.is_some() {
            continue;
        }
        if let Some(&z) = order[k + 2..].iter().find(|&&z| stacks[z].2.is_some()) {
            let z = &stacks[z];
            let mut p = pair_ratio((&x.0, &x.1, x.2), (&z.0, &z.1, z.2), tolerance, 0x2A4C);
            p.across = Some(y.0.clone());
            across.push(p);
        }
    }
    out.extend(across);
    out
}

/// A ratio that may be NaN (not comparable): written as null, read back as NaN — JSON has no NaN,
/// and a run.json that cannot be read back would lose the search.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_nan() {
            s.serialize_none()
        } else {
            v.serialize(s)
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unpaired_ratio_says_why_it_is_unpaired() {
        let mut p = PairRatio {
            a: "go-pgx".into(),
            b: "ktor-jdbc".into(),
            ratio: 1.53,
            lo: Some(1.23),
            hi: Some(1.91),
            paired: false,
            rounds: 6,
            order: Order::Higher,
            tolerance: 0.05,
            across: None,
        };
        let d = p.describe();
        assert!(
            d.contains("×1.53 (95% CI 1.23–1.91, unpaired: draws of its 6 rounds lost a bracket"),
            "{d}"
        );
        p.rounds = 2;
        let d = p.describe();
        assert!(
            d.contains("unpaired: 2 rounds shared, 4 needed to pair"),
            "{d}"
        );
        p.paired = true;
        p.rounds = 6;
        assert!(p.describe().contains("paired over 6 rounds"));
    }

    #[test]
    fn a_pair_that_is_not_comparable_survives_run_json() {
        let p = PairRatio {
            a: "webflux".into(),
            b: "ktor".into(),
            ratio: f64::NAN,
            lo: None,
            hi: None,
            paired: false,
            rounds: 2,
            order: Order::NotComparable,
            tolerance: 0.05,
            across: None,
        };
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains("\"ratio\":null"), "{text}");
        let back: PairRatio = serde_json::from_str(&text).unwrap();
        assert!(back.ratio.is_nan() && back.order == Order::NotComparable);
    }
}
