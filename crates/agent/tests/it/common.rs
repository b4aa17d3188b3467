//! Shared by the agent's integration tests: the demo on free loopback ports, and a chat call.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::time::Duration;

use agent::app::{self, DemoConfig};
use agent::desk::DeskConfig;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A running demo: the order service and the web UI; stopped when dropped.
pub struct Demo {
    /// The web UI, ending in `/`.
    pub url: String,
    stop: CancellationToken,
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop.cancel();
        forget(&self.url);
    }
}

/// The order service's settings for a test: SQLite in memory, this carrier latency.
pub fn orders_in_memory(carrier_latency: Duration) -> orders::app::Config {
    orders::app::Config {
        database: Some("sqlite::memory:".into()),
        service: orders::service::ServiceConfig {
            carrier_latency,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A scripted fake's chat completion (OpenAI's shape) carrying `message`, 40 tokens in and 10
/// out.
pub fn completion(message: Value) -> axum::Json<Value> {
    axum::Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50}
    }))
}

/// An assistant message that calls `tool` with `arguments` (a JSON object, as text).
pub fn tool_call(tool: &str, arguments: &str) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": tool, "arguments": arguments}
    }]})
}

/// Serve `app` (a scripted fake) on a free loopback port; its base URL, `http://ADDR`.
pub async fn serve_fake(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Serve an MCP server (`make` gives one per connection) on a free loopback port until `stop`;
/// its endpoint, `http://ADDR/mcp`.
pub async fn serve_mcp<S: rmcp::ServerHandler>(
    make: impl Fn() -> S + Send + Sync + 'static,
    stop: &CancellationToken,
) -> String {
    use backchannel::serve::{self, HttpOptions};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = serve::router(make, &HttpOptions::default(), stop.clone());
    let shutdown = stop.clone();
    tokio::spawn(async move {
        serve::http(listener, app, &HttpOptions::default(), async move {
            shutdown.cancelled().await
        })
        .await
    });
    url
}

/// Serve the demo's order service on `listener`, knowing its desk by its token when `desk`
/// says how (as the binary does).
pub async fn serve_orders(
    orders: orders::app::Config,
    listener: tokio::net::TcpListener,
    desk: Option<app::DeskCaller>,
    stop: CancellationToken,
) -> Result<(), orders::app::AppError> {
    let orders = match desk {
        Some(desk) => orders.knowing(desk.addr, app::DESK_PRINCIPAL, &desk.token)?,
        None => orders,
    };
    orders::app::serve_http(listener, &orders, stop).await
}

/// Start the demo on free ports; returns once the web UI listens.
pub async fn start(orders: orders::app::Config, desk: DeskConfig) -> Demo {
    let stop = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let config = DemoConfig {
        orders_listen: "127.0.0.1:0".parse().unwrap(),
        web_listen: "127.0.0.1:0".parse().unwrap(),
        desk,
        web: Default::default(),
    };
    let shutdown = stop.clone();
    let serve_orders = move |listener, desk, stop| serve_orders(orders, listener, desk, stop);
    tokio::spawn(async move {
        app::demo(config, serve_orders, shutdown, move |url| {
            let _ = tx.send(url);
        })
        .await
        .unwrap();
    });
    let url = rx.await.unwrap();
    // A server listens at this URL now: a session another test kept for a server that was
    // there before (stopped to be restarted on its port, say) is not this one's.
    forget(&url);
    Demo { url, stop }
}

/// The demo with `model` on 2026-07-28 (the orders in memory, a 5 ms carrier), the desk's
/// other settings as `configure` leaves them.
pub async fn start_with_model(
    model: agent::llm::Provider,
    configure: impl FnOnce(&mut DeskConfig),
) -> Demo {
    let mut desk = DeskConfig {
        protocol: Some(backchannel::Revision::V2026_07_28),
        model: Some(model),
        ..DeskConfig::default()
    };
    configure(&mut desk);
    start(orders_in_memory(Duration::from_millis(5)), desk).await
}

/// The browser sessions (a cookie per web UI) and conversations the tests made, by the name
/// a test gives its conversation: the desk makes the ids, the tests keep calling them "c1".
static SESSIONS: std::sync::Mutex<Vec<Session>> = std::sync::Mutex::new(Vec::new());

struct Session {
    url: String,
    cookie: String,
    conversations: Vec<(String, String)>,
}

/// Forget the session with the web UI at `url` (it stopped: another may get its port).
pub fn forget(url: &str) {
    SESSIONS.lock().unwrap().retain(|s| s.url != url);
}

/// Forgets the session with its web UI when dropped (for a web UI a test serves itself).
pub struct Forget(String);

impl Forget {
    /// For the web UI now listening at `url`: a session kept for an earlier server on its port
    /// is forgotten at once (it is not this one's), this one's when dropped.
    pub fn new(url: &str) -> Forget {
        forget(url);
        Forget(url.to_owned())
    }
}

impl Drop for Forget {
    fn drop(&mut self) {
        forget(&self.0);
    }
}

/// The `Cookie` header of this test's browser session with the web UI at `url` (made on first
/// use by starting a conversation).
pub async fn cookie(url: &str) -> String {
    let known = |url: &str| {
        SESSIONS
            .lock()
            .unwrap()
            .iter()
            .find(|s| s.url == url)
            .map(|s| s.cookie.clone())
    };
    if let Some(cookie) = known(url) {
        return cookie;
    }
    // One session per web UI, however many calls ask at once.
    static STARTING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _one_at_a_time = STARTING.lock().await;
    if let Some(cookie) = known(url) {
        return cookie;
    }
    new_conversation(url, None).await;
    known(url).unwrap()
}

/// Start a conversation at the web UI at `url`, in the browser session `cookie` (a new one
/// when `None`): the session's `Cookie` header and the conversation's id.
pub async fn new_conversation(url: &str, cookie: Option<&str>) -> (String, String) {
    let mut request = reqwest::Client::new().post(format!("{url}api/conversations"));
    if let Some(cookie) = cookie {
        request = request.header(reqwest::header::COOKIE, cookie);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200, "a conversation is started");
    let cookie = match response.headers().get(reqwest::header::SET_COOKIE) {
        Some(set) => {
            let set = set.to_str().unwrap();
            assert!(
                set.contains("HttpOnly") && set.contains("SameSite=Strict"),
                "{set}"
            );
            set.split(';').next().unwrap().to_owned()
        }
        None => cookie.expect("a new session gets its cookie").to_owned(),
    };
    let body: Value = response.json().await.unwrap();
    let id = body["conversationId"].as_str().unwrap().to_owned();
    let mut sessions = SESSIONS.lock().unwrap();
    if !sessions.iter().any(|s| s.url == url) {
        sessions.push(Session {
            url: url.to_owned(),
            cookie: cookie.clone(),
            conversations: Vec::new(),
        });
    }
    (cookie, id)
}

/// The desk-made id of the conversation this test calls `name` at `url` (started on first use,
/// in this test's browser session there).
pub async fn conversation(url: &str, name: &str) -> String {
    let known = SESSIONS
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.url == url)
        .and_then(|s| s.conversations.iter().find(|(n, _)| n == name))
        .map(|(_, id)| id.clone());
    if let Some(id) = known {
        return id;
    }
    let cookie = cookie(url).await;
    let (_, id) = new_conversation(url, Some(&cookie)).await;
    let mut sessions = SESSIONS.lock().unwrap();
    let session = sessions.iter_mut().find(|s| s.url == url).unwrap();
    match session.conversations.iter().find(|(n, _)| n == name) {
        Some((_, first)) => first.clone(),
        None => {
            session.conversations.push((name.to_owned(), id.clone()));
            id
        }
    }
}

/// Ask the desk at `url` to stop what conversation `conversation` is doing; the status.
pub async fn stop(url: &str, conversation: &str, secret: &str) -> u16 {
    let id = self::conversation(url, conversation).await;
    reqwest::Client::new()
        .post(format!("{url}api/chat/stop"))
        .header(reqwest::header::COOKIE, cookie(url).await)
        .json(&json!({"conversationId": id, "secret": secret}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Post one chat message and return the reply.
pub async fn chat(url: &str, conversation: &str, message: &str) -> String {
    chat_about(url, conversation, message, None).await
}

/// Post one chat message with an order open in the UI, and return the reply.
pub async fn chat_about(
    url: &str,
    conversation: &str,
    message: &str,
    order: Option<&str>,
) -> String {
    let id = self::conversation(url, conversation).await;
    let reply: Value = json_answer(
        reqwest::Client::new()
            .post(format!("{url}api/chat"))
            .header(reqwest::header::COOKIE, cookie(url).await)
            .json(&json!({"conversationId": id, "message": message, "orderId": order})),
    )
    .await;
    reply["reply"].as_str().unwrap().to_owned()
}

/// The notes of this repository, read by the pinned official filesystem server.
pub fn knowledge() -> agent::desk::Knowledge {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let server = repo.join("tools/node/node_modules/.bin/mcp-server-filesystem");
    assert!(
        server.exists(),
        "run scripts/test first: it installs tools/node"
    );
    agent::desk::Knowledge {
        server: vec![server.display().to_string()],
        current: repo.join("support-kb"),
        archive: repo.join("support-kb-archive"),
        through_orders: false,
        trusted: Vec::new(),
    }
}

/// The event stream of one conversation, parsed.
pub struct Events {
    lines: std::pin::Pin<Box<dyn futures::Stream<Item = Value> + Send>>,
}

impl Events {
    /// Open the stream; returns it and the conversation's secret (from its `hello`).
    pub async fn open(demo: &Demo, conversation: &str) -> (Events, String) {
        Self::open_at(&demo.url, conversation).await
    }

    /// [`Events::open`] for a web UI at `url` (ending in `/`).
    pub async fn open_at(url: &str, conversation: &str) -> (Events, String) {
        let id = self::conversation(url, conversation).await;
        let response = reqwest::Client::new()
            .get(format!("{url}api/events?conversationId={id}"))
            .header(reqwest::header::COOKIE, cookie(url).await)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "the event stream opens");
        Self::from_response(response).await
    }

    /// The stream of an opened `GET /api/events`; returns it and its secret.
    pub async fn from_response(response: reqwest::Response) -> (Events, String) {
        let bytes = response.bytes_stream();
        let lines = bytes
            .scan(String::new(), |buffer, chunk| {
                buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
                let mut events = Vec::new();
                while let Some(end) = buffer.find("\n\n") {
                    let block: String = buffer.drain(..end + 2).collect();
                    for line in block.lines() {
                        if let Some(data) = line.strip_prefix("data: ") {
                            events.push(serde_json::from_str::<Value>(data).unwrap());
                        }
                    }
                }
                futures::future::ready(Some(futures::stream::iter(events)))
            })
            .flatten();
        let mut events = Events {
            lines: Box::pin(lines),
        };
        let hello = events.next().await;
        assert_eq!(hello["event"], "hello");
        let secret = hello["secret"].as_str().unwrap().to_owned();
        (events, secret)
    }

    /// The next event (at most 20 s away).
    pub async fn next(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(20), self.lines.next())
            .await
            .unwrap()
            .unwrap()
    }

    /// The next `said` event, which must end with `end` (the task's result said in its
    /// conversation).
    pub async fn said_ending(&mut self, end: &str) -> Value {
        let said = self.next_of("said").await;
        let text = said["text"].as_str().unwrap_or_default();
        assert!(text.ends_with(end), "{said}");
        said
    }

    /// The next event of this kind, skipping others.
    pub async fn next_of(&mut self, kind: &str) -> Value {
        loop {
            let event = self.next().await;
            if event["event"] == kind {
                return event;
            }
        }
    }
}

/// Answer a question of the page: yes or no, with the conversation's secret; the status.
pub async fn answer(url: &str, id: &str, secret: &str, confirmed: bool) -> u16 {
    reqwest::Client::new()
        .post(format!("{url}api/confirmations/{id}"))
        .header(reqwest::header::COOKIE, cookie(url).await)
        .json(&json!({"secret": secret, "confirmed": confirmed, "note": "from the test"}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The status of an order, read through the demo's own API (the tab it is listed in).
pub async fn status_of(url: &str, id: &str) -> String {
    status_as(url, None, id).await
}

/// [`status_of`], asked as the holder of `cookie` when one is given.
pub async fn status_as(url: &str, cookie: Option<&str>, id: &str) -> String {
    for status in ["PENDING", "PROCESSING", "SHIPPED", "DELIVERED", "CANCELLED"] {
        let mut request = reqwest::Client::new().get(format!("{url}api/orders?status={status}"));
        if let Some(cookie) = cookie {
            request = request.header(reqwest::header::COOKIE, cookie);
        }
        let orders: Value = json_answer(request).await;
        if orders
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["orderId"] == id)
        {
            return status.to_owned();
        }
    }
    panic!("{id} is in no tab");
}

/// `POST path` (below the desk's `url`) with `body` as the holder of `cookie`: the status and
/// the JSON answer (`null` if none).
pub async fn post_as(url: &str, path: &str, cookie: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .header(reqwest::header::COOKIE, cookie)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The desk's stderr, read line by line.
pub type StderrLines = tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>;

/// Start `command` (a `support-agent` under test) with its stderr piped and `RUST_LOG` unset
/// (its logs as shipped), killed when dropped: the process and its stderr's lines.
pub fn spawn_with_stderr(
    command: &mut tokio::process::Command,
) -> (tokio::process::Child, StderrLines) {
    use tokio::io::AsyncBufReadExt as _;
    let mut child = command
        .env_remove("RUST_LOG")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    (child, lines)
}

/// What follows `marker` on the first line of `lines` that has it (`what`: the line the test
/// waits for, said if stderr ends first).
pub async fn after(lines: &mut StderrLines, marker: &str, what: &str) -> String {
    loop {
        let line = lines.next_line().await.unwrap().expect(what);
        if let Some((_, rest)) = line.split_once(marker) {
            return rest.to_owned();
        }
    }
}

/// A Movie Database in memory on port 0 until `stop`: its MCP URL.
pub async fn serve_moviedb(stop: &tokio_util::sync::CancellationToken) -> String {
    let movies = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", movies.local_addr().unwrap());
    let config = moviedb::app::Config {
        database: Some("sqlite::memory:".into()),
        ..Default::default()
    };
    let stop = stop.clone();
    tokio::spawn(async move { moviedb::app::serve_http(movies, &config, stop).await });
    url
}

/// The JSON body of the answer to a GET of `url` (which must be answered).
pub async fn get_json<T: serde::de::DeserializeOwned>(url: impl reqwest::IntoUrl) -> T {
    json_answer(reqwest::Client::new().get(url)).await
}

/// The JSON body of the answer to `request` (which must be answered).
pub async fn json_answer<T: serde::de::DeserializeOwned>(request: reqwest::RequestBuilder) -> T {
    request.send().await.unwrap().json().await.unwrap()
}
