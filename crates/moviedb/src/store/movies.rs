//! Movies: lookups, pages with filters and sorting, search, credits, and their writes.

use sql_pool::on_pool;
use sqlx::{Database, QueryBuilder};

use crate::domain::{
    Credit, Genre, Movie, MovieFilter, MovieInput, MovieSortField, PageRequest, Person, SortOrder,
};
use crate::store::{Bind, MOVIE_COLUMNS, Store, StoreError, Writes, like_pattern, movie_row};

/// A movie's directors (one `?`, the id).
const DIRECTORS: &str = "SELECT p.* FROM people p JOIN movie_directors d ON d.person_id = p.id \
     WHERE d.movie_id = ? ORDER BY p.id";

/// A movie's cast, in billing order (one `?`, the id).
const MOVIE_CAST: &str = "SELECT p.*, c.character_name FROM people p JOIN movie_cast c ON c.person_id = p.id \
     WHERE c.movie_id = ? ORDER BY c.id";

/// A new movie (its eight fields, bound by [`bind_movie!`]).
const INSERT_MOVIE: &str = "INSERT INTO movies (title, release_year, genre, rating, runtime, \
     plot, poster_url, tmdb_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id";

/// The given fields of a movie changed (its eight fields, bound by [`bind_movie!`], then the id).
const UPDATE_MOVIE: &str = "UPDATE movies SET title = COALESCE(?, title), \
     release_year = COALESCE(?, release_year), genre = COALESCE(?, genre), \
     rating = COALESCE(?, rating), runtime = COALESCE(?, runtime), \
     plot = COALESCE(?, plot), poster_url = COALESCE(?, poster_url), \
     tmdb_id = COALESCE(?, tmdb_id) WHERE id = ?";

/// A movie's fields bound to `$query` in the order both its insert and its update name them.
macro_rules! bind_movie {
    ($query:expr, $input:expr) => {
        $query
            .bind($input.title.as_deref().map(str::trim))
            .bind($input.release_year)
            .bind($input.genre.map(Genre::as_str))
            .bind($input.rating)
            .bind($input.runtime)
            .bind(&$input.plot)
            .bind(&$input.poster_url)
            .bind($input.tmdb_id)
    };
}

impl Store {
    // ---- movies ----

    /// One movie.
    pub async fn movie(&self, id: i64) -> Result<Option<Movie>, StoreError> {
        on_pool!(&self.pool, pool => {
        sqlx::query(&self.sql(&format!("SELECT {MOVIE_COLUMNS} FROM movies WHERE id = ?")))
            .bind(id)
            .fetch_optional(pool)
            .await?
            .as_ref()
            .map(movie_row)
            .transpose()
        })
    }

    /// Every movie, by id.
    pub async fn all_movies(&self) -> Result<Vec<Movie>, StoreError> {
        on_pool!(&self.pool, pool => {
        sqlx::query(&format!("SELECT {MOVIE_COLUMNS} FROM movies ORDER BY id"))
            .fetch_all(pool)
            .await?
            .iter()
            .map(movie_row)
            .collect()
        })
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

    pub(crate) fn push_filter<'q, DB: Database>(
        query: &mut QueryBuilder<'q, DB>,
        filter: &MovieFilter,
    ) where
        f64: Bind<'q, DB>,
        i32: Bind<'q, DB>,
        String: Bind<'q, DB>,
    {
        query.push(" WHERE 1 = 1");
        if let Some(genre) = filter.genre {
            query
                .push(" AND genre = ")
                .push_bind(genre.as_str().to_owned());
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
                .push(" AND LOWER(title) LIKE LOWER(")
                .push_bind(like_pattern(text))
                .push(") ESCAPE '\\'");
        }
    }

    /// One page of movies matching `filter`, sorted, and the total count of matches.
    pub async fn movies_page(
        &self,
        filter: &MovieFilter,
        page: PageRequest,
        sort: Option<(MovieSortField, SortOrder)>,
    ) -> Result<(Vec<Movie>, i64), StoreError> {
        on_pool!(&self.pool, pool => {
        let mut count = QueryBuilder::new("SELECT COUNT(*) FROM movies");
        Self::push_filter(&mut count, filter);
        let total: i64 = count.build_query_scalar().fetch_one(pool).await?;
        let mut query = QueryBuilder::new(format!("SELECT {MOVIE_COLUMNS} FROM movies"));
        Self::push_filter(&mut query, filter);
        let (field, order) = sort.unwrap_or((MovieSortField::Title, SortOrder::Asc));
        let column = match field {
            MovieSortField::Title => "LOWER(title)",
            MovieSortField::ReleaseYear => "release_year",
            MovieSortField::Rating => "rating",
            MovieSortField::Runtime => "runtime",
        };
        // A missing rating or runtime sorts as the smallest value, on both backends.
        let direction = match order {
            SortOrder::Asc => "ASC NULLS FIRST",
            SortOrder::Desc => "DESC NULLS LAST",
        };
        query.push(format!(" ORDER BY {column} {direction}, id ASC LIMIT "));
        query
            .push_bind(page.size)
            .push(" OFFSET ")
            .push_bind(page.offset());
        let movies = query
            .build()
            .fetch_all(pool)
            .await?
            .iter()
            .map(movie_row)
            .collect::<Result<_, _>>()?;
        Ok((movies, total))
        })
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
        self.all_with_id(DIRECTORS, movie_id).await
    }

    /// A movie's cast, in billing order.
    pub async fn movie_cast(&self, movie_id: i64) -> Result<Vec<Credit>, StoreError> {
        self.credits(MOVIE_CAST, movie_id).await
    }
}

impl Writes {
    /// Store a new movie (already validated).
    pub async fn create_movie(&self, input: &MovieInput) -> Result<Movie, StoreError> {
        on_pool!(&self.pool, pool => {
        let id: i64 = bind_movie!(sqlx::query_scalar(&self.sql(INSERT_MOVIE)), input)
            .fetch_one(pool)
            .await?;
        self.movie(id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a created movie vanished".into()))
        })
    }

    /// Change the given fields of a movie; `None` when there is no such movie.
    pub async fn update_movie(
        &self,
        id: i64,
        input: &MovieInput,
    ) -> Result<Option<Movie>, StoreError> {
        on_pool!(&self.pool, pool => {
        let done = bind_movie!(sqlx::query(&self.sql(UPDATE_MOVIE)), input)
            .bind(id)
            .execute(pool)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        self.movie(id).await
        })
    }

    /// Delete a movie with its credits, reviews and watch-list entries; whether it existed.
    pub async fn delete_movie(&self, id: i64) -> Result<bool, StoreError> {
        on_pool!(&self.pool, pool => {
        let done = sqlx::query(&self.sql("DELETE FROM movies WHERE id = ?"))
            .bind(id)
            .execute(pool)
            .await?;
        Ok(done.rows_affected() > 0)
        })
    }
}
