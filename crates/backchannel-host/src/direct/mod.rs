//! The direct path of a 2026-07-28 HTTP connection ([`Direct`]): a `tools/call` or
//! `prompts/get` round is one POST on a keep-alive HTTP connection, and its answer is read
//! here, as JSON or as an SSE stream whose progress and log messages reach the handler on the
//! way. The revision is stateless, so nothing of a round outlives its response: no rmcp client
//! worker per connection, no message typed through rmcp's untagged enums. Every other request,
//! and a round whose token the server refused, goes through rmcp.
//!
//! A JSON answer is awaited in the round's own future: hyper's client wakes it once for the
//! head and once for a body that came apart from it. An SSE stream is read on a task of its own
//! (`exchange::events`), which hands the caller the events one by one: the caller's future,
//! deep inside a server's request when the caller is a gateway, is then woken once per message
//! instead of once per chunk (on one core at 16 calls in flight that made the difference
//! between this path losing 20% to rmcp's worker and matching it). Dropping a round's future
//! drops its HTTP request, and aborts the stream's task (`AbortOnDropHandle`), which is how a
//! 2026-07-28 client cancels.
//!
//! Responses are capped as rmcp caps them: a JSON body and each SSE event at the transport's
//! limits, counted before they are parsed.
//!
//! To an `http://` server a round goes out on hyper's HTTP/1.1 connections alone ([`Post`]),
//! kept by the path itself: a round takes an idle one (or opens one) and gives it back when
//! its response is read to the end; a request the server closed an idle connection on before
//! it was sent goes out again on another. reqwest (which the connection's rmcp transport uses)
//! puts a proxy lookup, a retry and a redirect layer and a URL parsed again on every request
//! (without them, a gateway and its upstream sharing one core answer about a fifth more calls
//! a second), and hyper-util's pooled client a checkout keyed by the URL's origin and a task
//! spawned per response to put the connection back. A redirect (307 or 308) is sent again
//! through reqwest, which follows it within the server's origin as every other request of the
//! connection is; so is every round to an `https://` server, whose TLS is reqwest's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use backchannel::standard_headers;
use http::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{ClientRequest, JsonObject, ServerNotification, ServerResult};
use serde_json::Value;

mod exchange;

pub(crate) use exchange::{Cause, DirectError, Failure};
use exchange::{Endpoint, Opened, Post};

/// The tokens an OAuth sign-in left, shared with the connection's rmcp transport.
#[cfg(feature = "oauth")]
pub(crate) type Managed = Arc<tokio::sync::Mutex<rmcp::transport::auth::AuthorizationManager>>;
/// Without feature `oauth` there is no sign-in.
#[cfg(not(feature = "oauth"))]
pub(crate) enum Managed {}

/// How a direct round's requests are authenticated.
pub(crate) enum DirectAuth {
    /// No credentials.
    None,
    /// A configured bearer token.
    Bearer(HeaderValue),
    /// The tokens an OAuth sign-in left (none yet: the request goes without).
    #[cfg(feature = "oauth")]
    Managed(Managed),
}

impl DirectAuth {
    /// A configured bearer token, or none.
    pub(crate) fn plain(bearer: Option<&str>) -> Self {
        bearer
            .and_then(|token| HeaderValue::from_str(&format!("Bearer {token}")).ok())
            .map_or(DirectAuth::None, DirectAuth::Bearer)
    }
}

/// The direct path of one 2026-07-28 HTTP connection.
pub(crate) struct Direct {
    /// Where its rounds go, and on which clients (shared with each round's exchange).
    to: Arc<Endpoint>,
    /// Content type, accepted types, the revision and the configured headers.
    headers: HeaderMap,
    auth: DirectAuth,
    /// The `_meta` every request carries on this revision: the revision, the client and
    /// what it can answer.
    context: JsonObject,
    /// The input schemas of the server's tools, by their names there: the arguments a schema
    /// marks `x-mcp-header` travel as `Mcp-Param-*` headers too.
    schemas: RwLock<HashMap<String, Arc<JsonObject>>>,
    next_id: AtomicI64,
    max_json: usize,
    max_event: usize,
}

/// A server message read off a direct round's response.
enum Message {
    Notification(ServerNotification),
    Answer(Result<Answer, DirectError>),
    Other,
}

/// A direct round's answer.
#[expect(
    clippy::large_enum_variant,
    reason = "made once per round and moved out at once; boxing would allocate on every read one"
)]
pub(crate) enum Answer {
    /// Read with rmcp's types.
    Read(ServerResult),
    /// A tool's plain complete result, kept as its text (only when asked for).
    Text(backchannel::RawToolResult),
}

/// What a round's answer is read as.
#[derive(Clone, Copy)]
enum Expect {
    Tool,
    /// A tool's result, kept as its text when it is a plain complete one.
    ToolAsText,
    Prompt,
}

impl Direct {
    /// The direct path to `url`, with `headers` (the configured ones) on every request and
    /// the negotiated `revision`.
    pub(crate) fn new(
        client: reqwest13::Client,
        url: &str,
        custom: &HashMap<HeaderName, HeaderValue>,
        revision: &str,
        context: JsonObject,
        auth: DirectAuth,
    ) -> Result<Self, Failure> {
        let to = Arc::new(Endpoint::new(client, url)?);
        let mut headers = HeaderMap::new();
        for (name, value) in custom {
            headers.insert(name.clone(), value.clone());
        }
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        let revision = HeaderValue::from_str(revision).map_err(|e| Failure::Header {
            name: "Mcp-Protocol-Version".into(),
            cause: e.into(),
        })?;
        headers.insert(HeaderName::from_static("mcp-protocol-version"), revision);
        let limits =
            rmcp::transport::streamable_http_client::StreamableHttpResponseLimits::default();
        Ok(Self {
            to,
            headers,
            auth,
            context,
            schemas: RwLock::default(),
            next_id: AtomicI64::new(1),
            max_json: limits.max_json_response_size,
            max_event: limits.max_sse_event_size,
        })
    }

    /// Remember the input schemas of `tools` (as the server names them).
    pub(crate) fn learn(&self, tools: &[rmcp::model::Tool]) {
        let mut schemas = self.schemas.write().unwrap_or_else(|e| e.into_inner());
        for tool in tools {
            schemas.insert(tool.name.to_string(), tool.input_schema.clone());
        }
    }

    /// Send `request` as one round of `call`; `None` when it is not a round this path takes.
    /// Its progress and log messages go to `notified` as they arrive. A tool's plain complete
    /// result comes back as its text when `as_text`.
    pub(crate) async fn round(
        &self,
        request: &ClientRequest,
        notified: impl Fn(ServerNotification),
        as_text: bool,
    ) -> Option<Result<Answer, DirectError>> {
        let expect = match request {
            ClientRequest::CallToolRequest(_) if as_text => Expect::ToolAsText,
            ClientRequest::CallToolRequest(_) => Expect::Tool,
            ClientRequest::GetPromptRequest(_) => Expect::Prompt,
            _ => return None,
        };
        Some(self.send(request, expect, notified).await)
    }

    async fn send(
        &self,
        request: &ClientRequest,
        expect: Expect,
        notified: impl Fn(ServerNotification),
    ) -> Result<Answer, DirectError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (body, mut headers) = self.message(request, id)?;
        #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
        let mut token_sent = false;
        match &self.auth {
            DirectAuth::None => {}
            DirectAuth::Bearer(value) => {
                headers.insert(http::header::AUTHORIZATION, value.clone());
            }
            #[cfg(feature = "oauth")]
            DirectAuth::Managed(manager) => {
                use rmcp::transport::auth::AuthError;
                // Boxed: its future is large, and every round's future would hold it.
                let token = Box::pin(async { manager.lock().await.get_access_token().await });
                match token.await {
                    Ok(token) => {
                        let value = HeaderValue::from_str(&format!("Bearer {token}"))
                            .map_err(Failure::Token)?;
                        headers.insert(http::header::AUTHORIZATION, value);
                        token_sent = true;
                    }
                    Err(AuthError::AuthorizationRequired) => {}
                    Err(error) => return Err(Failure::from(error).into()),
                }
            }
        }
        let post = Post {
            to: self.to.clone(),
            headers,
            body: body.into(),
        };
        let (status, body) = match exchange::open(post, token_sent, self.max_json).await? {
            Opened::Body { status, body } => (status, body),
            Opened::Stream(body, lease) => {
                return self.stream(body, lease, id, expect, notified).await;
            }
        };
        match message(&body, id, expect) {
            Ok(Message::Answer(answer)) => answer,
            _ if !status.is_success() => Err(Failure::Status {
                status,
                preview: preview(&body),
            }
            .into()),
            Ok(_) => Err(Failure::AnswersAnother.into()),
            Err(why) => Err(why.into()),
        }
    }

    /// The answer to request `id` on the event stream `body`, its notifications handed to
    /// `notified` on the way. The stream is read on a task of its own, so the caller's deep
    /// future is woken once per message rather than once per chunk.
    async fn stream(
        &self,
        body: exchange::Body,
        lease: exchange::Lease,
        id: i64,
        expect: Expect,
        notified: impl Fn(ServerNotification),
    ) -> Result<Answer, DirectError> {
        let (sent, mut events) = tokio::sync::mpsc::channel(8);
        // Aborted when the round is dropped, which drops its HTTP request.
        let _reader = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(exchange::events(
            body,
            lease,
            self.max_event,
            sent,
        )));
        while let Some(data) = events.recv().await {
            match message(&data?, id, expect)? {
                Message::Notification(notification) => notified(notification),
                Message::Answer(answer) => return answer,
                Message::Other => {}
            }
        }
        Err(Failure::EndedEarly.into())
    }

    /// The request's JSON-RPC body (rmcp's progress token being its id) and its headers.
    fn message(
        &self,
        request: &ClientRequest,
        id: i64,
    ) -> Result<(Vec<u8>, HeaderMap), DirectError> {
        let unwritable = Failure::Unwritable;
        let mut headers = self.headers.clone();
        let body = match request {
            ClientRequest::CallToolRequest(call) => {
                let params = &call.params;
                let schema = self
                    .schemas
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(params.name.as_ref())
                    .cloned();
                standard_headers::write_with(
                    &mut headers,
                    "tools/call",
                    Some(&params.name),
                    params.arguments.as_ref(),
                    schema.as_deref(),
                );
                let progress = Value::from(id);
                let meta = self.meta(
                    params.meta.as_ref().map(|meta| &meta.0.0),
                    &call.extensions,
                    &progress,
                );
                serde_json::to_vec(&Outgoing {
                    jsonrpc: "2.0",
                    id,
                    method: "tools/call",
                    params: ToolParams {
                        meta,
                        name: &params.name,
                        arguments: params.arguments.as_ref(),
                        input_responses: params.input_responses.as_ref(),
                        request_state: params.request_state.as_deref(),
                    },
                })
                .map_err(unwritable)?
            }
            _ => self.generic(request, id, &mut headers)?,
        };
        Ok((body, headers))
    }

    /// The `_meta` of a round's request, as rmcp would write it with this path's additions:
    /// the params' own, then the request's (rmcp's legacy, then its typed), then the
    /// revision and the client, then the progress token, each overriding the ones before.
    fn meta<'a>(
        &'a self,
        params: Option<&'a JsonObject>,
        extensions: &'a rmcp::model::Extensions,
        progress: &'a Value,
    ) -> std::collections::BTreeMap<&'a str, &'a Value> {
        let legacy = extensions
            .get::<rmcp::model::MetaObject>()
            .map(|meta| &meta.0);
        let typed = extensions
            .get::<rmcp::model::RequestMetaObject>()
            .map(|meta| &meta.0.0);
        let mut meta = std::collections::BTreeMap::new();
        for source in [params, legacy, typed, Some(&self.context)]
            .into_iter()
            .flatten()
        {
            meta.extend(source.iter().map(|(key, value)| (key.as_str(), value)));
        }
        meta.insert("progressToken", progress);
        meta
    }

    /// Any other round's body, through rmcp's own serialization and a JSON value, and its
    /// `Mcp-Name` header.
    fn generic(
        &self,
        request: &ClientRequest,
        id: i64,
        headers: &mut HeaderMap,
    ) -> Result<Vec<u8>, DirectError> {
        let Value::Object(mut message) =
            serde_json::to_value(request).map_err(Failure::Unwritable)?
        else {
            return Err(Failure::NotAnObject.into());
        };
        let params = message
            .entry("params")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(params) = params {
            let meta = params
                .entry("_meta")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            if let Value::Object(meta) = meta {
                for (key, value) in &self.context {
                    meta.insert(key.clone(), value.clone());
                }
                meta.insert("progressToken".into(), id.into());
            }
        }
        let method = message.get("method").and_then(Value::as_str);
        standard_headers::write(
            headers,
            method.unwrap_or_default(),
            message.get("params"),
            None,
        );
        message.insert("jsonrpc".into(), "2.0".into());
        message.insert("id".into(), id.into());
        serde_json::to_vec(&message).map_err(|e| Failure::Unwritable(e).into())
    }
}

/// A round's request as it goes on the wire.
#[derive(serde::Serialize)]
struct Outgoing<P> {
    jsonrpc: &'static str,
    id: i64,
    method: &'static str,
    params: P,
}

/// A `tools/call` request's params, borrowed from rmcp's, with the merged `_meta`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolParams<'a> {
    #[serde(rename = "_meta")]
    meta: std::collections::BTreeMap<&'a str, &'a Value>,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a JsonObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_responses: Option<&'a rmcp::model::InputResponses>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_state: Option<&'a str>,
}

/// Read one JSON-RPC message of the server: a notification, the answer to request `id`, or
/// something else.
fn message(bytes: &[u8], id: i64, expect: Expect) -> Result<Message, Failure> {
    let not_a_message = || Failure::NotAMessage(preview(bytes));
    if let Expect::ToolAsText = expect
        && let Some(text) = relayed_at_sight(bytes, id)
    {
        return Ok(Message::Answer(Ok(Answer::Text(text))));
    }
    // An array would fill the fields in order.
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return Err(not_a_message());
    }
    let message: Incoming<'_> =
        serde_json::from_slice(bytes).map_err(|error| Failure::NotJson {
            error,
            preview: preview(bytes),
        })?;
    if message.method.is_some() {
        if message.id.is_some() {
            // A request on a stateless revision's response: nothing here can answer it.
            return Ok(Message::Other);
        }
        return Ok(serde_json::from_slice(bytes)
            .map(Message::Notification)
            .unwrap_or(Message::Other));
    }
    if message.id.as_ref().and_then(Value::as_i64) != Some(id) {
        return Ok(Message::Other);
    }
    if let Some(error) = message.error {
        return Ok(Message::Answer(match serde_json::from_str(error.get()) {
            Ok(error) => Err(DirectError::Refused(error)),
            Err(e) => Err(Failure::UnreadableError(e).into()),
        }));
    }
    let Some(result) = message.result else {
        return Err(Failure::Empty);
    };
    if let Expect::ToolAsText = expect
        && let Some(text) = backchannel::RawToolResult::complete(result.get())
    {
        return Ok(Message::Answer(Ok(Answer::Text(text))));
    }
    Ok(Message::Answer(
        typed(result.get(), expect).map(Answer::Read),
    ))
}

/// The plain complete result of the answer to request `id` when the message is written as
/// rmcp writes one, `{"jsonrpc":"2.0","id":<id>,"result":<result>}` byte for byte: then the
/// result's own check is the only read of the message. Written any other way, the message is
/// read field by field.
fn relayed_at_sight(bytes: &[u8], id: i64) -> Option<backchannel::RawToolResult> {
    use std::io::Write as _;
    let mut written = [0u8; 20];
    let mut cursor = &mut written[..];
    write!(cursor, "{id}").ok()?;
    let left = cursor.len();
    let id = &written[..written.len() - left];
    let result = bytes
        .strip_prefix(br#"{"jsonrpc":"2.0","id":"#)?
        .strip_prefix(id)?
        .strip_prefix(br#","result":"#)?;
    // Past its end, a message has nothing but JSON's whitespace.
    let end = result
        .iter()
        .rposition(|byte| !matches!(byte, b' ' | b'\t' | b'\n' | b'\r'))?;
    let result = result[..=end].strip_suffix(b"}")?;
    backchannel::RawToolResult::complete(std::str::from_utf8(result).ok()?)
}

/// A server's message as far as telling what it is needs: the result and error left unread.
#[derive(serde::Deserialize)]
struct Incoming<'a> {
    #[serde(default, borrow)]
    method: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, borrow)]
    result: Option<&'a serde_json::value::RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a serde_json::value::RawValue>,
}

/// A result's `resultType`, the rest of it skipped.
#[derive(serde::Deserialize)]
struct Kind<'a> {
    #[serde(rename = "resultType", default, borrow)]
    result_type: Option<std::borrow::Cow<'a, str>>,
}

/// The result as rmcp types it, by its `resultType` and what the request was, read straight
/// from its text.
fn typed(result: &str, expect: Expect) -> Result<ServerResult, DirectError> {
    let unreadable = |e: serde_json::Error| DirectError::Failed(Failure::UnreadableResult(e));
    let kind: Kind<'_> = serde_json::from_str(result).map_err(unreadable)?;
    match (kind.result_type.as_deref(), expect) {
        (Some("input_required"), _) => serde_json::from_str(result)
            .map(ServerResult::InputRequiredResult)
            .map_err(unreadable),
        (Some("task"), Expect::Tool | Expect::ToolAsText) => serde_json::from_str(result)
            .map(ServerResult::CreateTaskResult)
            .map_err(unreadable),
        (_, Expect::Tool | Expect::ToolAsText) => serde_json::from_str(result)
            .map(ServerResult::CallToolResult)
            .map_err(unreadable),
        (_, Expect::Prompt) => serde_json::from_str(result)
            .map(ServerResult::GetPromptResult)
            .map_err(unreadable),
    }
}

/// The start of a body, for an error.
fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
    text.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_annotated_argument_travels_as_a_header_wrapped_when_it_must_be() {
        let schema = json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "where": {"type": "object", "properties": {
                "zone": {"type": "integer", "x-mcp-header": "Zone"}}},
            "plain": {"type": "string"},
            "blank": {"type": "string", "x-mcp-header": ""}
        }});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let mut headers = HeaderMap::new();
        let Value::Object(arguments) =
            json!({"region": " eu", "where": {"zone": 7}, "plain": "x", "blank": "y"})
        else {
            unreachable!()
        };
        standard_headers::write_with(
            &mut headers,
            "tools/call",
            Some("deploy"),
            Some(&arguments),
            Some(&schema),
        );
        assert_eq!(headers.len(), 4, "{headers:?}");
        assert_eq!(headers["mcp-method"], "tools/call");
        assert_eq!(headers["mcp-name"], "deploy");
        assert_eq!(headers["mcp-param-zone"], "7");
        assert_eq!(headers["mcp-param-region"], "=?base64?IGV1?=");
    }

    #[test]
    fn a_tool_call_is_written_as_rmcp_would_write_it_with_this_paths_additions() {
        let Value::Object(context) = json!({
            "protocolVersion": "2026-07-28",
            "clientInfo": {"name": "gateway", "version": "1"},
            "shared": "from the connection"
        }) else {
            unreachable!()
        };
        let client = reqwest13::Client::builder().build().unwrap();
        let direct = Direct::new(
            client,
            "http://127.0.0.1:9/mcp",
            &HashMap::new(),
            "2026-07-28",
            context,
            DirectAuth::None,
        )
        .unwrap();
        let object = |value: Value| match value {
            Value::Object(object) => object,
            _ => unreachable!(),
        };
        let mut bare = rmcp::model::CallToolRequestParams::new("get_order");
        bare.arguments = Some(object(
            json!({"orderId": "ORD-1", "note": "a \"quoted\" é"}),
        ));
        let mut full = bare.clone();
        full.meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(
            object(json!({"fromParams": 1, "shared": "params", "progressToken": "theirs"})),
        )));
        full.input_responses = Some([("confirm".to_owned(), json!({"action": "accept"}))].into());
        full.request_state = Some("sealed".into());
        for params in [bare, full] {
            for extension_meta in [false, true] {
                let mut request = rmcp::model::CallToolRequest::new(params.clone());
                if extension_meta {
                    request.extensions.insert(rmcp::model::MetaObject(object(
                        json!({"legacy": true, "traceparent": "00-legacy"}),
                    )));
                    request.extensions.insert(rmcp::model::RequestMetaObject(
                        rmcp::model::MetaObject(object(json!({"traceparent": "00-typed"}))),
                    ));
                }
                let request = ClientRequest::CallToolRequest(request);
                let (body, headers) = direct.message(&request, 7).unwrap();
                let mut generic_headers = HeaderMap::new();
                let generic = direct.generic(&request, 7, &mut generic_headers).unwrap();
                let (ours, theirs): (Value, Value) = (
                    serde_json::from_slice(&body).unwrap(),
                    serde_json::from_slice(&generic).unwrap(),
                );
                assert_eq!(ours, theirs);
                assert_eq!(ours["params"]["_meta"]["progressToken"], 7);
                assert_eq!(ours["params"]["_meta"]["shared"], "from the connection");
                assert_eq!(headers["mcp-name"], generic_headers["mcp-name"]);
                assert_eq!(headers["mcp-method"], "tools/call");
            }
        }
    }

    #[test]
    fn only_the_answer_to_the_round_is_taken_and_by_its_result_type() {
        let answer_as = |text: &str, expect| match message(text.as_bytes(), 7, expect).unwrap() {
            Message::Answer(answer) => Some(answer),
            _ => None,
        };
        let answer = |text: &str| answer_as(text, Expect::Tool);
        assert!(answer(r#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#).is_none());
        assert!(matches!(
            answer(r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#),
            Some(Ok(Answer::Read(ServerResult::CallToolResult(_))))
        ));
        let round = r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{},"requestState":"s"}}"#;
        for expect in [Expect::Tool, Expect::ToolAsText] {
            assert!(matches!(
                answer_as(round, expect),
                Some(Ok(Answer::Read(ServerResult::InputRequiredResult(_))))
            ));
        }
        // A plain complete result is kept as its text only when asked for; one without a type
        // (2025-11-25) is read.
        let complete = r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"x"}],"isError":true}}"#;
        assert!(matches!(
            answer(complete),
            Some(Ok(Answer::Read(ServerResult::CallToolResult(_))))
        ));
        let result =
            r#"{"resultType":"complete","content":[{"type":"text","text":"x"}],"isError":true}"#;
        // As rmcp writes a message (read at sight), and written any other way (read field by
        // field): the same answer.
        for written in [
            complete.to_owned(),
            format!("{complete}\r\n"),
            format!(r#"{{"id":7,"result":{result},"jsonrpc":"2.0"}}"#),
            format!(r#"{{ "jsonrpc": "2.0", "id": 7, "result": {result} }}"#),
        ] {
            match answer_as(&written, Expect::ToolAsText) {
                Some(Ok(Answer::Text(text))) => {
                    assert!(text.is_error());
                    assert_eq!(text.get(), result);
                }
                _ => panic!("a plain complete result is not kept as its text: {written}"),
            }
        }
        // Not the answer, not one message, or not JSON past its end: never taken at sight.
        let other_id = format!(r#"{{"jsonrpc":"2.0","id":77,"result":{result}}}"#);
        assert!(answer_as(&other_id, Expect::ToolAsText).is_none());
        for broken in [
            format!("{complete} x"),
            format!("{complete}\x0c"),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result},"result":{result}}}"#),
        ] {
            assert!(
                message(broken.as_bytes(), 7, Expect::ToolAsText).is_err(),
                "{broken}"
            );
        }
        let with_error = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{result},"error":{{"code":1,"message":"no"}}}}"#
        );
        assert!(!matches!(
            answer_as(&with_error, Expect::ToolAsText),
            Some(Ok(Answer::Text(_)))
        ));
        assert!(matches!(
            answer_as(
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#,
                Expect::ToolAsText
            ),
            Some(Ok(Answer::Read(ServerResult::CallToolResult(_))))
        ));
        assert!(matches!(
            answer(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no"}}"#),
            Some(Err(DirectError::Refused(_)))
        ));
        assert!(message(b"[1]", 7, Expect::Tool).is_err());
        assert!(matches!(
            message(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#, 7, Expect::Tool),
            Ok(Message::Notification(ServerNotification::ProgressNotification(_)))
        ));
    }
}
