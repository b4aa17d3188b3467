//! The host (client side) against a real server over HTTP on port 0, on both revisions:
//! questions answered through one handler, `input_required` rounds and tasks driven to one
//! final result, progress delivered in order, and only allowed `_meta` sent.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use backchannel::serve::{self, HttpOptions};
use backchannel::testing::TestServer;
use backchannel::testing::text_of as result_text;
use backchannel::{Backchannel, TaskSupport};
use backchannel_host::{CallContext, Host, HostConfig, HostHandler};
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ProgressNotificationParam,
    RequestMetaObject,
};

#[derive(Default)]
struct Person {
    asked: Mutex<Vec<String>>,
    progress: Mutex<Vec<f64>>,
    logs: Mutex<Vec<backchannel::LogLevel>>,
}

impl HostHandler for Person {
    async fn elicit(
        &self,
        connection: &str,
        request: ElicitRequestParams,
        _meta: RequestMetaObject,
        _caller: Option<rmcp::model::ProgressToken>,
    ) -> ElicitResult {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked
                .lock()
                .unwrap()
                .push(format!("{connection}: {message}"));
        }
        ElicitResult::new(ElicitationAction::Accept)
            .with_content(serde_json::json!({"confirmed": true}))
    }

    fn on_progress(&self, _connection: &str, progress: ProgressNotificationParam) {
        self.progress.lock().unwrap().push(progress.progress);
    }

    fn on_log(&self, _connection: &str, message: backchannel_host::LogMessage) {
        self.logs.lock().unwrap().push(message.level);
    }
}

async fn start_server() -> (String, backchannel::testing::Served) {
    let layer = Backchannel::builder()
        .task_tool("task_confirm", TaskSupport::Optional)
        .build()
        .unwrap();
    let server = TestServer::new(layer);
    let options = HttpOptions::default();
    let served = backchannel::testing::serve_with(
        |stop| serve::router(move || server.clone(), &options, stop),
        &options,
    )
    .await;
    (served.url("/mcp"), served)
}

/// A host of one connection, `orders` at `url` on `protocol`, answering as a fresh `Person`.
async fn open(url: &str, protocol: &str) -> (Arc<Person>, Host<Person>) {
    let person = Arc::new(Person::default());
    let host = Host::open(&config(url, protocol), person.clone()).await;
    (person, host.unwrap())
}

fn config(url: &str, protocol: &str) -> HostConfig {
    HostConfig::from_toml(&config_text(url, protocol)).unwrap()
}

fn config_text(url: &str, protocol: &str) -> String {
    format!(
        r#"
client_name = "test-host"
meta_allow = ["progressToken"]
[connections.orders]
transport = "http"
url = "{url}"
protocol = "{protocol}"
request_timeout_secs = 20
"#
    )
}

#[tokio::test]
async fn the_host_answers_questions_on_both_revisions() {
    let (url, _stop) = start_server().await;
    for protocol in backchannel::Revision::ALL.map(|r| r.date()) {
        let (person, host) = open(&url, protocol).await;
        assert!(host.unavailable.is_empty(), "{:?}", host.unavailable);
        let orders = host.connection("orders").unwrap();
        let version = orders.protocol_version().map(|v| v.to_string());
        let result = orders
            .call_tool("confirm", None, &CallContext::new())
            .await
            .unwrap();
        assert_eq!(
            result_text(&result),
            "accepted Confirmation { confirmed: true, note: None }",
            "{protocol} (negotiated {version:?})"
        );
        assert_eq!(*person.asked.lock().unwrap(), vec!["orders: Go ahead?"]);
        host.close().await;
    }
}

#[tokio::test]
async fn a_round_at_a_moved_endpoint_follows_the_move_within_its_origin() {
    let layer = Backchannel::builder().build().unwrap();
    let server = TestServer::new(layer);
    let options = HttpOptions::default();
    let moved = axum::routing::any(|| async {
        (
            axum::http::StatusCode::TEMPORARY_REDIRECT,
            [(axum::http::header::LOCATION, "/mcp")],
        )
    });
    let served = backchannel::testing::serve_with(
        |stop| serve::router(move || server.clone(), &options, stop).route("/moved", moved),
        &options,
    )
    .await;
    let (person, host) = open(&served.url("/moved"), "2026-07-28").await;
    assert!(host.unavailable.is_empty(), "{:?}", host.unavailable);
    let result = host
        .connection("orders")
        .unwrap()
        .call_tool("confirm", None, &CallContext::new())
        .await
        .unwrap();
    assert_eq!(
        result_text(&result),
        "accepted Confirmation { confirmed: true, note: None }"
    );
    assert_eq!(*person.asked.lock().unwrap(), vec!["orders: Go ahead?"]);
    host.close().await;
}

#[tokio::test]
async fn the_host_follows_a_task_and_answers_its_question() {
    let (url, _stop) = start_server().await;
    let (person, host) = open(&url, "2026-07-28").await;
    let result = host
        .connection("orders")
        .unwrap()
        .call_tool("task_confirm", None, &CallContext::new())
        .await
        .unwrap();
    assert_eq!(
        result_text(&result),
        "in task=true: accepted Confirmation { confirmed: true, note: None }"
    );
    assert_eq!(person.asked.lock().unwrap().len(), 1);
    host.close().await;
}

#[tokio::test]
async fn declared_roots_carry_their_configured_names() {
    let (url, _stop) = start_server().await;
    for protocol in backchannel::Revision::ALL.map(|r| r.date()) {
        let config = HostConfig::from_toml(&format!(
            r#"
trusted_folders = ["/srv/kb"]
[connections.orders]
transport = "http"
url = "{url}"
protocol = "{protocol}"
roots = [{{ path = "/srv/kb/current", name = "Support knowledge base" }}, "/srv/kb/old"]
capabilities = {{ roots = true }}
"#
        ))
        .unwrap();
        let host = Host::open(&config, Arc::new(Person::default()))
            .await
            .unwrap();
        let result = host
            .connection("orders")
            .unwrap()
            .call_tool("folders", None, &CallContext::new())
            .await
            .unwrap();
        assert_eq!(
            result_text(&result),
            "listed file:///srv/kb/current (Support knowledge base),file:///srv/kb/old (old)",
            "{protocol}"
        );
        host.close().await;
    }
}

#[tokio::test]
async fn progress_reaches_the_handler_in_order() {
    let (url, _stop) = start_server().await;
    for protocol in backchannel::Revision::ALL.map(|r| r.date()) {
        let (person, host) = open(&url, protocol).await;
        let context = CallContext::new()
            .with("progressToken", "conversation-1")
            .with("secret", "x");
        host.connection("orders")
            .unwrap()
            .call_tool("progress", None, &context)
            .await
            .unwrap();
        let seen = person.progress.lock().unwrap().clone();
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{protocol}: {seen:?}");
        assert!(!seen.is_empty(), "{protocol}");
        host.close().await;
    }
}

/// Issue 76: rmcp handles each incoming notification in a task of its own, so a 2025-11-25
/// session's progress reached the handler out of order and every value not above the last one
/// was dropped (73-82 of a recheck's 87 came through the gateway). All of them, in order, now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_progress_notifications_all_reach_the_handler_in_order() {
    let (url, _stop) = start_server().await;
    for protocol in backchannel::Revision::ALL.map(|r| r.date()) {
        let (person, host) = open(&url, protocol).await;
        let context = CallContext::new().with("progressToken", "conversation-1");
        host.connection("orders")
            .unwrap()
            .call_tool("progress_many", None, &context)
            .await
            .unwrap();
        let seen = person.progress.lock().unwrap().clone();
        let expected: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(seen.len(), 1000, "{protocol}: {} arrived", seen.len());
        assert_eq!(seen, expected, "{protocol}");
        host.close().await;
    }
}

/// Issue 72: the host never asked for a log level, so a server's `ctx.log` sent nothing on
/// 2026-07-28 (no level in the request) and the desk never saw one. It asks for the configured
/// level now (`info` by default): `logging/setLevel` on a 2025-11-25 session, each request's
/// `io.modelcontextprotocol/logLevel` on 2026-07-28.
#[tokio::test]
async fn the_host_asks_for_the_configured_log_level_on_both_revisions() {
    use backchannel::LogLevel::{Debug, Error, Info, Warning};
    let (url, _stop) = start_server().await;
    for protocol in backchannel::Revision::ALL.map(|r| r.date()) {
        for (level, expected) in [
            (None, vec![Info, Warning, Error]),
            (Some("debug"), vec![Debug, Info, Warning, Error]),
            (Some("error"), vec![Error]),
        ] {
            let mut config = config(&url, protocol);
            if let Some(level) = level {
                let with = format!("log_level = \"{level}\"\nrequest_timeout_secs");
                let text = config_text(&url, protocol).replace("request_timeout_secs", &with);
                config = HostConfig::from_toml(&text).unwrap();
            }
            let person = Arc::new(Person::default());
            let host = Host::open(&config, person.clone()).await.unwrap();
            let context = CallContext::new().with("progressToken", "conversation-1");
            host.connection("orders")
                .unwrap()
                .call_tool("logs", None, &context)
                .await
                .unwrap();
            let seen = person.logs.lock().unwrap().clone();
            assert_eq!(seen, expected, "{protocol}, log_level {level:?}");
            host.close().await;
        }
    }
    let off = config_text(&url, "2026-07-28").replace(
        "request_timeout_secs",
        "log_level = \"off\"\nrequest_timeout_secs",
    );
    let config = HostConfig::from_toml(&off).unwrap();
    assert_eq!(config.connections["orders"].log_level, None);
    let refused = config_text(&url, "2026-07-28").replace(
        "request_timeout_secs",
        "log_level = \"loud\"\nrequest_timeout_secs",
    );
    let error = HostConfig::from_toml(&refused).unwrap_err().to_string();
    assert!(error.contains("log_level \"loud\""), "{error}");
}

#[test]
fn only_allowed_context_values_enter_meta() {
    let context = CallContext::new()
        .with("progressToken", "c-1")
        .with("support_agent_id", "ana")
        .with("password", "x");
    let meta = context.meta(&["progressToken".to_owned(), "support_agent_id".to_owned()]);
    assert_eq!(meta.get("progressToken"), Some(&serde_json::json!("c-1")));
    assert_eq!(
        meta.get("support_agent_id"),
        Some(&serde_json::json!("ana"))
    );
    assert!(meta.get("password").is_none());
}

/// A TCP relay on port 0 in front of a server: it counts the connections made through it and
/// can cut them all, as a server closing its idle keep-alive connections would.
struct Relay {
    address: std::net::SocketAddr,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
    open: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    _accepting: tokio_util::task::AbortOnDropHandle<()>,
}

impl Relay {
    async fn start(to: std::net::SocketAddr) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let open = Arc::new(Mutex::new(Vec::new()));
        let (counted, kept) = (accepted.clone(), open.clone());
        let accepting = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut outbound = tokio::net::TcpStream::connect(to).await.unwrap();
                kept.lock().unwrap().push(tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }));
            }
        });
        Relay {
            address,
            accepted,
            open,
            _accepting: tokio_util::task::AbortOnDropHandle::new(accepting),
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Close every connection made through the relay so far, both ways, and wait until they
    /// are closed.
    async fn cut_all(&self) {
        let open = std::mem::take(&mut *self.open.lock().unwrap());
        for connection in open {
            connection.abort();
            let _ = connection.await;
        }
    }
}

#[tokio::test]
async fn direct_rounds_keep_their_connections_and_a_closed_one_is_opened_again() {
    let (_, served) = start_server().await;
    let relay = Relay::start(served.addr).await;
    let (person, host) = open(&format!("http://{}/mcp", relay.address), "2026-07-28").await;
    assert!(host.unavailable.is_empty(), "{:?}", host.unavailable);
    let orders = host.connection("orders").unwrap();
    let confirmed = "accepted Confirmation { confirmed: true, note: None }";
    let context = CallContext::new();
    let call = || orders.call_tool("confirm", None, &context);
    assert_eq!(result_text(&call().await.unwrap()), confirmed);
    let opened = relay.accepted();
    for _ in 0..3 {
        assert_eq!(result_text(&call().await.unwrap()), confirmed);
    }
    assert_eq!(
        relay.accepted(),
        opened,
        "three calls of two rounds each went out on the connections already open"
    );
    relay.cut_all().await;
    for _ in 0..2 {
        assert_eq!(result_text(&call().await.unwrap()), confirmed);
    }
    assert!(
        relay.accepted() > opened,
        "the rounds after the cut went out on new connections"
    );
    assert_eq!(person.asked.lock().unwrap().len(), 6);
    host.close().await;
}

/// The host's own HTTP/1.1 rounds (`direct_rounds`, the default) answer as rmcp's client does
/// (`direct_rounds = false`): the same results, questions, progress and log messages, call by
/// call, on a stateless connection. The pair of this wire of our own for an rmcp upgrade.
#[tokio::test]
async fn the_direct_rounds_answer_as_rmcp_would() {
    let (url, _stop) = start_server().await;
    let calls = ["confirm", "progress_then_ask", "progress", "logs", "fails"];
    let mut seen = Vec::new();
    for direct in [true, false] {
        let text = config_text(&url, "2026-07-28") + &format!("direct_rounds = {direct}\n");
        let person = Arc::new(Person::default());
        let host = Host::open(&HostConfig::from_toml(&text).unwrap(), person.clone())
            .await
            .unwrap();
        let orders = host.connection("orders").unwrap();
        assert_eq!(orders.uses_direct_rounds(), direct);
        let mut results = Vec::new();
        for name in calls {
            let result = orders.call_tool(name, None, &CallContext::new()).await;
            let result = result.unwrap_or_else(|e| panic!("{name} (direct rounds {direct}): {e}"));
            results.push(serde_json::to_value(result).unwrap());
        }
        let asked = person.asked.lock().unwrap().clone();
        let progress = person.progress.lock().unwrap().clone();
        let logs = person.logs.lock().unwrap().len();
        seen.push((results, asked, progress, logs));
        host.close().await;
    }
    assert!(!seen[0].1.is_empty() && !seen[0].2.is_empty() && seen[0].3 > 0);
    assert_eq!(seen[0], seen[1], "direct rounds, then rmcp's");
}

#[tokio::test]
async fn an_unreachable_server_is_listed_not_fatal() {
    let person = Arc::new(Person::default());
    let host = Host::open(&config("http://127.0.0.1:9/mcp", "2025-11-25"), person)
        .await
        .unwrap();
    assert!(host.unavailable.contains_key("orders"));
    assert!(host.connection("orders").is_err());
}

/// The repository's root (canonical: the filesystem server compares the paths it is given).
fn repo() -> std::path::PathBuf {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent();
    let repo = crates.and_then(|c| c.parent()).unwrap();
    repo.canonicalize().unwrap()
}

/// A host with one stdio connection, `name`, to the official filesystem server (pinned in
/// tools/node), whose one root is `root`, inside the repository the host trusts; `more` lines of
/// the connection's settings besides.
async fn with_filesystem(name: &str, root: &std::path::Path, more: &str) -> Host<Person> {
    let repo = repo();
    let server = repo.join("tools/node/node_modules/.bin/mcp-server-filesystem");
    assert!(
        server.exists(),
        "run scripts/test (it installs tools/node) first: {}",
        server.display()
    );
    let config = HostConfig::from_toml(&format!(
        r#"
trusted_folders = ["{repo}"]
[connections.{name}]
transport = "stdio"
command = "{server}"
roots = ["{root}"]
capabilities = {{ roots = true, elicitation = false, tasks = false }}
{more}"#,
        repo = repo.display(),
        server = server.display(),
        root = root.display(),
    ))
    .unwrap();
    Host::open(&config, Arc::new(Person::default()))
        .await
        .unwrap()
}

/// The official filesystem server (pinned in tools/node), over stdio, gets its directories from
/// the roots this host declares.
#[tokio::test]
async fn class13_check_it_roots_the_filesystem_server_uses_the_declared_roots() {
    let repo = repo();
    let kb = repo.join("support-kb");
    let more = r#"
tool_prefix = "knowledge_base_"
tools = ["read_text_file", "list_directory", "list_allowed_directories"]
"#;
    let host = with_filesystem("knowledge-base", &kb, more).await;
    assert!(host.unavailable.is_empty(), "{:?}", host.unavailable);
    let kb_connection = host.connection("knowledge-base").unwrap();
    let tools: Vec<String> = kb_connection
        .tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(tools.len(), 3, "{tools:?}");
    assert!(
        tools.iter().all(|t| t.starts_with("knowledge_base_")),
        "{tools:?}"
    );
    // The server asks for the roots after the handshake, on its own time: wait for it to say so.
    let roots_taken = |line: &str| {
        line.contains("Updated allowed directories from MCP roots: 1 valid directories")
    };
    assert!(
        kb_connection
            .wait_for_stderr(roots_taken, std::time::Duration::from_secs(10))
            .await,
        "the server's stderr reports the roots: {:?}",
        kb_connection.stderr_tail()
    );
    let allowed = kb_connection
        .call_tool("list_allowed_directories", None, &CallContext::new())
        .await
        .unwrap();
    assert!(
        result_text(&allowed).contains(&kb.display().to_string()),
        "{}",
        result_text(&allowed)
    );
    let mut args = serde_json::Map::new();
    args.insert("path".into(), serde_json::json!(kb.join("carriers.md")));
    let note = kb_connection
        .call_tool("read_text_file", Some(args), &CallContext::new())
        .await
        .unwrap();
    assert!(result_text(&note).contains("DHL"), "{}", result_text(&note));
    host.close().await;
}

/// Issue 72: a connection's roots could not change while it was open (no way to add or remove
/// one, no `notifications/roots/list_changed`). Now the host adds and removes them and tells the
/// server, and the official filesystem server takes the new list.
#[tokio::test]
async fn roots_that_change_while_the_connection_is_open_reach_the_filesystem_server() {
    let repo = repo();
    let (kb, archive) = (repo.join("support-kb"), repo.join("support-kb-archive"));
    let host = with_filesystem("notes", &kb, "").await;
    let notes = host.connection("notes").unwrap();
    let took = |n: usize| {
        move |line: &str| {
            line.contains(&format!(
                "Updated allowed directories from MCP roots: {n} valid"
            ))
        }
    };
    let wait = std::time::Duration::from_secs(10);
    assert!(
        notes.wait_for_stderr(took(1), wait).await,
        "{:?}",
        notes.stderr_tail()
    );
    let allowed = || async {
        let listed = notes
            .call_tool("list_allowed_directories", None, &CallContext::new())
            .await
            .unwrap();
        result_text(&listed)
    };
    assert!(!allowed().await.contains("support-kb-archive"));

    assert!(notes.add_root(&archive, Some("Archive")).await.unwrap());
    assert!(!notes.add_root(&archive, None).await.unwrap(), "once");
    assert!(
        notes.wait_for_stderr(took(2), wait).await,
        "{:?}",
        notes.stderr_tail()
    );
    assert!(
        allowed().await.contains("support-kb-archive"),
        "{}",
        allowed().await
    );
    assert_eq!(notes.roots().len(), 2);
    let named = serde_json::to_value(&notes.roots()[1]).unwrap();
    assert_eq!(named["name"], "Archive", "{named}");

    // Named another way, it is the same folder.
    let dotted = kb.join("..").join("support-kb-archive");
    assert!(notes.remove_root(&dotted).await.unwrap());
    assert!(!notes.remove_root(&archive).await.unwrap(), "gone already");
    // The server says so on its stderr: a second "1 valid" line (the first came at start).
    let again = |_: &str| {
        notes
            .stderr_tail()
            .iter()
            .filter(|line| took(1)(line))
            .count()
            >= 2
    };
    assert!(
        notes.wait_for_stderr(again, wait).await,
        "{:?}",
        notes.stderr_tail()
    );
    assert!(
        !allowed().await.contains("support-kb-archive"),
        "{}",
        allowed().await
    );

    // A folder outside the trusted ones is refused, and nothing changes.
    let refused = notes.add_root(std::path::Path::new("/etc"), None).await;
    assert!(
        matches!(refused, Err(backchannel_host::HostError::Config(_))),
        "{refused:?}"
    );
    let relative = notes.add_root(std::path::Path::new("notes"), None).await;
    assert!(relative.is_err(), "{relative:?}");
    assert_eq!(notes.roots().len(), 1);
    host.close().await;
}

/// A 2025-11-25 server like the TypeScript SDK's: what it sends outside a call goes on the
/// session's listening GET stream, and is dropped when that stream is not open yet. This one
/// answers the GET 300 ms late and records, for each later request, whether the stream was
/// open by then.
mod listening_server {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use axum::body::Body;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use serde_json::{Value, json};

    #[derive(Default)]
    pub(super) struct Seen {
        pub(super) listening: AtomicBool,
        /// `(method, was the listening stream open)` for each request after the handshake.
        pub(super) requests: Mutex<Vec<(String, bool)>>,
    }

    pub(super) fn router(seen: Arc<Seen>) -> axum::Router {
        axum::Router::new()
            .route(
                "/mcp",
                axum::routing::post(post).get(get).delete(|| async { "" }),
            )
            .with_state(seen)
    }

    async fn post(State(seen): State<Arc<Seen>>, body: axum::body::Bytes) -> Response {
        let message: Value = serde_json::from_slice(&body).unwrap_or_default();
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        let id = message["id"].clone();
        let result = match method.as_str() {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "listening-test", "version": "1"}
            }),
            "notifications/initialized" => return StatusCode::ACCEPTED.into_response(),
            "" => return StatusCode::ACCEPTED.into_response(),
            other => {
                let open = seen.listening.load(Ordering::SeqCst);
                seen.requests.lock().unwrap().push((other.to_owned(), open));
                json!({"tools": []})
            }
        };
        (
            [
                ("content-type", "application/json"),
                ("mcp-session-id", "listening-session"),
            ],
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
        )
            .into_response()
    }

    async fn get(State(seen): State<Arc<Seen>>, headers: HeaderMap) -> Response {
        assert_eq!(
            headers.get("mcp-session-id").and_then(|v| v.to_str().ok()),
            Some("listening-session")
        );
        // A slow server: the stream opens 300 ms after it was asked for.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        seen.listening.store(true, Ordering::SeqCst);
        (
            [("content-type", "text/event-stream")],
            Body::from_stream(futures::stream::pending::<Result<String, std::io::Error>>()),
        )
            .into_response()
    }
}

#[tokio::test]
async fn on_2025_the_first_request_waits_for_the_listening_stream() {
    let seen = Arc::new(listening_server::Seen::default());
    let router = listening_server::router(seen.clone());
    let served =
        backchannel::testing::serve_with(move |_stop| router, &HttpOptions::default()).await;
    let host = Host::open(
        &config(&served.url("/mcp"), "2025-11-25"),
        Arc::new(Person::default()),
    )
    .await
    .unwrap();
    assert!(host.unavailable.is_empty(), "{:?}", host.unavailable);
    host.connection("orders").unwrap().tools().await.unwrap();
    assert_eq!(
        *seen.requests.lock().unwrap(),
        vec![("tools/list".to_owned(), true)],
        "the first request after connecting went out once the server's listening stream was open"
    );
    host.close().await;
}
