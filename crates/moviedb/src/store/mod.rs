//! The catalogue, accounts, reviews and watch lists in SQLite or PostgreSQL through sqlx:
//! migrations (one set per backend), the seed, and every query the API needs.
//!
//! Queries are written once, with `?` placeholders, in SQL both backends read the same way
//! (`IS NOT DISTINCT FROM`, `LOWER(…) LIKE LOWER(?)`); `Store::sql` numbers the placeholders
//! for PostgreSQL and `on_pool!` runs the same code on whichever pool the store holds. Rows
//! are read through `Columns`, which both backends' rows implement.

use std::borrow::Cow;
use std::collections::HashMap;
use std::str::FromStr;

use chrono::Utc;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{Database, Decode, Encode, PgPool, Postgres, Row, Sqlite, Type};

use crate::domain::{
    Credit, Episode, Movie, PageRequest, Person, Review, Subject, TvShow, User, WatchlistItem,
};
use crate::seed::{self, SeedTitle};

pub use shared::SharedState;

mod movies;
mod people;
mod reviews;
mod shared;
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
    pool: Pool,
}

use sql_pool::{Pool, on_pool};

/// A column value both backends can decode.
pub(crate) trait Value:
    for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, Postgres> + Type<Postgres>
{
}

impl<T> Value for T where
    T: for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, Postgres> + Type<Postgres>
{
}

/// A row of either backend, read by column name.
pub(crate) trait Columns {
    /// The value of `column`.
    fn col<T: Value>(&self, column: &str) -> Result<T, sqlx::Error>;
}

impl Columns for SqliteRow {
    fn col<T: Value>(&self, column: &str) -> Result<T, sqlx::Error> {
        self.try_get(column)
    }
}

impl Columns for PgRow {
    fn col<T: Value>(&self, column: &str) -> Result<T, sqlx::Error> {
        self.try_get(column)
    }
}

/// A value one row makes.
trait FromColumns: Sized {
    fn from_columns(row: &impl Columns) -> Result<Self, StoreError>;
}

macro_rules! from_columns {
    ($($type:ty => $read:ident),* $(,)?) => {
        $(impl FromColumns for $type {
            fn from_columns(row: &impl Columns) -> Result<Self, StoreError> {
                $read(row)
            }
        })*
    };
}

from_columns!(Movie => movie_row, TvShow => show_row, Person => person_row, Review => review_row,
    User => user_row, WatchlistItem => item_row, Credit => credit_row, Episode => episode_row,
    (Movie, Option<String>) => role_row);

fn credit_row(row: &impl Columns) -> Result<Credit, StoreError> {
    Ok(Credit {
        person: person_row(row)?,
        character_name: row.col("character_name")?,
    })
}

/// A movie a person acted in, with the character.
fn role_row(row: &impl Columns) -> Result<(Movie, Option<String>), StoreError> {
    Ok((movie_row(row)?, row.col("character_name")?))
}

fn episode_row(row: &impl Columns) -> Result<Episode, StoreError> {
    Ok(Episode {
        id: row.col("id")?,
        tv_show_id: row.col("tv_show_id")?,
        season_number: row.col("season_number")?,
        episode_number: row.col("episode_number")?,
        title: row.col("title")?,
        overview: row.col("overview")?,
        runtime: row.col("runtime")?,
        air_year: row.col("air_year")?,
    })
}

/// A value both backends can bind.
pub(crate) trait Bind<'q, DB: Database>: Encode<'q, DB> + Type<DB> + Send + 'q {}

impl<'q, DB: Database, T: Encode<'q, DB> + Type<DB> + Send + 'q> Bind<'q, DB> for T {}

/// A text column parsed into one of the domain's enums.
fn parse<T: FromStr<Err = String>>(row: &impl Columns, column: &str) -> Result<T, StoreError> {
    let text: String = row.col(column)?;
    text.parse().map_err(StoreError::Corrupt)
}

fn movie_row(row: &impl Columns) -> Result<Movie, StoreError> {
    Ok(Movie {
        id: row.col("id")?,
        title: row.col("title")?,
        release_year: row.col("release_year")?,
        genre: parse(row, "genre")?,
        rating: row.col("rating")?,
        runtime: row.col("runtime")?,
        plot: row.col("plot")?,
        poster_url: row.col("poster_url")?,
        tmdb_id: row.col("tmdb_id")?,
    })
}

fn show_row(row: &impl Columns) -> Result<TvShow, StoreError> {
    Ok(TvShow {
        id: row.col("id")?,
        title: row.col("title")?,
        genre: parse(row, "genre")?,
        rating: row.col("rating")?,
        poster_url: row.col("poster_url")?,
        tmdb_id: row.col("tmdb_id")?,
        start_year: row.col("start_year")?,
        end_year: row.col("end_year")?,
        seasons: row.col("seasons")?,
        plot: row.col("plot")?,
    })
}

fn person_row(row: &impl Columns) -> Result<Person, StoreError> {
    Ok(Person {
        id: row.col("id")?,
        name: row.col("name")?,
        birth_year: row.col("birth_year")?,
        biography: row.col("biography")?,
        photo_url: row.col("photo_url")?,
        country_code: row.col("country_code")?,
    })
}

fn subject_of(row: &impl Columns) -> Result<Subject, StoreError> {
    let movie: Option<i64> = row.col("movie_id")?;
    let show: Option<i64> = row.col("tv_show_id")?;
    match (movie, show) {
        (Some(id), None) => Ok(Subject::Movie(id)),
        (None, Some(id)) => Ok(Subject::TvShow(id)),
        _ => Err(StoreError::Corrupt(
            "a row names both or neither of movie and show".into(),
        )),
    }
}

fn review_row(row: &impl Columns) -> Result<Review, StoreError> {
    let created: String = row.col("created_at")?;
    Ok(Review {
        id: row.col("id")?,
        score: row.col("score")?,
        comment: row.col("comment")?,
        created_at: chrono::DateTime::parse_from_rfc3339(&created)
            .map_err(|e| StoreError::Corrupt(format!("timestamp {created:?}: {e}")))?
            .with_timezone(&Utc),
        user_id: row.col("user_id")?,
        subject: subject_of(row)?,
    })
}

fn user_row(row: &impl Columns) -> Result<User, StoreError> {
    Ok(User {
        id: row.col("id")?,
        username: row.col("username")?,
        email: row.col("email")?,
        role: parse(row, "role")?,
        password_hash: row.col("password_hash")?,
    })
}

fn item_row(row: &impl Columns) -> Result<WatchlistItem, StoreError> {
    Ok(WatchlistItem {
        id: row.col("id")?,
        user_id: row.col("user_id")?,
        subject: subject_of(row)?,
        status: parse(row, "status")?,
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

/// The seed's steps, each a macro so that one text serves SQLite's and PostgreSQL's
/// transaction (`on_pool!` picks the type): `$store` is the [`Store`], `$tx` the transaction.
macro_rules! seed_users {
    ($store:ident, $tx:ident, $hashes:ident) => {{
        let mut users = HashMap::new();
        for u in seed::users() {
            let id: i64 = sqlx::query_scalar(&$store.sql(
                "INSERT INTO users (username, email, password_hash, role) VALUES (?, ?, ?, ?) \
                 RETURNING id",
            ))
            .bind(u.username)
            .bind(u.email)
            .bind($hashes.get(u.username).map(String::as_str).unwrap_or(""))
            .bind(u.role.as_str())
            .fetch_one(&mut *$tx)
            .await?;
            users.insert(u.username, id);
        }
        users
    }};
}

macro_rules! seed_people {
    ($store:ident, $tx:ident) => {{
        let mut people = HashMap::new();
        for p in seed::PEOPLE {
            let id: i64 = sqlx::query_scalar(&$store.sql(
                "INSERT INTO people (name, birth_year, biography, country_code) \
                 VALUES (?, ?, ?, ?) RETURNING id",
            ))
            .bind(p.name)
            .bind(p.birth_year)
            .bind(p.bio)
            .bind(p.country)
            .fetch_one(&mut *$tx)
            .await?;
            people.insert(p.name, id);
        }
        people
    }};
}

macro_rules! seed_movies {
    ($store:ident, $tx:ident, $person:ident) => {{
        let mut movies = HashMap::new();
        for m in seed::MOVIES {
            let id: i64 = sqlx::query_scalar(&$store.sql(
                "INSERT INTO movies (title, release_year, genre, rating, runtime, plot, tmdb_id) \
                 VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            ))
            .bind(m.title)
            .bind(m.year)
            .bind(m.genre.as_str())
            .bind(m.rating)
            .bind(m.runtime)
            .bind(m.plot)
            .bind(m.tmdb)
            .fetch_one(&mut *$tx)
            .await?;
            movies.insert(m.title, id);
            for d in m.directors {
                sqlx::query(
                    &$store.sql("INSERT INTO movie_directors (movie_id, person_id) VALUES (?, ?)"),
                )
                .bind(id)
                .bind($person(d)?)
                .execute(&mut *$tx)
                .await?;
            }
            for (actor, character) in m.cast {
                sqlx::query(&$store.sql(
                    "INSERT INTO movie_cast (movie_id, person_id, character_name) VALUES (?, ?, ?)",
                ))
                .bind(id)
                .bind($person(actor)?)
                .bind(character)
                .execute(&mut *$tx)
                .await?;
            }
        }
        movies
    }};
}

macro_rules! seed_shows {
    ($store:ident, $tx:ident, $person:ident) => {{
        let mut shows = HashMap::new();
        for s in seed::SHOWS {
            let id: i64 = sqlx::query_scalar(&$store.sql(
                "INSERT INTO tv_shows (title, genre, rating, tmdb_id, start_year, end_year, \
                 seasons, plot) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            ))
            .bind(s.title)
            .bind(s.genre.as_str())
            .bind(s.rating)
            .bind(s.tmdb)
            .bind(s.start)
            .bind(s.end)
            .bind(s.seasons)
            .bind(s.plot)
            .fetch_one(&mut *$tx)
            .await?;
            shows.insert(s.title, id);
            for c in s.creators {
                sqlx::query(
                    &$store
                        .sql("INSERT INTO tv_show_creators (tv_show_id, person_id) VALUES (?, ?)"),
                )
                .bind(id)
                .bind($person(c)?)
                .execute(&mut *$tx)
                .await?;
            }
            for (actor, character) in s.cast {
                sqlx::query(&$store.sql(
                    "INSERT INTO tv_show_cast (tv_show_id, person_id, character_name) \
                     VALUES (?, ?, ?)",
                ))
                .bind(id)
                .bind($person(actor)?)
                .bind(character)
                .execute(&mut *$tx)
                .await?;
            }
            for (season, number, title, year) in s.episodes {
                sqlx::query(&$store.sql(
                    "INSERT INTO episodes (tv_show_id, season_number, episode_number, title, \
                     runtime, air_year) VALUES (?, ?, ?, ?, ?, ?)",
                ))
                .bind(id)
                .bind(season)
                .bind(number)
                .bind(title)
                .bind(s.episode_runtime)
                .bind(year)
                .execute(&mut *$tx)
                .await?;
            }
        }
        shows
    }};
}

macro_rules! seed_activity {
    ($store:ident, $tx:ident, $subject:ident, $user:ident) => {{
        // Reviews are dated a day apart, oldest first, ending yesterday.
        let start = Utc::now() - chrono::Duration::days(seed::REVIEWS.len() as i64 + 1);
        for (i, r) in seed::REVIEWS.iter().enumerate() {
            let (movie, show) = subject_columns($subject(r.title)?);
            sqlx::query(&$store.sql(
                "INSERT INTO reviews (score, comment, created_at, user_id, movie_id, tv_show_id) \
                 VALUES (?, ?, ?, ?, ?, ?)",
            ))
            .bind(r.score)
            .bind(r.comment)
            .bind((start + chrono::Duration::days(i as i64)).to_rfc3339())
            .bind($user(r.user)?)
            .bind(movie)
            .bind(show)
            .execute(&mut *$tx)
            .await?;
        }
        for (name, title, status) in seed::WATCHLIST {
            let (movie, show) = subject_columns($subject(*title)?);
            sqlx::query(&$store.sql(
                "INSERT INTO watchlist_items (user_id, movie_id, tv_show_id, status) \
                 VALUES (?, ?, ?, ?)",
            ))
            .bind($user(name)?)
            .bind(movie)
            .bind(show)
            .bind(status.as_str())
            .execute(&mut *$tx)
            .await?;
        }
    }};
}

impl Store {
    /// Open (creating if missing) the database at `url`, migrate it, and seed it if it holds
    /// no movies. `sqlite::memory:` gives a private in-memory database.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let pool = sql_pool::open_migrated!(url, StoreError).await?;
        let store = Store { pool };
        if store.movie_count().await? == 0 {
            store.seed().await?;
        }
        Ok(store)
    }

    /// Whether the database is shared with other processes by design (PostgreSQL): then
    /// nothing read from it may be trusted from one process's memory.
    pub fn is_shared(&self) -> bool {
        self.pool.is_shared()
    }

    /// The PostgreSQL pool, when the store is on PostgreSQL (for state other instances share).
    pub fn postgres(&self) -> Option<&PgPool> {
        self.pool.postgres()
    }

    fn sql<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.pool.sql(text)
    }

    async fn movie_count(&self) -> Result<i64, StoreError> {
        Ok(
            on_pool!(&self.pool, pool => sqlx::query_scalar("SELECT COUNT(*) FROM movies")
            .fetch_one(pool)
            .await?),
        )
    }

    /// Whether the database answers (for health checks).
    pub async fn ping(&self) -> Result<(), StoreError> {
        on_pool!(&self.pool, pool => {
            sqlx::query("SELECT 1").execute(pool).await?;
        });
        Ok(())
    }

    async fn seed(&self) -> Result<(), StoreError> {
        let hashes = seed_hashes().await?;
        on_pool!(&self.pool, pool => {
        let mut tx = pool.begin().await?;
        if sql_pool::seeded_elsewhere!(self.pool, tx, 7340002, "movies") {
            return Ok(());
        }
        let users = seed_users!(self, tx, hashes);
        let people = seed_people!(self, tx);
        let person = |name: &str| {
            people
                .get(name)
                .copied()
                .ok_or_else(|| StoreError::Seed(format!("unknown person {name}")))
        };
        let movies = seed_movies!(self, tx, person);
        let shows = seed_shows!(self, tx, person);
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
        seed_activity!(self, tx, subject, user);
        tx.commit().await?;
        });
        Ok(())
    }

    async fn credits(&self, sql: &str, id: i64) -> Result<Vec<Credit>, StoreError> {
        self.all_with_id(sql, id).await
    }

    // ---- people ----

    /// The rows `sql` (a constant of this module with one `?`, bound to `id`) selects, in its
    /// order.
    async fn all_with_id<T: FromColumns>(&self, sql: &str, id: i64) -> Result<Vec<T>, StoreError> {
        on_pool!(&self.pool, pool => {
        sqlx::query(&self.sql(sql))
            .bind(id)
            .fetch_all(pool)
            .await?
            .iter()
            .map(T::from_columns)
            .collect()
        })
    }

    /// One row of `table` by id. `table` is one of this module's constants, never input.
    async fn by_id<T: FromColumns>(&self, table: &str, id: i64) -> Result<Option<T>, StoreError> {
        on_pool!(&self.pool, pool => {
        sqlx::query(&self.sql(&format!("SELECT * FROM {table} WHERE id = ?")))
            .bind(id)
            .fetch_optional(pool)
            .await?
            .as_ref()
            .map(T::from_columns)
            .transpose()
        })
    }

    /// One page of `table` by id, and how many rows there are.
    async fn page_of<T: FromColumns>(
        &self,
        table: &str,
        page: PageRequest,
    ) -> Result<(Vec<T>, i64), StoreError> {
        on_pool!(&self.pool, pool => {
        let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(pool)
            .await?;
        let items = sqlx::query(&self.sql(&format!(
            "SELECT * FROM {table} ORDER BY id LIMIT ? OFFSET ?"
        )))
        .bind(page.size)
        .bind(page.offset())
        .fetch_all(pool)
        .await?
        .iter()
        .map(T::from_columns)
        .collect::<Result<_, _>>()?;
        Ok((items, total))
        })
    }

    /// Rows of `table` whose `column` contains `text` (case-insensitive, `%` and `_` taken
    /// literally), ordered by that column.
    async fn containing<T: FromColumns>(
        &self,
        table: &str,
        column: &str,
        text: &str,
        limit: i64,
    ) -> Result<Vec<T>, StoreError> {
        on_pool!(&self.pool, pool => {
        sqlx::query(&self.sql(&format!(
            "SELECT * FROM {table} WHERE LOWER({column}) LIKE LOWER(?) ESCAPE '\\' \
             ORDER BY LOWER({column}), id LIMIT ?"
        )))
        .bind(like_pattern(text))
        .bind(limit)
        .fetch_all(pool)
        .await?
        .iter()
        .map(T::from_columns)
        .collect()
        })
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
