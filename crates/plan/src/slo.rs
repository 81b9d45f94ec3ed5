//! The SLO's grammar, in one place: a plan's `[slo]` table and the CLI's `--slo 'p99<=350ms,errors<1%'`
//! read percentiles, durations and error rates through these functions, so the two cannot drift.

use crate::{parse_duration, PercentileLimit, Slo};
use std::time::Duration;

/// `p99` → 99, `p99_9` or `p99.9` → 99.9; `None` for anything that is not a percentile strictly
/// between 0 and 100.
pub fn percentile_key(key: &str) -> Option<f64> {
    key.trim()
        .strip_prefix('p')
        .map(|s| s.replace('_', "."))
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|p| *p > 0.0 && *p < 100.0)
}

/// An SLO latency limit: a duration longer than zero (`350ms`, `1.5s`).
pub fn latency_limit(text: &str) -> Result<Duration, String> {
    let limit = parse_duration(text)?;
    if limit.is_zero() {
        return Err("must be longer than zero".into());
    }
    Ok(limit)
}

/// An error-rate bound written as a percentage, `1%` or `0.5 %` → 0.01, 0.005; `None` when it is
/// not a percentage in 0–100.
pub fn error_percent(text: &str) -> Option<f64> {
    text.trim()
        .strip_suffix('%')?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| (0.0..=100.0).contains(v))
        .map(|v| v / 100.0)
}

/// An error-rate bound written as a fraction in 0–1 (`0.01`).
pub fn error_fraction(text: &str) -> Option<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| (0.0..=1.0).contains(f))
}

/// What a `--slo` flag sets: the latency limits (empty = keep the plan's) and the error-rate
/// bound (`None` = keep the plan's).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SloSpec {
    /// `pNN<=DURATION` terms, in the order written.
    pub limits: Vec<PercentileLimit>,
    /// `errors<X%` or `errors<FRACTION`.
    pub max_error_rate: Option<f64>,
}

impl SloSpec {
    /// Parses `p99<=350ms,errors<1%` (terms separated by commas, spaces allowed). The error names
    /// the term and says what to write.
    pub fn parse(spec: &str) -> Result<SloSpec, String> {
        let mut out = SloSpec::default();
        for part in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if let Some(v) = part.strip_prefix("errors<") {
                let f = error_percent(v)
                    .or_else(|| error_fraction(v))
                    .ok_or_else(|| format!("`{part}`: write errors<1% or errors<0.01"))?;
                out.max_error_rate = Some(f);
                continue;
            }
            let (k, v) = part
                .split_once("<=")
                .ok_or_else(|| format!("`{part}`: write p99<=350ms or errors<1%"))?;
            let percentile = percentile_key(k)
                .ok_or_else(|| format!("`{part}`: `{}` is not a percentile like p99", k.trim()))?;
            let limit = latency_limit(v).map_err(|e| format!("`{part}`: {e}"))?;
            out.limits.push(PercentileLimit { percentile, limit });
        }
        Ok(out)
    }

    /// Applies it over a plan's SLO: latency limits replace the plan's when any were given, the
    /// error bound when it was given.
    pub fn apply(&self, slo: &mut Slo) {
        if !self.limits.is_empty() {
            slo.limits = self.limits.clone();
        }
        if let Some(e) = self.max_error_rate {
            slo.max_error_rate = e;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_grammar_reads_what_the_plan_reads() {
        let s = SloSpec::parse(" p99<=350ms , errors<1%,p99_9<=1s").unwrap();
        assert_eq!(s.limits.len(), 2);
        assert_eq!(s.limits[0].percentile, 99.0);
        assert_eq!(s.limits[0].limit, Duration::from_millis(350));
        assert!((s.limits[1].percentile - 99.9).abs() < 1e-9);
        assert_eq!(s.max_error_rate, Some(0.01));
        assert_eq!(
            SloSpec::parse("errors<0.005").unwrap().max_error_rate,
            Some(0.005)
        );
        for (bad, says) in [
            ("p99<350ms", "write p99<=350ms"),
            ("q99<=1s", "`q99` is not a percentile"),
            ("p100<=1s", "`p100` is not a percentile"),
            ("p99<=0ms", "longer than zero"),
            ("errors<150%", "write errors<1%"),
            ("errors<2", "write errors<1%"),
            ("p99<=99999999999999999999999.5s", "not a duration"),
        ] {
            let e = SloSpec::parse(bad).unwrap_err();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
        assert_eq!(SloSpec::parse("").unwrap(), SloSpec::default());
    }
}
