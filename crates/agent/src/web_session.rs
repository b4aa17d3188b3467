//! Who a request of the desk's web API is: its browser session (a cookie), the person it is
//! for, and the refusals for a request without one or with another's.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::desk::Desk;

/// The cookie of a browser's session: what its conversations belong to.
pub(crate) const SESSION_COOKIE: &str = "desk_session";

/// The request's browser session, if it names one that still lives.
pub(crate) fn live_session(desk: &Desk, headers: &axum::http::HeaderMap) -> Option<String> {
    session_of(headers).filter(|s| desk.events().person_of_session(s).is_some())
}

/// The browser session a request names (its cookie), if any.
pub(crate) fn session_of(headers: &axum::http::HeaderMap) -> Option<String> {
    cookie_of(headers, &session_cookie_name(headers))
}

/// The name of this desk's session cookie: `desk_session_PORT` when the desk is reached at a
/// port (a browser sends a host's cookies to every port of it, so two desks on one machine
/// would otherwise share one session, the second signing the first out), else `desk_session`.
pub(crate) fn session_cookie_name(headers: &axum::http::HeaderMap) -> String {
    let port = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .and_then(|host| host.rsplit_once(':'))
        .map(|(_, port)| port)
        .filter(|port| (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit()));
    match port {
        Some(port) => format!("{SESSION_COOKIE}_{port}"),
        None => SESSION_COOKIE.to_owned(),
    }
}

/// Whether the request's browser session made `conversation`: `None` if so, else the refusal
/// (401 without a session, 403 with another's).
pub(crate) fn refused_for(
    desk: &Desk,
    headers: &axum::http::HeaderMap,
    conversation: &str,
) -> Option<Response> {
    let refuse = |status: StatusCode, message: &str| {
        Some((status, Json(serde_json::json!({ "message": message }))).into_response())
    };
    match live_session(desk, headers) {
        None => refuse(
            StatusCode::UNAUTHORIZED,
            "this browser has no desk session (or it ended): reload the page to start again",
        ),
        Some(session) if desk.events().belongs_to(conversation, &session) => None,
        Some(_) => refuse(
            StatusCode::FORBIDDEN,
            "this conversation belongs to another page's session: reload the page to start your own",
        ),
    }
}

/// With a people file, the desk's data (orders, refund e-mails) is for signed-in people only:
/// the refusal for anyone else (`None` when the request may go on).
pub(crate) fn people_only(desk: &Desk, headers: &axum::http::HeaderMap) -> Option<Response> {
    let signed_in = live_session(desk, headers).is_some();
    (desk.people().is_some() && !signed_in).then(sign_in_first)
}

/// A refusal: `status` and a JSON body whose `message` says why, for the person.
pub(crate) fn refusal(status: StatusCode, message: impl std::fmt::Display) -> Response {
    let message = message.to_string();
    (status, Json(serde_json::json!({ "message": message }))).into_response()
}

/// 401 for a desk with people: sign in first (the page goes to `/signin`).
pub(crate) fn sign_in_first() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        Json(serde_json::json!({
            "message": "sign in to the desk first",
            "signIn": "/signin",
        })),
    )
        .into_response()
}

/// Whose inbox the request's live session sees ([`crate::events::Events::owner_of_session`]).
pub(crate) fn owner_of_request(desk: &Desk, headers: &axum::http::HeaderMap) -> Option<String> {
    session_of(headers).and_then(|s| desk.events().owner_of_session(&s))
}

/// 401: no live session.
pub(crate) fn no_session() -> Response {
    refusal(
        StatusCode::UNAUTHORIZED,
        "this browser has no desk session (or it ended): reload the page",
    )
}

/// The value of cookie `name` in a request, if any (at most 64 characters).
pub(crate) fn cookie_of(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    backchannel::serve::cookie(headers, name)
}
