//! The pass-through (`Gateway::pass_through`): which 2026-07-28 calls it relays itself, and
//! that its rounds and the handler's are one call's, each answered once.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use backchannel::testing::{Served, TestServer, serve_with};
use backchannel::{Backchannel, Revision};
use serde_json::{Value, json};

use crate::common::gateway;

/// The `_meta` of every `tools/call` an upstream received, in order.
type Seen = Arc<Mutex<Vec<Value>>>;

/// The key of the log level the gateway asks of a 2026-07-28 upstream for `Ctx` to pass on.
const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The test server limited to 2026-07-28, recording the `_meta` of each call it receives.
async fn recording_upstream() -> (Served, TestServer, Seen) {
    let layer = Backchannel::builder()
        .only_revision(Revision::V2026_07_28)
        .build()
        .unwrap();
    let server = TestServer::new(layer);
    let seen: Seen = Arc::default();
    let (app_server, record) = (server.clone(), seen.clone());
    let options = backchannel::serve::HttpOptions::default();
    let served = serve_with(
        |stop| {
            backchannel::serve::router(move || app_server.clone(), &options, stop).layer(
                axum::middleware::from_fn(
                    move |request: axum::extract::Request, next: axum::middleware::Next| {
                        let record = record.clone();
                        async move {
                            let (parts, body) = request.into_parts();
                            let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
                            let message: Value = serde_json::from_slice(&bytes).unwrap_or_default();
                            if message["method"] == "tools/call" {
                                record
                                    .lock()
                                    .unwrap()
                                    .push(message["params"]["_meta"].clone());
                            }
                            let body = axum::body::Body::from(bytes);
                            next.run(axum::extract::Request::from_parts(parts, body))
                                .await
                        }
                    },
                ),
            )
        },
        &options,
    )
    .await;
    (served, server, seen)
}

/// A 2026-07-28 `tools/call` of `tool` as raw HTTP, with `params`: the answer's last message.
async fn call(url: &str, tool: &str, params: Value) -> Value {
    crate::common::raw_call(&reqwest::Client::new(), url, tool, params).await
}

/// The last `_meta` the upstream received, and how many calls it received.
fn last(seen: &Seen) -> (Value, usize) {
    let seen = seen.lock().unwrap();
    (seen.last().cloned().unwrap_or_default(), seen.len())
}

#[tokio::test]
async fn a_plain_call_and_its_rounds_go_through_the_pass_through_and_the_rest_through_the_handler()
{
    let (served, server, seen) = recording_upstream().await;
    let (front, _gateway) = gateway("test", served.addr, Revision::V2026_07_28).await;
    let url = format!("http://{}/mcp", front.addr);

    // A call that asks nothing and wants nothing on the way: the pass-through makes the
    // upstream request (the handler would ask for log messages to pass on), and the tool's
    // failure comes back as the tool's, the model can read it.
    let passed = call(&url, "fails", json!({"arguments": {}})).await;
    let (meta, calls) = last(&seen);
    assert_eq!(calls, 1);
    assert!(meta.get(LOG_LEVEL).is_none(), "{meta}");
    assert_eq!(passed["id"], 7, "{passed}");
    assert_eq!(passed["result"]["isError"], true, "{passed}");
    assert_eq!(passed["result"]["resultType"], "complete", "{passed}");

    // The same call asking for progress goes through the handler, and answers the same.
    let handled = call(
        &url,
        "fails",
        json!({"arguments": {}, "_meta": {"progressToken": "p1"}}),
    )
    .await;
    let (meta, calls) = last(&seen);
    assert_eq!(calls, 2);
    assert_eq!(meta[LOG_LEVEL], "debug", "{meta}");
    assert_eq!(handled, passed);

    // A call whose upstream asks, round by round through the pass-through: the upstream's
    // round reaches the client with its state sealed by the gateway's layer, the retry's
    // state is opened and spent there. The upstream ran the tool once per round, wrote once.
    let round = call(&url, "confirm", json!({"arguments": {}})).await;
    let (meta, calls) = last(&seen);
    assert_eq!(calls, 3);
    assert!(meta.get(LOG_LEVEL).is_none(), "{meta}");
    let (key, state) = asked(&round);
    let answers = json!({key: {"action": "accept", "content": {"confirmed": true}}});
    let retry = |state: &Value, extra: Value| {
        let mut params =
            json!({"arguments": {}, "inputResponses": answers.clone(), "requestState": state});
        if let Value::Object(extra) = extra {
            params.as_object_mut().unwrap().extend(extra);
        }
        params
    };
    let done = call(&url, "confirm", retry(&state, json!({}))).await;
    let accepted = "accepted Confirmation { confirmed: true, note: None }";
    assert_eq!(done["result"]["content"][0]["text"], accepted, "{done}");
    let (meta, calls) = last(&seen);
    assert_eq!(calls, 4);
    assert!(meta.get(LOG_LEVEL).is_none(), "{meta}");
    assert_eq!(server.observed.runs_before_ask.load(Ordering::SeqCst), 2);
    assert_eq!(server.observed.writes.load(Ordering::SeqCst), 1);

    // The round answers once, and only for its own call: its state sent again is refused, and
    // so is it with other arguments; nothing reaches the upstream, nothing more is written.
    let again = call(&url, "confirm", retry(&state, json!({}))).await;
    assert!(again["error"]["message"].is_string(), "{again}");
    let (_, second) = asked(&call(&url, "confirm", json!({"arguments": {}})).await);
    let other = call(
        &url,
        "confirm",
        retry(&second, json!({"arguments": {"x": 1}})),
    )
    .await;
    assert!(other["error"]["message"].is_string(), "{other}");
    assert_eq!(last(&seen).1, 5);
    assert_eq!(server.observed.writes.load(Ordering::SeqCst), 1);

    // A round either path sealed, the other opens: the handler's first round (its client asks
    // for progress) answered through the pass-through, and the reverse.
    let progress = json!({"_meta": {"progressToken": "p2"}});
    let (_, by_handler) = asked(
        &call(
            &url,
            "confirm",
            json!({"arguments": {}, "_meta": {"progressToken": "p3"}}),
        )
        .await,
    );
    assert_eq!(last(&seen).0[LOG_LEVEL], "debug");
    let done = call(&url, "confirm", retry(&by_handler, json!({}))).await;
    assert_eq!(done["result"]["content"][0]["text"], accepted, "{done}");
    assert!(last(&seen).0.get(LOG_LEVEL).is_none());
    let done = call(&url, "confirm", retry(&second, progress)).await;
    assert_eq!(done["result"]["content"][0]["text"], accepted, "{done}");
    assert_eq!(last(&seen).0[LOG_LEVEL], "debug");
    assert_eq!(server.observed.writes.load(Ordering::SeqCst), 3);
}

/// The key of the one question of an `input_required` answer, and its state.
fn asked(round: &Value) -> (String, Value) {
    let result = &round["result"];
    assert_eq!(result["resultType"], "input_required", "{round}");
    let key = result["inputRequests"]
        .as_object()
        .and_then(|asked| asked.keys().next().cloned())
        .unwrap_or_else(|| panic!("no question in {round}"));
    assert!(result["requestState"].is_string(), "{round}");
    (key, result["requestState"].clone())
}
