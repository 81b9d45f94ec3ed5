//! The open model's schedule: one global sequence of intended send times from a piecewise rate
//! function (linear ramps and constant holds), evenly spaced or as a Poisson process.
//!
//! Arrival k happens where the integrated rate Λ(t) reaches a target: `k + ½` for uniform arrivals,
//! or a running sum of Exp(1) draws for Poisson (the time-change construction of an inhomogeneous
//! Poisson process, exact for ramps). Each stage inverts its own Λ in closed form, so the schedule
//! never drifts, however long the run.

use ceiling_plan::{Arrivals, Stage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A stage of the schedule in nanoseconds since the run start.
#[derive(Debug, Clone)]
pub struct TimedStage {
    /// Start offset, ns.
    pub start: u64,
    /// End offset, ns (exclusive).
    pub end: u64,
    /// Rate at start, requests per second.
    pub from: f64,
    /// Rate at end.
    pub to: f64,
}

impl TimedStage {
    fn len_s(&self) -> f64 {
        (self.end - self.start) as f64 / 1e9
    }
    /// Expected arrivals in the whole stage.
    fn total(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.len_s()
    }
    /// Offset in seconds from stage start at which the integrated rate equals `l`.
    fn invert(&self, l: f64) -> f64 {
        let d = self.len_s();
        let a = (self.to - self.from) / (2.0 * d);
        let b = self.from;
        if a.abs() < 1e-12 {
            l / b
        } else {
            // a τ² + b τ − l = 0, positive root, written to avoid cancellation.
            2.0 * l / (b + (b * b + 4.0 * a * l).sqrt())
        }
    }
}

/// Lays out open-model stages back to back, starting at `offset_ns`.
pub fn timed_stages(stages: &[Stage], offset_ns: u64) -> Vec<TimedStage> {
    let mut t = offset_ns;
    stages
        .iter()
        .map(|s| {
            let d = s.duration().unwrap_or_default().as_nanos() as u64;
            let (from, to) = match s {
                Stage::Ramp { from, to, .. } => (*from, *to),
                Stage::Hold { rate, .. } => (*rate, *rate),
                Stage::Closed { .. } => (0.0, 0.0),
            };
            let ts = TimedStage {
                start: t,
                end: t + d,
                from,
                to,
            };
            t += d;
            ts
        })
        .collect()
}

/// One intended send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// Global arrival index.
    pub index: u64,
    /// Intended send time, ns since run start.
    pub at: u64,
    /// Index into the stage list the schedule was built from.
    pub stage: usize,
}

/// Iterator over intended send times. A shard `(i, n)` yields arrivals with `index % n == i`.
pub struct Schedule {
    stages: Vec<TimedStage>,
    arrivals: Arrivals,
    rng: ChaCha8Rng,
    stage: usize,
    /// Integrated rate consumed in stages before `stage`.
    done_before: f64,
    /// Integrated-rate target of the next arrival (global).
    target: f64,
    index: u64,
    shard: (u64, u64),
}

impl Schedule {
    /// A schedule over `stages`; `seed` drives Poisson draws (identical for every shard).
    pub fn new(stages: Vec<TimedStage>, arrivals: Arrivals, seed: u64, shard: (u64, u64)) -> Self {
        let mut s = Schedule {
            stages,
            arrivals,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_ca11),
            stage: 0,
            done_before: 0.0,
            target: 0.0,
            index: 0,
            shard,
        };
        s.target = s.step();
        s
    }

    fn step(&mut self) -> f64 {
        match self.arrivals {
            Arrivals::Uniform => {
                if self.index == 0 {
                    0.5
                } else {
                    1.0
                }
            }
            Arrivals::Poisson => {
                let u: f64 = self.rng.gen_range(f64::MIN_POSITIVE..1.0);
                -u.ln()
            }
        }
    }

    fn next_global(&mut self) -> Option<Arrival> {
        loop {
            let st = self.stages.get(self.stage)?;
            let local = self.target - self.done_before;
            if local <= st.total() && st.total() > 0.0 {
                let at = st.start + (st.invert(local) * 1e9) as u64;
                let a = Arrival {
                    index: self.index,
                    at: at.min(st.end.saturating_sub(1)),
                    stage: self.stage,
                };
                self.index += 1;
                self.target += self.step();
                return Some(a);
            }
            self.done_before += st.total();
            self.stage += 1;
        }
    }
}

impl Iterator for Schedule {
    type Item = Arrival;
    fn next(&mut self) -> Option<Arrival> {
        loop {
            let a = self.next_global()?;
            if a.index % self.shard.1 == self.shard.0 {
                return Some(a);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn stages() -> Vec<Stage> {
        vec![
            Stage::Ramp {
                from: 0.0,
                to: 100.0,
                duration: Duration::from_secs(10),
            },
            Stage::Hold {
                rate: 100.0,
                duration: Duration::from_secs(10),
            },
        ]
    }

    #[test]
    fn uniform_counts_and_spacing() {
        let all: Vec<_> =
            Schedule::new(timed_stages(&stages(), 0), Arrivals::Uniform, 1, (0, 1)).collect();
        // ramp 0→100 over 10 s = 500 requests, hold = 1000.
        assert_eq!(all.len(), 1500);
        let hold: Vec<_> = all.iter().filter(|a| a.stage == 1).collect();
        assert_eq!(hold.len(), 1000);
        for w in hold.windows(2) {
            let gap = w[1].at - w[0].at;
            assert!((9_999_000..=10_001_000).contains(&gap), "gap {gap}");
        }
        // Ramp: arrivals per second grow linearly (second 0 ≈ 5, second 9 ≈ 95).
        let per_s = |s: u64| all.iter().filter(|a| a.at / 1_000_000_000 == s).count();
        assert!((4..=6).contains(&per_s(0)), "{}", per_s(0));
        assert!((94..=96).contains(&per_s(9)), "{}", per_s(9));
    }

    #[test]
    fn poisson_mean_rate_and_shards_partition() {
        let st = vec![Stage::Hold {
            rate: 1000.0,
            duration: Duration::from_secs(20),
        }];
        let all: Vec<_> =
            Schedule::new(timed_stages(&st, 0), Arrivals::Poisson, 7, (0, 1)).collect();
        let n = all.len() as f64;
        assert!((n - 20_000.0).abs() < 4.0 * 20_000f64.sqrt(), "{n}");
        let a: Vec<_> = Schedule::new(timed_stages(&st, 0), Arrivals::Poisson, 7, (0, 2)).collect();
        let b: Vec<_> = Schedule::new(timed_stages(&st, 0), Arrivals::Poisson, 7, (1, 2)).collect();
        assert_eq!(a.len() + b.len(), all.len());
        assert_eq!(a[0].at, all[0].at);
        assert_eq!(b[0].at, all[1].at);
    }
}
