//! The HTTP edge's entry points (feature `http`): [`HttpOptions`], [`router`] (the `/mcp`
//! endpoint over a server factory), [`http()`] (any router behind the Host/Origin policy, on
//! the listener of `listener.rs`) and [`metrics_router`].

use std::future::Future;
use std::sync::Arc;

use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::options::HttpOptions;
use crate::transport::pass_through::PassThrough;
use super::{ServeError, host_origin, listener, mcp_route};
use crate::transport::stateless;

/// An axum router with the MCP endpoint at `/mcp`. `factory` builds the handler for each
/// session (2025-11-25) and for each stateless request (2026-07-28), so shared state belongs
/// behind an `Arc`. Cancelling `shutdown` closes open streams. Every POST is checked
/// ([`crate::serve::jsonrpc::check_body`]) and the 2025-11-25 session rules are kept (see `mcp_route.rs`); an
/// application that authenticates callers puts a [`super::Principal`] into the request's extensions
/// in a layer outside this router.
pub fn router<S, F>(factory: F, options: &HttpOptions, shutdown: CancellationToken) -> axum::Router
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    endpoint(factory, options, shutdown, None)
}

/// [`router`], with `pass` offered every plain 2026-07-28 `tools/call` once it is checked and
/// before the handler is built for it ([`PassThrough`]): for a server that relays such calls
/// elsewhere (a gateway) and has no use for rmcp's dispatch, the layer and `Ctx` on the way.
/// Needs [`HttpOptions::stateless_fast_path`]; without it the handler serves every call.
pub fn router_passing<S, F>(
    factory: F,
    options: &HttpOptions,
    shutdown: CancellationToken,
    pass: Arc<dyn PassThrough>,
) -> axum::Router
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    endpoint(factory, options, shutdown, Some(pass))
}

fn endpoint<S, F>(
    factory: F,
    options: &HttpOptions,
    shutdown: CancellationToken,
    pass: Option<Arc<dyn PassThrough>>,
) -> axum::Router
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_allowed_origins(options.allowed_origins.clone())
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_legacy_session_mode(options.legacy_sessions)
        .with_json_response(options.json_response)
        .with_sse_keep_alive(options.sse_keep_alive)
        .with_cancellation_token(shutdown.clone());
    let factory = Arc::new(factory);
    let fast: Option<Arc<dyn stateless::FastPath>> = options.stateless_fast_path.then(|| {
        Arc::new(stateless::Stateless::new(
            factory.clone(),
            options.json_response,
            options.sse_keep_alive,
            shutdown.clone(),
            pass,
        )) as Arc<dyn stateless::FastPath>
    });
    let drivers = options.direct_sessions.then(|| {
        Arc::new(crate::transport::driver::Drivers::new(factory.clone()))
            as Arc<dyn crate::transport::sessions::DriverFactory>
    });
    let sessions = Arc::new(crate::transport::LeanSessions::new(
        config.sse_retry,
        drivers,
    ));
    let service = StreamableHttpService::new(move || Ok(factory()), sessions.clone(), config);
    let endpoint = mcp_route::Endpoint {
        gate: mcp_route::Gate::new(sessions, options, fast, shutdown.clone()),
        rmcp: Arc::new(service),
    };
    axum::Router::new().nest_service("/mcp", endpoint)
}

/// Serve `app` on `listener` until `shutdown` resolves; then stop accepting and let open
/// requests finish. Every route is behind the Host/Origin policy of `options` (403
/// otherwise); every accepted socket gets `TCP_NODELAY`; connections are capped at
/// `max_connections` and closed when they take longer than `header_read_timeout` to send a
/// request's headers or sit idle that long between requests; the soft limit on open files is
/// raised to the hard limit first.
pub async fn http(
    listener: TcpListener,
    app: axum::Router,
    options: &HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    raise_open_file_limit();
    let policy = Arc::new(options.clone());
    let app = app.layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let policy = policy.clone();
            async move {
                match policy.refusal(request.headers()) {
                    None => next.run(request).await,
                    Some((kind, reason)) => {
                        crate::metrics::refused(kind);
                        host_origin::refused(request.uri().path(), reason)
                    }
                }
            }
        },
    ));
    listener::serve(listener, app, options, shutdown).await
}

/// Raise this process's soft limit on open files to its hard limit, so a burst of
/// connections meets the connection cap before it meets "Too many open files".
fn raise_open_file_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "open-file limit"),
        Err(error) => tracing::debug!(%error, "could not raise the open-file limit"),
    }
}

/// `GET /metrics`: the process's [`crate::metrics`] in Prometheus's text format. Building it
/// calls [`crate::metrics::enable`], so the duration histograms are kept from then on. Merge
/// it into the app [`http()`] serves, so the Host/Origin policy holds for it as for every route
/// (and put it inside the application's sign-in, if it has one).
pub fn metrics_router() -> axum::Router {
    crate::metrics::enable();
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(|| async {
            (
                [(
                    http::header::CONTENT_TYPE,
                    "text/plain; version=0.0.4; charset=utf-8",
                )],
                crate::metrics::render(),
            )
        }),
    )
}
