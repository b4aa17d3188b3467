//! TV shows: lookups, pages, search, creators, cast and episodes.

use crate::domain::{Credit, Episode, PageRequest, Person, TvShow};
use crate::store::{Store, StoreError};

/// A show's creators (one `?`, the id).
const CREATORS: &str = "SELECT p.* FROM people p JOIN tv_show_creators c ON c.person_id = p.id \
     WHERE c.tv_show_id = ? ORDER BY p.id";

/// A show's cast (one `?`, the id).
const SHOW_CAST: &str = "SELECT p.*, c.character_name FROM people p JOIN tv_show_cast c \
     ON c.person_id = p.id WHERE c.tv_show_id = ? ORDER BY c.id";

/// A show's episodes by season and number (one `?`, the id).
const EPISODES: &str =
    "SELECT * FROM episodes WHERE tv_show_id = ? ORDER BY season_number, episode_number";

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
        self.all_with_id(CREATORS, show_id).await
    }

    /// A show's cast.
    pub async fn show_cast(&self, show_id: i64) -> Result<Vec<Credit>, StoreError> {
        self.credits(SHOW_CAST, show_id).await
    }

    /// A show's episodes by season and number.
    pub async fn episodes(&self, show_id: i64) -> Result<Vec<Episode>, StoreError> {
        self.all_with_id(EPISODES, show_id).await
    }
}
