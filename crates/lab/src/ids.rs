//! Names and places: the repository root, a run's id, the time in run.json.

use crate::error::{refuse, LabError, Result};
use ceiling_plan::Plan;
use std::path::PathBuf;

/// Finds the repository root (the directory holding `contract/` and `stacks/`), from the current
/// directory up.
pub fn repo_root() -> Result<PathBuf> {
    let mut dir =
        std::env::current_dir().map_err(|e| LabError::io("reading the current directory", e))?;
    loop {
        if dir.join("contract/schema.sql").is_file() && dir.join("stacks").is_dir() {
            return Ok(dir);
        }
        if !dir.pop() {
            refuse!("run ceiling from inside its repository (no contract/schema.sql and stacks/ above the current directory)");
        }
    }
}

/// A run id: UTC time + plan name.
pub fn run_id(plan: &Plan) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    let (d, s) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let (y, m, dd) = civil(d);
    format!(
        "{y:04}{m:02}{dd:02}-{:02}{:02}{:02}-{}",
        s / 3600,
        s % 3600 / 60,
        s % 60,
        plan.name
    )
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// ISO-8601 UTC now.
pub fn now_iso() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    let (y, m, d) = civil(secs.div_euclid(86400));
    let s = secs.rem_euclid(86400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s % 3600 / 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::civil;

    #[test]
    fn civil_dates_across_leap_years() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(11016), (2000, 2, 29));
        assert_eq!(civil(20782), (2026, 11, 25));
        assert_eq!(civil(-1), (1969, 12, 31));
    }
}
