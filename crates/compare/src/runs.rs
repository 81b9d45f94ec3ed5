//! Two runs, or two stacks of one run, compared with significance.
//!
//! Per stack and shelf (open model) or level (closed model): the difference in throughput,
//! median and p99 latency, CPU per request and memory. With repetitions on both sides the
//! difference gets Welch's t-interval (unequal variances; the degrees of freedom are rounded
//! down, which widens the interval); two searched ceilings are compared through their 95%
//! intervals (a normal approximation of each; non-overlap is reported too); one value each gets
//! the difference and no claim of significance.

use ceiling_analyze::t_975;
use ceiling_analyze::{Estimate, LevelStats, LoadModel, ShelfResult, StackAnalysis, Verdict};
use ceiling_fmt::change as pct;
use ceiling_records::RunReport;
use serde::Serialize;

/// Why two runs cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct RunsRefused(pub String);

/// A compared quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// RPS@SLO (the stack's ceiling).
    Ceiling,
    /// Achieved throughput, RPS.
    Throughput,
    /// Median latency, ms.
    P50Ms,
    /// p99 latency, ms.
    P99Ms,
    /// Stack CPU per request, µs.
    CpuUsPerRequest,
    /// Stack RSS, MiB.
    RssMib,
}

impl Quantity {
    /// A label for tables.
    pub fn name(self) -> &'static str {
        match self {
            Quantity::Ceiling => "ceiling RPS",
            Quantity::Throughput => "throughput RPS",
            Quantity::P50Ms => "p50 ms",
            Quantity::P99Ms => "p99 ms",
            Quantity::CpuUsPerRequest => "CPU µs/req",
            Quantity::RssMib => "RSS MiB",
        }
    }
    /// True when more is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Quantity::Ceiling | Quantity::Throughput)
    }
}

/// One side's figure: a mean with its 95% half-width when there is one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figure {
    /// The value (mean of repetitions, a search's estimate).
    pub value: f64,
    /// 95% half-width (Student-t of repetitions, or half a search interval's width).
    pub ci95: Option<f64>,
    /// Repetitions behind the value (1 for a single shelf or a search).
    pub n: usize,
    /// Sample standard deviation of the repetitions (0 for n = 1).
    pub stddev: f64,
}

impl Figure {
    fn one(value: f64) -> Figure {
        Figure {
            value,
            ci95: None,
            n: 1,
            stddev: 0.0,
        }
    }
    fn of(e: &Estimate) -> Figure {
        Figure {
            value: e.mean,
            ci95: e.ci95,
            n: e.n,
            stddev: e.stddev,
        }
    }
}

/// How the difference was judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Test {
    /// Welch's t on the repetitions.
    Welch {
        /// Welch–Satterthwaite degrees of freedom (before rounding down).
        df: f64,
    },
    /// Two 95% intervals (searches), by a normal approximation of each.
    Intervals {
        /// Whether the two intervals overlap.
        overlap: bool,
    },
    /// Two searches of one run, whose stacks took turns in rounds: the ratio of their ceilings
    /// from the search's own ranking bootstrap ([`ceiling_analyze::pair_ratio`]), paired by the
    /// rounds both searched in so the machine's drift between rounds cancels (drawn
    /// independently with fewer than [`ceiling_analyze::MIN_PAIRED_ROUNDS`] shared rounds).
    PairedRounds {
        /// Rounds with probes of both stacks.
        rounds: usize,
        /// Paired by rounds (true) or drawn independently.
        paired: bool,
    },
    /// One value each: no test.
    None,
}

/// B against A for one quantity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// The quantity.
    pub quantity: Quantity,
    /// A's figure.
    pub a: Figure,
    /// B's figure.
    pub b: Figure,
    /// `b / a`.
    pub ratio: f64,
    /// 95% interval of `b / a`, when a test applies.
    pub ratio_ci: Option<(f64, f64)>,
    /// The test.
    pub test: Test,
    /// `Some(true)` when the ratio's interval excludes 1; `None` when no test applies.
    pub significant: Option<bool>,
    /// A plain verdict (`B is 12% ± 4% higher`, `no significant difference`).
    pub verdict: String,
}

/// One shelf or level of a stack, compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointComparison {
    /// The shelf or level (`hold 1500`, `c=100`).
    pub point: String,
    /// A's verdict there.
    pub a_verdict: Verdict,
    /// B's verdict there.
    pub b_verdict: Verdict,
    /// The quantities measured on both sides.
    pub diffs: Vec<Diff>,
}

/// One stack (or a pair of stacks of one run) compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StackComparison {
    /// A's stack.
    pub a_stack: String,
    /// B's stack.
    pub b_stack: String,
    /// The ceilings.
    pub ceiling: Diff,
    /// Shelves or levels present on both sides, in A's order.
    pub points: Vec<PointComparison>,
}

/// Two runs (or two stacks) compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunComparison {
    /// What A is (`results/… go-pgx`).
    pub a: String,
    /// What B is.
    pub b: String,
    /// The plan both ran.
    pub plan: String,
    /// Differences a reader should weigh (environments, scaling, limits).
    pub warnings: Vec<String>,
    /// Per stack.
    pub stacks: Vec<StackComparison>,
}

/// Compares the stacks two runs have in common (B against A).
pub fn compare_runs(a: &RunReport, b: &RunReport) -> Result<RunComparison, RunsRefused> {
    comparable(a, b)?;
    let common: Vec<(&StackAnalysis, &StackAnalysis)> = a
        .stacks
        .iter()
        .filter_map(|x| b.stacks.iter().find(|y| y.stack == x.stack).map(|y| (x, y)))
        .collect();
    if common.is_empty() {
        return Err(RunsRefused(format!(
            "the runs have no stack in common (A: {}; B: {}); compare two stacks with `ceiling compare RUN --stacks A,B`",
            names(a),
            names(b)
        )));
    }
    Ok(RunComparison {
        a: a.run_id.clone(),
        b: b.run_id.clone(),
        plan: a.plan.name.clone(),
        warnings: environment_warnings(a, b),
        stacks: common.into_iter().map(|(x, y)| stack(x, y)).collect(),
    })
}

/// Compares two stacks of one run (B against A).
pub fn compare_stacks(run: &RunReport, a: &str, b: &str) -> Result<RunComparison, RunsRefused> {
    let find = |s: &str| {
        run.stacks.iter().find(|x| x.stack == s).ok_or_else(|| {
            RunsRefused(format!(
                "run {} has no stack `{s}` (it has: {})",
                run.run_id,
                names(run)
            ))
        })
    };
    let (x, y) = (find(a)?, find(b)?);
    let mut warnings = Vec::new();
    let mut compared = stack(x, y);
    if let Some(d) = paired_ceiling(x, y) {
        compared.ceiling = d;
    }
    let (ia, ib) = (
        run.stacks.iter().position(|s| s.stack == a),
        run.stacks.iter().position(|s| s.stack == b),
    );
    // a search's stacks take turns in rounds; so do a run's repetitions when it says so
    let interleaved = (x.search.is_some() && y.search.is_some()) || run.plan.interleaved_rounds > 1;
    if !interleaved && ia != ib {
        warnings.push(
            "the two stacks were measured one after the other, not interleaved: drift of the machine between them falls on one only"
                .into(),
        );
    }
    Ok(RunComparison {
        a: format!("{} {a}", run.run_id),
        b: format!("{} {b}", run.run_id),
        plan: run.plan.name.clone(),
        warnings,
        stacks: vec![compared],
    })
}

/// B's ceiling against A's when both are searches of one run with intervals: the ratio and its
/// 95% interval as the search ranks them (paired by rounds), not two intervals read as normals.
/// `None` when either has no interval (a lower bound, no ceiling found).
fn paired_ceiling(a: &StackAnalysis, b: &StackAnalysis) -> Option<Diff> {
    // B over A, as every other row of a comparison reads
    let p = searched_ratio(b, a)?;
    let (lo, hi) = (p.lo?, p.hi?);
    let ratio_ci = Some((lo, hi));
    let significant = Some(lo > 1.0 || hi < 1.0);
    Some(Diff {
        quantity: Quantity::Ceiling,
        a: ceiling_figure(a),
        b: ceiling_figure(b),
        ratio: p.ratio,
        ratio_ci,
        test: Test::PairedRounds {
            rounds: p.rounds,
            paired: p.paired,
        },
        significant,
        verdict: verdict_text(Quantity::Ceiling, p.ratio, ratio_ci, significant),
    })
}

/// `a`'s searched ceiling over `b`'s, with its 95% interval as the search ranks them
/// ([`ceiling_analyze::pair_ratio`]: the two searches' probes bootstrapped, paired by rounds
/// where they share enough) — the one reading of two searched ceilings for comparisons and the
/// claims ledger alike, not two intervals read as normals (an asymmetric interval, 1,684–2,000
/// around 1,722, is not ±9%). `None` when either search has no interval.
pub fn searched_ratio(a: &StackAnalysis, b: &StackAnalysis) -> Option<ceiling_analyze::PairRatio> {
    let (sa, sb) = (a.search.as_ref()?, b.search.as_ref()?);
    let ci = |s: &ceiling_analyze::SearchOutcome| {
        s.interval.as_ref().map(|i| (s.ceiling_rps, i.lo, i.hi))
    };
    let (ca, cb) = (ci(sa)?, ci(sb)?);
    let p = ceiling_analyze::pair_ratio(
        (&a.stack, &sa.probes, Some(ca)),
        (&b.stack, &sb.probes, Some(cb)),
        sa.tolerance,
        0x2A4C,
    );
    (p.lo.is_some() && p.hi.is_some()).then_some(p)
}

fn names(r: &RunReport) -> String {
    r.stacks
        .iter()
        .map(|s| s.stack.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Refuses runs whose comparison would mean nothing: another load model, SLO, or request mix.
fn comparable(a: &RunReport, b: &RunReport) -> Result<(), RunsRefused> {
    let (pa, pb) = (&a.plan, &b.plan);
    if pa.model != pb.model {
        return Err(RunsRefused(format!(
            "the runs used different load models ({:?} vs {:?}): their throughputs and latencies mean different things",
            pa.model, pb.model
        )));
    }
    if !pa.criteria.same_slo(&pb.criteria) {
        return Err(RunsRefused(format!(
            "the runs judged against different SLOs (`{}` vs `{}`): their ceilings answer different questions",
            pa.slo, pb.slo
        )));
    }
    let mix = |p: &ceiling_records::PlanSummary| {
        p.requests
            .iter()
            .map(|r| format!("{} {} {} ×{}", r.name, r.method, r.path, r.weight))
            .collect::<Vec<_>>()
    };
    if mix(pa) != mix(pb) {
        return Err(RunsRefused(format!(
            "the runs sent different request mixes ({} vs {}): they measured different work",
            mix(pa).join(", "),
            mix(pb).join(", ")
        )));
    }
    Ok(())
}

fn environment_warnings(a: &RunReport, b: &RunReport) -> Vec<String> {
    let mut w = Vec::new();
    if let (Some(x), Some(y)) = (&a.environment, &b.environment) {
        let fields = |e: &ceiling_metrics::Environment| {
            [
                ("cpu_model", e.cpu_model.clone()),
                ("cpu_signature", e.cpu_signature.clone()),
                ("usable_cpus", e.usable_cpus.to_string()),
                ("kernel", e.kernel.clone()),
                ("postgres", e.postgres.clone().unwrap_or_default()),
                ("hostname", e.hostname.clone()),
            ]
        };
        for ((key, u), (_, v)) in fields(x).into_iter().zip(fields(y)) {
            if !u.is_empty() && !v.is_empty() && u != v {
                w.push(format!("environment differs: {key} \"{u}\" vs \"{v}\""));
            }
        }
    }
    if a.plan.scaled_by != b.plan.scaled_by {
        w.push(format!(
            "durations scaled differently (×{} vs ×{}): shorter windows are noisier",
            a.plan.scaled_by, b.plan.scaled_by
        ));
    }
    if a.plan.stages != b.plan.stages {
        w.push(
            "the plans' stages differ: only shelves with the same label are set side by side"
                .into(),
        );
    }
    for (name, la) in &a.limits {
        if let Some(lb) = b.limits.get(name) {
            if la.cpus != lb.cpus || la.memory_mb != lb.memory_mb {
                w.push(format!(
                    "limits of {name} differ: {:?} CPU / {:?} MiB vs {:?} CPU / {:?} MiB",
                    la.cpus, la.memory_mb, lb.cpus, lb.memory_mb
                ));
            }
        }
    }
    w
}

fn stack(a: &StackAnalysis, b: &StackAnalysis) -> StackComparison {
    let ceiling = diff(Quantity::Ceiling, ceiling_figure(a), ceiling_figure(b));
    let mut points = Vec::new();
    if a.model == LoadModel::Closed && !a.levels.is_empty() {
        for la in &a.levels {
            let Some(lb) = b.levels.iter().find(|l| l.label == la.label) else {
                continue;
            };
            let (Some(x), Some(y)) = (la.headline(), lb.headline()) else {
                continue;
            };
            points.push(PointComparison {
                point: la.label.clone(),
                a_verdict: la.verdict,
                b_verdict: lb.verdict,
                diffs: level_diffs(x, y),
            });
        }
    } else {
        for sa in &a.shelves {
            let Some(sb) = b.shelves.iter().find(|s| s.label == sa.label) else {
                continue;
            };
            if sa.requests == 0 || sb.requests == 0 {
                continue;
            }
            points.push(PointComparison {
                point: sa.label.clone(),
                a_verdict: sa.verdict,
                b_verdict: sb.verdict,
                diffs: shelf_diffs(sa, sb),
            });
        }
    }
    StackComparison {
        a_stack: a.stack.clone(),
        b_stack: b.stack.clone(),
        ceiling,
        points,
    }
}

fn ceiling_figure(a: &StackAnalysis) -> Figure {
    match &a.search {
        Some(s) => Figure {
            value: s.ceiling_rps,
            ci95: s.interval.as_ref().map(|i| (i.hi - i.lo) / 2.0),
            n: 1,
            stddev: 0.0,
        },
        None => Figure::one(a.ceiling.rps),
    }
}

fn shelf_diffs(a: &ShelfResult, b: &ShelfResult) -> Vec<Diff> {
    let mut v = vec![
        diff(
            Quantity::Throughput,
            Figure::one(a.achieved_rps),
            Figure::one(b.achieved_rps),
        ),
        diff(
            Quantity::P50Ms,
            Figure::one(a.latency.p50_ms),
            Figure::one(b.latency.p50_ms),
        ),
        diff(
            Quantity::P99Ms,
            Figure::one(a.latency.p99_ms),
            Figure::one(b.latency.p99_ms),
        ),
    ];
    if let (Some(x), Some(y)) = (a.cpu_us_per_request, b.cpu_us_per_request) {
        v.push(diff(
            Quantity::CpuUsPerRequest,
            Figure::one(x),
            Figure::one(y),
        ));
    }
    if let (Some(x), Some(y)) = (&a.stack, &b.stack) {
        v.push(diff(
            Quantity::RssMib,
            Figure::one(x.rss_mb_mean),
            Figure::one(y.rss_mb_mean),
        ));
    }
    v
}

fn level_diffs(a: &LevelStats, b: &LevelStats) -> Vec<Diff> {
    let mut v = vec![
        diff(
            Quantity::Throughput,
            Figure::of(&a.throughput_rps),
            Figure::of(&b.throughput_rps),
        ),
        diff(
            Quantity::P50Ms,
            Figure::of(&a.p50_ms),
            Figure::of(&b.p50_ms),
        ),
        diff(
            Quantity::P99Ms,
            Figure::of(&a.p99_ms),
            Figure::of(&b.p99_ms),
        ),
    ];
    if let (Some(x), Some(y)) = (&a.cpu_us_per_request, &b.cpu_us_per_request) {
        v.push(diff(
            Quantity::CpuUsPerRequest,
            Figure::of(x),
            Figure::of(y),
        ));
    }
    if let (Some(x), Some(y)) = (&a.stack_rss_mb, &b.stack_rss_mb) {
        v.push(diff(Quantity::RssMib, Figure::of(x), Figure::of(y)));
    }
    v
}

/// Judges B against A for one quantity.
pub fn diff(quantity: Quantity, a: Figure, b: Figure) -> Diff {
    let ratio = if a.value != 0.0 {
        b.value / a.value
    } else if b.value == 0.0 {
        1.0
    } else {
        f64::INFINITY
    };
    let (test, ratio_ci) = if a.n >= 2 && b.n >= 2 && a.value != 0.0 && b.value != 0.0 {
        // Welch: variances of the two means, Satterthwaite's df; the ratio's interval by the
        // delta method (relative variances add)
        let (va, vb) = (a.stddev.powi(2) / a.n as f64, b.stddev.powi(2) / b.n as f64);
        let den = va.powi(2) / (a.n - 1) as f64 + vb.powi(2) / (b.n - 1) as f64;
        let df = if den > 0.0 {
            (va + vb).powi(2) / den
        } else {
            (a.n + b.n - 2) as f64
        };
        let t = t_975((df.floor() as usize).max(1));
        let rel_se = (va / a.value.powi(2) + vb / b.value.powi(2)).sqrt();
        let h = t * ratio * rel_se;
        (Test::Welch { df }, Some((ratio - h, ratio + h)))
    } else if let (Some(ha), Some(hb)) = (a.ci95, b.ci95) {
        if a.value > 0.0 && b.value > 0.0 {
            // each 95% half-width read as 1.96 standard errors
            let rel_se = ((ha / 1.96 / a.value).powi(2) + (hb / 1.96 / b.value).powi(2)).sqrt();
            let h = 1.96 * ratio * rel_se;
            let overlap = (a.value - ha) <= (b.value + hb) && (b.value - hb) <= (a.value + ha);
            (Test::Intervals { overlap }, Some((ratio - h, ratio + h)))
        } else {
            (Test::None, None)
        }
    } else {
        (Test::None, None)
    };
    let significant = ratio_ci.map(|(lo, hi)| lo > 1.0 || hi < 1.0);
    let verdict = verdict_text(quantity, ratio, ratio_ci, significant);
    Diff {
        quantity,
        a,
        b,
        ratio,
        ratio_ci,
        test,
        significant,
        verdict,
    }
}

fn verdict_text(
    q: Quantity,
    ratio: f64,
    ci: Option<(f64, f64)>,
    significant: Option<bool>,
) -> String {
    if !ratio.is_finite() {
        return "A is 0: no ratio".into();
    }
    let change = ratio - 1.0;
    let word = if change >= 0.0 { "higher" } else { "lower" };
    let better = if (change > 0.0) == q.higher_is_better() {
        "better"
    } else {
        "worse"
    };
    match (ci, significant) {
        (Some((lo, hi)), Some(true)) => format!(
            "B is {} ± {} {word} ({better})",
            pct(change.abs()),
            pct((hi - lo) / 2.0)
        ),
        (Some((lo, hi)), _) => format!(
            "no significant difference ({}{} ± {})",
            if change >= 0.0 { "+" } else { "−" },
            pct(change.abs()),
            pct((hi - lo) / 2.0)
        ),
        _ if change == 0.0 => "equal (one value each: no test)".into(),
        _ => format!(
            "B {}{} (one value each: no significance test)",
            if change >= 0.0 { "+" } else { "−" },
            pct(change.abs())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        use rand::Rng;
        // Box–Muller
        let (u, v): (f64, f64) = (rng.gen_range(1e-12..1.0), rng.gen());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    fn fig(xs: &[f64]) -> Figure {
        Figure::of(&Estimate::of(xs).unwrap())
    }

    /// Truth test: B's throughput is 20% above A's (noise 5%, 5 repetitions each): the verdict
    /// says B is higher, and the ratio's 95% interval holds 1.20 in most seeded trials.
    #[test]
    fn a_known_difference_is_found_and_covered() {
        let trials = 400;
        let (mut covered, mut found) = (0, 0);
        for seed in 0..trials {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let a: Vec<f64> = (0..5)
                .map(|_| 1000.0 * (1.0 + 0.05 * normal(&mut rng)))
                .collect();
            let b: Vec<f64> = (0..5)
                .map(|_| 1200.0 * (1.0 + 0.05 * normal(&mut rng)))
                .collect();
            let d = diff(Quantity::Throughput, fig(&a), fig(&b));
            let (lo, hi) = d.ratio_ci.unwrap();
            if lo <= 1.2 && 1.2 <= hi {
                covered += 1;
            }
            if d.significant == Some(true) && d.verdict.contains("higher (better)") {
                found += 1;
            }
        }
        let coverage = covered as f64 / trials as f64;
        assert!(coverage >= 0.92, "coverage {coverage}");
        assert!(
            found as f64 / trials as f64 >= 0.95,
            "found {found}/{trials}"
        );
    }

    /// Truth test: A and B are the same service: "no significant difference" in about 95% of
    /// seeded trials (the test's false-positive rate is near its 5%).
    #[test]
    fn no_difference_is_called_so() {
        let trials = 400;
        let mut false_pos = 0;
        for seed in 0..trials {
            let mut rng = ChaCha8Rng::seed_from_u64(1000 + seed);
            let a: Vec<f64> = (0..4)
                .map(|_| 50.0 * (1.0 + 0.1 * normal(&mut rng)))
                .collect();
            let b: Vec<f64> = (0..4)
                .map(|_| 50.0 * (1.0 + 0.1 * normal(&mut rng)))
                .collect();
            let d = diff(Quantity::P99Ms, fig(&a), fig(&b));
            if d.significant == Some(true) {
                false_pos += 1;
            } else {
                assert!(
                    d.verdict.starts_with("no significant difference"),
                    "{}",
                    d.verdict
                );
            }
        }
        let rate = false_pos as f64 / trials as f64;
        assert!(rate <= 0.09, "false positives {rate}");
    }

    #[test]
    fn single_values_make_no_claim() {
        let d = diff(Quantity::P99Ms, Figure::one(10.0), Figure::one(12.0));
        assert_eq!(d.significant, None);
        assert_eq!(d.test, Test::None);
        assert!(d.verdict.contains("no significance test"), "{}", d.verdict);
        assert!(d.verdict.contains("+20%"), "{}", d.verdict);
    }

    #[test]
    fn search_intervals_are_compared() {
        let a = Figure {
            value: 1000.0,
            ci95: Some(30.0),
            n: 1,
            stddev: 0.0,
        };
        let b = Figure {
            value: 1200.0,
            ci95: Some(40.0),
            n: 1,
            stddev: 0.0,
        };
        let d = diff(Quantity::Ceiling, a, b);
        assert_eq!(d.test, Test::Intervals { overlap: false });
        assert_eq!(d.significant, Some(true));
        let c = Figure {
            value: 1030.0,
            ci95: Some(40.0),
            n: 1,
            stddev: 0.0,
        };
        let d = diff(Quantity::Ceiling, a, c);
        assert_eq!(d.significant, Some(false));
    }
}
