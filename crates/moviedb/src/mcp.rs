//! The MCP server `moviedb-mcp`: six tools that run pinned GraphQL documents through the
//! in-process schema as the caller. `summarizeMovieReviews` borrows the client's model
//! (sampling) with a server-side fallback and a cache; `addToWatchlist` asks the person whether
//! they have already watched the title; removal is staged and then confirmed with a
//! single-use token. Every two-way call goes through `backchannel`, so the same tool code
//! serves 2025-11-25 and 2026-07-28 clients.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_graphql::{Request, Variables};
use backchannel::{Backchannel, Ctx, Elicited, Sampled, ToolError, ToolResult};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::graphql::{self, MovieSchema};
use crate::service::Viewer;
use crate::summary::{self, Prose, ReviewSummary, ReviewText};

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
    /// How long a model-written review summary is reused (default 60 s).
    pub summary_cache_ttl: Duration,
    /// How long to wait for the client's model (default 20 s).
    pub sampling_timeout: Duration,
    /// How long a staged action waits for its confirmation (default 60 s).
    pub confirmation_ttl: Duration,
    /// The user every call acts as when no request carries one (stdio).
    pub fixed_user: Option<Viewer>,
    /// Where the one audit record per tool call goes.
    pub audit: AuditSink,
}

/// One tool call, as the audit log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// The signed-in user, or `anonymous`.
    pub user: String,
    /// The tool's name.
    pub tool: String,
    /// `ok`, `error` (an isError result), `input_required` (a 2026-07-28 round ended with a
    /// question), `task`, or `protocol_error`.
    pub outcome: &'static str,
    /// How long the request took, in milliseconds.
    pub duration_ms: f64,
}

/// Where audit records go. The default writes each as one JSON line on the `audit.mcp`
/// tracing target.
#[derive(Clone)]
pub struct AuditSink(Arc<dyn Fn(&AuditRecord) + Send + Sync>);

impl AuditSink {
    /// A sink that hands each record to `f`.
    pub fn new(f: impl Fn(&AuditRecord) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl Default for AuditSink {
    fn default() -> Self {
        Self::new(|record| {
            let line = serde_json::to_string(record).unwrap_or_default();
            tracing::info!(target: "audit.mcp", "{line}");
        })
    }
}

impl std::fmt::Debug for AuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditSink")
    }
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            summary_cache_ttl: Duration::from_secs(60),
            sampling_timeout: Duration::from_secs(20),
            confirmation_ttl: Duration::from_secs(60),
            fixed_user: None,
            audit: AuditSink::default(),
        }
    }
}

// ---- tool arguments and results ----

/// Arguments of `ping`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PingArgs {
    /// Who is pinging.
    pub name: String,
}

/// A mood, as the tools accept it.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MoodArg {
    Comfort,
    Adventure,
    Romance,
    Horror,
    Thoughtful,
    Comedy,
}

/// The mood request.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoodInput {
    /// The closest mood to what the person asked for.
    pub mood: MoodArg,
    /// Leave out movies the signed-in person has marked WATCHED.
    pub exclude_watched: bool,
}

/// Arguments of `recommendMoviesForMood`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecommendArgs {
    /// The mood and whether to skip watched movies.
    pub input: MoodInput,
}

/// One recommended movie.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RecommendedMovie {
    /// Movie id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Year of release.
    pub release_year: i32,
    /// Genre.
    pub genre: String,
    /// Average rating, 0–10.
    pub rating: Option<f64>,
}

/// The result of `recommendMoviesForMood`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Recommendations {
    /// Best rated first, at most ten.
    pub movies: Vec<RecommendedMovie>,
}

/// Arguments of `summarizeMovieReviews`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummarizeArgs {
    /// The movie's id.
    pub movie_id: String,
}

/// The summary as the tool returns it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummaryOutput {
    /// The movie, as asked.
    pub movie_id: String,
    /// How many reviews it has.
    pub review_count: usize,
    /// A few sentences; null below three reviews ("not enough reviews yet").
    pub summary: Option<String>,
    /// Recurring themes.
    pub themes: Vec<String>,
    /// Mean score; null without reviews.
    pub average_score: Option<f64>,
    /// Who wrote the summary: CLIENT_MODEL or SERVER; null without one.
    pub source: Option<String>,
}

impl From<ReviewSummary> for SummaryOutput {
    fn from(s: ReviewSummary) -> Self {
        Self {
            movie_id: s.movie_id,
            review_count: s.review_count,
            summary: s.summary,
            themes: s.themes,
            average_score: s.average_score,
            source: s.source.map(|source| {
                match source {
                    summary::SummarySource::ClientModel => "CLIENT_MODEL",
                    summary::SummarySource::Server => "SERVER",
                }
                .to_owned()
            }),
        }
    }
}

/// Exactly one of a movie or a show.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubjectArg {
    /// A movie's id.
    #[serde(default)]
    pub movie_id: Option<String>,
    /// A TV show's id.
    #[serde(default)]
    pub tv_show_id: Option<String>,
}

/// A watch status, as the tools accept it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StatusArg {
    WantToWatch,
    Watched,
}

impl StatusArg {
    fn as_str(self) -> &'static str {
        match self {
            StatusArg::WantToWatch => "WANT_TO_WATCH",
            StatusArg::Watched => "WATCHED",
        }
    }
}

/// Arguments of `addToWatchlist`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddArgs {
    /// Exactly one of movieId and tvShowId.
    pub subject: SubjectArg,
    /// WATCHED or WANT_TO_WATCH, when the person already said; leave it out to let the server
    /// ask them.
    #[serde(default)]
    pub status: Option<StatusArg>,
}

/// The form `addToWatchlist` shows the person. An empty submission reads as "no answer".
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WatchStatusAnswer {
    /// WATCHED if already seen, WANT_TO_WATCH to watch later.
    #[serde(default)]
    pub status: Option<StatusArg>,
}

impl JsonSchema for WatchStatusAnswer {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WatchStatusAnswer".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "status": {
                    "type": "string",
                    "title": "Watch status",
                    "description": "WATCHED if you have seen it, WANT_TO_WATCH to watch it later",
                    "enum": ["WANT_TO_WATCH", "WATCHED"]
                }
            },
            "required": ["status"]
        })
    }
}
backchannel::elicit_safe!(WatchStatusAnswer);

/// Arguments of `stageRemoveFromWatchlist`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageArgs {
    /// The watch-list entry's id (from the watchlist query or addToWatchlist).
    pub item_id: String,
}

/// A staged removal.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Staged {
    /// Pass it to confirmAction once the person agrees. Single use.
    pub confirmation_token: String,
    /// What will happen; show it to the person.
    pub preview_message: String,
    /// Seconds until the token expires.
    pub expires_in_seconds: u64,
}

/// Arguments of `confirmAction`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmArgs {
    /// The token from a stage tool.
    pub confirmation_token: String,
}

// ---- staged actions ----

#[derive(Debug, Clone)]
struct StagedRemoval {
    user: String,
    item_id: String,
    expires: tokio::time::Instant,
}

/// Single-use confirmation tokens, bound to the user who staged them.
#[derive(Debug, Default)]
struct Confirmations {
    pending: Mutex<HashMap<String, StagedRemoval>>,
}

/// Why a confirmation token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenRefusal {
    Unknown,
    OtherUser,
    Expired,
}

impl Confirmations {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, StagedRemoval>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn stage(&self, user: &str, item_id: &str, ttl: Duration) -> String {
        let token = uuid::Uuid::new_v4().to_string();
        let now = tokio::time::Instant::now();
        let mut pending = self.lock();
        pending.retain(|_, staged| staged.expires > now);
        pending.insert(
            token.clone(),
            StagedRemoval {
                user: user.to_owned(),
                item_id: item_id.to_owned(),
                expires: now + ttl,
            },
        );
        token
    }

    /// Take the token out (so it is spent even when the checks fail), then check it.
    fn redeem(&self, token: &str, user: &str) -> Result<StagedRemoval, TokenRefusal> {
        let now = tokio::time::Instant::now();
        let staged = {
            let mut pending = self.lock();
            let staged = pending.remove(token.trim());
            pending.retain(|_, s| s.expires > now);
            staged
        };
        let staged = staged.ok_or(TokenRefusal::Unknown)?;
        if staged.user != user {
            return Err(TokenRefusal::OtherUser);
        }
        if staged.expires <= now {
            return Err(TokenRefusal::Expired);
        }
        Ok(staged)
    }
}

// ---- GraphQL documents the tools run ----

const RECOMMEND: &str = "query Recommend($mood: Mood!, $excludeWatched: Boolean!) {
  recommendMoviesForMood(mood: $mood, excludeWatched: $excludeWatched) {
    id title releaseYear genre averageRating
  }
}";

const REVIEWS: &str = "query Reviews($id: ID!) {
  movie(id: $id) { title reviews { score comment } }
}";

const ADD: &str = "mutation Add($subject: WatchlistSubjectInput!, $status: WatchStatus) {
  addToWatchlist(subject: $subject, status: $status) {
    id status content { __typename title }
  }
}";

const PRECHECK: &str = "query Precheck($movieId: ID!, $showId: ID!, $isMovie: Boolean!) {
  movie(id: $movieId) @include(if: $isMovie) { id }
  tvShow(id: $showId) @skip(if: $isMovie) { id }
  watchlist { content { __typename ... on Movie { id } ... on TvShow { id } } }
}";

const ITEM: &str = "query Items { watchlist { id status content { __typename title } } }";

const REMOVE: &str = "mutation Remove($itemId: ID!) { removeFromWatchlist(itemId: $itemId) }";

/// The `data` and `errors` of an executed document, as JSON.
struct Outcome {
    data: Value,
    errors: Vec<Value>,
}

impl Outcome {
    fn messages(&self) -> Vec<String> {
        self.errors
            .iter()
            .map(|e| e["message"].as_str().unwrap_or("unknown error").to_owned())
            .collect()
    }

    /// For read tools: data, or the errors as a tool failure.
    fn data_or_fail(self) -> Result<Value, ToolError> {
        if self.errors.is_empty() {
            Ok(self.data)
        } else {
            Err(ToolError::failed(format!(
                "GraphQL operation failed: {}",
                self.messages().join("; ")
            )))
        }
    }
}

/// Lift `classification` out of each error's extensions, keep the rest beside it.
fn tool_error_entry(error: &Value) -> Value {
    let mut entry = json!({ "message": error["message"] });
    if let Some(path) = error.get("path") {
        entry["path"] = path.clone();
    }
    if let Some(extensions) = error.get("extensions").and_then(Value::as_object) {
        let mut rest = extensions.clone();
        if let Some(classification) = rest.remove("classification") {
            entry["classification"] = classification;
        }
        if !rest.is_empty() {
            entry["extensions"] = Value::Object(rest);
        }
    }
    entry
}

fn reviews_digest(reviews: &[ReviewText]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    reviews.hash(&mut hasher);
    hasher.finish()
}

fn viewer_of(extensions: &Extensions, fixed: Option<&Viewer>) -> Option<Viewer> {
    extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Viewer>())
        .or(fixed)
        .cloned()
}

/// The movie database's MCP server. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct MovieServer {
    schema: MovieSchema,
    layer: Backchannel,
    tools: Arc<ToolRouter<Self>>,
    /// Model-written summaries, per signed-in user, movie and exact reviews: one caller's
    /// model output is never served to another.
    summaries: moka::future::Cache<(String, i64, u64), Prose>,
    confirmations: Arc<Confirmations>,
    config: Arc<McpConfig>,
}

impl std::fmt::Debug for MovieServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MovieServer").finish_non_exhaustive()
    }
}

#[tool_router]
impl MovieServer {
    /// Check the server is up: answers "hello, <name>".
    #[tool(
        name = "ping",
        annotations(
            title = "Ping",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn ping(&self, Parameters(args): Parameters<PingArgs>) -> ToolResult {
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "hello, {}",
            args.name.trim()
        ))]))
    }

    /// Recommend up to ten movies for a mood, ranked by rating with a stable id tiebreak.
    #[tool(
        name = "recommendMoviesForMood",
        annotations(
            title = "Recommend Movies For Mood",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn recommend_movies_for_mood(
        &self,
        ctx: Ctx,
        Parameters(args): Parameters<RecommendArgs>,
    ) -> Result<Json<Recommendations>, ToolError> {
        let variables = json!({
            "mood": args.input.mood,
            "excludeWatched": args.input.exclude_watched,
        });
        let data = self.run(&ctx, RECOMMEND, variables).await.data_or_fail()?;
        let movies = data["recommendMoviesForMood"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|m| RecommendedMovie {
                        id: m["id"].as_str().unwrap_or_default().to_owned(),
                        title: m["title"].as_str().unwrap_or_default().to_owned(),
                        release_year: m["releaseYear"].as_i64().unwrap_or_default() as i32,
                        genre: m["genre"].as_str().unwrap_or_default().to_owned(),
                        rating: m["averageRating"].as_f64(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Json(Recommendations { movies }))
    }

    /// Summarise what reviewers say about one movie, once the person has picked it.
    #[tool(
        name = "summarizeMovieReviews",
        annotations(
            title = "Summarize Movie Reviews",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn summarize_movie_reviews(
        &self,
        ctx: Ctx,
        Parameters(args): Parameters<SummarizeArgs>,
    ) -> Result<Json<SummaryOutput>, ToolError> {
        ctx.progress(0.0, Some(1.0), Some("Loading reviews")).await;
        let data = self
            .run(&ctx, REVIEWS, json!({ "id": args.movie_id }))
            .await
            .data_or_fail()?;
        // An unknown movie reads as one without reviews.
        let movie = &data["movie"];
        let reviews: Vec<ReviewText> = movie["reviews"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|r| ReviewText {
                        score: r["score"].as_i64().unwrap_or_default() as i32,
                        comment: r["comment"].as_str().map(str::to_owned),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let movie_id = args.movie_id.trim();
        if reviews.len() < summary::MIN_REVIEWS_FOR_SUMMARY {
            ctx.progress(1.0, Some(1.0), Some("Done")).await;
            return Ok(Json(summary::summarize(movie_id, &reviews, None).into()));
        }
        ctx.progress(0.4, Some(1.0), Some("Summarizing")).await;
        let prose = self
            .summarize_with_model(&ctx, movie_id, movie["title"].as_str(), &reviews)
            .await?;
        ctx.progress(1.0, Some(1.0), Some("Done")).await;
        Ok(Json(
            summary::summarize(movie_id, &reviews, Some(prose)).into(),
        ))
    }

    /// Add one movie or show to the signed-in person's watch list.
    #[tool(
        name = "addToWatchlist",
        annotations(
            title = "Add To Watchlist",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn add_to_watchlist(
        &self,
        ctx: Ctx,
        Parameters(args): Parameters<AddArgs>,
    ) -> ToolResult {
        if self.viewer(&ctx).is_none() {
            return Err(ToolError::failed(SIGN_IN_NEEDED));
        }
        let subject = match (&args.subject.movie_id, &args.subject.tv_show_id) {
            (Some(movie), None) => json!({ "movieId": movie }),
            (None, Some(show)) => json!({ "tvShowId": show }),
            _ => {
                return Err(ToolError::failed(
                    "Give exactly one of subject.movieId and subject.tvShowId.",
                ));
            }
        };
        // Ask only about a title that exists and is not on the list yet; otherwise the add
        // below reports why it cannot be done, and nobody was bothered.
        let status = match args.status {
            Some(status) => Some(status),
            None if self.worth_asking(&ctx, &subject).await => self.ask_status(&ctx).await?,
            None => None,
        };
        // Absent fields stay out of the variables: @oneOf counts an explicit null as given.
        let mut variables = json!({ "subject": subject });
        if let Some(status) = status {
            variables["status"] = json!(status.as_str());
        }
        let outcome = self.run(&ctx, ADD, variables).await;
        Ok(structured_result(outcome))
    }

    /// Stage the removal of one watch-list entry. Nothing is removed until confirmAction is
    /// called with the returned token, which only the same person can use, once, within a
    /// minute. Ask the person before confirming.
    #[tool(
        name = "stageRemoveFromWatchlist",
        annotations(
            title = "Stage Remove From Watchlist",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn stage_remove_from_watchlist(
        &self,
        ctx: Ctx,
        Parameters(args): Parameters<StageArgs>,
    ) -> Result<Json<Staged>, ToolError> {
        let Some(viewer) = self.viewer(&ctx) else {
            return Err(ToolError::failed(SIGN_IN_NEEDED));
        };
        let item_id = args.item_id.trim().to_owned();
        crate::domain::parse_id("itemId", &item_id).map_err(ToolError::failed)?;
        // Stage only what exists, so the preview tells the truth.
        let data = self.run(&ctx, ITEM, json!({})).await.data_or_fail()?;
        let item = data["watchlist"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["id"] == json!(item_id)))
            .cloned()
            .ok_or_else(|| {
                ToolError::failed(format!(
                    "There is no watch-list entry {item_id} on your list; the watchlist query \
                     lists the ids you can use."
                ))
            })?;
        let ttl = self.config.confirmation_ttl;
        let token = self.confirmations.stage(&viewer.username, &item_id, ttl);
        let title = item["content"]["title"]
            .as_str()
            .unwrap_or("an untitled entry");
        Ok(Json(Staged {
            confirmation_token: token,
            preview_message: format!(
                "Will remove watchlist item {item_id} ({title}). Confirm with confirmAction."
            ),
            expires_in_seconds: ttl.as_secs(),
        }))
    }

    /// Carry out a staged action with its confirmation token. Call it only after the person
    /// has agreed to the preview; never confirm on your own.
    #[tool(
        name = "confirmAction",
        annotations(
            title = "Confirm Action",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn confirm_action(
        &self,
        ctx: Ctx,
        Parameters(args): Parameters<ConfirmArgs>,
    ) -> ToolResult {
        let Some(viewer) = self.viewer(&ctx) else {
            return Err(ToolError::failed(SIGN_IN_NEEDED));
        };
        let refused = |message: &str| {
            CallToolResult::structured_error(json!({ "status": "error", "message": message }))
        };
        let staged = match self
            .confirmations
            .redeem(&args.confirmation_token, &viewer.username)
        {
            Ok(staged) => staged,
            Err(TokenRefusal::Unknown) => return Ok(refused("Token not found or already used.")),
            Err(TokenRefusal::OtherUser) => {
                return Ok(refused("Token was staged by a different user."));
            }
            Err(TokenRefusal::Expired) => return Ok(refused("Token expired.")),
        };
        let outcome = self
            .run(&ctx, REMOVE, json!({ "itemId": staged.item_id }))
            .await;
        if !outcome.errors.is_empty() {
            return Ok(refused(&format!(
                "Removal failed: {:?}",
                outcome.messages()
            )));
        }
        Ok(CallToolResult::structured(json!({
            "status": "ok",
            "executed": "removeFromWatchlist",
            "removed": staged.item_id,
        })))
    }
}

/// The reference's mapping: a total failure is an error text; otherwise the data and the
/// errors (classification lifted out) as structured content, an error when there are errors.
fn structured_result(outcome: Outcome) -> CallToolResult {
    let errors: Vec<Value> = outcome.errors.iter().map(tool_error_entry).collect();
    let body = json!({ "data": outcome.data, "errors": errors });
    if outcome.data.is_null() && !errors.is_empty() {
        let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
            "GraphQL operation failed: {}",
            outcome.messages().join("; ")
        ))]);
        result.structured_content = Some(body);
        return result;
    }
    if errors.is_empty() {
        CallToolResult::structured(body)
    } else {
        CallToolResult::structured_error(body)
    }
}

impl MovieServer {
    /// The server over `schema`, with its own layer.
    pub fn new(schema: MovieSchema, layer: Backchannel, config: McpConfig) -> Self {
        let mut tools = Self::tool_router();
        describe_from_schema(&mut tools, &schema);
        Self {
            schema,
            layer,
            tools: Arc::new(backchannel::schema::portable_formats(tools)),
            summaries: moka::future::Cache::builder()
                .max_capacity(1_000)
                .time_to_live(config.summary_cache_ttl.max(Duration::from_millis(1)))
                .build(),
            confirmations: Arc::default(),
            config: Arc::new(config),
        }
    }

    /// The layer configuration this server expects: sealed state bound to the signed-in user.
    pub fn layer_builder(config: &McpConfig) -> backchannel::BackchannelBuilder {
        let fixed = config.fixed_user.clone();
        Backchannel::builder().principal(move |rc| {
            viewer_of(&rc.extensions, fixed.as_ref()).map(|viewer| viewer.username)
        })
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

    /// Ask the person whether they watched the title. Every answer but a chosen status falls
    /// back to the server's default, and the add goes ahead.
    async fn ask_status(&self, ctx: &Ctx) -> Result<Option<StatusArg>, ToolError> {
        let answer = ctx
            .elicit::<WatchStatusAnswer>("watch-status", WATCH_STATUS_QUESTION)
            .await?;
        Ok(match answer {
            Elicited::Accepted(WatchStatusAnswer { status }) => status,
            Elicited::Declined
            | Elicited::Cancelled
            | Elicited::Unsupported
            | Elicited::TimedOut => None,
        })
    }

    /// The client's model writes the prose when it can; a refusal, a timeout, an unreadable
    /// answer or a client without sampling gets the server's own summary. A signed-in caller's
    /// model summaries are reused for that caller for the cache window, keyed by the reviews,
    /// so a new review starts afresh; an anonymous caller's are not kept (anonymous callers
    /// cannot be told apart).
    async fn summarize_with_model(
        &self,
        ctx: &Ctx,
        movie_id: &str,
        title: Option<&str>,
        reviews: &[ReviewText],
    ) -> Result<Prose, ToolError> {
        let id = movie_id.parse::<i64>().unwrap_or_default();
        let key = self
            .viewer(ctx)
            .map(|viewer| (viewer.username, id, reviews_digest(reviews)));
        if let Some(key) = &key
            && let Some(prose) = self.summaries.get(key).await
        {
            return Ok(prose);
        }
        let request = backchannel::user_prompt(
            summary::sampling_prompt(title, reviews),
            summary::MAX_TOKENS,
        )
        .with_system_prompt(summary::SYSTEM_PROMPT);
        let answer = ctx
            .with_timeout(self.config.sampling_timeout)
            .sample("summary", request)
            .await?;
        let from_model = match &answer {
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
            Sampled::Unsupported => None,
        };
        Ok(match from_model {
            Some(prose) => {
                if let Some(key) = key {
                    self.summaries.insert(key, prose.clone()).await;
                }
                prose
            }
            None => summary::server_prose(reviews),
        })
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
