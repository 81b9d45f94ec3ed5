//! Helpers shared by the stand's integration tests.

use ceiling_stand::DbConfig;

/// A database config that points nowhere (port 1): for stacks that must start without one.
pub fn fake_db() -> DbConfig {
    DbConfig {
        host: "127.0.0.1".into(),
        port: 1,
        user: "bench".into(),
        password: "bench".into(),
        dbname: "bench".into(),
    }
}
