use std::time::Duration;

/// Parses `"10m"`, `"30s"`, `"1500ms"`, `"1h 30m"`, `"2.5s"`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    // humantime has no fractions; accept a plain fractional seconds/minutes form too.
    if let Some(num) = t
        .strip_suffix("ms")
        .or_else(|| t.strip_suffix('s'))
        .filter(|n| n.contains('.'))
    {
        let mult = if t.ends_with("ms") { 0.001 } else { 1.0 };
        return num
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            // past what a duration holds (`99999999999999999999.5s`): not a duration, no panic
            .and_then(|v| Duration::try_from_secs_f64(v * mult).ok())
            .ok_or_else(|| {
                format!("`{s}` is not a duration (write e.g. \"30s\", \"10m\", \"250ms\")")
            });
    }
    humantime::parse_duration(t)
        .map_err(|_| format!("`{s}` is not a duration (write e.g. \"30s\", \"10m\", \"250ms\")"))
}

/// Formats a duration compactly for tables: `1h05m`, `10m`, `30s`, `1.5s`, `250ms`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return format!("{}µs", d.as_micros());
    }
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let s = d.as_secs_f64();
    if s < 60.0 {
        return if (s - s.round()).abs() < 1e-9 {
            format!("{}s", s as u64)
        } else {
            format!("{s:.1}s")
        };
    }
    let total = s.round() as u64;
    let (h, m, sec) = (total / 3600, (total % 3600) / 60, total % 60);
    match (h, sec) {
        (0, 0) => format!("{m}m"),
        (0, _) => format!("{m}m{sec:02}s"),
        (_, 0) => format!("{h}h{m:02}m"),
        _ => format!("{h}h{m:02}m{sec:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parses_common_forms() {
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(
            parse_duration("1500ms").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_duration("2.5s").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("-1s").is_err());
    }
    #[test]
    fn formats_compactly() {
        assert_eq!(format_duration(Duration::from_secs(600)), "10m");
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_secs(3900)), "1h05m");
    }
}
