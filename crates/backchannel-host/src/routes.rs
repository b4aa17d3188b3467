//! Which call a server's message belongs to.
//!
//! rmcp picks a request's progress token and JSON-RPC id itself, inside
//! `send_request_with_option`, and the server may answer with progress or a question before
//! that function has returned. So the mapping is made where nothing can overtake it: the
//! call's [`CallTag`] rides in the request's (never serialised) extensions, and [`Tagging`],
//! a wrapper around the transport, records the token and id of every tagged request as it
//! hands it to the wire. By the time a byte of the request has left, its call is known.
//!
//! Progress is filtered per call (all its rounds), not per caller, and a value is checked and
//! delivered as one step under the call's lock, so the handler sees it strictly increasing.
//! [`Tagging::receive`] also counts each call's progress notifications as they come off the
//! wire, in order; a call waits for that count to drain before it returns its result, so the
//! last progress reaches the handler before the result reaches the caller. It numbers them too
//! ([`ProgressSeq`]): rmcp handles each incoming notification in a task of its own, so they may
//! reach the handler in any order, and a call hands them on in the order they came off the wire
//! ([`Call::deliver_in_order`]), so none is dropped for arriving after a higher one.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backchannel::lock;
use rmcp::RoleClient;
use rmcp::model::{
    ClientRequest, GetMeta, JsonRpcMessage, ProgressNotificationParam, ProgressToken, RequestId,
    ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// One call of [`crate::Connection::call_tool`], over all its rounds.
#[derive(Debug)]
pub(super) struct Call {
    /// The caller's token (its conversation, for example), if it gave one.
    pub(super) caller: Option<ProgressToken>,
    /// The highest progress delivered; held while a value is delivered.
    shown: Mutex<f64>,
    /// Progress notifications taken off the wire and not yet handled.
    unhandled: AtomicUsize,
    drained: tokio::sync::Notify,
    /// The number the next progress notification off the wire gets.
    numbered: AtomicU64,
    /// The number of the next one to hand on, and those that arrived ahead of it.
    in_order: Mutex<(u64, BTreeMap<u64, ProgressNotificationParam>)>,
    /// The request's patience with its server, stopped while a question of it is answered.
    patience: Option<Arc<crate::patience::Patience>>,
}

/// The place of a progress notification among its call's, as it came off the wire (put in
/// its extensions by [`Tagging`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct ProgressSeq(pub(super) u64);

impl Call {
    pub(super) fn new(caller: Option<ProgressToken>) -> Arc<Call> {
        Arc::new(Call {
            caller,
            shown: Mutex::new(f64::NEG_INFINITY),
            unhandled: AtomicUsize::new(0),
            drained: tokio::sync::Notify::new(),
            numbered: AtomicU64::new(0),
            in_order: Mutex::new((0, BTreeMap::new())),
            patience: crate::patience::Patience::current(),
        })
    }

    /// A question of this call's server is being answered: its request's clock stops until
    /// the returned guard is dropped.
    pub(super) fn answering(&self) -> Option<crate::patience::Answering> {
        self.patience.as_ref().map(|patience| patience.answering())
    }

    /// Hand `progress` to `deliver` (with the caller's token) if it is above every value
    /// delivered for this call; the check and the delivery are one step.
    pub(super) fn deliver_progress(
        &self,
        mut progress: ProgressNotificationParam,
        deliver: impl FnOnce(ProgressNotificationParam),
    ) {
        let mut shown = lock(&self.shown);
        if progress.progress > *shown {
            *shown = progress.progress;
            if let Some(caller) = &self.caller {
                progress.progress_token = caller.clone();
            }
            deliver(progress);
        }
    }

    /// [`Call::deliver_progress`] for the notification numbered `seq` off the wire, once every
    /// one numbered before it has been: those that came ahead of their turn wait here (each
    /// notification reaches this once, so a gap fills as soon as its handler runs).
    pub(super) fn deliver_in_order(
        &self,
        seq: u64,
        progress: ProgressNotificationParam,
        deliver: impl Fn(ProgressNotificationParam),
    ) {
        let mut in_order = lock(&self.in_order);
        let (next, waiting) = &mut *in_order;
        if seq < *next {
            // Numbered twice (it cannot be), or from before a reset: hand it on as it is.
            self.deliver_progress(progress, &deliver);
            return;
        }
        waiting.insert(seq, progress);
        while let Some(progress) = waiting.remove(next) {
            *next += 1;
            self.deliver_progress(progress, &deliver);
        }
    }

    /// One progress or log notification of this call has been handled (delivered or
    /// dropped).
    pub(super) fn handled(&self) {
        if self.unhandled.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.drained.notify_waiters();
        }
    }

    /// Wait (at most `bound`) until every progress notification received so far is handled.
    pub(super) async fn drained(&self, bound: Duration) {
        let wait = async {
            loop {
                let drained = self.drained.notified();
                if self.unhandled.load(Ordering::Acquire) == 0 {
                    return;
                }
                drained.await;
            }
        };
        let _ = tokio::time::timeout(bound, wait).await;
    }
}

/// Put on a request (in its extensions) to name the call it belongs to.
#[derive(Debug, Clone)]
pub(super) struct CallTag(pub(super) Arc<Call>);

/// A map that forgets its oldest entries past a bound.
#[derive(Debug)]
struct Bounded<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
}

impl<K, V> Default for Bounded<K, V> {
    fn default() -> Self {
        Self {
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    /// Late notifications still find their call after it returned; this many are kept.
    const CAPACITY: usize = 4096;

    fn insert(&mut self, key: K, value: V) {
        if self.map.insert(key.clone(), value).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > Self::CAPACITY {
            if let Some(oldest) = self.order.pop_front() {
                self.map.remove(&oldest);
            }
        }
    }
}

/// Every tagged request a connection has sent, by rmcp's progress token and by request id.
#[derive(Debug, Default)]
pub(super) struct Routes {
    by_token: Mutex<Bounded<ProgressToken, Arc<Call>>>,
    by_request: Mutex<Bounded<RequestId, Arc<Call>>>,
    /// Progress for requests that are not tool calls: filtered per token.
    untagged: Mutex<Bounded<ProgressToken, Arc<Call>>>,
    /// The calls in flight (from their first round's request to their result).
    pub(super) active: Mutex<Vec<Arc<Call>>>,
    /// How many times the server has listed the roots (`roots/list` answered).
    pub(super) roots_listed: tokio::sync::watch::Sender<u64>,
}

impl Routes {
    fn record(&self, request: &rmcp::model::JsonRpcRequest<ClientRequest>) {
        use rmcp::model::GetExtensions;
        let Some(CallTag(call)) = request.request.extensions().get::<CallTag>() else {
            return;
        };
        if let Some(token) = request.request.get_meta().get_progress_token() {
            lock(&self.by_token).insert(token, call.clone());
        }
        lock(&self.by_request).insert(request.id.clone(), call.clone());
    }

    /// The call a progress token belongs to. A token no tool call carries gets a call of its
    /// own, so its values are still filtered.
    pub(super) fn call_of_token(&self, token: &ProgressToken) -> Arc<Call> {
        if let Some(call) = lock(&self.by_token).map.get(token) {
            return call.clone();
        }
        let mut untagged = lock(&self.untagged);
        if let Some(call) = untagged.map.get(token) {
            return call.clone();
        }
        let call = Call::new(None);
        untagged.insert(token.clone(), call.clone());
        call
    }

    /// The call a tagged request's token names, if any.
    pub(super) fn tagged_token(&self, token: &ProgressToken) -> Option<Arc<Call>> {
        lock(&self.by_token).map.get(token).cloned()
    }

    /// The call whose request a server message arrived with.
    pub(super) fn call_of_request(&self, id: &RequestId) -> Option<Arc<Call>> {
        lock(&self.by_request).map.get(id).cloned()
    }

    fn received(&self, message: &mut RxJsonRpcMessage<RoleClient>) {
        let JsonRpcMessage::Notification(notification) = message else {
            return;
        };
        match &mut notification.notification {
            ServerNotification::ProgressNotification(progress) => {
                let call = self.call_of_token(&progress.params.progress_token);
                call.unhandled.fetch_add(1, Ordering::AcqRel);
                let seq = call.numbered.fetch_add(1, Ordering::AcqRel);
                progress.extensions.insert(ProgressSeq(seq));
            }
            // A log message names no request, and rmcp does not say which stream it came on:
            // it is the call's when one call is in flight as it arrives (its result comes
            // after it on the same stream, so the call is still in flight then). It is counted
            // like progress, so the call's result waits until it is handled.
            log @ ServerNotification::LoggingMessageNotification(_) => {
                let only = match lock(&self.active).as_slice() {
                    [only] => Some(only.clone()),
                    _ => None,
                };
                if let Some(call) = only {
                    call.unhandled.fetch_add(1, Ordering::AcqRel);
                    use rmcp::model::GetExtensions as _;
                    log.extensions_mut().insert(CallTag(call));
                }
            }
            _ => {}
        }
    }
}

/// A client transport that records tagged requests as they are sent and counts progress as
/// it is received.
pub(super) struct Tagging<T> {
    inner: T,
    routes: Arc<Routes>,
}

impl<T> Tagging<T> {
    pub(super) fn new(inner: T, routes: Arc<Routes>) -> Self {
        Self { inner, routes }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Tagging<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item {
            self.routes.record(request);
        }
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let routes = self.routes.clone();
        let next = self.inner.receive();
        async move {
            let mut message = next.await;
            if let Some(message) = &mut message {
                routes.received(message);
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
