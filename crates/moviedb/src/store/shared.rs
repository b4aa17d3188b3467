//! State every instance on one PostgreSQL database must see the same: rate-limit token buckets
//! and the cache of model-written summaries. Each is one statement, so two instances taking
//! from one bucket at once cannot both take its last token. On SQLite there is no
//! [`SharedState`]: one process serves the database and keeps these in memory.

use std::time::Duration;

use sqlx::PgPool;

use super::{Store, StoreError};

/// Rate-limit buckets and the summary cache, in the database every instance shares.
#[derive(Debug, Clone)]
pub struct SharedState {
    pool: PgPool,
}

impl Store {
    /// The shared state, when this store is on PostgreSQL.
    pub fn shared_state(&self) -> Option<SharedState> {
        self.postgres()
            .map(|pool| SharedState { pool: pool.clone() })
    }
}

impl SharedState {
    /// Take one call from `bucket` (`capacity` calls refilled evenly over `period`):
    /// `Ok(Err(wait))` when it is empty.
    pub async fn take(
        &self,
        bucket: &str,
        capacity: u32,
        period: Duration,
    ) -> Result<Result<(), Duration>, StoreError> {
        let capacity = f64::from(capacity);
        let per_second = capacity / period.as_secs_f64();
        // `refilled` is the bucket now: what it held plus what flowed in since, at most full.
        let (taken, tokens): (bool, f64) = sqlx::query_as(
            "INSERT INTO rate_buckets AS b (bucket, tokens, at, taken) \
             VALUES ($1, $2 - 1, now(), true) \
             ON CONFLICT (bucket) DO UPDATE SET \
               taken = LEAST($2, b.tokens + EXTRACT(EPOCH FROM now() - b.at)::float8 * $3) >= 1, \
               tokens = LEAST($2, b.tokens + EXTRACT(EPOCH FROM now() - b.at)::float8 * $3) \
                 - CASE WHEN LEAST($2, b.tokens + EXTRACT(EPOCH FROM now() - b.at)::float8 * $3) \
                   >= 1 THEN 1 ELSE 0 END, \
               at = now() \
             RETURNING taken, tokens",
        )
        .bind(bucket)
        .bind(capacity)
        .bind(per_second)
        .fetch_one(&self.pool)
        .await?;
        Ok(if taken {
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - tokens) / per_second))
        })
    }

    /// How long until `bucket` may call again (zero if it may now), without taking a call.
    pub async fn wait(
        &self,
        bucket: &str,
        capacity: u32,
        period: Duration,
    ) -> Result<Duration, StoreError> {
        let capacity = f64::from(capacity);
        let per_second = capacity / period.as_secs_f64();
        let tokens: Option<f64> = sqlx::query_scalar(
            "SELECT LEAST($2, tokens + EXTRACT(EPOCH FROM now() - at)::float8 * $3) \
             FROM rate_buckets WHERE bucket = $1",
        )
        .bind(bucket)
        .bind(capacity)
        .bind(per_second)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match tokens {
            Some(tokens) if tokens < 1.0 => Duration::from_secs_f64((1.0 - tokens) / per_second),
            _ => Duration::ZERO,
        })
    }

    /// Forget buckets untouched for `period` (they would be full again anyway).
    pub async fn forget_full_buckets(&self, period: Duration) -> Result<u64, StoreError> {
        let done =
            sqlx::query("DELETE FROM rate_buckets WHERE at < now() - make_interval(secs => $1)")
                .bind(period.as_secs_f64())
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected())
    }

    /// The cached text under `key`, unless it has expired.
    pub async fn cached(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT prose FROM summary_cache WHERE key = $1 AND expires_at > now()",
        )
        .bind(key)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Keep `text` under `key` for `ttl` (replacing what was there), and drop expired entries.
    pub async fn cache(&self, key: &str, text: &str, ttl: Duration) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM summary_cache WHERE expires_at <= now()")
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO summary_cache (key, prose, expires_at) \
             VALUES ($1, $2, now() + make_interval(secs => $3)) \
             ON CONFLICT (key) DO UPDATE SET prose = EXCLUDED.prose, \
             expires_at = EXCLUDED.expires_at",
        )
        .bind(key)
        .bind(text)
        .bind(ttl.as_secs_f64())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}
