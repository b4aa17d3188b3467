//! The tools' arguments and results, with the schemas clients see.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::{Mood, WatchStatus};
use crate::summary::{ReviewSummary, SummarySource};

/// An id as the caller sent it: a string, or a whole number some clients make of `"1"` (MCP
/// Inspector reads a typed `1` as a number); anything else is refused by name.
fn id_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    use serde::de::Error;
    match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::String(text) => Ok(text),
        serde_json::Value::Number(number) if number.is_i64() || number.is_u64() => {
            Ok(number.to_string())
        }
        other => Err(D::Error::custom(format!(
            "an id is a string such as \"1\", not {other}"
        ))),
    }
}

/// [`id_text`] for an id that may be left out (an explicit `null` reads as left out).
fn optional_id_text<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    match Option::<serde_json::Value>::deserialize(deserializer)? {
        None => Ok(None),
        Some(value) => id_text(value).map(Some).map_err(serde::de::Error::custom),
    }
}

/// Optional properties as a form-drawing client reads them best: the type alone, without a
/// `null` default (a string field defaulting to `null` is flagged as unportable).
fn without_null_defaults(schema: &mut schemars::Schema) {
    if let Some(properties) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        for property in properties.values_mut() {
            if let Some(property) = property.as_object_mut()
                && property.get("default") == Some(&serde_json::Value::Null)
            {
                property.remove("default");
            }
        }
    }
}

/// Arguments of `ping`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PingArgs {
    /// Who is pinging.
    pub name: String,
}

/// The schema of a domain enum as the tools accept it: its codes, under the name and with the
/// description the tools' schemas have always shown.
macro_rules! coded_schema {
    ($domain:ty, $name:literal, $description:literal) => {
        impl JsonSchema for $domain {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                $name.into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let codes: Vec<&str> = <$domain>::ALL.iter().map(|code| code.as_str()).collect();
                schemars::json_schema!({ "description": $description, "enum": codes, "type": "string" })
            }
        }
    };
}

coded_schema!(Mood, "MoodArg", "A mood, as the tools accept it.");
coded_schema!(
    WatchStatus,
    "StatusArg",
    "A watch status, as the tools accept it."
);

/// The mood request.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoodInput {
    /// The closest mood to what the person asked for.
    pub mood: Mood,
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
    #[serde(deserialize_with = "id_text")]
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
                    SummarySource::ClientModel => "CLIENT_MODEL",
                    SummarySource::Server => "SERVER",
                }
                .to_owned()
            }),
        }
    }
}

/// Exactly one of a movie or a show.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = without_null_defaults)]
pub struct SubjectArg {
    /// A movie's id.
    #[serde(default, deserialize_with = "optional_id_text")]
    #[schemars(with = "String")]
    pub movie_id: Option<String>,
    /// A TV show's id.
    #[serde(default, deserialize_with = "optional_id_text")]
    #[schemars(with = "String")]
    pub tv_show_id: Option<String>,
}

/// Arguments of `addToWatchlist`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = without_null_defaults)]
pub struct AddArgs {
    /// Exactly one of movieId and tvShowId.
    pub subject: SubjectArg,
    /// WATCHED or WANT_TO_WATCH, when the person already said; leave it out to let the server
    /// ask them.
    #[serde(default)]
    #[schemars(with = "WatchStatus")]
    pub status: Option<WatchStatus>,
}

/// The form `addToWatchlist` shows the person. An empty submission reads as "no answer".
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WatchStatusAnswer {
    /// WATCHED if already seen, WANT_TO_WATCH to watch later.
    #[serde(default)]
    pub status: Option<WatchStatus>,
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
    #[serde(deserialize_with = "id_text")]
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
