//! An upstream's task through the gateway (tasks extension), each way across revisions: the
//! client gets the task under the gateway's id, finds the upstream's question in `tasks/get`,
//! answers it with `tasks/update`, and reads the result; a cancel reaches the upstream task; a
//! client without tasks gets the result at once; another session's id is an unknown task.

use std::sync::atomic::Ordering;
use std::time::Duration;

use backchannel::testing::{Served, TestServer, call, connect_http};
use backchannel::{Backchannel, Revision, TaskSupport};
use rmcp::model::*;
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient};
use serde_json::json;

use crate::common::{gateway, other, test_server_on};

/// The test server limited to `only`, its `task_confirm` run as a task for clients with tasks.
async fn task_server(only: Revision) -> (Served, TestServer) {
    let layer = Backchannel::builder()
        .only_revision(only)
        .task_tool("task_confirm", TaskSupport::Optional)
        .build()
        .unwrap();
    test_server_on(layer).await
}

/// A client declaring forms, and the tasks extension when `tasks`.
#[derive(Clone)]
struct Client {
    tasks: bool,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(ElicitationCapability::default().with_form(Default::default()));
        if self.tasks {
            caps.extensions = Some(
                [(TASKS_EXTENSION_ID.to_owned(), JsonObject::new())]
                    .into_iter()
                    .collect(),
            );
        }
        ClientConfig::new(caps, Implementation::new("tasks-client", "1.0.0"))
    }
}

type Running = RunningService<RoleClient, Client>;

/// Poll `tasks/get` (at the task's own interval) until `done` holds, at most ten seconds.
async fn wait_for(client: &Running, id: &str, done: impl Fn(&TaskPayload) -> bool) -> TaskPayload {
    let polled = async {
        loop {
            let current = client
                .peer()
                .get_task(GetTaskParams::new(id.to_owned()))
                .await
                .unwrap();
            assert_eq!(
                current.task.task.task_id, id,
                "tasks/get shows the gateway's id"
            );
            if done(&current.task.payload) {
                return current.task.payload;
            }
            let interval = current.task.task.poll_interval_ms.unwrap_or(50).min(50);
            tokio::time::sleep(Duration::from_millis(interval)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), polled)
        .await
        .expect("the task reached the state in time")
}

async fn started_task(client: &Running) -> String {
    match client
        .peer()
        .call_tool_once(call("task_confirm", json!({})))
        .await
        .unwrap()
    {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn a_task_crosses(downstream: Revision) {
    let upstream = other(downstream);
    let (served, server) = task_server(upstream).await;
    let (front, _gateway) = gateway("test", served.addr, upstream).await;
    let url = format!("http://{}/mcp", front.addr);
    let client = connect_http(Client { tasks: true }, &url, downstream, None).await;

    // The task runs upstream, under an id of the gateway's.
    let id = started_task(&client).await;
    assert_eq!(server.layer.running_tasks(), 1);
    let parked = wait_for(&client, &id, |payload| {
        matches!(payload, TaskPayload::InputRequired { .. })
    })
    .await;
    let TaskPayload::InputRequired { input_requests } = parked else {
        unreachable!()
    };
    let (key, question) = input_requests.into_iter().next().unwrap();
    let InputRequest::Elicitation(question) = question else {
        panic!("expected a form, got {question:?}");
    };
    assert!(
        matches!(&question.params, ElicitRequestParams::FormElicitationParams { message, .. } if message == "Go ahead?"),
        "{question:?}"
    );
    assert_eq!(server.observed.writes.load(Ordering::SeqCst), 0);

    // An answer to a key the task did not ask changes nothing; the asked one resumes it.
    let answers = [
        ("made-up".to_owned(), json!({"action": "accept"})),
        (
            key,
            json!({"action": "accept", "content": {"confirmed": true}}),
        ),
    ];
    client
        .peer()
        .update_task(UpdateTaskParams::new(id.clone(), answers.into()))
        .await
        .unwrap();
    let done = wait_for(&client, &id, |payload| {
        matches!(payload, TaskPayload::Completed { .. })
    })
    .await;
    let TaskPayload::Completed { result } = done else {
        unreachable!()
    };
    assert_eq!(
        result["content"][0]["text"],
        "in task=true: accepted Confirmation { confirmed: true, note: None }",
        "{downstream}"
    );
    assert_eq!(server.observed.writes.load(Ordering::SeqCst), 1);

    // A cancel reaches the upstream task.
    let cancelled = started_task(&client).await;
    wait_for(&client, &cancelled, |payload| {
        matches!(payload, TaskPayload::InputRequired { .. })
    })
    .await;
    client
        .peer()
        .cancel_task(CancelTaskParams::new(cancelled.clone()))
        .await
        .unwrap();
    wait_for(&client, &cancelled, |payload| {
        matches!(payload, TaskPayload::Cancelled)
    })
    .await;
    assert_eq!(server.observed.writes.load(Ordering::SeqCst), 1);

    // A made-up id is an unknown task, and so is the upstream's own id for the task.
    for made_up in ["abc", "not-a-sealed-id.at-all"] {
        let error = client
            .peer()
            .get_task(GetTaskParams::new(made_up.to_owned()))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("unknown task"), "{error}");
    }

    // A client without tasks gets the call's result at once (the upstream was told).
    let plain = connect_http(Client { tasks: false }, &url, downstream, None).await;
    let result = crate::common::call_to_the_end(
        &plain,
        "task_confirm",
        json!({}),
        |_| json!({"action": "accept", "content": {"confirmed": false}}),
    )
    .await;
    let text = backchannel::testing::text_of(&result);
    assert!(text.starts_with("in task=false"), "{text}");
    plain.cancel().await.unwrap();
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_2025_client_follows_a_task_of_a_2026_only_server() {
    a_task_crosses(Revision::V2025_11_25).await;
}

#[tokio::test]
async fn a_2026_client_follows_a_task_of_a_2025_only_server() {
    a_task_crosses(Revision::V2026_07_28).await;
}

#[tokio::test]
async fn a_task_belongs_to_the_session_that_made_it() {
    let (served, _server) = task_server(Revision::V2026_07_28).await;
    let (front, _gateway) = gateway("test", served.addr, Revision::V2026_07_28).await;
    let url = format!("http://{}/mcp", front.addr);
    let owner = connect_http(Client { tasks: true }, &url, Revision::V2025_11_25, None).await;
    let stranger = connect_http(Client { tasks: true }, &url, Revision::V2025_11_25, None).await;
    let id = started_task(&owner).await;

    for attempt in [
        stranger
            .peer()
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .map(drop),
        stranger
            .peer()
            .cancel_task(CancelTaskParams::new(id.clone()))
            .await,
    ] {
        let error = attempt.unwrap_err();
        assert!(error.to_string().contains("unknown task"), "{error}");
    }
    // The owner's task is untouched.
    let current = owner
        .peer()
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .unwrap();
    assert_ne!(current.task.status(), TaskStatus::Cancelled);
    owner
        .peer()
        .cancel_task(CancelTaskParams::new(id))
        .await
        .unwrap();
}
