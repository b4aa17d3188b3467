//! The browser front end: the chat and confirmation API, the live event stream, and the static
//! page embedded in the binary.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::Stream;
use serde::Deserialize;

use crate::desk::Desk;
use crate::events::{Answer, AnswerError};
use crate::web_session::{
    cookie_of, live_session, no_session, owner_of_request, people_only, refusal, refused_for,
    session_cookie_name, session_of, sign_in_first,
};

const INDEX: &str = include_str!("../static/index.html");
const SCRIPT: &str = include_str!("../static/app.js");
const STYLE: &str = include_str!("../static/style.css");
const FAVICON: &str = include_str!("../static/favicon.svg");
const SIGN_IN_PAGE: &str = include_str!("../static/signin.html");
const SIGN_IN_SCRIPT: &str = include_str!("../static/signin.js");

/// The longest conversation id accepted.
const MAX_CONVERSATION_ID: usize = 128;

/// What a page may send when it starts: the conversation it had before a reload.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartRequest {
    #[serde(default)]
    conversation_id: Option<String>,
}

/// `POST /api/conversations`: the conversation a page goes on with: the one it names when
/// this browser's session made it (a reload), else a new one made by the desk (with the
/// session's `HttpOnly; SameSite=Strict` cookie when the browser has none).
async fn start_conversation(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let request: StartRequest = if body.is_empty() {
        StartRequest::default()
    } else {
        match serde_json::from_slice::<Option<StartRequest>>(&body) {
            Ok(request) => request.unwrap_or_default(),
            Err(error) => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    format!("expected {{\"conversationId\": …}} or nothing: {error}"),
                );
            }
        }
    };
    let signed_in = live_session(&desk, &headers);
    let (session, fresh) = match (signed_in, desk.people()) {
        (Some(session), _) => (session, false),
        // One implicit person (a desk on loopback): a browser's first visit is a session.
        (None, None) => match desk.start_session(desk.implicit_person()).await {
            Ok(Some(session)) => (session, true),
            Ok(None) => return too_many_sessions(),
            Err(error) => return store_failed(&error),
        },
        (None, Some(_)) => return sign_in_first(),
    };
    let resumed = request
        .conversation_id
        .filter(|id| id.len() <= MAX_CONVERSATION_ID && desk.events().belongs_to(id, &session));
    let (conversation, resumed) = match resumed {
        Some(id) => (id, true),
        None => match desk.start_conversation(&session).await {
            Ok(id) => (id, false),
            Err(error) => return store_failed(&error),
        },
    };
    let body = Json(serde_json::json!({ "conversationId": conversation, "resumed": resumed }));
    if fresh {
        (
            [(
                header::SET_COOKIE,
                session_cookie(&desk, &headers, &session),
            )],
            body,
        )
            .into_response()
    } else {
        body.into_response()
    }
}

/// The `Set-Cookie` of a browser session (`Secure` when browsers reach the desk over
/// `https:`).
fn session_cookie(desk: &Desk, headers: &axum::http::HeaderMap, session: &str) -> String {
    format!(
        "{}={session}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
        session_cookie_name(headers),
        crate::events::SESSION_LIFETIME.as_secs(),
        secure(desk)
    )
}

/// `; Secure` when browsers reach the desk over `https:` (its sign-in callback, the address
/// it gives authorization servers, says how): a cookie then never travels in the clear.
fn secure(desk: &Desk) -> &'static str {
    if desk.reached_over_https() {
        "; Secure"
    } else {
        ""
    }
}

/// 503: every session has a page open, and none is pushed out for a newcomer.
fn too_many_sessions() -> Response {
    refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        "the desk has as many open pages as it keeps: close one and try again",
    )
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignInRequest {
    name: String,
    password: String,
}

/// The address a request came from (the accept loop puts it beside each request); the
/// unspecified address when none is known.
fn client_address(
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
) -> std::net::IpAddr {
    peer.map_or(std::net::Ipv6Addr::UNSPECIFIED.into(), |peer| peer.0.0.ip())
}

/// `POST /api/sign-in`: a person of the people file signs in; the session's cookie is set.
async fn sign_in(
    State(desk): State<Arc<Desk>>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    headers: axum::http::HeaderMap,
    Json(request): Json<SignInRequest>,
) -> Response {
    let Some(people) = desk.people() else {
        return refusal(
            StatusCode::NOT_FOUND,
            "this desk has no people file: it serves one person, on loopback",
        );
    };
    let from = client_address(peer);
    match people.sign_in(&request.name, &request.password, from).await {
        Ok(person) => {
            tracing::info!(person, "signed in to the desk");
            let session = match desk.start_session(&person).await {
                Ok(Some(session)) => session,
                Ok(None) => return too_many_sessions(),
                Err(error) => return store_failed(&error),
            };
            (
                [(
                    header::SET_COOKIE,
                    session_cookie(&desk, &headers, &session),
                )],
                Json(serde_json::json!({ "person": person })),
            )
                .into_response()
        }
        Err(refused) => {
            tracing::info!(name = %request.name.chars().take(64).collect::<String>(), %refused, "a sign-in to the desk was refused");
            let status = match refused {
                crate::people::SignInRefused::NoMatch => StatusCode::UNAUTHORIZED,
                crate::people::SignInRefused::Locked => StatusCode::TOO_MANY_REQUESTS,
            };
            refusal(status, refused)
        }
    }
}

/// `POST /api/sign-out`: the session ends, its conversations with it.
async fn sign_out(State(desk): State<Arc<Desk>>, headers: axum::http::HeaderMap) -> Response {
    if let Some(session) = session_of(&headers)
        && let Err(error) = desk.end_session(&session).await
    {
        return store_failed(&error);
    }
    let expired = format!(
        "{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{}",
        session_cookie_name(&headers),
        secure(&desk)
    );
    ([(header::SET_COOKIE, expired)], StatusCode::NO_CONTENT).into_response()
}

/// 503: the desk's database failed (nothing was handed out).
fn store_failed(error: &crate::store::StoreError) -> Response {
    tracing::error!(%error, "the desk's database failed");
    refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the desk could not keep this session: {error}; try again"),
    )
}

/// `GET /api/inbox`: the person's open questions, in every conversation of theirs.
async fn inbox(State(desk): State<Arc<Desk>>, headers: axum::http::HeaderMap) -> Response {
    match owner_of_request(&desk, &headers) {
        Some(owner) => Json(desk.events().inbox(&owner)).into_response(),
        None => no_session(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InboxAnswer {
    confirmed: bool,
    #[serde(default)]
    note: Option<String>,
    /// Put away without a choice (a link question's Cancel).
    #[serde(default)]
    cancel: bool,
    /// A form's values (with `confirmed`: sent; checked against the form first).
    #[serde(default)]
    content: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The person's answer as a page posts it: a form's values, cancel, yes (with the note), no.
fn answer_of(
    confirmed: bool,
    note: Option<String>,
    cancel: bool,
    content: Option<serde_json::Map<String, serde_json::Value>>,
) -> Answer {
    match (confirmed, cancel, content) {
        (_, true, _) => Answer::Cancel,
        (true, false, Some(values)) => Answer::Filled(values),
        (true, false, None) => Answer::Yes {
            note: note.unwrap_or_default(),
        },
        (false, false, _) => Answer::No,
    }
}

/// An answer refused: 404 (no such open question), 403 (someone else's), 422 (it does not
/// fit the question, which still waits).
fn refused_answer(error: AnswerError) -> Response {
    let status = match &error {
        AnswerError::NotFound => StatusCode::NOT_FOUND,
        AnswerError::Forbidden => StatusCode::FORBIDDEN,
        AnswerError::Refused(_) => StatusCode::UNPROCESSABLE_ENTITY,
    };
    let message = match &error {
        AnswerError::NotFound => {
            "no open question has that id (answered, expired, or never asked)".to_owned()
        }
        AnswerError::Forbidden => "that question is someone else's".to_owned(),
        AnswerError::Refused(why) => why.clone(),
    };
    refusal(status, message)
}

/// `POST /api/inbox/{id}`: the person answers one of their questions, from any page of theirs.
async fn answer_from_inbox(
    State(desk): State<Arc<Desk>>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    Json(answer): Json<InboxAnswer>,
) -> Response {
    let Some(owner) = owner_of_request(&desk, &headers) else {
        return no_session();
    };
    let reply = answer_of(answer.confirmed, answer.note, answer.cancel, answer.content);
    match desk.events().answer_for_anywhere(&id, &owner, reply).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => refused_answer(error),
    }
}

/// `GET /api/me`: who this browser is signed in as, and whether the desk has people.
async fn me(State(desk): State<Arc<Desk>>, headers: axum::http::HeaderMap) -> Response {
    let person = session_of(&headers).and_then(|s| desk.events().person_of_session(&s));
    Json(serde_json::json!({
        "person": person,
        "people": desk.people().is_some(),
    }))
    .into_response()
}

/// Refuse a request from anyone but a signed-in person, on a desk with people.
async fn people_only_layer(
    State(desk): State<Arc<Desk>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match people_only(&desk, request.headers()) {
        Some(refusal) => refusal,
        None => next.run(request).await,
    }
}

/// On a database desks share, take from it the request's session when another desk made it
/// (and the conversations made since), before anything reads who the request is.
async fn recall_layer(
    State(desk): State<Arc<Desk>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path();
    let asks_who = path.starts_with("/api/") || path.starts_with("/oauth/");
    if asks_who && let Some(session) = session_of(request.headers()) {
        desk.recall(&session).await;
    }
    next.run(request).await
}

/// The web UI and its API over `desk` (and `/metrics` when the desk is set to serve it: on a
/// desk with people, for signed-in people only).
pub fn routes(desk: Arc<Desk>) -> Router {
    let metrics = if desk.serves_metrics() {
        backchannel::serve::metrics_router().route_layer(axum::middleware::from_fn_with_state(
            desk.clone(),
            people_only_layer,
        ))
    } else {
        Router::new()
    };
    let ui = Router::new()
        .route(
            "/",
            get(|| async { ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX) }),
        )
        .route(
            "/app.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    SCRIPT,
                )
            }),
        )
        .route(
            "/style.css",
            get(|| async { ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE) }),
        )
        .route("/favicon.svg", get(favicon))
        .route("/favicon.ico", get(favicon))
        .route("/healthz", get(healthz))
        .route("/api/greeting", get(greeting))
        .route("/api/desk", get(vocabulary))
        .route("/api/conversations", post(start_conversation))
        .route("/api/sign-in", post(sign_in))
        .route("/api/sign-out", post(sign_out))
        .route("/api/me", get(me))
        .route("/api/inbox", get(inbox))
        .route("/api/inbox/{id}", post(answer_from_inbox))
        .route(
            "/signin",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    SIGN_IN_PAGE,
                )
            }),
        )
        .route(
            "/signin.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    SIGN_IN_SCRIPT,
                )
            }),
        )
        .route("/api/chat", post(chat))
        .route("/api/chat/stop", post(stop))
        .route("/api/refund-email", post(refund_email))
        .route("/api/events", get(events))
        .route("/api/confirmations/{id}", post(confirm))
        .route("/api/orders", get(orders))
        .route(START_PATH, get(start_sign_in))
        .route(CALLBACK_PATH, get(signed_in_here))
        .merge(crate::web_tools::routes())
        .layer(axum::middleware::from_fn_with_state(
            desk.clone(),
            recall_layer,
        ))
        .with_state(desk);
    ui.merge(metrics)
}

/// Where the authorization server sends the browser back to after a sign-in.
pub const CALLBACK_PATH: &str = "/oauth/callback";

/// Where a page's "Sign in to …" link goes first: the desk notes which browser opened it.
pub const START_PATH: &str = "/oauth/start";

/// The cookie that carries a sign-in's nonce from `/oauth/start` to the callback (`Lax`: the
/// authorization server's redirect back is a navigation from another site).
const SIGN_IN_COOKIE: &str = "desk_signin";

/// A small page saying how a sign-in step went.
fn sign_in_page(status: StatusCode, title: &str, text: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1 id=\"sign-in-title\">{title}</h1><p id=\"sign-in-text\">{text}</p></body></html>",
        title = crate::render::escape(title),
        text = crate::render::escape(text),
    );
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// `GET /oauth/start?state=…`: a page's sign-in link. The browser session that opens it first
/// holds the sign-in; its browser gets the nonce (a cookie) the callback must bring back, and
/// is sent on to the authorization server.
async fn start_sign_in(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(session) = live_session(&desk, &headers) else {
        return sign_in_page(
            StatusCode::UNAUTHORIZED,
            "Sign-in not started",
            "Open the sign-in link from the desk's page, in the browser you use the desk in.",
        );
    };
    let state = query.get("state").map(String::as_str).unwrap_or_default();
    match desk.events().claim_sign_in(state, &session) {
        Ok((url, nonce)) => (
            StatusCode::SEE_OTHER,
            [
                (header::LOCATION, url),
                (
                    header::SET_COOKIE,
                    format!(
                        "{SIGN_IN_COOKIE}={nonce}; Path={CALLBACK_PATH}; HttpOnly; SameSite=Lax; Max-Age=900{}",
                        secure(&desk)
                    ),
                ),
            ],
        )
            .into_response(),
        Err(crate::events::SignInError::SomeoneElse) => sign_in_page(
            StatusCode::FORBIDDEN,
            "Sign-in not started",
            "This sign-in is for another person of this desk: only they may open it. Nothing \
             was changed.",
        ),
        Err(error) => sign_in_page(
            StatusCode::CONFLICT,
            "Sign-in not started",
            &format!("{error}: it may have finished already or waited too long."),
        ),
    }
}

/// The callback of a desk with its web UI: only the browser that opened the sign-in from a
/// page (it holds the nonce) finishes it.
async fn signed_in_here(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let nonce = cookie_of(&headers, SIGN_IN_COOKIE);
    finish(&uri, |query| {
        desk.events().signed_in_by(query, nonce.as_deref())
    })
}

/// Only the sign-in callback, for a desk without the web UI (the terminal).
pub fn callback_routes(desk: Arc<Desk>) -> Router {
    Router::new()
        .route(CALLBACK_PATH, get(signed_in))
        .with_state(desk)
}

/// The longest callback query accepted (a code and a state are a few hundred bytes).
const MAX_CALLBACK_QUERY: usize = 8 * 1024;

/// The browser is back from the authorization server: hand the code to the sign-in waiting for
/// it (matched by its `state`) and tell the person they can go back to the desk.
async fn signed_in(State(desk): State<Arc<Desk>>, uri: axum::http::Uri) -> Response {
    finish(&uri, |query| desk.events().signed_in(query))
}

/// Hand the callback's query to the sign-in waiting for it (through `finish`) and say how it
/// went.
fn finish(
    uri: &axum::http::Uri,
    finish: impl FnOnce(&str) -> Result<String, crate::events::SignInError>,
) -> Response {
    let query = uri.query().unwrap_or_default();
    let page = sign_in_page;
    if query.len() > MAX_CALLBACK_QUERY {
        return page(
            StatusCode::BAD_REQUEST,
            "Sign-in not finished",
            "The address the browser came back with is too long to be a sign-in.",
        );
    }
    let refused = crate::events::query_param(query, "error");
    match (finish(query), refused) {
        (Ok(server), None) => page(
            StatusCode::OK,
            &format!("Signed in to {server}"),
            "You can close this tab: the desk goes on with what it was doing.",
        ),
        (Ok(server), Some(error)) => page(
            StatusCode::OK,
            &format!("{server} refused the sign-in"),
            &format!("The authorization server said \"{error}\". Ask the desk again to retry."),
        ),
        (Err(error), _) => page(
            StatusCode::BAD_REQUEST,
            "Sign-in not finished",
            &format!(
                "{error}: it may have finished already or waited too long. Start again from the desk."
            ),
        ),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChatRequest {
    conversation_id: String,
    message: String,
    #[serde(default)]
    order_id: Option<String>,
}

async fn chat(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
    Json(request): Json<ChatRequest>,
) -> Response {
    if request.conversation_id.len() > MAX_CONVERSATION_ID {
        return refusal(
            StatusCode::BAD_REQUEST,
            "that is no conversation of this desk",
        );
    }
    if let Some(refused) = refused_for(&desk, &headers, &request.conversation_id) {
        return refused;
    }
    if request.message.trim().is_empty() {
        return refusal(StatusCode::BAD_REQUEST, "the message is empty");
    }
    if request.message.len() > crate::rules::MAX_MESSAGE_BYTES {
        let message = format!(
            "a message is at most {} bytes; this one is {}: shorten it and send it again",
            crate::rules::MAX_MESSAGE_BYTES,
            request.message.len()
        );
        return refusal(StatusCode::BAD_REQUEST, message);
    }
    // The work is the desk's, not this request's: a page that reloads (or leaves) while it
    // runs does not drop it; its reply also goes to the conversation's stream (`done`).
    let work = tokio::spawn({
        let desk = desk.clone();
        async move {
            desk.chat_run(
                &request.conversation_id,
                &request.message,
                request.order_id.as_deref(),
            )
            .await
        }
    });
    match work.await {
        Ok((reply, run)) => {
            let mut answer = reply_json(&reply);
            answer["run"] = run.into();
            Json(answer).into_response()
        }
        Err(_) => refusal(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the desk failed while answering: see its log",
        ),
    }
}

/// A reply for the page: plain text, and the same Markdown rendered as sanitised HTML.
fn reply_json(markdown: &str) -> serde_json::Value {
    serde_json::json!({
        "reply": crate::render::plain(markdown),
        "html": crate::render::html(markdown),
    })
}

/// `GET /healthz`: 200 while the desk's database answers (a balancer's check), else 503.
async fn healthz(State(desk): State<Arc<Desk>>) -> Response {
    match desk.database_answers().await {
        Ok(()) => Json(serde_json::json!({"status": "ok"})).into_response(),
        Err(error) => {
            tracing::warn!(%error, "health check: the desk's database does not answer");
            refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "the desk's database does not answer",
            )
        }
    }
}

async fn favicon() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "max-age=86400"),
        ],
        FAVICON,
    )
}

/// The page's vocabulary (`vocabulary::desk`), the refund reasons the order service's.
async fn vocabulary(State(desk): State<Arc<Desk>>) -> Response {
    Json(crate::vocabulary::desk(&desk.refund_reasons().await)).into_response()
}

/// What the desk says before anything is asked.
async fn greeting(State(desk): State<Arc<Desk>>) -> Response {
    Json(reply_json(&desk.greeting())).into_response()
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StopRequest {
    conversation_id: String,
    secret: String,
}

/// Stop the conversation's message in flight. Like an answer, it needs the conversation's secret.
async fn stop(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
    Json(request): Json<StopRequest>,
) -> Response {
    if let Some(refused) = refused_for(&desk, &headers, &request.conversation_id) {
        return refused;
    }
    if !desk
        .events()
        .owns(&request.conversation_id, &request.secret)
    {
        return refusal(
            StatusCode::FORBIDDEN,
            "that secret does not own this conversation",
        );
    }
    if desk.stop(&request.conversation_id).await {
        StatusCode::NO_CONTENT.into_response()
    } else {
        refusal(
            StatusCode::NOT_FOUND,
            "nothing is running in this conversation",
        )
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RefundRequest {
    order_id: String,
    reason: String,
}

async fn refund_email(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
    Json(request): Json<RefundRequest>,
) -> Response {
    if let Some(refused) = people_only(&desk, &headers) {
        return refused;
    }
    let reply = desk.refund_email(&request.order_id, &request.reason).await;
    Json(reply_json(&reply)).into_response()
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventsQuery {
    conversation_id: String,
}

async fn events(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
    Query(query): Query<EventsQuery>,
) -> Response {
    if let Some(refused) = refused_for(&desk, &headers, &query.conversation_id) {
        return refused;
    }
    event_stream(&desk, &query.conversation_id).into_response()
}

/// The event stream of `conversation` (replacing an older one of the same session's page).
fn event_stream(
    desk: &Desk,
    conversation: &str,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>> + use<>> {
    let (secret, mut rx) = desk
        .events()
        .open_working(conversation, desk.is_working(conversation));
    let (events, conversation) = (desk.events().clone(), conversation.to_owned());
    let stream = async_stream(move |yielder| async move {
        while let Some(event) = rx.recv().await {
            let event = through_the_desk(event);
            let name = event.name();
            let data = serde_json::to_string(&event).unwrap_or_default();
            if yielder
                .send(Ok(SseEvent::default().event(name).data(data)))
                .await
                .is_err()
            {
                break;
            }
        }
        // The page went away: the other desks stop sending its events here.
        events.stopped_watching(&conversation, &secret);
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// A page's sign-in link goes through the desk's `/oauth/start` (which notes the browser),
/// never straight to the authorization server.
fn through_the_desk(event: crate::events::Event) -> crate::events::Event {
    match event {
        crate::events::Event::SignIn { server, url } => {
            let state = reqwest::Url::parse(&url)
                .ok()
                .and_then(|url| {
                    url.query_pairs()
                        .find(|(key, _)| key == "state")
                        .map(|(_, value)| value.into_owned())
                })
                .unwrap_or_default();
            let state: String = state
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                        char::from(b).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            let url = format!("{START_PATH}?state={state}");
            crate::events::Event::SignIn { server, url }
        }
        other => other,
    }
}

/// A stream fed by a task: what the closure sends comes out of the stream.
fn async_stream<F, Fut>(body: F) -> impl Stream<Item = Result<SseEvent, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<SseEvent, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(body(tx));
    futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
}

#[derive(Debug, Deserialize)]
struct ConfirmationAnswer {
    secret: String,
    confirmed: bool,
    #[serde(default)]
    note: Option<String>,
    /// Put away without a choice (a link question's Cancel).
    #[serde(default)]
    cancel: bool,
    /// A form's values (checked against the form first).
    #[serde(default)]
    content: Option<serde_json::Map<String, serde_json::Value>>,
}

async fn confirm(
    State(desk): State<Arc<Desk>>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    Json(answer): Json<ConfirmationAnswer>,
) -> Response {
    if let Some(conversation) = desk.events().conversation_of(&id)
        && let Some(refused) = refused_for(&desk, &headers, &conversation)
    {
        return refused;
    }
    let reply = answer_of(answer.confirmed, answer.note, answer.cancel, answer.content);
    match desk
        .events()
        .answer_anywhere(&id, &answer.secret, reply)
        .await
    {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => refused_answer(error),
    }
}

#[derive(Debug, Deserialize)]
struct OrdersQuery {
    status: Option<String>,
}

async fn orders(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
    Query(query): Query<OrdersQuery>,
) -> Response {
    if let Some(refused) = people_only(&desk, &headers) {
        return refused;
    }
    match desk
        .orders(query.status.as_deref().unwrap_or("SHIPPED"))
        .await
    {
        Ok(orders) => Json(orders).into_response(),
        Err(message) => refusal(StatusCode::BAD_GATEWAY, message),
    }
}
