//! HTTPS in the engine, against a local TLS server whose timing is known: the coordinated-omission
//! truth of stall.rs holds over TLS as over cleartext, handshakes are counted and timed apart
//! (one per connection; resumed ones counted), and the certificate check does what it says — a
//! self-signed server is refused against the system's roots, trusted with `--cacert` (its
//! certificate) and accepted unchecked with `--insecure`.

mod support;

use ceiling_load::testing::{spawn_tls_server, stalling};
use ceiling_load::{run, target_of, LoadConfig, TlsOptions};
use ceiling_metrics::Outcome;
use ceiling_plan::{HttpUrl, Model, Stage};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::time::Duration;

const STALL: Duration = Duration::from_millis(100);
const PERIOD: Duration = Duration::from_millis(1000);

/// A throwaway certificate for `localhost`: (DER chain, key, PEM of the certificate).
fn certificate() -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>, String) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
    (vec![ck.cert.der().clone()], key, ck.cert.pem())
}

/// A TLS server on localhost that holds every response for `stall` out of every `period`.
fn stalling_tls_server(stall: Duration, period: Duration) -> (u16, String) {
    let (chain, key, pem) = certificate();
    let port = spawn_tls_server(chain, key, stalling(stall, period));
    (port, pem)
}

/// The shared test config pointed at `https://localhost:PORT` with `tls`.
fn config(port: u16, tls: &TlsOptions, model: Model, keep_alive: bool, stage: Stage) -> LoadConfig {
    let mut c = support::config(port, model, keep_alive, stage);
    let url = format!("https://localhost:{port}");
    c.target = target_of(&HttpUrl::parse(&url).unwrap(), &url, false, tls).unwrap();
    c.max_connections = 2000;
    c
}

/// The PEM written where `--cacert` can read it.
fn ca_file(pem: &str, name: &str) -> TlsOptions {
    let path = std::env::temp_dir().join(format!("ceiling-tls-{}-{name}.pem", std::process::id()));
    std::fs::write(&path, pem).unwrap();
    TlsOptions {
        cacert: Some(path),
        insecure: false,
    }
}

#[test]
fn open_model_p99_over_tls_matches_the_analytic_value() {
    let (port, pem) = stalling_tls_server(STALL, PERIOD);
    let tls = ca_file(&pem, "stall");
    let (rate, secs) = (1000.0, 10);
    let s = run(
        config(
            port,
            &tls,
            Model::Open,
            true,
            Stage::Hold {
                rate,
                duration: Duration::from_secs(secs),
            },
        ),
        |_| {},
    )
    .unwrap();
    let h = s.latency();
    let analytic_ms = (STALL.as_secs_f64() - 0.01 * PERIOD.as_secs_f64()) * 1000.0;
    let p99_ms = h.value_at_quantile(0.99) as f64 / 1000.0;
    let c = s.counts();
    let t = s.tls.as_ref().expect("an https run has a TLS tally");
    eprintln!(
        "open model over TLS: {} requests, p50 {:.2} ms, p99 {:.2} ms (analytic {analytic_ms:.1} ms); \
         {} handshakes ({} resumed), handshake p50 {:.2} ms, {:?}, trust: {}",
        c.total(),
        h.value_at_quantile(0.5) as f64 / 1000.0,
        p99_ms,
        t.handshakes,
        t.resumed,
        t.handshake_us.value_at_quantile(0.5) as f64 / 1000.0,
        t.version,
        t.trust
    );
    assert_eq!(c.errors(), 0, "{:?}", s.connect_error);
    assert_eq!(c.total(), (rate as u64) * secs);
    assert!(
        (p99_ms - analytic_ms).abs() <= 0.05 * analytic_ms,
        "open-model p99 over TLS {p99_ms:.2} ms is not within 5% of {analytic_ms:.1} ms"
    );
    // one handshake per connection, and keep-alive means far fewer than requests
    assert_eq!(t.handshakes, t.handshake_us.len());
    assert!(t.handshakes >= 1 && t.handshakes < c.total() / 5, "{t:?}");
    assert_eq!(t.version.as_deref(), Some("TLSv1_3"));
    assert!(t.trust.contains("CA file"), "{}", t.trust);
}

#[test]
fn without_keep_alive_every_request_pays_a_handshake_and_most_resume() {
    let (port, pem) = stalling_tls_server(Duration::ZERO, PERIOD);
    let tls = ca_file(&pem, "ka");
    let s = run(
        config(
            port,
            &tls,
            Model::Closed,
            false,
            Stage::Closed {
                connections: 2,
                duration: None,
                requests: Some(200),
            },
        ),
        |_| {},
    )
    .unwrap();
    let t = s.tls.as_ref().unwrap();
    assert_eq!(s.counts().total(), 200);
    assert_eq!(s.counts().errors(), 0, "{:?}", s.connect_error);
    assert_eq!(
        t.handshakes, 200,
        "a new connection, so a handshake, per request"
    );
    // rustls resumes sessions as a real client does: only the first few are full handshakes
    assert!(t.resumed >= 150, "{} of 200 resumed", t.resumed);
}

#[test]
fn the_certificate_check_refuses_an_unknown_issuer_and_insecure_skips_it() {
    let (port, _) = stalling_tls_server(Duration::ZERO, PERIOD);
    let stage = || Stage::Hold {
        rate: 50.0,
        duration: Duration::from_secs(1),
    };
    // The system's roots do not know a throwaway certificate: every connection fails, and says
    // why (a machine without system roots refuses at set-up instead, and says that).
    let url = format!("https://localhost:{port}");
    match target_of(
        &HttpUrl::parse(&url).unwrap(),
        &url,
        false,
        &TlsOptions::default(),
    ) {
        Err(e) => assert!(e.to_string().contains("no system root"), "{e}"),
        Ok(target) => {
            let mut c = config(
                port,
                &TlsOptions {
                    cacert: None,
                    insecure: true,
                },
                Model::Open,
                true,
                stage(),
            );
            c.target = target;
            let s = run(c, |_| {}).unwrap();
            assert_eq!(s.counts().get(Outcome::Connect), 50);
            let e = s.connect_error.unwrap_or_default();
            assert!(
                e.contains("TLS handshake") && e.contains("certificate"),
                "{e}"
            );
        }
    }
    let insecure = TlsOptions {
        cacert: None,
        insecure: true,
    };
    let s = run(config(port, &insecure, Model::Open, true, stage()), |_| {}).unwrap();
    assert_eq!(s.counts().total(), 50);
    assert_eq!(s.counts().errors(), 0, "{:?}", s.connect_error);
    assert!(s.tls.unwrap().trust.contains("--insecure"));
}
