//! The browser front end: the chat and confirmation API, the live event stream, and the static
//! page embedded in the binary.

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

const INDEX: &str = include_str!("../static/index.html");
const SCRIPT: &str = include_str!("../static/app.js");
const STYLE: &str = include_str!("../static/style.css");
const FAVICON: &str = include_str!("../static/favicon.svg");

/// The longest conversation id accepted.
const MAX_CONVERSATION_ID: usize = 128;

/// The cookie of a browser's session: what its conversations belong to.
const SESSION_COOKIE: &str = "desk_session";

/// The browser session a request names (its cookie), if any.
fn session_of(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| *name == SESSION_COOKIE && !value.is_empty() && value.len() <= 64)
        .map(|(_, value)| value.to_owned())
}

/// Whether the request's browser session made `conversation`: `None` if so, else the refusal
/// (401 without a session, 403 with another's).
fn refused_for(
    desk: &Desk,
    headers: &axum::http::HeaderMap,
    conversation: &str,
) -> Option<Response> {
    let refuse = |status: StatusCode, message: &str| {
        Some((status, Json(serde_json::json!({ "message": message }))).into_response())
    };
    match session_of(headers) {
        None => refuse(
            StatusCode::UNAUTHORIZED,
            "this browser has no desk session: reload the page to start a conversation",
        ),
        Some(session) if desk.events().belongs_to(conversation, &session) => None,
        Some(_) => refuse(
            StatusCode::FORBIDDEN,
            "this conversation belongs to another page's session: reload the page to start your own",
        ),
    }
}

/// `POST /api/conversations`: a new conversation for this browser's session (made, with its
/// `HttpOnly; SameSite=Strict` cookie, when the browser has none), its id made by the desk.
async fn start_conversation(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
) -> Response {
    let (session, fresh) = match session_of(&headers) {
        Some(session) => (session, false),
        None => (crate::events::random_id(), true),
    };
    let conversation = desk.events().start_conversation(&session);
    let body = Json(serde_json::json!({ "conversationId": conversation }));
    if fresh {
        let cookie = format!("{SESSION_COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict");
        ([(header::SET_COOKIE, cookie)], body).into_response()
    } else {
        body.into_response()
    }
}

/// The web UI and its API over `desk` (and `/metrics` when the desk is set to serve it).
pub fn routes(desk: Arc<Desk>) -> Router {
    let metrics = if desk.serves_metrics() {
        backchannel::serve::metrics_router()
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
        .route("/api/greeting", get(greeting))
        .route("/api/desk", get(vocabulary))
        .route("/api/conversations", post(start_conversation))
        .route("/api/chat", post(chat))
        .route("/api/chat/stop", post(stop))
        .route("/api/refund-email", post(refund_email))
        .route("/api/events", get(events))
        .route("/api/confirmations/{id}", post(confirm))
        .route("/api/orders", get(orders))
        .route(CALLBACK_PATH, get(signed_in))
        .with_state(desk);
    ui.merge(metrics)
}

/// Where the authorization server sends the browser back to after a sign-in.
pub const CALLBACK_PATH: &str = "/oauth/callback";

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
    let query = uri.query().unwrap_or_default();
    let page = |status: StatusCode, title: &str, text: &str| {
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
    };
    if query.len() > MAX_CALLBACK_QUERY {
        return page(
            StatusCode::BAD_REQUEST,
            "Sign-in not finished",
            "The address the browser came back with is too long to be a sign-in.",
        );
    }
    let refused = crate::events::query_param(query, "error");
    match (desk.events().signed_in(query), refused) {
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
        return (
            StatusCode::BAD_REQUEST,
            Json(serde_json::json!({"message": "that is no conversation of this desk"})),
        )
            .into_response();
    }
    if let Some(refused) = refused_for(&desk, &headers, &request.conversation_id) {
        return refused;
    }
    if request.message.trim().is_empty() {
        return (
            StatusCode::BAD_REQUEST,
            Json(serde_json::json!({"message": "the message is empty"})),
        )
            .into_response();
    }
    if request.message.len() > crate::rules::MAX_MESSAGE_BYTES {
        return (
            StatusCode::BAD_REQUEST,
            Json(serde_json::json!({"message": format!(
                "a message is at most {} bytes; this one is {}: shorten it and send it again",
                crate::rules::MAX_MESSAGE_BYTES,
                request.message.len()
            )})),
        )
            .into_response();
    }
    let reply = desk
        .chat(
            &request.conversation_id,
            &request.message,
            request.order_id.as_deref(),
        )
        .await;
    Json(reply_json(&reply)).into_response()
}

/// A reply for the page: plain text, and the same Markdown rendered as sanitised HTML.
fn reply_json(markdown: &str) -> serde_json::Value {
    serde_json::json!({
        "reply": crate::render::plain(markdown),
        "html": crate::render::html(markdown),
    })
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

/// The page's vocabulary (`vocabulary::desk`).
async fn vocabulary() -> Response {
    Json(crate::vocabulary::desk()).into_response()
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
        return (
            StatusCode::FORBIDDEN,
            Json(serde_json::json!({"message": "that secret does not own this conversation"})),
        )
            .into_response();
    }
    if desk.stop(&request.conversation_id) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"message": "nothing is running in this conversation"})),
        )
            .into_response()
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
    Json(request): Json<RefundRequest>,
) -> Response {
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
    let (_secret, mut rx) = desk.events().open(conversation);
    let stream = async_stream(move |yielder| async move {
        while let Some(event) = rx.recv().await {
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
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
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
    let reply = if answer.confirmed {
        Answer::Yes {
            note: answer.note.unwrap_or_default(),
        }
    } else {
        Answer::No
    };
    match desk.events().answer(&id, &answer.secret, reply) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error @ AnswerError::NotFound) => (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"message": error.to_string()})),
        )
            .into_response(),
        Err(error @ AnswerError::Forbidden) => (
            StatusCode::FORBIDDEN,
            Json(serde_json::json!({"message": error.to_string()})),
        )
            .into_response(),
    }
}

#[derive(Debug, Deserialize)]
struct OrdersQuery {
    status: Option<String>,
}

async fn orders(State(desk): State<Arc<Desk>>, Query(query): Query<OrdersQuery>) -> Response {
    match desk
        .orders(query.status.as_deref().unwrap_or("SHIPPED"))
        .await
    {
        Ok(orders) => Json(orders).into_response(),
        Err(message) => (
            StatusCode::BAD_GATEWAY,
            Json(serde_json::json!({ "message": message })),
        )
            .into_response(),
    }
}
