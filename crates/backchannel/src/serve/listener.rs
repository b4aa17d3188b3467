//! The accept loop: HTTP/1.1 connections served by hyper with a cap on how many are open, a
//! timer for slow or idle clients, `TCP_NODELAY`, the peer's address for the handlers, and a
//! graceful (bounded) stop.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::{HttpOptions, ServeError};

/// How long open requests may take to finish once the server is told to stop.
const DRAIN: Duration = Duration::from_secs(10);

pub(super) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    options: &HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let max = options.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let permits = Arc::new(Semaphore::new(max));
    let stopping = CancellationToken::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        .keep_alive(true);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // wait a moment rather than spin.
                    tracing::warn!(%error, "could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Without it the last chunk of an SSE reply waits for the peer's delayed ACK (~40 ms).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(%error, "could not set TCP_NODELAY");
        }
        let app = app.clone();
        let service =
            hyper::service::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(peer));
                app.clone().oneshot(request.map(axum::body::Body::new))
            });
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        let stopping = stopping.clone();
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = stopping.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = ended {
                tracing::debug!(%error, %peer, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    stopping.cancel();
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    if tokio::time::timeout(DRAIN, permits.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!(
            "some connections were still open {} s after the stop; closing them",
            DRAIN.as_secs()
        );
    }
    Ok(())
}
