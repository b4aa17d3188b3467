//! What every request to `/mcp` passes before rmcp sees it: the body read within a size and a
//! time limit and checked ([`super::jsonrpc`]), and the 2025-11-25 session rules rmcp does not
//! keep itself: a cap on open sessions, each session usable only by the principal that opened
//! it, one request per id in flight per session, and 404 for a session that does not exist.
//! Plain 2026-07-28 requests then go to the fast path (`stateless`), plain messages to an open
//! 2025-11-25 session to `session_post`, both from the body parsed here; the rest to rmcp.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::transport::jsonrpc::jsonrpc_error;
use crate::transport::LeanSessions;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::response::Response;

use crate::transport::jsonrpc::{self, Message};
use crate::transport::session_post::SessionPost;
use crate::transport::stateless::FastPath;
use crate::util::lock;

use crate::principal::Principal;

const SESSION_HEADER: &str = "mcp-session-id";

/// The gate's state, one per MCP endpoint.
pub(super) struct Gate {
    pub(super) sessions: Arc<LeanSessions>,
    pub(super) max_sessions: usize,
    pub(super) max_body_bytes: usize,
    pub(super) body_timeout: Duration,
    /// Who opened each session we saw opened.
    owners: Mutex<HashMap<String, Option<Principal>>>,
    /// (session, request id) of the requests in flight.
    in_flight: Arc<Mutex<HashSet<(String, String)>>>,
    /// Serves 2026-07-28 requests without rmcp's per-request machinery (see `stateless`).
    fast: Option<Arc<dyn FastPath>>,
    /// Serves messages to open 2025-11-25 sessions from the parsed body (see `session_post`).
    session_post: SessionPost,
}

impl Gate {
    pub(super) fn new(
        sessions: Arc<LeanSessions>,
        options: &super::HttpOptions,
        fast: Option<Arc<dyn FastPath>>,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            fast,
            session_post: SessionPost {
                keep_alive: options.sse_keep_alive,
                shutdown,
            },
            sessions,
            max_sessions: options.max_sessions,
            max_body_bytes: options.max_body_bytes,
            body_timeout: options.body_read_timeout,
            owners: Mutex::default(),
            in_flight: Arc::default(),
        })
    }

    /// Whether the session is known to have been opened by someone else.
    fn foreign(&self, session: &str, principal: Option<&Principal>) -> bool {
        lock(&self.owners)
            .get(session)
            .is_some_and(|owner| owner.as_ref() != principal)
    }

    async fn record_owner(&self, session: String, principal: Option<Principal>) {
        let mut stale = Vec::new();
        let len = lock(&self.owners).len();
        if len > 2 * self.max_sessions.max(16) {
            // Forget the owners of sessions rmcp has closed since.
            stale.extend(
                lock(&self.owners)
                    .keys()
                    .filter(|id| !self.sessions.contains(id))
                    .cloned(),
            );
        }
        let mut owners = lock(&self.owners);
        for id in stale {
            owners.remove(&id);
        }
        owners.insert(session, principal);
    }
}

fn no_such_session() -> Response {
    jsonrpc_error(
        http::StatusCode::NOT_FOUND,
        -32001,
        "Session not found: it expired or was closed; start a new one with initialize",
        None,
    )
}

/// Removes a request from the in-flight set when its response body is finished or dropped.
struct InFlight {
    set: Arc<Mutex<HashSet<(String, String)>>>,
    key: (String, String),
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&self.set).remove(&self.key);
    }
}

/// A response body that holds `guard` (an [`InFlight`], an [`OperationTimer`]) until the body
/// ends or is dropped.
struct Holding<G> {
    inner: Body,
    _guard: G,
}

impl<G: Send + Unpin + 'static> HttpBody for Holding<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The rmcp service behind the gate, shared (cloning rmcp's service copies its settings).
pub(super) type Rmcp<S> = Arc<rmcp::transport::StreamableHttpService<S, LeanSessions>>;

/// `/mcp`: the gate, then the fast path or rmcp.
pub(super) struct Endpoint<S> {
    pub(super) gate: Arc<Gate>,
    pub(super) rmcp: Rmcp<S>,
}

impl<S> Clone for Endpoint<S> {
    fn clone(&self) -> Self {
        Self {
            gate: self.gate.clone(),
            rmcp: self.rmcp.clone(),
        }
    }
}

impl<S> tower::Service<Request> for Endpoint<S>
where
    S: rmcp::ServerHandler + Send + 'static,
{
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = futures::future::BoxFuture<'static, Result<Response, std::convert::Infallible>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let (gate, rmcp) = (self.gate.clone(), self.rmcp.clone());
        if crate::telemetry::exporting() && request.method() == http::Method::POST {
            let header = |name: &str| {
                request
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let span = crate::telemetry::request_span(
                header("mcp-protocol-version").as_deref(),
                header(SESSION_HEADER).as_deref(),
            );
            // Who is calling, by kind only: never the token, never the name.
            let kind = match request.extensions().get::<crate::principal::PrincipalKind>() {
                Some(kind) => kind.0,
                None if request.extensions().get::<Principal>().is_some() => "signed-in",
                None => "anonymous",
            };
            span.record("mcp.principal.kind", kind);
            let mut request = request;
            request
                .extensions_mut()
                .insert(crate::telemetry::RequestSpan(span.clone()));
            let served = Self::serve(gate, rmcp, request);
            return Box::pin(tracing::Instrument::instrument(
                async move {
                    let response = served.await;
                    if let Ok(response) = &response
                        && (response.status().is_client_error()
                            || response.status().is_server_error())
                    {
                        crate::telemetry::record_failure(
                            &tracing::Span::current(),
                            response.status().as_str(),
                        );
                    }
                    response
                },
                span,
            ));
        }
        Self::serve(gate, rmcp, request)
    }
}

impl<S> Endpoint<S>
where
    S: rmcp::ServerHandler + Send + 'static,
{
    fn serve(
        gate: Arc<Gate>,
        rmcp: Rmcp<S>,
        request: Request,
    ) -> futures::future::BoxFuture<'static, Result<Response, std::convert::Infallible>> {
        Box::pin(async move {
            let next = Next(&rmcp);
            if !crate::metrics::enabled() {
                return Ok(gate_request(gate, request, next, &mut None).await);
            }
            let started = std::time::Instant::now();
            let revision = crate::metrics::revision_label(
                request
                    .headers()
                    .get("mcp-protocol-version")
                    .and_then(|v| v.to_str().ok()),
            );
            let mut method = None;
            let response = gate_request(gate, request, next, &mut method).await;
            Ok(match method {
                Some(method) => timed(response, started, method, revision),
                None => response,
            })
        })
    }
}

/// Give the head of a request its own storage. hyper's header values and URI are slices of the
/// connection's read buffer, and rmcp keeps the head in the request's extensions for as long
/// as the call runs: a call held open for a person's answer would keep that whole buffer (8 KiB
/// or more) alive while hyper allocates another for the next read.
fn detach(parts: &mut http::request::Parts) {
    for value in parts.headers.values_mut() {
        let copy = http::HeaderValue::from_bytes(value.as_bytes()).map(|mut copy| {
            copy.set_sensitive(value.is_sensitive());
            copy
        });
        if let Ok(copy) = copy {
            *value = copy;
        }
    }
    if let Ok(uri) = http::Uri::try_from(parts.uri.to_string()) {
        parts.uri = uri;
    }
}

/// Name the request's span after its method and target, and continue the trace its `_meta`
/// names.
fn describe(message: &Message, value: &serde_json::Value) {
    let (method, id) = match message {
        Message::Request { method, id } => (method.as_str(), Some(id)),
        Message::Notification { method } => (method.as_str(), None),
        Message::Response => return,
    };
    let params = value.get("params");
    let field = |key: &str| params.and_then(|p| p.get(key)).and_then(|v| v.as_str());
    let target = match method {
        "tools/call" | "prompts/get" => field("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => field("uri"),
        _ => None,
    };
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.as_object());
    crate::telemetry::describe_request(
        method,
        target,
        id.map(|id| id as &dyn std::fmt::Display),
        meta,
    );
}

/// Hands a request on to rmcp.
struct Next<'a, S>(&'a Rmcp<S>);

impl<S: rmcp::ServerHandler + Send + 'static> Next<'_, S> {
    async fn run(&self, request: Request) -> Response {
        // Boxed: rmcp's future is large, and every request's future (a fast one's too) would
        // otherwise hold its space and be moved with it.
        Box::pin(self.0.handle(request)).await.map(Body::new)
    }
}

/// The body of a POST, whole, within the size cap and the body timeout; the refusal (413 or
/// 408) otherwise.
async fn read_body(gate: &Gate, body: Body) -> Result<Bytes, Response> {
    let limit = gate.max_body_bytes;
    // A small body usually came with the head: take it without arming the timer.
    let mut reading = std::pin::pin!(axum::body::to_bytes(body, limit));
    let read = match futures::FutureExt::now_or_never(reading.as_mut()) {
        Some(read) => Ok(read),
        None => tokio::time::timeout(gate.body_timeout, reading).await,
    };
    match read {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err({
            crate::metrics::refused(crate::metrics::Reason::Size);
            jsonrpc_error(
                http::StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                format!("request body is larger than {limit} bytes"),
                None,
            )
        }),
        Err(_) => Err({
            crate::metrics::refused(crate::metrics::Reason::BodyTimeout);
            jsonrpc_error(
                http::StatusCode::REQUEST_TIMEOUT,
                -32600,
                format!(
                    "the request body did not arrive within {} s",
                    gate.body_timeout.as_secs()
                ),
                None,
            )
        }),
    }
}

/// `response` with a body that records the operation (`method` in `revision`) once it ends:
/// an answer streamed as SSE lasts as long as its stream.
fn timed(
    response: Response,
    started: std::time::Instant,
    method: &'static str,
    revision: &'static str,
) -> Response {
    let error = crate::metrics::status_error(response.status());
    let (parts, body) = response.into_parts();
    Response::from_parts(
        parts,
        Body::new(Holding {
            inner: body,
            _guard: OperationTimer {
                started,
                method,
                revision,
                error,
            },
        }),
    )
}

/// Records an operation when dropped (its answer ended, or the client went away).
struct OperationTimer {
    started: std::time::Instant,
    method: &'static str,
    revision: &'static str,
    error: Option<&'static str>,
}

impl Drop for OperationTimer {
    fn drop(&mut self) {
        crate::metrics::operation(
            self.method,
            self.revision,
            self.error,
            self.started.elapsed(),
        );
    }
}

/// Whether the request's `MCP-Protocol-Version` names (as a date) a revision without sessions.
fn names_a_stateless_revision(headers: &http::HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .is_some_and(|version| {
            let date = version.len() == 10
                && version.bytes().enumerate().all(|(at, byte)| match at {
                    4 | 7 => byte == b'-',
                    _ => byte.is_ascii_digit(),
                });
            date && !crate::Revision::of_date(version).has_sessions()
        })
}

/// What a POST to `/mcp` becomes, decided once from its headers and checked body
/// ([`Post::decide`]), then carried out ([`Post::serve`]).
enum Post {
    /// Refused with this answer; nothing reaches a handler.
    Refused(Response),
    /// Served by the stateless fast path: its reply.
    Fast(futures::future::BoxFuture<'static, Response>),
    /// A message to a 2025-11-25 session this endpoint serves itself.
    InSession {
        session: String,
        message: Box<rmcp::model::ClientJsonRpcMessage>,
        parts: Box<http::request::Parts>,
        in_flight: Option<InFlight>,
    },
    /// Everything else, for rmcp: `opening` when it may open a session (no session header).
    ToRmcp {
        parts: Box<http::request::Parts>,
        bytes: Bytes,
        in_flight: Option<InFlight>,
        opening: bool,
    },
}

impl Post {
    /// Decide what the POST of `parts` and `bytes`, in `session` if it names one, becomes;
    /// `method` is set to its operation's label once the body is parsed.
    fn decide(
        gate: &Gate,
        mut parts: http::request::Parts,
        bytes: Bytes,
        session: Option<&str>,
        method: &mut Option<&'static str>,
    ) -> Post {
        // A plain 2026-07-28 `tools/call` is parsed once, into its typed request.
        if session.is_none()
            && let Some(fast) = &gate.fast
        {
            match fast.serve_call(parts, &bytes) {
                Ok(reply) => {
                    *method = Some(crate::metrics::method_label("tools/call"));
                    return Post::Fast(reply);
                }
                Err(back) => parts = *back,
            }
        }
        let (message, value) = match jsonrpc::check(&bytes) {
            Ok(checked) => checked,
            Err(error) => {
                return Post::Refused(jsonrpc_error(
                    http::StatusCode::BAD_REQUEST,
                    error.code,
                    error.message,
                    error.id,
                ));
            }
        };
        *method = match &message {
            Message::Request { method, .. } | Message::Notification { method } => {
                Some(crate::metrics::method_label(method))
            }
            Message::Response => None,
        };
        if crate::telemetry::exporting() {
            describe(&message, &value);
        }
        if matches!(&message, Message::Request { method, .. } if method == "tools/call")
            && value["params"]["task"].is_object()
        {
            // On 2025-11-25 a task is the requester's choice: the layer reads it here.
            parts.extensions.insert(crate::revision::TaskAsked);
        }
        let Some(session) = session else {
            // No session: the fast path, the session cap, or rmcp.
            return Post::sessionless(gate, parts, bytes, &message, value);
        };
        let Message::Request { id, .. } = &message else {
            return Post::in_session(gate, parts, bytes, session, value, None);
        };
        // One request per id in flight in a session.
        let key = (session.to_owned(), id.to_string());
        if !lock(&gate.in_flight).insert(key.clone()) {
            return Post::Refused(jsonrpc_error(
                http::StatusCode::BAD_REQUEST,
                -32600,
                format!("a request with id {id} is already in flight in this session"),
                Some(id.clone()),
            ));
        }
        let in_flight = Some(InFlight {
            set: gate.in_flight.clone(),
            key,
        });
        Post::in_session(gate, parts, bytes, session, value, in_flight)
    }

    /// A message without a session: served by the fast path if it takes it, refused when it
    /// would open one session too many, else rmcp's.
    fn sessionless(
        gate: &Gate,
        parts: http::request::Parts,
        bytes: Bytes,
        message: &Message,
        value: serde_json::Value,
    ) -> Post {
        let mut parts = parts;
        if let (Message::Request { .. }, Some(fast)) = (message, &gate.fast) {
            match fast.serve(parts, value) {
                Ok(reply) => return Post::Fast(reply),
                Err(back) => parts = *back,
            }
        }
        if let Message::Request { method, id } = message
            && method == "initialize"
            && gate.sessions.len() >= gate.max_sessions
        {
            crate::metrics::refused(crate::metrics::Reason::Sessions);
            return Post::Refused(jsonrpc_error(
                http::StatusCode::SERVICE_UNAVAILABLE,
                -32000,
                format!(
                    "this server holds its maximum of {} open sessions; try again later",
                    gate.max_sessions
                ),
                Some(id.clone()),
            ));
        }
        detach(&mut parts);
        Post::ToRmcp {
            parts: Box::new(parts),
            bytes,
            in_flight: None,
            opening: true,
        }
    }

    /// A message in `session`: served here when this endpoint serves that session and the
    /// message is one of its own, else rmcp's.
    fn in_session(
        gate: &Gate,
        mut parts: http::request::Parts,
        bytes: Bytes,
        session: &str,
        value: serde_json::Value,
        in_flight: Option<InFlight>,
    ) -> Post {
        detach(&mut parts);
        let typed = gate
            .sessions
            .contains(session)
            .then(|| gate.session_post.message(&parts.headers, value))
            .flatten();
        match typed {
            Some(message) => Post::InSession {
                session: session.to_owned(),
                message: Box::new(message),
                parts: Box::new(parts),
                in_flight,
            },
            None => Post::ToRmcp {
                parts: Box::new(parts),
                bytes,
                in_flight,
                opening: false,
            },
        }
    }

    /// Carry the decision out: the answer, with a request's in-flight entry held for as long
    /// as its answer streams, and the owner of a session it opened recorded.
    async fn serve<S: rmcp::ServerHandler + Send + 'static>(
        self,
        gate: &Gate,
        next: Next<'_, S>,
        principal: Option<Principal>,
    ) -> Response {
        let (response, in_flight) = match self {
            Post::Refused(response) => return response,
            Post::Fast(reply) => return reply.await,
            Post::InSession {
                session,
                message,
                parts,
                in_flight,
            } => (
                Box::pin(
                    gate.session_post
                        .serve(&gate.sessions, &session, *message, *parts),
                )
                .await,
                in_flight,
            ),
            Post::ToRmcp {
                parts,
                bytes,
                in_flight,
                opening,
            } => {
                let response = next
                    .run(Request::from_parts(*parts, Body::from(bytes)))
                    .await;
                if opening
                    && let Some(id) = response
                        .headers()
                        .get(SESSION_HEADER)
                        .and_then(|v| v.to_str().ok())
                {
                    gate.record_owner(id.to_owned(), principal).await;
                }
                (response, in_flight)
            }
        };
        match in_flight {
            None => response,
            Some(in_flight) => {
                let (parts, body) = response.into_parts();
                Response::from_parts(
                    parts,
                    Body::new(Holding {
                        inner: body,
                        _guard: in_flight,
                    }),
                )
            }
        }
    }
}

/// What every request to `/mcp` passes: a 2026-07-28 request's session header dropped, a
/// session of another caller not found; then a POST decided and served ([`Post`]), a DELETE
/// closing its session, anything else (the GET stream) rmcp's. `method` is set to the
/// operation's label once a POST's body is parsed (a GET stream or a DELETE is not an MCP
/// operation).
async fn gate_request<S: rmcp::ServerHandler + Send + 'static>(
    gate: Arc<Gate>,
    mut request: Request,
    next: Next<'_, S>,
    method: &mut Option<&'static str>,
) -> Response {
    if names_a_stateless_revision(request.headers()) {
        // A 2026-07-28 request belongs to no session: an `Mcp-Session-Id` it carries is
        // ignored, so it neither reaches that session nor lends its owner to anything.
        request.headers_mut().remove(SESSION_HEADER);
    }
    let principal = request.extensions().get::<Principal>().cloned();
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(session) = &session
        && gate.foreign(session, principal.as_ref())
    {
        return no_such_session();
    }
    match *request.method() {
        http::Method::POST => {
            let (parts, body) = request.into_parts();
            let bytes = match read_body(&gate, body).await {
                Ok(bytes) => bytes,
                Err(refused) => return refused,
            };
            Post::decide(&gate, parts, bytes, session.as_deref(), method)
                .serve(&gate, next, principal)
                .await
        }
        http::Method::DELETE => close_session(&gate, request, session, next).await,
        _ => next.run(request).await,
    }
}

/// A DELETE: the session it names closed by rmcp, and forgotten here once it is. rmcp answers
/// a closed session 202; it is answered 204 (No Content), as clients expect of a DELETE that
/// was done (the Python SDK takes only 200 or 204, and logged a failure at every close).
async fn close_session<S: rmcp::ServerHandler + Send + 'static>(
    gate: &Gate,
    request: Request,
    session: Option<String>,
    next: Next<'_, S>,
) -> Response {
    let Some(session) = session else {
        return jsonrpc_error(
            http::StatusCode::BAD_REQUEST,
            -32600,
            "DELETE needs the Mcp-Session-Id header of the session to close",
            None,
        );
    };
    if !gate.sessions.contains(&session) {
        return no_such_session();
    }
    let response = next.run(request).await;
    if response.status().is_success() {
        lock(&gate.owners).remove(&session);
        let mut done = Response::new(Body::empty());
        *done.status_mut() = http::StatusCode::NO_CONTENT;
        return done;
    }
    response
}
