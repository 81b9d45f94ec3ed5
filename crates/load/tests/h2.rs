//! HTTP/2 in the engine, against local HTTP/2 servers whose timing is known: multiplexing is
//! counted right (the connections the engine says it opened are the ones the server accepted, no
//! connection carries more streams than the setting, and they are used to it), the
//! coordinated-omission truth of stall.rs holds over HTTP/2 on TLS (ALPN `h2`), and a TLS server
//! that does not offer HTTP/2 is refused with a sentence that says so.

mod support;

use ceiling_load::testing::{spawn_h2_server, spawn_tls_server, stalling};
use ceiling_load::{run, target_of, LoadConfig, TlsOptions};
use ceiling_metrics::Outcome;
use ceiling_plan::{HttpUrl, Model, Stage};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn certificate() -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
    (vec![ck.cert.der().clone()], key)
}

/// The shared test config for `url`, HTTP/2 with `streams` per connection.
fn config(url: &str, streams: usize, stage: Stage) -> LoadConfig {
    let mut c = support::config(1, Model::Open, true, stage);
    let insecure = TlsOptions {
        cacert: None,
        insecure: true,
    };
    c.target = target_of(&HttpUrl::parse(url).unwrap(), url, false, &insecure).unwrap();
    c.http2 = Some(streams);
    c.max_connections = 2000;
    c
}

#[test]
fn streams_share_connections_up_to_the_setting_and_the_count_is_the_servers() {
    // Every answer takes 50 ms: at 1000 RPS about 50 requests are in flight at once.
    let (port, seen) = spawn_h2_server(None, |now| now + Duration::from_millis(50));
    let s = run(
        config(
            &format!("http://127.0.0.1:{port}"),
            10,
            Stage::Hold {
                rate: 1000.0,
                duration: Duration::from_secs(4),
            },
        ),
        |_| {},
    )
    .unwrap();
    let h2 = s.h2.expect("an HTTP/2 run has its tally");
    let p50 = s.latency().value_at_quantile(0.5) as f64 / 1000.0;
    let server_max = seen.max_in_flight.load(Ordering::SeqCst);
    eprintln!(
        "h2c: {} requests, p50 {p50:.1} ms; {} connections (server: {}), at most {} streams on one (server saw {server_max})",
        s.counts().total(),
        h2.connections,
        seen.connections.load(Ordering::SeqCst),
        h2.max_streams_in_use
    );
    assert_eq!(s.counts().total(), 4000);
    assert_eq!(s.counts().errors(), 0, "{:?}", s.connect_error);
    assert_eq!(seen.requests.load(Ordering::SeqCst), 4000);
    assert_eq!(h2.connections, seen.connections.load(Ordering::SeqCst));
    assert_eq!(h2.streams, 10);
    assert!(
        server_max <= 10,
        "a connection carried {server_max} streams"
    );
    assert_eq!(
        h2.max_streams_in_use, 10,
        "connections are filled to the setting"
    );
    // ~50 in flight (64 slots opened ahead of the schedule): 5–7 connections, never one each
    assert!(
        (5..=12).contains(&h2.connections),
        "{} connections",
        h2.connections
    );
    assert!(
        (49.0..60.0).contains(&p50),
        "p50 {p50:.1} ms against the server's 50 ms"
    );
}

#[test]
fn open_model_p99_over_http2_on_tls_matches_the_analytic_value() {
    const STALL: Duration = Duration::from_millis(100);
    const PERIOD: Duration = Duration::from_millis(1000);
    let (port, seen) = spawn_h2_server(Some(certificate()), stalling(STALL, PERIOD));
    let (rate, secs) = (1000.0, 10);
    let s = run(
        config(
            &format!("https://localhost:{port}"),
            100,
            Stage::Hold {
                rate,
                duration: Duration::from_secs(secs),
            },
        ),
        |_| {},
    )
    .unwrap();
    let analytic_ms = (STALL.as_secs_f64() - 0.01 * PERIOD.as_secs_f64()) * 1000.0;
    let p99_ms = s.latency().value_at_quantile(0.99) as f64 / 1000.0;
    let (h2, tls) = (s.h2.unwrap(), s.tls.clone().unwrap());
    eprintln!(
        "h2 over TLS: p99 {p99_ms:.2} ms (analytic {analytic_ms:.1}); {} connections, {} handshakes, ALPN {:?}",
        h2.connections, tls.handshakes, tls.alpn
    );
    assert_eq!(s.counts().total(), (rate as u64) * secs);
    assert_eq!(s.counts().errors(), 0, "{:?}", s.connect_error);
    assert!(
        (p99_ms - analytic_ms).abs() <= 0.05 * analytic_ms,
        "open-model p99 over HTTP/2 {p99_ms:.2} ms is not within 5% of {analytic_ms:.1} ms"
    );
    assert_eq!(tls.alpn.as_deref(), Some("h2"));
    assert_eq!(
        tls.handshakes, h2.connections,
        "a handshake per HTTP/2 connection"
    );
    assert_eq!(h2.connections, seen.connections.load(Ordering::SeqCst));
}

#[test]
fn a_tls_server_without_http2_is_refused_with_the_reason() {
    let (chain, key) = certificate();
    let port = spawn_tls_server(chain, key, |now| now);
    let s = run(
        config(
            &format!("https://localhost:{port}"),
            10,
            Stage::Hold {
                rate: 20.0,
                duration: Duration::from_secs(1),
            },
        ),
        |_| {},
    )
    .unwrap();
    assert_eq!(s.counts().get(Outcome::Connect), 20);
    let e = s.connect_error.unwrap_or_default();
    assert!(e.contains("did not agree to HTTP/2"), "{e}");
}
