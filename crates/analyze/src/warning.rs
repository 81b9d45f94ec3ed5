//! Things a reader of a stack's results should know, typed by kind.
//!
//! The kind lets code recognise a warning without matching its text: [`crate::StackAnalysis::combine`]
//! recomputes the warnings it derives itself and keeps the others, and the report can pick out the
//! ones that belong among the notices (a part of the stand that died).

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a [`Warning`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// The ceiling is not bracketed: no shelf after it failed (derived from the shelves).
    NotBracketed,
    /// A shelf failed before the last valid one (derived from the shelves).
    NonMonotonic,
    /// Some shelves were generator-bound (derived from the shelves).
    GeneratorBound,
    /// Closed model: some repetitions of a level had errors (derived from the levels).
    RepetitionErrors,
    /// Closed model: one repetition ran consistently slower or faster than the others across the
    /// levels — a warm-up too short, or the machine changing under the run (derived from the
    /// levels).
    RepetitionDrift,
    /// Closed model: throughput × mean latency is not the connections held (Little's law), so
    /// the generator's turnaround or the measurement itself is in the figures (derived from the
    /// shelves).
    LittlesLaw,
    /// A settling warm-up (`[settle]`) ran out of time before the throughput stopped moving.
    WarmupNotSettled,
    /// A capacity search found no failing probe above its ceiling (a lower bound), or no ceiling.
    SearchNotBracketed,
    /// A capacity search bracketed the ceiling but its interval is wider than the tolerance.
    SearchNotNarrowed,
    /// Seconds arrived out of order.
    SecondsOutOfOrder,
    /// No second was recorded at all.
    NoSeconds,
    /// No resource sample of the stack: CPU and RAM are unknown.
    NoResourceSamples,
    /// A part of the stand (PostgreSQL) exited during the measurement; see `StackAnalysis::part_exits`.
    PartExited,
    /// The stack under test died during the measurement.
    StackDied,
    /// The stack's log tail after it died.
    StackLog,
    /// The run was stopped early (signal or time bound).
    StoppedEarly,
    /// The run stopped on purpose after its first failed shelf (`[load] stop_at_failure`): the
    /// stages after it were not run.
    StoppedAtFailure,
    /// The stack is a baseline serving only part of the contract.
    PartialContract,
    /// The stack changed the contract's schema on its copy of the data (`[database] setup_sql`:
    /// an as-published stack reproducing a source's schema flaw).
    SchemaChanged,
    /// The stack was measured although verify failed or could not run (`--allow-unverified`).
    Unverified,
    /// The plan switched verify off.
    VerifySkipped,
    /// Writing the per-second files failed.
    Files,
    /// The bank's money was not conserved under this stack (a lost or half-applied transfer).
    MoneyNotConserved,
    /// The generator, the stack and PostgreSQL shared the machine's CPUs and together used nearly
    /// all of them where the stack failed: the ceiling is the box's, not the stack's alone.
    BoxBound,
    /// Run level: a stack of the plan was not measured or searched (its build, start or verify
    /// failed); the message says why.
    StackNotMeasured,
    /// Anything else (and every warning read from a run.json older than schema 2).
    Other,
}

impl WarningKind {
    /// True for warnings [`crate::StackAnalysis::from_shelves`] derives from the shelves; they are
    /// recomputed whenever shelves are recombined.
    pub fn is_derived(self) -> bool {
        matches!(
            self,
            WarningKind::NotBracketed
                | WarningKind::NonMonotonic
                | WarningKind::GeneratorBound
                | WarningKind::RepetitionErrors
                | WarningKind::RepetitionDrift
                | WarningKind::LittlesLaw
        )
    }
}

/// One warning: its kind and the sentence shown to the reader. Serialised as
/// `{"kind": "...", "message": "..."}`; a bare string (run.json schema 1) reads as kind `other`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "WarningRepr")]
pub struct Warning {
    /// What it is about.
    pub kind: WarningKind,
    /// The sentence for the reader.
    pub message: String,
}

impl Warning {
    /// A warning of `kind`.
    pub fn new(kind: WarningKind, message: impl Into<String>) -> Warning {
        Warning {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// What run.json has held over time: a bare sentence (schema 1) or a typed warning.
#[derive(Deserialize)]
#[serde(untagged)]
enum WarningRepr {
    Typed { kind: WarningKind, message: String },
    Text(String),
}

impl From<WarningRepr> for Warning {
    fn from(r: WarningRepr) -> Warning {
        match r {
            WarningRepr::Typed { kind, message } => Warning { kind, message },
            WarningRepr::Text(message) => Warning {
                kind: WarningKind::Other,
                message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_typed_and_schema_1_warnings() {
        let w = Warning::new(WarningKind::PartExited, "PostgreSQL exited");
        let text = serde_json::to_string(&w).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"part_exited","message":"PostgreSQL exited"}"#
        );
        assert_eq!(serde_json::from_str::<Warning>(&text).unwrap(), w);
        let old: Warning = serde_json::from_str(r#""ceiling not bracketed: …""#).unwrap();
        assert_eq!(old.kind, WarningKind::Other);
        assert_eq!(old.to_string(), "ceiling not bracketed: …");
        assert!(serde_json::from_str::<Warning>(r#"{"kind":"nonsense","message":"x"}"#).is_err());
    }
}
