//! A minimal HTTP/1.1 client exchange: write a request, read exactly one response.
//!
//! Headers are parsed by `httparse`; bodies are framed by Content-Length, chunked encoding, or the
//! connection closing, and are read and discarded. This is all a load generator needs, and it keeps
//! the per-request cost near wrk's (no allocation per request in the steady state).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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
    stream: TcpStream,
    buf: Vec<u8>,
    /// Bytes of `buf` that hold data not yet consumed.
    filled: usize,
}

impl Conn {
    /// Connects with TCP_NODELAY.
    pub async fn connect(addr: std::net::SocketAddr) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            served: 0,
            stream,
            buf: vec![0; 16 * 1024],
            filled: 0,
        })
    }

    /// Writes the request. Returns an error on a broken connection.
    pub async fn send(&mut self, req: &[u8]) -> Result<(), ExchangeError> {
        // Nothing of a response can have arrived yet: a failed write is a close before the response.
        self.stream
            .write_all(req)
            .await
            .map_err(|_| ExchangeError::Closed)
    }

    /// Reads one response. `head_only` for HEAD requests (no body follows).
    pub async fn receive(&mut self, head_only: bool) -> Result<Response, ExchangeError> {
        loop {
            // Parse what we have.
            if self.filled > 0 {
                let mut headers = [httparse::EMPTY_HEADER; 48];
                let mut resp = httparse::Response::new(&mut headers);
                match resp.parse(&self.buf[..self.filled]) {
                    Ok(httparse::Status::Complete(head)) => {
                        let status = resp.code.unwrap_or(0);
                        let mut length: Option<usize> = None;
                        let mut chunked = false;
                        let mut close = resp.version == Some(0);
                        for h in resp.headers.iter() {
                            if h.name.eq_ignore_ascii_case("content-length") {
                                length = std::str::from_utf8(h.value)
                                    .ok()
                                    .and_then(|v| v.trim().parse().ok());
                                if length.is_none() {
                                    return Err(ExchangeError::Malformed);
                                }
                            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                                chunked = h
                                    .value
                                    .windows(7)
                                    .any(|w| w.eq_ignore_ascii_case(b"chunked"));
                            } else if h.name.eq_ignore_ascii_case("connection") {
                                if h.value.eq_ignore_ascii_case(b"close") {
                                    close = true;
                                } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                                    close = false;
                                }
                            }
                        }
                        if (100..200).contains(&status) {
                            // Interim response: drop it and read the real one.
                            self.consume(head);
                            continue;
                        }
                        let no_body = head_only || status == 204 || status == 304;
                        let total = if no_body {
                            head
                        } else if chunked {
                            head + self.read_chunked(head).await?
                        } else if let Some(len) = length {
                            self.fill_to(head + len).await?;
                            head + len
                        } else {
                            // Body delimited by close.
                            let n = self.read_to_close(head).await;
                            return Ok(Response {
                                status,
                                reusable: false,
                                bytes: n,
                            });
                        };
                        self.consume(total);
                        if self.filled == 0 {
                            // The response is complete and nothing else is buffered: the server
                            // sends nothing more until our next request. Drop tokio's cached read
                            // readiness now, so the next read waits for epoll instead of spending
                            // a recv() syscall that can only return EAGAIN (wrk does not pay it).
                            let _ = self.stream.try_io(tokio::io::Interest::READABLE, || {
                                Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
                            });
                        }
                        self.served += 1;
                        return Ok(Response {
                            status,
                            reusable: !close,
                            bytes: total,
                        });
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
        match self.stream.read(&mut self.buf[self.filled..]).await {
            Ok(0) | Err(_) if before == 0 => Err(ExchangeError::Closed),
            Ok(0) | Err(_) => Err(ExchangeError::Reset),
            Ok(n) => {
                self.filled += n;
                Ok(())
            }
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

    /// Reads a chunked body starting at `start`; returns its encoded length.
    async fn read_chunked(&mut self, start: usize) -> Result<usize, ExchangeError> {
        let mut pos = start;
        loop {
            // Chunk size line.
            let line_end = loop {
                if let Some(i) = self.buf[pos..self.filled]
                    .windows(2)
                    .position(|w| w == b"\r\n")
                {
                    break pos + i;
                }
                self.read_more().await?;
            };
            let line = std::str::from_utf8(&self.buf[pos..line_end])
                .map_err(|_| ExchangeError::Malformed)?;
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| ExchangeError::Malformed)?;
            pos = line_end + 2;
            if size == 0 {
                // Trailers end with an empty line.
                loop {
                    if let Some(i) = self.buf[pos..self.filled]
                        .windows(2)
                        .position(|w| w == b"\r\n")
                    {
                        let empty = i == 0;
                        pos += i + 2;
                        if empty {
                            return Ok(pos - start);
                        }
                    } else {
                        self.read_more().await?;
                    }
                }
            }
            self.fill_to(pos + size + 2).await?;
            pos += size + 2;
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
