//! The Streamable HTTP endpoint on a real socket (port 0): both revisions through a real rmcp
//! client, and the endpoint's guards (Host, Origin, body size, malformed JSON).
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use crate::common::*;
use backchannel::Backchannel;
use backchannel::serve::{self, HttpOptions};
use serde_json::json;

struct Running {
    addr: SocketAddr,
    server: TestServer,
    _served: backchannel::testing::Served,
}

async fn start(options: HttpOptions) -> Running {
    let server = TestServer::new(Backchannel::new());
    let factory_server = server.clone();
    let served = backchannel::testing::serve_with(
        |stop| serve::router(move || factory_server.clone(), &options, stop),
        &options,
    )
    .await;
    Running {
        addr: served.addr,
        server,
        _served: served,
    }
}

fn url(addr: SocketAddr) -> String {
    format!("http://{addr}/mcp")
}

fn modern_body(id: u64, tool: &str, meta_extra: serde_json::Value) -> serde_json::Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    });
    if let (Some(meta), Some(extra)) = (meta.as_object_mut(), meta_extra.as_object()) {
        meta.extend(extra.clone());
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {}, "_meta": meta}})
}

async fn post_modern(addr: SocketAddr, tool: &str, body: String) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(url(addr))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test]
async fn the_same_tool_works_over_http_on_both_revisions() {
    let running = start(HttpOptions::default()).await;
    for wire in Revision::ALL {
        let client = TestClient::new(
            Declares::ALL,
            vec![Reply::Accept(json!({"confirmed": true}))],
        );
        let service =
            backchannel::testing::connect_http(client, &url(running.addr), wire, None).await;
        let result = service.call_tool(call("confirm")).await.unwrap();
        assert_eq!(
            result_text(&result),
            "accepted Confirmation { confirmed: true, note: None }",
            "{wire:?}"
        );
        service.cancel().await.unwrap();
    }
    assert_eq!(
        running
            .server
            .observed
            .runs_before_ask
            .load(std::sync::atomic::Ordering::SeqCst),
        4
    );
    assert_eq!(
        running
            .server
            .observed
            .writes
            .load(std::sync::atomic::Ordering::SeqCst),
        2
    );
}

#[tokio::test]
async fn progress_is_sent_only_when_the_request_carries_a_token() {
    let running = start(HttpOptions::default()).await;
    let (status, without) = post_modern(
        running.addr,
        "progress",
        modern_body(1, "progress", json!({})).to_string(),
    )
    .await;
    assert_eq!(status, 200);
    assert!(!without.contains("notifications/progress"), "{without}");
    assert!(
        without.contains("[false, false, false, false, false]"),
        "{without}"
    );

    let (status, with) = post_modern(
        running.addr,
        "progress",
        modern_body(2, "progress", json!({"progressToken": "tok-1"})).to_string(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(with.matches("notifications/progress").count(), 3, "{with}");
    assert!(with.contains("[true, true, false, false, true]"), "{with}");
}

#[tokio::test]
async fn a_foreign_host_or_origin_is_forbidden_and_the_server_keeps_serving() {
    let running = start(HttpOptions::default()).await;
    let body = modern_body(1, "confirm", json!({})).to_string();
    let client = reqwest::Client::new();
    for (header, value) in [
        ("Host", "evil.example.com"),
        ("Origin", "http://evil.example.com"),
    ] {
        let response = client
            .post(url(running.addr))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "confirm")
            .header(header, value)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 403, "{header}: {value}");
    }
    assert_eq!(
        running
            .server
            .observed
            .runs_before_ask
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    let (status, _) = post_modern(
        running.addr,
        "fails",
        modern_body(2, "fails", json!({})).to_string(),
    )
    .await;
    assert_eq!(status, 200, "still serving");
}

#[tokio::test]
async fn an_oversized_body_gets_413_and_malformed_json_a_parse_error() {
    let running = start(HttpOptions {
        max_body_bytes: 4096,
        ..HttpOptions::default()
    })
    .await;
    let mut big = modern_body(1, "confirm", json!({}));
    big["params"]["arguments"] = json!({"padding": "x".repeat(10_000)});
    let (status, _) = post_modern(running.addr, "confirm", big.to_string()).await;
    assert_eq!(status, 413);

    let (status, text) = post_modern(
        running.addr,
        "confirm",
        "{\"jsonrpc\": \"2.0\", \"id\": 1, ".into(),
    )
    .await;
    assert!((400..500).contains(&status), "status {status}");
    assert!(
        text.contains("-32700"),
        "expected a JSON-RPC parse error: {text}"
    );

    assert_eq!(
        running
            .server
            .observed
            .runs_before_ask
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    let (status, text) = post_modern(
        running.addr,
        "fails",
        modern_body(3, "fails", json!({})).to_string(),
    )
    .await;
    assert_eq!(status, 200, "still serving: {text}");
    assert!(text.contains("it broke"));
}

#[tokio::test]
async fn a_call_that_streams_nothing_is_answered_as_json_and_one_that_streams_as_sse() {
    let running = start(HttpOptions::default()).await;
    let content_type = |meta: serde_json::Value, id: u64| {
        let body = modern_body(id, "progress", meta).to_string();
        async move {
            let response = reqwest::Client::new()
                .post(url(running.addr))
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", "tools/call")
                .header("Mcp-Name", "progress")
                .body(body)
                .send()
                .await
                .unwrap();
            let kind = response.headers()["content-type"]
                .to_str()
                .unwrap()
                .to_owned();
            let text = response.text().await.unwrap();
            (kind, text)
        }
    };
    let (kind, text) = content_type(json!({}), 1).await;
    assert!(kind.starts_with("application/json"), "{kind}");
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["id"], 1);
    let (kind, text) = content_type(json!({"progressToken": "p"}), 2).await;
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    assert!(text.contains("notifications/progress"), "{text}");
}
