//! The conformance suite behind `ceiling verify`: proves that a stack does the work of the
//! benchmark contract (`contract/API.md`, `contract/openapi.yaml`) and nothing else.
//!
//! It runs every positive and negative case of the contract against a running stack over HTTP,
//! compares status codes, `Content-Type` and payloads with the database's own truth (the verifier
//! connects to the stack's database), counts the statements each request runs with
//! `pg_stat_statements`, and fires a concurrent burst of transfers to check that money is
//! conserved and no transfer is half-applied.
//!
//! ```no_run
//! use ceiling_verify::{verify, render_text, DbConfig, VerifyConfig};
//! let db = DbConfig::from_url("postgres://postgres@127.0.0.1:5432/bench").unwrap();
//! let report = verify(&VerifyConfig::new("http://127.0.0.1:8080", db)).unwrap();
//! print!("{}", render_text(&report));
//! std::process::exit(if report.ok() { 0 } else { 1 });
//! ```
//!
//! The database role must see every role's statements in `pg_stat_statements` (a superuser, or a
//! member of `pg_read_all_stats`) and may write the benchmark tables: the suite inserts a few status
//! rows and clients, a burst of transfers among clients it creates, and never changes seeded rows
//! (it reads them).
#![forbid(unsafe_code)]

mod cases;
pub mod check;
pub mod fairness;
pub mod http;
pub mod sql;

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use cases::case_names;
pub use fairness::{FairnessExpect, PoolExpect};
pub use sql::{classify, Shape, StatementSeen};

/// How to reach the stack's database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbConfig {
    pub host: String,
    pub port: u16,
    pub user: String,
    /// Never serialized.
    #[serde(skip_serializing, default)]
    pub password: String,
    pub dbname: String,
}

impl DbConfig {
    /// Parses a libpq-style URL (`postgres://user:password@host:port/dbname`) or key=value string.
    pub fn from_url(url: &str) -> Result<DbConfig, VerifyError> {
        let cfg: tokio_postgres::Config = url
            .parse()
            .map_err(|e| VerifyError::Config(format!("database URL: {e}")))?;
        let host = match cfg.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            #[cfg(unix)]
            Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => "127.0.0.1".to_string(),
        };
        let user = cfg
            .get_user()
            .map(str::to_string)
            .unwrap_or_else(|| "postgres".to_string());
        Ok(DbConfig {
            host,
            port: cfg.get_ports().first().copied().unwrap_or(5432),
            password: cfg
                .get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .unwrap_or_default(),
            dbname: cfg
                .get_dbname()
                .map(str::to_string)
                .unwrap_or_else(|| user.clone()),
            user,
        })
    }

    /// `postgres://user@host:port/dbname` (no password), for reports.
    pub fn display_url(&self) -> String {
        format!(
            "postgres://{}@{}:{}/{}",
            self.user, self.host, self.port, self.dbname
        )
    }

    fn pg_config(&self) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        c.host(&self.host)
            .port(self.port)
            .user(&self.user)
            .dbname(&self.dbname)
            .application_name("ceiling-verify")
            .connect_timeout(Duration::from_secs(10));
        if !self.password.is_empty() {
            c.password(&self.password);
        }
        c
    }
}

/// What to verify and how hard.
#[derive(Debug, Clone)]
pub struct VerifyConfig {
    /// The stack: `http://host:port` (an optional path prefix is prepended to every request).
    pub base_url: String,
    /// The database the stack uses (same server and database name).
    pub db: DbConfig,
    /// Connections in the concurrent transfer burst (default 32).
    pub concurrency: usize,
    /// Transfers per connection in the burst (default 50).
    pub transfers_per_connection: usize,
    /// Clients the burst moves money among (default 20; created by the suite).
    pub burst_clients: usize,
    /// Deadline for one request (default 10 s).
    pub request_timeout: Duration,
    /// How far a server clock (`/time`, `/db/time`, `updatedAt`) may be from the database's
    /// `now()` (default 5 s).
    pub clock_tolerance: Duration,
    /// Count statements with `pg_stat_statements` (the `sql` group; default true).
    pub check_statements: bool,
    /// Run only the cases whose name or group is listed (empty: all).
    pub only: Vec<String>,
    /// What the stack declares in its `[fairness]` table, checked by the `fairness` group
    /// (`None`: that group does not run).
    pub fairness: Option<FairnessExpect>,
    /// Stop as soon as this is set (Ctrl-C): [`verify`] returns [`VerifyError::Cancelled`] within
    /// about 50 ms, dropping the suite's connections.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl VerifyConfig {
    pub fn new(base_url: impl Into<String>, db: DbConfig) -> VerifyConfig {
        VerifyConfig {
            base_url: base_url.into(),
            db,
            concurrency: 32,
            transfers_per_connection: 50,
            burst_clients: 20,
            request_timeout: Duration::from_secs(10),
            clock_tolerance: Duration::from_secs(5),
            check_statements: true,
            only: Vec::new(),
            fairness: None,
            cancel: None,
        }
    }
}

/// Why the suite could not run at all (as opposed to a case failing).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("cannot connect to the database {url}: {message}")]
    Db { url: String, message: String },
    #[error("the stack at {url} is not reachable: {message}")]
    Unreachable { url: String, message: String },
    #[error("the database is not ready for verify: {0}")]
    Data(String),
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[from] std::io::Error),
    #[error("cancelled")]
    Cancelled,
}

/// The outcome of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// Unique, stable, kebab-case (e.g. `status-get-bad-uuid`).
    pub name: String,
    /// `fairness`, `ops`, `ping`, `status`, `bank`, `rows`, `sql` or `concurrency`.
    pub group: String,
    pub passed: bool,
    /// What was checked (passed) or what was wrong (failed).
    pub detail: String,
    /// Statements the case saw in `pg_stat_statements` (the `sql` group only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statements_seen: Vec<StatementSeen>,
    pub duration_ms: u64,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    pub base_url: String,
    /// The database, without password.
    pub database: String,
    /// RFC 3339 UTC.
    pub started_at: String,
    pub duration_ms: u64,
    pub cases: Vec<CaseResult>,
}

impl VerifyReport {
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.passed).count()
    }

    pub fn failed(&self) -> usize {
        self.cases.len() - self.passed()
    }

    /// Every case passed (and there was at least one).
    pub fn ok(&self) -> bool {
        !self.cases.is_empty() && self.failed() == 0
    }

    pub fn failures(&self) -> impl Iterator<Item = &CaseResult> {
        self.cases.iter().filter(|c| !c.passed)
    }

    pub fn case(&self, name: &str) -> Option<&CaseResult> {
        self.cases.iter().find(|c| c.name == name)
    }
}

/// Runs the suite (blocking; builds its own tokio runtime, so do not call it from inside one —
/// use [`verify_async`] there).
pub fn verify(cfg: &VerifyConfig) -> Result<VerifyReport, VerifyError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let cancel = cfg.cancel.clone();
    let res = rt.block_on(async {
        tokio::select! {
            r = verify_async(cfg) => r,
            _ = cancelled(cancel) => Err(VerifyError::Cancelled),
        }
    });
    // A cancelled suite leaves tasks behind: do not wait for them.
    rt.shutdown_timeout(Duration::from_millis(200));
    res
}

/// Resolves once `flag` is set (never without one).
async fn cancelled(flag: Option<Arc<AtomicBool>>) {
    match flag {
        Some(f) => {
            while !f.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        None => std::future::pending().await,
    }
}

/// Runs the suite on the caller's tokio runtime (needs the `time` and `net` drivers).
pub async fn verify_async(cfg: &VerifyConfig) -> Result<VerifyReport, VerifyError> {
    cases::run(cfg).await
}

/// The report as text: one line per case (`PASS`/`FAIL`, group/name, detail), the statements
/// each `sql` case saw, and a closing `N passed, M failed` line.
pub fn render_text(report: &VerifyReport) -> String {
    let mut out = format!(
        "ceiling verify {} (database {})\n",
        report.base_url, report.database
    );
    let width = report
        .cases
        .iter()
        .map(|c| c.group.len() + c.name.len() + 1)
        .max()
        .unwrap_or(0);
    for c in &report.cases {
        let id = format!("{}/{}", c.group, c.name);
        let verdict = if c.passed { "PASS" } else { "FAIL" };
        let mut lines = c.detail.lines();
        out.push_str(&format!(
            "{verdict} {id:<width$}  {}\n",
            lines.next().unwrap_or("")
        ));
        for l in lines {
            out.push_str(&format!("     {:<width$}  {l}\n", ""));
        }
        for s in &c.statements_seen {
            out.push_str(&format!(
                "     {:<width$}    {:>3} × [{}] {}\n",
                "",
                s.calls,
                s.shape,
                one_line(&s.query, 160)
            ));
        }
    }
    out.push_str(&format!(
        "{} passed, {} failed ({:.1} s)\n",
        report.passed(),
        report.failed(),
        report.duration_ms as f64 / 1000.0
    ));
    out
}

fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max).collect::<String>())
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_urls() {
        let d = DbConfig::from_url("postgres://bench:secret@127.0.0.1:54329/bench").unwrap();
        assert_eq!(
            d,
            DbConfig {
                host: "127.0.0.1".into(),
                port: 54329,
                user: "bench".into(),
                password: "secret".into(),
                dbname: "bench".into()
            }
        );
        assert_eq!(d.display_url(), "postgres://bench@127.0.0.1:54329/bench");
        assert!(!serde_json::to_string(&d).unwrap().contains("secret"));
        let d = DbConfig::from_url("host=localhost user=u dbname=x").unwrap();
        assert_eq!(
            (d.host.as_str(), d.port, d.dbname.as_str()),
            ("localhost", 5432, "x")
        );
        assert!(DbConfig::from_url("postgres://u@h:notaport/x").is_err());
    }

    /// A database that accepts connections and never answers would hold the suite for its whole
    /// timeout; a cancel (Ctrl-C) must end it at once.
    #[test]
    fn cancel_stops_a_hanging_suite() {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        let db = DbConfig {
            host: "127.0.0.1".into(),
            port,
            user: "u".into(),
            password: "p".into(),
            dbname: "d".into(),
        };
        let mut cfg = VerifyConfig::new(format!("http://127.0.0.1:{port}"), db);
        let cancel = Arc::new(AtomicBool::new(false));
        cfg.cancel = Some(cancel.clone());
        let c = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            c.store(true, Ordering::Relaxed);
        });
        let t = std::time::Instant::now();
        let r = verify(&cfg);
        assert!(matches!(r, Err(VerifyError::Cancelled)), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        drop(silent);
    }

    #[test]
    fn report_counts_and_text() {
        let case = |name: &str, passed| CaseResult {
            name: name.into(),
            group: "status".into(),
            passed,
            detail: format!("{name} detail\nsecond line"),
            statements_seen: vec![StatementSeen {
                query: "SELECT id, status, updated_at\n FROM status WHERE id = $1".into(),
                calls: 1,
                shape: Shape::StatusGetOne,
            }],
            duration_ms: 3,
        };
        let r = VerifyReport {
            base_url: "http://127.0.0.1:1".into(),
            database: "postgres://u@h:1/d".into(),
            started_at: "2025-01-01T00:00:00Z".into(),
            duration_ms: 1500,
            cases: vec![case("a", true), case("b", false)],
        };
        assert_eq!((r.passed(), r.failed(), r.ok()), (1, 1, false));
        assert_eq!(
            r.failures().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            vec!["b"]
        );
        let t = render_text(&r);
        assert!(t.contains("PASS status/a  a detail\n"), "{t}");
        assert!(t.contains("FAIL status/b  b detail\n"), "{t}");
        assert!(t.contains("second line"), "{t}");
        assert!(
            t.contains(
                "1 × [status-by-id] SELECT id, status, updated_at FROM status WHERE id = $1"
            ),
            "{t}"
        );
        assert!(t.ends_with("1 passed, 1 failed (1.5 s)\n"), "{t}");
        let back: VerifyReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
