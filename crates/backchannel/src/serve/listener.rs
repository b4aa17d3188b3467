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
    // Stopped when this function returns or its future is dropped.
    let _pacer = AbortOnDrop(tokio::spawn(pace(options.header_read_timeout)).abort_handle());
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

/// Keeps a timer of the runtime due sooner than any request's header timer, for as long as it
/// runs (the accept loop aborts it as it ends).
///
/// hyper arms a timer of `header_read_timeout` for every request a kept-alive connection
/// reads. Tokio's timer wakes its driver (a write to its eventfd, and one more turn of the
/// event loop) whenever a timer is armed that is due before every other one, which on a server
/// with no other timer is every such request, even when the runtime arming it is the one that
/// would be woken. With a timer always due sooner (one wake every half a header timeout), a
/// header timer is never the first due, and a request costs no wake.
async fn pace(header_read_timeout: Duration) {
    let mut ticks = tokio::time::interval(pace_period(header_read_timeout));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
    }
}

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How often [`pace`] wakes: half a header timeout, never more often than every 10 ms.
fn pace_period(header_read_timeout: Duration) -> Duration {
    (header_read_timeout / 2).max(Duration::from_millis(10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_is_due_before_a_header_timer_armed_at_the_same_moment() {
        for seconds in [1, 10, 30, 3600] {
            let header = Duration::from_secs(seconds);
            assert!(pace_period(header) < header, "{header:?}");
        }
        // A tiny header timeout does not make the pacer spin.
        assert_eq!(pace_period(Duration::ZERO), Duration::from_millis(10));
    }

    #[tokio::test(start_paused = true)]
    async fn the_pacer_stops_when_its_guard_is_dropped() {
        let pacer = tokio::spawn(pace(Duration::from_secs(10)));
        let guard = AbortOnDrop(pacer.abort_handle());
        // Paused time runs through its ticks; it is still running a minute on.
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!pacer.is_finished());
        drop(guard);
        // A pacer left running would tick on until this hour ran out.
        let ended = tokio::time::timeout(Duration::from_secs(3600), pacer)
            .await
            .expect("the pacer stopped");
        assert!(ended.expect_err("aborted, not returned").is_cancelled());
    }
}
