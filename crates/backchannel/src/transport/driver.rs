//! What serves a 2025-11-25 session once rmcp has answered its `initialize`: the server's
//! handler, called directly for each request and notification (see `sessions`).
//!
//! rmcp runs a serve loop per session, with a task, a 1,024-slot channel to its peer and a
//! 64-slot one to its sink, each channel allocating its first 32 slots when made; a session
//! waiting for a person's answer held about 33 KiB of it. Here a session's requests are
//! served the way rmcp's serve loop serves them (the same `Service::handle_request`, a task per
//! request, the request's `_meta` and extensions in its context, its cancellation when the
//! client cancels it or the session ends), with a [`SessionLink`] added to the extensions so
//! that `Ctx` can send notifications and questions. The context's peer is a closed one that
//! knows the client's `initialize` parameters (so `RequestContext::client_capabilities` and
//! everything rmcp reads from the peer's info answer as before); sessions whose clients sent
//! the same parameters share one. A handler that sends through `RequestContext::peer` instead
//! of `Ctx` is not heard, as on the stateless fast path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientNotification, ClientRequest, GetExtensions, GetMeta, InitializeRequestParams, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{RoleServer, ServerHandler, Service};
use tokio_util::sync::CancellationToken;

use super::sessions::{Dispatch, DriverFactory, SessionLink};
use crate::util::lock;

/// How many different `initialize` parameters keep a shared peer; sessions beyond get a peer
/// of their own.
const SHARED_PEERS: usize = 64;

/// A peer with no one at the other end, knowing its client by `info`: a `RequestContext` must
/// hold a peer (rmcp's `Peer::new` is crate-private, so one comes from a serve loop that ends
/// at once); a notification or request sent through it reports the transport closed.
pub(crate) fn closed_peer(info: InitializeRequestParams) -> Peer<RoleServer> {
    /// Serves nothing: its only use is the peer it comes with.
    struct Nobody;
    impl ServerHandler for Nobody {}
    let (transport, _other_end) = tokio::io::duplex(64);
    rmcp::service::serve_directly(Nobody, transport, Some(info))
        .peer()
        .clone()
}

/// Makes each initialized session's [`Driver`] from the endpoint's handler factory.
pub(crate) struct Drivers<F> {
    factory: Arc<F>,
    /// Closed peers by the `initialize` parameters they know (as JSON).
    peers: Mutex<HashMap<String, Peer<RoleServer>>>,
}

impl<F> Drivers<F> {
    pub(crate) fn new(factory: Arc<F>) -> Self {
        Self {
            factory,
            peers: Mutex::default(),
        }
    }

    fn peer(&self, info: InitializeRequestParams) -> Peer<RoleServer> {
        let Ok(key) = serde_json::to_string(&info) else {
            return closed_peer(info);
        };
        let mut peers = lock(&self.peers);
        if let Some(peer) = peers.get(&key) {
            return peer.clone();
        }
        let peer = closed_peer(info);
        if peers.len() < SHARED_PEERS {
            peers.insert(key, peer.clone());
        }
        peer
    }
}

impl<S, F> DriverFactory for Drivers<F>
where
    S: ServerHandler,
    F: Fn() -> S + Send + Sync + 'static,
{
    fn driver(&self, client: InitializeRequestParams) -> Arc<dyn Dispatch> {
        Arc::new(Driver {
            service: Arc::new((self.factory)()),
            peer: self.peer(client),
        })
    }
}

/// Serves one session: its handler, and the peer its requests' contexts hold.
struct Driver<S> {
    service: Arc<S>,
    peer: Peer<RoleServer>,
}

impl<S: ServerHandler> Dispatch for Driver<S> {
    fn request(
        &self,
        link: SessionLink,
        id: RequestId,
        mut request: ClientRequest,
        ct: CancellationToken,
    ) {
        let meta = std::mem::take(request.get_meta_mut());
        let mut extensions = std::mem::take(request.extensions_mut());
        extensions.insert(link.clone());
        let mut context = RequestContext::new(id.clone(), self.peer.clone());
        context.ct = ct;
        context.meta = meta;
        context.extensions = extensions;
        let service = self.service.clone();
        let span = tracing::Span::current();
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                let answer = match service.handle_request(request, context).await {
                    Ok(result) => ServerJsonRpcMessage::response(result, id.clone()),
                    Err(error) => ServerJsonRpcMessage::error(error, Some(id.clone())),
                };
                link.finish_call(&id, answer);
            },
            span,
        ));
    }

    fn notification(&self, link: SessionLink, mut notification: ClientNotification) {
        let meta = std::mem::take(notification.get_meta_mut());
        let mut extensions = std::mem::take(notification.extensions_mut());
        extensions.insert(link);
        let (service, peer) = (self.service.clone(), self.peer.clone());
        tokio::spawn(async move {
            let Some(mut context) = notification_context().await else {
                tracing::error!("no notification context could be made; a notification is dropped");
                return;
            };
            context.meta = meta;
            context.extensions = extensions;
            context.peer = peer;
            if let Err(error) = service.handle_notification(notification, context).await {
                tracing::warn!(%error, "a notification's handler failed");
            }
        });
    }
}

/// A `NotificationContext` to copy. rmcp gives the type no constructor (it is
/// `#[non_exhaustive]`, with public fields but no `new`: rmcp 3.11 `service.rs`), so one is
/// taken, once per process, from rmcp's own serve loop handing a notification to a handler of
/// ours; each notification gets a copy with its own fields.
async fn notification_context() -> Option<NotificationContext<RoleServer>> {
    static TEMPLATE: tokio::sync::OnceCell<Option<NotificationContext<RoleServer>>> =
        tokio::sync::OnceCell::const_new();
    TEMPLATE.get_or_init(capture_context).await.clone()
}

async fn capture_context() -> Option<NotificationContext<RoleServer>> {
    use tokio::io::AsyncWriteExt;
    /// Keeps the context of the first notification it is handed.
    struct Capture(Mutex<Option<tokio::sync::oneshot::Sender<NotificationContext<RoleServer>>>>);
    impl ServerHandler for Capture {
        async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
            if let Some(keep) = lock(&self.0).take() {
                let _ = keep.send(context);
            }
        }
    }
    let (kept, context) = tokio::sync::oneshot::channel();
    let (transport, mut client) = tokio::io::duplex(256);
    let running = rmcp::service::serve_directly(
        Capture(Mutex::new(Some(kept))),
        transport,
        Some(InitializeRequestParams::default()),
    );
    client
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .ok()?;
    let context = tokio::time::timeout(std::time::Duration::from_secs(5), context)
        .await
        .ok()?
        .ok();
    drop(client);
    running.cancellation_token().cancel();
    context
}
