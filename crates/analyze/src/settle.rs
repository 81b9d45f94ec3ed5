//! Settling a warm-up (`[settle]` in a plan): the last warm-up stage is run again in steps until
//! the stack's throughput stops moving, so the first repetition of a closed-model run is not the
//! one that pays for the JIT, the pools and the caches (source 003's scaled runs drifted exactly
//! so: [`crate::repetition_drift`] found the first repetition at half speed).
//!
//! The rule is [`is_settled`]; the record of what the warm-up did is [`Settling`], kept in
//! run.json with the stack's analysis.

use serde::{Deserialize, Serialize};

/// One step of a settling warm-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarmupStep {
    /// Seconds since the settling began when this step ended.
    pub end_s: f64,
    /// Requests completed in the step.
    pub requests: u64,
    /// Of them, errors.
    pub errors: u64,
    /// Completed requests per second of the step.
    pub throughput_rps: f64,
    /// Median latency of the step, ms.
    pub p50_ms: f64,
    /// p99 of the step, ms.
    pub p99_ms: f64,
}

/// What a settling warm-up did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settling {
    /// Connections of the repeated warm-up stage.
    pub connections: usize,
    /// Length of one step, s.
    pub step_s: f64,
    /// Steps compared by the rule.
    pub steps_compared: u32,
    /// Agreement asked, as a fraction of the median.
    pub within: f64,
    /// The bound on the settling, s.
    pub max_s: f64,
    /// Every step, in order (the plan's fixed warm-up stages before them are not steps).
    pub steps: Vec<WarmupStep>,
    /// True when the last `steps_compared` steps agreed; false when `max_s` ran out first, or the
    /// settling was stopped (Ctrl-C, the stack exited).
    pub settled: bool,
}

impl Settling {
    /// Seconds of settling done.
    pub fn seconds(&self) -> f64 {
        self.steps.last().map(|s| s.end_s).unwrap_or(0.0)
    }

    /// One line for the terminal and the report.
    pub fn describe(&self) -> String {
        let tail: Vec<String> = self
            .steps
            .iter()
            .rev()
            .take(self.steps_compared as usize)
            .rev()
            .map(|s| format!("{:.0}", s.throughput_rps))
            .collect();
        let first = self
            .steps
            .first()
            .map(|s| format!("{:.0}", s.throughput_rps))
            .unwrap_or_else(|| "-".into());
        if self.settled {
            format!(
                "warm-up settled after {} steps of {:.0} s at c={} ({:.0} s): throughput {} → {} RPS, the last {} within ±{:.0}%",
                self.steps.len(),
                self.step_s,
                self.connections,
                self.seconds(),
                first,
                tail.join(", "),
                self.steps_compared,
                self.within * 100.0
            )
        } else {
            format!(
                "warm-up did NOT settle in {:.0} s ({} steps of {:.0} s at c={}): throughput {} → {} RPS, still moving more than ±{:.0}% — the first repetitions may be slower than the rest",
                self.seconds(),
                self.steps.len(),
                self.step_s,
                self.connections,
                first,
                tail.join(", "),
                self.within * 100.0
            )
        }
    }
}

/// True when the last `steps` throughputs have settled: all of them positive, every one within
/// ±`within` of their median, and the last within `within` of the first of them (a steady climb
/// of a little per step is still a climb). Fewer than `steps` values are never settled.
/// A window sees only itself: a runtime that pauses on a plateau for `steps` steps and then speeds
/// up again (a late compilation tier) is judged settled on the plateau — choose `steps × step`
/// longer than the plateaus the runtime has.
pub fn is_settled(throughputs: &[f64], steps: usize, within: f64) -> bool {
    let steps = steps.max(2);
    if throughputs.len() < steps {
        return false;
    }
    let last = &throughputs[throughputs.len() - steps..];
    if last.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
        return false;
    }
    let median = crate::stats::median(last);
    let near = last.iter().all(|x| (x / median - 1.0).abs() <= within);
    let flat = (last[last.len() - 1] / last[0] - 1.0).abs() <= within;
    near && flat
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JIT-like warm-up: throughput approaches `full` as 1 − e^(−t/τ), one value per step.
    fn warming(full: f64, tau_steps: f64, n: usize) -> Vec<f64> {
        (1..=n)
            .map(|i| full * (1.0 - 0.7 * (-(i as f64) / tau_steps).exp()))
            .collect()
    }

    #[test]
    fn a_warming_stack_settles_only_once_its_curve_has_flattened() {
        let curve = warming(1000.0, 3.0, 30);
        // the first step at which the rule says settled
        let at = (1..=curve.len())
            .find(|&k| is_settled(&curve[..k], 3, 0.05))
            .expect("settles within 30 steps");
        // truth: within 5% of full from step i where 0.7·e^(−i/3) < 0.05, i.e. i ≥ 7.9; the
        // rule also asks first-vs-last within 5%, so it answers a little after
        assert!((7..=12).contains(&at), "settled at step {at}");
        // and where it says settled the stack is within 5% of its full speed (9 here)
        assert!(curve[at - 1] >= 950.0, "{}", curve[at - 1]);
        // a curve twice as slow settles later: the rule follows the stack, not a clock
        let slow = warming(1000.0, 6.0, 40);
        let at_slow = (1..=slow.len())
            .find(|&k| is_settled(&slow[..k], 3, 0.05))
            .unwrap();
        assert!(at_slow > at + 2, "{at_slow} vs {at}");
    }

    #[test]
    fn noise_around_a_flat_line_is_settled_and_a_slow_climb_is_not() {
        let noisy = [1000.0, 1030.0, 980.0, 1010.0, 990.0];
        assert!(is_settled(&noisy, 3, 0.05));
        // +4% per step: each within ±5% of the median of three, but the last is 8% above the first
        let climb: Vec<f64> = (0..6).map(|i| 1000.0 * 1.04f64.powi(i)).collect();
        assert!(!is_settled(&climb, 3, 0.05));
        // too few steps, a zero step
        assert!(!is_settled(&[1000.0, 1000.0], 3, 0.05));
        assert!(!is_settled(&[1000.0, 0.0, 1000.0], 3, 0.05));
    }

    #[test]
    fn describe_says_which_way_it_ended() {
        let step = |end_s: f64, t: f64| WarmupStep {
            end_s,
            requests: (t * 10.0) as u64,
            errors: 0,
            throughput_rps: t,
            p50_ms: 1.0,
            p99_ms: 2.0,
        };
        let mut s = Settling {
            connections: 50,
            step_s: 10.0,
            steps_compared: 3,
            within: 0.05,
            max_s: 60.0,
            steps: vec![
                step(10.0, 500.0),
                step(20.0, 990.0),
                step(30.0, 1000.0),
                step(40.0, 1005.0),
            ],
            settled: true,
        };
        let d = s.describe();
        assert!(
            d.contains("settled after 4 steps") && d.contains("500 → 990, 1000, 1005"),
            "{d}"
        );
        s.settled = false;
        assert!(
            s.describe().contains("did NOT settle in 40 s"),
            "{}",
            s.describe()
        );
    }
}
