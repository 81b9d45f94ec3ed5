//! A small HTTP/1.1 client for the conformance suite.
//!
//! Hand-written on purpose (over tokio's `TcpStream`; responses read by the workspace's one
//! HTTP/1.1 reader, `ceiling_http`): the suite must send what a well-behaved client library refuses to send or normalises away (no
//! `Content-Type`, a wrong one, a body over the limit, malformed JSON), must see the response
//! bytes exactly as the server wrote them (byte-exact bodies), and must still read the answer
//! when a server replies `413` and closes before reading the whole body. Bodies here are small.

use std::fmt;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where the stack listens: `http://host:port[/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Path prefix without a trailing slash ("" for none).
    pub prefix: String,
}

impl BaseUrl {
    /// Parses `http://host[:port][/prefix]` (port 80 by default) with the workspace's one URL
    /// parser ([`ceiling_plan::HttpUrl`]); `https` is refused with what to do instead.
    pub fn parse(url: &str) -> Result<BaseUrl, String> {
        let u = ceiling_plan::HttpUrl::parse(url)?;
        u.require_cleartext("the conformance suite")?;
        if u.path.contains('?') {
            return Err(format!("`{url}`: a base URL cannot carry a query"));
        }
        Ok(BaseUrl {
            prefix: u.base_path().to_string(),
            host: u.host,
            port: u.port,
        })
    }

    fn host_header(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.host_header(), self.prefix)
    }
}

/// One request. `path` includes the query string.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: &'static str,
    pub path: String,
    /// `Content-Type` to send with the body (`None`: no header at all).
    pub content_type: Option<String>,
    pub body: Option<Vec<u8>>,
}

pub const JSON: &str = "application/json";

impl Request {
    pub fn get(path: impl Into<String>) -> Request {
        Request {
            method: "GET",
            path: path.into(),
            content_type: None,
            body: None,
        }
    }

    /// A request with a body sent as `Content-Type: application/json`.
    pub fn json(
        method: &'static str,
        path: impl Into<String>,
        body: impl Into<Vec<u8>>,
    ) -> Request {
        Request {
            method,
            path: path.into(),
            content_type: Some(JSON.to_string()),
            body: Some(body.into()),
        }
    }

    pub fn post(path: impl Into<String>, body: impl Into<Vec<u8>>) -> Request {
        Request::json("POST", path, body)
    }

    pub fn put(path: impl Into<String>, body: impl Into<Vec<u8>>) -> Request {
        Request::json("PUT", path, body)
    }

    /// The same request with another `Content-Type` (`None`: none).
    pub fn content_type(mut self, ct: Option<&str>) -> Request {
        self.content_type = ct.map(str::to_string);
        self
    }

    /// `METHOD /path` plus a short form of the body, for reports.
    pub fn describe(&self) -> String {
        let path = if self.path.chars().count() > 110 {
            format!(
                "{}…({} chars)",
                self.path.chars().take(100).collect::<String>(),
                self.path.len()
            )
        } else {
            self.path.clone()
        };
        let mut s = format!("{} {path}", self.method);
        if let Some(b) = &self.body {
            if b.len() > 120 {
                s.push_str(&format!(" <{} byte body>", b.len()));
            } else {
                s.push(' ');
                s.push_str(&String::from_utf8_lossy(b));
            }
            match &self.content_type {
                Some(ct) if ct != JSON => s.push_str(&format!(" (Content-Type: {ct})")),
                None => s.push_str(" (no Content-Type)"),
                _ => {}
            }
        }
        s
    }

    fn encode(&self, base: &BaseUrl) -> Vec<u8> {
        let mut head = format!(
            "{} {}{} HTTP/1.1\r\nHost: {}\r\nUser-Agent: ceiling-verify/{}\r\n",
            self.method,
            base.prefix,
            self.path,
            base.host_header(),
            env!("CARGO_PKG_VERSION")
        );
        if let Some(ct) = &self.content_type {
            head.push_str(&format!("Content-Type: {ct}\r\n"));
        }
        if let Some(b) = &self.body {
            head.push_str(&format!("Content-Length: {}\r\n", b.len()));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        if let Some(b) = &self.body {
            out.extend_from_slice(b);
        }
        out
    }
}

/// A response as the server sent it (body de-chunked): the workspace's one response type.
pub use ceiling_http::Response;

/// An HTTP/1.1 connection with keep-alive.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    closed: bool,
}

impl Conn {
    pub async fn connect(base: &BaseUrl) -> std::io::Result<Conn> {
        let stream = TcpStream::connect((base.host.as_str(), base.port)).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::with_capacity(8192),
            closed: false,
        })
    }

    /// True once the server said `Connection: close` or closed the connection.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Sends `req` and reads the response. The request is written while the response is read, so
    /// a server that answers early (413) and stops reading is still heard.
    pub async fn send(&mut self, base: &BaseUrl, req: &Request) -> std::io::Result<Response> {
        let bytes = req.encode(base);
        self.buf.clear();
        let (mut rd, mut wr) = self.stream.split();
        let buf = &mut self.buf;
        let head_only = req.method == "HEAD";
        let write = async {
            let r = wr.write_all(&bytes).await;
            if r.is_ok() {
                let _ = wr.flush().await;
            }
            r
        };
        let read = read_response(&mut rd, buf, head_only);
        tokio::pin!(write, read);
        let mut write_result: Option<std::io::Result<()>> = None;
        let resp = loop {
            tokio::select! {
                w = &mut write, if write_result.is_none() => write_result = Some(w),
                r = &mut read => break r,
            }
        };
        match resp {
            Ok((resp, eof)) => {
                if eof
                    || resp.wants_close()
                    || matches!(write_result, Some(Err(_)))
                    || write_result.is_none()
                {
                    self.closed = true;
                }
                Ok(resp)
            }
            Err(e) => {
                self.closed = true;
                match write_result {
                    Some(Err(we)) => Err(std::io::Error::new(
                        we.kind(),
                        format!("{we} (then reading: {e})"),
                    )),
                    _ => Err(e),
                }
            }
        }
    }
}

/// Sends one request on a fresh connection, with a deadline.
pub async fn request(base: &BaseUrl, req: &Request, timeout: Duration) -> Result<Response, String> {
    let fut = async {
        let mut c = Conn::connect(base)
            .await
            .map_err(|e| format!("cannot connect to {base}: {e}"))?;
        c.send(base, req)
            .await
            .map_err(|e| format!("{}: {e}", req.describe()))
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "{}: no response within {:?}",
            req.describe(),
            timeout
        )),
    }
}

/// Reads one response with the workspace's one reader (`ceiling_http`); returns it and whether
/// the server closed the connection.
async fn read_response<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut Vec<u8>,
    head_only: bool,
) -> std::io::Result<(Response, bool)> {
    ceiling_http::read_response(rd, buf, head_only)
        .await
        .map_err(ceiling_http::HttpError::into_io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        let b = BaseUrl::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            (b.host.as_str(), b.port, b.prefix.as_str()),
            ("127.0.0.1", 8080, "")
        );
        let b = BaseUrl::parse("http://localhost/api/").unwrap();
        assert_eq!(
            (b.host.as_str(), b.port, b.prefix.as_str()),
            ("localhost", 80, "/api")
        );
        let b = BaseUrl::parse("http://[::1]:9000").unwrap();
        assert_eq!((b.host.as_str(), b.port), ("::1", 9000));
        assert_eq!(b.to_string(), "http://[::1]:9000");
        assert!(BaseUrl::parse("https://x").is_err());
        assert!(BaseUrl::parse("http://:80").is_err());
        assert!(BaseUrl::parse("http://x:port").is_err());
    }

    #[test]
    fn encodes_requests() {
        let b = BaseUrl::parse("http://h:1/p").unwrap();
        let r = Request::post("/status", "{}").content_type(None);
        let s = String::from_utf8(r.encode(&b)).unwrap();
        assert!(
            s.starts_with("POST /p/status HTTP/1.1\r\nHost: h:1\r\n"),
            "{s}"
        );
        assert!(
            s.contains("Content-Length: 2\r\n") && !s.contains("Content-Type"),
            "{s}"
        );
        assert!(s.ends_with("\r\n\r\n{}"));
        let s = String::from_utf8(Request::get("/x").encode(&b)).unwrap();
        assert!(!s.contains("Content-Length"), "{s}");
    }

    async fn parse(raw: &[u8]) -> std::io::Result<(Response, bool)> {
        let mut rd = raw;
        let mut buf = Vec::new();
        read_response(&mut rd, &mut buf, false).await
    }

    #[tokio::test]
    async fn reads_responses() {
        let (r, eof) = parse(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        )
        .await
        .unwrap();
        assert_eq!(
            (r.status, r.body.as_slice(), r.header("content-type")),
            (200, &b"{}"[..], Some("application/json"))
        );
        assert!(!eof);
        let (r, _) = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n").await.unwrap();
        assert_eq!(r.body, b"abcde");
        let (r, eof) = parse(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 404 Not Found\r\n\r\nbye")
            .await
            .unwrap();
        assert_eq!((r.status, r.body.as_slice(), eof), (404, &b"bye"[..], true));
        let (r, _) = parse(b"HTTP/1.1 204 No Content\r\n\r\n").await.unwrap();
        assert!(r.body.is_empty());
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab")
            .await
            .is_err());
        assert!(parse(b"").await.is_err());
        assert!(parse(b"garbage\r\n\r\n").await.is_err());
    }
}
