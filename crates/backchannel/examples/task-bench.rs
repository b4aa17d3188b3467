//! Benchmark (not a test): tasks created and completed per second for a no-op task tool, on
//! each task store, and the memory held by 10,000 finished tasks in the memory store.
//!
//! `task-bench [--postgres URL] [--seconds N] [--callers N]`; `scripts/bench-tasks` runs it in
//! release with a PostgreSQL server of its own. Each caller is an rmcp client (2026-07-28,
//! declaring the tasks extension) on an in-process pipe: `tools/call` answers with a task,
//! then `tasks/get` until it is completed.

#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use backchannel::tasks::{MemoryTaskStore, SqlTaskStore, TaskStore};
use backchannel::testing::{Revision, connect};
use backchannel::{Backchannel, Ctx, TaskSupport, ToolResult};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, GetTaskParams,
    Implementation, JsonObject, ServerCapabilities, ServerConfig, TASKS_EXTENSION_ID, TaskPayload,
};
use rmcp::{ClientHandler, ServerHandler, tool, tool_router};

#[derive(Clone)]
struct NoOp {
    layer: Backchannel,
    tools: ToolRouter<Self>,
}

#[tool_router]
impl NoOp {
    #[tool(description = "Does nothing, as a task")]
    async fn noop(&self, ctx: Ctx) -> ToolResult {
        ctx.escalate().await?;
        Ok(rmcp::model::CallToolResult::success(vec![
            rmcp::model::ContentBlock::text("done"),
        ]))
    }
}

impl ServerHandler for NoOp {
    backchannel::layer_hooks!(layer, tools: tools);

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }
}

#[derive(Clone)]
struct Caller;

impl ClientHandler for Caller {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.extensions = Some([(TASKS_EXTENSION_ID.to_owned(), JsonObject::new())].into());
        ClientConfig::new(caps, Implementation::new("task-bench", "0"))
    }
}

fn server(store: Arc<dyn TaskStore>) -> NoOp {
    let layer = Backchannel::builder()
        .task_tool("noop", TaskSupport::Required)
        .task_store(store)
        .build()
        .expect("a valid layer");
    NoOp {
        layer,
        tools: NoOp::tool_router(),
    }
}

/// Create one task and poll it until it is completed.
async fn one(client: &rmcp::service::RunningService<rmcp::RoleClient, Caller>) {
    let CallToolResponse::Task(created) = client
        .call_tool_once(CallToolRequestParams::new("noop"))
        .await
        .expect("tools/call")
    else {
        panic!("the no-op tool did not answer with a task");
    };
    loop {
        let task = client
            .get_task(GetTaskParams::new(created.task.task_id.clone()))
            .await
            .expect("tasks/get");
        match task.task.payload {
            TaskPayload::Completed { .. } => return,
            TaskPayload::Working => tokio::task::yield_now().await,
            other => panic!("unexpected task state {other:?}"),
        }
    }
}

/// Tasks completed per second with `callers` clients for `seconds`.
async fn throughput(store: Arc<dyn TaskStore>, callers: usize, seconds: u64) -> (f64, u64) {
    let server = server(store);
    let mut clients = Vec::new();
    for _ in 0..callers {
        clients.push(connect(server.clone(), Caller, Revision::V2026_07_28).await);
    }
    // Warm up.
    one(&clients[0]).await;
    let end = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let counts = futures::future::join_all(clients.iter().map(|client| async move {
        let mut n = 0u64;
        while Instant::now() < end {
            one(client).await;
            n += 1;
        }
        n
    }))
    .await;
    let done: u64 = counts.iter().sum();
    (done as f64 / started.elapsed().as_secs_f64(), done)
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (mut postgres, mut seconds, mut callers) = (None, 5u64, 16usize);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--postgres" => postgres = args.next(),
            "--seconds" => seconds = args.next().and_then(|s| s.parse().ok()).unwrap_or(5),
            "--callers" => callers = args.next().and_then(|s| s.parse().ok()).unwrap_or(16),
            other => panic!("unknown argument {other}"),
        }
    }
    // First, in a fresh heap: memory held by 10,000 finished tasks in the memory store.
    let store = MemoryTaskStore::new();
    let server = server(Arc::new(store.clone()));
    let client = connect(server, Caller, Revision::V2026_07_28).await;
    one(&client).await;
    let before = rss_kib();
    for _ in 0..10_000 {
        one(&client).await;
    }
    let after = rss_kib();
    println!(
        "10,000 finished tasks in the memory store: {} tasks held, RSS +{:.1} MiB ({} bytes per task)",
        store.len(),
        (after.saturating_sub(before)) as f64 / 1024.0,
        after.saturating_sub(before) * 1024 / 10_000
    );
    let dir = std::env::temp_dir().join(format!("task-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let sqlite = format!("sqlite://{}", dir.join("tasks.sqlite").display());
    let mut stores: Vec<(&str, Arc<dyn TaskStore>)> = vec![
        ("memory", Arc::new(MemoryTaskStore::new())),
        (
            "sqlite (file, WAL)",
            Arc::new(SqlTaskStore::open(&sqlite).await.expect("SQLite")),
        ),
    ];
    if let Some(url) = &postgres {
        stores.push((
            "postgresql",
            Arc::new(SqlTaskStore::open(url).await.expect("PostgreSQL")),
        ));
    }
    println!("no-op task tool, {callers} callers on one runtime thread, {seconds} s per store:");
    println!("| store | tasks created + completed per second | tasks |");
    println!("|---|---|---|");
    for (name, store) in stores {
        let (rate, done) = throughput(store, callers, seconds).await;
        println!("| {name} | {rate:.0} | {done} |");
    }

    let _ = std::fs::remove_dir_all(&dir);
}
