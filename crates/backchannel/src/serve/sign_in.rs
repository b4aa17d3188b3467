//! The sign-in edge every server shares: read the bearer token once, ask the server's own
//! [`SignIn`] who it stands for, put that [`Principal`] into the request's extensions (so
//! sessions, sealed state and tasks are bound to it), or answer 401 with the server's
//! challenge. What a token means (a token file, OAuth introspection, a signed JWT) is the
//! server's; how a refusal reads on the wire is this module's.

use std::future::Future;
use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

use super::bearer::{BearerError, bearer_token};
use crate::transport::jsonrpc::jsonrpc_error;
use crate::principal::Principal;

/// The JSON-RPC error code of a refused sign-in (the 401's body).
pub const SIGN_IN_REQUIRED: i32 = -32001;

/// Why a request may not go on: the message a client reads in the 401's JSON-RPC error, and
/// the `WWW-Authenticate` challenge that tells it how to sign in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What the client reads.
    pub message: String,
    /// The `WWW-Authenticate` value (`Bearer`, `Bearer error="invalid_token"`,
    /// `Bearer resource_metadata="…"`).
    pub challenge: http::HeaderValue,
}

impl Refusal {
    /// A refusal with `message` and the challenge `Bearer`.
    pub fn new(message: impl Into<String>) -> Self {
        Refusal {
            message: message.into(),
            challenge: http::HeaderValue::from_static("Bearer"),
        }
    }

    /// The same refusal with another challenge.
    pub fn with_challenge(mut self, challenge: http::HeaderValue) -> Self {
        self.challenge = challenge;
        self
    }

    /// The 401 every server answers a refused sign-in with.
    pub fn into_response(self) -> Response {
        let mut response = jsonrpc_error(
            http::StatusCode::UNAUTHORIZED,
            SIGN_IN_REQUIRED,
            self.message,
            None,
        );
        response
            .headers_mut()
            .insert(http::header::WWW_AUTHENTICATE, self.challenge);
        response
    }
}

/// How a server tells who is calling. [`require_sign_in`] reads the bearer token and asks.
pub trait SignIn: Send + Sync + 'static {
    /// Who `token` stands for: `Ok(Some(_))` lets the request on as that principal, `Ok(None)`
    /// lets it on anonymously (for servers where signing in is optional), `Err` refuses it.
    /// `token` is `Ok(None)` without an `Authorization` header and `Err` for one that holds no
    /// usable bearer token. `request` is the request's head: a server may put what the
    /// handlers need (its own user type) into its extensions.
    fn sign_in(
        &self,
        token: Result<Option<String>, BearerError>,
        request: &mut http::request::Parts,
    ) -> impl Future<Output = Result<Option<Principal>, Refusal>> + Send;
}

/// `router` with every request signed in by `sign_in` first (the layer runs before the
/// router's own layers).
pub fn require_sign_in<S: SignIn>(router: axum::Router, sign_in: S) -> axum::Router {
    let sign_in = Arc::new(sign_in);
    router.layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            let sign_in = sign_in.clone();
            async move { signed_in(&*sign_in, request, next).await }
        },
    ))
}

async fn signed_in<S: SignIn>(sign_in: &S, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let token = bearer_token(&parts.headers).map(|token| token.map(str::to_owned));
    match sign_in.sign_in(token, &mut parts).await {
        Ok(principal) => {
            if let Some(principal) = principal {
                parts.extensions.insert(principal);
            }
            next.run(Request::from_parts(parts, body)).await
        }
        Err(refusal) => {
            crate::metrics::refused(crate::metrics::Reason::Auth);
            refusal.into_response()
        }
    }
}

/// A test's GET of `/` from `app` with `authorization`: the status, the challenge (empty when
/// none) and the body.
#[cfg(test)]
pub(crate) async fn get_as(
    app: axum::Router,
    authorization: Option<&str>,
) -> (http::StatusCode, String, String) {
    use tower::ServiceExt as _;
    let mut request = http::Request::builder().uri("/");
    if let Some(value) = authorization {
        request = request.header(http::header::AUTHORIZATION, value);
    }
    let response = app
        .oneshot(request.body(axum::body::Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let challenge = response
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = axum::body::to_bytes(response.into_body(), 1 << 16)
        .await
        .unwrap();
    (status, challenge, String::from_utf8_lossy(&body).into_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Signs in `good` as "ana"; no token is anonymous; anything else is refused.
    struct OneToken;

    impl SignIn for OneToken {
        async fn sign_in(
            &self,
            token: Result<Option<String>, BearerError>,
            _request: &mut http::request::Parts,
        ) -> Result<Option<Principal>, Refusal> {
            match token {
                Ok(None) => Ok(None),
                Ok(Some(token)) if token == "good" => Ok(Some(Principal("ana".into()))),
                Ok(Some(_)) => Err(Refusal::new("unknown token")),
                Err(error) => Err(Refusal::new(error.to_string()).with_challenge(
                    http::HeaderValue::from_static("Bearer error=\"invalid_token\""),
                )),
            }
        }
    }

    async fn send(authorization: Option<&str>) -> (http::StatusCode, String, String) {
        let app = require_sign_in(
            axum::Router::new().route(
                "/",
                axum::routing::get(|principal: Option<axum::Extension<Principal>>| async move {
                    principal.map_or_else(|| "anonymous".to_owned(), |p| p.0.0.clone())
                }),
            ),
            OneToken,
        );
        get_as(app, authorization).await
    }

    #[tokio::test]
    async fn a_signed_in_caller_reaches_the_handler_as_its_principal() {
        assert_eq!(
            send(Some("bearer good")).await,
            (http::StatusCode::OK, String::new(), "ana".into())
        );
        assert_eq!(send(None).await.2, "anonymous");
    }

    #[tokio::test]
    async fn a_refusal_is_a_401_with_the_servers_challenge_and_a_json_rpc_error() {
        let (status, challenge, body) = send(Some("Bearer bad")).await;
        assert_eq!(
            (status, challenge.as_str()),
            (http::StatusCode::UNAUTHORIZED, "Bearer")
        );
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], SIGN_IN_REQUIRED);
        assert_eq!(body["error"]["message"], "unknown token");
        let (status, challenge, _) = send(Some("Basic dXNlcjpwdw==")).await;
        assert_eq!(status, http::StatusCode::UNAUTHORIZED);
        assert_eq!(challenge, "Bearer error=\"invalid_token\"");
    }
}
