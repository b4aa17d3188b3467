//! A call's rounds, where this crate teaches "round": a tool call or a prompt is one request
//! per round of questions; each round's questions are answered through the handler (or handed
//! back to a caller that relays them), a task is followed to its end or handed back, and a
//! round its caller stopped waiting for is cancelled at the server ([`Connection::call_tool`],
//! [`Connection::start_tool`], [`Connection::call_round`], [`Connection::get_prompt`],
//! [`Connection::prompt_round`], `tasks/*`). [`Connection::relay_round`] is `call_round` for a
//! caller that passes the result on unread: a plain complete result stays the text it came as.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, GetTaskParams, InputRequests, JsonObject,
    ProgressToken, RequestMetaObject, RequestParamsMeta as _, ServerResult, TaskPayload,
    UpdateTaskParams,
};
use rmcp::service::PeerRequestOptions;

use crate::connection::Connection;
use crate::direct::{Answer, DirectError};
use crate::error::HostError;
use crate::handler::HostHandler;
use crate::routes::{Call, CallTag};

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

/// A tool's result as [`Connection::relay_round`] hands it back.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Relayed {
    /// Read into rmcp's type.
    Read(CallToolResult),
    /// A plain complete result as the server wrote it (a 2026-07-28 server over HTTP; see
    /// [`backchannel::RawToolResult`]).
    Text(backchannel::RawToolResult),
}

impl Relayed {
    /// Whether the result says the tool failed (`isError: true`).
    pub fn is_error(&self) -> bool {
        match self {
            Relayed::Read(result) => result.is_error == Some(true),
            Relayed::Text(text) => text.is_error(),
        }
    }

    /// The result in rmcp's type.
    pub fn into_read(self) -> Result<CallToolResult, serde_json::Error> {
        match self {
            Relayed::Read(result) => Ok(result),
            Relayed::Text(text) => text.parse(),
        }
    }
}

/// A `tools/call` of `params` that asks for a task (2025-11-25: the request's `task` field),
/// which rmcp's typed request cannot carry.
pub(crate) fn task_requested(params: &CallToolRequestParams) -> ClientRequest {
    let mut value = serde_json::to_value(params).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.insert("task".to_owned(), serde_json::json!({}));
    }
    ClientRequest::CustomRequest(rmcp::model::CustomRequest::new("tools/call", Some(value)))
}

/// How far a call is driven here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drive {
    /// Every question answered through the handler, a task followed to its end.
    ToTheEnd,
    /// Every question answered, a task handed back.
    UntilTask,
    /// One request: questions and tasks handed back.
    OneRound,
}

/// Values of the caller's context; only the keys the configuration allows enter `_meta`.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    pub(crate) values: BTreeMap<String, serde_json::Value>,
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

/// A call in flight, listed while it lives.
pub(crate) struct InFlight<'a> {
    pub(crate) list: &'a Mutex<Vec<Arc<Call>>>,
    pub(crate) call: Arc<Call>,
}

impl<'a> InFlight<'a> {
    pub(crate) fn new(list: &'a Mutex<Vec<Arc<Call>>>, call: &Arc<Call>) -> Self {
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

/// The most rounds of questions one call may take.
pub(crate) const MAX_ROUNDS: usize = 10;

/// How long a call's result waits for its last progress notifications to be handled.
pub(crate) const PROGRESS_DRAIN_BOUND: Duration = Duration::from_secs(1);

/// Tells the server that a request its caller stopped waiting for (a timeout, a lost
/// `select!`, a caller that went away) is abandoned: dropped while armed, it sends
/// `notifications/cancelled` for the request, so the server stops the call instead of going on
/// with a result nobody reads (or with answers to its questions that were never given).
pub(crate) struct Abandoned {
    peer: rmcp::service::Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl Abandoned {
    pub(crate) fn armed(
        peer: &rmcp::service::Peer<RoleClient>,
        id: rmcp::model::RequestId,
    ) -> Self {
        Abandoned {
            peer: peer.clone(),
            id: Some(id),
        }
    }

    pub(crate) fn disarm(&mut self) {
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

impl<H: HostHandler> Connection<H> {
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
        let started = self
            .relay_or_call_round(
                name,
                arguments,
                context,
                input_responses,
                request_state,
                false,
            )
            .await?;
        self.read(started)
    }

    /// [`Connection::call_round`] for a caller that passes the result on unread (a gateway):
    /// a plain complete result comes back as the text the server wrote
    /// ([`Relayed::Text`], when the round went out on the direct path of a 2026-07-28 HTTP
    /// connection), any other as rmcp reads it.
    pub async fn relay_round(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
        input_responses: Option<rmcp::model::InputResponses>,
        request_state: Option<String>,
    ) -> Result<Started<Relayed>, HostError> {
        self.relay_or_call_round(
            name,
            arguments,
            context,
            input_responses,
            request_state,
            true,
        )
        .await
    }

    async fn relay_or_call_round(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
        input_responses: Option<rmcp::model::InputResponses>,
        request_state: Option<String>,
        as_text: bool,
    ) -> Result<Started<Relayed>, HostError> {
        let round = Some((input_responses, request_state));
        self.signed_in(|| {
            self.drive_call_from(
                name,
                arguments.clone(),
                context,
                Drive::OneRound,
                round.clone(),
                as_text,
            )
        })
        .await
    }

    /// `started` with its result read into rmcp's type.
    fn read(&self, started: Started<Relayed>) -> Result<Started, HostError> {
        Ok(match started {
            Started::Done(result) => Started::Done(
                result
                    .into_read()
                    .map_err(|e| self.call_error(format!("an unreadable result: {e}")))?,
            ),
            Started::Task(task) => Started::Task(task),
            Started::InputRequired {
                input_requests,
                request_state,
            } => Started::InputRequired {
                input_requests,
                request_state,
            },
        })
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

    /// `completion/complete` for argument `argument` of the prompt `prompt` (its name on the
    /// server): the values the server suggests for what was typed so far, `value` (`""` for
    /// every value it offers).
    pub async fn complete_prompt_argument(
        &self,
        prompt: &str,
        argument: &str,
        value: &str,
    ) -> Result<Vec<String>, HostError> {
        self.signed_in(|| async {
            self.service
                .complete_prompt_simple(prompt, argument, value)
                .await
                .map_err(|e| self.service_error(e))
        })
        .await
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
    pub(crate) async fn prompt_rounds(
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

    pub(crate) async fn drive_call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
        drive: Drive,
    ) -> Result<Started, HostError> {
        let started = self
            .drive_call_from(name, arguments, context, drive, None, false)
            .await?;
        self.read(started)
    }

    /// [`Connection::drive_call`], from an earlier round's answers and state when given; a
    /// plain complete result kept as its text when `as_text`.
    pub(crate) async fn drive_call_from(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: &CallContext,
        drive: Drive,
        earlier: Option<(Option<rmcp::model::InputResponses>, Option<String>)>,
        as_text: bool,
    ) -> Result<Started<Relayed>, HostError> {
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
                match self.rounds(params, &call, drive, as_text).await? {
                    // Boxed, as a task is rare and following one takes a large future.
                    Started::Task(task) if drive == Drive::ToTheEnd => {
                        Box::pin(self.follow_task(task, &call))
                            .await
                            .map(|result| Started::Done(Relayed::Read(result)))
                    }
                    other => Ok(other),
                }
            },
            span.clone(),
        )
        .await;
        let error = match &result {
            Ok(Started::Done(result)) if result.is_error() => Some("tool_error"),
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
    pub(crate) fn split_meta(
        &self,
        context: &CallContext,
    ) -> (Option<ProgressToken>, Option<RequestMetaObject>) {
        let mut meta = context.meta(&self.meta_allow);
        let caller_token = meta
            .remove("progressToken")
            .and_then(|value| serde_json::from_value::<ProgressToken>(value).ok());
        self.with_log_level(&mut meta);
        (caller_token, (!meta.is_empty()).then_some(meta))
    }

    /// Send one round of `call` and wait for its answer; dropped before the answer, the round
    /// is cancelled at the server.
    pub(crate) async fn round(
        &self,
        request: ClientRequest,
        call: &Arc<Call>,
    ) -> Result<ServerResult, HostError> {
        match self.round_as(request, call, false).await? {
            Answer::Read(result) => Ok(result),
            Answer::Text(text) => text
                .parse()
                .map(ServerResult::CallToolResult)
                .map_err(|e| self.call_error(format!("an unreadable result: {e}"))),
        }
    }

    /// [`Connection::round`], a plain complete result of a tool kept as its text when
    /// `as_text` and the round goes out on the direct path.
    async fn round_as(
        &self,
        request: ClientRequest,
        call: &Arc<Call>,
        as_text: bool,
    ) -> Result<Answer, HostError> {
        if let Some(direct) = &self.direct {
            let routed = self.service.service();
            let notified = |notification| routed.notified_directly(notification, call);
            match direct.round(&request, notified, as_text).await {
                None | Some(Err(DirectError::TokenRefused)) => {}
                Some(Ok(answer)) => return Ok(answer),
                Some(Err(DirectError::Refused(error))) => {
                    return Err(HostError::Refused {
                        connection: self.name.clone(),
                        error,
                    });
                }
                Some(Err(DirectError::Unauthorized(challenge))) => {
                    return Err(HostError::Unauthorized {
                        connection: self.name.clone(),
                        challenge,
                    });
                }
                Some(Err(DirectError::Failed(failure))) => {
                    return Err(self.call_error(failure.to_string()));
                }
            }
        }
        // Boxed: rmcp's futures are large, and on a direct connection every round's future
        // would hold them.
        Box::pin(self.round_on_session(request, call)).await
    }

    /// One round of `call` through rmcp's client: `request` sent, its response awaited.
    async fn round_on_session(
        &self,
        mut request: ClientRequest,
        call: &Arc<Call>,
    ) -> Result<Answer, HostError> {
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
        response
            .map(Answer::Read)
            .map_err(|e| self.service_error(e))
    }

    pub(crate) async fn rounds(
        &self,
        mut params: CallToolRequestParams,
        call: &Arc<Call>,
        drive: Drive,
        as_text: bool,
    ) -> Result<Started<Relayed>, HostError> {
        // Every round names the call's span, so the server's spans join the caller's trace.
        if let Some(traceparent) = backchannel::telemetry::current_traceparent() {
            params.set_traceparent(&traceparent);
        }
        // On 2025-11-25 a task is the requester's choice: a call that may become one asks.
        let ask_for_task = drive == Drive::UntilTask && self.has_sessions();
        for _ in 0..MAX_ROUNDS {
            let request = if ask_for_task {
                task_requested(&params)
            } else if drive == Drive::OneRound {
                // The only round: every answer to it is returned, so the params move into it.
                let params = std::mem::replace(&mut params, CallToolRequestParams::new(""));
                ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params))
            } else {
                ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params.clone()))
            };
            let result = match self.round_as(request, call, as_text).await? {
                Answer::Text(text) => return Ok(Started::Done(Relayed::Text(text))),
                Answer::Read(result) => result,
            };
            match result {
                ServerResult::CallToolResult(result) => {
                    return Ok(Started::Done(Relayed::Read(result)));
                }
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

    pub(crate) async fn answer_all(
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

    pub(crate) async fn follow_task(
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
}
