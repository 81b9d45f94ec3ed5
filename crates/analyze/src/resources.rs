//! CPU and memory over a window, from the stand's resource samples.

use ceiling_metrics::{ResourceSample, Role};
use serde::{Deserialize, Serialize};

/// One sampled process tree (`stack`, `postgres`, `generator`) over a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceWindow {
    /// Samples used: those with `start < t ≤ end` (a sample covers the interval before it).
    pub samples: usize,
    /// Mean CPU, % of one core (200 = two cores busy).
    pub cpu_pct_mean: f64,
    /// Highest sample's CPU.
    pub cpu_pct_max: f64,
    /// Mean resident set size of the process tree, MiB.
    pub rss_mb_mean: f64,
    /// Largest RSS, MiB.
    pub rss_mb_max: f64,
    /// Mean cgroup memory usage, MiB, when the process runs in a limited cgroup.
    pub cgroup_mb_mean: Option<f64>,
}

const MIB: f64 = 1024.0 * 1024.0;

/// Aggregates the samples of `who` in `(start, end]` (seconds since the run start);
/// `None` when there is none.
pub fn window_of(
    samples: &[ResourceSample],
    who: Role,
    start: f64,
    end: f64,
) -> Option<ResourceWindow> {
    let sel: Vec<&ResourceSample> = samples
        .iter()
        .filter(|s| s.who == who && s.t > start && s.t <= end + 1e-9)
        .collect();
    if sel.is_empty() {
        return None;
    }
    let n = sel.len() as f64;
    let cg: Vec<f64> = sel
        .iter()
        .filter_map(|s| s.cgroup_memory_bytes)
        .map(|b| b as f64 / MIB)
        .collect();
    Some(ResourceWindow {
        samples: sel.len(),
        cpu_pct_mean: sel.iter().map(|s| s.cpu_pct).sum::<f64>() / n,
        cpu_pct_max: sel.iter().map(|s| s.cpu_pct).fold(0.0, f64::max),
        rss_mb_mean: sel.iter().map(|s| s.rss_bytes as f64).sum::<f64>() / n / MIB,
        rss_mb_max: sel.iter().map(|s| s.rss_bytes as f64).fold(0.0, f64::max) / MIB,
        cgroup_mb_mean: (!cg.is_empty()).then(|| cg.iter().sum::<f64>() / cg.len() as f64),
    })
}
