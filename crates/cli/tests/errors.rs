//! User-facing errors of the `ceiling` binary, run as a user runs it: the verdict when nothing
//! listens, the offered rate, TLS options that cannot apply, an unknown stack. Each of these once said something
//! misleading (see the assertions' messages).

use ceiling_testkit::{output_text as text, repo_root};
use std::process::Command;

fn ceiling() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ceiling"));
    c.current_dir(repo_root());
    c
}

/// A loopback port nobody listens on: bound by us, then closed.
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn nothing_listening_is_a_connection_failure_not_generator_bound() {
    let port = dead_port();
    let url = format!("http://127.0.0.1:{port}/");
    let o = ceiling()
        .args(["load", "--url", &url, "--rate", "100", "-d", "2s", "-q"])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    let verdict = out
        .lines()
        .find(|l| l.trim_start().starts_with("Verdict"))
        .unwrap_or_else(|| panic!("no verdict line in:\n{out}"));
    assert!(
        verdict.contains("NO CONNECTION")
            && verdict.contains(&format!("127.0.0.1:{port}"))
            && verdict.to_lowercase().contains("connection refused"),
        "{verdict}"
    );
    assert!(!out.contains("GENERATOR-BOUND"), "{out}");
    // The same as JSON, for scripts.
    let o = ceiling()
        .args(["load", "--url", &url, "--rate", "100", "-d", "2s", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["no_connection"], true);
    assert_eq!(v["generator_bound"], false);
    assert_eq!(v["offered"], 200);
    assert!(v["connect_failures"].as_u64().unwrap() >= 200, "{v}");
    assert!(
        v["connect_error"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("refused"),
        "{v}"
    );
}

#[test]
fn offered_rate_is_over_the_planned_duration() {
    let port = ceiling_load::testing::spawn_server(|t| t);
    let url = format!("http://127.0.0.1:{port}/");
    let o = ceiling()
        .args(["load", "--url", &url, "--rate", "100", "-d", "2s", "--json"])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["offered"], 200, "{v}");
    // 100/s over 2 s — not 200 over the 3 seconds the last replies spill into (66.7/s).
    assert_eq!(v["measured_duration_s"], 2.0, "{v}");
    assert_eq!(v["offered_rps"], 100.0, "{v}");
    assert!(
        (v["achieved_rps"].as_f64().unwrap() - 100.0).abs() < 1.0,
        "{v}"
    );
    let o = ceiling()
        .args(["load", "--url", &url, "--rate", "100", "-d", "2s", "-q"])
        .output()
        .unwrap();
    let (out, _) = text(&o);
    assert!(out.contains("offered 200 (100.0/s)"), "{out}");
    assert!(out.contains("over 2 s"), "{out}");
}

#[test]
fn tls_options_are_checked_before_any_load() {
    // A CA file that is not there: named, before a connection is made.
    let o = ceiling()
        .args([
            "load",
            "--url",
            "https://127.0.0.1:8443/",
            "--cacert",
            "/nonexistent/ca.pem",
            "--rate",
            "100",
            "-d",
            "2s",
        ])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(err.contains("--cacert /nonexistent/ca.pem"), "{err}");
    // TLS options on a cleartext URL would silently do nothing: refused.
    let o = ceiling()
        .args([
            "load",
            "--url",
            "http://127.0.0.1:9/",
            "--insecure",
            "--rate",
            "10",
            "-d",
            "1s",
        ])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("https:// URLs only"), "{err}");
    // The conformance suite speaks cleartext only, and says so.
    let o = ceiling()
        .args([
            "verify",
            "--url",
            "https://127.0.0.1:8443",
            "--db-url",
            "postgres://u:p@127.0.0.1:1/db",
        ])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(err.contains("cleartext HTTP only"), "{err}");
}

#[test]
fn unknown_stack_is_reported_before_postgres_starts() {
    let t = std::time::Instant::now();
    let o = ceiling().args(["verify", "nosuch"]).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(err.contains("no such stack `nosuch`"), "{err}");
    assert!(!err.contains("PostgreSQL"), "{err}");
    assert!(t.elapsed().as_secs() < 10, "took {:?}", t.elapsed());
    // `ceiling run` too
    let o = ceiling()
        .args([
            "run",
            "plans/004-ping.toml",
            "--stacks",
            "nosuch",
            "--results",
        ])
        .arg(std::env::temp_dir().join("ceiling-errors-test"))
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains("no such stack `nosuch`") && !err.contains("starting PostgreSQL"),
        "{err}"
    );
}

#[test]
fn a_tick_is_checked_before_any_stand_starts() {
    // run and search: a plan without keep-alive, a zero tick, a word: each refused with the
    // reason, before PostgreSQL or a stack is started (exit 2, no results directory needed)
    for (args, says) in [
        (
            vec!["run", "plans/004-ping-no-keepalive.toml", "--tick", "2ms"],
            "not keep-alive off",
        ),
        (
            vec!["search", "plans/000-status-mixed.toml", "--tick", "0ms"],
            "between 1µs and 100ms",
        ),
        (
            vec!["run", "plans/000-status-mixed.toml", "--tick", "abc"],
            "`abc` is not a duration",
        ),
    ] {
        let o = ceiling().args(&args).output().unwrap();
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}\n{err}");
        assert!(
            err.contains("--tick") || err.contains("ticked engine"),
            "{args:?}: {err}"
        );
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("starting PostgreSQL"), "{args:?}: {err}");
    }
    // --io: a back end that is not one, on run and on load, said with the three that are
    for args in [
        vec![
            "run",
            "plans/000-status-mixed.toml",
            "--tick",
            "2ms",
            "--io",
            "kqueue",
        ],
        vec![
            "load",
            "--url",
            "http://127.0.0.1:9/",
            "--rate",
            "10",
            "-d",
            "1s",
            "--tick",
            "2ms",
            "--io",
            "kqueue",
        ],
    ] {
        let o = ceiling().args(&args).output().unwrap();
        let (out, err) = text(&o);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {out}\n{err}");
        assert!(
            err.contains("--io") && err.contains("auto, epoll or io_uring"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("starting PostgreSQL"), "{args:?}: {err}");
    }
    // load: the closed model runs on the ticked engine (one wake-up per batch of responses):
    // accepted where the flags become the plan, and run (nothing listens: connect errors)
    let o = ceiling()
        .args([
            "load",
            "--url",
            "http://127.0.0.1:9/",
            "--connections",
            "2",
            "-d",
            "1s",
            "--tick",
            "2ms",
        ])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(
        !err.contains("ticked engine runs") && !err.contains("closed-model plan"),
        "{out}\n{err}"
    );
    assert!(
        out.contains("connect") || err.contains("connect"),
        "{out}\n{err}"
    );
}

/// Each cause said once: an error's message carries its cause, and nothing prints it a second
/// time from the error's chain (supervision's and the agents' I/O errors once did, under `{:#}`).
#[test]
fn an_unreachable_agent_and_an_unwritable_directory_are_said_once_with_their_cause() {
    let dir = std::env::temp_dir().join(format!("ceiling-errors-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tok = dir.join("token");
    std::fs::write(&tok, "0123456789abcdef-errors-once").unwrap();
    let agent = format!("127.0.0.1:{}", dead_port());
    let url = format!("http://127.0.0.1:{}/", dead_port());
    let o = ceiling()
        .args(["load", "--url", &url, "--rate", "10", "-d", "1s", "-q"])
        .args(["--agents", &agent, "--agent-token-file"])
        .arg(&tok)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(err.contains(&format!("agent {agent}")), "{err}");
    assert_eq!(
        err.to_lowercase().matches("connection refused").count(),
        1,
        "{err}"
    );
    // a results directory that cannot be made: the path and the OS's reason, once
    let o = ceiling()
        .args(["load", "--url", &url, "--rate", "10", "-d", "1s", "-q"])
        .args(["--out", "/proc/ceiling-cannot-be-here"])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(err.contains("/proc/ceiling-cannot-be-here"), "{err}");
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--realtime` without CAP_SYS_NICE: refused with what to do, before a stand starts (run,
/// search) or a request is sent (load). The privilege is taken away with `setpriv` (this
/// process's own, inherited by the child) where we hold it; where we do not, the child lacks it
/// anyway. With it, `load --json` says the threads ran under SCHED_FIFO.
#[test]
fn realtime_without_the_privilege_is_refused_before_anything_starts() {
    let requests = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = requests.clone();
    let port = ceiling_load::testing::spawn_server(move |t| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        t
    });
    let url = format!("http://127.0.0.1:{port}/");
    let load_args = [
        "load",
        "--url",
        &url,
        "--rate",
        "100",
        "-d",
        "1s",
        "--realtime",
    ];
    let unprivileged = |args: &[&str]| {
        let mut c = if ceiling_load::realtime::privileged() {
            // neither the capability nor an RLIMIT_RTPRIO to fall back on
            let mut c = Command::new("prlimit");
            c.args(["--rtprio=0:0", "setpriv"])
                .args(["--bounding-set=-sys_nice", "--inh-caps=-sys_nice", "--"])
                .arg(env!("CARGO_BIN_EXE_ceiling"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_ceiling"))
        };
        c.current_dir(repo_root()).args(args);
        c.output().unwrap()
    };
    for args in [
        load_args.to_vec(),
        vec!["run", "plans/000-status-mixed.toml", "--realtime"],
        vec!["search", "plans/000-status-mixed.toml", "--realtime"],
    ] {
        let o = unprivileged(&args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}\n{err}");
        assert!(
            err.contains("--realtime") && err.contains("CAP_SYS_NICE") && err.contains("setcap"),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("panicked") && !err.contains("starting PostgreSQL"),
            "{err}"
        );
    }
    assert_eq!(
        requests.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing sent"
    );
    if !ceiling_load::realtime::privileged() {
        return;
    }
    // a second of load with --realtime and one more flag: its stdout, once it succeeded
    let load = |how: &str| {
        let o = ceiling().args(load_args).arg(how).output().unwrap();
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}\n{err}");
        out
    };
    let v: serde_json::Value = serde_json::from_str(&load("--json")).unwrap();
    let rt = v["realtime"].as_str().unwrap_or_default();
    assert!(rt.contains("1 thread under SCHED_FIFO priority 1"), "{v}");
    // and the terminal table says it on its own line
    let out = load("-q");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("Scheduling") && l.contains("SCHED_FIFO")),
        "{out}"
    );
}
