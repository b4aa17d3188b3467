//! One Host/Origin policy for every route a server serves (MCP, REST, GraphQL, a web UI).
//!
//! A page on another site whose name is rebound to 127.0.0.1 (DNS rebinding) reaches a
//! loopback server as same-origin, but its requests still name the other site in `Host`; a
//! cross-site page's requests carry its `Origin`. So every request must name an allowed host,
//! and any request that carries an `Origin` must come from an allowed one.

use axum::response::{IntoResponse, Response};

use super::HttpOptions;

impl HttpOptions {
    /// Whether `host` (a `Host` header value, port optional) names this server: an allowed
    /// entry without a port matches the name on any port, an entry with a port matches name
    /// and port.
    pub fn host_allowed(&self, host: &str) -> bool {
        let name = if host.starts_with('[') {
            host.find(']').map_or(host, |end| &host[..=end])
        } else {
            host.split(':').next().unwrap_or_default()
        };
        self.allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(name) || allowed.eq_ignore_ascii_case(host))
    }

    /// Whether a page from `origin` may call this server (`:*` in a pattern matches any port).
    pub fn origin_allowed(&self, origin: &str) -> bool {
        self.allowed_origins
            .iter()
            .any(|allowed| match allowed.strip_suffix(":*") {
                Some(prefix) => {
                    origin == prefix
                        || origin
                            .strip_prefix(prefix)
                            .and_then(|rest| rest.strip_prefix(':'))
                            .is_some_and(|port| {
                                !port.is_empty() && port.chars().all(|c| c.is_ascii_digit())
                            })
                }
                None => allowed == origin,
            })
    }

    /// Why a request may not be served (what was wrong, and the message for the caller), if it
    /// may not.
    pub fn refusal(
        &self,
        headers: &http::HeaderMap,
    ) -> Option<(crate::metrics::Reason, &'static str)> {
        use crate::metrics::Reason;
        let host = headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok());
        if !host.is_some_and(|host| self.host_allowed(host)) {
            return Some((
                Reason::Host,
                "This server does not answer to that Host name.",
            ));
        }
        match headers.get(http::header::ORIGIN).map(|o| o.to_str()) {
            None => None,
            Some(Ok(origin)) if self.origin_allowed(origin) => None,
            Some(_) => Some((
                Reason::Origin,
                "Pages from that Origin may not call this server.",
            )),
        }
    }
}

/// The 403 a refused request gets: a JSON-RPC error on the MCP endpoint, `{"message": …}`
/// elsewhere.
pub(super) fn refused(path: &str, reason: &'static str) -> Response {
    let body = if path.starts_with("/mcp") {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": -32600, "message": reason },
        })
    } else {
        serde_json::json!({ "message": reason })
    };
    (
        http::StatusCode::FORBIDDEN,
        [(http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn loopback_names_pass_and_rebound_or_foreign_pages_do_not() {
        let options = HttpOptions::default();
        for ok in [
            &[("host", "127.0.0.1:8080")][..],
            &[("host", "localhost")],
            &[("host", "[::1]:9")],
            &[
                ("host", "LOCALHOST:80"),
                ("origin", "http://localhost:5173"),
            ],
        ] {
            assert_eq!(options.refusal(&headers(ok)), None, "{ok:?}");
        }
        for bad in [
            &[][..],
            &[("host", "evil.example:8080")],
            &[("host", "127.0.0.1.evil.example")],
            &[
                ("host", "127.0.0.1:8080"),
                ("origin", "http://evil.example"),
            ],
            &[("host", "127.0.0.1:8080"), ("origin", "http://localhost:")],
            &[
                ("host", "127.0.0.1:8080"),
                ("origin", "http://localhost.evil:80"),
            ],
            &[("host", "127.0.0.1:8080"), ("origin", "null")],
        ] {
            assert!(options.refusal(&headers(bad)).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn an_allowed_host_with_a_port_is_that_port_only() {
        let options = HttpOptions::default()
            .allow_host("orders.example:8443")
            .allow_host("[2001:db8::1]:9000")
            .allow_host("desk.example");
        for ok in [
            &[("host", "orders.example:8443")][..],
            &[("host", "ORDERS.example:8443")],
            &[("host", "[2001:db8::1]:9000")],
            &[("host", "desk.example:1234")],
            &[
                ("host", "orders.example:8443"),
                ("origin", "https://orders.example:8443"),
            ],
            &[
                ("host", "desk.example"),
                ("origin", "https://desk.example:4443"),
            ],
        ] {
            assert_eq!(options.refusal(&headers(ok)), None, "{ok:?}");
        }
        for bad in [
            &[("host", "orders.example:9999")][..],
            &[("host", "orders.example")],
            &[("host", "[2001:db8::1]:9001")],
            &[("host", "[2001:db8::1]")],
            &[
                ("host", "orders.example:8443"),
                ("origin", "https://orders.example:9999"),
            ],
        ] {
            assert!(options.refusal(&headers(bad)).is_some(), "{bad:?}");
        }
        assert_eq!(super::super::options::host_port("[::1]:80"), Some("80"));
        assert_eq!(super::super::options::host_port("[::1]"), None);
        assert_eq!(super::super::options::host_port("a:"), None);
    }
}
