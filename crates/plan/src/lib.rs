//! The plan: what load to send, to what, and how to judge it.
//!
//! A plan is a TOML file (see `plans/` and `docs/plans.md`). This crate parses it into a validated
//! [`Plan`]; every error names the file, the line and the field ([`PlanError`]), so a user can fix a
//! plan without reading our source. Nothing here touches sockets or processes.
#![forbid(unsafe_code)]

mod duration;
mod model;
mod raw;
mod slo;
mod template;
mod url;

pub use duration::{format_duration, parse_duration};
pub use model::*;
pub use slo::{error_fraction, error_percent, latency_limit, percentile_key, SloSpec};
pub use template::{Segment, Template};
pub use url::HttpUrl;

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem in a plan, located by file, line and field.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanError {
    /// The plan file (or `<inline>` for plans built from CLI flags).
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Dotted path of the field, e.g. `requests[2].weight`.
    pub field: String,
    /// What is wrong and, where possible, what to write instead.
    pub message: String,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if self.field.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": {}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for PlanError {}

/// Reads and validates a plan file.
pub fn load_plan(path: &Path) -> Result<Plan, PlanError> {
    let text = std::fs::read_to_string(path).map_err(|e| PlanError {
        file: path.to_path_buf(),
        line: None,
        field: String::new(),
        message: format!("cannot read plan: {e}"),
    })?;
    parse_plan(&text, path)
}

/// Parses and validates plan text; `path` is used for messages and to resolve relative data files.
pub fn parse_plan(text: &str, path: &Path) -> Result<Plan, PlanError> {
    raw::parse(text, path)
}

/// 1-based line of a byte offset in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}
