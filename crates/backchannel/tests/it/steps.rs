//! Durable steps (`Ctx::step`): a recorded step does not run again when its body does (after
//! an answer, or on the instance that took the task over from one killed), a write the killed
//! instance made before its record is recognised by its key, and a holder whose task was taken
//! over records nothing and finishes nothing. On memory (paused time) and on SQLite and
//! PostgreSQL (`$BACKCHANNEL_TEST_POSTGRES`) in real time.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common::*;
use backchannel::tasks::{MemoryTaskStore, SqlTaskStore, TaskState, TaskStore};
use backchannel::testing::Observed;
use backchannel::{Backchannel, TaskSupport};
use rmcp::model::TaskPayload;
use serde_json::json;

/// An instance of the server: `task_steps` as a task, resumable, over `store`, reporting to
/// `observed` (shared by the instances, like the systems they write to).
fn instance(store: &Arc<dyn TaskStore>, observed: &Arc<Observed>) -> TestServer {
    let layer = Backchannel::builder()
        .task_tool("task_steps", TaskSupport::Optional)
        .task_store(store.clone())
        .task_lease(Duration::from_secs(1), Duration::from_millis(50))
        .principal(|_| Some("ann".to_owned()))
        .resumable("task_steps")
        .build()
        .unwrap();
    TestServer::observed_by(layer, observed.clone())
}

/// A task of one instance (`a`, on an in-memory `store`), started and parked on its question.
struct Parked {
    store: Arc<dyn TaskStore>,
    observed: Arc<Observed>,
    a: TestServer,
    on_a: Client,
    id: String,
}

async fn parked_on_one_instance() -> Parked {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new());
    let observed = Arc::new(Observed::default());
    let a = instance(&store, &observed);
    let on_a = task_client(&a).await;
    let id = start_task(&on_a, "task_steps").await;
    poll_task(&on_a, &id, parked).await;
    Parked {
        store,
        observed,
        a,
        on_a,
        id,
    }
}

async fn answer_yes(running: &Client, id: &str) {
    running.update_task(yes_to(id)).await.unwrap();
}

/// The result's text once completed.
async fn completed(running: &Client, id: &str) -> String {
    let payload = poll_task(running, id, |p| {
        matches!(
            p,
            TaskPayload::Completed { .. } | TaskPayload::Failed { .. }
        )
    })
    .await;
    let TaskPayload::Completed { result } = payload else {
        panic!("the task failed: {payload:?}");
    };
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

/// What an uninterrupted run says.
const ONCE: &str = "prepared 1; write number 1";

#[tokio::test(start_paused = true)]
async fn a_recorded_step_does_not_run_again_when_the_body_runs_after_the_answer() {
    let Parked {
        store,
        observed,
        a: _a,
        on_a,
        id,
    } = parked_on_one_instance().await;
    answer_yes(&on_a, &id).await;
    assert_eq!(completed(&on_a, &id).await, ONCE);
    assert_eq!(observed.prepared.load(Ordering::SeqCst), 1);
    assert_eq!(observed.writes.load(Ordering::SeqCst), 1);
    assert_eq!(store.steps(&id).await.unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn outside_a_task_a_step_runs_once_per_call_on_a_session() {
    let observed = Arc::new(Observed::default());
    let layer = Backchannel::builder().build().unwrap();
    let server = TestServer::observed_by(layer, observed.clone());
    let client = TestClient::new(
        Declares::ALL,
        vec![Reply::Accept(json!({"confirmed": true}))],
    );
    let running = connect(server, client, Revision::V2025_11_25).await;
    let result = running.call_tool(call("task_steps")).await.unwrap();
    assert_eq!(
        result_text(&result),
        ONCE,
        "the body ran twice, the step once"
    );
    assert!(result_text(&result).starts_with("prepared 1"));
}

/// Kill (halt) instance A at `when`, with B taking over: the task completes on B as an
/// uninterrupted one would, having written under one key once.
async fn killed_then_taken_over(store: Arc<dyn TaskStore>, when: Kill) -> Arc<Observed> {
    let observed = Arc::new(Observed::default());
    let (a, b) = (instance(&store, &observed), instance(&store, &observed));
    let stop = tokio_util::sync::CancellationToken::new();
    b.resume_tasks(stop.clone());
    let (on_a, on_b) = (task_client(&a).await, task_client(&b).await);
    let id = start_task(&on_a, "task_steps").await;
    poll_task(&on_b, &id, parked).await;
    match when {
        Kill::Waiting => {
            a.layer.halt_tasks();
            // B takes the task over; the question is still open there, answered through a
            // third instance.
            while b.layer.running_tasks() == 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let c = instance(&store, &observed);
            let on_c = task_client(&c).await;
            poll_task(&on_c, &id, parked).await;
            answer_yes(&on_c, &id).await;
        }
        Kill::AfterWrite => {
            observed.halt_after_write.store(true, Ordering::SeqCst);
            answer_yes(&on_b, &id).await;
        }
        Kill::AfterRecord => {
            observed.halt_after_record.store(true, Ordering::SeqCst);
            answer_yes(&on_b, &id).await;
        }
    }
    assert_eq!(completed(&on_b, &id).await, ONCE, "{when:?}");
    assert_eq!(a.layer.running_tasks(), 0);
    assert_eq!(
        observed.prepared.load(Ordering::SeqCst),
        1,
        "{when:?}: the first step ran on A only"
    );
    assert_eq!(
        observed.keyed.lock().unwrap().len(),
        1,
        "{when:?}: one write under one key"
    );
    stop.cancel();
    observed
}

#[derive(Debug, Clone, Copy)]
enum Kill {
    /// While the question waits.
    Waiting,
    /// Inside the write step, after its write, before its record.
    AfterWrite,
    /// After the write step's record, before the task's end.
    AfterRecord,
}

/// Every kill point on `store`, with how often the write step's work ran for each.
async fn every_kill(store: impl Fn() -> Arc<dyn TaskStore>) {
    let waiting = killed_then_taken_over(store(), Kill::Waiting).await;
    assert_eq!(waiting.writes.load(Ordering::SeqCst), 1);
    let after_write = killed_then_taken_over(store(), Kill::AfterWrite).await;
    assert_eq!(
        after_write.writes.load(Ordering::SeqCst),
        2,
        "unrecorded, the step ran again, under the same key"
    );
    let after_record = killed_then_taken_over(store(), Kill::AfterRecord).await;
    assert_eq!(
        after_record.writes.load(Ordering::SeqCst),
        1,
        "recorded, the step did not run again"
    );
}

#[tokio::test(start_paused = true)]
async fn a_killed_instances_task_resumes_from_its_steps_in_memory() {
    every_kill(|| Arc::new(MemoryTaskStore::new())).await;
}

#[tokio::test]
async fn a_killed_instances_task_resumes_from_its_steps_on_sqlite() {
    let dir = std::env::temp_dir().join(format!("bc-steps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut stores = Vec::new();
    for n in 0..3 {
        let url = format!("sqlite://{}", dir.join(format!("{n}.sqlite")).display());
        stores.push(Arc::new(SqlTaskStore::open(&url).await.unwrap()) as Arc<dyn TaskStore>);
    }
    let next = std::sync::Mutex::new(stores.into_iter());
    every_kill(|| next.lock().unwrap().next().unwrap()).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_killed_instances_task_resumes_from_its_steps_on_postgres() {
    let Some(server) = std::env::var("BACKCHANNEL_TEST_POSTGRES")
        .ok()
        .filter(|s| !s.is_empty())
    else {
        // The PostgreSQL pass (scripts/test-postgres) runs it.
        return;
    };
    let mut stores = Vec::new();
    for _ in 0..3 {
        let url = sql_pool::create_database(&server, "steps").await.unwrap();
        stores.push(Arc::new(SqlTaskStore::open(&url).await.unwrap()) as Arc<dyn TaskStore>);
    }
    let next = std::sync::Mutex::new(stores.into_iter());
    every_kill(|| next.lock().unwrap().next().unwrap()).await;
}

#[tokio::test(start_paused = true)]
async fn a_holder_whose_task_was_taken_over_records_no_step_and_finishes_nothing() {
    let Parked {
        store,
        observed,
        a,
        on_a,
        id,
    } = parked_on_one_instance().await;
    // Another instance takes the task (as if A's lease had run out) before A hears of it.
    let far = u64::MAX / 4;
    let taken = store.claim_expired("intruder", far, far + 1).await.unwrap();
    assert_eq!(taken.len(), 1);
    // The answer wakes A's body at once (no tick passes): it writes, and its record is refused.
    answer_yes(&on_a, &id).await;
    while a.layer.running_tasks() > 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        observed.writes.load(Ordering::SeqCst),
        1,
        "the step's work ran"
    );
    let steps = store.steps(&id).await.unwrap();
    assert_eq!(
        steps.keys().collect::<Vec<_>>(),
        vec!["prepare"],
        "no write recorded"
    );
    let task = store.get(&id, 0).await.unwrap().unwrap();
    assert_eq!(task.state, TaskState::Working, "not finished by A");
    assert_eq!(task.lease_owner, "intruder");
}

/// An instance of the server with a ten-second lease, alone on `store` when `sole`.
fn long_lease_instance(
    store: &Arc<dyn TaskStore>,
    observed: &Arc<Observed>,
    sole: bool,
) -> TestServer {
    let mut builder = Backchannel::builder()
        .task_tool("task_steps", TaskSupport::Optional)
        .task_store(store.clone())
        .task_lease(Duration::from_secs(10), Duration::from_millis(50))
        .principal(|_| Some("ann".to_owned()))
        .resumable("task_steps");
    if sole {
        builder = builder.sole_instance();
    }
    TestServer::observed_by(builder.build().unwrap(), observed.clone())
}

/// A server that is alone on its store (`sole_instance`) takes over at start the task its
/// earlier run left, at once; one that may share it waits out the earlier run's lease (paused
/// time: the virtual seconds the takeover took are the clock's, not the machine's speed).
#[tokio::test(start_paused = true)]
async fn a_sole_instance_takes_over_an_earlier_runs_task_at_start_not_after_its_lease() {
    for sole in [true, false] {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new());
        let observed = Arc::new(Observed::default());
        let earlier = long_lease_instance(&store, &observed, sole);
        let on_earlier = task_client(&earlier).await;
        let id = start_task(&on_earlier, "task_steps").await;
        poll_task(&on_earlier, &id, parked).await;
        earlier.layer.halt_tasks();
        let started = tokio::time::Instant::now();
        let next = long_lease_instance(&store, &observed, sole);
        let stop = tokio_util::sync::CancellationToken::new();
        next.resume_tasks(stop.clone());
        while next.layer.running_tasks() == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let took = started.elapsed();
        match sole {
            true => assert!(took < Duration::from_secs(1), "{took:?}"),
            false => assert!(took >= Duration::from_secs(9), "{took:?}"),
        }
        let on_next = task_client(&next).await;
        answer_yes(&on_next, &id).await;
        assert_eq!(completed(&on_next, &id).await, ONCE, "sole: {sole}");
        stop.cancel();
    }
}
