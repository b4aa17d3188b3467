//! Who is listening: 2025-11-25 sessions (with their log level and resource subscriptions) and
//! 2026-07-28 `subscriptions/listen` streams. A [`Change`] (a list changed, a resource was
//! updated) fans out over both, to those that asked for it.

use std::collections::HashMap;
use std::sync::{Mutex, Weak};

use rmcp::model::{
    InitializeRequestParams, ResourceUpdatedNotification, ResourceUpdatedNotificationParam,
    ServerNotification,
};
use rmcp::service::SubscriptionSink;

use crate::reach::{Reach, SessionKey};
use crate::sampling_roots_logging::LogLevel;
use crate::util::lock;

#[derive(Debug)]
struct LegacySession {
    reach: Reach,
    /// For a peer's session: gone once rmcp dropped its parameters.
    info: Option<Weak<InitializeRequestParams>>,
    level: Option<LogLevel>,
    /// URIs this session subscribed to (`resources/subscribe`).
    resources: Vec<String>,
}

impl LegacySession {
    fn is_open(&self) -> bool {
        match &self.reach {
            #[cfg(feature = "http")]
            Reach::Link(link) => link.is_open(),
            Reach::Peer(peer) => {
                self.info
                    .as_ref()
                    .is_some_and(|info| info.strong_count() > 0)
                    && !peer.is_transport_closed()
            }
        }
    }
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
    legacy: HashMap<SessionKey, LegacySession>,
    /// How many sessions were left after the last look for closed ones.
    kept: usize,
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
        inner.legacy.retain(|_, session| session.is_open());
        inner.kept = inner.legacy.len();
    }

    /// Remember a 2025-11-25 session (idempotent). Closed sessions are forgotten whenever the
    /// registry has doubled since the last look, so registering stays cheap with many open.
    pub(crate) fn register(&self, reach: &Reach) {
        let Some((key, info)) = reach.key() else {
            return;
        };
        let mut inner = lock(&self.inner);
        if inner.legacy.len() >= 2 * inner.kept.max(32) {
            Self::prune(&mut inner);
        }
        // A peer's parameters may sit where a closed session's were: that one is replaced.
        if inner.legacy.get(&key).is_some_and(LegacySession::is_open) {
            return;
        }
        inner.legacy.insert(
            key,
            LegacySession {
                reach: reach.clone(),
                info,
                level: None,
                resources: Vec::new(),
            },
        );
    }

    pub(crate) fn set_log_level(&self, reach: &Reach, level: LogLevel) {
        self.register(reach);
        let Some(key) = reach.session_key() else {
            return;
        };
        if let Some(session) = lock(&self.inner).legacy.get_mut(&key) {
            session.level = Some(level);
        }
    }

    pub(crate) fn log_level(&self, key: Option<&SessionKey>) -> Option<LogLevel> {
        let inner = lock(&self.inner);
        inner.legacy.get(key?).and_then(|s| s.level)
    }

    /// Subscribe a 2025-11-25 session to `uri`. `false` when it already holds the most
    /// subscriptions a session may.
    pub(crate) fn subscribe(&self, reach: &Reach, uri: &str) -> bool {
        self.register(reach);
        let Some(key) = reach.session_key() else {
            return false;
        };
        let mut inner = lock(&self.inner);
        let Some(session) = inner.legacy.get_mut(&key) else {
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

    pub(crate) fn unsubscribe(&self, reach: &Reach, uri: &str) {
        let Some(key) = reach.session_key() else {
            return;
        };
        if let Some(session) = lock(&self.inner).legacy.get_mut(&key) {
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
                .values()
                .filter(|s| s.resources.iter().any(|r| r == uri))
                .map(|s| s.reach.clone())
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
            let updated =
                ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri));
            sent += usize::from(
                peer.notify(ServerNotification::ResourceUpdatedNotification(updated))
                    .await,
            );
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
            let peers: Vec<_> = inner.legacy.values().map(|s| s.reach.clone()).collect();
            let sinks: Vec<_> = inner.listeners.iter().map(|l| l.sink.clone()).collect();
            (peers, sinks)
        };
        let mut sent = 0;
        for peer in peers {
            let notification = match kind {
                ListKind::Tools => {
                    ServerNotification::ToolListChangedNotification(Default::default())
                }
                ListKind::Prompts => {
                    ServerNotification::PromptListChangedNotification(Default::default())
                }
                ListKind::Resources => {
                    ServerNotification::ResourceListChangedNotification(Default::default())
                }
            };
            sent += usize::from(peer.notify(notification).await);
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
