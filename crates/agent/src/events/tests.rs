//! The event streams' tests: questions, sign-ins, reloads.

use super::*;

/// A question's shown part, as the round-trip test writes it.
fn shown(id: &str) -> Shown {
    Shown {
        id: id.into(),
        server: "s".into(),
        message: "m".into(),
        seconds: 1,
        call: None,
    }
}

/// The next event that is not an inbox update (those follow every change; the inbox's own
/// test reads them).
async fn recv(rx: &mut mpsc::UnboundedReceiver<Event>) -> Option<Event> {
    loop {
        match rx.recv().await {
            Some(Event::Inbox { .. }) => continue,
            other => return other,
        }
    }
}

#[test]
fn each_event_is_named_as_its_json_names_it() {
    let events = [
        Event::Hello {
            secret: "s".into(),
            working: false,
        },
        Event::Progress {
            percent: 1,
            server: "orders".into(),
            message: Some("1 of 87".into()),
        },
        Event::Call {
            id: "i".into(),
            call: CallShown::new("orders", "get_order", &serde_json::json!({})),
            result: None,
            is_error: false,
        },
        Event::Confirmation {
            question: shown("i"),
            fields: Vec::new(),
        },
        Event::Link {
            question: shown("i"),
            url: "https://a.example/x".into(),
            origin: "https://a.example".into(),
        },
        Event::Sampling {
            question: shown("i"),
        },
        Event::Closed {
            id: "i".into(),
            answered_elsewhere: false,
            withdrawn: false,
        },
        Event::SignIn {
            server: "s".into(),
            url: "https://a.example/".into(),
        },
        Event::SignInEnded {
            server: "s".into(),
            completed: true,
        },
        Event::Reply {
            text: "t".into(),
            html: "t".into(),
        },
        Event::Done {
            text: "t".into(),
            html: "t".into(),
            run: 0,
        },
        Event::Inbox {
            questions: Vec::new(),
        },
        Event::Said {
            text: "t".into(),
            html: "t".into(),
        },
        Event::Log {
            server: "orders".into(),
            level: "info".into(),
            text: "Rechecking 87 shipments".into(),
        },
    ];
    let names: Vec<&str> = events.iter().map(Event::name).collect();
    assert_eq!(names, Event::NAMES);
    for event in &events {
        assert_eq!(serde_json::to_value(event).unwrap()["event"], event.name());
    }
}

#[tokio::test(start_paused = true)]
async fn a_sign_in_opened_from_a_page_is_finished_only_by_that_browser() {
    let events = std::sync::Arc::new(Events::default());
    let signing_in = sign_in_to_orders(&events, "https://as.example/authorize?state=s-9", None);
    tokio::task::yield_now().await;
    let (url, nonce) = events.claim_sign_in("s-9", "ana's session").unwrap();
    assert_eq!(url, "https://as.example/authorize?state=s-9");
    assert_eq!(
        events.claim_sign_in("s-9", "ana's session").unwrap().1,
        nonce,
        "the same browser again"
    );
    assert_eq!(
        events.claim_sign_in("s-9", "another session"),
        Err(SignInError::Claimed)
    );
    assert_eq!(
        events.claim_sign_in("forged", "ana's session"),
        Err(SignInError::NotWaiting)
    );
    // A callback from a browser without the nonce, or with another, changes nothing.
    for held in [None, Some("guessed")] {
        assert_eq!(
            events.signed_in_by("code=attacker&state=s-9", held),
            Err(SignInError::OtherBrowser)
        );
    }
    assert_eq!(
        events.signed_in_by("code=c&state=s-9", Some(&nonce)),
        Ok("orders".into())
    );
    assert_eq!(signing_in.await.unwrap(), Ok("code=c&state=s-9".into()));
}

#[tokio::test(start_paused = true)]
async fn a_stream_opened_again_gets_the_open_question_with_its_time_left() {
    let events = std::sync::Arc::new(Events::default());
    let (old_secret, mut first) = events.open("c1");
    assert!(matches!(recv(&mut first).await, Some(Event::Hello { .. })));
    let asking = ask_in(&events, "c1", "Cancel?");
    let Some(Event::Confirmation {
        question: Shown { id, seconds, .. },
        ..
    }) = recv(&mut first).await
    else {
        panic!("not asked")
    };
    assert_eq!(seconds, 60);
    tokio::time::advance(Duration::from_secs(25)).await;
    // The page reloads: a new stream, a new secret, the same question with 35 s left; the
    // old secret no longer answers, the new one does.
    let (secret, mut again) = events.open_working("c1", true);
    assert!(matches!(
        recv(&mut again).await,
        Some(Event::Hello { working: true, .. })
    ));
    assert_eq!(
        recv(&mut again).await,
        Some(Event::Confirmation {
            question: Shown {
                id: id.clone(),
                server: "a server".into(),
                message: "Cancel?".into(),
                seconds: 35,
                call: None,
            },
            fields: Vec::new(),
        })
    );
    assert_eq!(
        events.answer(&id, &old_secret, Answer::No),
        Err(AnswerError::Forbidden)
    );
    assert_eq!(events.answer(&id, &secret, Answer::No), Ok(()));
    assert_eq!(asking.await.unwrap(), Asked::Answered(Answer::No));
    // Another conversation's stream is not shown it.
    let (_, mut other) = events.open("c2");
    assert!(matches!(recv(&mut other).await, Some(Event::Hello { .. })));
    while let Ok(event) = other.try_recv() {
        assert!(
            !matches!(event, Event::Confirmation { .. }),
            "another conversation was asked: {event:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_question_is_answered_once_and_only_with_its_secret() {
    let events = std::sync::Arc::new(Events::default());
    let (secret, mut rx) = events.open("c1");
    let (other_secret, _other) = events.open("c2");
    assert!(matches!(recv(&mut rx).await, Some(Event::Hello { .. })));
    let asking = ask_in(&events, "c1", "Cancel?");
    let Some(Event::Confirmation {
        question: Shown { id, seconds, .. },
        ..
    }) = recv(&mut rx).await
    else {
        panic!("no question")
    };
    assert_eq!(seconds, 60);
    assert_eq!(
        events.answer(&id, &other_secret, Answer::No),
        Err(AnswerError::Forbidden)
    );
    assert_eq!(
        events.answer("forged", &secret, Answer::No),
        Err(AnswerError::NotFound)
    );
    events
        .answer(&id, &secret, Answer::Yes { note: "ok".into() })
        .unwrap();
    assert_eq!(
        events.answer(&id, &secret, Answer::No),
        Err(AnswerError::NotFound),
        "replayed"
    );
    assert_eq!(
        asking.await.unwrap(),
        Asked::Answered(Answer::Yes { note: "ok".into() })
    );
}

#[tokio::test(start_paused = true)]
async fn a_sign_in_is_shown_to_every_page_and_ends_with_its_own_callback() {
    let events = std::sync::Arc::new(Events::default());
    let (_secret, mut early) = events.open("c1");
    assert!(matches!(recv(&mut early).await, Some(Event::Hello { .. })));
    let signing_in = sign_in_to_orders(
        &events,
        "http://as.example/authorize?client_id=x&state=s-123",
        None,
    );
    let Some(Event::SignIn { server, url }) = recv(&mut early).await else {
        panic!("no sign-in link")
    };
    assert_eq!(server, "orders");
    assert!(url.ends_with("state=s-123"), "{url}");
    // A page opened later sees the link too.
    let (_secret, mut late) = events.open("c2");
    assert!(matches!(recv(&mut late).await, Some(Event::Hello { .. })));
    assert!(matches!(recv(&mut late).await, Some(Event::SignIn { .. })));
    assert_eq!(
        events.signed_in("code=c&state=forged"),
        Err(SignInError::NotWaiting)
    );
    assert_eq!(events.signed_in("code=c&state=s-123"), Ok("orders".into()));
    assert_eq!(
        events.signed_in("code=c&state=s-123"),
        Err(SignInError::NotWaiting),
        "replayed"
    );
    assert_eq!(signing_in.await.unwrap(), Ok("code=c&state=s-123".into()));
    assert!(matches!(
        recv(&mut early).await,
        Some(Event::SignInEnded {
            completed: true,
            ..
        })
    ));
}

#[tokio::test(start_paused = true)]
async fn a_sign_in_nobody_finishes_ends_and_says_so() {
    let events = Events::default();
    let (_secret, mut rx) = events.open("c1");
    let outcome = events
        .sign_in(
            "orders",
            "http://as.example/authorize?state=s-1",
            Duration::from_secs(600),
            None,
        )
        .await;
    assert_eq!(
        outcome,
        Err("nobody signed in to orders within 10 minutes".into())
    );
    assert!(matches!(recv(&mut rx).await, Some(Event::Hello { .. })));
    assert!(matches!(recv(&mut rx).await, Some(Event::SignIn { .. })));
    assert!(matches!(
        recv(&mut rx).await,
        Some(Event::SignInEnded {
            completed: false,
            ..
        })
    ));
    assert_eq!(
        events
            .sign_in(
                "orders",
                "http://as.example/authorize",
                Duration::from_secs(1),
                None
            )
            .await,
        Err("the authorization URL carries no state to match the callback with".into())
    );
}

#[tokio::test(start_paused = true)]
async fn nobody_watching_or_nobody_answering() {
    let events = Events::default();
    assert_eq!(
        events.ask("c1", "?", Duration::from_secs(60)).await,
        Asked::NobodyWatching
    );
    let (_secret, _rx) = events.open("c1");
    assert_eq!(
        events.ask("c1", "?", Duration::from_secs(60)).await,
        Asked::Expired
    );
}

#[test]
fn a_new_session_never_pushes_out_one_with_a_page_open() {
    let events = Events::default();
    events.set_people(true);
    // Ana's page is open; then she signs in again and again elsewhere.
    let open = events.start_session("ana").unwrap();
    let conversation = events.start_conversation(&open);
    let (_secret, _page) = events.open(&conversation);
    let first_idle = events.start_session("ana").unwrap();
    for _ in 2..MAX_SESSIONS_PER_PERSON {
        events.start_session("ana").unwrap();
    }
    // At her share: the oldest session with no page open goes, the open one stays.
    let newest = events.start_session("ana").unwrap();
    assert!(events.person_of_session(&first_idle).is_none());
    assert_eq!(events.person_of_session(&open).as_deref(), Some("ana"));
    assert!(events.belongs_to(&conversation, &open));
    assert_eq!(events.person_of_session(&newest).as_deref(), Some("ana"));
    // Another person's share is their own.
    assert!(events.start_session("ben").is_some());
}

#[test]
fn when_every_session_has_a_page_open_a_newcomer_is_refused() {
    let events = Events::default();
    events.set_people(true);
    let mut pages = Vec::new();
    for _ in 0..MAX_SESSIONS_PER_PERSON {
        let session = events.start_session("ana").unwrap();
        let conversation = events.start_conversation(&session);
        pages.push(events.open(&conversation));
    }
    assert!(events.start_session("ana").is_none());
    // A page closes: its session may go for the next one.
    pages.remove(0);
    assert!(events.start_session("ana").is_some());
}

#[test]
fn what_is_said_while_nobody_watches_waits_for_the_next_page() {
    let events = Events::default();
    let session = events.start_session("ana").unwrap();
    let conversation = events.start_conversation(&session);
    let said = |n: usize| Event::Said {
        html: format!("<p>{n}</p>"),
        text: n.to_string(),
    };
    for n in 0..MAX_UNHEARD + 2 {
        assert!(!events.emit(&conversation, said(n)));
    }
    // A conversation the desk never made keeps nothing.
    assert!(!events.emit("made-up", said(0)));
    let (_secret, mut rx) = events.open(&conversation);
    let mut heard = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let Event::Said { text, .. } = event {
            heard.push(text);
        }
    }
    let newest: Vec<String> = (2..MAX_UNHEARD + 2).map(|n| n.to_string()).collect();
    assert_eq!(heard, newest, "the newest kept, in order");
    let (_secret, mut rx) = events.open("made-up");
    while let Ok(event) = rx.try_recv() {
        assert!(!matches!(event, Event::Said { .. }), "{event:?}");
    }
    // Heard once: a page opened again gets nothing twice.
    let (_secret, mut rx) = events.open(&conversation);
    while let Ok(event) = rx.try_recv() {
        assert!(!matches!(event, Event::Said { .. }), "{event:?}");
    }
}

#[test]
fn a_stopping_desk_ends_every_page_stream() {
    let events = Events::default();
    let (_a, mut first) = events.open("c1");
    let (_b, mut second) = events.open("c2");
    events.close_all();
    for rx in [&mut first, &mut second] {
        while let Ok(event) = rx.try_recv() {
            assert!(
                matches!(event, Event::Hello { .. } | Event::Inbox { .. }),
                "{event:?}"
            );
        }
        assert!(matches!(
            rx.try_recv(),
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected)
        ));
    }
    assert!(!events.is_watched("c1"));
}

#[test]
fn the_terminal_answers_for_its_person_and_a_loopback_desk_s_browsers_only() {
    let events = Events::default();
    let session = events.start_session("support-agent").unwrap();
    let loopback = events.owner_of_session(&session).unwrap();
    assert!(terminal_may_answer(&loopback, "support-agent"));
    assert!(terminal_may_answer("ana", "ana"));
    assert!(!terminal_may_answer("ana", "ben"));
    events.set_people(true);
    let person = events.owner_of_session(&session).unwrap();
    assert_eq!(person, "support-agent");
    assert!(!terminal_may_answer(&person, "ben"));
}

/// Finding 3 of issue 71: the desk's "Sign in to orders" link reached every page, and the
/// first browser session to open it owned it: on a desk with people, Dee finished the link, and
/// the desk's one orders connection then acted under Dee's account. Now it goes to the person
/// named to sign in, and no one else's browser may open it.
#[tokio::test(start_paused = true)]
async fn a_sign_in_link_reaches_and_opens_for_its_own_person_only() {
    let events = std::sync::Arc::new(Events::default());
    events.set_people(true);
    let ana = events.start_session("ana").unwrap();
    let dee = events.start_session("dee").unwrap();
    let anas_conversation = events.start_conversation(&ana);
    let dees_conversation = events.start_conversation(&dee);
    let (_, mut anas_page) = events.open(&anas_conversation);
    let (_, mut dees_page) = events.open(&dees_conversation);
    assert!(matches!(
        recv(&mut anas_page).await,
        Some(Event::Hello { .. })
    ));
    assert!(matches!(
        recv(&mut dees_page).await,
        Some(Event::Hello { .. })
    ));
    let signing_in = sign_in_to_orders(
        &events,
        "https://as.example/authorize?state=s-ana",
        Some("ana"),
    );
    assert!(matches!(
        recv(&mut anas_page).await,
        Some(Event::SignIn { .. })
    ));
    // Dee's page is not told, not even when opened again while it waits.
    let (_, mut dees_again) = events.open(&dees_conversation);
    assert!(matches!(
        recv(&mut dees_again).await,
        Some(Event::Hello { .. })
    ));
    while let Ok(event) = dees_again.try_recv() {
        assert!(!matches!(event, Event::SignIn { .. }), "{event:?}");
    }
    // Dee's browser may not open it, even first; Ana's may.
    assert_eq!(
        events.claim_sign_in("s-ana", &dee),
        Err(SignInError::SomeoneElse)
    );
    let (_, nonce) = events.claim_sign_in("s-ana", &ana).unwrap();
    assert_eq!(
        events.signed_in_by("code=c&state=s-ana", Some(&nonce)),
        Ok("orders".into())
    );
    assert_eq!(signing_in.await.unwrap(), Ok("code=c&state=s-ana".into()));
    while let Ok(event) = dees_page.try_recv() {
        assert!(
            !matches!(event, Event::SignIn { .. } | Event::SignInEnded { .. }),
            "{event:?}"
        );
    }
}

/// Issue 72: the dialog, the inbox and the terminal showed the server's words only, never the
/// call that asked (the tool and its arguments), so the person could not see what a yes would do.
#[tokio::test(start_paused = true)]
async fn a_question_names_the_call_that_asks_it_in_the_event_and_the_inbox() {
    let events = std::sync::Arc::new(Events::default());
    let (_secret, mut page) = events.open("c1");
    assert!(matches!(recv(&mut page).await, Some(Event::Hello { .. })));
    let long = "x".repeat(500);
    let shown = CallShown::new(
        "orders",
        "cancel_order",
        &serde_json::json!({"orderId": "ORD-10002", "reason": long}),
    );
    let calling = events.calling("c1", shown);
    let asking = ask_in(&events, "c1", "Cancel?");
    let Some(Event::Confirmation {
        question: Shown { id, call, .. },
        ..
    }) = recv(&mut page).await
    else {
        panic!("not asked")
    };
    let call = call.expect("the call is named");
    assert_eq!(
        (call.server.as_str(), call.tool.as_str()),
        ("orders", "cancel_order")
    );
    assert_eq!(call.arguments["orderId"], "ORD-10002");
    let reason = call.arguments["reason"].as_str().unwrap();
    assert!(reason.ends_with('…') && reason.chars().count() == MAX_ARGUMENTS_SHOWN + 1);
    assert!(
        call.line()
            .starts_with("cancel_order(orderId: \"ORD-10002\", reason: ")
    );
    let owner = events.owner_for("c1");
    let inbox = events.inbox(&owner);
    assert_eq!(
        inbox[0].call.as_ref().map(|c| c.tool.as_str()),
        Some("cancel_order")
    );
    let json = serde_json::to_value(&inbox[0]).unwrap();
    assert_eq!(json["call"]["arguments"]["orderId"], "ORD-10002", "{json}");
    events.answer_for(&id, &owner, Answer::No).unwrap();
    asking.await.unwrap();
    drop(calling);
    // Outside a call, nothing is named.
    let asking = ask_in(&events, "c1", "Again?");
    let Some(Event::Confirmation {
        question: Shown { id, call, .. },
        ..
    }) = recv(&mut page).await
    else {
        panic!("not asked")
    };
    assert_eq!(call, None);
    events.answer_for(&id, &owner, Answer::No).unwrap();
    asking.await.unwrap();
}

/// A question asked inside a task named whichever call ran in the conversation when it came
/// (the person's next message's `get_order`, or nothing, depending on timing): it names the
/// call that started the task, whatever runs meanwhile.
#[tokio::test(start_paused = true)]
async fn a_tasks_question_names_the_call_that_started_the_task_not_the_one_running_now() {
    let events = std::sync::Arc::new(Events::default());
    let (_secret, mut page) = events.open("c1");
    assert!(matches!(recv(&mut page).await, Some(Event::Hello { .. })));
    let started = CallShown::new(
        "orders",
        "cancel_order",
        &serde_json::json!({"orderId": "ORD-10002"}),
    );
    let running = CallShown::new(
        "orders",
        "get_order",
        &serde_json::json!({"orderId": "ORD-10001"}),
    );
    let _calling = events.calling("c1", running);
    for (call, named) in [(Some(started), Some("cancel_order")), (None, None)] {
        let waiting = {
            let events = events.clone();
            tokio::spawn(async move {
                let never = std::future::pending();
                let asked = events.ask_waiting(("orders", call), "c1", "Cancel?", MINUTE, never);
                asked.await
            })
        };
        let Some(Event::Confirmation {
            question: Shown { id, call, .. },
            ..
        }) = recv(&mut page).await
        else {
            panic!("not asked")
        };
        assert_eq!(call.as_ref().map(|c| c.tool.as_str()), named);
        let owner = events.owner_for("c1");
        let listed = events.inbox(&owner);
        assert_eq!(listed[0].call.as_ref().map(|c| c.tool.as_str()), named);
        events.answer_for(&id, &owner, Answer::No).unwrap();
        assert_eq!(waiting.await.unwrap(), Some(Asked::Answered(Answer::No)));
    }
}

/// A minute, for a question's deadline.
const MINUTE: Duration = Duration::from_secs(60);

/// A sign-in to the server `orders` at `url` (ten minutes; for `person` only, when named), as
/// a task the test awaits.
fn sign_in_to_orders(
    events: &std::sync::Arc<Events>,
    url: &'static str,
    person: Option<&'static str>,
) -> tokio::task::JoinHandle<Result<String, String>> {
    let events = events.clone();
    tokio::spawn(async move {
        events
            .sign_in("orders", url, Duration::from_secs(600), person)
            .await
    })
}

/// Ask `message` in `conversation` (60 s to answer), as a task the test awaits.
fn ask_in(
    events: &std::sync::Arc<Events>,
    conversation: &'static str,
    message: &'static str,
) -> tokio::task::JoinHandle<Asked> {
    let events = events.clone();
    tokio::spawn(async move {
        events
            .ask(conversation, message, Duration::from_secs(60))
            .await
    })
}

/// Issue 75: a question asked at the terminal never showed in the page's badge. On a desk
/// without people every browser session is the terminal's user's, so a page's inbox holds the
/// terminal's questions too (and answers them); with people, only that person's pages do.
#[tokio::test(start_paused = true)]
async fn a_terminal_question_is_in_a_loopback_page_s_inbox_and_answered_there() {
    let events = std::sync::Arc::new(Events::default());
    events.set_default_person("support-agent");
    let session = events.start_session("support-agent").unwrap();
    let page = events.start_conversation(&session);
    let (_secret, mut stream) = events.open(&page);
    assert!(matches!(recv(&mut stream).await, Some(Event::Hello { .. })));
    let (_terminal_secret, mut terminal) = events.open(TERMINAL);
    assert!(matches!(
        recv(&mut terminal).await,
        Some(Event::Hello { .. })
    ));
    let asking = ask_in(&events, TERMINAL, "Cancel?");
    // The page is sent its inbox with the terminal's question; no dialog of its own.
    let questions = loop {
        match tokio::time::timeout(Duration::from_secs(5), stream.recv()).await {
            Ok(Some(Event::Inbox { questions })) if !questions.is_empty() => break questions,
            Ok(Some(Event::Confirmation { .. })) => {
                panic!("the page was asked the terminal's question")
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => panic!("the page never saw the terminal's question"),
        }
    };
    assert_eq!(questions[0].message, "Cancel?");
    let viewer = events.owner_of_session(&session).unwrap();
    events
        .answer_for(&questions[0].id, &viewer, Answer::No)
        .unwrap();
    assert_eq!(asking.await.unwrap(), Asked::Answered(Answer::No));

    // With people, another person's page neither sees nor answers the terminal user's question.
    events.set_people(true);
    let ben = events.start_session("ben").unwrap();
    let ben = events.owner_of_session(&ben).unwrap();
    let asking = ask_in(&events, TERMINAL, "Again?");
    let id = loop {
        match tokio::time::timeout(Duration::from_secs(5), recv(&mut terminal)).await {
            Ok(Some(Event::Confirmation {
                question: Shown { id, message, .. },
                ..
            })) if message == "Again?" => break id,
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => panic!("the terminal was never asked"),
        }
    };
    assert_eq!(
        events.inbox("support-agent").len(),
        1,
        "the terminal user's own"
    );
    assert!(events.inbox(&ben).is_empty());
    assert_eq!(
        events.answer_for(&id, &ben, Answer::No),
        Err(AnswerError::Forbidden)
    );
    events.answer_for(&id, "support-agent", Answer::No).unwrap();
    asking.await.unwrap();
}
