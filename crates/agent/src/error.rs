//! The agent's error type, on both sides of the channel (the agent serving, the coordinator
//! driving agents): what was being done and why it failed, as one sentence. Every cause is said
//! in the message, so no variant also gives it as a source — a chain printed whole (`{:#}`) says
//! each thing once.

use crate::session::SessionError;
use crate::ProtocolError;
use std::fmt::Display;

/// Why an agent session, or the coordinator's work with its agents, failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A step that failed (`agent 10.0.0.2:7000: sending data source ids`), with its cause.
    #[error("{what}: {cause}")]
    During {
        /// What was being done.
        what: String,
        /// Why it failed.
        cause: String,
    },
    /// A refusal, or a peer that broke the protocol: the sentence says which and why.
    #[error("{0}")]
    Refused(String),
    /// The control channel (a message that could not be read or written).
    #[error("{0}")]
    Protocol(ProtocolError),
    /// A session's opening (token, clocks).
    #[error("{0}")]
    Session(SessionError),
    /// A socket, a file or the async runtime.
    #[error("{0}")]
    Io(std::io::Error),
}

impl From<ProtocolError> for AgentError {
    fn from(e: ProtocolError) -> AgentError {
        AgentError::Protocol(e)
    }
}

impl From<SessionError> for AgentError {
    fn from(e: SessionError) -> AgentError {
        AgentError::Session(e)
    }
}

impl From<std::io::Error> for AgentError {
    fn from(e: std::io::Error) -> AgentError {
        AgentError::Io(e)
    }
}

/// The agent's result type.
pub type Result<T, E = AgentError> = std::result::Result<T, E>;

/// What was being done when a step failed, added to its error (as `anyhow::Context` reads, but
/// typed: the result is an [`AgentError::During`]).
pub trait Context<T> {
    /// The error, if any, said as `what: cause`.
    fn context(self, what: impl Display) -> Result<T>;
    /// As [`Context::context`], `what` computed only on failure.
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E: Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|e| AgentError::During {
            what: what.to_string(),
            cause: e.to_string(),
        })
    }

    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| AgentError::During {
            what: what().to_string(),
            cause: e.to_string(),
        })
    }
}

/// Refuses with a formatted sentence: `refuse!("no agents given")`.
macro_rules! refuse {
    ($($t:tt)*) => {
        return Err($crate::error::AgentError::Refused(format!($($t)*)))
    };
}
pub(crate) use refuse;

/// An [`AgentError::Refused`] from a formatted sentence, for `map_err`.
macro_rules! refusal {
    ($($t:tt)*) => {
        $crate::error::AgentError::Refused(format!($($t)*))
    };
}
pub(crate) use refusal;

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn a_step_says_what_was_being_done_and_why_once() {
        let r: std::result::Result<(), std::io::Error> =
            Err(std::io::Error::other("connection refused"));
        let e = r
            .with_context(|| "agent 127.0.0.1:9: cannot connect")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "agent 127.0.0.1:9: cannot connect: connection refused"
        );
        assert!(
            e.source().is_none(),
            "the cause is in the message, not again in the chain"
        );
        let p: AgentError = ProtocolError::TooLong.into();
        assert!(p.source().is_none());
        assert_eq!(p.to_string(), ProtocolError::TooLong.to_string());
    }

    #[test]
    fn a_refusal_is_its_sentence() {
        let f = || -> Result<()> { refuse!("no agents given ({})", 0) };
        assert_eq!(f().unwrap_err().to_string(), "no agents given (0)");
        assert_eq!(refusal!("a {}", "b").to_string(), "a b");
    }
}
