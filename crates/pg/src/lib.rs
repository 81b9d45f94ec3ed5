//! The stand's database side.
//!
//! - [`pg`]: PostgreSQL's binaries found on the machine or fetched from Maven Central, an embedded
//!   server initialised, started under the plan's settings and limits, supervised and stopped.
//! - [`pgbouncer`]: Debian's PgBouncer started between the stacks and PostgreSQL in session or
//!   transaction mode, its settings checked against its version.
//! - [`db`]: SQL through `psql` — connection settings, the seeded template database reused across
//!   runs and copied fresh per stack, id CSVs, `pg_stat_statements`.
//!
//! Every process here is started and stopped through `ceiling-supervise`.

#![warn(missing_docs)]

pub mod db;
mod error;
pub mod pg;
pub mod pgbouncer;

pub use db::{
    data_hash, drop_database, ensure_bench_role, find_pg_tool, find_psql, hex, ident, lit,
    prepare_data, reset_bench_db, stat_statements_reset, stat_statements_snapshot, DataSetup, Db,
    DbConfig, StatementStat, BENCH, BENCH_PASSWORD, TEMPLATE_DB,
};
pub use error::{tail_suffix, PgError, Result};
pub use pg::{
    default_maven_version, find_postgres, free_port, lookup_user, parse_pg_version, server_user,
    EmbeddedPostgres, PgBinaries, PgOptions, RunAs, MAVEN_GROUP, SUPERUSER,
};
pub use pgbouncer::{
    check_settings as check_pgbouncer_settings, config_text as pgbouncer_config_text,
    find_pgbouncer, parse_pgbouncer_version, PgBouncer, PgBouncerBinary, PgBouncerOptions,
    PgBouncerRecord, MAX_PREPARED_STATEMENTS_SINCE,
};
