//! Two desks on one PostgreSQL database, as a team runs them behind a balancer without sticky
//! routing: a browser session made at one is valid at the other, a question asked through one
//! is shown on a page the other serves and answered there (the order cancelled once), and when
//! the desk that follows a task dies (its runtime dropped, as `kill -9` would) the other takes
//! the task over and asks again.
//!
//! They need a PostgreSQL server: `$AGENT_TEST_POSTGRES` names it (`scripts/test-postgres`
//! starts one and runs these tests); without it they say so and check nothing.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use agent::desk::DeskConfig;
use backchannel::Revision;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::Events;

/// The PostgreSQL server the tests may make databases on, if one was named.
fn server() -> Option<String> {
    let server = std::env::var("AGENT_TEST_POSTGRES")
        .ok()
        .filter(|s| !s.is_empty());
    if server.is_none() {
        eprintln!("no $AGENT_TEST_POSTGRES: the desks' cluster tests run in scripts/test-postgres");
    }
    server
}

/// A desk's web UI in a runtime of its own (so that dropping it ends every task of that
/// desk at once, as a killed process's).
struct Desk {
    url: String,
    port: u16,
    runtime: Option<tokio::runtime::Runtime>,
    stop: CancellationToken,
}

impl Desk {
    /// Kill the desk: every task of its runtime is dropped where it stands.
    fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }

    /// The `Cookie` header of the browser session `value` as this desk names its cookie.
    fn cookie(&self, value: &str) -> String {
        format!("desk_session_{}={value}", self.port)
    }
}

impl Drop for Desk {
    fn drop(&mut self) {
        self.stop.cancel();
        self.kill();
    }
}

/// The order service, knowing the desks by one bearer: its URL and the bearer's file.
async fn orders(
    dir: &std::path::Path,
    latency: Duration,
    stop: &CancellationToken,
) -> (String, std::path::PathBuf) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let token = agent::events::random_id();
    let file = dir.join("orders-bearer");
    std::fs::write(&file, &token).unwrap();
    let caller = agent::app::DeskCaller { addr, token };
    let config = crate::common::orders_in_memory(latency);
    let stop = stop.clone();
    tokio::spawn(crate::common::serve_orders(
        config,
        listener,
        Some(caller),
        stop,
    ));
    (format!("http://{addr}/mcp"), file)
}

/// A desk on `database` for the order service at `orders` (`bearer`: its token's file).
fn desk(database: &str, orders: &str, bearer: &std::path::Path, protocol: Revision) -> Desk {
    desk_with(database, orders, bearer, protocol, |_| {})
}

/// [`desk`], its settings as `configure` leaves them.
fn desk_with(
    database: &str,
    orders: &str,
    bearer: &std::path::Path,
    protocol: Revision,
    configure: impl FnOnce(&mut DeskConfig),
) -> Desk {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut config = DeskConfig {
        orders_url: orders.to_owned(),
        orders_bearer_file: Some(bearer.to_owned()),
        protocol: Some(protocol),
        tasks: true,
        database: Some(database.to_owned()),
        ..DeskConfig::default()
    };
    configure(&mut config);
    let stop = CancellationToken::new();
    let shutdown = stop.clone();
    runtime.spawn(async move {
        let web = backchannel::serve::HttpOptions::default();
        if let Err(error) = agent::app::serve_web(listener, config, web, shutdown).await {
            eprintln!("a desk failed: {error}");
        }
    });
    Desk {
        url: format!("http://127.0.0.1:{port}/"),
        port,
        runtime: Some(runtime),
        stop,
    }
}

/// A new browser session and conversation, made at `desk`: the cookie's value and the id.
async fn session_at(desk: &Desk) -> (String, String) {
    let response = reqwest::Client::new()
        .post(format!("{}api/conversations", desk.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let value = cookie_set_by(&response);
    let body: Value = response.json().await.unwrap();
    (value, body["conversationId"].as_str().unwrap().to_owned())
}

/// The value of the session cookie `response` sets.
fn cookie_set_by(response: &reqwest::Response) -> String {
    let set = response.headers()[reqwest::header::SET_COOKIE]
        .to_str()
        .unwrap();
    let (_, value) = set.split(';').next().unwrap().split_once('=').unwrap();
    value.to_owned()
}

/// The event stream of `conversation` opened at `desk` in the session `cookie`, and its secret.
async fn page_at(desk: &Desk, cookie: &str, conversation: &str) -> (Events, String) {
    let response = reqwest::Client::new()
        .get(format!(
            "{}api/events?conversationId={conversation}",
            desk.url
        ))
        .header(reqwest::header::COOKIE, desk.cookie(cookie))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        200,
        "a session and conversation made at another desk are valid here"
    );
    Events::from_response(response).await
}

/// Post a chat message at `desk`; the reply.
async fn chat_at(desk: &Desk, cookie: &str, conversation: &str, message: &str) -> String {
    let reply: Value = crate::common::json_answer(
        reqwest::Client::new()
            .post(format!("{}api/chat", desk.url))
            .header(reqwest::header::COOKIE, desk.cookie(cookie))
            .json(&json!({"conversationId": conversation, "message": message})),
    )
    .await;
    reply["reply"].as_str().unwrap().to_owned()
}

/// Answer question `id` yes at `desk` with the page's `secret`; the status.
async fn yes_at(desk: &Desk, cookie: &str, id: &str, secret: &str) -> u16 {
    reqwest::Client::new()
        .post(format!("{}api/confirmations/{id}", desk.url))
        .header(reqwest::header::COOKIE, desk.cookie(cookie))
        .json(&json!({"secret": secret, "confirmed": true}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The person's inbox at `desk`.
async fn inbox_at(desk: &Desk, cookie: &str) -> Vec<Value> {
    crate::common::json_answer(
        reqwest::Client::new()
            .get(format!("{}api/inbox", desk.url))
            .header(reqwest::header::COOKIE, desk.cookie(cookie)),
    )
    .await
}

/// Two desks on a new database, and the order service: the desks, the order service's stop.
async fn two_desks(
    protocol: Revision,
    latency: Duration,
) -> Option<(Desk, Desk, CancellationToken, tempdir::Dir)> {
    let server = server()?;
    let database = sql_pool::create_database(&server, "desks").await.unwrap();
    let dir = tempdir::Dir::new();
    let stop = CancellationToken::new();
    let (orders, bearer) = orders(dir.path(), latency, &stop).await;
    // For a desk a test starts later.
    std::fs::write(dir.path().join("database"), &database).unwrap();
    std::fs::write(dir.path().join("orders-url"), &orders).unwrap();
    let (a, b) = tokio::task::spawn_blocking({
        let (database, orders, bearer) = (database.clone(), orders.clone(), bearer.clone());
        move || {
            let a = desk(&database, &orders, &bearer, protocol);
            let b = desk(&database, &orders, &bearer, protocol);
            (a, b)
        }
    })
    .await
    .unwrap();
    Some((a, b, stop, dir))
}

/// Ask at desk A for ORD-10002's cancellation while the page watches at desk B: B's page is
/// asked. The session's cookie, the conversation, B's page and its secret, and the question.
async fn asked_through_a_shown_at_b(a: &Desk, b: &Desk) -> (String, String, Events, String, Value) {
    let (cookie, conversation) = session_at(a).await;
    let (mut page, secret) = page_at(b, &cookie, &conversation).await;
    let reply = chat_at(a, &cookie, &conversation, "please cancel ORD-10002").await;
    assert!(reply.starts_with("Waiting for your answer"), "{reply}");
    let question = page.next_of("confirmation").await;
    assert_eq!(question["server"], "orders");
    (cookie, conversation, page, secret, question)
}

async fn order_status(desk: &Desk, id: &str) -> String {
    crate::common::status_of(&desk.url, id).await
}

/// The answer posted at B, whose page it is: B sends it to A, which holds the question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_through_one_desk_is_answered_at_another() {
    across_desks(Revision::V2026_07_28, Posted::AtThePagesDesk).await;
}

/// The answer posted at A (a balancer sends it anywhere): A holds the question and knows the
/// secret of the page B serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2025_11_25_a_question_asked_through_one_desk_is_answered_at_another() {
    across_desks(Revision::V2025_11_25, Posted::AtTheAskingDesk).await;
}

/// Where the page's answer is posted.
#[derive(Clone, Copy)]
enum Posted {
    AtThePagesDesk,
    AtTheAskingDesk,
}

async fn across_desks(protocol: Revision, posted: Posted) {
    let Some((a, b, stop, _dir)) = two_desks(protocol, Duration::ZERO).await else {
        return;
    };
    let (cookie, _conversation, mut page, secret, question) =
        asked_through_a_shown_at_b(&a, &b).await;
    let id = question["id"].as_str().unwrap();
    // The inbox at either desk lists it (B learns of it from A).
    for desk in [&a, &b] {
        let listed = inbox_at(desk, &cookie).await;
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0]["id"], id);
    }
    // Another browser (a session of its own) cannot answer it at B.
    let (other, _) = session_at(&b).await;
    assert_eq!(yes_at(&b, &other, id, &secret).await, 403);
    assert_eq!(yes_at(&a, &other, id, &secret).await, 403);
    assert_eq!(yes_at(&a, &cookie, id, "not-the-secret").await, 403);
    assert_eq!(order_status(&b, "ORD-10002").await, "PENDING");
    let at = match posted {
        Posted::AtThePagesDesk => &b,
        Posted::AtTheAskingDesk => &a,
    };
    assert_eq!(yes_at(at, &cookie, id, &secret).await, 204);
    page.said_ending("Order ORD-10002 is cancelled and a refund of €34.99 has been started.")
        .await;
    assert_eq!(order_status(&a, "ORD-10002").await, "CANCELLED");
    // Answered once: a second yes finds no open question, at either desk.
    for desk in [&a, &b] {
        assert_eq!(yes_at(desk, &cookie, id, &secret).await, 404);
    }
    for desk in [&a, &b] {
        assert!(inbox_at(desk, &cookie).await.is_empty());
    }
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_desk_is_killed_is_asked_again_by_another() {
    taken_over(Revision::V2026_07_28).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2025_11_25_a_task_whose_desk_is_killed_is_asked_again_by_another() {
    taken_over(Revision::V2025_11_25).await;
}

async fn taken_over(protocol: Revision) {
    let Some((mut a, b, stop, _dir)) = two_desks(protocol, Duration::ZERO).await else {
        return;
    };
    let (cookie, _conversation, mut page, secret, first) = asked_through_a_shown_at_b(&a, &b).await;
    a.kill();
    // B takes the task over once A's lease runs out, and asks again on the page it serves.
    let again = page.next_of("confirmation").await;
    assert_ne!(
        again["id"], first["id"],
        "asked anew by the desk that took over"
    );
    let left = again["seconds"].as_u64().unwrap();
    assert!(left >= 1, "{again}");
    let listed = inbox_at(&b, &cookie).await;
    let ids: Vec<&Value> = listed.iter().map(|q| &q["id"]).collect();
    assert_eq!(
        ids,
        vec![&again["id"]],
        "only the question asked again is open"
    );
    assert_eq!(order_status(&b, "ORD-10002").await, "PENDING");
    let id = again["id"].as_str().unwrap();
    assert_eq!(yes_at(&b, &cookie, id, &secret).await, 204);
    page.said_ending("Order ORD-10002 is cancelled and a refund of €34.99 has been started.")
        .await;
    assert_eq!(order_status(&b, "ORD-10002").await, "CANCELLED");
    stop.cancel();
}

/// A folder removed when dropped.
mod tempdir {
    pub(super) struct Dir(std::path::PathBuf);

    impl Dir {
        pub(super) fn new() -> Dir {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("desks-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }

        pub(super) fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The page's Stop, posted at the desk that serves the page, stops the message another desk
/// works on (and says so only when one did).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_is_stopped_from_a_page_another_desk_serves() {
    // 87 lookups of 200 ms, 8 at a time: over two seconds of work.
    let latency = Duration::from_millis(200);
    let Some((a, b, stop, _dir)) = two_desks(Revision::V2026_07_28, latency).await else {
        return;
    };
    let (cookie, conversation) = session_at(&a).await;
    let (mut page, secret) = page_at(&b, &cookie, &conversation).await;
    let reply =
        tokio::spawn({
            let (url, port, cookie, conversation) =
                (a.url.clone(), a.port, cookie.clone(), conversation.clone());
            async move {
                let reply: Value = crate::common::json_answer(
                reqwest::Client::new()
                    .post(format!("{url}api/chat"))
                    .header(reqwest::header::COOKIE, format!("desk_session_{port}={cookie}"))
                    .json(&json!({"conversationId": conversation, "message": "recheck shipments"})),
            )
            .await;
                reply["reply"].as_str().unwrap().to_owned()
            }
        });
    page.next_of("progress").await;
    let stop_at_b = || {
        reqwest::Client::new()
            .post(format!("{}api/chat/stop", b.url))
            .header(reqwest::header::COOKIE, b.cookie(&cookie))
            .json(&json!({"conversationId": conversation, "secret": secret}))
            .send()
    };
    assert_eq!(stop_at_b().await.unwrap().status(), 204);
    let reply = reply.await.unwrap();
    assert!(
        reply.ends_with("Stopped. Nothing more will be done for that message."),
        "{reply}"
    );
    assert_eq!(
        stop_at_b().await.unwrap().status(),
        404,
        "nothing runs at either desk now"
    );
    stop.cancel();
}

/// A desk started after a page opened at another (a desk restarted, say) is told where the
/// pages are: what it says in that page's conversation reaches the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_desk_started_later_learns_where_the_pages_are() {
    let Some((a, b, stop, dir)) = two_desks(Revision::V2026_07_28, Duration::ZERO).await else {
        return;
    };
    let (cookie, conversation) = session_at(&a).await;
    let (mut page, _secret) = page_at(&b, &cookie, &conversation).await;
    let database = std::fs::read_to_string(dir.path().join("database")).unwrap();
    let (orders, bearer) = (
        std::fs::read_to_string(dir.path().join("orders-url")).unwrap(),
        dir.path().join("orders-bearer"),
    );
    let c = tokio::task::spawn_blocking(move || {
        desk(&database, &orders, &bearer, Revision::V2026_07_28)
    })
    .await
    .unwrap();
    let reply = chat_at(&c, &cookie, &conversation, "where is ORD-10001?").await;
    assert!(reply.contains("ORD-10001 is SHIPPED"), "{reply}");
    let done = page.next_of("done").await;
    assert_eq!(done["text"].as_str().unwrap(), reply);
    drop((a, c));
    stop.cancel();
}

/// With people: a task taken over by a desk that never saw its conversation (nor its person's
/// session) asks that person again, in their inbox at every desk, not the desk's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_taken_over_by_a_desk_new_to_its_conversation_asks_its_person() {
    let Some(server) = server() else {
        return;
    };
    let database = sql_pool::create_database(&server, "desks").await.unwrap();
    let dir = tempdir::Dir::new();
    let stop = CancellationToken::new();
    let (orders, bearer) = orders(dir.path(), Duration::ZERO, &stop).await;
    let password = "ana-password-for-the-desks";
    agent::app::add_person_to_database(&database, "ana", password)
        .await
        .unwrap();
    let people = agent::app::people_in_database(&database).await.unwrap();
    assert!(people.is_some());
    // A works, B serves the page and follows no task, C never hears of the conversation
    // until A is gone and it takes the task over.
    let (mut a, b, c) = tokio::task::spawn_blocking(move || {
        let start = |tasks: bool| {
            let people = people.clone();
            desk_with(
                &database,
                &orders,
                &bearer,
                Revision::V2026_07_28,
                move |config| {
                    config.people = people;
                    config.tasks = tasks;
                },
            )
        };
        (start(true), start(false), start(true))
    })
    .await
    .unwrap();
    let signed_in = reqwest::Client::new()
        .post(format!("{}api/sign-in", a.url))
        .json(&json!({"name": "ana", "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 200);
    let cookie = cookie_set_by(&signed_in);
    let started: Value = crate::common::json_answer(
        reqwest::Client::new()
            .post(format!("{}api/conversations", a.url))
            .header(reqwest::header::COOKIE, a.cookie(&cookie)),
    )
    .await;
    let conversation = started["conversationId"].as_str().unwrap().to_owned();
    let (mut page, secret) = page_at(&b, &cookie, &conversation).await;
    let reply = chat_at(&a, &cookie, &conversation, "please cancel ORD-10002").await;
    assert!(reply.starts_with("Waiting for your answer"), "{reply}");
    let first = page.next_of("confirmation").await;
    a.kill();
    let again = page.next_of("confirmation").await;
    assert_ne!(again["id"], first["id"]);
    for desk in [&b, &c] {
        let listed = inbox_at(desk, &cookie).await;
        let ids: Vec<&Value> = listed.iter().map(|q| &q["id"]).collect();
        assert_eq!(ids, vec![&again["id"]], "in ana's inbox");
    }
    let id = again["id"].as_str().unwrap();
    assert_eq!(yes_at(&b, &cookie, id, &secret).await, 204);
    page.said_ending("Order ORD-10002 is cancelled and a refund of €34.99 has been started.")
        .await;
    drop(c);
    stop.cancel();
}
