//! The stand's error type: the stacks' own failures, and those of its parts (PostgreSQL and
//! PgBouncer, process supervision) carried as they are.

use ceiling_pg::tail_suffix;
use ceiling_pg::PgError;
use ceiling_supervise::SuperviseError;
use std::path::PathBuf;

/// Everything that can go wrong in the stand. Every variant's message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum StandError {
    /// A `stack.toml` is missing, malformed or invalid.
    #[error("{}: {field}: {message}", .file.display())]
    StackToml {
        /// The file.
        file: PathBuf,
        /// The offending field (`run.command`), or `-` for the whole file.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A tool the stack's build needs is not on PATH.
    #[error("stack {stack}: build needs `{tool}` on PATH, which was not found: install {tool} (stack.toml build.requires)")]
    MissingTool {
        /// The stack.
        stack: String,
        /// The missing binary.
        tool: String,
    },
    /// The stack's build command failed.
    #[error("stack {stack}: build failed ({status}); log: {}{}", .log.display(), tail_suffix(.log_tail))]
    Build {
        /// The stack.
        stack: String,
        /// Exit status description.
        status: String,
        /// Full build log.
        log: PathBuf,
        /// The end of the build log.
        log_tail: String,
    },
    /// The stack did not become healthy, or exited.
    #[error("stack {stack}: {message}; log: {}{}", .log.display(), tail_suffix(.log_tail))]
    Start {
        /// The stack.
        stack: String,
        /// What happened.
        message: String,
        /// Full run log.
        log: PathBuf,
        /// The end of the run log.
        log_tail: String,
    },
    /// PostgreSQL, PgBouncer or SQL failed.
    #[error(transparent)]
    Pg(PgError),
    /// Cancellation, I/O and the rest, from process supervision.
    #[error(transparent)]
    Supervise(SuperviseError),
}

impl From<PgError> for StandError {
    fn from(e: PgError) -> StandError {
        match e {
            // one place for cancellation and I/O, whichever part it came through
            PgError::Supervise(s) => StandError::Supervise(s),
            e => StandError::Pg(e),
        }
    }
}

impl From<SuperviseError> for StandError {
    fn from(e: SuperviseError) -> StandError {
        StandError::Supervise(e)
    }
}

impl StandError {
    /// The run was cancelled while `what` ran.
    pub fn cancelled(what: impl Into<String>) -> StandError {
        StandError::Supervise(SuperviseError::Cancelled { what: what.into() })
    }
    /// Anything else, in words.
    pub fn other(msg: impl Into<String>) -> StandError {
        StandError::Supervise(SuperviseError::Other(msg.into()))
    }
    /// True when the run was cancelled (Ctrl-C) while the step ran.
    pub fn is_cancelled(&self) -> bool {
        matches!(
            self,
            StandError::Supervise(SuperviseError::Cancelled { .. })
        )
    }
}

/// The stand's result type.
pub type Result<T, E = StandError> = std::result::Result<T, E>;
