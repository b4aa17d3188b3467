//! The catalogue, accounts, reviews and watch lists in SQLite through sqlx: migrations, the
//! seed, and every query the API needs.

use std::collections::HashMap;
use std::str::FromStr;

use chrono::Utc;
use sqlx::sqlite::SqliteRow;
use sqlx::{QueryBuilder, Row, Sqlite, SqlitePool};

use crate::domain::*;
use crate::seed::{self, SeedTitle};

mod movies;
mod people;
mod reviews;
mod shows;
mod users;
mod watchlist;

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened or queried.
    #[error("database error: {0}")]
    Database(sqlx::Error),
    /// A migration failed.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A uniqueness rule was hit (a second review or watch-list entry for one title, a taken
    /// username).
    #[error("the request conflicts with existing data")]
    Duplicate,
    /// A stored value is not what the schema promises.
    #[error("corrupt row in the database: {0}")]
    Corrupt(String),
    /// Seeding could not hash a password.
    #[error("seeding failed: {0}")]
    Seed(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        match &error {
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Duplicate,
            _ => StoreError::Database(error),
        }
    }
}

/// What deleting a person found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonDeletion {
    /// Deleted.
    Deleted,
    /// No such person.
    NotFound,
    /// Still credited on a movie (and `force` was not given).
    LinkedToMovie,
    /// Still credited on a show (and `force` was not given).
    LinkedToTvShow,
}

/// The database.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
}

fn parse<T: FromStr<Err = String>>(text: &str) -> Result<T, StoreError> {
    text.parse().map_err(StoreError::Corrupt)
}

fn movie_row(row: &SqliteRow) -> Result<Movie, StoreError> {
    Ok(Movie {
        id: row.try_get("id")?,
        title: row.try_get("title")?,
        release_year: row.try_get("release_year")?,
        genre: parse(row.try_get("genre")?)?,
        rating: row.try_get("rating")?,
        runtime: row.try_get("runtime")?,
        plot: row.try_get("plot")?,
        poster_url: row.try_get("poster_url")?,
        tmdb_id: row.try_get("tmdb_id")?,
    })
}

fn show_row(row: &SqliteRow) -> Result<TvShow, StoreError> {
    Ok(TvShow {
        id: row.try_get("id")?,
        title: row.try_get("title")?,
        genre: parse(row.try_get("genre")?)?,
        rating: row.try_get("rating")?,
        poster_url: row.try_get("poster_url")?,
        tmdb_id: row.try_get("tmdb_id")?,
        start_year: row.try_get("start_year")?,
        end_year: row.try_get("end_year")?,
        seasons: row.try_get("seasons")?,
        plot: row.try_get("plot")?,
    })
}

fn person_row(row: &SqliteRow) -> Result<Person, StoreError> {
    Ok(Person {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        birth_year: row.try_get("birth_year")?,
        biography: row.try_get("biography")?,
        photo_url: row.try_get("photo_url")?,
        country_code: row.try_get("country_code")?,
    })
}

fn subject_of(row: &SqliteRow) -> Result<Subject, StoreError> {
    let movie: Option<i64> = row.try_get("movie_id")?;
    let show: Option<i64> = row.try_get("tv_show_id")?;
    match (movie, show) {
        (Some(id), None) => Ok(Subject::Movie(id)),
        (None, Some(id)) => Ok(Subject::TvShow(id)),
        _ => Err(StoreError::Corrupt(
            "a row names both or neither of movie and show".into(),
        )),
    }
}

fn review_row(row: &SqliteRow) -> Result<Review, StoreError> {
    let created: String = row.try_get("created_at")?;
    Ok(Review {
        id: row.try_get("id")?,
        score: row.try_get("score")?,
        comment: row.try_get("comment")?,
        created_at: chrono::DateTime::parse_from_rfc3339(&created)
            .map_err(|e| StoreError::Corrupt(format!("timestamp {created:?}: {e}")))?
            .with_timezone(&Utc),
        user_id: row.try_get("user_id")?,
        subject: subject_of(row)?,
    })
}

fn user_row(row: &SqliteRow) -> Result<User, StoreError> {
    Ok(User {
        id: row.try_get("id")?,
        username: row.try_get("username")?,
        email: row.try_get("email")?,
        role: parse(row.try_get("role")?)?,
        password_hash: row.try_get("password_hash")?,
    })
}

fn item_row(row: &SqliteRow) -> Result<WatchlistItem, StoreError> {
    Ok(WatchlistItem {
        id: row.try_get("id")?,
        user_id: row.try_get("user_id")?,
        subject: subject_of(row)?,
        status: parse(row.try_get("status")?)?,
    })
}

fn subject_columns(subject: Subject) -> (Option<i64>, Option<i64>) {
    match subject {
        Subject::Movie(id) => (Some(id), None),
        Subject::TvShow(id) => (None, Some(id)),
    }
}

/// Password hashes of the seed accounts, computed once per process (Argon2 is slow on
/// purpose, and tests open many databases).
async fn seed_hashes() -> Result<&'static HashMap<&'static str, String>, StoreError> {
    static HASHES: tokio::sync::OnceCell<HashMap<&'static str, String>> =
        tokio::sync::OnceCell::const_new();
    HASHES
        .get_or_try_init(|| async {
            let mut hashes = HashMap::new();
            for user in seed::users() {
                let hash = crate::auth::hash_password_pooled(user.password.to_owned())
                    .await
                    .map_err(|e| StoreError::Seed(e.to_string()))?;
                hashes.insert(user.username, hash);
            }
            Ok(hashes)
        })
        .await
}

type RowFn<T> = fn(&SqliteRow) -> Result<T, StoreError>;

/// `%text%` for `LIKE … ESCAPE '\'`, with the wildcards in `text` taken literally.
fn like_pattern(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

const MOVIE_COLUMNS: &str =
    "id, title, release_year, genre, rating, runtime, plot, poster_url, tmdb_id";

impl Store {
    /// Open (creating if missing) the database at `url`, migrate it, and seed it if it holds
    /// no movies. `sqlite::memory:` gives a private in-memory database.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let pool = sqlite_pool::connect(url).await?;
        sqlx::migrate!("./migrations").run(&pool).await?;
        let store = Store { pool };
        let movies: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM movies")
            .fetch_one(&store.pool)
            .await?;
        if movies == 0 {
            store.seed().await?;
        }
        Ok(store)
    }

    /// Whether the database answers (for health checks).
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn seed(&self) -> Result<(), StoreError> {
        let hashes = seed_hashes().await?;
        let mut tx = self.pool.begin().await?;
        let mut users = HashMap::new();
        for u in seed::users() {
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO users (username, email, password_hash, role) VALUES (?, ?, ?, ?) \
                 RETURNING id",
            )
            .bind(u.username)
            .bind(u.email)
            .bind(hashes.get(u.username).map(String::as_str).unwrap_or(""))
            .bind(u.role.as_str())
            .fetch_one(&mut *tx)
            .await?;
            users.insert(u.username, id);
        }
        let mut people = HashMap::new();
        for p in seed::PEOPLE {
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO people (name, birth_year, biography, country_code) \
                 VALUES (?, ?, ?, ?) RETURNING id",
            )
            .bind(p.name)
            .bind(p.birth_year)
            .bind(p.bio)
            .bind(p.country)
            .fetch_one(&mut *tx)
            .await?;
            people.insert(p.name, id);
        }
        let person = |name: &str| {
            people
                .get(name)
                .copied()
                .ok_or_else(|| StoreError::Seed(format!("unknown person {name}")))
        };
        let mut movies = HashMap::new();
        for m in seed::MOVIES {
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO movies (title, release_year, genre, rating, runtime, plot, tmdb_id) \
                 VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            )
            .bind(m.title)
            .bind(m.year)
            .bind(m.genre.as_str())
            .bind(m.rating)
            .bind(m.runtime)
            .bind(m.plot)
            .bind(m.tmdb)
            .fetch_one(&mut *tx)
            .await?;
            movies.insert(m.title, id);
            for d in m.directors {
                sqlx::query("INSERT INTO movie_directors (movie_id, person_id) VALUES (?, ?)")
                    .bind(id)
                    .bind(person(d)?)
                    .execute(&mut *tx)
                    .await?;
            }
            for (actor, character) in m.cast {
                sqlx::query(
                    "INSERT INTO movie_cast (movie_id, person_id, character_name) VALUES (?, ?, ?)",
                )
                .bind(id)
                .bind(person(actor)?)
                .bind(character)
                .execute(&mut *tx)
                .await?;
            }
        }
        let mut shows = HashMap::new();
        for s in seed::SHOWS {
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO tv_shows (title, genre, rating, tmdb_id, start_year, end_year, \
                 seasons, plot) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            )
            .bind(s.title)
            .bind(s.genre.as_str())
            .bind(s.rating)
            .bind(s.tmdb)
            .bind(s.start)
            .bind(s.end)
            .bind(s.seasons)
            .bind(s.plot)
            .fetch_one(&mut *tx)
            .await?;
            shows.insert(s.title, id);
            for c in s.creators {
                sqlx::query("INSERT INTO tv_show_creators (tv_show_id, person_id) VALUES (?, ?)")
                    .bind(id)
                    .bind(person(c)?)
                    .execute(&mut *tx)
                    .await?;
            }
            for (actor, character) in s.cast {
                sqlx::query(
                    "INSERT INTO tv_show_cast (tv_show_id, person_id, character_name) \
                     VALUES (?, ?, ?)",
                )
                .bind(id)
                .bind(person(actor)?)
                .bind(character)
                .execute(&mut *tx)
                .await?;
            }
            for (season, number, title, year) in s.episodes {
                sqlx::query(
                    "INSERT INTO episodes (tv_show_id, season_number, episode_number, title, \
                     runtime, air_year) VALUES (?, ?, ?, ?, ?, ?)",
                )
                .bind(id)
                .bind(season)
                .bind(number)
                .bind(title)
                .bind(s.episode_runtime)
                .bind(year)
                .execute(&mut *tx)
                .await?;
            }
        }
        let subject = |title: SeedTitle| match title {
            SeedTitle::Movie(t) => movies
                .get(t)
                .map(|id| Subject::Movie(*id))
                .ok_or_else(|| StoreError::Seed(format!("unknown movie {t}"))),
            SeedTitle::Show(t) => shows
                .get(t)
                .map(|id| Subject::TvShow(*id))
                .ok_or_else(|| StoreError::Seed(format!("unknown show {t}"))),
        };
        let user = |name: &str| {
            users
                .get(name)
                .copied()
                .ok_or_else(|| StoreError::Seed(format!("unknown user {name}")))
        };
        // Reviews are dated a day apart, oldest first, ending yesterday.
        let start = Utc::now() - chrono::Duration::days(seed::REVIEWS.len() as i64 + 1);
        for (i, r) in seed::REVIEWS.iter().enumerate() {
            let (movie, show) = subject_columns(subject(r.title)?);
            sqlx::query(
                "INSERT INTO reviews (score, comment, created_at, user_id, movie_id, tv_show_id) \
                 VALUES (?, ?, ?, ?, ?, ?)",
            )
            .bind(r.score)
            .bind(r.comment)
            .bind((start + chrono::Duration::days(i as i64)).to_rfc3339())
            .bind(user(r.user)?)
            .bind(movie)
            .bind(show)
            .execute(&mut *tx)
            .await?;
        }
        for (name, title, status) in seed::WATCHLIST {
            let (movie, show) = subject_columns(subject(*title)?);
            sqlx::query(
                "INSERT INTO watchlist_items (user_id, movie_id, tv_show_id, status) \
                 VALUES (?, ?, ?, ?)",
            )
            .bind(user(name)?)
            .bind(movie)
            .bind(show)
            .bind(status.as_str())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn credits(&self, sql: &str, id: i64) -> Result<Vec<Credit>, StoreError> {
        sqlx::query(sql)
            .bind(id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                Ok(Credit {
                    person: person_row(row)?,
                    character_name: row.try_get("character_name")?,
                })
            })
            .collect()
    }

    // ---- people ----

    /// One row of `table` by id. `table` is one of this module's constants, never input.
    async fn by_id<T>(&self, table: &str, id: i64, row: RowFn<T>) -> Result<Option<T>, StoreError> {
        sqlx::query(&format!("SELECT * FROM {table} WHERE id = ?"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(row)
            .transpose()
    }

    /// One page of `table` by id, and how many rows there are.
    async fn page_of<T>(
        &self,
        table: &str,
        page: PageRequest,
        row: RowFn<T>,
    ) -> Result<(Vec<T>, i64), StoreError> {
        let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(&self.pool)
            .await?;
        let items = sqlx::query(&format!(
            "SELECT * FROM {table} ORDER BY id LIMIT ? OFFSET ?"
        ))
        .bind(page.size)
        .bind(page.offset())
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(row)
        .collect::<Result<_, _>>()?;
        Ok((items, total))
    }

    /// Rows of `table` whose `column` contains `text` (case-insensitive, `%` and `_` taken
    /// literally), ordered by that column.
    async fn containing<T>(
        &self,
        table: &str,
        column: &str,
        text: &str,
        limit: i64,
        row: RowFn<T>,
    ) -> Result<Vec<T>, StoreError> {
        sqlx::query(&format!(
            "SELECT * FROM {table} WHERE {column} LIKE ? ESCAPE '\\' ORDER BY {column} LIMIT ?"
        ))
        .bind(like_pattern(text))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(row)
        .collect()
    }
}

/// The store's writes. Only [`crate::service::Catalog`] holds one (it builds it from the
/// [`Store`] it is given), so every write passes the code that forgets cached movie lists;
/// everything else gets the read-only [`Store`] (`Catalog::store`), which has no write methods.
#[derive(Debug, Clone)]
pub struct Writes {
    store: Store,
}

impl std::ops::Deref for Writes {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}

impl Writes {
    /// Writes to `store`: for the catalogue alone.
    pub(crate) fn new(store: Store) -> Self {
        Writes { store }
    }
}
