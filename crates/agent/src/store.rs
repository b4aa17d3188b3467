//! The desk's own database: what must outlive the process for a question to wait for its
//! person across a restart — browser sessions (by the SHA-256 of their cookie, never the
//! cookie), the conversations they made, and the servers' tasks that wait for the person.
//!
//! SQLite (a file, the default) or PostgreSQL (`postgres://…`, a database desks may share),
//! through `sql_pool`: each statement is written once, with `?` placeholders, for both.
//!
//! Without a database (`DeskConfig::database` unset) the desk keeps all of it in memory, as a
//! test or the terminal does. The rows are written before the desk answers the request that
//! made them (a session's cookie, a conversation's id, "waiting for your answer"), so nothing
//! the person was told is forgotten by a restart.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sql_pool::{Pool, on_pool};

/// Why the desk's database cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened or queried.
    #[error("the desk's database: {0}")]
    Database(#[from] sqlx::Error),
    /// Its schema could not be brought up to date.
    #[error("the desk's database could not be migrated: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// A browser session as stored: the digest of its cookie, whose it is, until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSession {
    /// SHA-256 of the cookie's value, hex.
    pub digest: String,
    /// The person.
    pub person: String,
    /// When it ends.
    pub until: SystemTime,
}

/// A server's task that waits for the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    /// The desk's name for the server (its connection).
    pub server: String,
    /// The task.
    pub task_id: String,
    /// The conversation it was started in.
    pub conversation: String,
    /// Whose inbox it waits in ([`crate::events::Events::owner_for`] its conversation).
    pub owner: String,
    /// When the person was first asked.
    pub asked: SystemTime,
    /// When the person's time to answer ends.
    pub until: SystemTime,
    /// The desk that follows it, on a database desks share (`None`: whichever starts next).
    pub desk: Option<String>,
}

/// The desk's database.
#[derive(Debug, Clone)]
pub struct DeskStore {
    pool: Pool,
}

/// The file of the SQLite database at `url` (`sqlite://data/desk.sqlite?mode=rwc` →
/// `data/desk.sqlite`).
pub fn sqlite_file(url: &str) -> std::path::PathBuf {
    let path = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    std::path::PathBuf::from(path.split('?').next().unwrap_or(path))
}

/// Make the database file readable by its user only: it names the tasks that wait for the
/// person, and a task's id is what answers it.
fn only_yours(url: &str) {
    if sql_pool::is_memory(url) || sql_pool::is_postgres(url) {
        return;
    }
    let path = sqlite_file(url);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for file in [
            path.to_path_buf(),
            path.with_extension("sqlite-wal"),
            path.with_extension("sqlite-shm"),
        ] {
            if file.exists()
                && let Err(error) =
                    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
            {
                tracing::warn!(file = %file.display(), %error, "could not make the desk's database private");
            }
        }
    }
}

fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn time_of(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

impl DeskStore {
    /// Open the database at `url` (a SQLite file, created if missing, or a PostgreSQL
    /// database, which must exist) and bring its schema up to date.
    pub async fn open(url: &str) -> Result<DeskStore, StoreError> {
        let pool = sql_pool::open_migrated!(url, StoreError).await?;
        only_yours(url);
        Ok(DeskStore { pool })
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        on_pool!(&self.pool, pool => {
            sqlx::query("SELECT 1").execute(pool).await?;
        });
        Ok(())
    }

    /// Whether the database is PostgreSQL, which other desks may share.
    pub fn is_shared(&self) -> bool {
        self.pool.is_shared()
    }

    /// Keep a new session.
    pub async fn save_session(&self, session: &StoredSession) -> Result<(), StoreError> {
        let sql = self.pool.sql(
            "INSERT INTO desk_sessions (digest, person, until_ms) VALUES (?, ?, ?) \
             ON CONFLICT (digest) DO UPDATE SET person = excluded.person, until_ms = excluded.until_ms",
        );
        on_pool!(&self.pool, pool => {
            sqlx::query(&sql)
                .bind(&session.digest)
                .bind(&session.person)
                .bind(millis(session.until))
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Forget a session (signed out, or pushed out by newer ones) and its conversations.
    pub async fn forget_session(&self, digest: &str) -> Result<(), StoreError> {
        let turns = self.pool.sql(
            "DELETE FROM desk_turns WHERE conversation IN \
             (SELECT id FROM desk_conversations WHERE session_digest = ?)",
        );
        let conversations = self
            .pool
            .sql("DELETE FROM desk_conversations WHERE session_digest = ?");
        let session = self.pool.sql("DELETE FROM desk_sessions WHERE digest = ?");
        on_pool!(&self.pool, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query(&turns).bind(digest).execute(&mut *tx).await?;
            sqlx::query(&conversations).bind(digest).execute(&mut *tx).await?;
            sqlx::query(&session).bind(digest).execute(&mut *tx).await?;
            tx.commit().await?;
        });
        Ok(())
    }

    /// The sessions that live at `now`, oldest first (the ended ones are dropped with their
    /// conversations).
    pub async fn sessions(&self, now: SystemTime) -> Result<Vec<StoredSession>, StoreError> {
        let now = millis(now);
        let turns = self.pool.sql(
            "DELETE FROM desk_turns WHERE conversation IN (SELECT c.id FROM desk_conversations c \
             JOIN desk_sessions s ON s.digest = c.session_digest WHERE s.until_ms <= ?)",
        );
        let conversations = self.pool.sql(
            "DELETE FROM desk_conversations WHERE session_digest IN \
             (SELECT digest FROM desk_sessions WHERE until_ms <= ?)",
        );
        let sessions = self
            .pool
            .sql("DELETE FROM desk_sessions WHERE until_ms <= ?");
        let live = "SELECT digest, person, until_ms FROM desk_sessions ORDER BY until_ms, rowid";
        let rows: Vec<(String, String, i64)> = on_pool!(&self.pool, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query(&turns).bind(now).execute(&mut *tx).await?;
            sqlx::query(&conversations).bind(now).execute(&mut *tx).await?;
            sqlx::query(&sessions).bind(now).execute(&mut *tx).await?;
            let rows = sqlx::query_as(live).fetch_all(&mut *tx).await?;
            tx.commit().await?;
            rows
        });
        Ok(rows
            .into_iter()
            .map(|(digest, person, until)| StoredSession {
                digest,
                person,
                until: time_of(until),
            })
            .collect())
    }

    /// Keep a conversation made for the session `digest` (its oldest beyond `keep` go, as
    /// they do from memory).
    pub async fn save_conversation(
        &self,
        id: &str,
        digest: &str,
        keep: usize,
    ) -> Result<(), StoreError> {
        let insert = self.pool.sql(
            "INSERT INTO desk_conversations (id, session_digest, made_ms) VALUES (?, ?, ?) \
             ON CONFLICT (id) DO NOTHING",
        );
        let kept = "(SELECT id FROM desk_conversations WHERE session_digest = ? \
                    ORDER BY made_ms DESC, rowid DESC LIMIT ?)";
        let turns = self
            .pool
            .sql(&format!(
                "DELETE FROM desk_turns WHERE conversation IN (SELECT id FROM desk_conversations \
             WHERE session_digest = ? AND id NOT IN {kept})"
            ))
            .into_owned();
        let trim = self
            .pool
            .sql(&format!(
                "DELETE FROM desk_conversations WHERE session_digest = ? AND id NOT IN {kept}"
            ))
            .into_owned();
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        on_pool!(&self.pool, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query(&insert)
                .bind(id)
                .bind(digest)
                .bind(millis(SystemTime::now()))
                .execute(&mut *tx)
                .await?;
            for sql in [&turns, &trim] {
                sqlx::query(sql)
                    .bind(digest)
                    .bind(digest)
                    .bind(keep)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// Every kept conversation and its session's digest, oldest first.
    pub async fn conversations(&self) -> Result<Vec<(String, String)>, StoreError> {
        let all = "SELECT id, session_digest FROM desk_conversations ORDER BY made_ms, rowid";
        Ok(on_pool!(&self.pool, pool => sqlx::query_as(all).fetch_all(pool).await?))
    }

    /// Keep a person who may sign in (`hash`: an Argon2id PHC string), or set their password.
    pub async fn save_person(&self, name: &str, hash: &str) -> Result<(), StoreError> {
        let sql = self.pool.sql(
            "INSERT INTO desk_people (name, hash) VALUES (?, ?) \
             ON CONFLICT (name) DO UPDATE SET hash = excluded.hash",
        );
        on_pool!(&self.pool, pool => {
            sqlx::query(&sql).bind(name).bind(hash).execute(pool).await?;
        });
        Ok(())
    }

    /// Everyone who may sign in, as (name, hash), by name.
    pub async fn people(&self) -> Result<Vec<(String, String)>, StoreError> {
        let all = "SELECT name, hash FROM desk_people ORDER BY name";
        Ok(on_pool!(&self.pool, pool => sqlx::query_as(all).fetch_all(pool).await?))
    }

    /// Keep a task that waits for the person (once: a second question of the same task keeps
    /// the first's row).
    pub async fn save_wait(&self, wait: &Wait) -> Result<(), StoreError> {
        let sql = self.pool.sql(
            "INSERT INTO desk_waits \
             (server, task_id, conversation, owner, asked_ms, until_ms, desk) \
             VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (server, task_id) DO NOTHING",
        );
        on_pool!(&self.pool, pool => {
            sqlx::query(&sql)
                .bind(&wait.server)
                .bind(&wait.task_id)
                .bind(&wait.conversation)
                .bind(&wait.owner)
                .bind(millis(wait.asked))
                .bind(millis(wait.until))
                .bind(&wait.desk)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// The task ended (or the desk stopped following it): it waits no more.
    pub async fn forget_wait(&self, server: &str, task_id: &str) -> Result<(), StoreError> {
        let sql = self
            .pool
            .sql("DELETE FROM desk_waits WHERE server = ? AND task_id = ?");
        on_pool!(&self.pool, pool => {
            sqlx::query(&sql).bind(server).bind(task_id).execute(pool).await?;
        });
        Ok(())
    }

    /// Every task that waits for the person, oldest first.
    pub async fn waits(&self) -> Result<Vec<Wait>, StoreError> {
        let all = "SELECT server, task_id, conversation, owner, asked_ms, until_ms, desk \
                   FROM desk_waits ORDER BY asked_ms, rowid";
        let rows: Vec<WaitRow> =
            on_pool!(&self.pool, pool => sqlx::query_as(all).fetch_all(pool).await?);
        Ok(rows.into_iter().map(wait_of).collect())
    }

    /// The tasks that wait for the person and that no live desk follows (none named, or its
    /// desk's lease ran out at `now`), oldest first: for a desk to take over.
    pub async fn orphan_waits(&self, now: SystemTime) -> Result<Vec<Wait>, StoreError> {
        let sql = self.pool.sql(
            "SELECT server, task_id, conversation, owner, asked_ms, until_ms, desk \
             FROM desk_waits w WHERE NOT EXISTS (SELECT 1 FROM desk_instances d \
             WHERE d.id = w.desk AND d.alive_until_ms > ?) ORDER BY asked_ms, rowid",
        );
        let rows: Vec<WaitRow> = on_pool!(&self.pool, pool => {
            sqlx::query_as(&sql).bind(millis(now)).fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(wait_of).collect())
    }

    /// Make `desk` the follower of `wait`, if the desk it names still does (`wait.desk`):
    /// whether it did (of desks racing for one task, one wins).
    pub async fn claim_wait(&self, wait: &Wait, desk: &str) -> Result<bool, StoreError> {
        let sql = self.pool.sql(
            "UPDATE desk_waits SET desk = ? WHERE server = ? AND task_id = ? \
             AND COALESCE(desk, '') = ?",
        );
        let done = on_pool!(&self.pool, pool => {
            sqlx::query(&sql)
                .bind(desk)
                .bind(&wait.server)
                .bind(&wait.task_id)
                .bind(wait.desk.as_deref().unwrap_or(""))
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done == 1)
    }

    /// Let go of `wait` (which the desk it names no longer follows): another look, at any
    /// desk, takes it.
    pub async fn release_wait(&self, wait: &Wait) -> Result<(), StoreError> {
        let sql = self
            .pool
            .sql("UPDATE desk_waits SET desk = NULL WHERE server = ? AND task_id = ? AND desk = ?");
        on_pool!(&self.pool, pool => {
            sqlx::query(&sql)
                .bind(&wait.server)
                .bind(&wait.task_id)
                .bind(&wait.desk)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// `desk` lives until `until` (its lease on the tasks it follows).
    pub async fn desk_alive(&self, desk: &str, until: SystemTime) -> Result<(), StoreError> {
        let sql = self.pool.sql(
            "INSERT INTO desk_instances (id, alive_until_ms) VALUES (?, ?) \
             ON CONFLICT (id) DO UPDATE SET alive_until_ms = excluded.alive_until_ms",
        );
        on_pool!(&self.pool, pool => {
            sqlx::query(&sql).bind(desk).bind(millis(until)).execute(pool).await?;
        });
        Ok(())
    }

    /// The desks whose lease lives at `now` (rows of desks gone for a day are dropped).
    pub async fn live_desks(&self, now: SystemTime) -> Result<Vec<String>, StoreError> {
        let day = millis(now).saturating_sub(24 * 60 * 60 * 1000);
        let gone = self
            .pool
            .sql("DELETE FROM desk_instances WHERE alive_until_ms < ?");
        let live = self
            .pool
            .sql("SELECT id FROM desk_instances WHERE alive_until_ms > ? ORDER BY id");
        Ok(on_pool!(&self.pool, pool => {
            sqlx::query(&gone).bind(day).execute(pool).await?;
            sqlx::query_scalar(&live).bind(millis(now)).fetch_all(pool).await?
        }))
    }

    /// The live session whose cookie has the digest `digest`, and its conversations (oldest
    /// first), as another desk of the same database made them.
    pub async fn session(
        &self,
        digest: &str,
        now: SystemTime,
    ) -> Result<Option<(StoredSession, Vec<String>)>, StoreError> {
        let session = self
            .pool
            .sql("SELECT person, until_ms FROM desk_sessions WHERE digest = ? AND until_ms > ?");
        let conversations = self.pool.sql(
            "SELECT id FROM desk_conversations WHERE session_digest = ? ORDER BY made_ms, rowid",
        );
        let found: Option<(String, i64)> = on_pool!(&self.pool, pool => {
            sqlx::query_as(&session).bind(digest).bind(millis(now)).fetch_optional(pool).await?
        });
        let Some((person, until)) = found else {
            return Ok(None);
        };
        let ids: Vec<String> = on_pool!(&self.pool, pool => {
            sqlx::query_scalar(&conversations).bind(digest).fetch_all(pool).await?
        });
        let session = StoredSession {
            digest: digest.to_owned(),
            person,
            until: time_of(until),
        };
        Ok(Some((session, ids)))
    }

    /// The live session `conversation` was made for (at whichever desk), if any.
    pub async fn session_of_conversation(
        &self,
        conversation: &str,
        now: SystemTime,
    ) -> Result<Option<StoredSession>, StoreError> {
        let sql = self.pool.sql(
            "SELECT s.digest, s.person, s.until_ms FROM desk_conversations c \
             JOIN desk_sessions s ON s.digest = c.session_digest \
             WHERE c.id = ? AND s.until_ms > ?",
        );
        let found: Option<(String, String, i64)> = on_pool!(&self.pool, pool => {
            sqlx::query_as(&sql).bind(conversation).bind(millis(now)).fetch_optional(pool).await?
        });
        Ok(found.map(|(digest, person, until)| StoredSession {
            digest,
            person,
            until: time_of(until),
        }))
    }

    /// Keep a turn of `conversation` (its oldest beyond `keep` go).
    pub async fn save_turn(
        &self,
        conversation: &str,
        (asked, answered): (&str, &str),
        keep: usize,
    ) -> Result<(), StoreError> {
        let insert = self
            .pool
            .sql("INSERT INTO desk_turns (conversation, asked, answered) VALUES (?, ?, ?)");
        let trim = self.pool.sql(
            "DELETE FROM desk_turns WHERE conversation = ? AND rowid NOT IN \
             (SELECT rowid FROM desk_turns WHERE conversation = ? ORDER BY rowid DESC LIMIT ?)",
        );
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        on_pool!(&self.pool, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query(&insert)
                .bind(conversation)
                .bind(asked)
                .bind(answered)
                .execute(&mut *tx)
                .await?;
            sqlx::query(&trim)
                .bind(conversation)
                .bind(conversation)
                .bind(keep)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        Ok(())
    }

    /// The kept turns of `conversation`, oldest first.
    pub async fn turns(&self, conversation: &str) -> Result<Vec<(String, String)>, StoreError> {
        let sql = self
            .pool
            .sql("SELECT asked, answered FROM desk_turns WHERE conversation = ? ORDER BY rowid");
        Ok(on_pool!(&self.pool, pool => {
            sqlx::query_as(&sql).bind(conversation).fetch_all(pool).await?
        }))
    }

    /// The PostgreSQL pool of a database desks share (`None` on SQLite).
    pub(crate) fn shared_pool(&self) -> Option<&sqlx::PgPool> {
        self.pool.postgres()
    }
}

/// A row of `desk_waits`.
type WaitRow = (String, String, String, String, i64, i64, Option<String>);

fn wait_of((server, task_id, conversation, owner, asked, until, desk): WaitRow) -> Wait {
    Wait {
        server,
        task_id,
        conversation,
        owner,
        asked: time_of(asked),
        until: time_of(until),
        desk,
    }
}
