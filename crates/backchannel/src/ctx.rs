//! [`Ctx`], what a tool body holds: progress, logging and the questions it can ask its client
//! (forms, URLs, sampling, roots), the same on every revision. An ask either returns its answer
//! or suspends the body with [`Suspend`] until the layer has one.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::handler::server::common::{AsRequestContext, FromContextPart};
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest, InputRequests,
    ListRootsResult, ProgressNotification, ProgressNotificationParam, ProgressToken,
    RequestMetaObject, ServerNotification,
};
use rmcp::service::{ElicitationSafe, RequestContext};
use rmcp::{ErrorData, RoleServer};
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::call::{Call, Escalation, Pending};
use crate::outcome::{Elicited, RootsListed, Sampled, StepError, UrlElicited};
use crate::reach::Reach;
use crate::revision::Revision;
use crate::sampling_roots_logging::{self, LogLevel};
use crate::state::{Answer, AskKind};
use crate::util::lock;

/// How often a task's progress is written to its status message at most (the last step is
/// always written): a body reporting every item must not write the task store that often.
pub const TASK_PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Returned by an ask that has no answer yet. Propagate it with `?`: the layer gathers every
/// ask still open when the body ends, gets the answers, and runs the body again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "propagate a Suspend with `?` so the layer can fetch the answer"]
pub struct Suspend(pub(crate) ());

/// Why [`Ctx::ask_now`] has no answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NotAnswered {
    /// The call has no session to ask on (2026-07-28, or inside a task).
    NoSession,
    /// The client did not declare that it answers this kind of question.
    Unsupported,
    /// The client answered with this error.
    Refused(ErrorData),
    /// No answer came within the ask timeout.
    TimedOut,
    /// The call was cancelled while it waited.
    Cancelled,
}

/// A round another server asked, as the client answered it ([`Ctx::passed_round`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassedRound {
    /// The other server's `requestState` of that round, as it gave it.
    pub state: Option<String>,
    /// The client's answers, by the keys that round asked.
    pub responses: std::collections::BTreeMap<String, serde_json::Value>,
}

/// The context of one tool (or prompt) call, taken as an argument by a `#[tool]` function.
///
/// Cheap to clone. Asks (`elicit`, `elicit_url`, `sample`, `roots`) return `Err(Suspend)` until
/// their answer is known; propagate it with `?`. Asks made before the first `?` go out together
/// in one round.
#[derive(Debug, Clone)]
pub struct Ctx {
    call: Arc<Call>,
    timeout: Option<Duration>,
    question_meta: Option<RequestMetaObject>,
}

impl Ctx {
    pub(crate) fn new(call: Arc<Call>) -> Self {
        Self {
            call,
            timeout: None,
            question_meta: None,
        }
    }

    /// The revision of the wire this call arrived on.
    pub fn revision(&self) -> Revision {
        self.call.revision
    }

    /// How many times the body has started for this call (1 on the first run).
    pub fn run(&self) -> u32 {
        self.call.runs.load(Ordering::SeqCst)
    }

    /// The request's `_meta`, as the client sent it.
    pub fn meta(&self) -> &RequestMetaObject {
        &self.call.rc().meta
    }

    /// The request's extensions. Over HTTP they hold the request's `http::request::Parts`,
    /// whose own extensions carry whatever middleware put there (an authenticated user, say).
    pub fn extensions(&self) -> &rmcp::model::Extensions {
        &self.call.rc().extensions
    }

    /// The client's capabilities for this request (per-request on 2026-07-28, from
    /// `initialize` on 2025-11-25).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        self.call.caps()
    }

    /// The progress token the client sent, if any.
    pub fn progress_token(&self) -> Option<ProgressToken> {
        self.call.rc().meta.get_progress_token()
    }

    /// Fires when the client cancels the request.
    pub fn cancellation(&self) -> &CancellationToken {
        self.call.ct()
    }

    /// A view of this context whose asks wait at most `timeout` for the person.
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            timeout: Some(timeout),
            ..self.clone()
        }
    }

    /// A view of this context whose questions carry `meta` as their `_meta`, for example a
    /// conversation id a host uses to route the question to the right screen.
    pub fn with_question_meta(&self, meta: RequestMetaObject) -> Self {
        Self {
            question_meta: Some(meta),
            ..self.clone()
        }
    }

    fn ask_timeout(&self) -> Duration {
        self.timeout.unwrap_or(self.call.shared.ask_timeout)
    }

    /// Continue this call as a task (tasks extension) from here on, when the tool is registered
    /// for tasks and the client declared the extension; otherwise continue synchronously.
    /// Code before it runs once more inside the task (replay), with the answers so far.
    pub async fn escalate(&self) -> Result<(), Suspend> {
        let mut escalation = lock(&self.call.escalation);
        match *escalation {
            Escalation::NotAvailable | Escalation::InTask => Ok(()),
            Escalation::Allowed | Escalation::Requested => {
                *escalation = Escalation::Requested;
                Err(Suspend(()))
            }
        }
    }

    /// Whether this call's questions go to the client as `input_required` rounds that it
    /// answers by retrying (a 2026-07-28 request, not inside a task): only then may the body
    /// pass another server's round on ([`Ctx::pass_round`]).
    pub fn passes_rounds(&self) -> bool {
        self.call.passes_rounds()
    }

    /// End this run with another server's `input_required` round, passed on to the client as
    /// it is: its questions under that server's keys, and its `requestState` sealed inside the
    /// layer's own (bound to this call and caller, answering once, expiring as the layer's
    /// does), so the client never holds it unwrapped. The client's retry runs the body again,
    /// which finds that state and the answers in [`Ctx::passed_round`] and makes the other
    /// server's next request with them. For a body that relays a call to another server (a
    /// gateway), when [`Ctx::passes_rounds`]; otherwise the call ends with an internal error.
    /// Return the `Suspend` with `?` or `Err`.
    pub fn pass_round(&self, requests: InputRequests, state: Option<String>) -> Suspend {
        *lock(&self.call.pass_out) = Some((requests, state));
        Suspend(())
    }

    /// The round this run continues when the previous request passed one on
    /// ([`Ctx::pass_round`]): the other server's state, and the client's answers to the keys
    /// that round asked (answers to other keys are dropped; their content is the other
    /// server's to check).
    pub fn passed_round(&self) -> Option<PassedRound> {
        let passed = self.call.passed_in.as_ref()?;
        Some(PassedRound {
            state: passed.state.clone(),
            responses: passed
                .keys
                .iter()
                .filter_map(|key| {
                    self.call
                        .responses
                        .get(key)
                        .map(|answer| (key.clone(), answer.clone()))
                })
                .collect(),
        })
    }

    /// Whether [`Ctx::ask_now`] can ask: the call came on a 2025-11-25 session (not inside a
    /// task), which takes server-to-client requests while the call runs.
    pub fn asks_now(&self) -> bool {
        self.call.revision.has_sessions() && self.call.task_ct.is_none()
    }

    /// Ask `request` of the client at once, as a server-to-client request on this call's
    /// 2025-11-25 session, and wait for the client's answer (at most the ask timeout): the
    /// answer comes back as the JSON the client sent (an `ElicitResult`, a
    /// `CreateMessageResult`, a `ListRootsResult`). The body is not run again for it, and
    /// nothing of it is kept: for a body that relays another server's question as that server
    /// asked it (a gateway). Questions the client did not declare it answers are not sent.
    pub async fn ask_now(&self, request: InputRequest) -> Result<serde_json::Value, NotAnswered> {
        if !self.asks_now() {
            return Err(NotAnswered::NoSession);
        }
        let kind = match &request {
            InputRequest::Elicitation(asked) => match asked.params {
                ElicitRequestParams::UrlElicitationParams { .. } => AskKind::Url,
                _ => AskKind::Form,
            },
            InputRequest::CreateMessage(_) => AskKind::Sampling,
            InputRequest::ListRoots(_) => AskKind::Roots,
            _ => return Err(NotAnswered::Unsupported),
        };
        let caps = self.call.caps();
        let declared = match kind {
            AskKind::Form | AskKind::Url => self.can_elicit(kind),
            AskKind::Sampling => caps.sampling.is_some(),
            AskKind::Roots => caps.roots.is_some(),
        };
        if !declared {
            return Err(NotAnswered::Unsupported);
        }
        let reach = Reach::of(&self.call.rc().extensions, self.call.peer());
        let origin = &self.call.rc().id;
        let answer = tokio::select! {
            answer = sampling_roots_logging::fulfil(&reach, origin, request, self.ask_timeout()) => answer,
            () = self.call.ct().cancelled() => return Err(NotAnswered::Cancelled),
        };
        match answer {
            Answer::Elicit {
                action, content, ..
            } => {
                let mut result = rmcp::model::ElicitResult::new(action);
                result.content = content;
                serde_json::to_value(result).map_err(|_| NotAnswered::Unsupported)
            }
            Answer::Sampled { result } | Answer::Roots { result } => Ok(result),
            Answer::Refused { code, message } => Err(NotAnswered::Refused(ErrorData::new(
                rmcp::model::ErrorCode(code),
                message,
                None,
            ))),
            Answer::TimedOut => Err(NotAnswered::TimedOut),
            Answer::Failed { message } => Err(NotAnswered::Refused(ErrorData::internal_error(
                message, None,
            ))),
        }
    }

    /// The `_meta` the client sent with its answer to the form or URL question `key`, once it
    /// answered (on either revision, and on every later run of the body).
    pub fn answer_meta(&self, key: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
        match lock(&self.call.answers).get(key)? {
            Answer::Elicit { meta, .. } => meta.clone(),
            _ => None,
        }
    }

    /// Why the client answered the question `key` as it did, when it said
    /// ([`crate::ANSWER_REASON_META_KEY`] in the answer's `_meta`): a tool tells a person's No
    /// from a question nobody saw. `None` when the client did not say.
    pub fn answer_reason(&self, key: &str) -> Option<crate::AnswerReason> {
        let meta = self.answer_meta(key)?;
        crate::AnswerReason::from_name(meta.get(crate::ANSWER_REASON_META_KEY)?.as_str()?)
    }

    /// Whether this body is running inside a task.
    pub fn in_task(&self) -> bool {
        *lock(&self.call.escalation) == Escalation::InTask
    }

    /// Run `work` once per task: a durable step. Inside a task, the step's result is recorded
    /// with the task (fenced by this instance's lease), and when the body runs again (after an
    /// answer, or on the instance that took the task over when this one stopped) a recorded
    /// step returns its recorded result without running `work`. Outside a task a step is
    /// recorded for the call's later runs in this process (a 2025-11-25 call asks on its
    /// session, then runs again); a 2026-07-28 round is a new request, and runs it again.
    ///
    /// What is exactly once: the record. `work` itself runs at least once: an instance that
    /// stops after `work` and before the record leaves it to run again on the next. Make its
    /// effect idempotent under [`Ctx::step_key`] (pass the key to the system it writes to) and
    /// the effect happens once too. A failed `work` (`Err`) records nothing.
    ///
    /// Names are unique within a task; a loop names each turn (`"shipment ORD-10041"`).
    ///
    /// ```no_run
    /// # async fn cancel(id: &str, key: &str) -> Result<u64, std::io::Error> { Ok(0) }
    /// # async fn body(ctx: backchannel::Ctx) -> backchannel::ToolResult<String> {
    /// let key = ctx.step_key("cancel");
    /// let refund = ctx.step("cancel", cancel("ORD-10002", &key)).await?;
    /// # Ok(format!("refund {refund}"))
    /// # }
    /// ```
    pub async fn step<T, E, F>(&self, name: &str, work: F) -> Result<T, StepError<E>>
    where
        T: serde::Serialize + DeserializeOwned,
        F: std::future::Future<Output = Result<T, E>>,
    {
        let ledger = &self.call.steps;
        let unreadable = |error: serde_json::Error| StepError::Unreadable {
            name: name.to_owned(),
            reason: error.to_string(),
        };
        if let Some(text) = ledger.recorded(name).await.map_err(lost)? {
            return serde_json::from_str(&text).map_err(unreadable);
        }
        let value = work.await.map_err(StepError::Failed)?;
        let text = serde_json::to_string(&value).map_err(unreadable)?;
        ledger.record(name, text).await.map_err(lost)?;
        Ok(value)
    }

    /// Whether the step `name` is recorded already: a body that runs again can tell the steps
    /// it skips, to report progress only for new work.
    pub async fn recorded(&self, name: &str) -> bool {
        matches!(self.call.steps.recorded(name).await, Ok(Some(_)))
    }

    /// A key for the step `name` that stays the same every time the step runs: inside a task
    /// the task's id and the name; outside, the call's own nonce (kept across a 2026-07-28
    /// call's rounds) and the name. Pass it to the system the step writes to, so a step that
    /// runs again (see [`Ctx::step`]) is recognised there.
    pub fn step_key(&self, name: &str) -> String {
        match self.call.steps.task() {
            Some(task) => format!("{task}/{name}"),
            None => format!("{}/{name}", self.call.nonce()),
        }
    }

    /// Report progress. Sent only when the client asked for progress (sent a token), and only
    /// when `value` is greater than the last value sent for this request; anything else is
    /// dropped and noted in a debug log. Inside a task it is also the task's status message
    /// (`message`, else a percentage), which `tasks/get` shows, written at most every
    /// [`TASK_PROGRESS_EVERY`]. Returns whether it was sent (or kept with the task).
    pub async fn progress(&self, value: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let token = self.call.rc().meta.get_progress_token();
        if token.is_none() && self.call.task_status.is_none() {
            return false;
        }
        {
            let mut last = lock(&self.call.last_progress);
            if !value.is_finite() || last.is_some_and(|previous| value <= previous) {
                tracing::debug!(
                    value,
                    last = ?*last,
                    "progress not sent: values must increase within a request"
                );
                return false;
            }
            *last = Some(value);
        }
        let kept = self.keep_task_progress(value, total, message).await;
        let Some(token) = token else {
            return kept;
        };
        let mut param = ProgressNotificationParam::new(token, value);
        param.total = total;
        param.message = message.map(str::to_owned);
        let notification =
            ServerNotification::ProgressNotification(ProgressNotification::new(param));
        let sent = self.call.notify(notification).await;
        if !sent {
            tracing::debug!("progress notification could not be sent: the request is over");
        }
        sent
    }

    /// Inside a task, keep the progress as the task's status message (at most every
    /// [`TASK_PROGRESS_EVERY`], and always the last step), where `tasks/get` shows it.
    /// Whether it was kept.
    async fn keep_task_progress(
        &self,
        value: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> bool {
        let Some(status) = &self.call.task_status else {
            return false;
        };
        let now = tokio::time::Instant::now();
        let last_step = total.is_some_and(|total| value >= total);
        {
            let mut at = lock(&self.call.status_at);
            if !last_step && at.is_some_and(|at| now < at + TASK_PROGRESS_EVERY) {
                return false;
            }
            *at = Some(now);
        }
        let text = match (message, total) {
            (Some(message), _) => message.to_owned(),
            (None, Some(total)) if total > 0.0 => format!("{:.0}%", value / total * 100.0),
            (None, _) => format!("{value}"),
        };
        (status.0)(text).await;
        true
    }

    /// Send a log message to the client, if the client wants messages of this level: on
    /// 2025-11-25 the session's `logging/setLevel`, on 2026-07-28 the request's
    /// `io.modelcontextprotocol/logLevel` (no level, no messages). Returns whether it was sent.
    pub async fn log(&self, level: LogLevel, logger: &str, data: impl serde::Serialize) -> bool {
        let threshold = if self.call.revision.has_sessions() {
            Some(
                self.call
                    .shared
                    .sessions
                    .log_level(
                        Reach::of(&self.call.rc().extensions, self.call.peer())
                            .session_key()
                            .as_ref(),
                    )
                    .unwrap_or(self.call.shared.default_log_level),
            )
        } else {
            sampling_roots_logging::request_log_level(&self.call.rc().meta)
        };
        let Some(threshold) = threshold else {
            return false;
        };
        if level < threshold {
            return false;
        }
        let data = serde_json::to_value(data).unwrap_or(serde_json::Value::Null);
        self.call
            .notify(sampling_roots_logging::log_notification(
                level, logger, data,
            ))
            .await
    }

    /// Ask the person to fill in a form described by `T` (its JSON schema is generated from
    /// the type; only flat objects of primitives and enums are allowed by the protocol).
    ///
    /// An accepted form whose content does not parse as `T` is asked again. An accepted form
    /// with no content is read as `{}`, so a `T` with defaults can stand for "submitted empty".
    pub async fn elicit<T>(
        &self,
        key: &str,
        message: impl Into<String>,
    ) -> Result<Elicited<T>, Suspend>
    where
        T: ElicitationSafe + DeserializeOwned + 'static,
    {
        if !self.can_elicit(AskKind::Form) {
            return Ok(Elicited::Unsupported);
        }
        let schema = match form_schema::<T>() {
            Ok(schema) => schema,
            Err(error) => {
                tracing::error!(%error, key, "form type has no valid elicitation schema");
                return Ok(Elicited::Unsupported);
            }
        };
        self.ask_form(key, message.into(), schema).await
    }

    /// Ask the person to fill in a form whose schema is made at run time (fields known only
    /// then, or wire details written by hand), the way [`Ctx::elicit`] asks one described by a
    /// type. The accepted content comes back as the JSON the client sent (`{}` when it sent
    /// none), for the caller to read.
    pub async fn elicit_form(
        &self,
        key: &str,
        message: impl Into<String>,
        schema: ElicitationSchema,
    ) -> Result<Elicited<serde_json::Value>, Suspend> {
        if !self.can_elicit(AskKind::Form) {
            return Ok(Elicited::Unsupported);
        }
        self.ask_form(key, message.into(), Arc::new(schema)).await
    }

    /// Ask for the form `schema` describes and read an accepted one as `T`.
    async fn ask_form<T: DeserializeOwned>(
        &self,
        key: &str,
        message: String,
        schema: Arc<ElicitationSchema>,
    ) -> Result<Elicited<T>, Suspend> {
        // Built only when the question goes out (an answered one needs none).
        let request = || {
            InputRequest::Elicitation(ElicitRequest::new(
                ElicitRequestParams::FormElicitationParams {
                    meta: self.question_meta.clone(),
                    message: message.clone(),
                    requested_schema: (*schema).clone(),
                },
            ))
        };
        let answer = self.answer_or_ask(key, AskKind::Form, &request)?;
        match answer {
            Answer::Elicit {
                action: ElicitationAction::Accept,
                content,
                ..
            } => {
                let content = content.unwrap_or_else(|| serde_json::json!({}));
                match serde_json::from_value::<T>(content) {
                    Ok(value) => Ok(Elicited::Accepted(value)),
                    Err(error) => {
                        tracing::debug!(%error, key, "accepted form does not match its schema; asking again");
                        Err(self.ask_again(key, AskKind::Form, &request))
                    }
                }
            }
            Answer::Elicit {
                action: ElicitationAction::Decline,
                ..
            } => Ok(Elicited::Declined),
            Answer::Elicit { .. } | Answer::Refused { .. } | Answer::Failed { .. } => {
                Ok(Elicited::Cancelled)
            }
            Answer::TimedOut => Ok(Elicited::TimedOut),
            Answer::Sampled { .. } | Answer::Roots { .. } => {
                Err(self.ask_again(key, AskKind::Form, &request))
            }
        }
    }

    /// Ask the person to open `url` (URL-mode elicitation), for interactions that must not pass
    /// through the client, such as signing in or paying.
    pub async fn elicit_url(
        &self,
        key: &str,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<UrlElicited, Suspend> {
        if !self.can_elicit(AskKind::Url) {
            return Ok(UrlElicited::Unsupported);
        }
        let elicitation_id = self.elicitation_id(key);
        let (message, url) = (message.into(), url.into());
        let request = || {
            InputRequest::Elicitation(ElicitRequest::new(
                ElicitRequestParams::UrlElicitationParams {
                    meta: self.question_meta.clone(),
                    message: message.clone(),
                    url: url.clone(),
                    elicitation_id: elicitation_id.clone(),
                },
            ))
        };
        let answer = self.answer_or_ask(key, AskKind::Url, &request)?;
        Ok(match answer {
            Answer::Elicit {
                action: ElicitationAction::Accept,
                ..
            } => UrlElicited::Accepted { elicitation_id },
            Answer::Elicit {
                action: ElicitationAction::Decline,
                ..
            } => UrlElicited::Declined,
            Answer::Elicit { .. } | Answer::Refused { .. } | Answer::Failed { .. } => {
                UrlElicited::Cancelled
            }
            Answer::TimedOut => UrlElicited::TimedOut,
            Answer::Sampled { .. } | Answer::Roots { .. } => {
                return Err(self.ask_again(key, AskKind::Url, &request));
            }
        })
    }

    /// Tell the client that the out-of-band interaction of a URL question has finished
    /// (`notifications/elicitation/complete`). Only 2025-11-25 sessions have a channel for it;
    /// returns whether it was sent.
    pub async fn url_elicitation_complete(&self, elicitation_id: &str) -> bool {
        if !self.call.revision.has_sessions() {
            return false;
        }
        self.call
            .notify(sampling_roots_logging::elicitation_complete(elicitation_id))
            .await
    }

    /// Ask the client's model for a completion.
    pub async fn sample(
        &self,
        key: &str,
        request: CreateMessageRequestParams,
    ) -> Result<Sampled, Suspend> {
        if self.call.caps().sampling.is_none() {
            return Ok(Sampled::Unsupported);
        }
        let mut params = request;
        if params.meta.is_none() {
            params.meta = self.question_meta.clone();
        }
        let request = || sampling_roots_logging::sampling_request(params.clone());
        let answer = self.answer_or_ask(key, AskKind::Sampling, &request)?;
        match answer {
            Answer::Sampled { result } => {
                match serde_json::from_value::<CreateMessageResult>(result) {
                    Ok(result) => Ok(Sampled::Message(Box::new(result))),
                    Err(_) => Err(self.ask_again(key, AskKind::Sampling, &request)),
                }
            }
            Answer::Refused { code, message } => Ok(Sampled::Refused { code, message }),
            Answer::TimedOut => Ok(Sampled::TimedOut),
            Answer::Failed { message } => Ok(Sampled::Failed { message }),
            Answer::Elicit { .. } | Answer::Roots { .. } => {
                Err(self.ask_again(key, AskKind::Sampling, &request))
            }
        }
    }

    /// Ask the client which roots (folders) this server may use.
    pub async fn roots(&self, key: &str) -> Result<RootsListed, Suspend> {
        if self.call.caps().roots.is_none() {
            return Ok(RootsListed::Unsupported);
        }
        let request = sampling_roots_logging::list_roots_request;
        let answer = self.answer_or_ask(key, AskKind::Roots, &request)?;
        match answer {
            Answer::Roots { result } => match serde_json::from_value::<ListRootsResult>(result) {
                Ok(result) => Ok(RootsListed::Listed(result.roots)),
                Err(_) => Err(self.ask_again(key, AskKind::Roots, &request)),
            },
            Answer::Refused { code, message } => Ok(RootsListed::Failed { code, message }),
            Answer::TimedOut => Ok(RootsListed::TimedOut),
            Answer::Failed { message } => Ok(RootsListed::Failed {
                code: rmcp::model::ErrorCode::INTERNAL_ERROR.0,
                message,
            }),
            Answer::Elicit { .. } | Answer::Sampled { .. } => {
                Err(self.ask_again(key, AskKind::Roots, &request))
            }
        }
    }

    fn can_elicit(&self, kind: AskKind) -> bool {
        let Some(elicitation) = self.call.caps().elicitation.as_ref() else {
            return false;
        };
        match kind {
            // A client that declares `elicitation: {}` with neither mode supports forms.
            AskKind::Form => elicitation.form.is_some() || elicitation.url.is_none(),
            AskKind::Url => elicitation.url.is_some(),
            AskKind::Sampling | AskKind::Roots => false,
        }
    }

    fn answer_or_ask(
        &self,
        key: &str,
        kind: AskKind,
        request: &dyn Fn() -> InputRequest,
    ) -> Result<Answer, Suspend> {
        let mut answers = lock(&self.call.answers);
        if let Some(answer) = answers.get(key) {
            return Ok(answer.clone());
        }
        // A response is read only for a question the verified state says went out, and as the
        // kind of request that went out: anything else is asked (again).
        if let Some(value) = self.call.responses.get(key) {
            match self.call.asked.get(key) {
                Some(asked) if asked.kind == kind => {
                    if let Some(answer) = sampling_roots_logging::read_response(kind, value) {
                        let late = self.call.shared.clock.now_ms().saturating_sub(asked.at)
                            > asked.timeout;
                        let answer = if late { Answer::TimedOut } else { answer };
                        answers.insert(key.to_owned(), answer.clone());
                        return Ok(answer);
                    }
                    tracing::debug!(key, "malformed input response; asking again");
                }
                _ => tracing::debug!(key, "input response to a question not asked; asking"),
            }
        }
        drop(answers);
        Err(self.suspend(key, kind, request))
    }

    fn suspend(&self, key: &str, kind: AskKind, request: &dyn Fn() -> InputRequest) -> Suspend {
        let pending = Pending {
            kind,
            request: request(),
            timeout: self.ask_timeout(),
        };
        lock(&self.call.pending).insert(key.to_owned(), pending);
        Suspend(())
    }

    /// Forget a malformed answer and put the question out again in the next round.
    fn ask_again(&self, key: &str, kind: AskKind, request: &dyn Fn() -> InputRequest) -> Suspend {
        let answer = lock(&self.call.answers).remove(key);
        tracing::debug!(
            key,
            ?answer,
            "answer does not fit its question; asking again"
        );
        self.suspend(key, kind, request)
    }

    fn elicitation_id(&self, key: &str) -> String {
        let mut hasher = Sha256::new();
        hasher.update(self.call.nonce().as_bytes());
        hasher.update([0]);
        hasher.update(key.as_bytes());
        let digest = hasher.finalize();
        digest[..16].iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The form schema of `T`, made once per type (schemars generates it, rmcp checks it: too much
/// to repeat for every round of every call).
fn form_schema<T: ElicitationSafe + 'static>() -> Result<Arc<ElicitationSchema>, String> {
    type Forms =
        std::collections::HashMap<std::any::TypeId, Result<Arc<ElicitationSchema>, String>>;
    static FORMS: std::sync::LazyLock<std::sync::RwLock<Forms>> =
        std::sync::LazyLock::new(Default::default);
    let id = std::any::TypeId::of::<T>();
    if let Some(found) = FORMS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&id)
    {
        return found.clone();
    }
    let made = ElicitationSchema::from_type::<T>()
        .map(Arc::new)
        .map_err(|error| error.to_string());
    FORMS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(id, made.clone());
    made
}

impl<C: AsRequestContext> FromContextPart<C> for Ctx {
    fn from_context_part(context: &mut C) -> Result<Self, ErrorData> {
        let rc = context.as_request_context();
        let ctx = rc.extensions.get::<Ctx>().cloned().ok_or_else(|| {
            ErrorData::internal_error(
                "backchannel::Ctx is only available inside a call driven by Backchannel",
                None,
            )
        })?;
        ctx.call.rc.get_or_init(|| {
            let mut snapshot = rc.clone();
            // Without the Ctx: Call → request → Ctx → Call would be a cycle.
            snapshot.extensions.remove::<Ctx>();
            snapshot
        });
        Ok(ctx)
    }
}

pub(crate) fn insert_ctx(
    mut rc: RequestContext<RoleServer>,
    ctx: Ctx,
) -> RequestContext<RoleServer> {
    rc.extensions.insert(ctx);
    rc
}

/// A step whose task was lost.
fn lost<E>(_: crate::tasks::Lost) -> StepError<E> {
    StepError::Lost
}
