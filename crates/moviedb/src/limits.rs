//! Rate limits: a token bucket per key (a user, an address, an account), and the limits on
//! signing in (attempts per address, failures per account). Password hashes themselves run
//! two at a time on threads of their own (`auth`).
//!
//! On SQLite the buckets live in this process (it is the database's one server). On
//! PostgreSQL they live in the database ([`SharedState`]), so a limit holds across every
//! instance together; if the database cannot be asked, this process's own bucket decides
//! (a limit per instance is better than none).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::store::SharedState;

/// Every this many shared takes, forget the buckets that have refilled.
const SWEEP_EVERY: u64 = 1024;

/// A token bucket per key: `capacity` calls, refilled evenly over `period`.
#[derive(Debug)]
pub struct RateLimiter {
    capacity: u32,
    period: Duration,
    buckets: Mutex<HashMap<String, (f64, tokio::time::Instant)>>,
    /// The database's buckets, and this limiter's name in them.
    shared: Option<(SharedState, &'static str)>,
    takes: AtomicU64,
}

impl RateLimiter {
    /// A limiter of `per_minute` calls per key.
    pub fn new(per_minute: u32) -> Self {
        Self::per(per_minute, Duration::from_secs(60))
    }

    /// A limiter of `capacity` calls per key per `period`.
    pub fn per(capacity: u32, period: Duration) -> Self {
        Self {
            capacity: capacity.max(1),
            period: period.max(Duration::from_millis(1)),
            buckets: Mutex::default(),
            shared: None,
            takes: AtomicU64::new(0),
        }
    }

    /// Keep the buckets in `shared` (when there is one) under `name`, so every instance on
    /// that database counts against the same bucket.
    pub fn shared_by(mut self, shared: Option<SharedState>, name: &'static str) -> Self {
        self.shared = shared.map(|state| (state, name));
        self
    }

    /// Calls allowed per period.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    fn refill(&self) -> f64 {
        f64::from(self.capacity) / self.period.as_secs_f64()
    }

    /// How long until `key` may call again (zero if it may now), without taking a call.
    pub async fn wait(&self, key: &str) -> Duration {
        if let Some((shared, name)) = &self.shared {
            match shared
                .wait(&format!("{name}:{key}"), self.capacity, self.period)
                .await
            {
                Ok(wait) => return wait,
                Err(error) => {
                    tracing::warn!(%error, "the shared rate limit could not be read; using this instance's");
                }
            }
        }
        self.wait_here(key)
    }

    fn wait_here(&self, key: &str) -> Duration {
        let capacity = f64::from(self.capacity);
        let per_second = self.refill();
        let now = tokio::time::Instant::now();
        let buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match buckets.get(key) {
            None => Duration::ZERO,
            Some((tokens, at)) => {
                let tokens =
                    (tokens + now.duration_since(*at).as_secs_f64() * per_second).min(capacity);
                if tokens >= 1.0 {
                    Duration::ZERO
                } else {
                    Duration::from_secs_f64((1.0 - tokens) / per_second)
                }
            }
        }
    }

    /// Take one call for `key`; `Err(wait)` when the bucket is empty.
    pub async fn take(&self, key: &str) -> Result<(), Duration> {
        if let Some((shared, name)) = &self.shared {
            if self.takes.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
                let _ = shared.forget_full_buckets(self.period).await;
            }
            match shared
                .take(&format!("{name}:{key}"), self.capacity, self.period)
                .await
            {
                Ok(taken) => return taken,
                Err(error) => {
                    tracing::warn!(%error, "the shared rate limit could not be taken; using this instance's");
                }
            }
        }
        self.take_here(key)
    }

    fn take_here(&self, key: &str) -> Result<(), Duration> {
        let capacity = f64::from(self.capacity);
        let per_second = self.refill();
        let now = tokio::time::Instant::now();
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() > 10_000 {
            // Forget keys whose buckets have refilled; they would start full anyway.
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * per_second < capacity
            });
        }
        let (tokens, at) = buckets.entry(key.to_owned()).or_insert((capacity, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * per_second).min(capacity);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / per_second))
        }
    }
}

/// Limits on signing in.
#[derive(Debug)]
pub struct SignInLimits {
    /// Attempts per client address.
    pub per_address: RateLimiter,
    /// Failed attempts per account.
    pub failures_per_account: RateLimiter,
}

impl SignInLimits {
    /// 20 attempts a minute per address, 5 failures per account per 5 minutes; kept in
    /// `shared` when there is one.
    pub fn new(shared: Option<SharedState>) -> Self {
        Self {
            per_address: RateLimiter::new(20).shared_by(shared.clone(), "sign-in"),
            failures_per_account: RateLimiter::per(5, Duration::from_secs(300))
                .shared_by(shared, "sign-in-failures"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_bucket_holds_a_minute_of_calls_and_refills_evenly() {
        let limiter = RateLimiter::new(60);
        for _ in 0..60 {
            assert!(limiter.take("user:mara").await.is_ok());
        }
        let wait = limiter.take("user:mara").await.unwrap_err();
        assert!(wait <= Duration::from_secs(1), "{wait:?}");
        assert!(
            limiter.take("user:dan").await.is_ok(),
            "buckets are per key"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(limiter.take("user:mara").await.is_ok());
        assert!(limiter.take("user:mara").await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_bucket_over_a_longer_period_refills_slowly() {
        let limiter = RateLimiter::per(5, Duration::from_secs(300));
        for _ in 0..5 {
            assert!(limiter.take("account:mara").await.is_ok());
        }
        assert_eq!(limiter.wait("account:mara").await, Duration::from_secs(60));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(limiter.wait("account:mara").await, Duration::ZERO);
        assert!(limiter.take("account:mara").await.is_ok());
    }
}
