//! PgBouncer between the stacks and PostgreSQL, when a plan asks for it (`[stand.pgbouncer]`).
//!
//! Debian's `pgbouncer` binary runs in the foreground (not daemonised, so the stand owns its pid)
//! from a configuration the stand writes into `<cache>/pgbouncer/`: one wildcard database entry
//! pointing at the stand's PostgreSQL, a free loopback port, no unix socket, the plan's
//! `pool_mode` and `default_pool_size`, and SCRAM authentication against an auth file holding the
//! role `bench` (the password is kept in plain text there so PgBouncer can also log in to
//! PostgreSQL, which takes SCRAM on TCP). When we are root it runs as the same unprivileged user
//! as PostgreSQL (it refuses to run as root), in a cgroup of its own (role `pgbouncer`: CPU and
//! memory accounted like PostgreSQL's; no limits). Stopped by pid: SIGTERM, SIGKILL after 5 s.

use crate::db::{Db, DbConfig, BENCH, BENCH_PASSWORD};
use crate::error::{PgError, Result};
use crate::pg::{check_reachable, chown, free_port, server_user, RunAs};
pub use ceiling_metrics::PgBouncerRecord;
use ceiling_plan::PgBouncerSettings;
use ceiling_supervise::cgroup::{Cgroup, CgroupSystem, Limits, LimitsApplied, Role};
use ceiling_supervise::process::{self, log_tail, Managed, SpawnSpec, StopReport};
use ceiling_supervise::IoContext;
use serde::Serialize;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The first PgBouncer release with `max_prepared_statements` (protocol-level prepared statements
/// tracked across transaction pooling).
pub const MAX_PREPARED_STATEMENTS_SINCE: (u32, u32, u32) = (1, 21, 0);

/// A `pgbouncer` executable and its version.
#[derive(Debug, Clone, Serialize)]
pub struct PgBouncerBinary {
    /// The executable.
    pub path: PathBuf,
    /// `1.18.0`.
    pub version: String,
    /// (major, minor, patch).
    #[serde(skip)]
    pub numeric: (u32, u32, u32),
}

impl PgBouncerBinary {
    /// Whether this version knows `max_prepared_statements`.
    pub fn has_max_prepared_statements(&self) -> bool {
        self.numeric >= MAX_PREPARED_STATEMENTS_SINCE
    }
}

/// `PgBouncer 1.18.0` (first line of `pgbouncer --version`; older releases said
/// `pgbouncer version 1.12.0`) → `("1.18.0", (1, 18, 0))`.
pub fn parse_pgbouncer_version(s: &str) -> Option<(String, (u32, u32, u32))> {
    let line = s
        .lines()
        .find(|l| l.to_ascii_lowercase().contains("pgbouncer"))?;
    let tok = line
        .split_whitespace()
        .find(|t| t.starts_with(|c: char| c.is_ascii_digit()))?;
    let ver: String = tok
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut it = ver.split('.').map(|p| p.parse::<u32>().ok());
    let major = it.next()??;
    let minor = it.next().flatten().unwrap_or(0);
    let patch = it.next().flatten().unwrap_or(0);
    Some((ver, (major, minor, patch)))
}

/// Finds `pgbouncer` (PATH, then Debian's `/usr/sbin/pgbouncer`) and asks it its version.
pub fn find_pgbouncer() -> Result<PgBouncerBinary> {
    let path = process::which("pgbouncer")
        .or_else(|| {
            let p = PathBuf::from("/usr/sbin/pgbouncer");
            process::is_executable(&p).then_some(p)
        })
        .ok_or_else(|| PgError::PgBouncer {
            message:
                "the plan asks for PgBouncer ([stand.pgbouncer]) but `pgbouncer` is not installed: \
                      run scripts/setup.sh (Debian: apt-get install pgbouncer)"
                    .into(),
            log_tail: String::new(),
        })?;
    let out = Command::new(&path)
        .arg("--version")
        .output()
        .ctx(|| format!("running {} --version", path.display()))?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (version, numeric) = parse_pgbouncer_version(&text).ok_or_else(|| PgError::PgBouncer {
        message: format!(
            "{} --version gave no version: {}",
            path.display(),
            text.trim()
        ),
        log_tail: String::new(),
    })?;
    Ok(PgBouncerBinary {
        path,
        version,
        numeric,
    })
}

/// Refuses settings this PgBouncer cannot do: `max_prepared_statements` before 1.21 (the setting
/// does not exist there).
pub fn check_settings(bin: &PgBouncerBinary, s: &PgBouncerSettings) -> Result<()> {
    if s.max_prepared_statements.is_some() && !bin.has_max_prepared_statements() {
        let (a, b, c) = MAX_PREPARED_STATEMENTS_SINCE;
        return Err(PgError::PgBouncer {
            message: format!(
                "the plan sets stand.pgbouncer.max_prepared_statements, but {} is PgBouncer {}, which has no such setting (it came in {a}.{b}.{c}): \
                 remove it from the plan, or install PgBouncer ≥ {a}.{b} and put it first on PATH",
                bin.path.display(),
                bin.version
            ),
            log_tail: String::new(),
        });
    }
    Ok(())
}

/// How to start PgBouncer.
#[derive(Debug, Clone)]
pub struct PgBouncerOptions {
    /// Directory for its configuration, auth file and log (`<cache>/pgbouncer`).
    pub root: PathBuf,
    /// The plan's settings.
    pub settings: PgBouncerSettings,
    /// The PostgreSQL server it pools (host, port).
    pub server: (String, u16),
    /// Port on 127.0.0.1; `None` = a free one.
    pub port: Option<u16>,
    /// Limits for its process (none by default: accounted, not limited).
    pub limits: Limits,
    /// How long to wait for it to listen.
    pub start_timeout: Duration,
}

impl PgBouncerOptions {
    /// Defaults: root `<cache_dir>/pgbouncer`, a free port, no limits, 15 s.
    pub fn new(cache_dir: &Path, settings: PgBouncerSettings, server: (String, u16)) -> Self {
        PgBouncerOptions {
            root: cache_dir.join("pgbouncer"),
            settings,
            server,
            port: None,
            limits: Limits::default(),
            start_timeout: Duration::from_secs(15),
        }
    }
}

/// `pgbouncer.ini` for these settings (pure: what the stand writes, testable on its own).
pub fn config_text(
    s: &PgBouncerSettings,
    server: (&str, u16),
    port: u16,
    auth_file: &Path,
) -> String {
    let mut t = format!(
        "; written by ceiling's stand (crates/pg/src/pgbouncer.rs) from the plan's [stand.pgbouncer]\n\
         [databases]\n\
         ; every database name goes to the same name on the stand's PostgreSQL; server sessions in\n\
         ; UTC with ISO dates (what node-postgres asks for in its `options`, which PgBouncer drops)\n\
         * = host={host} port={sport} timezone=UTC datestyle=ISO\n\
         \n\
         [pgbouncer]\n\
         listen_addr = 127.0.0.1\n\
         listen_port = {port}\n\
         ; no unix socket: loopback TCP only, like PostgreSQL\n\
         unix_socket_dir =\n\
         auth_type = scram-sha-256\n\
         auth_file = {auth}\n\
         pool_mode = {mode}\n\
         default_pool_size = {pool}\n\
         min_pool_size = 0\n\
         reserve_pool_size = 0\n\
         max_client_conn = {clients}\n\
         max_db_connections = 0\n\
         ; a failed server login blocks the pool for this long (default 15 s)\n\
         server_login_retry = 1\n\
         ; PgBouncer refuses startup parameters it does not track: JDBC sends extra_float_digits,\n\
         ; node-postgres `options` (-c TimeZone=UTC -c DateStyle=ISO, set per database above)\n\
         ignore_startup_parameters = extra_float_digits,options\n\
         log_connections = 0\n\
         log_disconnections = 0\n\
         stats_period = 60\n",
        host = server.0,
        sport = server.1,
        auth = auth_file.display(),
        mode = s.pool_mode.as_str(),
        pool = s.default_pool_size,
        clients = s.max_client_conn,
    );
    if let Some(n) = s.max_prepared_statements {
        t.push_str(&format!("max_prepared_statements = {n}\n"));
    }
    t
}

/// A PgBouncer the stand started. Stopped by [`PgBouncer::stop`] or on drop.
#[derive(Debug)]
pub struct PgBouncer {
    bin: PgBouncerBinary,
    settings: PgBouncerSettings,
    port: u16,
    proc: Managed,
    cgroup: Option<Cgroup>,
    limits: LimitsApplied,
    config: PathBuf,
}

impl PgBouncer {
    /// Writes the configuration and the auth file (role `bench`), starts PgBouncer and waits
    /// until it listens. Refuses `max_prepared_statements` on a PgBouncer older than 1.21, which
    /// does not know the setting.
    pub fn start(
        bin: &PgBouncerBinary,
        opts: &PgBouncerOptions,
        cgroups: &CgroupSystem,
    ) -> Result<PgBouncer> {
        check_settings(bin, &opts.settings)?;
        let user = server_user()?;
        std::fs::create_dir_all(&opts.root).ctx(|| format!("creating {}", opts.root.display()))?;
        let root = std::fs::canonicalize(&opts.root)
            .ctx(|| format!("resolving {}", opts.root.display()))?;
        if let Some(u) = &user {
            check_reachable(&root, u)?;
            chown(&root, u)?;
        }
        let auth_file = root.join("userlist.txt");
        write_private(
            &auth_file,
            &format!("\"{BENCH}\" \"{BENCH_PASSWORD}\"\n"),
            user.as_ref(),
        )?;
        let config = root.join("pgbouncer.ini");
        let log = root.join("pgbouncer.log");
        let (cgroup, mut limits) = cgroups.create(Role::Pgbouncer, "pgbouncer", &opts.limits);
        let affinity = ceiling_supervise::affinity_fallback(&opts.limits, &mut limits);
        let mut last_err = None;
        for attempt in 0..3 {
            let port = match opts.port {
                Some(p) => p,
                None => free_port()?,
            };
            write_private(
                &config,
                &config_text(
                    &opts.settings,
                    (&opts.server.0, opts.server.1),
                    port,
                    &auth_file,
                ),
                user.as_ref(),
            )?;
            let _ = std::fs::write(
                &log,
                format!(
                    "--- ceiling: starting PgBouncer {} on 127.0.0.1:{port} ({} pooling, default_pool_size {}) in front of {}:{}\n",
                    bin.version,
                    opts.settings.pool_mode.as_str(),
                    opts.settings.default_pool_size,
                    opts.server.0,
                    opts.server.1
                ),
            );
            let spec = SpawnSpec {
                label: "pgbouncer".into(),
                program: bin.path.clone(),
                args: vec![config.display().to_string()],
                cwd: Some(root.clone()),
                env: vec![("LC_ALL".into(), "C".into())],
                env_remove: Vec::new(),
                log: log.clone(),
                cgroup_procs: cgroup.as_ref().map(|c| c.procs_files()).unwrap_or_default(),
                affinity: affinity.clone(),
                user: user.as_ref().map(|u| (u.uid, u.gid)),
                term_signal: libc::SIGTERM,
                term_group: false,
            };
            let mut proc = Managed::spawn(&spec)?;
            match wait_listening(&mut proc, port, &log, opts.start_timeout) {
                Ok(()) => {
                    return Ok(PgBouncer {
                        bin: bin.clone(),
                        settings: opts.settings.clone(),
                        port,
                        proc,
                        cgroup,
                        limits,
                        config,
                    })
                }
                Err(e) => {
                    proc.stop(Duration::from_secs(2));
                    let tail = log_tail(&log, 30);
                    let port_clash = tail.contains("Address already in use");
                    last_err = Some(e);
                    if !(port_clash && opts.port.is_none() && attempt < 2) {
                        break;
                    }
                }
            }
        }
        if let Some(mut cg) = cgroup {
            cg.remove();
        }
        Err(last_err.unwrap())
    }

    /// `db` as a stack reaches it through PgBouncer: the same role, password and database, on
    /// PgBouncer's host and port.
    pub fn route(&self, db: &DbConfig) -> DbConfig {
        DbConfig {
            host: "127.0.0.1".into(),
            port: self.port,
            ..db.clone()
        }
    }

    /// One `select 1` as role `bench` through PgBouncer on database `dbname` (the role must
    /// exist): proves authentication and the server login work before any stack relies on them.
    pub fn check(&self, psql: &Path, dbname: &str) -> Result<()> {
        let db = Db::new(
            DbConfig {
                host: "127.0.0.1".into(),
                port: self.port,
                user: BENCH.into(),
                password: BENCH_PASSWORD.into(),
                dbname: dbname.into(),
            },
            psql.to_path_buf(),
        );
        db.query("select 1")
            .map(|_| ())
            .map_err(|e| PgError::PgBouncer {
                message: format!(
                    "a query through PgBouncer on port {} failed: {e}",
                    self.port
                ),
                log_tail: self.log_tail(20),
            })
    }

    /// What run.json records.
    pub fn record(&self) -> PgBouncerRecord {
        PgBouncerRecord {
            version: self.bin.version.clone(),
            path: self.bin.path.display().to_string(),
            settings: self.settings.clone(),
            port: self.port,
        }
    }
    /// The binary in use.
    pub fn binary(&self) -> &PgBouncerBinary {
        &self.bin
    }
    /// The plan's settings.
    pub fn settings(&self) -> &PgBouncerSettings {
        &self.settings
    }
    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }
    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.proc.pid
    }
    /// The configuration file written.
    pub fn config_path(&self) -> &Path {
        &self.config
    }
    /// Its log (stdout and stderr).
    pub fn log_path(&self) -> &Path {
        &self.proc.log
    }
    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        log_tail(&self.proc.log, n)
    }
    /// True while it runs.
    pub fn is_alive(&mut self) -> bool {
        self.proc.is_alive()
    }
    /// How it ended (`signal 9`, `exit 1`) once it has exited; `None` while it runs. One
    /// `waitpid(WNOHANG)`.
    pub fn exit_status(&mut self) -> Option<String> {
        self.proc.try_wait().map(process::describe_status)
    }
    /// The limits record (role `pgbouncer`).
    pub fn limits_applied(&self) -> &LimitsApplied {
        &self.limits
    }
    /// Its cgroup, if one was created.
    pub fn cgroup(&self) -> Option<&Cgroup> {
        self.cgroup.as_ref()
    }
    /// SIGTERM, SIGKILL after 5 s; removes the cgroup. Idempotent.
    pub fn stop(&mut self) -> StopReport {
        let rep = self.proc.stop(Duration::from_secs(5));
        if let Some(mut cg) = self.cgroup.take() {
            cg.remove();
        }
        rep
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Writes `text` to `path` readable by its owner only, owned by `user` when given.
fn write_private(path: &Path, text: &str, user: Option<&RunAs>) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).ctx(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .ctx(|| format!("chmod {}", path.display()))?;
    if let Some(u) = user {
        chown(path, u)?;
    }
    Ok(())
}

fn wait_listening(proc: &mut Managed, port: u16, log: &Path, timeout: Duration) -> Result<()> {
    let start = Instant::now();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    loop {
        if ceiling_supervise::cancelled() {
            return Err(PgError::cancelled("waiting for PgBouncer to start"));
        }
        if let Some(st) = proc.try_wait() {
            return Err(PgError::PgBouncer {
                message: format!(
                    "it exited during start-up ({}); log {}",
                    process::describe_status(st),
                    log.display()
                ),
                log_tail: log_tail(log, 30),
            });
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(PgError::PgBouncer {
                message: format!(
                    "it did not listen on 127.0.0.1:{port} within {timeout:?}; log {}",
                    log.display()
                ),
                log_tail: log_tail(log, 30),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ceiling_plan::PoolMode;

    #[test]
    fn versions() {
        assert_eq!(
            parse_pgbouncer_version(
                "PgBouncer 1.18.0\nlibevent 2.1.12-stable\ntls: OpenSSL 3.0.15\n"
            ),
            Some(("1.18.0".into(), (1, 18, 0)))
        );
        assert_eq!(
            parse_pgbouncer_version("pgbouncer version 1.12.0\n"),
            Some(("1.12.0".into(), (1, 12, 0)))
        );
        assert_eq!(
            parse_pgbouncer_version("PgBouncer 1.24\n").map(|v| v.1),
            Some((1, 24, 0))
        );
        assert_eq!(parse_pgbouncer_version("nothing here"), None);
        let b = |numeric| PgBouncerBinary {
            path: "/usr/sbin/pgbouncer".into(),
            version: String::new(),
            numeric,
        };
        assert!(!b((1, 18, 0)).has_max_prepared_statements());
        assert!(b((1, 21, 0)).has_max_prepared_statements());
        assert!(b((2, 0, 0)).has_max_prepared_statements());
    }

    #[test]
    fn config_has_the_plans_settings() {
        let s = PgBouncerSettings {
            pool_mode: PoolMode::Transaction,
            default_pool_size: 50,
            max_client_conn: 1000,
            max_prepared_statements: None,
        };
        let t = config_text(&s, ("127.0.0.1", 5433), 6543, Path::new("/c/userlist.txt"));
        for want in [
            "* = host=127.0.0.1 port=5433 timezone=UTC datestyle=ISO\n",
            "ignore_startup_parameters = extra_float_digits,options\n",
            "listen_port = 6543\n",
            "pool_mode = transaction\n",
            "default_pool_size = 50\n",
            "max_client_conn = 1000\n",
            "auth_file = /c/userlist.txt\n",
            "auth_type = scram-sha-256\n",
            "unix_socket_dir =\n",
        ] {
            assert!(t.contains(want), "{want:?} missing from\n{t}");
        }
        assert!(!t.contains("max_prepared_statements"), "{t}");
        let s = PgBouncerSettings {
            pool_mode: PoolMode::Session,
            max_prepared_statements: Some(200),
            ..s
        };
        let t = config_text(&s, ("127.0.0.1", 5433), 6543, Path::new("/c/u"));
        assert!(t.contains("pool_mode = session\n"), "{t}");
        assert!(t.contains("max_prepared_statements = 200\n"), "{t}");
    }

    #[test]
    fn old_pgbouncer_refuses_max_prepared_statements_before_starting() {
        let bin = PgBouncerBinary {
            path: "/nonexistent/pgbouncer".into(),
            version: "1.18.0".into(),
            numeric: (1, 18, 0),
        };
        let mut opts = PgBouncerOptions::new(
            Path::new("/nonexistent"),
            PgBouncerSettings {
                pool_mode: PoolMode::Transaction,
                default_pool_size: 50,
                max_client_conn: 1000,
                max_prepared_statements: Some(100),
            },
            ("127.0.0.1".into(), 5432),
        );
        opts.port = Some(1);
        let e = PgBouncer::start(&bin, &opts, &CgroupSystem::detect())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("max_prepared_statements") && e.contains("1.18.0") && e.contains("1.21"),
            "{e}"
        );
    }
}
