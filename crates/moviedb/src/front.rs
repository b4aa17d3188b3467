//! The front door: a small page at `/` saying what the server is and how to sign in, and
//! GraphiQL at `GET /graphql` with every script and stylesheet served from the binary (no CDN:
//! it works with no network beyond this server).

use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

const INDEX: &str = include_str!("../static/index.html");
const GRAPHIQL: &str = include_str!("../static/graphiql.html");
const START: &str = include_str!("../static/graphiql-start.js");
const GRAPHIQL_JS: &str = include_str!("../assets/graphiql/graphiql.min.js");
const GRAPHIQL_CSS: &str = include_str!("../assets/graphiql/graphiql.min.css");
const REACT: &str = include_str!("../assets/graphiql/react.production.min.js");
const REACT_DOM: &str = include_str!("../assets/graphiql/react-dom.production.min.js");

/// A small icon, so browsers asking for one get an answer.
pub(crate) async fn favicon() -> Response {
    asset(
        "image/svg+xml",
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#222"/><rect x="5" y="8" width="22" height="16" rx="2" fill="#e8b923"/><path d="M14 12v8l6-4z" fill="#222"/></svg>"##,
    )
}

/// The page at `/`.
pub(crate) async fn index() -> Html<&'static str> {
    Html(INDEX)
}

/// The GraphiQL page.
pub(crate) fn graphiql() -> Response {
    Html(GRAPHIQL).into_response()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        body,
    )
        .into_response()
}

/// GraphiQL's files, by name.
pub(crate) async fn graphiql_asset(
    axum::extract::Path(name): axum::extract::Path<String>,
) -> Response {
    match name.as_str() {
        "graphiql.min.js" => asset("text/javascript; charset=utf-8", GRAPHIQL_JS),
        "graphiql.min.css" => asset("text/css; charset=utf-8", GRAPHIQL_CSS),
        "react.production.min.js" => asset("text/javascript; charset=utf-8", REACT),
        "react-dom.production.min.js" => asset("text/javascript; charset=utf-8", REACT_DOM),
        "start.js" => asset("text/javascript; charset=utf-8", START),
        _ => (axum::http::StatusCode::NOT_FOUND, "No such file.").into_response(),
    }
}
