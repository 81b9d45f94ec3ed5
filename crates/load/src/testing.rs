//! A tiny HTTP/1.1 keep-alive server (cleartext or TLS) for tests of the engine and of the search: it answers every
//! request with `200 ok` at the instant a caller-supplied function picks, so a test can model a
//! service with known timing (periodic stalls, a fixed capacity) exactly.

use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Starts the server on an ephemeral loopback port (its own thread and runtime) and returns the
/// port. `respond_at(arrival)` returns when to send the response for a request that arrived at
/// `arrival`.
pub fn spawn_server(respond_at: impl Fn(Instant) -> Instant + Send + Sync + 'static) -> u16 {
    spawn_server_with(move |now| (respond_at(now), 200))
}

/// A test's load: GET `path` on `target` in one `stage` (its model follows the stage), keep-alive
/// on, one generator thread, 5-s timeout, a 60-s hard bound.
pub fn get_config(
    target: crate::Target,
    path: &str,
    stage: ceiling_plan::Stage,
) -> crate::LoadConfig {
    let model = match stage {
        ceiling_plan::Stage::Closed { .. } => ceiling_plan::Model::Closed,
        _ => ceiling_plan::Model::Open,
    };
    crate::LoadConfig {
        target,
        model,
        arrivals: ceiling_plan::Arrivals::Uniform,
        keep_alive: true,
        max_connections: 1000,
        http2: None,
        timeout: std::time::Duration::from_secs(5),
        seed: 1,
        max_backlog: 1_000_000,
        warmup: vec![],
        stages: vec![stage],
        requests: vec![ceiling_plan::RequestSpec {
            name: "get".into(),
            weight: 1,
            method: "GET".into(),
            path: ceiling_plan::Template::parse(path).expect("a request path"),
            headers: vec![],
            body: None,
            expect: vec![],
        }],
        data: Default::default(),
        threads: 1,
        hard_limit: std::time::Duration::from_secs(60),
        stop: Default::default(),
        process_shard: (0, 1),
        tick: None,
        io: crate::IoBackend::Auto,
        realtime: false,
    }
}

/// The timing of a service that holds every response for `stall` out of every `period` (a
/// stop-the-world pause), counted from now: for [`spawn_server`] and its TLS and HTTP/2 kin. A
/// request arriving `x` into a stall waits `stall − x`, so at a fixed open-model rate the p99 of
/// latency from the intended send time is `stall − 0.01·period` (for stall/period > 1%).
pub fn stalling(
    stall: std::time::Duration,
    period: std::time::Duration,
) -> impl Fn(Instant) -> Instant + Send + Sync + 'static {
    let t0 = Instant::now();
    move |now| {
        if stall >= period {
            return now + stall;
        }
        let phase = std::time::Duration::from_nanos(
            (now.duration_since(t0).as_nanos() % period.as_nanos()) as u64,
        );
        if phase < stall {
            now + (stall - phase)
        } else {
            now
        }
    }
}

/// A service of known capacity: `workers` servers, each taking `service` per request, behind
/// one unbounded FIFO queue (a request waits for the first worker free). Its throughput ceiling
/// is exactly `workers / service` (4 × 10 ms = 400 RPS), so a search or a run over loopback has a
/// truth known in advance. Returns the port, as [`spawn_server`].
pub fn spawn_fixed_capacity_server(workers: usize, service: std::time::Duration) -> u16 {
    assert!(workers > 0, "a service needs at least one worker");
    let free = std::sync::Mutex::new(vec![Instant::now(); workers]);
    spawn_server(move |now| {
        let mut f = free.lock().expect("worker clock lock");
        // the worker that frees first takes the request (FIFO over an unbounded queue)
        let i = (0..f.len()).min_by_key(|&i| f[i]).expect("one worker");
        let done = f[i].max(now) + service;
        f[i] = done;
        done
    })
}

/// As [`spawn_server`], with the status chosen per request too: `respond(arrival)` returns when
/// to answer and with which status (200 or 503; any other value answers 500).
pub fn spawn_server_with(
    respond: impl Fn(Instant) -> (Instant, u16) + Send + Sync + 'static,
) -> u16 {
    spawn_listener(None, Arc::new(respond))
}

/// As [`spawn_server`], over TLS (HTTP/1.1 inside): `cert_chain` and `key` in DER, as a test's
/// throwaway certificate gives them.
pub fn spawn_tls_server(
    cert_chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
    respond_at: impl Fn(Instant) -> Instant + Send + Sync + 'static,
) -> u16 {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(cert_chain, key)
        .expect("the test certificate");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    spawn_listener(Some(acceptor), Arc::new(move |now| (respond_at(now), 200)))
}

type Respond = Arc<dyn Fn(Instant) -> (Instant, u16) + Send + Sync>;

fn spawn_listener(tls: Option<tokio_rustls::TlsAcceptor>, respond_at: Respond) -> u16 {
    accept_loop(move |s| {
        let (respond_at, tls) = (respond_at.clone(), tls.clone());
        async move {
            match tls {
                None => serve(s, respond_at).await,
                Some(acceptor) => {
                    if let Ok(s) = acceptor.accept(s).await {
                        serve(s, respond_at).await;
                    }
                }
            }
        }
    })
}

/// As [`spawn_server`], but a connection that sends no request within `first_request` of being
/// accepted is closed, as Go's `net/http` closes one after its `ReadHeaderTimeout` (go-pgx: 5 s):
/// a generator's pre-opened connections left idle that long are dead when it comes to use them.
pub fn spawn_server_closing_unused(
    first_request: std::time::Duration,
    respond_at: impl Fn(Instant) -> Instant + Send + Sync + 'static,
) -> u16 {
    let respond: Respond = Arc::new(move |now| (respond_at(now), 200));
    accept_loop(move |s| {
        let respond = respond.clone();
        async move {
            let mut first = [0u8; 1];
            if let Ok(Ok(n)) = tokio::time::timeout(first_request, s.peek(&mut first)).await {
                if n > 0 {
                    serve(s, respond).await;
                }
            }
        }
    })
}

/// Binds an ephemeral loopback port and hands every accepted connection (TCP_NODELAY set) to
/// `on_conn`, each on a task of its own, on a thread and runtime of its own. Returns the port.
fn accept_loop<F, Fut>(on_conn: F) -> u16
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("local address").port();
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("test runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
            loop {
                let Ok((s, _)) = listener.accept().await else {
                    continue;
                };
                s.set_nodelay(true).ok();
                tokio::spawn(on_conn(s));
            }
        });
    });
    port
}

/// Answers the requests of one connection, each when `respond_at` says.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, respond_at: Respond) {
    let mut buf = vec![0u8; 4096];
    let mut filled = 0;
    loop {
        // One request head per response (the engine does not pipeline).
        let end = loop {
            if let Some(i) = buf[..filled].windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match s.read(&mut buf[filled..]).await {
                Ok(0) | Err(_) => return,
                Ok(n) => filled += n,
            }
        };
        buf.copy_within(end..filled, 0);
        filled -= end;
        let (at, status) = respond_at(Instant::now());
        tokio::time::sleep_until(at.into()).await;
        let resp: &[u8] = match status {
            200 => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            503 => b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy",
            _ => b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 3\r\n\r\nerr",
        };
        if s.write_all(resp).await.is_err() || s.flush().await.is_err() {
            return;
        }
    }
}

/// What an HTTP/2 test server saw: connections accepted, streams answered, and the most streams
/// one connection had in flight at once.
#[derive(Debug, Default)]
pub struct H2ServerStats {
    /// Connections accepted.
    pub connections: std::sync::atomic::AtomicU64,
    /// Streams (requests) answered.
    pub requests: std::sync::atomic::AtomicU64,
    /// The most streams one connection had in flight at once.
    pub max_in_flight: std::sync::atomic::AtomicU64,
}

/// An HTTP/2 server answering `200 ok` to every stream when `respond_at(arrival)` says: h2c with
/// prior knowledge, or over TLS with ALPN `h2` when given a certificate (DER chain and key).
/// Returns the port and what it saw.
pub fn spawn_h2_server(
    tls: Option<(
        Vec<rustls::pki_types::CertificateDer<'static>>,
        rustls::pki_types::PrivateKeyDer<'static>,
    )>,
    respond_at: impl Fn(Instant) -> Instant + Send + Sync + 'static,
) -> (u16, Arc<H2ServerStats>) {
    use std::sync::atomic::Ordering;
    let acceptor = tls.map(|(chain, key)| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("the test certificate");
        config.alpn_protocols = vec![b"h2".to_vec()];
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let respond_at: Arc<dyn Fn(Instant) -> Instant + Send + Sync> = Arc::new(respond_at);
    let stats = Arc::new(H2ServerStats::default());
    let seen = stats.clone();
    let port = accept_loop(move |s| {
        seen.connections.fetch_add(1, Ordering::SeqCst);
        let (respond_at, seen, acceptor) = (respond_at.clone(), seen.clone(), acceptor.clone());
        async move {
            match acceptor {
                None => serve_h2(s, respond_at, seen).await,
                Some(a) => {
                    if let Ok(s) = a.accept(s).await {
                        serve_h2(s, respond_at, seen).await;
                    }
                }
            }
        }
    });
    (port, stats)
}

async fn serve_h2<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    s: S,
    respond_at: Arc<dyn Fn(Instant) -> Instant + Send + Sync>,
    seen: Arc<H2ServerStats>,
) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let Ok(mut conn) = h2::server::Builder::new()
        .max_concurrent_streams(10_000)
        .handshake::<_, bytes::Bytes>(s)
        .await
    else {
        return;
    };
    let in_flight = Arc::new(AtomicU64::new(0));
    while let Some(Ok((_req, mut respond))) = conn.accept().await {
        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        seen.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let at = respond_at(Instant::now());
        let (in_flight, seen) = (in_flight.clone(), seen.clone());
        tokio::spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            // counted before the answer leaves, so a client that has it sees the count
            in_flight.fetch_sub(1, Ordering::SeqCst);
            seen.requests.fetch_add(1, Ordering::SeqCst);
            let resp = http::Response::builder()
                .status(200)
                .body(())
                .expect("a response head");
            if let Ok(mut body) = respond.send_response(resp, false) {
                let _ = body.send_data(bytes::Bytes::from_static(b"ok"), true);
            }
        });
    }
}
