//! Every kind of question a server may ask, through the desk's page (issue 72): a link to
//! open (an elicitation in URL mode), a form of the server's own, on both revisions. The server
//! is backchannel's test server (`sign_in`, `open_url`, `two_steps`); a scripted model calls
//! the tool the message names.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use agent::app;
use agent::desk::DeskConfig;
use agent::llm::{OpenAiCompatible, Provider};
use axum::Json;
use backchannel::Revision;
use backchannel::serve::HttpOptions;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{Events, Forget, chat};

/// The script: "call TOOL {json}" calls TOOL with the JSON; a tool result is said back as
/// "The tool said: …".
async fn completions(Json(request): Json<Value>) -> Json<Value> {
    let last = request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let text = last["content"].as_str().unwrap_or_default().to_owned();
    let message = if last["role"] == "tool" {
        json!({"role": "assistant", "content": format!("The tool said: {text}")})
    } else if let Some(rest) = text.strip_prefix("call ") {
        let (tool, arguments) = rest.split_once(' ').unwrap_or((rest, "{}"));
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": tool, "arguments": arguments}
        }]})
    } else {
        json!({"role": "assistant", "content": "Hello."})
    };
    crate::common::completion(message)
}

/// A desk on `protocol` in front of backchannel's test server; its page URL.
async fn desk(protocol: Revision, stop: &CancellationToken) -> String {
    desk_with(protocol, stop, |_| {}).await
}

/// [`desk`], its settings as `configure` leaves them.
async fn desk_with(
    protocol: Revision,
    stop: &CancellationToken,
    configure: impl FnOnce(&mut DeskConfig),
) -> String {
    let model = crate::common::serve_fake(
        axum::Router::new().route("/chat/completions", axum::routing::post(completions)),
    )
    .await;
    let server = backchannel::testing::TestServer::new(backchannel::Backchannel::new());
    let server_url = crate::common::serve_mcp(move || server.clone(), stop).await;
    let web = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", web.local_addr().unwrap());
    let mut config = DeskConfig {
        orders_url: server_url,
        protocol: Some(protocol),
        model: Some(Provider::OpenAi(
            OpenAiCompatible::new(&model, None, "fake", Duration::from_secs(10)).unwrap(),
        )),
        tasks: false,
        ..DeskConfig::default()
    };
    configure(&mut config);
    tokio::spawn(app::serve_web(
        web,
        config,
        HttpOptions::default(),
        stop.clone(),
    ));
    url
}

/// Post an answer to a page's question; the status and the body.
async fn post_answer(url: &str, id: &str, body: Value) -> (u16, Value) {
    let cookie = crate::common::cookie(url).await;
    crate::common::post_as(url, &format!("api/confirmations/{id}"), &cookie, body).await
}

/// Issue 72: a server's link question was declined unseen. It is shown with its origin, and
/// the person's yes, no or cancel reaches the tool as accept, decline or cancel; on 2025-11-25
/// the server's word that the page's work is done is said in the conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_question_is_shown_with_its_origin_and_answered_as_the_person_chooses() {
    for protocol in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let stop = CancellationToken::new();
        let url = desk(protocol, &stop).await;
        let _forget = Forget::new(&url);
        let (mut events, secret) = Events::open_at(&url, "c1").await;
        for (answer, said) in [
            (json!({"confirmed": true}), "accepted"),
            (json!({"confirmed": false}), "declined"),
            (json!({"confirmed": false, "cancel": true}), "cancelled"),
        ] {
            let reply = tokio::spawn({
                let url = url.clone();
                async move { chat(&url, "c1", "call sign_in {}").await }
            });
            let link = events.next_of("link").await;
            assert_eq!(link["url"], "https://example.test/login", "{link}");
            assert_eq!(link["origin"], "https://example.test", "{link}");
            assert_eq!(link["message"], "Sign in to continue", "{link}");
            assert_eq!(link["call"]["tool"], "sign_in", "{link}");
            let mut body = answer.clone();
            body["secret"] = json!(secret);
            let (status, _) = post_answer(&url, link["id"].as_str().unwrap(), body).await;
            assert_eq!(status, 204, "{protocol:?}");
            let reply = reply.await.unwrap();
            assert!(reply.contains(said), "{protocol:?} {said}: {reply}");
            if said == "accepted" && protocol == Revision::V2025_11_25 {
                // The server sent notifications/elicitation/complete: the page hears it.
                assert!(reply.contains("complete-sent=true"), "{reply}");
                let done = events.said_ending("what the link was for is done.").await;
                assert_eq!(done["text"], "orders says what the link was for is done.");
            }
        }
        stop.cancel();
    }
}

/// Issue 72: only `https:` (and `http:` on this machine) is offered; anything else is declined
/// without a link on the page, and the person is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_that_is_not_https_is_never_offered() {
    for protocol in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let stop = CancellationToken::new();
        let url = desk(protocol, &stop).await;
        let _forget = Forget::new(&url);
        let (mut events, _secret) = Events::open_at(&url, "c1").await;
        let reply = chat(&url, "c1", r#"call open_url {"url":"javascript:alert(1)"}"#).await;
        assert!(reply.contains("declined"), "{protocol:?}: {reply}");
        let said = events.next_of("said").await;
        assert!(
            said["text"].as_str().unwrap().contains("does not open"),
            "{said}"
        );
        stop.cancel();
    }
}

/// Issue 72: a server's own form (not the order service's yes/no) was answered as a yes/no with
/// a note, which no other server's schema takes. Its fields are shown, what the person fills in
/// is checked before it goes (a wrong answer is refused and the question waits), and the values
/// reach the tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_own_form_is_shown_field_by_field_and_its_values_reach_the_tool() {
    for protocol in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let stop = CancellationToken::new();
        let url = desk(protocol, &stop).await;
        let _forget = Forget::new(&url);
        let (mut events, secret) = Events::open_at(&url, "c1").await;
        let reply = tokio::spawn({
            let url = url.clone();
            async move { chat(&url, "c1", "call two_steps {}").await }
        });
        // First the yes/no confirmation: no fields of its own.
        let first = events.next_of("confirmation").await;
        assert!(first.get("fields").is_none(), "{first}");
        let status =
            crate::common::answer(&url, first["id"].as_str().unwrap(), &secret, true).await;
        assert_eq!(status, 204);
        // Then the colour: a form with one required text field.
        let form = events.next_of("confirmation").await;
        assert_eq!(form["fields"][0]["name"], "color", "{form}");
        assert_eq!(form["fields"][0]["required"], true, "{form}");
        let id = form["id"].as_str().unwrap();
        let (status, refused) = post_answer(
            &url,
            id,
            json!({"secret": secret, "confirmed": true, "content": {"colour": "red"}}),
        )
        .await;
        assert_eq!(status, 422, "{refused}");
        let (status, refused) = post_answer(
            &url,
            id,
            json!({"secret": secret, "confirmed": true, "note": "a yes is not a colour"}),
        )
        .await;
        assert_eq!(status, 422, "a yes to a form is refused: {refused}");
        let (status, _) = post_answer(
            &url,
            id,
            json!({"secret": secret, "confirmed": true, "content": {"color": "teal"}}),
        )
        .await;
        assert_eq!(status, 204);
        let reply = reply.await.unwrap();
        assert!(reply.contains("teal"), "{protocol:?}: {reply}");
        stop.cancel();
    }
}

/// A model that answers a sampling request (no tools offered) with fixed words.
async fn sampling_model(Json(request): Json<Value>) -> Json<Value> {
    assert!(request.get("tools").is_none(), "{request}");
    crate::common::completion(json!({"role": "assistant",
        "content": "SUMMARY: Viewers found it a gripping heist with a clever twist.\nTHEMES: heist; twist"}))
}

/// Issue 72: `support-agent demo --server movies=URL` reaches moviedb beside the order service:
/// its tools are listed (under `movies_`), one is called by hand from the page without the
/// model choosing it, its sampling request is approved in the page (twice: the request, then
/// the reply) and answered by the desk's model, and the summary says the client's model wrote it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_server_is_reached_its_tool_called_by_hand_and_its_sampling_approved() {
    let stop = CancellationToken::new();
    let movies_url = crate::common::serve_moviedb(&stop).await;
    let model = crate::common::serve_fake(
        axum::Router::new().route("/chat/completions", axum::routing::post(sampling_model)),
    )
    .await;
    let model = Provider::OpenAi(
        OpenAiCompatible::new(&model, None, "tiny", Duration::from_secs(10)).unwrap(),
    );
    let server: agent::desk::Server = format!("movies={movies_url}").parse().unwrap();
    let demo = crate::common::start_with_model(model, |desk| desk.servers = vec![server]).await;
    let url = demo.url.clone();
    let cookie = crate::common::cookie(&url).await;
    let tools: Value = crate::common::json_answer(
        reqwest::Client::new()
            .get(format!("{url}api/tools"))
            .header(reqwest::header::COOKIE, &cookie),
    )
    .await;
    let names = backchannel::testing::names(&tools);
    assert!(names.contains(&"movies_summarizeMovieReviews"), "{names:?}");
    assert!(
        names.contains(&"cancel_order"),
        "the order service's too: {names:?}"
    );
    let (mut events, secret) = Events::open(&demo, "c1").await;
    let conversation = crate::common::conversation(&url, "c1").await;
    let called = tokio::spawn({
        let (url, cookie) = (url.clone(), cookie.clone());
        async move {
            let response = reqwest::Client::new()
                .post(format!("{url}api/tools/call"))
                .header(reqwest::header::COOKIE, cookie)
                .json(&json!({"conversationId": conversation,
                    "name": "movies_summarizeMovieReviews", "arguments": {"movieId": "1"}}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            response.json::<Value>().await.unwrap()
        }
    });
    let request = events.next_of("sampling").await;
    assert_eq!(request["server"], "movies", "{request}");
    assert_eq!(
        request["call"]["tool"], "summarizeMovieReviews",
        "{request}"
    );
    let status = crate::common::answer(&url, request["id"].as_str().unwrap(), &secret, true).await;
    assert_eq!(status, 204);
    let review = events.next_of("sampling").await;
    assert!(
        review["message"]
            .as_str()
            .unwrap()
            .contains("gripping heist"),
        "{review}"
    );
    let status = crate::common::answer(&url, review["id"].as_str().unwrap(), &secret, true).await;
    assert_eq!(status, 204);
    let called = called.await.unwrap();
    assert_eq!(called["isError"], false, "{called}");
    let text = called["text"].as_str().unwrap();
    assert!(text.contains("gripping heist"), "{text}");
    assert!(text.contains("CLIENT_MODEL"), "{text}");
    // A tool nobody offers, or arguments that are not an object, change nothing.
    for (name, arguments) in [("movies_nothing", json!({})), ("cancel_order", json!([1]))] {
        let conversation = crate::common::conversation(&url, "c1").await;
        let response = reqwest::Client::new()
            .post(format!("{url}api/tools/call"))
            .header(reqwest::header::COOKIE, &cookie)
            .json(&json!({"conversationId": conversation, "name": name, "arguments": arguments}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{name}");
    }
    stop.cancel();
}

/// Post a change of the folders of notes; the status and the body.
async fn change_folders(url: &str, action: &str, path: &std::path::Path) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{url}api/folders"))
        .header(reqwest::header::COOKIE, crate::common::cookie(url).await)
        .json(&json!({"action": action, "path": path}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Issue 72: the roots could not change while the desk ran. A folder of notes added from the
/// page becomes a root of the official filesystem server (told by
/// `notifications/roots/list_changed`), whose notes the desk's search then reads; removed, it is
/// read no more. A folder outside the trusted ones, or the desk's own notes, are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_of_notes_is_added_and_removed_while_the_desk_runs() {
    let trusted = std::env::temp_dir().join(format!("desk-folders-{}", std::process::id()));
    let pets = trusted.join("pets");
    std::fs::create_dir_all(&pets).unwrap();
    std::fs::write(
        pets.join("hamsters.md"),
        "# Hamsters\n\nHamsters ship free of charge in a ventilated travel box.\n",
    )
    .unwrap();
    let stop = CancellationToken::new();
    let url = desk_with(Revision::V2026_07_28, &stop, |desk| {
        desk.knowledge = Some(agent::desk::Knowledge {
            trusted: vec![trusted.clone()],
            ..crate::common::knowledge()
        });
    })
    .await;
    let _forget = Forget::new(&url);
    let search = r#"call search_support_notes {"question":"how do hamsters ship in a travel box"}"#;
    let before = chat(&url, "c1", search).await;
    assert!(!before.contains("ventilated"), "{before}");
    let (status, added) = change_folders(&url, "add", &pets).await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["changed"], true, "{added}");
    assert_eq!(added["folders"].as_array().unwrap().len(), 2, "{added}");
    let after = chat(&url, "c1", search).await;
    assert!(after.contains("[pets/hamsters.md]"), "{after}");
    assert!(after.contains("ventilated travel box"), "{after}");
    let (status, removed) = change_folders(&url, "remove", &pets).await;
    assert_eq!(status, 200, "{removed}");
    let gone = chat(&url, "c1", search).await;
    assert!(!gone.contains("ventilated"), "{gone}");
    // Outside the trusted folders, or the desk's own notes: refused, nothing changes.
    let (status, refused) = change_folders(&url, "add", std::path::Path::new("/etc")).await;
    assert_eq!(status, 400, "{refused}");
    let own = crate::common::knowledge().current;
    let (status, refused) = change_folders(&url, "remove", &own).await;
    assert_eq!(status, 400, "{refused}");
    let listed: Value = crate::common::json_answer(
        reqwest::Client::new()
            .get(format!("{url}api/folders"))
            .header(reqwest::header::COOKIE, crate::common::cookie(&url).await),
    )
    .await;
    assert_eq!(listed["folders"].as_array().unwrap().len(), 1, "{listed}");
    stop.cancel();
    let _ = std::fs::remove_dir_all(&trusted);
}
