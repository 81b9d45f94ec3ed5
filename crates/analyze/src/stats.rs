//! Small-sample statistics: mean, sample standard deviation and Student-t 95% confidence
//! intervals, used for repeated ceilings (capacity search) and closed-model repetitions.

use serde::{Deserialize, Serialize};

/// Two-sided 95% Student-t critical values (the 0.975 quantile) for 1…30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The 0.975 quantile of Student's t distribution with `df` degrees of freedom (the multiplier
/// of the standard error for a two-sided 95% confidence interval). Exact table values for
/// df ≤ 30, a Cornish–Fisher expansion (error < 0.001) above; `df = 0` gives `f64::INFINITY`.
pub fn t_975(df: usize) -> f64 {
    if df == 0 {
        return f64::INFINITY;
    }
    if df <= 30 {
        return T975[df - 1];
    }
    let z: f64 = 1.959_963_985;
    let n = df as f64;
    let z3 = z.powi(3);
    let z5 = z.powi(5);
    let z7 = z.powi(7);
    z + (z3 + z) / (4.0 * n)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n * n * n)
}

/// Median of `xs` (the mean of the middle two for an even count); NaN for an empty slice.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Arithmetic mean (`NaN` for an empty slice).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Fewest paired seconds a rank correlation is computed over.
pub const MIN_SECONDS: usize = 10;

/// Spearman's rank correlation of paired samples (ties get their average rank); `None` with
/// fewer than 10 pairs (`MIN_SECONDS`) or when either side is constant.
pub fn spearman(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < MIN_SECONDS {
        return None;
    }
    fn ranks(v: &[f64]) -> Vec<f64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
        let mut r = vec![0.0; v.len()];
        let mut i = 0;
        while i < idx.len() {
            let mut j = i;
            while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
                j += 1;
            }
            let avg = (i + j) as f64 / 2.0;
            for k in &idx[i..=j] {
                r[*k] = avg;
            }
            i = j + 1;
        }
        r
    }
    let a = ranks(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
    let b = ranks(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
    let (ma, mb) = (mean(&a), mean(&b));
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(&b) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    (saa > 0.0 && sbb > 0.0).then(|| sab / (saa * sbb).sqrt())
}

/// Sample standard deviation (n − 1 in the denominator); 0 for fewer than two values.
pub fn stddev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// Mean and spread of repeated measurements of one quantity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (0 when n < 2).
    pub stddev: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Half-width of the two-sided 95% Student-t confidence interval of the mean
    /// (`t(0.975, n−1) · s / √n`); `None` when n < 2 (one value gives no interval).
    pub ci95: Option<f64>,
}

impl Estimate {
    /// Estimates from `xs`; `None` for an empty slice. Non-finite values are ignored.
    pub fn of(xs: &[f64]) -> Option<Estimate> {
        let v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        let n = v.len();
        let m = mean(&v);
        let s = stddev(&v);
        Some(Estimate {
            n,
            mean: m,
            stddev: s,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ci95: (n >= 2).then(|| t_975(n - 1) * s / (n as f64).sqrt()),
        })
    }
    /// Lower end of the 95% confidence interval (the mean when there is none).
    pub fn ci_low(&self) -> f64 {
        self.mean - self.ci95.unwrap_or(0.0)
    }
    /// Upper end of the 95% confidence interval (the mean when there is none).
    pub fn ci_high(&self) -> f64 {
        self.mean + self.ci95.unwrap_or(0.0)
    }
    /// Half-width of the interval relative to the mean (`None` without an interval or for mean 0).
    pub fn relative_ci(&self) -> Option<f64> {
        self.ci95
            .filter(|_| self.mean != 0.0)
            .map(|h| h / self.mean.abs())
    }
    /// `1234 ± 56` (95% CI) or `1234 (min–max)`-free plain `1234` for n = 1, with `digits` decimals.
    pub fn display(&self, digits: usize) -> String {
        match self.ci95 {
            Some(h) => format!("{:.*} ± {:.*}", digits, self.mean, digits, h),
            None => format!("{:.*}", digits, self.mean),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_knows_a_relation_from_none() {
        // a tail that follows the pauses (monotone, not linear), one that does not
        let up: Vec<(f64, f64)> = (0..30).map(|i| (i as f64, (i as f64).powi(3))).collect();
        assert!((spearman(&up).unwrap() - 1.0).abs() < 1e-12);
        let down: Vec<(f64, f64)> = (0..30).map(|i| (i as f64, -(i as f64))).collect();
        assert!((spearman(&down).unwrap() + 1.0).abs() < 1e-12);
        // a fixed pseudo-random pairing: |ρ| small
        let mut x = 7u64;
        let noise: Vec<(f64, f64)> = (0..400)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (i as f64, (x >> 33) as f64)
            })
            .collect();
        assert!(
            spearman(&noise).unwrap().abs() < 0.15,
            "{:?}",
            spearman(&noise)
        );
        // ties get their average rank: mostly-zero pauses still correlate with the slow seconds
        let ties: Vec<(f64, f64)> = (0..20)
            .map(|i| if i % 5 == 4 { (50.0, 20.0) } else { (5.0, 0.0) })
            .collect();
        assert!((spearman(&ties).unwrap() - 1.0).abs() < 1e-12);
        // too few pairs, or a constant side: no figure
        assert_eq!(spearman(&up[..5]), None);
        let flat: Vec<(f64, f64)> = (0..20).map(|i| (i as f64, 1.0)).collect();
        assert_eq!(spearman(&flat), None);
    }

    #[test]
    fn t_table_and_expansion() {
        assert_eq!(t_975(1), 12.706);
        assert_eq!(t_975(4), 2.776);
        assert_eq!(t_975(30), 2.042);
        // Known values: df=40 → 2.021, 60 → 2.000, 120 → 1.980, large → 1.960.
        assert!((t_975(40) - 2.021).abs() < 0.001, "{}", t_975(40));
        assert!((t_975(60) - 2.000).abs() < 0.001, "{}", t_975(60));
        assert!((t_975(120) - 1.980).abs() < 0.001, "{}", t_975(120));
        assert!((t_975(100_000) - 1.960).abs() < 0.001);
        assert!(t_975(0).is_infinite());
    }

    #[test]
    fn estimate_against_hand_computed_values() {
        // 10, 12, 14, 16, 18: mean 14, s = sqrt(40/4) = 3.1623, se = 1.4142,
        // t(0.975, 4) = 2.776 → half-width 3.9259.
        let e = Estimate::of(&[10.0, 12.0, 14.0, 16.0, 18.0]).unwrap();
        assert_eq!(e.n, 5);
        assert!((e.mean - 14.0).abs() < 1e-12);
        assert!((e.stddev - 10f64.sqrt()).abs() < 1e-12);
        assert!((e.ci95.unwrap() - 3.92594).abs() < 1e-4, "{:?}", e.ci95);
        assert_eq!((e.min, e.max), (10.0, 18.0));
        assert!((e.ci_low() - 10.07406).abs() < 1e-4);
        // Two values 100 and 110: mean 105, s = 7.0711, se = 5, t(1) = 12.706 → 63.53.
        let e = Estimate::of(&[100.0, 110.0]).unwrap();
        assert!((e.ci95.unwrap() - 63.53).abs() < 1e-9);
        // n = 1: no interval.
        let e = Estimate::of(&[2915.0]).unwrap();
        assert_eq!(e.ci95, None);
        assert_eq!(e.stddev, 0.0);
        assert_eq!(e.display(0), "2915");
        assert!(Estimate::of(&[]).is_none());
        assert!(Estimate::of(&[f64::NAN]).is_none());
    }
}
