//! Pooling replicate probes: what one probe contributes to a longer window, and the SLO margin
//! of several probes at one rate judged as one window.
//!
//! Two probes of 20 s at one rate are one window of 40 s: their latency histograms add, their
//! errors and requests add, and the SLO is judged on the sums. So a rate's verdict sharpens with
//! every replicate instead of the replicates being averaged (a mean of two p99s is no p99) or
//! thrown away for a longer probe.
//!
//! Histograms are kept per probe in log buckets 1% wide ([`LogHist`]): pooled percentiles are
//! exact to that resolution (the SLO verdict of each probe alone stays the shelf's own, at the
//! engine's 0.1%).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Width of a [`LogHist`] bucket: ln(1.01), so a bucket spans 1% of its value.
pub const LOG_STEP: f64 = 0.009_950_330_853_168_083;
/// Buckets from 1 µs to 1 h (ln(3.6e9) / LOG_STEP ≈ 2,196).
const NBUCKETS: usize = 2_200;

/// A latency histogram in log buckets 1% wide, stored sparsely as `(bucket, count)` ascending:
/// a probe's window in a few hundred pairs, cheap to add (a search pools it many times over in
/// its bootstrap).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LogHist(pub Vec<(u16, u64)>);

fn bucket_of(us: u64) -> usize {
    (((us.max(1)) as f64).ln() / LOG_STEP)
        .round()
        .clamp(0.0, (NBUCKETS - 1) as f64) as usize
}

fn value_ms(bucket: usize) -> f64 {
    (bucket as f64 * LOG_STEP).exp() / 1000.0
}

impl LogHist {
    /// From an engine histogram (values in µs): each recorded value goes to the bucket nearest
    /// its highest equivalent value.
    pub fn of(h: &Histogram<u64>) -> LogHist {
        let mut dense = vec![0u64; NBUCKETS];
        for v in h.iter_recorded() {
            dense[bucket_of(v.value_iterated_to())] += v.count_at_value();
        }
        LogHist(
            dense
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| (i as u16, *c))
                .collect(),
        )
    }
    /// Number of recorded values.
    pub fn len(&self) -> u64 {
        self.0.iter().map(|(_, c)| c).sum()
    }
    /// The share of recorded values above `ms` (a bucket counts as its value).
    pub fn share_above(&self, ms: f64) -> f64 {
        let total = self.len();
        if total == 0 {
            return 0.0;
        }
        let above: u64 = self
            .0
            .iter()
            .filter(|(b, _)| value_ms(*b as usize) > ms)
            .map(|(_, c)| c)
            .sum();
        above as f64 / total as f64
    }
    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A value carried beside a record but not part of it: never serialised, and equal to any other
/// (so a record read back from JSON equals the one written).
#[derive(Debug, Clone, Default)]
pub struct Transient<T>(pub Option<T>);

impl<T> PartialEq for Transient<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Several [`LogHist`]s added up.
#[derive(Debug, Clone)]
pub struct PooledHist {
    counts: Vec<u64>,
    total: u64,
}

impl Default for PooledHist {
    fn default() -> Self {
        PooledHist {
            counts: vec![0; NBUCKETS],
            total: 0,
        }
    }
}

impl PooledHist {
    /// Adds `h` once.
    pub fn add(&mut self, h: &LogHist) {
        for &(b, c) in &h.0 {
            self.counts[b as usize] += c;
            self.total += c;
        }
    }
    /// Adds `h` once with every value moved `shift` buckets (×1.01 each; clamped at the ends).
    pub fn add_shifted(&mut self, h: &LogHist, shift: i32) {
        for &(b, c) in &h.0 {
            let i = (b as i64 + shift as i64).clamp(0, NBUCKETS as i64 - 1) as usize;
            self.counts[i] += c;
            self.total += c;
        }
    }
    /// The value at percentile `p` (0–100), ms, as the engine's histograms define it (the
    /// smallest value with at least p% of the counts at or below it); `None` when empty.
    pub fn percentile_ms(&self, p: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let want = ((p / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Some(value_ms(i));
            }
        }
        None
    }
}

/// One latency term of a probe: its limit and the window's histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyCounts {
    /// `p99`, `p99 of get_batch`.
    pub term: String,
    /// Percentile, e.g. 99.
    pub percentile: f64,
    /// The limit, ms.
    pub limit_ms: f64,
    /// The kept window's latencies (all requests, or the named request's).
    pub hist: LogHist,
}

/// What one probe contributes to a pool: its kept window's counts, each SLO term's histogram and
/// the limits it is judged against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeCounts {
    /// Kept seconds (the pool weighs the throughput term by them).
    pub window_s: f64,
    /// Completed requests.
    pub requests: u64,
    /// Requests with any outcome but `ok`.
    pub errors: u64,
    /// The plan's maximum error rate.
    pub error_limit: f64,
    /// Throughput shortfall measured (the throughput term's value).
    pub shortfall: f64,
    /// The allowed shortfall (0: not judged).
    pub shortfall_limit: f64,
    /// Requests were offered and none completed.
    pub nothing_completed: bool,
    /// One entry per latency limit of the SLO.
    pub latency: Vec<LatencyCounts>,
}

/// The SLO margin of several probes judged as one window (> 1 breaks the SLO): every latency
/// term's pooled percentile over its limit, the pooled error rate over its maximum and the
/// window-weighted throughput shortfall over its tolerance; the largest term, with its name.
/// `times[i]` says how many times `probes[i]` counts (a bootstrap draws some twice).
pub fn pooled_margin(probes: &[&ProbeCounts], times: &[u32]) -> (f64, String) {
    let mut worst = (0.0f64, String::from("none"));
    let mut note = |m: f64, t: &str| {
        if m > worst.0 || (m.is_infinite() && !worst.0.is_infinite()) {
            worst = (m, t.to_string());
        }
    };
    let Some(first) = probes.first() else {
        return (f64::NAN, worst.1);
    };
    for (k, l) in first.latency.iter().enumerate() {
        let mut pool = PooledHist::default();
        for (p, &n) in probes.iter().zip(times) {
            if let Some(h) = p.latency.get(k) {
                for _ in 0..n {
                    pool.add(&h.hist);
                }
            }
        }
        if let Some(v) = pool.percentile_ms(l.percentile) {
            note(
                if l.limit_ms > 0.0 {
                    v / l.limit_ms
                } else {
                    f64::INFINITY
                },
                &l.term,
            );
        }
    }
    let (mut req, mut err, mut short, mut secs) = (0u64, 0u64, 0.0, 0.0);
    for (p, &n) in probes.iter().zip(times) {
        let n64 = u64::from(n);
        req += p.requests * n64;
        err += p.errors * n64;
        short += p.shortfall * p.window_s * n as f64;
        secs += p.window_s * n as f64;
        if p.nothing_completed && n > 0 {
            note(f64::INFINITY, "nothing completed");
        }
    }
    let rate = if req > 0 {
        err as f64 / req as f64
    } else {
        0.0
    };
    note(
        if first.error_limit > 0.0 {
            rate / first.error_limit
        } else if err > 0 {
            f64::INFINITY
        } else {
            0.0
        },
        "errors",
    );
    if first.shortfall_limit > 0.0 && secs > 0.0 {
        note(short / secs / first.shortfall_limit, "throughput");
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;
    use ceiling_metrics::new_histogram;

    fn counts(lat_ms: &[(f64, u64)], errors: u64) -> ProbeCounts {
        let mut h = new_histogram();
        for &(ms, n) in lat_ms {
            h.record_n((ms * 1000.0) as u64, n).unwrap();
        }
        let requests = h.len();
        ProbeCounts {
            window_s: 10.0,
            requests,
            errors,
            error_limit: 0.01,
            shortfall: 0.0,
            shortfall_limit: 0.05,
            nothing_completed: false,
            latency: vec![LatencyCounts {
                term: "p99".into(),
                percentile: 99.0,
                limit_ms: 50.0,
                hist: LogHist::of(&h),
            }],
        }
    }

    #[test]
    fn two_probes_pool_as_one_window() {
        // Probe A: 2% of requests at 100 ms (p99 100 ms, fails); probe B: none slow (p99 5 ms,
        // passes). As one window 1% are slow: the pooled p99 is the last fast value, 5 ms.
        let a = counts(&[(5.0, 980), (100.0, 20)], 0);
        let b = counts(&[(5.0, 1000)], 0);
        let (m, term) = pooled_margin(&[&a, &b], &[1, 1]);
        assert_eq!(term, "p99");
        assert!((m - 0.1).abs() < 0.002, "{m}");
        // A counted twice: 40 slow of 3000 = 1.33% > 1%: the pooled p99 is 100 ms.
        let (m2, _) = pooled_margin(&[&a, &b], &[2, 1]);
        assert!((m2 - 2.0).abs() < 0.03, "{m2}");
        // A 1% bucket: the pooled percentile is within 1% of the engine's.
        let h = LogHist::of(&{
            let mut h = new_histogram();
            h.record(12_345).unwrap();
            h
        });
        let mut p = PooledHist::default();
        p.add(&h);
        let v = p.percentile_ms(50.0).unwrap();
        assert!((v / 12.345 - 1.0).abs() < 0.006, "{v}");
    }

    #[test]
    fn errors_pool_by_count_not_by_probe() {
        // 3% errors in a probe of 100, none in a probe of 900: 0.3% pooled, under 1%.
        let a = counts(&[(5.0, 100)], 3);
        let b = counts(&[(5.0, 900)], 0);
        let (m, _) = pooled_margin(&[&a, &b], &[1, 1]);
        assert!((m - 0.3).abs() < 1e-9, "{m}");
        let (m1, t1) = pooled_margin(&[&a], &[1]);
        assert_eq!(t1, "errors");
        assert!((m1 - 3.0).abs() < 1e-9);
    }
}
