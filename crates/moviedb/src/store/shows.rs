//! TV shows: lookups, pages, search, creators, cast and episodes.

use sql_pool::on_pool;
use sqlx::Row;

use crate::domain::{Credit, Episode, PageRequest, Person, TvShow};
use crate::store::{Store, StoreError, person_row};

impl Store {
    // ---- TV ----

    /// One show.
    pub async fn tv_show(&self, id: i64) -> Result<Option<TvShow>, StoreError> {
        self.by_id("tv_shows", id).await
    }

    /// One page of shows by id, and how many there are.
    pub async fn tv_shows_page(&self, page: PageRequest) -> Result<(Vec<TvShow>, i64), StoreError> {
        self.page_of("tv_shows", page).await
    }

    /// Shows whose title contains `text`.
    pub async fn search_shows(&self, text: &str, limit: i64) -> Result<Vec<TvShow>, StoreError> {
        self.containing("tv_shows", "title", text, limit).await
    }

    /// A show's creators.
    pub async fn creators(&self, show_id: i64) -> Result<Vec<Person>, StoreError> {
        on_pool!(&self.pool, pool => {
        sqlx::query(&self.sql("SELECT p.* FROM people p JOIN tv_show_creators c ON c.person_id = p.id \
             WHERE c.tv_show_id = ? ORDER BY p.id"))
        .bind(show_id)
        .fetch_all(pool)
        .await?
        .iter()
        .map(person_row)
        .collect()
        })
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
        on_pool!(&self.pool, pool => {
        sqlx::query(&self.sql("SELECT * FROM episodes WHERE tv_show_id = ? ORDER BY season_number, episode_number"))
        .bind(show_id)
        .fetch_all(pool)
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
        })
    }
}
