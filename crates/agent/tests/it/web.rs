//! The support agent's web API against the real order service (both on port 0, real loopback
//! HTTP, SQLite in memory), on both protocol revisions: a cancellation confirmed, refused and
//! left to expire through the event stream; answers bound to the conversation's secret;
//! progress to 100 %.
#![allow(clippy::unwrap_used)]

use crate::common::{Demo, Events, get_json, json_answer};

use std::time::Duration;

use agent::desk::DeskConfig;
use backchannel::Revision;
use serde_json::{Value, json};

async fn demo(protocol: Revision, person_deadline: Duration) -> Demo {
    let desk = DeskConfig {
        protocol: Some(protocol),
        person_deadline,
        knowledge: Some(crate::common::knowledge()),
        ..DeskConfig::default()
    };
    crate::common::start(crate::common::orders_in_memory(Duration::ZERO), desk).await
}

/// A desk on `protocol` without notes, in front of an order service whose lookups take
/// `lookup` each.
async fn plain_desk(protocol: Revision, lookup: Duration) -> Demo {
    let desk = DeskConfig {
        protocol: Some(protocol),
        ..DeskConfig::default()
    };
    crate::common::start(crate::common::orders_in_memory(lookup), desk).await
}

async fn chat(demo: &Demo, conversation: &str, message: &str) -> String {
    crate::common::chat(&demo.url, conversation, message).await
}

/// Post `message` to `conversation` in the background: its reply comes once the questions it
/// asks are answered.
fn chatting(demo: &Demo, conversation: &str, message: &str) -> tokio::task::JoinHandle<String> {
    let url = demo.url.clone();
    let (conversation, message) = (conversation.to_owned(), message.to_owned());
    tokio::spawn(async move { crate::common::chat(&url, &conversation, &message).await })
}

async fn answer(demo: &Demo, id: &str, secret: &str, confirmed: bool) -> u16 {
    crate::common::answer(&demo.url, id, secret, confirmed).await
}

async fn status_of(demo: &Demo, id: &str) -> String {
    crate::common::status_of(&demo.url, id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_goes_only_to_its_conversation_and_is_answered_once() {
    for protocol in Revision::ALL {
        let demo = demo(protocol, Duration::from_secs(60)).await;
        let (mut events, secret) = Events::open(&demo, "c1").await;
        let (_other_events, other_secret) = Events::open(&demo, "c2").await;
        let reply = chatting(&demo, "c1", "please cancel ORD-10002");
        let question = events.next_of("confirmation").await;
        assert_eq!(
            question["message"],
            "Cancel order ORD-10002 for Marcus Adeyemi? The total is €34.99 and a refund will be started."
        );
        assert_eq!(question["seconds"], 60);
        let id = question["id"].as_str().unwrap();
        assert_eq!(
            answer(&demo, id, &other_secret, true).await,
            403,
            "{protocol:?}: another conversation's secret"
        );
        assert_eq!(
            answer(&demo, "forged", &secret, true).await,
            404,
            "{protocol:?}: a forged id"
        );
        assert_eq!(
            status_of(&demo, "ORD-10002").await,
            "PENDING",
            "{protocol:?}: nothing changed yet"
        );
        assert_eq!(answer(&demo, id, &secret, true).await, 204);
        assert_eq!(
            answer(&demo, id, &secret, false).await,
            404,
            "{protocol:?}: a replayed answer"
        );
        let reply = reply.await.unwrap();
        assert!(
            reply
                .ends_with("Order ORD-10002 is cancelled and a refund of €34.99 has been started."),
            "{reply}"
        );
        assert_eq!(
            status_of(&demo, "ORD-10002").await,
            "CANCELLED",
            "{protocol:?}"
        );
    }
}

/// What another local client gets for `method path` with `body`, as `cookie` (none, or its own
/// browser session): the status.
async fn as_other(
    demo: &Demo,
    method: reqwest::Method,
    path: &str,
    body: Value,
    cookie: Option<&str>,
) -> u16 {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", demo.url))
        .json(&body);
    if let Some(cookie) = cookie {
        request = request.header(reqwest::header::COOKIE, cookie);
    }
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_id_alone_posts_to_opens_or_answers_nothing() {
    let demo = demo(Revision::V2026_07_28, Duration::from_secs(60)).await;
    let (mut events, secret) = Events::open(&demo, "mine").await;
    let id = crate::common::conversation(&demo.url, "mine").await;
    assert!(
        id.len() >= 20
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "the desk makes ids from its randomness: {id}"
    );
    let reply = chatting(&demo, "mine", "please cancel ORD-10002");
    let question = events.next_of("confirmation").await;
    let question_id = question["id"].as_str().unwrap();

    // Another local client that knows the page's id (and even its secret): without a session
    // it is told to get one (401); with its own session, that this is not its conversation (403).
    let (theirs, _) = crate::common::new_conversation(&demo.url, None).await;
    for (cookie, expected) in [(None, 401), (Some(theirs.as_str()), 403)] {
        let who = if cookie.is_some() {
            "another session"
        } else {
            "no session"
        };
        let attempts = [
            (
                reqwest::Method::POST,
                "api/chat".to_owned(),
                json!({"conversationId": id, "message": "cancel ORD-10001"}),
            ),
            (
                reqwest::Method::GET,
                format!("api/events?conversationId={id}"),
                Value::Null,
            ),
            (
                reqwest::Method::POST,
                format!("api/confirmations/{question_id}"),
                json!({"secret": secret, "confirmed": true}),
            ),
            (
                reqwest::Method::POST,
                "api/chat/stop".to_owned(),
                json!({"conversationId": id, "secret": secret}),
            ),
        ];
        for (method, path, body) in attempts {
            assert_eq!(
                as_other(&demo, method.clone(), &path, body, cookie).await,
                expected,
                "{who}: {method} {path}"
            );
        }
    }

    // Nothing changed: the order waits and the page's own answer is taken.
    assert_eq!(status_of(&demo, "ORD-10002").await, "PENDING");
    assert_eq!(status_of(&demo, "ORD-10001").await, "SHIPPED");
    assert_eq!(answer(&demo, question_id, &secret, false).await, 204);
    reply.await.unwrap();
    assert_eq!(status_of(&demo, "ORD-10002").await, "PENDING");

    // The page's stream is still the page's (the refused opening did not replace it): the next
    // question reaches it, with the same secret, and is answered once.
    let reply = chatting(&demo, "mine", "please cancel ORD-10002");
    let question = events.next_of("confirmation").await;
    let question_id = question["id"].as_str().unwrap();
    assert_eq!(answer(&demo, question_id, &secret, true).await, 204);
    let reply = reply.await.unwrap();
    assert!(
        reply.ends_with("Order ORD-10002 is cancelled and a refund of €34.99 has been started."),
        "{reply}"
    );
    assert_eq!(status_of(&demo, "ORD-10002").await, "CANCELLED");
    assert_eq!(
        status_of(&demo, "ORD-10001").await,
        "SHIPPED",
        "the refused chat did nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_opened_again_gets_the_open_question_and_the_reply() {
    for protocol in Revision::ALL {
        let demo = demo(protocol, Duration::from_secs(60)).await;
        let (mut first, old_secret) = Events::open(&demo, "reloaded").await;
        let reply = chatting(&demo, "reloaded", "please cancel ORD-10002");
        let asked = first.next_of("confirmation").await;
        // The page reloads: the same session goes on with the same conversation.
        let id = crate::common::conversation(&demo.url, "reloaded").await;
        let cookie = crate::common::cookie(&demo.url).await;
        let resumed: Value = json_answer(
            reqwest::Client::new()
                .post(format!("{}api/conversations", demo.url))
                .header(reqwest::header::COOKIE, &cookie)
                .json(&json!({"conversationId": id})),
        )
        .await;
        assert_eq!(resumed, json!({"conversationId": id, "resumed": true}));
        let (mut again, secret) = Events::open(&demo, "reloaded").await;
        let shown = again.next_of("confirmation").await;
        assert_eq!(shown["id"], asked["id"], "{protocol:?}");
        assert_eq!(shown["message"], asked["message"]);
        assert!(shown["seconds"].as_u64().unwrap() <= 60);
        let question = asked["id"].as_str().unwrap();
        assert_eq!(
            answer(&demo, question, &old_secret, true).await,
            403,
            "{protocol:?}: the closed page's secret"
        );
        assert_eq!(answer(&demo, question, &secret, true).await, 204);
        let done = again.next_of("done").await;
        assert!(
            done["text"]
                .as_str()
                .unwrap()
                .ends_with("Order ORD-10002 is cancelled and a refund of €34.99 has been started."),
            "{done}"
        );
        assert_eq!(reply.await.unwrap(), done["text"].as_str().unwrap());
        assert_eq!(status_of(&demo, "ORD-10002").await, "CANCELLED");
        // Another session naming that conversation gets a new one of its own.
        let (theirs, _) = crate::common::new_conversation(&demo.url, None).await;
        let other: Value = json_answer(
            reqwest::Client::new()
                .post(format!("{}api/conversations", demo.url))
                .header(reqwest::header::COOKIE, &theirs)
                .json(&json!({"conversationId": id})),
        )
        .await;
        assert_eq!(other["resumed"], false);
        assert_ne!(other["conversationId"], json!(id));
    }
}

/// The next inbox an event stream shows that lists `count` questions.
async fn inbox_of(events: &mut Events, count: usize) -> Vec<Value> {
    loop {
        let inbox = events.next_of("inbox").await;
        let questions = inbox["questions"].as_array().unwrap().clone();
        if questions.len() == count {
            return questions;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_gathers_a_browsers_questions_and_an_answer_anywhere_takes_it_off_everywhere() {
    let demo = demo(Revision::V2026_07_28, Duration::from_secs(60)).await;
    // Two tabs of one browser: two conversations, one session.
    let (mut first_tab, _) = Events::open(&demo, "tab-1").await;
    let (mut second_tab, _) = Events::open(&demo, "tab-2").await;
    let reply = chatting(&demo, "tab-1", "please cancel ORD-10002");
    let asked = first_tab.next_of("confirmation").await;
    let listed = inbox_of(&mut second_tab, 1).await;
    assert_eq!(listed[0]["id"], asked["id"]);
    assert_eq!(listed[0]["server"], "orders");
    assert_eq!(listed[0]["kind"], "confirmation");
    assert_eq!(listed[0]["message"], asked["message"]);
    assert!(listed[0]["secondsLeft"].as_u64().unwrap() <= 60);
    let cookie = crate::common::cookie(&demo.url).await;
    let inbox: Value = json_answer(
        reqwest::Client::new()
            .get(format!("{}api/inbox", demo.url))
            .header(reqwest::header::COOKIE, &cookie),
    )
    .await;
    assert_eq!(inbox.as_array().unwrap().len(), 1);

    // Another browser (its own session) sees nothing and answers nothing; no session, 401.
    let id = asked["id"].as_str().unwrap();
    let (theirs, _) = crate::common::new_conversation(&demo.url, None).await;
    let their_inbox: Value = json_answer(
        reqwest::Client::new()
            .get(format!("{}api/inbox", demo.url))
            .header(reqwest::header::COOKIE, &theirs),
    )
    .await;
    assert_eq!(their_inbox, json!([]));
    let answer_as = |cookie: Option<String>| {
        let mut request = reqwest::Client::new()
            .post(format!("{}api/inbox/{id}", demo.url))
            .json(&json!({"confirmed": true}));
        if let Some(cookie) = cookie {
            request = request.header(reqwest::header::COOKIE, cookie);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(answer_as(Some(theirs.clone())).await, 403);
    assert_eq!(answer_as(None).await, 401);
    assert_eq!(status_of(&demo, "ORD-10002").await, "PENDING");

    // The second tab answers: the first tab's inbox empties, its call goes on.
    assert_eq!(answer_as(Some(cookie.clone())).await, 204);
    assert_eq!(answer_as(Some(cookie)).await, 404, "answered once");
    inbox_of(&mut first_tab, 0).await;
    let reply = reply.await.unwrap();
    assert!(
        reply.ends_with("Order ORD-10002 is cancelled and a refund of €34.99 has been started."),
        "{reply}"
    );
    assert_eq!(status_of(&demo, "ORD-10002").await, "CANCELLED");
}

/// The demo with `--tasks` on `protocol` (the orders in memory, no carrier latency).
async fn tasks_demo(protocol: Revision) -> Demo {
    let desk = DeskConfig {
        protocol: Some(protocol),
        tasks: true,
        ..DeskConfig::default()
    };
    crate::common::start(crate::common::orders_in_memory(Duration::ZERO), desk).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tasks_the_chat_goes_on_and_the_answer_lands_in_the_conversation() {
    let demo = tasks_demo(Revision::V2026_07_28).await;
    let (mut page, secret) = Events::open(&demo, "tasks").await;
    // The chat does not wait for the person: it says the question waits.
    let reply = chat(&demo, "tasks", "please cancel ORD-10002").await;
    assert!(
        reply.starts_with("Waiting for your answer: Cancel order ORD-10002 for Marcus Adeyemi?"),
        "{reply}"
    );
    assert!(reply.contains("It is in your inbox"), "{reply}");
    let question = page.next_of("confirmation").await;
    assert_eq!(question["server"], "orders");
    assert_eq!(status_of(&demo, "ORD-10002").await, "PENDING");
    // The conversation goes on meanwhile.
    let other = chat(&demo, "tasks", "where is ORD-10001?").await;
    assert!(other.contains("ORD-10001"), "{other}");
    // The answer goes to the task; its result is said in the conversation.
    let id = question["id"].as_str().unwrap();
    assert_eq!(answer(&demo, id, &secret, true).await, 204);
    page.said_ending("Order ORD-10002 is cancelled and a refund of €34.99 has been started.")
        .await;
    assert_eq!(status_of(&demo, "ORD-10002").await, "CANCELLED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tasks_a_question_nobody_watched_waits_for_the_next_page() {
    let demo = tasks_demo(Revision::V2026_07_28).await;
    // No page watches the conversation when the question is asked: it waits all the same.
    let reply = chat(&demo, "later", "please cancel ORD-10002").await;
    assert!(reply.starts_with("Waiting for your answer"), "{reply}");
    let (mut page, secret) = Events::open(&demo, "later").await;
    let question = page.next_of("confirmation").await;
    let listed = inbox_of(&mut page, 1).await;
    assert_eq!(listed[0]["id"], question["id"]);
    let id = question["id"].as_str().unwrap();
    assert_eq!(answer(&demo, id, &secret, false).await, 204);
    let said = page.next_of("said").await;
    assert!(
        said["text"]
            .as_str()
            .unwrap()
            .contains("ORD-10002 was not cancelled"),
        "{said}"
    );
    assert_eq!(status_of(&demo, "ORD-10002").await, "PENDING");
}

/// A 2025-11-25 order service runs the call as a task too (the desk asks for one), its
/// question inside the task as on 2026-07-28: the chat goes on, the answer lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tasks_on_2025_11_25_the_question_waits_in_the_task_too() {
    let demo = tasks_demo(Revision::V2025_11_25).await;
    let (mut page, secret) = Events::open(&demo, "old").await;
    let reply = chat(&demo, "old", "please cancel ORD-10002").await;
    assert!(reply.starts_with("Waiting for your answer"), "{reply}");
    let question = page.next_of("confirmation").await;
    let id = question["id"].as_str().unwrap();
    assert_eq!(answer(&demo, id, &secret, true).await, 204);
    page.said_ending("Order ORD-10002 is cancelled and a refund of €34.99 has been started.")
        .await;
    assert_eq!(status_of(&demo, "ORD-10002").await, "CANCELLED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_leaves_the_order_and_an_expired_question_says_so() {
    for protocol in Revision::ALL {
        let demo = demo(protocol, Duration::from_secs(1)).await;
        let (mut events, secret) = Events::open(&demo, "c1").await;
        let reply = chatting(&demo, "c1", "cancel ORD-10008");
        let question = events.next_of("confirmation").await;
        assert_eq!(
            answer(&demo, question["id"].as_str().unwrap(), &secret, false).await,
            204
        );
        let reply = reply.await.unwrap();
        assert!(
            reply.ends_with("Order ORD-10008 was not cancelled: you said no."),
            "{reply}"
        );
        assert_eq!(status_of(&demo, "ORD-10008").await, "PENDING");

        // Nobody answers ORD-10009's question: the one-second deadline passes.
        let reply = chatting(&demo, "c1", "cancel ORD-10009");
        let question = events.next_of("confirmation").await;
        let reply = reply.await.unwrap();
        assert!(
            reply.ends_with(
                "Order ORD-10009 was not cancelled: the question was closed without an answer."
            ),
            "{reply}"
        );
        assert_eq!(
            answer(&demo, question["id"].as_str().unwrap(), &secret, true).await,
            404,
            "expired"
        );
        assert_eq!(status_of(&demo, "ORD-10009").await, "PROCESSING");
    }
}

/// Issue 72: the dialog and the inbox showed the server's words only, never the call that
/// asked; now the question names its server, tool and arguments, on both revisions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_names_its_call_on_the_page_and_in_the_inbox() {
    for protocol in Revision::ALL {
        let demo = demo(protocol, Duration::from_secs(60)).await;
        let (mut events, secret) = Events::open(&demo, "c1").await;
        let reply = chatting(&demo, "c1", "cancel ORD-10008");
        let question = events.next_of("confirmation").await;
        let call = &question["call"];
        assert_eq!(call["server"], "orders", "{protocol}: {question}");
        assert_eq!(call["tool"], "cancel_order", "{protocol}: {question}");
        assert_eq!(
            call["arguments"]["orderId"], "ORD-10008",
            "{protocol}: {question}"
        );
        let inbox: Value = json_answer(
            reqwest::Client::new()
                .get(format!("{}api/inbox", demo.url))
                .header(
                    reqwest::header::COOKIE,
                    crate::common::cookie(&demo.url).await,
                ),
        )
        .await;
        assert_eq!(
            inbox[0]["call"]["tool"], "cancel_order",
            "{protocol}: {inbox}"
        );
        let id = question["id"].as_str().unwrap();
        assert_eq!(answer(&demo, id, &secret, false).await, 204);
        assert!(reply.await.unwrap().ends_with("you said no."), "{protocol}");
    }
}

/// Issue 72: on 2025-11-25 a call stopped while its question waited left the person's dialog
/// open (the server forgot the wait but never told the client). Now, on both revisions, the
/// question is withdrawn: the page hears so, and an answer finds nothing to answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_whose_call_is_stopped_is_withdrawn_from_the_page() {
    for protocol in Revision::ALL {
        let demo = demo(protocol, Duration::from_secs(60)).await;
        let (mut events, secret) = Events::open(&demo, "c1").await;
        let reply = chatting(&demo, "c1", "cancel ORD-10008");
        let question = events.next_of("confirmation").await;
        let conversation = crate::common::conversation(&demo.url, "c1").await;
        let stopped = reqwest::Client::new()
            .post(format!("{}api/chat/stop", demo.url))
            .header(
                reqwest::header::COOKIE,
                crate::common::cookie(&demo.url).await,
            )
            .json(&json!({"conversationId": conversation, "secret": secret}))
            .send()
            .await
            .unwrap();
        assert_eq!(stopped.status(), 204, "{protocol}");
        let closed = events.next_of("closed").await;
        assert_eq!(closed["id"], question["id"], "{protocol}: {closed}");
        assert_eq!(closed["withdrawn"], true, "{protocol}: {closed}");
        let _ = reply.await;
        assert_eq!(
            answer(&demo, question["id"].as_str().unwrap(), &secret, true).await,
            404,
            "{protocol}: nothing is left to answer"
        );
        assert_eq!(status_of(&demo, "ORD-10008").await, "PENDING", "{protocol}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class12_check_it_nobody_there_to_ask_the_question_is_declined_at_once() {
    // Declined, not cancelled: asking again cannot help while nobody is there to ask.
    let demo = demo(Revision::V2026_07_28, Duration::from_secs(60)).await;
    let reply = chat(&demo, "unwatched", "cancel ORD-10002").await;
    assert!(
        reply.ends_with(
            "was not cancelled: the question could not be shown to anyone, so nobody said yes."
        ),
        "{reply}"
    );
    assert_eq!(status_of(&demo, "ORD-10002").await, "PENDING");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class13_check_it_progress_bar_rechecking_shipments_fills_it() {
    for protocol in Revision::ALL {
        let demo = demo(protocol, Duration::from_secs(60)).await;
        let (mut events, _secret) = Events::open(&demo, "c1").await;
        let reply = chat(&demo, "c1", "refresh delivery estimates").await;
        assert!(
            reply.ends_with("Rechecked 87 shipments, 13 estimates changed."),
            "{reply}"
        );
        let mut last = 0;
        while last < 100 {
            let progress = events.next_of("progress").await;
            let percent = progress["percent"].as_u64().unwrap();
            assert!(
                percent > last || last == 0,
                "{protocol:?}: {percent} after {last}"
            );
            last = percent;
        }
        assert_eq!(last, 100);
    }
}

/// Issue 72: the host never asked for a log level (no `logging/setLevel` on 2025-11-25, no level
/// in a request's `_meta` on 2026-07-28), so a server's log messages never reached the desk.
/// Now the recheck's "Rechecking 87 shipments" (info) reaches the page, on both revisions, and
/// its per-shipment debug lines do not (the desk asks for info and above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_log_messages_reach_the_page_at_their_level() {
    for protocol in Revision::ALL {
        let demo = demo(protocol, Duration::from_secs(60)).await;
        let (mut events, _secret) = Events::open(&demo, "c1").await;
        let reply = chat(&demo, "c1", "refresh delivery estimates").await;
        assert!(reply.contains("Rechecked 87 shipments"), "{reply}");
        let first = events.next_of("log").await;
        assert_eq!(first["server"], "orders", "{protocol}: {first}");
        assert_eq!(first["level"], "info", "{protocol}: {first}");
        assert_eq!(
            first["text"], "Rechecking 87 shipments",
            "{protocol}: {first}"
        );
        let last = events.next_of("log").await;
        assert_eq!(
            last["level"], "info",
            "{protocol}: no debug line before it: {last}"
        );
        assert!(
            last["text"].as_str().unwrap().contains("13"),
            "{protocol}: {last}"
        );
    }
}

/// With tasks (the desk's default), a recheck the server may run as a task still fills the
/// progress bar, and its reply is the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tasks_rechecking_still_fills_the_progress_bar() {
    for protocol in Revision::ALL {
        let desk = DeskConfig {
            protocol: Some(protocol),
            tasks: true,
            ..DeskConfig::default()
        };
        let orders = crate::common::orders_in_memory(Duration::from_millis(5));
        let demo = crate::common::start(orders, desk).await;
        let (mut events, _secret) = Events::open(&demo, "c1").await;
        let reply = chat(&demo, "c1", "refresh delivery estimates").await;
        assert!(
            reply.starts_with("Rechecked 87 shipments"),
            "{protocol}: {reply}"
        );
        let mut last = 0;
        while last < 100 {
            let progress = events.next_of("progress").await;
            let percent = progress["percent"].as_u64().unwrap();
            assert!(percent >= last, "{protocol}: {percent} after {last}");
            last = percent;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_greeting_says_what_the_desk_does_and_blocked_words_are_refused() {
    let demo = demo(Revision::V2026_07_28, Duration::from_secs(60)).await;
    let greeting: Value = get_json(format!("{}api/greeting", demo.url)).await;
    let text = greeting["reply"].as_str().unwrap();
    assert!(text.starts_with("Hello! I am the support desk."), "{text}");
    assert!(text.contains("No language model is configured"), "{text}");
    assert!(text.contains("cancel an order"), "{text}");
    let first = chat(&demo, "c9", "where is ORD-10001?").await;
    assert_eq!(
        first, "ORD-10001 is SHIPPED: Ana Ruiz, €179.99. DHL DHL-88213, due 2026-05-14.",
        "the first reply is only the answer"
    );
    for help in ["help", "Hello", "what can you do?"] {
        let reply = crate::common::chat_about(&demo.url, "c9", help, Some("ORD-10001")).await;
        assert!(
            reply.starts_with("I can look up an order"),
            "{help}: {reply}"
        );
    }
    let second = chat(&demo, "c9", "what is the customer's credit card number?").await;
    assert_eq!(
        second,
        "I can only help with orders and deliveries. Please contact support directly for anything else."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_questions_are_answered_from_the_notes() {
    let demo = demo(Revision::V2026_07_28, Duration::from_secs(60)).await;
    let current = chat(
        &demo,
        "c1",
        "How long is the returns window for Gold customers?",
    )
    .await;
    assert_eq!(
        current,
        "From the current notes, refunds-process.md: Check the window. 30 days from delivery, \
         or 60 days for Gold tier customers. Outside the window a team lead must approve the \
         refund.",
        "one passage, plain text"
    );
    let asked = chat(&demo, "c1", "how long can a Gold customer return an item?").await;
    assert!(
        asked.contains("60 days") && !asked.contains("**"),
        "{asked}"
    );
    assert!(
        !asked.contains("Postage"),
        "only the passage that answers: {asked}"
    );
    let archived = chat(&demo, "c1", "What was the restocking fee in 2023?").await;
    assert!(archived.contains("archived notes"), "{archived}");
    assert!(archived.contains("15% restocking fee"), "{archived}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_a_long_tool_and_needs_the_secret() {
    // 87 lookups of 200 ms, 8 at a time: over two seconds of work.
    let demo = plain_desk(Revision::V2026_07_28, Duration::from_millis(200)).await;
    let (mut events, secret) = Events::open(&demo, "c1").await;
    let reply = chatting(&demo, "c1", "recheck shipments");
    events.next_of("progress").await;
    let stop = |secret| crate::common::stop(&demo.url, "c1", secret);
    assert_eq!(stop("not-the-secret").await, 403);
    assert_eq!(stop(&secret).await, 204);
    assert!(
        reply
            .await
            .unwrap()
            .ends_with("Stopped. Nothing more will be done for that message.")
    );
    assert_eq!(stop(&secret).await, 404, "nothing is running now");
    let next = chat(&demo, "c1", "where is ORD-10001?").await;
    assert!(
        next.ends_with("ORD-10001 is SHIPPED: Ana Ruiz, €179.99. DHL DHL-88213, due 2026-05-14."),
        "{next}"
    );
}

/// The progress events of one long tool, read until 100 %: each value above the one before.
async fn progress_to_full(events: &mut Events, label: &str) -> Vec<u64> {
    let mut seen = Vec::new();
    loop {
        let progress = events.next_of("progress").await;
        let percent = progress["percent"].as_u64().unwrap();
        if let Some(last) = seen.last() {
            assert!(percent > *last, "{label}: {percent} after {seen:?}");
        }
        // Each names its server and carries the server's words for where it is.
        assert_eq!(progress["server"], "orders", "{label}: {progress}");
        let message = progress["message"].as_str().unwrap_or_default();
        assert!(message.ends_with(" of 87"), "{label}: {progress}");
        seen.push(percent);
        if percent == 100 {
            assert_eq!(message, "87 of 87", "{label}");
            return seen;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refresh_in_one_conversation_fills_the_bar_again() {
    for protocol in Revision::ALL {
        let demo = plain_desk(protocol, Duration::ZERO).await;
        let (mut events, _secret) = Events::open(&demo, "c1").await;
        for round in 1..=3 {
            let reply = chat(&demo, "c1", "refresh delivery estimates").await;
            // The first refresh moves 13 estimates; later ones find them current.
            let changed = if round == 1 { 13 } else { 0 };
            assert!(
                reply.ends_with(&format!(
                    "Rechecked 87 shipments, {changed} estimates changed."
                )),
                "{reply}"
            );
            let seen =
                progress_to_full(&mut events, &format!("{protocol:?} refresh {round}")).await;
            assert!(seen.len() > 1, "{protocol:?} refresh {round}: {seen:?}");
        }
    }
}

/// The first `n` orders that can still be cancelled, from the desk's order list.
async fn cancellable(demo: &Demo, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for status in ["PENDING", "PROCESSING"] {
        let orders: Value = get_json(format!("{}api/orders?status={status}", demo.url)).await;
        ids.extend(
            orders
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["orderId"].as_str().unwrap().to_owned()),
        );
    }
    ids.sort();
    ids.truncate(n);
    assert_eq!(ids.len(), n, "the seed has {n} cancellable orders");
    ids
}

/// `conversations` people at once each cancel an order: every one is asked, answers yes, and
/// sees it cancelled. Returns the order ids.
async fn cancel_at_once(demo: &Demo, conversations: usize, label: &str) -> Vec<String> {
    let orders = cancellable(demo, conversations).await;
    let people =
        orders.iter().enumerate().map(|(i, order)| {
            let url = demo.url.clone();
            let order = order.clone();
            let label = label.to_owned();
            async move {
                let conversation = format!("p{i}");
                let (mut events, secret) = Events::open(demo, &conversation).await;
                let reply = tokio::spawn({
                    let url = url.clone();
                    let (conversation, order) = (conversation.clone(), order.clone());
                    async move {
                        crate::common::chat(&url, &conversation, &format!("cancel {order}")).await
                    }
                });
                let question = events.next_of("confirmation").await;
                assert!(
                    question["message"].as_str().unwrap().contains(&order),
                    "{label}: {conversation} was asked about {question}"
                );
                let id = question["id"].as_str().unwrap();
                assert_eq!(answer(demo, id, &secret, true).await, 204, "{label}");
                let reply = reply.await.unwrap();
                assert!(
                    reply.contains(&format!("Order {order} is cancelled")),
                    "{label}: {conversation}: {reply}"
                );
            }
        });
    futures::future::join_all(people).await;
    let cancelled: Value = get_json(format!("{}api/orders?status=CANCELLED", demo.url)).await;
    for order in &orders {
        assert!(
            cancelled
                .as_array()
                .unwrap()
                .iter()
                .any(|o| o["orderId"] == order.as_str()),
            "{label}: {order} is not cancelled"
        );
    }
    orders
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_people_cancelling_at_once_are_each_asked() {
    // On 2025-11-25 the question travels as a server-to-client request that can overtake the
    // host's own bookkeeping of the call; every one must still reach its conversation.
    for repetition in 1..=50 {
        let demo = plain_desk(Revision::V2025_11_25, Duration::ZERO).await;
        let cancelled = cancel_at_once(&demo, 20, &format!("repetition {repetition}")).await;
        assert_eq!(cancelled.len(), 20);
    }
}

/// How many times the stress tests repeat (`STRESS_REPEAT`, default 3; `scripts/test` sets it).
fn stress_repeat() -> usize {
    std::env::var("STRESS_REPEAT")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stress_questions_and_progress_interleaved_across_conversations() {
    for repetition in 1..=stress_repeat() {
        for protocol in Revision::ALL {
            let label = format!("{protocol:?} repetition {repetition}");
            let demo = plain_desk(protocol, Duration::ZERO).await;
            let refreshers = (0..8).map(|i| {
                let (demo, label) = (&demo, &label);
                async move {
                    let conversation = format!("r{i}");
                    let (mut events, _secret) = Events::open(demo, &conversation).await;
                    for round in 1..=2 {
                        let reply = chat(demo, &conversation, "refresh delivery estimates").await;
                        assert!(reply.contains("Rechecked 87 shipments, "), "{reply}");
                        progress_to_full(&mut events, &format!("{label} {conversation} #{round}"))
                            .await;
                    }
                }
            });
            let (_, cancelled) = futures::join!(
                futures::future::join_all(refreshers),
                cancel_at_once(&demo, 12, &label)
            );
            assert_eq!(cancelled.len(), 12);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_refuses_a_rebound_host_or_a_foreign_origin() {
    let demo = crate::common::start(
        crate::common::orders_in_memory(Duration::ZERO),
        DeskConfig::default(),
    )
    .await;
    let client = reqwest::Client::new();
    let port = demo
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let routes = [
        ("GET", "/"),
        ("GET", "/app.js"),
        ("GET", "/style.css"),
        ("GET", "/api/orders?status=PENDING"),
        ("POST", "/api/conversations"),
        ("GET", "/api/events?conversationId=c1"),
        ("POST", "/api/chat"),
        ("POST", "/api/chat/stop"),
        ("POST", "/api/refund-email"),
        ("POST", "/api/confirmations/some-id"),
        ("GET", "/api/tools"),
        ("POST", "/api/tools/call"),
    ];
    for (method, path) in routes {
        let url = format!("{}{}", demo.url.trim_end_matches('/'), path);
        let request = |extra: (&str, String)| {
            client
                .request(method.parse().unwrap(), &url)
                .header(extra.0, extra.1)
                .json(&json!({"conversationId": "c1", "message": "cancel ORD-10002", "secret": "x", "confirmed": true}))
                .send()
        };
        let rebound = request(("Host", format!("attacker.example:{port}")))
            .await
            .unwrap();
        assert_eq!(
            rebound.status().as_u16(),
            403,
            "{method} {path}: rebound Host"
        );
        let foreign = request(("Origin", "http://attacker.example".into()))
            .await
            .unwrap();
        assert_eq!(
            foreign.status().as_u16(),
            403,
            "{method} {path}: foreign Origin"
        );
    }
    assert_eq!(
        status_of(&demo, "ORD-10002").await,
        "PENDING",
        "nothing was cancelled"
    );
    let page = client.get(&demo.url).send().await.unwrap();
    assert_eq!(
        page.status().as_u16(),
        200,
        "the page itself is served to loopback"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_reads_its_vocabulary_from_the_desk_and_the_desk_keeps_the_refund_rule() {
    let demo = demo(Revision::V2026_07_28, Duration::from_secs(60)).await;
    // Before its connections are open the desk offers no refund reasons (it does not wait for
    // them: a connection may be waiting for this page's person to sign in); listing orders
    // waits for them.
    let _: Value = get_json(format!("{}api/orders?status=PENDING", demo.url)).await;
    let vocabulary: Value = get_json(format!("{}api/desk", demo.url)).await;
    // The contract the page is written against.
    assert_eq!(
        vocabulary,
        json!({
            "statuses": ["PENDING", "PROCESSING", "SHIPPED", "DELIVERED", "CANCELLED"],
            "refundable": ["SHIPPED", "DELIVERED", "CANCELLED"],
            "refundReasons": ["arrived damaged", "arrived late", "faulty", "no longer needed", "wrong item"],
            "events": ["hello", "progress", "call", "confirmation", "link", "sampling", "closed", "signin", "signinended", "reply", "done", "inbox", "said", "log"],
        })
    );
    // A refund e-mail for an order that has not shipped is refused by the desk, whatever a
    // page sends.
    let refused: Value = json_answer(
        reqwest::Client::new()
            .post(format!("{}api/refund-email", demo.url))
            .json(&json!({"orderId": "ORD-10002", "reason": "faulty"})),
    )
    .await;
    let text = refused["reply"].as_str().unwrap();
    assert!(
        text.contains("ORD-10002 is PENDING") && text.contains("drafted only for"),
        "{text}"
    );
}

/// The desk signs no one in: beyond loopback it refuses to start, and says why, before it
/// listens or reaches anything.
#[test]
fn listening_beyond_loopback_is_refused() {
    for args in [
        &[
            "web",
            "--listen",
            "0.0.0.0:0",
            "--orders",
            "http://127.0.0.1:9/mcp",
        ][..],
        &["demo", "--listen", "0.0.0.0:0"][..],
        &["demo", "--orders-listen", "[::]:0"][..],
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_support-agent"))
            .args(args)
            .env("ORDER_SERVICE_DATA", std::env::temp_dir())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} started");
        assert!(
            stderr.contains("is not a loopback address: the desk signs no one in"),
            "{args:?}: {stderr}"
        );
    }
}

/// Issue 75: two desks on one host shared one session cookie (a browser sends a host's cookies
/// to every port), so opening the second signed the first out. Each desk's cookie is named
/// after its port, and a browser holding both keeps both sessions. The chat's answer names its
/// run as its `done` event does, so a page shows the reply once whichever comes first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_desks_on_one_host_keep_their_own_sessions_and_a_reply_names_its_run() {
    let first = plain_desk(Revision::V2026_07_28, Duration::ZERO).await;
    let second = plain_desk(Revision::V2026_07_28, Duration::ZERO).await;
    let port = |url: &str| {
        url.trim_end_matches('/')
            .rsplit(':')
            .next()
            .unwrap()
            .to_owned()
    };
    let (first_cookie, first_conversation) =
        crate::common::new_conversation(&first.url, None).await;
    let (second_cookie, _) = crate::common::new_conversation(&second.url, None).await;
    assert!(
        first_cookie.starts_with(&format!("desk_session_{}=", port(&first.url))),
        "{first_cookie}"
    );
    assert!(
        second_cookie.starts_with(&format!("desk_session_{}=", port(&second.url))),
        "{second_cookie}"
    );
    // The browser sends both cookies to both desks: each reads its own, and the first
    // desk's conversation is still the first session's.
    let both = format!("{first_cookie}; {second_cookie}");
    let (_, resumed) = crate::common::new_conversation(&first.url, Some(&both)).await;
    assert_ne!(resumed, "", "a session at the first desk");
    let reply: Value = json_answer(
        reqwest::Client::new()
            .post(format!("{}api/chat", first.url))
            .header(reqwest::header::COOKIE, &both)
            .json(&json!({"conversationId": first_conversation, "message": "where is ORD-10001?"})),
    )
    .await;
    assert!(reply["run"].is_u64(), "{reply}");
    assert!(
        reply["reply"].as_str().unwrap().contains("ORD-10001"),
        "{reply}"
    );
}
