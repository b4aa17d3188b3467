//! The HTTP server on a real socket (port 0): GraphQL and MCP on one port, sign-in by bearer
//! token on both (bad tokens refused with 401, nothing changed), the Host check, the rate
//! limit on /mcp, and stage-and-confirm bound to the user who staged.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use crate::common::{Client, Db, Model, Person, Revision, call, structured, text_of};
use moviedb::app::{self, Config};
use moviedb::domain::{Role, Subject};
use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::{Value, json};

struct Running {
    addr: SocketAddr,
    db: Db,
    _served: backchannel::testing::Served,
}

async fn start() -> Running {
    let db = Db::new().await;
    let config = Config::default();
    let catalog = db.catalog.clone();
    let served = backchannel::testing::serve_with(
        |stop| app::router(catalog, &config, stop).unwrap(),
        &Config::default().http,
    )
    .await;
    Running {
        addr: served.addr,
        db,
        _served: served,
    }
}

impl Running {
    fn token(&self, user: &str) -> String {
        let role = if user == "admin" {
            Role::Admin
        } else {
            Role::User
        };
        self.db.catalog.keys().issue(user, role, chrono::Utc::now())
    }

    async fn graphql(&self, query: &str, token: Option<&str>) -> (u16, Value) {
        let mut request = reqwest::Client::new()
            .post(format!("http://{}/graphql", self.addr))
            .json(&json!({ "query": query }));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    async fn mcp(
        &self,
        token: &str,
        client: Client,
        wire: Revision,
    ) -> RunningService<RoleClient, Client> {
        let url = format!("http://{}/mcp", self.addr);
        backchannel::testing::connect_http(client, &url, wire, Some(token)).await
    }

    async fn raw_mcp(&self, token: Option<&str>) -> reqwest::Response {
        let url = format!("http://{}/mcp", self.addr);
        crate::common::raw_ping(&url, token).send().await.unwrap()
    }
}

#[tokio::test]
async fn graphql_signs_in_and_serves_graphiql_on_the_same_port() {
    let running = start().await;
    let (status, body) = running
        .graphql(
            r#"mutation { login(input: {username: "mara", password: "password"}) { token } }"#,
            None,
        )
        .await;
    assert_eq!(status, 200);
    let token = body["data"]["login"]["token"].as_str().unwrap().to_owned();
    let (_, list) = running.graphql("{ watchlist { id } }", Some(&token)).await;
    assert_eq!(list["data"]["watchlist"], json!([]));
    let page = reqwest::get(format!("http://{}/graphql", running.addr))
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("graphiql"));
    let bad = reqwest::Client::new()
        .post(format!("http://{}/graphql", running.addr))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(
        body["errors"][0]["extensions"]["classification"],
        "BAD_REQUEST"
    );
    let foreign = reqwest::Client::new()
        .post(format!("http://{}/graphql", running.addr))
        .header("Host", "evil.example")
        .json(&json!({ "query": "{ movie(id: 1) { title } }" }))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status().as_u16(), 403);
}

#[tokio::test]
async fn the_health_check_answers_without_sign_in_behind_the_host_check() {
    let running = start().await;
    let client = reqwest::Client::new();
    let url = format!("http://{}/healthz", running.addr);
    let health = client.get(&url).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert_eq!(health.text().await.unwrap(), r#"{"status":"ok"}"#);
    let rebound = client
        .get(&url)
        .header("Host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 403);
}

#[tokio::test]
async fn malformed_forged_and_expired_tokens_get_401_and_change_nothing() {
    let running = start().await;
    let expired = running.db.catalog.keys().issue(
        "mara",
        Role::User,
        chrono::Utc::now() - chrono::Duration::hours(25),
    );
    let forged = moviedb::auth::TokenKeys::random().issue("admin", Role::Admin, chrono::Utc::now());
    let cases = [
        (
            "not-a-jwt",
            "the bearer token is malformed; sign in again with the login mutation",
        ),
        (
            forged.as_str(),
            "the bearer token's signature is invalid; sign in again with the login mutation",
        ),
        (
            expired.as_str(),
            "the bearer token has expired; sign in again with the login mutation",
        ),
    ];
    for (token, message) in cases {
        let (status, body) = running
            .graphql(
                r#"mutation { addToWatchlist(subject: {movieId: "1"}) { id } }"#,
                Some(token),
            )
            .await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(body["errors"][0]["message"], message);
        assert_eq!(
            body["errors"][0]["extensions"]["classification"],
            "UNAUTHORIZED"
        );
        let response = running.raw_mcp(Some(token)).await;
        assert_eq!(response.status().as_u16(), 401);
        assert!(response.headers().contains_key("www-authenticate"));
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["message"], message);
    }
    let list = running.db.watchlist_of("mara").await;
    assert!(list.is_empty());
}

#[tokio::test]
async fn mcp_calls_act_as_the_token_user_on_both_revisions() {
    let running = start().await;
    for (wire, user) in [
        (Revision::V2025_11_25, "mara"),
        (Revision::V2026_07_28, "dan"),
    ] {
        let client = Client::new(
            Model::Absent,
            Person::Accepts(json!({ "status": "WATCHED" })),
        );
        let service = running
            .mcp(&running.token(user), client.clone(), wire)
            .await;
        let result = service
            .call_tool(call(
                "addToWatchlist",
                json!({ "subject": { "movieId": "61" } }),
            ))
            .await
            .unwrap();
        assert_eq!(
            result.is_error,
            Some(false),
            "{wire:?}: {}",
            text_of(&result)
        );
        assert_eq!(client.questions.lock().unwrap().len(), 1, "{wire:?}");
        service.cancel().await.unwrap();
        let entry = running
            .db
            .catalog
            .watchlist_entry_for(Some(&Db::viewer(user)), Subject::Movie(61))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            entry.status,
            moviedb::domain::WatchStatus::Watched,
            "{wire:?}"
        );
    }
}

/// Stage the removal of watchlist item `item` through `client`: the confirmation token.
async fn staged_removal(client: &RunningService<RoleClient, Client>, item: &str) -> String {
    let staged = client
        .call_tool(call("stageRemoveFromWatchlist", json!({ "itemId": item })))
        .await
        .unwrap();
    let token = &structured(&staged)["confirmationToken"];
    token.as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_staged_removal_is_single_use_and_bound_to_its_user() {
    let running = start().await;
    for wire in Revision::ALL {
        let as_user = running
            .mcp(
                &running.token("user"),
                Client::new(Model::Absent, Person::Absent),
                wire,
            )
            .await;
        let as_admin = running
            .mcp(
                &running.token("admin"),
                Client::new(Model::Absent, Person::Absent),
                wire,
            )
            .await;
        let items = running.db.watchlist_of("user").await;
        let item = items[0].id.to_string();

        // Someone else's item cannot be staged.
        let foreign = as_admin
            .call_tool(call("stageRemoveFromWatchlist", json!({ "itemId": item })))
            .await
            .unwrap();
        assert_eq!(foreign.is_error, Some(true), "{wire:?}");

        let staged = as_user
            .call_tool(call("stageRemoveFromWatchlist", json!({ "itemId": item })))
            .await
            .unwrap();
        let staged = structured(&staged);
        let token = staged["confirmationToken"].as_str().unwrap().to_owned();
        assert!(
            staged["previewMessage"]
                .as_str()
                .unwrap()
                .starts_with(&format!("Will remove watchlist item {item} ("))
        );
        let confirm = |t: &str| call("confirmAction", json!({ "confirmationToken": t }));

        let stolen = as_admin.call_tool(confirm(&token)).await.unwrap();
        assert_eq!(stolen.is_error, Some(true));
        assert_eq!(
            structured(&stolen),
            json!({ "status": "error", "message": "Token was staged by a different user." })
        );
        // The failed attempt spent the token.
        let reused = as_user.call_tool(confirm(&token)).await.unwrap();
        assert_eq!(
            structured(&reused)["message"],
            "Token not found or already used."
        );
        assert_eq!(running.db.watchlist_of("user").await.len(), items.len());

        let token = staged_removal(&as_user, &item).await;
        let done = as_user.call_tool(confirm(&token)).await.unwrap();
        assert_eq!(done.is_error, Some(false), "{wire:?}");
        assert_eq!(
            structured(&done),
            json!({ "status": "ok", "executed": "removeFromWatchlist", "removed": item })
        );
        let again = as_user.call_tool(confirm(&token)).await.unwrap();
        assert_eq!(
            structured(&again)["message"],
            "Token not found or already used."
        );
        assert_eq!(running.db.watchlist_of("user").await.len(), items.len() - 1);
        as_user.cancel().await.unwrap();
        as_admin.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_token_expires_after_a_minute() {
    let db = Db::new().await;
    let server = db.server(Some("user"));
    for wire in Revision::ALL {
        let running = Db::connect(
            server.clone(),
            Client::new(Model::Absent, Person::Absent),
            wire,
        )
        .await;
        let item = db.watchlist_of("user").await[0].id.to_string();
        let token = staged_removal(&running, &item).await;
        // A minute and a second pass on the test clock alone; the call after runs in real time
        // (a database on the network must not see its own timeouts jump).
        tokio::time::pause();
        tokio::time::advance(std::time::Duration::from_secs(61)).await;
        tokio::time::resume();
        let late = running
            .call_tool(call("confirmAction", json!({ "confirmationToken": token })))
            .await
            .unwrap();
        assert_eq!(
            structured(&late),
            json!({ "status": "error", "message": "Token expired." }),
            "{wire:?}"
        );
        assert_eq!(db.watchlist_of("user").await.len(), 3);
        running.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn mcp_allows_sixty_calls_a_minute_per_user() {
    let running = start().await;
    let mara = running.token("mara");
    // The bucket holds 60 and refills one a second, so on a slow machine a few more calls get
    // through before the first refusal: at most one per second that passed.
    let started = std::time::Instant::now();
    let mut allowed = 0;
    let limited = loop {
        let response = running.raw_mcp(Some(&mara)).await;
        if response.status().as_u16() == 429 {
            break response;
        }
        allowed += 1;
        assert!(allowed <= 1_000, "never limited");
    };
    let refilled = started.elapsed().as_secs() + 1;
    assert!(
        (60..=60 + refilled).contains(&allowed),
        "{allowed} calls allowed in {refilled} s"
    );
    assert!(limited.headers().contains_key("retry-after"));
    let body: Value = limited.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Too many MCP calls: the limit is 60 a minute.")
    );
    // Another user, and an anonymous caller (keyed by address), have their own buckets.
    assert_ne!(
        running
            .raw_mcp(Some(&running.token("dan")))
            .await
            .status()
            .as_u16(),
        429
    );
    let anonymous = running.raw_mcp(None).await;
    assert_ne!(anonymous.status().as_u16(), 429);
    let text = anonymous.text().await.unwrap();
    assert!(text.contains("hello, x"), "{text}");
}

/// The value of the sample line `series` (name and labels, as written) in Prometheus text.
fn series(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn metrics_count_rate_limited_calls_by_their_reason() {
    let db = Db::new().await;
    let config = Config {
        metrics: true,
        ..Config::default()
    };
    let catalog = db.catalog.clone();
    let served = backchannel::testing::serve_with(
        |stop| app::router(catalog, &config, stop).unwrap(),
        &Config::default().http,
    )
    .await;
    let running = Running {
        addr: served.addr,
        db,
        _served: served,
    };
    let metrics = || async {
        let response = reqwest::get(format!("http://{}/metrics", running.addr))
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        response.text().await.unwrap()
    };
    let limited = r#"mcp_server_refused_requests_total{reason="rate_limit"}"#;
    // One registry per process, shared with the tests running beside this one: counters only
    // go up, so this one's calls are seen as increases.
    let before = series(&metrics().await, limited);
    let ana = running.token("ana");
    let mut calls = 0;
    while running.raw_mcp(Some(&ana)).await.status().as_u16() != 429 {
        calls += 1;
        assert!(calls <= 1_000, "never limited");
    }
    let after = metrics().await;
    assert!(series(&after, limited) >= before + 1.0, "{after}");
    let served = r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",mcp_protocol_version="2026-07-28"}"#;
    // (Exact counts per call are the order service's metrics test, on a process of its own.)
    assert!(series(&after, served) >= 1.0, "{after}");
}

#[tokio::test]
async fn a_question_asked_of_one_user_cannot_be_answered_by_another() {
    use rmcp::model::CallToolResponse;
    let running = start().await;
    let client = || {
        Client::new(
            Model::Absent,
            Person::Accepts(json!({ "status": "WATCHED" })),
        )
    };
    let mara = running
        .mcp(&running.token("mara"), client(), Revision::V2026_07_28)
        .await;
    let dan = running
        .mcp(&running.token("dan"), client(), Revision::V2026_07_28)
        .await;
    let args = json!({ "subject": { "movieId": "47" } });
    let CallToolResponse::InputRequired(round) = mara
        .call_tool_once(call("addToWatchlist", args.clone()))
        .await
        .unwrap()
    else {
        panic!("expected the watch-status question");
    };
    let mut retry = call("addToWatchlist", args);
    retry.request_state = round.request_state.clone();
    retry.input_responses = Some(
        [(
            "watch-status".to_owned(),
            json!({ "action": "accept", "content": { "status": "WATCHED" } }),
        )]
        .into(),
    );
    let stolen = dan.call_tool_once(retry.clone()).await;
    let error = stolen.unwrap_err().to_string();
    assert!(
        error.contains("requestState failed verification"),
        "{error}"
    );
    assert!(
        running
            .db
            .catalog
            .watchlist_entry_for(Some(&Db::viewer("dan")), Subject::Movie(47))
            .await
            .unwrap()
            .is_none()
    );
    let CallToolResponse::Complete(done) = mara.call_tool_once(retry).await.unwrap() else {
        panic!("expected a result");
    };
    assert_eq!(done.is_error, Some(false), "{}", text_of(&done));
    mara.cancel().await.unwrap();
    dan.cancel().await.unwrap();
}

#[test]
fn stdio_refuses_an_unknown_user_clearly() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_moviedb"))
        .args(["stdio", "--user", "ghost", "--database", "sqlite::memory:"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        output.stdout.is_empty(),
        "stdout carries only protocol messages"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("there is no account named 'ghost'; pass --user with an existing username"),
        "{stderr}"
    );
}

#[tokio::test]
async fn review_added_arrives_over_a_websocket_subscription() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let running = start().await;
    let (mut socket, _) = {
        let mut request = format!("ws://{}/graphql", running.addr)
            .into_client_request()
            .unwrap();
        request.headers_mut().insert(
            "Sec-WebSocket-Protocol",
            "graphql-transport-ws".parse().unwrap(),
        );
        tokio_tungstenite::connect_async(request).await.unwrap()
    };
    async fn next_text(
        socket: &mut (
                 impl futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>>
                 + Unpin
             ),
    ) -> Value {
        loop {
            if let Message::Text(text) = socket.next().await.unwrap().unwrap() {
                return serde_json::from_str(&text).unwrap();
            }
        }
    }
    socket
        .send(Message::text(
            json!({ "type": "connection_init" }).to_string(),
        ))
        .await
        .unwrap();
    assert_eq!(next_text(&mut socket).await["type"], "connection_ack");
    let subscribe = json!({
        "id": "1",
        "type": "subscribe",
        "payload": { "query": "subscription { reviewAdded(movieId: \"5\") { title movieId review { score comment user { username } } } }" }
    });
    socket
        .send(Message::text(subscribe.to_string()))
        .await
        .unwrap();
    // Wait until the server holds the subscription before writing reviews.
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while running.db.catalog.review_subscribers() == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    let token = running.token("mara");
    for (movie, comment) in [
        ("14", "Not this one"),
        ("5", "Life, like a box of chocolates"),
    ] {
        let (status, body) = running
            .graphql(
                &format!(r#"mutation {{ createReview(input: {{subject: {{movieId: "{movie}"}}, score: 9, comment: "{comment}"}}) {{ id }} }}"#),
                Some(&token),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let event = next_text(&mut socket).await;
    assert_eq!(event["type"], "next", "{event}");
    assert_eq!(
        event["payload"]["data"]["reviewAdded"],
        json!({
            "title": "Forrest Gump",
            "movieId": "5",
            "review": { "score": 9, "comment": "Life, like a box of chocolates", "user": { "username": "mara" } }
        })
    );
    let foreign = reqwest::Client::new()
        .get(format!("http://{}/graphql", running.addr))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status().as_u16(), 403);
}

#[tokio::test]
async fn a_loopback_front_end_may_call_graphql_and_others_may_not() {
    let running = start().await;
    let url = format!("http://{}/graphql", running.addr);
    let client = reqwest::Client::new();
    let preflight = client
        .request(reqwest::Method::OPTIONS, &url)
        .header("Origin", "http://localhost:5173")
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "content-type, authorization",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status().as_u16(), 204);
    let headers = preflight.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "http://localhost:5173"
    );
    assert_eq!(headers["access-control-allow-credentials"], "true");
    assert!(
        headers["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("authorization")
    );
    let post = client
        .post(&url)
        .header("Origin", "http://localhost:5173")
        .json(&json!({ "query": "{ movie(id: 1) { title } }" }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        post.headers()["access-control-allow-origin"],
        "http://localhost:5173"
    );
    let body: Value = post.json().await.unwrap();
    assert_eq!(body["data"]["movie"]["title"], "The Shawshank Redemption");
    let foreign = client
        .request(reqwest::Method::OPTIONS, &url)
        .header("Origin", "https://evil.example")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status().as_u16(), 403);
    assert!(
        !foreign
            .headers()
            .contains_key("access-control-allow-origin")
    );
}

#[tokio::test]
async fn the_front_door_and_graphiql_load_everything_from_the_server_itself() {
    let running = start().await;
    let base = format!("http://{}", running.addr);
    let client = reqwest::Client::new();
    let front = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(front.status().as_u16(), 200);
    let front = front.text().await.unwrap();
    assert!(front.contains(r#"href="/graphql""#), "{front}");
    assert!(
        front.contains("login(input: { username:"),
        "the sign-in shape"
    );
    let page = client
        .get(format!("{base}/graphql"))
        .header("Accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let page = page.text().await.unwrap();
    let mut loaded = Vec::new();
    for attribute in ["src=\"", "href=\""] {
        for (at, _) in page.match_indices(attribute) {
            let rest = &page[at + attribute.len()..];
            loaded.push(rest[..rest.find('"').unwrap()].to_owned());
        }
    }
    assert!(loaded.len() >= 5, "{loaded:?}");
    for path in &loaded {
        assert!(
            path.starts_with('/') && !path.starts_with("//"),
            "{path} does not come from this server"
        );
        let asset = client.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(asset.status().as_u16(), 200, "{path}");
        let kind = asset.headers()["content-type"].to_str().unwrap().to_owned();
        let expected = if path.ends_with(".css") {
            "text/css"
        } else {
            "text/javascript"
        };
        assert!(kind.starts_with(expected), "{path}: {kind}");
        assert!(asset.bytes().await.unwrap().len() > 100, "{path}");
    }
}
