//! The layer's side of tasks: a call that escalates becomes a stored task whose body runs
//! here; `tasks/get`, `tasks/update` and `tasks/cancel` answer from the store (so any instance
//! sharing it answers them); questions inside a task wait for answers given on any instance;
//! and a task whose instance stopped is run again here when its tool is resumable.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask,
    GetTaskParams, GetTaskResult, InitializeRequestParams, InputRequest, InputRequests, JsonObject,
    RequestId, RequestMetaObject, Task, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::{Backchannel, Driven, Escalation, Mode, Owner, Start, WeakBackchannel, tool_run};
use crate::call::{Call, Pending};
use crate::sampling_roots_logging;
use crate::state::{CallBinding, Sealed};
use crate::tasks::{Resume, TaskRecord, TaskRuntime, TaskState};
use crate::util::lock;

/// Longest task id looked up (ours are 32 characters); longer ones are unknown.
const MAX_TASK_ID: usize = 128;

/// A body running inside a task: its id, and how it is stopped and woken.
#[derive(Clone)]
pub(crate) struct TaskHandle {
    pub(crate) id: String,
    pub(crate) local: crate::tasks::Local,
    runtime: Arc<TaskRuntime>,
}

impl TaskHandle {
    /// The body's recorded steps.
    pub(crate) fn ledger(&self) -> crate::tasks::Ledger {
        crate::tasks::Ledger::of_task(&self.id, self.runtime.clone(), self.local.clone())
    }

    /// Where the body's progress goes: the task's status message in the store.
    pub(crate) fn status_sink(&self) -> crate::call::StatusSink {
        let runtime = self.runtime.clone();
        let id = self.id.clone();
        crate::call::StatusSink(Arc::new(move |message| {
            let runtime = runtime.clone();
            let id = id.clone();
            Box::pin(async move {
                if let Err(error) = runtime
                    .store
                    .set_status(&id, message, runtime.now_ms())
                    .await
                {
                    tracing::debug!(task = %id, %error, "a task's progress could not be kept");
                }
            })
        }))
    }
}

/// What a run of the task needs besides its tool name, as stored with the task.
#[derive(Debug, Serialize, Deserialize)]
struct StoredRequest {
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(default)]
    meta: Option<RequestMetaObject>,
    #[serde(default)]
    principal: Option<String>,
    /// The 2025-11-25 session's `initialize` parameters (its revision and capabilities).
    #[serde(default)]
    peer_info: Option<InitializeRequestParams>,
}

impl Owner {
    /// How the store keeps it: empty for anyone.
    pub(super) fn key(&self) -> String {
        match self {
            Owner::Principal(principal) => format!("principal:{principal}"),
            Owner::Session(session) => format!("session:{session}"),
            Owner::Anyone => String::new(),
        }
    }
}

fn unknown_task(id: &str) -> ErrorData {
    let shown: String = id.chars().take(MAX_TASK_ID).collect();
    ErrorData::invalid_params(format!("unknown task: {shown}"), None)
}

fn store_failed(error: crate::tasks::TaskStoreError) -> ErrorData {
    tracing::warn!(%error, "the task store could not be reached");
    ErrorData::internal_error("the task store could not be reached; try again", None)
}

fn timestamp(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(i64::try_from(ms).unwrap_or(i64::MAX))
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn wire_status(state: TaskState) -> TaskStatus {
    match state {
        TaskState::Working => TaskStatus::Working,
        TaskState::InputRequired => TaskStatus::InputRequired,
        TaskState::Completed => TaskStatus::Completed,
        TaskState::Failed => TaskStatus::Failed,
        TaskState::Cancelled => TaskStatus::Cancelled,
    }
}

/// The task as `CreateTaskResult` and `tasks/get` show it.
fn wire_task(record: &TaskRecord) -> Task {
    let mut task = Task::new(
        record.id.clone(),
        wire_status(record.state),
        timestamp(record.created_ms),
        timestamp(record.updated_ms),
    );
    task.ttl_ms = record.ttl_ms;
    task.poll_interval_ms = Some(record.poll_ms);
    task.status_message = record.status_message.clone();
    task
}

fn object(text: Option<&String>) -> JsonObject {
    text.and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

fn detailed(record: &TaskRecord) -> DetailedTask {
    let payload = match record.state {
        TaskState::Working => TaskPayload::Working,
        TaskState::InputRequired => TaskPayload::InputRequired {
            input_requests: record
                .open
                .iter()
                .filter_map(|(key, request)| {
                    serde_json::from_value::<InputRequest>(request.clone())
                        .ok()
                        .map(|request| (key.clone(), request))
                })
                .collect::<InputRequests>(),
        },
        TaskState::Completed => TaskPayload::Completed {
            result: object(record.outcome.as_ref()),
        },
        TaskState::Failed => TaskPayload::Failed {
            error: object(record.outcome.as_ref()),
        },
        TaskState::Cancelled => TaskPayload::Cancelled,
    };
    DetailedTask::new(wire_task(record), payload)
}

/// A request context for a body that runs again without the request that started it: the
/// stored `_meta` and principal, and a peer with no one at the other end (progress and logs
/// of a resumed body go nowhere; its questions go through the task).
fn detached_context(stored: &StoredRequest) -> RequestContext<RoleServer> {
    /// Serves nothing: its only use is the peer it comes with.
    struct Detached;
    impl ServerHandler for Detached {}
    let (transport, _other_end) = tokio::io::duplex(64);
    let running = rmcp::service::serve_directly(Detached, transport, stored.peer_info.clone());
    let mut rc = RequestContext::new(RequestId::Number(0), running.peer().clone());
    if let Some(meta) = stored.meta.clone() {
        rc.meta = meta;
    }
    let (mut parts, ()) = http::Request::new(()).into_parts();
    if let Some(principal) = &stored.principal {
        parts
            .extensions
            .insert(crate::principal::Principal(principal.clone()));
    }
    rc.extensions.insert(parts);
    rc
}

/// Runs the resumable tools of one server again (see [`Backchannel::resume_tasks`]).
struct ToolRunner<S> {
    layer: WeakBackchannel,
    router: ToolRouter<S>,
    service: S,
}

impl<S: Clone + Send + Sync + 'static> Resume for ToolRunner<S> {
    fn resume(&self, task: TaskRecord) -> bool {
        let Some(layer) = self.layer.upgrade() else {
            return false;
        };
        if !layer.inner.resumable.contains(&task.tool) || !self.router.has_route(&task.tool) {
            return false;
        }
        let Ok(stored) = serde_json::from_str::<StoredRequest>(&task.request) else {
            tracing::warn!(task = %task.id, "a stored task request is unreadable");
            return false;
        };
        let sealed: Sealed = serde_json::from_str(&task.answers).unwrap_or_default();
        let rc = detached_context(&stored);
        let mut params = CallToolRequestParams::new(task.tool.clone());
        params.arguments = stored.arguments;
        let binding = CallBinding::new(
            "tool",
            &task.tool,
            params.arguments.as_ref(),
            stored.principal,
        )
        .into_owned();
        let body = Body {
            router: self.router.clone(),
            service: self.service.clone(),
            params,
            rc,
            binding,
            sealed,
        };
        layer.start_body(body, &task.id, task.version, true);
        true
    }
}

/// A body handed to the executor and not yet run to its end. Dropped so (an executor let it
/// go), the task is let go too: it ends `failed`, rather than stay `working` under a lease this
/// instance keeps renewing.
struct Held {
    id: String,
    local: crate::tasks::Local,
    /// Taken when the body has ended.
    runtime: Option<Arc<TaskRuntime>>,
}

impl Held {
    /// The body ran to its end: nothing to let go.
    fn ended(&mut self) {
        self.runtime = None;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        runtime.unregister(&self.id, &self.local);
        let id = std::mem::take(&mut self.id);
        if let Ok(tokio) = tokio::runtime::Handle::try_current() {
            tokio.spawn(async move {
                let error = serde_json::json!({ "code": -32603, "message": LET_GO }).to_string();
                runtime.end(&id, TaskState::Failed, Some(error)).await;
            });
        }
    }
}

/// The message of a task whose body the executor dropped before it ended.
const LET_GO: &str = "the server let go of this task before it finished; start the call again";

/// What a task body runs with.
struct Body<S> {
    router: ToolRouter<S>,
    service: S,
    params: CallToolRequestParams,
    rc: RequestContext<RoleServer>,
    binding: CallBinding<'static>,
    sealed: Sealed,
}

impl Backchannel {
    /// The call escalated: store it as a task, start its body here, and answer with the task.
    pub(super) async fn spawn_task<S: Clone + Send + Sync + 'static>(
        &self,
        router: ToolRouter<S>,
        service: S,
        params: CallToolRequestParams,
        mut rc: RequestContext<RoleServer>,
        binding: CallBinding<'static>,
        mut sealed: Sealed,
    ) -> Result<CallToolResponse, ErrorData> {
        // The body, wherever it runs (here, or on the instance that takes the task over),
        // continues the trace of the call that started it; the call's span ends with the call
        // (a span lasts while a handle of it does, and the body keeps the request).
        if sealed.trace.is_none() {
            sealed.trace = crate::telemetry::current_traceparent();
        }
        if let Some(parts) = rc.extensions.get_mut::<http::request::Parts>() {
            parts.extensions.remove::<crate::telemetry::RequestSpan>();
        }
        let runtime = &self.inner.tasks;
        let now = runtime.now_ms();
        let stored = StoredRequest {
            arguments: params.arguments.clone(),
            meta: Some(rc.meta.clone()),
            principal: self.principal_of(&rc),
            peer_info: rc.peer.peer_info().map(|info| (*info).clone()),
        };
        let record = TaskRecord {
            id: crate::util::fresh_nonce(),
            owner: self.owner_of(&rc).key(),
            tool: params.name.to_string(),
            request: serde_json::to_string(&stored).unwrap_or_default(),
            answers: serde_json::to_string(&sealed).unwrap_or_default(),
            state: TaskState::Working,
            status_message: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms: runtime.ttl.map(|ttl| ttl.as_millis() as u64),
            poll_ms: runtime.poll.as_millis() as u64,
            open: BTreeMap::new(),
            responses: BTreeMap::new(),
            outcome: None,
            cancel_requested: false,
            version: 0,
            lease_owner: runtime.instance.clone(),
            lease_until_ms: runtime.lease_until(),
        };
        runtime
            .store
            .create(record.clone())
            .await
            .map_err(store_failed)?;
        runtime.supervise();
        let body = Body {
            router,
            service,
            params,
            rc,
            binding,
            sealed,
        };
        self.start_body(body, &record.id, 0, false);
        Ok(CallToolResponse::Task(CreateTaskResult::new(wire_task(
            &record,
        ))))
    }

    /// Run a task's body here (through the executor) until it ends, is cancelled, or this
    /// instance loses the task; `resumed` when it takes over a stopped instance's task.
    fn start_body<S: Clone + Send + Sync + 'static>(
        &self,
        body: Body<S>,
        id: &str,
        version: u64,
        resumed: bool,
    ) {
        let runtime = self.inner.tasks.clone();
        let local = runtime.register(id, version);
        let run = crate::tasks::TaskRun::new(id, &body.params.name, resumed);
        let mut held = Held {
            id: id.to_owned(),
            local: local.clone(),
            runtime: Some(runtime.clone()),
        };
        let executor = runtime.executor.clone();
        let handle = TaskHandle {
            id: id.to_owned(),
            local: local.clone(),
            runtime: runtime.clone(),
        };
        let layer = self.clone();
        let id = id.to_owned();
        let span =
            crate::telemetry::task_span(&body.params.name, &id, body.sealed.trace.as_deref());
        let body = tracing::Instrument::instrument(
            async move {
                let work = async {
                    let start = Start {
                        binding: &body.binding,
                        mode: Mode::Task(handle),
                        escalation: Escalation::InTask,
                        input_responses: None,
                        request_state: None,
                        resumed: Some(body.sealed),
                    };
                    let (router, service, params) = (&body.router, &body.service, &body.params);
                    match layer
                        .drive(body.rc, start, |rc| tool_run(router, service, params, rc))
                        .await
                    {
                        Ok(Driven::Complete(CallToolResponse::Complete(result))) => {
                            (TaskState::Completed, serde_json::to_string(&result).ok())
                        }
                        Ok(_) => (
                            TaskState::Failed,
                            Some(
                                serde_json::json!({
                                    "code": -32603,
                                    "message": "a task ended without a tool result",
                                })
                                .to_string(),
                            ),
                        ),
                        Err(error) => (TaskState::Failed, serde_json::to_string(&error).ok()),
                    }
                };
                let (state, outcome) = tokio::select! {
                    biased;
                    () = local.cancel.cancelled() => (TaskState::Cancelled, None),
                    ended = work => ended,
                };
                // A lost task is another instance's (or nobody's until its lease runs out):
                // this one records nothing for it.
                if !local.is_lost() {
                    runtime.end(&id, state, outcome).await;
                }
                runtime.unregister(&id, &local);
                held.ended();
            },
            span,
        );
        executor.execute(run, Box::pin(body));
    }

    /// From now on, run here the resumable tasks (see [`crate::BackchannelBuilder::resumable`])
    /// of instances that stopped, through `router` and `service` (the server itself), and end
    /// the others `failed`; until `shutdown`. Every instance of a server should call it once
    /// it serves; without it, this instance takes over nothing.
    pub fn resume_tasks<S: Clone + Send + Sync + 'static>(
        &self,
        router: ToolRouter<S>,
        service: S,
        shutdown: CancellationToken,
    ) {
        let runner = Arc::new(ToolRunner {
            layer: self.downgrade(),
            router,
            service,
        });
        self.inner.tasks.set_runner(runner, shutdown);
    }

    /// Tests: behave as if this instance's process had been killed (`kill -9`): its task
    /// bodies stop without recording an end, and it renews no lease and takes over nothing.
    #[cfg(feature = "test-util")]
    pub fn halt_tasks(&self) {
        self.inner.tasks.halt();
    }

    /// How many task bodies run in this instance.
    pub fn running_tasks(&self) -> usize {
        self.inner.tasks.running()
    }

    /// The task `id`, if it exists and belongs to the caller of `rc` (another caller gets the
    /// same answer as for an unknown id).
    async fn owned_task(
        &self,
        id: &str,
        rc: &RequestContext<RoleServer>,
    ) -> Result<TaskRecord, ErrorData> {
        if id.len() > MAX_TASK_ID {
            return Err(unknown_task(id));
        }
        let runtime = &self.inner.tasks;
        let record = runtime
            .store
            .get(id, runtime.now_ms())
            .await
            .map_err(store_failed)?;
        match record {
            Some(record) if record.owner.is_empty() || record.owner == self.owner_of(rc).key() => {
                Ok(record)
            }
            _ => Err(unknown_task(id)),
        }
    }

    /// `tasks/get`. Call it from `ServerHandler::get_task`.
    pub async fn get_task(
        &self,
        params: &GetTaskParams,
        rc: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let record = self.owned_task(&params.task_id, rc).await?;
        Ok(GetTaskResult::new(detailed(&record)))
    }

    /// `tasks/update`: answers for the task's open questions (other keys are ignored). Call it
    /// from `ServerHandler::update_task`.
    pub async fn update_task(
        &self,
        params: UpdateTaskParams,
        rc: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let record = self.owned_task(&params.task_id, rc).await?;
        let runtime = &self.inner.tasks;
        let responses: BTreeMap<String, serde_json::Value> = params
            .input_responses
            .into_iter()
            .filter(|(key, _)| record.open.contains_key(key))
            .collect();
        if responses.is_empty() {
            return Ok(());
        }
        runtime
            .store
            .answer(&record.id, responses, runtime.now_ms())
            .await
            .map_err(store_failed)?;
        if let Some(local) = runtime.local(&record.id) {
            local.wake.notify_one();
        }
        Ok(())
    }

    /// `tasks/cancel`: the body stops (here at once, on another instance within its tick).
    /// Call it from `ServerHandler::cancel_task`.
    pub async fn cancel_task(
        &self,
        params: &CancelTaskParams,
        rc: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let record = self.owned_task(&params.task_id, rc).await?;
        let runtime = &self.inner.tasks;
        runtime
            .store
            .cancel(&record.id, runtime.now_ms())
            .await
            .map_err(store_failed)?;
        if let Some(local) = runtime.local(&record.id) {
            local.cancel.cancel();
        }
        Ok(())
    }
}

/// The task's responses once every key of `keys` has one; `None` when the task is gone (its
/// body is then stopped from outside).
async fn answered<'a>(
    task: &TaskHandle,
    keys: impl Iterator<Item = &'a String> + Clone,
) -> Option<BTreeMap<String, serde_json::Value>> {
    let runtime = &task.runtime;
    loop {
        let woken = task.local.wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        match runtime.store.get(&task.id, runtime.now_ms()).await {
            Ok(Some(record)) if keys.clone().all(|k| record.responses.contains_key(k)) => {
                return Some(record.responses);
            }
            Ok(Some(_)) => {}
            Ok(None) => return None,
            Err(error) => tracing::warn!(task = %task.id, %error, "a task could not be read"),
        }
        // The supervisor wakes the body when the task's version moves; the timer is a backstop.
        tokio::select! {
            () = &mut woken => {}
            () = tokio::time::sleep(runtime.tick * 4) => {}
        }
    }
}

/// Inside a task: open the questions (`input_required`) and wait until `tasks/update` answered
/// all of them, on whichever instance it arrived; then keep the answers with the task, so a
/// run on another instance has them. Keys are single-use within a task, so a question asked
/// again gets a suffix.
pub(super) async fn ask_in_task(
    call: &Call,
    task: &TaskHandle,
    pending: BTreeMap<String, Pending>,
) {
    let runtime = &task.runtime;
    let task_round = call.task_round.load(Ordering::SeqCst);
    let mut wanted = BTreeMap::new();
    let mut open = BTreeMap::new();
    for (key, pending) in pending {
        let wire_key = if task_round == 0 {
            key.clone()
        } else {
            format!("{key}.{task_round}")
        };
        open.insert(
            wire_key.clone(),
            serde_json::to_value(&pending.request).unwrap_or_default(),
        );
        wanted.insert(wire_key, (key, pending.kind));
    }
    loop {
        match runtime
            .store
            .ask(&task.id, open.clone(), runtime.now_ms())
            .await
        {
            Ok(true) => break,
            // Cancelled, finished or removed: the body is stopped from outside.
            Ok(false) => return task.local.cancel.cancelled().await,
            Err(error) => {
                tracing::warn!(task = %task.id, %error, "a task's questions could not be stored");
                tokio::time::sleep(runtime.tick).await;
            }
        }
    }
    // One waiting question per open key until the answers are in (or the body is stopped).
    let _waiting: Vec<_> = wanted
        .keys()
        .map(|_| crate::metrics::Waiting::start())
        .collect();
    let Some(responses) = answered(task, wanted.keys()).await else {
        return task.local.cancel.cancelled().await;
    };
    let answers = {
        let mut answers = lock(&call.answers);
        for (wire_key, (key, kind)) in wanted {
            if let Some(answer) = responses
                .get(&wire_key)
                .and_then(|value| sampling_roots_logging::read_response(kind, value))
            {
                answers.insert(key, answer);
            }
        }
        answers.clone()
    };
    let next_round = task_round + 1;
    call.task_round.store(next_round, Ordering::SeqCst);
    let kept = Sealed {
        answers,
        nonce: call.nonce().to_owned(),
        round: next_round,
        trace: call.trace.clone(),
        ..Sealed::default()
    };
    if let Err(error) = runtime
        .store
        .save_answers(
            &task.id,
            serde_json::to_string(&kept).unwrap_or_default(),
            runtime.now_ms(),
        )
        .await
    {
        tracing::warn!(task = %task.id, %error, "a task's answers could not be kept");
    }
}
