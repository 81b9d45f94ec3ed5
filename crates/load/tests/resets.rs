//! The `reset` outcome against servers whose misbehaviour is scripted, so what the engine counts
//! and retries has a truth known in advance:
//! - a connection the server closed while it sat idle is retried once on a new connection, not
//!   counted as an error — also one opened ahead of the schedule and never used (a server's
//!   first-request timeout: Go's `ReadHeaderTimeout`, Tomcat's `connectionTimeout`);
//! - a response cut short is a mid-response reset, with the bytes that had arrived;
//! - a connection opened for the request and closed before any byte is a reset, not retried;
//! - a retry that cannot connect is a reset of its own kind.

mod support;

use ceiling_load::{run, ResetKind, Summary};
use ceiling_metrics::Outcome;
use ceiling_plan::{Model, Stage};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use support::config;

const FULL: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";

/// What the scripted server does with a request.
#[derive(Clone, Copy)]
enum Answer {
    /// The whole response; the connection stays open.
    Full,
    /// The response's first `n` bytes, then an orderly close.
    Cut(usize),
    /// Close without a byte of response.
    Drop,
}

/// The server's script.
#[derive(Clone, Copy)]
struct Script {
    /// Close a connection on which no request arrived this long after accept.
    first_request_timeout: Option<Duration>,
    /// Close a connection idle this long after a response.
    idle_timeout: Option<Duration>,
    answer: Answer,
    /// Stop listening (refuse new connections) after this many accepts.
    accept_max: Option<usize>,
}

/// Reads one request head; `false` when the connection closed or the timeout passed first.
fn read_head(s: &mut TcpStream, timeout: Option<Duration>) -> bool {
    s.set_read_timeout(timeout).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
        }
    }
    true
}

fn scripted_server(script: Script) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut accepted = 0;
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            accepted += 1;
            std::thread::spawn(move || {
                s.set_nodelay(true).ok();
                let mut timeout = script.first_request_timeout;
                while read_head(&mut s, timeout) {
                    match script.answer {
                        Answer::Full => {
                            if s.write_all(FULL).is_err() {
                                return;
                            }
                        }
                        Answer::Cut(n) => {
                            let _ = s.write_all(&FULL[..n]);
                            return;
                        }
                        Answer::Drop => return,
                    }
                    timeout = script.idle_timeout;
                }
                // (dropping the stream closes it: the timeout passed, or the client closed)
            });
            if script.accept_max.is_some_and(|m| accepted >= m) {
                break; // the listener is dropped: new connections are refused
            }
        }
    });
    port
}

fn closed(port: u16, requests: u64) -> Summary {
    run(
        config(
            port,
            Model::Closed,
            true,
            Stage::Closed {
                connections: 1,
                duration: None,
                requests: Some(requests),
            },
        ),
        |_| {},
    )
    .unwrap()
}

fn open(port: u16, rate: f64, secs: u64, max_connections: usize) -> Summary {
    let mut cfg = config(
        port,
        Model::Open,
        true,
        Stage::Hold {
            rate,
            duration: Duration::from_secs(secs),
        },
    );
    cfg.max_connections = max_connections;
    run(cfg, |_| {}).unwrap()
}

#[test]
fn a_connection_the_server_closed_before_its_first_request_is_retried_not_an_error() {
    // Every pre-opened connection is closed by the server 30 ms after accept (the schedule starts
    // 150 ms after the call): the first request finds its connection closed.
    let port = scripted_server(Script {
        first_request_timeout: Some(Duration::from_millis(30)),
        idle_timeout: None,
        answer: Answer::Full,
        accept_max: None,
    });
    let s = open(port, 20.0, 1, 1000);
    let c = s.counts();
    assert_eq!(c.errors(), 0, "no request failed: {c:?}, {:?}", s.resets);
    assert!(c.get(Outcome::Ok) >= 18, "about 20 answered: {c:?}");
    assert_eq!(s.resets.resets(), 0, "{:?}", s.resets);
    assert!(
        s.resets.retried >= 1,
        "the first request's pre-opened connection was closed by the server and retried: {:?}",
        s.resets
    );
    let line = s.resets.describe().expect("the retries are described");
    assert!(line.contains("retried once"), "{line}");
}

#[test]
fn a_response_cut_short_is_a_mid_response_reset_with_its_bytes() {
    let cut = FULL.len() - 4;
    let port = scripted_server(Script {
        first_request_timeout: None,
        idle_timeout: None,
        answer: Answer::Cut(cut),
        accept_max: None,
    });
    let s = closed(port, 4);
    assert_eq!(s.counts().get(Outcome::Reset), 4, "{:?}", s.counts());
    assert_eq!(s.resets.get(ResetKind::MidResponse), 4, "{:?}", s.resets);
    assert_eq!(s.resets.resets(), 4);
    assert_eq!(
        s.resets.retried, 0,
        "a cut response is not the idle-close race"
    );
    let e = &s.resets.examples[0];
    assert_eq!(e.bytes, cut, "the bytes that had arrived: {e}");
    assert_eq!(e.error, "closed", "an orderly close: {e}");
    let line = s.resets.describe().unwrap();
    assert!(
        line.starts_with("4 connection resets: 4 cut mid-response"),
        "{line}"
    );
    assert!(line.contains(&format!("after {cut} bytes")), "{line}");
}

#[test]
fn a_new_connection_closed_before_any_byte_is_a_reset_not_retried() {
    let port = scripted_server(Script {
        first_request_timeout: None,
        idle_timeout: None,
        answer: Answer::Drop,
        accept_max: None,
    });
    let s = closed(port, 3);
    assert_eq!(s.counts().get(Outcome::Reset), 3, "{:?}", s.counts());
    assert_eq!(s.resets.get(ResetKind::ClosedWhenNew), 3, "{:?}", s.resets);
    assert_eq!(s.resets.retried, 0, "its close is the server's answer");
    assert_eq!(s.resets.examples[0].bytes, 0);
}

#[test]
fn a_retry_that_cannot_connect_is_a_reset_of_its_own_kind() {
    // One connection at most. The pre-opened one is closed unused (30 ms) → the first request is
    // retried on a second connection, answered; that one is closed idle 30 ms later and the
    // server stops listening → the second request's retry is refused.
    let port = scripted_server(Script {
        first_request_timeout: Some(Duration::from_millis(30)),
        idle_timeout: Some(Duration::from_millis(30)),
        answer: Answer::Full,
        accept_max: Some(2),
    });
    let s = open(port, 2.0, 1, 1);
    let c = s.counts();
    assert_eq!(
        c.get(Outcome::Ok),
        1,
        "the first request, on its retry: {c:?}"
    );
    assert_eq!(s.resets.retried, 2, "{:?}", s.resets);
    assert_eq!(s.resets.get(ResetKind::RetryFailed), 1, "{:?}", s.resets);
    let e = &s.resets.examples[0];
    assert!(e.retry, "{e}");
    assert!(e.error.contains("the retry's connect"), "{e}");
}
