//! The helpers ceiling's test binaries share, so each test file holds its test and nothing
//! written twice: where the repository is, whether a tool is installed, a loopback port nobody
//! uses, a plain blocking `GET`, a finished command's output as text, and the run directory a
//! command left. A dev-dependency only:
//! nothing here reaches a shipped binary.
#![forbid(unsafe_code)]

use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// The repository's root (every crate lives in `crates/<name>`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository's root exists")
}

/// Where `bin` is on PATH, if it is.
pub fn on_path(bin: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(bin))
        .find(|p| p.is_file())
}

/// A loopback port nobody listens on now: bound, then released.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port")
        .port()
}

/// `GET path` on `addr` over a fresh connection closed after the answer (the workspace's one
/// HTTP/1.1 client, `ceiling_http`): its status code and body, or `None` when nothing connects
/// or answers within 5 s each.
pub fn http_get(addr: impl ToSocketAddrs, path: &str) -> Option<(u16, String)> {
    let addr = addr.to_socket_addrs().ok()?.next()?;
    let r = ceiling_http::blocking::get(addr, path, &[], Duration::from_secs(5)).ok()?;
    Some((r.status, r.text()))
}

/// A finished command's stdout and stderr as text.
pub fn output_text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The run directory a `ceiling run` or `ceiling search` wrote under `results` (the first one
/// holding a `run.json`): where its records are read back.
pub fn only_run(results: &Path) -> PathBuf {
    std::fs::read_dir(results)
        .unwrap_or_else(|e| panic!("{}: {e}", results.display()))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("run.json").exists())
        .unwrap_or_else(|| {
            panic!(
                "no results directory with run.json under {}",
                results.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn the_root_holds_the_workspace_and_a_free_port_is_free() {
        assert!(repo_root().join("Cargo.toml").is_file());
        assert!(repo_root().join("crates/testkit").is_dir());
        let p = free_port();
        assert!(std::net::TcpListener::bind(("127.0.0.1", p)).is_ok());
        assert!(on_path("sh").is_some());
        assert!(on_path("no-such-tool-ceiling").is_none());
    }

    #[test]
    fn a_get_reads_the_status_and_body_and_nothing_listening_is_none() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
            c.write_all(b"HTTP/1.1 418 I'm a teapot\r\nContent-Length: 5\r\n\r\nshort")
                .unwrap();
        });
        assert_eq!(http_get(addr, "/x"), Some((418, "short".to_string())));
        server.join().unwrap();
        assert_eq!(http_get(("127.0.0.1", free_port()), "/"), None);
    }
}
