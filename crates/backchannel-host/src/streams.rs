//! How a connection reaches its server beyond its requests: the one pooled HTTP client every
//! HTTP connection shares, the `subscriptions/listen` stream a 2026-07-28 connection opens for
//! list changes, and the wait for a 2025-11-25 session's listening stream.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::RunningService;

use backchannel::ListKind;

use crate::handler::HostHandler;
use crate::listening::ListeningOpened;
use crate::routed::Routed;

/// The HTTP client of every HTTP connection: connections kept and reused (rmcp drains a
/// response's SSE body before the connection goes back; `TCP_NODELAY`, so a request written in
/// two parts never waits on a delayed ACK), and redirects followed only as 307/308 within the
/// same origin, so a request never carries its session or token elsewhere. (Without the pool,
/// every request paid a connect: a gateway's forwarded `get_order` ran at 0.6 times the rate.)
pub(crate) fn http_client() -> Result<reqwest13::Client, crate::direct::Failure> {
    const MAX_REDIRECTS: usize = 10;
    let policy = reqwest13::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        if same_origin && keeps_body && attempt.previous().len() <= MAX_REDIRECTS {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest13::Client::builder()
        .tcp_nodelay(true)
        .redirect(policy)
        .build()
        .map_err(crate::direct::Failure::Client)
}

/// How long a listen stream that ended waits before it is opened again.
pub(crate) const RELISTEN_AFTER: Duration = Duration::from_secs(1);

/// On 2026-07-28, where list changes come only on a `subscriptions/listen` stream: open one
/// for the lists the server says change, and hand what arrives to the handler as a 2025-11-25
/// session's notifications are; opened again after it ends, until the connection is dropped.
/// `None` on a revision with sessions, or when no list of the server changes.
pub(crate) fn listen_for_changes<H: HostHandler>(
    name: &str,
    service: &RunningService<RoleClient, Routed<H>>,
    handler: Arc<H>,
) -> Option<tokio_util::sync::DropGuard> {
    let info = service.peer().peer_info()?;
    if backchannel::Revision::of(&info.protocol_version).has_sessions() {
        return None;
    }
    let capabilities = &info.capabilities;
    let mut filter = rmcp::model::SubscriptionFilter::builder();
    let mut any = false;
    if capabilities.tools.as_ref().and_then(|t| t.list_changed) == Some(true) {
        filter = filter.tools_list_changed();
        any = true;
    }
    if capabilities.prompts.as_ref().and_then(|p| p.list_changed) == Some(true) {
        filter = filter.prompts_list_changed();
        any = true;
    }
    if capabilities.resources.as_ref().and_then(|r| r.list_changed) == Some(true) {
        filter = filter.resources_list_changed();
        any = true;
    }
    if !any {
        return None;
    }
    let filter = filter.build();
    let stop = tokio_util::sync::CancellationToken::new();
    let peer = service.peer().clone();
    let name = name.to_owned();
    let stopped = stop.clone();
    let watch = async move {
        loop {
            match peer.listen(filter.clone()).await {
                Ok(mut subscription) => {
                    while let Ok(Some(notification)) = subscription.next().await {
                        use rmcp::model::ServerNotification as N;
                        let kind = match notification {
                            N::ToolListChangedNotification(_) => ListKind::Tools,
                            N::PromptListChangedNotification(_) => ListKind::Prompts,
                            N::ResourceListChangedNotification(_) => ListKind::Resources,
                            _ => continue,
                        };
                        handler.on_list_changed(&name, kind);
                    }
                }
                // The server refuses to be listened to: it will not change its mind.
                Err(rmcp::service::ServiceError::McpError(error)) => {
                    tracing::debug!(connection = %name, %error, "the server refuses to be listened to");
                    return;
                }
                Err(error) => {
                    tracing::debug!(connection = %name, %error, "the list changes cannot be listened to");
                }
            }
            if peer.is_transport_closed() {
                return;
            }
            tokio::time::sleep(RELISTEN_AFTER).await;
        }
    };
    tokio::spawn(async move {
        tokio::select! {
            () = stopped.cancelled() => {}
            () = watch => {}
        }
    });
    Some(stop.drop_guard())
}

/// On a revision with sessions, wait (at most `limit`, and never past 5 s) until the server
/// has answered the session's listening GET, so what it sends outside any call from now on has
/// a stream to go to. A server that is slow to answer delays only this connection's start.
pub(crate) async fn wait_for_listening<S>(
    name: &str,
    service: &RunningService<RoleClient, S>,
    opened: ListeningOpened,
    limit: Duration,
) where
    S: rmcp::Service<RoleClient>,
{
    let has_sessions = service
        .peer()
        .peer_info()
        .and_then(|info| {
            info.protocol_version
                .as_str()
                .parse::<backchannel::Revision>()
                .ok()
        })
        .is_some_and(|revision| revision.has_sessions());
    if has_sessions && !opened.wait(limit.min(Duration::from_secs(5))).await {
        tracing::debug!(
            connection = name,
            "the server has not answered the listening stream yet; going on without it"
        );
    }
}
