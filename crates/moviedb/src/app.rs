//! Entry points the binary calls: open the database, then serve GraphQL and MCP over HTTP on
//! one port (sign-in by bearer token, loopback Host/Origin checks, a per-user rate limit on
//! `/mcp`), or MCP over stdio as a configured local user.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use backchannel::serve::{self, HttpOptions};
use tokio_util::sync::CancellationToken;

use crate::auth::{AuthError, TokenKeys};
use crate::graphql::{self, MovieSchema};
use crate::limits::RateLimiter;
use crate::mcp::{McpConfig, MovieServer};
use crate::service::{Catalog, Viewer};
use crate::store::{Store, StoreError};

/// Errors starting the service.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The database could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The data folder could not be created.
    #[error("cannot create the data folder {0}: {1}")]
    DataDir(PathBuf, std::io::Error),
    /// The JWT secret is unusable.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The stdio user does not exist.
    #[error(
        "there is no account named '{0}'; pass --user with an existing username (the seed has \
         'user' and 'admin')"
    )]
    UnknownUser(String),
    /// The layer's configuration is invalid.
    #[error(transparent)]
    Layer(#[from] backchannel::BuildError),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
}

/// Settings of a running movie database. Its `Debug` output never shows the JWT secret.
#[derive(Clone)]
pub struct Config {
    /// `sqlite::memory:` or a SQLite URL; `None` for the default file.
    pub database: Option<String>,
    /// Where the default database lives (created if missing); `data` when empty.
    pub data_dir: PathBuf,
    /// The JWT secret (64 hex characters); `None` for a random key per process.
    pub jwt_secret: Option<String>,
    /// MCP tool settings.
    pub mcp: McpConfig,
    /// HTTP endpoint settings.
    pub http: HttpOptions,
    /// MCP calls allowed per minute per user (or address).
    pub mcp_calls_per_minute: u32,
    /// GraphQL requests allowed per minute per user (or address).
    pub graphql_calls_per_minute: u32,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("database", &self.database)
            .field("data_dir", &self.data_dir)
            .field(
                "jwt_secret",
                &self.jwt_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("mcp", &self.mcp)
            .field("http", &self.http)
            .field("mcp_calls_per_minute", &self.mcp_calls_per_minute)
            .field("graphql_calls_per_minute", &self.graphql_calls_per_minute)
            .finish()
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            database: None,
            data_dir: PathBuf::new(),
            jwt_secret: None,
            mcp: McpConfig::default(),
            http: HttpOptions::default(),
            mcp_calls_per_minute: 60,
            graphql_calls_per_minute: 600,
        }
    }
}

/// The default database: `moviedb.sqlite` in `dir` (`data` when empty), created if missing.
pub fn default_database(dir: &std::path::Path) -> Result<String, AppError> {
    let dir = if dir.as_os_str().is_empty() {
        PathBuf::from("data")
    } else {
        dir.to_path_buf()
    };
    std::fs::create_dir_all(&dir).map_err(|e| AppError::DataDir(dir.clone(), e))?;
    Ok(format!("sqlite://{}", dir.join("moviedb.sqlite").display()))
}

/// Open the database (creating, migrating and seeding it on first use) and build the
/// operations over it.
pub async fn open_catalog(config: &Config) -> Result<Catalog, AppError> {
    let url = match &config.database {
        Some(url) => url.clone(),
        None => default_database(&config.data_dir)?,
    };
    let store = Store::open(&url).await?;
    let keys = match &config.jwt_secret {
        Some(secret) => TokenKeys::from_hex(secret)?,
        None => {
            tracing::info!(
                "no JWT secret configured (MOVIEDB_JWT_SECRET): tokens are valid for 24 hours, \
                 but are signed with a key made at start, so they stop working when this \
                 process stops"
            );
            TokenKeys::random()
        }
    };
    Ok(Catalog::new(store, keys))
}

/// The MCP server over `catalog`.
pub fn mcp_server(catalog: &Catalog, config: &McpConfig) -> Result<MovieServer, AppError> {
    let layer = MovieServer::layer_builder(config).build()?;
    Ok(MovieServer::new(
        graphql::schema(catalog.clone()),
        layer,
        config.clone(),
    ))
}

#[derive(Clone)]
struct HttpState {
    schema: MovieSchema,
    catalog: Catalog,
    limiter: Arc<RateLimiter>,
    graphql_limiter: Arc<RateLimiter>,
    options: Arc<HttpOptions>,
}

/// Read the bearer token, if any: `Ok(None)` without one, `Err` for a bad one.
fn bearer_viewer(catalog: &Catalog, request: &Request) -> Result<Option<Viewer>, String> {
    let Some(header) = request.headers().get(http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = header
        .to_str()
        .map_err(|_| "the Authorization header is not readable text".to_owned())?;
    let Some(token) = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
    else {
        return Err("the Authorization header must be 'Bearer <token>'".into());
    };
    catalog
        .keys()
        .verify(token, chrono::Utc::now())
        .map(|claims| {
            Some(Viewer {
                username: claims.sub,
                role: claims.role,
            })
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

/// On `/mcp`: check the bearer token (a bad one gets 401 and changes nothing), hand the user
/// to the tools through the request's extensions, and limit calls per user or address.
async fn mcp_gate(
    State(state): State<HttpState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    let viewer = match bearer_viewer(&state.catalog, &request) {
        Ok(viewer) => viewer,
        Err(message) => {
            let mut response = json_response(
                http::StatusCode::UNAUTHORIZED,
                serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": { "code": -32001, "message": message },
                }),
            );
            response.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer error=\"invalid_token\""),
            );
            return response;
        }
    };
    if request.method() == http::Method::POST {
        let key = viewer.as_ref().map_or_else(
            || format!("addr:{}", peer.ip()),
            |v| format!("user:{}", v.username),
        );
        if let Err(wait) = state.limiter.take(&key) {
            let mut response = json_response(
                http::StatusCode::TOO_MANY_REQUESTS,
                serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {
                        "code": -32000,
                        "message": format!(
                            "Too many MCP calls: the limit is {} a minute. Try again in {} s.",
                            state.limiter.capacity(),
                            wait.as_secs().max(1)
                        ),
                    },
                }),
            );
            response.headers_mut().insert(
                http::header::RETRY_AFTER,
                http::HeaderValue::from(wait.as_secs().max(1)),
            );
            return response;
        }
    }
    if let Some(viewer) = viewer {
        // Sessions, sealed state and tasks are bound to the signed-in user.
        request
            .extensions_mut()
            .insert(serve::Principal(viewer.username.clone()));
        request.extensions_mut().insert(viewer);
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
    if let Err(wait) = state.graphql_limiter.take(&key) {
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

/// GraphQL at `/graphql` (GraphiQL on GET) and MCP at `/mcp`, on one router.
pub fn router(
    catalog: Catalog,
    config: &Config,
    shutdown: CancellationToken,
) -> Result<axum::Router, AppError> {
    let server = mcp_server(&catalog, &config.mcp)?;
    let state = HttpState {
        schema: graphql::schema(catalog.clone()),
        catalog,
        limiter: Arc::new(RateLimiter::new(config.mcp_calls_per_minute)),
        graphql_limiter: Arc::new(RateLimiter::new(config.graphql_calls_per_minute)),
        options: Arc::new(config.http.clone()),
    };
    let mcp = serve::router(move || server.clone(), &config.http, shutdown).layer(
        axum::middleware::from_fn_with_state(state.clone(), mcp_gate),
    );
    let graphql = axum::Router::new()
        .route("/", axum::routing::get(crate::front::index))
        .route("/favicon.ico", axum::routing::get(crate::front::favicon))
        .route(
            "/graphiql/{name}",
            axum::routing::get(crate::front::graphiql_asset),
        )
        .route(
            "/graphql",
            axum::routing::get(graphql_get).post(graphql_post),
        )
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            graphql_cors,
        ))
        .with_state(state);
    Ok(mcp.merge(graphql))
}

/// Serve GraphQL and MCP on `listener` until `shutdown` is cancelled.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    config: &Config,
    shutdown: CancellationToken,
) -> Result<(), AppError> {
    let catalog = open_catalog(config).await?;
    let app = router(catalog, config, shutdown.clone())?;
    if let Ok(addr) = listener.local_addr() {
        tracing::info!("moviedb listening on http://{addr} (GraphQL at /graphql, MCP at /mcp)");
    }
    serve::http(listener, app, &config.http, async move {
        shutdown.cancelled().await
    })
    .await?;
    Ok(())
}

/// Serve one MCP session over stdin/stdout, acting as the account `user`.
pub async fn serve_stdio(config: &Config, user: &str) -> Result<(), AppError> {
    let catalog = open_catalog(config).await?;
    let account = catalog
        .store()
        .user_by_name(user)
        .await?
        .ok_or_else(|| AppError::UnknownUser(user.to_owned()))?;
    let mcp = McpConfig {
        fixed_user: Some(Viewer {
            username: account.username,
            role: account.role,
        }),
        ..config.mcp.clone()
    };
    serve::stdio(mcp_server(&catalog, &mcp)?).await?;
    Ok(())
}
