//! Comparisons, the way a reviewer of a reproduction reads them.
//!
//! - [`published`]: what a source published, as data (`plans/published/<source>.toml`), loaded
//!   with errors that name the file and line.
//! - [`source`]: a run beside its source's tables, row by row — both values, their ratio,
//!   whether the stacks' order agrees, the conditions that differ, and the causes ceiling found.
//! - [`runs`]: two runs (or two stacks of one run) compared per stack and shelf, with Welch's
//!   t-interval on repetitions, interval overlap for searches, and a plain verdict.
//! - [`claims`]: every source claim as a check (`plans/published/claims/*.toml`), judged against
//!   the latest runs: holds, does not hold, not decided, or not testable here (why).
//! - [`gate`]: CI gates — `--assert` conditions on a run, search or load, and the regression
//!   gate of `compare --fail-on-regression` — judged pass, fail or inconclusive.
//!
//! Everything here is a pure function of stored records, returned as data: nothing is measured
//! and nothing is written as text for a reader — `ceiling-report` renders comparisons, gates
//! and the claims ledger (terminal, Markdown, HTML; JSON is the types' serde form).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod claims;
pub mod gate;
pub mod published;
pub mod runs;
pub mod source;

pub use published::{load_published, MemoryKind, Metric, Published, PublishedError, Value};
pub use runs::{compare_runs, compare_stacks, RunComparison, RunsRefused};
pub use source::{compare_runs_with_source, compare_with_source, SourceComparison};
