//! What the person does by hand from the page (issue 72): `GET /api/tools` lists every tool of
//! every server the desk reaches; `POST /api/tools/call` calls one in a conversation of the
//! page's, its questions, progress and logs shown there as a model's call's are;
//! `GET|POST /api/folders` lists, adds and removes the folders of notes.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use crate::desk::Desk;
use crate::web_session::{people_only, refused_for};

/// The routes, for [`crate::web::routes`].
pub(crate) fn routes() -> Router<Arc<Desk>> {
    Router::new()
        .route("/api/tools", get(tools))
        .route("/api/tools/call", post(call))
        .route("/api/folders", get(folders).post(change_folders))
}

/// `GET /api/folders`: the folders of notes the desk searches, and whether this page may
/// change them (a desk of one person: yes; with people, only its operator, at the terminal).
async fn folders(State(desk): State<Arc<Desk>>, headers: axum::http::HeaderMap) -> Response {
    if let Some(refused) = people_only(&desk, &headers) {
        return refused;
    }
    match desk.notes_folders().await {
        Ok(folders) => Json(serde_json::json!({
            "folders": folders,
            "mayChange": desk.people().is_none(),
        }))
        .into_response(),
        Err(message) => failed(StatusCode::NOT_FOUND, message),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FolderChange {
    /// `add` or `remove`.
    action: String,
    path: std::path::PathBuf,
}

/// `POST /api/folders`: add or remove a folder of notes; the folders as they are now. 403 on a
/// desk with people (the desk's connection to the notes is everyone's), 400 for a folder that
/// may not be one (outside the trusted folders, not a folder, the notes' own).
async fn change_folders(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
    Json(change): Json<FolderChange>,
) -> Response {
    if let Some(refused) = people_only(&desk, &headers) {
        return refused;
    }
    if desk.people().is_some() {
        let why = "the folders of notes are everyone's on a desk with people: change them at the \
                   desk's terminal";
        return failed(StatusCode::FORBIDDEN, why.into());
    }
    let changed = match change.action.as_str() {
        "add" => desk.add_notes_folder(&change.path).await,
        "remove" => desk.remove_notes_folder(&change.path).await,
        other => {
            return failed(
                StatusCode::BAD_REQUEST,
                format!("no action {other:?}: add or remove"),
            );
        }
    };
    match changed {
        Ok(changed) => Json(serde_json::json!({
            "changed": changed,
            "folders": desk.notes_folders().await.unwrap_or_default(),
        }))
        .into_response(),
        Err(message) => failed(StatusCode::BAD_REQUEST, message),
    }
}

/// `GET /api/tools`: what may be called, server by server.
async fn tools(State(desk): State<Arc<Desk>>, headers: axum::http::HeaderMap) -> Response {
    if let Some(refused) = people_only(&desk, &headers) {
        return refused;
    }
    match desk.tools_by_hand().await {
        Ok(tools) => Json(tools).into_response(),
        Err(message) => (
            StatusCode::BAD_GATEWAY,
            Json(serde_json::json!({ "message": message })),
        )
            .into_response(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CallRequest {
    conversation_id: String,
    name: String,
    #[serde(default = "no_arguments")]
    arguments: serde_json::Value,
}

fn no_arguments() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

/// `POST /api/tools/call`: the result's text and whether the tool failed (200 either way: a
/// tool's failure is its result); 400 for a tool nobody offers or arguments that are not an
/// object, 502 when the server could not be reached.
async fn call(
    State(desk): State<Arc<Desk>>,
    headers: axum::http::HeaderMap,
    Json(request): Json<CallRequest>,
) -> Response {
    if let Some(refused) = refused_for(&desk, &headers, &request.conversation_id) {
        return refused;
    }
    let offered = match desk.tools_by_hand().await {
        Ok(offered) => offered,
        Err(message) => return failed(StatusCode::BAD_GATEWAY, message),
    };
    if !offered.iter().any(|tool| tool.name == request.name) || !request.arguments.is_object() {
        let message = if request.arguments.is_object() {
            format!(
                "no server of this desk offers a tool named {:?}",
                request.name
            )
        } else {
            "a tool's arguments are a JSON object".to_owned()
        };
        return failed(StatusCode::BAD_REQUEST, message);
    }
    // The call is the desk's, not this request's: a page that reloads meanwhile does not
    // drop it (its questions wait for the page that comes back).
    let work = tokio::spawn(async move {
        desk.call_by_hand(&request.conversation_id, &request.name, request.arguments)
            .await
    });
    match work.await {
        Ok(Ok(called)) => Json(called).into_response(),
        Ok(Err(message)) => failed(StatusCode::BAD_GATEWAY, message),
        Err(_) => failed(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the call stopped unexpectedly".into(),
        ),
    }
}

fn failed(status: StatusCode, message: String) -> Response {
    crate::web_session::refusal(status, message)
}
