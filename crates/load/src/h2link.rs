//! HTTP/2 for the engine (the `h2` crate): a worker's connections each carry up to `streams`
//! concurrent requests. The engine keeps thinking in "connections" — one request in flight on each
//! at a time — and with HTTP/2 each of those is a *stream slot* attached to a shared HTTP/2
//! connection ([`H2Pool`]); a new TCP (and TLS, ALPN `h2`) connection is opened only when every
//! open one has all its slots taken. Over cleartext it is HTTP/2 with prior knowledge (h2c).
//!
//! The request is the same pre-rendered HTTP/1.1 head the engine sends otherwise, taken apart
//! with httparse into HTTP/2's fields (`Host` becomes `:authority`; the hop-by-hop headers
//! HTTP/2 forbids are dropped), so the request mix, templates and data are one code path.

use crate::http::{ExchangeError, Response};
use crate::tls::{Handshake, TlsClient};
use crate::Target;
use bytes::Bytes;
use std::cell::Cell;
use std::rc::Rc;
use tokio::net::TcpStream;

/// One HTTP/2 connection of a worker: its request handle, its slots in use, whether it died.
pub(crate) struct H2Conn {
    send: h2::client::SendRequest<Bytes>,
    scheme: &'static str,
    attached: Cell<usize>,
    dead: Rc<Cell<bool>>,
}

/// A worker's HTTP/2 connections to the target.
pub(crate) struct H2Pool {
    conns: std::cell::RefCell<Vec<Rc<H2Conn>>>,
    /// Stream slots per connection.
    pub streams: usize,
    /// HTTP/2 connections opened over the run.
    pub opened: Cell<u64>,
    /// The most slots one connection carried at once.
    pub max_attached: Cell<usize>,
    /// TLS with ALPN `h2` (https targets).
    tls: Option<TlsClient>,
    /// One opener at a time, so tasks that need a slot at once share the connection the first
    /// one opens instead of each opening its own.
    opening: tokio::sync::Mutex<()>,
}

impl H2Pool {
    /// A pool for `target` with `streams` slots per connection.
    pub fn new(target: &Target, streams: usize) -> Result<H2Pool, String> {
        let tls = match &target.tls {
            Some(t) => Some(t.with_alpn(&[b"h2"])?),
            None => None,
        };
        Ok(H2Pool {
            conns: Default::default(),
            streams: streams.max(1),
            opened: Cell::new(0),
            max_attached: Cell::new(0),
            tls,
            opening: tokio::sync::Mutex::new(()),
        })
    }

    /// A live connection with a free slot, taking the slot.
    fn take_free(&self) -> Option<H2Slot> {
        let mut conns = self.conns.borrow_mut();
        conns.retain(|c| !c.dead.get() || c.attached.get() > 0);
        let c = conns
            .iter()
            .find(|c| !c.dead.get() && c.attached.get() < self.streams)?
            .clone();
        c.attached.set(c.attached.get() + 1);
        self.max_attached
            .set(self.max_attached.get().max(c.attached.get()));
        Some(H2Slot {
            conn: c,
            pending: None,
        })
    }

    /// A stream slot: on a connection with room, or on a new one (its TLS handshake returned).
    pub async fn attach(&self, target: &Target) -> std::io::Result<(H2Slot, Option<Handshake>)> {
        if let Some(s) = self.take_free() {
            return Ok((s, None));
        }
        let _one = self.opening.lock().await;
        if let Some(s) = self.take_free() {
            return Ok((s, None));
        }
        let (conn, handshake) = self.open(target).await?;
        self.conns.borrow_mut().push(Rc::new(conn));
        self.opened.set(self.opened.get() + 1);
        let s = self
            .take_free()
            .ok_or_else(|| std::io::Error::other("the new HTTP/2 connection closed at once"))?;
        Ok((s, handshake))
    }

    async fn open(&self, target: &Target) -> std::io::Result<(H2Conn, Option<Handshake>)> {
        let tcp = TcpStream::connect(target.addr).await?;
        tcp.set_nodelay(true)?;
        let dead = Rc::new(Cell::new(false));
        let to_io = |e: h2::Error| std::io::Error::other(format!("HTTP/2 handshake: {e}"));
        let mut builder = h2::client::Builder::new();
        // Large windows: a load generator reads every byte at once, flow control only slows it.
        builder
            .initial_window_size(4 << 20)
            .initial_connection_window_size(16 << 20);
        let (send, handshake, scheme) = match &self.tls {
            None => {
                let (send, conn) = builder.handshake::<_, Bytes>(tcp).await.map_err(to_io)?;
                let d = dead.clone();
                tokio::task::spawn_local(async move {
                    let _ = conn.await;
                    d.set(true);
                });
                (send, None, "http")
            }
            Some(tls) => {
                let (s, h) = tls.handshake(tcp).await?;
                if h.alpn.as_deref() != Some("h2") {
                    return Err(std::io::Error::other(format!(
                        "the server did not agree to HTTP/2 over TLS (ALPN gave {}); leave out --http2",
                        h.alpn.as_deref().unwrap_or("nothing")
                    )));
                }
                let (send, conn) = builder.handshake::<_, Bytes>(s).await.map_err(to_io)?;
                let d = dead.clone();
                tokio::task::spawn_local(async move {
                    let _ = conn.await;
                    d.set(true);
                });
                (send, Some(h), "https")
            }
        };
        Ok((
            H2Conn {
                send,
                scheme,
                attached: Cell::new(0),
                dead,
            },
            handshake,
        ))
    }
}

/// A stream slot on an HTTP/2 connection: one request in flight at a time, like an HTTP/1.1
/// connection. Dropping it frees the slot.
pub(crate) struct H2Slot {
    conn: Rc<H2Conn>,
    pending: Option<h2::client::ResponseFuture>,
}

impl Drop for H2Slot {
    fn drop(&mut self) {
        self.conn.attached.set(self.conn.attached.get() - 1);
    }
}

impl H2Slot {
    /// Sends the request (an HTTP/1.1 head and body, as the engine renders it) as an HTTP/2
    /// stream. A failure before any response byte is `Closed` (the engine's one retry applies).
    pub async fn send(&mut self, req: &[u8]) -> Result<(), String> {
        let (request, body) = to_h2(req, self.conn.scheme)?;
        let mut send = self
            .conn
            .send
            .clone()
            .ready()
            .await
            .map_err(|e| format!("HTTP/2: {e}"))?;
        let (response, mut stream) = send
            .send_request(request, body.is_empty())
            .map_err(|e| format!("HTTP/2: {e}"))?;
        if !body.is_empty() {
            stream
                .send_data(body, true)
                .map_err(|e| format!("HTTP/2: {e}"))?;
        }
        self.pending = Some(response);
        Ok(())
    }

    /// Reads the response of the request sent: its status and every body byte (flow-control
    /// capacity given back as it is read).
    pub async fn receive(&mut self) -> Result<Response, (ExchangeError, String)> {
        let response = self
            .pending
            .take()
            .ok_or((ExchangeError::Malformed, "no request in flight".to_string()))?;
        let resp = response
            .await
            .map_err(|e| (ExchangeError::Closed, format!("HTTP/2: {e}")))?;
        let status = resp.status().as_u16();
        let mut body = resp.into_body();
        let mut bytes = 0usize;
        while let Some(chunk) = body.data().await {
            let c = chunk.map_err(|e| (ExchangeError::Reset, format!("HTTP/2: {e}")))?;
            bytes += c.len();
            let _ = body.flow_control().release_capacity(c.len());
        }
        Ok(Response {
            status,
            reusable: !self.conn.dead.get(),
            bytes,
        })
    }
}

/// HTTP/1.1 header fields HTTP/2 forbids (RFC 9113 §8.2.2), and `Host` (→ `:authority`).
const DROPPED: [&str; 6] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// The engine's HTTP/1.1 request as an HTTP/2 request and its body.
fn to_h2(req: &[u8], scheme: &str) -> Result<(http::Request<()>, Bytes), String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Request::new(&mut headers);
    let head = match r.parse(req) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return Err("the request could not be turned into HTTP/2".to_string()),
    };
    let mut authority = "";
    let mut b = http::Request::builder().method(r.method.unwrap_or("GET"));
    for h in r.headers.iter() {
        if h.name.eq_ignore_ascii_case("host") {
            authority = std::str::from_utf8(h.value).unwrap_or("");
        }
        if DROPPED.iter().any(|d| h.name.eq_ignore_ascii_case(d)) {
            continue;
        }
        b = b.header(h.name, h.value);
    }
    let uri = format!("{scheme}://{authority}{}", r.path.unwrap_or("/"));
    let request = b
        .uri(uri)
        .version(http::Version::HTTP_2)
        .body(())
        .map_err(|e| format!("HTTP/2 request: {e}"))?;
    Ok((request, Bytes::copy_from_slice(&req[head..])))
}

#[cfg(test)]
mod tests {
    use super::to_h2;

    #[test]
    fn an_http1_request_becomes_its_http2_fields() {
        let req = b"POST /api/orders?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: ceiling/0\r\nContent-Type: application/json\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{\"a\":1}";
        let (r, body) = to_h2(req, "https").unwrap();
        assert_eq!(r.method(), "POST");
        assert_eq!(r.uri().to_string(), "https://127.0.0.1:8080/api/orders?x=1");
        assert_eq!(r.headers()["content-type"], "application/json");
        assert!(r.headers().get("host").is_none() && r.headers().get("connection").is_none());
        assert_eq!(&body[..], b"{\"a\":1}");
        assert!(to_h2(b"GARBAGE", "http").is_err());
    }
}
