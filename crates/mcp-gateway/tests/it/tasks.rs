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
            caps.extensions = Some([(TASKS_EXTENSION_ID.to_owned(), JsonObject::new())].into());
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

/// Start `task_confirm` as a task: on 2025-11-25 the request asks for one (its `task` field,
/// which rmcp's typed request does not carry); on 2026-07-28 the server decides.
async fn started_task(client: &Running, revision: Revision) -> String {
    let request = if revision.has_sessions() {
        ClientRequest::CustomRequest(CustomRequest::new(
            "tools/call",
            Some(json!({"name": "task_confirm", "arguments": {}, "task": {}})),
        ))
    } else {
        ClientRequest::CallToolRequest(CallToolRequest::new(call("task_confirm", json!({}))))
    };
    match client.peer().send_request(request).await.unwrap() {
        ServerResult::CreateTaskResult(created) => created.task.task_id,
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
    let id = started_task(&client, downstream).await;
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
    let cancelled = started_task(&client, downstream).await;
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
    let id = started_task(&owner, Revision::V2025_11_25).await;

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

#[tokio::test]
async fn a_2025_client_that_asks_for_no_task_gets_a_plain_call() {
    let (served, server) = task_server(Revision::V2026_07_28).await;
    let (front, _gateway) = gateway("test", served.addr, Revision::V2026_07_28).await;
    let url = format!("http://{}/mcp", front.addr);
    // Declared the extension (as MCP Inspector does in its default era), asked for no task.
    let client = connect_http(Client { tasks: true }, &url, Revision::V2025_11_25, None).await;
    let result = crate::common::call_to_the_end(&client, "task_confirm", json!({}), |_| {
        unreachable!("a 2025 client is asked on its session")
    })
    .await;
    // The question reached the client's handler on its session; it answered nothing (the
    // handler declines what it cannot answer), and no task was made anywhere.
    let text = backchannel::testing::text_of(&result);
    assert!(text.starts_with("in task=false"), "{text}");
    assert_eq!(server.layer.running_tasks(), 0);
    client.cancel().await.unwrap();
}

/// One JSON-RPC message POSTed to `url` with `headers`; the last message of the answer (JSON
/// or SSE; null for none) and the answer's session id, if any.
async fn raw(
    url: &str,
    headers: &[(&str, &str)],
    body: serde_json::Value,
) -> (serde_json::Value, Option<String>) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|id| id.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    let last = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain([text.as_str()])
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .next_back()
        .unwrap_or_default();
    (last, session)
}

#[tokio::test]
async fn a_stateless_request_naming_a_session_cannot_reach_that_sessions_tasks() {
    let (served, _server) = task_server(Revision::V2026_07_28).await;
    let (front, _gateway) = gateway("test", served.addr, Revision::V2026_07_28).await;
    let url = format!("http://{}/mcp", front.addr);
    // The owner: a 2025-11-25 session that asked for a task.
    let (_, session) = raw(
        &url,
        &[],
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}},
                             "extensions": {"io.modelcontextprotocol/tasks": {}}},
            "clientInfo": {"name": "owner", "version": "0"}}}),
    )
    .await;
    let session = session.expect("a session id");
    let in_session = [
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", session.as_str()),
    ];
    raw(
        &url,
        &in_session,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let (created, _) = raw(
        &url,
        &in_session,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "task_confirm", "arguments": {}, "task": {}}}),
    )
    .await;
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("expected a task: {created}"))
        .to_owned();

    // A prober that saw the session id sends it on 2026-07-28 requests: it is ignored, and
    // the task is another owner's.
    let caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    for method in ["tasks/get", "tasks/cancel"] {
        let (answer, _) = raw(
            &url,
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", method),
                ("Mcp-Name", &id),
                ("Mcp-Session-Id", &session),
            ],
            json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {
            "taskId": id,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps,
                "io.modelcontextprotocol/clientInfo": {"name": "prober", "version": "0"}
            }}}),
        )
        .await;
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("unknown task")),
            "{method}: {answer}"
        );
    }
    // The owner's task is untouched, and still its own.
    let (current, _) = raw(
        &url,
        &in_session,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": id}}),
    )
    .await;
    let status = current["result"]["status"].as_str().unwrap_or_default();
    assert!(
        status == "working" || status == "input_required",
        "{current}"
    );
}
