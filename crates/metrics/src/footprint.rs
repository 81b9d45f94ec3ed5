//! What a stack occupies outside its throughput: the deployable on disk and the memory its
//! processes hold when the measurement ends (source 003 compared both).

use serde::{Deserialize, Serialize};

const MIB: f64 = 1024.0 * 1024.0;

/// A stack's footprint, recorded with each run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    /// The deployable the build produced (`[build] artifact` in stack.toml, relative to the
    /// stack's folder): a fat JAR, a binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// Its size, bytes; `None` when the stack names none or the file was missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_bytes: Option<u64>,
    /// Private memory (`Private_Clean + Private_Dirty` of `/proc/PID/smaps_rollup`) of the stack's
    /// process tree right after its last measured second, bytes: source 003's memory figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_bytes_at_end: Option<u64>,
    /// Resident memory (`Rss` of the same files) at the same moment, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes_at_end: Option<u64>,
}

impl Footprint {
    /// The artifact's size in MiB.
    pub fn artifact_mib(&self) -> Option<f64> {
        self.artifact_bytes.map(|b| b as f64 / MIB)
    }

    /// Private memory at the end, MiB.
    pub fn private_mib_at_end(&self) -> Option<f64> {
        self.private_bytes_at_end.map(|b| b as f64 / MIB)
    }

    /// One line for summary.md: what was recorded, and what was not.
    pub fn describe(&self) -> String {
        let art = match (&self.artifact, self.artifact_mib()) {
            (Some(a), Some(m)) => format!("artifact {a} {m:.1} MiB"),
            (Some(a), None) => format!("artifact {a} not found"),
            (None, _) => "artifact not declared".to_string(),
        };
        let mem = match (self.private_mib_at_end(), self.rss_bytes_at_end) {
            (Some(p), Some(r)) => format!(
                "private memory at the end {p:.0} MiB (smaps, process tree; RSS {:.0} MiB)",
                r as f64 / MIB
            ),
            _ => "private memory at the end not read".to_string(),
        };
        format!("footprint: {art}; {mem}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_what_it_has_in_mebibytes() {
        let f = Footprint {
            artifact: Some("target/app.jar".into()),
            artifact_bytes: Some(15 * 1024 * 1024 + 512 * 1024),
            private_bytes_at_end: Some(300 << 20),
            rss_bytes_at_end: Some(340 << 20),
        };
        assert_eq!(
            f.describe(),
            "footprint: artifact target/app.jar 15.5 MiB; private memory at the end 300 MiB (smaps, process tree; RSS 340 MiB)"
        );
        let none = Footprint::default();
        assert_eq!(
            none.describe(),
            "footprint: artifact not declared; private memory at the end not read"
        );
        let back: Footprint = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        assert_eq!(back, f);
    }
}
