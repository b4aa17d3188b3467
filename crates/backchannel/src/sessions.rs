//! Who is listening: 2025-11-25 sessions (with their log level and resource subscriptions) and
//! 2026-07-28 `subscriptions/listen` streams. A [`Change`] (a list changed, a resource was
//! updated) fans out over both, to those that asked for it.

use std::sync::{Arc, Mutex, Weak};

use rmcp::RoleServer;
use rmcp::model::{InitializeRequestParams, ResourceUpdatedNotificationParam};
use rmcp::service::{Peer, SubscriptionSink};

use crate::sampling_roots_logging::LogLevel;
use crate::util::lock;

/// Identifies a 2025-11-25 session by the `initialize` parameters rmcp keeps for it.
#[derive(Debug, Clone)]
pub(crate) struct SessionKey(Weak<InitializeRequestParams>);

impl SessionKey {
    pub(crate) fn of(peer: &Peer<RoleServer>) -> Option<Self> {
        peer.peer_info().map(|info| Self(Arc::downgrade(&info)))
    }

    fn same(&self, other: &SessionKey) -> bool {
        Weak::ptr_eq(&self.0, &other.0)
    }
}

#[derive(Debug)]
struct LegacySession {
    key: SessionKey,
    peer: Peer<RoleServer>,
    level: Option<LogLevel>,
    /// URIs this session subscribed to (`resources/subscribe`).
    resources: Vec<String>,
}

/// Most resource subscriptions one 2025-11-25 session may hold.
const MAX_SUBSCRIPTIONS: usize = 256;

#[derive(Debug)]
struct Listener {
    id: u64,
    sink: SubscriptionSink,
}

#[derive(Debug, Default)]
struct Inner {
    legacy: Vec<LegacySession>,
    listeners: Vec<Listener>,
    next_listener: u64,
}

/// The registry of live sessions and listen streams.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    inner: Mutex<Inner>,
}

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `notifications/tools/list_changed`
    Tools,
    /// `notifications/prompts/list_changed`
    Prompts,
    /// `notifications/resources/list_changed`
    Resources,
}

/// Something listeners may want to hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A list changed: every session, and every listen stream that accepted that kind.
    ListChanged(ListKind),
    /// The resource at this URI changed: the sessions and listen streams subscribed to it.
    ResourceUpdated(String),
}

impl Sessions {
    fn prune(inner: &mut Inner) {
        inner
            .legacy
            .retain(|s| s.key.0.strong_count() > 0 && !s.peer.is_transport_closed());
    }

    /// Remember a 2025-11-25 session (idempotent).
    pub(crate) fn register(&self, peer: &Peer<RoleServer>) {
        let Some(key) = SessionKey::of(peer) else {
            return;
        };
        let mut inner = lock(&self.inner);
        Self::prune(&mut inner);
        if !inner.legacy.iter().any(|s| s.key.same(&key)) {
            inner.legacy.push(LegacySession {
                key,
                peer: peer.clone(),
                level: None,
                resources: Vec::new(),
            });
        }
    }

    pub(crate) fn set_log_level(&self, peer: &Peer<RoleServer>, level: LogLevel) {
        self.register(peer);
        let Some(key) = SessionKey::of(peer) else {
            return;
        };
        let mut inner = lock(&self.inner);
        if let Some(session) = inner.legacy.iter_mut().find(|s| s.key.same(&key)) {
            session.level = Some(level);
        }
    }

    pub(crate) fn log_level(&self, key: Option<&SessionKey>) -> Option<LogLevel> {
        let key = key?;
        let inner = lock(&self.inner);
        inner
            .legacy
            .iter()
            .find(|s| s.key.same(key))
            .and_then(|s| s.level)
    }

    /// Subscribe a 2025-11-25 session to `uri`. `false` when it already holds the most
    /// subscriptions a session may.
    pub(crate) fn subscribe(&self, peer: &Peer<RoleServer>, uri: &str) -> bool {
        self.register(peer);
        let Some(key) = SessionKey::of(peer) else {
            return false;
        };
        let mut inner = lock(&self.inner);
        let Some(session) = inner.legacy.iter_mut().find(|s| s.key.same(&key)) else {
            return false;
        };
        if session.resources.iter().any(|r| r == uri) {
            return true;
        }
        if session.resources.len() >= MAX_SUBSCRIPTIONS {
            return false;
        }
        session.resources.push(uri.to_owned());
        true
    }

    pub(crate) fn unsubscribe(&self, peer: &Peer<RoleServer>, uri: &str) {
        let Some(key) = SessionKey::of(peer) else {
            return;
        };
        let mut inner = lock(&self.inner);
        if let Some(session) = inner.legacy.iter_mut().find(|s| s.key.same(&key)) {
            session.resources.retain(|r| r != uri);
        }
    }

    pub(crate) fn add_listener(&self, sink: SubscriptionSink) -> u64 {
        let mut inner = lock(&self.inner);
        inner.next_listener += 1;
        let id = inner.next_listener;
        inner.listeners.push(Listener { id, sink });
        id
    }

    pub(crate) fn remove_listener(&self, id: u64) {
        lock(&self.inner).listeners.retain(|l| l.id != id);
    }

    /// Counts of (2025 sessions, 2026 listen streams) currently registered.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let mut inner = lock(&self.inner);
        Self::prune(&mut inner);
        (inner.legacy.len(), inner.listeners.len())
    }

    /// Tell this process's sessions and listen streams about `change`, each only if it asked.
    /// Returns how many were notified.
    pub(crate) async fn deliver(&self, change: &Change) -> usize {
        match change {
            Change::ListChanged(kind) => self.broadcast(*kind).await,
            Change::ResourceUpdated(uri) => self.resource_updated(uri).await,
        }
    }

    async fn resource_updated(&self, uri: &str) -> usize {
        let (peers, sinks) = {
            let mut inner = lock(&self.inner);
            Self::prune(&mut inner);
            let peers: Vec<_> = inner
                .legacy
                .iter()
                .filter(|s| s.resources.iter().any(|r| r == uri))
                .map(|s| s.peer.clone())
                .collect();
            let sinks: Vec<_> = inner
                .listeners
                .iter()
                .filter(|l| {
                    l.sink
                        .accepted()
                        .resource_subscriptions
                        .as_ref()
                        .is_some_and(|uris| uris.iter().any(|r| r == uri))
                })
                .map(|l| l.sink.clone())
                .collect();
            (peers, sinks)
        };
        let mut sent = 0;
        for peer in peers {
            let params = ResourceUpdatedNotificationParam::new(uri);
            sent += usize::from(peer.notify_resource_updated(params).await.is_ok());
        }
        for sink in sinks {
            sent += usize::from(sink.notify_resource_updated(uri).await.is_ok());
        }
        sent
    }

    /// Notify every session and every listen stream that accepted this kind of change.
    /// Returns how many peers were notified.
    async fn broadcast(&self, kind: ListKind) -> usize {
        let (peers, sinks) = {
            let mut inner = lock(&self.inner);
            Self::prune(&mut inner);
            let peers: Vec<_> = inner.legacy.iter().map(|s| s.peer.clone()).collect();
            let sinks: Vec<_> = inner.listeners.iter().map(|l| l.sink.clone()).collect();
            (peers, sinks)
        };
        let mut sent = 0;
        for peer in peers {
            let result = match kind {
                ListKind::Tools => peer.notify_tool_list_changed().await,
                ListKind::Prompts => peer.notify_prompt_list_changed().await,
                ListKind::Resources => peer.notify_resource_list_changed().await,
            };
            sent += usize::from(result.is_ok());
        }
        for sink in sinks {
            let accepted = sink.accepted();
            let wanted = match kind {
                ListKind::Tools => accepted.tools_list_changed == Some(true),
                ListKind::Prompts => accepted.prompts_list_changed == Some(true),
                ListKind::Resources => accepted.resources_list_changed == Some(true),
            };
            if !wanted {
                continue;
            }
            let result = match kind {
                ListKind::Tools => sink.notify_tool_list_changed().await,
                ListKind::Prompts => sink.notify_prompt_list_changed().await,
                ListKind::Resources => sink.notify_resource_list_changed().await,
            };
            sent += usize::from(result.is_ok());
        }
        sent
    }
}
