//! The layer's session hooks: a 2025-11-25 session remembered once initialized, its log level
//! and resource subscriptions, a 2026-07-28 listen stream; and the list-changed and
//! resource-updated broadcasts that reach them (here, and through a [`super::ChangeBus`] on every
//! instance).

use std::sync::Arc;

use rmcp::model::SubscriptionFilter;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer};

use crate::reach::Reach;
use crate::sampling_roots_logging::{self, SetLevelParams};
use crate::sessions::{Change, ListKind};

use super::{Backchannel, ChangeBus, SpentLedger, WeakBackchannel};

impl Backchannel {
    /// Remember a 2025-11-25 session for list-changed broadcasts. Call it from
    /// `ServerHandler::on_initialized`.
    pub fn on_initialized(&self, context: &NotificationContext<RoleServer>) {
        self.inner
            .shared
            .sessions
            .register(&Reach::of(&context.extensions, &context.peer));
    }

    /// Store a session's `logging/setLevel`. Call it from `ServerHandler::set_level`.
    pub fn set_level(&self, params: &SetLevelParams, context: &RequestContext<RoleServer>) {
        self.inner.shared.sessions.set_log_level(
            &Reach::of(&context.extensions, &context.peer),
            sampling_roots_logging::requested_level(params),
        );
    }

    /// Accept every list-changed subscription the server advertises. Call it from
    /// `ServerHandler::accepted_subscription_filter`.
    pub fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    /// Hold a 2026-07-28 `subscriptions/listen` stream open for broadcasts until the client
    /// goes away. Call it from `ServerHandler::listen`.
    pub async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let id = self
            .inner
            .shared
            .sessions
            .add_listener(subscription.sink().clone());
        subscription.cancelled().await;
        self.inner.shared.sessions.remove_listener(id);
        Ok(())
    }

    /// Tell every 2025-11-25 session and every 2026-07-28 listen stream that a list changed,
    /// here and (through the change bus, if one is set) on every other instance. Returns how many
    /// peers of this instance were notified.
    pub async fn notify_list_changed(&self, kind: ListKind) -> usize {
        self.notify(Change::ListChanged(kind)).await
    }

    /// Tell the sessions and listen streams subscribed to `uri` that it changed, here and
    /// (through the change bus, if one is set) on every other instance. Returns how many peers of
    /// this instance were notified.
    pub async fn notify_resource_updated(&self, uri: &str) -> usize {
        self.notify(Change::ResourceUpdated(uri.to_owned())).await
    }

    async fn notify(&self, change: Change) -> usize {
        if let Some(bus) = self.inner.bus.get() {
            bus.publish(&change).await;
        }
        self.deliver(&change).await
    }

    /// Deliver a change to this instance's listeners only: for a change bus, with what another
    /// instance published.
    pub async fn deliver(&self, change: &Change) -> usize {
        self.inner.shared.sessions.deliver(change).await
    }

    /// Publish every change through `bus` from now on. The first bus set stays; `false`
    /// when one was set already.
    pub fn share_changes(&self, bus: Arc<dyn ChangeBus>) -> bool {
        self.inner.bus.set(bus).is_ok()
    }

    /// Record spent rounds in `ledger` too, from now on. The first ledger set stays; `false`
    /// when one was set already.
    pub fn share_spent_rounds(&self, ledger: Arc<dyn SpentLedger>) -> bool {
        self.inner.spent_ledger.set(ledger).is_ok()
    }

    /// A weak handle, for a change bus's listener task (it must not keep the layer alive).
    pub fn downgrade(&self) -> WeakBackchannel {
        WeakBackchannel(Arc::downgrade(&self.inner))
    }

    /// Subscribe the 2025-11-25 session of `context` to `uri` (`resources/subscribe`): it
    /// hears `notifications/resources/updated` for it until it unsubscribes or goes away.
    /// (2026-07-28 clients name their URIs in `subscriptions/listen` instead.)
    pub fn subscribe_resource(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let reach = Reach::of(&context.extensions, &context.peer);
        if self.inner.shared.sessions.subscribe(&reach, uri) {
            Ok(())
        } else {
            Err(ErrorData::invalid_params(
                "this session holds as many resource subscriptions as it may",
                None,
            ))
        }
    }

    /// Undo [`Self::subscribe_resource`] (`resources/unsubscribe`).
    pub fn unsubscribe_resource(&self, uri: &str, context: &RequestContext<RoleServer>) {
        let reach = Reach::of(&context.extensions, &context.peer);
        self.inner.shared.sessions.unsubscribe(&reach, uri);
    }

    /// How many (2025-11-25 sessions, 2026-07-28 listen streams) are registered.
    pub fn listener_counts(&self) -> (usize, usize) {
        self.inner.shared.sessions.counts()
    }
}
