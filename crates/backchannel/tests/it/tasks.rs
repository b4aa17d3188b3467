//! The same ask inside a task (tasks extension): the task parks in `input_required` and
//! resumes on `tasks/update`; without the extension the tool runs synchronously.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common::*;
use backchannel::tasks::{Held, MemoryTaskStore, StoreFuture, TaskRecord, TaskState, TaskStore};
use backchannel::{Backchannel, TaskSupport};
use rmcp::model::{
    CallToolResponse, CancelTaskParams, GetTaskParams, TaskPayload, UpdateTaskParams,
};
use serde_json::json;

fn layer() -> Backchannel {
    Backchannel::builder()
        .task_tool("task_confirm", TaskSupport::Optional)
        .build()
        .unwrap()
}

async fn wait_for(
    running: &Client,
    task_id: &str,
    done: impl Fn(&TaskPayload) -> bool,
) -> TaskPayload {
    for _ in 0..1000 {
        let task = running.get_task(GetTaskParams::new(task_id)).await.unwrap();
        if done(&task.task.payload) {
            return task.task.payload;
        }
        tokio::task::yield_now().await;
    }
    panic!("the task never reached the expected state");
}

#[tokio::test]
async fn an_ask_inside_a_task_parks_it_until_tasks_update() {
    let server = TestServer::new(layer());
    let client = TestClient::new(Declares::ALL, vec![Reply::Accept(json!(null))]);
    let running = connect(server.clone(), client.clone(), Revision::V2026_07_28).await;

    let CallToolResponse::Task(created) =
        running.call_tool_once(call("task_confirm")).await.unwrap()
    else {
        panic!("expected a task");
    };
    let task_id = created.task.task_id.clone();
    let parked = wait_for(&running, &task_id, |p| {
        matches!(p, TaskPayload::InputRequired { .. })
    })
    .await;
    let TaskPayload::InputRequired { input_requests } = parked else {
        unreachable!()
    };
    assert_eq!(
        input_requests.keys().cloned().collect::<Vec<_>>(),
        vec!["confirm"]
    );
    assert_eq!(server.observed.writes.load(Ordering::SeqCst), 0);

    let mut update = UpdateTaskParams::new(task_id.clone(), Default::default());
    update.input_responses = [(
        "confirm".to_owned(),
        json!({"action": "accept", "content": {"confirmed": true}}),
    )]
    .into();
    running.update_task(update).await.unwrap();
    let done = wait_for(&running, &task_id, |p| {
        matches!(p, TaskPayload::Completed { .. })
    })
    .await;
    let TaskPayload::Completed { result } = done else {
        unreachable!()
    };
    let text = result["content"][0]["text"].as_str().unwrap().to_owned();
    assert_eq!(
        text,
        "in task=true: accepted Confirmation { confirmed: true, note: None }"
    );
    assert_eq!(server.observed.writes.load(Ordering::SeqCst), 1);
    // The request's run asked to escalate; the task ran the body to the ask, then with the answer.
    assert_eq!(server.observed.runs_before_ask.load(Ordering::SeqCst), 3);
    assert!(
        client.seen.questions.lock().unwrap().is_empty(),
        "no question went through the client handler"
    );
}

#[tokio::test]
async fn without_the_tasks_extension_the_same_tool_runs_synchronously() {
    for wire in Revision::ALL {
        let server = TestServer::new(layer());
        let declares = Declares {
            tasks: false,
            ..Declares::ALL
        };
        let client = TestClient::new(declares, vec![Reply::Accept(json!({"confirmed": true}))]);
        let running = connect(server.clone(), client, wire).await;
        let result = running.call_tool(call("task_confirm")).await.unwrap();
        assert_eq!(
            result_text(&result),
            "in task=false: accepted Confirmation { confirmed: true, note: None }",
            "{wire:?}"
        );
        assert_eq!(server.observed.writes.load(Ordering::SeqCst), 1, "{wire:?}");
    }
}

/// A task store in memory.
fn memory() -> Arc<dyn TaskStore> {
    Arc::new(MemoryTaskStore::new())
}

/// Instances of one server: layers sharing one task store, with short leases.
fn instance(store: &Arc<dyn TaskStore>, principal: &'static str, resumable: bool) -> TestServer {
    let mut builder = Backchannel::builder()
        .task_tool("task_confirm", TaskSupport::Optional)
        .task_store(store.clone())
        .task_lease(Duration::from_secs(2), Duration::from_millis(100))
        .principal(move |_| Some(principal.to_owned()));
    if resumable {
        builder = builder.resumable("task_confirm");
    }
    TestServer::new(builder.build().unwrap())
}

/// Two instances of one server sharing one store (`A` for the first principal, `B` for the
/// second), a client of each, and a task A's client started, parked on its question.
struct TwoInstances {
    a: TestServer,
    b: TestServer,
    on_a: Client,
    on_b: Client,
    id: String,
}

/// [`TwoInstances`] on `store`; `B` takes over tasks whose lease ran out until `resume` is
/// cancelled, when given.
async fn parked_on_a(
    store: Arc<dyn TaskStore>,
    principals: [&'static str; 2],
    resumable: bool,
    resume: Option<&tokio_util::sync::CancellationToken>,
) -> TwoInstances {
    let [first, second] = principals;
    let a = instance(&store, first, resumable);
    let b = instance(&store, second, resumable);
    if let Some(stop) = resume {
        b.resume_tasks(stop.clone());
    }
    let on_a = task_client(&a).await;
    let on_b = task_client(&b).await;
    let id = start_task(&on_a, "task_confirm").await;
    poll_task(&on_a, &id, parked).await;
    TwoInstances {
        a,
        b,
        on_a,
        on_b,
        id,
    }
}

#[tokio::test(start_paused = true)]
async fn a_question_asked_on_one_instance_is_answered_through_another() {
    let TwoInstances { a, b, on_b, id, .. } =
        parked_on_a(memory(), ["ann", "ann"], false, None).await;
    poll_task(&on_b, &id, parked).await;
    on_b.update_task(yes_to(&id)).await.unwrap();
    let TaskPayload::Completed { result } =
        poll_task(&on_b, &id, |p| matches!(p, TaskPayload::Completed { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(
        result["content"][0]["text"],
        "in task=true: accepted Confirmation { confirmed: true, note: None }"
    );
    assert_eq!(
        a.observed.writes.load(Ordering::SeqCst),
        1,
        "the body ran on A"
    );
    assert_eq!(b.observed.writes.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_cancel_sent_to_another_instance_stops_the_body_within_a_tick() {
    let TwoInstances { a, on_b, id, .. } = parked_on_a(memory(), ["ann", "ann"], false, None).await;
    poll_task(&on_b, &id, parked).await;
    assert_eq!(a.layer.running_tasks(), 1);
    let sent = tokio::time::Instant::now();
    on_b.cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    poll_task(&on_b, &id, |p| matches!(p, TaskPayload::Cancelled)).await;
    let took = sent.elapsed();
    assert!(
        took <= Duration::from_millis(250),
        "took {took:?} (tick 100 ms, poll 50 ms)"
    );
    assert_eq!(a.layer.running_tasks(), 0, "A's body stopped");
    assert_eq!(a.observed.writes.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_resumable_task_of_a_stopped_instance_runs_again_on_another() {
    let stop = tokio_util::sync::CancellationToken::new();
    let TwoInstances { a, b, on_b, id, .. } =
        parked_on_a(memory(), ["ann", "ann"], true, Some(&stop)).await;
    poll_task(&on_b, &id, parked).await;
    a.layer.halt_tasks();
    // B takes the task over once A's lease (2 s) has run out, and runs the body again.
    let stopped = tokio::time::Instant::now();
    while b.observed.runs_before_ask.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            stopped.elapsed() < Duration::from_secs(5),
            "B never took over"
        );
    }
    // The lease (2 s) after the last renewal, then B's next tick (100 ms), then our next poll
    // (50 ms), with one poll to spare for the clocks' millisecond rounding.
    assert!(stopped.elapsed() <= Duration::from_millis(2_000 + 100 + 50 + 50));
    poll_task(&on_b, &id, parked).await;
    on_b.update_task(yes_to(&id)).await.unwrap();
    poll_task(&on_b, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
    assert_eq!(
        b.observed.writes.load(Ordering::SeqCst),
        1,
        "the body finished on B"
    );
    assert_eq!(a.observed.writes.load(Ordering::SeqCst), 0);
    stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_task_that_is_not_resumable_fails_when_its_instance_stops() {
    let stop = tokio_util::sync::CancellationToken::new();
    let TwoInstances { a, b, on_b, id, .. } =
        parked_on_a(memory(), ["ann", "ann"], false, Some(&stop)).await;
    poll_task(&on_b, &id, parked).await;
    a.layer.halt_tasks();
    let TaskPayload::Failed { error } =
        poll_task(&on_b, &id, |p| matches!(p, TaskPayload::Failed { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(
        error["message"],
        "the server running this task stopped before it finished; start the call again"
    );
    assert_eq!(
        b.observed.runs_before_ask.load(Ordering::SeqCst),
        0,
        "nothing ran again"
    );
    stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn another_principal_cannot_get_update_or_cancel_a_task() {
    let TwoInstances {
        on_a: as_ann,
        on_b: as_bob,
        id,
        ..
    } = parked_on_a(memory(), ["ann", "bob"], false, None).await;
    let unknown = format!("unknown task: {id}");
    let error = as_bob
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert!(error.to_string().contains(&unknown), "{error}");
    let error = as_bob.update_task(yes_to(&id)).await.unwrap_err();
    assert!(error.to_string().contains(&unknown), "{error}");
    let error = as_bob
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert!(error.to_string().contains(&unknown), "{error}");
    // Unknown ids answer the same.
    let error = as_bob
        .get_task(GetTaskParams::new("0".repeat(32)))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("unknown task"), "{error}");
    // Nothing changed: still parked for ann, who can answer it.
    poll_task(&as_ann, &id, parked).await;
    as_ann.update_task(yes_to(&id)).await.unwrap();
    poll_task(&as_ann, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
}

/// A store that can be cut off: every step fails while `down` is set.
#[derive(Clone, Default)]
struct Flaky {
    inner: MemoryTaskStore,
    down: Arc<std::sync::atomic::AtomicBool>,
    /// How many `finish` calls fail before they work again.
    failing_finishes: Arc<std::sync::atomic::AtomicU32>,
}

macro_rules! flaky {
    ($self:ident, $call:expr) => {
        if $self.down.load(Ordering::SeqCst) {
            Box::pin(futures::future::ready(Err(
                backchannel::tasks::TaskStoreError("the database is unreachable".into()),
            )))
        } else {
            $call
        }
    };
}

impl TaskStore for Flaky {
    fn create(&self, task: TaskRecord) -> StoreFuture<()> {
        flaky!(self, self.inner.create(task))
    }
    fn get(&self, id: &str, now: u64) -> StoreFuture<Option<TaskRecord>> {
        flaky!(self, self.inner.get(id, now))
    }
    fn ask(&self, id: &str, open: Map, now: u64) -> StoreFuture<bool> {
        flaky!(self, self.inner.ask(id, open, now))
    }
    fn answer(&self, id: &str, answers: Map, now: u64) -> StoreFuture<bool> {
        flaky!(self, self.inner.answer(id, answers, now))
    }
    fn save_answers(&self, id: &str, a: String, now: u64) -> StoreFuture<()> {
        flaky!(self, self.inner.save_answers(id, a, now))
    }
    fn cancel(&self, id: &str, now: u64) -> StoreFuture<bool> {
        flaky!(self, self.inner.cancel(id, now))
    }
    fn finish(
        &self,
        id: &str,
        owner: &str,
        state: TaskState,
        outcome: Option<String>,
        now: u64,
    ) -> StoreFuture<bool> {
        let failing = self
            .failing_finishes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Box::pin(futures::future::ready(Err(
                backchannel::tasks::TaskStoreError("the database is unreachable".into()),
            )));
        }
        flaky!(self, self.inner.finish(id, owner, state, outcome, now))
    }
    fn renew(&self, owner: &str, until: u64) -> StoreFuture<Vec<Held>> {
        flaky!(self, self.inner.renew(owner, until))
    }
    fn claim_expired(&self, owner: &str, now: u64, until: u64) -> StoreFuture<Vec<TaskRecord>> {
        flaky!(self, self.inner.claim_expired(owner, now, until))
    }
    fn sweep(&self, now: u64) -> StoreFuture<u64> {
        flaky!(self, self.inner.sweep(now))
    }
}

type Map = std::collections::BTreeMap<String, serde_json::Value>;

#[tokio::test(start_paused = true)]
async fn a_runner_cut_off_from_its_store_for_a_whole_lease_stops_its_bodies() {
    let flaky = Flaky::default();
    let TwoInstances { a, on_a, id, .. } =
        parked_on_a(Arc::new(flaky.clone()), ["ann", "ann"], false, None).await;
    flaky.down.store(true, Ordering::SeqCst);
    // Within the lease the body waits (the store may come back).
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(a.layer.running_tasks(), 1);
    // A whole lease (2 s) without a renewal: another instance may have taken the task over.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(a.layer.running_tasks(), 0, "the body stopped");
    // `tasks/get` meanwhile is a clear error, not a hang.
    let error = on_a
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("task store could not be reached"),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_tasks_end_the_store_missed_is_stored_once_it_is_back() {
    let flaky = Flaky::default();
    let TwoInstances { a, on_a, id, .. } =
        parked_on_a(Arc::new(flaky.clone()), ["ann", "ann"], false, None).await;
    flaky.failing_finishes.store(3, Ordering::SeqCst);
    on_a.update_task(yes_to(&id)).await.unwrap();
    // Not left `working` under a lease this instance renews: the end is tried again.
    poll_task(&on_a, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
    assert_eq!(flaky.failing_finishes.load(Ordering::SeqCst), 0);
    assert_eq!(a.layer.running_tasks(), 0);
}
