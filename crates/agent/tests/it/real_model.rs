//! The desk against a real model server: llama.cpp's llama-server with SmolLM2-135M-Instruct
//! (`scripts/local-model`), on both providers. Run by `scripts/real-model`, which starts the
//! server and sets `REAL_MODEL_URL`; ignored otherwise. A real model's words are never
//! asserted, only the shapes of what it does: a tool call whose name was offered and whose
//! arguments parse, the MCP call the desk makes for it (the order service's confirmation), and a
//! final turn of words. Greedy decoding (temperature 0) keeps each run's choices the same.
#![allow(clippy::unwrap_used)]
// The timings are this test's report: scripts/real-model prints them.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use agent::desk::DeskConfig;
use agent::llm::{AnthropicMessages, Generation, OpenAiCompatible, Provider};
use backchannel::Revision;

use crate::common::{Demo, Events};

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
};

fn provider(anthropic: bool) -> Provider {
    let timeout = Duration::from_secs(60);
    let url = server();
    if anthropic {
        Provider::Anthropic(
            AnthropicMessages::new(url, None, "smollm2", timeout)
                .unwrap()
                .with_generation(GENERATION),
        )
    } else {
        Provider::OpenAi(
            OpenAiCompatible::new(format!("{url}/v1"), None, "smollm2", timeout)
                .unwrap()
                .with_generation(GENERATION),
        )
    }
}

async fn demo(anthropic: bool) -> Demo {
    let desk = DeskConfig {
        protocol: Some(Revision::V2026_07_28),
        model: Some(provider(anthropic)),
        token_budget: 1_000_000,
        ..DeskConfig::default()
    };
    crate::common::start(
        crate::common::orders_in_memory(Duration::from_millis(5)),
        desk,
    )
    .await
}

/// Ask for a cancellation: the model calls `cancel_order` (offered, arguments parse), the desk
/// makes the MCP call, the order service asks the person, the person says no, the model answers
/// in words, and the order is as it was.
async fn a_cancel_is_asked_and_no_leaves_the_order(anthropic: bool) {
    let label = if anthropic { "anthropic" } else { "openai" };
    let demo = demo(anthropic).await;
    let order = "ORD-10002";
    let before = crate::common::status_of(&demo.url, order).await;
    let (mut events, secret) = Events::open(&demo, "real").await;
    let started = Instant::now();
    let reply = tokio::spawn({
        let url = demo.url.clone();
        async move { crate::common::chat(&url, "real", "Please cancel order ORD-10002").await }
    });
    let asked = events.next_of("confirmation").await;
    let to_question = started.elapsed();
    let question = asked["message"].as_str().unwrap();
    assert!(question.contains("ORD-1000"), "{asked}");
    let id = asked["id"].as_str().unwrap();
    assert_eq!(
        crate::common::answer(&demo.url, id, &secret, false).await,
        204
    );
    let reply = reply.await.unwrap();
    let turn = started.elapsed();
    assert!(!reply.trim().is_empty(), "a final turn of words");
    assert_eq!(crate::common::status_of(&demo.url, order).await, before);
    println!(
        "real-model {label}: tool call to the confirmation {} ms, whole turn {} ms, reply {} chars",
        to_question.as_millis(),
        turn.as_millis(),
        reply.chars().count()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model server: scripts/real-model"]
async fn openai_a_real_model_calls_cancel_order_and_the_person_is_asked() {
    a_cancel_is_asked_and_no_leaves_the_order(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model server: scripts/real-model"]
async fn anthropic_a_real_model_calls_cancel_order_and_the_person_is_asked() {
    a_cancel_is_asked_and_no_leaves_the_order(true).await;
}

/// A turn with no order to act on: whatever the model does (words, or calls the desk checks),
/// the person gets words back and nothing changes.
async fn a_chat_turn_ends_in_words(anthropic: bool) {
    let label = if anthropic { "anthropic" } else { "openai" };
    let demo = demo(anthropic).await;
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
