//! The stand's error type.

use std::path::PathBuf;

/// Everything that can go wrong in the stand. Every variant's message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum StandError {
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
    /// A bad `--db-url` or connection setting.
    #[error("bad database URL `{url}`: {message}")]
    DbUrl {
        /// The URL (password masked).
        url: String,
        /// What is wrong.
        message: String,
    },
    /// The run was cancelled (Ctrl-C, SIGTERM) while this step ran; its processes were stopped.
    #[error("cancelled while {what}")]
    Cancelled {
        /// The step (`building go-pgx`, `seeding the data`).
        what: String,
    },
    /// An I/O error with context.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

fn tail_suffix(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("\n--- last lines ---\n{}", tail.trim_end())
    }
}

/// The stand's result type.
pub type Result<T, E = StandError> = std::result::Result<T, E>;

/// Adds context to I/O errors.
pub(crate) trait IoContext<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| StandError::Io {
            context: context(),
            source,
        })
    }
}
