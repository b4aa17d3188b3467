//! People: lookups, pages, search, filmographies, and their writes.

use sql_pool::on_pool;

use crate::domain::{Movie, PageRequest, Person, PersonInput};
use crate::store::{PersonDeletion, Store, StoreError, Writes};

/// Movies a person directed (one `?`, the id).
const DIRECTED_MOVIES: &str = "SELECT m.* FROM movies m JOIN movie_directors d ON d.movie_id = m.id \
     WHERE d.person_id = ? ORDER BY m.release_year, m.id";

impl Store {
    /// One person.
    pub async fn person(&self, id: i64) -> Result<Option<Person>, StoreError> {
        self.by_id("people", id).await
    }

    /// One page of people by id, and how many there are.
    pub async fn people_page(&self, page: PageRequest) -> Result<(Vec<Person>, i64), StoreError> {
        self.page_of("people", page).await
    }

    /// People whose name contains `text`, case-insensitive.
    pub async fn search_people(&self, text: &str, limit: i64) -> Result<Vec<Person>, StoreError> {
        self.containing("people", "name", text, limit).await
    }

    /// Movies a person directed.
    pub async fn directed_movies(&self, person_id: i64) -> Result<Vec<Movie>, StoreError> {
        self.all_with_id(DIRECTED_MOVIES, person_id).await
    }

    /// Movies a person acted in, with the character.
    pub async fn acted_movies(
        &self,
        person_id: i64,
    ) -> Result<Vec<(Movie, Option<String>)>, StoreError> {
        self.all_with_id(
            "SELECT m.*, c.character_name FROM movies m JOIN movie_cast c ON c.movie_id = m.id \
             WHERE c.person_id = ? ORDER BY m.release_year, m.id",
            person_id,
        )
        .await
    }
}

impl Writes {
    /// Store a new person (already validated).
    pub async fn create_person(&self, input: &PersonInput) -> Result<Person, StoreError> {
        on_pool!(&self.pool, pool => {
        let id: i64 = sqlx::query_scalar(&self.sql("INSERT INTO people (name, birth_year, biography, photo_url, country_code) \
             VALUES (?, ?, ?, ?, ?) RETURNING id"))
        .bind(input.name.as_deref().map(str::trim))
        .bind(input.birth_year)
        .bind(&input.biography)
        .bind(&input.photo_url)
        .bind(&input.country_code)
        .fetch_one(pool)
        .await?;
        self.person(id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a created person vanished".into()))
        })
    }

    /// Change the given fields of a person; `None` when there is no such person.
    pub async fn update_person(
        &self,
        id: i64,
        input: &PersonInput,
    ) -> Result<Option<Person>, StoreError> {
        on_pool!(&self.pool, pool => {
        let done = sqlx::query(&self.sql("UPDATE people SET name = COALESCE(?, name), birth_year = COALESCE(?, birth_year), \
             biography = COALESCE(?, biography), photo_url = COALESCE(?, photo_url), \
             country_code = COALESCE(?, country_code) WHERE id = ?"))
        .bind(input.name.as_deref().map(str::trim))
        .bind(input.birth_year)
        .bind(&input.biography)
        .bind(&input.photo_url)
        .bind(&input.country_code)
        .bind(id)
        .execute(pool)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        self.person(id).await
        })
    }

    /// Delete a person; with `force`, their credits go first.
    pub async fn delete_person(&self, id: i64, force: bool) -> Result<PersonDeletion, StoreError> {
        on_pool!(&self.pool, pool => {
        let mut tx = pool.begin().await?;
        let movie_links: i64 = sqlx::query_scalar(&self.sql("SELECT (SELECT COUNT(*) FROM movie_directors WHERE person_id = ?) + \
             (SELECT COUNT(*) FROM movie_cast WHERE person_id = ?)"))
        .bind(id)
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
        let show_links: i64 = sqlx::query_scalar(&self.sql("SELECT (SELECT COUNT(*) FROM tv_show_creators WHERE person_id = ?) + \
             (SELECT COUNT(*) FROM tv_show_cast WHERE person_id = ?)"))
        .bind(id)
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
            sqlx::query(&self.sql(&format!("DELETE FROM {table} WHERE person_id = ?")))
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        let done = sqlx::query(&self.sql("DELETE FROM people WHERE id = ?"))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(if done.rows_affected() > 0 {
            PersonDeletion::Deleted
        } else {
            PersonDeletion::NotFound
        })
        })
    }
}
