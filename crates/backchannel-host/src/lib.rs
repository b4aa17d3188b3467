//! The host side of two-way MCP, over rmcp's client: a [`Host`] keeps many named MCP
//! connections (stdio or HTTP, either revision) and answers their elicitation, sampling and roots
//! requests through one [`HostHandler`], with each question routed to the call that caused it.
//! Feature `oauth` signs in to servers that need OAuth 2.1 ([`auth`]).
//!
//! The server side, and the vocabulary both sides share ([`backchannel::Revision`],
//! [`backchannel::ListKind`], [`backchannel::LogLevel`]), is the `backchannel` crate.

// rmcp marks sampling, roots and logging deprecated (SEP-2577) although they remain the
// protocol the host answers.
#![warn(missing_docs)]
#![expect(deprecated, reason = "SEP-2577 deprecates what the host answers")]

mod config;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod listening;
mod routes;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientInfo, ClientRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, GetTaskParams, Implementation, InputRequest,
    InputRequests, JsonObject, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestMetaObject,
    RequestParamsMeta as _, Root, ServerResult, TaskPayload, UpdateTaskParams,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, PeerRequestOptions, RequestContext,
    RunningService,
};
#[cfg(not(feature = "oauth"))]
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient};

pub use config::{
    AuthConfig, ConfigError, ConnectionConfig, Declared, HostConfig, MAX_CONFIG_BYTES, Transport,
    file_uri,
};

#[cfg(feature = "oauth")]
pub mod auth;

use backchannel::ListKind;
use listening::{Listening, ListeningOpened};
use routes::{Call, CallTag, Routes, Tagging};

/// What the host application decides when its servers talk back. Every method has a safe
/// default: questions are declined, sampling is refused, notifications are ignored.
pub trait HostHandler: Send + Sync + 'static {
    /// A server asks the person a question. `meta` is the question's `_meta`; `caller` is the
    /// progress token the caller gave the call that is waiting on this question (from its
    /// [`CallContext`]), when the host can tell which call that is.
    fn elicit(
        &self,
        connection: &str,
        request: ElicitRequestParams,
        meta: RequestMetaObject,
        caller: Option<ProgressToken>,
    ) -> impl Future<Output = ElicitResult> + Send {
        let _ = (connection, request, meta, caller);
        async { ElicitResult::new(ElicitationAction::Decline) }
    }

    /// A server asks for the host's model. `caller` is as for [`HostHandler::elicit`].
    fn sample(
        &self,
        connection: &str,
        question: SamplingQuestion,
        caller: Option<ProgressToken>,
    ) -> impl Future<Output = Result<SamplingAnswer, ErrorData>> + Send {
        let _ = (connection, question, caller);
        async {
            Err(ErrorData::invalid_request(
                "this host does not sample",
                None,
            ))
        }
    }

    /// A server asks which folders it may use (`roots/list`). `configured` are the
    /// connection's roots from its configuration, the answer unless the handler knows better;
    /// `caller` is as for [`HostHandler::elicit`].
    fn list_roots(
        &self,
        connection: &str,
        configured: Vec<Root>,
        caller: Option<ProgressToken>,
    ) -> impl Future<Output = Result<Vec<Root>, ErrorData>> + Send {
        let _ = (connection, caller);
        async { Ok(configured) }
    }

    /// Progress of a call, in order: a value not above the last one delivered for the same
    /// call (over all its rounds) is dropped before it gets here. The token is the caller's,
    /// when it gave one. The call's result is returned only after the progress that came
    /// ahead of it has been delivered.
    fn on_progress(&self, connection: &str, progress: ProgressNotificationParam) {
        let _ = (connection, progress);
    }

    /// A log message from a server.
    fn on_log(&self, connection: &str, message: LogMessage) {
        let _ = (connection, message);
    }

    /// A server needs the person to sign in (OAuth, feature `oauth`): show them
    /// `authorization_url` (a link, a browser) and return the URL the browser was sent back to
    /// (the connection's redirect URI with the code). An error ends the sign-in and the
    /// connection fails with it.
    fn authorize(
        &self,
        connection: &str,
        authorization_url: String,
    ) -> impl Future<Output = Result<String, String>> + Send {
        let _ = (connection, authorization_url);
        async { Err("this host cannot sign in to servers".to_owned()) }
    }

    /// A server's tool, prompt or resource list changed.
    fn on_list_changed(&self, connection: &str, kind: ListKind) {
        let _ = (connection, kind);
    }

    /// A resource the host subscribed to changed (`notifications/resources/updated`).
    fn on_resource_updated(&self, connection: &str, uri: &str) {
        let _ = (connection, uri);
    }
}

/// A server's request for the host's model (`sampling/createMessage`), as a handler reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingQuestion {
    /// The system prompt the server asks for, if any.
    pub system_prompt: Option<String>,
    /// The conversation to complete: its text, turn by turn.
    pub messages: Vec<SamplingTurn>,
    /// The most tokens the answer may take.
    pub max_tokens: u32,
}

/// One turn of a [`SamplingQuestion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingTurn {
    /// `true` for the assistant's turns, `false` for the user's.
    pub assistant: bool,
    /// The turn's text (its text parts joined by newlines).
    pub text: String,
}

/// The host's answer to a [`SamplingQuestion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingAnswer {
    /// What the model wrote.
    pub text: String,
    /// Which model wrote it.
    pub model: String,
}

impl From<&CreateMessageRequestParams> for SamplingQuestion {
    fn from(params: &CreateMessageRequestParams) -> Self {
        SamplingQuestion {
            system_prompt: params.system_prompt.clone(),
            messages: params
                .messages
                .iter()
                .map(|message| SamplingTurn {
                    assistant: matches!(message.role, rmcp::model::Role::Assistant),
                    text: message
                        .content
                        .clone()
                        .into_vec()
                        .into_iter()
                        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                        .collect::<Vec<_>>()
                        .join("\n"),
                })
                .collect(),
            max_tokens: params.max_tokens,
        }
    }
}

impl From<SamplingAnswer> for CreateMessageResult {
    fn from(answer: SamplingAnswer) -> Self {
        CreateMessageResult::new(
            rmcp::model::SamplingMessage::assistant_text(answer.text),
            answer.model,
        )
    }
}

/// A log message from a server (`notifications/message`).
#[derive(Debug, Clone, PartialEq)]
pub struct LogMessage {
    /// Its severity.
    pub level: backchannel::LogLevel,
    /// The server's logger name, if it gave one.
    pub logger: Option<String>,
    /// The message (a string or any JSON).
    pub data: serde_json::Value,
    /// The caller's token of the call the message belongs to, when the host can tell (the
    /// connection has one call in flight); `None` otherwise.
    pub caller: Option<ProgressToken>,
}

/// How a tool call (or a prompt, `T` = `GetPromptResult`) left the server
/// ([`Connection::start_tool`], [`Connection::call_round`], [`Connection::prompt_round`]).
#[derive(Debug, Clone)]
pub enum Started<T = CallToolResult> {
    /// The result.
    Done(T),
    /// The server runs the call as this task (tasks extension): its result, and the questions
    /// asked inside it, come by `tasks/get`.
    Task(rmcp::model::Task),
    /// The server asks these questions first, as a 2026-07-28 `input_required` round: only
    /// from [`Connection::call_round`] and [`Connection::prompt_round`], which leave them to
    /// their caller.
    InputRequired {
        /// The questions, by the server's keys.
        input_requests: InputRequests,
        /// The server's state for the retry that answers them.
        request_state: Option<String>,
    },
}

/// A `tools/call` of `params` that asks for a task (2025-11-25: the request's `task` field),
/// which rmcp's typed request cannot carry.
fn task_requested(params: &CallToolRequestParams) -> ClientRequest {
    let mut value = serde_json::to_value(params).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.insert("task".to_owned(), serde_json::json!({}));
    }
    ClientRequest::CustomRequest(rmcp::model::CustomRequest::new("tools/call", Some(value)))
}

/// How far a call is driven here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Drive {
    /// Every question answered through the handler, a task followed to its end.
    ToTheEnd,
    /// Every question answered, a task handed back.
    UntilTask,
    /// One request: questions and tasks handed back.
    OneRound,
}

/// Errors of the host.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The configuration was refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A connection could not be opened.
    #[error("cannot connect to {connection:?}: {message}")]
    Connect {
        /// The connection.
        connection: String,
        /// What went wrong.
        message: String,
    },
    /// No connection has that name.
    #[error("no connection named {0:?}")]
    UnknownConnection(String),
    /// The server answered with an error, or the transport failed.
    #[error("{connection:?}: {message}")]
    Call {
        /// The connection.
        connection: String,
        /// What went wrong.
        message: String,
    },
    /// The server answered the request with a JSON-RPC error (a protocol error: a tool's own
    /// failure is a result with `isError`).
    #[error("{connection:?}: Mcp error: {error}")]
    Refused {
        /// The connection.
        connection: String,
        /// The server's error, as it sent it.
        error: ErrorData,
    },
    /// The server refused the connection's credentials (401, or 403 for a scope it lacks).
    #[error("{connection:?} asks to sign in again")]
    Unauthorized {
        /// The connection.
        connection: String,
        /// The server's `WWW-Authenticate` challenge.
        challenge: String,
    },
    /// The request took longer than the connection's timeout.
    #[error("{connection:?} did not answer within {timeout:?}")]
    Timeout {
        /// The connection.
        connection: String,
        /// The timeout.
        timeout: Duration,
    },
}

/// Values of the caller's context; only the keys the configuration allows enter `_meta`.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    values: BTreeMap<String, serde_json::Value>,
}

impl CallContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a value.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.values.insert(key.into(), value.into());
        self
    }

    /// The `_meta` a request carries: the allowed keys only.
    pub fn meta(&self, allow: &[String]) -> RequestMetaObject {
        let mut meta = RequestMetaObject::default();
        for (key, value) in &self.values {
            if allow.iter().any(|a| a == key) {
                meta.insert(key.clone(), value.clone());
            }
        }
        meta
    }
}

/// The rmcp client handler of one connection: routes everything to the host handler.
struct Routed<H> {
    connection: String,
    client_name: String,
    declared: Declared,
    roots: Vec<Root>,
    handler: Arc<H>,
    /// Which call each request, and so each server message, belongs to.
    routes: Arc<Routes>,
}

impl<H: HostHandler> Routed<H> {
    /// The caller a server's request is for: the call whose HTTP response stream carried it,
    /// else the call its `conversationId` names (a request's progress token), else the one
    /// call in flight, if exactly one is.
    fn caller_of(
        &self,
        extensions: &rmcp::model::Extensions,
        meta: &RequestMetaObject,
    ) -> Option<ProgressToken> {
        if let Some(rmcp::service::InboundStreamOrigin::OutboundRequest(id)) =
            extensions.get::<rmcp::service::InboundStreamOrigin>()
            && let Some(call) = self.routes.call_of_request(id)
        {
            return call.caller.clone();
        }
        if let Some(value) = meta.get("conversationId").cloned()
            && let Ok(token) = serde_json::from_value::<ProgressToken>(value)
            && let Some(call) = self.routes.tagged_token(&token)
        {
            return call.caller.clone();
        }
        let active = self.routes.active.lock().unwrap_or_else(|e| e.into_inner());
        match active.as_slice() {
            [only] => only.caller.clone(),
            _ => None,
        }
    }

    /// A question names its request by the request's progress token (as `conversationId`);
    /// give the handler the caller's token instead of rmcp's.
    fn caller_meta(
        &self,
        mut meta: RequestMetaObject,
        caller: Option<&ProgressToken>,
    ) -> RequestMetaObject {
        if meta.contains_key("conversationId")
            && let Some(caller) = caller
        {
            meta.insert(
                "conversationId".into(),
                serde_json::to_value(caller).unwrap_or_default(),
            );
        }
        meta
    }

    /// Answer one question of an `input_required` round of `call`.
    async fn answer(&self, request: InputRequest, call: &Call) -> serde_json::Value {
        let caller = call.caller.clone();
        let value = match request {
            InputRequest::Elicitation(request) => {
                let meta =
                    self.caller_meta(request.params_meta().unwrap_or_default(), caller.as_ref());
                serde_json::to_value(
                    self.handler
                        .elicit(&self.connection, request.params, meta, caller)
                        .await,
                )
            }
            InputRequest::CreateMessage(request) => {
                match self
                    .handler
                    .sample(
                        &self.connection,
                        SamplingQuestion::from(&request.params),
                        caller,
                    )
                    .await
                {
                    Ok(answer) => serde_json::to_value(CreateMessageResult::from(answer)),
                    Err(error) => Ok(serde_json::json!({
                        "error": {"code": error.code.0, "message": error.message}
                    })),
                }
            }
            InputRequest::ListRoots(_) => match self
                .handler
                .list_roots(&self.connection, self.roots.clone(), caller)
                .await
            {
                Ok(roots) => serde_json::to_value(ListRootsResult::new(roots)),
                Err(error) => Ok(serde_json::json!({
                    "error": {"code": error.code.0, "message": error.message}
                })),
            },
            other => Ok(
                serde_json::json!({"error": {"code": -32601, "message": format!("unsupported input request {other:?}")}}),
            ),
        };
        value.unwrap_or(serde_json::Value::Null)
    }
}

trait ParamsMeta {
    fn params_meta(&self) -> Option<RequestMetaObject>;
}

impl ParamsMeta for rmcp::model::ElicitRequest {
    /// A request's `_meta` as rmcp parsed it: in the request's extensions, or (when built in
    /// process) in the params.
    fn params_meta(&self) -> Option<RequestMetaObject> {
        use rmcp::model::GetExtensions;
        if let Some(parsed) = self.extensions().get::<RequestMetaObject>()
            && !parsed.is_empty()
        {
            return Some(parsed.clone());
        }
        match &self.params {
            ElicitRequestParams::FormElicitationParams { meta, .. }
            | ElicitRequestParams::UrlElicitationParams { meta, .. } => meta.clone(),
            _ => None,
        }
    }
}

impl<H: HostHandler> ClientHandler for Routed<H> {
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        if self.declared.elicitation || self.declared.url_elicitation {
            let mut elicitation = ElicitationCapability::default();
            if self.declared.elicitation {
                elicitation = elicitation.with_form(Default::default());
            }
            if self.declared.url_elicitation {
                elicitation = elicitation.with_url(Default::default());
            }
            caps.elicitation = Some(elicitation);
        }
        if self.declared.sampling {
            caps.sampling = Some(Default::default());
        }
        if self.declared.roots {
            let mut roots = rmcp::model::RootsCapabilities::default();
            roots.list_changed = Some(true);
            caps.roots = Some(roots);
        }
        if self.declared.tasks {
            caps.extensions = Some(
                [(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    JsonObject::new(),
                )]
                .into_iter()
                .collect(),
            );
        }
        ClientInfo::new(
            caps,
            Implementation::new(
                format!("{} - {}", self.client_name, self.connection),
                env!("CARGO_PKG_VERSION"),
            ),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if !self.declared.elicitation {
            return Err(ErrorData::invalid_request(
                "this connection does not elicit",
                None,
            ));
        }
        // rmcp hands a 2025 request's `_meta` over in the context.
        let meta = match &request {
            ElicitRequestParams::FormElicitationParams {
                meta: Some(meta), ..
            }
            | ElicitRequestParams::UrlElicitationParams {
                meta: Some(meta), ..
            } => meta.clone(),
            _ => context.meta.clone(),
        };
        let caller = self.caller_of(&context.extensions, &meta);
        let meta = self.caller_meta(meta, caller.as_ref());
        Ok(self
            .handler
            .elicit(&self.connection, request, meta, caller)
            .await)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        if !self.declared.sampling {
            return Err(ErrorData::invalid_request(
                "this connection does not sample",
                None,
            ));
        }
        let caller = self.caller_of(&context.extensions, &context.meta);
        self.handler
            .sample(&self.connection, SamplingQuestion::from(&params), caller)
            .await
            .map(CreateMessageResult::from)
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let caller = self.caller_of(&context.extensions, &context.meta);
        self.handler
            .list_roots(&self.connection, self.roots.clone(), caller)
            .await
            .map(ListRootsResult::new)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let call = self.routes.call_of_token(&params.progress_token);
        call.deliver_progress(params, |progress| {
            self.handler.on_progress(&self.connection, progress);
        });
        call.handled();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        // rmcp tells no notification's stream: the transport named the call when it was the
        // only one in flight as the message came off the wire.
        let call = context
            .extensions
            .get::<CallTag>()
            .map(|CallTag(call)| call.clone());
        let caller = call.as_ref().and_then(|call| call.caller.clone());
        self.handler.on_log(
            &self.connection,
            LogMessage {
                level: params.level.into(),
                logger: params.logger,
                data: params.data,
                caller,
            },
        );
        if let Some(call) = call {
            call.handled();
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.handler
            .on_list_changed(&self.connection, ListKind::Tools);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.handler
            .on_list_changed(&self.connection, ListKind::Prompts);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.handler
            .on_list_changed(&self.connection, ListKind::Resources);
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.handler
            .on_resource_updated(&self.connection, &params.uri);
    }
}

/// One open connection.
pub struct Connection<H: HostHandler> {
    name: String,
    config: ConnectionConfig,
    meta_allow: Arc<Vec<String>>,
    service: RunningService<RoleClient, Routed<H>>,
    stderr_tail: Arc<StderrTail>,
    /// Times the session for `mcp.client.session.duration`.
    _session: backchannel::metrics::ClientSession,
    /// Stops the 2026-07-28 listen stream's watcher with the connection.
    _listening: Option<tokio_util::sync::DropGuard>,
    #[cfg(feature = "oauth")]
    handler: Arc<H>,
    /// How to sign in again when the server refuses the credentials (HTTP connections).
    #[cfg(feature = "oauth")]
    reauth: Option<auth::Reauth>,
}

/// How many times one request may sign in again before its error stands.
pub const MAX_SIGN_INS_PER_REQUEST: usize = 3;

/// A call in flight, listed while it lives.
struct InFlight<'a> {
    list: &'a Mutex<Vec<Arc<Call>>>,
    call: Arc<Call>,
}

impl<'a> InFlight<'a> {
    fn new(list: &'a Mutex<Vec<Arc<Call>>>, call: &Arc<Call>) -> Self {
        list.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(call.clone());
        Self {
            list,
            call: call.clone(),
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = list.iter().position(|c| Arc::ptr_eq(c, &self.call)) {
            list.remove(i);
        }
    }
}

/// The last lines a child wrote to stderr, and a signal for each new one.
#[derive(Default)]
struct StderrTail {
    lines: Mutex<std::collections::VecDeque<String>>,
    written: tokio::sync::Notify,
}

impl StderrTail {
    fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

/// Log a child's stderr at debug level and keep its last lines.
fn keep_stderr(connection: &str, stderr: tokio::process::ChildStderr, tail: Arc<StderrTail>) {
    use tokio::io::AsyncBufReadExt;
    let connection = connection.to_owned();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(connection, "{line}");
            {
                let mut lines = tail.lines.lock().unwrap_or_else(|e| e.into_inner());
                lines.push_back(line);
                if lines.len() > 200 {
                    lines.pop_front();
                }
            }
            tail.written.notify_waiters();
        }
    });
}

impl<H: HostHandler> std::fmt::Debug for Connection<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The lifecycle rmcp runs for a connection: `initialize` for a session revision, discovery for
/// a stateless one, and with no preference the newest first, falling back to 2025-11-25.
fn lifecycle_for(protocol: Option<backchannel::Revision>) -> ClientLifecycleMode {
    match protocol {
        Some(revision) if revision.has_sessions() => ClientLifecycleMode::Initialize,
        Some(revision) => ClientLifecycleMode::Discover {
            preferred_versions: vec![revision.protocol_version()],
        },
        None => ClientLifecycleMode::Auto {
            preferred_versions: vec![backchannel::Revision::LATEST.protocol_version()],
            legacy_version: Some(backchannel::Revision::V2025_11_25.protocol_version()),
        },
    }
}

/// Whether a connect error is rmcp's "no compatible protocol version" from a server whose
/// list names 2025-11-25 (the server speaks it, not the stateless revision).
fn offers_only_sessions(message: &str) -> bool {
    message.contains("no compatible protocol version")
        && message
            .split_once("server:")
            .is_some_and(|(_, server)| server.contains("\"2025-11-25\""))
}

/// A connection's folders as the `file://` roots it declares, each named after its folder.
fn declared_roots(paths: &[std::path::PathBuf]) -> Vec<Root> {
    paths
        .iter()
        .map(|path| {
            let mut root = Root::new(file_uri(path));
            root.name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            root
        })
        .collect()
}

/// The configured extra request headers, each checked as an HTTP header name and value.
fn custom_headers(
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, String> {
    headers
        .iter()
        .map(|(key, value)| {
            let key = http::HeaderName::try_from(key.as_str()).map_err(|e| e.to_string())?;
            let value = http::HeaderValue::try_from(value.as_str()).map_err(|e| e.to_string())?;
            Ok((key, value))
        })
        .collect()
}

/// Start a stdio server's process, its stderr kept (the last lines) in `tail`.
fn spawn_stdio(
    name: &str,
    command: &str,
    args: &[String],
    cwd: Option<&std::path::Path>,
    env: &BTreeMap<String, String>,
    tail: &Arc<StderrTail>,
) -> std::io::Result<TokioChildProcess> {
    let mut process = tokio::process::Command::new(command);
    process.args(args).envs(env);
    if let Some(cwd) = cwd {
        process.current_dir(cwd);
    }
    let (transport, stderr) = TokioChildProcess::builder(process)
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    if let Some(stderr) = stderr {
        keep_stderr(name, stderr, tail.clone());
    }
    Ok(transport)
}

/// The most rounds of questions one call may take.
const MAX_ROUNDS: usize = 10;

/// How long a call's result waits for its last progress notifications to be handled.
const PROGRESS_DRAIN_BOUND: Duration = Duration::from_secs(1);

impl<H: HostHandler> Connection<H> {
    /// Open one connection. With no revision asked for ("auto"), a server that refuses
    /// 2026-07-28 as an unsupported version while listing 2025-11-25 is opened again on
    /// 2025-11-25 (rmcp falls back only for a server that does not know `server/discover`).
    pub async fn open(
        name: &str,
        config: &ConnectionConfig,
        host: &HostConfig,
        handler: Arc<H>,
    ) -> Result<Connection<H>, HostError> {
        match Self::open_as(name, config, host, handler.clone()).await {
            Err(HostError::Connect { message, .. })
                if config.protocol.is_none() && offers_only_sessions(&message) =>
            {
                tracing::debug!(connection = %name, "the server refused 2026-07-28; opening on 2025-11-25");
                let legacy = ConnectionConfig {
                    protocol: Some(backchannel::Revision::V2025_11_25),
                    ..config.clone()
                };
                Self::open_as(name, &legacy, host, handler).await
            }
            opened => opened,
        }
    }

    async fn open_as(
        name: &str,
        config: &ConnectionConfig,
        host: &HostConfig,
        handler: Arc<H>,
    ) -> Result<Connection<H>, HostError> {
        let routes = Arc::new(Routes::default());
        let roots = declared_roots(&config.roots);
        let make_routed = || Routed {
            connection: name.to_owned(),
            client_name: host.client_name.clone(),
            declared: config.capabilities,
            roots: roots.clone(),
            handler: handler.clone(),
            routes: routes.clone(),
        };
        let lifecycle = lifecycle_for(config.protocol);
        let connect_error = |message: String| HostError::Connect {
            connection: name.to_owned(),
            message,
        };
        let stderr_tail = Arc::new(StderrTail::default());
        #[cfg(feature = "oauth")]
        let mut reauth = None;
        let service = match &config.transport {
            Transport::Http { url, headers } => {
                let transport_config =
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(custom_headers(headers).map_err(connect_error)?);
                #[cfg(feature = "oauth")]
                let (service, opened) = {
                    let signing_in = SigningIn {
                        name,
                        url,
                        settings: config.auth.clone().unwrap_or_default(),
                        client_name: &host.client_name,
                        handler: &handler,
                    };
                    let (service, signed_in, opened) = signing_in
                        .serve(transport_config, make_routed, &routes, lifecycle)
                        .await
                        .map_err(connect_error)?;
                    reauth = Some(signed_in);
                    (service, opened)
                };
                #[cfg(not(feature = "oauth"))]
                let (service, opened) = {
                    let (client, opened) = Listening::new(http_client().map_err(connect_error)?);
                    let transport =
                        StreamableHttpClientTransport::with_client(client, transport_config);
                    let service = make_routed()
                        .serve_with_lifecycle(Tagging::new(transport, routes.clone()), lifecycle)
                        .await
                        .map_err(|e| connect_error(e.to_string()))?;
                    (service, opened)
                };
                wait_for_listening(name, &service, opened, config.request_timeout()).await;
                service
            }
            Transport::Stdio {
                command,
                args,
                cwd,
                env,
            } => {
                let transport = spawn_stdio(name, command, args, cwd.as_deref(), env, &stderr_tail)
                    .map_err(|e| connect_error(e.to_string()))?;
                make_routed()
                    .serve_with_lifecycle(Tagging::new(transport, routes.clone()), lifecycle)
                    .await
                    .map_err(|e| connect_error(e.to_string()))?
            }
        };
        let listening = listen_for_changes(name, &service, handler.clone());
        Ok(Connection {
            name: name.to_owned(),
            config: config.clone(),
            meta_allow: Arc::new(host.meta_allow.clone()),
            service,
            stderr_tail,
            _session: backchannel::metrics::ClientSession::start(),
            _listening: listening,
            #[cfg(feature = "oauth")]
            handler,
            #[cfg(feature = "oauth")]
            reauth,
        })
    }

    /// The last lines a stdio server wrote to its stderr (empty for HTTP).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail.lines()
    }

    /// Wait at most `timeout` for a stdio server to write a stderr line matching `wanted`
    /// (servers report some things, such as the roots they took, only there). Returns whether
    /// one came.
    pub async fn wait_for_stderr(&self, wanted: impl Fn(&str) -> bool, timeout: Duration) -> bool {
        let tail = &self.stderr_tail;
        let wait = async {
            loop {
                let written = tail.written.notified();
                if tail.lines().iter().any(|line| wanted(line)) {
                    return;
                }
                written.await;
            }
        };
        tokio::time::timeout(timeout, wait).await.is_ok()
    }

    /// The connection's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The protocol revision the connection negotiated.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.service
            .peer()
            .peer_info()
            .map(|info| info.protocol_version.clone())
    }

    /// Whether this connection speaks a revision with sessions (2025-11-25, or a server that
    /// has not said): the server sends its questions as requests while a call runs.
    pub fn has_sessions(&self) -> bool {
        self.protocol_version()
            .is_none_or(|version| backchannel::Revision::of(&version).has_sessions())
    }

    /// The rmcp client, for everything else (resources, prompts, completion).
    pub fn client(&self) -> &RunningService<RoleClient, impl ClientHandler> {
        &self.service
    }

    /// The tools this connection offers the model: filtered by the configuration, named with
    /// its prefix.
    pub async fn tools(&self) -> Result<Vec<rmcp::model::Tool>, HostError> {
        let mut sign_ins = 0;
        let tools = loop {
            // Every page of the list is one operation, as the model sees one list.
            let span = backchannel::telemetry::client_span("tools/list", None, &self.name);
            let started = std::time::Instant::now();
            let listed =
                tracing::Instrument::instrument(self.service.list_all_tools(), span.clone()).await;
            let error = listed.as_ref().err().map(|_| "_OTHER");
            if let Some(error) = error {
                backchannel::telemetry::record_failure(&span, error);
            }
            backchannel::metrics::client_operation("tools/list", error, started.elapsed());
            match listed {
                Ok(tools) => break tools,
                Err(error) => {
                    let error = self.service_error(error);
                    self.sign_in_again_after(error, &mut sign_ins).await?;
                }
            }
        };
        Ok(tools
            .into_iter()
            .filter(|tool| {
                self.config
                    .tools
                    .as_ref()
                    .is_none_or(|keep| keep.iter().any(|k| *k == tool.name))
            })
            .map(|mut tool| {
                if let Some(prefix) = &self.config.tool_prefix {
                    tool.name = format!("{prefix}{}", tool.name).into();
                }
                tool
            })
            .collect())
    }

    /// A request failed: a sign-in question when the server refused the credentials, else the
    /// error as text.
    fn service_error(&self, error: rmcp::service::ServiceError) -> HostError {
        match error.auth_challenge() {
            Some(challenge) => HostError::Unauthorized {
                connection: self.name.clone(),
                challenge: challenge.to_owned(),
            },
            None => match error {
                rmcp::service::ServiceError::McpError(error) => HostError::Refused {
                    connection: self.name.clone(),
                    error,
                },
                other => self.call_error(other.to_string()),
            },
        }
    }

    /// After `error`: when it asks to sign in and this connection can (feature `oauth`, at
    /// most [`MAX_SIGN_INS_PER_REQUEST`] times per request), sign in again and return `Ok`
    /// (the caller retries); otherwise return the error.
    async fn sign_in_again_after(
        &self,
        error: HostError,
        sign_ins: &mut usize,
    ) -> Result<(), HostError> {
        let HostError::Unauthorized { challenge, .. } = &error else {
            return Err(error);
        };
        if *sign_ins >= MAX_SIGN_INS_PER_REQUEST {
            return Err(self.call_error(format!(
                "the server still refuses after {MAX_SIGN_INS_PER_REQUEST} sign-ins"
            )));
        }
        *sign_ins += 1;
        #[cfg(feature = "oauth")]
        if let Some(reauth) = &self.reauth {
            return reauth
                .sign_in_again(self.name.as_str(), challenge, &*self.handler)
                .await
                .map_err(|message| self.call_error(format!("signing in failed: {message}")));
        }
        let _ = challenge;
        Err(error)
    }

    fn call_error(&self, message: String) -> HostError {
        HostError::Call {
            connection: self.name.clone(),
            message,
        }
    }

    /// Call a tool by its name on the server (without the prefix) and return its final result:
    /// questions are answered through the handler, tasks are followed to their end. The whole
    /// call is bounded by the connection's request timeout.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
    ) -> Result<CallToolResult, HostError> {
        // A refused request was not served: the call starts again after the sign-in (its
        // earlier rounds changed nothing on the server).
        let started = self
            .signed_in(|| self.drive_call(name, arguments.clone(), context, Drive::ToTheEnd))
            .await?;
        match started {
            Started::Done(result) => Ok(result),
            other => Err(self.call_error(format!("the call did not end: {other:?}"))),
        }
    }

    /// Call a tool like [`Connection::call_tool`], but when the server makes the call a task
    /// (tasks extension), hand the task back instead of following it: the caller follows it
    /// with [`Connection::get_task`], [`Connection::update_task`] and
    /// [`Connection::cancel_task`] (the questions inside it are the caller's to answer). The
    /// questions asked before the task is made are answered through the handler.
    pub async fn start_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
    ) -> Result<Started, HostError> {
        self.signed_in(|| self.drive_call(name, arguments.clone(), context, Drive::UntilTask))
            .await
    }

    /// Send one `tools/call` request, with the answers `input_responses` and the server's
    /// `request_state` of an earlier round (2026-07-28), and hand back whatever the server
    /// answers: its result, its task, or its next questions (none answered here). For a
    /// caller that relays the server's rounds to a client of its own (a gateway).
    pub async fn call_round(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
        input_responses: Option<rmcp::model::InputResponses>,
        request_state: Option<String>,
    ) -> Result<Started, HostError> {
        let round = Some((input_responses, request_state));
        self.signed_in(|| {
            self.drive_call_from(
                name,
                arguments.clone(),
                context,
                Drive::OneRound,
                round.clone(),
            )
        })
        .await
    }

    /// `tasks/get`: the task `task_id` as the server reports it now.
    pub async fn get_task(&self, task_id: &str) -> Result<rmcp::model::GetTaskResult, HostError> {
        self.signed_in(|| async {
            self.service
                .get_task(GetTaskParams::new(task_id.to_owned()))
                .await
                .map_err(|e| self.service_error(e))
        })
        .await
    }

    /// `tasks/update`: answers to the questions the task `task_id` has open, by their keys.
    pub async fn update_task(
        &self,
        task_id: &str,
        responses: BTreeMap<String, serde_json::Value>,
    ) -> Result<(), HostError> {
        self.signed_in(|| async {
            self.service
                .update_task(UpdateTaskParams::new(task_id.to_owned(), responses.clone()))
                .await
                .map_err(|e| self.service_error(e))
        })
        .await
    }

    /// `tasks/cancel`: ask the server to stop the task `task_id`.
    pub async fn cancel_task(&self, task_id: &str) -> Result<(), HostError> {
        self.signed_in(|| async {
            self.service
                .cancel_task(rmcp::model::CancelTaskParams::new(task_id.to_owned()))
                .await
                .map_err(|e| self.service_error(e))
        })
        .await
    }

    /// Run `attempt` bounded by the connection's request timeout; when the server asks to sign
    /// in, sign in again (where this connection can) and run it once more.
    async fn signed_in<T, F, Fut>(&self, mut attempt: F) -> Result<T, HostError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, HostError>>,
    {
        let timeout = self.config.request_timeout();
        let mut sign_ins = 0;
        loop {
            let result = tokio::time::timeout(timeout, attempt())
                .await
                .map_err(|_| HostError::Timeout {
                    connection: self.name.clone(),
                    timeout,
                })?;
            match result {
                Err(error @ HostError::Unauthorized { .. }) => {
                    self.sign_in_again_after(error, &mut sign_ins).await?;
                }
                other => return other,
            }
        }
    }

    /// Get a prompt by its name on the server (without any prefix), answering the questions
    /// the server asks while it makes it through the handler, like a tool call's (on
    /// 2025-11-25 as requests, on 2026-07-28 as `input_required` rounds). Bounded by the
    /// connection's request timeout; signs in again when the server asks.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
    ) -> Result<rmcp::model::GetPromptResult, HostError> {
        let started = self
            .signed_in(|| self.prompt_rounds(name, arguments.clone(), context, None))
            .await?;
        match started {
            Started::Done(result) => Ok(result),
            other => Err(self.call_error(format!("the prompt did not end: {other:?}"))),
        }
    }

    /// Send one `prompts/get` request, with the answers and the server's state of an earlier
    /// round (2026-07-28), and hand back the prompt or the server's next questions (none
    /// answered here), as [`Connection::call_round`] does for a tool.
    pub async fn prompt_round(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
        input_responses: Option<rmcp::model::InputResponses>,
        request_state: Option<String>,
    ) -> Result<Started<rmcp::model::GetPromptResult>, HostError> {
        let earlier = Some((input_responses, request_state));
        self.signed_in(|| self.prompt_rounds(name, arguments.clone(), context, earlier.clone()))
            .await
    }

    /// Get a prompt: from an earlier round's answers and state when given, and then one round
    /// only (its questions handed back); else answering every round's questions through the
    /// handler.
    async fn prompt_rounds(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
        earlier: Option<(Option<rmcp::model::InputResponses>, Option<String>)>,
    ) -> Result<Started<rmcp::model::GetPromptResult>, HostError> {
        let one_round = earlier.is_some();
        let mut params = rmcp::model::GetPromptRequestParams::new(name.to_owned());
        params.arguments = arguments;
        if let Some((input_responses, request_state)) = earlier {
            params.input_responses = input_responses;
            params.request_state = request_state;
        }
        let (caller_token, meta) = self.split_meta(context);
        params.meta = meta;
        let call = Call::new(caller_token);
        let _active = InFlight::new(&self.service.service().routes.active, &call);
        let mut started = None;
        for _ in 0..MAX_ROUNDS {
            let request = rmcp::model::GetPromptRequest::new(params.clone());
            match self
                .round(ClientRequest::GetPromptRequest(request), &call)
                .await?
            {
                ServerResult::GetPromptResult(result) => {
                    started = Some(Started::Done(result));
                    break;
                }
                ServerResult::InputRequiredResult(round) if one_round => {
                    started = Some(Started::InputRequired {
                        input_requests: round.input_requests.unwrap_or_default(),
                        request_state: round.request_state,
                    });
                    break;
                }
                ServerResult::InputRequiredResult(round) => {
                    params.input_responses = Some(
                        self.answer_all(round.input_requests.unwrap_or_default(), &call)
                            .await,
                    );
                    params.request_state = round.request_state;
                }
                other => {
                    return Err(self.call_error(format!("unexpected response {other:?}")));
                }
            }
        }
        let started = started.ok_or_else(|| {
            self.call_error(format!(
                "the prompt needed more than {MAX_ROUNDS} rounds of questions"
            ))
        })?;
        // The prompt is not handed over before the progress that came ahead of it.
        call.drained(PROGRESS_DRAIN_BOUND).await;
        Ok(started)
    }

    async fn drive_call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
        drive: Drive,
    ) -> Result<Started, HostError> {
        self.drive_call_from(name, arguments, context, drive, None)
            .await
    }

    /// [`Connection::drive_call`], from an earlier round's answers and state when given.
    async fn drive_call_from(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
        drive: Drive,
        earlier: Option<(Option<rmcp::model::InputResponses>, Option<String>)>,
    ) -> Result<Started, HostError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = arguments;
        if let Some((input_responses, request_state)) = earlier {
            params.input_responses = input_responses;
            params.request_state = request_state;
        }
        let (caller_token, meta) = self.split_meta(context);
        params.meta = meta;
        let call = Call::new(caller_token);
        // Removed again on every way out, a timeout's drop included.
        let _active = InFlight::new(&self.service.service().routes.active, &call);
        let span = backchannel::telemetry::client_span("tools/call", Some(name), &self.name);
        let started = std::time::Instant::now();
        let result = tracing::Instrument::instrument(
            async {
                match self.rounds(params, &call, drive).await? {
                    Started::Task(task) if drive == Drive::ToTheEnd => {
                        self.follow_task(task, &call).await.map(Started::Done)
                    }
                    other => Ok(other),
                }
            },
            span.clone(),
        )
        .await;
        let error = match &result {
            Ok(Started::Done(result)) if result.is_error == Some(true) => Some("tool_error"),
            Ok(_) => None,
            Err(_) => Some("_OTHER"),
        };
        if let Some(error) = error {
            backchannel::telemetry::record_failure(&span, error);
        }
        backchannel::metrics::client_operation("tools/call", error, started.elapsed());
        // The result is not handed over before the progress that came ahead of it.
        call.drained(PROGRESS_DRAIN_BOUND).await;
        result
    }

    /// The caller's token (taken out of the `_meta` a request carries) and the rest of the
    /// allowed `_meta`, if any.
    fn split_meta(
        &self,
        context: &CallContext,
    ) -> (Option<ProgressToken>, Option<RequestMetaObject>) {
        let mut meta = context.meta(&self.meta_allow);
        let caller_token = meta
            .remove("progressToken")
            .and_then(|value| serde_json::from_value::<ProgressToken>(value).ok());
        (caller_token, (!meta.is_empty()).then_some(meta))
    }

    /// Send one round of `call` and wait for its answer; dropped before the answer, the round
    /// is cancelled at the server.
    async fn round(
        &self,
        mut request: ClientRequest,
        call: &Arc<Call>,
    ) -> Result<ServerResult, HostError> {
        use rmcp::model::GetExtensions as _;
        // Read by the transport as the request is sent: see `routes`.
        request.extensions_mut().insert(CallTag(call.clone()));
        let handle = self
            .service
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.service_error(e))?;
        let mut abandoned = Abandoned::armed(self.service.peer(), handle.id.clone());
        let response = handle.await_response().await;
        abandoned.disarm();
        response.map_err(|e| self.service_error(e))
    }

    async fn rounds(
        &self,
        mut params: CallToolRequestParams,
        call: &Arc<Call>,
        drive: Drive,
    ) -> Result<Started, HostError> {
        // Every round names the call's span, so the server's spans join the caller's trace.
        if let Some(traceparent) = backchannel::telemetry::current_traceparent() {
            params.set_traceparent(&traceparent);
        }
        // On 2025-11-25 a task is the requester's choice: a call that may become one asks.
        let ask_for_task = drive == Drive::UntilTask && self.has_sessions();
        for _ in 0..MAX_ROUNDS {
            let request = if ask_for_task {
                task_requested(&params)
            } else {
                ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params.clone()))
            };
            match self.round(request, call).await? {
                ServerResult::CallToolResult(result) => return Ok(Started::Done(result)),
                ServerResult::InputRequiredResult(round) if drive == Drive::OneRound => {
                    return Ok(Started::InputRequired {
                        input_requests: round.input_requests.unwrap_or_default(),
                        request_state: round.request_state,
                    });
                }
                ServerResult::InputRequiredResult(round) => {
                    params.input_responses = Some(
                        self.answer_all(round.input_requests.unwrap_or_default(), call)
                            .await,
                    );
                    params.request_state = round.request_state;
                }
                ServerResult::CreateTaskResult(created) => return Ok(Started::Task(created.task)),
                other => return Err(self.call_error(format!("unexpected response {other:?}"))),
            }
        }
        Err(self.call_error(format!(
            "the tool needed more than {MAX_ROUNDS} rounds of questions"
        )))
    }

    async fn answer_all(
        &self,
        requests: InputRequests,
        call: &Call,
    ) -> BTreeMap<String, serde_json::Value> {
        let routed = self.service.service();
        let answers = requests
            .into_iter()
            .map(|(key, request)| async move { (key, routed.answer(request, call).await) });
        futures::future::join_all(answers)
            .await
            .into_iter()
            .collect()
    }

    async fn follow_task(
        &self,
        task: rmcp::model::Task,
        call: &Call,
    ) -> Result<CallToolResult, HostError> {
        let poll = Duration::from_millis(task.poll_interval_ms.unwrap_or(500).clamp(10, 5_000));
        loop {
            let current = self
                .service
                .get_task(GetTaskParams::new(task.task_id.clone()))
                .await
                .map_err(|e| self.service_error(e))?;
            match current.task.payload {
                TaskPayload::Working => tokio::time::sleep(poll).await,
                TaskPayload::InputRequired { input_requests } => {
                    let answers = self.answer_all(input_requests, call).await;
                    self.service
                        .update_task(UpdateTaskParams::new(task.task_id.clone(), answers))
                        .await
                        .map_err(|e| self.service_error(e))?;
                }
                TaskPayload::Completed { result } => {
                    return serde_json::from_value(serde_json::Value::Object(result))
                        .map_err(|e| self.call_error(format!("unreadable task result: {e}")));
                }
                TaskPayload::Failed { error } => {
                    return Err(self.call_error(format!(
                        "the task failed: {}",
                        serde_json::Value::Object(error)
                    )));
                }
                TaskPayload::Cancelled => {
                    return Err(self.call_error("the task was cancelled".into()));
                }
                other => return Err(self.call_error(format!("unexpected task state {other:?}"))),
            }
        }
    }

    /// Close the connection.
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

/// Tells the server that a request its caller stopped waiting for (a timeout, a lost
/// `select!`, a caller that went away) is abandoned: dropped while armed, it sends
/// `notifications/cancelled` for the request, so the server stops the call instead of going on
/// with a result nobody reads (or with answers to its questions that were never given).
struct Abandoned {
    peer: rmcp::service::Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl Abandoned {
    fn armed(peer: &rmcp::service::Peer<RoleClient>, id: rmcp::model::RequestId) -> Self {
        Abandoned {
            peer: peer.clone(),
            id: Some(id),
        }
    }

    fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let cancelled = rmcp::model::CancelledNotification::new(
                rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("the caller stopped waiting".to_owned()),
                ),
            );
            let _ = peer
                .send_notification(rmcp::model::ClientNotification::CancelledNotification(
                    cancelled,
                ))
                .await;
        });
    }
}

/// All connections of a configuration.
pub struct Host<H: HostHandler> {
    connections: BTreeMap<String, Connection<H>>,
    /// Connections that could not be opened, with the reason (the host runs without them).
    pub unavailable: BTreeMap<String, String>,
}

impl<H: HostHandler> std::fmt::Debug for Host<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("connections", &self.connections.keys().collect::<Vec<_>>())
            .field("unavailable", &self.unavailable)
            .finish()
    }
}

impl<H: HostHandler> Host<H> {
    /// Open every connection of `config`; the ones that fail are listed in `unavailable`.
    pub async fn open(config: &HostConfig, handler: Arc<H>) -> Result<Host<H>, HostError> {
        config.check()?;
        let mut connections = BTreeMap::new();
        let mut unavailable = BTreeMap::new();
        for (name, connection) in &config.connections {
            match Connection::open(name, connection, config, handler.clone()).await {
                Ok(open) => {
                    connections.insert(name.clone(), open);
                }
                Err(error) => {
                    unavailable.insert(name.clone(), error.to_string());
                }
            }
        }
        Ok(Host {
            connections,
            unavailable,
        })
    }

    /// A connection by name.
    pub fn connection(&self, name: &str) -> Result<&Connection<H>, HostError> {
        self.connections
            .get(name)
            .ok_or_else(|| HostError::UnknownConnection(name.to_owned()))
    }

    /// The open connections.
    pub fn connections(&self) -> impl Iterator<Item = &Connection<H>> {
        self.connections.values()
    }

    /// Close every connection.
    pub async fn close(self) {
        for (_, connection) in self.connections {
            connection.close().await;
        }
    }
}

/// The HTTP client of every HTTP connection: connections kept and reused (rmcp drains a
/// response's SSE body before the connection goes back; `TCP_NODELAY`, so a request written in
/// two parts never waits on a delayed ACK), and redirects followed only as 307/308 within the
/// same origin, so a request never carries its session or token elsewhere. (Without the pool,
/// every request paid a connect: a gateway's forwarded `get_order` ran at 0.6 times the rate.)
fn http_client() -> Result<reqwest13::Client, String> {
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
        .map_err(|e| format!("cannot make an HTTP client: {e}"))
}

/// How long a listen stream that ended waits before it is opened again.
const RELISTEN_AFTER: Duration = Duration::from_secs(1);

/// On 2026-07-28, where list changes come only on a `subscriptions/listen` stream: open one
/// for the lists the server says change, and hand what arrives to the handler as a 2025-11-25
/// session's notifications are; opened again after it ends, until the connection is dropped.
/// `None` on a revision with sessions, or when no list of the server changes.
fn listen_for_changes<H: HostHandler>(
    name: &str,
    service: &RunningService<RoleClient, Routed<H>>,
    handler: Arc<H>,
) -> Option<tokio_util::sync::DropGuard> {
    let info = service.peer().peer_info()?;
    if info.protocol_version.as_str() <= "2025-11-25" {
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
async fn wait_for_listening<S>(
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

/// What signing in to one HTTP connection needs (feature `oauth`).
#[cfg(feature = "oauth")]
struct SigningIn<'a, H> {
    name: &'a str,
    url: &'a str,
    settings: AuthConfig,
    client_name: &'a str,
    handler: &'a Arc<H>,
}

#[cfg(feature = "oauth")]
impl<H: HostHandler> SigningIn<'_, H> {
    /// Connect with the tokens the store has (or none); when the server answers 401 or 403
    /// with a challenge, sign in through the handler and connect again (at most
    /// [`auth::MAX_SIGN_INS`] times).
    async fn serve(
        &self,
        transport_config: rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig,
        make_routed: impl Fn() -> Routed<H>,
        routes: &Arc<Routes>,
        lifecycle: ClientLifecycleMode,
    ) -> Result<
        (
            RunningService<RoleClient, Routed<H>>,
            auth::Reauth,
            ListeningOpened,
        ),
        String,
    > {
        let store = auth::TokenStore::for_config(&self.settings);
        let mut manager = auth::manager(self.url, &store)
            .await
            .map_err(|e| e.to_string())?;
        let http = http_client()?;
        for attempt in 0..=auth::MAX_SIGN_INS {
            let client = rmcp::transport::auth::AuthClient::new(http.clone(), manager);
            let held = client.auth_manager.clone();
            let (client, opened) = Listening::new(client);
            let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                client,
                transport_config.clone(),
            );
            let error = match make_routed()
                .serve_with_lifecycle(Tagging::new(transport, routes.clone()), lifecycle.clone())
                .await
            {
                Ok(service) => {
                    let reauth = auth::Reauth {
                        url: self.url.to_owned(),
                        settings: self.settings.clone(),
                        client_name: self.client_name.to_owned(),
                        store,
                        manager: held,
                    };
                    return Ok((service, reauth, opened));
                }
                Err(error) => error,
            };
            let Some(challenge) = error.auth_challenge().map(str::to_owned) else {
                return Err(error.to_string());
            };
            if attempt == auth::MAX_SIGN_INS {
                return Err(format!(
                    "the server still refuses after {} sign-ins: {error}",
                    auth::MAX_SIGN_INS
                ));
            }
            tracing::info!(connection = self.name, "the server asks to sign in");
            manager = auth::sign_in(
                self.url,
                &self.settings,
                self.client_name,
                &challenge,
                &store,
                |url| self.handler.authorize(self.name, url),
            )
            .await
            .map_err(|e| format!("signing in failed: {e}"))?;
        }
        Err("signing in failed".to_owned())
    }
}
