//! The HTTP edge's entry points (feature `http`): [`HttpOptions`], [`router`] (the `/mcp`
//! endpoint over a server factory), [`http()`] (any router behind the Host/Origin policy, on
//! the listener of `listener.rs`) and [`metrics_router`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{ServeError, host_origin, listener, mcp_route, stateless};

/// Options of an HTTP server: who may call it, and what it accepts.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// `Host` values accepted on every route. An entry without a port accepts its name on any
    /// port; an entry with one (`orders.example:8443`) accepts that name on that port only.
    /// Default: loopback names only.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted when a browser sends one, on every route (`:*` matches any
    /// port). Default: loopback origins only.
    pub allowed_origins: Vec<String>,
    /// Largest request body accepted on `/mcp` (default 1 MiB); larger bodies get 413.
    pub max_body_bytes: usize,
    /// How long a request body may take to arrive on `/mcp` (default 30 s).
    pub body_read_timeout: Duration,
    /// How long a connection may take to send a request's headers, and how long it may sit
    /// idle between requests (default 10 s).
    pub header_read_timeout: Duration,
    /// Connections served at once (default 4,096); further ones wait to be accepted.
    pub max_connections: usize,
    /// Keep 2025-11-25 sessions (needed for server-to-client requests). Default true.
    pub legacy_sessions: bool,
    /// 2025-11-25 sessions open at once (default 1,000); `initialize` beyond it gets 503.
    pub max_sessions: usize,
    /// Answer a 2026-07-28 request whose first message is its result as `application/json`
    /// (default true); one that sends progress, a log message or a question first still gets
    /// an SSE stream.
    pub json_response: bool,
    /// SSE keep-alive interval.
    pub sse_keep_alive: Option<Duration>,
    /// Serve well-formed 2026-07-28 requests in the request's own task, without rmcp's
    /// per-request service, transport, peer and spawned task (default true). Such a handler
    /// sends its notifications through [`crate::Ctx`]; a message sent through
    /// `RequestContext::peer` during one is dropped. Off, rmcp serves every request.
    pub stateless_fast_path: bool,
    /// Serve a 2025-11-25 session's messages by calling the handler directly once rmcp has
    /// answered its `initialize` (default true), instead of through a serve loop of rmcp's for
    /// each session (a task and two channels: about 33 KiB a session). Such a handler sends its
    /// notifications and questions through [`crate::Ctx`]; a message sent through
    /// `RequestContext::peer` is dropped. Off, rmcp serves every session to its end.
    pub direct_sessions: bool,
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
            body_read_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(10),
            max_connections: 4096,
            legacy_sessions: true,
            max_sessions: 1000,
            json_response: true,
            sse_keep_alive: Some(Duration::from_secs(15)),
            stateless_fast_path: true,
            direct_sessions: true,
        }
    }
}

impl HttpOptions {
    /// Also accept `host` as a `Host` name (and `http://host:*`, `https://host:*` as
    /// origins), for a server reached by a name other than loopback. With a port
    /// (`orders.example:8443`), only that port is accepted, in `Host` and in origins.
    pub fn allow_host(mut self, host: &str) -> Self {
        self.allowed_hosts.push(host.to_owned());
        let any_port = if host_port(host).is_some() { "" } else { ":*" };
        self.allowed_origins
            .push(format!("http://{host}{any_port}"));
        self.allowed_origins
            .push(format!("https://{host}{any_port}"));
        self
    }
}

/// The port a `Host` value (`name`, `name:port`, `[v6]`, `[v6]:port`) names, if any.
pub(crate) fn host_port(host: &str) -> Option<&str> {
    let rest = if host.starts_with('[') {
        &host[host.find(']')? + 1..]
    } else {
        &host[host.find(':')?..]
    };
    rest.strip_prefix(':').filter(|port| !port.is_empty())
}

/// An axum router with the MCP endpoint at `/mcp`. `factory` builds the handler for each
/// session (2025-11-25) and for each stateless request (2026-07-28), so shared state belongs
/// behind an `Arc`. Cancelling `shutdown` closes open streams. Every POST is checked
/// ([`jsonrpc::check_body`]) and the 2025-11-25 session rules are kept (see `mcp_route.rs`); an
/// application that authenticates callers puts a [`Principal`] into the request's extensions
/// in a layer outside this router.
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
