//! A stack's `[fairness]` table, as its stack.toml declares it and run.json records it.

use serde::{Deserialize, Serialize};

/// `[fairness]`: every setting that decides whether two stacks are compared fairly, in one place.
/// The first two are measured on the running stack by `ceiling verify` (its `fairness` group);
/// the rest are declared, shown side by side in `docs/fairness.md` (a test keeps that file equal
/// to the stack.toml files) and recorded in run.json (`fairness`, per stack) by every run and search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fairness {
    /// Pool connections opened at start-up: `"all"`, `"none"` (lazy), `"N per worker"`, or
    /// `"no pool"` (a connection per request, as source 001's as-published code).
    pub pool_open_at_start: String,
    /// Requests one keep-alive connection serves before the server closes it; 0 = no limit.
    pub keep_alive_max_requests: u32,
    /// How long a request waits on the database before it fails (acquire and query), as text.
    pub db_timeout: String,
    /// Per-request timing on the measured path (`none`, or the meter).
    pub request_timing: String,
    /// JSON library.
    pub json: String,
    /// Runtime and version as installed by the project.
    pub runtime: String,
    /// Garbage collector and heap sizing (or `n/a`).
    pub gc_heap: String,
    /// Log level on the measured path.
    pub log_level: String,
}

impl Fairness {
    /// Connections the pool opens at start-up for a pool of `size` over `workers` workers (each
    /// worker's pool is `ceil(size / workers)`); `None` for a stack with no pool at all (nothing
    /// to bound: `ceiling verify` skips the pool cases); an error says what is wrong with the text.
    pub fn open_at_start(
        &self,
        size: u32,
        workers: u32,
    ) -> std::result::Result<Option<u32>, String> {
        let t = self.pool_open_at_start.trim();
        match t {
            "all" => Ok(Some(size)),
            "none" => Ok(Some(0)),
            "no pool" => Ok(None),
            _ => {
                let n = t
                    .strip_suffix("per worker")
                    .and_then(|n| n.trim().parse::<u32>().ok())
                    .ok_or_else(|| {
                        format!("`{t}`: want \"all\", \"none\", \"N per worker\" or \"no pool\"")
                    })?;
                let per = size.div_ceil(workers.max(1));
                Ok(Some(n.min(per) * workers.max(1)))
            }
        }
    }
}
