//! The 2026-07-28 fast path: a stateless request handed to the server's handler in the
//! request's own task, with no rmcp service, transport, peer channel or spawned task of its own.
//!
//! rmcp serves such a request by building a one-shot transport and a peer with a 1,024-slot
//! channel, running a serve loop over them and spawning it (`serve_negotiated_request_directly`
//! in rmcp's `transport/streamable_http_server/tower.rs`). Nothing in the revision needs that:
//! the request is one message in, its notifications and one result out. Here the message
//! [`crate::serve::mcp_route`] already parsed is turned into rmcp's typed request, the request context is
//! built around one shared, closed peer (rmcp's `Peer::new` is crate-private, and a peer is
//! what a `RequestContext` must hold), and `Service::handle_request` runs in place.
//! Notifications sent through `Ctx` go into the request's [`Outbox`] and stream on its own
//! SSE response; a call that sends none is answered as JSON.
//!
//! Only a request that is certainly a well-formed 2026-07-28 request takes this path: a single
//! `MCP-Protocol-Version` naming a known version from 2026-07-28 on, the same version in
//! `_meta` with the client's capabilities, no session header, the media types rmcp requires,
//! agreeing SEP-2243 headers ([`crate::standard_headers`]), and a body that parses as the
//! method's own request type. Anything else — every malformed or unusual request — goes on to
//! rmcp, which answers it exactly as before; so the error codes and HTTP statuses are rmcp's
//! by construction, and the answers to well-formed requests come from the same
//! `handle_request` with the same context.

use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use http::HeaderMap;
use http::request::Parts;
use rmcp::model::{
    ClientRequest, ErrorCode, Extensions, GetExtensions, GetMeta, InitializeRequestParams,
    JsonObject, ProtocolVersion, RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{RoleServer, ServerHandler, Service};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::pass_through::{PassThrough, Passed, PlainToolCall};
use super::sse_body::{Events, SseBody};
use crate::standard_headers;
use crate::outbox::Outbox;

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const SESSION: &str = "mcp-session-id";

/// Serves stateless requests directly; type-erased so the gate needs no handler type.
pub(crate) trait FastPath: Send + Sync {
    /// The response to the request, or its head back when it is not for this path (the body
    /// is then parsed again from its bytes by rmcp).
    fn serve(
        &self,
        parts: Parts,
        message: Value,
    ) -> Result<BoxFuture<'static, Response>, Box<Parts>>;

    /// [`FastPath::serve`] for a plain `tools/call` (the body's only fields those the check
    /// and rmcp read, each of its type), parsed here straight from `bytes` into rmcp's typed
    /// request: one parse instead of one into a `Value` and one from it. Anything else, and
    /// anything unusual (a field more, one repeated, a `null` where the check wants an object),
    /// comes back for the gate's own check, which then answers it as before.
    fn serve_call(
        &self,
        parts: Parts,
        bytes: &[u8],
    ) -> Result<BoxFuture<'static, Response>, Box<Parts>>;
}

/// A `tools/call` with nothing but what a plain one holds (see [`FastPath::serve_call`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainCall {
    jsonrpc: String,
    id: RequestId,
    method: String,
    params: PlainParams,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainParams {
    name: String,
    #[serde(default, deserialize_with = "object")]
    arguments: Option<JsonObject>,
    #[serde(rename = "_meta", default)]
    meta: Option<JsonObject>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<JsonObject>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

/// An object, never `null` (the check refuses `"arguments": null`).
fn object<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<JsonObject>, D::Error> {
    JsonObject::deserialize(d).map(Some)
}

/// The fast path for one endpoint: the handler factory and the response settings.
pub(crate) struct Stateless<F> {
    factory: Arc<F>,
    json_response: bool,
    keep_alive: Option<Duration>,
    shutdown: CancellationToken,
    /// Made on first use (it needs a runtime): the peer every fast-path context holds.
    peer: OnceLock<Peer<RoleServer>>,
    /// Offered every plain `tools/call` before the handler (see [`crate::serve::router_passing`]).
    pass: Option<Arc<dyn PassThrough>>,
}

impl<F> Stateless<F> {
    pub(crate) fn new(
        factory: Arc<F>,
        json_response: bool,
        keep_alive: Option<Duration>,
        shutdown: CancellationToken,
        pass: Option<Arc<dyn PassThrough>>,
    ) -> Self {
        Self {
            factory,
            json_response,
            keep_alive,
            shutdown,
            peer: OnceLock::new(),
            pass,
        }
    }

    /// What answers a request here once its handler runs.
    fn runner(&self) -> Runner {
        Runner {
            peer: self.peer.get_or_init(closed_peer).clone(),
            json_response: self.json_response,
            keep_alive: self.keep_alive,
            shutdown: self.shutdown.clone(),
        }
    }
}

/// A peer with no one at the other end ([`crate::transport::driver::closed_peer`]) that knows
/// its client as a 2026-07-28 one (as rmcp's own stateless path does), so rmcp refuses to send
/// a server-to-client request through it. What a stateless handler sends goes through `Ctx`
/// and the request's [`Outbox`].
fn closed_peer() -> Peer<RoleServer> {
    let mut info = InitializeRequestParams::default();
    info.protocol_version = crate::Revision::V2026_07_28.protocol_version();
    crate::transport::driver::closed_peer(info)
}

impl<S, F> FastPath for Stateless<F>
where
    S: ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    fn serve(
        &self,
        parts: Parts,
        message: Value,
    ) -> Result<BoxFuture<'static, Response>, Box<Parts>> {
        let Some(version) = stateless_version(&parts.headers) else {
            return Err(Box::new(parts));
        };
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return Err(Box::new(parts));
        };
        // The handshake and the listen stream stay with rmcp.
        if matches!(method, "initialize" | "subscriptions/listen") {
            return Err(Box::new(parts));
        }
        let handler = (self.factory)();
        let params = message.get("params");
        let schema = match (method, params.and_then(|p| p.get("name"))) {
            ("tools/call", Some(Value::String(name))) => {
                handler.get_tool(name).map(|tool| tool.input_schema)
            }
            _ => None,
        };
        if !standard_headers::agree(&parts.headers, method, params, schema.as_deref()) {
            return Err(Box::new(parts));
        }
        let Some((id, request)) = typed_request(message, &version) else {
            return Err(Box::new(parts));
        };
        Ok(self.runner().run(parts, id, request, handler))
    }

    fn serve_call(
        &self,
        parts: Parts,
        bytes: &[u8],
    ) -> Result<BoxFuture<'static, Response>, Box<Parts>> {
        let Some(version) = stateless_version(&parts.headers) else {
            return Err(Box::new(parts));
        };
        let says_call = parts
            .headers
            .get("mcp-method")
            .is_some_and(|method| method == "tools/call");
        if !says_call || super::jsonrpc::nesting_exceeds(bytes, super::jsonrpc::MAX_DEPTH) {
            return Err(Box::new(parts));
        }
        let Ok(call) = serde_json::from_slice::<PlainCall>(bytes) else {
            return Err(Box::new(parts));
        };
        if call.jsonrpc != "2.0" || call.method != "tools/call" {
            return Err(Box::new(parts));
        }
        let handler = (self.factory)();
        let PlainParams {
            name,
            arguments,
            meta,
            input_responses,
            request_state,
        } = call.params;
        let schema = handler.get_tool(&name).map(|tool| tool.input_schema);
        let agree = standard_headers::agree_with(
            &parts.headers,
            "tools/call",
            Some(&name),
            arguments.as_ref(),
            schema.as_deref(),
        );
        if !agree {
            return Err(Box::new(parts));
        }
        // As `plain_call` builds it from a `Value`, and rmcp's own parse would.
        let mut params = rmcp::model::CallToolRequestParams::new(name);
        params.arguments = arguments;
        params.input_responses = input_responses.map(|map| map.into_iter().collect());
        params.request_state = request_state;
        let meta = meta.map(RequestMetaObject::from).unwrap_or_default();
        if meta.protocol_version().as_ref() != Some(&version)
            || !meta.missing_required_keys(&version).is_empty()
        {
            return Err(Box::new(parts));
        }
        // Described once it is sure to be served here (a body sent back is described by the
        // gate).
        if crate::telemetry::exporting() {
            crate::telemetry::describe_request(
                "tools/call",
                Some(&params.name),
                Some(&call.id),
                Some(&meta),
            );
        }
        let (id, runner) = (call.id, self.runner());
        let call = PlainToolCall {
            parts,
            params,
            meta,
        };
        let Some(pass) = &self.pass else {
            return Ok(runner.run_call(id, call, handler));
        };
        match pass.pass(call) {
            Ok(passing) => Ok(Box::pin(async move {
                let message = match passing.await {
                    Passed::Answered(response) => {
                        ServerJsonRpcMessage::response(ServerResult::from(response), id)
                    }
                    Passed::Refused(error) => ServerJsonRpcMessage::error(error, Some(id)),
                    Passed::Relayed(result) => return runner.answer_relayed(&id, &result),
                    Passed::Handler(call) => return runner.run_call(id, *call, handler).await,
                };
                runner.answer(message).await
            })),
            Err(back) => Ok(runner.run_call(id, *back, handler)),
        }
    }
}

/// Runs a request's handler and answers it: the settings of the endpoint's fast path.
struct Runner {
    peer: Peer<RoleServer>,
    json_response: bool,
    keep_alive: Option<Duration>,
    shutdown: CancellationToken,
}

impl Runner {
    /// Run `request` through `handler` in the request's own task and answer it.
    fn run<S: ServerHandler + Send + 'static>(
        self,
        parts: Parts,
        id: RequestId,
        mut request: ClientRequest,
        handler: S,
    ) -> BoxFuture<'static, Response> {
        // As rmcp builds the context of a request it serves: the HTTP head in the request's
        // extensions, then `_meta` and the extensions moved into the context.
        request.extensions_mut().insert(parts);
        let mut meta = RequestMetaObject::new();
        std::mem::swap(&mut meta, request.get_meta_mut());
        let mut extensions = Extensions::new();
        std::mem::swap(&mut extensions, request.extensions_mut());
        let outbox = Outbox::new();
        extensions.insert(outbox.clone());
        let ct = CancellationToken::new();
        let mut context = RequestContext::new(id.clone(), self.peer);
        context.ct = ct.clone();
        context.meta = meta;
        context.extensions = extensions;
        let handling: BoxFuture<'static, ServerJsonRpcMessage> = Box::pin(async move {
            match handler.handle_request(request, context).await {
                Ok(result) => ServerJsonRpcMessage::response(result, id),
                Err(error) => {
                    tracing::debug!(%id, code = error.code.0, message = %error.message, "error answer");
                    ServerJsonRpcMessage::error(error, Some(id))
                }
            }
        });
        let reply = Reply {
            handling: Some(handling),
            outbox,
            end: Some(ct.drop_guard()),
            result: None,
            keep_alive: self.keep_alive,
            shutdown: self.shutdown,
        };
        Box::pin(reply.respond(self.json_response))
    }

    /// [`Runner::run`] for a checked `tools/call`, built as rmcp's typed request (`_meta` in
    /// the request's extensions, as rmcp's own parse puts it).
    fn run_call<S: ServerHandler + Send + 'static>(
        self,
        id: RequestId,
        call: PlainToolCall,
        handler: S,
    ) -> BoxFuture<'static, Response> {
        let PlainToolCall {
            parts,
            params,
            meta,
        } = call;
        let mut request = rmcp::model::CallToolRequest::new(params);
        if !meta.is_empty() {
            request.extensions.insert(meta);
        }
        self.run(parts, id, ClientRequest::CallToolRequest(request), handler)
    }

    /// Answer with `message`, made without the handler: JSON, or one event without
    /// `json_response`.
    fn answer(self, message: ServerJsonRpcMessage) -> impl Future<Output = Response> + use<> {
        let reply = Reply {
            handling: Some(Box::pin(std::future::ready(message))),
            outbox: Outbox::new(),
            end: None,
            result: None,
            keep_alive: self.keep_alive,
            shutdown: self.shutdown,
        };
        reply.respond(self.json_response)
    }
}

impl Runner {
    /// Answer request `id` with `result` as the text it is: JSON, or one event without
    /// `json_response`.
    fn answer_relayed(self, id: &RequestId, result: &crate::RawToolResult) -> Response {
        let one_event = (!self.json_response).then_some((self.keep_alive, &self.shutdown));
        super::pass_through::relayed_response(id, result, one_event)
    }
}

/// The version of a request for the fast path: exactly one `MCP-Protocol-Version`, a known
/// version from 2026-07-28 on, the media types rmcp asks for, and no session header.
fn stateless_version(headers: &HeaderMap) -> Option<ProtocolVersion> {
    if headers.contains_key(SESSION) || !accepts_json_and_sse(headers) || !sends_json(headers) {
        return None;
    }
    let mut values = headers.get_all(PROTOCOL_VERSION).iter();
    let value = values.next()?.to_str().ok()?;
    if values.next().is_some() {
        return None;
    }
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|known| known.as_str() == value)
        .filter(|known| !crate::Revision::of(known).has_sessions())
        .cloned()
}

/// `Accept` names both media types, with no parameters (anything fancier goes to rmcp,
/// which reads quality values).
pub(crate) fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(http::header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for range in value.split(',') {
            let range = range.trim();
            if range.contains(';') || range.contains('"') {
                return false;
            }
            json |= range.eq_ignore_ascii_case(JSON);
            sse |= range.eq_ignore_ascii_case(EVENT_STREAM);
        }
    }
    json && sse
}

pub(crate) fn sends_json(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(http::header::CONTENT_TYPE).iter();
    let Some(Ok(value)) = values.next().map(|value| value.to_str()) else {
        return false;
    };
    values.next().is_none()
        && value
            .split_once(';')
            .map_or(value, |(essence, _)| essence)
            .trim()
            .eq_ignore_ascii_case(JSON)
}

/// The body as rmcp's typed request, when it is a request whose `_meta` names `version` and
/// carries the client's capabilities, and which parses as its method's request type.
fn typed_request(message: Value, version: &ProtocolVersion) -> Option<(RequestId, ClientRequest)> {
    let id = RequestId::deserialize(message.get("id")?).ok()?;
    let request = parse_request(message)?;
    let meta = request.get_meta();
    (meta.protocol_version().as_ref() == Some(version)
        && meta.missing_required_keys(version).is_empty())
    .then_some((id, request))
}

/// rmcp's `ClientRequest` is an untagged enum, so parsing one tries its variants in turn, and a
/// request's `params` are parsed through a flattened helper that buffers them first; the
/// common calls are built as their own variant directly. A body that does not parse as its
/// method's type returns `None` (rmcp then decides what it is).
fn parse_request(message: Value) -> Option<ClientRequest> {
    use rmcp::model::ListToolsRequest;
    let method = message.get("method")?.as_str()?.to_owned();
    let request = match method.as_str() {
        "tools/call" => match plain_call(message) {
            Ok(call) => ClientRequest::CallToolRequest(call),
            Err(message) => ClientRequest::deserialize(message).ok()?,
        },
        "tools/list" => {
            ClientRequest::ListToolsRequest(ListToolsRequest::deserialize(message).ok()?)
        }
        _ => ClientRequest::deserialize(message).ok()?,
    };
    // A body that only parses as rmcp's catch-all is not what its method says.
    (request.method() == method && !matches!(request, ClientRequest::CustomRequest(_)))
        .then_some(request)
}

/// A `tools/call` whose params hold only the fields rmcp knows, each of its type, built as
/// rmcp's own parse builds it (`_meta` goes to the request's extensions, not to the params);
/// anything else is handed back for rmcp's parse.
fn plain_call(mut message: Value) -> Result<rmcp::model::CallToolRequest, Value> {
    use rmcp::model::{CallToolRequest, CallToolRequestParams};
    let Some(Value::Object(params)) = message.get_mut("params") else {
        return Err(message);
    };
    let plain = params.get("name").is_some_and(Value::is_string)
        && params.iter().all(|(key, value)| match key.as_str() {
            "name" => value.is_string(),
            "requestState" => value.is_string() || value.is_null(),
            "arguments" | "_meta" | "inputResponses" => value.is_object() || value.is_null(),
            _ => false,
        });
    if !plain {
        return Err(message);
    }
    let mut take = |key: &str| params.remove(key).unwrap_or(Value::Null);
    let name = match take("name") {
        Value::String(name) => name,
        _ => unreachable!("a plain tools/call has a name, checked above"),
    };
    let (arguments, meta, responses, state) = (
        take("arguments"),
        take("_meta"),
        take("inputResponses"),
        take("requestState"),
    );
    let object = |value: Value| match value {
        Value::Object(map) => Some(map),
        _ => None,
    };
    let mut params = CallToolRequestParams::new(name);
    params.arguments = object(arguments);
    params.input_responses = object(responses).map(|map| map.into_iter().collect());
    params.request_state = match state {
        Value::String(state) => Some(state),
        _ => None,
    };
    let mut call = CallToolRequest::new(params);
    if let Some(meta) = object(meta) {
        call.extensions.insert(RequestMetaObject::from(meta));
    }
    Ok(call)
}

/// The HTTP status of a terminal message, as rmcp maps it on this path.
fn status_of(message: &ServerJsonRpcMessage) -> http::StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return http::StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => http::StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => http::StatusCode::NOT_FOUND,
        _ => http::StatusCode::OK,
    }
}

fn json_response(message: &ServerJsonRpcMessage, status: http::StatusCode) -> Response {
    match super::answer_json::to_vec(message) {
        Ok(body) => (status, [(http::header::CONTENT_TYPE, JSON)], body).into_response(),
        Err(error) => {
            tracing::error!(%error, "could not serialise an answer");
            http::StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// One SSE event holding `message`.
fn event(message: &ServerJsonRpcMessage) -> Bytes {
    let mut bytes = b"data: ".to_vec();
    if let Err(error) = super::answer_json::to_writer(&mut bytes, message) {
        tracing::error!(%error, "could not serialise a message");
        return Bytes::new();
    }
    bytes.extend_from_slice(b"\n\n");
    bytes.into()
}

/// A request being answered: the handler's future, what it sends meanwhile, and the guard that
/// cancels the request's token if the answer is dropped before the handler finished (the
/// client went away).
struct Reply {
    handling: Option<BoxFuture<'static, ServerJsonRpcMessage>>,
    outbox: Arc<Outbox>,
    end: Option<tokio_util::sync::DropGuard>,
    /// The handler's result, sent after whatever it queued before finishing.
    result: Option<ServerJsonRpcMessage>,
    keep_alive: Option<Duration>,
    shutdown: CancellationToken,
}

impl Drop for Reply {
    fn drop(&mut self) {
        self.outbox.discard();
    }
}

impl Reply {
    /// Run the handler until it finishes or sends something first: a result with nothing
    /// before it is one JSON answer (or one event, without `json_response`); anything else
    /// opens the stream.
    async fn respond(mut self, json: bool) -> Response {
        let shutdown = self.shutdown.clone();
        let first = tokio::select! {
            first = std::future::poll_fn(|cx| self.poll_first(cx)) => first,
            () = shutdown.cancelled() => {
                return http::StatusCode::SERVICE_UNAVAILABLE.into_response();
            }
        };
        if let Some(message) = first {
            let status = status_of(&message);
            if json || status != http::StatusCode::OK {
                return json_response(&message, status);
            }
            self.result = Some(message);
        }
        self.into_stream()
    }

    /// `Some(result)` when the handler finished with nothing queued; `None` once a message is
    /// queued (the result, if any, is kept for after it).
    fn poll_first(&mut self, cx: &mut Context<'_>) -> Poll<Option<ServerJsonRpcMessage>> {
        if let Some(handling) = self.handling.as_mut()
            && let Poll::Ready(message) = handling.as_mut().poll(cx)
        {
            self.finished();
            if self.outbox.is_empty() {
                return Poll::Ready(Some(message));
            }
            self.result = Some(message);
            return Poll::Ready(None);
        }
        if self.outbox.is_empty() {
            // Registers for the wake-up of a message sent from elsewhere.
            match self.outbox.poll_next(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(_) => unreachable!("the outbox was empty"),
            }
        } else {
            Poll::Ready(None)
        }
    }

    /// The handler is done: what it queued goes out, nothing sent later does (a task body that
    /// outlives the request, say).
    fn finished(&mut self) {
        self.handling = None;
        self.outbox.close();
        if let Some(end) = self.end.take() {
            end.disarm();
        }
    }

    fn into_stream(self) -> Response {
        let keep_alive = self.keep_alive;
        let shutdown = self.shutdown.clone();
        SseBody::respond(self, keep_alive, &shutdown)
    }
}

/// The SSE body's events: what the handler queued, in order, then its result.
impl Events for Reply {
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Some(handling) = self.handling.as_mut()
            && let Poll::Ready(message) = handling.as_mut().poll(cx)
        {
            self.finished();
            self.result = Some(message);
        }
        if let Poll::Ready(message) = self.outbox.poll_next(cx) {
            return Poll::Ready(Some(event(&message)));
        }
        if self.handling.is_none() {
            return Poll::Ready(self.result.take().map(|message| event(&message)));
        }
        Poll::Pending
    }

    fn ended(&self) -> bool {
        self.handling.is_none() && self.result.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard_headers::tests::headers;

    const PLAIN: &[(&str, &str)] = &[
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2026-07-28"),
    ];

    #[test]
    fn only_plain_2026_requests_take_the_fast_path() {
        assert_eq!(
            stateless_version(&headers(PLAIN)),
            Some(ProtocolVersion::V_2026_07_28)
        );
        let with = |extra: &[(&str, &str)], drop: &str| {
            let mut pairs: Vec<_> = PLAIN.iter().copied().filter(|(k, _)| *k != drop).collect();
            pairs.extend_from_slice(extra);
            stateless_version(&headers(&pairs))
        };
        assert_eq!(
            with(
                &[("content-type", "application/json; charset=utf-8")],
                "content-type"
            ),
            Some(ProtocolVersion::V_2026_07_28)
        );
        for (extra, dropped) in [
            (&[][..], "mcp-protocol-version"),
            (
                &[("mcp-protocol-version", "2025-11-25")],
                "mcp-protocol-version",
            ),
            (
                &[("mcp-protocol-version", "2099-01-01")],
                "mcp-protocol-version",
            ),
            (&[("mcp-protocol-version", "2026-07-28")], ""),
            (&[("mcp-session-id", "abc")], ""),
            (&[("accept", "application/json")], "accept"),
            (
                &[("accept", "application/json;q=0, text/event-stream")],
                "accept",
            ),
            (&[], "content-type"),
            (&[("content-type", "text/plain")], "content-type"),
        ] {
            assert_eq!(with(extra, dropped), None, "{extra:?} without {dropped}");
        }
    }

    #[test]
    fn a_plain_call_is_built_as_rmcps_parse_builds_it() {
        use rmcp::model::CallToolRequest;
        for body in [
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "t"}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "t", "arguments": {"a": [1, {"b": null}]},
                    "_meta": {"progressToken": 3, "x": {"y": 1}},
                    "inputResponses": {"confirm": {"action": "accept"}},
                    "requestState": "s"}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "t", "arguments": null, "_meta": null,
                    "inputResponses": null, "requestState": null}}),
        ] {
            let ours = plain_call(body.clone()).expect("plain");
            let theirs = CallToolRequest::deserialize(&body).expect("rmcp parses it");
            assert_eq!(ours.params, theirs.params, "{body}");
            assert_eq!(
                ours.extensions.get::<RequestMetaObject>(),
                theirs.extensions.get::<RequestMetaObject>(),
                "{body}"
            );
            assert_eq!(ours.method, theirs.method);
        }
        for odd in [
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "t", "task": {}}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": 7}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "t", "requestState": 5}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}),
        ] {
            assert_eq!(
                plain_call(odd.clone()).unwrap_err(),
                odd,
                "handed back whole"
            );
        }
    }

    #[test]
    fn requests_parse_as_their_own_method_or_not_at_all() {
        let meta = serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let call = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "t", "arguments": {"a": 1}, "_meta": meta}});
        let (id, request) = typed_request(call, &ProtocolVersion::V_2026_07_28).unwrap();
        assert_eq!(id, RequestId::Number(7));
        let ClientRequest::CallToolRequest(call) = &request else {
            panic!("a tools/call");
        };
        assert_eq!(call.params.name, "t");
        assert!(call.params.meta.is_none(), "_meta is kept with the request");
        assert!(request.get_meta().protocol_version().is_some());
        for bad in [
            // no name, so not a tools/call rmcp knows
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"_meta": meta}}),
            // no capabilities in _meta
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
            // another version in _meta
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25",
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
            // a method rmcp does not know
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "x/y",
                "params": {"_meta": meta}}),
            // a notification
            serde_json::json!({"jsonrpc": "2.0", "method": "tools/list",
                "params": {"_meta": meta}}),
        ] {
            assert!(
                typed_request(bad.clone(), &ProtocolVersion::V_2026_07_28).is_none(),
                "{bad}"
            );
        }
    }

    #[tokio::test]
    async fn a_plain_request_is_served_here_and_answered_by_the_handler() {
        /// Has the tools capability and no tools.
        struct Bare;
        impl ServerHandler for Bare {
            fn get_info(&self) -> rmcp::model::ServerConfig {
                rmcp::model::ServerConfig::new(
                    rmcp::model::ServerCapabilities::builder()
                        .enable_tools()
                        .build(),
                )
            }
        }
        let path = Stateless::new(Arc::new(|| Bare), true, None, CancellationToken::new(), None);
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}});
        let request = |extra: &[(&str, &str)]| {
            let mut builder = http::Request::builder();
            for (name, value) in PLAIN.iter().chain(extra) {
                builder = builder.header(*name, *value);
            }
            builder.body(()).unwrap().into_parts().0
        };
        let Ok(reply) = path.serve(request(&[("mcp-method", "tools/list")]), body.clone()) else {
            panic!("a plain 2026-07-28 request takes the fast path");
        };
        let response = reply.await;
        assert_eq!(response.status(), http::StatusCode::OK);
        assert_eq!(response.headers()["content-type"], JSON);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(answer["id"], 3);
        assert_eq!(answer["result"]["tools"], serde_json::json!([]));
        // Without the Mcp-Method header it goes on to rmcp, untouched.
        let Err(parts) = path.serve(request(&[]), body.clone()) else {
            panic!("a request without its standard headers is rmcp's to refuse");
        };
        assert!(parts.headers.contains_key("mcp-protocol-version"));
    }
}
