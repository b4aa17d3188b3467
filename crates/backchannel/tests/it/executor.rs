//! The executor seam (`BackchannelBuilder::task_executor`): a body waits its executor's turn
//! while its task stays this instance's, a taken-over run is handed over as resumed, and a
//! body the executor drops lets its task go (ended `failed`, not left `working`).
#![allow(clippy::unwrap_used)]

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::*;
use backchannel::tasks::{MemoryTaskStore, TaskExecutor, TaskRun, TaskStore};
use backchannel::{Backchannel, TaskSupport};
use futures::future::BoxFuture;
use rmcp::model::{CallToolResponse, GetTaskParams, TaskPayload};

/// Keeps every body until told to run them; remembers what it was handed.
#[derive(Default)]
struct Queue {
    waiting: Mutex<Vec<BoxFuture<'static, ()>>>,
    handed: Mutex<Vec<TaskRun>>,
    /// Drop each body instead of keeping it.
    drop_bodies: bool,
}

impl TaskExecutor for Queue {
    fn execute(&self, run: TaskRun, body: BoxFuture<'static, ()>) {
        self.handed.lock().unwrap().push(run);
        if !self.drop_bodies {
            self.waiting.lock().unwrap().push(body);
        }
    }
}

impl Queue {
    fn run_all(&self) {
        for body in self.waiting.lock().unwrap().drain(..) {
            tokio::spawn(body);
        }
    }
}

fn instance(store: &Arc<dyn TaskStore>, executor: Arc<Queue>) -> TestServer {
    TestServer::new(
        Backchannel::builder()
            .task_tool("task_confirm", TaskSupport::Optional)
            .task_store(store.clone())
            .task_lease(Duration::from_secs(1), Duration::from_millis(50))
            .task_executor(executor)
            .resumable("task_confirm")
            .build()
            .unwrap(),
    )
}

async fn start(server: &TestServer) -> (Client, String) {
    let running = connect(
        server.clone(),
        TestClient::new(Declares::ALL, vec![]),
        Revision::V2026_07_28,
    )
    .await;
    let CallToolResponse::Task(created) =
        running.call_tool_once(call("task_confirm")).await.unwrap()
    else {
        panic!("expected a task");
    };
    (running, created.task.task_id)
}

async fn payload(running: &Client, id: &str) -> TaskPayload {
    running
        .get_task(GetTaskParams::new(id))
        .await
        .unwrap()
        .task
        .payload
}

#[tokio::test(start_paused = true)]
async fn a_body_waits_its_executors_turn_and_its_task_stays_this_instances() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new());
    let queue = Arc::new(Queue::default());
    let a = instance(&store, queue.clone());
    let (running, id) = start(&a).await;
    // Queued for three leases: not run (only the call's own run before it escalated), still
    // working, still held here (its lease renewed, nobody took it over).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(a.observed.runs_before_ask.load(Ordering::SeqCst), 1);
    assert!(matches!(payload(&running, &id).await, TaskPayload::Working));
    let task = store.get(&id, 0).await.unwrap().unwrap();
    assert!(
        task.lease_until_ms >= task.created_ms + 3_000,
        "the lease was renewed while the body waited: {task:?}"
    );
    assert_eq!(
        queue.handed.lock().unwrap().clone(),
        vec![TaskRun::new(&id, "task_confirm", false)]
    );
    queue.run_all();
    while !matches!(
        payload(&running, &id).await,
        TaskPayload::InputRequired { .. }
    ) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(a.observed.runs_before_ask.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_taken_over_run_is_handed_over_as_resumed() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new());
    let (on_a, on_b) = (Arc::new(Queue::default()), Arc::new(Queue::default()));
    let a = instance(&store, on_a.clone());
    let b = instance(&store, on_b.clone());
    let stop = tokio_util::sync::CancellationToken::new();
    b.resume_tasks(stop.clone());
    let (_running, id) = start(&a).await;
    a.layer.halt_tasks();
    while on_b.handed.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        on_b.handed.lock().unwrap().clone(),
        vec![TaskRun::new(&id, "task_confirm", true)]
    );
    stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_body_the_executor_drops_lets_its_task_go() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new());
    let queue = Arc::new(Queue {
        drop_bodies: true,
        ..Queue::default()
    });
    let a = instance(&store, queue);
    let (running, id) = start(&a).await;
    let error = loop {
        match payload(&running, &id).await {
            TaskPayload::Failed { error } => break error,
            TaskPayload::Working => tokio::time::sleep(Duration::from_millis(50)).await,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        error["message"],
        "the server let go of this task before it finished; start the call again"
    );
    assert_eq!(a.layer.running_tasks(), 0);
}
