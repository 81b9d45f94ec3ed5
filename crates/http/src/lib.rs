//! ceiling's one HTTP/1.1 client for everything but the load engine (whose client is its own,
//! for speed): the stand's health and `/metrics` probes, the control's probe, the conformance
//! suite and the tests. One response reader ([`parse_response`]: the head by `httparse`, the
//! body framed by `Content-Length`, chunked encoding or the connection's close, `1xx` heads
//! skipped, every length bounded) is driven by two clients:
//!
//! - [`blocking`]: a `std::net` connection with a deadline — [`blocking::get`] for one request on
//!   a fresh connection, [`blocking::Conn`] to keep one alive (the control's probe);
//! - [`read_response`]: the same reader over any tokio `AsyncRead` (the conformance suite's
//!   connection, which writes a request while it reads the answer).
//!
//! ```text
//! let r = ceiling_http::blocking::get(addr, "/health", &[], Duration::from_secs(2))?;
//! assert_eq!(r.status, 200);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod blocking;

use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest response head read (status line and headers).
pub const MAX_HEAD: usize = 1 << 20;
/// The largest body read, however it is framed.
pub const MAX_BODY: usize = 64 << 20;
/// The longest chunk-size or trailer line accepted.
pub const MAX_LINE: usize = 8 * 1024;

/// Why no response could be read.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Connecting, writing or reading failed (a refused connection, a reset, a timeout).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The bytes received are not an HTTP/1.1 response, or it was cut short.
    #[error("{0}")]
    Malformed(String),
    /// No whole response within the deadline.
    #[error("no response within {0:?}")]
    Timeout(std::time::Duration),
}

impl HttpError {
    /// As an `io::Error` (a malformed response is `InvalidData`), for callers that speak io.
    pub fn into_io(self) -> std::io::Error {
        match self {
            HttpError::Io(e) => e,
            HttpError::Malformed(m) => std::io::Error::new(std::io::ErrorKind::InvalidData, m),
            HttpError::Timeout(d) => std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no response within {d:?}"),
            ),
        }
    }
}

fn malformed(msg: impl Into<String>) -> HttpError {
    HttpError::Malformed(msg.into())
}

/// A response as the server sent it (body de-chunked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header fields in the order received (values trimmed).
    pub headers: Vec<(String, String)>,
    /// The body (empty for `HEAD`, 204 and 304).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body cut to `n` characters, for reports.
    pub fn snippet(&self, n: usize) -> String {
        let t = self.text();
        if t.chars().count() <= n {
            t
        } else {
            let cut: String = t.chars().take(n).collect();
            format!("{cut}…")
        }
    }

    /// Whether the server said `Connection: close`.
    pub fn wants_close(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")))
    }
}

/// What [`parse_response`] made of the bytes so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// More bytes are needed.
    Partial,
    /// A whole response, and how many bytes of the buffer it took (what follows belongs to the
    /// next response on a kept-alive connection).
    Complete {
        /// The response.
        response: Response,
        /// Bytes of the buffer it took.
        consumed: usize,
    },
}

/// Reads one response from `buf`, the bytes received so far; `eof`: the peer closed, so no more
/// will come (a close-delimited body ends there, anything else cut short is an error);
/// `head_only`: the request was `HEAD` (no body whatever the headers say). Pure: call it again
/// with more bytes after [`Parsed::Partial`].
pub fn parse_response(buf: &[u8], eof: bool, head_only: bool) -> Result<Parsed, HttpError> {
    let mut at = 0;
    loop {
        let rest = &buf[at..];
        let mut hdrs = [httparse::EMPTY_HEADER; 96];
        let mut resp = httparse::Response::new(&mut hdrs);
        let head_len = match resp
            .parse(rest)
            .map_err(|e| malformed(format!("bad response head: {e}")))?
        {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial => {
                if eof {
                    return Err(malformed(if rest.is_empty() {
                        "connection closed without a response".to_string()
                    } else {
                        format!(
                            "connection closed inside the response head: {:?}",
                            String::from_utf8_lossy(&rest[..rest.len().min(200)])
                        )
                    }));
                }
                if rest.len() > MAX_HEAD {
                    return Err(malformed("response head over 1 MiB"));
                }
                return Ok(Parsed::Partial);
            }
        };
        let status = resp.code.unwrap_or(0);
        let headers: Vec<(String, String)> = resp
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_string(),
                    String::from_utf8_lossy(h.value).trim().to_string(),
                )
            })
            .collect();
        at += head_len;
        if (100..200).contains(&status) {
            continue; // 100 Continue and friends: the real response follows
        }
        let get = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.as_str())
        };
        let body_at = at;
        let framed = if head_only || status == 204 || status == 304 {
            Some((Vec::new(), body_at))
        } else if get("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
        {
            chunked(buf, body_at, eof)?
        } else if let Some(cl) = get("content-length") {
            let n: usize = cl
                .parse()
                .map_err(|_| malformed(format!("bad Content-Length {cl:?}")))?;
            if n > MAX_BODY {
                return Err(malformed("response body over 64 MiB"));
            }
            let have = buf.len() - body_at;
            if have >= n {
                Some((buf[body_at..body_at + n].to_vec(), body_at + n))
            } else if eof {
                return Err(malformed(format!(
                    "connection closed after {have} of {n} body bytes"
                )));
            } else {
                None
            }
        } else if eof {
            // no framing: the body runs to the connection's close
            Some((buf[body_at..].to_vec(), buf.len()))
        } else {
            if buf.len() - body_at > MAX_BODY {
                return Err(malformed("response body over 64 MiB"));
            }
            None
        };
        return Ok(match framed {
            Some((body, consumed)) => Parsed::Complete {
                response: Response {
                    status,
                    headers,
                    body,
                },
                consumed,
            },
            None => Parsed::Partial,
        });
    }
}

/// A chunked body starting at `at`: the body and where it ends (after the trailers), or `None`
/// when more bytes are needed.
///
/// The chunks are walked first and copied only once the body is whole: a caller that reads a
/// large body in pieces calls this after every piece, and copying the body so far each time
/// would make reading it quadratic in its length (a walk costs one step per chunk header).
fn chunked(buf: &[u8], mut at: usize, eof: bool) -> Result<Option<(Vec<u8>, usize)>, HttpError> {
    let more = |what: &str| -> Result<Option<(Vec<u8>, usize)>, HttpError> {
        if eof {
            Err(malformed(format!("connection closed inside {what}")))
        } else {
            Ok(None)
        }
    };
    // one CRLF-terminated line from `at`: (line, next)
    let line = |at: usize| -> Result<Option<(&[u8], usize)>, HttpError> {
        let rest = &buf[at..];
        // looked for within the longest line allowed only: a line without its end is not
        // searched to the end of a large buffer on every call
        let window = &rest[..rest.len().min(MAX_LINE + 2)];
        match window.windows(2).position(|w| w == b"\r\n") {
            Some(i) if i > MAX_LINE => Err(malformed("chunk line over 8 KiB")),
            Some(i) => Ok(Some((&rest[..i], at + i + 2))),
            None if rest.len() > MAX_LINE => Err(malformed("chunk line over 8 KiB")),
            None => Ok(None),
        }
    };
    // the chunks' data as (start, length) in `buf`, and their total
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut total = 0usize;
    loop {
        let Some((size_line, next)) = line(at)? else {
            return more("a chunked body");
        };
        let text = String::from_utf8_lossy(size_line);
        let size_hex = text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| malformed(format!("bad chunk size {size_hex:?}")))?;
        at = next;
        if size == 0 {
            // trailers up to an empty line
            loop {
                let Some((t, next)) = line(at)? else {
                    return more("a chunked body");
                };
                at = next;
                if t.is_empty() {
                    let mut body = Vec::with_capacity(total);
                    for (from, n) in spans {
                        body.extend_from_slice(&buf[from..from + n]);
                    }
                    return Ok(Some((body, at)));
                }
            }
        }
        if size > MAX_BODY || total + size > MAX_BODY {
            return Err(malformed("response body over 64 MiB"));
        }
        if buf.len() - at < size + 2 {
            return more("a chunk");
        }
        if &buf[at + size..at + size + 2] != b"\r\n" {
            return Err(malformed("chunk not followed by CRLF"));
        }
        spans.push((at, size));
        total += size;
        at += size + 2;
    }
}

/// Reads one response from `rd` into `buf` (which may already hold bytes of it) and returns it
/// with whether the peer closed the connection; the bytes after it stay in `buf`.
pub async fn read_response<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut Vec<u8>,
    head_only: bool,
) -> Result<(Response, bool), HttpError> {
    let mut eof = false;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        if let Parsed::Complete { response, consumed } = parse_response(buf, eof, head_only)? {
            buf.drain(..consumed);
            return Ok((response, eof));
        }
        let n = rd.read(&mut chunk).await?;
        eof = n == 0;
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(bytes: &[u8], head_only: bool) -> Result<(Response, usize), HttpError> {
        match parse_response(bytes, true, head_only)? {
            Parsed::Complete { response, consumed } => Ok((response, consumed)),
            Parsed::Partial => panic!("a closed connection is never partial"),
        }
    }

    /// Every way to frame a body, fed one byte at a time: partial until the last byte, then the
    /// same response as fed whole.
    #[test]
    fn every_framing_reads_the_same_fed_whole_or_byte_by_byte() {
        let cases: [(&[u8], &[u8], u16); 5] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", b"hello", 200),
            (
                b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nok\r\n3\r\n!!!\r\n0\r\nT: 1\r\n\r\n",
                b"ok!!!",
                201,
            ),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", b"", 204),
            (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", b"", 304),
            (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", b"", 404),
        ];
        for (bytes, body, status) in cases {
            for k in 0..bytes.len() {
                assert_eq!(
                    parse_response(&bytes[..k], false, false).unwrap(),
                    Parsed::Partial,
                    "{k} bytes of {:?}",
                    String::from_utf8_lossy(bytes)
                );
            }
            let (r, used) = whole(bytes, false).unwrap();
            assert_eq!(
                (r.status, r.body.as_slice(), used),
                (status, body, bytes.len())
            );
        }
    }

    #[test]
    fn a_kept_alive_connection_leaves_the_next_response_in_the_buffer() {
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n";
        let Parsed::Complete { response, consumed } = parse_response(two, false, false).unwrap()
        else {
            panic!("the first response is whole")
        };
        assert_eq!((response.text().as_str(), consumed), ("ok", 40));
        // a close-delimited body ends only at the close
        let open = b"HTTP/1.1 200 OK\r\n\r\nuntil the end";
        assert_eq!(parse_response(open, false, false).unwrap(), Parsed::Partial);
        assert_eq!(whole(open, false).unwrap().0.text(), "until the end");
        // HEAD: no body whatever Content-Length says
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 999\r\nConnection: close\r\n\r\n";
        let (r, used) = whole(head, true).unwrap();
        assert!(r.body.is_empty() && r.wants_close() && used == head.len());
    }

    #[test]
    fn cut_or_malformed_responses_are_errors_that_say_what() {
        let cases: [(&[u8], &str); 8] = [
            (b"", "connection closed without a response"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Len",
                "inside the response head",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhel",
                "after 3 of 10 body bytes",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: five\r\n\r\nhello",
                "bad Content-Length",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "bad chunk size",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY0\r\n\r\n",
                "not followed by CRLF",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe",
                "inside a chunk",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\nabc",
                "over 64 MiB",
            ),
        ];
        for (bytes, says) in cases {
            let e = parse_response(bytes, true, false).unwrap_err().to_string();
            assert!(
                e.contains(says),
                "{:?}: {e}",
                String::from_utf8_lossy(bytes)
            );
        }
        assert!(parse_response(b"NOT HTTP\r\n\r\n", false, false).is_err());
        // a chunk size that would need more memory than any body is refused before any is read
        let huge = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffff\r\nabc";
        assert!(parse_response(huge, false, false)
            .unwrap_err()
            .to_string()
            .contains("64 MiB"));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_async_reader_takes_one_response_and_keeps_the_rest() {
        let bytes =
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 204 No Content\r\n\r\n";
        let mut rd = &bytes[..];
        let mut buf = Vec::new();
        let (r, eof) = read_response(&mut rd, &mut buf, false).await.unwrap();
        assert_eq!((r.status, r.text().as_str(), eof), (200, "ok", false));
        let (r, _) = read_response(&mut rd, &mut buf, false).await.unwrap();
        assert_eq!(r.status, 204);
        assert!(buf.is_empty());
    }

    /// A large chunked body read the way the clients read it (16-KiB pieces, the reader called
    /// after each): whole and in order, chunk sizes mixed, and a trailer line at the longest
    /// length allowed accepted while one byte longer is refused.
    #[tokio::test(flavor = "current_thread")]
    async fn a_large_chunked_body_read_in_pieces_comes_out_whole() {
        let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let mut want = Vec::new();
        for i in 0..3000usize {
            let n = [1, 7, 1000, 4096][i % 4];
            let data: Vec<u8> = (0..n).map(|k| (i + k) as u8).collect();
            wire.extend_from_slice(format!("{n:x}\r\n").as_bytes());
            wire.extend_from_slice(&data);
            wire.extend_from_slice(b"\r\n");
            want.extend_from_slice(&data);
        }
        let trailer = format!("X: {}\r\n", "t".repeat(MAX_LINE - 3));
        wire.extend_from_slice(b"0\r\n");
        wire.extend_from_slice(trailer.as_bytes());
        wire.extend_from_slice(b"\r\n");
        let mut rd = &wire[..];
        let mut buf = Vec::new();
        let (r, _) = read_response(&mut rd, &mut buf, false).await.unwrap();
        assert_eq!(r.body.len(), want.len());
        assert!(r.body == want, "the body came out changed");
        assert!(buf.is_empty());
        let long = format!("X: {}\r\n", "t".repeat(MAX_LINE - 2));
        let mut cut = wire[..wire.len() - trailer.len() - 2].to_vec();
        cut.extend_from_slice(long.as_bytes());
        cut.extend_from_slice(b"\r\n");
        let e = parse_response(&cut, false, false).unwrap_err().to_string();
        assert!(e.contains("8 KiB"), "{e}");
    }
}
