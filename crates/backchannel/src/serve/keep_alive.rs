//! The SSE keep-alive both response bodies share: a comment (`:`) when nothing was sent for a
//! while, so proxies and clients do not take a quiet stream for a dead one.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use tokio::time::{Instant, Sleep};

/// A keep-alive timer that restarts whenever the body sends something.
#[derive(Debug)]
pub(super) struct KeepAlive {
    every: Duration,
    sleep: Pin<Box<Sleep>>,
}

impl KeepAlive {
    /// A timer for comments every `every`; `None` (no comments) without one.
    pub(super) fn every(every: Option<Duration>) -> Option<KeepAlive> {
        every.map(|every| KeepAlive {
            every,
            sleep: Box::pin(tokio::time::sleep(every)),
        })
    }

    /// Something was sent: the quiet time starts again.
    pub(super) fn sent(&mut self) {
        self.sleep.as_mut().reset(Instant::now() + self.every);
    }

    /// The comment frame when the quiet time is over (the timer restarted), else pending.
    pub(super) fn poll_comment(&mut self, cx: &mut Context<'_>) -> Poll<http_body::Frame<Bytes>> {
        if self.sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.sent();
        Poll::Ready(http_body::Frame::data(Bytes::from_static(b":\n\n")))
    }
}
