//! What the order service's tests share: raw 2026-07-28 calls over HTTP (the wire as a client
//! sends it, so a test can route a round and its retry to different instances).
#![allow(clippy::unwrap_used, unreachable_pub)]

use std::net::SocketAddr;

use serde_json::{Value, json};

/// The answer `yes` to the `confirm` question of `cancel_order`.
pub fn yes() -> Value {
    json!({"confirm": {"action": "accept", "content": {"confirmed": true}}})
}

/// A 2026-07-28 `tools/call` of `tool` declaring form elicitation, with `extra` params merged in
/// (`requestState`, `inputResponses`).
pub fn modern_call(id: u64, tool: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "prober", "version": "0"}
        }
    });
    if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
        params.extend(extra.clone());
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// POST one 2026 message; returns the status and the JSON-RPC message in the answer (JSON, or
/// the last `data:` of an SSE stream).
pub async fn post(addr: SocketAddr, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28");
    if let Some(method) = body["method"].as_str() {
        request = request.header("Mcp-Method", method);
    }
    if let Some(name) = body["params"]["name"]
        .as_str()
        .or_else(|| body["params"]["taskId"].as_str())
    {
        request = request.header("Mcp-Name", name);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, last_message(&text))
}

fn last_message(text: &str) -> Value {
    if let Ok(value) = serde_json::from_str(text) {
        return value;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .rfind(|message| message.get("id").is_some())
        .unwrap_or(Value::Null)
}

/// A database of its own for one test: a new SQLite file (the service's default set-up, with
/// its direct connection), or, when `$ORDERS_TEST_POSTGRES` names a PostgreSQL server
/// (`scripts/test` runs the suite a second time that way), a new database created on it for
/// this test alone.
pub async fn fresh_database() -> String {
    match std::env::var("ORDERS_TEST_POSTGRES") {
        Ok(server) if !server.is_empty() => new_postgres_database(&server).await,
        _ => new_sqlite_file(),
    }
}

/// `sqlite://…` of a file that does not exist yet, in a folder of this run's own under cargo's
/// scratch folder (folders of runs older than an hour are removed when a run starts).
pub fn new_sqlite_file() -> String {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = DIR.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for old in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let stale = old
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified < hour_ago);
            if stale && old.file_name().to_string_lossy().starts_with("orders-") {
                let _ = std::fs::remove_dir_all(old.path());
            }
        }
        let dir = root.join(format!("orders-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    });
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("sqlite://{}", dir.join(format!("{n}.sqlite")).display())
}

/// Whether this run of the suite is the PostgreSQL one.
pub fn on_postgres() -> bool {
    std::env::var("ORDERS_TEST_POSTGRES").is_ok_and(|server| !server.is_empty())
}

async fn new_postgres_database(server: &str) -> String {
    sql_pool::create_database(server, "orders").await.unwrap()
}

/// An order's status as the REST API at `addr` shows it.
pub async fn status_at(addr: SocketAddr, order: &str) -> String {
    let order: Value = get_json(format!("http://{addr}/api/orders/{order}")).await;
    order["status"].as_str().unwrap().to_owned()
}

/// The orders that can still be cancelled (PENDING, then PROCESSING), as the REST API at `addr`
/// lists them.
pub async fn cancellable(addr: SocketAddr) -> Vec<String> {
    let mut ids = Vec::new();
    for status in ["PENDING", "PROCESSING"] {
        let orders: Vec<Value> =
            get_json(format!("http://{addr}/api/orders?status={status}")).await;
        ids.extend(
            orders
                .iter()
                .map(|o| o["orderId"].as_str().unwrap().to_owned()),
        );
    }
    ids
}

/// A client that records every `notifications/resources/updated` it hears, and says so.
#[derive(Clone, Default)]
pub struct Watcher {
    pub updated: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    pub heard: std::sync::Arc<tokio::sync::Notify>,
}

impl rmcp::ClientHandler for Watcher {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.updated.lock().unwrap().push(params.uri);
        self.heard.notify_one();
    }
}

/// A 2026-07-28 `tools/call` of `tool` from a client that runs tasks (and answers forms).
pub fn task_call(id: u64, tool: &str, arguments: Value) -> Value {
    let mut call = modern_call(id, tool, arguments, json!({}));
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
        json!({"io.modelcontextprotocol/tasks": {}});
    call
}

/// A 2026-07-28 `tasks/get`, `tasks/update` or `tasks/cancel` of `task`, with `extra` params.
pub fn task_request(id: u64, method: &str, task: &str, extra: Value) -> Value {
    let mut message = modern_call(id, "", json!({}), extra);
    let params = message["params"].as_object_mut().unwrap();
    params.remove("name");
    params.remove("arguments");
    params.insert("taskId".into(), json!(task));
    message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
        json!({"io.modelcontextprotocol/tasks": {}});
    message["method"] = json!(method);
    message
}

/// Start `tool` as a task at `addr`: its id.
pub async fn start_task(addr: SocketAddr, tool: &str, arguments: Value) -> String {
    let (status, created) = post(addr, &task_call(1, tool, arguments), &[]).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

/// `tasks/get` of `task` at `addr`: the result (`status`, and `result`, `error` or
/// `inputRequests` as it stands), or the JSON-RPC error.
pub async fn task_at(addr: SocketAddr, task: &str) -> Value {
    let (_, answer) = post(addr, &task_request(2, "tasks/get", task, json!({})), &[]).await;
    match answer.get("result") {
        Some(result) => result.clone(),
        None => answer,
    }
}

/// Poll `tasks/get` at `addr` every 50 ms (for at most `within`) until `done` holds.
pub async fn poll_task(
    addr: SocketAddr,
    task: &str,
    within: std::time::Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let end = std::time::Instant::now() + within;
    loop {
        let now = task_at(addr, task).await;
        if done(&now) {
            return now;
        }
        assert!(
            std::time::Instant::now() < end,
            "task {task} did not get there in {within:?}: {now}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Whether a `tasks/get` result has `status`.
pub fn has_status(status: &'static str) -> impl Fn(&Value) -> bool {
    move |task: &Value| task["status"] == status
}

/// The JSON body of the answer to a GET of `url` (which must be answered).
pub async fn get_json<T: serde::de::DeserializeOwned>(url: impl reqwest::IntoUrl) -> T {
    json_answer(reqwest::Client::new().get(url)).await
}

/// The JSON body of the answer to `request` (which must be answered).
pub async fn json_answer<T: serde::de::DeserializeOwned>(request: reqwest::RequestBuilder) -> T {
    request.send().await.unwrap().json().await.unwrap()
}
