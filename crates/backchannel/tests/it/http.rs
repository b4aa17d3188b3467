//! The Streamable HTTP endpoint on a real socket (port 0): both revisions through a real rmcp
//! client, and the endpoint's guards (Host, Origin, body size, malformed JSON).
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

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
async fn class10_verifying_progress_is_sent_only_when_the_request_carries_a_token() {
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

/// One raw request to `/mcp`: headers (Host and Content-Length are added) and a body.
struct Raw {
    headers: Vec<(&'static str, String)>,
    body: String,
}

/// The usual headers of a 2026-07-28 request for `method` (and `name`, when given).
fn modern_headers(method: &str, name: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("content-type", "application/json".to_owned()),
        ("accept", "application/json, text/event-stream".to_owned()),
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", method.to_owned()),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name.to_owned()));
    }
    headers
}

fn request(id: serde_json::Value, method: &str, params: serde_json::Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn meta_with(caps: serde_json::Value, extra: serde_json::Value) -> serde_json::Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    });
    meta.as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    meta
}

/// Requests of every kind the stateless path meets, well-formed or not.
fn corpus() -> Vec<Raw> {
    let caps = json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let meta = meta_with(caps.clone(), json!({}));
    let call = |id: u64, tool: &str, meta: &serde_json::Value| {
        request(
            json!(id),
            "tools/call",
            json!({"name": tool, "arguments": {}, "_meta": meta}),
        )
    };
    let tool = |id: u64, name: &str| Raw {
        headers: modern_headers("tools/call", Some(name)),
        body: call(id, name, &meta),
    };
    let mut corpus = vec![
        tool(1, "confirm"),
        tool(2, "fails"),
        tool(3, "sign_in"),
        tool(4, "summarise"),
        tool(5, "folders"),
        tool(6, "no_such_tool"),
        tool(7, "task_confirm"),
        Raw {
            headers: modern_headers("tools/call", Some("progress")),
            body: call(
                8,
                "progress",
                &meta_with(caps.clone(), json!({"progressToken": 8})),
            ),
        },
        Raw {
            headers: modern_headers("tools/call", Some("logs")),
            body: call(
                9,
                "logs",
                &meta_with(
                    caps.clone(),
                    json!({"io.modelcontextprotocol/logLevel": "info"}),
                ),
            ),
        },
        Raw {
            headers: modern_headers("tools/call", Some("confirm")),
            body: call(10, "confirm", &meta_with(json!({}), json!({}))),
        },
        Raw {
            headers: modern_headers("tools/list", None),
            body: request(json!("list"), "tools/list", json!({"_meta": meta})),
        },
        Raw {
            headers: modern_headers("server/discover", None),
            body: request(json!(11), "server/discover", json!({"_meta": meta})),
        },
        Raw {
            headers: modern_headers("ping", None),
            body: request(json!(12), "ping", json!({"_meta": meta})),
        },
        Raw {
            headers: modern_headers("prompts/list", None),
            body: request(json!(13), "prompts/list", json!({"_meta": meta})),
        },
        Raw {
            headers: modern_headers("resources/read", Some("file:///x")),
            body: request(
                json!(14),
                "resources/read",
                json!({"uri": "file:///x", "_meta": meta}),
            ),
        },
        Raw {
            headers: modern_headers("tasks/get", Some("nope")),
            body: request(
                json!(15),
                "tasks/get",
                json!({"taskId": "nope", "_meta": meta}),
            ),
        },
        Raw {
            headers: modern_headers("x/unknown", None),
            body: request(json!(16), "x/unknown", json!({"_meta": meta})),
        },
        // SEP-2243 headers missing, contradicting the body, or repeated.
        Raw {
            headers: modern_headers("tools/call", None),
            body: call(17, "confirm", &meta),
        },
        Raw {
            headers: modern_headers("tools/call", Some("fails")),
            body: call(18, "confirm", &meta),
        },
        Raw {
            headers: modern_headers("tools/list", Some("confirm")),
            body: call(19, "confirm", &meta),
        },
        Raw {
            headers: {
                let mut headers = modern_headers("tools/call", Some("confirm"));
                headers.push(("mcp-name", "confirm".to_owned()));
                headers
            },
            body: call(20, "confirm", &meta),
        },
        // `_meta` incomplete or naming another version than the header.
        Raw {
            headers: modern_headers("tools/call", Some("confirm")),
            body: request(
                json!(21),
                "tools/call",
                json!({"name": "confirm", "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
            ),
        },
        Raw {
            headers: modern_headers("tools/call", Some("confirm")),
            body: request(json!(22), "tools/call", json!({"name": "confirm"})),
        },
        Raw {
            headers: modern_headers("tools/call", Some("confirm")),
            body: call(
                23,
                "confirm",
                &json!({"io.modelcontextprotocol/protocolVersion": "2025-11-25",
                    "io.modelcontextprotocol/clientCapabilities": {}}),
            ),
        },
        Raw {
            headers: {
                let mut headers = modern_headers("tools/call", Some("confirm"));
                headers[2].1 = "2099-01-01".into();
                headers
            },
            body: call(24, "confirm", &meta),
        },
        // A tools/call without a name, a notification, and a response.
        Raw {
            headers: modern_headers("tools/call", None),
            body: request(json!(25), "tools/call", json!({"_meta": meta})),
        },
        Raw {
            headers: modern_headers("notifications/cancelled", None),
            body: json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 1, "_meta": meta}})
            .to_string(),
        },
        Raw {
            headers: modern_headers("tools/call", None),
            body: json!({"jsonrpc": "2.0", "id": 26, "result": {}}).to_string(),
        },
        // Media types rmcp refuses.
        Raw {
            headers: {
                let mut headers = modern_headers("tools/call", Some("fails"));
                headers[1].1 = "application/json".into();
                headers
            },
            body: call(27, "fails", &meta),
        },
        Raw {
            headers: {
                let mut headers = modern_headers("tools/call", Some("fails"));
                headers[0].1 = "text/plain".into();
                headers
            },
            body: call(28, "fails", &meta),
        },
    ];
    // A retry carrying an answer but state from nowhere, and one with mangled state.
    let mut retry = json!({"name": "confirm", "arguments": {}, "_meta": meta,
        "inputResponses": {"confirm": {"action": "accept", "content": {"confirmed": true}}}});
    corpus.push(Raw {
        headers: modern_headers("tools/call", Some("confirm")),
        body: request(json!(29), "tools/call", retry.clone()),
    });
    retry["requestState"] = json!("not-sealed-by-us");
    corpus.push(Raw {
        headers: modern_headers("tools/call", Some("confirm")),
        body: request(json!(30), "tools/call", retry),
    });
    // Calls the one-parse path must hand back to the check: fields it does not know, a field
    // twice, `null` where the check wants an object, an envelope the check refuses.
    let meta_text = meta.to_string();
    let odd = [
        r#"{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"fails","arguments":null,"_meta":META}}"#,
        r#"{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"fails","arguments":[],"_meta":META}}"#,
        r#"{"jsonrpc":"2.0","id":33,"method":"tools/call","extra":1,"params":{"name":"fails","arguments":{},"_meta":META}}"#,
        r#"{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"fails","name":"confirm","arguments":{},"_meta":META}}"#,
        r#"{"jsonrpc":"1.0","id":35,"method":"tools/call","params":{"name":"fails","arguments":{},"_meta":META}}"#,
        r#"{"jsonrpc":"2.0","id":36.5,"method":"tools/call","params":{"name":"fails","arguments":{},"_meta":META}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"fails","arguments":{},"_meta":META}}"#,
        r#"{"jsonrpc":"2.0","id":37,"method":"tools/call","params":{"name":"fails","arguments":{},"requestState":null,"inputResponses":null,"_meta":META}}"#,
        r#"{"jsonrpc":"2.0","id":38,"method":"tools/call","params":{"name":"fails","arguments":{},"task":{"ttl":1000},"_meta":META}}"#,
        r#"{"jsonrpc":"2.0","id":39,"method":"tools/list","params":{"name":"fails","arguments":{},"_meta":META}}"#,
        r#"{"jsonrpc":"2.0","id":"forty","method":"tools/call","params":{"name":"fails","_meta":META}}"#,
        r#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"fails","arguments":{},"_meta":null}}"#,
    ];
    corpus.extend(odd.iter().map(|body| Raw {
        headers: modern_headers("tools/call", Some("fails")),
        body: body.replace("META", &meta_text),
    }));
    corpus
}

/// Status, content type and body of one answer, with what is random per server masked.
async fn answer(addr: SocketAddr, raw: &Raw) -> (u16, String, String) {
    let client = reqwest::Client::new();
    let mut builder = client.post(url(addr)).body(raw.body.clone());
    for (name, value) in &raw.headers {
        builder = builder.header(*name, value);
    }
    let response = builder.send().await.unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.text().await.unwrap();
    let random = regex_lite::Regex::new(
        r#""(requestState|taskId|createdAt|lastUpdatedAt|elicitationId)":"[^"]*""#,
    )
    .unwrap();
    let body = random
        .replace_all(&key_order_free(&kind, &body), r#""$1":"…""#)
        .into_owned();
    (status, kind, body)
}

/// `body` with every JSON document in it (the whole body, or each SSE event's data) written
/// again with its keys sorted: the fast path writes a question's keys in its type's order,
/// rmcp sorts them, and the order of a JSON object's keys means nothing.
fn key_order_free(kind: &str, body: &str) -> String {
    let again = |text: &str| match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => value.to_string(),
        Err(_) => text.to_owned(),
    };
    if !kind.starts_with("text/event-stream") {
        return again(body);
    }
    body.split_inclusive('\n')
        .map(|line| match line.strip_prefix("data: ") {
            Some(data) => {
                let json = data.trim_end_matches(['\r', '\n']);
                format!("data: {}{}", again(json), &data[json.len()..])
            }
            None => line.to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn the_stateless_fast_path_answers_every_request_as_rmcp_does() {
    let fast = start(HttpOptions::default()).await;
    let slow = start(HttpOptions {
        stateless_fast_path: false,
        ..HttpOptions::default()
    })
    .await;
    for raw in corpus() {
        let (a, b) = (answer(fast.addr, &raw).await, answer(slow.addr, &raw).await);
        assert_eq!(a, b, "{}", raw.body);
    }
    // The same bodies ran on each.
    for observed in [&fast.server.observed, &slow.server.observed] {
        assert_eq!(
            observed
                .runs_before_ask
                .load(std::sync::atomic::Ordering::SeqCst),
            fast.server
                .observed
                .runs_before_ask
                .load(std::sync::atomic::Ordering::SeqCst)
        );
    }
}

/// A raw POST to `/mcp` whose body comes in `pieces`, with a pause before each but the first;
/// returns the status line.
async fn post_in_pieces(addr: SocketAddr, length: usize, pieces: &[&str]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: fails\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    for (n, piece) in pieces.iter().enumerate() {
        if n > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        stream.write_all(piece.as_bytes()).await.unwrap();
    }
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        let read = stream.read(&mut buffer).await.unwrap();
        assert!(read > 0, "the connection closed without an answer");
        answer.extend_from_slice(&buffer[..read]);
    }
    let text = String::from_utf8_lossy(&answer);
    text.lines().next().unwrap_or_default().to_owned()
}

#[tokio::test(start_paused = true)]
async fn a_body_that_stops_arriving_gets_408_and_one_in_pieces_is_read_whole() {
    let running = start(HttpOptions {
        body_read_timeout: Duration::from_secs(5),
        ..HttpOptions::default()
    })
    .await;
    let body = modern_body(1, "fails", json!({})).to_string();
    let (first, rest) = body.split_at(body.len() / 2);
    let status = post_in_pieces(running.addr, body.len(), &[first, rest]).await;
    assert!(
        status.contains(" 200 "),
        "a body in two pieces, 1 s apart: {status}"
    );
    let status = post_in_pieces(running.addr, body.len(), &[first]).await;
    assert!(
        status.contains(" 408 "),
        "half a body, then nothing: {status}"
    );
}

/// One 2025-11-25 session over raw HTTP, step by step.
struct Session2025 {
    addr: SocketAddr,
    client: reqwest::Client,
    id: String,
}

/// A response's events, read as they come.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    /// The next event's text (its `id:` and `data:` lines), or `None` at the stream's end.
    async fn next(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                return Some(event.trim_end().to_owned());
            }
            match self.response.chunk().await.unwrap() {
                Some(chunk) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                None => return None,
            }
        }
    }

    /// The events up to and including the first server request, and that request.
    async fn question(&mut self) -> (Vec<String>, serde_json::Value) {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            let data = event
                .lines()
                .find_map(|line| line.strip_prefix("data:"))
                .map(str::trim)
                .unwrap_or_default()
                .to_owned();
            events.push(event);
            if let Ok(message) = serde_json::from_str::<serde_json::Value>(&data)
                && message.get("method").is_some()
                && message.get("id").is_some()
            {
                return (events, message);
            }
        }
        panic!("the call's stream ended without a question: {events:?}");
    }

    async fn rest(mut self) -> Vec<String> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

impl Session2025 {
    fn post(&self, body: serde_json::Value) -> reqwest::RequestBuilder {
        self.client
            .post(url(self.addr))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25")
            .header("Mcp-Session-Id", &self.id)
            .body(body.to_string())
    }

    /// Status, content type and whole body of a POST, the session id masked.
    async fn exchange(&self, body: serde_json::Value) -> (u16, String, String) {
        let response = self.post(body).send().await.unwrap();
        self.shown(response).await
    }

    async fn shown(&self, response: reqwest::Response) -> (u16, String, String) {
        let status = response.status().as_u16();
        let kind = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let body = response.text().await.unwrap().replace(&self.id, "SESSION");
        (status, kind, body)
    }

    /// A call whose stream is read as it comes.
    async fn call(&self, id: u64, tool: &str, meta: serde_json::Value) -> Events {
        let response = self
            .post(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": tool, "arguments": {}, "_meta": meta}}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{tool}");
        Events {
            response,
            buffer: String::new(),
        }
    }
}

/// Every step of one 2025-11-25 session as the client sees it: initialize, a list, a log level,
/// calls that log, report progress, ask a question answered with yes, ask one and are
/// cancelled, fail, and change the tool list; a ping; the session deleted, and used after.
async fn a_session_as_the_client_sees_it(addr: SocketAddr) -> Vec<String> {
    let client = reqwest::Client::new();
    let mut seen = Vec::new();
    let initialize = client
        .post(url(addr))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}, "roots": {}},
                "clientInfo": {"name": "raw", "version": "0"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    let id = initialize.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let session = Session2025 { addr, client, id };
    seen.push(format!("{:?}", session.shown(initialize).await));
    let steps = [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "debug"}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "logs", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": "progress", "arguments": {}, "_meta": {"progressToken": "p"}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
               "params": {"name": "fails", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "touch_tools", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 8, "method": "nonsense/method"}),
    ];
    for step in steps {
        seen.push(format!(
            "{step} -> {:?}",
            session.exchange(step.clone()).await
        ));
    }
    // A question, answered yes on another connection while its call's stream is open.
    let mut call = session
        .call(9, "confirm", json!({"progressToken": 9}))
        .await;
    let (asked, question) = call.question().await;
    seen.push(format!("asked: {asked:?}"));
    let yes = json!({"jsonrpc": "2.0", "id": question["id"],
                     "result": {"action": "accept", "content": {"confirmed": true}}});
    seen.push(format!("answer -> {:?}", session.exchange(yes).await));
    seen.push(format!("then: {:?}", call.rest().await));
    // A question, and the call cancelled by the client: its stream ends with no answer.
    let mut call = session.call(10, "confirm", json!({})).await;
    seen.push(format!("asked: {:?}", call.question().await.0));
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 10, "reason": "changed my mind"}});
    seen.push(format!("cancel -> {:?}", session.exchange(cancel).await));
    seen.push(format!("then: {:?}", call.rest().await));
    let deleted = session
        .client
        .delete(url(addr))
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", &session.id)
        .send()
        .await
        .unwrap();
    seen.push(format!("delete -> {:?}", session.shown(deleted).await));
    let after = json!({"jsonrpc": "2.0", "id": 11, "method": "tools/list"});
    seen.push(format!("after -> {:?}", session.exchange(after).await));
    seen
}

#[tokio::test]
async fn a_2025_session_is_served_as_rmcps_serve_loop_serves_it() {
    let direct = start(HttpOptions::default()).await;
    let through_rmcp = start(HttpOptions {
        direct_sessions: false,
        ..HttpOptions::default()
    })
    .await;
    let a = a_session_as_the_client_sees_it(direct.addr).await;
    let b = a_session_as_the_client_sees_it(through_rmcp.addr).await;
    for (n, (a, b)) in a.iter().zip(&b).enumerate() {
        if a.contains(r#""name":"logs""#) {
            // One difference, on purpose: a call's log messages go on its own stream, ahead
            // of its result (so a host knows whose they are and reads them first); rmcp's
            // loop sends them on the session's GET stream.
            let first_log = a
                .find("notifications/message")
                .expect("the logs on the call's stream");
            assert!(first_log < a.find(r#"\"result\""#).unwrap(), "{a}");
            assert!(!b.contains("notifications/message"), "{b}");
            continue;
        }
        assert_eq!(a, b, "step {n}");
    }
    assert_eq!(a.len(), b.len());
    assert!(
        a.iter()
            .any(|step| step.starts_with("then:") && step.contains("confirmed: true")),
        "the answered question reached the tool: {a:#?}"
    );
    assert!(
        a.contains(&"then: []".to_owned()),
        "a cancelled call is not answered: {a:#?}"
    );
    // The session is gone after the DELETE, on both.
    assert!(a.last().unwrap().contains("404"), "{a:#?}");
}

/// A server whose `task_confirm` may become a task, on port 0, and a 2025-11-25 session of a
/// client that declared forms and the tasks extension.
async fn task_session(direct_sessions: bool) -> (Running, Session2025) {
    let options = HttpOptions {
        direct_sessions,
        ..HttpOptions::default()
    };
    let layer = Backchannel::builder()
        .task_tool("task_confirm", backchannel::TaskSupport::Optional)
        .build()
        .unwrap();
    let server = TestServer::new(layer);
    let factory_server = server.clone();
    let served = backchannel::testing::serve_with(
        |stop| serve::router(move || factory_server.clone(), &options, stop),
        &options,
    )
    .await;
    let addr = served.addr;
    let client = reqwest::Client::new();
    let initialize = client
        .post(url(addr))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}},
                                 "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "clientInfo": {"name": "raw", "version": "0"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    let id = initialize.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let session = Session2025 { addr, client, id };
    session
        .exchange(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let running = Running {
        addr,
        server,
        _served: served,
    };
    (running, session)
}

#[tokio::test]
async fn on_2025_11_25_a_call_becomes_a_task_only_when_its_request_asks_for_one() {
    for direct_sessions in [true, false] {
        let (running, session) = task_session(direct_sessions).await;
        // Declared the extension, asked for no task: a plain call, its question on the session.
        let mut call = session.call(1, "task_confirm", json!({})).await;
        let (_, question) = call.question().await;
        assert_eq!(question["method"], "elicitation/create", "{question}");
        let yes = json!({"jsonrpc": "2.0", "id": question["id"],
                         "result": {"action": "accept", "content": {"confirmed": true}}});
        session.exchange(yes).await;
        let rest = call.rest().await.join("\n");
        assert!(rest.contains("in task=false: accepted"), "{rest}");
        assert!(!rest.contains(r#"\"resultType\":\"task\""#), "{rest}");
        assert_eq!(running.server.layer.running_tasks(), 0);

        // The request's `task` field asks for one: the call becomes a task.
        let (status, _, body) = session
            .exchange(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "task_confirm", "arguments": {}, "task": {}}}))
            .await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(r#""resultType":"task""#), "{body}");
        assert!(body.contains(r#""taskId""#), "{body}");
    }
}

#[tokio::test]
async fn a_2026_07_28_request_carrying_a_session_id_is_served_as_the_stateless_request_it_is() {
    let (running, session) = task_session(true).await;
    let body = modern_body(1, "fails", json!({})).to_string();
    let (plain_status, plain) = post_modern(running.addr, "fails", body.clone()).await;
    for session_id in [session.id.as_str(), "no-such-session"] {
        let response = reqwest::Client::new()
            .post(url(running.addr))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "fails")
            .header("Mcp-Session-Id", session_id)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), plain_status, "{session_id}");
        assert!(response.headers().get("mcp-session-id").is_none());
        assert_eq!(response.text().await.unwrap(), plain, "{session_id}");
    }
}
