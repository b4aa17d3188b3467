//! What a stateless (2026-07-28) request's handler sends before its result — progress and
//! log notifications — on their way to that request's own response stream.
//!
//! The HTTP fast path (`serve::stateless`) puts an [`Outbox`] into the request's extensions;
//! `Ctx` sends through it instead of through the rmcp peer, which on that path has no one at
//! the other end. The response side drains it; once the response is finished or dropped the
//! outbox is closed and later messages are refused (a task body that outlives its request
//! sends into a closed outbox, as it would into a closed transport).

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use rmcp::model::{ServerJsonRpcMessage, ServerNotification};

use crate::util::lock;

/// The queue between a handler and its response stream. Cheap to create (nothing is allocated
/// until a message is sent), shared through an `Arc` in the request's extensions.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    state: std::sync::Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<ServerJsonRpcMessage>,
    waker: Option<Waker>,
    closed: bool,
}

#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP edge")
)]
impl Outbox {
    pub(crate) fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Queue a notification for the response stream; `false` once the response is over.
    pub(crate) fn send(&self, notification: ServerNotification) -> bool {
        let waker = {
            let mut state = lock(&self.state);
            if state.closed {
                return false;
            }
            state
                .queue
                .push_back(ServerJsonRpcMessage::notification(notification));
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// The next queued message, or `Pending` (and a wake-up when one is sent).
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<ServerJsonRpcMessage> {
        let mut state = lock(&self.state);
        match state.queue.pop_front() {
            Some(message) => Poll::Ready(message),
            None => {
                crate::util::keep_waker(&mut state.waker, cx);
                Poll::Pending
            }
        }
    }

    /// Whether anything is queued.
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.state).queue.is_empty()
    }

    /// Refuse further messages; those queued still come out.
    pub(crate) fn close(&self) {
        lock(&self.state).closed = true;
    }

    /// Refuse further messages and drop the queued ones (the response is gone).
    pub(crate) fn discard(&self) {
        let mut state = lock(&self.state);
        state.closed = true;
        state.queue.clear();
        state.waker = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ProgressNotification, ProgressNotificationParam, ProgressToken};

    fn progress(value: f64) -> ServerNotification {
        ServerNotification::ProgressNotification(ProgressNotification::new(
            ProgressNotificationParam::new(
                ProgressToken(rmcp::model::NumberOrString::Number(1)),
                value,
            ),
        ))
    }

    #[test]
    fn messages_come_out_in_order_until_closed() {
        let outbox = Outbox::new();
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(outbox.poll_next(&mut cx).is_pending());
        assert!(outbox.is_empty());
        assert!(outbox.send(progress(1.0)));
        assert!(outbox.send(progress(2.0)));
        for expected in [1.0, 2.0] {
            let Poll::Ready(ServerJsonRpcMessage::Notification(n)) = outbox.poll_next(&mut cx)
            else {
                panic!("a queued notification");
            };
            let ServerNotification::ProgressNotification(p) = n.notification else {
                panic!("progress");
            };
            assert_eq!(p.params.progress, expected);
        }
        assert!(outbox.send(progress(3.0)));
        outbox.close();
        assert!(!outbox.send(progress(4.0)), "a closed outbox refuses");
        assert!(
            outbox.poll_next(&mut cx).is_ready(),
            "what was queued still comes out"
        );
        assert!(outbox.poll_next(&mut cx).is_pending());
        assert!(!outbox.send(progress(5.0)));
        outbox.discard();
        assert!(outbox.is_empty());
    }
}
