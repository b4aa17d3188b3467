//! A movie database per test (in-memory SQLite) and a scripted MCP client that speaks either
//! revision over an in-process pipe, answers sampling and elicitation as told, and records
//! what it was asked.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::type_complexity
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use moviedb::auth::TokenKeys;
use moviedb::domain::Role;
use moviedb::graphql;
use moviedb::mcp::{McpConfig, MovieServer};
use moviedb::service::{Catalog, Viewer};
use moviedb::store::Store;
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::Value;

pub use backchannel::testing::{Revision, call, structured, text_of};

/// How the client's model answers a sampling request.
#[derive(Debug, Clone)]
pub enum Model {
    /// The client did not declare sampling.
    Absent,
    /// Answers with this text.
    Answers(String),
    /// Refuses with an error.
    Refuses,
    /// Answers only after 21 s on the test clock, just past the 20 s sampling timeout (so a
    /// test that moves the clock past it leaves no answer still waiting).
    Stalls,
    /// Answers with this text after this long on the test clock (its wait starts before the
    /// test is told it was asked, so a clock moved then moves it too).
    AnswersAfter(Duration, String),
}

/// How the person answers a form.
#[derive(Debug, Clone)]
pub enum Person {
    /// The client did not declare elicitation.
    Absent,
    Accepts(Value),
    Declines,
    Cancels,
    /// Answers nothing in time: cancels only at 21 s on the test clock, just past the 20 s
    /// wait (the test moves the clock past it once asked).
    Silent,
    /// Accepts with this content after this long on the test clock (its wait starts before
    /// the test is told it was asked).
    AcceptsAfter(Duration, Value),
}

#[derive(Clone)]
pub struct Client {
    pub model: Model,
    pub person: Person,
    pub samplings: Arc<Mutex<Vec<CreateMessageRequestParams>>>,
    pub questions: Arc<Mutex<Vec<(String, Value)>>>,
    pub progress: Arc<Mutex<Vec<(f64, Option<String>)>>>,
    /// Told each time the model is asked (a stalling model is told before it stalls).
    pub asked: Arc<tokio::sync::Notify>,
}

impl Client {
    pub fn new(model: Model, person: Person) -> Self {
        Self {
            model,
            person,
            samplings: Arc::default(),
            questions: Arc::default(),
            progress: Arc::default(),
            asked: Arc::default(),
        }
    }

    pub fn sampling_count(&self) -> usize {
        self.samplings.lock().unwrap().len()
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        if !matches!(self.model, Model::Absent) {
            caps.sampling = Some(Default::default());
        }
        if !matches!(self.person, Person::Absent) {
            caps.elicitation = Some(ElicitationCapability::default().with_form(Default::default()));
        }
        ClientInfo::new(caps, Implementation::new("moviedb-test-client", "1.0.0"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.samplings.lock().unwrap().push(params);
        let late = match &self.model {
            Model::AnswersAfter(after, _) => Some(tokio::time::sleep(*after)),
            Model::Stalls => Some(tokio::time::sleep(Duration::from_secs(21))),
            _ => None,
        };
        self.asked.notify_one();
        let text = match &self.model {
            Model::AnswersAfter(_, text) => {
                if let Some(late) = late {
                    late.await;
                }
                text.clone()
            }
            Model::Answers(text) => text.clone(),
            Model::Refuses | Model::Absent => {
                return Err(ErrorData::invalid_request(
                    "the person declined the request",
                    None,
                ));
            }
            Model::Stalls => {
                if let Some(late) = late {
                    late.await;
                }
                "SUMMARY: too late\nTHEMES: late".to_owned()
            }
        };
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(text),
            "scripted-model".into(),
        ))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = &request
        {
            self.questions.lock().unwrap().push((
                message.clone(),
                serde_json::to_value(requested_schema).unwrap(),
            ));
        }
        Ok(match &self.person {
            Person::AcceptsAfter(after, content) => {
                let late = tokio::time::sleep(*after);
                self.asked.notify_one();
                late.await;
                ElicitResult::new(ElicitationAction::Accept).with_content(content.clone())
            }
            Person::Silent => {
                let late = tokio::time::sleep(Duration::from_secs(21));
                self.asked.notify_one();
                late.await;
                ElicitResult::new(ElicitationAction::Cancel)
            }
            Person::Accepts(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content.clone())
            }
            Person::Declines | Person::Absent => ElicitResult::new(ElicitationAction::Decline),
            Person::Cancels => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push((params.progress, params.message.clone()));
    }
}

/// A database of its own for one test: in-memory SQLite, or, when `$MOVIEDB_TEST_POSTGRES`
/// names a PostgreSQL server (`scripts/test-postgres` runs the suite a second time that way),
/// a new database created on it for this test alone.
pub async fn fresh_database() -> String {
    match std::env::var("MOVIEDB_TEST_POSTGRES") {
        Ok(server) if !server.is_empty() => {
            sql_pool::create_database(&server, "moviedb").await.unwrap()
        }
        _ => "sqlite::memory:".to_owned(),
    }
}

/// A fresh seeded database and the catalogue over it.
pub struct Db {
    pub catalog: Catalog,
}

impl Db {
    pub async fn new() -> Self {
        let store = Store::open(&fresh_database().await).await.unwrap();
        Self {
            catalog: Catalog::new(store, TokenKeys::random()),
        }
    }

    pub fn viewer(username: &str) -> Viewer {
        Viewer {
            username: username.into(),
            role: if username == "admin" {
                Role::Admin
            } else {
                Role::User
            },
        }
    }

    /// `user`'s watchlist as the catalog holds it.
    pub async fn watchlist_of(&self, user: &str) -> Vec<moviedb::domain::WatchlistItem> {
        let viewer = Self::viewer(user);
        self.catalog.watchlist(Some(&viewer)).await.unwrap()
    }

    /// An MCP server acting as `user` (as `moviedb stdio --user` does), or anonymous.
    pub fn server(&self, user: Option<&str>) -> MovieServer {
        self.server_keeping_summaries_here(user)
            .sharing(self.catalog.store().shared_state())
    }

    /// As [`Db::server`], with the summaries kept in this process even on PostgreSQL (where
    /// the window is the database's clock, which a test cannot move).
    pub fn server_keeping_summaries_here(&self, user: Option<&str>) -> MovieServer {
        let config = McpConfig {
            fixed_user: user.map(Self::viewer),
            ..McpConfig::default()
        };
        MovieServer::new(
            graphql::schema(self.catalog.clone()),
            MovieServer::layer_builder(&config).build().unwrap(),
            config,
        )
    }

    /// Connect `client` to `server` over a pipe, speaking `wire`.
    pub async fn connect(
        server: MovieServer,
        client: Client,
        wire: Revision,
    ) -> RunningService<RoleClient, Client> {
        backchannel::testing::connect(server, client, wire).await
    }
}

/// Compare `actual` with `tests/snapshots/<name>`; `UPDATE_SNAPSHOTS=1` rewrites it.
pub fn snapshot(name: &str, actual: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    backchannel::testing::snapshot(&dir, name, actual);
}

/// A 2026-07-28 `ping` call to the MCP endpoint `url`, written by hand (no SDK in between),
/// with `token` as its bearer when there is one.
pub fn raw_ping(url: &str, token: Option<&str>) -> reqwest::RequestBuilder {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "ping", "arguments": { "name": "x" }, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" } } }
    });
    let request = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "ping")
        .json(&body);
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}
