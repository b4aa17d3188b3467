//! The desk against a real model server: llama.cpp's llama-server with SmolLM2-135M-Instruct
//! (`scripts/local-model`), on both providers. Run by `scripts/real-model`, which starts the
//! server and sets `REAL_MODEL_URL`; ignored otherwise. A real model's words are never
//! asserted, only the shapes of what it does: a tool call whose name was offered and whose
//! arguments parse, the MCP call the desk makes for it (the order service answers it), and a
//! final turn of words; and Stop ending the real generation (the server generates fewer tokens
//! than the same request run to its end, and its slots go idle).
#![allow(clippy::unwrap_used)]
// The timings are this test's report: scripts/real-model prints them.
#![allow(clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use serde_json::Value;

use agent::llm::{AnthropicMessages, Generation, OpenAiCompatible, Provider};

use crate::common::{Demo, Events, get_json};

/// The server `scripts/real-model` started, as `http://127.0.0.1:PORT`.
fn server() -> String {
    std::env::var("REAL_MODEL_URL")
        .expect("REAL_MODEL_URL names the model server; run scripts/real-model")
        .trim_end_matches('/')
        .to_owned()
}

/// Greedy, and short: the shapes need a few dozen tokens, and a runaway reply must end.
const GENERATION: Generation = Generation {
    max_tokens: 160,
    temperature: Some(0.0),
    stop: Vec::new(),
};

/// What the desk sent the model, request by request, recorded by a pass-through in front of
/// the real server (responses stream through untouched).
type Sent = Arc<Mutex<Vec<Value>>>;

async fn pass_through(
    State((upstream, sent)): State<(String, Sent)>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    sent.lock()
        .unwrap()
        .push(serde_json::from_slice(&body).unwrap());
    let mut request = reqwest::Client::new()
        .post(format!("{upstream}{}", uri.path()))
        .body(body);
    for name in ["content-type", "anthropic-version"] {
        if let Some(value) = headers.get(name) {
            request = request.header(name, value.as_bytes());
        }
    }
    let response = request.send().await.unwrap();
    let mut out = axum::response::Response::builder().status(response.status().as_u16());
    if let Some(kind) = response.headers().get("content-type") {
        out = out.header("content-type", kind.as_bytes());
    }
    out.body(axum::body::Body::from_stream(response.bytes_stream()))
        .unwrap()
}

/// The real server behind a recording pass-through on port 0; its base URL.
async fn recorded(sent: Sent) -> String {
    let app = axum::Router::new()
        .route("/{*path}", axum::routing::post(pass_through))
        .with_state((server(), sent));
    crate::common::serve_fake(app).await
}

fn provider(url: String, anthropic: bool) -> Provider {
    provider_with(url, anthropic, GENERATION)
}

fn provider_with(url: String, anthropic: bool, generation: Generation) -> Provider {
    // A hang guard only: a busy machine runs this model slowly.
    let timeout = Duration::from_secs(180);
    if anthropic {
        Provider::Anthropic(
            AnthropicMessages::new(url, None, "smollm2", timeout)
                .unwrap()
                .with_generation(generation),
        )
    } else {
        Provider::OpenAi(
            OpenAiCompatible::new(format!("{url}/v1"), None, "smollm2", timeout)
                .unwrap()
                .with_generation(generation),
        )
    }
}

async fn demo(anthropic: bool) -> (Demo, Sent) {
    demo_with(anthropic, GENERATION).await
}

async fn demo_with(anthropic: bool, generation: Generation) -> (Demo, Sent) {
    let sent = Sent::default();
    let model = provider_with(recorded(sent.clone()).await, anthropic, generation);
    let demo = crate::common::start_with_model(model, |desk| desk.token_budget = 1_000_000).await;
    (demo, sent)
}

/// A tool call of the model as the desk sent it back: its id, name and arguments.
struct Called {
    id: String,
    name: String,
    arguments: Value,
}

/// The tools offered in a request, by name.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            tool["function"]["name"]
                .as_str()
                .or_else(|| tool["name"].as_str())
        })
        .map(str::to_owned)
        .collect()
}

/// The model's tool calls and the tool results, as the desk sent them back in its last request
/// (both APIs' shapes).
fn calls_and_results(request: &Value) -> (Vec<Called>, Vec<(String, String)>) {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for message in request["messages"].as_array().unwrap() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
            calls.push(Called {
                id: call["id"].as_str().unwrap().to_owned(),
                name: call["function"]["name"].as_str().unwrap().to_owned(),
                arguments: serde_json::from_str(arguments).unwrap_or(Value::Null),
            });
        }
        if message["role"] == "tool" {
            results.push((
                message["tool_call_id"].as_str().unwrap().to_owned(),
                message["content"].as_str().unwrap().to_owned(),
            ));
        }
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_use" {
                calls.push(Called {
                    id: block["id"].as_str().unwrap().to_owned(),
                    name: block["name"].as_str().unwrap().to_owned(),
                    arguments: block["input"].clone(),
                });
            }
            if block["type"] == "tool_result" {
                results.push((
                    block["tool_use_id"].as_str().unwrap().to_owned(),
                    block["content"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    (calls, results)
}

/// Ask for a cancellation. The model calls a tool it was offered with arguments that parse
/// (SmolLM2 calls `cancel_order`, though not always with the right ID); the desk makes that
/// MCP call and hands the model the order service's answer; a final turn of words follows. Any
/// question the order service asks is answered no, so no order changes.
async fn a_cancel_request_becomes_a_tool_call_the_desk_makes(anthropic: bool) {
    let label = if anthropic { "anthropic" } else { "openai" };
    let (demo, sent) = demo(anthropic).await;
    let order = "ORD-10002";
    let before = crate::common::status_of(&demo.url, order).await;
    let (mut events, secret) = Events::open(&demo, "real").await;
    let started = Instant::now();
    let reply = tokio::spawn({
        let url = demo.url.clone();
        async move { crate::common::chat(&url, "real", "Please cancel order ORD-10002").await }
    });
    let mut first_words = None;
    let mut asked = 0;
    while !reply.is_finished() {
        let Ok(event) = tokio::time::timeout(Duration::from_millis(100), events.next()).await
        else {
            continue;
        };
        match event["event"].as_str().unwrap_or_default() {
            "confirmation" => {
                asked += 1;
                let id = event["id"].as_str().unwrap();
                let status = crate::common::answer(&demo.url, id, &secret, false).await;
                assert_eq!(status, 204);
            }
            "reply" if first_words.is_none() => first_words = Some(started.elapsed()),
            _ => {}
        }
    }
    let reply = reply.await.unwrap();
    let turn = started.elapsed();
    let sent = sent.lock().unwrap().clone();
    assert!(sent.len() >= 2, "a tool call and a turn after it: {sent:?}");
    let tools = offered(&sent[0]);
    assert!(tools.iter().any(|t| t == "cancel_order"), "{tools:?}");
    let (calls, results) = calls_and_results(sent.last().unwrap());
    let first = calls.first().expect("the model called a tool");
    assert!(
        tools.contains(&first.name),
        "{} was not offered",
        first.name
    );
    assert!(first.arguments.is_object(), "{}", first.arguments);
    let (_, answer) = results
        .iter()
        .find(|(id, _)| *id == first.id)
        .expect("the desk answered the call");
    assert!(
        !answer.starts_with("error: there is no tool")
            && !answer.starts_with("error: the arguments"),
        "the desk made the MCP call: {answer}"
    );
    assert!(!reply.trim().is_empty(), "a final turn of words");
    assert_eq!(crate::common::status_of(&demo.url, order).await, before);
    println!(
        "real-model {label}: {} model requests, first call {}({}), {asked} question(s) declined, \
         time to first streamed word {} ms, whole turn {} ms, reply {} chars",
        sent.len(),
        first.name,
        first.arguments,
        first_words.map_or_else(|| "-".to_owned(), |t| t.as_millis().to_string()),
        turn.as_millis(),
        reply.chars().count()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model server: scripts/real-model"]
async fn openai_a_real_model_calls_a_tool_the_desk_makes_and_answers() {
    a_cancel_request_becomes_a_tool_call_the_desk_makes(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model server: scripts/real-model"]
async fn anthropic_a_real_model_calls_a_tool_the_desk_makes_and_answers() {
    a_cancel_request_becomes_a_tool_call_the_desk_makes(true).await;
}

/// A turn with no order to act on: whatever the model does (words, or calls the desk checks),
/// the person gets words back and nothing changes.
async fn a_chat_turn_ends_in_words(anthropic: bool) {
    let label = if anthropic { "anthropic" } else { "openai" };
    let (demo, _) = demo(anthropic).await;
    let started = Instant::now();
    let reply = crate::common::chat(&demo.url, "hello", "Hello! What can you do?").await;
    assert!(!reply.trim().is_empty());
    println!(
        "real-model {label}: a greeting turn {} ms",
        started.elapsed().as_millis()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model server: scripts/real-model"]
async fn openai_a_real_model_answers_a_greeting_in_words() {
    a_chat_turn_ends_in_words(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model server: scripts/real-model"]
async fn anthropic_a_real_model_answers_a_greeting_in_words() {
    a_chat_turn_ends_in_words(true).await;
}

/// Answers a server's sampling request with the real model, as the desk does once the person
/// has approved (the approval itself is tested against the scripted fake).
struct RealModelHost {
    model: Provider,
    asked: Mutex<Vec<String>>,
}

impl backchannel_host::HostHandler for RealModelHost {
    async fn sample(
        &self,
        _connection: &str,
        question: backchannel_host::SamplingQuestion,
        _caller: Option<rmcp::model::ProgressToken>,
    ) -> Result<backchannel_host::SamplingAnswer, rmcp::ErrorData> {
        let messages = agent::llm::Message::sampled(&question);
        self.asked
            .lock()
            .unwrap()
            .extend(question.messages.iter().map(|t| t.text.clone()));
        let turn = self
            .model
            .complete(&messages, &[])
            .await
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        Ok(backchannel_host::SamplingAnswer {
            text: turn.message.content.unwrap_or_default(),
            model: "smollm2".into(),
        })
    }
}

/// The Movie Database's review summary borrows the client's model (sampling), answered by the
/// real model on each provider: the summary is the model's words or, when its reply cannot be
/// used, the server's own, and the answer names which (`source`). Either is a pass; the shape is
/// what is checked.
async fn a_summary_borrows_the_real_model(anthropic: bool) {
    use backchannel_host::{CallContext, Host, HostConfig};
    let label = if anthropic { "anthropic" } else { "openai" };
    let stop = tokio_util::sync::CancellationToken::new();
    let movies_url = crate::common::serve_moviedb(&stop).await;
    let sent = Sent::default();
    let handler = Arc::new(RealModelHost {
        model: provider(recorded(sent.clone()).await, anthropic),
        asked: Mutex::new(Vec::new()),
    });
    let config = HostConfig::from_toml(&format!(
        "[connections.movies]\ntransport = \"http\"\nurl = \"{movies_url}\"\n\
         capabilities = {{ sampling = true }}\n"
    ))
    .unwrap();
    let host = Host::open(&config, handler.clone()).await.unwrap();
    let started = Instant::now();
    let result = host
        .connection("movies")
        .unwrap()
        .call_tool(
            "summarizeMovieReviews",
            serde_json::json!({"movieId": "1"}).as_object().cloned(),
            &CallContext::new(),
        )
        .await
        .unwrap();
    let took = started.elapsed();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let summary = result.structured_content.clone().unwrap();
    let source = summary["source"].as_str().unwrap_or_default().to_owned();
    assert!(
        ["CLIENT_MODEL", "SERVER"].contains(&source.as_str()),
        "the summary names its writer: {summary}"
    );
    assert!(
        !summary["summary"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .is_empty(),
        "{summary}"
    );
    let asked = handler.asked.lock().unwrap().clone();
    assert!(
        asked.iter().any(|text| text.contains("review")),
        "moviedb asked the model about the reviews: {asked:?}"
    );
    let sent = sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 1, "one sampling request, no tools offered");
    assert!(offered(&sent[0]).is_empty());
    host.close().await;
    stop.cancel();
    println!(
        "real-model {label}: a review summary through sampling by {source}, {} ms",
        took.as_millis()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model server: scripts/real-model"]
async fn openai_a_review_summary_borrows_the_real_model() {
    a_summary_borrows_the_real_model(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model server: scripts/real-model"]
async fn anthropic_a_review_summary_borrows_the_real_model() {
    a_summary_borrows_the_real_model(true).await;
}

/// Whether the real server is generating for any request now (`/slots`).
async fn generating() -> bool {
    let slots: Value = get_json(format!("{}/slots", server())).await;
    slots
        .as_array()
        .unwrap()
        .iter()
        .any(|slot| slot["is_processing"] == true)
}

/// Tokens the real server has generated since it started (`/metrics`, llama-server's
/// `--metrics`), counting those of requests dropped before their end.
async fn tokens_generated() -> f64 {
    let metrics = reqwest::get(format!("{}/metrics", server())).await;
    let text = metrics.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("llamacpp:tokens_predicted_total "))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no llamacpp:tokens_predicted_total in {text}"))
}

/// Stop during a long reply: the desk drops the model's request and the real server stops
/// generating for it. Judged by what the server did, not by how fast a busy machine did it:
/// the stopped request generated fewer tokens than the same request left to run to its end
/// (sent again afterwards; greedy, so the same reply), and the server's slots went idle.
async fn stop_ends_the_real_generation(anthropic: bool) {
    let label = if anthropic { "anthropic" } else { "openai" };
    let long = Generation {
        max_tokens: 600,
        temperature: Some(0.0),
        stop: Vec::new(),
    };
    let (demo, sent) = demo_with(anthropic, long).await;
    let (mut events, secret) = Events::open(&demo, "long").await;
    let before = tokens_generated().await;
    let reply = tokio::spawn({
        let url = demo.url.clone();
        async move { crate::common::chat(&url, "long", "Write a very long story about the sea.").await }
    });
    let first = events.next_of("reply").await;
    assert!(!first["text"].as_str().unwrap().is_empty());
    assert!(generating().await, "the server is writing the reply");
    let stopped = Instant::now();
    assert_eq!(crate::common::stop(&demo.url, "long", &secret).await, 204);
    assert_eq!(reply.await.unwrap(), agent::desk::STOPPED);
    // Only a hang is bounded here: a busy machine may take its time.
    while generating().await {
        assert!(
            stopped.elapsed() < Duration::from_secs(120),
            "the server was still generating two minutes after Stop"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let idle = stopped.elapsed();
    let generated_when_stopped = tokens_generated().await - before;

    // The same request, left to run to its end.
    let request = sent
        .lock()
        .unwrap()
        .last()
        .cloned()
        .expect("the desk asked the model");
    let path = if anthropic {
        "/v1/messages"
    } else {
        "/v1/chat/completions"
    };
    let before_whole = tokens_generated().await;
    let whole = reqwest::Client::new()
        .post(format!("{}{path}", server()))
        .json(&request)
        .send()
        .await
        .unwrap();
    assert!(whole.status().is_success(), "{}", whole.status());
    whole.bytes().await.unwrap();
    let generated_whole = tokens_generated().await - before_whole;
    assert!(
        generated_when_stopped < generated_whole,
        "the stopped request generated {generated_when_stopped} tokens, the same request run \
         to its end {generated_whole}: the generation was not cut short"
    );
    println!(
        "real-model {label}: Stop during a reply: {generated_when_stopped} of the reply's \
         {generated_whole} tokens generated, the server idle {} ms after Stop",
        idle.as_millis()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model server: scripts/real-model"]
async fn openai_stop_ends_the_real_generation() {
    stop_ends_the_real_generation(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model server: scripts/real-model"]
async fn anthropic_stop_ends_the_real_generation() {
    stop_ends_the_real_generation(true).await;
}
