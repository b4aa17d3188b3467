//! The events on their way to one SSE response ([`Queue`], read as a stream by [`Reader`]),
//! and a stream's last events kept for `Last-Event-ID` ([`Replay`]).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures::Stream;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;

use crate::util::lock;

/// Events kept per stream for `Last-Event-ID`.
pub(crate) const KEPT_EVENTS: usize = 16;
/// Events waiting for a client that does not read before its stream is cut (it may resume).
pub(crate) const MAX_WAITING: usize = 1024;

/// A stream and its last events, for `Last-Event-ID`.
pub(crate) struct Replay {
    pub(crate) queue: Arc<Queue>,
    pub(crate) kept: VecDeque<ServerSseMessage>,
    pub(crate) next_index: usize,
}

impl Replay {
    pub(crate) fn new(queue: Arc<Queue>) -> Self {
        Self {
            queue,
            kept: VecDeque::new(),
            next_index: 0,
        }
    }

    /// Send `event` with the next id (`index/stream`, or `index` on the GET stream).
    pub(crate) fn send(&mut self, mut event: ServerSseMessage, stream: Option<u64>) {
        let index = self.next_index;
        self.next_index += 1;
        event.event_id = Some(match stream {
            Some(stream) => format!("{index}/{stream}"),
            None => index.to_string(),
        });
        if self.kept.len() == KEPT_EVENTS {
            self.kept.pop_front();
        }
        self.kept.push_back(event.clone());
        self.queue.push(event);
    }

    /// A new reader, sent the kept events from `index` on (the one after the last the client
    /// has, or 0 for all that are kept).
    pub(crate) fn resume(&mut self, index: usize) -> Option<Arc<Queue>> {
        // Every event sent is kept until 16 newer ones push it out.
        let first = self.next_index - self.kept.len();
        let skip = index.saturating_sub(first);
        if skip > self.kept.len() {
            return None;
        }
        let queue = Queue::new();
        for event in self.kept.iter().skip(skip) {
            queue.push(event.clone());
        }
        self.queue = queue.clone();
        Some(queue)
    }
}

/// Events on their way to one SSE response.
#[derive(Default)]
pub(crate) struct Queue {
    pub(crate) state: Mutex<QueueState>,
}

#[derive(Default)]
pub(crate) struct QueueState {
    pub(crate) events: VecDeque<ServerSseMessage>,
    pub(crate) waker: Option<Waker>,
    /// No more events will come.
    pub(crate) ended: bool,
    /// The response is gone.
    pub(crate) unread: bool,
}

impl Queue {
    pub(crate) fn new() -> Arc<Self> {
        Arc::default()
    }

    /// A queue nobody reads yet (a session's GET stream before the client opens it).
    pub(crate) fn unread() -> Arc<Self> {
        Arc::new(Queue {
            state: Mutex::new(QueueState {
                unread: true,
                ..QueueState::default()
            }),
        })
    }

    pub(crate) fn push(&self, event: ServerSseMessage) {
        let waker = {
            let mut state = lock(&self.state);
            if state.ended || state.unread {
                return;
            }
            if state.events.len() >= MAX_WAITING {
                // A client that does not read: cut the stream (it may resume).
                tracing::warn!("an SSE stream fell {MAX_WAITING} events behind; closing it");
                state.ended = true;
            } else {
                state.events.push_back(event);
            }
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    pub(crate) fn end(&self) {
        let waker = {
            let mut state = lock(&self.state);
            state.ended = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Whether nobody reads it (its response is gone or it ended).
    pub(crate) fn is_dead(&self) -> bool {
        let state = lock(&self.state);
        state.unread || state.ended
    }
}

/// The reading end of a [`Queue`]: the stream an SSE response is made of.
pub(crate) struct Reader(pub(crate) Arc<Queue>);

impl Stream for Reader {
    type Item = ServerSseMessage;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut state = lock(&self.0.state);
        if let Some(event) = state.events.pop_front() {
            return Poll::Ready(Some(event));
        }
        if state.ended {
            return Poll::Ready(None);
        }
        crate::util::keep_waker(&mut state.waker, cx);
        Poll::Pending
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.unread = true;
        state.events.clear();
        state.waker = None;
    }
}
