//! The layer: [`Backchannel`] drives a tool or prompt body, on the revision the client speaks or
//! inside a task, and turns each ask that has no answer yet into the right wire move (a real
//! server-to-client request on 2025-11-25, `input_required` on 2026-07-28, a task status inside
//! a task). Its builder checks the configuration once.

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
    JsonObject,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use crate::call::{Call, Escalation, Pending, Shared};
use crate::ctx::{Ctx, insert_ctx};
use crate::reach::Reach;
use crate::revision::Revision;
use crate::sampling_roots_logging::{self};
use crate::sessions::Change;
use crate::state::{Asked, CallBinding, Sealed, StateCodec};
use crate::tasks::TaskRuntime;
use crate::util::lock;

mod builder;
mod hooks;
mod passed;
mod tasks;

pub use builder::{BackchannelBuilder, BuildError};
pub use passed::{OpenedRound, PassedCall};

/// Reads the caller's identity from a request, to bind sealed state to it.
type PrincipalFn = dyn Fn(&RequestContext<RoleServer>) -> Option<String> + Send + Sync;

struct Inner {
    codec: StateCodec,
    shared: Arc<Shared>,
    state_ttl: Duration,
    max_rounds: u32,
    principal: Option<Box<PrincipalFn>>,
    spent: crate::state::SpentRounds,
    tasks: Arc<TaskRuntime>,
    task_tools: std::collections::HashMap<String, TaskSupport>,
    resumable: std::collections::HashSet<String>,
    bus: std::sync::OnceLock<Arc<dyn ChangeBus>>,
    spent_ledger: std::sync::OnceLock<Arc<dyn SpentLedger>>,
    only: Option<Revision>,
}

/// Carries [`Change`]s to the other instances of this server (for example
/// `backchannel::postgres::PgChangeBus`, over PostgreSQL `NOTIFY`). The bus delivers what other
/// instances publish through [`Backchannel::deliver`].
pub trait ChangeBus: Send + Sync + 'static {
    /// Tell the other instances about `change`.
    fn publish(&self, change: &Change) -> futures::future::BoxFuture<'static, ()>;
}

/// Remembers spent rounds for every instance of this server (for example
/// `backchannel::postgres::PgSpentRounds`), so a sealed `requestState` answers once in all.
pub trait SpentLedger: Send + Sync + 'static {
    /// Mark round `round` of the call `nonce` as used until `expires_ms` (unix milliseconds):
    /// `Ok(true)` if it was not used before, `Ok(false)` if it was, `Err` if the ledger could
    /// not be asked (the retry is then refused).
    fn spend(&self, nonce: &str, round: u32, expires_ms: u64, now_ms: u64) -> Spend;
}

/// What [`SpentLedger::spend`] returns: whether the round was unspent, once the ledger knows.
pub type Spend = futures::future::BoxFuture<'static, Result<bool, LedgerError>>;

/// A [`SpentLedger`] could not be asked (the retry is then refused).
#[derive(Debug, thiserror::Error)]
#[error("the ledger of spent rounds could not be asked: {0}")]
pub struct LedgerError(pub String);

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
            .field("ask_timeout", &self.inner.shared.ask_timeout)
            .field("state_ttl", &self.inner.state_ttl)
            .field("max_rounds", &self.inner.max_rounds)
            .finish_non_exhaustive()
    }
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
    /// Directly, as the revision does it: server-to-client requests on a session
    /// (2025-11-25), or `input_required` results the client retries (2026-07-28).
    Direct(Revision),
    /// Inside a task: questions park the task until `tasks/update`.
    Task(tasks::TaskHandle),
}

/// What one drive of a call starts from.
struct Start<'a> {
    binding: &'a CallBinding<'a>,
    mode: Mode,
    escalation: Escalation,
    /// This request's `inputResponses` (2026-07-28).
    input_responses: Option<InputResponses>,
    /// This request's sealed state (2026-07-28).
    request_state: Option<String>,
    /// The answers gathered before the call became a task.
    resumed: Option<Sealed>,
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

    /// The revision this layer is limited to, if any ([`BackchannelBuilder::only_revision`]).
    pub fn only_revision(&self) -> Option<Revision> {
        self.inner.only
    }

    /// The protocol versions this server agrees to: every one rmcp knows, or those of the one
    /// revision it is limited to (2026-07-28 and later, or those before it).
    pub fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        use rmcp::model::ProtocolVersion;
        let Some(only) = self.inner.only else {
            return std::borrow::Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS);
        };
        std::borrow::Cow::Owned(
            ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .filter(|version| Revision::of(version) == only)
                .cloned()
                .collect(),
        )
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
        let span = crate::telemetry::span_for_call(rc.extensions.get::<http::request::Parts>());
        let call = async {
            let support = self.inner.task_tools.get(params.name.as_ref()).copied();
            // Parsing the capabilities costs; only task tools need them here.
            let client_tasks = support.is_some() && takes_tasks(&rc);
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
            let start = Start {
                binding: &binding,
                mode: Mode::Direct(revision_of(&rc)),
                escalation,
                input_responses: params.input_responses.clone(),
                request_state: params.request_state.clone(),
                resumed: None,
            };
            let driven = self
                .drive(rc, start, |rc| tool_run(router, service, &params, rc))
                .await?;
            match driven {
                Driven::Complete(CallToolResponse::InputRequired(_)) => {
                    Err(ErrorData::internal_error(
                        "a tool driven by backchannel must ask through Ctx, not return input_required",
                        None,
                    ))
                }
                Driven::Complete(response) => Ok(response),
                Driven::InputRequired(result) => Ok(CallToolResponse::InputRequired(result)),
                Driven::Escalate(rc, sealed) => {
                    let binding = binding.into_owned();
                    self.spawn_task(
                        router.clone(),
                        service.clone(),
                        params,
                        *rc,
                        binding,
                        sealed,
                    )
                    .await
                }
            }
        };
        tracing::Instrument::instrument(call, span).await
    }

    /// The caller's identity: the builder's `principal`, else the [`crate::principal::Principal`]
    /// an HTTP layer put into the request.
    fn principal_of(&self, rc: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(principal) = &self.inner.principal {
            return principal(rc);
        }
        rc.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::principal::Principal>())
            .map(|principal| principal.0.clone())
    }

    /// Whether any tool is registered to run as a task ([`BackchannelBuilder::task_tool`]): a
    /// server declares the tasks extension only then.
    pub fn runs_tasks(&self) -> bool {
        !self.inner.task_tools.is_empty()
    }

    /// Whether a call made by `rc` may become a task (tasks extension): the client declared
    /// the extension, and, on a revision with sessions (2025-11-25), where a task is the
    /// requester's choice, the request asked for one with its `task` field. Otherwise the call
    /// runs as a plain call, its questions asked on the session.
    pub fn takes_tasks(&self, rc: &RequestContext<RoleServer>) -> bool {
        takes_tasks(rc)
    }

    /// Who a task started by `rc` belongs to, as the layer binds its tasks: the caller's
    /// principal, else its 2025-11-25 session, else the empty string (anyone). A server that
    /// keeps tasks of its own (a gateway relaying an upstream's) binds them the same way.
    pub fn owner_key(&self, rc: &RequestContext<RoleServer>) -> String {
        self.owner_of(rc).key()
    }

    /// Who a task started by `rc` belongs to. A session is an owner only for a request of a
    /// revision with sessions (the HTTP edge drops the header from any other).
    fn owner_of(&self, rc: &RequestContext<RoleServer>) -> Owner {
        if let Some(principal) = self.principal_of(rc) {
            return Owner::Principal(principal);
        }
        if !revision_of(rc).has_sessions() {
            return Owner::Anyone;
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
        let start = Start {
            binding: &binding,
            mode: Mode::Direct(revision_of(&rc)),
            escalation: Escalation::NotAvailable,
            input_responses,
            request_state,
            resumed: None,
        };
        let driven = self
            .drive(rc, start, |rc| {
                let params = params.clone();
                async move {
                    let context = PromptContext::new(service, params.name, params.arguments, rc);
                    router.get_prompt(context).await
                }
            })
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

    /// Run a body through its rounds: open the sealed state, run the body, and while it
    /// leaves questions open, get them answered as the mode does it and run it again.
    async fn drive<R, F, Fut>(
        &self,
        rc: RequestContext<RoleServer>,
        start: Start<'_>,
        mut body: F,
    ) -> Result<Driven<R>, ErrorData>
    where
        F: FnMut(RequestContext<RoleServer>) -> Fut,
        Fut: Future<Output = Result<R, ErrorData>>,
    {
        let revision = match &start.mode {
            Mode::Direct(revision) => *revision,
            Mode::Task(_) => revision_of(&rc),
        };
        let sealed = self.open_state(&start).await?;
        let mut round = sealed.round;
        let call = self.new_call(revision, &start, sealed);
        let mut first = Some(rc);
        loop {
            call.runs.fetch_add(1, Ordering::SeqCst);
            // The first run takes the request itself; later ones (only bodies that took a Ctx
            // and asked get there) take clones of the snapshot its extractor made.
            let run_rc = match first.take() {
                Some(rc) => rc,
                None => call.rc().clone(),
            };
            let result = body(insert_ctx(run_rc, Ctx::new(call.clone()))).await;
            if let Some((requests, state)) = lock(&call.pass_out).take() {
                return self.pass_on(&call, &start, requests, state, round + 1);
            }
            let pending = call.take_pending();
            if pending.is_empty() {
                if *lock(&call.escalation) == Escalation::Requested {
                    return Ok(escalation(&call));
                }
                return result.map(Driven::Complete);
            }
            round += 1;
            if round > self.inner.max_rounds {
                return Err(self.too_many_rounds());
            }
            match &start.mode {
                Mode::Direct(revision) if revision.has_sessions() => {
                    self.ask_in_session(&call, pending).await?;
                }
                Mode::Direct(_) => {
                    return Ok(Driven::InputRequired(self.input_required(
                        &call,
                        pending,
                        round,
                        start.binding,
                    )));
                }
                Mode::Task(task) => tasks::ask_in_task(&call, task, pending).await,
            }
        }
    }

    fn too_many_rounds(&self) -> ErrorData {
        ErrorData::internal_error(
            format!(
                "the call needed more than {} rounds of questions; it was stopped",
                self.inner.max_rounds
            ),
            None,
        )
    }

    /// The body passed another server's round on ([`Ctx::pass_round`]): its questions as they
    /// are, its state sealed into the layer's (bound to the call, spent once, expiring).
    fn pass_on<R>(
        &self,
        call: &Call,
        start: &Start<'_>,
        requests: InputRequests,
        state: Option<String>,
        round: u32,
    ) -> Result<Driven<R>, ErrorData> {
        if !call.passes_rounds() {
            return Err(ErrorData::internal_error(
                "a round can be passed on only to a 2026-07-28 client, outside a task",
                None,
            ));
        }
        if round > self.inner.max_rounds {
            return Err(self.too_many_rounds());
        }
        let passed = crate::state::PassedOn {
            keys: requests.keys().cloned().collect(),
            state,
        };
        let sealed = self.next_state(call, round, BTreeMap::new(), Some(passed));
        let sealed = self.inner.codec.seal(start.binding, &sealed);
        Ok(Driven::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(sealed),
        )))
    }

    /// The answers so far: from the request's sealed state (2026-07-28, verified and spent),
    /// from the call that became a task, or none.
    async fn open_state(&self, start: &Start<'_>) -> Result<Sealed, ErrorData> {
        let stateless = matches!(start.mode, Mode::Direct(r) if !r.has_sessions());
        match (&start.resumed, &start.request_state) {
            (Some(resumed), _) => Ok(resumed.clone()),
            (None, Some(state)) if stateless => {
                let opened = self.open_sealed(start.binding, state, |_| true).await?;
                Ok(opened.unwrap_or_default())
            }
            // The nonce is drawn lazily (only calls that ask need one).
            _ => Ok(Sealed::default()),
        }
    }

    /// Open a request's sealed state for `binding` and, when `accept` takes it, spend it (here,
    /// then across instances); `None` when `accept` refuses it (nothing spent).
    async fn open_sealed(
        &self,
        binding: &CallBinding<'_>,
        state: &str,
        accept: impl FnOnce(&Sealed) -> bool,
    ) -> Result<Option<Sealed>, ErrorData> {
        let clock = &self.inner.shared.clock;
        let opened = self
            .inner
            .codec
            .open(binding, state, clock)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        if !accept(&opened) {
            return Ok(None);
        }
        let now = clock.now_ms();
        let spent = || ErrorData::invalid_params(crate::state::StateError::Spent.to_string(), None);
        if !self
            .inner
            .spent
            .spend(&opened.nonce, opened.round, opened.exp, now)
        {
            return Err(spent());
        }
        // Then across instances: another may have been answered this round already.
        if let Some(ledger) = self.inner.spent_ledger.get() {
            match ledger
                .spend(&opened.nonce, opened.round, opened.exp, now)
                .await
            {
                Ok(true) => {}
                Ok(false) => return Err(spent()),
                Err(error) => {
                    tracing::warn!(%error, "a spent round could not be recorded; refusing the retry");
                    return Err(ErrorData::internal_error(
                        "the answer could not be checked against other instances; \
                         start the call again",
                        None,
                    ));
                }
            }
        }
        if let Some(trace) = opened.trace.as_deref()
            && crate::telemetry::exporting()
        {
            let asked: Vec<(&str, &str, u64)> = opened
                .asked
                .iter()
                .map(|(key, asked)| (asked.kind.method(), key.as_str(), asked.at))
                .collect();
            crate::telemetry::continue_call(trace, &asked);
        }
        Ok(Some(opened))
    }

    fn new_call(&self, revision: Revision, start: &Start<'_>, mut sealed: Sealed) -> Arc<Call> {
        let stateless = matches!(start.mode, Mode::Direct(r) if !r.has_sessions());
        Arc::new(Call {
            revision,
            rc: std::sync::OnceLock::new(),
            caps: std::sync::OnceLock::new(),
            nonce: if sealed.nonce.is_empty() {
                std::sync::OnceLock::new()
            } else {
                std::sync::OnceLock::from(std::mem::take(&mut sealed.nonce))
            },
            // A task outlives the request that started it: its own cancellation is
            // `tasks/cancel`, which drops the task's future; the request's token fires when
            // that request ends.
            task_ct: match &start.mode {
                Mode::Task(task) => Some(task.local.cancel.clone()),
                Mode::Direct(_) => None,
            },
            shared: self.inner.shared.clone(),
            answers: Mutex::new(std::mem::take(&mut sealed.answers)),
            responses: if stateless {
                start.input_responses.clone().unwrap_or_default()
            } else {
                BTreeMap::new()
            },
            asked: std::mem::take(&mut sealed.asked),
            escalation: Mutex::new(start.escalation),
            pending: Mutex::new(BTreeMap::new()),
            last_progress: Mutex::new(sealed.progress),
            task_status: match &start.mode {
                Mode::Task(task) => Some(task.status_sink()),
                Mode::Direct(_) => None,
            },
            steps: match &start.mode {
                Mode::Task(task) => task.ledger(),
                Mode::Direct(_) => crate::tasks::Ledger::default(),
            },
            status_at: Mutex::new(None),
            runs: AtomicU32::new(0),
            trace: sealed.trace.take(),
            task_round: AtomicU32::new(match start.mode {
                Mode::Task(_) => sealed.round,
                Mode::Direct(_) => 0,
            }),
            passed_in: sealed.passed.take(),
            pass_out: Mutex::new(None),
        })
    }

    /// 2025-11-25: send each open question as a request to the client, at once, and wait for
    /// all of them (each with its timeout).
    async fn ask_in_session(
        &self,
        call: &Call,
        pending: BTreeMap<String, Pending>,
    ) -> Result<(), ErrorData> {
        let reach = Reach::of(&call.rc().extensions, call.peer());
        let origin = &call.rc().id;
        let asks = pending.into_iter().map(|(key, pending)| {
            let reach = &reach;
            async move {
                let _waiting = crate::metrics::Waiting::start();
                let answer =
                    sampling_roots_logging::fulfil(reach, origin, pending.request, pending.timeout)
                        .await;
                (key, answer)
            }
        });
        let answers = tokio::select! {
            answers = futures::future::join_all(asks) => answers,
            () = call.rc().ct.cancelled() => {
                return Err(ErrorData::internal_error("the request was cancelled", None));
            }
        };
        lock(&call.answers).extend(answers);
        Ok(())
    }

    /// 2026-07-28: the open questions as an `input_required` result, with the answers so far
    /// and the questions asked sealed into its `requestState`.
    fn input_required(
        &self,
        call: &Call,
        pending: BTreeMap<String, Pending>,
        round: u32,
        binding: &CallBinding<'_>,
    ) -> InputRequiredResult {
        let now = self.inner.shared.clock.now_ms();
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
            let timeout = timeout.as_millis() as u64;
            asked.insert(
                key.clone(),
                Asked {
                    kind,
                    at: now,
                    timeout,
                },
            );
            requests.insert(key, request);
        }
        let state = self.next_state(call, round, asked, None);
        let sealed = self.inner.codec.seal(binding, &state);
        InputRequiredResult::new(Some(requests), Some(sealed))
    }

    /// The state a 2026-07-28 round seals for the retry: the answers so far, this round's
    /// questions (`asked`) or the round passed on from another server (`passed`), and what
    /// every round carries (expiry, round, nonce, progress, trace).
    fn next_state(
        &self,
        call: &Call,
        round: u32,
        asked: BTreeMap<String, Asked>,
        passed: Option<crate::state::PassedOn>,
    ) -> Sealed {
        Sealed {
            exp: self.inner.shared.clock.now_ms() + self.inner.state_ttl.as_millis() as u64,
            round,
            nonce: call.nonce().to_owned(),
            answers: lock(&call.answers).clone(),
            asked,
            progress: *lock(&call.last_progress),
            trace: call
                .trace
                .clone()
                .or_else(crate::telemetry::current_traceparent),
            passed,
        }
    }
}

/// A [`Backchannel`] that does not keep it alive.
#[derive(Clone)]
pub struct WeakBackchannel(std::sync::Weak<Inner>);

impl WeakBackchannel {
    /// The layer, while anything else still holds it.
    pub fn upgrade(&self) -> Option<Backchannel> {
        self.0.upgrade().map(|inner| Backchannel { inner })
    }
}

impl std::fmt::Debug for WeakBackchannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeakBackchannel")
    }
}

/// The revision a request arrived on (2025-11-25 when it names none).
/// See [`Backchannel::takes_tasks`].
fn takes_tasks(rc: &RequestContext<RoleServer>) -> bool {
    rc.client_capabilities()
        .is_some_and(|caps| caps.supports_tasks())
        && (!revision_of(rc).has_sessions()
            || rc
                .extensions
                .get::<http::request::Parts>()
                .is_some_and(|parts| {
                    parts
                        .extensions
                        .get::<crate::revision::TaskAsked>()
                        .is_some()
                }))
}

fn revision_of(rc: &RequestContext<RoleServer>) -> Revision {
    rc.protocol_version()
        .map_or(Revision::V2025_11_25, |version| Revision::of(&version))
}

/// The body asked to continue as a task: the request and the answers so far.
fn escalation<R>(call: &Call) -> Driven<R> {
    Driven::Escalate(
        Box::new(call.rc().clone()),
        Sealed {
            answers: lock(&call.answers).clone(),
            nonce: call.nonce().to_owned(),
            trace: call.trace.clone(),
            ..Sealed::default()
        },
    )
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
