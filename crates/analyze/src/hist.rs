//! Latency summaries of merged histograms, and a compact (sparse) histogram copy used to delay
//! seconds whose fate (kept or trimmed) is not yet known.

use ceiling_metrics::{new_histogram, MAX_LATENCY_US};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Microseconds → milliseconds.
pub(crate) fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The latency at percentile `p` (0–100) in ms, `None` for an empty histogram.
pub fn percentile_ms(h: &Histogram<u64>, p: f64) -> Option<f64> {
    (!h.is_empty()).then(|| ms(h.value_at_quantile(p / 100.0)))
}

/// Standard latency percentiles of one merged window, milliseconds. All zero when `count` is 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Number of recorded values.
    pub count: u64,
    /// Mean, ms.
    pub mean_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 75th percentile, ms (source 004's wrk `--latency` column; absent in older run.json files).
    #[serde(default)]
    pub p75_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Maximum, ms.
    pub max_ms: f64,
}

/// The histogram wrk would print for `h`: wrk does not report the latencies it measured but first
/// "corrects" them for coordinated omission (`stats_correct` in wrk's stats.c, called with
/// `interval = runtime / (requests / connections)`): every value v ≥ 2 × interval adds as many
/// synthetic values at v − interval, v − 2 × interval, … while they stay above the interval.
/// Sources measured with wrk (003, 004) printed these; ceiling records the latencies themselves,
/// so a comparison with such a source sets this beside the source's figures. `None` when the
/// interval is 0 or the correction would add more than [`WRK_CORRECTION_MAX_STEPS`] values (a
/// run of seconds-long stalls at a microsecond interval: wrk's own loop would run as long).
pub fn wrk_corrected(h: &Histogram<u64>, interval_us: u64) -> Option<Histogram<u64>> {
    if interval_us == 0 {
        return None;
    }
    let mut steps: u64 = 0;
    let mut out = h.clone();
    for v in h.iter_recorded() {
        // the bucket's lowest value (the histogram keeps 3 significant digits; wrk keeps µs)
        let (value, count) = (
            h.lowest_equivalent(v.value_iterated_to()),
            v.count_at_value(),
        );
        if value < 2 * interval_us {
            continue;
        }
        let mut m = value - interval_us;
        while m > interval_us {
            steps += 1;
            if steps > WRK_CORRECTION_MAX_STEPS {
                return None;
            }
            out.saturating_record_n(m, count);
            m -= interval_us;
        }
    }
    Some(out)
}

/// The most synthetic values [`wrk_corrected`] adds (distinct value × step) before giving up.
pub const WRK_CORRECTION_MAX_STEPS: u64 = 20_000_000;

impl Percentiles {
    /// Reads the standard percentiles from a histogram (values in µs).
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Percentiles::default();
        }
        let q = |p: f64| ms(h.value_at_quantile(p));
        Percentiles {
            count: h.len(),
            mean_ms: h.mean() / 1000.0,
            p50_ms: q(0.50),
            p75_ms: q(0.75),
            p90_ms: q(0.90),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: ms(h.max()),
        }
    }
    /// The stored value for a standard percentile (50, 75, 90, 95, 99, 99.9, 100 = max).
    pub fn get(&self, p: f64) -> Option<f64> {
        let eq = |a: f64| (p - a).abs() < 1e-9;
        if eq(50.0) {
            Some(self.p50_ms)
        } else if eq(75.0) {
            Some(self.p75_ms)
        } else if eq(90.0) {
            Some(self.p90_ms)
        } else if eq(95.0) {
            Some(self.p95_ms)
        } else if eq(99.0) {
            Some(self.p99_ms)
        } else if eq(99.9) {
            Some(self.p999_ms)
        } else if eq(100.0) {
            Some(self.max_ms)
        } else {
            None
        }
    }
}

/// A histogram stored as its non-zero buckets `(highest equivalent value, count)`. A one-second
/// histogram at a few thousand RPS has a few hundred buckets (a few KB) instead of the dense
/// ~190 KB, so a delay line of seconds stays small.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sparse(Vec<(u64, u64)>);

impl Sparse {
    pub(crate) fn of(h: &Histogram<u64>) -> Self {
        Sparse(
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        )
    }
    /// Adds the stored counts into `dst` (same bucket as the original values, exactly).
    pub(crate) fn add_to(&self, dst: &mut Histogram<u64>) {
        for &(v, c) in &self.0 {
            dst.saturating_record_n(v.clamp(1, MAX_LATENCY_US), c);
        }
    }
    #[allow(dead_code)]
    pub(crate) fn to_histogram(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        self.add_to(&mut h);
        h
    }
}

#[cfg(test)]
mod tests {
    /// Truth test, worked by hand from wrk's stats_correct: one value of 10 ms and nine of 1 ms
    /// over an interval of 3 ms — the 10-ms value adds one value each at 7 and 4 ms (v − 3k
    /// while above 3 ms), the 1-ms ones nothing; a value below 2 × interval adds nothing.
    #[test]
    fn wrk_correction_adds_what_wrk_adds() {
        let mut h = ceiling_metrics::new_histogram();
        h.record(10_000).unwrap();
        h.record_n(1_000, 9).unwrap();
        let c = super::wrk_corrected(&h, 3_000).unwrap();
        assert_eq!(c.len(), 12);
        assert_eq!(c.count_at(7_000), 1);
        assert_eq!(c.count_at(4_000), 1);
        assert_eq!(c.count_at(1_000), 9);
        // 5.9 ms would be ≥ 2 × 2.9 ms: one value at 3.0 ms (> 2.9)
        let mut h = ceiling_metrics::new_histogram();
        h.record(5_900).unwrap();
        let c = super::wrk_corrected(&h, 2_900).unwrap();
        assert_eq!(c.len(), 2);
        // below 2 × interval: unchanged
        let c = super::wrk_corrected(&h, 3_000).unwrap();
        assert_eq!(c.len(), 1);
        assert!(super::wrk_corrected(&h, 0).is_none());
        // a bound on the work: a minute-long value at a 1-µs interval gives up
        let mut h = ceiling_metrics::new_histogram();
        h.record(60_000_000).unwrap();
        assert!(super::wrk_corrected(&h, 1).is_none());
    }

    use super::*;
    use ceiling_metrics::record_us;

    #[test]
    fn mean_and_p75_beside_the_percentiles() {
        let mut h = new_histogram();
        for i in 1..=1000u64 {
            record_us(&mut h, i * 100); // 0.1 ms … 100 ms, evenly
        }
        let p = Percentiles::of(&h);
        assert!((p.mean_ms - 50.05).abs() < 0.1, "{p:?}");
        assert!((p.p75_ms - 75.0).abs() < 0.1, "{p:?}");
        assert!((p.p50_ms - 50.0).abs() < 0.1, "{p:?}");
        assert_eq!(p.get(75.0), Some(p.p75_ms));
        // run.json written before p75 existed still reads
        let mut v = serde_json::to_value(&p).unwrap();
        v.as_object_mut().unwrap().remove("p75_ms");
        let back: Percentiles = serde_json::from_value(v).unwrap();
        assert_eq!((back.p75_ms, back.p50_ms), (0.0, p.p50_ms));
    }

    #[test]
    fn sparse_round_trip_is_exact() {
        let mut h = new_histogram();
        for i in 1..5000u64 {
            record_us(&mut h, i * 37 % 400_000 + 1);
        }
        record_us(&mut h, 3_000_000);
        let s = Sparse::of(&h);
        let back = s.to_histogram();
        assert_eq!(back.len(), h.len());
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
        }
        assert_eq!(back.max(), h.max());
        let p = Percentiles::of(&h);
        assert_eq!(p.count, 5000);
        assert_eq!(p.get(99.0), Some(p.p99_ms));
        assert_eq!(p.get(75.0), Some(p.p75_ms));
        assert_eq!(p.get(80.0), None);
        assert_eq!(percentile_ms(&new_histogram(), 99.0), None);
    }
}
