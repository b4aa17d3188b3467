//! The GraphQL input types, and the checks that turn them into domain values.

use async_graphql::{ID, InputObject, OneofObject};

use crate::domain::Subject;
use crate::graphql::enums::{GenreGql, MovieSortFieldGql, SortOrderGql};
use crate::graphql::errors::{GqlResult, numeric};

/// Filters on a movie listing; omitted fields match everything.
#[derive(InputObject, Default)]
pub(crate) struct MovieFilter {
    /// Only this genre.
    pub(crate) genre: Option<GenreGql>,
    /// Rating at least (0–10).
    pub(crate) min_rating: Option<f64>,
    /// Rating at most (0–10).
    pub(crate) max_rating: Option<f64>,
    /// Released in or after (1888–2100).
    pub(crate) min_year: Option<i32>,
    /// Released in or before (1888–2100).
    pub(crate) max_year: Option<i32>,
    /// Runtime at least, in minutes; movies of unknown runtime are left out.
    pub(crate) min_runtime: Option<i32>,
    /// Runtime at most, in minutes; movies of unknown runtime are left out.
    pub(crate) max_runtime: Option<i32>,
    /// Title contains this text, case-insensitive.
    pub(crate) title_contains: Option<String>,
}

/// How to sort a movie listing.
#[derive(InputObject)]
pub(crate) struct MovieSort {
    /// Field to sort by.
    pub(crate) field: MovieSortFieldGql,
    /// Direction (ascending by default).
    #[graphql(default_with = "SortOrderGql::Asc")]
    pub(crate) order: SortOrderGql,
}

/// Credentials.
#[derive(InputObject)]
pub(crate) struct LoginInput {
    /// Username.
    pub(crate) username: String,
    /// Password.
    pub(crate) password: String,
}

/// A new account.
#[derive(InputObject)]
pub(crate) struct RegisterInput {
    /// 3–50 characters: letters, digits, '.', '_' and '-'.
    pub(crate) username: String,
    /// Email address, at most 120 characters.
    pub(crate) email: String,
    /// 6–100 characters.
    pub(crate) password: String,
}

/// Exactly one of a movie or a show, for a review.
#[derive(OneofObject)]
pub(crate) enum ReviewSubjectInput {
    /// A movie's id.
    MovieId(ID),
    /// A TV show's id.
    TvShowId(ID),
}

/// Exactly one of a movie or a show, for a watch-list entry.
#[derive(OneofObject)]
pub(crate) enum WatchlistSubjectInput {
    /// A movie's id.
    MovieId(ID),
    /// A TV show's id.
    TvShowId(ID),
}

pub(crate) fn review_subject(subject: &ReviewSubjectInput) -> GqlResult<Subject> {
    Ok(match subject {
        ReviewSubjectInput::MovieId(id) => Subject::Movie(numeric("movieId", id)?),
        ReviewSubjectInput::TvShowId(id) => Subject::TvShow(numeric("tvShowId", id)?),
    })
}

pub(crate) fn watchlist_subject(subject: &WatchlistSubjectInput) -> GqlResult<Subject> {
    Ok(match subject {
        WatchlistSubjectInput::MovieId(id) => Subject::Movie(numeric("movieId", id)?),
        WatchlistSubjectInput::TvShowId(id) => Subject::TvShow(numeric("tvShowId", id)?),
    })
}

/// A new review.
#[derive(InputObject)]
pub(crate) struct CreateReviewInput {
    /// What is reviewed.
    pub(crate) subject: ReviewSubjectInput,
    /// Score from 1 to 10.
    pub(crate) score: i32,
    /// The reviewer's words, at most 2000 characters.
    pub(crate) comment: Option<String>,
}

/// A new movie.
#[derive(InputObject)]
pub(crate) struct CreateMovieInput {
    /// Title, 1–200 characters.
    pub(crate) title: String,
    /// Year of release, 1888–2100.
    pub(crate) release_year: i32,
    /// Genre.
    pub(crate) genre: GenreGql,
    /// Rating from 0 to 10.
    pub(crate) rating: Option<f64>,
    /// Runtime in minutes, 1–600.
    pub(crate) runtime: Option<i32>,
    /// Plot, at most 2000 characters.
    pub(crate) plot: Option<String>,
    /// Poster URL, at most 500 characters.
    pub(crate) poster_url: Option<String>,
    /// TMDB id.
    pub(crate) tmdb_id: Option<i64>,
}

/// Changes to a movie; omitted fields stay as they are.
#[derive(InputObject)]
pub(crate) struct UpdateMovieInput {
    /// The movie to change.
    pub(crate) id: ID,
    /// Title, 1–200 characters.
    pub(crate) title: Option<String>,
    /// Year of release, 1888–2100.
    pub(crate) release_year: Option<i32>,
    /// Genre.
    pub(crate) genre: Option<GenreGql>,
    /// Rating from 0 to 10.
    pub(crate) rating: Option<f64>,
    /// Runtime in minutes, 1–600.
    pub(crate) runtime: Option<i32>,
    /// Plot, at most 2000 characters.
    pub(crate) plot: Option<String>,
    /// Poster URL, at most 500 characters.
    pub(crate) poster_url: Option<String>,
    /// TMDB id.
    pub(crate) tmdb_id: Option<i64>,
}

/// A new person.
#[derive(InputObject)]
pub(crate) struct CreatePersonInput {
    /// Name, 1–200 characters.
    pub(crate) name: String,
    /// Year of birth, 1800–2100.
    pub(crate) birth_year: Option<i32>,
    /// One-line biography, at most 2000 characters.
    pub(crate) biography: Option<String>,
    /// Portrait URL, at most 500 characters.
    pub(crate) photo_url: Option<String>,
    /// ISO 3166-1 alpha-2 country code, such as US.
    pub(crate) country_code: Option<String>,
}

/// Changes to a person; omitted fields stay as they are.
#[derive(InputObject)]
pub(crate) struct UpdatePersonInput {
    /// The person to change.
    pub(crate) id: ID,
    /// Name, 1–200 characters.
    pub(crate) name: Option<String>,
    /// Year of birth, 1800–2100.
    pub(crate) birth_year: Option<i32>,
    /// One-line biography, at most 2000 characters.
    pub(crate) biography: Option<String>,
    /// Portrait URL, at most 500 characters.
    pub(crate) photo_url: Option<String>,
    /// ISO 3166-1 alpha-2 country code, such as US.
    pub(crate) country_code: Option<String>,
}
