//! The gateway with sign-in on its front door: every route needs a token issued for the
//! gateway (a 401 names the protected-resource metadata), what a person starts (a round, a
//! held call, a task, a session) is theirs alone, and no caller's token ever reaches an
//! upstream.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use backchannel::serve::{self, HttpOptions, ResourceServer, Tokens};
use backchannel::testing::{Served, TestServer, serve_with};
use backchannel::{Backchannel, Revision, TaskSupport};
use mcp_gateway::{Gateway, Upstream, quick_config};
use serde_json::{Value, json};

/// Ana's and Ben's tokens in the gateway's token file.
const ANA: &str = "ana-0123456789abcdef0123456789abcdef";
const BEN: &str = "ben-0123456789abcdef0123456789abcdef";

/// The resource the gateway is configured with (what tokens are issued for).
const GATEWAY: &str = "https://gateway.example/mcp";

/// What an upstream received in `Authorization`, one entry per request.
type Seen = Arc<Mutex<Vec<Option<String>>>>;

/// The test server limited to `only`, on a free port, recording the `Authorization` of every
/// request it receives.
async fn upstream(only: Revision) -> (Served, TestServer, Seen) {
    let layer = Backchannel::builder()
        .only_revision(only)
        .task_tool("task_confirm", TaskSupport::Optional)
        .build()
        .unwrap();
    let server = TestServer::new(layer);
    let seen: Seen = Arc::default();
    let (app_server, record) = (server.clone(), seen.clone());
    let options = HttpOptions::default();
    let served = serve_with(
        |stop| {
            serve::router(move || app_server.clone(), &options, stop).layer(
                axum::middleware::from_fn(
                    move |request: axum::extract::Request, next: axum::middleware::Next| {
                        let authorization = request
                            .headers()
                            .get(http::header::AUTHORIZATION)
                            .and_then(|value| value.to_str().ok())
                            .map(str::to_owned);
                        record.lock().unwrap().push(authorization);
                        next.run(request)
                    },
                ),
            )
        },
        &options,
    )
    .await;
    (served, server, seen)
}

/// The gateway in front of `upstream` (speaking `revision` to it), every route behind
/// `sign_in`.
async fn signed_gateway(
    upstream: SocketAddr,
    revision: Revision,
    sign_in: ResourceServer,
) -> (Served, Gateway) {
    signed_gateway_with(upstream, revision, sign_in, |_| {}).await
}

/// [`signed_gateway`] with its upstream's configuration changed by `change`.
async fn signed_gateway_with(
    upstream: SocketAddr,
    revision: Revision,
    sign_in: ResourceServer,
    change: impl FnOnce(&mut backchannel_host::ConnectionConfig),
) -> (Served, Gateway) {
    let upstreams: Vec<Upstream> = vec![format!("test=http://{upstream}/mcp").parse().unwrap()];
    let revisions = BTreeMap::from([("test".to_owned(), revision)]);
    let mut config = quick_config(&upstreams, &revisions).unwrap();
    change(config.connections.get_mut("test").unwrap());
    let gateway = Gateway::open(&config).await.unwrap();
    let options = HttpOptions::default();
    let (front, pass) = (gateway.clone(), gateway.pass_through());
    let sign_in = Arc::new(sign_in);
    // As the binary serves it: the pass-through behind the sign-in.
    let served = serve_with(
        |stop| {
            sign_in.protect(serve::router_passing(
                move || front.clone(),
                &options,
                stop,
                pass,
            ))
        },
        &options,
    )
    .await;
    (served, gateway)
}

fn token_file() -> ResourceServer {
    let tokens = Tokens::parse(&format!("ana={ANA}\nben={BEN}\n")).unwrap();
    ResourceServer::tokens(GATEWAY, "mcp-gateway", tokens).unwrap()
}

/// The `_meta` a 2026-07-28 request carries.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
        "io.modelcontextprotocol/clientInfo": {"name": "prober", "version": "0"}
    })
}

fn modern(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// POST `body` to the gateway with `token` (if any) and `headers`: the status, the session id
/// it names, and the JSON-RPC answer (JSON, or the last answer of an SSE stream).
async fn post(
    gateway: SocketAddr,
    body: &Value,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, Option<String>, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("http://{gateway}/mcp"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.unwrap();
    let answer = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .rfind(|message| message.get("id").is_some())
            .unwrap_or(Value::Null)
    });
    (status, session, answer)
}

/// The standard headers of a 2026-07-28 request (SEP-2243).
fn modern_headers(body: &Value) -> Vec<(&'static str, String)> {
    let mut headers = vec![("MCP-Protocol-Version", "2026-07-28".to_owned())];
    if let Some(method) = body["method"].as_str() {
        headers.push(("Mcp-Method", method.to_owned()));
    }
    if let Some(name) = body["params"]["name"]
        .as_str()
        .or_else(|| body["params"]["taskId"].as_str())
    {
        headers.push(("Mcp-Name", name.to_owned()));
    }
    headers
}

/// POST a 2026-07-28 request as `token`: the status and the answer.
async fn post_modern_as(gateway: SocketAddr, body: &Value, token: &str) -> (u16, Value) {
    let headers = modern_headers(body);
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    let (status, _, answer) = post(gateway, body, Some(token), &headers).await;
    (status, answer)
}

/// POST a 2026-07-28 request, which must be answered.
async fn post_modern(gateway: SocketAddr, body: &Value, token: &str) -> Value {
    let (status, answer) = post_modern_as(gateway, body, token).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// The text of a `tools/call` answer (its result's or its error's).
fn text_of(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .or_else(|| answer["error"]["message"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn no_token_reached(seen: &Seen) {
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty(), "the upstream was reached");
    assert!(
        seen.iter().all(Option::is_none),
        "no Authorization reaches the upstream: {seen:?}"
    );
}

#[tokio::test]
async fn without_a_token_for_the_gateway_every_revision_gets_401_naming_the_metadata() {
    let (served, _server, seen) = upstream(Revision::V2026_07_28).await;
    let (front, _gateway) = signed_gateway(served.addr, Revision::V2026_07_28, token_file()).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "prober", "version": "0"}}});
    let call = modern(2, "tools/call", json!({"name": "confirm", "arguments": {}}));
    let legacy: &[(&str, &str)] = &[];
    let stateless: &[(&str, &str)] = &[("MCP-Protocol-Version", "2026-07-28")];
    for (body, headers) in [(&initialize, legacy), (&call, stateless)] {
        for token in [None, Some("not-a-token"), Some(&ANA[..20])] {
            let response = reqwest::Client::new()
                .post(format!("http://{}/mcp", front.addr))
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream");
            let response = headers.iter().fold(response, |request, (name, value)| {
                request.header(*name, *value)
            });
            let response = match token {
                Some(token) => response.bearer_auth(token),
                None => response,
            };
            let response = response.body(body.to_string()).send().await.unwrap();
            assert_eq!(response.status().as_u16(), 401, "{token:?} {body}");
            assert_eq!(
                response.headers()["www-authenticate"],
                "Bearer resource_metadata=\"https://gateway.example/.well-known/oauth-protected-resource/mcp\""
            );
        }
    }
    let metadata: Value = reqwest::get(format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        front.addr
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(metadata["resource"], GATEWAY);
    assert!(seen.lock().unwrap().iter().all(|seen| seen.is_none()));

    // Signed in, a call goes through; the upstream never sees the token.
    let listed = post_modern(front.addr, &modern(3, "tools/list", json!({})), ANA).await;
    assert!(listed.to_string().contains("confirm"), "{listed}");
    no_token_reached(&seen);
}

/// An introspection endpoint (RFC 7662): `for-gateway` is Ana's token issued for the gateway,
/// `for-upstream` is hers issued for the upstream, `no-audience` names none; anything else is
/// inactive.
async fn introspection(upstream: String) -> Served {
    let endpoint = move |body: String| {
        let upstream = upstream.clone();
        async move {
            let later = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                + 3600;
            let answer = match body.strip_prefix("token=") {
                Some("for-gateway") => {
                    json!({"active": true, "sub": "ana", "exp": later, "aud": GATEWAY})
                }
                Some("for-upstream") => {
                    json!({"active": true, "sub": "ana", "exp": later, "aud": upstream})
                }
                Some("no-audience") => json!({"active": true, "sub": "ana", "exp": later}),
                _ => json!({"active": false}),
            };
            (
                [(http::header::CONTENT_TYPE, "application/json")],
                answer.to_string(),
            )
        }
    };
    serve_with(
        |_stop| axum::Router::new().route("/introspect", axum::routing::post(endpoint)),
        &HttpOptions::default(),
    )
    .await
}

#[tokio::test]
async fn a_token_issued_for_the_upstream_or_for_no_one_is_refused() {
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let (served, _server, seen) = upstream(revision).await;
        let issuer = introspection(served.url("/mcp")).await;
        let sign_in = ResourceServer::oauth(
            GATEWAY,
            "mcp-gateway",
            "http://issuer.example",
            Some(&issuer.url("/introspect")),
        )
        .await
        .unwrap();
        let (front, _gateway) = signed_gateway(served.addr, revision, sign_in).await;
        let list = modern(1, "tools/list", json!({}));
        for token in ["for-upstream", "no-audience", "nonsense"] {
            let (status, answer) = post_modern_as(front.addr, &list, token).await;
            assert_eq!(status, 401, "{token} ({revision} upstream): {answer}");
        }
        let listed = post_modern(front.addr, &list, "for-gateway").await;
        assert!(listed.to_string().contains("confirm"), "{listed}");
        no_token_reached(&seen);
    }
}

/// Ana starts `confirm` and gets a round; Ben, signed in, retries it with her state and an
/// answer: refused, nothing done upstream. Ana's own retry then completes, once.
async fn a_round_is_its_person_s(upstream_revision: Revision) {
    let (served, server, seen) = upstream(upstream_revision).await;
    let (front, _gateway) = signed_gateway(served.addr, upstream_revision, token_file()).await;
    let call = modern(1, "tools/call", json!({"name": "confirm", "arguments": {}}));
    let round = post_modern(front.addr, &call, ANA).await;
    assert_eq!(
        round["result"]["resultType"], "input_required",
        "{upstream_revision}: {round}"
    );
    let state = round["result"]["requestState"].clone();
    let key = round["result"]["inputRequests"]
        .as_object()
        .and_then(|requests| requests.keys().next().cloned())
        .unwrap();
    let answers = json!({key: {"action": "accept", "content": {"confirmed": true}}});
    let retry = modern(
        2,
        "tools/call",
        json!({"name": "confirm", "arguments": {},
            "inputResponses": answers, "requestState": state}),
    );
    let taken = post_modern(front.addr, &retry, BEN).await;
    assert!(
        text_of(&taken).contains("requestState failed verification"),
        "{upstream_revision}: Ben cannot answer Ana's round: {taken}"
    );
    assert_eq!(
        server
            .observed
            .writes
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    let done = post_modern(front.addr, &retry, ANA).await;
    assert_eq!(
        text_of(&done),
        "accepted Confirmation { confirmed: true, note: None }",
        "{upstream_revision}: {done}"
    );
    assert_eq!(
        server
            .observed
            .writes
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    no_token_reached(&seen);
}

#[tokio::test]
async fn a_round_of_a_2026_upstream_is_its_person_s() {
    a_round_is_its_person_s(Revision::V2026_07_28).await;
}

#[tokio::test]
async fn a_held_call_of_a_2025_upstream_is_its_person_s() {
    a_round_is_its_person_s(Revision::V2025_11_25).await;
}

#[tokio::test]
async fn a_task_id_is_its_person_s() {
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let (served, _server, seen) = upstream(revision).await;
        let (front, _gateway) = signed_gateway(served.addr, revision, token_file()).await;
        let call = modern(
            1,
            "tools/call",
            json!({"name": "task_confirm", "arguments": {}}),
        );
        let created = post_modern(front.addr, &call, ANA).await;
        let id = created["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("{revision}: no task: {created}"))
            .to_owned();
        for (n, method) in ["tasks/get", "tasks/update", "tasks/cancel"]
            .into_iter()
            .enumerate()
        {
            let params = json!({"taskId": id, "inputResponses": {}});
            let theirs = post_modern(front.addr, &modern(10 + n as u64, method, params), BEN).await;
            assert!(
                text_of(&theirs).starts_with("unknown task"),
                "{revision}: {method} by Ben: {theirs}"
            );
        }
        let get = modern(20, "tasks/get", json!({"taskId": id}));
        let mine = post_modern(front.addr, &get, ANA).await;
        assert!(mine["result"].is_object(), "{revision}: {mine}");
        no_token_reached(&seen);
    }
}

#[tokio::test]
async fn a_2025_session_is_its_person_s() {
    let (served, _server, seen) = upstream(Revision::V2026_07_28).await;
    let (front, _gateway) = signed_gateway(served.addr, Revision::V2026_07_28, token_file()).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "prober", "version": "0"}}});
    let (status, session, answer) = post(front.addr, &initialize, Some(ANA), &[]).await;
    assert_eq!(status, 200, "{answer}");
    let session = session.expect("a session id");
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(front.addr, &initialized, Some(ANA), &headers).await;
    assert_eq!(status, 202);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, _, answer) = post(front.addr, &list, Some(BEN), &headers).await;
    assert_eq!(status, 404, "Ben cannot use Ana's session: {answer}");
    let (status, _, answer) = post(front.addr, &list, Some(ANA), &headers).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.to_string().contains("confirm"), "{answer}");
    no_token_reached(&seen);
}

#[tokio::test]
async fn an_upstream_gets_the_gateway_s_own_bearer_never_the_caller_s() {
    let dir = std::env::temp_dir().join(format!(
        "gateway-bearer-{}",
        backchannel::testing::random_hex()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bearer");
    std::fs::write(&file, "the-gateway-s-own-token\n").unwrap();
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let (served, _server, seen) = upstream(revision).await;
        let bearer = file.clone();
        let (front, _gateway) = signed_gateway_with(served.addr, revision, token_file(), |c| {
            c.auth = Some(backchannel_host::AuthConfig {
                bearer_file: Some(bearer),
                ..Default::default()
            });
        })
        .await;
        let listed = post_modern(front.addr, &modern(1, "tools/list", json!({})), ANA).await;
        assert!(listed.to_string().contains("confirm"), "{listed}");
        let seen = seen.lock().unwrap().clone();
        assert!(!seen.is_empty());
        assert!(
            seen.iter()
                .all(|seen| seen.as_deref() == Some("Bearer the-gateway-s-own-token")),
            "{revision}: {seen:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn spans_name_the_kind_of_sign_in_never_the_token() {
    use backchannel::testing::otlp::{Collector, SERVER, attribute};
    use tokio::io::AsyncBufReadExt as _;
    let collector = Collector::start().await;
    let (served, _server, _seen) = upstream(Revision::V2026_07_28).await;
    let dir = std::env::temp_dir().join(format!(
        "gateway-spans-{}",
        backchannel::testing::random_hex()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokens");
    std::fs::write(&file, format!("ana={ANA}\n")).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&file)
        .arg("--upstream")
        .arg(format!("test=http://{}/mcp", served.addr))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())
        .env("OTEL_SERVICE_NAME", "gateway-under-test")
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let addr: SocketAddr = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the gateway started");
        if let Some(url) = line.strip_prefix("listening on http://") {
            break url.trim_end_matches("/mcp").parse().unwrap();
        }
    };
    let listed = post_modern(addr, &modern(1, "tools/list", json!({})), ANA).await;
    assert!(listed.to_string().contains("confirm"), "{listed}");
    let span = collector
        .first(|span| span.name == "tools/list" && span.kind == SERVER)
        .await;
    assert_eq!(
        attribute(&span, "mcp.principal.kind").as_deref(),
        Some("token-file")
    );
    let shown = format!("{span:?}");
    assert!(!shown.contains(ANA) && !shown.contains("ana"), "{shown}");
    child.kill().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `mcp-gateway serve --listen 0.0.0.0:0` and what it says on stderr before it exits or says
/// where it listens.
async fn serve_beyond_loopback(extra: &[&str]) -> (Option<i32>, String) {
    use tokio::io::AsyncBufReadExt as _;
    let (served, _server, _seen) = upstream(Revision::V2026_07_28).await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"));
    command
        .args(["serve", "--listen", "0.0.0.0:0", "--upstream"])
        .arg(format!("test=http://{}/mcp", served.addr))
        .args(extra)
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        said.push_str(&line);
        said.push('\n');
        if line.starts_with("listening on") {
            child.kill().await.unwrap();
            return (None, said);
        }
    }
    (child.wait().await.unwrap().code(), said)
}

#[tokio::test]
async fn beyond_loopback_the_gateway_starts_only_with_sign_in() {
    let (code, said) = serve_beyond_loopback(&[]).await;
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("refusing to listen on 0.0.0.0:") && said.contains("--token-file"),
        "{said}"
    );
    let dir = std::env::temp_dir().join(format!("gateway-tokens-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokens");
    std::fs::write(&file, format!("ana={ANA}\n")).unwrap();
    let (code, said) = serve_beyond_loopback(&[
        "--token-file",
        file.to_str().unwrap(),
        "--resource",
        GATEWAY,
    ])
    .await;
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, None, "it started: {said}");
    assert!(said.contains("listening on http://0.0.0.0:"), "{said}");
}
