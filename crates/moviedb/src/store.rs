//! The catalogue, accounts, reviews and watch lists in SQLite through sqlx: migrations, the
//! seed, and every query the API needs.

use std::collections::HashMap;
use std::str::FromStr;

use chrono::Utc;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow};
use sqlx::{QueryBuilder, Row, Sqlite, SqlitePool};

use crate::domain::*;
use crate::seed::{self, SeedTitle};

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
        let memory = url.contains(":memory:") || url.contains("mode=memory");
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .foreign_keys(true)
            .busy_timeout(std::time::Duration::from_secs(5));
        let options = if memory {
            options
        } else {
            options.journal_mode(SqliteJournalMode::Wal)
        };
        // Each connection to `:memory:` is its own database, so keep exactly one, forever. It
        // is never health-checked: there is nothing to reconnect to.
        let pool = if memory {
            SqlitePoolOptions::new()
                .test_before_acquire(false)
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(options)
                .await?
        } else {
            SqlitePoolOptions::new()
                .max_connections(4)
                .connect_with(options)
                .await?
        };
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

    // ---- movies ----

    /// One movie.
    pub async fn movie(&self, id: i64) -> Result<Option<Movie>, StoreError> {
        sqlx::query(&format!("SELECT {MOVIE_COLUMNS} FROM movies WHERE id = ?"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(movie_row)
            .transpose()
    }

    /// Every movie, by id.
    pub async fn all_movies(&self) -> Result<Vec<Movie>, StoreError> {
        sqlx::query(&format!("SELECT {MOVIE_COLUMNS} FROM movies ORDER BY id"))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(movie_row)
            .collect()
    }

    /// The movies of `ids` that exist, in the order asked.
    pub async fn movies_by_ids(&self, ids: &[i64]) -> Result<Vec<Movie>, StoreError> {
        let mut found = Vec::new();
        for id in ids {
            if let Some(movie) = self.movie(*id).await? {
                found.push(movie);
            }
        }
        Ok(found)
    }

    fn push_filter(query: &mut QueryBuilder<'_, Sqlite>, filter: &MovieFilter) {
        query.push(" WHERE 1 = 1");
        if let Some(genre) = filter.genre {
            query.push(" AND genre = ").push_bind(genre.as_str());
        }
        if let Some(v) = filter.min_rating {
            query.push(" AND rating >= ").push_bind(v);
        }
        if let Some(v) = filter.max_rating {
            query.push(" AND rating <= ").push_bind(v);
        }
        if let Some(v) = filter.min_year {
            query.push(" AND release_year >= ").push_bind(v);
        }
        if let Some(v) = filter.max_year {
            query.push(" AND release_year <= ").push_bind(v);
        }
        if let Some(v) = filter.min_runtime {
            query.push(" AND runtime >= ").push_bind(v);
        }
        if let Some(v) = filter.max_runtime {
            query.push(" AND runtime <= ").push_bind(v);
        }
        if let Some(text) = &filter.title_contains {
            query
                .push(" AND title LIKE ")
                .push_bind(like_pattern(text))
                .push(" ESCAPE '\\'");
        }
    }

    /// One page of movies matching `filter`, sorted, and the total count of matches.
    pub async fn movies_page(
        &self,
        filter: &MovieFilter,
        page: PageRequest,
        sort: Option<(MovieSortField, SortOrder)>,
    ) -> Result<(Vec<Movie>, i64), StoreError> {
        let mut count = QueryBuilder::<Sqlite>::new("SELECT COUNT(*) FROM movies");
        Self::push_filter(&mut count, filter);
        let total: i64 = count.build_query_scalar().fetch_one(&self.pool).await?;
        let mut query = QueryBuilder::<Sqlite>::new(format!("SELECT {MOVIE_COLUMNS} FROM movies"));
        Self::push_filter(&mut query, filter);
        let (field, order) = sort.unwrap_or((MovieSortField::Title, SortOrder::Asc));
        let column = match field {
            MovieSortField::Title => "title COLLATE NOCASE",
            MovieSortField::ReleaseYear => "release_year",
            MovieSortField::Rating => "rating",
            MovieSortField::Runtime => "runtime",
        };
        let direction = match order {
            SortOrder::Asc => "ASC",
            SortOrder::Desc => "DESC",
        };
        query.push(format!(" ORDER BY {column} {direction}, id ASC LIMIT "));
        query
            .push_bind(page.size)
            .push(" OFFSET ")
            .push_bind(page.offset());
        let movies = query
            .build()
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(movie_row)
            .collect::<Result<_, _>>()?;
        Ok((movies, total))
    }

    /// Movies whose title contains `text`, case-insensitive, at most `limit`.
    pub async fn search_movies(&self, text: &str, limit: i64) -> Result<Vec<Movie>, StoreError> {
        let filter = MovieFilter {
            title_contains: Some(text.to_owned()),
            ..MovieFilter::default()
        };
        Ok(self
            .movies_page(
                &filter,
                PageRequest {
                    page: 0,
                    size: limit,
                },
                None,
            )
            .await?
            .0)
    }

    /// A movie's directors.
    pub async fn directors(&self, movie_id: i64) -> Result<Vec<Person>, StoreError> {
        sqlx::query(
            "SELECT p.* FROM people p JOIN movie_directors d ON d.person_id = p.id \
             WHERE d.movie_id = ? ORDER BY p.id",
        )
        .bind(movie_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(person_row)
        .collect()
    }

    /// A movie's cast, in billing order.
    pub async fn movie_cast(&self, movie_id: i64) -> Result<Vec<Credit>, StoreError> {
        self.credits(
            "SELECT p.*, c.character_name FROM people p JOIN movie_cast c ON c.person_id = p.id \
             WHERE c.movie_id = ? ORDER BY c.id",
            movie_id,
        )
        .await
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

    /// One person.
    pub async fn person(&self, id: i64) -> Result<Option<Person>, StoreError> {
        self.by_id("people", id, person_row).await
    }

    /// One page of people by id, and how many there are.
    pub async fn people_page(&self, page: PageRequest) -> Result<(Vec<Person>, i64), StoreError> {
        self.page_of("people", page, person_row).await
    }

    /// People whose name contains `text`, case-insensitive.
    pub async fn search_people(&self, text: &str, limit: i64) -> Result<Vec<Person>, StoreError> {
        self.containing("people", "name", text, limit, person_row)
            .await
    }

    /// Movies a person directed.
    pub async fn directed_movies(&self, person_id: i64) -> Result<Vec<Movie>, StoreError> {
        sqlx::query(
            "SELECT m.* FROM movies m JOIN movie_directors d ON d.movie_id = m.id \
             WHERE d.person_id = ? ORDER BY m.release_year, m.id",
        )
        .bind(person_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(movie_row)
        .collect()
    }

    /// Movies a person acted in, with the character.
    pub async fn acted_movies(
        &self,
        person_id: i64,
    ) -> Result<Vec<(Movie, Option<String>)>, StoreError> {
        sqlx::query(
            "SELECT m.*, c.character_name FROM movies m JOIN movie_cast c ON c.movie_id = m.id \
             WHERE c.person_id = ? ORDER BY m.release_year, m.id",
        )
        .bind(person_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| Ok((movie_row(row)?, row.try_get("character_name")?)))
        .collect()
    }

    // ---- TV ----

    /// One show.
    pub async fn tv_show(&self, id: i64) -> Result<Option<TvShow>, StoreError> {
        self.by_id("tv_shows", id, show_row).await
    }

    /// One page of shows by id, and how many there are.
    pub async fn tv_shows_page(&self, page: PageRequest) -> Result<(Vec<TvShow>, i64), StoreError> {
        self.page_of("tv_shows", page, show_row).await
    }

    /// Shows whose title contains `text`.
    pub async fn search_shows(&self, text: &str, limit: i64) -> Result<Vec<TvShow>, StoreError> {
        self.containing("tv_shows", "title", text, limit, show_row)
            .await
    }

    /// A show's creators.
    pub async fn creators(&self, show_id: i64) -> Result<Vec<Person>, StoreError> {
        sqlx::query(
            "SELECT p.* FROM people p JOIN tv_show_creators c ON c.person_id = p.id \
             WHERE c.tv_show_id = ? ORDER BY p.id",
        )
        .bind(show_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(person_row)
        .collect()
    }

    /// A show's cast.
    pub async fn show_cast(&self, show_id: i64) -> Result<Vec<Credit>, StoreError> {
        self.credits(
            "SELECT p.*, c.character_name FROM people p JOIN tv_show_cast c \
             ON c.person_id = p.id WHERE c.tv_show_id = ? ORDER BY c.id",
            show_id,
        )
        .await
    }

    /// A show's episodes by season and number.
    pub async fn episodes(&self, show_id: i64) -> Result<Vec<Episode>, StoreError> {
        sqlx::query(
            "SELECT * FROM episodes WHERE tv_show_id = ? ORDER BY season_number, episode_number",
        )
        .bind(show_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| {
            Ok(Episode {
                id: row.try_get("id")?,
                tv_show_id: row.try_get("tv_show_id")?,
                season_number: row.try_get("season_number")?,
                episode_number: row.try_get("episode_number")?,
                title: row.try_get("title")?,
                overview: row.try_get("overview")?,
                runtime: row.try_get("runtime")?,
                air_year: row.try_get("air_year")?,
            })
        })
        .collect()
    }

    /// Whether the movie or show exists.
    pub async fn subject_exists(&self, subject: Subject) -> Result<bool, StoreError> {
        let sql = match subject {
            Subject::Movie(_) => "SELECT COUNT(*) FROM movies WHERE id = ?",
            Subject::TvShow(_) => "SELECT COUNT(*) FROM tv_shows WHERE id = ?",
        };
        let id = match subject {
            Subject::Movie(id) | Subject::TvShow(id) => id,
        };
        let n: i64 = sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
        Ok(n > 0)
    }

    // ---- reviews ----

    /// The reviews of a title, oldest first.
    pub async fn reviews(&self, subject: Subject) -> Result<Vec<Review>, StoreError> {
        let (sql, id) = match subject {
            Subject::Movie(id) => ("SELECT * FROM reviews WHERE movie_id = ? ORDER BY id", id),
            Subject::TvShow(id) => ("SELECT * FROM reviews WHERE tv_show_id = ? ORDER BY id", id),
        };
        sqlx::query(sql)
            .bind(id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(review_row)
            .collect()
    }

    /// One review.
    pub async fn review(&self, id: i64) -> Result<Option<Review>, StoreError> {
        self.by_id("reviews", id, review_row).await
    }

    // ---- users ----

    /// An account by username.
    pub async fn user_by_name(&self, username: &str) -> Result<Option<User>, StoreError> {
        sqlx::query("SELECT * FROM users WHERE username = ?")
            .bind(username)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(user_row)
            .transpose()
    }

    /// An account by id.
    pub async fn user(&self, id: i64) -> Result<Option<User>, StoreError> {
        self.by_id("users", id, user_row).await
    }

    // ---- watch lists ----

    /// A user's watch list, oldest entry first.
    pub async fn watchlist(&self, user_id: i64) -> Result<Vec<WatchlistItem>, StoreError> {
        sqlx::query("SELECT * FROM watchlist_items WHERE user_id = ? ORDER BY id")
            .bind(user_id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(item_row)
            .collect()
    }

    /// One entry of `user_id`'s list (another user's entry reads as missing).
    pub async fn watchlist_item(
        &self,
        user_id: i64,
        item_id: i64,
    ) -> Result<Option<WatchlistItem>, StoreError> {
        sqlx::query("SELECT * FROM watchlist_items WHERE id = ? AND user_id = ?")
            .bind(item_id)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(item_row)
            .transpose()
    }

    /// The entry for `subject` on `user_id`'s list, if there is one.
    pub async fn watchlist_entry_for(
        &self,
        user_id: i64,
        subject: Subject,
    ) -> Result<Option<WatchlistItem>, StoreError> {
        let (movie, show) = subject_columns(subject);
        sqlx::query(
            "SELECT * FROM watchlist_items WHERE user_id = ? AND movie_id IS ? AND tv_show_id IS ?",
        )
        .bind(user_id)
        .bind(movie)
        .bind(show)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(item_row)
        .transpose()
    }

    /// Ids of the movies `user_id` marked WATCHED.
    pub async fn watched_movie_ids(&self, user_id: i64) -> Result<Vec<i64>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT movie_id FROM watchlist_items WHERE user_id = ? AND status = 'WATCHED' \
             AND movie_id IS NOT NULL",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?)
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

    /// Store a new movie (already validated).
    pub async fn create_movie(&self, input: &MovieInput) -> Result<Movie, StoreError> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO movies (title, release_year, genre, rating, runtime, plot, poster_url, \
             tmdb_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(input.title.as_deref().map(str::trim))
        .bind(input.release_year)
        .bind(input.genre.map(Genre::as_str))
        .bind(input.rating)
        .bind(input.runtime)
        .bind(&input.plot)
        .bind(&input.poster_url)
        .bind(input.tmdb_id)
        .fetch_one(&self.pool)
        .await?;
        self.movie(id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a created movie vanished".into()))
    }

    /// Change the given fields of a movie; `None` when there is no such movie.
    pub async fn update_movie(
        &self,
        id: i64,
        input: &MovieInput,
    ) -> Result<Option<Movie>, StoreError> {
        let done = sqlx::query(
            "UPDATE movies SET title = COALESCE(?, title), \
             release_year = COALESCE(?, release_year), genre = COALESCE(?, genre), \
             rating = COALESCE(?, rating), runtime = COALESCE(?, runtime), \
             plot = COALESCE(?, plot), poster_url = COALESCE(?, poster_url), \
             tmdb_id = COALESCE(?, tmdb_id) WHERE id = ?",
        )
        .bind(input.title.as_deref().map(str::trim))
        .bind(input.release_year)
        .bind(input.genre.map(Genre::as_str))
        .bind(input.rating)
        .bind(input.runtime)
        .bind(&input.plot)
        .bind(&input.poster_url)
        .bind(input.tmdb_id)
        .bind(id)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        self.movie(id).await
    }

    /// Delete a movie with its credits, reviews and watch-list entries; whether it existed.
    pub async fn delete_movie(&self, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM movies WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Store a new person (already validated).
    pub async fn create_person(&self, input: &PersonInput) -> Result<Person, StoreError> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO people (name, birth_year, biography, photo_url, country_code) \
             VALUES (?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(input.name.as_deref().map(str::trim))
        .bind(input.birth_year)
        .bind(&input.biography)
        .bind(&input.photo_url)
        .bind(&input.country_code)
        .fetch_one(&self.pool)
        .await?;
        self.person(id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a created person vanished".into()))
    }

    /// Change the given fields of a person; `None` when there is no such person.
    pub async fn update_person(
        &self,
        id: i64,
        input: &PersonInput,
    ) -> Result<Option<Person>, StoreError> {
        let done = sqlx::query(
            "UPDATE people SET name = COALESCE(?, name), birth_year = COALESCE(?, birth_year), \
             biography = COALESCE(?, biography), photo_url = COALESCE(?, photo_url), \
             country_code = COALESCE(?, country_code) WHERE id = ?",
        )
        .bind(input.name.as_deref().map(str::trim))
        .bind(input.birth_year)
        .bind(&input.biography)
        .bind(&input.photo_url)
        .bind(&input.country_code)
        .bind(id)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        self.person(id).await
    }

    /// Delete a person; with `force`, their credits go first.
    pub async fn delete_person(&self, id: i64, force: bool) -> Result<PersonDeletion, StoreError> {
        let mut tx = self.pool.begin().await?;
        let movie_links: i64 = sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM movie_directors WHERE person_id = ?1) + \
             (SELECT COUNT(*) FROM movie_cast WHERE person_id = ?1)",
        )
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
        let show_links: i64 = sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM tv_show_creators WHERE person_id = ?1) + \
             (SELECT COUNT(*) FROM tv_show_cast WHERE person_id = ?1)",
        )
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
        if !force && movie_links > 0 {
            return Ok(PersonDeletion::LinkedToMovie);
        }
        if !force && show_links > 0 {
            return Ok(PersonDeletion::LinkedToTvShow);
        }
        for table in [
            "movie_directors",
            "movie_cast",
            "tv_show_creators",
            "tv_show_cast",
        ] {
            sqlx::query(&format!("DELETE FROM {table} WHERE person_id = ?"))
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        let done = sqlx::query("DELETE FROM people WHERE id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(if done.rows_affected() > 0 {
            PersonDeletion::Deleted
        } else {
            PersonDeletion::NotFound
        })
    }

    /// Store a review; [`StoreError::Duplicate`] when the user already reviewed the title.
    pub async fn create_review(
        &self,
        user_id: i64,
        subject: Subject,
        score: i32,
        comment: Option<&str>,
    ) -> Result<Review, StoreError> {
        let (movie, show) = subject_columns(subject);
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO reviews (score, comment, created_at, user_id, movie_id, tv_show_id) \
             VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(score)
        .bind(comment)
        .bind(Utc::now().to_rfc3339())
        .bind(user_id)
        .bind(movie)
        .bind(show)
        .fetch_one(&self.pool)
        .await?;
        self.review(id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a created review vanished".into()))
    }

    /// Delete a review; whether it existed.
    pub async fn delete_review(&self, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM reviews WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Store an account; [`StoreError::Duplicate`] when the username is taken.
    pub async fn create_user(
        &self,
        username: &str,
        email: &str,
        password_hash: &str,
        role: Role,
    ) -> Result<User, StoreError> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO users (username, email, password_hash, role) VALUES (?, ?, ?, ?) \
             RETURNING id",
        )
        .bind(username)
        .bind(email)
        .bind(password_hash)
        .bind(role.as_str())
        .fetch_one(&self.pool)
        .await?;
        self.user(id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a created user vanished".into()))
    }

    /// Add a title; [`StoreError::Duplicate`] when it is already on the list.
    pub async fn add_to_watchlist(
        &self,
        user_id: i64,
        subject: Subject,
        status: WatchStatus,
    ) -> Result<WatchlistItem, StoreError> {
        let (movie, show) = subject_columns(subject);
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO watchlist_items (user_id, movie_id, tv_show_id, status) \
             VALUES (?, ?, ?, ?) RETURNING id",
        )
        .bind(user_id)
        .bind(movie)
        .bind(show)
        .bind(status.as_str())
        .fetch_one(&self.pool)
        .await?;
        self.watchlist_item(user_id, id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a created entry vanished".into()))
    }

    /// Set an entry's status; whether the user has that entry.
    pub async fn set_watch_status(
        &self,
        user_id: i64,
        item_id: i64,
        status: WatchStatus,
    ) -> Result<bool, StoreError> {
        let done =
            sqlx::query("UPDATE watchlist_items SET status = ? WHERE id = ? AND user_id = ?")
                .bind(status.as_str())
                .bind(item_id)
                .bind(user_id)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Remove an entry; whether the user had it.
    pub async fn remove_from_watchlist(
        &self,
        user_id: i64,
        item_id: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM watchlist_items WHERE id = ? AND user_id = ?")
            .bind(item_id)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
