//! The conformance suite behind ceiling verify
