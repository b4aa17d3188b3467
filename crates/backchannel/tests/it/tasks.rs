//! The same ask inside a task (tasks extension): the task parks in `input_required` and
//! resumes on `tasks/update`; without the extension the tool runs synchronously.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::Ordering;

use crate::common::*;
use backchannel::{Backchannel, TaskSupport};
use rmcp::model::{CallToolResponse, GetTaskParams, TaskPayload, UpdateTaskParams};
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
