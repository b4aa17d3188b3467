//! How a team's desks on one PostgreSQL database tell each other things (what they say is
//! [`crate::events`]' business: a conversation's events for the page that watches it at
//! another desk, the questions open at each desk, an answer for the desk that holds its
//! question).
//!
//! A message is a row of `desk_bus` whose id goes out by `NOTIFY desk_bus`; every desk
//! `LISTEN`s, reads the row and hands it to the desk's listener. One task per desk
//! writes its messages in the order they were said. A notification lost while the listening
//! connection was down is found again by reading the rows written since ([`CATCH_UP`]); rows
//! older than [`KEPT`] are deleted. A message reaches the other desks once its row is
//! committed and the notification read: [`LATEST`] is how late one may arrive while the
//! database answers.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::PgPool;
use tokio::sync::mpsc;

/// The channel the desks `LISTEN` on.
const CHANNEL: &str = "desk_bus";

/// How long a message's row is kept (for a desk whose listening connection was down).
pub const KEPT: Duration = Duration::from_secs(60);

/// How often a desk reads the rows it may have missed, notifications or not.
pub const CATCH_UP: Duration = Duration::from_secs(1);

/// How late a message may reach another desk while the database answers: the catch-up's
/// period, and a second for the database and the desks.
pub const LATEST: Duration = Duration::from_secs(2);

/// The most messages a desk holds while the database does not answer; beyond, the oldest go.
const MAX_UNSENT: usize = 10_000;

/// The largest message read back (a row is written by a desk, but read defensively).
const MAX_MESSAGE: usize = 256 * 1024;

/// A message, who sent it, and for whom (`None`: every other desk).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Envelope<M> {
    /// The sender.
    pub(crate) from: String,
    /// The desk it is for, if one.
    pub(crate) to: Option<String>,
    /// What it says.
    pub(crate) message: M,
}

/// This desk's end of the bus: its name, and where its messages go out.
#[derive(Debug, Clone)]
pub(crate) struct Bus<M> {
    desk: String,
    out: mpsc::UnboundedSender<Envelope<M>>,
}

impl<M> Bus<M> {
    /// This desk's name among the desks.
    pub(crate) fn desk(&self) -> &str {
        &self.desk
    }

    /// Tell every other desk.
    pub(crate) fn tell_all(&self, message: M) {
        self.send(None, message);
    }

    /// Tell the desk `to`.
    pub(crate) fn tell(&self, to: &str, message: M) {
        self.send(Some(to.to_owned()), message);
    }

    fn send(&self, to: Option<String>, message: M) {
        let envelope = Envelope {
            from: self.desk.clone(),
            to,
            message,
        };
        if self.out.send(envelope).is_err() {
            tracing::debug!("the desk's bus is closed: a message to the other desks is dropped");
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Join the bus on `pool` as `desk`: messages this desk says go out in order, and those of
/// the other desks for it are handed to `heard` (in the order they were read). Returns once
/// the desk listens (a message written after this returns reaches it).
pub(crate) async fn join<M>(
    pool: PgPool,
    desk: String,
    heard: impl Fn(Envelope<M>) + Send + Sync + 'static,
) -> Result<Bus<M>, sqlx::Error>
where
    M: Serialize + DeserializeOwned + Send + 'static,
{
    let mut listener = sqlx::postgres::PgListener::connect_with(&pool).await?;
    listener.listen(CHANNEL).await?;
    let floor: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM desk_bus")
        .fetch_one(&pool)
        .await?;
    let (out, rx) = mpsc::unbounded_channel();
    tokio::spawn(write(pool.clone(), rx));
    let reader = Reader {
        pool: pool.clone(),
        desk: desk.clone(),
        seen: BTreeSet::new(),
        floor,
        heard: Box::new(heard),
    };
    tokio::spawn(reader.listen(listener));
    tokio::spawn(reader_catch_up(pool, desk.clone()));
    Ok(Bus { desk, out })
}

/// Write this desk's messages, in order; while the database does not answer, they wait (the
/// newest [`MAX_UNSENT`], at most [`KEPT`] old).
async fn write<M: Serialize>(pool: PgPool, mut rx: mpsc::UnboundedReceiver<Envelope<M>>) {
    let mut written = 0u64;
    while let Some(envelope) = rx.recv().await {
        let Ok(body) = serde_json::to_string(&envelope) else {
            continue;
        };
        let made = now_ms();
        loop {
            let sent = sqlx::query(
                "WITH m AS (INSERT INTO desk_bus (body, made_ms) VALUES ($1, $2) RETURNING id) \
                 SELECT pg_notify('desk_bus', id::text) FROM m",
            )
            .bind(&body)
            .bind(made)
            .execute(&pool)
            .await;
            match sent {
                Ok(_) => break,
                Err(error) => {
                    let old = now_ms() - made > i64::try_from(KEPT.as_millis()).unwrap_or(0);
                    if old || rx.len() > MAX_UNSENT {
                        tracing::warn!(%error, "a message to the other desks is dropped: the database did not answer in time");
                        break;
                    }
                    tracing::debug!(%error, "the database does not answer: a message to the other desks waits");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        }
        written += 1;
        if written.is_multiple_of(256) {
            prune(&pool).await;
        }
    }
}

/// Delete the rows older than [`KEPT`].
async fn prune(pool: &PgPool) {
    let before = now_ms() - i64::try_from(KEPT.as_millis()).unwrap_or(0);
    if let Err(error) = sqlx::query("DELETE FROM desk_bus WHERE made_ms < $1")
        .bind(before)
        .execute(pool)
        .await
    {
        tracing::debug!(%error, "old messages between the desks could not be deleted");
    }
}

/// Every [`CATCH_UP`], a notification on this desk's own channel wakes its reader, which then
/// reads the rows it may have missed (and every minute the old rows go).
async fn reader_catch_up(pool: PgPool, desk: String) {
    let mut ticks = 0u64;
    loop {
        tokio::time::sleep(CATCH_UP).await;
        ticks += 1;
        // The payload names this desk only: the others ignore a wake-up that is not theirs.
        let wake = sqlx::query("SELECT pg_notify('desk_bus', $1)")
            .bind(format!("wake {desk}"))
            .execute(&pool)
            .await;
        if wake.is_err() {
            continue;
        }
        if ticks.is_multiple_of(60) {
            prune(&pool).await;
        }
    }
}

/// The reading end: the rows already handed on (by id, above `floor`), and to whom.
struct Reader<M> {
    pool: PgPool,
    desk: String,
    seen: BTreeSet<i64>,
    floor: i64,
    heard: Box<dyn Fn(Envelope<M>) + Send + Sync>,
}

impl<M: DeserializeOwned> Reader<M> {
    async fn listen(mut self, mut listener: sqlx::postgres::PgListener) {
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    let payload = notification.payload();
                    if let Ok(id) = payload.parse::<i64>() {
                        self.read(Some(id)).await;
                    } else if payload.strip_prefix("wake ") == Some(self.desk.as_str()) {
                        self.read(None).await;
                    }
                }
                Ok(None) => self.read(None).await,
                Err(error) => {
                    tracing::debug!(%error, "the desks' bus is not listening: trying again");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    self.read(None).await;
                }
            }
        }
    }

    /// Hand on the row `id`, or (`None`) every row not handed on yet.
    async fn read(&mut self, id: Option<i64>) {
        let rows: Result<Vec<(i64, String, i64)>, sqlx::Error> =
            match id {
                Some(id) if id <= self.floor || self.seen.contains(&id) => return,
                Some(id) => {
                    sqlx::query_as("SELECT id, body, made_ms FROM desk_bus WHERE id = $1")
                        .bind(id)
                        .fetch_all(&self.pool)
                        .await
                }
                None => sqlx::query_as(
                    "SELECT id, body, made_ms FROM desk_bus WHERE id > $1 ORDER BY id LIMIT 10000",
                )
                .bind(self.floor)
                .fetch_all(&self.pool)
                .await,
            };
        let rows = match rows {
            Ok(rows) => rows,
            Err(error) => {
                tracing::debug!(%error, "the desks' bus could not be read");
                return;
            }
        };
        // A row this old was committed long ago: nothing below it can still come.
        let settled = now_ms() - i64::try_from(KEPT.as_millis() / 2).unwrap_or(0);
        for (id, body, made) in rows {
            if !self.seen.insert(id) {
                continue;
            }
            if made < settled {
                self.floor = self.floor.max(id);
            }
            if body.len() > MAX_MESSAGE {
                continue;
            }
            match serde_json::from_str::<Envelope<M>>(&body) {
                Ok(envelope)
                    if envelope.from != self.desk
                        && envelope.to.as_ref().is_none_or(|to| *to == self.desk) =>
                {
                    (self.heard)(envelope)
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "a message between the desks is unreadable"),
            }
        }
        let floor = self.floor;
        self.seen.retain(|id| *id > floor);
    }
}
