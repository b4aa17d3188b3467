//! Instances of one server on one PostgreSQL database ([`share`]), so that none keeps its own
//! truth:
//!
//! - **Changes** ([`PgChangeBus`]): every instance `LISTEN`s on one channel and publishes its
//!   changes (a list changed, a resource was updated) with `pg_notify`, so a change raised on
//!   one instance reaches the 2025-11-25 sessions and 2026-07-28 listen streams held by every
//!   other. Each instance also delivers its own changes at once, and skips them when they come
//!   back from the database. A notification published while an instance's listening
//!   connection is down (it reconnects, and says so in its log) is not replayed to it; changes
//!   are hints to fetch again, so a client that reconnects fetches anyway.
//! - **Spent rounds** ([`PgSpentRounds`]): a sealed `requestState` answers once across all
//!   instances, not once per instance: spending it is one `INSERT … ON CONFLICT DO NOTHING`
//!   into `backchannel_spent_rounds`. If the database cannot be asked, the retry is refused
//!   (the client starts the call again) rather than risk a second answer.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use sqlx::postgres::{PgListener, PgPoolOptions};

use crate::layer::{Backchannel, ChangeBus, SpentLedger};
use crate::sessions::{Change, ListKind};

/// The channel every instance of one database listens on.
pub const CHANNEL: &str = "backchannel_changes";

/// Longest URI a change may carry (PostgreSQL caps a notification at 8000 bytes).
pub const MAX_URI_BYTES: usize = 2048;

/// A change as it travels: who sent it, and what changed.
#[derive(Debug, Serialize, Deserialize)]
struct Wire {
    from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    list: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource: Option<String>,
}

fn list_name(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "tools",
        ListKind::Prompts => "prompts",
        ListKind::Resources => "resources",
    }
}

impl Wire {
    fn of(from: &str, change: &Change) -> Self {
        let (list, resource) = match change {
            Change::ListChanged(kind) => (Some(list_name(*kind).to_owned()), None),
            Change::ResourceUpdated(uri) => (None, Some(uri.clone())),
        };
        Wire {
            from: from.to_owned(),
            list,
            resource,
        }
    }

    fn change(self) -> Option<Change> {
        match (self.list.as_deref(), self.resource) {
            (Some("tools"), None) => Some(Change::ListChanged(ListKind::Tools)),
            (Some("prompts"), None) => Some(Change::ListChanged(ListKind::Prompts)),
            (Some("resources"), None) => Some(Change::ListChanged(ListKind::Resources)),
            (None, Some(uri)) if uri.len() <= MAX_URI_BYTES => Some(Change::ResourceUpdated(uri)),
            _ => None,
        }
    }
}

/// Errors connecting instances through PostgreSQL.
#[derive(Debug, thiserror::Error)]
#[error("instances could not be connected through PostgreSQL: {0}")]
pub struct PgError(#[from] sqlx::Error);

/// Connect `layer` to the other instances on the database at `url`: share its changes and
/// share its spent rounds. Returns once both are in place.
pub async fn share(url: &str, layer: &Backchannel) -> Result<(), PgError> {
    let pool = PgPoolOptions::new().max_connections(4).connect(url).await?;
    PgSpentRounds::start(pool.clone(), layer).await?;
    PgChangeBus::start(pool, layer).await?;
    Ok(())
}

/// The PostgreSQL change bus of one instance.
#[derive(Debug)]
pub struct PgChangeBus {
    id: String,
    pool: PgPool,
}

impl PgChangeBus {
    /// Listen on `pool`'s database and carry `layer`'s changes through it from now on.
    /// Returns once listening, so a change published by another instance after this returns
    /// reaches `layer`'s listeners. The listening task ends when the layer is dropped.
    pub async fn start(pool: PgPool, layer: &Backchannel) -> Result<Arc<PgChangeBus>, PgError> {
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.listen(CHANNEL).await?;
        let bus = Arc::new(PgChangeBus { id: hex_id(), pool });
        let me = bus.id.clone();
        let weak = layer.downgrade();
        tokio::spawn(async move {
            loop {
                if weak.upgrade().is_none() {
                    break;
                }
                let notification = match listener.try_recv().await {
                    Ok(Some(notification)) => notification,
                    Ok(None) => {
                        tracing::warn!("the change bus lost its connection; listening again");
                        continue;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the change bus cannot listen; retrying in 1 s");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                let Some(layer) = weak.upgrade() else { break };
                let payload = notification.payload();
                if payload.len() > 8_000 {
                    continue;
                }
                let Ok(wire) = serde_json::from_str::<Wire>(payload) else {
                    continue;
                };
                if wire.from == me {
                    continue;
                }
                if let Some(change) = wire.change() {
                    layer.deliver(&change).await;
                }
            }
        });
        layer.share_changes(bus.clone());
        Ok(bus)
    }
}

impl ChangeBus for PgChangeBus {
    fn publish(&self, change: &Change) -> BoxFuture<'static, ()> {
        let pool = self.pool.clone();
        let wire = Wire::of(&self.id, change);
        Box::pin(async move {
            if wire
                .resource
                .as_ref()
                .is_some_and(|uri| uri.len() > MAX_URI_BYTES)
            {
                tracing::warn!("a resource URI too long to carry was not sent to other instances");
                return;
            }
            let Ok(payload) = serde_json::to_string(&wire) else {
                return;
            };
            if let Err(error) = sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind(payload)
                .execute(&pool)
                .await
            {
                tracing::warn!(%error, "a change could not be sent to other instances");
            }
        })
    }
}

/// Rounds spent on any instance of the database, so each answers once in all.
#[derive(Debug)]
pub struct PgSpentRounds {
    pool: PgPool,
    spends: std::sync::atomic::AtomicU64,
}

/// Every this many spends, forget the rounds that have expired anyway.
const SWEEP_EVERY: u64 = 1024;

impl PgSpentRounds {
    /// Create the table if it is missing (once, under an advisory lock, when instances start
    /// together) and share `layer`'s spent rounds through it from now on.
    pub async fn start(pool: PgPool, layer: &Backchannel) -> Result<Arc<PgSpentRounds>, PgError> {
        let mut tx = pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(7340003)")
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS backchannel_spent_rounds (\
             nonce TEXT NOT NULL, round INTEGER NOT NULL, expires_ms BIGINT NOT NULL, \
             PRIMARY KEY (nonce, round))",
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let ledger = Arc::new(PgSpentRounds {
            pool,
            spends: std::sync::atomic::AtomicU64::new(0),
        });
        layer.share_spent_rounds(ledger.clone());
        Ok(ledger)
    }
}

impl SpentLedger for PgSpentRounds {
    fn spend(&self, nonce: &str, round: u32, expires_ms: u64, now_ms: u64) -> crate::Spend {
        let pool = self.pool.clone();
        let nonce = nonce.to_owned();
        let sweep = self
            .spends
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            % SWEEP_EVERY
            == SWEEP_EVERY - 1;
        Box::pin(async move {
            let clamp = |ms: u64| i64::try_from(ms).unwrap_or(i64::MAX);
            if sweep {
                let _ = sqlx::query("DELETE FROM backchannel_spent_rounds WHERE expires_ms < $1")
                    .bind(clamp(now_ms))
                    .execute(&pool)
                    .await;
            }
            let done = sqlx::query(
                "INSERT INTO backchannel_spent_rounds (nonce, round, expires_ms) \
                 VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )
            .bind(nonce)
            .bind(i32::try_from(round).unwrap_or(i32::MAX))
            .bind(clamp(expires_ms))
            .execute(&pool)
            .await
            .map_err(|error| crate::LedgerError(error.to_string()))?;
            Ok(done.rows_affected() == 1)
        })
    }
}

fn hex_id() -> String {
    crate::util::random_bytes::<16>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_travel_and_come_back_the_same() {
        for change in [
            Change::ListChanged(ListKind::Tools),
            Change::ListChanged(ListKind::Prompts),
            Change::ListChanged(ListKind::Resources),
            Change::ResourceUpdated("order://ORD-10001".into()),
        ] {
            let text = serde_json::to_string(&Wire::of("a", &change)).unwrap();
            let back: Wire = serde_json::from_str(&text).unwrap();
            assert_eq!(back.from, "a");
            assert_eq!(back.change(), Some(change));
        }
    }

    #[test]
    fn a_malformed_or_oversized_change_is_dropped() {
        for text in [
            r#"{"from":"a"}"#,
            r#"{"from":"a","list":"tools","resource":"x://y"}"#,
            r#"{"from":"a","list":"widgets"}"#,
        ] {
            let wire: Wire = serde_json::from_str(text).unwrap();
            assert_eq!(wire.change(), None, "{text}");
        }
        let long = Wire {
            from: "a".into(),
            list: None,
            resource: Some("x".repeat(MAX_URI_BYTES + 1)),
        };
        assert_eq!(long.change(), None);
    }
}
