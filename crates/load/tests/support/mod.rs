//! Shared by the engine's integration tests: a counting loopback server and a load config.

#![allow(dead_code)] // each test file uses part of it

use ceiling_load::{parse_target, LoadConfig};
use ceiling_plan::{Model, Stage};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A thread-per-connection HTTP/1.1 server on a loopback port: counts accepted connections, waits
/// `accept_delay` after each accept, answers `200 ok` to each request and closes the connection
/// after answering a request that said `Connection: close`.
pub fn counting_server(accept_delay: Duration) -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicU64::new(0));
    let n = accepted.clone();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            n.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                std::thread::sleep(accept_delay);
                s.set_nodelay(true).ok();
                let mut buf = Vec::with_capacity(4096);
                let mut chunk = [0u8; 4096];
                loop {
                    let end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match s.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(k) => buf.extend_from_slice(&chunk[..k]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    buf.drain(..end);
                    let close = head.contains("connection: close");
                    let resp: &[u8] = if close {
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                    } else {
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                    };
                    if s.write_all(resp).is_err() || close {
                        return;
                    }
                }
            });
        }
    });
    (port, accepted)
}

/// One GET / request shape against the loopback port, one generator thread.
pub fn config(port: u16, model: Model, keep_alive: bool, stage: Stage) -> LoadConfig {
    let target = parse_target(&format!("http://127.0.0.1:{port}"), false).unwrap();
    let mut c = ceiling_load::testing::get_config(target, "/", stage);
    c.model = model;
    c.keep_alive = keep_alive;
    c
}
