//! The order service against hostile pages and clients, through real HTTP on port 0: DNS
//! rebinding on every route, answers that were never asked for, replayed rounds, malformed
//! JSON-RPC, sign-in, tasks of other callers, 2025 session rules, idle sockets, and a cancelled
//! order that must stay cancelled.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use backchannel::serve::HttpOptions;
use backchannel::serve::{ResourceServer, Tokens};
use orders::service::{OrderService, ServiceConfig};
use orders::store::Store;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{json_answer, modern_call, post, yes};

struct Running {
    addr: SocketAddr,
    service: OrderService,
    _served: backchannel::testing::Served,
}

/// The resource the token-file tests' order service names in its metadata.
const TOKEN_RESOURCE: &str = "http://127.0.0.1:8080/mcp";

async fn start_with(options: HttpOptions, tokens: Option<Tokens>) -> Running {
    let sign_in = tokens.map(|tokens| {
        std::sync::Arc::new(
            ResourceServer::tokens(TOKEN_RESOURCE, "order-service", tokens).unwrap(),
        )
    });
    start_signed_in(options, sign_in).await
}

async fn start_signed_in(
    options: HttpOptions,
    sign_in: Option<std::sync::Arc<ResourceServer>>,
) -> Running {
    let store = Store::open(&crate::common::fresh_database().await)
        .await
        .unwrap();
    let service = OrderService::new(
        store,
        ServiceConfig {
            carrier_latency: Duration::ZERO,
            ..ServiceConfig::default()
        },
    );
    let app_service = service.clone();
    let served = backchannel::testing::serve_with(
        |stop| {
            let config = orders::app::Config {
                http: options.clone(),
                sign_in: sign_in.clone(),
                ..Default::default()
            };
            orders::app::router(app_service, &config, stop).unwrap()
        },
        &options,
    )
    .await;
    Running {
        addr: served.addr,
        service,
        _served: served,
    }
}

async fn start() -> Running {
    start_with(HttpOptions::default(), None).await
}

async fn status_of(running: &Running, id: &str) -> String {
    running
        .service
        .order(orders::domain::OrderId::new(id))
        .await
        .unwrap()
        .status
        .as_str()
        .to_owned()
}

/// The first order in the seed with this status.
async fn first_with(running: &Running, status: &str) -> String {
    running.service.orders_by_status(status).await.unwrap()[0]
        .order_id
        .clone()
}

#[tokio::test]
async fn every_route_refuses_a_rebound_host_or_a_foreign_origin() {
    let running = start().await;
    let client = reqwest::Client::new();
    for path in [
        "/api/orders?status=PENDING",
        "/api/orders/ORD-10001",
        "/mcp",
        "/healthz",
    ] {
        let url = format!("http://{}{path}", running.addr);
        let rebound = client
            .get(&url)
            .header("Host", format!("attacker.example:{}", running.addr.port()))
            .send()
            .await
            .unwrap();
        assert_eq!(rebound.status().as_u16(), 403, "{path}: rebound Host");
        let foreign = client
            .get(&url)
            .header("Origin", "http://attacker.example")
            .send()
            .await
            .unwrap();
        assert_eq!(foreign.status().as_u16(), 403, "{path}: foreign Origin");
    }
    let ok = client
        .get(format!("http://{}/api/orders/ORD-10001", running.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    let bad_status = client
        .get(format!("http://{}/api/orders?status=LOST", running.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(
        bad_status.status().as_u16(),
        400,
        "a bad status is bad input"
    );
}

#[tokio::test]
async fn an_answer_nobody_asked_for_is_not_honoured() {
    let running = start().await;
    // No requestState: the answer cannot belong to a question this server asked.
    let body = modern_call(
        1,
        "cancel_order",
        json!({"orderId": "ORD-10002"}),
        json!({"inputResponses": yes()}),
    );
    let (status, answer) = post(running.addr, &body, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    assert_eq!(status_of(&running, "ORD-10002").await, "PENDING");

    // With a real round's state, an answer under a key that round did not ask is not read.
    let state = answer["result"]["requestState"].as_str().unwrap();
    let body = modern_call(
        2,
        "cancel_order",
        json!({"orderId": "ORD-10002"}),
        json!({"requestState": state, "inputResponses": {"other": yes()["confirm"]}}),
    );
    let (_, answer) = post(running.addr, &body, &[]).await;
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    assert_eq!(status_of(&running, "ORD-10002").await, "PENDING");
}

#[tokio::test]
async fn a_round_answers_once() {
    let running = start().await;
    let order = first_with(&running, "PROCESSING").await;
    let first = modern_call(1, "cancel_order", json!({"orderId": order}), json!({}));
    let (_, round) = post(running.addr, &first, &[]).await;
    let state = round["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = modern_call(
        2,
        "cancel_order",
        json!({"orderId": order}),
        json!({"requestState": state, "inputResponses": yes()}),
    );
    let (_, done) = post(running.addr, &retry, &[]).await;
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("is cancelled"),
        "{done}"
    );
    // The same state and yes again: refused before the body runs.
    let (status, replayed) = post(running.addr, &retry, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    assert!(
        replayed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already been used"),
        "{replayed}"
    );
}

#[tokio::test]
async fn a_cancelled_order_stays_cancelled() {
    let running = start().await;
    // Cancelled in the seed, with a refund started.
    let order = first_with(&running, "CANCELLED").await;
    let body = modern_call(
        1,
        "update_order_status",
        json!({"orderId": order, "newStatus": "SHIPPED"}),
        json!({}),
    );
    let (_, answer) = post(running.addr, &body, &[]).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("CANCELLED and stays so"),
        "{answer}"
    );
    assert_eq!(status_of(&running, &order).await, "CANCELLED");
}

#[tokio::test]
async fn malformed_json_rpc_gets_json_errors() {
    let running = start().await;
    let client = reqwest::Client::new();
    let send = |body: Vec<u8>| {
        client
            .post(format!("http://{}/mcp", running.addr))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .body(body)
            .send()
    };
    let cases: Vec<(Vec<u8>, i64)> = vec![
        (b"null".to_vec(), -32600),
        (b"[]".to_vec(), -32600),
        (b"{}".to_vec(), -32600),
        (
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec(),
            -32600,
        ),
        (
            br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#.to_vec(),
            -32600,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}"#.to_vec(),
            -32600,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xc3\x28\"}}"
                .to_vec(),
            -32700,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\udc00"}}"#.to_vec(),
            -32700,
        ),
        (
            format!("{}1{}", "[".repeat(5000), "]".repeat(5000)).into_bytes(),
            -32700,
        ),
        (
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_order","arguments":"ORD-10001"}}"#
                .to_vec(),
            -32602,
        ),
    ];
    for (body, code) in cases {
        let shown = String::from_utf8_lossy(&body)
            .chars()
            .take(60)
            .collect::<String>();
        let response = send(body).await.unwrap();
        assert_eq!(response.status().as_u16(), 400, "{shown}");
        assert_eq!(
            response.headers()["content-type"],
            "application/json",
            "{shown}"
        );
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["error"]["code"], code, "{shown}: {answer}");
    }
}

#[tokio::test]
async fn with_tokens_every_route_needs_one_and_tasks_belong_to_their_principal() {
    let tokens = Tokens::parse(&format!(
        "desk={}\nother={}\n",
        "d".repeat(40),
        "o".repeat(40)
    ))
    .unwrap();
    let running = start_with(HttpOptions::default(), Some(tokens)).await;
    let desk = format!("Bearer {}", "d".repeat(40));
    let other = format!("Bearer {}", "o".repeat(40));
    let client = reqwest::Client::new();
    let basic = format!("Basic {}", "d".repeat(40));
    for auth in [
        None,
        Some("Bearer wrong"),
        Some(basic.as_str()),
        Some("Bearer"),
    ] {
        let mut request = client.get(format!("http://{}/api/orders/ORD-10001", running.addr));
        if let Some(auth) = auth {
            request = request.header("Authorization", auth);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 401, "{auth:?}");
        // Every refusal names the protected-resource metadata, with a token file too.
        assert_eq!(
            response.headers()["www-authenticate"],
            "Bearer resource_metadata=\"http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp\"",
            "{auth:?}"
        );
    }
    let metadata: Value = json_answer(client.get(format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        running.addr
    )))
    .await;
    assert_eq!(metadata["resource"], TOKEN_RESOURCE, "{metadata}");
    assert!(
        metadata.get("authorization_servers").is_none(),
        "{metadata}"
    );
    let body = modern_call(1, "get_order", json!({"orderId": "ORD-10001"}), json!({}));
    let (status, _) = post(running.addr, &body, &[]).await;
    assert_eq!(status, 401, "MCP needs the token too");
    // The load balancer's health check has no token, and needs none: it learns nothing else.
    let health = client
        .get(format!("http://{}/healthz", running.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert_eq!(health.text().await.unwrap(), r#"{"status":"ok"}"#);
    let (status, answer) = post(running.addr, &body, &[("Authorization", &desk)]).await;
    assert_eq!(status, 200, "{answer}");
    // The scheme's letter case does not matter (RFC 7235).
    let lower = format!("bearer {}", "d".repeat(40));
    let (status, answer) = post(running.addr, &body, &[("Authorization", &lower)]).await;
    assert_eq!(status, 200, "{answer}");

    // A task started by `desk` does not exist for `other`.
    let (task_id, meta) = recheck_as(running.addr, &desk).await;
    for (i, method) in ["tasks/get", "tasks/update", "tasks/cancel"]
        .iter()
        .enumerate()
    {
        let request = json!({"jsonrpc": "2.0", "id": 10 + i, "method": method,
            "params": {"taskId": task_id, "inputResponses": {}, "_meta": meta}});
        let (_, theirs) = post(running.addr, &request, &[("Authorization", &other)]).await;
        assert!(
            theirs["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("unknown task")),
            "{method} by another: {theirs}"
        );
        let unknown = json!({"jsonrpc": "2.0", "id": 20 + i, "method": method,
            "params": {"taskId": "no-such-task", "inputResponses": {}, "_meta": meta}});
        let (_, none) = post(running.addr, &unknown, &[("Authorization", &other)]).await;
        assert_eq!(theirs["error"]["code"], none["error"]["code"], "{method}");
    }
    let get = json!({"jsonrpc": "2.0", "id": 30, "method": "tasks/get",
        "params": {"taskId": task_id, "_meta": meta}});
    let (_, mine) = post(running.addr, &get, &[("Authorization", &desk)]).await;
    assert!(mine.get("result").is_some(), "{mine}");
}

/// A recheck started as a task by the holder of `authorization`: the task's id, and the
/// `_meta` a 2026-07-28 request about it carries.
async fn recheck_as(addr: SocketAddr, authorization: &str) -> (String, Value) {
    let mut recheck = modern_call(2, "recheck_shipments", json!({}), json!({}));
    recheck["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let (_, created) = post(addr, &recheck, &[("Authorization", authorization)]).await;
    let task_id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "prober", "version": "0"}
    });
    (task_id, meta)
}

/// Knowing one caller (the demo's desk) and everyone else anonymously: no token is served,
/// a wrong one is refused, and the known caller's tasks are its own (an anonymous caller who
/// learnt a task id reaches nothing).
#[tokio::test]
async fn knowing_the_desk_serves_others_anonymously_but_not_its_tasks() {
    let known = orders::app::Config::default()
        .knowing("127.0.0.1:8080".parse().unwrap(), "desk", &"d".repeat(40))
        .unwrap();
    let running = start_signed_in(HttpOptions::default(), known.sign_in).await;
    let desk = format!("Bearer {}", "d".repeat(40));
    let get = modern_call(1, "get_order", json!({"orderId": "ORD-10001"}), json!({}));
    let (status, anonymous) = post(running.addr, &get, &[]).await;
    assert_eq!(status, 200, "{anonymous}");
    assert!(anonymous.get("result").is_some(), "{anonymous}");
    let wrong = format!("Bearer {}", "w".repeat(40));
    let (status, _) = post(running.addr, &get, &[("Authorization", &wrong)]).await;
    assert_eq!(status, 401);
    let (task_id, meta) = recheck_as(running.addr, &desk).await;
    let task_get = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
        "params": {"taskId": task_id, "_meta": meta}});
    let (_, theirs) = post(running.addr, &task_get, &[]).await;
    assert!(
        theirs["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown task")),
        "an anonymous tasks/get: {theirs}"
    );
    let (_, mine) = post(running.addr, &task_get, &[("Authorization", &desk)]).await;
    assert!(mine.get("result").is_some(), "{mine}");
}

#[tokio::test]
async fn beyond_loopback_the_service_refuses_to_start_without_tokens() {
    let config = orders::app::Config {
        database: Some("sqlite::memory:".into()),
        ..Default::default()
    };
    // Knowing one caller but serving everyone else anonymously is no sign-in either.
    let knowing = config
        .clone()
        .knowing("127.0.0.1:9".parse().unwrap(), "desk", &"d".repeat(40))
        .unwrap();
    for config in [config, knowing] {
        let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
        let error = orders::app::serve_http(listener, &config, CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("without authentication"),
            "{error}"
        );
    }
}

async fn initialize(addr: SocketAddr) -> (u16, Option<String>) {
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "prober", "version": "0"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), session)
}

#[tokio::test]
async fn sessions_are_capped_and_unknown_ones_are_not_found() {
    let options = HttpOptions {
        max_sessions: 5,
        ..HttpOptions::default()
    };
    let running = start_with(options, None).await;
    let mut opened = Vec::new();
    for _ in 0..5 {
        let (status, session) = initialize(running.addr).await;
        assert_eq!(status, 200);
        opened.push(session.unwrap());
    }
    for _ in 0..20 {
        let (status, session) = initialize(running.addr).await;
        assert_eq!(status, 503, "beyond the cap");
        assert_eq!(session, None);
    }
    let client = reqwest::Client::new();
    let delete = |id: String| {
        client
            .delete(format!("http://{}/mcp", running.addr))
            .header("mcp-session-id", id)
            .header("MCP-Protocol-Version", "2025-11-25")
            .send()
    };
    assert_eq!(
        delete("no-such-session".into())
            .await
            .unwrap()
            .status()
            .as_u16(),
        404
    );
    let first = opened.remove(0);
    // 204, not rmcp's 202: the Python SDK takes only 200 or 204 (issue 76).
    assert_eq!(delete(first.clone()).await.unwrap().status().as_u16(), 204);
    assert_eq!(
        delete(first).await.unwrap().status().as_u16(),
        404,
        "deleted twice"
    );
    let (status, _) = initialize(running.addr).await;
    assert_eq!(status, 200, "a closed session frees its place");
}

#[tokio::test]
async fn a_thousand_idle_sockets_do_not_lock_out_a_client() {
    // A common default: 1,024 open files. The server raises its soft limit when it starts.
    let (_, hard) = rlimit::Resource::NOFILE.get().unwrap();
    rlimit::Resource::NOFILE.set(1024.min(hard), hard).unwrap();
    let running = start().await;
    let mut idle = Vec::new();
    for _ in 0..1_100 {
        idle.push(tokio::net::TcpStream::connect(running.addr).await.unwrap());
    }
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        reqwest::get(format!("http://{}/api/orders/ORD-10001", running.addr)),
    )
    .await
    .expect("a new client is served while 1,100 sockets sit idle")
    .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    drop(idle);
}

#[tokio::test]
async fn a_second_request_with_an_id_still_in_flight_is_refused() {
    let running = start().await;
    let client = reqwest::Client::new();
    let url = format!("http://{}/mcp", running.addr);
    let session = backchannel::testing::open_2025_session(
        client.post(&url),
        json!({"elicitation": {"form": {}}}),
    )
    .await;
    let post = |body: Value| {
        client
            .post(&url)
            .header("Accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("MCP-Protocol-Version", "2025-11-25")
            .json(&body)
            .send()
    };
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .unwrap();
    let order = first_with(&running, "PENDING").await;
    let cancel = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "cancel_order", "arguments": {"orderId": order}}});
    // The first waits for the person's answer, so it stays in flight.
    let first = post(cancel.clone()).await.unwrap();
    assert_eq!(first.status().as_u16(), 200);
    let second = post(cancel).await.unwrap();
    assert_eq!(second.status().as_u16(), 400);
    let answer: Value = second.json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], 7);
    drop(first);
    assert_eq!(status_of(&running, &order).await, "PENDING");
}

/// The resource the OAuth tests' order service is configured with: not its listen address, so
/// nothing can pass by naming the address a request reached.
const RESOURCE: &str = "https://orders.example/mcp";

/// An authorization server's introspection endpoint (RFC 7662) over real HTTP: `good` is active
/// for [`RESOURCE`], `listed` names it among other audiences, `elsewhere` is active for the
/// order service's own loopback address on another port (a token meant for another server on
/// an allowed name), `no-audience` names none, `expired` is past its time, and anything else is
/// inactive. Counts the questions it is asked.
async fn introspection_server(
    elsewhere: std::sync::Arc<std::sync::Mutex<String>>,
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> backchannel::testing::Served {
    let endpoint = move |body: String| {
        // The form is `token=...`; the tokens here need no decoding.
        let token = body.strip_prefix("token=").map(str::to_owned);
        let elsewhere = elsewhere.lock().unwrap().clone();
        asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let later = now + 3600;
            axum::Json(match token.as_deref() {
                Some("good") => {
                    json!({"active": true, "sub": "ana", "exp": later, "aud": RESOURCE})
                }
                Some("listed") => json!({"active": true, "sub": "luis", "exp": later,
                    "aud": ["http://other.example/mcp", format!("{RESOURCE}/")]}),
                Some("elsewhere") => {
                    json!({"active": true, "sub": "ana", "exp": later, "aud": elsewhere})
                }
                Some("no-audience") => json!({"active": true, "sub": "ana", "exp": later}),
                // A client registered under a person's name, with no subject of its own.
                Some("client-only") => {
                    json!({"active": true, "client_id": "ana", "exp": later, "aud": RESOURCE})
                }
                Some("slashes") => json!({"active": true, "sub": "ana", "exp": later,
                    "aud": format!("{RESOURCE}//")}),
                Some("expired") => {
                    json!({"active": true, "sub": "ana", "exp": now - 1, "aud": RESOURCE})
                }
                _ => json!({"active": false}),
            })
        }
    };
    backchannel::testing::serve_with(
        |_stop| axum::Router::new().route("/introspect", axum::routing::post(endpoint)),
        &HttpOptions::default(),
    )
    .await
}

#[tokio::test]
async fn with_an_oauth_issuer_tokens_are_checked_with_it_for_the_configured_resource() {
    let elsewhere = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let issuer = introspection_server(elsewhere.clone(), asked.clone()).await;
    let oauth = ResourceServer::oauth(
        RESOURCE,
        "order-service",
        "http://issuer.example",
        Some(&issuer.url("/introspect")),
    )
    .await
    .unwrap();
    let store = Store::open(&crate::common::fresh_database().await)
        .await
        .unwrap();
    let service = OrderService::new(store, ServiceConfig::default());
    let oauth = std::sync::Arc::new(oauth);
    let served = backchannel::testing::serve_with(
        |stop| {
            let config = orders::app::Config {
                sign_in: Some(oauth),
                ..Default::default()
            };
            orders::app::router(service, &config, stop).unwrap()
        },
        &HttpOptions::default(),
    )
    .await;
    let addr = served.addr;
    // Another server on the same allowed name, another port: a token issued for it.
    let other_port = if addr.port() == 65535 {
        1024
    } else {
        addr.port() + 1
    };
    let other_host = format!("127.0.0.1:{other_port}");
    *elsewhere.lock().unwrap() = format!("http://{other_host}/mcp");
    let body = modern_call(1, "get_order", json!({"orderId": "ORD-10001"}), json!({}));

    // Without a token: 401, and the challenge names the metadata of the configured resource,
    // which names the issuer.
    let client = reqwest::Client::new();
    let refused = client
        .post(format!("http://{addr}/mcp"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
    assert_eq!(
        challenge,
        "Bearer resource_metadata=\"https://orders.example/.well-known/oauth-protected-resource/mcp\""
    );
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let metadata: Value = json_answer(
            client
                .get(format!("http://{addr}{path}"))
                .header("Host", &other_host),
        )
        .await;
        assert_eq!(metadata["resource"], RESOURCE, "whatever Host says");
        assert_eq!(
            metadata["authorization_servers"],
            json!(["http://issuer.example"])
        );
    }

    // Refused: not a token, past its time, meant for another resource (whatever `Host` the
    // request names, the other server's included), meant for no resource in particular, or for
    // the resource but with more than one trailing slash.
    for token in ["nonsense", "expired", "elsewhere", "no-audience", "slashes"] {
        let auth = format!("Bearer {token}");
        for host in [addr.to_string(), other_host.clone()] {
            let (status, answer) =
                post(addr, &body, &[("Authorization", &auth), ("Host", &host)]).await;
            assert_eq!(status, 401, "{token} with Host {host}: {answer}");
        }
        let rest = client
            .get(format!("http://{addr}/api/orders/ORD-10001"))
            .header("Authorization", &auth)
            .header("Host", &other_host)
            .send()
            .await
            .unwrap();
        assert_eq!(rest.status().as_u16(), 401, "{token} on REST");
    }
    // A token of a client with no subject stands for that client (`client:ana`, never ana:
    // issue 71, finding 4), and is served as it.
    for token in ["good", "listed", "client-only"] {
        let auth = format!("Bearer {token}");
        let (status, answer) = post(addr, &body, &[("Authorization", &auth)]).await;
        assert_eq!(status, 200, "{token}: {answer}");
        assert!(answer.to_string().contains("ORD-10001"), "{answer}");
    }
    // The answer for a good token is kept, and so is a refusal for a while: asking again
    // costs the issuer nothing.
    let before = asked.load(std::sync::atomic::Ordering::SeqCst);
    for token in ["good", "elsewhere", "no-audience"] {
        let auth = format!("Bearer {token}");
        let (status, _) = post(addr, &body, &[("Authorization", &auth)]).await;
        assert_eq!(status, if token == "good" { 200 } else { 401 }, "{token}");
    }
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), before);
}
