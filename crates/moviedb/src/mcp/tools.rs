//! The six tools. Each runs a pinned GraphQL document as the caller; the two-way ones ask
//! through `Ctx` and so serve both protocol revisions.

use backchannel::{Ctx, ToolError, ToolResult};
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{tool, tool_router};
use serde_json::{Value, json};

use crate::mcp::args::{
    AddArgs, ConfirmArgs, PingArgs, RecommendArgs, Recommendations, RecommendedMovie, StageArgs,
    Staged, SummarizeArgs, SummaryOutput,
};
use crate::mcp::confirmations::TokenRefusal;
use crate::mcp::documents::{
    ADD, ITEM, Outcome, RECOMMEND, REMOVE, REVIEWS, Recommended, Reviews, tool_error_entry,
};
use crate::mcp::{MovieServer, SIGN_IN_NEEDED};
use crate::summary;

#[tool_router(vis = "pub(crate)")]
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
    pub(crate) async fn ping(&self, Parameters(args): Parameters<PingArgs>) -> ToolResult {
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
    pub(crate) async fn recommend_movies_for_mood(
        &self,
        ctx: Ctx,
        Parameters(args): Parameters<RecommendArgs>,
    ) -> Result<Json<Recommendations>, ToolError> {
        let variables = json!({
            "mood": args.input.mood,
            "excludeWatched": args.input.exclude_watched,
        });
        let data: Recommended = self.run(&ctx, RECOMMEND, variables).await.data_as()?;
        let movies = data
            .recommend_movies_for_mood
            .into_iter()
            .map(|m| RecommendedMovie {
                id: m.id,
                title: m.title,
                release_year: m.release_year,
                genre: m.genre,
                rating: m.average_rating,
            })
            .collect();
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
    pub(crate) async fn summarize_movie_reviews(
        &self,
        ctx: Ctx,
        Parameters(args): Parameters<SummarizeArgs>,
    ) -> Result<Json<SummaryOutput>, ToolError> {
        let movie_id = crate::domain::id_number(&args.movie_id).ok_or_else(|| {
            ToolError::failed(format!("Invalid value '{}' for movieId", args.movie_id))
        })?;
        ctx.progress(0.0, Some(1.0), Some("Loading reviews")).await;
        let data: Reviews = self
            .run(&ctx, REVIEWS, json!({ "id": movie_id.to_string() }))
            .await
            .data_as()?;
        let Some(movie) = data.movie else {
            return Err(ToolError::failed(format!(
                "There is no movie with id {movie_id}; search for movies to find their ids."
            )));
        };
        let summary = summary::summarize(movie_id, &movie.reviews, async |reviews| {
            ctx.progress(0.4, Some(1.0), Some("Summarizing")).await;
            self.summarize_with_model(&ctx, movie_id, Some(movie.title.as_str()), reviews)
                .await
        })
        .await?;
        ctx.progress(1.0, Some(1.0), Some("Done")).await;
        Ok(Json(summary.into()))
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
    pub(crate) async fn add_to_watchlist(
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
    pub(crate) async fn stage_remove_from_watchlist(
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
    pub(crate) async fn confirm_action(
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
