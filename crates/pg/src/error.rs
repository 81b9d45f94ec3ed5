//! Errors of PostgreSQL, PgBouncer and SQL through psql.

use ceiling_supervise::SuperviseError;

/// What can go wrong with the database side of the stand. Every variant's message says what to
/// do about it.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// PostgreSQL binaries could not be found or fetched.
    #[error("PostgreSQL binaries not found: {0}")]
    PgNotFound(String),
    /// PostgreSQL failed to initialise, start or stop.
    #[error("PostgreSQL: {message}{}", tail_suffix(.log_tail))]
    Postgres {
        /// What failed.
        message: String,
        /// The end of the server log, if there is one.
        log_tail: String,
    },
    /// PgBouncer (a plan's `[stand.pgbouncer]`) is missing, cannot do what the plan asks, or
    /// failed to start.
    #[error("PgBouncer: {message}{}", tail_suffix(.log_tail))]
    PgBouncer {
        /// What failed and what to do.
        message: String,
        /// The end of its log, if there is one.
        log_tail: String,
    },
    /// A SQL command (run through `psql`) failed.
    #[error("SQL failed ({what}): {stderr}")]
    Sql {
        /// What the command was for.
        what: String,
        /// psql's error output.
        stderr: String,
    },
    /// A `--db-url` could not be understood.
    #[error("bad database URL `{url}`: {message}")]
    DbUrl {
        /// The URL as given.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// Cancellation, I/O and the rest, from process supervision.
    #[error(transparent)]
    Supervise(#[from] SuperviseError),
}

impl PgError {
    /// The run was cancelled while `what` ran.
    pub fn cancelled(what: impl Into<String>) -> PgError {
        PgError::Supervise(SuperviseError::Cancelled { what: what.into() })
    }
    /// Anything else, in words.
    pub fn other(msg: impl Into<String>) -> PgError {
        PgError::Supervise(SuperviseError::Other(msg.into()))
    }
}

/// `\n--- last lines ---\n…` after a message when there is a log tail.
pub fn tail_suffix(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("\n--- last lines ---\n{}", tail.trim_end())
    }
}

/// The database side's result type.
pub type Result<T, E = PgError> = std::result::Result<T, E>;
