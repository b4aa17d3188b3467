//! The HTTP surface: one router with GraphQL at `/graphql` (GraphiQL on GET, CORS for the
//! allowed origins), the front page, and MCP at `/mcp` behind sign-in and a per-user rate limit.
//! Host/Origin checks are backchannel's (`serve::http` puts them on every route).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use backchannel::serve::{self, HttpOptions};
use tokio_util::sync::CancellationToken;

use crate::graphql::{self, MovieSchema};
use crate::limits::RateLimiter;
use crate::mcp::MovieServer;
use crate::service::{Catalog, Viewer};

#[derive(Clone)]
struct HttpState {
    schema: MovieSchema,
    catalog: Catalog,
    limiter: Arc<RateLimiter>,
    graphql_limiter: Arc<RateLimiter>,
    options: Arc<HttpOptions>,
}

/// Signing in to `/mcp` with a JWT from the `login` mutation: optional (an anonymous caller
/// may use the tools that need no account), but a bad token is refused with 401 and changes
/// nothing. The user reaches the tools as a [`Viewer`] in the request's extensions.
struct JwtSignIn(Catalog);

impl serve::SignIn for JwtSignIn {
    async fn sign_in(
        &self,
        token: Result<Option<String>, serve::BearerError>,
        request: &mut http::request::Parts,
    ) -> Result<Option<serve::Principal>, serve::Refusal> {
        let invalid = |message: String| {
            serve::Refusal::new(message).with_challenge(http::HeaderValue::from_static(
                "Bearer error=\"invalid_token\"",
            ))
        };
        let Some(token) = token.map_err(|error| invalid(error.to_string()))? else {
            return Ok(None);
        };
        let viewer = viewer_of_token(&self.0, &token).map_err(invalid)?;
        let principal = serve::Principal(viewer.username.clone());
        request.extensions.insert(viewer);
        Ok(Some(principal))
    }
}

/// The user a request's bearer token names: `Ok(None)` without one, `Err` for a bad one (for
/// `/graphql`, which refuses in GraphQL's shape).
fn bearer_viewer(catalog: &Catalog, request: &Request) -> Result<Option<Viewer>, String> {
    match serve::bearer_token(request.headers()).map_err(|error| error.to_string())? {
        Some(token) => viewer_of_token(catalog, token).map(Some),
        None => Ok(None),
    }
}

/// The user a JWT names, or why it names no one.
fn viewer_of_token(catalog: &Catalog, token: &str) -> Result<Viewer, String> {
    catalog
        .keys()
        .verify(token, chrono::Utc::now())
        .map(|claims| Viewer {
            username: claims.sub,
            role: claims.role,
        })
        .map_err(|e| e.to_string())
}

/// CORS for `/graphql`: pages from the allowed origins (loopback by default, e.g. a front end
/// on `http://localhost:5173`) may send credentials and the bearer token; preflights from any
/// other origin get 403.
async fn graphql_cors(State(state): State<HttpState>, request: Request, next: Next) -> Response {
    let origin = request
        .headers()
        .get(http::header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .filter(|o| state.options.origin_allowed(o))
        .and_then(|o| http::HeaderValue::from_str(o).ok());
    if request.method() == http::Method::OPTIONS {
        let Some(origin) = origin else {
            return (
                http::StatusCode::FORBIDDEN,
                "This Origin may not call the API.",
            )
                .into_response();
        };
        let mut response = http::StatusCode::NO_CONTENT.into_response();
        let headers = response.headers_mut();
        headers.insert(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            http::header::ACCESS_CONTROL_ALLOW_METHODS,
            http::HeaderValue::from_static("GET, POST, OPTIONS"),
        );
        headers.insert(
            http::header::ACCESS_CONTROL_ALLOW_HEADERS,
            http::HeaderValue::from_static("content-type, authorization"),
        );
        headers.insert(
            http::header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            http::HeaderValue::from_static("true"),
        );
        headers.insert(
            http::header::ACCESS_CONTROL_MAX_AGE,
            http::HeaderValue::from_static("600"),
        );
        headers.insert(http::header::VARY, http::HeaderValue::from_static("Origin"));
        return response;
    }
    let mut response = next.run(request).await;
    if let Some(origin) = origin {
        let headers = response.headers_mut();
        headers.insert(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            http::header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            http::HeaderValue::from_static("true"),
        );
        headers.insert(http::header::VARY, http::HeaderValue::from_static("Origin"));
    }
    response
}

fn json_response(status: http::StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// On `/mcp`, after sign-in: limit calls per user, or per address for anonymous callers.
async fn mcp_rate_limit(
    State(state): State<HttpState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let viewer = request.extensions().get::<Viewer>();
    if request.method() == http::Method::POST {
        let key = viewer.as_ref().map_or_else(
            || format!("addr:{}", peer.ip()),
            |v| format!("user:{}", v.username),
        );
        if let Err(wait) = state.limiter.take(&key).await {
            backchannel::metrics::refused(backchannel::metrics::Reason::RateLimit);
            let mut response = backchannel::serve::jsonrpc_error(
                http::StatusCode::TOO_MANY_REQUESTS,
                -32000,
                format!(
                    "Too many MCP calls: the limit is {} a minute. Try again in {} s.",
                    state.limiter.capacity(),
                    wait.as_secs().max(1)
                ),
                None,
            );
            response.headers_mut().insert(
                http::header::RETRY_AFTER,
                http::HeaderValue::from(wait.as_secs().max(1)),
            );
            return response;
        }
    }
    next.run(request).await
}

fn graphql_error(status: http::StatusCode, classification: &str, message: &str) -> Response {
    json_response(
        status,
        serde_json::json!({
            "data": null,
            "errors": [{ "message": message, "extensions": { "classification": classification } }],
        }),
    )
}

async fn graphql_post(
    State(state): State<HttpState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let viewer = match bearer_viewer(&state.catalog, &request) {
        Ok(viewer) => viewer,
        Err(message) => {
            return graphql_error(http::StatusCode::UNAUTHORIZED, "UNAUTHORIZED", &message);
        }
    };
    let key = viewer.as_ref().map_or_else(
        || format!("addr:{}", peer.ip()),
        |v| format!("user:{}", v.username),
    );
    if let Err(wait) = state.graphql_limiter.take(&key).await {
        backchannel::metrics::refused(backchannel::metrics::Reason::RateLimit);
        let mut response = graphql_error(
            http::StatusCode::TOO_MANY_REQUESTS,
            "TOO_MANY_REQUESTS",
            &format!(
                "Too many GraphQL requests: the limit is {} a minute. Try again in {} s.",
                state.graphql_limiter.capacity(),
                wait.as_secs().max(1)
            ),
        );
        response.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from(wait.as_secs().max(1)),
        );
        return response;
    }
    // The query, its variables and a little JSON around them.
    let limit = graphql::MAX_QUERY_BYTES * 4;
    let body = match axum::body::to_bytes(request.into_body(), limit).await {
        Ok(body) => body,
        Err(_) => {
            return graphql_error(
                http::StatusCode::PAYLOAD_TOO_LARGE,
                "BAD_REQUEST",
                &format!("The request body is larger than {limit} bytes."),
            );
        }
    };
    let gql_request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(error) => {
            return graphql_error(
                http::StatusCode::BAD_REQUEST,
                "BAD_REQUEST",
                &format!(
                    "The body must be JSON with a \"query\" string (and optional \"variables\" \
                     and \"operationName\"): {error}"
                ),
            );
        }
    };
    if let Err(message) = graphql::check_query_size(&gql_request.query) {
        return graphql_error(http::StatusCode::BAD_REQUEST, "BAD_REQUEST", &message);
    }
    let gql_request = gql_request.data(crate::service::ClientAddress(peer.ip()));
    let response = graphql::execute(&state.schema, gql_request, viewer).await;
    match serde_json::to_vec(&response) {
        Ok(body) if body.len() > graphql::MAX_RESPONSE_BYTES => graphql_error(
            http::StatusCode::OK,
            "BAD_REQUEST",
            &format!(
                "The response would be {} bytes, over the limit of {}; ask for fewer fields or \
                 a smaller page.",
                body.len(),
                graphql::MAX_RESPONSE_BYTES
            ),
        ),
        Ok(body) => (
            http::StatusCode::OK,
            [(http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(_) => graphql_error(
            http::StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_ERROR",
            "The response could not be encoded.",
        ),
    }
}

/// GET `/graphql`: a WebSocket upgrade for subscriptions, otherwise GraphiQL.
async fn graphql_get(State(state): State<HttpState>, request: Request) -> Response {
    use axum::extract::FromRequestParts;
    use axum::extract::ws::WebSocketUpgrade;
    let upgrade = request
        .headers()
        .get(http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if !upgrade {
        return crate::front::graphiql();
    }
    let (mut parts, _body) = request.into_parts();
    let protocol =
        match async_graphql_axum::GraphQLProtocol::from_request_parts(&mut parts, &state).await {
            Ok(protocol) => protocol,
            Err(rejection) => return rejection.into_response(),
        };
    let socket = match WebSocketUpgrade::from_request_parts(&mut parts, &state).await {
        Ok(socket) => socket,
        Err(rejection) => return rejection.into_response(),
    };
    let schema = state.schema.clone();
    socket
        .protocols(async_graphql::http::ALL_WEBSOCKET_PROTOCOLS)
        .on_upgrade(move |stream| {
            async_graphql_axum::GraphQLWebSocket::new(stream, schema, protocol).serve()
        })
}

/// The per-user (or per-address) rate limits of the two endpoints, in calls per minute.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RateLimits {
    pub(crate) mcp_per_minute: u32,
    pub(crate) graphql_per_minute: u32,
}

/// Whether the router serves `/metrics` (Prometheus text; no sign-in, like `/healthz`, behind
/// the same Host checks; the server listens on loopback unless told otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WithMetrics(pub(crate) bool);

/// GraphQL at `/graphql` (GraphiQL on GET), the front page, `/healthz`, and `server` at `/mcp`
/// behind sign-in and the rate limit, on one router.
pub(crate) fn router(
    catalog: Catalog,
    server: MovieServer,
    options: &HttpOptions,
    limits: RateLimits,
    metrics: WithMetrics,
    shutdown: CancellationToken,
) -> axum::Router {
    let shared = catalog.store().shared_state();
    let state = HttpState {
        // One schema for both endpoints, built once (with the server).
        schema: server.schema().clone(),
        catalog,
        limiter: Arc::new(RateLimiter::new(limits.mcp_per_minute).shared_by(shared.clone(), "mcp")),
        graphql_limiter: Arc::new(
            RateLimiter::new(limits.graphql_per_minute).shared_by(shared, "graphql"),
        ),
        options: Arc::new(options.clone()),
    };
    let mcp = serve::router(move || server.clone(), options, shutdown).layer(
        axum::middleware::from_fn_with_state(state.clone(), mcp_rate_limit),
    );
    // Sessions, sealed state and tasks are bound to the signed-in user.
    let mcp = serve::require_sign_in(mcp, JwtSignIn(state.catalog.clone()));
    let graphql = axum::Router::new()
        .route("/", axum::routing::get(crate::front::index))
        .route("/favicon.ico", axum::routing::get(crate::front::favicon))
        .route(
            "/graphiql/{name}",
            axum::routing::get(crate::front::graphiql_asset),
        )
        .route("/healthz", axum::routing::get(healthz))
        .route(
            "/graphql",
            axum::routing::get(graphql_get).post(graphql_post),
        )
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            graphql_cors,
        ))
        .with_state(state);
    let app = mcp.merge(graphql);
    if metrics.0 {
        app.merge(serve::metrics_router())
    } else {
        app
    }
}

/// `GET /healthz`: 200 when the database answers, 503 otherwise (for a load balancer's checks;
/// needs no sign-in and tells nothing else).
async fn healthz(State(state): State<HttpState>) -> Response {
    match state.catalog.store().ping().await {
        Ok(()) => json_response(http::StatusCode::OK, serde_json::json!({ "status": "ok" })),
        Err(store) => {
            tracing::warn!(%store, "health check: the database does not answer");
            json_response(
                http::StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({ "message": "The movie database does not answer." }),
            )
        }
    }
}
