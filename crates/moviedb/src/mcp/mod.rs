//! The MCP server `moviedb-mcp`: six tools that run pinned GraphQL documents through the
//! in-process schema as the caller. `summarizeMovieReviews` borrows the client's model
//! (sampling) with a server-side fallback and a cache; `addToWatchlist` asks the person whether
//! they have already watched the title; removal is staged and then confirmed with a
//! single-use token. Every two-way call goes through `backchannel`, so the same tool code
//! serves 2025-11-25 and 2026-07-28 clients.

use std::sync::Arc;
use std::time::Duration;

use async_graphql::{Request, Variables};
use backchannel::{Backchannel, Ctx, Elicited, Sampled, ToolError};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::domain::WatchStatus;
use crate::graphql::{self, MovieSchema};
use crate::mcp::confirmations::Confirmations;
use crate::mcp::documents::{Outcome, PRECHECK, reviews_digest, viewer_of};
use crate::service::Viewer;
use crate::store::SharedState;
use crate::summary::{self, Prose, ReviewText};

/// The question `addToWatchlist` asks when the agent gave no status.
pub const WATCH_STATUS_QUESTION: &str =
    "Have you already watched this title, or is it one to watch later?";

/// What a watch-list tool answers a caller who is not signed in.
pub const SIGN_IN_NEEDED: &str = "Sign-in is needed for the watch list: call this server with \
     'Authorization: Bearer <token>' (get a token from the GraphQL login mutation), or run it \
     over stdio with --user.";

/// Settings of the MCP tools.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// How long a review summary is reused (default 60 s): the model's, or the server's after
    /// the model was refused, did not answer or ignored the format.
    pub summary_cache_ttl: Duration,
    /// How long to wait for the client's model (default 20 s).
    pub sampling_timeout: Duration,
    /// How long a staged action waits for its confirmation (default 60 s).
    pub confirmation_ttl: Duration,
    /// How long the watch-status question waits for the person (default 20 s, as the class
    /// has it); past it the add is a tool error and nothing is added.
    pub watch_status_timeout: Duration,
    /// The user every call acts as when no request carries one (stdio).
    pub fixed_user: Option<Viewer>,
    /// Where the one audit record per tool call goes.
    pub audit: AuditSink,
    /// The key ring sealing `requestState`, shared by every instance; `None` for a random key
    /// per process.
    pub state_keys: Option<backchannel::StateKeys>,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            summary_cache_ttl: Duration::from_secs(60),
            sampling_timeout: Duration::from_secs(20),
            confirmation_ttl: Duration::from_secs(60),
            watch_status_timeout: Duration::from_secs(20),
            fixed_user: None,
            audit: AuditSink::default(),
            state_keys: None,
        }
    }
}

mod args;
mod audit;
mod confirmations;
mod documents;
mod tools;

pub use args::{
    AddArgs, ConfirmArgs, MoodInput, PingArgs, RecommendArgs, Recommendations, RecommendedMovie,
    StageArgs, Staged, SubjectArg, SummarizeArgs, SummaryOutput, WatchStatusAnswer,
};
pub use audit::{AuditRecord, AuditSink};

/// The movie database's MCP server. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct MovieServer {
    schema: MovieSchema,
    layer: Backchannel,
    tools: Arc<ToolRouter<Self>>,
    /// Summaries per caller, movie and exact reviews: one caller's model output is never
    /// served to another.
    summaries: SummaryCache,
    confirmations: Arc<Confirmations>,
    config: Arc<McpConfig>,
}

impl std::fmt::Debug for MovieServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MovieServer").finish_non_exhaustive()
    }
}

impl MovieServer {
    /// The schema the tools run their documents through (the one `/graphql` serves too).
    pub fn schema(&self) -> &MovieSchema {
        &self.schema
    }

    /// The server over `schema`, with its own layer.
    pub fn new(schema: MovieSchema, layer: Backchannel, config: McpConfig) -> Self {
        let mut tools = Self::tool_router();
        describe_from_schema(&mut tools, &schema);
        Self {
            schema,
            layer,
            tools: Arc::new(backchannel::schema::portable_formats(tools)),
            summaries: SummaryCache::Here {
                cache: moka::future::Cache::builder()
                    .max_capacity(1_000)
                    .time_to_live(config.summary_cache_ttl.max(Duration::from_millis(1)))
                    .build(),
                ttl: config.summary_cache_ttl,
            },
            confirmations: Arc::default(),
            config: Arc::new(config),
        }
    }

    /// This server's backchannel layer (to link it with other instances).
    pub fn layer(&self) -> &Backchannel {
        &self.layer
    }

    /// Keep model-written summaries in `shared` (the database every instance uses) when there
    /// is one, so a repeat within the window on another instance asks no model either.
    pub fn sharing(mut self, shared: Option<SharedState>) -> Self {
        if let Some(state) = shared {
            self.summaries = SummaryCache::Shared {
                state,
                ttl: self.config.summary_cache_ttl,
            };
        }
        self
    }

    /// The layer configuration this server expects: sealed state bound to the signed-in user.
    pub fn layer_builder(config: &McpConfig) -> backchannel::BackchannelBuilder {
        let fixed = config.fixed_user.clone();
        let builder = Backchannel::builder().principal(move |rc| {
            viewer_of(&rc.extensions, fixed.as_ref()).map(|viewer| viewer.username)
        });
        match &config.state_keys {
            Some(keys) => builder.state_keys(keys.clone()),
            None => builder,
        }
    }

    /// The tools as `tools/list` shows them.
    pub fn tool_list(&self) -> Vec<Tool> {
        let mut tools = self.tools.list_all();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    }

    fn viewer(&self, ctx: &Ctx) -> Option<Viewer> {
        viewer_of(ctx.extensions(), self.config.fixed_user.as_ref())
    }

    async fn run(&self, ctx: &Ctx, document: &str, variables: Value) -> Outcome {
        let request = Request::new(document).variables(Variables::from_json(variables));
        let response = graphql::execute(&self.schema, request, self.viewer(ctx)).await;
        let value = serde_json::to_value(&response).unwrap_or(Value::Null);
        Outcome {
            data: value.get("data").cloned().unwrap_or(Value::Null),
            errors: value
                .get("errors")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// Whether the title in `subject` (`{"movieId": …}` or `{"tvShowId": …}`) exists and is
    /// not on the caller's list yet.
    async fn worth_asking(&self, ctx: &Ctx, subject: &Value) -> bool {
        let (is_movie, id) = match (subject.get("movieId"), subject.get("tvShowId")) {
            (Some(id), _) => (true, id.clone()),
            (None, Some(id)) => (false, id.clone()),
            (None, None) => return false,
        };
        let variables = json!({ "movieId": id, "showId": id, "isMovie": is_movie });
        let Ok(data) = self.run(ctx, PRECHECK, variables).await.data_or_fail() else {
            return false;
        };
        let (field, typename) = if is_movie {
            ("movie", "Movie")
        } else {
            ("tvShow", "TvShow")
        };
        let exists = data[field].is_object();
        let listed = data["watchlist"].as_array().is_some_and(|items| {
            items.iter().any(|item| {
                item["content"]["__typename"] == typename
                    && item["content"]["id"] == data[field]["id"]
            })
        });
        exists && !listed
    }

    /// Ask the person whether they watched the title. A decline, a dismissal or a client that
    /// cannot ask falls back to the server's default, and the add goes ahead; no answer within
    /// the wait is a tool error, and nothing is added (the person may not be there to see it).
    async fn ask_status(&self, ctx: &Ctx) -> Result<Option<WatchStatus>, ToolError> {
        let wait = self.config.watch_status_timeout;
        let answer = ctx
            .with_timeout(wait)
            .elicit::<WatchStatusAnswer>("watch-status", WATCH_STATUS_QUESTION)
            .await?;
        match answer {
            Elicited::Accepted(WatchStatusAnswer { status }) => Ok(status),
            Elicited::Declined | Elicited::Cancelled | Elicited::Unsupported => Ok(None),
            Elicited::TimedOut => Err(ToolError::failed(format!(
                "No answer about the watch status within {} s: nothing was added. Ask again, \
                 or give the status (WATCHED or WANT_TO_WATCH) with the request.",
                wait.as_secs()
            ))),
        }
    }

    /// The client's model writes the prose when it can; a refusal, a timeout, an unreadable
    /// answer or a client without sampling gets the server's own summary. What comes of asking
    /// is kept for the cache window, keyed by the movie and its reviews (a new review starts
    /// afresh): a model's words for the signed-in caller who asked only, the server's summary
    /// after a refusal, a timeout or an unreadable answer for anonymous callers too, so nobody
    /// is asked again within the window (anonymous callers cannot be told apart, and one
    /// anonymous client's words are never served to another).
    async fn summarize_with_model(
        &self,
        ctx: &Ctx,
        movie_id: i64,
        title: Option<&str>,
        reviews: &[ReviewText],
    ) -> Result<Prose, ToolError> {
        let user = self.viewer(ctx).map(|viewer| viewer.username);
        let key = SummaryKey {
            user,
            movie_id,
            reviews: reviews_digest(reviews),
        };
        if let Some(prose) = self.summaries.get(&key).await {
            return Ok(prose);
        }
        let request = backchannel::user_prompt(
            summary::sampling_prompt(title, reviews),
            summary::MAX_TOKENS,
        )
        .with_system_prompt(summary::SYSTEM_PROMPT)
        // A few sentences from short reviews want a fast, cheap model more than a capable one.
        .with_model_preferences(
            backchannel::ModelPreferences::new()
                .with_speed_priority(0.8)
                .with_cost_priority(0.7)
                .with_intelligence_priority(0.3),
        );
        let answer = ctx
            .with_timeout(self.config.sampling_timeout)
            .sample("summary", request)
            .await?;
        let prose = match &answer {
            Sampled::Message(_) => answer.text().and_then(summary::parse_model_reply),
            Sampled::Refused { code, message } => {
                tracing::info!(
                    code,
                    message,
                    "the client refused to summarise; using the server summary"
                );
                None
            }
            Sampled::TimedOut => {
                tracing::info!(
                    "the client's model did not answer in time; using the server summary"
                );
                None
            }
            Sampled::Unsupported => return Ok(summary::server_prose(reviews)),
            // Not a person's choice but a broken client: the caller is told, as a bug should
            // be, rather than handed a fallback that hides it.
            Sampled::Failed { message } => {
                return Err(ToolError::failed(format!(
                    "The client's answer to the summary request was not a model's message                      ({message}); no summary was made. This is a bug in the client."
                )));
            }
        }
        .unwrap_or_else(|| summary::server_prose(reviews));
        if key.user.is_some() || prose.source == summary::SummarySource::Server {
            self.summaries.insert(key, prose.clone()).await;
        }
        Ok(prose)
    }

    async fn audited_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = tokio::time::Instant::now();
        let tool = request.name.to_string();
        let user = viewer_of(&context.extensions, self.config.fixed_user.as_ref())
            .map_or_else(|| "anonymous".to_owned(), |v| v.username);
        let response = self
            .layer
            .call_tool(&self.tools, self, request, context)
            .await;
        let outcome = match &response {
            Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => "error",
            Ok(CallToolResponse::Complete(_)) => "ok",
            Ok(CallToolResponse::InputRequired(_)) => "input_required",
            Ok(CallToolResponse::Task(_)) => "task",
            Ok(_) => "other",
            Err(_) => "protocol_error",
        };
        (self.config.audit.0)(&AuditRecord {
            user,
            tool,
            outcome,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        });
        response
    }
}

/// Where model-written summaries are kept: in this process (one instance on SQLite) or in the
/// database every instance shares (PostgreSQL).
#[derive(Clone)]
enum SummaryCache {
    /// Each summary with the moment it was kept. The age is judged by tokio's clock (so a
    /// test with paused time sees the window end); moka's own expiry, by the wall clock, only
    /// frees the memory.
    Here {
        cache: moka::future::Cache<SummaryKey, (tokio::time::Instant, Prose)>,
        ttl: Duration,
    },
    Shared {
        state: SharedState,
        ttl: Duration,
    },
}

/// What a summary is kept under.
#[derive(Clone, PartialEq, Eq, Hash)]
struct SummaryKey {
    /// The signed-in caller; `None` for anonymous callers (who get only the server's prose).
    user: Option<String>,
    movie_id: i64,
    /// [`reviews_digest`] of the reviews summarised.
    reviews: u64,
}

/// A summary as the shared cache keeps it.
#[derive(Serialize, Deserialize)]
struct CachedProse {
    summary: String,
    themes: Vec<String>,
    /// The server's own prose (kept after a refusal, a timeout or an unreadable answer).
    #[serde(default)]
    server: bool,
}

impl SummaryCache {
    fn shared_key(key: &SummaryKey) -> String {
        let caller = key
            .user
            .as_ref()
            .map_or("*".to_owned(), |user| format!("@{user}"));
        format!("{}:{:016x}:{caller}", key.movie_id, key.reviews)
    }

    async fn get(&self, key: &SummaryKey) -> Option<Prose> {
        match self {
            SummaryCache::Here { cache, ttl } => cache
                .get(key)
                .await
                .filter(|(kept, _)| kept.elapsed() < *ttl)
                .map(|(_, prose)| prose),
            SummaryCache::Shared { state, .. } => {
                let text = match state.cached(&Self::shared_key(key)).await {
                    Ok(text) => text?,
                    Err(error) => {
                        tracing::warn!(%error, "the shared summary cache could not be read");
                        return None;
                    }
                };
                let cached: CachedProse = serde_json::from_str(&text).ok()?;
                Some(Prose {
                    summary: cached.summary,
                    themes: cached.themes,
                    source: if cached.server {
                        summary::SummarySource::Server
                    } else {
                        summary::SummarySource::ClientModel
                    },
                })
            }
        }
    }

    async fn insert(&self, key: SummaryKey, prose: Prose) {
        match self {
            SummaryCache::Here { cache, .. } => {
                cache
                    .insert(key, (tokio::time::Instant::now(), prose))
                    .await;
            }
            SummaryCache::Shared { state, ttl } => {
                let cached = CachedProse {
                    server: prose.source == summary::SummarySource::Server,
                    summary: prose.summary,
                    themes: prose.themes,
                };
                let Ok(text) = serde_json::to_string(&cached) else {
                    return;
                };
                if let Err(error) = state.cache(&Self::shared_key(&key), &text, *ttl).await {
                    tracing::warn!(%error, "the shared summary cache could not be written");
                }
            }
        }
    }
}

/// Replace each tool's description with the description of the GraphQL query or mutation
/// field of the same name, so the schema is the one source of both.
///
/// Doc comments wrap at 100 columns; the wraps are joined, so a description reads as one
/// paragraph.
fn describe_from_schema(tools: &mut ToolRouter<MovieServer>, schema: &MovieSchema) {
    let descriptions = graphql::root_field_descriptions(schema);
    for route in tools.map.values_mut() {
        let description = descriptions
            .get(route.attr.name.as_ref())
            .map(String::as_str)
            .or(route.attr.description.as_deref())
            .map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "));
        route.attr.description = description.map(Into::into);
    }
}

impl ServerHandler for MovieServer {
    backchannel::layer_hooks!(layer);

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.audited_call(request, context).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.list_all()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.get(name).cloned()
    }

    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("moviedb-mcp", "1.0.0"))
            .with_instructions(
                "A movie database: recommend movies by mood, summarise a movie's reviews, and \
                 manage the signed-in person's watch list (removals are staged, then confirmed \
                 with the person's agreement).",
            )
    }
}
