//! Entry points of the `support-agent` binary.
//!
//! The library does not know the order service: the demo is handed a function that serves it on
//! a listener (the binary passes `orders::app::serve_http`), so `agent` builds without `orders`
//! (`cargo tree -p agent --no-default-features -e normal` shows none; the `demo` feature adds it
//! for the binary alone).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use backchannel::serve;
use tokio_util::sync::CancellationToken;

use crate::desk::{Desk, DeskConfig, DeskError};

/// Errors of the entry points.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The desk could not start.
    #[error(transparent)]
    Desk(#[from] DeskError),
    /// The order service (the demo's companion server) failed.
    #[error("the order service failed: {0}")]
    Orders(Box<dyn std::error::Error + Send + Sync>),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
    /// No loopback port could be had for the terminal's sign-in callbacks.
    #[error("cannot open a loopback port for sign-in callbacks: {0}")]
    Callback(std::io::Error),
    /// A socket could not be bound (the address came from the flag `flag`).
    #[error("cannot listen on {addr}: {error}; choose another address with {flag}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The flag that sets it.
        flag: &'static str,
        /// What the system said.
        error: std::io::Error,
    },
}

/// Serve the web UI on `listener` until `shutdown`.
pub async fn serve_web(
    listener: tokio::net::TcpListener,
    config: DeskConfig,
    web: serve::HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), AppError> {
    let mut config = config;
    if let Ok(addr) = listener.local_addr() {
        config
            .sign_in_callback
            .get_or_insert_with(|| callback_url(addr));
    }
    let desk = Arc::new(Desk::start(config).await?);
    desk.follow_kept_tasks().await?;
    close_pages_on(&desk, &shutdown);
    let app = crate::web::routes(desk);
    serve::http(
        listener,
        app,
        &web,
        async move { shutdown.cancelled().await },
    )
    .await?;
    Ok(())
}

/// When `shutdown` comes, end the pages' event streams, so the stop does not wait for them.
fn close_pages_on(desk: &Arc<Desk>, shutdown: &CancellationToken) {
    let (events, shutdown) = (desk.events().clone(), shutdown.clone());
    tokio::spawn(async move {
        shutdown.cancelled().await;
        events.close_all();
    });
}

/// The desk's sign-in callback on the web UI's address.
fn callback_url(addr: SocketAddr) -> String {
    format!("http://{addr}{}", crate::web::CALLBACK_PATH)
}

/// Start the desk for the terminal: its sign-in callback is served on a loopback port of its
/// own (until `shutdown`), so a server that asks the person to sign in can be answered from a
/// browser on this machine.
pub async fn terminal_desk(
    mut config: DeskConfig,
    shutdown: CancellationToken,
) -> Result<Arc<Desk>, AppError> {
    let any_loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let listener = tokio::net::TcpListener::bind(any_loopback)
        .await
        .map_err(AppError::Callback)?;
    let addr = listener.local_addr().map_err(AppError::Callback)?;
    config
        .sign_in_callback
        .get_or_insert_with(|| callback_url(addr));
    let desk = Arc::new(Desk::start(config).await?);
    desk.answer_from_terminal();
    let routes = crate::web::callback_routes(desk.clone());
    tokio::spawn(async move {
        let options = serve::HttpOptions::default();
        if let Err(error) =
            serve::http(listener, routes, &options, shutdown.cancelled_owned()).await
        {
            tracing::error!(%error, "the sign-in callback stopped");
        }
    });
    Ok(desk)
}

/// Settings of the demo.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// Where the order service listens.
    pub orders_listen: SocketAddr,
    /// Where the web UI listens.
    pub web_listen: SocketAddr,
    /// The desk's settings (the order service URL is filled in).
    pub desk: DeskConfig,
    /// Who may call the web UI (Host/Origin); loopback by default.
    pub web: serve::HttpOptions,
}

/// Start the order service (`orders`, given its listener and the shutdown token) and the web UI,
/// talking over loopback HTTP; calls `ready` with the UI's URL once both listen, and runs until
/// `shutdown`.
pub async fn demo<Orders, Running, E>(
    config: DemoConfig,
    orders: Orders,
    shutdown: CancellationToken,
    ready: impl FnOnce(String) + Send,
) -> Result<(), AppError>
where
    Orders: FnOnce(tokio::net::TcpListener, CancellationToken) -> Running,
    Running: Future<Output = Result<(), E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let orders_bind = |error| AppError::Bind {
        addr: config.orders_listen,
        flag: "--orders-listen",
        error,
    };
    let web_bind = |error| AppError::Bind {
        addr: config.web_listen,
        flag: "--listen",
        error,
    };
    let orders_listener = tokio::net::TcpListener::bind(config.orders_listen)
        .await
        .map_err(orders_bind)?;
    let web_listener = tokio::net::TcpListener::bind(config.web_listen)
        .await
        .map_err(web_bind)?;
    let orders_addr = orders_listener.local_addr().map_err(orders_bind)?;
    let web_addr = web_listener.local_addr().map_err(web_bind)?;
    let orders_task = tokio::spawn(orders(orders_listener, shutdown.clone()));
    let mut desk = config.desk;
    desk.orders_url = format!("http://{orders_addr}/mcp");
    desk.sign_in_callback
        .get_or_insert_with(|| callback_url(web_addr));
    let desk = Arc::new(Desk::start(desk).await?);
    desk.follow_kept_tasks().await?;
    close_pages_on(&desk, &shutdown);
    let app = crate::web::routes(desk);
    ready(format!("http://{web_addr}/"));
    serve::http(web_listener, app, &config.web, async move {
        shutdown.cancelled().await
    })
    .await?;
    match orders_task.await {
        Ok(result) => result.map_err(|e| AppError::Orders(Box::new(e)))?,
        Err(error) => tracing::error!(%error, "the order service task failed"),
    }
    Ok(())
}
