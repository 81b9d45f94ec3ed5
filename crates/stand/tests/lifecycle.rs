//! Stack lifecycle with the dummy fixture stack (no PostgreSQL needed): build cache, env
//! contract, health, crash detection, stop/cleanup of processes and cgroups, limits, sampling.

mod common;

use ceiling_stand::*;
use common::fake_db;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stacks")
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("lifecycle-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn have_python() -> bool {
    which("python3").is_some()
}

fn launch(spec: &StackSpec, dir: &Path, mode: &str) -> StackLaunch {
    let plan = plan_defaults();
    let mut l = StackLaunch::new(spec, &plan, fake_db(), dir.join(format!("{mode}.log")));
    l.extra_env.push(("DUMMY_MODE".into(), mode.into()));
    l.stop_grace = Duration::from_millis(1500);
    l
}

fn plan_defaults() -> ceiling_plan::StandSettings {
    ceiling_plan::StandSettings {
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
        env: Default::default(),
        pgbouncer: None,
        tls: false,
    }
}

fn get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split("\r\n\r\n").nth(1).unwrap_or("").to_string()
}

fn group_gone(dirs: &[String]) -> bool {
    dirs.iter().all(|d| !Path::new(d).exists())
}

#[test]
fn build_is_cached() {
    if !have_python() {
        eprintln!("skipping: python3 not on PATH");
        return;
    }
    let spec = StackSpec::load(&fixtures(), "dummy").unwrap();
    let d = tmp("build");
    let b1 = build_stack(&spec, &d, &d.join("build.log"), true).unwrap();
    assert!(!b1.skipped);
    let b2 = build_stack(&spec, &d, &d.join("build.log"), false).unwrap();
    assert!(b2.skipped, "second build should be cached");
    assert_eq!(b1.hash, b2.hash);
    assert!(d.join("builds/dummy.hash").exists());
    // unknown stack: clear error listing known ones
    let e = StackSpec::load(&fixtures(), "nope")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no such stack `nope`") && e.contains("dummy"),
        "{e}"
    );
}

#[test]
fn start_env_limits_sample_stop() {
    if !have_python() {
        eprintln!("skipping: python3 not on PATH");
        return;
    }
    let spec = StackSpec::load(&fixtures(), "dummy").unwrap();
    let d = tmp("start");
    let cgs = CgroupSystem::detect();
    let mut l = launch(&spec, &d, "");
    l.limits.cpus = Some(0.3);
    let mut st = start_stack(&spec, &l, &cgs).unwrap();
    assert!(st.is_alive());
    eprintln!("{}", st.limits_applied().summary());

    // env contract + run.env + extra env
    let env: serde_json::Value = serde_json::from_str(&get(st.port(), "/env")).unwrap();
    assert_eq!(env["HTTP_PORT"], st.port().to_string());
    assert_eq!(env["DB_HOST"], "127.0.0.1");
    assert_eq!(env["DB_PORT"], "1");
    assert_eq!(env["DB_NAME"], "bench");
    assert_eq!(env["DB_USER"], "bench");
    assert_eq!(env["DB_PASSWORD"], "bench");
    assert_eq!(env["DB_POOL_SIZE"], "4");
    assert_eq!(env["WORKERS"], "1");
    assert_eq!(env["DUMMY_EXTRA"], "from-stack-toml");
    assert!(st
        .env()
        .iter()
        .any(|(k, v)| k == "DB_PASSWORD" && v == "***"));

    // a grandchild, to prove the whole tree is stopped
    let child: serde_json::Value = serde_json::from_str(&get(st.port(), "/spawn")).unwrap();
    let grandchild = child["pid"].as_u64().unwrap() as u32;
    assert!(procfs::is_alive(grandchild));

    let la = st.limits_applied().clone();
    let groups = la.groups.clone();
    if la.fully_applied() && la.cpus.is_some() {
        // the stack and its child are inside the group
        let cg = st.cgroup().unwrap();
        let pids = cg.pids();
        assert!(pids.contains(&st.pid()), "{pids:?}");
        assert!(pids.contains(&grandchild), "{pids:?}");
        // CPU limit holds: burn a core for 2.5 s in a child, sample via cgroup accounting
        get(st.port(), "/burn?s=3");
        let start = Instant::now();
        let mut m = Measurer::new(vec![SampleTarget::tree(
            Role::Stack,
            st.pid(),
            Some(CgroupProbe::of(cg)),
        )]);
        std::thread::sleep(Duration::from_millis(300));
        m.tick(start);
        std::thread::sleep(Duration::from_millis(2000));
        let s = m.tick(start);
        eprintln!("sample under cpus=0.3: {s:?}");
        let cpu = s[0].cpu_pct;
        assert!(
            cpu > 3.0 && cpu < 40.0,
            "cpu {cpu}% should be at most about the 30% quota"
        );
        assert!(s[0].cgroup_memory_bytes.unwrap_or(0) > 0);
        assert!(s[0].rss_bytes > 1_000_000);
    } else {
        eprintln!("limits not fully applied here: {}", la.summary());
    }

    let rep = st.stop();
    assert!(!rep.killed, "python exits on SIGTERM: {rep:?}");
    assert!(rep.leftover.is_empty());
    assert!(!procfs::is_alive(st.pid()));
    assert!(
        !procfs::is_alive(grandchild),
        "grandchild {grandchild} survived"
    );
    assert!(procfs::group_members(st.pid()).is_empty());
    assert!(group_gone(&groups), "cgroup dirs left: {groups:?}");
    assert!(st.stop().already_stopped);
}

#[test]
fn crash_mid_run_is_detected() {
    if !have_python() {
        return;
    }
    let spec = StackSpec::load(&fixtures(), "dummy").unwrap();
    let d = tmp("crash");
    let mut st = start_stack(&spec, &launch(&spec, &d, ""), &CgroupSystem::detect()).unwrap();
    assert!(st.crash_report().is_none());
    let port = st.port();
    let _ = std::thread::spawn(move || {
        use std::io::Write;
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = write!(s, "GET /crash HTTP/1.1\r\nHost: x\r\n\r\n");
            std::thread::sleep(Duration::from_millis(500));
        }
    })
    .join();
    let deadline = Instant::now() + Duration::from_secs(5);
    while st.is_alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!st.is_alive());
    assert_eq!(st.exit_status().as_deref(), Some("exit 3"));
    let rep = st.crash_report().unwrap();
    assert!(
        rep.contains("exit 3") && rep.contains("crashing on request"),
        "{rep}"
    );
    st.stop();
}

#[test]
fn failing_and_unhealthy_starts_are_reported() {
    if !have_python() {
        return;
    }
    let spec = StackSpec::load(&fixtures(), "dummy").unwrap();
    let d = tmp("fail");
    let cgs = CgroupSystem::detect();
    let e = start_stack(&spec, &launch(&spec, &d, "fail"), &cgs)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("exited during start-up (exit 2)") && e.contains("boom, refusing to start"),
        "{e}"
    );

    let mut l = launch(&spec, &d, "unhealthy");
    l.startup_timeout = Some(Duration::from_secs(2));
    let t0 = Instant::now();
    let e = start_stack(&spec, &l, &cgs).unwrap_err().to_string();
    assert!(
        e.contains("not healthy within 2s") && e.contains("last status 503"),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10));

    let mut bad = spec.clone();
    bad.run.command = vec!["./no-such-binary".into()];
    let e = start_stack(&bad, &launch(&bad, &d, ""), &cgs)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no-such-binary") && e.contains("was the stack built"),
        "{e}"
    );
}

#[test]
fn sigterm_ignoring_stack_is_killed() {
    if !have_python() {
        return;
    }
    let spec = StackSpec::load(&fixtures(), "dummy").unwrap();
    let d = tmp("ignore");
    let mut st = start_stack(
        &spec,
        &launch(&spec, &d, "ignore-term"),
        &CgroupSystem::detect(),
    )
    .unwrap();
    let pid = st.pid();
    let rep = st.stop();
    assert!(rep.killed, "{rep:?}");
    assert!(rep.took_ms >= 1400, "{rep:?}");
    assert!(!procfs::is_alive(pid));
    assert_eq!(rep.exit_status.as_deref(), Some("signal 9"));
}

#[test]
fn memory_limit_oom_is_reported() {
    if !have_python() {
        return;
    }
    let cgs = CgroupSystem::detect();
    let spec = StackSpec::load(&fixtures(), "dummy").unwrap();
    let d = tmp("oom");
    let mut l = launch(&spec, &d, "");
    l.limits = Limits {
        cpus: None,
        memory_mb: Some(64),
        cpuset: None,
    };
    let mut st = start_stack(&spec, &l, &cgs).unwrap();
    if st.limits_applied().memory_mb.is_none() {
        eprintln!(
            "skipping: memory limit not applicable here: {}",
            st.limits_applied().summary()
        );
        return;
    }
    let port = st.port();
    let _ = std::thread::spawn(move || {
        use std::io::{Read, Write};
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = write!(s, "GET /alloc?mb=200 HTTP/1.1\r\nHost: x\r\n\r\n");
            let mut b = Vec::new();
            let _ = s.read_to_end(&mut b);
        }
    })
    .join();
    let deadline = Instant::now() + Duration::from_secs(10);
    while st.is_alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !st.is_alive(),
        "allocating 200 MiB under a 64 MiB limit should kill the stack"
    );
    let rep = st.crash_report().unwrap();
    eprintln!("{rep}");
    assert!(rep.contains("signal 9"), "{rep}");
    assert!(rep.contains("OOM kill"), "{rep}");
    st.stop();
}

#[test]
fn cpuset_pins_the_stack() {
    if !have_python()
        || std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            < 2
    {
        return;
    }
    let spec = StackSpec::load(&fixtures(), "dummy").unwrap();
    let d = tmp("cpuset");
    let mut l = launch(&spec, &d, "");
    l.limits = Limits {
        cpus: None,
        memory_mb: None,
        cpuset: Some("1".into()),
    };
    let mut st = start_stack(&spec, &l, &CgroupSystem::detect()).unwrap();
    let la = st.limits_applied().clone();
    eprintln!("{}", la.summary());
    if la.cpuset.is_some() {
        let status = std::fs::read_to_string(format!("/proc/{}/status", st.pid())).unwrap();
        let allowed = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_string();
        assert_eq!(allowed, "1");
    } else {
        assert!(
            !la.fully_applied(),
            "cpuset missing but no problem reported: {la:?}"
        );
    }
    st.stop();
    assert!(la.groups.iter().all(|g| !Path::new(g).exists()));
}
