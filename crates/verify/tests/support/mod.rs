//! A throwaway PostgreSQL (seeded with contract/schema.sql + seed.sql) and the go-pgx reference
//! stack built from stacks/go-pgx, for the conformance tests.
//!
//! Every process is started from the test's main thread with `PR_SET_PDEATHSIG`, so nothing
//! outlives the test binary even if it is killed; on the normal path [`Env`]'s drop stops them by
//! PID (go-pgx with SIGTERM, PostgreSQL with SIGINT = fast shutdown) and removes the directory.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ceiling_testkit::{free_port, http_get, repo_root};

/// A started child process, stopped by PID on drop.
pub struct Proc {
    name: &'static str,
    child: std::process::Child,
    stop_signal: i32,
}

impl Proc {
    /// Spawns `cmd` so that the kernel sends `death_signal` to it if this process dies.
    pub fn spawn(
        name: &'static str,
        mut cmd: Command,
        stop_signal: i32,
        death_signal: i32,
    ) -> Proc {
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, death_signal as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            name,
            child,
            stop_signal,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    pub fn stop(&mut self) {
        if self.exited().is_some() {
            return;
        }
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: plain kill(2) on our own child's PID.
        unsafe { libc::kill(pid, self.stop_signal) };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(15) {
            if self.exited().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("{} (pid {pid}) did not stop in 15 s: SIGKILL", self.name);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

fn which(name: &str, extra: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .chain(extra.iter().map(PathBuf::from))
        .find(|p| p.is_file())
}

/// The newest `/usr/lib/postgresql/*/bin` with initdb and postgres, or the one `pg_config`
/// names, or initdb on PATH.
fn find_pg_bin() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .collect();
    dirs.sort();
    let mut candidates: Vec<PathBuf> = dirs.into_iter().rev().map(|(_, d)| d).collect();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    if let Some(initdb) = which("initdb", &[]) {
        candidates.push(initdb.parent().unwrap().to_path_buf());
    }
    candidates
        .into_iter()
        .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
}

/// (uid, gid) of a system user.
fn lookup_user(name: &str) -> Option<(u32, u32)> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer into static storage or null; read immediately.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: non-null, points to a valid passwd.
    unsafe { Some(((*pw).pw_uid, (*pw).pw_gid)) }
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// PostgreSQL + go-pgx, both on loopback.
pub struct Env {
    pub dir: PathBuf,
    pub pg_port: u16,
    pub go_port: u16,
    // field order = drop order: the stack first, then the database
    go: Option<Proc>,
    pg: Option<Proc>,
}

pub const DB_NAME: &str = "ceiling";

impl Env {
    /// Starts everything, or says why it cannot (`Err` = skip: a tool is missing).
    pub fn start() -> Result<Env, String> {
        let pg_bin =
            find_pg_bin().ok_or("no PostgreSQL server binaries (initdb, postgres) found")?;
        let go = which("go", &["/usr/local/go/bin/go"]).ok_or("no `go` toolchain on PATH")?;
        let psql = Some(pg_bin.join("psql"))
            .filter(|p| p.is_file())
            .or_else(|| which("psql", &[]))
            .ok_or("no psql")?;
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let run_as =
            if root {
                Some(lookup_user("postgres").ok_or(
                    "running as root and there is no `postgres` user to run PostgreSQL as",
                )?)
            } else {
                None
            };

        let dir = std::env::temp_dir().join(format!("ceiling-verify-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        if let Some((uid, gid)) = run_as {
            let c = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
            // SAFETY: chown on a path we just created.
            assert_eq!(
                unsafe { libc::chown(c.as_ptr(), uid, gid) },
                0,
                "chown {}",
                dir.display()
            );
        }
        let mut env = Env {
            dir: dir.clone(),
            pg_port: free_port(),
            go_port: 0,
            go: None,
            pg: None,
        };

        // initdb + postgres in the foreground, as the postgres user when we are root
        let data = dir.join("data");
        let as_pg = |mut cmd: Command| {
            cmd.current_dir("/");
            if let Some((uid, gid)) = run_as {
                cmd.uid(uid).gid(gid);
            }
            cmd
        };
        let mut initdb = as_pg(Command::new(pg_bin.join("initdb")));
        initdb.args([
            "-D",
            data.to_str().unwrap(),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        let out = initdb.output().expect("initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let pg_log = dir.join("postgres.log");
        let mut pg = as_pg(Command::new(pg_bin.join("postgres")));
        pg.arg("-D")
            .arg(&data)
            .arg("-p")
            .arg(env.pg_port.to_string());
        for setting in [
            "listen_addresses=127.0.0.1".to_string(),
            format!("unix_socket_directories={}", dir.display()),
            "shared_preload_libraries=pg_stat_statements".into(),
            "max_connections=200".into(),
            "shared_buffers=128MB".into(),
            "fsync=off".into(), // a throwaway cluster: speed over durability
            "synchronous_commit=off".into(),
        ] {
            pg.arg("-c").arg(setting);
        }
        pg.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&pg_log).unwrap());
        env.pg = Some(Proc::spawn("postgres", pg, libc::SIGINT, libc::SIGINT));

        let psql_cmd = |db: &str| {
            let mut c = Command::new(&psql);
            c.args([
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-d",
                db,
            ])
            .arg("-p")
            .arg(env.pg_port.to_string());
            c
        };
        let t0 = Instant::now();
        loop {
            let ok = psql_cmd("postgres")
                .args(["-c", "select 1"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if ok.map(|s| s.success()).unwrap_or(false) {
                break;
            }
            if let Some(st) = env.pg.as_mut().unwrap().exited() {
                panic!("postgres exited ({st}):\n{}", tail(&pg_log, 30));
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "postgres not ready in 60 s:\n{}",
                tail(&pg_log, 30)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let contract = repo_root().join("contract");
        let run = |mut c: Command, what: &str| {
            let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(
                out.status.success(),
                "{what} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let mut c = psql_cmd("postgres");
        c.args(["-c", &format!("create database {DB_NAME}")]);
        run(c, "create database");
        let mut c = psql_cmd(DB_NAME);
        c.arg("-f").arg(contract.join("schema.sql"));
        run(c, "schema.sql");
        let t_seed = Instant::now();
        let mut c = psql_cmd(DB_NAME);
        c.args(["-v", "seed=1", "-f"])
            .arg(contract.join("seed.sql"));
        run(c, "seed.sql");
        eprintln!(
            "postgres pid {} on 127.0.0.1:{} ({}), seeded in {:.1} s",
            env.pg.as_ref().unwrap().pid(),
            env.pg_port,
            pg_bin.display(),
            t_seed.elapsed().as_secs_f64()
        );

        // go-pgx
        let server = dir.join("go-pgx-server");
        let t_build = Instant::now();
        let out = Command::new(&go)
            .args(["build", "-trimpath", "-o"])
            .arg(&server)
            .arg(".")
            .current_dir(repo_root().join("stacks/go-pgx"))
            .output()
            .expect("go build");
        assert!(
            out.status.success(),
            "go build of stacks/go-pgx failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        env.go_port = free_port();
        let go_log = dir.join("go-pgx.log");
        let mut cmd = Command::new(&server);
        cmd.env("HTTP_PORT", env.go_port.to_string())
            .env("DB_HOST", "127.0.0.1")
            .env("DB_PORT", env.pg_port.to_string())
            .env("DB_NAME", DB_NAME)
            .env("DB_USER", "postgres")
            .env("DB_PASSWORD", "")
            .env("DB_POOL_SIZE", "64")
            .env("WORKERS", "2")
            .env("GOMAXPROCS", "2")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&go_log).unwrap());
        env.go = Some(Proc::spawn("go-pgx", cmd, libc::SIGTERM, libc::SIGTERM));
        let t0 = Instant::now();
        loop {
            if let Some((200, _)) = http_get(("127.0.0.1", env.go_port), "/health") {
                break;
            }
            if let Some(st) = env.go.as_mut().unwrap().exited() {
                panic!("go-pgx exited ({st}):\n{}", tail(&go_log, 30));
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "go-pgx not healthy in 60 s:\n{}",
                tail(&go_log, 30)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "go-pgx pid {} on 127.0.0.1:{} (built in {:.1} s)",
            env.go.as_ref().unwrap().pid(),
            env.go_port,
            t_build.elapsed().as_secs_f64()
        );
        Ok(env)
    }

    pub fn go_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.go_port)
    }

    pub fn db(&self) -> ceiling_verify::DbConfig {
        ceiling_verify::DbConfig {
            host: "127.0.0.1".into(),
            port: self.pg_port,
            user: "postgres".into(),
            password: String::new(),
            dbname: DB_NAME.into(),
        }
    }

    /// Is go-pgx still running (the fixtures proxy to it)?
    pub fn go_alive(&mut self) -> bool {
        self.go.as_mut().is_some_and(|p| p.exited().is_none())
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(mut go) = self.go.take() {
            go.stop();
        }
        if let Some(mut pg) = self.pg.take() {
            pg.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
