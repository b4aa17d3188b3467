//! The sign-in pages a person's browser opens: the link (`GET /upstream-sign-in/ID`, which
//! sends the person asked on to the upstream's authorization server), the gateway's own
//! sign-in form when the browser has not proved who it is (`POST` of the same path, with a
//! token of the gateway's front door), the callback (`GET /upstream-sign-in/callback`), and
//! signing out of an upstream (`POST /upstream-sign-out/NAME`, with the caller's bearer token,
//! so it goes behind the front door's sign-in).
//!
//! Nothing here trusts the link's id or the `state` alone: both are single-use and
//! unguessable, and the browser must be the person the question was asked of.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use backchannel::serve::Principal;
use serde::Deserialize;

use super::{Access, PAGES, Personal};

/// The cookie a browser proves who it is with.
const COOKIE: &str = "mcp_gateway_person";

/// How long the link's page waits for the authorization server's URL (the client being
/// registered).
const AUTHORIZATION_WAIT: Duration = Duration::from_secs(15);

/// How long the callback's page waits for the code's exchange.
const EXCHANGE_WAIT: Duration = Duration::from_secs(30);

/// The sign-in pages, and the sign-out route (to go behind the front door).
pub(crate) fn routes(personal: Arc<Personal>) -> (axum::Router, axum::Router) {
    let pages = axum::Router::new()
        .route(&format!("{PAGES}/callback"), axum::routing::get(callback))
        .route(
            &format!("{PAGES}/{{id}}"),
            axum::routing::get(link).post(sign_browser_in),
        )
        .with_state(personal.clone());
    let sign_out = axum::Router::new()
        .route(
            "/upstream-sign-out/{upstream}",
            axum::routing::post(sign_out),
        )
        .with_state(personal);
    (pages, sign_out)
}

/// A small HTML page: `title`, then `body` (already escaped).
fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title></head>\
         <body style=\"font-family: system-ui, sans-serif; max-width: 36rem; margin: 3rem auto\">\
         <h1 id=\"sign-in-title\">{title}</h1>{body}</body></html>",
        title = escape(title)
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (
                header::CONTENT_SECURITY_POLICY,
                // No `form-action`: the sign-in form's answer redirects on to the authorization
                // server, and browsers hold a form's redirects to it.
                "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
            ),
        ],
        html,
    )
        .into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn unknown_link() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "This sign-in link is not waiting",
        "<p>It was used already, it expired, or it never existed. Call the tool again to get \
         a new one.</p>",
    )
}

fn someone_else() -> Response {
    page(
        StatusCode::FORBIDDEN,
        "This sign-in was asked of someone else",
        "<p>You are signed in to the gateway as another person than the one this link was made \
         for. Nothing was changed.</p>",
    )
}

fn cookie_of(headers: &HeaderMap) -> Option<String> {
    backchannel::serve::cookie(headers, COOKIE)
}

/// The gateway's own sign-in form, for a browser that has not proved who it is.
fn sign_in_form(id: &str, upstream: &str, status: StatusCode, note: &str) -> Response {
    page(
        status,
        "Sign in to the gateway first",
        &format!(
            "<p>{note}Someone asked to sign in to <b>{upstream}</b> through this gateway. To \
             make sure it is you, give the token you use with the gateway.</p>\
             <form method=\"post\" action=\"{PAGES}/{id}\">\
             <label>Your gateway token <input id=\"gateway-token\" name=\"token\" \
             type=\"password\" autocomplete=\"off\" required></label> \
             <button id=\"gateway-sign-in\" type=\"submit\">Sign in</button></form>",
            upstream = escape(upstream),
            id = escape(id),
            note = note,
        ),
    )
}

/// `GET /upstream-sign-in/ID`: the person asked goes on to the authorization server.
async fn link(
    State(personal): State<Arc<Personal>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some(sign_in) = personal.pending(&id) else {
        return unknown_link();
    };
    match personal.may_act_for(cookie_of(&headers).as_deref(), &sign_in.owner) {
        Access::Yes => {}
        Access::SignInFirst => return sign_in_form(&id, &sign_in.upstream, StatusCode::OK, ""),
        Access::SomeoneElse => return someone_else(),
    }
    let mut authorization = sign_in.authorization.subscribe();
    let made =
        tokio::time::timeout(AUTHORIZATION_WAIT, authorization.wait_for(Option::is_some)).await;
    let url = match made {
        Ok(Ok(url)) => url.clone(),
        _ => None,
    };
    match url {
        Some(url) => (StatusCode::SEE_OTHER, [(header::LOCATION, url)]).into_response(),
        None => {
            let why = match sign_in.done.borrow().clone() {
                Some(Err(why)) => why,
                _ => "its authorization server did not answer in time".to_owned(),
            };
            page(
                StatusCode::BAD_GATEWAY,
                "The sign-in cannot start",
                &format!(
                    "<p>Signing in to <b>{}</b> cannot start: {}.</p>",
                    escape(&sign_in.upstream),
                    escape(&why)
                ),
            )
        }
    }
}

#[derive(Deserialize)]
struct TokenForm {
    token: String,
}

/// Whether a form's `POST` came from the link's own page at the gateway's own origin: a
/// browser names the page's origin on every `POST` (`Origin`), and a page elsewhere (another
/// port of the same host included, which cookies do not tell apart) cannot post a token of its
/// choosing and plant its person's session in someone's browser. A `Referer`, when sent, must
/// be the link's own page.
fn from_own_page(personal: &Personal, headers: &HeaderMap, id: &str) -> bool {
    let Ok(base) = personal.base() else {
        return false;
    };
    let Ok(own) = reqwest::Url::parse(&base) else {
        return false;
    };
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok());
    if origin != Some(own.origin().ascii_serialization().as_str()) {
        return false;
    }
    let page = format!("{PAGES}/{id}");
    match headers.get(header::REFERER).map(|value| value.to_str()) {
        None => true,
        Some(Ok(referer)) => reqwest::Url::parse(referer)
            .is_ok_and(|referer| referer.origin() == own.origin() && referer.path() == page),
        Some(Err(_)) => false,
    }
}

/// `POST /upstream-sign-in/ID`: the browser proves who it is with a gateway token, from the
/// link's own page.
async fn sign_browser_in(
    State(personal): State<Arc<Personal>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<TokenForm>,
) -> Response {
    let Some(sign_in) = personal.pending(&id) else {
        return unknown_link();
    };
    if !from_own_page(&personal, &headers, &id) {
        return page(
            StatusCode::FORBIDDEN,
            "This form was not sent from the gateway's sign-in page",
            "<p>Open the sign-in link itself and give your token on its page. Nothing was \
             changed.</p>",
        );
    }
    let front = super::lock(&personal.front).clone();
    let Some(front) = front else {
        // No front door: nothing to prove.
        return (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, format!("{PAGES}/{id}"))],
        )
            .into_response();
    };
    let Some(name) = front.principal(form.token.trim()).await else {
        return sign_in_form(
            &id,
            &sign_in.upstream,
            StatusCode::UNAUTHORIZED,
            "That token was not accepted. ",
        );
    };
    let owner = format!("principal:{name}");
    if owner != sign_in.owner {
        return someone_else();
    }
    let Ok(cookie) = personal.sign_browser_in(owner) else {
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "No session",
            "<p>The gateway could not make a session.</p>",
        );
    };
    let secure = super::lock(&personal.base)
        .as_deref()
        .is_some_and(|base| base.starts_with("https:"));
    let cookie = format!(
        "{COOKIE}={cookie}; Path={PAGES}; HttpOnly; SameSite=Lax; Max-Age={}{}",
        super::BROWSER_SESSION.as_secs(),
        if secure { "; Secure" } else { "" }
    );
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, cookie),
            (header::LOCATION, format!("{PAGES}/{id}")),
        ],
    )
        .into_response()
}

#[derive(Deserialize)]
struct Callback {
    state: Option<String>,
}

/// `GET /upstream-sign-in/callback`: the authorization server sent the browser back.
async fn callback(
    State(personal): State<Arc<Personal>>,
    Query(query): Query<Callback>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let Some(sign_in) = query
        .state
        .as_deref()
        .and_then(|state| personal.pending_by_state(state))
    else {
        return page(
            StatusCode::BAD_REQUEST,
            "This sign-in is not waiting",
            "<p>It finished already, it expired, or it was never started here. Nothing was \
             changed.</p>",
        );
    };
    if personal.may_act_for(cookie_of(&headers).as_deref(), &sign_in.owner) != Access::Yes {
        // Checked before the state is spent: someone else's browser changes nothing.
        return someone_else();
    }
    let Some(came_back) = super::lock(&sign_in.came_back).take() else {
        return page(
            StatusCode::BAD_REQUEST,
            "This sign-in is not waiting",
            "<p>Its callback was used already. Nothing was changed.</p>",
        );
    };
    let Ok(base) = personal.base() else {
        return unknown_link();
    };
    let query = uri.query().unwrap_or_default();
    let _ = came_back.send(format!("{base}{PAGES}/callback?{query}"));
    match sign_in.finish(EXCHANGE_WAIT).await {
        Ok(()) => page(
            StatusCode::OK,
            &format!("Signed in to {}", sign_in.upstream),
            "<p>You can close this tab: the call that asked goes on.</p>",
        ),
        Err(why) => page(
            StatusCode::BAD_GATEWAY,
            "The sign-in failed",
            &format!(
                "<p>Signing in to <b>{}</b> failed: {}. Call the tool again for a new link.</p>",
                escape(&sign_in.upstream),
                escape(&why)
            ),
        ),
    }
}

/// `POST /upstream-sign-out/NAME`: forget the caller's tokens for that upstream.
async fn sign_out(
    State(personal): State<Arc<Personal>>,
    Path(upstream): Path<String>,
    principal: Option<axum::Extension<Principal>>,
) -> Response {
    let Some(axum::Extension(Principal(name))) = principal else {
        return (
            StatusCode::BAD_REQUEST,
            "signing out of an upstream needs the gateway's sign-in (--token-file or \
             --oauth-issuer)\n",
        )
            .into_response();
    };
    if !personal.covers(&upstream) {
        return (
            StatusCode::NOT_FOUND,
            format!("{upstream:?} is no upstream that signs people in one by one\n"),
        )
            .into_response();
    }
    let had = personal
        .forget(&format!("principal:{name}"), &upstream)
        .await;
    tracing::info!(%upstream, had, "a person signed out of an upstream");
    StatusCode::NO_CONTENT.into_response()
}
