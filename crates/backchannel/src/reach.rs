//! How a 2025-11-25 session is reached, and what identifies it, whichever way it is served.

use std::sync::{Arc, Weak};

use rmcp::RoleServer;
use rmcp::model::{Extensions, InitializeRequestParams, ServerNotification};
use rmcp::service::Peer;

#[cfg(feature = "http")]
use crate::transport::SessionLink;

/// How a 2025-11-25 session is reached: through its link (an HTTP session served by
/// `serve`'s own dispatch once initialized), or through rmcp's peer (a session rmcp's serve
/// loop serves to its end: stdio, or HTTP with `direct_sessions` off).
#[derive(Debug, Clone)]
pub(crate) enum Reach {
    #[cfg(feature = "http")]
    Link(SessionLink),
    Peer(Peer<RoleServer>),
}

/// Identifies a 2025-11-25 session: its id, or the `initialize` parameters rmcp keeps for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum SessionKey {
    #[cfg(feature = "http")]
    Link(Arc<str>),
    /// The address of the peer's parameters (kept alive by the session, checked with the
    /// [`Weak`] the registry holds beside it).
    Peer(usize),
}

impl Reach {
    /// The session a request or notification came from: the link in its extensions when it
    /// has one, else its peer.
    pub(crate) fn of(extensions: &Extensions, peer: &Peer<RoleServer>) -> Self {
        #[cfg(feature = "http")]
        if let Some(link) = extensions.get::<SessionLink>() {
            return Reach::Link(link.clone());
        }
        let _ = extensions;
        Reach::Peer(peer.clone())
    }

    /// Its key, with what tells whether a peer's session is still there; `None` for a peer
    /// that never initialized (no session).
    pub(crate) fn key(&self) -> Option<(SessionKey, Option<Weak<InitializeRequestParams>>)> {
        match self {
            #[cfg(feature = "http")]
            Reach::Link(link) => Some((SessionKey::Link(link.id().clone()), None)),
            Reach::Peer(peer) => peer.peer_info().map(|info| {
                (
                    SessionKey::Peer(Arc::as_ptr(&info) as usize),
                    Some(Arc::downgrade(&info)),
                )
            }),
        }
    }

    pub(crate) fn session_key(&self) -> Option<SessionKey> {
        self.key().map(|(key, _)| key)
    }

    pub(crate) async fn notify(&self, notification: ServerNotification) -> bool {
        match self {
            #[cfg(feature = "http")]
            Reach::Link(link) => link.notify(notification),
            Reach::Peer(peer) => peer.send_notification(notification).await.is_ok(),
        }
    }
}
