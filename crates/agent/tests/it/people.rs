//! A desk with people: each signs in, and every conversation, question and answer is theirs.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use agent::desk::DeskConfig;
use backchannel::Revision;
use serde_json::{Value, json};

use crate::common::{post_as, status_as};

/// A people file with ana and ben (passwords `ana-password`, `ben-password`).
fn people_file(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("desk-people-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    agent::people::add(&path, "ana", "ana-password").unwrap();
    agent::people::add(&path, "ben", "ben-password").unwrap();
    path
}

/// Sign in at `url`: the status, and the session's `Cookie` header when it was set.
async fn sign_in(url: &str, name: &str, password: &str) -> (u16, Option<String>) {
    let response = reqwest::Client::new()
        .post(format!("{url}api/sign-in"))
        .json(&json!({"name": name, "password": password}))
        .send()
        .await
        .unwrap();
    let cookie = response
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .map(|set| {
            let set = set.to_str().unwrap();
            assert!(
                set.contains("HttpOnly") && set.contains("SameSite=Strict"),
                "{set}"
            );
            set.split(';').next().unwrap().to_owned()
        });
    (response.status().as_u16(), cookie)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_person_signs_in_and_answers_only_their_own_questions() {
    let file = people_file("binding");
    let demo = crate::common::start(
        crate::common::orders_in_memory(Duration::ZERO),
        DeskConfig {
            protocol: Some(Revision::V2026_07_28),
            people: Some(agent::people::People::load(&file).unwrap()),
            ..DeskConfig::default()
        },
    )
    .await;
    let url = demo.url.clone();

    // Nobody signed in: no conversation, and the page is sent to the sign-in page.
    let anonymous = reqwest::Client::new()
        .post(format!("{url}api/conversations"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    assert_eq!(
        anonymous.json::<Value>().await.unwrap()["signIn"],
        "/signin"
    );
    let page = reqwest::get(format!("{url}signin")).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("id=\"signin-form\""));

    // Nor the desk's data: orders and refund e-mails are for people signed in.
    let orders = reqwest::get(format!("{url}api/orders?status=PENDING"))
        .await
        .unwrap();
    assert_eq!(orders.status(), 401);
    let refund = reqwest::Client::new()
        .post(format!("{url}api/refund-email"))
        .json(&json!({"orderId": "ORD-10001", "reason": "faulty"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refund.status(), 401);

    assert_eq!(sign_in(&url, "ana", "ben-password").await, (401, None));
    assert_eq!(sign_in(&url, "carla", "ana-password").await, (401, None));
    let (status, ana) = sign_in(&url, "ana", "ana-password").await;
    assert_eq!(status, 200);
    let ana = ana.unwrap();
    let ben = sign_in(&url, "ben", "ben-password").await.1.unwrap();
    let me: Value = crate::common::json_answer(
        reqwest::Client::new()
            .get(format!("{url}api/me"))
            .header(reqwest::header::COOKIE, &ana),
    )
    .await;
    assert_eq!(me, json!({"person": "ana", "people": true}));
    let orders = reqwest::Client::new()
        .get(format!("{url}api/orders?status=PENDING"))
        .header(reqwest::header::COOKIE, &ana)
        .send()
        .await
        .unwrap();
    assert_eq!(orders.status(), 200);

    // Ana's conversation and question.
    let (_, started) = post_as(&url, "api/conversations", &ana, Value::Null).await;
    let conversation = started["conversationId"].as_str().unwrap().to_owned();
    let stream = reqwest::Client::new()
        .get(format!("{url}api/events?conversationId={conversation}"))
        .header(reqwest::header::COOKIE, &ana)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let (mut events, secret) = crate::common::Events::from_response(stream).await;
    let asking = tokio::spawn({
        let (url, ana, conversation) = (url.clone(), ana.clone(), conversation.clone());
        async move {
            post_as(
                &url,
                "api/chat",
                &ana,
                json!({"conversationId": conversation, "message": "cancel ORD-10002"}),
            )
            .await
        }
    });
    let question = events.next_of("confirmation").await;
    let question_id = question["id"].as_str().unwrap();

    // Ben knows all of it and can do none of it.
    let answer = json!({"secret": secret, "confirmed": true});
    let path = format!("api/confirmations/{question_id}");
    assert_eq!(post_as(&url, &path, &ben, answer.clone()).await.0, 403);
    let chat = json!({"conversationId": conversation, "message": "cancel ORD-10008"});
    assert_eq!(post_as(&url, "api/chat", &ben, chat).await.0, 403);
    let resumed = json!({"conversationId": conversation});
    let (_, his) = post_as(&url, "api/conversations", &ben, resumed).await;
    assert_eq!(his["resumed"], false, "Ben gets a conversation of his own");
    let stream = reqwest::Client::new()
        .get(format!("{url}api/events?conversationId={conversation}"))
        .header(reqwest::header::COOKIE, &ben)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 403);
    assert_eq!(status_as(&url, Some(&ana), "ORD-10002").await, "PENDING");

    // Ana answers; then she signs out, and her session opens nothing any more.
    assert_eq!(post_as(&url, &path, &ana, answer).await.0, 204);
    let (status, reply) = asking.await.unwrap();
    assert_eq!(status, 200);
    assert!(
        reply["reply"]
            .as_str()
            .unwrap()
            .contains("Order ORD-10002 is cancelled"),
        "{reply}"
    );
    assert_eq!(status_as(&url, Some(&ana), "ORD-10002").await, "CANCELLED");
    assert_eq!(
        post_as(&url, "api/sign-out", &ana, Value::Null).await.0,
        204
    );
    let chat = json!({"conversationId": conversation, "message": "where is ORD-10001?"});
    assert_eq!(post_as(&url, "api/chat", &ana, chat).await.0, 401);
    let _ = std::fs::remove_file(&file);
}

/// The real binary: with a people file it names the signed-in person to the order service
/// (its audit line), and without one it is the terminal's user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_order_service_hears_the_signed_in_persons_name() {
    let file = people_file("audit");
    let mut demo = tokio::process::Command::new(env!("CARGO_BIN_EXE_support-agent"));
    demo.args([
        "demo",
        "--listen",
        "127.0.0.1:0",
        "--orders-listen",
        "127.0.0.1:0",
    ])
    .args([
        "--database",
        "sqlite::memory:",
        "--no-knowledge-base",
        "--people",
    ])
    .arg(&file)
    .env("USER", "the-terminals-user");
    let (_demo, mut lines) = crate::common::spawn_with_stderr(&mut demo);
    let opened =
        crate::common::after(&mut lines, "Support Desk demo: open ", "the demo's address").await;
    let url = opened.split_whitespace().next().unwrap().to_owned();
    let ben = sign_in(&url, "ben", "ben-password").await.1.unwrap();
    let (_, started) = post_as(&url, "api/conversations", &ben, Value::Null).await;
    let conversation = started["conversationId"].as_str().unwrap();
    let chat = json!({"conversationId": conversation, "message": "where is ORD-10001?"});
    let (status, reply) = post_as(&url, "api/chat", &ben, chat).await;
    assert_eq!(status, 200, "{reply}");
    let audit = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the audit line");
            if line.contains("get_order ORD-10001 requested by") {
                return line;
            }
        }
    })
    .await
    .expect("the order service wrote its audit line");
    assert!(audit.ends_with("requested by ben"), "{audit}");
    let _ = std::fs::remove_file(&file);
}

/// Finding 8 of issue 71: `/metrics` on a desk with people was open to anyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_people_metrics_are_for_signed_in_people_only() {
    let file = people_file("metrics");
    let demo = crate::common::start(
        crate::common::orders_in_memory(Duration::ZERO),
        DeskConfig {
            people: Some(agent::people::People::load(&file).unwrap()),
            metrics: true,
            ..DeskConfig::default()
        },
    )
    .await;
    let url = demo.url.clone();
    let anonymous = reqwest::get(format!("{url}metrics")).await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let (status, ana) = sign_in(&url, "ana", "ana-password").await;
    assert_eq!(status, 200);
    let signed_in = reqwest::Client::new()
        .get(format!("{url}metrics"))
        .header(reqwest::header::COOKIE, ana.unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 200);
    assert!(
        signed_in.headers()[reqwest::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let _ = std::fs::remove_file(&file);
}

/// Issue 71 (information): session cookies never carried `Secure`, even for a desk browsers
/// reach over `https:`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_desk_reached_over_https_sets_only_secure_cookies() {
    let file = people_file("secure");
    for (callback, secure) in [
        (Some("https://desk.example/oauth/callback"), true),
        (None, false),
    ] {
        let demo = crate::common::start(
            crate::common::orders_in_memory(Duration::ZERO),
            DeskConfig {
                people: Some(agent::people::People::load(&file).unwrap()),
                sign_in_callback: callback.map(str::to_owned),
                ..DeskConfig::default()
            },
        )
        .await;
        let response = reqwest::Client::new()
            .post(format!("{}api/sign-in", demo.url))
            .json(&json!({"name": "ana", "password": "ana-password"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let set = response.headers()[reqwest::header::SET_COOKIE]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(set.contains("; Secure"), secure, "{callback:?}: {set}");
    }
    let _ = std::fs::remove_file(&file);
}

/// docs/desk.md's command for a desk with people beyond loopback, on loopback (tests listen on
/// loopback only): with a people file and `--allow-host`, the desk answers the allowed name and
/// refuses any other, and says it has people.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_desk_with_people_answers_the_name_it_is_allowed_and_no_other() {
    let file = people_file("allowed");
    let mut web = tokio::process::Command::new(env!("CARGO_BIN_EXE_support-agent"));
    web.args(["web", "--people"])
        .arg(&file)
        .args(["--listen", "127.0.0.1:0", "--allow-host", "desk.example"])
        .args([
            "--orders",
            "http://127.0.0.1:9/mcp",
            "--database",
            "sqlite::memory:",
        ])
        .arg("--no-knowledge-base");
    let (_web, mut lines) = crate::common::spawn_with_stderr(&mut web);
    let url = crate::common::after(
        &mut lines,
        "Support Desk web UI: open ",
        "the desk's address",
    )
    .await
    .trim()
    .to_owned();
    let as_named = |host: &'static str| {
        let url = url.clone();
        async move {
            let response = reqwest::Client::new()
                .get(format!("{url}api/me"))
                .header(reqwest::header::HOST, host)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (status, me) = as_named("desk.example").await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["people"], true, "{me}");
    assert_eq!(as_named("elsewhere.example").await.0, 403);
    let _ = std::fs::remove_file(&file);
}
