//! SQL through `psql`: connection settings, the benchmark data (a seeded template database reused
//! across runs, a fresh copy per stack), id CSV export, and `pg_stat_statements`.
//!
//! `psql` is used instead of a driver so the seed runs exactly as the contract says
//! (`psql -v seed=N -f seed.sql`) and the API stays synchronous and runtime-free.

use crate::error::{PgError, Result};
use ceiling_supervise::process;
use ceiling_supervise::IoContext;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Name of the benchmark role and database.
pub const BENCH: &str = "bench";
/// Password of the benchmark role.
pub const BENCH_PASSWORD: &str = "bench";
/// Name of the seeded template database every stack's `bench` is copied from.
pub const TEMPLATE_DB: &str = "bench_seed";

/// How to connect to PostgreSQL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DbConfig {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Role.
    pub user: String,
    /// Password (never serialized).
    #[serde(skip)]
    pub password: String,
    /// Database.
    pub dbname: String,
}

impl DbConfig {
    /// Parses `postgres://user:password@host:port/dbname` (also `postgresql://`; percent-escapes
    /// are decoded; query parameters are ignored; port defaults to 5432, database to the user).
    pub fn from_url(url: &str) -> Result<DbConfig> {
        let bad = |m: &str| PgError::DbUrl {
            url: mask(url),
            message: m.to_string(),
        };
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .ok_or_else(|| bad("must start with postgres:// or postgresql://"))?;
        let rest = rest.split(['?', '#']).next().unwrap_or("");
        let (auth_host, db) = match rest.split_once('/') {
            Some((a, d)) => (a, d),
            None => (rest, ""),
        };
        let (auth, hostport) = match auth_host.rsplit_once('@') {
            Some((a, h)) => (Some(a), h),
            None => (None, auth_host),
        };
        let (user, password) = match auth {
            Some(a) => match a.split_once(':') {
                Some((u, p)) => (pct_decode(u), pct_decode(p)),
                None => (pct_decode(a), String::new()),
            },
            None => (
                std::env::var("USER").unwrap_or_else(|_| "postgres".into()),
                String::new(),
            ),
        };
        let (host, port) = if let Some(h) = hostport.strip_prefix('[') {
            let (h, rest) = h.split_once(']').ok_or_else(|| bad("unclosed [ in host"))?;
            (h.to_string(), rest.strip_prefix(':').unwrap_or(""))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p),
                None => (hostport.to_string(), ""),
            }
        };
        let port = if port.is_empty() {
            5432
        } else {
            port.parse().map_err(|_| bad("port is not a number"))?
        };
        let host = if host.is_empty() {
            "127.0.0.1".to_string()
        } else {
            pct_decode(&host)
        };
        if user.is_empty() {
            return Err(bad("no user"));
        }
        let dbname = if db.is_empty() {
            user.clone()
        } else {
            pct_decode(db)
        };
        Ok(DbConfig {
            host,
            port,
            user,
            password,
            dbname,
        })
    }

    /// `postgres://user:***@host:port/db` (password masked) for logs and reports.
    pub fn display_url(&self) -> String {
        format!(
            "postgres://{}:***@{}:{}/{}",
            self.user, self.host, self.port, self.dbname
        )
    }

    /// The same server and role, another database.
    pub fn with_db(&self, dbname: &str) -> DbConfig {
        DbConfig {
            dbname: dbname.to_string(),
            ..self.clone()
        }
    }

    /// The same server, another role.
    pub fn with_user(&self, user: &str, password: &str) -> DbConfig {
        DbConfig {
            user: user.to_string(),
            password: password.to_string(),
            ..self.clone()
        }
    }
}

fn mask(url: &str) -> String {
    // hide the password between "://user:" and "@"
    if let Some(at) = url.rfind('@') {
        if let Some(scheme) = url.find("://") {
            let auth = &url[scheme + 3..at];
            if let Some(c) = auth.find(':') {
                return format!("{}{}:***{}", &url[..scheme + 3], &auth[..c], &url[at..]);
            }
        }
    }
    url.to_string()
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Finds `psql`: next to `near` (a server bin dir), then `/usr/lib/postgresql/*/bin` (newest
/// first), then PATH.
pub fn find_psql(near: Option<&Path>) -> Result<PathBuf> {
    find_pg_tool(
        "psql",
        near,
        "install the PostgreSQL client (Debian/Ubuntu: apt-get install postgresql-client)",
    )
}

/// Finds one of PostgreSQL's client programs (`psql`, `pgbench`, …): next to `near` (a server
/// bin dir), then `/usr/lib/postgresql/*/bin` (newest major first), then PATH. `hint` says what
/// to install when it is nowhere.
pub fn find_pg_tool(name: &str, near: Option<&Path>, hint: &str) -> Result<PathBuf> {
    if let Some(d) = near {
        let p = d.join(name);
        if process::is_executable(&p) {
            return Ok(p);
        }
    }
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut v: Vec<(u32, PathBuf)> = rd
            .flatten()
            .filter_map(|e| {
                Some((
                    e.file_name().to_str()?.parse().ok()?,
                    e.path().join("bin").join(name),
                ))
            })
            .filter(|(_, p)| process::is_executable(p))
            .collect();
        v.sort();
        if let Some((_, p)) = v.pop() {
            return Ok(p);
        }
    }
    process::which(name).ok_or_else(|| PgError::PgNotFound(format!("`{name}` not found: {hint}")))
}

/// A connection config plus the `psql` that talks to it. Each call runs one short `psql`.
#[derive(Debug, Clone)]
pub struct Db {
    /// Where to connect.
    pub config: DbConfig,
    /// The psql binary.
    pub psql: PathBuf,
}

impl Db {
    /// A handle; nothing is connected until a query runs.
    pub fn new(config: DbConfig, psql: PathBuf) -> Db {
        Db { config, psql }
    }

    /// The same server and role, another database.
    pub fn on(&self, dbname: &str) -> Db {
        Db {
            config: self.config.with_db(dbname),
            psql: self.psql.clone(),
        }
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new(&self.psql);
        c.args(["-X", "-q", "-w", "-v", "ON_ERROR_STOP=1"])
            .arg("-h")
            .arg(&self.config.host)
            .arg("-p")
            .arg(self.config.port.to_string())
            .arg("-U")
            .arg(&self.config.user)
            .arg("-d")
            .arg(&self.config.dbname)
            .env("PGPASSWORD", &self.config.password)
            .env("PGCONNECT_TIMEOUT", "10")
            .env("PGAPPNAME", "ceiling-stand")
            .env_remove("PGOPTIONS")
            .env_remove("PGSERVICE")
            .env_remove("PGSERVICEFILE")
            .env_remove("PSQLRC")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Runs one `psql` to completion — in its own process group, so a terminal's Ctrl-C reaches
    /// ceiling alone — and stops it (SIGTERM, SIGKILL after 1 s) the moment the run is cancelled:
    /// the seeding is one long `psql`. Output is read on two threads so a chatty psql never
    /// blocks on a full pipe.
    fn run(&self, what: &str, mut c: Command, stdin: Option<&str>) -> Result<String> {
        use std::io::Read;
        use std::os::unix::process::CommandExt;
        c.process_group(0);
        let mut child = c
            .spawn()
            .ctx(|| format!("running {}", self.psql.display()))?;
        let reader = |r: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                if let Some(mut r) = r {
                    let _ = r.read_to_end(&mut buf);
                }
                buf
            })
        };
        let out_t = reader(
            child
                .stdout
                .take()
                .map(|x| Box::new(x) as Box<dyn Read + Send>),
        );
        let err_t = reader(
            child
                .stderr
                .take()
                .map(|x| Box::new(x) as Box<dyn Read + Send>),
        );
        {
            let mut si = child.stdin.take();
            if let (Some(s), Some(text)) = (si.as_mut(), stdin) {
                use std::io::Write;
                let _ = s.write_all(text.as_bytes());
            }
        }
        let mut pause = Duration::from_millis(1);
        let status = loop {
            if let Some(st) = child
                .try_wait()
                .ctx(|| format!("waiting for psql ({what})"))?
            {
                break st;
            }
            if ceiling_supervise::cancelled() {
                stop_child(&mut child);
                let _ = (out_t.join(), err_t.join());
                return Err(PgError::cancelled(format!(
                    "running SQL ({what}); psql was stopped"
                )));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        };
        let stdout = out_t.join().unwrap_or_default();
        let stderr = err_t.join().unwrap_or_default();
        if !status.success() {
            return Err(PgError::Sql {
                what: format!("{what} on {}", self.config.display_url()),
                stderr: String::from_utf8_lossy(&stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&stdout).into_owned())
    }

    /// Runs SQL (one or more statements) and discards results.
    pub fn exec(&self, sql: &str) -> Result<()> {
        let c = self.cmd();
        self.run(&short(sql), c, Some(sql)).map(|_| ())
    }

    /// Runs one query and returns its rows as text fields (NULL → empty string).
    pub fn query(&self, sql: &str) -> Result<Vec<Vec<String>>> {
        let mut c = self.cmd();
        c.args(["--csv", "-t"]);
        let out = self.run(&short(sql), c, Some(sql))?;
        let mut rdr = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(out.as_bytes());
        let mut rows = Vec::new();
        for r in rdr.records() {
            let r = r.map_err(|e| {
                PgError::other(format!("parsing psql output of `{}`: {e}", short(sql)))
            })?;
            rows.push(r.iter().map(|s| s.to_string()).collect());
        }
        Ok(rows)
    }

    /// The first column of the first row, if any.
    pub fn query_one(&self, sql: &str) -> Result<Option<String>> {
        Ok(self
            .query(sql)?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next()))
    }

    /// Runs a SQL file with psql variables (`-v name=value`).
    pub fn exec_file(&self, path: &Path, vars: &[(&str, &str)]) -> Result<()> {
        let mut c = self.cmd();
        for (k, v) in vars {
            c.arg("-v").arg(format!("{k}={v}"));
        }
        c.arg("-f").arg(path);
        self.run(&path.display().to_string(), c, None).map(|_| ())
    }

    /// `server_version_num` (e.g. 150018).
    pub fn server_version_num(&self) -> Result<u32> {
        let v = self
            .query_one("show server_version_num")?
            .unwrap_or_default();
        v.trim()
            .parse()
            .map_err(|_| PgError::other(format!("unexpected server_version_num `{v}`")))
    }

    /// `SHOW server_version` (e.g. `15.18 (Debian 15.18-0+deb12u1)`).
    pub fn server_version(&self) -> Result<String> {
        Ok(self.query_one("show server_version")?.unwrap_or_default())
    }
}

/// SIGTERM to the child's process group (its own: see [`Db::run`]), SIGKILL after 1 s, reaped.
fn stop_child(child: &mut std::process::Child) {
    // the process group of a child we started in a group of its own
    let pgid = child.id();
    ceiling_supervise::sys::kill_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    ceiling_supervise::sys::kill_group(pgid, libc::SIGKILL);
    let _ = child.wait();
}

fn short(sql: &str) -> String {
    let s: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

/// SQL string literal.
pub fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// SQL identifier.
pub fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The benchmark data as prepared by [`prepare_data`].
#[derive(Debug, Clone, Serialize)]
pub struct DataSetup {
    /// The seed number (`psql -v seed=N`).
    pub seed: u64,
    /// sha256 over schema.sql, seed.sql and the seed: equal hash = reusable template.
    pub hash: String,
    /// True when the template database was already seeded with this hash and reused.
    pub reused: bool,
    /// Seconds spent seeding (0 when reused).
    pub seed_seconds: f64,
    /// Directory of the id CSV files (what `@data/` resolves to).
    pub data_dir: PathBuf,
    /// The CSV files written (or found up to date).
    pub files: Vec<PathBuf>,
    /// The template database name.
    pub template: String,
}

/// sha256 (hex) of schema + seed SQL and the seed number; names a seeded data set.
pub fn data_hash(schema_sql: &[u8], seed_sql: &[u8], seed: u64) -> String {
    let mut h = Sha256::new();
    h.update(b"ceiling-data-v1\0");
    h.update(schema_sql);
    h.update(b"\0");
    h.update(seed_sql);
    h.update(b"\0");
    h.update(seed.to_string().as_bytes());
    hex(&h.finalize())
}

/// Lower-case hex of bytes (hashes in file names and records).
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Ensures the `bench` role exists (LOGIN, password `bench`).
pub fn ensure_bench_role(admin: &Db) -> Result<()> {
    admin.exec(&format!(
        "do $$ begin if not exists (select from pg_roles where rolname = {r}) then create role {i} login password {p}; \
         else alter role {i} login password {p}; end if; end $$;",
        r = lit(BENCH),
        i = ident(BENCH),
        p = lit(BENCH_PASSWORD)
    ))
}

/// Prepares the benchmark data: role `bench`, template database `bench_seed` with
/// `contract/schema.sql` applied and `contract/seed.sql` run with `seed` (as role `bench`, which
/// owns the tables), vacuumed and frozen, stamped with [`data_hash`] — skipped entirely when the
/// stamp matches — and the id CSVs (`status_ids.csv`, `client_ids.csv`, `order_ids.csv`, header
/// `id`) exported into `data_root/seed-<seed>/`, also skipped when up to date. `admin` must be a
/// superuser (it creates the pg_stat_statements extension).
pub fn prepare_data(
    admin: &Db,
    contract_dir: &Path,
    seed: u64,
    data_root: &Path,
) -> Result<DataSetup> {
    let schema_path = contract_dir.join("schema.sql");
    let seed_path = contract_dir.join("seed.sql");
    let schema =
        std::fs::read(&schema_path).ctx(|| format!("reading {}", schema_path.display()))?;
    let seed_sql = std::fs::read(&seed_path).ctx(|| format!("reading {}", seed_path.display()))?;
    let hash = data_hash(&schema, &seed_sql, seed);
    let stamp = format!("ceiling-seed {hash}");
    let admin = admin.on("postgres");
    ensure_bench_role(&admin)?;
    let current = admin.query_one(&format!(
        "select shobj_description(oid, 'pg_database') from pg_database where datname = {}",
        lit(TEMPLATE_DB)
    ))?;
    let reused = current.as_deref() == Some(stamp.as_str());
    let mut seed_seconds = 0.0;
    if !reused {
        let t0 = Instant::now();
        drop_database(&admin, TEMPLATE_DB)?;
        admin.exec(&format!(
            "create database {} owner {} encoding 'UTF8' template template0",
            ident(TEMPLATE_DB),
            ident(BENCH)
        ))?;
        let tdb = admin.on(TEMPLATE_DB);
        tdb.exec("create extension if not exists pg_stat_statements")?;
        let bench = Db::new(
            tdb.config.with_user(BENCH, BENCH_PASSWORD),
            admin.psql.clone(),
        );
        bench.exec_file(&schema_path, &[])?;
        bench.exec_file(&seed_path, &[("seed", &seed.to_string())])?;
        // Set hint bits and the visibility map once, so every copy starts equally warm-able.
        tdb.exec("vacuum (freeze, analyze)")?;
        admin.exec(&format!(
            "comment on database {} is {}",
            ident(TEMPLATE_DB),
            lit(&stamp)
        ))?;
        seed_seconds = t0.elapsed().as_secs_f64();
    }
    // The CSVs.
    let data_dir = data_root.join(format!("seed-{seed}"));
    let files: Vec<PathBuf> = ["status_ids.csv", "client_ids.csv", "order_ids.csv"]
        .iter()
        .map(|f| data_dir.join(f))
        .collect();
    let hash_file = data_dir.join(".hash");
    let up_to_date = std::fs::read_to_string(&hash_file)
        .map(|h| h.trim() == hash)
        .unwrap_or(false)
        && files.iter().all(|f| f.exists());
    if !up_to_date {
        std::fs::create_dir_all(&data_dir).ctx(|| format!("creating {}", data_dir.display()))?;
        let _ = std::fs::remove_file(&hash_file);
        let tdb = admin.on(TEMPLATE_DB);
        for (file, table) in files.iter().zip(["status", "clients", "orders"]) {
            let tmp = file.with_extension("csv.tmp");
            tdb.exec(&format!(
                "\\copy (select id from {table} order by id) to {} with (format csv, header)",
                lit(&tmp.display().to_string())
            ))?;
            std::fs::rename(&tmp, file).ctx(|| format!("renaming {}", tmp.display()))?;
        }
        std::fs::write(&hash_file, &hash).ctx(|| format!("writing {}", hash_file.display()))?;
    }
    Ok(DataSetup {
        seed,
        hash,
        reused,
        seed_seconds,
        data_dir,
        files,
        template: TEMPLATE_DB.into(),
    })
}

/// Terminates connections to `db` and drops it if it exists.
pub fn drop_database(admin: &Db, db: &str) -> Result<()> {
    let admin = admin.on("postgres");
    let exists = admin
        .query_one(&format!(
            "select 1 from pg_database where datname = {}",
            lit(db)
        ))?
        .is_some();
    if !exists {
        return Ok(());
    }
    // no new connections (a stack's pool may try to reconnect), then end the existing ones
    let _ = admin.exec(&format!(
        "alter database {} with allow_connections false",
        ident(db)
    ));
    admin.exec(&format!(
        "select pg_terminate_backend(pid) from pg_stat_activity where datname = {} and pid <> pg_backend_pid()",
        lit(db)
    ))?;
    let force = admin
        .server_version_num()
        .map(|v| v >= 130000)
        .unwrap_or(false);
    let sql = if force {
        format!("drop database if exists {} with (force)", ident(db))
    } else {
        format!("drop database if exists {}", ident(db))
    };
    let mut last = None;
    for _ in 0..20 {
        match admin.exec(&sql) {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    Err(last.unwrap())
}

/// Gives the next stack a fresh `bench` database: drops the old one (terminating leftover
/// connections) and copies it from the seeded template (`STRATEGY FILE_COPY` on 15+, a
/// file-level copy that takes about a second). Returns the stack's connection settings
/// (role `bench`, database `bench`).
pub fn reset_bench_db(admin: &Db) -> Result<DbConfig> {
    let admin = admin.on("postgres");
    drop_database(&admin, BENCH)?;
    // The template must have no connections while it is copied.
    admin.exec(&format!(
        "select pg_terminate_backend(pid) from pg_stat_activity where datname = {} and pid <> pg_backend_pid()",
        lit(TEMPLATE_DB)
    ))?;
    let v = admin.server_version_num()?;
    let strategy = if v >= 150000 {
        " strategy = file_copy"
    } else {
        ""
    };
    admin.exec(&format!(
        "create database {} template {} owner {}{strategy}",
        ident(BENCH),
        ident(TEMPLATE_DB),
        ident(BENCH)
    ))?;
    Ok(admin.config.with_user(BENCH, BENCH_PASSWORD).with_db(BENCH))
}

/// One row of `pg_stat_statements`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatementStat {
    /// Normalised statement text (`$1` placeholders).
    pub query: String,
    /// Times executed.
    pub calls: u64,
    /// Total execution time, ms.
    pub total_exec_time_ms: f64,
    /// Rows returned or affected.
    pub rows: u64,
    /// Database the statement ran in.
    pub dbname: String,
    /// Role that ran it.
    pub user: String,
}

/// Money conservation in the bank tables of the `bench` database, from the audit table that
/// `contract/schema.sql`'s trigger fills (`Ok(None)` when the database has no such table).
pub fn money_check(admin: &Db) -> Result<Option<ceiling_metrics::MoneyCheck>> {
    let db = admin.on(BENCH);
    let has = db.query_one("select to_regclass('public.client_openings') is not null")?;
    if has.as_deref() != Some("t") {
        return Ok(None);
    }
    let rows = db.query(
        "with t_in as (select to_id as id, sum(amount) as s from transfers group by to_id),               t_out as (select from_id as id, sum(amount) as s from transfers group by from_id)          select (select count(*) from clients),                 (select count(*) from client_openings where not seeded),                 (select count(*) from transfers),                 (select coalesce(sum(balance), 0) from clients),                 (select coalesce(sum(o.balance), 0) from client_openings o join clients c using (id)),                 (select count(*) from clients where balance < 0),                 (select count(*) from clients c join client_openings o using (id)                    left join t_in using (id) left join t_out using (id)                    where c.balance <> o.balance + coalesce(t_in.s, 0) - coalesce(t_out.s, 0)),                 (select count(*) from clients c left join client_openings o using (id) where o.id is null)",
    )?;
    let r = rows
        .first()
        .filter(|r| r.len() >= 8)
        .ok_or_else(|| PgError::Sql {
            what: "money check".into(),
            stderr: "no result row".into(),
        })?;
    let bad = |i: usize, e: String| PgError::Sql {
        what: "money check".into(),
        stderr: format!("column {i} `{}`: {e}", r[i]),
    };
    let u = |i: usize| -> Result<u64> { r[i].trim().parse().map_err(|e| bad(i, format!("{e}"))) };
    let s = |i: usize| -> Result<i64> { r[i].trim().parse().map_err(|e| bad(i, format!("{e}"))) };
    Ok(Some(ceiling_metrics::MoneyCheck {
        clients: u(0)?,
        created: u(1)?,
        transfers: u(2)?,
        sum_balances: s(3)?,
        sum_openings: s(4)?,
        negative: u(5)?,
        inconsistent: u(6)?,
        unaudited: u(7)?,
    }))
}

/// Resets `pg_stat_statements` (all databases). `admin` must be a superuser connected to a
/// database with the extension (the stand's `bench` and `bench_seed` have it).
pub fn stat_statements_reset(admin: &Db) -> Result<()> {
    admin.exec("select pg_stat_statements_reset()")
}

/// Snapshot of `pg_stat_statements`, optionally only statements run by role `user` (e.g.
/// `bench`, to leave out the stand's own queries). Ordered by calls, descending.
pub fn stat_statements_snapshot(admin: &Db, user: Option<&str>) -> Result<Vec<StatementStat>> {
    let v = admin.server_version_num()?;
    let time_col = if v >= 130000 {
        "s.total_exec_time"
    } else {
        "s.total_time"
    };
    let filter = match user {
        Some(u) => format!("where r.rolname = {}", lit(u)),
        None => String::new(),
    };
    let rows = admin.query(&format!(
        "select s.query, s.calls, {time_col}, s.rows, coalesce(d.datname, ''), coalesce(r.rolname, '') \
         from pg_stat_statements s left join pg_database d on d.oid = s.dbid left join pg_roles r on r.oid = s.userid \
         {filter} order by s.calls desc, s.query"
    ))?;
    Ok(rows
        .into_iter()
        .filter(|r| r.len() >= 6)
        .map(|r| StatementStat {
            query: r[0].clone(),
            calls: r[1].parse().unwrap_or(0),
            total_exec_time_ms: r[2].parse().unwrap_or(0.0),
            rows: r[3].parse().unwrap_or(0),
            dbname: r[4].clone(),
            user: r[5].clone(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let c = DbConfig::from_url("postgres://bench:p%40ss@db.example:6543/bench?sslmode=disable")
            .unwrap();
        assert_eq!(
            c,
            DbConfig {
                host: "db.example".into(),
                port: 6543,
                user: "bench".into(),
                password: "p@ss".into(),
                dbname: "bench".into()
            }
        );
        let c = DbConfig::from_url("postgresql://u@localhost").unwrap();
        assert_eq!(
            (c.port, c.dbname.as_str(), c.password.as_str()),
            (5432, "u", "")
        );
        let c = DbConfig::from_url("postgres://u:p@[::1]:5433/x").unwrap();
        assert_eq!((c.host.as_str(), c.port), ("::1", 5433));
        let e = DbConfig::from_url("mysql://u:secret@h/x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("postgres://") && !e.contains("secret"), "{e}");
        let e = DbConfig::from_url("postgres://u:secret@h:abc/x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("port") && !e.contains("secret"), "{e}");
        assert_eq!(c.display_url(), "postgres://u:***@::1:5433/x");
    }

    #[test]
    fn hash_changes_with_inputs() {
        let a = data_hash(b"schema", b"seed", 1);
        assert_eq!(a.len(), 64);
        assert_eq!(a, data_hash(b"schema", b"seed", 1));
        assert_ne!(a, data_hash(b"schema", b"seed", 2));
        assert_ne!(a, data_hash(b"schema2", b"seed", 1));
        assert_ne!(a, data_hash(b"schema", b"seed2", 1));
        // boundaries matter
        assert_ne!(data_hash(b"ab", b"c", 1), data_hash(b"a", b"bc", 1));
    }

    #[test]
    fn quoting() {
        assert_eq!(lit("it's"), "'it''s'");
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(short("select   1\n from x"), "select 1 from x");
    }
}
