//! The control: a trivial HTTP endpoint on the same host, outside the stack, its database and
//! the generator, probed at a low rate through the whole run. When the control freezes in the
//! same seconds as the stack, the host froze (CPU starvation, an I/O stall that blocks the
//! scheduler, a paused VM), not the stack.
//!
//! It runs as its own child process (`ceiling control-server`, hidden), serving and probing
//! itself over loopback on two threads. A thread inside the generator's process would freeze
//! whenever the generator does and could not tell a generator stall from a host stall; its own
//! process shares nothing with the stack or PostgreSQL but the kernel and the CPUs. It runs at
//! the default priority, like the stack (the generator's threads run at nice −10).
//!
//! Output, one line per probe on stdout: `<intended CLOCK_MONOTONIC ns> <latency µs | -1>`;
//! latency is measured from the probe's intended send time (no coordinated omission: probes due
//! during a freeze all carry it), −1 means failed or timed out.

use ceiling_http::blocking::Conn;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// CLOCK_MONOTONIC now, ns (the clock `Instant` uses on Linux, comparable across processes).
pub fn monotonic_ns() -> u64 {
    ceiling_supervise::sys::monotonic_ns()
}

/// The CLOCK_MONOTONIC time of an `Instant` (to place another process's timestamps on the run's
/// clock).
pub fn monotonic_ns_of(i: Instant) -> u64 {
    let now_i = Instant::now();
    let now_m = monotonic_ns();
    // `i` may lie ahead (a run whose agents start after a lead): count forward then.
    match i.checked_duration_since(now_i) {
        Some(ahead) => now_m.saturating_add(ahead.as_nanos() as u64),
        None => now_m.saturating_sub(now_i.saturating_duration_since(i).as_nanos() as u64),
    }
}

const RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";

fn serve(conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let mut r = BufReader::new(match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    let mut w = conn;
    let mut line = String::new();
    loop {
        // read one request head (no body)
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" || line == "\n" => break,
                Ok(_) => {}
            }
        }
        if w.write_all(RESPONSE).is_err() {
            return;
        }
    }
}

/// One probe on the kept-alive connection (opened again after a failure): a 200 within
/// `timeout`, read by the workspace's one HTTP/1.1 client.
fn probe_once(conn: &mut Option<Conn>, port: u16, timeout: Duration) -> bool {
    if conn.as_ref().is_none_or(Conn::is_closed) {
        *conn = Conn::connect(([127, 0, 0, 1], port).into(), timeout).ok();
    }
    let Some(c) = conn.as_mut() else {
        return false;
    };
    let ok = c
        .get("/control", &[], timeout)
        .is_ok_and(|r| r.status == 200);
    if !ok {
        *conn = None;
    }
    ok
}

/// Serves the control endpoint and probes it every `interval` until writing to `out` fails
/// (the parent went away). Never returns otherwise.
pub fn serve_and_probe(
    interval: Duration,
    timeout: Duration,
    mut out: impl Write,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    let port = listener.local_addr()?.port();
    std::thread::Builder::new()
        .name("control-serve".into())
        .spawn(move || {
            for c in listener.incoming().flatten() {
                std::thread::spawn(move || serve(c));
            }
        })?;
    let start = Instant::now();
    let start_ns = monotonic_ns_of(start);
    let mut conn: Option<Conn> = None;
    let mut i: u64 = 0;
    loop {
        let due = start + interval * i as u32;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let ok = probe_once(&mut conn, port, timeout);
        let lat = due.elapsed();
        let intended = start_ns + (interval * i as u32).as_nanos() as u64;
        let lat_us: i64 = if ok && lat <= timeout {
            lat.as_micros() as i64
        } else {
            -1
        };
        writeln!(out, "{intended} {lat_us}")?;
        out.flush()?;
        i += 1;
    }
}

/// Parses one output line: (intended monotonic ns, latency µs or `None` for a miss).
pub fn parse_line(line: &str) -> Option<(u64, Option<u64>)> {
    let mut it = line.split_ascii_whitespace();
    let t: u64 = it.next()?.parse().ok()?;
    let l: i64 = it.next()?.parse().ok()?;
    Some((t, (l >= 0).then_some(l as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_itself() {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        struct Chan(std::sync::mpsc::Sender<Vec<u8>>);
        impl Write for Chan {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0
                    .send(b.to_vec())
                    .map_err(|_| std::io::Error::other("closed"))?;
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        std::thread::spawn(move || {
            let _ = serve_and_probe(Duration::from_millis(20), Duration::from_secs(1), Chan(tx));
        });
        let mut text = String::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while text.lines().count() < 6 && Instant::now() < deadline {
            if let Ok(b) = rx.recv_timeout(Duration::from_secs(1)) {
                text.push_str(&String::from_utf8(b).unwrap());
            }
        }
        drop(rx); // the prober stops at its next write
        let parsed: Vec<_> = text.lines().filter_map(parse_line).collect();
        assert!(parsed.len() >= 5, "{text}");
        // intended times are 20 ms apart and latencies were measured
        assert_eq!(parsed[1].0 - parsed[0].0, 20_000_000);
        assert!(
            parsed.iter().filter(|p| p.1.is_some()).count() >= 4,
            "{text}"
        );
        assert_eq!(parse_line("5 -1"), Some((5, None)));
        assert_eq!(parse_line("x"), None);
    }
}
