//! Errors of process supervision.

/// Why a supervised step failed.
#[derive(Debug, thiserror::Error)]
pub enum SuperviseError {
    /// The run was cancelled (Ctrl-C, SIGTERM) while this step ran; its processes were stopped.
    #[error("cancelled while {what}")]
    Cancelled {
        /// The step (`building go-pgx`, `seeding the data`).
        what: String,
    },
    /// An I/O error with context. Its message carries the I/O error's, so it is not also given
    /// as the error's source: a chain printed whole (`{:#}`) would say it twice.
    #[error("{context}: {error}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        error: std::io::Error,
    },
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// Supervision's result type.
pub type Result<T, E = SuperviseError> = std::result::Result<T, E>;

/// Adds context to I/O errors (`fs::write(p, s).ctx(|| format!("writing {p:?}"))?`); the
/// PostgreSQL and stand crates convert the result with `?`.
pub trait IoContext<T> {
    /// The I/O error with `context` (what was being done).
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|error| SuperviseError::Io {
            context: context(),
            error,
        })
    }
}
