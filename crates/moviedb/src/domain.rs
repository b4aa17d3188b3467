//! The movie database's domain: titles, people, reviews, watch lists, moods, and the rules that
//! check input. No database, GraphQL or MCP types here.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Declares a string-coded enum with `as_str`, `ALL`, `Display` and `FromStr`.
macro_rules! coded_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $code:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $code)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire and database spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $code),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.trim().to_ascii_uppercase().as_str() {
                    $($code => Ok($name::$variant),)+
                    _ => Err(format!(
                        "'{}' is not a {}; expected one of {}",
                        s.trim(),
                        stringify!($name),
                        [$($code),+].join(", ")
                    )),
                }
            }
        }
    };
}

coded_enum!(
    /// A movie's or show's genre.
    Genre {
        /// Action.
        Action = "ACTION",
        /// Comedy.
        Comedy = "COMEDY",
        /// Crime.
        Crime = "CRIME",
        /// Drama.
        Drama = "DRAMA",
        /// Fantasy.
        Fantasy = "FANTASY",
        /// Horror.
        Horror = "HORROR",
        /// Mystery.
        Mystery = "MYSTERY",
        /// Romance.
        Romance = "ROMANCE",
        /// Science fiction.
        Scifi = "SCIFI",
        /// Thriller.
        Thriller = "THRILLER",
        /// War.
        War = "WAR",
        /// Western.
        Western = "WESTERN",
    }
);

coded_enum!(
    /// What the viewer feels like watching.
    Mood {
        /// Warm, familiar, easy to watch.
        Comfort = "COMFORT",
        /// Big journeys and action.
        Adventure = "ADVENTURE",
        /// Love stories and heartfelt drama.
        Romance = "ROMANCE",
        /// Fear and suspense.
        Horror = "HORROR",
        /// Films that leave something to think about.
        Thoughtful = "THOUGHTFUL",
        /// Laughs.
        Comedy = "COMEDY",
    }
);

coded_enum!(
    /// Where a title stands on someone's watch list.
    WatchStatus {
        /// Not seen yet (the default).
        WantToWatch = "WANT_TO_WATCH",
        /// Already seen.
        Watched = "WATCHED",
    }
);

coded_enum!(
    /// An account's role.
    Role {
        /// A regular account.
        User = "USER",
        /// An administrator.
        Admin = "ADMIN",
    }
);

coded_enum!(
    /// The field a movie page is sorted by.
    MovieSortField {
        /// Title, case-insensitive.
        Title = "TITLE",
        /// Release year.
        ReleaseYear = "RELEASE_YEAR",
        /// Average rating.
        Rating = "RATING",
        /// Runtime in minutes.
        Runtime = "RUNTIME",
    }
);

coded_enum!(
    /// Sort direction.
    SortOrder {
        /// Ascending.
        Asc = "ASC",
        /// Descending.
        Desc = "DESC",
    }
);

/// A movie.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Movie {
    /// Sequential id.
    pub id: i64,
    /// Title.
    pub title: String,
    /// Year of release (1888–2100).
    pub release_year: i32,
    /// Genre.
    pub genre: Genre,
    /// Average rating, 0–10.
    pub rating: Option<f64>,
    /// Runtime in minutes.
    pub runtime: Option<i32>,
    /// Plot summary.
    pub plot: Option<String>,
    /// Poster image URL.
    pub poster_url: Option<String>,
    /// The Movie Database (TMDB) id.
    pub tmdb_id: Option<i64>,
}

/// A TV show.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TvShow {
    /// Sequential id.
    pub id: i64,
    /// Title.
    pub title: String,
    /// Genre.
    pub genre: Genre,
    /// Average rating, 0–10.
    pub rating: Option<f64>,
    /// Poster image URL.
    pub poster_url: Option<String>,
    /// TMDB id.
    pub tmdb_id: Option<i64>,
    /// First year on air.
    pub start_year: i32,
    /// Last year on air; `None` while still airing.
    pub end_year: Option<i32>,
    /// Number of seasons.
    pub seasons: i32,
    /// What the show is about.
    pub plot: Option<String>,
}

/// One episode of a TV show.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Episode {
    /// Id.
    pub id: i64,
    /// The show.
    pub tv_show_id: i64,
    /// Season number, from 1.
    pub season_number: i32,
    /// Episode number within the season, from 1.
    pub episode_number: i32,
    /// Title.
    pub title: String,
    /// What happens.
    pub overview: Option<String>,
    /// Runtime in minutes.
    pub runtime: Option<i32>,
    /// Year first aired.
    pub air_year: Option<i32>,
}

/// A person in front of or behind the camera.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Person {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Year of birth.
    pub birth_year: Option<i32>,
    /// One-line biography.
    pub biography: Option<String>,
    /// Portrait URL.
    pub photo_url: Option<String>,
    /// ISO 3166-1 alpha-2 country code.
    pub country_code: Option<String>,
}

/// A role someone played.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Credit {
    /// Who played it.
    pub person: Person,
    /// The character's name.
    pub character_name: Option<String>,
}

/// What a review or a watch-list entry is about: exactly one movie or show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Subject {
    /// A movie id.
    Movie(i64),
    /// A TV show id.
    TvShow(i64),
}

/// A user's review of a title.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    /// Id.
    pub id: i64,
    /// Score, 1–10.
    pub score: i32,
    /// Free text, at most 2000 characters.
    pub comment: Option<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// Who wrote it.
    pub user_id: i64,
    /// What it reviews.
    pub subject: Subject,
}

/// An account.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    /// Id.
    pub id: i64,
    /// Unique name used to sign in.
    pub username: String,
    /// Email address.
    pub email: String,
    /// Role.
    pub role: Role,
    /// Argon2 PHC string; never leaves the server.
    pub password_hash: String,
}

/// One entry of a user's watch list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchlistItem {
    /// Id.
    pub id: i64,
    /// Owner.
    pub user_id: i64,
    /// The title.
    pub subject: Subject,
    /// Watched or not yet.
    pub status: WatchStatus,
}

/// A failure the API reports to its caller, classified the way GraphQL errors are.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DomainError {
    /// Something named by the caller does not exist (or is not theirs).
    #[error("{message}")]
    NotFound {
        /// The kind of thing, e.g. `Movie`.
        entity: &'static str,
        /// What the caller reads.
        message: String,
    },
    /// The caller's input breaks a rule.
    #[error("{message}")]
    BadRequest {
        /// The offending field, if one.
        field: Option<String>,
        /// What the caller reads.
        message: String,
    },
    /// The operation needs a signed-in user.
    #[error("{0}")]
    Unauthorized(String),
    /// The signed-in user may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// Too many attempts; the caller may try again after `retry_after_secs`.
    #[error("{message}")]
    Throttled {
        /// What the caller reads.
        message: String,
        /// Seconds until another attempt is allowed.
        retry_after_secs: u64,
    },
}

impl DomainError {
    /// `entity` with `id` does not exist.
    pub fn not_found(entity: &'static str, id: impl fmt::Display) -> Self {
        DomainError::NotFound {
            entity,
            message: format!("{entity} not found with id: {id}"),
        }
    }

    /// A rule on `field` is broken.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        DomainError::BadRequest {
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }

    /// The request needs a signed-in user.
    pub fn sign_in_needed() -> Self {
        DomainError::Unauthorized(
            "You need to be signed in for this. Sign in with the login mutation and send the token \
             as 'Authorization: Bearer <token>'."
                .into(),
        )
    }
}

/// The one reading of an id a caller typed (GraphQL arguments, tool arguments): a decimal
/// number, blanks around it allowed. A number that names nothing is the caller's "not found";
/// anything else is not an id at all.
pub fn id_number(raw: &str) -> Option<i64> {
    raw.trim().parse::<i64>().ok()
}

/// [`id_number`], or the watch list's error naming `field` ("itemId must be a numeric ID").
pub fn parse_id(field: &str, raw: &str) -> Result<i64, DomainError> {
    id_number(raw)
        .ok_or_else(|| DomainError::invalid(field, format!("{field} must be a numeric ID")))
}

/// Check `value` lies in `min..=max`; the message names the field and the range.
pub fn check_range<T: PartialOrd + fmt::Display + Copy>(
    field: &str,
    value: T,
    min: T,
    max: T,
) -> Result<(), DomainError> {
    if value < min || value > max {
        return Err(DomainError::invalid(
            field,
            format!("{field} must be between {min} and {max} (got {value})"),
        ));
    }
    Ok(())
}

/// Check a text's length in characters lies in `min..=max`.
pub fn check_length(field: &str, value: &str, min: usize, max: usize) -> Result<(), DomainError> {
    let len = value.chars().count();
    if len < min || len > max {
        let message = if min == 0 {
            format!("{field} must be at most {max} characters (got {len})")
        } else {
            format!("{field} must be between {min} and {max} characters (got {len})")
        };
        return Err(DomainError::invalid(field, message));
    }
    Ok(())
}

/// Check an email address has one `@`, a non-empty local part and a dotted domain.
pub fn check_email(value: &str) -> Result<(), DomainError> {
    check_length("email", value, 3, 120)?;
    let ok = value.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && !domain.contains('@')
            && domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !value.chars().any(char::is_whitespace)
    });
    if ok {
        Ok(())
    } else {
        Err(DomainError::invalid(
            "email",
            "email must be a well-formed email address",
        ))
    }
}

/// The page window the caller asked for, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// Zero-based page number.
    pub page: i64,
    /// Items per page.
    pub size: i64,
}

impl PageRequest {
    /// Check `page >= 0` and `1 <= size <= max_size`.
    pub fn new(page: i64, size: i64, max_size: i64) -> Result<Self, DomainError> {
        if page < 0 {
            return Err(DomainError::invalid(
                "page",
                format!("page must be 0 or more (got {page})"),
            ));
        }
        check_range("size", size, 1, max_size)?;
        Ok(Self { page, size })
    }

    /// Rows to skip.
    pub fn offset(self) -> i64 {
        self.page.saturating_mul(self.size)
    }
}

/// Filters on a movie listing; `None` means "any".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MovieFilter {
    /// Only this genre.
    pub genre: Option<Genre>,
    /// Rating at least.
    pub min_rating: Option<f64>,
    /// Rating at most.
    pub max_rating: Option<f64>,
    /// Released in or after.
    pub min_year: Option<i32>,
    /// Released in or before.
    pub max_year: Option<i32>,
    /// Runtime at least (movies of unknown runtime are left out).
    pub min_runtime: Option<i32>,
    /// Runtime at most (movies of unknown runtime are left out).
    pub max_runtime: Option<i32>,
    /// Title contains this, case-insensitive.
    pub title_contains: Option<String>,
}

impl MovieFilter {
    /// Check every bound is in range and the pairs are not crossed.
    pub fn validate(&self) -> Result<(), DomainError> {
        for (field, value) in [
            ("minRating", self.min_rating),
            ("maxRating", self.max_rating),
        ] {
            if let Some(v) = value {
                check_range(field, v, 0.0, 10.0)?;
            }
        }
        for (field, value) in [("minYear", self.min_year), ("maxYear", self.max_year)] {
            if let Some(v) = value {
                check_range(field, v, 1888, 2100)?;
            }
        }
        for (field, value) in [
            ("minRuntime", self.min_runtime),
            ("maxRuntime", self.max_runtime),
        ] {
            if let Some(v) = value {
                check_range(field, v, 1, 600)?;
            }
        }
        let crossed =
            |lo: Option<f64>, hi: Option<f64>| matches!((lo, hi), (Some(l), Some(h)) if l > h);
        if crossed(self.min_rating, self.max_rating)
            || crossed(self.min_year.map(f64::from), self.max_year.map(f64::from))
            || crossed(
                self.min_runtime.map(f64::from),
                self.max_runtime.map(f64::from),
            )
        {
            return Err(DomainError::invalid(
                "filter",
                "a filter's minimum must not be greater than its maximum",
            ));
        }
        if let Some(text) = &self.title_contains {
            check_length("titleContains", text, 0, 200)?;
        }
        Ok(())
    }
}

/// The fields of a new movie, or of a partial update (absent fields unchanged).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MovieInput {
    /// Title, 1–200 characters.
    pub title: Option<String>,
    /// Year, 1888–2100.
    pub release_year: Option<i32>,
    /// Genre (required on create).
    pub genre: Option<Genre>,
    /// Rating, 0–10.
    pub rating: Option<f64>,
    /// Runtime, 1–600 minutes.
    pub runtime: Option<i32>,
    /// Plot, at most 2000 characters.
    pub plot: Option<String>,
    /// Poster URL, at most 500 characters.
    pub poster_url: Option<String>,
    /// TMDB id.
    pub tmdb_id: Option<i64>,
}

impl MovieInput {
    /// Check the fields that are present.
    pub fn validate(&self) -> Result<(), DomainError> {
        if let Some(title) = &self.title {
            check_length("title", title.trim(), 1, 200)?;
        }
        if let Some(year) = self.release_year {
            check_range("releaseYear", year, 1888, 2100)?;
        }
        if let Some(rating) = self.rating {
            check_range("rating", rating, 0.0, 10.0)?;
        }
        if let Some(runtime) = self.runtime {
            check_range("runtime", runtime, 1, 600)?;
        }
        if let Some(plot) = &self.plot {
            check_length("plot", plot, 0, 2000)?;
        }
        if let Some(url) = &self.poster_url {
            check_length("posterUrl", url, 0, 500)?;
        }
        Ok(())
    }

    /// Check a complete new movie: title, year and genre are required.
    pub fn validate_new(&self) -> Result<(), DomainError> {
        if self.title.is_none() {
            return Err(DomainError::invalid("title", "title is required"));
        }
        if self.release_year.is_none() {
            return Err(DomainError::invalid(
                "releaseYear",
                "releaseYear is required",
            ));
        }
        if self.genre.is_none() {
            return Err(DomainError::invalid("genre", "genre is required"));
        }
        self.validate()
    }
}

/// The fields of a new person, or of a partial update (absent fields unchanged).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PersonInput {
    /// Name, 1–200 characters (required on create).
    pub name: Option<String>,
    /// Year of birth, 1800–2100.
    pub birth_year: Option<i32>,
    /// Biography, at most 2000 characters.
    pub biography: Option<String>,
    /// Portrait URL, at most 500 characters.
    pub photo_url: Option<String>,
    /// ISO 3166-1 alpha-2 code.
    pub country_code: Option<String>,
}

impl PersonInput {
    /// Check the fields that are present.
    pub fn validate(&self) -> Result<(), DomainError> {
        if let Some(name) = &self.name {
            check_length("name", name.trim(), 1, 200)?;
        }
        if let Some(year) = self.birth_year {
            check_range("birthYear", year, 1800, 2100)?;
        }
        if let Some(bio) = &self.biography {
            check_length("biography", bio, 0, 2000)?;
        }
        if let Some(url) = &self.photo_url {
            check_length("photoUrl", url, 0, 500)?;
        }
        if let Some(code) = &self.country_code
            && (code.len() != 2 || !code.chars().all(|c| c.is_ascii_uppercase()))
        {
            return Err(DomainError::invalid(
                "countryCode",
                "countryCode must be an ISO 3166-1 alpha-2 code such as US or FR",
            ));
        }
        Ok(())
    }

    /// Check a complete new person: the name is required.
    pub fn validate_new(&self) -> Result<(), DomainError> {
        if self.name.is_none() {
            return Err(DomainError::invalid("name", "name is required"));
        }
        self.validate()
    }
}

/// Check a new review's score and comment.
pub fn validate_review(score: i32, comment: Option<&str>) -> Result<(), DomainError> {
    check_range("score", score, 1, 10)?;
    if let Some(comment) = comment {
        check_length("comment", comment, 0, 2000)?;
    }
    Ok(())
}

/// Check a registration's username, email and password.
pub fn validate_registration(
    username: &str,
    email: &str,
    password: &str,
) -> Result<(), DomainError> {
    check_length("username", username, 3, 50)?;
    if !username
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(DomainError::invalid(
            "username",
            "username may contain only letters, digits, '.', '_' and '-'",
        ));
    }
    check_email(email)?;
    check_length("password", password, 6, 100)
}

/// Which movies a mood recommends: genres, a rating floor, and an optional runtime ceiling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoodProfile {
    /// Genres that fit the mood.
    pub genres: &'static [Genre],
    /// Lowest rating recommended (a movie with no rating never is).
    pub min_rating: f64,
    /// Longest runtime recommended; a movie of unknown runtime passes.
    pub max_runtime: Option<i32>,
}

/// How many movies a recommendation lists at most.
pub const RECOMMENDATION_LIMIT: usize = 10;

impl Mood {
    /// The profile behind this mood.
    ///
    /// COMEDY is comedies alone, so it differs from COMFORT (comedies, romances and short
    /// fantasies), which on the seed data would otherwise give the same ten titles.
    pub fn profile(self) -> MoodProfile {
        use Genre::*;
        match self {
            Mood::Comfort => MoodProfile {
                genres: &[Comedy, Romance, Fantasy],
                min_rating: 7.0,
                max_runtime: Some(140),
            },
            Mood::Adventure => MoodProfile {
                genres: &[Action, Fantasy, Scifi, Western],
                min_rating: 6.5,
                max_runtime: None,
            },
            Mood::Romance => MoodProfile {
                genres: &[Romance, Drama],
                min_rating: 6.5,
                max_runtime: None,
            },
            Mood::Horror => MoodProfile {
                genres: &[Horror, Thriller, Mystery],
                min_rating: 6.0,
                max_runtime: None,
            },
            Mood::Thoughtful => MoodProfile {
                genres: &[Drama, Scifi, War, Mystery, Crime],
                min_rating: 7.5,
                max_runtime: None,
            },
            Mood::Comedy => MoodProfile {
                genres: &[Comedy],
                min_rating: 6.0,
                max_runtime: None,
            },
        }
    }
}

impl MoodProfile {
    /// Whether `movie` fits.
    pub fn matches(&self, movie: &Movie) -> bool {
        self.genres.contains(&movie.genre)
            && movie.rating.is_some_and(|r| r >= self.min_rating)
            && match (self.max_runtime, movie.runtime) {
                (Some(max), Some(runtime)) => runtime <= max,
                _ => true,
            }
    }
}

/// The movies `mood` recommends out of `movies`, minus `exclude` (ids of movies already
/// watched): rating descending, then id ascending, at most [`RECOMMENDATION_LIMIT`].
pub fn recommend(mood: Mood, movies: &[Movie], exclude: &[i64]) -> Vec<Movie> {
    let profile = mood.profile();
    let mut picked: Vec<Movie> = movies
        .iter()
        .filter(|m| profile.matches(m) && !exclude.contains(&m.id))
        .cloned()
        .collect();
    picked.sort_by(|a, b| {
        b.rating
            .partial_cmp(&a.rating)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.id.cmp(&b.id))
    });
    picked.truncate(RECOMMENDATION_LIMIT);
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn movie(id: i64, genre: Genre, rating: Option<f64>, runtime: Option<i32>) -> Movie {
        Movie {
            id,
            title: format!("m{id}"),
            release_year: 2000,
            genre,
            rating,
            runtime,
            plot: None,
            poster_url: None,
            tmdb_id: None,
        }
    }

    #[test]
    fn a_profile_needs_genre_and_rating_and_lets_unknown_runtime_pass() {
        let comfort = Mood::Comfort.profile();
        assert!(comfort.matches(&movie(1, Genre::Comedy, Some(7.0), None)));
        assert!(!comfort.matches(&movie(1, Genre::Comedy, None, Some(90))));
        assert!(!comfort.matches(&movie(1, Genre::Comedy, Some(6.9), Some(90))));
        assert!(!comfort.matches(&movie(1, Genre::Comedy, Some(8.0), Some(141))));
        assert!(!comfort.matches(&movie(1, Genre::Horror, Some(9.0), Some(90))));
    }

    #[test]
    fn recommendations_sort_by_rating_then_id_and_stop_at_ten() {
        let movies: Vec<Movie> = (1..=15)
            .map(|id| {
                movie(
                    id,
                    Genre::Comedy,
                    Some(if id % 2 == 0 { 8.0 } else { 7.0 }),
                    None,
                )
            })
            .collect();
        let ids: Vec<i64> = recommend(Mood::Comedy, &movies, &[2])
            .iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(ids, vec![4, 6, 8, 10, 12, 14, 1, 3, 5, 7]);
    }

    #[test]
    fn ids_and_ranges_are_checked_with_the_field_named() {
        assert_eq!(parse_id("itemId", " 12 "), Ok(12));
        assert_eq!(
            id_number("-3"),
            Some(-3),
            "a number, even one that names nothing"
        );
        assert_eq!(id_number("12a"), None);
        assert_eq!(id_number(""), None);
        assert_eq!(
            parse_id("itemId", "abc").unwrap_err().to_string(),
            "itemId must be a numeric ID"
        );
        assert_eq!(
            validate_review(11, None).unwrap_err().to_string(),
            "score must be between 1 and 10 (got 11)"
        );
        assert!(check_email("a@b.co").is_ok());
        assert!(check_email("a@b").is_err());
        assert!(check_email("a b@c.de").is_err());
        assert!(PageRequest::new(0, 101, 100).is_err());
        assert!(
            MovieFilter {
                min_year: Some(2000),
                max_year: Some(1990),
                ..MovieFilter::default()
            }
            .validate()
            .is_err()
        );
        assert_eq!("watched".parse::<WatchStatus>(), Ok(WatchStatus::Watched));
    }
}
