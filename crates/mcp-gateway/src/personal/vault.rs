//! Each person's upstream tokens in the gateway's database, sealed: the credentials (rmcp's
//! `StoredCredentials`: the client registration's id, the access and refresh tokens) encrypted
//! under the gateway's state keys with the owner and the upstream as associated data, so a
//! row copied under another person or upstream does not open.

use std::sync::Arc;

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};

use crate::error::GatewayError;

/// The tokens of every person for every per-person upstream.
pub(crate) struct Vault {
    pool: sql_pool::Pool,
    sealer: backchannel::Sealer,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault").finish_non_exhaustive()
    }
}

/// What a sealed row is bound to.
fn binding(owner: &str, upstream: &str) -> Vec<u8> {
    format!("mcp-gateway upstream token\0{owner}\0{upstream}").into_bytes()
}

/// Seconds since the epoch.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

impl Vault {
    /// Open (and migrate) the database at `url`, sealing with `sealer`.
    pub(crate) async fn open(
        url: &str,
        sealer: backchannel::Sealer,
    ) -> Result<Vault, GatewayError> {
        let pool = sql_pool::open_migrated!(url, GatewayError).await?;
        Ok(Vault { pool, sealer })
    }

    /// `owner`'s credentials for `upstream`, if any that open.
    pub(crate) async fn load(
        &self,
        owner: &str,
        upstream: &str,
    ) -> Result<Option<StoredCredentials>, sqlx::Error> {
        let text = self
            .pool
            .sql("SELECT sealed FROM upstream_tokens WHERE owner = ? AND upstream = ?");
        let sealed: Option<String> = sql_pool::on_pool!(&self.pool, pool => {
            sqlx::query_scalar(&text).bind(owner).bind(upstream).fetch_optional(pool).await?
        });
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        // A row that does not open (sealed under keys this instance lacks) is as good as none:
        // the person is asked to sign in again.
        Ok(self
            .sealer
            .open(&sealed, &binding(owner, upstream))
            .and_then(|plain| serde_json::from_slice(&plain).ok()))
    }

    /// Keep `credentials` as `owner`'s for `upstream`.
    pub(crate) async fn save(
        &self,
        owner: &str,
        upstream: &str,
        credentials: &StoredCredentials,
    ) -> Result<(), sqlx::Error> {
        let plain = serde_json::to_vec(credentials).map_err(|e| sqlx::Error::Encode(e.into()))?;
        let sealed = self.sealer.seal(&plain, &binding(owner, upstream));
        let text = self.pool.sql(
            "INSERT INTO upstream_tokens (owner, upstream, sealed, saved_at) VALUES (?, ?, ?, ?) \
             ON CONFLICT (owner, upstream) DO UPDATE SET sealed = excluded.sealed, \
             saved_at = excluded.saved_at",
        );
        sql_pool::on_pool!(&self.pool, pool => {
            sqlx::query(&text)
                .bind(owner)
                .bind(upstream)
                .bind(sealed)
                .bind(now())
                .execute(pool)
                .await
                .map(drop)?
        });
        Ok(())
    }

    /// Forget `owner`'s credentials for `upstream`; whether there were any.
    pub(crate) async fn clear(&self, owner: &str, upstream: &str) -> Result<bool, sqlx::Error> {
        let text = self
            .pool
            .sql("DELETE FROM upstream_tokens WHERE owner = ? AND upstream = ?");
        let done = sql_pool::on_pool!(&self.pool, pool => {
            sqlx::query(&text).bind(owner).bind(upstream).execute(pool).await?.rows_affected()
        });
        Ok(done > 0)
    }
}

/// One person's credentials for one upstream, as rmcp's credential store: what the host's
/// OAuth client loads, saves after a sign-in or a refresh, and clears when refused.
pub(crate) struct PersonStore {
    pub(crate) vault: Arc<Vault>,
    pub(crate) owner: String,
    pub(crate) upstream: String,
}

fn store_error(error: sqlx::Error) -> AuthError {
    AuthError::InternalError(format!("the gateway's token store: {error}"))
}

#[async_trait::async_trait]
impl CredentialStore for PersonStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.vault
            .load(&self.owner, &self.upstream)
            .await
            .map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.vault
            .save(&self.owner, &self.upstream, &credentials)
            .await
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.vault
            .clear(&self.owner, &self.upstream)
            .await
            .map(drop)
            .map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn credentials(access: &str) -> StoredCredentials {
        serde_json::from_value(serde_json::json!({
            "client_id": "client-1",
            "token_response": {
                "access_token": access,
                "token_type": "bearer",
                "expires_in": 3600,
                "refresh_token": "refresh-1"
            },
            "granted_scopes": [],
            "token_received_at": 1
        }))
        .unwrap()
    }

    /// Whether `vault` holds no tokens of `owner` for `upstream`.
    async fn nothing(vault: &Vault, owner: &str, upstream: &str) -> bool {
        vault.load(owner, upstream).await.unwrap().is_none()
    }

    #[tokio::test]
    async fn tokens_are_sealed_to_their_person_and_upstream() {
        let vault = Vault::open("sqlite::memory:", backchannel::Sealer::random().unwrap())
            .await
            .unwrap();
        let access = "the-access-token-of-ana";
        vault
            .save("principal:ana", "orders", &credentials(access))
            .await
            .unwrap();
        let loaded = vault
            .load("principal:ana", "orders")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(loaded.client_id, "client-1");
        assert!(nothing(&vault, "principal:ben", "orders").await);
        assert!(nothing(&vault, "principal:ana", "other").await);

        // The row gives no token away, and copied under another person it does not open.
        let sql_pool::Pool::Sqlite(pool) = &vault.pool else {
            unreachable!()
        };
        let sealed: String = sqlx::query_scalar("SELECT sealed FROM upstream_tokens")
            .fetch_one(pool)
            .await
            .unwrap();
        assert!(!sealed.contains(access) && !sealed.contains("refresh-1"));
        sqlx::query(
            "INSERT INTO upstream_tokens (owner, upstream, sealed, saved_at) \
             VALUES ('principal:ben', 'orders', ?, 0)",
        )
        .bind(&sealed)
        .execute(pool)
        .await
        .unwrap();
        assert!(nothing(&vault, "principal:ben", "orders").await);

        // Saving again replaces; clearing forgets.
        vault
            .save("principal:ana", "orders", &credentials("another"))
            .await
            .unwrap();
        assert!(vault.clear("principal:ana", "orders").await.unwrap());
        assert!(!vault.clear("principal:ana", "orders").await.unwrap());
        assert!(nothing(&vault, "principal:ana", "orders").await);
    }
}
