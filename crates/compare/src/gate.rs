//! Gates for CI: `--assert` conditions on what a run, a search or a load measured, and the
//! regression gate of `ceiling compare --fail-on-regression`.
//!
//! Every gate is judged **pass**, **fail** or **inconclusive**, never a guess: a ceiling with a 95%
//! interval passes `ceiling>=5000` only when the whole interval is at or above 5000 and fails
//! only when the whole interval is below it; a bar inside the interval, a ceiling that is only a
//! lower bound below the bar, a rate no shelf or probe ran at, a generator-bound shelf or replicate
//! probes that disagree (a knee's transition zone) are inconclusive, with the reason. The CLI
//! turns the worst verdict into the exit code ([`exit_code`]): a failed gate is not a tool error.

use ceiling_analyze::{ShelfResult, StackAnalysis, Verdict};
use ceiling_records::RunReport;
use serde::Serialize;
use std::fmt;

/// Exit code of a command whose `--assert` (or `--fail-on-regression`) gate failed.
pub const EXIT_GATE_FAILED: u8 = 3;
/// Exit code when no gate failed but one could not be judged (inconclusive).
pub const EXIT_GATE_INCONCLUSIVE: u8 = 4;

/// Two rates are "the same shelf" when they differ by at most this fraction.
const RATE_MATCH: f64 = 0.02;

/// A latency quantile a gate can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Quantile {
    /// p50.
    P50,
    /// p90.
    P90,
    /// p95.
    P95,
    /// p99.
    P99,
    /// p99.9.
    P999,
}

/// What a gate is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GateMetric {
    /// The stack's ceiling (RPS@SLO), judged with its 95% interval when it has one.
    Ceiling,
    /// A latency quantile, ms (at a rate for a run or search).
    Latency(Quantile),
    /// The error rate, a fraction.
    Errors,
    /// Achieved throughput, RPS.
    Throughput,
    /// The stack's CPU per request, µs (at the ceiling, or at a rate).
    CpuUs,
}

/// The comparison a gate makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GateOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl GateOp {
    fn holds(self, x: f64, bar: f64) -> bool {
        match self {
            GateOp::Lt => x < bar,
            GateOp::Le => x <= bar,
            GateOp::Gt => x > bar,
            GateOp::Ge => x >= bar,
        }
    }
    fn wants_high(self) -> bool {
        matches!(self, GateOp::Gt | GateOp::Ge)
    }
}

/// One `--assert` condition: `[STACK:]METRIC OP VALUE[@RATE]`, e.g. `ceiling>=5000`,
/// `p99<=20ms@3000`, `go-pgx:errors<1%@3000`, `cpu_us<=150`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    /// As the user wrote it.
    pub text: String,
    /// Only this stack (else every stack of the run).
    pub stack: Option<String>,
    /// What is judged.
    pub metric: GateMetric,
    /// How.
    pub op: GateOp,
    /// The bar, in the metric's unit (RPS, ms, a fraction, µs).
    pub value: f64,
    /// At this offered rate (the shelf or probes that ran at it), RPS.
    pub at_rps: Option<f64>,
}

const GRAMMAR: &str = "write [STACK:]METRIC OP VALUE[@RATE]: METRIC one of ceiling, p50, p90, p95, p99, p99.9, errors, rps, cpu_us; OP one of <, <=, >, >=; e.g. `ceiling>=5000`, `p99<=20ms@3000`, `errors<1%@3000`";

impl std::str::FromStr for Gate {
    type Err = String;

    fn from_str(text: &str) -> Result<Gate, String> {
        let t = text.trim();
        let err = |what: &str| format!("--assert `{t}`: {what}; {GRAMMAR}");
        let (at, op, len) = ["<=", ">=", "<", ">"]
            .iter()
            .filter_map(|o| t.find(o).map(|i| (i, *o, o.len())))
            .min_by_key(|(i, _, _)| *i)
            .ok_or_else(|| err("no comparison"))?;
        let op = match op {
            "<=" => GateOp::Le,
            ">=" => GateOp::Ge,
            "<" => GateOp::Lt,
            _ => GateOp::Gt,
        };
        let (left, right) = (t[..at].trim(), t[at + len..].trim());
        let (stack, name) = match left.rsplit_once(':') {
            Some((s, m)) if !s.trim().is_empty() => (Some(s.trim().to_string()), m.trim()),
            _ => (None, left),
        };
        let metric = match name.to_ascii_lowercase().as_str() {
            "ceiling" => GateMetric::Ceiling,
            "p50" => GateMetric::Latency(Quantile::P50),
            "p90" => GateMetric::Latency(Quantile::P90),
            "p95" => GateMetric::Latency(Quantile::P95),
            "p99" => GateMetric::Latency(Quantile::P99),
            "p99.9" | "p999" => GateMetric::Latency(Quantile::P999),
            "errors" => GateMetric::Errors,
            "rps" => GateMetric::Throughput,
            "cpu_us" => GateMetric::CpuUs,
            "" => return Err(err("no metric before the comparison")),
            other => return Err(err(&format!("`{other}` is not a metric"))),
        };
        let (value_text, at_rps) = match right.split_once('@') {
            Some((v, r)) => {
                let r: f64 = r
                    .trim()
                    .trim_end_matches("rps")
                    .trim()
                    .parse()
                    .map_err(|_| err(&format!("`{}` after @ is not a rate in RPS", r.trim())))?;
                if !(r > 0.0 && r.is_finite()) {
                    return Err(err("the rate after @ must be above 0"));
                }
                (v.trim(), Some(r))
            }
            None => (right, None),
        };
        if metric == GateMetric::Ceiling && at_rps.is_some() {
            return Err(err("a ceiling is not at a rate; leave out @RATE"));
        }
        let value = parse_value(metric, value_text).map_err(|w| err(&w))?;
        Ok(Gate {
            text: t.to_string(),
            stack,
            metric,
            op,
            value,
            at_rps,
        })
    }
}

/// A gate's value in its metric's unit: latencies with a unit (`20ms`, `1.5s`, `800us`), errors
/// as a percentage (`1%`) or a fraction (`0.01`), rates and µs as plain numbers.
fn parse_value(metric: GateMetric, v: &str) -> Result<f64, String> {
    let num = |s: &str| -> Result<f64, String> {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| format!("`{v}` is not a number"))
    };
    match metric {
        GateMetric::Latency(_) => {
            let v = v.trim();
            if let Some(x) = v.strip_suffix("ms") {
                num(x)
            } else if let Some(x) = v.strip_suffix("us").or_else(|| v.strip_suffix("µs")) {
                Ok(num(x)? / 1000.0)
            } else if let Some(x) = v.strip_suffix('s') {
                Ok(num(x)? * 1000.0)
            } else {
                Err(format!("`{v}` needs a unit (ms, s or us)"))
            }
        }
        GateMetric::Errors => match v.trim().strip_suffix('%') {
            Some(x) => Ok(num(x)? / 100.0),
            None => {
                let f = num(v)?;
                if f > 1.0 {
                    Err(format!(
                        "`{v}` as a fraction is above 1: write a percentage (`{v}%`)"
                    ))
                } else {
                    Ok(f)
                }
            }
        },
        GateMetric::CpuUs => num(v.trim().trim_end_matches("us").trim_end_matches("µs")),
        GateMetric::Ceiling | GateMetric::Throughput => num(v.trim().trim_end_matches("rps")),
    }
}

/// How a gate came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateVerdict {
    /// The measurement shows the condition holds.
    Pass,
    /// The measurement shows it does not.
    Fail,
    /// The measurement cannot say (the reason is in the detail).
    Inconclusive,
}

impl fmt::Display for GateVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            GateVerdict::Pass => "PASS",
            GateVerdict::Fail => "FAIL",
            GateVerdict::Inconclusive => "INCONCLUSIVE",
        })
    }
}

/// One gate judged on one stack (or the whole load).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateResult {
    /// The gate as written.
    pub gate: String,
    /// The stack (or `load`).
    pub target: String,
    /// Pass, fail or inconclusive.
    pub verdict: GateVerdict,
    /// The figure the gate read, in its unit, when there was one.
    pub observed: Option<f64>,
    /// What was read and why the verdict (`9249 RPS, 95% CI 8800–9700`).
    pub detail: String,
}

impl GateResult {
    /// `PASS  ceiling>=5000  go-pgx: 9249 RPS (95% CI 8800–9700)`.
    pub fn line(&self) -> String {
        format!(
            "{:<12} {}  {}: {}",
            self.verdict, self.gate, self.target, self.detail
        )
    }
}

/// The exit code for a set of judged gates: `None` when every gate passed,
/// [`EXIT_GATE_FAILED`] when one failed, else [`EXIT_GATE_INCONCLUSIVE`].
pub fn exit_code(results: &[GateResult]) -> Option<u8> {
    if results.iter().any(|r| r.verdict == GateVerdict::Fail) {
        Some(EXIT_GATE_FAILED)
    } else if results
        .iter()
        .any(|r| r.verdict == GateVerdict::Inconclusive)
    {
        Some(EXIT_GATE_INCONCLUSIVE)
    } else {
        None
    }
}

fn unit(metric: GateMetric, x: f64) -> String {
    match metric {
        GateMetric::Ceiling | GateMetric::Throughput => format!("{x:.0} RPS"),
        GateMetric::Latency(_) => format!("{} ms", ceiling_analyze::fmt_ms(x)),
        GateMetric::Errors => format!("{:.3}%", x * 100.0),
        GateMetric::CpuUs => format!("{x:.0} µs"),
    }
}

/// Judges one figure `x` against the gate.
fn point(g: &Gate, target: &str, x: f64, what: String) -> GateResult {
    GateResult {
        gate: g.text.clone(),
        target: target.to_string(),
        verdict: if g.op.holds(x, g.value) {
            GateVerdict::Pass
        } else {
            GateVerdict::Fail
        },
        observed: Some(x),
        detail: what,
    }
}

/// `r` with the verdict `v` (the figure proved it, whatever the point alone says).
fn decided(v: GateVerdict, r: GateResult) -> GateResult {
    GateResult { verdict: v, ..r }
}

fn inconclusive(g: &Gate, target: &str, observed: Option<f64>, why: String) -> GateResult {
    GateResult {
        gate: g.text.clone(),
        target: target.to_string(),
        verdict: GateVerdict::Inconclusive,
        observed,
        detail: why,
    }
}

/// Judges every gate on every stack of a run or search it names (every stack when it names none).
/// A gate naming a stack the run does not have is inconclusive.
pub fn judge_report(gates: &[Gate], r: &RunReport) -> Vec<GateResult> {
    let mut out = Vec::new();
    for g in gates {
        let stacks: Vec<&StackAnalysis> = r
            .stacks
            .iter()
            .filter(|a| g.stack.as_ref().is_none_or(|s| *s == a.stack))
            .collect();
        if stacks.is_empty() {
            out.push(inconclusive(
                g,
                g.stack.as_deref().unwrap_or("(no stack)"),
                None,
                format!(
                    "the run has no such stack (it has: {})",
                    r.stacks
                        .iter()
                        .map(|a| a.stack.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        for a in stacks {
            out.push(judge_stack(g, a));
        }
    }
    out
}

fn judge_stack(g: &Gate, a: &StackAnalysis) -> GateResult {
    let who = a.stack.as_str();
    match (g.metric, g.at_rps) {
        (GateMetric::Ceiling, _) => judge_ceiling(g, a),
        (GateMetric::CpuUs, None) => match a.ceiling.cpu_us_per_request {
            Some(x) => point(g, who, x, format!("{} at the ceiling", unit(g.metric, x))),
            None => inconclusive(
                g,
                who,
                None,
                "no CPU per request at the ceiling (not sampled, or no ceiling)".into(),
            ),
        },
        (_, None) => inconclusive(
            g,
            who,
            None,
            format!(
                "a run or search has a figure per rate: write the rate, e.g. `{}@{:.0}`",
                g.text,
                a.ceiling.rps.max(1.0)
            ),
        ),
        (_, Some(rate)) => match &a.search {
            Some(s) => judge_probes(g, who, &s.probes, rate),
            None => judge_shelves(g, who, &a.shelves, rate),
        },
    }
}

fn judge_ceiling(g: &Gate, a: &StackAnalysis) -> GateResult {
    let who = a.stack.as_str();
    let est = a.search.as_ref().map_or(a.ceiling.rps, |s| s.ceiling_rps);
    let lower_bound = match &a.search {
        Some(s) => s.status.is_lower_bound(),
        None => !a.ceiling.bracketed,
    };
    if let Some(i) = a.search.as_ref().and_then(|s| s.interval.as_ref()) {
        let what = format!("{est:.0} RPS (95% CI {:.0}–{:.0})", i.lo, i.hi);
        let (all, none) = (
            g.op.holds(i.lo, g.value) && g.op.holds(i.hi, g.value),
            !g.op.holds(i.lo, g.value) && !g.op.holds(i.hi, g.value),
        );
        return if all {
            decided(GateVerdict::Pass, point(g, who, est, what))
        } else if none {
            decided(GateVerdict::Fail, point(g, who, est, what))
        } else {
            inconclusive(
                g,
                who,
                Some(est),
                format!("{what}: the bar {:.0} lies inside the interval", g.value),
            )
        };
    }
    if lower_bound {
        // ≥ est is all that is known: it proves a bar at or below it, nothing above
        let what = format!("≥ {est:.0} RPS (a lower bound: nothing above it failed)");
        return if g.op.wants_high() && g.op.holds(est, g.value) {
            decided(GateVerdict::Pass, point(g, who, est, what))
        } else if !g.op.wants_high() && !g.op.holds(est, g.value) {
            decided(GateVerdict::Fail, point(g, who, est, what))
        } else {
            inconclusive(g, who, Some(est), what)
        };
    }
    point(g, who, est, format!("{est:.0} RPS"))
}

fn near(x: f64, rate: f64) -> bool {
    (x - rate).abs() <= RATE_MATCH * rate
}

fn rates_seen(v: impl Iterator<Item = f64>) -> String {
    let mut r: Vec<f64> = v.collect();
    r.sort_by(f64::total_cmp);
    r.dedup_by(|a, b| near(*a, *b));
    r.iter()
        .map(|x| format!("{x:.0}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A stepped run: every valid shelf at the rate must hold the condition (one failing shelf fails
/// the gate); an invalid one (generator-bound, a part that exited) makes it inconclusive.
fn judge_shelves(g: &Gate, who: &str, shelves: &[ShelfResult], rate: f64) -> GateResult {
    let at: Vec<&ShelfResult> = shelves
        .iter()
        .filter(|s| s.rate.is_some_and(|r| near(r, rate)))
        .collect();
    if at.is_empty() {
        return inconclusive(
            g,
            who,
            None,
            format!(
                "no shelf ran at {rate:.0} RPS (shelves at: {})",
                rates_seen(shelves.iter().filter_map(|s| s.rate))
            ),
        );
    }
    if let Some(bad) = at.iter().find(|s| s.verdict == Verdict::Invalid) {
        return inconclusive(
            g,
            who,
            None,
            format!("shelf {} is invalid: {}", bad.label, bad.reasons_text()),
        );
    }
    let mut results: Vec<GateResult> = Vec::new();
    for s in &at {
        let x = match g.metric {
            GateMetric::Latency(q) => Some(match q {
                Quantile::P50 => s.latency.p50_ms,
                Quantile::P90 => s.latency.p90_ms,
                Quantile::P95 => s.latency.p95_ms,
                Quantile::P99 => s.latency.p99_ms,
                Quantile::P999 => s.latency.p999_ms,
            }),
            GateMetric::Errors => Some(s.error_rate),
            GateMetric::Throughput => Some(s.achieved_rps),
            GateMetric::CpuUs => s.cpu_us_per_request,
            GateMetric::Ceiling => None,
        };
        match x {
            Some(x) => results.push(point(
                g,
                who,
                x,
                format!("{} at shelf {}", unit(g.metric, x), s.label),
            )),
            None => {
                return inconclusive(g, who, None, format!("shelf {} has no CPU sample", s.label))
            }
        }
    }
    results
        .iter()
        .find(|r| r.verdict == GateVerdict::Fail)
        .or_else(|| results.first())
        .cloned()
        .expect("at least one shelf")
}

/// A search: the probes at the rate (not disturbed, not invalid). All holding passes, none
/// holding fails; replicates that disagree are the knee's transition zone — inconclusive.
fn judge_probes(
    g: &Gate,
    who: &str,
    probes: &[ceiling_analyze::ProbeVerdict],
    rate: f64,
) -> GateResult {
    let at: Vec<&ceiling_analyze::ProbeVerdict> = probes
        .iter()
        .filter(|p| p.pooled() && near(p.rate, rate))
        .collect();
    if at.is_empty() {
        return inconclusive(
            g,
            who,
            None,
            format!(
                "no probe ran at {rate:.0} RPS (probes at: {})",
                rates_seen(probes.iter().filter(|p| p.pooled()).map(|p| p.rate))
            ),
        );
    }
    let mut xs = Vec::new();
    for p in &at {
        let x = match g.metric {
            GateMetric::Latency(Quantile::P50) => Some(p.p50_ms),
            GateMetric::Latency(Quantile::P90) => Some(p.p90_ms),
            GateMetric::Latency(Quantile::P99) => Some(p.p99_ms),
            GateMetric::Latency(_) => None,
            GateMetric::Errors => Some(p.error_rate),
            GateMetric::Throughput => Some(p.achieved_rps),
            GateMetric::CpuUs | GateMetric::Ceiling => None,
        };
        match x {
            Some(x) => xs.push(x),
            None => {
                return inconclusive(
                    g,
                    who,
                    None,
                    "a search's probes record p50, p90, p99, errors and throughput; judge the others on a run".into(),
                )
            }
        }
    }
    let held = xs.iter().filter(|x| g.op.holds(**x, g.value)).count();
    let shown = xs
        .iter()
        .map(|x| unit(g.metric, *x))
        .collect::<Vec<_>>()
        .join(", ");
    let what = format!(
        "{shown} at {} probe{} near {rate:.0} RPS",
        xs.len(),
        if xs.len() == 1 { "" } else { "s" }
    );
    let worst = if g.op.wants_high() {
        xs.iter().copied().fold(f64::INFINITY, f64::min)
    } else {
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    };
    if held == xs.len() {
        decided(GateVerdict::Pass, point(g, who, worst, what))
    } else if held == 0 {
        decided(GateVerdict::Fail, point(g, who, worst, what))
    } else {
        inconclusive(
            g,
            who,
            Some(worst),
            format!(
                "{what}: {held} of {} hold it — the rate is in the knee's transition zone",
                xs.len()
            ),
        )
    }
}

/// What `ceiling load` measured, for its gates (one figure each: the whole measured phase).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadFigures {
    /// Latency quantiles, ms.
    pub p50_ms: f64,
    /// p90, ms.
    pub p90_ms: f64,
    /// p95, ms.
    pub p95_ms: f64,
    /// p99, ms.
    pub p99_ms: f64,
    /// p99.9, ms.
    pub p999_ms: f64,
    /// Errors over requests.
    pub error_rate: f64,
    /// Achieved throughput, RPS.
    pub achieved_rps: f64,
    /// The generator could not keep the schedule (then the figures are not the service's).
    pub generator_bound: bool,
}

/// Judges gates on a load's figures: no rate (`@`) and no stack apply; a generator-bound load is
/// inconclusive for every gate.
pub fn judge_load(gates: &[Gate], f: &LoadFigures) -> Vec<GateResult> {
    gates
        .iter()
        .map(|g| {
            if g.stack.is_some() || g.at_rps.is_some() {
                return inconclusive(
                    g,
                    "load",
                    None,
                    "`ceiling load` has one figure per metric: leave out STACK: and @RATE".into(),
                );
            }
            if f.generator_bound {
                return inconclusive(
                    g,
                    "load",
                    None,
                    "the generator could not keep the schedule: the figures are not the service's"
                        .into(),
                );
            }
            let x =
                match g.metric {
                    GateMetric::Latency(Quantile::P50) => f.p50_ms,
                    GateMetric::Latency(Quantile::P90) => f.p90_ms,
                    GateMetric::Latency(Quantile::P95) => f.p95_ms,
                    GateMetric::Latency(Quantile::P99) => f.p99_ms,
                    GateMetric::Latency(Quantile::P999) => f.p999_ms,
                    GateMetric::Errors => f.error_rate,
                    GateMetric::Throughput => f.achieved_rps,
                    GateMetric::Ceiling | GateMetric::CpuUs => return inconclusive(
                        g,
                        "load",
                        None,
                        "`ceiling load` finds no ceiling and samples no stack: use run or search"
                            .into(),
                    ),
                };
            point(g, "load", x, unit(g.metric, x))
        })
        .collect()
}

/// The regression gate of `ceiling compare A B --fail-on-regression X`: B fails when a figure is
/// worse than A's by more than `threshold` (a fraction) **and** the difference is significant
/// (the ratio's 95% interval excludes 1: Welch's t on repetitions, or the two search intervals);
/// worse by more than the threshold with no test possible (one value each) is inconclusive.
pub fn regressions(cmp: &crate::RunComparison, threshold: f64) -> Vec<GateResult> {
    let text = format!("no regression beyond {:.1}%", threshold * 100.0);
    let mut out = Vec::new();
    for s in &cmp.stacks {
        let target = if s.a_stack == s.b_stack {
            s.a_stack.clone()
        } else {
            format!("{} → {}", s.a_stack, s.b_stack)
        };
        let diffs = std::iter::once(("ceiling".to_string(), &s.ceiling)).chain(
            s.points
                .iter()
                .flat_map(|p| p.diffs.iter().map(move |d| (p.point.clone(), d))),
        );
        for (at, d) in diffs {
            if !d.ratio.is_finite() {
                continue;
            }
            let worse = if d.quantity.higher_is_better() {
                1.0 - d.ratio
            } else {
                d.ratio - 1.0
            };
            if worse <= threshold {
                continue;
            }
            let what = format!(
                "{} at {at}: {} ({})",
                d.quantity.name(),
                d.verdict,
                match d.ratio_ci {
                    Some((lo, hi)) => format!("B/A {:.3}, 95% CI {lo:.3}–{hi:.3}", d.ratio),
                    None => format!("B/A {:.3}, no test", d.ratio),
                }
            );
            out.push(GateResult {
                gate: text.clone(),
                target: target.clone(),
                verdict: match d.significant {
                    Some(true) => GateVerdict::Fail,
                    Some(false) => GateVerdict::Pass,
                    None => GateVerdict::Inconclusive,
                },
                observed: Some(d.ratio),
                detail: what,
            });
        }
    }
    if out.is_empty() {
        out.push(GateResult {
            gate: text,
            target: cmp.b.clone(),
            verdict: GateVerdict::Pass,
            observed: None,
            detail: "no figure is worse than A's by more than the threshold".into(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(s: &str) -> Gate {
        s.parse().unwrap()
    }

    #[test]
    fn gates_parse_with_units_stacks_and_rates() {
        let g = gate("ceiling>=5000");
        assert_eq!(
            (g.metric, g.op, g.value, g.at_rps),
            (GateMetric::Ceiling, GateOp::Ge, 5000.0, None)
        );
        let g = gate("p99<=20ms@3000");
        assert_eq!(g.metric, GateMetric::Latency(Quantile::P99));
        assert_eq!((g.op, g.value, g.at_rps), (GateOp::Le, 20.0, Some(3000.0)));
        let g = gate("go-pgx:errors<1%@3000");
        assert_eq!(g.stack.as_deref(), Some("go-pgx"));
        assert!((g.value - 0.01).abs() < 1e-12);
        assert_eq!(gate("p99.9 < 1.5s").value, 1500.0);
        assert_eq!(gate("p50<800us").value, 0.8);
        assert_eq!(gate("cpu_us<=150").value, 150.0);
        for bad in [
            "ceiling",
            "p99<=20@3000",
            "speed>1",
            "ceiling>=5000@10",
            "errors<5",
            "p99<=20ms@x",
        ] {
            let e = bad.parse::<Gate>().unwrap_err();
            assert!(e.contains(bad.trim()) && e.contains("METRIC"), "{e}");
        }
    }

    #[test]
    fn load_gates_judge_the_one_figure_and_refuse_a_generator_bound_load() {
        let f = LoadFigures {
            p50_ms: 1.0,
            p90_ms: 4.0,
            p95_ms: 6.0,
            p99_ms: 18.0,
            p999_ms: 40.0,
            error_rate: 0.002,
            achieved_rps: 2990.0,
            generator_bound: false,
        };
        let r = judge_load(
            &[gate("p99<=20ms"), gate("errors<0.1%"), gate("rps>=2900")],
            &f,
        );
        let v: Vec<GateVerdict> = r.iter().map(|x| x.verdict).collect();
        assert_eq!(v, [GateVerdict::Pass, GateVerdict::Fail, GateVerdict::Pass]);
        assert_eq!(exit_code(&r), Some(EXIT_GATE_FAILED));
        let bound = LoadFigures {
            generator_bound: true,
            ..f
        };
        let r = judge_load(&[gate("p99<=20ms")], &bound);
        assert_eq!(r[0].verdict, GateVerdict::Inconclusive);
        assert_eq!(exit_code(&r), Some(EXIT_GATE_INCONCLUSIVE));
        assert_eq!(exit_code(&judge_load(&[gate("p99<=20ms")], &f)), None);
    }
}
