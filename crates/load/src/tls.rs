//! TLS for the engine: rustls (the `ring` provider), with the system's root certificates, a CA
//! file the user names (`--cacert`, which replaces the system roots, as curl's does), or no
//! certificate check at all (`--insecure`: the chain and the name are not checked; the handshake's
//! signatures still are).
//!
//! Sessions are resumed as a real client resumes them (rustls' in-memory session cache), so after
//! the first handshake to a server most are resumptions; [`TlsTally`] counts both kinds apart.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;

/// How the client checks the servers it talks TLS to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Trust only the certificates in this PEM file (instead of the system's roots).
    pub cacert: Option<PathBuf>,
    /// Do not check the server's certificate chain or name.
    pub insecure: bool,
}

impl TlsOptions {
    /// Whether anything differs from the defaults (system roots, full check).
    pub fn is_set(&self) -> bool {
        self.cacert.is_some() || self.insecure
    }
}

/// A TLS client for one server name: the connector and what it trusts.
#[derive(Clone)]
pub struct TlsClient {
    connector: tokio_rustls::TlsConnector,
    server_name: ServerName<'static>,
    trust: String,
    host: String,
    opts: TlsOptions,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("server_name", &self.server_name)
            .field("trust", &self.trust)
            .finish()
    }
}

impl TlsClient {
    /// A client for `host` (a name or an address) with `opts`, offering `alpn` (e.g. `http/1.1`).
    pub fn new(host: &str, opts: &TlsOptions, alpn: &[&[u8]]) -> Result<TlsClient, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS set-up: {e}"))?;
        let (mut config, trust) = if opts.insecure {
            let cfg = builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoCertificateCheck(provider)))
                .with_no_client_auth();
            (cfg, "certificate not checked (--insecure)".to_string())
        } else {
            let mut roots = RootCertStore::empty();
            let mut trust = Vec::new();
            for path in crate::extra_roots() {
                let n = read_pem(&mut roots, &path, "the stand's certificate ")?;
                trust.push(format!("the stand's certificate ({n})"));
            }
            match &opts.cacert {
                Some(path) => {
                    let n = read_pem(&mut roots, path, "--cacert ")?;
                    trust.push(format!("CA file {} ({n} certificates)", path.display()));
                }
                None => {
                    let found = rustls_native_certs::load_native_certs();
                    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
                    if roots.is_empty() {
                        let why = found
                            .errors
                            .first()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default();
                        return Err(format!(
                            "no system root certificates could be loaded{why}; pass --cacert FILE \
                             with the server's CA, or --insecure to skip the check"
                        ));
                    }
                    trust.push(format!("system roots ({added} certificates)"));
                }
            }
            let trust = trust.join(" + ");
            (
                builder.with_root_certificates(roots).with_no_client_auth(),
                trust,
            )
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|e| format!("`{host}` is not a name TLS can check: {e}"))?;
        Ok(TlsClient {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            server_name,
            trust,
            host: host.to_string(),
            opts: opts.clone(),
        })
    }

    /// The same client offering other ALPN protocols (`h2` for HTTP/2).
    pub fn with_alpn(&self, alpn: &[&[u8]]) -> Result<TlsClient, String> {
        TlsClient::new(&self.host, &self.opts, alpn)
    }

    /// The TLS handshake over `tcp`, timed, with what it negotiated.
    pub(crate) async fn handshake(
        &self,
        tcp: tokio::net::TcpStream,
    ) -> std::io::Result<(
        tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
        Handshake,
    )> {
        let t0 = crate::now_ns();
        let s = self
            .connector
            .connect(self.server_name.clone(), tcp)
            .await
            .map_err(|e| {
                let text = e.to_string();
                let hint = if text.contains("CaUsedAsEndEntity") {
                    " (the server presents a CA certificate as its own — `openssl req -x509` makes \
                     one by default; give the server a certificate signed by that CA, or pass --insecure)"
                } else if text.contains("UnknownIssuer") {
                    " (pass --cacert with the CA that signed the server's certificate, or --insecure)"
                } else if text.contains("NotValidForName") {
                    " (the certificate is not for the URL's host name: use the name it was made for)"
                } else {
                    ""
                };
                std::io::Error::new(e.kind(), format!("TLS handshake: {text}{hint}"))
            })?;
        let (_, session) = s.get_ref();
        let h = Handshake {
            ns: crate::now_ns().saturating_sub(t0),
            resumed: matches!(
                session.handshake_kind(),
                Some(rustls::HandshakeKind::Resumed)
            ),
            version: session.protocol_version().map(|v| format!("{v:?}")),
            alpn: session
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        };
        Ok((s, h))
    }

    /// What the client trusts, as a sentence for the output.
    pub fn trust(&self) -> &str {
        &self.trust
    }
}

/// Adds the certificates of a PEM file to `roots`; `flag` names where the file came from in
/// errors (`--cacert `). Returns how many it added.
fn read_pem(
    roots: &mut RootCertStore,
    path: &std::path::Path,
    flag: &str,
) -> Result<usize, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{flag}{}: {e}", path.display()))?;
    let mut n = 0;
    for c in certs {
        let c = c.map_err(|e| format!("{flag}{}: {e}", path.display()))?;
        roots.add(c).map_err(|e| {
            format!(
                "{flag}{}: a certificate rustls refuses: {e}",
                path.display()
            )
        })?;
        n += 1;
    }
    if n == 0 {
        return Err(format!(
            "{flag}{}: no PEM certificate in the file",
            path.display()
        ));
    }
    Ok(n)
}

/// The TLS handshakes of a run: how many, how long (µs, from the TCP connection to the end of the
/// handshake), how many resumed a session, and what was negotiated.
#[derive(Debug, Clone)]
pub struct TlsTally {
    /// Handshakes completed.
    pub handshakes: u64,
    /// Of which resumed an earlier session (no certificate exchanged).
    pub resumed: u64,
    /// Handshake durations, µs.
    pub handshake_us: hdrhistogram::Histogram<u64>,
    /// The protocol version of the last handshake (`TLSv1_3`).
    pub version: Option<String>,
    /// The ALPN protocol of the last handshake (`http/1.1`, `h2`), if one was agreed.
    pub alpn: Option<String>,
    /// What the client trusted.
    pub trust: String,
}

impl TlsTally {
    pub(crate) fn new(trust: &str) -> TlsTally {
        TlsTally {
            handshakes: 0,
            resumed: 0,
            handshake_us: ceiling_metrics::new_histogram(),
            version: None,
            alpn: None,
            trust: trust.to_string(),
        }
    }

    /// Adds one handshake.
    pub(crate) fn note(&mut self, h: &Handshake) {
        self.handshakes += 1;
        self.resumed += u64::from(h.resumed);
        ceiling_metrics::record_us(&mut self.handshake_us, h.ns / 1000);
        if self.version.is_none() {
            self.version = h.version.clone();
        }
        if self.alpn.is_none() {
            self.alpn = h.alpn.clone();
        }
    }

    /// One line: `TLSv1_3 (h2), 4 handshakes (0 resumed), p50 0.49 ms, p99 2.21 ms, max 2.21 ms;
    /// system roots (145 certificates)`.
    pub fn describe(&self) -> String {
        let ms = |q: f64| self.handshake_us.value_at_quantile(q) as f64 / 1000.0;
        format!(
            "{}{}, {} handshakes ({} resumed), p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {}",
            self.version.as_deref().unwrap_or("TLS"),
            self.alpn
                .as_deref()
                .map(|a| format!(" ({a})"))
                .unwrap_or_default(),
            self.handshakes,
            self.resumed,
            ms(0.5),
            ms(0.99),
            self.handshake_us.max() as f64 / 1000.0,
            self.trust
        )
    }

    /// Adds another process's tally (agents).
    pub fn merge(&mut self, o: &TlsTally) {
        self.handshakes += o.handshakes;
        self.resumed += o.resumed;
        let _ = self.handshake_us.add(&o.handshake_us);
        if self.version.is_none() {
            self.version = o.version.clone();
        }
        if self.alpn.is_none() {
            self.alpn = o.alpn.clone();
        }
    }
}

/// One completed handshake, as the connection saw it.
#[derive(Debug, Clone)]
pub(crate) struct Handshake {
    pub ns: u64,
    pub resumed: bool,
    pub version: Option<String>,
    pub alpn: Option<String>,
}

/// `--insecure`: any certificate chain and name is accepted; the handshake's signatures are still
/// verified with the provider's algorithms (so the peer holds the key of what it sent).
#[derive(Debug)]
struct NoCertificateCheck(Arc<CryptoProvider>);

impl ServerCertVerifier for NoCertificateCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
