//! A server as an OAuth 2.1 protected resource (feature `resource-server`): who may call it
//! (bearer tokens from a file, or tokens an authorization server vouches for by introspection),
//! the protected-resource metadata (RFC 9728) that tells a client how to sign in, and the 401
//! challenge `Bearer resource_metadata="…"` every refusal carries, whichever way tokens are
//! checked.
//!
//! The resource a token must be issued for is configuration ([`ResourceServer::resource`],
//! typically `--resource URL`, by default the address the server listens on), never read from
//! a request: a token whose audience does not name it, or names none, is refused whatever
//! `Host` the request carries (a server sharing the authorization server cannot replay its
//! callers' tokens here).
//!
//! ```no_run
//! # async fn run(app: axum::Router) -> Result<(), backchannel::serve::ResourceError> {
//! use std::sync::Arc;
//! use backchannel::serve::{ResourceServer, Tokens};
//!
//! let tokens = Tokens::from_file("tokens.txt".as_ref())?;
//! let guard = Arc::new(ResourceServer::tokens("http://127.0.0.1:8080/mcp", "orders", tokens)?);
//! let app = guard.protect(app); // every route of `app` needs a token; metadata is open
//! # drop(app); Ok(()) }
//! ```

mod error;
mod introspection;
mod settings;
mod tokens;

use std::sync::Arc;

use serde_json::{Value, json};

pub use error::ResourceError;
pub use introspection::CLIENT_PRINCIPAL;
pub use settings::{SignInSettings, SignInSettingsError};
pub use tokens::{MIN_TOKEN_LEN, TokenFileError, Tokens};

use super::bearer::BearerError;
use super::sign_in::{Refusal, SignIn};
use crate::principal::{Principal, PrincipalKind};
use introspection::Introspector;

/// How tokens are checked.
#[derive(Debug)]
enum Check {
    /// Against a token file.
    Tokens(Tokens),
    /// By the authorization server's introspection.
    OAuth(Introspector),
}

/// A server's sign-in: the resource tokens are for, its name in the metadata, and how tokens
/// are checked. [`ResourceServer::protect`] puts it in front of a router.
#[derive(Debug)]
pub struct ResourceServer {
    resource: String,
    name: String,
    check: Check,
    anonymous_too: bool,
}

impl ResourceServer {
    /// Tokens from a token file, for `resource` (this server's MCP URL as its clients reach
    /// it), named `name` in the metadata.
    pub fn tokens(resource: &str, name: &str, tokens: Tokens) -> Result<Self, ResourceError> {
        Ok(ResourceServer {
            resource: checked_resource(resource)?,
            name: name.to_owned(),
            check: Check::Tokens(tokens),
            anonymous_too: false,
        })
    }

    /// Tokens issued for `resource` by the authorization server `issuer`, checked at
    /// `introspection` when given, else at the introspection endpoint its metadata names.
    pub async fn oauth(
        resource: &str,
        name: &str,
        issuer: &str,
        introspection: Option<&str>,
    ) -> Result<Self, ResourceError> {
        let resource = checked_resource(resource)?;
        Ok(ResourceServer {
            resource,
            name: name.to_owned(),
            check: Check::OAuth(Introspector::discover(issuer, introspection).await?),
            anonymous_too: false,
        })
    }

    /// Also serve a request that presents no token, anonymously: a token still names its
    /// principal (and a wrong one is still refused), so a known caller's tasks and sessions
    /// are bound to it while anyone else is served as without sign-in. Such a server signs
    /// no one out, so it belongs on loopback like a server without sign-in.
    pub fn anonymous_too(mut self) -> Self {
        self.anonymous_too = true;
        self
    }

    /// Whether a request without a token is served ([`ResourceServer::anonymous_too`]).
    pub fn allows_anonymous(&self) -> bool {
        self.anonymous_too
    }

    /// The resource tokens must be issued for (this server's MCP URL).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Whether tokens are checked by an authorization server (else against a token file).
    pub fn is_oauth(&self) -> bool {
        matches!(self.check, Check::OAuth(_))
    }

    /// Where the protected-resource metadata is (RFC 9728: the well-known path inserted
    /// between the resource's host and its path).
    pub fn metadata_url(&self) -> String {
        match url_parts(&self.resource) {
            Some((origin, path)) => {
                format!("{origin}/.well-known/oauth-protected-resource{path}")
            }
            None => self.resource.clone(),
        }
    }

    /// The protected-resource metadata (RFC 9728). With a token file it names no
    /// authorization server: the tokens are handed out by whoever runs the server.
    pub fn metadata(&self) -> Value {
        let mut metadata = json!({
            "resource": self.resource,
            "bearer_methods_supported": ["header"],
            "resource_name": self.name,
        });
        if let Check::OAuth(introspector) = &self.check {
            metadata["authorization_servers"] = json!([introspector.issuer()]);
        }
        metadata
    }

    /// Who `token` stands for, if anyone.
    pub async fn principal(&self, token: &str) -> Option<String> {
        match &self.check {
            Check::Tokens(tokens) => tokens.principal(token).map(str::to_owned),
            Check::OAuth(introspector) => introspector.principal(token, &self.resource).await,
        }
    }

    /// `router` with every route signed in, and the metadata readable without a token at the
    /// resource's well-known path and at the bare one.
    pub fn protect(self: Arc<Self>, router: axum::Router) -> axum::Router {
        let metadata = self.metadata_router();
        super::require_sign_in(router, Guard(self)).merge(metadata)
    }

    fn metadata_router(self: &Arc<Self>) -> axum::Router {
        let path = url_parts(&self.metadata_url())
            .map(|(_, path)| path)
            .unwrap_or_else(|| "/.well-known/oauth-protected-resource/mcp".to_owned());
        let server = self.clone();
        let serve = move || {
            let server = server.clone();
            async move {
                (
                    [(http::header::CONTENT_TYPE, "application/json")],
                    server.metadata().to_string(),
                )
            }
        };
        let bare = "/.well-known/oauth-protected-resource";
        let mut router = axum::Router::new().route(bare, axum::routing::get(serve.clone()));
        if path != bare {
            router = router.route(&path, axum::routing::get(serve));
        }
        router
    }

    fn refusal(&self) -> Refusal {
        let message = match self.check {
            Check::Tokens(_) => {
                "Sign-in required: send `Authorization: Bearer <token>` with a token from the \
                 server's token file"
            }
            Check::OAuth(_) => {
                "Sign-in required: send `Authorization: Bearer <token>` with a token issued for \
                 this server's resource by the authorization server named in the \
                 protected-resource metadata"
            }
        };
        let refusal = Refusal::new(message);
        let challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url());
        match http::HeaderValue::try_from(challenge) {
            Ok(challenge) => refusal.with_challenge(challenge),
            Err(_) => refusal,
        }
    }
}

/// The sign-in edge of a [`ResourceServer`]: a token is required on every route.
struct Guard(Arc<ResourceServer>);

impl SignIn for Guard {
    async fn sign_in(
        &self,
        token: Result<Option<String>, BearerError>,
        request: &mut http::request::Parts,
    ) -> Result<Option<Principal>, Refusal> {
        if self.0.anonymous_too && matches!(token, Ok(None)) {
            return Ok(None);
        }
        if let Some(token) = token.ok().flatten()
            && let Some(name) = self.0.principal(&token).await
        {
            let kind = if self.0.is_oauth() {
                "oauth"
            } else {
                "token-file"
            };
            request.extensions.insert(PrincipalKind(kind));
            crate::metrics::signed_in(kind);
            return Ok(Some(Principal(name)));
        }
        Err(self.0.refusal())
    }
}

/// `resource` if it is an absolute `http(s)` URL with a host and no fragment.
fn checked_resource(resource: &str) -> Result<String, ResourceError> {
    match reqwest::Url::parse(resource) {
        Ok(url)
            if matches!(url.scheme(), "http" | "https")
                && url.host().is_some()
                && url.fragment().is_none() =>
        {
            Ok(resource.to_owned())
        }
        _ => Err(ResourceError::Resource(resource.to_owned())),
    }
}

/// A URL's origin (`scheme://host[:port]`) and its path without a trailing slash.
fn url_parts(url: &str) -> Option<(String, String)> {
    let url = reqwest::Url::parse(url).ok()?;
    let origin = url.origin().ascii_serialization();
    Some((origin, url.path().trim_end_matches('/').to_owned()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn with_tokens(resource: &str) -> ResourceServer {
        let tokens = Tokens::parse(&format!("ana={}", "a".repeat(40))).unwrap();
        ResourceServer::tokens(resource, "orders", tokens).unwrap()
    }

    #[test]
    fn the_metadata_sits_at_the_resource_s_well_known_path() {
        let server = with_tokens("https://orders.example/mcp");
        assert_eq!(
            server.metadata_url(),
            "https://orders.example/.well-known/oauth-protected-resource/mcp"
        );
        let metadata = server.metadata();
        assert_eq!(metadata["resource"], "https://orders.example/mcp");
        assert!(
            metadata.get("authorization_servers").is_none(),
            "{metadata}"
        );
        assert_eq!(
            with_tokens("http://127.0.0.1:9/").metadata_url(),
            "http://127.0.0.1:9/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            with_tokens("http://127.0.0.1:9/mcp?x=1").metadata_url(),
            "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"
        );
    }

    /// The count of `mcp_server_signed_in_requests_total` for `kind` in the metrics now.
    fn signed_in_count(kind: &str) -> u64 {
        let line = format!("mcp_server_signed_in_requests_total{{kind=\"{kind}\"}} ");
        crate::metrics::render()
            .lines()
            .find_map(|l| l.strip_prefix(line.as_str()).map(str::to_owned))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn a_signed_in_request_is_counted_by_kind_and_its_span_kind_set_never_the_token() {
        use tower::ServiceExt as _;
        let token = "a".repeat(40);
        let guard = Arc::new(with_tokens("https://orders.example/mcp"));
        let app = guard.protect(axum::Router::new().route(
            "/",
            axum::routing::get(|request: axum::extract::Request| async move {
                let kind = request.extensions().get::<PrincipalKind>().map(|k| k.0);
                kind.unwrap_or("none").to_owned()
            }),
        ));
        let before = signed_in_count("token-file");
        let request = http::Request::builder()
            .uri("/")
            .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
            .body(axum::body::Body::empty())
            .unwrap();
        let response = app.oneshot(request).await.unwrap();
        assert_eq!(response.status(), http::StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(&body[..], b"token-file");
        assert!(signed_in_count("token-file") > before);
        assert!(!crate::metrics::render().contains(&token));
    }

    /// With `anonymous_too`, no token is served anonymously, a known token names its
    /// principal, and a wrong or malformed one is still refused.
    #[tokio::test]
    async fn anonymous_too_serves_no_token_names_a_known_one_and_refuses_a_wrong_one() {
        let guard = Arc::new(with_tokens("http://127.0.0.1:9/mcp").anonymous_too());
        assert!(guard.allows_anonymous());
        assert!(!with_tokens("http://127.0.0.1:9/mcp").allows_anonymous());
        let app = guard.protect(axum::Router::new().route(
            "/",
            axum::routing::get(|request: axum::extract::Request| async move {
                let principal = request.extensions().get::<Principal>();
                principal.map_or("anonymous".to_owned(), |p| p.0.clone())
            }),
        ));
        let call = |authorization: Option<String>| {
            let app = app.clone();
            async move {
                let (status, _, body) =
                    crate::serve::sign_in::get_as(app, authorization.as_deref()).await;
                (status, body)
            }
        };
        assert_eq!(call(None).await, (http::StatusCode::OK, "anonymous".into()));
        let known = format!("Bearer {}", "a".repeat(40));
        assert_eq!(
            call(Some(known)).await,
            (http::StatusCode::OK, "ana".into())
        );
        let wrong = format!("Bearer {}", "b".repeat(40));
        assert_eq!(call(Some(wrong)).await.0, http::StatusCode::UNAUTHORIZED);
        assert_eq!(
            call(Some("Basic abc".into())).await.0,
            http::StatusCode::UNAUTHORIZED
        );
    }

    #[test]
    fn a_token_file_refusal_names_the_metadata() {
        let refusal = with_tokens("https://orders.example/mcp").refusal();
        assert_eq!(
            refusal.challenge,
            "Bearer resource_metadata=\"https://orders.example/.well-known/oauth-protected-resource/mcp\""
        );
    }

    #[test]
    fn a_resource_that_is_not_an_absolute_http_url_is_refused() {
        for resource in [
            "",
            "/mcp",
            "orders.example/mcp",
            "ftp://orders.example/mcp",
            "http://orders.example/mcp#x",
        ] {
            let tokens = Tokens::parse(&format!("ana={}", "a".repeat(40))).unwrap();
            assert!(
                matches!(
                    ResourceServer::tokens(resource, "orders", tokens),
                    Err(ResourceError::Resource(_))
                ),
                "{resource:?}"
            );
        }
    }
}
