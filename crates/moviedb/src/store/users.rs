//! Accounts.

use sql_pool::on_pool;

use crate::domain::{Role, User};
use crate::store::{Store, StoreError, Writes, user_row};

impl Store {
    // ---- users ----

    /// An account by username.
    pub async fn user_by_name(&self, username: &str) -> Result<Option<User>, StoreError> {
        on_pool!(&self.pool, pool => {
        sqlx::query(&self.sql("SELECT * FROM users WHERE username = ?"))
            .bind(username)
            .fetch_optional(pool)
            .await?
            .as_ref()
            .map(user_row)
            .transpose()
        })
    }

    /// An account by id.
    pub async fn user(&self, id: i64) -> Result<Option<User>, StoreError> {
        self.by_id("users", id).await
    }
}

impl Writes {
    /// Store an account; [`StoreError::Duplicate`] when the username is taken.
    pub async fn create_user(
        &self,
        username: &str,
        email: &str,
        password_hash: &str,
        role: Role,
    ) -> Result<User, StoreError> {
        on_pool!(&self.pool, pool => {
        let id: i64 = sqlx::query_scalar(&self.sql("INSERT INTO users (username, email, password_hash, role) VALUES (?, ?, ?, ?) \
             RETURNING id"))
        .bind(username)
        .bind(email)
        .bind(password_hash)
        .bind(role.as_str())
        .fetch_one(pool)
        .await?;
        self.user(id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a created user vanished".into()))
        })
    }
}
