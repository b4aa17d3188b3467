//! A POST to a 2025-11-25 session that exists, served here from the message the gate has
//! already parsed. Through rmcp, `StreamableHttpService::handle_post` would read and parse the
//! body a second time before handing the message to the same [`LeanSessions`]. Taken only when
//! rmcp would check nothing more than the gate and this module do: the session's own revision
//! in one `MCP-Protocol-Version` header (before the revision with SEP-2243 headers, so there
//! are none to check), no per-request revision in `_meta`, JSON sent, JSON and SSE accepted, and
//! a message other than `initialize`. Anything else goes on to rmcp as before.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetExtensions, GetMeta};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::sse_body::{Events, SseBody};
use crate::transport::LeanSessions;

/// The revision whose session requests are served here (exactly it: an older version's
/// requests go to rmcp).
const SESSION_REVISION: crate::Revision = crate::Revision::V2025_11_25;

/// What this path needs besides the sessions.
pub(crate) struct SessionPost {
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) shutdown: CancellationToken,
}

impl SessionPost {
    /// The message, typed, when this path may serve it; `None` sends the request to rmcp.
    pub(crate) fn message(
        &self,
        headers: &http::HeaderMap,
        value: Value,
    ) -> Option<ClientJsonRpcMessage> {
        let mut versions = headers.get_all("mcp-protocol-version").iter();
        let version = versions.next()?.to_str().ok()?;
        if version != SESSION_REVISION.date()
            || versions.next().is_some()
            || !super::stateless::accepts_json_and_sse(headers)
            || !super::stateless::sends_json(headers)
        {
            return None;
        }
        let message: ClientJsonRpcMessage = serde_json::from_value(value).ok()?;
        match &message {
            ClientJsonRpcMessage::Request(request) => {
                let per_request = request.request.get_meta().protocol_version().is_some();
                let opening = matches!(
                    request.request,
                    ClientRequest::InitializeRequest(_) | ClientRequest::DiscoverRequest(_)
                );
                (!per_request && !opening).then_some(message)
            }
            // rmcp reads a per-request revision from requests only.
            ClientJsonRpcMessage::Notification(_)
            | ClientJsonRpcMessage::Response(_)
            | ClientJsonRpcMessage::Error(_) => Some(message),
        }
    }

    /// Serve `message` in `session`, with the request's head in its extensions as rmcp puts it
    /// there: a request's stream as SSE, anything else `202 Accepted`.
    pub(crate) async fn serve(
        &self,
        sessions: &LeanSessions,
        session: &str,
        mut message: ClientJsonRpcMessage,
        parts: http::request::Parts,
    ) -> Response {
        let id: SessionId = Arc::from(session);
        match &mut message {
            ClientJsonRpcMessage::Request(request) => {
                request.request.extensions_mut().insert(parts);
            }
            ClientJsonRpcMessage::Notification(notification) => {
                notification.notification.extensions_mut().insert(parts);
            }
            _ => {}
        }
        if matches!(message, ClientJsonRpcMessage::Request(_)) {
            match sessions.create_stream(&id, message).await {
                Ok(stream) => self.events(stream),
                Err(error) => gone(&error),
            }
        } else {
            match sessions.accept_message(&id, message).await {
                Ok(()) => Response::builder()
                    .status(http::StatusCode::ACCEPTED)
                    .body(Body::empty())
                    .unwrap_or_default(),
                Err(error) => gone(&error),
            }
        }
    }

    fn events(
        &self,
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> Response {
        SseBody::respond(
            SessionEvents(Box::pin(stream)),
            self.keep_alive,
            &self.shutdown,
        )
    }
}

/// The session closed between the gate's check and now.
fn gone(error: &impl std::fmt::Display) -> Response {
    tracing::debug!(%error, "a session closed while a message was on its way to it");
    super::jsonrpc::jsonrpc_error(
        http::StatusCode::NOT_FOUND,
        -32001,
        "Session not found: it expired or was closed; start a new one with initialize",
        None,
    )
}

/// One SSE event as rmcp writes it: `id`, `retry` when set, and the message (empty `data` for
/// a priming event).
fn frame(message: &ServerSseMessage) -> Bytes {
    let mut text = String::new();
    if let Some(id) = &message.event_id {
        text.push_str("id: ");
        text.push_str(id);
        text.push('\n');
    }
    if let Some(retry) = message.retry {
        text.push_str(&format!("retry: {}\n", retry.as_millis()));
    }
    text.push_str("data: ");
    if let Some(json) = &message.message {
        text.push_str(&serde_json::to_string(json.as_ref()).unwrap_or_default());
    }
    text.push_str("\n\n");
    Bytes::from(text)
}

/// A call's stream, as the events of an SSE body.
struct SessionEvents(Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>);

impl Events for SessionEvents {
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.0.as_mut().poll_next(cx).map(|message| message.map(|m| frame(&m)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn post() -> SessionPost {
        SessionPost {
            keep_alive: None,
            shutdown: CancellationToken::new(),
        }
    }

    fn headers(version: &[&str], accept: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert("content-type", "application/json".parse().unwrap());
        headers.insert("accept", accept.parse().unwrap());
        for v in version {
            headers.append("mcp-protocol-version", v.parse().unwrap());
        }
        headers
    }

    fn call() -> Value {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "get_order", "arguments": {"orderId": "ORD-10001"}}})
    }

    const BOTH: &str = "application/json, text/event-stream";

    #[test]
    fn plain_session_messages_are_served_here() {
        let plain = headers(&["2025-11-25"], BOTH);
        assert!(matches!(
            post().message(&plain, call()),
            Some(ClientJsonRpcMessage::Request(_))
        ));
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(matches!(
            post().message(&plain, initialized),
            Some(ClientJsonRpcMessage::Notification(_))
        ));
        let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"action": "decline"}});
        assert!(matches!(
            post().message(&plain, answer),
            Some(ClientJsonRpcMessage::Response(_))
        ));
    }

    #[test]
    fn anything_rmcp_checks_further_goes_to_rmcp() {
        let other = [
            headers(&[], BOTH),
            headers(&["2026-07-28"], BOTH),
            headers(&["2025-11-25", "2025-11-25"], BOTH),
            headers(&["2025-11-25"], "application/json"),
            headers(&["2025-11-25"], "application/json;q=1, text/event-stream"),
        ];
        for headers in other {
            assert!(post().message(&headers, call()).is_none(), "{headers:?}");
        }
        let plain = headers(&["2025-11-25"], BOTH);
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        assert!(post().message(&plain, initialize).is_none());
        let mut per_request = call();
        per_request["params"]["_meta"] =
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        assert!(post().message(&plain, per_request).is_none());
    }

    #[test]
    fn events_are_written_as_rmcp_writes_them() {
        let priming = ServerSseMessage::priming("0/1", Duration::from_millis(3000));
        assert_eq!(frame(&priming), "id: 0/1\nretry: 3000\ndata: \n\n");
        let retry = ServerSseMessage::retry(Duration::from_secs(1));
        assert_eq!(frame(&retry), "retry: 1000\ndata: \n\n");
    }
}
