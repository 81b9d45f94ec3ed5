//! Response checks shared by the cases: status code, `Content-Type`, JSON shapes, error bodies,
//! RFC 3339 timestamps.

use crate::http::{Request, Response};
use serde_json::{Map, Value};

/// A check's verdict: `Err` carries what was wrong, for the report.
pub type Check<T = ()> = Result<T, String>;

/// `application/json`, optionally with a `charset=utf-8` parameter (any case, any spacing).
pub fn is_json_content_type(ct: &str) -> bool {
    let mut parts = ct.split(';');
    let mime = parts.next().unwrap_or("").trim();
    if !mime.eq_ignore_ascii_case("application/json") {
        return false;
    }
    parts.all(|p| {
        let p = p.trim();
        match p.split_once('=') {
            Some((k, v)) => {
                k.trim().eq_ignore_ascii_case("charset")
                    && v.trim().trim_matches('"').eq_ignore_ascii_case("utf-8")
            }
            None => p.is_empty(),
        }
    })
}

/// The response has status `want`; a 5xx is called out as such.
pub fn expect_status(req: &Request, r: &Response, want: u16) -> Check {
    if r.status == want {
        return Ok(());
    }
    let five = if r.status >= 500 && want < 500 {
        " (a 5xx for a request the contract answers without one)"
    } else {
        ""
    };
    Err(format!(
        "{}: want {want}, got {}{five}: {}",
        req.describe(),
        r.status,
        r.snippet(200)
    ))
}

/// The response is JSON by its `Content-Type`.
pub fn expect_json_type(req: &Request, r: &Response) -> Check {
    match r.header("content-type") {
        Some(ct) if is_json_content_type(ct) => Ok(()),
        Some(ct) => Err(format!(
            "{}: Content-Type {ct:?}, want application/json",
            req.describe()
        )),
        None => Err(format!(
            "{}: no Content-Type, want application/json",
            req.describe()
        )),
    }
}

/// Status `want`, JSON `Content-Type`, and a body that parses as JSON.
pub fn expect_json(req: &Request, r: &Response, want: u16) -> Check<Value> {
    expect_status(req, r, want)?;
    expect_json_type(req, r)?;
    serde_json::from_slice(&r.body).map_err(|e| {
        format!(
            "{}: body is not JSON ({e}): {}",
            req.describe(),
            r.snippet(200)
        )
    })
}

/// The error code the contract pairs with a status.
pub fn error_code_for(status: u16) -> &'static str {
    match status {
        400 => "bad_request",
        404 => "not_found",
        409 => "conflict",
        413 => "payload_too_large",
        415 => "unsupported_media_type",
        _ => "",
    }
}

/// Status `want` with the contract's error body `{"error":"<code>","message":"…"}`.
pub fn expect_error(req: &Request, r: &Response, want: u16) -> Check {
    let v = expect_json(req, r, want)?;
    let obj = v.as_object().ok_or_else(|| {
        format!(
            "{}: error body is not an object: {}",
            req.describe(),
            r.snippet(200)
        )
    })?;
    let code = error_code_for(want);
    match obj.get("error") {
        Some(Value::String(s)) if s == code => {}
        Some(other) => {
            return Err(format!(
                "{}: \"error\" is {other}, want \"{code}\"",
                req.describe()
            ))
        }
        None => {
            return Err(format!(
                "{}: error body has no \"error\": {}",
                req.describe(),
                r.snippet(200)
            ))
        }
    }
    match obj.get("message") {
        Some(Value::String(_)) => {}
        _ => {
            return Err(format!(
                "{}: error body has no string \"message\": {}",
                req.describe(),
                r.snippet(200)
            ))
        }
    }
    if let Some(k) = obj.keys().find(|k| *k != "error" && *k != "message") {
        return Err(format!(
            "{}: error body has a field {k:?} beyond error and message: {}",
            req.describe(),
            r.snippet(200)
        ));
    }
    Ok(())
}

/// An object with exactly these keys.
pub fn object_with_keys<'a>(
    v: &'a Value,
    keys: &[&str],
    what: &str,
) -> Check<&'a Map<String, Value>> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{what} is not a JSON object: {v}"))?;
    let missing: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| !obj.contains_key(*k))
        .collect();
    let extra: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| !keys.contains(k))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        let mut m = format!("{what} {v}:");
        if !missing.is_empty() {
            m.push_str(&format!(" missing {missing:?}"));
        }
        if !extra.is_empty() {
            m.push_str(&format!(" unexpected {extra:?}"));
        }
        return Err(m);
    }
    Ok(obj)
}

/// A JSON integer (no fraction, no exponent) that fits i64.
pub fn int_field(obj: &Map<String, Value>, key: &str, what: &str) -> Check<i64> {
    match obj.get(key) {
        Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64().unwrap()),
        Some(Value::Number(n)) if n.is_u64() => Err(format!("{what}: {key} = {n} is above i64")),
        Some(other) => Err(format!("{what}: {key} = {other} is not an integer")),
        None => Err(format!("{what}: no {key}")),
    }
}

pub fn str_field<'a>(obj: &'a Map<String, Value>, key: &str, what: &str) -> Check<&'a str> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!("{what}: {key} = {other} is not a string")),
        None => Err(format!("{what}: no {key}")),
    }
}

/// A timestamp field: RFC 3339, UTC with `Z`, up to microseconds → µs since the epoch.
pub fn time_field(obj: &Map<String, Value>, key: &str, what: &str) -> Check<i64> {
    let s = str_field(obj, key, what)?;
    parse_rfc3339_utc(s).ok_or_else(|| {
        format!("{what}: {key} = {s:?} is not RFC 3339 UTC (YYYY-MM-DDTHH:MM:SS[.ffffff]Z)")
    })
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z` (a lower-case `t`/`z` too, as RFC 3339 allows) into
/// microseconds since the Unix epoch. Anything else (an offset, more than 6 fraction digits, a
/// leap second, out-of-range fields) is `None`.
pub fn parse_rfc3339_utc(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(part).ok()?.parse().ok()
        } else {
            None
        }
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let mut i = 19;
    let mut micros = 0i64;
    if b[i] == b'.' {
        let start = i + 1;
        let mut end = start;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
        let digits = end - start;
        if digits == 0 || digits > 6 {
            return None;
        }
        micros = num(start..end)? * 10i64.pow((6 - digits) as u32);
        i = end;
    }
    if i + 1 != b.len() || !matches!(b[i], b'Z' | b'z') {
        return None;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mdays = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo)
        || d < 1
        || d > mdays[(mo - 1) as usize]
        || h > 23
        || mi > 59
        || sec > 59
    {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi) * 60_000_000 + sec * 1_000_000 + micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// µs since the epoch as RFC 3339 (for reports).
pub fn format_micros(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86400);
    let sod = secs.rem_euclid(86400);
    // civil_from_days
    let z = days + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert!(is_json_content_type("application/json"));
        assert!(is_json_content_type("application/json; charset=utf-8"));
        assert!(is_json_content_type("Application/JSON;charset=UTF-8"));
        assert!(is_json_content_type("application/json; charset=\"utf-8\""));
        assert!(!is_json_content_type("application/json; charset=latin1"));
        assert!(!is_json_content_type("text/plain"));
        assert!(!is_json_content_type("application/problem+json"));
        assert!(!is_json_content_type("application/jsonx"));
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_rfc3339_utc("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339_utc("1970-01-01T00:00:01.5Z"), Some(1_500_000));
        assert_eq!(
            parse_rfc3339_utc("2025-01-01T00:00:01Z"),
            Some(1_735_689_601_000_000)
        );
        assert_eq!(
            parse_rfc3339_utc("2025-01-01T00:00:01.123456Z"),
            Some(1_735_689_601_123_456)
        );
        assert_eq!(
            parse_rfc3339_utc("2024-02-29T12:00:00.000001z"),
            Some(1_709_208_000_000_001)
        );
        for bad in [
            "2025-01-01T00:00:01",
            "2025-01-01T00:00:01+00:00",
            "2025-01-01 00:00:01Z",
            "2025-01-01T00:00:01.Z",
            "2025-01-01T00:00:01.1234567Z",
            "2025-13-01T00:00:01Z",
            "2025-02-29T00:00:01Z",
            "2025-01-01T24:00:00Z",
            "2025-01-01T00:00:60Z",
            "25-01-01T00:00:01Z",
            "2025-01-01T00:00:01ZZ",
            "２025-01-01T00:00:01Z",
        ] {
            assert_eq!(parse_rfc3339_utc(bad), None, "{bad}");
        }
        for us in [
            0,
            1_735_689_601_123_456,
            1_709_208_000_000_001,
            951_782_400_000_000,
        ] {
            assert_eq!(parse_rfc3339_utc(&format_micros(us)), Some(us));
        }
        assert_eq!(
            format_micros(1_735_689_601_000_000),
            "2025-01-01T00:00:01.000000Z"
        );
    }

    #[test]
    fn shapes() {
        let v: Value = serde_json::from_str(r#"{"id":1,"balance":2}"#).unwrap();
        let o = object_with_keys(&v, &["id", "balance"], "client").unwrap();
        assert_eq!(int_field(o, "id", "client"), Ok(1));
        assert!(object_with_keys(&v, &["id"], "x")
            .unwrap_err()
            .contains("unexpected [\"balance\"]"));
        assert!(object_with_keys(&v, &["id", "balance", "z"], "x")
            .unwrap_err()
            .contains("missing [\"z\"]"));
        let v: Value =
            serde_json::from_str(r#"{"a":1.0,"b":"1","c":18446744073709551615}"#).unwrap();
        let o = v.as_object().unwrap();
        assert!(int_field(o, "a", "x").is_err());
        assert!(int_field(o, "b", "x").is_err());
        assert!(int_field(o, "c", "x").is_err());
        assert!(int_field(o, "d", "x").is_err());
    }
}
