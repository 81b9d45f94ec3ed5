//! The embedded stand: PostgreSQL, reference stacks under cgroup limits, resource sampling.
//!
//! Typical use by `ceiling run` (everything is synchronous; no async runtime needed):
//!
//! ```no_run
//! # use ceiling_stand::*;
//! # fn demo(plan: &ceiling_plan::Plan) -> Result<()> {
//! let opts = StandOptions::new(std::path::Path::new("."));
//! let mut stand = Stand::start(&opts, &plan.stand)?;           // Postgres (embedded or --db-url)
//! let data = stand.prepare_data(plan.stand.seed)?;             // template db + id CSVs (@data/)
//! for name in &plan.target.stacks {
//!     let spec = stand.load_stack(name)?;
//!     stand.build_stack(&spec, false)?;                        // cached by source hash
//!     let db = stand.reset_db()?;                              // fresh `bench` from the template
//!     let mut stack = stand.start_stack(&spec, &plan.stand, db)?; // env contract, cgroup, healthy
//!     println!("{}", stack.limits_applied().summary());
//!     let t0 = std::time::Instant::now();
//!     let (mut sampler, samples) = Sampler::with_channel(
//!         t0, std::time::Duration::from_secs(1),
//!         stand.sampler_targets(Some(&stack), Some(std::process::id())));
//!     // ... run load, check stack.is_alive() ...
//!     sampler.stop();
//!     stack.stop();
//! }
//! stand.stop();
//! # Ok(()) }
//! ```
//!
//! Cleanup: [`RunningStack`], [`EmbeddedPostgres`], [`Cgroup`] and [`Stand`] stop what they
//! started on drop; [`cleanup_all`] does the same for everything still registered;
//! [`sweep_stale`] (run by [`Stand::start`]) cleans up after a run that was SIGKILLed.
//!
//! Cancellation: [`install_signal_cleanup`] makes the first Ctrl-C cancel ([`cancelled`]): every
//! blocking step (build, initdb, PostgreSQL start-up, `psql`, health wait) stops its own child at
//! once and returns a cancelled [`StandError`] ([`StandError::is_cancelled`]); the second Ctrl-C runs [`cleanup_all`] and exits.

#![warn(missing_docs)]

// The stand's three parts, one way: process supervision (`ceiling-supervise`) ← PostgreSQL and
// PgBouncer (`ceiling-pg`) ← the stacks, the samplers and `Stand` (this crate). Their public items
// are re-exported here, so a caller needs only `ceiling_stand`.
pub mod control;
mod env;
mod error;
pub mod placement;
mod sampler;
pub mod signals;
mod stack;

pub use ceiling_pg::{
    check_pgbouncer_settings, data_hash, default_maven_version, drop_database, ensure_bench_role,
    find_pg_tool, find_pgbouncer, find_postgres, find_psql, free_port, ident, lit, lookup_user,
    parse_pg_version, parse_pgbouncer_version, pgbouncer_config_text, prepare_data, reset_bench_db,
    server_user, stat_statements_reset, stat_statements_snapshot, DataSetup, Db, DbConfig,
    EmbeddedPostgres, PgBinaries, PgBouncer, PgBouncerBinary, PgBouncerOptions, PgBouncerRecord,
    PgError, PgOptions, RunAs, StatementStat, BENCH, BENCH_PASSWORD, MAVEN_GROUP,
    MAX_PREPARED_STATEMENTS_SINCE, SUPERUSER, TEMPLATE_DB,
};
pub use ceiling_supervise::{
    cancel, cancel_flag, cancelled, cleanup_all, cpu_quota, describe_status, hostprobe,
    install_signal_cleanup, interrupted, limit_this_process, link, log_tail, parse_cpu_list,
    procfs, set_state_dir, sweep_stale, which, CgDir, Cgroup, CgroupSystem, CgroupVersion, Limits,
    LimitsApplied, Role, StopReport, SuperviseError,
};
pub use env::{fingerprint, Environment};
pub use error::{Result, StandError};
pub use sampler::{CgroupProbe, Measurer, SampleTarget, Sampler};
pub use signals::{SamplerCost, SignalConfig, SignalSampler};
pub use stack::{
    build_stack, fairness_markdown, http_status, list_stacks, source_hash, start_stack,
    BuildOutcome, BuildSpec, Conformance, DatabaseSetup, Effective, Fairness, RunSpec,
    RunningStack, StackLaunch, StackLimits, StackSettings, StackSpec, TlsFiles, CONTRACT_ENV,
    HASH_EXCLUDES,
};

pub use ceiling_metrics::Placement;
use ceiling_plan::StandSettings;

use std::path::{Path, PathBuf};

/// Where the stand keeps things and which database to use.
#[derive(Debug, Clone)]
pub struct StandOptions {
    /// Repository root: `contract/` and `stacks/` are found here.
    pub repo_root: PathBuf,
    /// Cache: PostgreSQL data (`pg/<major>`), fetched binaries (`pg-bin/`), id CSVs (`data/`),
    /// build hashes (`builds/`), the cleanup state (`run/`). Default `<repo_root>/.ceiling`.
    pub cache_dir: PathBuf,
    /// Where build and stack logs go (e.g. `results/<run-id>/logs`). Default `<cache_dir>/logs`.
    pub log_dir: PathBuf,
    /// `--pg-bin`: a directory with `postgres` and `initdb`.
    pub pg_bin: Option<PathBuf>,
    /// `--db-url`: use this existing server instead of starting one.
    pub db_url: Option<String>,
    /// Maven bundle version to fetch when the plan's major version is not installed.
    pub pg_maven_version: Option<String>,
    /// Pin PostgreSQL to these CPUs (cpuset list), if wanted.
    pub postgres_cpuset: Option<String>,
}

impl StandOptions {
    /// Defaults for a repository root.
    pub fn new(repo_root: &Path) -> StandOptions {
        let cache_dir = repo_root.join(".ceiling");
        StandOptions {
            repo_root: repo_root.to_path_buf(),
            log_dir: cache_dir.join("logs"),
            cache_dir,
            pg_bin: None,
            db_url: None,
            pg_maven_version: None,
            postgres_cpuset: None,
        }
    }
}

/// The whole stand for one run: PostgreSQL (embedded or external), PgBouncer in front of it when
/// the plan asks, the data, and the cgroup support; stacks are started from it one at a time.
/// Dropping it stops PgBouncer and PostgreSQL.
pub struct Stand {
    opts: StandOptions,
    cgroups: CgroupSystem,
    pg: Option<EmbeddedPostgres>,
    /// How the embedded server was started, to start it again after it died.
    pg_launch: Option<(PgBinaries, PgOptions)>,
    /// PgBouncer between the stacks and PostgreSQL (the plan's `[stand.pgbouncer]`).
    pgbouncer: Option<PgBouncer>,
    /// How PgBouncer was started, to start it again (after it or PostgreSQL died).
    pgb_launch: Option<(PgBouncerBinary, PgBouncerOptions)>,
    admin: Db,
    pg_version: String,
    data: Option<DataSetup>,
    swept: Vec<String>,
    /// Where the parts run (`stand.placement`).
    placement: Placement,
    /// The generator's (this process's) own CPU set, when the placement gives it one: kept while
    /// the stand lives; dropping it moves this process back.
    _generator_group: Option<Cgroup>,
    /// What was applied for the generator, when the placement gave it a CPU set.
    generator_limits: Option<LimitsApplied>,
    /// The throwaway certificate of the stacks' TLS ports (`stand.tls`), made on first need.
    tls_files: std::sync::Mutex<Option<TlsFiles>>,
}

impl Stand {
    /// Cleans up after killed earlier runs, then starts the embedded PostgreSQL (binaries per
    /// `settings.postgres_version`, settings `settings.postgres_settings`, CPU limit
    /// `settings.postgres_cpus`) or connects to `opts.db_url`, and PgBouncer in front of it when
    /// `settings.pgbouncer` asks (checked to be installed, and able to do what the plan asks,
    /// before PostgreSQL starts).
    pub fn start(opts: &StandOptions, settings: &StandSettings) -> Result<Stand> {
        let state = opts.cache_dir.join("run");
        let swept = sweep_stale(&state);
        set_state_dir(&state);
        let cgroups = CgroupSystem::detect();
        // The layout first: PostgreSQL and PgBouncer start on their CPU set, the generator (this
        // process) moves to its own, each stack starts on its own (`start_stack`).
        let placement = placement::place(
            &ceiling_supervise::sys::this_process_cpus(),
            settings.cpus,
            settings.placement,
            opts.db_url.is_none(),
        );
        let pgb_bin = match &settings.pgbouncer {
            Some(s) => {
                let bin = find_pgbouncer()?;
                check_pgbouncer_settings(&bin, s)?;
                Some(bin)
            }
            None => None,
        };
        let (pg, pg_launch, admin) = match &opts.db_url {
            Some(url) => {
                let cfg = DbConfig::from_url(url)?;
                let db = Db::new(cfg, find_psql(None)?);
                db.query("select 1")?;
                (None, None, db)
            }
            None => {
                let bins = find_postgres(
                    settings.postgres_version,
                    opts.pg_bin.as_deref(),
                    &opts.cache_dir,
                    opts.pg_maven_version.as_deref(),
                )?;
                let mut po = PgOptions::new(
                    &opts.cache_dir,
                    bins.major,
                    settings.postgres_settings.clone(),
                );
                po.limits = Limits {
                    cpus: settings.postgres_cpus,
                    memory_mb: None,
                    cpuset: opts
                        .postgres_cpuset
                        .clone()
                        .or_else(|| placement.postgres.clone()),
                };
                let pg = EmbeddedPostgres::start(&bins, &po, &cgroups)?;
                let admin = pg.admin();
                // so pg_stat_statements can be read from the admin database too
                let _ = admin.exec("create extension if not exists pg_stat_statements");
                (Some(pg), Some((bins, po)), admin)
            }
        };
        let pg_version = admin.server_version().unwrap_or_default();
        let pgb_launch = match (&settings.pgbouncer, pgb_bin) {
            (Some(s), Some(bin)) => {
                let mut po = PgBouncerOptions::new(
                    &opts.cache_dir,
                    s.clone(),
                    (admin.config.host.clone(), admin.config.port),
                );
                // PgBouncer works for PostgreSQL: it runs on PostgreSQL's CPUs
                po.limits.cpuset = placement.postgres.clone();
                Some((bin, po))
            }
            _ => None,
        };
        let pgbouncer = match &pgb_launch {
            Some((bin, po)) => Some(PgBouncer::start(bin, po, &cgroups)?),
            None => None,
        };
        let (generator_group, generator_limits) = match &placement.generator {
            Some(cpus) => {
                let want = Limits {
                    cpus: None,
                    memory_mb: None,
                    cpuset: Some(cpus.clone()),
                };
                let (g, la) = limit_this_process(&cgroups, Role::Generator, &want);
                (g, Some(la))
            }
            None => (None, None),
        };
        Ok(Stand {
            opts: opts.clone(),
            cgroups,
            pg,
            pg_launch,
            pgbouncer,
            pgb_launch,
            admin,
            pg_version,
            data: None,
            swept,
            _generator_group: generator_group,
            generator_limits,
            placement,
            tls_files: Default::default(),
        })
    }

    /// Where the parts run: CPU sets of their own, or shared (and why).
    pub fn placement(&self) -> &Placement {
        &self.placement
    }
    /// What was applied to put the generator (this process) on its CPU set, when the placement
    /// gave it one.
    pub fn generator_limits(&self) -> Option<&LimitsApplied> {
        self.generator_limits.as_ref()
    }

    /// PgBouncer, when the plan put it between the stacks and PostgreSQL.
    pub fn pgbouncer(&self) -> Option<&PgBouncer> {
        self.pgbouncer.as_ref()
    }
    /// How PgBouncer ended (`signal 9`, `exit 1`) if it has exited; `None` while it runs or when
    /// there is none. One `waitpid(WNOHANG)`, so it can be called every second while measuring.
    pub fn pgbouncer_exited(&mut self) -> Option<String> {
        self.pgbouncer.as_mut().and_then(PgBouncer::exit_status)
    }
    /// The limits record of PgBouncer's process (accounted, not limited), when there is one.
    pub fn pgbouncer_limits(&self) -> Option<&LimitsApplied> {
        self.pgbouncer.as_ref().map(|p| p.limits_applied())
    }
    /// Starts PgBouncer again (after it exited, or after PostgreSQL moved to a new port): what is
    /// left of the old one is stopped, a new one starts against the current PostgreSQL, on a new
    /// port (start stacks afresh). Returns the old one's log tail; `Ok("")` when the plan has no
    /// PgBouncer.
    pub fn restart_pgbouncer(&mut self) -> Result<String> {
        let Some((bin, mut po)) = self.pgb_launch.clone() else {
            return Ok(String::new());
        };
        let mut tail = String::new();
        if let Some(mut old) = self.pgbouncer.take() {
            tail = old.log_tail(20);
            old.stop();
        }
        po.server = (self.admin.config.host.clone(), self.admin.config.port);
        let pgb = PgBouncer::start(&bin, &po, &self.cgroups)?;
        self.pgb_launch = Some((bin, po));
        self.pgbouncer = Some(pgb);
        if self.data.is_some() {
            self.check_pgbouncer()?;
        }
        Ok(tail)
    }
    /// A query as role `bench` through PgBouncer (database `postgres`), once the role exists.
    fn check_pgbouncer(&self) -> Result<()> {
        match &self.pgbouncer {
            Some(b) => Ok(b.check(&self.admin.psql, "postgres")?),
            None => Ok(()),
        }
    }

    /// The options in use.
    pub fn options(&self) -> &StandOptions {
        &self.opts
    }
    /// What [`sweep_stale`] cleaned up at start (leftovers of killed runs), for the console.
    pub fn swept(&self) -> &[String] {
        &self.swept
    }
    /// A superuser handle (embedded) or the `--db-url` connection.
    pub fn admin(&self) -> &Db {
        &self.admin
    }
    /// The embedded server, if the stand started one.
    pub fn postgres(&self) -> Option<&EmbeddedPostgres> {
        self.pg.as_ref()
    }
    /// Mutable access to the embedded server (e.g. `is_alive`).
    pub fn postgres_mut(&mut self) -> Option<&mut EmbeddedPostgres> {
        self.pg.as_mut()
    }
    /// `SHOW server_version`.
    pub fn postgres_version(&self) -> &str {
        &self.pg_version
    }
    /// How the embedded PostgreSQL ended (`signal 9`, `exit 1`) if it has exited; `None` while it
    /// runs, and always for an external server (`--db-url`: not ours to supervise). One
    /// `waitpid(WNOHANG)`, so it can be called every second while measuring.
    pub fn postgres_exited(&mut self) -> Option<String> {
        self.pg.as_mut().and_then(EmbeddedPostgres::exit_status)
    }

    /// Starts the embedded PostgreSQL again after it exited (or stops and restarts a running
    /// one): what is left of the old server is stopped (its backends, its cgroup), a new one
    /// starts on the same data directory with the same settings (crash recovery runs first) — on
    /// a new port, so take [`Stand::admin`] and [`Stand::reset_db`] afresh — and the data is
    /// checked again ([`Stand::prepare_data`], reused when intact); PgBouncer, if any, is
    /// restarted against the new port. Returns the old server's log tail.
    pub fn restart_postgres(&mut self) -> Result<String> {
        let Some((bins, po)) = self.pg_launch.clone() else {
            return Err(StandError::other(
                "PostgreSQL is external (--db-url): ceiling cannot restart it",
            ));
        };
        let mut tail = String::new();
        if let Some(mut old) = self.pg.take() {
            tail = old.log_tail(20);
            old.stop_within(std::time::Duration::from_secs(5));
            drop(old); // releases the data directory's lock
        }
        let pg = EmbeddedPostgres::start(&bins, &po, &self.cgroups)?;
        self.admin = pg.admin();
        let _ = self
            .admin
            .exec("create extension if not exists pg_stat_statements");
        self.pg = Some(pg);
        // PostgreSQL listens on a new port: PgBouncer must point at it (before the data check,
        // which also queries through PgBouncer)
        if self.pgb_launch.is_some() {
            self.restart_pgbouncer()?;
        }
        if let Some(d) = &self.data {
            let seed = d.seed;
            self.prepare_data(seed)?;
        }
        Ok(tail)
    }

    /// The limits applied to PostgreSQL (embedded only).
    pub fn postgres_limits(&self) -> Option<&LimitsApplied> {
        self.pg.as_ref().map(|p| p.limits_applied())
    }
    /// cgroup support on this machine.
    pub fn cgroups(&self) -> &CgroupSystem {
        &self.cgroups
    }
    /// `contract/` under the repo root.
    pub fn contract_dir(&self) -> PathBuf {
        self.opts.repo_root.join("contract")
    }
    /// `stacks/` under the repo root.
    pub fn stacks_dir(&self) -> PathBuf {
        self.opts.repo_root.join("stacks")
    }

    /// Seeds (or reuses) the template database and exports the id CSVs; see [`prepare_data`].
    pub fn prepare_data(&mut self, seed: u64) -> Result<DataSetup> {
        let d = prepare_data(
            &self.admin,
            &self.contract_dir(),
            seed,
            &self.opts.cache_dir.join("data"),
        )?;
        self.data = Some(d.clone());
        // the role `bench` exists now: prove the stacks' way through PgBouncer works
        self.check_pgbouncer()?;
        Ok(d)
    }
    /// The directory `@data/` resolves to, once [`Stand::prepare_data`] ran.
    pub fn data_dir(&self) -> Option<&Path> {
        self.data.as_ref().map(|d| d.data_dir.as_path())
    }
    /// A fresh `bench` database copied from the template; returns the stack's connection.
    pub fn reset_db(&self) -> Result<DbConfig> {
        Ok(reset_bench_db(&self.admin)?)
    }
    /// A fresh `bench` database for `spec`: [`Stand::reset_db`], then the stack's own
    /// `[database] setup_sql` (if any) run on the copy as the stand's superuser, so a schema change
    /// one stack declares never reaches another's data.
    pub fn fresh_db_for(&self, spec: &StackSpec) -> Result<DbConfig> {
        let db = self.reset_db()?;
        if let Some(sql) = spec.setup_sql()? {
            self.admin
                .on(&db.dbname)
                .exec(&sql)
                .map_err(|e| StandError::StackToml {
                    file: spec.file.clone(),
                    field: "database.setup_sql".into(),
                    message: format!("running it on the fresh copy of the data failed: {e}"),
                })?;
        }
        Ok(db)
    }
    /// Loads `stacks/<name>/stack.toml`.
    pub fn load_stack(&self, name: &str) -> Result<StackSpec> {
        StackSpec::load(&self.stacks_dir(), name)
    }
    /// Builds (or skips, when cached) a stack; log in `<log_dir>/<name>.build.log`.
    pub fn build_stack(&self, spec: &StackSpec, force: bool) -> Result<BuildOutcome> {
        build_stack(
            spec,
            &self.opts.cache_dir,
            &self.opts.log_dir.join(format!("{}.build.log", spec.name)),
            force,
        )
    }
    /// Starts a stack with the plan's overrides (pool size, workers, limits, `[stand.env]`)
    /// against `db` — through PgBouncer when the stand has one ([`Stand::stack_db`]); log in
    /// `<log_dir>/<name>.log`. Use [`start_stack`] with a [`StackLaunch`] for full control (port,
    /// cpuset, extra env).
    pub fn start_stack(
        &self,
        spec: &StackSpec,
        settings: &StandSettings,
        db: DbConfig,
    ) -> Result<RunningStack> {
        let mut launch = StackLaunch::new(
            spec,
            settings,
            self.stack_db(&db),
            self.opts.log_dir.join(format!("{}.log", spec.name)),
        );
        launch.limits.cpuset = self.placement.stack.clone();
        if settings.tls {
            launch.tls = Some(self.tls_files()?);
        }
        start_stack(spec, &launch, &self.cgroups)
    }

    /// The stand's TLS certificate for `localhost` (made once, in the log directory's `tls/`).
    fn tls_files(&self) -> Result<TlsFiles> {
        let mut made = self
            .tls_files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(f) = made.as_ref() {
            return Ok(f.clone());
        }
        let f = TlsFiles::make(&self.opts.log_dir.join("tls"))?;
        *made = Some(f.clone());
        Ok(f)
    }
    /// How a stack reaches `db`: through PgBouncer (its host and port; same role, password and
    /// database) when the stand has one, else directly.
    pub fn stack_db(&self, db: &DbConfig) -> DbConfig {
        match &self.pgbouncer {
            Some(b) => b.route(db),
            None => db.clone(),
        }
    }
    /// Sampler targets: the stack's tree (with its cgroup), PostgreSQL's tree (embedded only),
    /// PgBouncer's process (when there is one) and the generator process.
    pub fn sampler_targets(
        &self,
        stack: Option<&RunningStack>,
        generator_pid: Option<u32>,
    ) -> Vec<SampleTarget> {
        let mut v = Vec::new();
        if let Some(s) = stack {
            v.push(SampleTarget::tree(
                Role::Stack,
                s.pid(),
                s.cgroup().map(CgroupProbe::of),
            ));
        }
        // the admin connection lets the signal sampler read every backend's wait events
        let admin = self.admin.config.clone();
        match &self.pg {
            Some(pg) => v.push(
                SampleTarget::tree(Role::Postgres, pg.pid(), pg.cgroup().map(CgroupProbe::of))
                    .with_db(admin),
            ),
            None => v.push(SampleTarget::process(Role::Postgres, 0).with_db(admin)),
        }
        if let Some(b) = &self.pgbouncer {
            v.push(SampleTarget::tree(
                Role::Pgbouncer,
                b.pid(),
                b.cgroup().map(CgroupProbe::of),
            ));
        }
        if let Some(g) = generator_pid {
            v.push(SampleTarget::process(Role::Generator, g));
        }
        v
    }
    /// Puts this process (the generator) into a cgroup with `limits` (e.g. a cpuset apart from
    /// the stack's). Keep the returned group alive while measuring; dropping it moves this
    /// process back and removes the group.
    pub fn limit_generator(&self, limits: &Limits) -> (Option<Cgroup>, LimitsApplied) {
        limit_this_process(&self.cgroups, Role::Generator, limits)
    }
    /// Resets `pg_stat_statements`.
    pub fn stat_statements_reset(&self) -> Result<()> {
        Ok(stat_statements_reset(&self.admin)?)
    }
    /// Snapshot of `pg_stat_statements` (only role `bench`'s statements when `bench_only`).
    pub fn stat_statements(&self, bench_only: bool) -> Result<Vec<StatementStat>> {
        Ok(stat_statements_snapshot(
            &self.admin,
            bench_only.then_some(BENCH),
        )?)
    }
    /// Money conservation in the bank tables after a stack's run (`None`: no audit table).
    pub fn money_check(&self) -> Result<Option<ceiling_metrics::MoneyCheck>> {
        Ok(ceiling_pg::db::money_check(&self.admin)?)
    }
    /// The environment fingerprint (with this server's version and PgBouncer's, if any).
    pub fn fingerprint(&self) -> Environment {
        let mut e = fingerprint(Some(&self.pg_version), &self.cgroups);
        e.pgbouncer = self.pgbouncer.as_ref().map(PgBouncer::record);
        e
    }
    /// Stops PgBouncer (if any), then the embedded PostgreSQL (fast shutdown), and removes their
    /// cgroups. Idempotent.
    pub fn stop(&mut self) -> Option<StopReport> {
        if let Some(b) = self.pgbouncer.as_mut() {
            b.stop();
        }
        self.pg.as_mut().map(|p| p.stop())
    }
}

impl Drop for Stand {
    fn drop(&mut self) {
        self.stop();
    }
}
