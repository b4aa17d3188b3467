//! What a question sent through a session's link comes to when it has no answer, and the
//! messages about it: its method (for spans) and its withdrawal at the client.

use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, RequestId, ServerJsonRpcMessage,
    ServerNotification, ServerRequest,
};

/// Why a question sent through a [`SessionLink`](super::SessionLink) has no answer.
#[derive(Debug)]
pub(crate) enum NoAnswer {
    /// None came within the time given (the client was told the question is withdrawn).
    TimedOut,
    /// The session ended.
    Closed,
}

/// A question's method (spans take static names).
pub(super) fn method_of(request: &ServerRequest) -> &'static str {
    match request {
        ServerRequest::ElicitRequest(_) => "elicitation/create",
        ServerRequest::CreateMessageRequest(_) => "sampling/createMessage",
        ServerRequest::ListRootsRequest(_) => "roots/list",
        _ => "other",
    }
}

/// The client's question `id` withdrawn (`notifications/cancelled`), so it stops asking the
/// person.
pub(super) fn withdrawal(id: &RequestId, reason: &str) -> ServerJsonRpcMessage {
    let withdrawn = CancelledNotification::new(CancelledNotificationParam::new(
        Some(id.clone()),
        Some(reason.to_owned()),
    ));
    ServerJsonRpcMessage::notification(ServerNotification::CancelledNotification(withdrawn))
}
