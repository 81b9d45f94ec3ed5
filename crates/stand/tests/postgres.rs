//! End to end with a real PostgreSQL (skipped when no server binaries are installed): embedded
//! server as an unprivileged user, the contract's seed into a reusable template, id CSVs, a fresh
//! `bench` per stack, pg_stat_statements, a stack against it, sampling, fingerprint, clean stop.
//!
//! The seeded template lives in `target/tmp/pg-cache` and is reused by later runs (the first run
//! seeds 1,000,000 rows: ~10-20 s; later runs skip it). Set `CEILING_TEST_PG_VERSION=16` to run
//! against PostgreSQL 16 (fetched from Maven Central when not installed).

use ceiling_stand::*;
use ceiling_testkit::repo_root;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

fn source_000_settings() -> BTreeMap<String, String> {
    [
        ("max_connections", "300"),
        ("shared_buffers", "512MB"),
        ("work_mem", "8MB"),
        ("effective_cache_size", "1536MB"),
        ("maintenance_work_mem", "128MB"),
        ("synchronous_commit", "on"),
        ("shared_preload_libraries", "pg_stat_statements"),
        ("track_activity_query_size", "32768"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn settings(version: Option<u32>) -> ceiling_plan::StandSettings {
    ceiling_plan::StandSettings {
        postgres_version: version,
        postgres_settings: source_000_settings(),
        seed: 1,
        pool_size: None,
        workers: None,
        cpus: None,
        memory_mb: None,
        memory_uncapped: false,
        postgres_cpus: Some(1.5),
        cooldown: Duration::from_secs(0),
        verify: false,
        on_part_exit: Default::default(),
        placement: Default::default(),
        env: Default::default(),
        pgbouncer: None,
        tls: false,
    }
}

#[test]
fn embedded_postgres_end_to_end() {
    let want: Option<u32> = std::env::var("CEILING_TEST_PG_VERSION")
        .ok()
        .and_then(|v| v.parse().ok());
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let cache = tmp.join("pg-cache");
    if want.is_none() {
        if let Err(e) = find_postgres(None, None, &cache, None) {
            eprintln!("skipping: {e}");
            return;
        }
    }
    let mut opts = StandOptions::new(&repo_root());
    opts.cache_dir = cache.clone();
    opts.log_dir = tmp.join(format!("pg-logs-{}", std::process::id()));
    let t0 = Instant::now();
    let mut stand = Stand::start(&opts, &settings(want)).unwrap();
    let pg = stand.postgres().unwrap();
    eprintln!(
        "postgres {} ({}) pid {} port {} as {:?} started in {:?}; {}",
        stand.postgres_version(),
        pg.binaries().origin,
        pg.pid(),
        pg.port(),
        pg.run_as(),
        t0.elapsed(),
        pg.limits_applied().summary()
    );
    if let Some(w) = want {
        assert!(
            stand.postgres_version().starts_with(&format!("{w}.")),
            "{}",
            stand.postgres_version()
        );
    }
    let pg_pid = pg.pid();
    let pg_groups = pg.limits_applied().groups.clone();
    // plan settings are in force
    let admin = stand.admin().clone();
    assert_eq!(
        admin.query_one("show shared_buffers").unwrap().as_deref(),
        Some("512MB")
    );
    assert_eq!(
        admin.query_one("show max_connections").unwrap().as_deref(),
        Some("300")
    );
    assert_eq!(
        admin.query_one("show listen_addresses").unwrap().as_deref(),
        Some("127.0.0.1")
    );

    // data: seed (or reuse), then certainly reuse
    let t = Instant::now();
    let d1 = stand.prepare_data(1).unwrap();
    eprintln!(
        "prepare_data: reused={} seed_seconds={:.1} total {:?}",
        d1.reused,
        d1.seed_seconds,
        t.elapsed()
    );
    let t = Instant::now();
    let d2 = stand.prepare_data(1).unwrap();
    assert!(d2.reused);
    assert_eq!(d1.hash, d2.hash);
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "reuse took {:?}",
        t.elapsed()
    );
    let status_csv = d2.data_dir.join("status_ids.csv");
    let text = std::fs::read_to_string(&status_csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("id"));
    let first = lines.next().unwrap().to_string();
    assert_eq!(first.len(), 36, "{first}");
    assert_eq!(text.lines().count(), 1_000_001);
    let clients = std::fs::read_to_string(d2.data_dir.join("client_ids.csv")).unwrap();
    assert_eq!(clients.lines().count(), 10_001);
    assert_eq!(stand.data_dir(), Some(d2.data_dir.as_path()));

    // a fresh bench database per stack, cheaply
    let t = Instant::now();
    let db = stand.reset_db().unwrap();
    eprintln!("reset_db: {:?}", t.elapsed());
    assert_eq!(
        (db.user.as_str(), db.dbname.as_str(), db.password.as_str()),
        ("bench", "bench", "bench")
    );
    let bench = Db::new(db.clone(), admin.psql.clone());
    assert_eq!(
        bench
            .query_one("select count(*) from status")
            .unwrap()
            .as_deref(),
        Some("1000000")
    );
    assert_eq!(
        bench
            .query_one("select sum(balance) from clients")
            .unwrap()
            .as_deref(),
        Some("10000000000")
    );
    bench
        .exec("insert into status (id, status) values ('00000000-0000-0000-0000-000000000001', 1)")
        .unwrap();
    // the status values follow source 000's (random()*10)::int2: 0 and 10 half as frequent
    let dist = bench
        .query("select status, count(*) from status group by 1 order by 1")
        .unwrap();
    let n = |v: i32| -> f64 {
        dist.iter()
            .find(|r| r[0] == v.to_string())
            .map(|r| r[1].parse().unwrap())
            .unwrap_or(0.0)
    };
    assert!((n(0) / 1e6 - 0.05).abs() < 0.002, "{dist:?}");
    assert!((n(5) / 1e6 - 0.10).abs() < 0.002, "{dist:?}");
    assert!((n(10) / 1e6 - 0.05).abs() < 0.002, "{dist:?}");

    // money conservation: untouched books are conserved (and not "touched"); a proper transfer
    // and a created client stay conserved; a half-applied transfer and a balance changed behind
    // the books' back are caught
    let m = stand.money_check().unwrap().unwrap();
    assert!(m.conserved() && !m.touched(), "{m:?}");
    assert_eq!((m.clients, m.created), (10_000, 0));
    bench
        .exec(
            "insert into clients (balance) values (500); \
             begin; \
             update clients set balance = balance - 100 where id = 1; \
             update clients set balance = balance + 100 where id = 2; \
             insert into transfers (from_id, to_id, amount) values (1, 2, 100); \
             commit;",
        )
        .unwrap();
    let m = stand.money_check().unwrap().unwrap();
    assert!(m.conserved() && m.touched(), "{m:?}");
    assert_eq!((m.created, m.transfers), (1, 1));
    bench
        .exec(
            "update clients set balance = balance - 50 where id = 3; \
             insert into transfers (from_id, to_id, amount) values (3, 4, 50);",
        )
        .unwrap();
    let m = stand.money_check().unwrap().unwrap();
    assert!(!m.conserved(), "{m:?}");
    assert_eq!((m.inconsistent, m.sum_balances - m.sum_openings), (1, -50));
    assert!(
        m.describe().starts_with("MONEY NOT CONSERVED"),
        "{}",
        m.describe()
    );
    let t = Instant::now();
    let db = stand.reset_db().unwrap();
    eprintln!("reset_db again: {:?}", t.elapsed());
    assert!(t.elapsed() < Duration::from_secs(20));
    assert_eq!(
        bench
            .query_one("select count(*) from status")
            .unwrap()
            .as_deref(),
        Some("1000000"),
        "writes were not reset"
    );

    // a stack's own schema change ([database] setup_sql) reaches its copy and no other: source
    // 001's as-published Go finds clients without an index, the next fresh copy has it again
    let as_published =
        StackSpec::load(&repo_root().join("stacks"), "go-mux-pq-as-published").unwrap();
    let explain = |bench: &Db| {
        bench
            .query("explain select balance from clients where id = 42")
            .unwrap()
            .concat()
            .join(" ")
    };
    stand.fresh_db_for(&as_published).unwrap();
    let plan = explain(&bench);
    assert!(plan.contains("Seq Scan on clients"), "{plan}");
    let m = stand.money_check().unwrap().unwrap();
    assert!(
        m.conserved() && !m.touched(),
        "the books without the index: {m:?}"
    );
    stand
        .fresh_db_for(&StackSpec::load(&repo_root().join("stacks"), "go-pgx").unwrap())
        .unwrap();
    let plan = explain(&bench);
    assert!(
        plan.contains("Index") && plan.contains("clients_pkey"),
        "{plan}"
    );

    // pg_stat_statements: reset, run a statement 3 times as bench, snapshot
    stand.stat_statements_reset().unwrap();
    bench
        .exec(&format!(
            "prepare q(uuid) as select id, status, updated_at from status where id = $1; \
             execute q({id}); execute q({id}); execute q({id});",
            id = lit(&first)
        ))
        .unwrap();
    let snap = stand.stat_statements(true).unwrap();
    let hit = snap
        .iter()
        .find(|s| s.query.contains("from status where id = $1"))
        .unwrap_or_else(|| panic!("{snap:#?}"));
    assert_eq!(hit.calls, 3, "{hit:?}");
    assert_eq!(hit.rows, 3);
    assert_eq!(hit.dbname, "bench");
    assert!(snap.iter().all(|s| s.user == "bench"));

    // a stack against it, sampled together with postgres and the generator (this process)
    let spec = StackSpec::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stacks"),
        "dummy",
    )
    .unwrap();
    if which("python3").is_some() {
        let mut st = stand
            .start_stack(&spec, &settings(None), db.clone())
            .unwrap();
        let run_start = Instant::now();
        let (mut sampler, rx) = Sampler::with_channel(
            run_start,
            Duration::from_millis(250),
            stand.sampler_targets(Some(&st), Some(std::process::id())),
        );
        // some database work so postgres has CPU to show
        bench
            .exec("select count(*) from status where status > 3")
            .unwrap();
        std::thread::sleep(Duration::from_millis(700));
        sampler.stop();
        let samples: Vec<_> = rx.try_iter().collect();
        for who in [Role::Stack, Role::Postgres, Role::Generator] {
            assert!(
                samples.iter().any(|s| s.who == who),
                "no {who} sample in {samples:?}"
            );
        }
        let pgs = samples
            .iter()
            .filter(|s| s.who == Role::Postgres)
            .map(|s| s.rss_bytes)
            .max()
            .unwrap();
        eprintln!("samples: {samples:?}");
        assert!(pgs > 10_000_000, "postgres rss {pgs}");
        assert!(st.is_alive());
        st.stop();
    }

    let fp = stand.fingerprint();
    assert_eq!(fp.postgres.as_deref(), Some(stand.postgres_version()));
    eprintln!("{}", serde_json::to_string(&fp).unwrap());

    // stop: postmaster, backends and cgroup gone
    let rep = stand.stop().unwrap();
    eprintln!("stop: {rep:?}");
    assert!(!rep.killed, "fast shutdown should suffice: {rep:?}");
    assert!(!procfs::is_alive(pg_pid));
    assert!(procfs::group_members(pg_pid).is_empty());
    assert!(
        pg_groups.iter().all(|g| !Path::new(g).exists()),
        "{pg_groups:?}"
    );
    assert!(stand.stop().unwrap().already_stopped);
    let _ = std::fs::remove_dir_all(&opts.log_dir);
}

#[test]
fn missing_binaries_error_is_clear() {
    let e = find_postgres(
        None,
        Some(Path::new("/nonexistent/bin")),
        Path::new("/tmp"),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("PostgreSQL binaries not found:") && e.contains("--pg-bin"),
        "{e}"
    );
}

/// Gated: `CEILING_TEST_REAL_STACK=go-pgx cargo test -p ceiling-stand --test postgres real_stack`
/// builds a copy of `stacks/<name>` (so the stack's own folder is untouched), starts it against
/// the embedded PostgreSQL and checks one request end to end, including its statement count.
#[test]
fn real_stack_end_to_end() {
    // go-pgx unless another stack is named (CEILING_TEST_REAL_STACK=spring-mvc-jdbc, …)
    let name = std::env::var("CEILING_TEST_REAL_STACK").unwrap_or_else(|_| "go-pgx".into());
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let copy_root = tmp.join(format!("real-stack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copy_root);
    std::fs::create_dir_all(&copy_root).unwrap();
    let src = repo_root().join("stacks").join(&name);
    let st = std::process::Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(&copy_root)
        .status()
        .unwrap();
    assert!(st.success());
    let spec = StackSpec::load(&copy_root, &name).unwrap();

    let mut opts = StandOptions::new(&repo_root());
    // its own cache: the other tests of this file run at the same time, and a cache's data
    // directory is locked by the server using it
    opts.cache_dir = tmp.join("pg-cache-real-stack");
    opts.log_dir = copy_root.join("logs");
    let mut stand = Stand::start(&opts, &settings(None)).unwrap();
    let data = stand.prepare_data(1).unwrap();
    let t = Instant::now();
    let b = build_stack(
        &spec,
        &copy_root.join("cache"),
        &copy_root.join("logs/build.log"),
        false,
    )
    .unwrap();
    eprintln!("build: skipped={} in {:?}", b.skipped, t.elapsed());
    let db = stand.reset_db().unwrap();
    let mut stack = stand.start_stack(&spec, &settings(None), db).unwrap();
    eprintln!(
        "{} healthy at {}; {}",
        name,
        stack.url(),
        stack.limits_applied().summary()
    );
    let id = std::fs::read_to_string(data.data_dir.join("status_ids.csv"))
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    stand.stat_statements_reset().unwrap();
    assert_eq!(
        http_status(
            stack.port(),
            &format!("/status/{id}"),
            Duration::from_secs(5)
        ),
        Some(200)
    );
    assert_eq!(
        http_status(stack.port(), "/status/not-a-uuid", Duration::from_secs(5)),
        Some(400)
    );
    let snap = stand.stat_statements(true).unwrap();
    eprintln!("{snap:#?}");
    let sel: Vec<_> = snap
        .iter()
        .filter(|s| s.query.to_lowercase().contains("from status where id = $1"))
        .collect();
    assert_eq!(sel.iter().map(|s| s.calls).sum::<u64>(), 1, "{snap:#?}");
    assert!(stack.is_alive());
    let rep = stack.stop();
    eprintln!("stop: {rep:?}");
    assert!(!rep.killed, "the stack should exit on SIGTERM: {rep:?}");

    if !spec.run.tls {
        stand.stop();
        let _ = std::fs::remove_dir_all(&copy_root);
        return;
    }
    // `[stand] tls = true`: the stand's throwaway certificate, HTTPS beside the plain port, and
    // the engine, trusting that certificate, sends load over it.
    let mut with_tls = settings(None);
    with_tls.tls = true;
    let db = stand.reset_db().unwrap();
    let mut stack = stand.start_stack(&spec, &with_tls, db).unwrap();
    let url = stack.load_url();
    assert!(url.starts_with("https://localhost:"), "{url}");
    ceiling_load::trust_also(stack.tls_cert().unwrap());
    let s = https_health(&url);
    let t = s.tls.as_ref().expect("a TLS tally");
    eprintln!(
        "over TLS: {:?}; {} handshakes, {:?}, {:?}, trust {}",
        s.counts(),
        t.handshakes,
        t.version,
        t.alpn,
        t.trust
    );
    assert_eq!(s.counts().total(), 50);
    assert_eq!(s.counts().errors(), 0, "{:?}", s.connect_error);
    assert!(t.trust.contains("the stand's certificate"), "{}", t.trust);
    // the plain port still answers (health, the conformance suite)
    assert_eq!(
        http_status(stack.port(), "/health", Duration::from_secs(5)),
        Some(200)
    );
    stack.stop();
    // a stack that does not say it serves TLS is refused with the reason, before it starts
    let mut plain = spec.clone();
    plain.run.tls = false;
    let db = stand.reset_db().unwrap();
    let e = stand
        .start_stack(&plain, &with_tls, db)
        .unwrap_err()
        .to_string();
    assert!(e.contains("[run] tls = true"), "{e}");
    stand.stop();
    let _ = std::fs::remove_dir_all(&copy_root);
}

/// 50 GETs of /health over `url` (https), closed model, 2 connections.
fn https_health(url: &str) -> ceiling_load::Summary {
    let u = ceiling_plan::HttpUrl::parse(url).unwrap();
    let target = ceiling_load::target_of(&u, url, false, &Default::default()).unwrap();
    let stage = ceiling_plan::Stage::Closed {
        connections: 2,
        duration: None,
        requests: Some(50),
    };
    let cfg = ceiling_load::testing::get_config(target, "/health", stage);
    ceiling_load::run(cfg, |_| {}).unwrap()
}

/// PostgreSQL SIGKILLed by its pid (as an OOM killer or an operator would): the stand sees the
/// exit at once, names how it ended, and starts a working server again on the same data.
#[test]
fn killed_postgres_is_detected_and_restarted() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    // its own cache: the data directory is locked by the server using it
    let cache = tmp.join("pg-cache-restart");
    if let Err(e) = find_postgres(None, None, &cache, None) {
        eprintln!("skipping: {e}");
        return;
    }
    let mut opts = StandOptions::new(&repo_root());
    opts.cache_dir = cache;
    opts.log_dir = tmp.join(format!("pg-restart-logs-{}", std::process::id()));
    let mut stand = Stand::start(&opts, &settings(None)).unwrap();
    assert_eq!(stand.postgres_exited(), None);
    stand
        .admin()
        .exec("create table if not exists survives (x int)")
        .unwrap();
    let pid = stand.postgres().unwrap().pid();
    let backends_before = procfs::group_members(pid);
    assert!(!backends_before.is_empty());
    // SAFETY: kill(2) on the postmaster this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = stand.postgres_exited() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "exit not seen");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status, "signal 9");
    assert!(stand.admin().query("select 1").is_err());
    stand.restart_postgres().unwrap();
    let new_pid = stand.postgres().unwrap().pid();
    assert_ne!(new_pid, pid);
    assert_eq!(stand.postgres_exited(), None);
    // the old server's backends are gone, the new one works on the same data
    assert!(procfs::group_members(pid).is_empty());
    assert_eq!(
        stand
            .admin()
            .query_one("select count(*) from pg_class where relname = 'survives'")
            .unwrap()
            .as_deref(),
        Some("1")
    );
    stand.stop();
    assert!(!procfs::is_alive(new_pid));
}
