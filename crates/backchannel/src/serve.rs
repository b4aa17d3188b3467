//! Serving helpers: stdio, and one Streamable HTTP endpoint for both revisions.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, Service, ServiceExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Errors of the serving helpers.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The stdio session could not start (for example, a malformed first message).
    #[error("the stdio session could not start: {0}")]
    Start(String),
    /// The connection task failed.
    #[error("the session task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
    /// Socket I/O failed.
    #[error("HTTP server I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Serve one MCP session over this process's stdin/stdout until the client disconnects.
/// stdout carries only protocol messages: log with `tracing` to stderr.
pub async fn stdio<S: Service<RoleServer>>(server: S) -> Result<(), ServeError> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| ServeError::Start(error.to_string()))?;
    running.waiting().await?;
    Ok(())
}

/// Options of the HTTP endpoint.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// `Host` values accepted (port optional). Default: loopback names only.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted when a browser sends one (`:*` matches any port). Default:
    /// loopback origins only.
    pub allowed_origins: Vec<String>,
    /// Largest request body accepted (default 1 MiB); larger bodies get 413.
    pub max_body_bytes: usize,
    /// Keep 2025-11-25 sessions (needed for server-to-client requests). Default true.
    pub legacy_sessions: bool,
    /// SSE keep-alive interval.
    pub sse_keep_alive: Option<Duration>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            allowed_hosts: vec![
                "localhost".into(),
                "127.0.0.1".into(),
                "::1".into(),
                "[::1]".into(),
            ],
            allowed_origins: vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "http://[::1]:*".into(),
            ],
            max_body_bytes: 1024 * 1024,
            legacy_sessions: true,
            sse_keep_alive: Some(Duration::from_secs(15)),
        }
    }
}

/// An axum router with the MCP endpoint at `/mcp`. `factory` builds the handler for each
/// session (2025-11-25) and for each stateless request (2026-07-28), so shared state belongs
/// behind an `Arc`. Cancelling `shutdown` closes open streams.
pub fn router<S, F>(factory: F, options: &HttpOptions, shutdown: CancellationToken) -> axum::Router
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_allowed_origins(options.allowed_origins.clone())
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_legacy_session_mode(options.legacy_sessions)
        .with_sse_keep_alive(options.sse_keep_alive)
        .with_cancellation_token(shutdown);
    let service = StreamableHttpService::new(
        move || Ok(factory()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let limit = options.max_body_bytes;
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(move |request, next| {
            check_json_body(request, next, limit)
        }))
}

/// Answer a POST whose body is not JSON with a JSON-RPC parse error (rmcp answers plain text),
/// and one over the limit with 413, before anything else sees it.
async fn check_json_body(
    request: axum::extract::Request,
    next: axum::middleware::Next,
    limit: usize,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if request.method() != http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return jsonrpc_error(
                http::StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                format!("request body is larger than {limit} bytes"),
            )
            .into_response();
        }
    };
    if let Err(error) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
        return jsonrpc_error(
            http::StatusCode::BAD_REQUEST,
            -32700,
            format!("Parse error: {error}"),
        )
        .into_response();
    }
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}

fn jsonrpc_error(
    status: http::StatusCode,
    code: i32,
    message: String,
) -> (
    http::StatusCode,
    [(http::HeaderName, &'static str); 1],
    String,
) {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
}

/// Serve `app` on `listener` with `TCP_NODELAY` on every accepted socket, until `shutdown`
/// resolves; then stop accepting and let open requests finish.
pub async fn http(
    listener: TcpListener,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let listener = listener.tap_io(|stream| {
        // Without it the last chunk of an SSE reply waits for the peer's delayed ACK (~40 ms).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(%error, "could not set TCP_NODELAY");
        }
    });
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await?;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
