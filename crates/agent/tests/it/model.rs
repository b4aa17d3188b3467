//! The tool-calling loop against a scripted fake of the OpenAI-compatible chat-completions API,
//! served over HTTP on port 0, with the real order service behind the host.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::app;
use agent::desk::DeskConfig;
use agent::llm::{AnthropicMessages, OpenAiCompatible, Provider};
use axum::Json;
use axum::extract::State;
use axum::routing::post;
use backchannel::Revision;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

type Seen = Arc<Mutex<Vec<Value>>>;

/// Keep `request` in `seen`; its last message.
fn record(seen: &Seen, request: &Value) -> Value {
    seen.lock().unwrap().push(request.clone());
    request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap()
}

/// The script: a user message gets a `get_order` call; a tool result gets words built from it.
async fn completions(State(seen): State<Seen>, Json(request): Json<Value>) -> Json<Value> {
    let last = record(&seen, &request);
    let message = if request.get("tools").is_none() {
        // A sampling request forwarded by the desk: no tools offered.
        let asked = last["content"].as_str().unwrap_or_default();
        json!({"role": "assistant", "content": format!("Hi from the model (asked: {asked})")})
    } else if last["role"] == "user"
        && last["content"]
            .as_str()
            .unwrap_or_default()
            .contains("sample")
    {
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_s", "type": "function",
            "function": {"name": "test_sampling", "arguments": "{\"prompt\":\"Say hi\"}"}
        }]})
    } else if last["role"] == "user"
        && last["content"]
            .as_str()
            .unwrap_or_default()
            .contains("Gold")
    {
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_n", "type": "function",
            "function": {"name": "search_support_notes",
                         "arguments": "{\"question\":\"How long can a Gold customer return an item?\"}"}
        }]})
    } else if last["role"] == "tool"
        && last["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with("[refunds-process.md]")
    {
        json!({"role": "assistant", "content": format!("From the notes: {}", last["content"].as_str().unwrap())})
    } else if last["role"] == "tool"
        && last["content"]
            .as_str()
            .unwrap_or_default()
            .contains("LLM response:")
    {
        json!({"role": "assistant", "content": format!("The server got: {}", last["content"].as_str().unwrap())})
    } else if last["role"] == "tool" {
        let text = last["content"].as_str().unwrap_or_default();
        let answer = if text.contains("Ana Ruiz") && text.contains("DHL-88213") {
            "Ana Ruiz's order ORD-10001 is on its way with DHL (DHL-88213)."
        } else {
            "I could not read the tool result."
        };
        json!({"role": "assistant", "content": answer})
    } else {
        crate::common::tool_call("get_order", r#"{"orderId":"ORD-10001"}"#)
    };
    crate::common::completion(message)
}

async fn fake_model(seen: Seen) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(seen);
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

async fn demo(model_url: &str, budget: u64) -> crate::common::Demo {
    let model = OpenAiCompatible::new(model_url, None, "fake", Duration::from_secs(10)).unwrap();
    let desk = DeskConfig {
        protocol: Some(Revision::V2026_07_28),
        model: Some(Provider::OpenAi(model)),
        token_budget: budget,
        ..DeskConfig::default()
    };
    crate::common::start(
        crate::common::orders_in_memory(Duration::from_millis(30)),
        desk,
    )
    .await
}

async fn chat(url: &str, message: &str) -> String {
    crate::common::chat(url, "c1", message).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_a_tool_through_the_host_and_answers_from_its_result() {
    let seen = Seen::default();
    let model_url = fake_model(seen.clone()).await;
    let demo = demo(&model_url, 100_000).await;
    let url = &demo.url;
    let reply = chat(url, "Where is ORD-10001?").await;
    assert_eq!(
        reply,
        "Ana Ruiz's order ORD-10001 is on its way with DHL (DHL-88213)."
    );
    let requests = seen.lock().unwrap().clone();
    assert_eq!(
        requests.len(),
        2,
        "one call to choose the tool, one to answer"
    );
    let first = &requests[0];
    assert_eq!(
        (first["max_tokens"].clone(), first.get("temperature")),
        (json!(1024), None),
        "the default reply cap, and the server's own temperature"
    );
    assert_eq!(first["messages"][0]["role"], "system");
    assert!(
        first["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("never guess")
    );
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), 6, "{tools:?}");
    assert!(tools.contains(&"cancel_order"));
    let second = requests[1]["messages"].as_array().unwrap();
    let tool_message = second.last().unwrap();
    assert_eq!(tool_message["role"], "tool");
    assert_eq!(tool_message["tool_call_id"], "call_1");
    assert_eq!(
        second[second.len() - 2]["tool_calls"][0]["function"]["name"],
        "get_order"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_token_budget_ends_the_conversation() {
    let seen = Seen::default();
    let model_url = fake_model(seen.clone()).await;
    let demo = demo(&model_url, 60).await;
    let url = &demo.url;
    let first = chat(url, "Where is ORD-10001?").await;
    assert!(first.starts_with("Ana Ruiz"), "{first}");
    let second = chat(url, "And ORD-10002?").await;
    assert_eq!(
        second,
        "This conversation has reached its limit. Please start a new one."
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "no model call after the budget is spent"
    );
}

/// A server tool that asks for the client's model: the desk asks the person to approve, answers
/// through the same fake model, and the loop finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class13_check_it_sampling_a_request_is_approved_and_answered_through_the_model() {
    use backchannel::serve::HttpOptions;

    let seen = Seen::default();
    let model_url = fake_model(seen.clone()).await;
    let stop = CancellationToken::new();
    // The conformance fixture server has `test_sampling`, which asks the client's model.
    let fixtures = conformance::ConformanceServer::new();
    let fixtures_url = crate::common::serve_mcp(move || fixtures.clone(), &stop).await;
    let web = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", web.local_addr().unwrap());
    let config = DeskConfig {
        orders_url: fixtures_url,
        protocol: Some(Revision::V2025_11_25),
        model: Some(Provider::OpenAi(
            OpenAiCompatible::new(&model_url, None, "fake", Duration::from_secs(10)).unwrap(),
        )),
        ..DeskConfig::default()
    };
    tokio::spawn(app::serve_web(
        web,
        config,
        HttpOptions::default(),
        stop.clone(),
    ));

    // The page: its event stream, where the approval request appears.
    let _forget = crate::common::Forget::new(&url);
    let (mut events, secret) = crate::common::Events::open_at(&url, "c1").await;
    let reply = tokio::spawn({
        let url = url.clone();
        async move { chat(&url, "please sample the model").await }
    });
    let approval = events.next_of("sampling").await;
    assert_eq!(approval["event"], "sampling", "{approval}");
    assert!(
        approval["message"].as_str().unwrap().contains("Say hi"),
        "{approval}"
    );
    assert!(
        approval["message"]
            .as_str()
            .unwrap()
            .contains("(a reply of at most 100 tokens)"),
        "the request's own cap is shown: {approval}"
    );
    let status = crate::common::answer(&url, approval["id"].as_str().unwrap(), &secret, true).await;
    assert_eq!(status, 204);
    // The model's reply is shown for review before it goes to the server.
    let review = events.next_of("sampling").await;
    assert_eq!(
        review["message"],
        "The model answered. Send this reply to orders? Hi from the model (asked: Say hi)",
        "{review}"
    );
    let status = crate::common::answer(&url, review["id"].as_str().unwrap(), &secret, true).await;
    assert_eq!(status, 204);
    let reply = reply.await.unwrap();
    assert_eq!(
        reply,
        "The server got: LLM response: Hi from the model (asked: Say hi)"
    );
    let requests = seen.lock().unwrap().clone();
    assert_eq!(
        requests.len(),
        3,
        "choose the tool, answer the sampling request, answer the person"
    );
    assert!(requests[1].get("tools").is_none());
    // A reply the person does not let go never reaches the server: it hears a refusal.
    let refused = tokio::spawn({
        let url = url.clone();
        async move { chat(&url, "please sample the model").await }
    });
    let approval = events.next_of("sampling").await;
    crate::common::answer(&url, approval["id"].as_str().unwrap(), &secret, true).await;
    let review = events.next_of("sampling").await;
    crate::common::answer(&url, review["id"].as_str().unwrap(), &secret, false).await;
    refused.await.unwrap();
    // What the server's tool said back, as the model read it.
    let requests = seen.lock().unwrap().clone();
    let messages = requests.last().unwrap()["messages"].as_array().unwrap();
    let tool_said = messages.last().unwrap()["content"].as_str().unwrap();
    assert_eq!(
        tool_said,
        "refused (-1): the person did not let the model's reply go to the server"
    );
    assert_eq!(
        requests[1]["max_tokens"], 100,
        "the sampling request's maxTokens, below the desk's 1,024"
    );
    stop.cancel();
}

/// The Anthropic messages script: a user turn gets a `tool_use` of get_order; a `tool_result`
/// gets words built from it.
async fn anthropic(State(seen): State<Seen>, Json(request): Json<Value>) -> Json<Value> {
    let last = record(&seen, &request);
    let block = &last["content"][0];
    let content = if block["type"] == "tool_result" {
        let text = block["content"].as_str().unwrap_or_default();
        let answer = if text.contains("Ana Ruiz") {
            "ORD-10001 is Ana Ruiz's, on its way."
        } else {
            "no data"
        };
        json!([{"type": "text", "text": answer}])
    } else {
        json!([{"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"orderId": "ORD-10001"}}])
    };
    Json(
        json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content,
                "stop_reason": "end_turn", "usage": {"input_tokens": 30, "output_tokens": 5}}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_provider_drives_the_same_loop() {
    let seen = Seen::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let model_url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/messages", post(anthropic))
        .with_state(seen.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let model = AnthropicMessages::new(
        &model_url,
        Some(agent::llm::Secret::new("key")),
        "fake",
        Duration::from_secs(10),
    )
    .unwrap()
    .with_generation(agent::llm::Generation {
        max_tokens: 300,
        temperature: Some(0.5),
        stop: Vec::new(),
    });
    let desk = DeskConfig {
        protocol: Some(Revision::V2025_11_25),
        model: Some(Provider::Anthropic(model)),
        ..DeskConfig::default()
    };
    let demo = crate::common::start(
        crate::common::orders_in_memory(Duration::from_millis(30)),
        desk,
    )
    .await;
    let url = demo.url.clone();

    assert_eq!(
        chat(&url, "Where is ORD-10001?").await,
        "ORD-10001 is Ana Ruiz's, on its way."
    );
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            (
                request["max_tokens"].clone(),
                request["temperature"].clone()
            ),
            (json!(300), json!(0.5)),
            "the configured settings on every request"
        );
    }
    assert!(
        requests[0]["system"]
            .as_str()
            .unwrap()
            .contains("never guess")
    );
    assert_eq!(requests[0]["tools"].as_array().unwrap().len(), 6);
    let turns = requests[1]["messages"].as_array().unwrap();
    assert_eq!(turns[turns.len() - 2]["content"][0]["type"], "tool_use");
    assert_eq!(
        turns[turns.len() - 1]["content"][0]["tool_use_id"],
        "toolu_1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_gets_passages_of_the_notes_not_whole_files() {
    let seen = Seen::default();
    let model_url = fake_model(seen.clone()).await;
    let model = OpenAiCompatible::new(&model_url, None, "fake", Duration::from_secs(10)).unwrap();
    let desk = DeskConfig {
        protocol: Some(Revision::V2026_07_28),
        model: Some(Provider::OpenAi(model)),
        knowledge: Some(crate::common::knowledge()),
        ..DeskConfig::default()
    };
    let demo = crate::common::start(crate::common::orders_in_memory(Duration::ZERO), desk).await;
    let reply = chat(&demo.url, "How long can a Gold customer return an item?").await;
    assert!(reply.contains("60 days for Gold tier"), "{reply}");
    let requests = seen.lock().unwrap().clone();
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"search_support_notes"), "{offered:?}");
    assert!(
        !offered
            .iter()
            .any(|name| name.starts_with("knowledge_base")),
        "no whole-file tools: {offered:?}"
    );
    let tool_result = requests[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(tool_result.lines().count() <= 3, "{tool_result}");
    assert!(
        !tool_result.contains("Record the reason code"),
        "not the whole file: {tool_result}"
    );
}

/// A fake that answers each request with the next `(status, Retry-After)` of its script, and
/// once the script is spent with a plain text reply; it counts the requests.
async fn scripted_statuses(
    script: Vec<(u16, Option<&'static str>)>,
) -> (String, Arc<Mutex<usize>>) {
    let state = Arc::new(Mutex::new((script, 0usize)));
    let count = Arc::new(Mutex::new(0usize));
    let counted = count.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let state = state.clone();
            let counted = counted.clone();
            async move {
                *counted.lock().unwrap() += 1;
                let next = {
                    let mut state = state.lock().unwrap();
                    let at = state.1;
                    state.1 += 1;
                    state.0.get(at).copied()
                };
                match next {
                    Some((status, retry_after)) => {
                        let mut response = axum::response::IntoResponse::into_response((
                            axum::http::StatusCode::from_u16(status).unwrap(),
                            "scripted refusal",
                        ));
                        if let Some(wait) = retry_after {
                            response
                                .headers_mut()
                                .insert("retry-after", wait.parse().unwrap());
                        }
                        response
                    }
                    None => axum::response::IntoResponse::into_response(Json(json!({
                        "choices": [{"message": {"role": "assistant", "content": "fine"}}]
                    }))),
                }
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_model_is_asked_again_after_the_wait_it_names() {
    let (model_url, count) = scripted_statuses(vec![(429, Some("0")), (503, Some("0"))]).await;
    let demo = demo(&model_url, 100_000).await;
    assert_eq!(chat(&demo.url, "hello").await, "fine");
    assert_eq!(*count.lock().unwrap(), 3, "two refusals, then the answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_cannot_answer_is_named_with_what_is_wrong() {
    let cases = [
        (
            vec![(500, Some("0")), (500, Some("0")), (500, Some("0"))],
            "is busy or failing",
            agent::llm::ATTEMPTS as usize,
        ),
        (vec![(401, None)], "refused the API key", 1),
        (vec![(404, None)], "does not know a model named 'fake'", 1),
    ];
    for (script, says, requests) in cases {
        let (model_url, count) = scripted_statuses(script).await;
        let demo = demo(&model_url, 100_000).await;
        let reply = chat(&demo.url, "hello").await;
        assert!(
            reply.starts_with(&format!("The model at {model_url} ")) && reply.contains(says),
            "{reply}"
        );
        assert_eq!(*count.lock().unwrap(), requests, "{says}");
    }
    // A port held by a socket that does not listen: a connection to it is refused.
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let down = format!("http://{}/v1", held.local_addr().unwrap());
    let demo = demo(&down, 100_000).await;
    assert_eq!(
        chat(&demo.url, "hello").await,
        format!("The model at {down} does not answer. Is it running?")
    );
    drop(held);
}

/// The script of a model that cancels through a task: the person's message gets a
/// `cancel_order` call; the tool's "waiting" result gets words saying so; the task's result,
/// when it comes (a request without tools), gets words of the model's own built from it, or,
/// with `fail_late`, a 500 (the result is then said as the server wrote it).
async fn task_completions(
    State((seen, fail_late)): State<(Seen, bool)>,
    Json(request): Json<Value>,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let last = record(&seen, &request);
    let text = last["content"].as_str().unwrap_or_default().to_owned();
    let message = if request.get("tools").is_none() {
        if fail_late {
            let status = axum::http::StatusCode::INTERNAL_SERVER_ERROR;
            return (status, [("retry-after", "0")]).into_response();
        }
        let done = text.contains("Order ORD-10002 is cancelled");
        json!({"role": "assistant", "content": format!("Model: cancelled as you asked ({done}).")})
    } else if last["role"] == "tool" {
        json!({"role": "assistant", "content": "It waits for your confirmation in your inbox."})
    } else {
        crate::common::tool_call("cancel_order", r#"{"orderId":"ORD-10002"}"#)
    };
    crate::common::completion(message).into_response()
}

/// With a model and tasks, a task's result that comes after the chat went on is the model's
/// to say: it is given a turn (no tools) with the conversation and the result, its words are
/// said in the conversation; a model that fails then leaves the result said as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tasks_the_model_gets_a_turn_to_say_the_tasks_result() {
    for fail_late in [false, true] {
        let seen = Seen::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let model_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(task_completions))
            .with_state((seen.clone(), fail_late));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let model =
            OpenAiCompatible::new(&model_url, None, "fake", Duration::from_secs(10)).unwrap();
        let demo = crate::common::start_with_model(Provider::OpenAi(model), |desk| {
            desk.tasks = true;
        })
        .await;
        let (mut page, secret) = crate::common::Events::open(&demo, "c1").await;
        let reply = chat(&demo.url, "please cancel ORD-10002").await;
        assert_eq!(reply, "It waits for your confirmation in your inbox.");
        let question = page.next_of("confirmation").await;
        let id = question["id"].as_str().unwrap();
        assert_eq!(
            crate::common::answer(&demo.url, id, &secret, true).await,
            204
        );
        let said = page.next_of("said").await;
        let expected = match fail_late {
            false => "Model: cancelled as you asked (true).",
            true => "Order ORD-10002 is cancelled and a refund of €34.99 has been started.",
        };
        assert_eq!(said["text"], expected, "{said}");
        assert_eq!(
            crate::common::status_of(&demo.url, "ORD-10002").await,
            "CANCELLED"
        );
        let requests = seen.lock().unwrap().clone();
        let late = requests.last().unwrap();
        assert!(late.get("tools").is_none(), "{late}");
        let messages = late["messages"].as_array().unwrap();
        // The model read the conversation so far, then the result.
        assert!(
            messages
                .iter()
                .any(|m| m["content"] == "please cancel ORD-10002"),
            "{messages:?}"
        );
        drop((page, demo));
    }
}
