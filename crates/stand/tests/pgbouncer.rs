//! PgBouncer in the stand, end to end with real binaries (skipped when PostgreSQL's server
//! binaries or `pgbouncer` are not installed; `scripts/setup.sh` installs both): started by
//! `Stand::start` in front of the embedded PostgreSQL with the plan's settings, the role `bench`
//! authenticated through it, the stacks' connection routed to it, its process sampled, its limits
//! record and version recorded, its exit detected, restarted, and stopped by pid with the stand.
//!
//! Shares the seeded template in `target/tmp/pg-cache` with `postgres.rs` (test binaries run one
//! after another).

use ceiling_plan::{PgBouncerSettings, PoolMode};
use ceiling_stand::*;
use ceiling_testkit::repo_root;
use std::path::Path;
use std::time::{Duration, Instant};

fn settings(pool_mode: PoolMode) -> ceiling_plan::StandSettings {
    ceiling_plan::StandSettings {
        postgres_version: None,
        postgres_settings: [
            ("max_connections", "100"),
            ("shared_buffers", "128MB"),
            ("shared_preload_libraries", "pg_stat_statements"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
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
        env: [("DB_PREPARED".to_string(), "off".to_string())]
            .into_iter()
            .collect(),
        pgbouncer: Some(PgBouncerSettings {
            pool_mode,
            default_pool_size: 5,
            max_client_conn: 100,
            max_prepared_statements: None,
        }),
    }
}

fn alive(pid: u32) -> bool {
    procfs::read_stat(pid).is_some_and(|s| !s.is_dead())
}

#[test]
fn pgbouncer_between_the_stacks_and_postgres() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let cache = tmp.join("pg-cache");
    if let Err(e) = find_postgres(None, None, &cache, None) {
        eprintln!("skipping: {e}");
        return;
    }
    let bin = match find_pgbouncer() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    eprintln!("pgbouncer {} at {}", bin.version, bin.path.display());
    let mut opts = StandOptions::new(&repo_root());
    opts.cache_dir = cache.clone();
    opts.log_dir = tmp.join(format!("pgb-logs-{}", std::process::id()));
    let plan = settings(PoolMode::Transaction);
    let mut stand = Stand::start(&opts, &plan).unwrap();
    let b = stand.pgbouncer().expect("the plan asked for PgBouncer");
    let (pgb_pid, pgb_port) = (b.pid(), b.port());
    let pg_port = stand.postgres().unwrap().port();
    assert_ne!(pgb_port, pg_port);
    assert!(alive(pgb_pid));
    let ini = std::fs::read_to_string(b.config_path()).unwrap();
    assert!(ini.contains("pool_mode = transaction\n"), "{ini}");
    assert!(ini.contains("default_pool_size = 5\n"), "{ini}");
    assert!(
        ini.contains(&format!("port={pg_port} ")),
        "points at the stand's PostgreSQL: {ini}"
    );

    // the data, then a query as `bench` through PgBouncer (prepare_data checks it too)
    stand.prepare_data(1).unwrap();
    let db = stand.reset_db().unwrap();
    assert_eq!(db.port, pg_port, "reset_db returns the direct connection");
    let routed = stand.stack_db(&db);
    assert_eq!(
        (routed.port, routed.user.as_str(), routed.dbname.as_str()),
        (pgb_port, "bench", "bench")
    );
    let psql = stand.admin().psql.clone();
    let via = Db::new(routed.clone(), psql.clone());
    let row = via
        .query("select current_user, current_database(), inet_server_port()")
        .unwrap();
    assert_eq!(
        row[0],
        vec!["bench".to_string(), "bench".into(), pg_port.to_string()],
        "through PgBouncer to the stand's PostgreSQL"
    );
    assert_eq!(
        via.query_one("select count(*) from clients")
            .unwrap()
            .as_deref(),
        Some("10000")
    );
    // the server sees PgBouncer's connection, not psql's
    let backends = stand
        .admin()
        .query_one(
            "select count(*) from pg_stat_activity where usename = 'bench' and datname = 'bench'",
        )
        .unwrap()
        .unwrap();
    assert!(backends.parse::<u32>().unwrap() >= 1, "{backends}");

    // a stack started by the stand gets PgBouncer's host and port, and the plan's [stand.env]
    let spec = StackSpec::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stacks"),
        "dummy",
    )
    .unwrap();
    stand.build_stack(&spec, false).unwrap();
    let mut st = stand.start_stack(&spec, &plan, db.clone()).unwrap();
    let env: std::collections::BTreeMap<_, _> = st.env().iter().cloned().collect();
    assert_eq!(env["DB_PORT"], pgb_port.to_string(), "{env:?}");
    assert_eq!(env["DB_HOST"], "127.0.0.1");
    assert_eq!(env["DB_PREPARED"], "off", "{env:?}");

    // sampled like PostgreSQL: its own role, with CPU and memory
    let targets = stand.sampler_targets(Some(&st), Some(std::process::id()));
    assert!(targets
        .iter()
        .any(|t| t.who == Role::Pgbouncer && t.pid == pgb_pid));
    let (mut sampler, rx) =
        Sampler::with_channel(Instant::now(), Duration::from_millis(200), targets);
    for _ in 0..5 {
        via.query("select 1").unwrap();
    }
    std::thread::sleep(Duration::from_millis(700));
    sampler.stop();
    let samples: Vec<_> = rx.try_iter().collect();
    let pgb = samples
        .iter()
        .find(|s| s.who == Role::Pgbouncer)
        .unwrap_or_else(|| panic!("no pgbouncer sample in {samples:?}"));
    assert!(pgb.rss_bytes > 100_000, "{pgb:?}");
    st.stop();

    // recorded: limits (accounted, not limited) and version + settings in the fingerprint
    let la = stand.pgbouncer_limits().unwrap();
    assert_eq!(la.who, Role::Pgbouncer);
    assert!(la.fully_applied(), "{}", la.summary());
    let fp = serde_json::to_value(stand.fingerprint()).unwrap();
    assert_eq!(fp["pgbouncer"]["version"], bin.version.as_str(), "{fp:#}");
    assert_eq!(fp["pgbouncer"]["settings"]["pool_mode"], "transaction");
    assert_eq!(fp["pgbouncer"]["settings"]["default_pool_size"], 5);

    // an exit is detected (as the run's per-second watch does), and it can be restarted
    assert_eq!(stand.pgbouncer_exited(), None);
    // SAFETY: kill(2) on the PgBouncer this test's stand started (its pid).
    unsafe { libc::kill(pgb_pid as i32, libc::SIGKILL) };
    let t = Instant::now();
    let status = loop {
        if let Some(s) = stand.pgbouncer_exited() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "exit not seen");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status, "signal 9");
    stand.restart_pgbouncer().unwrap();
    let b = stand.pgbouncer().unwrap();
    let new_pid = b.pid();
    assert_ne!(new_pid, pgb_pid);
    let via = Db::new(stand.stack_db(&db), psql);
    assert_eq!(via.query_one("select 1").unwrap().as_deref(), Some("1"));

    // stopped by pid with the stand
    let pg_pid = stand.postgres().unwrap().pid();
    stand.stop();
    let t = Instant::now();
    while (alive(new_pid) || alive(pg_pid)) && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(new_pid), "PgBouncer {new_pid} still runs");
    assert!(!alive(pg_pid), "PostgreSQL {pg_pid} still runs");
}

#[test]
fn max_prepared_statements_needs_a_pgbouncer_that_has_it() {
    let Ok(bin) = find_pgbouncer() else {
        eprintln!("skipping: pgbouncer not installed");
        return;
    };
    let mut s = settings(PoolMode::Transaction).pgbouncer.unwrap();
    s.max_prepared_statements = Some(100);
    let r = check_pgbouncer_settings(&bin, &s);
    if bin.has_max_prepared_statements() {
        assert!(r.is_ok(), "{r:?}");
    } else {
        let e = r.unwrap_err().to_string();
        assert!(e.contains(&bin.version) && e.contains("1.21"), "{e}");
    }
}
