//! The blocking client: `std::net` sockets with a deadline, for the stand's probes (a stack's
//! health, its `/metrics`), the control's probe and the tests — places where a thread waits for
//! one small answer and a runtime would be in the way.

use crate::{parse_response, HttpError, Parsed, Response};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A kept-alive connection to one server.
pub struct Conn {
    stream: TcpStream,
    addr: SocketAddr,
    buf: Vec<u8>,
    closed: bool,
}

impl Conn {
    /// Connects within `timeout`, with `TCP_NODELAY` (a probe is one small write).
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<Conn, HttpError> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            addr,
            buf: Vec::with_capacity(4096),
            closed: false,
        })
    }

    /// True once the server closed the connection or said `Connection: close`: the next request
    /// needs a new one.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// `GET path` with the given extra header fields; the whole response within `timeout`.
    pub fn get(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Response, HttpError> {
        let mut req = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        let deadline = Instant::now() + timeout;
        self.stream.set_write_timeout(Some(timeout))?;
        let r = self
            .stream
            .write_all(req.as_bytes())
            .map_err(HttpError::from);
        let r = r.and_then(|()| self.read(deadline, timeout));
        match &r {
            Ok(resp) if !resp.wants_close() && !self.closed => {}
            _ => self.closed = true,
        }
        r
    }

    fn read(&mut self, deadline: Instant, timeout: Duration) -> Result<Response, HttpError> {
        let mut chunk = [0u8; 16 * 1024];
        let mut eof = false;
        loop {
            if let Parsed::Complete { response, consumed } = parse_response(&self.buf, eof, false)?
            {
                self.buf.drain(..consumed);
                self.closed |= eof;
                return Ok(response);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(HttpError::Timeout(timeout));
            }
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(&mut chunk) {
                Ok(n) => {
                    eof = n == 0;
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(HttpError::Timeout(timeout))
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// `GET path` on a fresh connection (`Connection: close`), connected within `timeout` and
/// answered within `timeout` more.
pub fn get(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<Response, HttpError> {
    let mut c = Conn::connect(addr, timeout)?;
    let mut all = vec![("Connection", "close")];
    all.extend_from_slice(headers);
    c.get(path, &all, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that answers each request head on a connection with the next of `answers`.
    fn serve(answers: Vec<&'static [u8]>) -> (SocketAddr, std::thread::JoinHandle<Vec<String>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut heads = Vec::new();
            for a in answers {
                let mut got = Vec::new();
                let mut b = [0u8; 1024];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = c.read(&mut b).unwrap();
                    if n == 0 {
                        return heads;
                    }
                    got.extend_from_slice(&b[..n]);
                }
                heads.push(String::from_utf8_lossy(&got).into_owned());
                // a response in two writes: the reader must wait for the rest
                let (x, y) = a.split_at(a.len() / 2);
                c.write_all(x).unwrap();
                std::thread::sleep(Duration::from_millis(20));
                c.write_all(y).unwrap();
            }
            heads
        });
        (addr, h)
    }

    #[test]
    fn one_connection_carries_several_requests_until_the_server_closes_it() {
        let (addr, h) = serve(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        ]);
        let t = Duration::from_secs(5);
        let mut c = Conn::connect(addr, t).unwrap();
        assert_eq!(c.get("/a", &[], t).unwrap().text(), "ok");
        assert!(!c.is_closed());
        let r = c.get("/b", &[("Accept", "text/plain")], t).unwrap();
        assert_eq!(r.text(), "abc");
        assert_eq!(c.get("/c", &[], t).unwrap().status, 503);
        assert!(c.is_closed(), "the server said Connection: close");
        let heads = h.join().unwrap();
        assert!(
            heads[1].starts_with("GET /b HTTP/1.1\r\n")
                && heads[1].contains("Accept: text/plain\r\n")
        );
    }

    #[test]
    fn silence_is_a_timeout_and_nothing_listening_an_io_error() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let e = get(addr, "/", &[], Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, HttpError::Timeout(_)), "{e}");
        drop(l);
        let e = get(addr, "/", &[], Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, HttpError::Io(_)), "{e}");
    }
}
