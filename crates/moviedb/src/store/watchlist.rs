//! Each user's watch list, and its writes.

use sql_pool::on_pool;

use crate::domain::{Subject, WatchStatus, WatchlistItem};
use crate::store::{Store, StoreError, Writes, item_row, subject_columns};

/// A user's watch list, oldest entry first (one `?`, the user's id).
const WATCHLIST: &str = "SELECT * FROM watchlist_items WHERE user_id = ? ORDER BY id";

impl Store {
    // ---- watch lists ----

    /// A user's watch list, oldest entry first.
    pub async fn watchlist(&self, user_id: i64) -> Result<Vec<WatchlistItem>, StoreError> {
        self.all_with_id(WATCHLIST, user_id).await
    }

    /// One entry of `user_id`'s list (another user's entry reads as missing).
    pub async fn watchlist_item(
        &self,
        user_id: i64,
        item_id: i64,
    ) -> Result<Option<WatchlistItem>, StoreError> {
        on_pool!(&self.pool, pool => {
        sqlx::query(&self.sql("SELECT * FROM watchlist_items WHERE id = ? AND user_id = ?"))
            .bind(item_id)
            .bind(user_id)
            .fetch_optional(pool)
            .await?
            .as_ref()
            .map(item_row)
            .transpose()
        })
    }

    /// The entry for `subject` on `user_id`'s list, if there is one.
    pub async fn watchlist_entry_for(
        &self,
        user_id: i64,
        subject: Subject,
    ) -> Result<Option<WatchlistItem>, StoreError> {
        on_pool!(&self.pool, pool => {
        let (movie, show) = subject_columns(subject);
        sqlx::query(&self.sql("SELECT * FROM watchlist_items WHERE user_id = ? AND movie_id IS NOT DISTINCT FROM ? \
             AND tv_show_id IS NOT DISTINCT FROM ?"))
        .bind(user_id)
        .bind(movie)
        .bind(show)
        .fetch_optional(pool)
        .await?
        .as_ref()
        .map(item_row)
        .transpose()
        })
    }

    /// Ids of the movies `user_id` marked WATCHED.
    pub async fn watched_movie_ids(&self, user_id: i64) -> Result<Vec<i64>, StoreError> {
        on_pool!(&self.pool, pool => {
        Ok(sqlx::query_scalar(&self.sql("SELECT movie_id FROM watchlist_items WHERE user_id = ? AND status = 'WATCHED' \
             AND movie_id IS NOT NULL"))
        .bind(user_id)
        .fetch_all(pool)
        .await?)
        })
    }
}

impl Writes {
    /// Add a title; [`StoreError::Duplicate`] when it is already on the list.
    pub async fn add_to_watchlist(
        &self,
        user_id: i64,
        subject: Subject,
        status: WatchStatus,
    ) -> Result<WatchlistItem, StoreError> {
        on_pool!(&self.pool, pool => {
        let (movie, show) = subject_columns(subject);
        let id: i64 = sqlx::query_scalar(&self.sql("INSERT INTO watchlist_items (user_id, movie_id, tv_show_id, status) \
             VALUES (?, ?, ?, ?) RETURNING id"))
        .bind(user_id)
        .bind(movie)
        .bind(show)
        .bind(status.as_str())
        .fetch_one(pool)
        .await?;
        self.watchlist_item(user_id, id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a created entry vanished".into()))
        })
    }

    /// Set an entry's status; whether the user has that entry.
    pub async fn set_watch_status(
        &self,
        user_id: i64,
        item_id: i64,
        status: WatchStatus,
    ) -> Result<bool, StoreError> {
        on_pool!(&self.pool, pool => {
        let done =
            sqlx::query(&self.sql("UPDATE watchlist_items SET status = ? WHERE id = ? AND user_id = ?"))
                .bind(status.as_str())
                .bind(item_id)
                .bind(user_id)
                .execute(pool)
                .await?;
        Ok(done.rows_affected() > 0)
        })
    }

    /// Remove an entry; whether the user had it.
    pub async fn remove_from_watchlist(
        &self,
        user_id: i64,
        item_id: i64,
    ) -> Result<bool, StoreError> {
        on_pool!(&self.pool, pool => {
        let done = sqlx::query(&self.sql("DELETE FROM watchlist_items WHERE id = ? AND user_id = ?"))
            .bind(item_id)
            .bind(user_id)
            .execute(pool)
            .await?;
        Ok(done.rows_affected() > 0)
        })
    }
}
