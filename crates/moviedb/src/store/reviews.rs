//! Reviews of movies and shows, and their writes.

use chrono::Utc;
use sql_pool::on_pool;

use crate::domain::{Review, Subject};
use crate::store::{Store, StoreError, Writes, subject_columns};

impl Store {
    /// Whether the movie or show exists.
    pub async fn subject_exists(&self, subject: Subject) -> Result<bool, StoreError> {
        on_pool!(&self.pool, pool => {
        let sql = match subject {
            Subject::Movie(_) => "SELECT COUNT(*) FROM movies WHERE id = ?",
            Subject::TvShow(_) => "SELECT COUNT(*) FROM tv_shows WHERE id = ?",
        };
        let id = match subject {
            Subject::Movie(id) | Subject::TvShow(id) => id,
        };
        let n: i64 = sqlx::query_scalar(&self.sql(sql))
            .bind(id)
            .fetch_one(pool)
            .await?;
        Ok(n > 0)
        })
    }

    // ---- reviews ----

    /// The reviews of a title, oldest first.
    pub async fn reviews(&self, subject: Subject) -> Result<Vec<Review>, StoreError> {
        let (sql, id) = match subject {
            Subject::Movie(id) => ("SELECT * FROM reviews WHERE movie_id = ? ORDER BY id", id),
            Subject::TvShow(id) => ("SELECT * FROM reviews WHERE tv_show_id = ? ORDER BY id", id),
        };
        self.all_with_id(sql, id).await
    }

    /// One review.
    pub async fn review(&self, id: i64) -> Result<Option<Review>, StoreError> {
        self.by_id("reviews", id).await
    }
}

impl Writes {
    /// Store a review; [`StoreError::Duplicate`] when the user already reviewed the title.
    pub async fn create_review(
        &self,
        user_id: i64,
        subject: Subject,
        score: i32,
        comment: Option<&str>,
    ) -> Result<Review, StoreError> {
        on_pool!(&self.pool, pool => {
        let (movie, show) = subject_columns(subject);
        let id: i64 = sqlx::query_scalar(&self.sql("INSERT INTO reviews (score, comment, created_at, user_id, movie_id, tv_show_id) \
             VALUES (?, ?, ?, ?, ?, ?) RETURNING id"))
        .bind(score)
        .bind(comment)
        .bind(Utc::now().to_rfc3339())
        .bind(user_id)
        .bind(movie)
        .bind(show)
        .fetch_one(pool)
        .await?;
        self.review(id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a created review vanished".into()))
        })
    }

    /// Delete a review; whether it existed.
    pub async fn delete_review(&self, id: i64) -> Result<bool, StoreError> {
        on_pool!(&self.pool, pool => {
        let done = sqlx::query(&self.sql("DELETE FROM reviews WHERE id = ?"))
            .bind(id)
            .execute(pool)
            .await?;
        Ok(done.rows_affected() > 0)
        })
    }
}
