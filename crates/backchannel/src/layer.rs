//! The layer that drives a tool body through its rounds on either revision.
// The sampling, roots and logging types are deprecated in rmcp (SEP-2577) but are the
// protocol; this module names them, and `deprecated.rs` holds every call into that API.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::prompt::PromptContext;
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content,
    GetPromptRequestParams, GetPromptResponse, InputRequests, InputRequiredResult, InputResponses,
    JsonObject, ProtocolVersion, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer};

use crate::clock::Clock;
use crate::ctx::{Call, Ctx, Escalation, Pending, Revision, insert_ctx, lock};
use crate::deprecated::{self, LogLevel, SetLevelParams};
use crate::sessions::{ListKind, Sessions};
use crate::state::{Asked, CallBinding, Sealed, StateCodec};

/// Reads the caller's identity from a request, to bind sealed state to it.
type PrincipalFn = dyn Fn(&RequestContext<RoleServer>) -> Option<String> + Send + Sync;

struct Inner {
    codec: StateCodec,
    clock: Clock,
    ask_timeout: Duration,
    state_ttl: Duration,
    max_rounds: u32,
    default_log_level: LogLevel,
    principal: Option<Box<PrincipalFn>>,
    sessions: Sessions,
    spent: crate::state::SpentRounds,
    tasks: TaskManager,
    task_owners: Mutex<std::collections::HashMap<String, Owner>>,
    task_tools: std::collections::HashMap<String, TaskSupport>,
}

/// Who a task belongs to: the principal that started it, else the 2025-11-25 session it was
/// started in, else (an anonymous stateless caller) whoever knows its random id.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    Principal(String),
    Session(String),
    Anyone,
}

/// How a tool takes part in the tasks extension (SEP-2663).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Runs as a task (from its `ctx.escalate()` on) when the client declared the tasks
    /// extension, synchronously otherwise.
    Optional,
    /// Needs the tasks extension: a client without it gets -32021 before the body runs.
    Required,
}

/// The backchannel layer: one per server, shared by every session and request (cheap to clone).
#[derive(Clone)]
pub struct Backchannel {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Backchannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backchannel")
            .field("ask_timeout", &self.inner.ask_timeout)
            .field("state_ttl", &self.inner.state_ttl)
            .field("max_rounds", &self.inner.max_rounds)
            .finish_non_exhaustive()
    }
}

/// Configures a [`Backchannel`].
pub struct BackchannelBuilder {
    key: Option<Vec<u8>>,
    ask_timeout: Duration,
    state_ttl: Duration,
    max_rounds: u32,
    default_log_level: LogLevel,
    principal: Option<Box<PrincipalFn>>,
    task_tools: std::collections::HashMap<String, TaskSupport>,
}

impl std::fmt::Debug for BackchannelBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackchannelBuilder")
            .field("ask_timeout", &self.ask_timeout)
            .field("state_ttl", &self.state_ttl)
            .finish_non_exhaustive()
    }
}

/// Errors building a [`Backchannel`].
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The sealing key is shorter than 32 bytes.
    #[error("the request-state key must be at least 32 bytes, got {0}")]
    KeyTooShort(usize),
    /// The state must outlive the person's answer time.
    #[error(
        "the request-state lifetime ({state_ttl:?}) must be longer than the ask timeout ({ask_timeout:?})"
    )]
    StateShorterThanAsk {
        /// Configured state lifetime.
        state_ttl: Duration,
        /// Configured ask timeout.
        ask_timeout: Duration,
    },
}

impl BackchannelBuilder {
    /// The HMAC key sealing `requestState` (at least 32 bytes). Servers behind a load balancer
    /// share one key. Default: a random key per process.
    pub fn state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// How long a question may wait for the person (default 90 s).
    pub fn ask_timeout(mut self, timeout: Duration) -> Self {
        self.ask_timeout = timeout;
        self
    }

    /// How long sealed state stays valid (default 10 minutes).
    pub fn state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// The most rounds one call may take (default 10).
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = rounds;
        self
    }

    /// The log level of a 2025-11-25 session that never sent `logging/setLevel` (default info).
    pub fn default_log_level(mut self, level: LogLevel) -> Self {
        self.default_log_level = level;
        self
    }

    /// How to read the caller's identity from a request; sealed state is bound to it.
    pub fn principal(
        mut self,
        principal: impl Fn(&RequestContext<RoleServer>) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.principal = Some(Box::new(principal));
        self
    }

    /// Let the tool `name` run as a task (tasks extension) from its `ctx.escalate()` on.
    pub fn task_tool(mut self, name: impl Into<String>, support: TaskSupport) -> Self {
        self.task_tools.insert(name.into(), support);
        self
    }

    /// Build the layer.
    pub fn build(self) -> Result<Backchannel, BuildError> {
        let key = match self.key {
            Some(key) if key.len() < 32 => return Err(BuildError::KeyTooShort(key.len())),
            Some(key) => key,
            None => random_bytes::<32>().to_vec(),
        };
        if self.state_ttl <= self.ask_timeout {
            return Err(BuildError::StateShorterThanAsk {
                state_ttl: self.state_ttl,
                ask_timeout: self.ask_timeout,
            });
        }
        Ok(Backchannel {
            inner: Arc::new(Inner {
                codec: StateCodec::new(key),
                clock: Clock::new(),
                ask_timeout: self.ask_timeout,
                state_ttl: self.state_ttl,
                max_rounds: self.max_rounds,
                default_log_level: self.default_log_level,
                principal: self.principal,
                sessions: Sessions::default(),
                spent: crate::state::SpentRounds::default(),
                tasks: TaskManager::new(),
                task_owners: Mutex::default(),
                task_tools: self.task_tools,
            }),
        })
    }
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if let Err(error) = getrandom::fill(&mut bytes) {
        // No OS randomness means no safe key; refuse to run rather than seal with zeros.
        panic!("the operating system provided no random bytes: {error}");
    }
    bytes
}

pub(crate) fn fresh_nonce() -> String {
    hex(&random_bytes::<16>())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The result of driving a body: done, or waiting for the client (2026-07-28 only).
enum Driven<R> {
    Complete(R),
    InputRequired(InputRequiredResult),
    /// The body asked to continue as a task; carries the request and the answers so far.
    Escalate(Box<RequestContext<RoleServer>>, Sealed),
}

/// How a driven call gets its answers.
#[derive(Clone)]
enum Mode {
    /// 2025-11-25: the layer sends server-to-client requests.
    Legacy,
    /// 2026-07-28: the layer answers `input_required`.
    Modern,
    /// Inside a task: questions park the task until `tasks/update`.
    Task(TaskContext),
}

impl Default for Backchannel {
    fn default() -> Self {
        Self::new()
    }
}

impl Backchannel {
    /// A layer with the defaults: random key, 90 s asks, 10 minute state, 10 rounds.
    pub fn new() -> Self {
        Self::builder()
            .build()
            .unwrap_or_else(|error| unreachable!("defaults are valid: {error}"))
    }

    /// Configure a layer.
    pub fn builder() -> BackchannelBuilder {
        BackchannelBuilder {
            key: None,
            ask_timeout: Duration::from_secs(90),
            state_ttl: Duration::from_secs(600),
            max_rounds: 10,
            default_log_level: LogLevel::Info,
            principal: None,
            task_tools: std::collections::HashMap::new(),
        }
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.inner.clock.now_ms()
    }

    pub(crate) fn ask_timeout(&self) -> Duration {
        self.inner.ask_timeout
    }

    pub(crate) fn default_log_level(&self) -> LogLevel {
        self.inner.default_log_level
    }

    pub(crate) fn sessions(&self) -> &Sessions {
        &self.inner.sessions
    }

    /// Run `tools/call` through the router, driving the body's asks on either revision, and as a
    /// task when the tool is registered for tasks and the client declared the extension.
    /// Call it from your `ServerHandler::call_tool`.
    pub async fn call_tool<S: Clone + Send + Sync + 'static>(
        &self,
        router: &ToolRouter<S>,
        service: &S,
        params: CallToolRequestParams,
        rc: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let support = self.inner.task_tools.get(params.name.as_ref()).copied();
        // Parsing the capabilities costs; only task tools need them here.
        let client_tasks = support.is_some()
            && rc
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
        if support == Some(TaskSupport::Required) && !client_tasks {
            let mut required = rmcp::model::ClientCapabilities::default();
            required.extensions = Some(
                [(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    JsonObject::new(),
                )]
                .into_iter()
                .collect(),
            );
            return Err(ErrorData::missing_required_client_capability(required));
        }
        let escalation = if support.is_some() && client_tasks {
            Escalation::Allowed
        } else {
            Escalation::NotAvailable
        };
        let binding = self.binding("tool", &params.name, params.arguments.as_ref(), &rc);
        let mode = if is_modern(&rc) {
            Mode::Modern
        } else {
            Mode::Legacy
        };
        let driven = self
            .drive(
                rc,
                &binding,
                mode,
                escalation,
                params.input_responses.clone(),
                params.request_state.clone(),
                None,
                |rc| tool_run(router, service, &params, rc),
            )
            .await?;
        match driven {
            Driven::Complete(CallToolResponse::InputRequired(_)) => Err(ErrorData::internal_error(
                "a tool driven by backchannel must ask through Ctx, not return input_required",
                None,
            )),
            Driven::Complete(response) => Ok(response),
            Driven::InputRequired(result) => Ok(CallToolResponse::InputRequired(result)),
            Driven::Escalate(rc, sealed) => {
                let binding = binding.into_owned();
                Ok(self.spawn_task(
                    router.clone(),
                    service.clone(),
                    params,
                    *rc,
                    binding,
                    sealed,
                ))
            }
        }
    }

    fn spawn_task<S: Clone + Send + Sync + 'static>(
        &self,
        router: ToolRouter<S>,
        service: S,
        params: CallToolRequestParams,
        rc: RequestContext<RoleServer>,
        binding: CallBinding<'static>,
        sealed: Sealed,
    ) -> CallToolResponse {
        let layer = self.clone();
        let owner = self.owner_of(&rc);
        let task = self.inner.tasks.spawn(TaskOptions::new(), move |task_ctx| {
            Box::pin(async move {
                let cancel = task_ctx.clone();
                let work = async {
                    let driven = layer
                        .drive(
                            rc,
                            &binding,
                            Mode::Task(task_ctx),
                            Escalation::InTask,
                            None,
                            None,
                            Some(sealed),
                            |rc| tool_run(&router, &service, &params, rc),
                        )
                        .await
                        .map_err(TaskExit::Error)?;
                    match driven {
                        Driven::Complete(CallToolResponse::Complete(result)) => Ok(result),
                        _ => Err(TaskExit::Error(ErrorData::internal_error(
                            "a task ended without a tool result",
                            None,
                        ))),
                    }
                };
                tokio::select! {
                    result = work => result,
                    () = cancel.cancelled() => Err(TaskExit::Cancelled),
                }
            })
        });
        self.remember_owner(task.task_id.clone(), owner);
        CallToolResponse::Task(rmcp::model::CreateTaskResult::new(task))
    }

    fn remember_owner(&self, task_id: String, owner: Owner) {
        let mut owners = lock(&self.inner.task_owners);
        if owners.len() >= 1024 && owners.len().is_power_of_two() {
            // Forget the owners of tasks the manager has dropped (expired).
            let tasks = &self.inner.tasks;
            owners.retain(|id, _| tasks.get_task(id).is_ok());
        }
        owners.insert(task_id, owner);
    }

    /// Whether the caller of `rc` may see the task `id`: only its owner may (another caller
    /// gets the same answer as for an unknown id).
    fn check_owner(&self, id: &str, rc: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let owner = lock(&self.inner.task_owners).get(id).cloned();
        match owner {
            Some(owner) if owner != Owner::Anyone && owner != self.owner_of(rc) => Err(
                ErrorData::invalid_params(format!("unknown task: {id}"), None),
            ),
            _ => Ok(()),
        }
    }

    /// `tasks/get`. Call it from `ServerHandler::get_task`.
    pub fn get_task(
        &self,
        params: &rmcp::model::GetTaskParams,
        rc: &RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.check_owner(&params.task_id, rc)?;
        self.inner
            .tasks
            .get_task(&params.task_id)
            .map(rmcp::model::GetTaskResult::new)
    }

    /// `tasks/update`. Call it from `ServerHandler::update_task`.
    pub fn update_task(
        &self,
        params: rmcp::model::UpdateTaskParams,
        rc: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.check_owner(&params.task_id, rc)?;
        self.inner
            .tasks
            .update_task(&params.task_id, params.input_responses)
    }

    /// `tasks/cancel`. Call it from `ServerHandler::cancel_task`.
    pub fn cancel_task(
        &self,
        params: &rmcp::model::CancelTaskParams,
        rc: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.check_owner(&params.task_id, rc)?;
        self.inner.tasks.cancel_task(&params.task_id)
    }

    /// The caller's identity: the builder's `principal`, else the [`crate::serve::Principal`]
    /// an HTTP layer put into the request.
    fn principal_of(&self, rc: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(principal) = &self.inner.principal {
            return principal(rc);
        }
        rc.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::serve::Principal>())
            .map(|principal| principal.0.clone())
    }

    /// Who a task started by `rc` belongs to.
    fn owner_of(&self, rc: &RequestContext<RoleServer>) -> Owner {
        if let Some(principal) = self.principal_of(rc) {
            return Owner::Principal(principal);
        }
        match rc
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|id| id.to_str().ok())
        {
            Some(session) => Owner::Session(session.to_owned()),
            None => Owner::Anyone,
        }
    }

    /// Run `prompts/get` through the router, driving the prompt's asks like a tool's.
    pub async fn get_prompt<S: Send + Sync + 'static>(
        &self,
        router: &PromptRouter<S>,
        service: &S,
        params: GetPromptRequestParams,
        rc: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let binding = self.binding("prompt", &params.name, params.arguments.as_ref(), &rc);
        let input_responses = params.input_responses.clone();
        let request_state = params.request_state.clone();
        let mode = if is_modern(&rc) {
            Mode::Modern
        } else {
            Mode::Legacy
        };
        let driven = self
            .drive(
                rc,
                &binding,
                mode,
                Escalation::NotAvailable,
                input_responses,
                request_state,
                None,
                |rc| {
                    let params = params.clone();
                    async move {
                        let context =
                            PromptContext::new(service, params.name, params.arguments, rc);
                        router.get_prompt(context).await
                    }
                },
            )
            .await?;
        match driven {
            Driven::Complete(response) => Ok(response),
            Driven::InputRequired(result) => Ok(GetPromptResponse::InputRequired(result)),
            Driven::Escalate(..) => Err(ErrorData::internal_error(
                "prompts cannot run as tasks",
                None,
            )),
        }
    }

    fn binding<'a>(
        &self,
        kind: &'static str,
        name: &'a str,
        arguments: Option<&'a JsonObject>,
        rc: &RequestContext<RoleServer>,
    ) -> CallBinding<'a> {
        CallBinding::new(kind, name, arguments, self.principal_of(rc))
    }

    #[allow(clippy::too_many_arguments)]
    async fn drive<R, F, Fut>(
        &self,
        rc: RequestContext<RoleServer>,
        binding: &CallBinding<'_>,
        mode: Mode,
        escalation: Escalation,
        input_responses: Option<InputResponses>,
        request_state: Option<String>,
        resumed: Option<Sealed>,
        mut body: F,
    ) -> Result<Driven<R>, ErrorData>
    where
        F: FnMut(RequestContext<RoleServer>) -> Fut,
        Fut: Future<Output = Result<R, ErrorData>>,
    {
        let revision = match &mode {
            Mode::Modern => Revision::Modern,
            Mode::Legacy => Revision::Legacy,
            Mode::Task(_) if is_modern(&rc) => Revision::Modern,
            Mode::Task(_) => Revision::Legacy,
        };
        let clock = self.inner.clock;
        let mut sealed = match (&mode, request_state, resumed) {
            (_, _, Some(resumed)) => resumed,
            (Mode::Modern, Some(state), None) => {
                let opened = self
                    .inner
                    .codec
                    .open(binding, &state, &clock)
                    .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
                if !self
                    .inner
                    .spent
                    .spend(&opened.nonce, opened.round, opened.exp, clock.now_ms())
                {
                    return Err(ErrorData::invalid_params(
                        crate::state::StateError::Spent.to_string(),
                        None,
                    ));
                }
                opened
            }
            // The nonce is drawn lazily (only calls that ask need one).
            _ => Sealed::default(),
        };
        let mut first = Some(rc);
        let call = Arc::new(Call {
            revision,
            rc: std::sync::OnceLock::new(),
            caps: std::sync::OnceLock::new(),
            nonce: if sealed.nonce.is_empty() {
                std::sync::OnceLock::new()
            } else {
                std::sync::OnceLock::from(std::mem::take(&mut sealed.nonce))
            },
            // A task outlives the request that started it: its own cancellation is `tasks/cancel`,
            // which drops the task's future; the request's token fires when that request ends.
            task_ct: match mode {
                Mode::Task(_) => Some(tokio_util::sync::CancellationToken::new()),
                Mode::Legacy | Mode::Modern => None,
            },
            layer: self.clone(),
            answers: Mutex::new(std::mem::take(&mut sealed.answers)),
            responses: match mode {
                Mode::Modern => input_responses.unwrap_or_default(),
                Mode::Legacy | Mode::Task(_) => BTreeMap::new(),
            },
            asked: std::mem::take(&mut sealed.asked),
            escalation: Mutex::new(escalation),
            pending: Mutex::new(BTreeMap::new()),
            last_progress: Mutex::new(sealed.progress),
            runs: AtomicU32::new(0),
            task_round: AtomicU32::new(0),
        });
        let mut round = sealed.round;
        loop {
            call.runs.fetch_add(1, Ordering::SeqCst);
            // The first run takes the request itself; later ones (only bodies that took a Ctx
            // and asked get there) take clones of the snapshot its extractor made.
            let run_rc = match first.take() {
                Some(rc) => rc,
                None => call.rc().clone(),
            };
            let run_rc = insert_ctx(run_rc, Ctx::new(call.clone()));
            let result = body(run_rc).await;
            let pending = call.take_pending();
            if pending.is_empty() && *lock(&call.escalation) == Escalation::Requested {
                return Ok(Driven::Escalate(
                    Box::new(call.rc().clone()),
                    Sealed {
                        answers: lock(&call.answers).clone(),
                        nonce: call.nonce().to_owned(),
                        ..Sealed::default()
                    },
                ));
            }
            if pending.is_empty() {
                return result.map(Driven::Complete);
            }
            round += 1;
            if round > self.inner.max_rounds {
                return Err(ErrorData::internal_error(
                    format!(
                        "the call needed more than {} rounds of questions; it was stopped",
                        self.inner.max_rounds
                    ),
                    None,
                ));
            }
            match &mode {
                Mode::Modern => {
                    let now = clock.now_ms();
                    let mut requests = InputRequests::new();
                    let mut asked = BTreeMap::new();
                    for (
                        key,
                        Pending {
                            kind,
                            request,
                            timeout,
                        },
                    ) in pending
                    {
                        asked.insert(
                            key.clone(),
                            Asked {
                                kind,
                                at: now,
                                timeout: timeout.as_millis() as u64,
                            },
                        );
                        requests.insert(key, request);
                    }
                    let state = Sealed {
                        exp: now + self.inner.state_ttl.as_millis() as u64,
                        round,
                        nonce: call.nonce().to_owned(),
                        answers: lock(&call.answers).clone(),
                        asked,
                        progress: *lock(&call.last_progress),
                    };
                    let sealed = self.inner.codec.seal(binding, &state);
                    return Ok(Driven::InputRequired(InputRequiredResult::new(
                        Some(requests),
                        Some(sealed),
                    )));
                }
                Mode::Task(task) => {
                    let task_round = call.task_round.load(Ordering::SeqCst);
                    let asks = pending.into_iter().map(|(key, pending)| async move {
                        let wire_key = if task_round == 0 {
                            key.clone()
                        } else {
                            format!("{key}.{task_round}")
                        };
                        let answer = match task.request_input(wire_key, pending.request).await {
                            Ok(value) => deprecated::read_response(pending.kind, &value),
                            Err(_) => None,
                        };
                        (key, answer)
                    });
                    for (key, answer) in futures::future::join_all(asks).await {
                        if let Some(answer) = answer {
                            lock(&call.answers).insert(key, answer);
                        }
                    }
                    // Keys are single-use within a task: a question asked again gets a suffix.
                    call.task_round.fetch_add(1, Ordering::SeqCst);
                }
                Mode::Legacy => {
                    let peer = call.peer();
                    let asks = pending.into_iter().map(|(key, pending)| async move {
                        let answer =
                            deprecated::fulfil(peer, pending.request, pending.timeout).await;
                        (key, answer)
                    });
                    let answers = tokio::select! {
                        answers = futures::future::join_all(asks) => answers,
                        () = call.rc().ct.cancelled() => {
                            return Err(ErrorData::internal_error("the request was cancelled", None));
                        }
                    };
                    lock(&call.answers).extend(answers);
                }
            }
        }
    }

    /// Remember a 2025-11-25 session for list-changed broadcasts. Call it from
    /// `ServerHandler::on_initialized`.
    pub fn on_initialized(&self, context: &NotificationContext<RoleServer>) {
        self.inner.sessions.register(&context.peer);
    }

    /// Store a session's `logging/setLevel`. Call it from `ServerHandler::set_level`.
    pub fn set_level(&self, params: &SetLevelParams, context: &RequestContext<RoleServer>) {
        self.inner
            .sessions
            .set_log_level(&context.peer, deprecated::requested_level(params));
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
            .sessions
            .add_listener(subscription.sink().clone());
        subscription.cancelled().await;
        self.inner.sessions.remove_listener(id);
        Ok(())
    }

    /// Tell every 2025-11-25 session and every 2026-07-28 listen stream that a list changed.
    /// Returns how many peers were notified.
    pub async fn notify_list_changed(&self, kind: ListKind) -> usize {
        self.inner.sessions.broadcast(kind).await
    }

    /// How many (2025-11-25 sessions, 2026-07-28 listen streams) are registered.
    pub fn listener_counts(&self) -> (usize, usize) {
        self.inner.sessions.counts()
    }
}

fn is_modern(rc: &RequestContext<RoleServer>) -> bool {
    rc.protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

async fn tool_run<S: Send + Sync + 'static>(
    router: &ToolRouter<S>,
    service: &S,
    params: &CallToolRequestParams,
    rc: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    // The body sees the call as the client made it, without this round's answers or state:
    // those reach it through `Ctx`.
    let mut run = CallToolRequestParams::new(params.name.clone());
    run.arguments = params.arguments.clone();
    run.meta = params.meta.clone();
    router.call(ToolCallContext::new(service, run, rc)).await
}

/// An `isError` result with one text block.
pub fn error_text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![Content::text(message.into())])
}
