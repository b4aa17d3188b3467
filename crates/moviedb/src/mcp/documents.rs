//! The pinned GraphQL documents the tools run, and how their outcome reads as a tool result.

use std::hash::{Hash, Hasher};

use backchannel::ToolError;
use rmcp::model::Extensions;
use serde_json::{Value, json};

use crate::service::Viewer;
use crate::summary::ReviewText;

pub(crate) const RECOMMEND: &str = "query Recommend($mood: Mood!, $excludeWatched: Boolean!) {
  recommendMoviesForMood(mood: $mood, excludeWatched: $excludeWatched) {
    id title releaseYear genre averageRating
  }
}";

pub(crate) const REVIEWS: &str = "query Reviews($id: ID!) {
  movie(id: $id) { title reviews { score comment } }
}";

pub(crate) const ADD: &str =
    "mutation Add($subject: WatchlistSubjectInput!, $status: WatchStatus) {
  addToWatchlist(subject: $subject, status: $status) {
    id status content { __typename title }
  }
}";

pub(crate) const PRECHECK: &str =
    "query Precheck($movieId: ID!, $showId: ID!, $isMovie: Boolean!) {
  movie(id: $movieId) @include(if: $isMovie) { id }
  tvShow(id: $showId) @skip(if: $isMovie) { id }
  watchlist { content { __typename ... on Movie { id } ... on TvShow { id } } }
}";

pub(crate) const ITEM: &str =
    "query Items { watchlist { id status content { __typename title } } }";

pub(crate) const REMOVE: &str =
    "mutation Remove($itemId: ID!) { removeFromWatchlist(itemId: $itemId) }";

/// The `data` and `errors` of an executed document, as JSON.
pub(crate) struct Outcome {
    pub(crate) data: Value,
    pub(crate) errors: Vec<Value>,
}

impl Outcome {
    pub(crate) fn messages(&self) -> Vec<String> {
        self.errors
            .iter()
            .map(|e| e["message"].as_str().unwrap_or("unknown error").to_owned())
            .collect()
    }

    /// For read tools: the data read as `T` (the shape of the document's selection), or the
    /// errors as a tool failure.
    pub(crate) fn data_as<T: serde::de::DeserializeOwned>(self) -> Result<T, ToolError> {
        let data = self.data_or_fail()?;
        serde_json::from_value(data).map_err(|error| {
            ToolError::failed(format!(
                "the GraphQL answer did not have the expected shape: {error}"
            ))
        })
    }

    /// For read tools: data, or the errors as a tool failure.
    pub(crate) fn data_or_fail(self) -> Result<Value, ToolError> {
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
pub(crate) fn tool_error_entry(error: &Value) -> Value {
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

pub(crate) fn reviews_digest(reviews: &[ReviewText]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    reviews.hash(&mut hasher);
    hasher.finish()
}

pub(crate) fn viewer_of(extensions: &Extensions, fixed: Option<&Viewer>) -> Option<Viewer> {
    extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Viewer>())
        .or(fixed)
        .cloned()
}

/// What [`RECOMMEND`] selects.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Recommended {
    pub(crate) recommend_movies_for_mood: Vec<RecommendedRow>,
}

/// One movie of [`Recommended`].
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecommendedRow {
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) release_year: i32,
    pub(crate) genre: String,
    pub(crate) average_rating: Option<f64>,
}

/// What [`REVIEWS`] selects: the movie, `None` when there is no movie with that id.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Reviews {
    pub(crate) movie: Option<ReviewedMovie>,
}

/// The movie of [`Reviews`] and what its reviewers said.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct ReviewedMovie {
    pub(crate) title: String,
    pub(crate) reviews: Vec<ReviewText>,
}
