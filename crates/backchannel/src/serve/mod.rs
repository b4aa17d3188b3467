//! Serving helpers: stdio, and one Streamable HTTP endpoint for both revisions, served with
//! the protections every server we ship shares (Host/Origin on every route, checked JSON-RPC
//! bodies, capped sessions and connections, header and body timeouts).

/// Items that exist only with the `http` feature (one `cfg` for all of them).
macro_rules! with_http {
    ($($item:item)*) => { $(#[cfg(feature = "http")] $item)* };
}

with_http! {
    mod bearer;
    mod cookie;
    mod edge;
    mod host_origin;
    mod listener;
    pub(crate) mod mcp_route;
    mod options;
    mod sign_in;
    pub use bearer::{BearerError, MAX_TOKEN_BYTES, bearer_token};
    pub use cookie::{MAX_COOKIE_VALUE_BYTES, cookie};
    pub use edge::{http, metrics_router, router, router_passing};
    pub use crate::transport::jsonrpc;
    pub use jsonrpc::jsonrpc_error;
    pub use options::HttpOptions;
    pub use crate::transport::pass_through::{PassThrough, Passed, PlainToolCall};
    pub use sign_in::{Refusal, SIGN_IN_REQUIRED, SignIn, require_sign_in};
}
#[cfg(feature = "resource-server")]
mod resource;
mod runtime;
mod traced;

pub use crate::principal::{Principal, PrincipalKind};
#[cfg(feature = "resource-server")]
pub use resource::{
    CLIENT_PRINCIPAL, MIN_TOKEN_LEN, ResourceError, ResourceServer, SignInSettings,
    SignInSettingsError, TokenFileError, Tokens,
};
pub use runtime::Scheduler;
pub use traced::Traced;

use rmcp::{RoleServer, Service, ServiceExt};
use tokio_util::sync::CancellationToken;

/// Errors of the serving helpers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
/// stdout carries only protocol messages: log with `tracing` to stderr. Each message gets its
/// span and operation metric as over HTTP (see [`Traced`]).
pub async fn stdio<S: Service<RoleServer>>(server: S) -> Result<(), ServeError> {
    let running = Traced(server)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| ServeError::Start(error.to_string()))?;
    running.waiting().await?;
    Ok(())
}

/// A token cancelled on Ctrl-C or SIGTERM (a task waits for the signal); for binaries that hand
/// one shutdown token to everything they start. Call inside a Tokio runtime.
pub fn shutdown_on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let stop = token.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        stop.cancel();
    });
    token
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
