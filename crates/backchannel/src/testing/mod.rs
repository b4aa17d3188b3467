//! What the workspace's tests share (feature `test-util`, the tokio pattern): the revisions to
//! run every behaviour test on, an rmcp client connected to a server on either revision (over
//! an in-process pipe or real HTTP), a router served on a free loopback port, and small helpers
//! for calls, results and snapshots, and an OTLP receiver ([`otlp`]). Not for production code.

pub mod docs;
pub mod otlp;
mod server;

use std::net::SocketAddr;
use std::path::Path;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::{ClientHandler, RoleClient, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::Revision;
pub use server::{Color, Confirmation, Observed, Page, TestServer, elicited};

/// How an rmcp client starts on `revision`: `initialize` for 2025-11-25, `server/discover`
/// for 2026-07-28.
pub fn lifecycle(revision: Revision) -> ClientLifecycleMode {
    if revision.has_sessions() {
        ClientLifecycleMode::Initialize
    } else {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![revision.protocol_version()],
        }
    }
}

/// Connect `client` to `server` over an in-process pipe, speaking `revision`. Any client
/// service will do: a `ClientHandler`, or one written on `rmcp::Service` to answer what no
/// handler would (a wrong kind of result).
///
/// # Panics
/// When the client cannot start (a test failure).
pub async fn connect<S, C>(
    server: S,
    client: C,
    revision: Revision,
) -> RunningService<RoleClient, C>
where
    S: ServerHandler,
    C: rmcp::Service<RoleClient>,
{
    let (client_io, server_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    client
        .serve_with_lifecycle(client_io, lifecycle(revision))
        .await
        .unwrap_or_else(|e| panic!("the client did not start on {revision}: {e}"))
}

/// Connect `client` to the MCP endpoint `url` over Streamable HTTP, speaking `revision`, with
/// `bearer` as the `Authorization` token when given.
///
/// # Panics
/// When the client cannot start (a test failure).
pub async fn connect_http<C: ClientHandler>(
    client: C,
    url: &str,
    revision: Revision,
    bearer: Option<&str>,
) -> RunningService<RoleClient, C> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    client
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            lifecycle(revision),
        )
        .await
        .unwrap_or_else(|e| panic!("the client did not start on {revision}: {e}"))
}

/// A router served on a free loopback port; stopped when dropped.
#[derive(Debug)]
pub struct Served {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: CancellationToken,
}

impl Served {
    /// `http://<addr><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The token that stops it (give it to `serve::router` as its shutdown).
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serve `app` with `serve::http` (the protections our servers run with) on a free loopback
/// port.
///
/// # Panics
/// When no loopback port can be bound (a test failure).
pub async fn serve(app: axum::Router, options: &crate::serve::HttpOptions) -> Served {
    serve_with(|_| app, options).await
}

/// Like [`serve`], for a router that needs the server's stop token (as `serve::router` does).
///
/// # Panics
/// When no loopback port can be bound (a test failure).
pub async fn serve_with(
    app: impl FnOnce(CancellationToken) -> axum::Router,
    options: &crate::serve::HttpOptions,
) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("no loopback port: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("no local address: {e}"));
    let stop = CancellationToken::new();
    let app = app(stop.clone());
    let options = options.clone();
    let shutdown = stop.clone();
    tokio::spawn(async move {
        crate::serve::http(listener, app, &options, async move {
            shutdown.cancelled().await
        })
        .await
    });
    Served { addr, stop }
}

/// Log output kept in memory, for a test that reads what was logged: give
/// `move || logs.clone()` as a `tracing_subscriber` writer, then read [`CapturedLogs::text`].
#[derive(Debug, Clone, Default)]
pub struct CapturedLogs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl CapturedLogs {
    /// Everything written so far.
    pub fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// 128 random bits as hex, for names a test must not share with another.
pub fn random_hex() -> String {
    crate::util::fresh_nonce()
}

/// Open a 2025-11-25 session by hand: `post` (a POST to an MCP endpoint, with whatever
/// credentials the test adds) carrying an `initialize` that declares `capabilities`. The
/// session's id, which the answer must carry.
pub async fn open_2025_session(post: reqwest::RequestBuilder, capabilities: Value) -> String {
    let opened = post
        .header("Accept", "application/json, text/event-stream")
        .json(
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": Revision::V2025_11_25.date(), "capabilities": capabilities,
            "clientInfo": {"name": "prober", "version": "0"}}}),
        )
        .send()
        .await
        .expect("the server answers the initialize");
    let id = opened
        .headers()
        .get("mcp-session-id")
        .expect("a session id");
    id.to_str().expect("a session id as text").to_owned()
}

/// The `name` of each item of a JSON list (a tool list as a client or an API shows it).
pub fn names(list: &Value) -> Vec<&str> {
    let items = list.as_array().expect("a list");
    items
        .iter()
        .map(|item| item["name"].as_str().expect("a name"))
        .collect()
}

/// Run `command` (a binary under test) to its end: whether it succeeded, its stdout and its
/// stderr, as text.
pub fn output(command: &mut std::process::Command) -> (bool, String, String) {
    let output = command.output().expect("the binary runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `tools/call` parameters: `name` with `arguments` (an object, or `null` for none).
pub fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = arguments.as_object().cloned();
    params
}

/// The text blocks of a tool result, joined by newlines.
pub fn text_of(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.as_str())
        .collect();
    texts.join("\n")
}

/// A tool result's `structuredContent` (`null` without one).
pub fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

/// Compare `actual` with the file `dir/name`; with `UPDATE_SNAPSHOTS` set, rewrite it first.
///
/// # Panics
/// When they differ or the snapshot is missing (a test failure).
pub fn snapshot(dir: &Path, name: &str, actual: &str) {
    let path = dir.join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(&path, actual);
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing {}; run with UPDATE_SNAPSHOTS=1 and review it",
            path.display()
        )
    });
    assert_eq!(
        actual, expected,
        "{name} changed; if on purpose, run with UPDATE_SNAPSHOTS=1 and review the diff"
    );
}

/// The running cluster `scripts/test-cluster` started: its folder (`$CLUSTER_DIR`) and its
/// endpoints, the `NAME URL` lines `scripts/cluster up` wrote to `endpoints`.
pub fn cluster() -> (
    std::path::PathBuf,
    std::collections::HashMap<String, String>,
) {
    let dir = std::path::PathBuf::from(
        std::env::var("CLUSTER_DIR").expect("run through scripts/test-cluster"),
    );
    let text = std::fs::read_to_string(dir.join("endpoints")).expect("the cluster's endpoints");
    let endpoints = text
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(name, url)| (name.to_owned(), url.to_owned()))
        .collect();
    (dir, endpoints)
}

/// Run `check` on every input in `fuzz/seeds/<target>` and `fuzz/regressions/<target>` (the
/// fuzzer's findings, replayed by the crates' own tests); panics naming the first input that
/// makes `check` panic, or when there are no inputs at all.
pub fn replay_fuzz_corpus(target: &str, check: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
    crate::util::replay_fuzz_corpus(target, check);
}
