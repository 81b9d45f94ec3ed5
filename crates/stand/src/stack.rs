//! Reference stacks: `stack.toml` parsing and validation, cached builds, start/health/stop.

use crate::error::{Result, StandError};
pub use ceiling_metrics::Fairness;
use ceiling_pg::free_port;
use ceiling_pg::{hex, DbConfig};
use ceiling_plan::StandSettings;
use ceiling_supervise::cgroup::{Cgroup, CgroupSystem, Limits, LimitsApplied, Role};
use ceiling_supervise::process::{self, log_tail, Managed, SpawnSpec, StopReport};
use ceiling_supervise::IoContext;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// A validated `stack.toml` (format: `stacks/README.md`).
#[derive(Debug, Clone, Serialize)]
pub struct StackSpec {
    /// Stack name (equals its folder name).
    pub name: String,
    /// One line about the stack.
    pub description: String,
    /// Source benchmark(s) it reproduces.
    pub source: Option<String>,
    /// The stack's folder.
    pub dir: PathBuf,
    /// The `stack.toml` file.
    pub file: PathBuf,
    /// How to build it (`None`: nothing to build).
    pub build: Option<BuildSpec>,
    /// How to run it.
    pub run: RunSpec,
    /// Fairness knobs.
    pub settings: StackSettings,
    /// Default resource limits.
    pub limits: StackLimits,
    /// Free-form notes (recorded in run.json).
    pub notes: serde_json::Value,
    /// A partial contract (a baseline such as static nginx); `None`: the whole contract.
    pub conformance: Option<Conformance>,
    /// The settings that decide a fair comparison (`None` only for a partial-contract baseline).
    pub fairness: Option<Fairness>,
    /// `[database]`: the stack's own change to the contract's schema, applied on every fresh copy
    /// of the data before it starts (`None`: the contract's schema as it is).
    pub database: Option<DatabaseSetup>,
}

/// `[database]`: SQL a stack runs on its fresh copy of the data before it starts — how an
/// as-published stack reproduces a source's schema flaw (source 001's missing index) without
/// changing the contract's schema for every other stack. Applied by [`crate::Stand::fresh_db_for`]
/// as the stand's superuser, for `ceiling verify`'s copy and the measured one alike, and recorded
/// in run.json and the report as a warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSetup {
    /// The SQL file, relative to the stack's folder.
    pub setup_sql: String,
    /// Why the stack changes the schema (shown wherever its results are).
    pub reason: String,
}

impl DatabaseSetup {
    /// `<file> (<reason>)`, as consoles and run.json say it.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.setup_sql, self.reason)
    }
}

/// The `[fairness]` tables of `specs` side by side as Markdown (docs/fairness.md), one row per
/// stack, partial-contract baselines without a table listed as such.
pub fn fairness_markdown(specs: &[StackSpec]) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::from(
        "# Fairness, stack by stack\n\n\
         Generated from each `stacks/*/stack.toml` `[fairness]` table (and `[settings]`) by\n\
         `CEILING_BLESS=1 cargo test -p ceiling-stand --test fairness`; the test fails when this file\n\
         and the stack.toml files disagree. `ceiling verify` (and every `ceiling run`) measures the\n\
         two columns marked ✓ on the running stack: the connections in `pg_stat_activity` at start-up\n\
         and under a burst of twice the pool, and the requests one keep-alive connection serves. The\n\
         other columns are declared by the stack's author and reviewed, not measured.\n\n\
         | stack | pool | opened at start ✓ | keep-alive limit ✓ | DB timeout | request timing | JSON | runtime | GC / heap | log level |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in specs {
        match &s.fairness {
            Some(f) => out.push_str(&format!(
                "| {} | {} over {} worker(s) | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                s.name,
                s.settings.pool_size,
                s.settings.workers,
                cell(&f.pool_open_at_start),
                if f.keep_alive_max_requests == 0 {
                    "none".to_string()
                } else {
                    f.keep_alive_max_requests.to_string()
                },
                cell(&f.db_timeout),
                cell(&f.request_timing),
                cell(&f.json),
                cell(&f.runtime),
                cell(&f.gc_heap),
                cell(&f.log_level),
            )),
            None => out.push_str(&format!(
                "| {} | — (partial-contract baseline: {}) | | | | | | | | |\n",
                s.name,
                cell(
                    &s.conformance
                        .as_ref()
                        .map(|c| c.reason.clone())
                        .unwrap_or_default()
                )
            )),
        }
    }
    out
}

/// `[conformance]`: a stack that by design serves only part of the contract (a baseline such as
/// nginx returning static JSON) names the conformance cases it must pass and why. Runs verify
/// those cases only and record the stack as a PARTIAL-CONTRACT baseline in run.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conformance {
    /// Case names (`group/name`) or groups, as `ceiling verify --only` takes them.
    pub only: Vec<String>,
    /// Why the stack serves only these (shown wherever its results are).
    pub reason: String,
}

impl Conformance {
    /// `only <cases> (<reason>)`, as consoles and run.json say it.
    pub fn describe(&self) -> String {
        format!("only {} ({})", self.only.join(", "), self.reason)
    }
}

/// `[build]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSpec {
    /// Binaries that must be on PATH.
    #[serde(default)]
    pub requires: Vec<String>,
    /// The build command, run in the stack folder.
    pub command: Vec<String>,
    /// Build output directories (relative), excluded from the source hash.
    #[serde(default)]
    pub outputs: Vec<String>,
    /// Extra paths outside the folder (relative to it, e.g. `../spring-common`) whose files are
    /// part of the source hash.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// What the build produces to deploy (relative paths: `["target/app.jar"]`, a binary, or a
    /// thin JAR and its `libs` directory); their size is recorded with every run (source 003
    /// compared fat-JAR sizes). A directory counts every file under it.
    #[serde(default)]
    pub artifact: Vec<String>,
}

/// `[run]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// The command, run in the stack folder.
    pub command: Vec<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Health path polled until 200.
    #[serde(default = "default_health")]
    pub health: String,
    /// Seconds to wait for health.
    #[serde(default = "default_startup")]
    pub startup_timeout_s: u64,
    /// The stack can serve HTTPS beside its plain port: given `TLS_PORT`, `TLS_CERT_FILE` and
    /// `TLS_KEY_FILE`, it listens there with the same handler (a plan's `[stand] tls = true`).
    #[serde(default)]
    pub tls: bool,
}

fn default_health() -> String {
    "/health".into()
}
fn default_startup() -> u64 {
    60
}

/// `[settings]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackSettings {
    /// → `DB_POOL_SIZE`.
    pub pool_size: u32,
    /// → `WORKERS`.
    pub workers: u32,
}

/// `[limits]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackLimits {
    /// CPU cores.
    pub cpus: Option<f64>,
    /// Memory, MiB.
    pub memory_mb: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStack {
    name: String,
    #[serde(default)]
    description: String,
    source: Option<toml::Value>,
    build: Option<BuildSpec>,
    run: RunSpec,
    settings: StackSettings,
    #[serde(default)]
    limits: StackLimits,
    #[serde(default)]
    notes: Option<toml::Value>,
    #[serde(default)]
    conformance: Option<Conformance>,
    #[serde(default)]
    fairness: Option<Fairness>,
    #[serde(default)]
    database: Option<DatabaseSetup>,
}

impl StackSpec {
    /// Loads `stacks_dir/<name>/stack.toml`.
    pub fn load(stacks_dir: &Path, name: &str) -> Result<StackSpec> {
        let dir = stacks_dir.join(name);
        let file = dir.join("stack.toml");
        if !file.exists() {
            let known = list_stacks(stacks_dir).join(", ");
            return Err(StandError::StackToml {
                file,
                field: "-".into(),
                message: format!("no such stack `{name}` (stacks with a stack.toml: {known})"),
            });
        }
        Self::parse_file(&file)
    }

    /// Parses and validates a `stack.toml` (its folder is the stack's folder).
    pub fn parse_file(file: &Path) -> Result<StackSpec> {
        let text = std::fs::read_to_string(file).map_err(|e| StandError::StackToml {
            file: file.to_path_buf(),
            field: "-".into(),
            message: format!("cannot read: {e}"),
        })?;
        let dir = file
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| PathBuf::from("."));
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        Self::parse_str(&text, file, &dir)
    }

    /// Parses and validates `stack.toml` text; `file` is used in errors, `dir` is the stack folder.
    pub fn parse_str(text: &str, file: &Path, dir: &Path) -> Result<StackSpec> {
        let err = |field: &str, message: String| StandError::StackToml {
            file: file.to_path_buf(),
            field: field.into(),
            message,
        };
        let raw: RawStack = toml::from_str(text).map_err(|e| {
            let msg = e.message().to_string();
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
            let field = field_from_toml_error(&msg, text, e.span());
            err(
                &field,
                match line {
                    Some(l) => format!("line {l}: {msg}"),
                    None => msg,
                },
            )
        })?;
        let folder = dir
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if raw.name != folder {
            return Err(err(
                "name",
                format!("`{}` must equal the folder name `{folder}`", raw.name),
            ));
        }
        if raw.run.command.is_empty() || raw.run.command[0].trim().is_empty() {
            return Err(err(
                "run.command",
                "must be a non-empty list, e.g. [\"./target/server\"]".into(),
            ));
        }
        if !raw.run.health.starts_with('/') {
            return Err(err(
                "run.health",
                format!("`{}` must be a path starting with /", raw.run.health),
            ));
        }
        if raw.run.startup_timeout_s == 0 || raw.run.startup_timeout_s > 3600 {
            return Err(err(
                "run.startup_timeout_s",
                "must be between 1 and 3600".into(),
            ));
        }
        for k in raw.run.env.keys() {
            if k.is_empty() || k.contains('=') || k.contains('\0') {
                return Err(err(
                    &format!("run.env.{k}"),
                    "not a valid environment variable name".into(),
                ));
            }
            if CONTRACT_ENV.contains(&k.as_str()) {
                return Err(err(
                    &format!("run.env.{k}"),
                    format!("{k} is set by the stand (env contract); use [settings] instead"),
                ));
            }
        }
        if let Some(b) = &raw.build {
            if b.command.is_empty() || b.command[0].trim().is_empty() {
                return Err(err("build.command", "must be a non-empty list".into()));
            }
            for o in &b.outputs {
                if !inside_folder(o) {
                    return Err(err(
                        "build.outputs",
                        format!("`{o}` must be a relative path inside the stack folder"),
                    ));
                }
            }
            for a in &b.artifact {
                // `..` is allowed: a variant deploys the JAR its base stack built
                if a.is_empty() || Path::new(a).is_absolute() {
                    return Err(err(
                        "build.artifact",
                        format!("`{a}` must be a path relative to the stack folder"),
                    ));
                }
            }
            for t in &b.requires {
                if t.is_empty() || t.contains(char::is_whitespace) {
                    return Err(err("build.requires", format!("`{t}` is not a binary name")));
                }
            }
        }
        if raw.settings.pool_size == 0 {
            return Err(err("settings.pool_size", "must be at least 1".into()));
        }
        if raw.settings.workers == 0 {
            return Err(err("settings.workers", "must be at least 1".into()));
        }
        if let Some(c) = raw.limits.cpus {
            if !(0.01..=1024.0).contains(&c) {
                return Err(err(
                    "limits.cpus",
                    format!("{c} must be between 0.01 and 1024"),
                ));
            }
        }
        if let Some(m) = raw.limits.memory_mb {
            if m < 16 {
                return Err(err("limits.memory_mb", format!("{m} must be at least 16")));
            }
        }
        let source = match raw.source {
            None => None,
            Some(toml::Value::String(s)) => Some(s),
            Some(toml::Value::Array(a)) => Some(
                a.iter()
                    .map(|v| {
                        v.as_str()
                            .map(|s| s.to_string())
                            .unwrap_or_else(|| v.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            Some(v) => Some(v.to_string()),
        };
        if let Some(c) = &raw.conformance {
            if c.only.is_empty() || c.only.iter().any(|x| x.trim().is_empty()) {
                return Err(err(
                    "conformance.only",
                    "must list at least one case or group, e.g. [\"ping/ping\"]".into(),
                ));
            }
            if c.reason.trim().is_empty() {
                return Err(err(
                    "conformance.reason",
                    "say why this stack serves only part of the contract".into(),
                ));
            }
        }
        if let Some(d) = &raw.database {
            let f = Path::new(&d.setup_sql);
            if d.setup_sql.trim().is_empty() || !inside_folder(&d.setup_sql) {
                return Err(err(
                    "database.setup_sql",
                    format!(
                        "`{}` must be a file inside the stack folder, e.g. \"schema.sql\"",
                        d.setup_sql
                    ),
                ));
            }
            if !dir.join(f).is_file() {
                return Err(err(
                    "database.setup_sql",
                    format!("{} does not exist", dir.join(f).display()),
                ));
            }
            if d.reason.trim().is_empty() {
                return Err(err(
                    "database.reason",
                    "say why this stack changes the contract's schema".into(),
                ));
            }
        }
        match (&raw.fairness, &raw.conformance) {
            (Some(f), _) => {
                f.open_at_start(raw.settings.pool_size, raw.settings.workers)
                    .map_err(|m| err("fairness.pool_open_at_start", m))?;
            }
            (None, None) => {
                return Err(err(
                    "fairness",
                    "missing: a stack that serves the whole contract declares its [fairness] table (see stacks/README.md)".into(),
                ))
            }
            (None, Some(_)) => {}
        }
        let notes = raw
            .notes
            .map(|n| serde_json::to_value(n).unwrap_or(serde_json::Value::Null))
            .unwrap_or(serde_json::Value::Null);
        Ok(StackSpec {
            name: raw.name,
            description: raw.description,
            source,
            dir: dir.to_path_buf(),
            file: file.to_path_buf(),
            build: raw.build,
            run: raw.run,
            settings: raw.settings,
            limits: raw.limits,
            notes,
            conformance: raw.conformance,
            fairness: raw.fairness,
            database: raw.database,
        })
    }

    /// Pool size, workers and limits after the plan's overrides.
    pub fn effective(&self, plan: &StandSettings) -> Effective {
        Effective {
            pool_size: plan.pool_size.unwrap_or(self.settings.pool_size),
            workers: plan.workers.unwrap_or(self.settings.workers),
            limits: Limits {
                cpus: plan.cpus.or(self.limits.cpus),
                memory_mb: if plan.memory_uncapped {
                    None
                } else {
                    plan.memory_mb.or(self.limits.memory_mb)
                },
                cpuset: None,
            },
        }
    }

    /// The text of `[database] setup_sql`, if the stack has one.
    pub fn setup_sql(&self) -> Result<Option<String>> {
        let Some(d) = &self.database else {
            return Ok(None);
        };
        let path = self.dir.join(&d.setup_sql);
        std::fs::read_to_string(&path)
            .map(Some)
            .map_err(|e| StandError::StackToml {
                file: self.file.clone(),
                field: "database.setup_sql".into(),
                message: format!("cannot read {}: {e}", path.display()),
            })
    }

    /// Checks `build.requires` (and a bare `run.command[0]`) are on PATH.
    pub fn check_requires(&self) -> Result<()> {
        if let Some(b) = &self.build {
            for t in &b.requires {
                if process::which(t).is_none() {
                    return Err(StandError::MissingTool {
                        stack: self.name.clone(),
                        tool: t.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// True for a relative path that stays inside the stack folder (not empty, not absolute, no `..`).
fn inside_folder(p: &str) -> bool {
    !p.is_empty() && !Path::new(p).is_absolute() && !p.split('/').any(|c| c == "..")
}

/// The env contract variables the stand sets; `run.env` (and a plan's `[stand.env]`) may not
/// override them.
pub use ceiling_plan::CONTRACT_ENV;

/// Best effort: which field a toml/serde error is about.
fn field_from_toml_error(msg: &str, text: &str, span: Option<std::ops::Range<usize>>) -> String {
    if let Some(rest) = msg.strip_prefix("missing field `") {
        if let Some(f) = rest.split('`').next() {
            // which table are we in? the span points at the table
            let table = span.and_then(|s| table_at(text, s.start));
            return match table {
                Some(t) => format!("{t}.{f}"),
                None => f.to_string(),
            };
        }
    }
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        if let Some(f) = rest.split('`').next() {
            let table = span.and_then(|s| table_at(text, s.start));
            return match table {
                Some(t) => format!("{t}.{f}"),
                None => f.to_string(),
            };
        }
    }
    match span.and_then(|s| key_at(text, s.start)) {
        Some(k) => k,
        None => "-".into(),
    }
}

/// The `[table]` header in force at byte offset `pos`.
fn table_at(text: &str, pos: usize) -> Option<String> {
    let mut table = None;
    let mut off = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') && !t.starts_with("[[") {
            if off > pos {
                break;
            }
            table = t
                .trim_start_matches('[')
                .split(']')
                .next()
                .map(|s| s.trim().to_string());
        }
        off += line.len();
        if off > pos && table.is_some() && !line.trim().starts_with('[') {
            break;
        }
    }
    table
}

/// `table.key` of the line at byte offset `pos`.
fn key_at(text: &str, pos: usize) -> Option<String> {
    let mut off = 0;
    let mut table: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            table = t
                .trim_start_matches('[')
                .split(']')
                .next()
                .map(|s| s.trim().to_string());
        }
        if pos < off + line.len() {
            let key = t.split('=').next()?.trim();
            if key.is_empty() || key.starts_with('[') {
                return table;
            }
            return Some(match table {
                Some(tb) => format!("{tb}.{key}"),
                None => key.to_string(),
            });
        }
        off += line.len();
    }
    None
}

/// Settings for one run of a stack after plan overrides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effective {
    /// `DB_POOL_SIZE`.
    pub pool_size: u32,
    /// `WORKERS`.
    pub workers: u32,
    /// cgroup limits.
    pub limits: Limits,
}

/// Names of the folders under `stacks_dir` that have a `stack.toml`, sorted.
pub fn list_stacks(stacks_dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(stacks_dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().join("stack.toml").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

// ---------------------------------------------------------------- build

/// Directory names never part of a stack's source hash (dependency caches, build trees, VCS).
pub const HASH_EXCLUDES: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".gradle",
    ".idea",
    ".vscode",
    ".ceiling",
    ".tox",
    "zig-cache",
    ".zig-cache",
    ".next",
    ".cache",
];

/// sha256 (hex) over the stack's source files (relative path, exec bit, content; symlinks by
/// target), the build command and `requires`, plus `build.inputs`. Excludes `build.outputs`,
/// [`HASH_EXCLUDES`] and `*.log` files.
pub fn source_hash(spec: &StackSpec) -> Result<String> {
    let mut h = Sha256::new();
    h.update(b"ceiling-build-v1\0");
    let (outputs, inputs, cmd) = match &spec.build {
        Some(b) => (
            b.outputs.clone(),
            b.inputs.clone(),
            serde_json::to_string(&(&b.command, &b.requires)).unwrap_or_default(),
        ),
        None => (Vec::new(), Vec::new(), String::new()),
    };
    h.update(cmd.as_bytes());
    h.update(b"\0");
    let outputs: Vec<PathBuf> = outputs
        .iter()
        .map(|o| PathBuf::from(o.trim_end_matches('/')))
        .collect();
    hash_tree(&mut h, &spec.dir, Path::new(""), &outputs)?;
    for i in &inputs {
        h.update(format!("input:{i}\0").as_bytes());
        let p = spec.dir.join(i);
        if p.is_dir() {
            hash_tree(&mut h, &p, Path::new(""), &[])?;
        } else if p.is_file() {
            h.update(std::fs::read(&p).ctx(|| format!("reading {}", p.display()))?);
        }
    }
    Ok(hex(&h.finalize()))
}

fn hash_tree(h: &mut Sha256, root: &Path, rel: &Path, outputs: &[PathBuf]) -> Result<()> {
    let dir = root.join(rel);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .ctx(|| format!("reading {}", dir.display()))?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let name_s = name.to_string_lossy();
        let r = rel.join(&name);
        if HASH_EXCLUDES.contains(&name_s.as_ref()) || outputs.contains(&r) {
            continue;
        }
        // stack.toml describes the stack; what in it builds (the command, the tools) is hashed
        // by the caller, so a new flag, note or fairness line does not rebuild
        if rel.as_os_str().is_empty() && name_s == "stack.toml" {
            continue;
        }
        let ft = e
            .file_type()
            .ctx(|| format!("stat {}", e.path().display()))?;
        if ft.is_symlink() {
            let t = std::fs::read_link(e.path()).unwrap_or_default();
            h.update(format!("L {}\0{}\0", r.display(), t.display()).as_bytes());
        } else if ft.is_dir() {
            hash_tree(h, root, &r, outputs)?;
        } else if ft.is_file() {
            if name_s.ends_with(".log") {
                continue;
            }
            use std::os::unix::fs::PermissionsExt;
            let exec = e
                .metadata()
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false);
            let data = std::fs::read(e.path()).ctx(|| format!("reading {}", e.path().display()))?;
            h.update(format!("F {} {} {}\0", r.display(), exec as u8, data.len()).as_bytes());
            h.update(&data);
        }
    }
    Ok(())
}

/// What a build did.
#[derive(Debug, Clone, Serialize)]
pub struct BuildOutcome {
    /// True when the cached build was up to date and nothing ran.
    pub skipped: bool,
    /// The source hash.
    pub hash: String,
    /// The build log (`None` when skipped or there is no build).
    pub log: Option<PathBuf>,
    /// Build time, seconds.
    pub seconds: f64,
}

/// Builds the stack with its `build.command` in its folder, unless the source hash equals the
/// one stored in `<cache_dir>/builds/<name>.hash` after the last successful build (and every
/// `build.outputs` path exists), or `force`. Output goes to `log`. Checks `build.requires` first.
pub fn build_stack(
    spec: &StackSpec,
    cache_dir: &Path,
    log: &Path,
    force: bool,
) -> Result<BuildOutcome> {
    let Some(b) = &spec.build else {
        return Ok(BuildOutcome {
            skipped: true,
            hash: String::new(),
            log: None,
            seconds: 0.0,
        });
    };
    spec.check_requires()?;
    let hash = source_hash(spec)?;
    let hash_file = cache_dir.join("builds").join(format!("{}.hash", spec.name));
    let cached = std::fs::read_to_string(&hash_file)
        .map(|s| s.trim() == hash)
        .unwrap_or(false);
    let outputs_exist = b.outputs.iter().all(|o| spec.dir.join(o).exists());
    if cached && outputs_exist && !force {
        return Ok(BuildOutcome {
            skipped: true,
            hash,
            log: None,
            seconds: 0.0,
        });
    }
    let _ = std::fs::remove_file(&hash_file);
    let _ = std::fs::remove_file(log);
    let t0 = Instant::now();
    let program =
        resolve_program(&b.command[0], &spec.dir).ok_or_else(|| StandError::MissingTool {
            stack: spec.name.clone(),
            tool: b.command[0].clone(),
        })?;
    if let Some(p) = log.parent() {
        std::fs::create_dir_all(p).ctx(|| format!("creating {}", p.display()))?;
    }
    let _ = std::fs::write(
        log,
        format!(
            "--- ceiling: building {} in {}: {:?}\n",
            spec.name,
            spec.dir.display(),
            b.command
        ),
    );
    let sp = SpawnSpec {
        label: format!("build {}", spec.name),
        program,
        args: b.command[1..].to_vec(),
        cwd: Some(spec.dir.clone()),
        log: log.to_path_buf(),
        term_signal: libc::SIGTERM,
        term_group: true,
        ..Default::default()
    };
    let mut m = Managed::spawn(&sp)?;
    let Some(st) = m.wait_or_cancel(Duration::from_millis(500)) else {
        return Err(StandError::cancelled(format!(
            "building {} (its build was stopped)",
            spec.name
        )));
    };
    if !st.success() {
        return Err(StandError::Build {
            stack: spec.name.clone(),
            status: process::describe_status(st),
            log: log.to_path_buf(),
            log_tail: log_tail(log, 40),
        });
    }
    if let Some(missing) = b.outputs.iter().find(|o| !spec.dir.join(o).exists()) {
        return Err(StandError::Build {
            stack: spec.name.clone(),
            status: format!("succeeded but build.outputs `{missing}` does not exist"),
            log: log.to_path_buf(),
            log_tail: log_tail(log, 20),
        });
    }
    std::fs::create_dir_all(hash_file.parent().unwrap())
        .ctx(|| "creating builds cache dir".into())?;
    std::fs::write(&hash_file, &hash).ctx(|| format!("writing {}", hash_file.display()))?;
    Ok(BuildOutcome {
        skipped: false,
        hash,
        log: Some(log.to_path_buf()),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// `./x` and `dir/x` resolve against the stack folder, bare names against PATH.
fn resolve_program(p: &str, dir: &Path) -> Option<PathBuf> {
    if p.contains('/') {
        let path = if Path::new(p).is_absolute() {
            PathBuf::from(p)
        } else {
            dir.join(p)
        };
        Some(path)
    } else {
        process::which(p)
    }
}

// ---------------------------------------------------------------- run

/// How to start one stack.
#[derive(Debug, Clone)]
pub struct StackLaunch {
    /// Database the stack uses (role `bench`, database `bench`).
    pub db: DbConfig,
    /// `DB_POOL_SIZE`.
    pub pool_size: u32,
    /// `WORKERS`.
    pub workers: u32,
    /// cgroup limits (cpuset optional).
    pub limits: Limits,
    /// `HTTP_PORT`; `None` = a free port.
    pub port: Option<u16>,
    /// stdout+stderr of the stack.
    pub log: PathBuf,
    /// Additional environment (after `run.env`; cannot override the env contract).
    pub extra_env: Vec<(String, String)>,
    /// Health wait; `None` = `run.startup_timeout_s`.
    pub startup_timeout: Option<Duration>,
    /// Grace between SIGTERM and SIGKILL at stop.
    pub stop_grace: Duration,
    /// Serve HTTPS too, with this certificate (PEM files; `TLS_PORT` is a free port).
    pub tls: Option<TlsFiles>,
}

/// A certificate and its key, PEM files, for a stack's TLS port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate (self-signed: it is also what the load generator trusts).
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

impl TlsFiles {
    /// Makes a throwaway self-signed certificate for `localhost` in `dir` (cert.pem, key.pem);
    /// the paths returned are absolute.
    pub fn make(dir: &Path) -> Result<TlsFiles> {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
            .map_err(std::io::Error::other)
            .ctx(|| "making the stand's TLS certificate".to_string())?;
        std::fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
        // absolute: the stack runs in its own folder, where a relative path means something else
        let dir = &dir
            .canonicalize()
            .ctx(|| format!("resolving {}", dir.display()))?;
        let files = TlsFiles {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        std::fs::write(&files.cert, ck.cert.pem())
            .ctx(|| format!("writing {}", files.cert.display()))?;
        std::fs::write(&files.key, ck.key_pair.serialize_pem())
            .ctx(|| format!("writing {}", files.key.display()))?;
        Ok(files)
    }
}

impl StackLaunch {
    /// Launch settings from the stack's `stack.toml` and the plan's overrides; the plan's
    /// `[stand.env]` goes into `extra_env` (so it wins over the stack's `run.env`).
    pub fn new(spec: &StackSpec, plan: &StandSettings, db: DbConfig, log: PathBuf) -> StackLaunch {
        let e = spec.effective(plan);
        StackLaunch {
            db,
            pool_size: e.pool_size,
            workers: e.workers,
            limits: e.limits,
            port: None,
            log,
            extra_env: plan
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            startup_timeout: None,
            stop_grace: Duration::from_secs(10),
            tls: None,
        }
    }
}

/// A started, healthy stack. Stopped by [`RunningStack::stop`] or on drop (SIGTERM to its process
/// group, SIGKILL after the grace period, cgroup removed).
#[derive(Debug)]
pub struct RunningStack {
    name: String,
    port: u16,
    /// The HTTPS port and its certificate, when the stack serves TLS too.
    tls: Option<(u16, TlsFiles)>,
    health: String,
    proc: Managed,
    cgroup: Option<Cgroup>,
    limits: LimitsApplied,
    env: Vec<(String, String)>,
    grace: Duration,
    startup: Duration,
}

/// Starts a stack: checks `run.command[0]` exists, sets the env contract, puts the process into a
/// cgroup with the launch limits (it joins before exec), logs to `launch.log`, and waits until
/// the health path answers 200. On failure or early exit the process is stopped and the error
/// carries the log tail.
pub fn start_stack(
    spec: &StackSpec,
    launch: &StackLaunch,
    cgroups: &CgroupSystem,
) -> Result<RunningStack> {
    let program = resolve_program(&spec.run.command[0], &spec.dir)
        .filter(|p| process::is_executable(p))
        .ok_or_else(|| StandError::Start {
            stack: spec.name.clone(),
            message: format!(
                "run.command[0] `{}` is not an executable{} (was the stack built?)",
                spec.run.command[0],
                if spec.run.command[0].contains('/') {
                    " in the stack folder"
                } else {
                    " on PATH"
                }
            ),
            log: launch.log.clone(),
            log_tail: String::new(),
        })?;
    let port = match launch.port {
        Some(p) => p,
        None => free_port()?,
    };
    let tls = match &launch.tls {
        None => None,
        Some(_) if !spec.run.tls => {
            return Err(StandError::Start {
                stack: spec.name.clone(),
                message: "the plan asks for TLS (`[stand] tls = true`) but this stack does not \
                          serve it: its stack.toml has no `[run] tls = true` (go-pgx does)"
                    .into(),
                log: launch.log.clone(),
                log_tail: String::new(),
            })
        }
        Some(files) => Some((free_port()?, files.clone())),
    };
    let mut env: Vec<(String, String)> = vec![
        ("HTTP_PORT".into(), port.to_string()),
        ("DB_HOST".into(), launch.db.host.clone()),
        ("DB_PORT".into(), launch.db.port.to_string()),
        ("DB_NAME".into(), launch.db.dbname.clone()),
        ("DB_USER".into(), launch.db.user.clone()),
        ("DB_PASSWORD".into(), launch.db.password.clone()),
        ("DB_POOL_SIZE".into(), launch.pool_size.to_string()),
        ("WORKERS".into(), launch.workers.to_string()),
    ];
    if let Some((p, files)) = &tls {
        env.push(("TLS_PORT".into(), p.to_string()));
        env.push(("TLS_CERT_FILE".into(), files.cert.display().to_string()));
        env.push(("TLS_KEY_FILE".into(), files.key.display().to_string()));
    }
    for (k, v) in spec
        .run
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain(launch.extra_env.iter().cloned())
    {
        if !CONTRACT_ENV.contains(&k.as_str()) {
            env.retain(|(k2, _)| *k2 != k);
            env.push((k, v));
        }
    }
    let (cgroup, mut limits) = cgroups.create(Role::Stack, &spec.name, &launch.limits);
    let affinity = ceiling_supervise::affinity_fallback(&launch.limits, &mut limits);
    if let Some(p) = launch.log.parent() {
        std::fs::create_dir_all(p).ctx(|| format!("creating {}", p.display()))?;
    }
    let shown: Vec<String> = env
        .iter()
        .map(|(k, v)| {
            if k == "DB_PASSWORD" {
                format!("{k}=***")
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    let _ = std::fs::write(
        &launch.log,
        format!(
            "--- ceiling: starting {} in {}: {:?}\n--- env: {}\n--- limits: {}\n",
            spec.name,
            spec.dir.display(),
            spec.run.command,
            shown.join(" "),
            limits.summary()
        ),
    );
    let sp = SpawnSpec {
        label: format!("stack {}", spec.name),
        program,
        args: spec.run.command[1..].to_vec(),
        cwd: Some(spec.dir.clone()),
        env: env.clone(),
        env_remove: Vec::new(),
        log: launch.log.clone(),
        cgroup_procs: cgroup.as_ref().map(|c| c.procs_files()).unwrap_or_default(),
        affinity,
        user: None,
        term_signal: libc::SIGTERM,
        term_group: true,
    };
    let proc = Managed::spawn(&sp)?;
    let startup = launch
        .startup_timeout
        .unwrap_or(Duration::from_secs(spec.run.startup_timeout_s));
    let mut rs = RunningStack {
        name: spec.name.clone(),
        port,
        tls,
        health: spec.run.health.clone(),
        proc,
        cgroup,
        limits,
        env: env
            .into_iter()
            .map(|(k, v)| {
                if k == "DB_PASSWORD" {
                    (k, "***".into())
                } else {
                    (k, v)
                }
            })
            .collect(),
        grace: launch.stop_grace,
        startup,
    };
    if let Err(e) = rs.wait_healthy(startup) {
        rs.stop();
        return Err(e);
    }
    if let Some(p) = rs.tls.as_ref().map(|(p, _)| *p) {
        // healthy on the plain port; the TLS listener starts beside it — wait until it accepts
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, p));
        let t0 = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if t0.elapsed() > Duration::from_secs(10) {
                let name = rs.name.clone();
                let log = launch.log.clone();
                rs.stop();
                return Err(StandError::Start {
                    stack: name,
                    message: format!("healthy, but nothing listens on its TLS_PORT {p} after 10 s"),
                    log_tail: String::new(),
                    log,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(rs)
}

/// One HTTP/1.1 GET on 127.0.0.1 (the workspace's one client, `ceiling_http`); returns the
/// status code.
pub fn http_status(port: u16, path: &str, timeout: Duration) -> Option<u16> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    ceiling_http::blocking::get(addr, path, &[], timeout)
        .ok()
        .map(|r| r.status)
}

impl RunningStack {
    /// Polls the health path until 200, failing early when the process exits.
    pub fn wait_healthy(&mut self, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        let mut last = None;
        loop {
            if ceiling_supervise::cancelled() {
                return Err(StandError::cancelled(format!(
                    "waiting for {} to become healthy",
                    self.name
                )));
            }
            if let Some(st) = self.proc.try_wait() {
                return Err(StandError::Start {
                    stack: self.name.clone(),
                    message: format!("exited during start-up ({})", process::describe_status(st)),
                    log: self.proc.log.clone(),
                    log_tail: self.log_tail(40),
                });
            }
            let code = http_status(self.port, &self.health, Duration::from_secs(2));
            if code == Some(200) {
                return Ok(());
            }
            if code.is_some() {
                last = code;
            }
            if start.elapsed() > timeout {
                return Err(StandError::Start {
                    stack: self.name.clone(),
                    message: format!(
                        "not healthy within {}s (GET {} on port {}: {})",
                        timeout.as_secs(),
                        self.health,
                        self.port,
                        last.map(|c| format!("last status {c}"))
                            .unwrap_or_else(|| "no HTTP answer".into())
                    ),
                    log: self.proc.log.clone(),
                    log_tail: self.log_tail(40),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The stack's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `HTTP_PORT`.
    pub fn port(&self) -> u16 {
        self.port
    }
    /// `http://127.0.0.1:<port>`: the plain port (health, the conformance suite).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
    /// Where the load goes: `https://localhost:<tls port>` when the stack serves TLS (its
    /// certificate is for `localhost`), else [`RunningStack::url`].
    pub fn load_url(&self) -> String {
        match &self.tls {
            Some((p, _)) => format!("https://localhost:{p}"),
            None => self.url(),
        }
    }
    /// The certificate of the stack's TLS port (what the generator must trust), if it has one.
    pub fn tls_cert(&self) -> Option<&Path> {
        self.tls.as_ref().map(|(_, f)| f.cert.as_path())
    }
    /// Pid of the started command (root of the measured process tree; its process group id).
    pub fn pid(&self) -> u32 {
        self.proc.pid
    }
    /// True while the started process runs (a crash mid-run turns this false).
    pub fn is_alive(&mut self) -> bool {
        self.proc.is_alive()
    }
    /// `exit N` / `signal N` once the process exited, else `None`.
    pub fn exit_status(&mut self) -> Option<String> {
        self.proc.try_wait().map(process::describe_status)
    }
    /// The raw exit status once the process exited.
    pub fn exit_status_raw(&mut self) -> Option<ExitStatus> {
        self.proc.try_wait()
    }
    /// Last `n` lines of the stack's log.
    pub fn log_tail(&self, n: usize) -> String {
        log_tail(&self.proc.log, n)
    }
    /// The log file.
    pub fn log_path(&self) -> &Path {
        &self.proc.log
    }
    /// Limits in force.
    pub fn limits_applied(&self) -> &LimitsApplied {
        &self.limits
    }
    /// The stack's cgroup, if any.
    pub fn cgroup(&self) -> Option<&Cgroup> {
        self.cgroup.as_ref()
    }
    /// The environment it was started with (password masked), for run.json.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }
    /// The health wait that was used.
    pub fn startup_timeout(&self) -> Duration {
        self.startup
    }
    /// A description of why the stack died, if it did: exit status, OOM kills, log tail.
    pub fn crash_report(&mut self) -> Option<String> {
        let st = self.exit_status()?;
        let oom = self
            .cgroup
            .as_ref()
            .and_then(|c| c.oom_kills())
            .filter(|n| *n > 0);
        Some(format!(
            "stack {} exited ({st}){}\n{}",
            self.name,
            oom.map(|n| format!(", {n} OOM kill(s) in its cgroup"))
                .unwrap_or_default(),
            self.log_tail(30)
        ))
    }
    /// SIGTERM to the process group, SIGKILL after the grace period, then the cgroup is emptied
    /// and removed. Idempotent.
    pub fn stop(&mut self) -> StopReport {
        let rep = self.proc.stop(self.grace);
        if let Some(mut cg) = self.cgroup.take() {
            cg.remove();
        }
        rep
    }
}

impl Drop for RunningStack {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_files_are_absolute_pem_files_for_localhost() {
        // a relative directory, as a run's log directory is (results/<id>/logs): the stack runs
        // in its own folder, so the paths it is given must not depend on the current directory
        let rel = format!("target/tls-test-{}", std::process::id());
        let f = TlsFiles::make(Path::new(&rel)).unwrap();
        assert!(f.cert.is_absolute() && f.key.is_absolute(), "{f:?}");
        let cert = std::fs::read_to_string(&f.cert).unwrap();
        let key = std::fs::read_to_string(&f.key).unwrap();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
        assert!(key.contains("PRIVATE KEY-----"));
        let _ = std::fs::remove_dir_all(&rel);
    }

    const GOOD: &str = r#"
name = "demo"
description = "d"
source = "000"

[build]
requires = ["sh"]
command = ["sh", "-c", "mkdir -p out && echo built > out/bin"]
outputs = ["out"]

[run]
command = ["./run.sh"]
env = { FOO = "1" }
health = "/health"
startup_timeout_s = 5

[settings]
pool_size = 8
workers = 2

[limits]
cpus = 1.5
memory_mb = 256

[notes]
text = "hi"

[fairness]
pool_open_at_start = "3 per worker"
keep_alive_max_requests = 0
db_timeout = "5 s"
request_timing = "none"
json = "sh"
runtime = "sh"
gc_heap = "n/a"
log_level = "warn"
"#;

    fn parse(t: &str) -> Result<StackSpec> {
        StackSpec::parse_str(t, Path::new("/x/demo/stack.toml"), Path::new("/x/demo"))
    }

    #[test]
    fn database_setup_names_a_file_in_the_folder_and_a_reason() {
        let root = std::env::temp_dir().join(format!("ceiling-stack-db-{}", std::process::id()));
        let dir = root.join("demo");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("flaw.sql"), "select 1;").unwrap();
        let with = |d: &str| {
            StackSpec::parse_str(
                &format!("{GOOD}\n[database]\n{d}\n"),
                &dir.join("stack.toml"),
                &dir,
            )
        };
        let s = with("setup_sql = \"flaw.sql\"\nreason = \"the source's flaw\"").unwrap();
        assert_eq!(s.setup_sql().unwrap().as_deref(), Some("select 1;"));
        assert_eq!(
            s.database.as_ref().unwrap().describe(),
            "flaw.sql (the source's flaw)"
        );
        assert!(parse(GOOD).unwrap().setup_sql().unwrap().is_none());
        for (d, want) in [
            (
                "setup_sql = \"missing.sql\"\nreason = \"r\"",
                "does not exist",
            ),
            (
                "setup_sql = \"/etc/hosts\"\nreason = \"r\"",
                "inside the stack folder",
            ),
            (
                "setup_sql = \"../demo/flaw.sql\"\nreason = \"r\"",
                "inside the stack folder",
            ),
            (
                "setup_sql = \"flaw.sql\"\nreason = \" \"",
                "database.reason",
            ),
            (
                "setup_sql = \"flaw.sql\"\nreason = \"r\"\nextra = 1",
                "extra",
            ),
        ] {
            let e = with(d).unwrap_err().to_string();
            assert!(e.contains(want), "{d}: {e}");
        }
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn parses_good() {
        let s = parse(GOOD).unwrap();
        assert_eq!(s.name, "demo");
        assert_eq!(s.run.env["FOO"], "1");
        assert_eq!(s.settings.pool_size, 8);
        assert_eq!(s.limits.cpus, Some(1.5));
        assert_eq!(s.notes["text"], "hi");
        let plan = ceiling_plan_defaults();
        let e = s.effective(&plan);
        assert_eq!(
            (e.pool_size, e.workers, e.limits.cpus, e.limits.memory_mb),
            (8, 2, Some(1.5), Some(256))
        );
        let mut plan2 = plan.clone();
        plan2.pool_size = Some(64);
        plan2.cpus = Some(2.0);
        let e = s.effective(&plan2);
        assert_eq!((e.pool_size, e.limits.cpus), (64, Some(2.0)));
    }

    #[test]
    fn fairness_is_declared_and_its_pool_text_understood() {
        let f = parse(GOOD).unwrap().fairness.unwrap();
        // pool 8 over 2 workers: 4 each, 3 of them opened at start
        assert_eq!(f.open_at_start(8, 2), Ok(Some(6)));
        // a worker's share smaller than the declared minimum opens its whole share
        assert_eq!(f.open_at_start(4, 2), Ok(Some(4)));
        let none = Fairness {
            pool_open_at_start: "no pool".into(),
            ..f.clone()
        };
        assert_eq!(none.open_at_start(64, 2), Ok(None));
        let all = Fairness {
            pool_open_at_start: "all".into(),
            ..f.clone()
        };
        assert_eq!(all.open_at_start(64, 2), Ok(Some(64)));
        let e = err_of(&GOOD.replace("\"3 per worker\"", "\"some\""));
        assert!(
            e.contains("fairness.pool_open_at_start") && e.contains("N per worker"),
            "{e}"
        );
        let start = GOOD.find("[fairness]").unwrap();
        let e = err_of(&GOOD[..start]);
        assert!(e.contains("fairness") && e.contains("missing"), "{e}");
        let e = err_of(&GOOD.replace("json = \"sh\"\n", ""));
        assert!(e.contains("json"), "{e}");
    }

    fn ceiling_plan_defaults() -> StandSettings {
        StandSettings {
            postgres_version: None,
            postgres_settings: Default::default(),
            seed: 1,
            pool_size: None,
            workers: None,
            cpus: None,
            memory_mb: None,
            memory_uncapped: false,
            postgres_cpus: None,
            cooldown: Duration::from_secs(0),
            verify: false,
            on_part_exit: Default::default(),
            placement: Default::default(),
            tls: false,
            env: Default::default(),
            pgbouncer: None,
        }
    }

    fn err_of(t: &str) -> String {
        parse(t).unwrap_err().to_string()
    }

    #[test]
    fn conformance_declares_a_partial_contract() {
        assert!(parse(GOOD).unwrap().conformance.is_none());
        let with = |body: &str| format!("{GOOD}\n[conformance]\n{body}\n");
        let c = parse(&with("only = [\"ping/ping\"]\nreason = \"a baseline\""))
            .unwrap()
            .conformance
            .unwrap();
        assert_eq!(c.only, vec!["ping/ping".to_string()]);
        let e = err_of(&with("only = []\nreason = \"a baseline\""));
        assert!(e.contains("conformance.only"), "{e}");
        let e = err_of(&with("only = [\"ping\"]\nreason = \" \""));
        assert!(e.contains("conformance.reason"), "{e}");
        let e = err_of(&with("only = [\"ping\"]"));
        assert!(e.contains("reason"), "{e}");
    }

    #[test]
    fn errors_name_file_and_field() {
        let e = err_of(&GOOD.replace("name = \"demo\"", "name = \"other\""));
        assert!(e.starts_with("/x/demo/stack.toml: name:"), "{e}");
        let e = err_of(&GOOD.replace("command = [\"./run.sh\"]", "command = []"));
        assert!(e.contains("run.command"), "{e}");
        let e = err_of(&GOOD.replace("pool_size = 8\n", ""));
        assert!(
            e.contains("settings.pool_size") && e.contains("missing field"),
            "{e}"
        );
        let e = err_of(&GOOD.replace("startup_timeout_s = 5", "startup_timeout = 5"));
        assert!(
            e.contains("run.startup_timeout") && e.contains("unknown field"),
            "{e}"
        );
        let e = err_of(&GOOD.replace("cpus = 1.5", "cpus = \"two\""));
        assert!(e.contains("limits.cpus"), "{e}");
        let e = err_of(&GOOD.replace("FOO = \"1\"", "HTTP_PORT = \"1\""));
        assert!(e.contains("run.env.HTTP_PORT"), "{e}");
        let e = err_of(&GOOD.replace("health = \"/health\"", "health = \"health\""));
        assert!(e.contains("run.health"), "{e}");
        let e = err_of(&GOOD.replace("outputs = [\"out\"]", "outputs = [\"../out\"]"));
        assert!(e.contains("build.outputs"), "{e}");
        let e = err_of("name = \"demo\"\n[run\n");
        assert!(e.contains("line"), "{e}");
        let e = err_of(&GOOD.replace("[settings]", "[setings]"));
        assert!(e.contains("setings") || e.contains("settings"), "{e}");
    }

    #[test]
    fn go_stack_toml_parses() {
        let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../stacks/go-pgx/stack.toml");
        if f.exists() {
            let s = StackSpec::parse_file(&f).unwrap();
            assert_eq!(s.name, "go-pgx");
            assert_eq!(s.build.unwrap().outputs, vec!["target"]);
        }
    }

    #[test]
    fn hash_excludes_outputs_and_caches() {
        let d = std::env::temp_dir()
            .join(format!("ceiling-hash-{}", std::process::id()))
            .join("demo");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::create_dir_all(d.join("out")).unwrap();
        std::fs::create_dir_all(d.join("node_modules/x")).unwrap();
        std::fs::write(d.join("stack.toml"), GOOD).unwrap();
        std::fs::write(d.join("src/main.c"), "int main(){}").unwrap();
        let s = StackSpec::parse_file(&d.join("stack.toml")).unwrap();
        let h1 = source_hash(&s).unwrap();
        std::fs::write(d.join("out/bin"), "x").unwrap();
        std::fs::write(d.join("node_modules/x/y.js"), "x").unwrap();
        std::fs::write(d.join("build.log"), "x").unwrap();
        assert_eq!(h1, source_hash(&s).unwrap());
        // stack.toml outside [build] (a run flag, a note) does not rebuild; its build command does
        std::fs::write(d.join("stack.toml"), format!("{GOOD}\n# a note\n")).unwrap();
        assert_eq!(h1, source_hash(&s).unwrap());
        let mut other = s.clone();
        other.build.as_mut().unwrap().command.push("-v".into());
        assert_ne!(h1, source_hash(&other).unwrap());
        std::fs::write(d.join("stack.toml"), GOOD).unwrap();
        std::fs::write(d.join("src/main.c"), "int main(){return 1;}").unwrap();
        let h2 = source_hash(&s).unwrap();
        assert_ne!(h1, h2);
        std::fs::rename(d.join("src/main.c"), d.join("src/other.c")).unwrap();
        assert_ne!(h2, source_hash(&s).unwrap());

        // build: runs once, then cached; outputs missing forces a rebuild
        let cache = d.parent().unwrap().join("cache");
        let log = cache.join("build.log");
        let _ = std::fs::remove_dir_all(d.join("out"));
        let b1 = build_stack(&s, &cache, &log, false).unwrap();
        assert!(!b1.skipped);
        assert!(d.join("out/bin").exists());
        let b2 = build_stack(&s, &cache, &log, false).unwrap();
        assert!(b2.skipped);
        std::fs::remove_dir_all(d.join("out")).unwrap();
        let b3 = build_stack(&s, &cache, &log, false).unwrap();
        assert!(!b3.skipped);
        assert!(build_stack(&s, &cache, &log, true)
            .map(|b| !b.skipped)
            .unwrap());

        // failing build: error names the stack and carries the log tail
        let mut bad = s.clone();
        bad.build.as_mut().unwrap().command =
            vec!["sh".into(), "-c".into(), "echo boom-marker; exit 3".into()];
        let e = build_stack(&bad, &cache, &log, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("exit 3") && e.contains("boom-marker"), "{e}");
        // missing tool
        bad.build.as_mut().unwrap().requires = vec!["no-such-tool-xyz".into()];
        let e = build_stack(&bad, &cache, &log, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("install no-such-tool-xyz"), "{e}");
        let _ = std::fs::remove_dir_all(d.parent().unwrap());
    }

    #[test]
    fn key_lookup() {
        let t = "a = 1\n[run]\ncommand = 5\n";
        let pos = t.find("command").unwrap();
        assert_eq!(key_at(t, pos).as_deref(), Some("run.command"));
        assert_eq!(table_at(t, pos).as_deref(), Some("run"));
    }
}
