//! Number formatting and table layouts: `ceiling-fmt`'s, the one set every output uses
//! (re-exported here so the report's renderers say `fmt::rps`, `fmt::md_table`, …).

pub use ceiling_fmt::*;
