//! The SSE response body both POST paths share ([`SseBody`]): the events a source yields, a
//! keep-alive comment (`:`) when nothing was sent for a while (so proxies and clients do not
//! take a quiet stream for a dead one), and the end when the source ends or the server shuts
//! down.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Where an [`SseBody`]'s events come from.
pub(super) trait Events: Send + Unpin + 'static {
    /// The next event, framed; `Ready(None)` at the end.
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>>;

    /// Whether the event just yielded was the last (the body may say it ended at once).
    fn ended(&self) -> bool {
        false
    }
}

/// An SSE response body over a source of [`Events`].
pub(super) struct SseBody<E> {
    events: E,
    keep_alive: Option<KeepAlive>,
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    done: bool,
}

impl<E: Events> SseBody<E> {
    /// The response: `events` as an SSE stream, a comment after `keep_alive` of quiet, ended by
    /// `shutdown`.
    pub(super) fn respond(
        events: E,
        keep_alive: Option<Duration>,
        shutdown: &CancellationToken,
    ) -> Response {
        let body = SseBody {
            events,
            keep_alive: KeepAlive::every(keep_alive),
            shutdown: Box::pin(shutdown.clone().cancelled_owned()),
            done: false,
        };
        (
            [
                (http::header::CONTENT_TYPE, "text/event-stream"),
                (http::header::CACHE_CONTROL, "no-cache"),
                (http::HeaderName::from_static("x-accel-buffering"), "no"),
            ],
            Body::new(body),
        )
            .into_response()
    }
}

impl<E: Events> http_body::Body for SseBody<E> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.done || this.shutdown.as_mut().poll(cx).is_ready() {
            this.done = true;
            return Poll::Ready(None);
        }
        match this.events.poll_event(cx) {
            Poll::Ready(Some(event)) => {
                if let Some(keep_alive) = this.keep_alive.as_mut() {
                    keep_alive.sent();
                }
                this.done = this.events.ended();
                return Poll::Ready(Some(Ok(http_body::Frame::data(event))));
            }
            Poll::Ready(None) => {
                this.done = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        match this.keep_alive.as_mut().map(|k| k.poll_comment(cx)) {
            Some(Poll::Ready(comment)) => Poll::Ready(Some(Ok(comment))),
            _ => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// A keep-alive timer that restarts whenever the body sends something.
#[derive(Debug)]
struct KeepAlive {
    every: Duration,
    sleep: Pin<Box<Sleep>>,
}

impl KeepAlive {
    /// A timer for comments every `every`; `None` (no comments) without one.
    fn every(every: Option<Duration>) -> Option<KeepAlive> {
        every.map(|every| KeepAlive {
            every,
            sleep: Box::pin(tokio::time::sleep(every)),
        })
    }

    /// Something was sent: the quiet time starts again.
    fn sent(&mut self) {
        self.sleep.as_mut().reset(Instant::now() + self.every);
    }

    /// The comment frame when the quiet time is over (the timer restarted), else pending.
    fn poll_comment(&mut self, cx: &mut Context<'_>) -> Poll<http_body::Frame<Bytes>> {
        if self.sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.sent();
        Poll::Ready(http_body::Frame::data(Bytes::from_static(b":\n\n")))
    }
}
