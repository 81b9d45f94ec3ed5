//! The one parser for the HTTP URLs ceiling sends to: `ceiling load --url`, a plan's `target.url`,
//! `ceiling verify --url`, and the stacks' own addresses. Syntax only; resolving the host and the
//! loopback rule are the load engine's (`ceiling_load::parse_target`).
//!
//! The load engine speaks HTTP/1.1 over TCP or TLS (`http://`, `https://`); other schemes are
//! refused with a sentence that says what to write instead. Parts of ceiling that talk cleartext
//! only (the conformance suite, the stand's stacks) refuse `https` themselves
//! ([`HttpUrl::require_cleartext`]).

use std::fmt;

/// A parsed `http[s]://host[:port][/path][?query]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// `https`: TLS over the TCP connection.
    pub tls: bool,
    /// Host name or address as written (IPv6 without its brackets).
    pub host: String,
    /// TCP port (80, or 443 for https, when the URL has none).
    pub port: u16,
    /// Path and query as written, starting with `/`; `/` when the URL has none.
    pub path: String,
}

impl HttpUrl {
    /// Parses `url`. Errors name the URL and the problem: another scheme, no host, a bad port,
    /// user info, a fragment.
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let url = url.trim();
        let (tls, rest) = match (strip_scheme(url, "http"), strip_scheme(url, "https")) {
            (Some(rest), _) => (false, rest),
            (None, Some(rest)) => (true, rest),
            (None, None) => return Err(match url.split_once("://") {
                Some((scheme, _)) => format!(
                    "`{url}`: the scheme `{scheme}` is not supported; write an http:// or https:// URL"
                ),
                None => format!(
                    "`{url}` is not a URL: write http://host:port/path (e.g. http://127.0.0.1:8080/)"
                ),
            }),
        };
        if rest.contains('#') {
            return Err(format!(
                "`{url}`: a #fragment is never sent to a server; remove it"
            ));
        }
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        if authority.contains('@') {
            return Err(format!(
                "`{url}`: user info (user@host) is not supported; send credentials as a header instead"
            ));
        }
        let (host, port) = if let Some(h) = authority.strip_prefix('[') {
            let (h, after) = h
                .split_once(']')
                .ok_or_else(|| format!("`{url}`: unclosed `[` in the host"))?;
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| format!("`{url}`: expected `:port` after `]`"))?,
                ),
            };
            (h, port)
        } else {
            match authority.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(format!("`{url}` has no host"));
        }
        let port = match port {
            None if tls => 443,
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(format!(
                        "`{url}`: `{p}` is not a port (write a number from 1 to 65535)"
                    ))
                }
            },
        };
        let path = if path.is_empty() {
            "/".to_string()
        } else if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        Ok(HttpUrl {
            tls,
            host: host.to_string(),
            port,
            path,
        })
    }

    /// `host:port` as a `Host` header and a socket address want it (`[::1]:8080` for IPv6).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The path without its query and trailing slash: a base path to prefix request paths with
    /// (`""` for `/`).
    pub fn base_path(&self) -> &str {
        let p = self.path.split('?').next().unwrap_or("");
        p.trim_end_matches('/')
    }

    /// The same URL without a path: `http://host:port` (or `https://`).
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme(), self.authority())
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }

    /// Refuses an https URL where `who` speaks cleartext HTTP only, saying what to do.
    pub fn require_cleartext(&self, who: &str) -> Result<(), String> {
        if self.tls {
            return Err(format!(
                "{}: {who} speaks cleartext HTTP only; give it the service's http:// address \
                 (the load engine — load, run --url, search --url — speaks https)",
                self.origin()
            ));
        }
        Ok(())
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}{}", self.scheme(), self.authority(), self.path)
    }
}

/// `rest` after `scheme://`, the scheme matched case-insensitively.
fn strip_scheme<'a>(url: &'a str, scheme: &str) -> Option<&'a str> {
    let (s, rest) = url.split_once("://")?;
    s.eq_ignore_ascii_case(scheme).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(u: &str) -> HttpUrl {
        HttpUrl::parse(u).unwrap_or_else(|e| panic!("{u}: {e}"))
    }

    #[test]
    fn parses_what_ceiling_sends_to() {
        let u = ok("http://127.0.0.1:8080/api/");
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8080, "/api/")
        );
        assert_eq!(u.base_path(), "/api");
        assert_eq!(u.authority(), "127.0.0.1:8080");
        assert_eq!(u.origin(), "http://127.0.0.1:8080");
        let u = ok("http://localhost");
        assert_eq!((u.port, u.path.as_str(), u.base_path()), (80, "/", ""));
        let u = ok("HTTP://[::1]:9000/status?id=1");
        assert_eq!((u.host.as_str(), u.port), ("::1", 9000));
        assert_eq!(u.path, "/status?id=1");
        assert_eq!(u.base_path(), "/status");
        assert_eq!(u.authority(), "[::1]:9000");
        assert_eq!(ok("http://h:1?x=2").path, "/?x=2");
        assert_eq!(ok("http://h:1/p").to_string(), "http://h:1/p");
    }

    #[test]
    fn https_is_tls_on_443_unless_a_port_is_given() {
        let u = ok("https://example.test/api");
        assert!(u.tls);
        assert_eq!(
            (u.port, u.origin().as_str()),
            (443, "https://example.test:443")
        );
        assert_eq!(ok("HTTPS://127.0.0.1:8443/").port, 8443);
        assert!(!ok("http://127.0.0.1/").tls);
        let e = u.require_cleartext("the conformance suite").unwrap_err();
        assert!(
            e.contains("cleartext HTTP only") && e.contains("http://"),
            "{e}"
        );
        assert!(ok("http://h/").require_cleartext("x").is_ok());
    }

    #[test]
    fn refuses_with_a_reason() {
        for (u, want) in [
            ("ftp://x", "scheme `ftp`"),
            ("127.0.0.1:8080", "not a URL"),
            ("http://", "no host"),
            ("http://:80", "no host"),
            ("http://x:port", "`port` is not a port"),
            ("http://x:0", "`0` is not a port"),
            ("http://x:70000", "`70000` is not a port"),
            ("http://[::1/", "unclosed"),
            ("http://u:p@x/", "user info"),
            ("http://x/#top", "fragment"),
        ] {
            let e = HttpUrl::parse(u).unwrap_err();
            assert!(e.contains(want), "{u}: {e}");
        }
    }
}
