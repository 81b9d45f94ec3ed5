//! A minimal HTTP/1.1 client exchange: write a request, read exactly one response, over TCP or
//! TLS (rustls).
//!
//! Headers are parsed by `httparse`; bodies are framed by Content-Length, chunked encoding, or the
//! connection closing, and are read and discarded. This is all a load generator needs, and it keeps
//! the per-request cost near wrk's (no allocation per request in the steady state).

use crate::h2link::H2Slot;
use crate::tls::Handshake;
use crate::Target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Responses up to this size (head + body) are read whole into the connection's buffer; larger
/// bodies are read through it and discarded.
const MAX_BUFFERED: usize = 1 << 20;

/// The longest chunk-size or trailer line accepted.
const MAX_LINE: usize = 8 * 1024;

/// How an exchange failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeError {
    /// The peer closed the connection before sending any byte of the response (on a kept-alive
    /// connection this is the idle-close race: the request can be retried on a new connection).
    Closed,
    /// The peer reset or closed the connection before the response was complete.
    Reset,
    /// The response could not be parsed.
    Malformed,
}

/// A completed response.
#[derive(Debug, Clone, Copy)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Whether the connection can carry another request.
    pub reusable: bool,
    /// Bytes received for this response (head + body).
    #[allow(dead_code)]
    pub bytes: usize,
}

/// A keep-alive connection with its read buffer.
pub struct Conn {
    /// Responses completed on this connection (0 = fresh).
    pub served: u64,
    /// When the connection last became idle, on the engine's clock (ns): after its last exchange,
    /// or when it was opened ahead of any request; 0 while it never sat idle (opened for the
    /// request at hand). A connection that sat idle may have been closed by the server meanwhile
    /// (its idle or first-request timeout), which is what the engine's one retry is for.
    pub idle_since_ns: u64,
    /// Bytes read since the last request was written: how much of the response had arrived when
    /// an exchange failed.
    pub got: usize,
    /// How the last failed read or write ended: `closed` (EOF) or the OS error.
    pub last_error: Option<String>,
    stream: Io,
    buf: Vec<u8>,
    /// Bytes of `buf` that hold data not yet consumed.
    filled: usize,
}

/// The byte stream under a connection.
enum Io {
    Tcp(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// A stream slot on an HTTP/2 connection (sends and receives through it, never the
    /// byte-level reads below).
    H2(H2Slot),
}

impl Io {
    async fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Io::Tcp(s) => s.read(buf).await,
            Io::Tls(s) => s.read(buf).await,
            Io::H2(_) => Err(std::io::Error::other("HTTP/2 is read by streams")),
        }
    }

    async fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Io::Tcp(s) => s.write_all(b).await,
            Io::Tls(s) => {
                s.write_all(b).await?;
                // rustls buffers the records it made; send them now
                s.flush().await
            }
            Io::H2(_) => Err(std::io::Error::other("HTTP/2 is written by streams")),
        }
    }
}

impl Conn {
    /// Connects with TCP_NODELAY, and for an `https` target does the TLS handshake, returned with
    /// the connection (its duration and kind, for the run's tally).
    pub async fn connect(target: &Target) -> std::io::Result<(Conn, Option<Handshake>)> {
        let tcp = TcpStream::connect(target.addr).await?;
        tcp.set_nodelay(true)?;
        let (stream, handshake) = match &target.tls {
            None => (Io::Tcp(tcp), None),
            Some(tls) => {
                let (s, h) = tls.handshake(tcp).await?;
                (Io::Tls(Box::new(s)), Some(h))
            }
        };
        let conn = Conn {
            served: 0,
            idle_since_ns: 0,
            got: 0,
            last_error: None,
            stream,
            buf: vec![0; 16 * 1024],
            filled: 0,
        };
        Ok((conn, handshake))
    }

    /// A connection that is a stream slot on an HTTP/2 connection.
    pub fn h2(slot: H2Slot) -> Conn {
        Conn {
            served: 0,
            idle_since_ns: 0,
            got: 0,
            last_error: None,
            stream: Io::H2(slot),
            buf: Vec::new(),
            filled: 0,
        }
    }

    /// Writes the request. Returns an error on a broken connection.
    pub async fn send(&mut self, req: &[u8]) -> Result<(), ExchangeError> {
        // Nothing of a response can have arrived yet: a failed write is a close before the response.
        self.got = 0;
        if let Io::H2(slot) = &mut self.stream {
            return slot.send(req).await.map_err(|e| {
                self.last_error = Some(e);
                ExchangeError::Closed
            });
        }
        self.stream.write_all(req).await.map_err(|e| {
            self.last_error = Some(e.to_string());
            ExchangeError::Closed
        })
    }

    /// Reads one response. `head_only` for HEAD requests (no body follows).
    pub async fn receive(&mut self, head_only: bool) -> Result<Response, ExchangeError> {
        if let Io::H2(slot) = &mut self.stream {
            return match slot.receive().await {
                Ok(r) => {
                    self.served += 1;
                    self.got = r.bytes;
                    Ok(r)
                }
                Err((kind, e)) => {
                    self.last_error = Some(e);
                    Err(kind)
                }
            };
        }
        loop {
            // Parse what we have.
            if self.filled > 0 {
                let mut headers = [httparse::EMPTY_HEADER; 48];
                let mut resp = httparse::Response::new(&mut headers);
                match resp.parse(&self.buf[..self.filled]) {
                    Ok(httparse::Status::Complete(head)) => {
                        let status = resp.code.unwrap_or(0);
                        let Some(BodyFraming {
                            length,
                            chunked,
                            close,
                        }) = body_framing(&resp)
                        else {
                            return Err(ExchangeError::Malformed);
                        };
                        if (100..200).contains(&status) {
                            // Interim response: drop it and read the real one.
                            self.consume(head);
                            continue;
                        }
                        let no_body = head_only || status == 204 || status == 304;
                        if no_body {
                            return Ok(self.finish(status, close, head, head));
                        }
                        if chunked {
                            self.consume(head);
                            let body = self.skip_chunked().await?;
                            return Ok(self.finish(status, close, head + body, 0));
                        }
                        let Some(len) = length else {
                            // Body delimited by close.
                            let n = self.read_to_close(head).await;
                            return Ok(Response {
                                status,
                                reusable: false,
                                bytes: n,
                            });
                        };
                        let total = head.checked_add(len).ok_or(ExchangeError::Malformed)?;
                        if total <= MAX_BUFFERED {
                            self.fill_to(total).await?;
                            return Ok(self.finish(status, close, total, total));
                        }
                        // A body larger than we buffer (or a Content-Length no server could
                        // mean): read it through and discard it; memory stays bounded.
                        self.consume(head);
                        self.discard(len).await?;
                        return Ok(self.finish(status, close, total, 0));
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(_) => return Err(ExchangeError::Malformed),
                }
            }
            self.read_more().await?;
        }
    }

    fn consume(&mut self, n: usize) {
        self.buf.copy_within(n..self.filled, 0);
        self.filled -= n;
    }

    async fn read_more(&mut self) -> Result<(), ExchangeError> {
        if self.filled == self.buf.len() {
            if self.buf.len() >= 64 * 1024 * 1024 {
                return Err(ExchangeError::Malformed);
            }
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let before = self.filled;
        let failed = match self.stream.read(&mut self.buf[self.filled..]).await {
            Ok(0) => "closed".to_string(),
            Err(e) => e.to_string(),
            Ok(n) => {
                self.filled += n;
                self.got += n;
                return Ok(());
            }
        };
        self.last_error = Some(failed);
        if before == 0 {
            Err(ExchangeError::Closed)
        } else {
            Err(ExchangeError::Reset)
        }
    }

    async fn fill_to(&mut self, n: usize) -> Result<(), ExchangeError> {
        if self.buf.len() < n {
            self.buf.resize(n.next_power_of_two(), 0);
        }
        while self.filled < n {
            self.read_more().await?;
        }
        Ok(())
    }

    /// Completes a response: drops `consumed` bytes of the buffer (the rest may be the next,
    /// pipelined response) and counts it.
    fn finish(&mut self, status: u16, close: bool, bytes: usize, consumed: usize) -> Response {
        self.consume(consumed);
        if let (0, Io::Tcp(tcp)) = (self.filled, &self.stream) {
            // The response is complete and nothing else is buffered: the server sends nothing
            // more until our next request. Drop tokio's cached read readiness now, so the next
            // read waits for epoll instead of spending a recv() syscall that can only return
            // EAGAIN (wrk does not pay it). (Not under TLS: rustls may hold bytes of its own.)
            let _ = tcp.try_io(tokio::io::Interest::READABLE, || {
                Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
            });
        }
        self.served += 1;
        Response {
            status,
            reusable: !close,
            bytes,
        }
    }

    /// [`Self::read_more`] once part of the response has been consumed: a close is then a
    /// response cut short, never the idle-close race.
    async fn read_more_mid(&mut self) -> Result<(), ExchangeError> {
        self.read_more().await.map_err(|_| ExchangeError::Reset)
    }

    /// Reads and drops `n` body bytes, through the buffer, never growing it.
    async fn discard(&mut self, mut n: usize) -> Result<(), ExchangeError> {
        loop {
            let take = self.filled.min(n);
            self.consume(take);
            n -= take;
            if n == 0 {
                return Ok(());
            }
            self.read_more_mid().await?;
        }
    }

    /// The index of the next CRLF in the buffer, reading more as needed; a line longer than
    /// [`MAX_LINE`] is malformed.
    async fn line_end(&mut self) -> Result<usize, ExchangeError> {
        loop {
            if let Some(i) = self.buf[..self.filled]
                .windows(2)
                .position(|w| w == b"\r\n")
            {
                return Ok(i);
            }
            if self.filled > MAX_LINE {
                return Err(ExchangeError::Malformed);
            }
            self.read_more_mid().await?;
        }
    }

    /// Reads and discards a chunked body (the head already consumed); returns its encoded
    /// length. Chunks of any size pass through the buffer without growing it.
    async fn skip_chunked(&mut self) -> Result<usize, ExchangeError> {
        let mut total = 0usize;
        loop {
            // chunk-size [; extensions] CRLF
            let end = self.line_end().await?;
            let line =
                std::str::from_utf8(&self.buf[..end]).map_err(|_| ExchangeError::Malformed)?;
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| ExchangeError::Malformed)?;
            self.consume(end + 2);
            total += end + 2;
            if size == 0 {
                // trailer fields, then an empty line
                loop {
                    let end = self.line_end().await?;
                    self.consume(end + 2);
                    total += end + 2;
                    if end == 0 {
                        return Ok(total);
                    }
                }
            }
            self.discard(size).await?;
            total = total.saturating_add(size);
            // the chunk's data ends with CRLF
            while self.filled < 2 {
                self.read_more_mid().await?;
            }
            if &self.buf[..2] != b"\r\n" {
                return Err(ExchangeError::Malformed);
            }
            self.consume(2);
            total += 2;
        }
    }

    /// Reads and discards until the peer closes; returns all bytes of the response.
    async fn read_to_close(&mut self, head: usize) -> usize {
        let mut n = self.filled;
        let mut scratch = [0u8; 8192];
        self.filled = 0;
        let _ = head;
        loop {
            match self.stream.read(&mut scratch).await {
                Ok(0) | Err(_) => return n,
                Ok(k) => n += k,
            }
        }
    }
}

/// What a response's head says about its body.
pub(crate) struct BodyFraming {
    /// Content-Length, if given.
    pub length: Option<usize>,
    /// Transfer-Encoding: chunked.
    pub chunked: bool,
    /// The connection closes after this response (HTTP/1.0, or `Connection: close`).
    pub close: bool,
}

/// Reads the framing headers of a parsed response head; `None` when a Content-Length is not a
/// number. Shared by the tokio engine's client and the ticked engine's framer.
pub(crate) fn body_framing(resp: &httparse::Response) -> Option<BodyFraming> {
    let mut f = BodyFraming {
        length: None,
        chunked: false,
        close: resp.version == Some(0),
    };
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            f.length = Some(std::str::from_utf8(h.value).ok()?.trim().parse().ok()?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            f.chunked = h
                .value
                .windows(7)
                .any(|w| w.eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            if h.value.eq_ignore_ascii_case(b"close") {
                f.close = true;
            } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                f.close = false;
            }
        }
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    //! The response framing against scripted servers: every way a response can arrive (in one
    //! piece, a byte at a time, pipelined, chunked with extensions and trailers, interim 100s,
    //! close-delimited) and every way it can be wrong.

    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    /// How the scripted server writes its bytes.
    #[derive(Clone, Copy)]
    enum Pace {
        /// One write.
        Whole,
        /// One byte per write, with a pause, so every read is short.
        ByteByByte,
    }

    /// A server that accepts one connection, writes `script` as paced, then closes; and a
    /// connection to it.
    async fn scripted(script: Vec<u8>, pace: Pace) -> Conn {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            s.set_nodelay(true).unwrap();
            match pace {
                Pace::Whole => {
                    let _ = s.write_all(&script).await;
                }
                Pace::ByteByByte => {
                    for b in script {
                        if s.write_all(&[b]).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_micros(200)).await;
                    }
                }
            }
            let _ = s.shutdown().await;
        });
        let target = crate::Target {
            addr,
            host_header: addr.to_string(),
            base_path: String::new(),
            tls: None,
        };
        Conn::connect(&target).await.unwrap().0
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn one(script: &[u8], pace: Pace, head_only: bool) -> Result<Response, ExchangeError> {
        rt().block_on(async {
            let mut c = scripted(script.to_vec(), pace).await;
            c.receive(head_only).await
        })
    }

    const OK: &[u8] =
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello";

    #[test]
    fn content_length_in_one_piece_and_byte_by_byte() {
        for pace in [Pace::Whole, Pace::ByteByByte] {
            let r = one(OK, pace, false).unwrap();
            assert_eq!((r.status, r.reusable, r.bytes), (200, true, OK.len()));
        }
    }

    #[test]
    fn pipelined_responses_in_one_write_are_two_responses() {
        rt().block_on(async {
            let two = [OK, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"].concat();
            let mut c = scripted(two, Pace::Whole).await;
            let a = c.receive(false).await.unwrap();
            let b = c.receive(false).await.unwrap();
            assert_eq!((a.status, b.status), (200, 404));
            assert_eq!(c.served, 2);
            // then the server closed: nothing of a third response arrived
            assert_eq!(c.receive(false).await.unwrap_err(), ExchangeError::Closed);
        });
    }

    #[test]
    fn chunked_with_extensions_and_trailers_in_any_pieces() {
        let body = b"4;ext=1\r\nWiki\r\n0b\r\npedia in \r\n\r\n0\r\nX-Trailer: yes\r\n\r\n";
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let script = [&head[..], &body[..], OK].concat();
        for pace in [Pace::Whole, Pace::ByteByByte] {
            rt().block_on(async {
                let mut c = scripted(script.clone(), pace).await;
                let r = c.receive(false).await.unwrap();
                assert_eq!((r.status, r.bytes), (200, head.len() + body.len()));
                // the response after it is intact
                assert_eq!(c.receive(false).await.unwrap().bytes, OK.len());
            });
        }
    }

    #[test]
    fn interim_100_continue_is_skipped() {
        let script = [&b"HTTP/1.1 100 Continue\r\n\r\n"[..], OK].concat();
        assert_eq!(one(&script, Pace::Whole, false).unwrap().status, 200);
    }

    #[test]
    fn head_204_and_304_have_no_body() {
        // a HEAD response announces the length of a body that never comes
        let r = one(
            b"HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n",
            Pace::Whole,
            true,
        )
        .unwrap();
        assert_eq!((r.status, r.reusable), (200, true));
        for code in ["204 No Content", "304 Not Modified"] {
            let s = format!("HTTP/1.1 {code}\r\n\r\n");
            let r = one(s.as_bytes(), Pace::Whole, false).unwrap();
            assert!(r.reusable && r.bytes == s.len(), "{code}: {r:?}");
        }
    }

    #[test]
    fn connection_close_and_http_1_0_are_not_reusable() {
        let r = one(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            Pace::Whole,
            false,
        )
        .unwrap();
        assert!(!r.reusable);
        let r = one(
            b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
            Pace::Whole,
            false,
        )
        .unwrap();
        assert!(!r.reusable);
        let r = one(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            Pace::Whole,
            false,
        )
        .unwrap();
        assert!(r.reusable);
    }

    #[test]
    fn a_body_delimited_by_close_is_read_to_the_end() {
        let script = b"HTTP/1.1 200 OK\r\n\r\nuntil the end";
        for pace in [Pace::Whole, Pace::ByteByByte] {
            let r = one(script, pace, false).unwrap();
            assert_eq!((r.reusable, r.bytes), (false, script.len()));
        }
    }

    #[test]
    fn bad_input_is_malformed() {
        for bad in [
            &b"garbage\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: five\r\n\r\nhello",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            // chunk data not followed by CRLF
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY0\r\n\r\n",
            // a chunk-size line that never ends
            &[
                &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
                &[b'1'; 20_000],
            ]
            .concat(),
        ] {
            assert_eq!(
                one(bad, Pace::Whole, false).unwrap_err(),
                ExchangeError::Malformed,
                "{:?}",
                String::from_utf8_lossy(&bad[..bad.len().min(60)])
            );
        }
    }

    #[test]
    fn closed_before_any_byte_is_closed_and_mid_response_is_reset() {
        assert_eq!(
            one(b"", Pace::Whole, false).unwrap_err(),
            ExchangeError::Closed
        );
        for cut in [
            &b"HTTP/1.1 200 OK\r\nContent-Len"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhel",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            assert_eq!(
                one(cut, Pace::Whole, false).unwrap_err(),
                ExchangeError::Reset,
                "{:?}",
                String::from_utf8_lossy(cut)
            );
        }
    }

    #[test]
    fn huge_announced_lengths_do_not_grow_the_buffer() {
        // a Content-Length or chunk size no server means, then the connection closes: an error,
        // never an allocation of that size (this once sized the buffer from the header)
        rt().block_on(async {
            for script in [
                &b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\nabc"[..],
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffff\r\nabc",
            ] {
                let mut c = scripted(script.to_vec(), Pace::Whole).await;
                assert_eq!(c.receive(false).await.unwrap_err(), ExchangeError::Reset);
                assert!(c.buf.len() <= 64 * 1024, "buffer grew to {}", c.buf.len());
            }
        });
    }

    #[test]
    fn a_large_body_passes_through_a_bounded_buffer() {
        rt().block_on(async {
            let n = 3 * MAX_BUFFERED + 17;
            let mut script = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").into_bytes();
            let head = script.len();
            script.extend(std::iter::repeat_n(b'x', n));
            script.extend_from_slice(OK);
            let mut c = scripted(script, Pace::Whole).await;
            let r = c.receive(false).await.unwrap();
            assert_eq!(r.bytes, head + n);
            assert!(c.buf.len() <= 64 * 1024, "buffer grew to {}", c.buf.len());
            assert_eq!(c.receive(false).await.unwrap().bytes, OK.len());
        });
    }
}
