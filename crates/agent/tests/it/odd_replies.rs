//! What real small models send and the main script never does: a tool name that was not
//! offered, arguments that are not JSON or not an object, an empty reply, and words beside tool
//! calls. A scripted fake of the chat-completions API (over HTTP, port 0) answers each request
//! with the next reply of its script; the real order service sits behind the host.
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::desk::DeskConfig;
use agent::llm::{Generation, OpenAiCompatible, Provider};
use axum::Json;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};

#[derive(Default)]
struct Script {
    replies: VecDeque<Value>,
    seen: Vec<Value>,
}

type Shared = Arc<Mutex<Script>>;

async fn completions(State(script): State<Shared>, Json(request): Json<Value>) -> Json<Value> {
    let mut script = script.lock().unwrap();
    script.seen.push(request);
    let message = script
        .replies
        .pop_front()
        .unwrap_or_else(|| json!({"role": "assistant", "content": "(the script has ended)"}));
    Json(json!({
        "id": "chatcmpl-odd", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))
}

/// The demo with a model that answers `replies` in order; returns it and the script.
async fn demo_answering(replies: Vec<Value>) -> (crate::common::Demo, Shared) {
    demo_with_context(
        replies,
        DeskConfig::default().context_tokens,
        Generation::default(),
    )
    .await
}

/// [`demo_answering`] with a model of this context and these reply settings.
async fn demo_with_context(
    replies: Vec<Value>,
    context_tokens: u32,
    generation: Generation,
) -> (crate::common::Demo, Shared) {
    let script: Shared = Arc::new(Mutex::new(Script {
        replies: replies.into(),
        seen: Vec::new(),
    }));
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(script.clone());
    let url = format!("{}/v1", crate::common::serve_fake(app).await);
    let model = OpenAiCompatible::new(&url, None, "fake", Duration::from_secs(10))
        .unwrap()
        .with_generation(generation);
    let demo = crate::common::start_with_model(Provider::OpenAi(model), |desk| {
        desk.context_tokens = context_tokens;
        desk.token_budget = 1_000_000;
    })
    .await;
    (demo, script)
}

fn call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [{
        "id": id, "type": "function", "function": {"name": name, "arguments": arguments}
    }]})
}

fn words(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

/// The tool message the desk sent back for the call `id` (in the last request that has it).
fn tool_answer(script: &Shared, id: &str) -> String {
    let script = script.lock().unwrap();
    script
        .seen
        .iter()
        .rev()
        .flat_map(|request| request["messages"].as_array().unwrap().iter())
        .find(|message| message["role"] == "tool" && message["tool_call_id"] == id)
        .and_then(|message| message["content"].as_str())
        .unwrap_or_else(|| panic!("no tool message for {id}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_was_not_offered_is_not_called_and_the_model_hears_which_are() {
    let (demo, script) = demo_answering(vec![
        call("c1", "delete_all_orders", "{}"),
        words("Sorry, I cannot do that."),
    ])
    .await;
    let reply = crate::common::chat(&demo.url, "c1", "Wipe everything").await;
    assert_eq!(reply, "Sorry, I cannot do that.");
    let told = tool_answer(&script, "c1");
    assert!(
        told.starts_with("error: there is no tool named 'delete_all_orders'; the tools are: "),
        "{told}"
    );
    assert!(
        told.contains("get_order") && told.contains("cancel_order"),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_that_are_not_a_json_object_take_no_action() {
    let (demo, script) = demo_answering(vec![
        // A small model's placeholder, a bare string, and an array: none is made.
        call("c1", "cancel_order", "{\"orderId\": ...}"),
        call("c2", "cancel_order", "\"ORD-10002\""),
        call("c3", "cancel_order", "[\"ORD-10002\"]"),
        words("I could not cancel it."),
    ])
    .await;
    let before = crate::common::status_of(&demo.url, "ORD-10002").await;
    let reply = crate::common::chat(&demo.url, "c1", "Cancel ORD-10002").await;
    assert_eq!(reply, "I could not cancel it.");
    let not_json = tool_answer(&script, "c1");
    assert!(
        not_json.starts_with("error: the arguments of cancel_order are not JSON ("),
        "{not_json}"
    );
    assert_eq!(
        tool_answer(&script, "c2"),
        "error: the arguments of cancel_order must be a JSON object, not a string"
    );
    assert_eq!(
        tool_answer(&script, "c3"),
        "error: the arguments of cancel_order must be a JSON object, not an array"
    );
    assert_eq!(
        crate::common::status_of(&demo.url, "ORD-10002").await,
        before
    );
    assert_ne!(before, "CANCELLED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_reply_says_so() {
    let (demo, _) = demo_answering(vec![
        json!({"role": "assistant", "content": "  \n"}),
        json!({"role": "assistant", "content": null}),
    ])
    .await;
    for conversation in ["blank", "null"] {
        let reply = crate::common::chat(&demo.url, conversation, "Hello?").await;
        assert_eq!(reply, agent::desk::EMPTY_REPLY);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_beside_tool_calls_lead_the_answer_and_the_calls_are_made() {
    let (demo, script) = demo_answering(vec![
        json!({"role": "assistant", "content": "Let me look that up.", "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "get_order", "arguments": "{\"orderId\":\"ORD-10001\"}"}
        }]}),
        words("It is on its way with DHL."),
    ])
    .await;
    let reply = crate::common::chat(&demo.url, "c1", "Where is ORD-10001?").await;
    assert_eq!(reply, "Let me look that up.\n\nIt is on its way with DHL.");
    let result = tool_answer(&script, "c1");
    assert!(
        result.contains("ORD-10001") && result.contains("DHL-88213"),
        "{result}"
    );
    // The words went back to the model with the calls, as the API shapes a turn.
    let script = script.lock().unwrap();
    let turn = &script.seen[1]["messages"].as_array().unwrap();
    let assistant = turn.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["content"], "Let me look that up.");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "get_order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_repeats_itself_is_not_echoed_twice() {
    let (demo, _) = demo_answering(vec![
        json!({"role": "assistant", "content": "Checking.", "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "get_order", "arguments": "{\"orderId\":\"ORD-10001\"}"}
        }]}),
        words("Checking."),
    ])
    .await;
    let reply = crate::common::chat(&demo.url, "c1", "Where is ORD-10001?").await;
    assert_eq!(reply, "Checking.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_longer_than_the_context_loses_its_oldest_turns_and_says_so_once() {
    // About 1,000 tokens a question; a 3,500-token context with the tools and a 256-token
    // reply leaves room for the new question and one earlier turn.
    let question = |i: usize| format!("Question {i}: {}", "tell me more ".repeat(300));
    let replies = (0..4).map(|i| words(&format!("answer {i}"))).collect();
    let generation = Generation {
        max_tokens: 256,
        temperature: None,
        stop: Vec::new(),
    };
    let (demo, script) = demo_with_context(replies, 3500, generation).await;
    let mut said = Vec::new();
    for i in 0..4 {
        said.push(crate::common::chat(&demo.url, "long", &question(i)).await);
    }
    let script = script.lock().unwrap();
    let users = |request: &Value| -> Vec<String> {
        request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap()[..11].to_owned())
            .collect()
    };
    assert_eq!(users(&script.seen[0]), ["Question 0:"]);
    assert_eq!(users(&script.seen[1]), ["Question 0:", "Question 1:"]);
    // From the third question on, only the turn before it is sent, and the model is told.
    assert_eq!(users(&script.seen[2]), ["Question 1:", "Question 2:"]);
    assert_eq!(users(&script.seen[3]), ["Question 2:", "Question 3:"]);
    let system = script.seen[3]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("oldest turns of this conversation were left out"),
        "{system}"
    );
    assert!(
        !script.seen[1]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("left out")
    );
    // The person is told once, the first time.
    assert_eq!(said[0], "answer 0");
    assert_eq!(said[1], "answer 1");
    assert!(
        said[2].starts_with("answer 2\n\n(This conversation is now longer"),
        "{}",
        said[2]
    );
    assert!(said[2].contains("the oldest message."), "{}", said[2]);
    assert_eq!(said[3], "answer 3");
}
