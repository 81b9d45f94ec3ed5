//! `ceiling up go-pgx`: the stand starts PostgreSQL and a verified go-pgx, prints where it is,
//! keeps it answering for `--for`, then stops everything by itself (exit 0) — the stack's port
//! answers while it is up and no longer afterwards.
//!
//! Needs PostgreSQL server binaries and Go (to build go-pgx); skipped with a message without them.

use ceiling_testkit::repo_root;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The status code of `GET path` on 127.0.0.1:port, or `None` when nothing answers.
fn get(port: u16, path: &str) -> Option<u16> {
    ceiling_testkit::http_get(("127.0.0.1", port), path).map(|(status, _)| status)
}

#[test]
fn a_stack_stays_up_until_its_time_is_over_then_everything_stops() {
    let have_pg = ["/usr/lib/postgresql", "/usr/local/pgsql"]
        .iter()
        .any(|d| Path::new(d).exists())
        || ceiling_testkit::on_path("postgres").is_some();
    if !have_pg || ceiling_testkit::on_path("go").is_none() {
        eprintln!("skipping: needs PostgreSQL server binaries and Go");
        return;
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("up");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let plan = tmp.join("up.toml");
    std::fs::write(
        &plan,
        "name = \"up\"\n[[requests]]\nname = \"x\"\npath = \"/\"\n[[stages]]\nhold = 1\nduration = \"1s\"\n[stand]\ncpus = 1.0\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ceiling"))
        .current_dir(repo_root())
        .args(["up", "go-pgx", "--for", "8s", "--plan"])
        .arg(&plan)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut printed = String::new();
    let mut port = None;
    let deadline = Instant::now() + Duration::from_secs(300);
    while port.is_none() && Instant::now() < deadline {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        printed.push_str(&line);
        if let Some(url) = line.split(" is up at ").nth(1) {
            port = url
                .trim()
                .rsplit(':')
                .next()
                .and_then(|p| p.parse::<u16>().ok());
        }
    }
    let Some(port) = port else {
        let _ = child.kill();
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).ok();
        panic!("no `is up at` line: {printed}\n{err}");
    };
    assert_eq!(get(port, "/health"), Some(200), "{printed}");
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    printed.push_str(&rest);
    assert!(
        printed.contains("its database: postgres://bench:bench@127.0.0.1:"),
        "{printed}"
    );
    assert!(printed.contains("stops by itself in 8s"), "{printed}");
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).ok();
    assert!(status.success(), "{status:?}\n{err}");
    assert!(err.contains("verify: all"), "the stack was verified: {err}");
    assert!(err.contains("(--for)"), "{err}");
    assert_eq!(
        get(port, "/health"),
        None,
        "the stack still answers after `up` ended"
    );
}
