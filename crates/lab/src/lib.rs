//! The lab's orchestration, one library for every command that measures a stack (`ceiling run`,
//! `search`, `verify`, `pgbench`, `k8s`; the load may come from generator agents): a stack built, started
//! on a fresh database under its limits, held to the conformance suite, measured with the stand's
//! signals on the same clock, its results recorded as they arrive, and stopped.
//!
//! The binary (crates/cli) parses arguments and prints; the steps and their order live here, once:
//! a run's turns ([`run_stacks`]) and a search's rounds ([`search_stacks`], [`search_urls`]), each
//! turn a watched measurement, with one part-exit policy. The lab prints and draws nothing: its
//! lines and its live views go where the caller's [`Progress`] says, its results to the caller's
//! checkpoint, and its errors are typed ([`LabError`]).
//!
//! The parts underneath have one job each: the stand (PostgreSQL, PgBouncer, stacks, cgroups,
//! samplers), the load engine, the analysis, the conformance suite.
#![forbid(unsafe_code)]

pub mod error;
pub mod ids;
pub mod live;
pub mod load;
pub mod load_report;
pub mod measure;
pub mod part_exit;
pub mod pgbench;
pub mod progress;
pub mod record;
pub mod run;
pub mod search;
pub mod session;
pub mod settle;
pub mod stack;
pub mod start;
pub mod verify;

pub use error::LabError;
pub use ids::{now_iso, repo_root, run_id};
pub use measure::{
    apply_engine_flags, apply_load_flags, engine_stages, measure_watched, Halt, LoadFlags,
    MeasureSpec, Measured, Round,
};
pub use part_exit::{handle_part_exit, Activity, PartExitOutcome};
pub use progress::Progress;
pub use record::Recorder;
pub use run::{rounds_of, run_stacks, RunContext, RunSetup};
pub use search::{
    apply_search_overrides, describe_search, per_round, search_stacks, search_url, search_urls,
    SearchContext, SearchEnd, SearchOverrides, SearchSetup,
};
pub use session::{open_stand, record_no_stand, record_stand};
pub use settle::{settle_warmup, SettleSpec};
pub use stack::{footprint_of, load_url, measure_stack, restart_part, watch, StackRunOptions};
pub use start::start_verified;
pub use verify::{fairness_expect, run_suite, to_verify_db, verify_fresh};
