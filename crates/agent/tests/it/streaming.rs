//! Streamed replies: scripted fakes of both providers' streaming APIs (OpenAI's `chat.completion
//! .chunk` events ending in `[DONE]`, Anthropic's message events), served over HTTP on port 0.
//! The page's event stream shows the words as they come, tool calls split across events are put
//! back together, and Stop drops the model's request while it is still writing.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent::desk::DeskConfig;
use agent::llm::{AnthropicMessages, OpenAiCompatible, Provider};
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use backchannel::Revision;
use serde_json::{Value, json};

use crate::common::{Demo, Events};

#[derive(Default)]
struct Fake {
    requests: Vec<Value>,
    /// When a streamed answer's connection was dropped before its end.
    dropped: Option<Instant>,
}

/// The fake's record, and a bell rung when a connection is dropped.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Fake>>, Arc<tokio::sync::Notify>);

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Fake> {
        self.0.lock().unwrap()
    }
}

/// Sets `dropped` when the response body is dropped before it was read to its end.
struct DropWatch {
    fake: Shared,
    finished: bool,
}

impl DropWatch {
    /// The body was read to its end: dropping it now is no disconnect.
    fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for DropWatch {
    fn drop(&mut self) {
        if !self.finished {
            self.fake.lock().dropped = Some(Instant::now());
            self.fake.1.notify_waiters();
        }
    }
}

/// An event stream of `events` (each one `data:` payload), `pause` apart.
fn sse(fake: Shared, events: Vec<String>, pause: Duration) -> Response {
    let stream = futures::stream::unfold(
        (
            events.into_iter(),
            DropWatch {
                fake,
                finished: false,
            },
        ),
        move |(mut events, watch)| async move {
            let Some(data) = events.next() else {
                watch.finish();
                return None;
            };
            tokio::time::sleep(pause).await;
            Some((
                Ok::<_, std::io::Error>(format!("data: {data}\n\n")),
                (events, watch),
            ))
        },
    );
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

fn chunk(delta: Value) -> String {
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]})
        .to_string()
}

/// OpenAI: a user turn gets `get_order` called in three pieces; a tool result gets words in
/// pieces; "write forever" gets words for a long time (until the request is dropped).
async fn openai(State(fake): State<Shared>, Json(request): Json<Value>) -> Response {
    fake.lock().requests.push(request.clone());
    assert_eq!(request["stream"], true, "the desk asks for a stream");
    let last = request["messages"].as_array().unwrap().last().unwrap();
    let pause = Duration::from_millis(60);
    let events: Vec<String> = if last["role"] == "tool" {
        ["ORD-10001 ", "is on ", "its way ", "with DHL."]
            .iter()
            .map(|w| chunk(json!({"content": w})))
            .collect()
    } else if last["content"]
        .as_str()
        .unwrap_or_default()
        .contains("forever")
    {
        (0..400)
            .map(|i| chunk(json!({"content": format!("word{i} ")})))
            .collect()
    } else {
        vec![
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_7", "type": "function", "function": {"name": "get_", "arguments": ""}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"name": "order", "arguments": "{\"orderId\":"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"ORD-10001\"}"}}]}),
            ),
        ]
    };
    let mut events = events;
    events.push(
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
               "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}})
        .to_string(),
    );
    events.push("[DONE]".into());
    sse(fake, events, pause)
}

/// Anthropic: a user turn gets words and a `tool_use` of get_order whose input comes in two
/// pieces; a tool result gets words in pieces.
async fn anthropic(State(fake): State<Shared>, Json(request): Json<Value>) -> Response {
    fake.lock().requests.push(request.clone());
    assert_eq!(request["stream"], true, "the desk asks for a stream");
    let last = request["messages"].as_array().unwrap().last().unwrap();
    let answered = last["content"][0]["type"] == "tool_result";
    let mut events = vec![
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 20}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ];
    if answered {
        for word in ["It is ", "on its way."] {
            events.push(json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "text_delta", "text": word}}));
        }
    } else {
        events.extend([
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Looking it up."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "tu_1", "name": "get_order", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"orderId\": \"ORD-"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "10001\"}"}}),
        ]);
    }
    events.extend([
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ]);
    sse(
        fake,
        events.iter().map(Value::to_string).collect(),
        Duration::from_millis(60),
    )
}

async fn demo(anthropic_api: bool) -> (Demo, Shared) {
    let fake = Shared::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .with_state(fake.clone());
    let base = crate::common::serve_fake(app).await;
    let timeout = Duration::from_secs(30);
    let model = if anthropic_api {
        Provider::Anthropic(AnthropicMessages::new(base, None, "fake", timeout).unwrap())
    } else {
        Provider::OpenAi(
            OpenAiCompatible::new(format!("{base}/v1"), None, "fake", timeout).unwrap(),
        )
    };
    let demo = crate::common::start_with_model(model, |_| {}).await;
    (demo, fake)
}

/// Send `message`, collect the `reply` events until the chat answers; both are returned.
async fn chat_watching(demo: &Demo, message: &str) -> (String, Vec<String>) {
    let (mut events, _secret) = Events::open(demo, "s").await;
    let reply = tokio::spawn({
        let url = demo.url.clone();
        let message = message.to_owned();
        async move { crate::common::chat(&url, "s", &message).await }
    });
    let mut grown = Vec::new();
    while !reply.is_finished() {
        let Ok(event) = tokio::time::timeout(Duration::from_millis(200), events.next()).await
        else {
            continue;
        };
        if event["event"] == "reply" {
            assert_eq!(
                event["html"].as_str().unwrap().is_empty(),
                event["text"].as_str().unwrap().is_empty()
            );
            grown.push(event["text"].as_str().unwrap().to_owned());
        }
    }
    (reply.await.unwrap(), grown)
}

fn assert_grows(grown: &[String], reply: &str) {
    assert!(grown.len() >= 2, "the reply grew in steps: {grown:?}");
    for pair in grown.windows(2) {
        assert!(pair[1].starts_with(&pair[0]), "{grown:?}");
    }
    assert!(
        reply.starts_with(grown.last().unwrap()),
        "{grown:?} / {reply}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_words_stream_to_the_page_and_a_tool_call_in_pieces_is_made() {
    let (demo, fake) = demo(false).await;
    let (reply, grown) = chat_watching(&demo, "Where is ORD-10001?").await;
    assert_eq!(reply, "ORD-10001 is on its way with DHL.");
    assert_grows(&grown, &reply);
    let fake = fake.lock();
    assert_eq!(fake.requests.len(), 2);
    assert_eq!(fake.requests[0]["stream_options"]["include_usage"], true);
    let answer = fake.requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(answer["tool_call_id"], "call_7");
    assert!(
        answer["content"].as_str().unwrap().contains("DHL-88213"),
        "the desk called get_order with the pieced-together arguments: {answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_words_stream_and_a_tool_use_in_pieces_is_made() {
    let (demo, fake) = demo(true).await;
    let (reply, grown) = chat_watching(&demo, "Where is ORD-10001?").await;
    assert_eq!(reply, "Looking it up.\n\nIt is on its way.");
    assert_grows(&grown, &reply);
    let fake = fake.lock();
    assert_eq!(fake.requests.len(), 2);
    let result = &fake.requests[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"][0];
    assert_eq!(result["tool_use_id"], "tu_1");
    assert!(
        result["content"].as_str().unwrap().contains("DHL-88213"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_drops_the_model_request_while_it_writes() {
    let (demo, fake) = demo(false).await;
    let (mut events, secret) = Events::open(&demo, "s").await;
    let reply = tokio::spawn({
        let url = demo.url.clone();
        async move { crate::common::chat(&url, "s", "write forever").await }
    });
    // Words are arriving: the model is writing.
    let first = events.next_of("reply").await;
    assert!(first["text"].as_str().unwrap().starts_with("word0"));
    let stopped_at = Instant::now();
    assert_eq!(crate::common::stop(&demo.url, "s", &secret).await, 204);
    assert_eq!(reply.await.unwrap(), agent::desk::STOPPED);
    // The fake saw its connection dropped before its 400 words were written (it records a
    // drop only of a stream not read to its end). Only a hang is bounded: the words would
    // take 24 s, a busy machine may take its time to drop them.
    let deadline = Instant::now() + Duration::from_secs(60);
    let dropped = loop {
        let rung = fake.1.notified();
        if let Some(at) = fake.lock().dropped {
            break at;
        }
        tokio::time::timeout_at(deadline.into(), rung)
            .await
            .expect("the model's request was not dropped");
    };
    assert!(dropped >= stopped_at, "dropped before Stop was sent");
}

/// The terminal: each write kept apart, so a reply printed as it came shows as several writes;
/// a bell rung on every write.
#[derive(Clone, Default)]
struct Terminal(Arc<Mutex<Vec<String>>>, Arc<tokio::sync::Notify>);

impl std::io::Write for Terminal {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap()
            .push(String::from_utf8_lossy(buf).into_owned());
        self.1.notify_waiters();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_prints_the_reply_as_it_comes_and_once() {
    let fake = Shared::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(openai))
        .with_state(fake.clone());
    let base = format!("{}/v1", crate::common::serve_fake(app).await);
    let stop = tokio_util::sync::CancellationToken::new();
    let orders = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let orders_url = format!("http://{}/mcp", orders.local_addr().unwrap());
    let config = crate::common::orders_in_memory(Duration::ZERO);
    let shutdown = stop.clone();
    tokio::spawn(async move { orders::app::serve_http(orders, &config, shutdown).await });
    let model = OpenAiCompatible::new(base, None, "fake", Duration::from_secs(30)).unwrap();
    let desk = agent::desk::Desk::start(DeskConfig {
        orders_url,
        protocol: Some(Revision::V2026_07_28),
        model: Some(Provider::OpenAi(model)),
        ..DeskConfig::default()
    })
    .await
    .unwrap();
    let (lines, input) = tokio::sync::mpsc::channel(8);
    let terminal = Terminal::default();
    let cli = tokio::spawn(agent::cli::run(Arc::new(desk), input, terminal.clone()));
    lines.send("Where is ORD-10001?".into()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let written = terminal.1.notified();
        if terminal.0.lock().unwrap().concat().contains("with DHL.\n") {
            break;
        }
        if tokio::time::timeout_at(deadline.into(), written)
            .await
            .is_err()
        {
            panic!("{:?}", terminal.0.lock().unwrap());
        }
    }
    lines.send("quit".into()).await.unwrap();
    cli.await.unwrap().unwrap();
    stop.cancel();
    let writes = terminal.0.lock().unwrap().clone();
    let all = writes.concat();
    let reply = "ORD-10001 is on its way with DHL.";
    assert_eq!(all.matches("Agent: ").count(), 1, "{all}");
    assert_eq!(all.matches("with DHL.").count(), 1, "printed once: {all}");
    assert!(all.contains(&format!("Agent: {reply}\n")), "{all}");
    let pieces = writes
        .iter()
        .filter(|w| {
            reply.contains(w.trim_start_matches("\rAgent: ").trim_end()) && !w.trim().is_empty()
        })
        .count();
    assert!(pieces >= 2, "the reply came in pieces: {writes:?}");
}
