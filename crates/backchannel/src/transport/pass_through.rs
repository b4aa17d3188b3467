//! [`PassThrough`]: a plain 2026-07-28 `tools/call` offered, once the endpoint has checked it, to
//! code that answers it without the handler (a gateway relaying it to another server), before
//! rmcp's dispatch, the layer and `Ctx` are built for it; and the answer to a call whose result
//! it relayed as text.

use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, RequestId, RequestMetaObject};
use tokio_util::sync::CancellationToken;

use super::sse_body::{Events, SseBody};

/// A plain 2026-07-28 `tools/call` the endpoint has checked as its fast path checks one (one
/// known `MCP-Protocol-Version` from 2026-07-28 on and the same in `_meta` with the client's
/// capabilities, no session, the media types, agreeing `Mcp-*` headers, a body of only the
/// fields a call holds, each of its type).
#[derive(Debug)]
pub struct PlainToolCall {
    /// The HTTP head, with its extensions (a [`crate::serve::Principal`] a layer outside put there).
    /// What a [`PassThrough`] puts into its extensions reaches the handler when the call is
    /// handed on ([`Passed::Handler`]).
    pub parts: http::request::Parts,
    /// The call's parameters, as rmcp's parse builds them.
    pub params: CallToolRequestParams,
    /// The request's `_meta`.
    pub meta: RequestMetaObject,
}

/// How a [`PassThrough`] disposed of a call.
#[derive(Debug)]
pub enum Passed {
    /// Answered with this: the call's result, its next round, or its task.
    Answered(CallToolResponse),
    /// Answered with this result, written into the answer as the text it is (another
    /// server's, passed on unread).
    Relayed(crate::RawToolResult),
    /// Answered with this protocol error.
    Refused(ErrorData),
    /// Handed on: the handler serves it as if it had never been offered (with what the pass
    /// through put into the head's extensions).
    Handler(Box<PlainToolCall>),
}

/// Takes plain 2026-07-28 `tools/call` requests before the handler does (see
/// [`crate::serve::router_passing`]).
pub trait PassThrough: Send + Sync + 'static {
    /// The call's future answer, or the call back at once when it is not one to take (then the
    /// handler serves it, with no further cost).
    fn pass(&self, call: PlainToolCall) -> Result<BoxFuture<'static, Passed>, Box<PlainToolCall>>;
}

/// The answer to request `id` whose result is `result` as the text it is: JSON, or one event
/// (kept alive and ended as given) when `one_event`.
pub(crate) fn relayed_response(
    id: &RequestId,
    result: &crate::RawToolResult,
    one_event: Option<(Option<Duration>, &CancellationToken)>,
) -> Response {
    let text = result.get();
    let mut body = Vec::with_capacity(text.len() + 64);
    if one_event.is_some() {
        body.extend_from_slice(b"data: ");
    }
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    if let Err(error) = serde_json::to_writer(&mut body, id) {
        tracing::error!(%error, "could not serialise an answer");
        return http::StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    // The result's text is one JSON object, checked whole (`RawToolResult::complete`).
    body.extend_from_slice(br#","result":"#);
    let start = body.len();
    body.extend_from_slice(text.as_bytes());
    if one_event.is_some() {
        // A line break would end the event's data line. In checked JSON one can only be
        // whitespace between tokens, which a space replaces.
        for byte in &mut body[start..] {
            if matches!(*byte, b'\n' | b'\r') {
                *byte = b' ';
            }
        }
    }
    body.push(b'}');
    let Some((keep_alive, shutdown)) = one_event else {
        let json = http::HeaderValue::from_static("application/json");
        return ([(http::header::CONTENT_TYPE, json)], body).into_response();
    };
    body.extend_from_slice(b"\n\n");
    SseBody::respond(OneEvent(Some(body.into())), keep_alive, shutdown)
}

/// An SSE body of one event.
struct OneEvent(Option<Bytes>);

impl Events for OneEvent {
    fn poll_event(&mut self, _: &mut Context<'_>) -> Poll<Option<Bytes>> {
        Poll::Ready(self.0.take())
    }

    fn ended(&self) -> bool {
        self.0.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ServerJsonRpcMessage, ServerResult};
    use serde_json::Value;

    #[tokio::test]
    async fn a_relayed_result_is_answered_as_the_same_result_read_would_be() {
        // Written with line breaks between its tokens, and one escaped in its text.
        let text = "{\"resultType\": \"complete\",\r\n  \"content\": [{\"type\": \"text\", \
                    \"text\": \"a \\\"b\\\"\\n\"}],\n  \"structuredContent\": {\"b\": [1, 2]}}\n";
        let result = crate::RawToolResult::complete(text).unwrap();
        let id = RequestId::Number(7);
        // As rmcp writes the result read into its type.
        let expected = serde_json::to_value(ServerJsonRpcMessage::response(
            ServerResult::CallToolResult(result.parse().unwrap()),
            id.clone(),
        ))
        .unwrap();
        let body = |response: Response| async move {
            let head = response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .cloned()
                .unwrap();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .unwrap();
            (head, bytes)
        };
        let value = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).unwrap();

        let (head, relayed) = body(relayed_response(&id, &result, None)).await;
        assert_eq!(head, "application/json");
        assert_eq!(value(&relayed), expected);

        // Without `json_response`: one event, and the stream ends after it.
        let shutdown = CancellationToken::new();
        let (head, relayed) = body(relayed_response(&id, &result, Some((None, &shutdown)))).await;
        assert_eq!(head, "text/event-stream");
        let data = relayed
            .strip_prefix(b"data: ")
            .and_then(|rest| rest.strip_suffix(b"\n\n"))
            .unwrap();
        assert!(!data.contains(&b'\n') && !data.contains(&b'\r'), "one line of data");
        assert_eq!(value(data), expected);
    }
}
