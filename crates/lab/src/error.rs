//! The lab's error type: what stopped a step — the part that failed (the stand, the engine, the
//! conformance suite, an agent), carried with its own message, or the lab's own refusal of a
//! setting or a state, said as a sentence with what to do. The binary adds nothing but `error:`.

/// Why a lab step failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The stand: a stack's build or start, PostgreSQL, PgBouncer, process supervision.
    #[error(transparent)]
    Stand(#[from] ceiling_stand::StandError),
    /// The load engine: a target, a data file, the generator.
    #[error(transparent)]
    Load(#[from] ceiling_load::LoadError),
    /// The conformance suite could not run at all (a failing case is a report, not an error).
    #[error(transparent)]
    Verify(#[from] ceiling_verify::VerifyError),
    /// A plan's value given on the command line (`--tick 2x`).
    #[error("{flag}: {error}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// What is wrong with its value.
        error: String,
    },
    /// A generator agent, or the coordinator's session with one.
    #[error(transparent)]
    Agent(#[from] ceiling_agent::error::AgentError),
    /// The caller's checkpoint (writing the report after a turn) failed.
    #[error(transparent)]
    Checkpoint(Box<dyn std::error::Error + Send + Sync>),
    /// A file or socket of the lab's own (records, the metrics endpoint).
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error (in the message, so not also a source: a chain printed whole would
        /// say it twice).
        error: std::io::Error,
    },
    /// A setting or a state the lab refuses: the sentence says why and what to do.
    #[error("{0}")]
    Refused(String),
}

impl LabError {
    /// The lab's refusal, said as `why`.
    pub fn refused(why: impl Into<String>) -> LabError {
        LabError::Refused(why.into())
    }

    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>, error: std::io::Error) -> LabError {
        LabError::Io {
            what: what.into(),
            error,
        }
    }

    /// The caller's checkpoint's error.
    pub fn checkpoint(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> LabError {
        LabError::Checkpoint(e.into())
    }
}

/// The lab's result type.
pub type Result<T, E = LabError> = std::result::Result<T, E>;

/// Refuses with a formatted sentence: `refuse!("--round must be at least 1")`.
macro_rules! refuse {
    ($($t:tt)*) => {
        return Err($crate::error::LabError::Refused(format!($($t)*)))
    };
}
pub(crate) use refuse;

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    /// The whole chain, as `{:#}` would print it through anyhow: each message, joined by `: `.
    fn chain(e: &dyn Error) -> String {
        let mut out = e.to_string();
        let mut s = e.source();
        while let Some(x) = s {
            out.push_str(": ");
            out.push_str(&x.to_string());
            s = x.source();
        }
        out
    }

    #[test]
    fn an_io_error_is_said_once_with_what_was_being_done() {
        let e = LabError::io(
            "creating results/x",
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied"),
        );
        assert_eq!(chain(&e), "creating results/x: denied");
        // the stand's I/O errors too (supervision's, carried through the stand's error)
        let s: ceiling_stand::StandError = ceiling_supervise::SuperviseError::Io {
            context: "writing postgresql.conf".into(),
            error: std::io::Error::other("disk full"),
        }
        .into();
        assert_eq!(
            chain(&LabError::from(s)),
            "writing postgresql.conf: disk full"
        );
    }

    #[test]
    fn a_refusal_and_a_flag_say_their_sentence() {
        let e: Result<()> = (|| refuse!("--round must be at least {}", 1))();
        assert_eq!(chain(&e.unwrap_err()), "--round must be at least 1");
        let flag = LabError::Flag {
            flag: "--tick",
            error: ceiling_plan::parse_duration("2x").unwrap_err(),
        };
        assert!(chain(&flag).starts_with("--tick: "), "{flag}");
    }
}
