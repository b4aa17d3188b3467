//! The same tool code on 2025-11-25 and 2026-07-28, through a real rmcp client over an
//! in-process duplex pipe: every outcome of every ask, with the same number of body runs.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common::*;
use backchannel::{Backchannel, LogLevel};
use rmcp::model::{CallToolResponse, ErrorCode, RequestMetaObject, SubscriptionFilter};
use serde_json::json;

async fn run(
    tool: &str,
    declares: Declares,
    replies: Vec<Reply>,
    wire: Revision,
) -> (String, TestServer, TestClient) {
    run_with(Backchannel::new(), tool, declares, replies, wire).await
}

async fn run_with(
    layer: Backchannel,
    tool: &str,
    declares: Declares,
    replies: Vec<Reply>,
    wire: Revision,
) -> (String, TestServer, TestClient) {
    let server = TestServer::new(layer);
    let client = TestClient::new(declares, replies);
    let running = connect(server.clone(), client.clone(), wire).await;
    let result = running.call_tool(call(tool)).await.unwrap();
    let text = result_text(&result);
    running.cancel().await.unwrap();
    (text, server, client)
}

fn runs(server: &TestServer) -> u32 {
    server.observed.runs_before_ask.load(Ordering::SeqCst)
}

fn writes(server: &TestServer) -> u32 {
    server.observed.writes.load(Ordering::SeqCst)
}

#[tokio::test]
async fn elicit_accepted_yields_the_typed_value_on_both_revisions() {
    for wire in Revision::ALL {
        let reply = Reply::Accept(json!({"confirmed": true, "note": "ok"}));
        let (text, server, client) = run("confirm", Declares::ALL, vec![reply], wire).await;
        assert_eq!(
            text, r#"accepted Confirmation { confirmed: true, note: Some("ok") }"#,
            "{wire:?}"
        );
        assert_eq!(
            runs(&server),
            2,
            "{wire:?}: one run to ask, one with the answer"
        );
        assert_eq!(writes(&server), 1, "{wire:?}");
        assert_eq!(
            *client.seen.questions.lock().unwrap(),
            vec!["form: Go ahead?"],
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn elicit_declined_and_cancelled_are_distinct_and_write_nothing() {
    for wire in Revision::ALL {
        for (reply, expected) in [(Reply::Decline, "declined"), (Reply::Cancel, "cancelled")] {
            let (text, server, _) = run("confirm", Declares::ALL, vec![reply], wire).await;
            assert_eq!(text, expected, "{wire:?}");
            assert_eq!(runs(&server), 2, "{wire:?}");
            assert_eq!(writes(&server), 0, "{wire:?}");
        }
    }
}

#[tokio::test]
async fn elicit_without_the_capability_sends_nothing_and_is_unsupported() {
    for wire in Revision::ALL {
        let (text, server, client) = run(
            "confirm",
            Declares::NONE,
            vec![Reply::Accept(json!({"confirmed": true}))],
            wire,
        )
        .await;
        assert_eq!(text, "unsupported", "{wire:?}");
        assert_eq!(runs(&server), 1, "{wire:?}");
        assert!(client.seen.questions.lock().unwrap().is_empty(), "{wire:?}");
        assert_eq!(writes(&server), 0, "{wire:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_later_than_the_ask_timeout_is_timed_out_on_both_revisions() {
    for wire in Revision::ALL {
        let layer = Backchannel::builder()
            .ask_timeout(Duration::from_secs(90))
            .build()
            .unwrap();
        let late = Reply::Late(Duration::from_secs(100), json!({"confirmed": true}));
        let (text, server, _) = run_with(layer, "confirm", Declares::ALL, vec![late], wire).await;
        assert_eq!(text, "timed out", "{wire:?}");
        assert_eq!(runs(&server), 2, "{wire:?}");
        assert_eq!(writes(&server), 0, "{wire:?}: a late yes must not write");
    }
}

#[tokio::test]
async fn a_form_answer_that_does_not_fit_is_asked_again() {
    for wire in Revision::ALL {
        let replies = vec![
            Reply::Accept(json!({"confirmed": "maybe"})),
            Reply::Accept(json!({"confirmed": false})),
        ];
        let (text, server, client) = run("confirm", Declares::ALL, replies, wire).await;
        assert_eq!(
            text, "accepted Confirmation { confirmed: false, note: None }",
            "{wire:?}"
        );
        assert_eq!(client.seen.questions.lock().unwrap().len(), 2, "{wire:?}");
        assert_eq!(runs(&server), 3, "{wire:?}");
    }
}

#[tokio::test]
async fn sampling_message_and_unsupported_on_both_revisions() {
    for wire in Revision::ALL {
        let (text, server, _) = run(
            "summarise",
            Declares::ALL,
            vec![Reply::Accept(json!("a fine summary"))],
            wire,
        )
        .await;
        assert_eq!(text, "message a fine summary", "{wire:?}");
        assert_eq!(runs(&server), 2, "{wire:?}");
        let (text, server, client) = run(
            "summarise",
            Declares::NONE,
            vec![Reply::Accept(json!("x"))],
            wire,
        )
        .await;
        assert_eq!(text, "unsupported", "{wire:?}");
        assert_eq!(runs(&server), 1, "{wire:?}");
        assert!(client.seen.questions.lock().unwrap().is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn sampling_timeout_on_both_revisions() {
    for wire in Revision::ALL {
        let late = Reply::Late(Duration::from_secs(120), json!("too late"));
        let (text, server, _) = run("summarise", Declares::ALL, vec![late], wire).await;
        assert_eq!(text, "timed out", "{wire:?}");
        assert_eq!(runs(&server), 2, "{wire:?}");
    }
}

#[tokio::test]
async fn sampling_refused_by_the_client_carries_its_error_on_2025() {
    let (text, server, _) = run(
        "summarise",
        Declares::ALL,
        vec![Reply::Refuse],
        Revision::V2025_11_25,
    )
    .await;
    assert_eq!(text, "refused -1 the person refused");
    assert_eq!(runs(&server), 2);
}

#[tokio::test]
async fn sampling_refused_by_the_client_carries_its_error_on_2026() {
    // rmcp's client aborts the whole call when its handler fails, so drive the round by hand
    // and answer with an error object, which the layer reads as a refusal.
    let server = TestServer::new(Backchannel::new());
    let client = TestClient::new(Declares::ALL, vec![Reply::Accept(json!("unused"))]);
    let running = connect(server.clone(), client, Revision::V2026_07_28).await;
    let CallToolResponse::InputRequired(round) =
        running.call_tool_once(call("summarise")).await.unwrap()
    else {
        panic!("expected input_required");
    };
    let mut retry = call("summarise");
    retry.request_state = round.request_state.clone();
    retry.input_responses = Some(
        [(
            "summary".to_owned(),
            json!({"error": {"code": -1, "message": "no"}}),
        )]
        .into(),
    );
    let CallToolResponse::Complete(result) = running.call_tool_once(retry).await.unwrap() else {
        panic!("expected a complete result");
    };
    assert_eq!(result_text(&result), "refused -1 no");
    assert_eq!(runs(&server), 2);
}

#[tokio::test]
async fn roots_listed_and_unsupported_on_both_revisions() {
    for wire in Revision::ALL {
        let (text, server, _) = run(
            "folders",
            Declares::ALL,
            vec![Reply::Accept(json!(null))],
            wire,
        )
        .await;
        assert_eq!(text, "listed file:///srv/data (data)", "{wire:?}");
        assert_eq!(runs(&server), 2);
        let (text, _, client) = run(
            "folders",
            Declares::NONE,
            vec![Reply::Accept(json!(null))],
            wire,
        )
        .await;
        assert_eq!(text, "unsupported", "{wire:?}");
        assert!(client.seen.questions.lock().unwrap().is_empty());
    }
}

#[tokio::test]
async fn url_elicitation_with_completion_notice_on_2025() {
    for wire in Revision::ALL {
        let (text, server, client) = run(
            "sign_in",
            Declares::ALL,
            vec![Reply::Accept(json!(null))],
            wire,
        )
        .await;
        assert!(text.starts_with("accepted "), "{wire:?}: {text}");
        let expected_sent = wire == Revision::V2025_11_25;
        assert!(
            text.ends_with(&format!("complete-sent={expected_sent}")),
            "{wire:?}: {text}"
        );
        assert_eq!(
            *client.seen.questions.lock().unwrap(),
            vec!["url: Sign in to continue https://example.test/login"]
        );
        assert_eq!(runs(&server), 2);
        if wire == Revision::V2025_11_25 {
            // Notifications are handled on their own tasks; give the last one a moment to land.
            for _ in 0..50 {
                if !client.seen.custom.lock().unwrap().is_empty() {
                    break;
                }
                tokio::task::yield_now().await;
            }
            assert_eq!(
                *client.seen.custom.lock().unwrap(),
                vec!["notifications/elicitation/complete"]
            );
        }
        let form_only = Declares {
            url: false,
            ..Declares::ALL
        };
        let (text, _, _) = run("sign_in", form_only, vec![Reply::Accept(json!(null))], wire).await;
        assert_eq!(text, "unsupported", "{wire:?}");
    }
}

#[tokio::test]
async fn two_sequential_asks_take_two_rounds_and_keep_the_first_answer() {
    let server = TestServer::new(Backchannel::new());
    let client = TestClient::new(Declares::ALL, vec![Reply::Accept(json!(null))]);
    let running = connect(server.clone(), client, Revision::V2026_07_28).await;

    let CallToolResponse::InputRequired(first) =
        running.call_tool_once(call("two_steps")).await.unwrap()
    else {
        panic!("expected the first question");
    };
    let keys: Vec<_> = first
        .input_requests
        .as_ref()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, vec!["first"]);

    let mut retry = call("two_steps");
    retry.request_state = first.request_state.clone();
    retry.input_responses = Some(
        [(
            "first".to_owned(),
            json!({"action": "accept", "content": {"confirmed": true}}),
        )]
        .into(),
    );
    let CallToolResponse::InputRequired(second) = running.call_tool_once(retry).await.unwrap()
    else {
        panic!("expected the second question");
    };
    let keys: Vec<_> = second
        .input_requests
        .as_ref()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, vec!["second"]);
    assert_eq!(writes(&server), 0, "no write before the last answer");

    // Only the latest round's response is sent; the first answer travels in the state.
    let mut last = call("two_steps");
    last.request_state = second.request_state.clone();
    last.input_responses = Some(
        [(
            "second".to_owned(),
            json!({"action": "accept", "content": {"color": "teal"}}),
        )]
        .into(),
    );
    let CallToolResponse::Complete(result) = running.call_tool_once(last).await.unwrap() else {
        panic!("expected the result");
    };
    assert_eq!(
        result_text(&result),
        r#"accepted Confirmation { confirmed: true, note: None }; accepted Color { color: "teal" }"#
    );
    assert_eq!(runs(&server), 3);
    assert_eq!(writes(&server), 1);
}

#[tokio::test]
async fn two_sequential_asks_on_2025_run_the_body_as_often_as_on_2026() {
    let (text, server, client) = run(
        "two_steps",
        Declares::ALL,
        vec![
            Reply::Accept(json!({"confirmed": true})),
            Reply::Accept(json!({"color": "teal"})),
        ],
        Revision::V2025_11_25,
    )
    .await;
    assert_eq!(
        text,
        r#"accepted Confirmation { confirmed: true, note: None }; accepted Color { color: "teal" }"#
    );
    assert_eq!(runs(&server), 3);
    assert_eq!(client.seen.questions.lock().unwrap().len(), 2);
}

async fn first_round(tool: &str, layer: Backchannel) -> (TestServer, Client, String) {
    let server = TestServer::new(layer);
    let client = TestClient::new(Declares::ALL, vec![Reply::Accept(json!(null))]);
    let running = connect(server.clone(), client, Revision::V2026_07_28).await;
    let CallToolResponse::InputRequired(round) = running.call_tool_once(call(tool)).await.unwrap()
    else {
        panic!("expected input_required");
    };
    (server, running, round.request_state.unwrap())
}

fn confirm_retry(state: String) -> rmcp::model::CallToolRequestParams {
    let mut retry = call("confirm");
    retry.request_state = Some(state);
    retry.input_responses = Some(
        [(
            "confirm".to_owned(),
            json!({"action": "accept", "content": {"confirmed": true}}),
        )]
        .into(),
    );
    retry
}

#[tokio::test]
async fn a_tampered_request_state_is_invalid_params_and_the_body_does_not_run() {
    let (server, running, state) = first_round("confirm", Backchannel::new()).await;
    let mut tampered = state.into_bytes();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let error = running
        .call_tool_once(confirm_retry(String::from_utf8(tampered).unwrap()))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(error) = error else {
        panic!("expected a JSON-RPC error")
    };
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(runs(&server), 1, "the body must not run on tampered state");
    assert_eq!(writes(&server), 0);
}

#[tokio::test]
async fn state_sealed_for_another_tool_is_refused() {
    let (server, running, state) = first_round("two_steps", Backchannel::new()).await;
    let error = running
        .call_tool_once(confirm_retry(state))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(error) = error else {
        panic!("expected a JSON-RPC error")
    };
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(writes(&server), 0);
}

#[tokio::test(start_paused = true)]
async fn an_expired_request_state_is_invalid_params_and_the_body_does_not_run() {
    let layer = Backchannel::builder()
        .ask_timeout(Duration::from_secs(60))
        .state_ttl(Duration::from_secs(120))
        .build()
        .unwrap();
    let (server, running, state) = first_round("confirm", layer).await;
    tokio::time::advance(Duration::from_secs(121)).await;
    let error = running
        .call_tool_once(confirm_retry(state))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(error) = error else {
        panic!("expected a JSON-RPC error")
    };
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("expired"), "{}", error.message);
    assert_eq!(runs(&server), 1);
    assert_eq!(writes(&server), 0);
}

#[tokio::test]
async fn progress_only_goes_up_on_both_revisions() {
    for wire in Revision::ALL {
        let (text, _, client) = run(
            "progress",
            Declares::ALL,
            vec![Reply::Accept(json!(null))],
            wire,
        )
        .await;
        assert_eq!(text, "[true, true, false, false, true]", "{wire:?}");
        let mut seen = client.seen.progress.lock().unwrap().clone();
        // rmcp dispatches notifications concurrently, so compare as a set.
        seen.sort_by(f64::total_cmp);
        assert_eq!(seen, vec![0.1, 0.5, 1.0], "{wire:?}");
    }
}

#[tokio::test]
async fn logging_on_2025_follows_the_session_level() {
    let server = TestServer::new(Backchannel::new());
    let client = TestClient::new(Declares::ALL, vec![Reply::Accept(json!(null))]);
    let running = connect(server, client, Revision::V2025_11_25).await;
    let default = result_text(&running.call_tool(call("logs")).await.unwrap());
    assert_eq!(
        default, "[false, true, true, true]",
        "default level is info"
    );
    running
        .set_level(rmcp::model::SetLevelRequestParams::new(
            LogLevel::Error.into(),
        ))
        .await
        .unwrap();
    let filtered = result_text(&running.call_tool(call("logs")).await.unwrap());
    assert_eq!(filtered, "[false, false, false, true]");
}

#[tokio::test]
async fn logging_on_2026_needs_the_request_log_level() {
    let server = TestServer::new(Backchannel::new());
    let client = TestClient::new(Declares::ALL, vec![Reply::Accept(json!(null))]);
    let running = connect(server, client.clone(), Revision::V2026_07_28).await;
    let none = result_text(&running.call_tool(call("logs")).await.unwrap());
    assert_eq!(none, "[false, false, false, false]", "no logLevel, no logs");
    let mut params = call("logs");
    let mut meta = RequestMetaObject::default();
    meta.set_log_level(LogLevel::Warning.into());
    params.meta = Some(meta);
    let warned = result_text(&running.call_tool(params).await.unwrap());
    assert_eq!(warned, "[false, false, true, true]");
}

#[tokio::test]
async fn list_changed_reaches_2025_sessions_and_2026_listen_streams() {
    let layer = Backchannel::new();
    let legacy_server = TestServer::new(layer.clone());
    let legacy_client = TestClient::new(Declares::ALL, vec![Reply::Accept(json!(null))]);
    let legacy = connect(
        legacy_server.clone(),
        legacy_client.clone(),
        Revision::V2025_11_25,
    )
    .await;
    let modern = connect(
        TestServer::new(layer.clone()),
        TestClient::new(Declares::ALL, vec![Reply::Accept(json!(null))]),
        Revision::V2026_07_28,
    )
    .await;
    let mut subscription = modern
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    // The legacy session registers on `notifications/initialized`, handled on its own task.
    for _ in 0..100 {
        if layer.listener_counts() == (1, 1) {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(layer.listener_counts(), (1, 1));

    let text = result_text(&legacy.call_tool(call("touch_tools")).await.unwrap());
    assert_eq!(text, "notified 2");
    let notification = tokio::time::timeout(Duration::from_secs(5), subscription.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(
        notification,
        rmcp::model::ServerNotification::ToolListChangedNotification(_)
    ));
    for _ in 0..100 {
        if legacy_client.seen.tool_list_changed.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(
        legacy_client.seen.tool_list_changed.load(Ordering::SeqCst),
        1
    );
}

#[tokio::test]
async fn a_tool_failure_is_an_is_error_result() {
    for wire in Revision::ALL {
        let server = TestServer::new(Backchannel::new());
        let running = connect(
            server,
            TestClient::new(Declares::ALL, vec![Reply::Accept(json!(null))]),
            wire,
        )
        .await;
        let result = running.call_tool(call("fails")).await.unwrap();
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result_text(&result), "it broke");
    }
}

#[tokio::test]
async fn progress_never_goes_back_when_the_body_runs_again() {
    // The body runs twice (once per round on 2026-07-28, once per answer on 2025-11-25); the
    // second run's 0.25 must not reach the client after the first run's.
    for wire in Revision::ALL {
        let (text, _server, client) = run(
            "progress_then_ask",
            Declares::ALL,
            vec![Reply::Accept(json!({"confirmed": true}))],
            wire,
        )
        .await;
        assert_eq!(
            text, "accepted Confirmation { confirmed: true, note: None }",
            "{wire:?}"
        );
        assert_eq!(
            *client.seen.progress.lock().unwrap(),
            vec![0.25, 1.0],
            "{wire:?}"
        );
    }
}
