//! A question sent through a session's link ([`SessionLink::ask`]): its id and progress token,
//! its wait, what it comes to when it has no answer, and the messages about it: its method
//! (for spans) and its withdrawal at the client when nobody waits for it any more.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientResult, GetExtensions, GetMeta,
    NumberOrString, ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification,
    ServerRequest,
};

use super::{Session, SessionLink};
use crate::util::lock;

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

impl SessionLink {
    /// Ask the client `request` on behalf of its request `origin` (the question goes out on
    /// that request's stream) and wait at most `timeout` for the answer. Each question gets
    /// the next id of the session and, as rmcp numbers them, the same progress token.
    pub(crate) async fn ask(
        &self,
        mut request: ServerRequest,
        origin: &RequestId,
        timeout: Duration,
    ) -> Result<Result<ClientResult, ErrorData>, NoAnswer> {
        let session = self.session.upgrade().ok_or(NoAnswer::Closed)?;
        let method = method_of(&request);
        let (answer, answered) = tokio::sync::oneshot::channel();
        let id = {
            let mut state = lock(&session.state);
            if state.closed {
                return Err(NoAnswer::Closed);
            }
            let number = state.next_asked;
            state.next_asked += 1;
            let id = RequestId::Number(number);
            state.asked.insert(id.clone(), answer);
            request
                .get_meta_mut()
                .set_progress_token(ProgressToken(NumberOrString::Number(number)));
            id
        };
        request
            .extensions_mut()
            .insert(rmcp::service::OriginatingRequestId(origin.clone()));
        // Forgotten if this wait is dropped (its call was cancelled) or ends; dropped unanswered,
        // the client is told the question is withdrawn.
        let mut forget = Forget {
            session: &session,
            id: &id,
            withdrawn: false,
        };
        if session
            .post(ServerJsonRpcMessage::request(request, id.clone()))
            .is_err()
        {
            return Err(NoAnswer::Closed);
        }
        let question = crate::telemetry::question_span(method);
        let waited =
            tracing::Instrument::instrument(tokio::time::timeout(timeout, answered), question);
        match waited.await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(NoAnswer::Closed),
            Err(_) => {
                let _ = session.post(withdrawal(&id, "request timeout"));
                forget.withdrawn = true;
                Err(NoAnswer::TimedOut)
            }
        }
    }
}

/// Removes a question from the waiting ones when its wait ends, however it ends; still waiting
/// when its wait is dropped (its call was cancelled, or ended), it is withdrawn at the client,
/// who would otherwise still ask the person what nobody waits for.
struct Forget<'a> {
    session: &'a Arc<Session>,
    id: &'a RequestId,
    /// The client was told already (the wait ran out).
    withdrawn: bool,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let waiting = {
            let mut state = lock(&self.session.state);
            state.asked.remove(self.id).is_some() && !state.closed
        };
        if waiting && !self.withdrawn {
            let _ = (self.session).post(withdrawal(self.id, "the call that asked it ended"));
        }
    }
}
