//! [`SqlTaskStore`]: tasks in SQLite (one server, surviving restarts) or PostgreSQL (every
//! instance of a server), one table `backchannel_tasks`, queries written once for both.
//!
//! Open questions and received answers are JSON columns; the steps that change them read the
//! row and write it back only if no one changed it meanwhile (`rev`), so a `tasks/update` and a
//! new question, or a `tasks/cancel`, never overwrite one another.

use std::collections::BTreeMap;

use serde_json::Value;
use sql_pool::{Pool, on_pool};
use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;

use super::{Held, StoreFuture, StoreResult, TaskRecord, TaskState, TaskStore, TaskStoreError};

const COLUMNS: &str = "id, owner, tool, request, answers, state, status_message, created_ms, \
    updated_ms, ttl_ms, poll_ms, open, responses, outcome, cancel_requested, version, rev, \
    lease_owner, lease_until_ms";

const RUNNING: &str = "state IN ('working', 'input_required')";

/// How often a changed row is read again before the change gives up (only under heavy
/// contention on one task).
const MAX_RETRIES: usize = 32;

/// Tasks in a SQL database (see the module documentation).
#[derive(Debug, Clone)]
pub struct SqlTaskStore {
    pool: Pool,
}

fn failed(error: impl std::fmt::Display) -> TaskStoreError {
    TaskStoreError(error.to_string())
}

/// Milliseconds as the database keeps them.
fn ms(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

impl SqlTaskStore {
    /// Open `url` (a SQLite URL or `postgres://…`) and create the table if it is missing.
    pub async fn open(url: &str) -> StoreResult<Self> {
        let pool = if sql_pool::is_postgres(url) {
            Pool::Postgres(sql_pool::connect_postgres(url).await.map_err(failed)?)
        } else {
            Pool::Sqlite(sql_pool::connect(url).await.map_err(failed)?)
        };
        Self::on(pool).await
    }

    /// Keep tasks in `pool`'s database (for example the server's own), creating the table if
    /// it is missing (on PostgreSQL under an advisory lock, so instances may start together).
    pub async fn on(pool: Pool) -> StoreResult<Self> {
        let statements = [
            "CREATE TABLE IF NOT EXISTS backchannel_tasks (\
             id TEXT PRIMARY KEY, owner TEXT NOT NULL, tool TEXT NOT NULL, \
             request TEXT NOT NULL, answers TEXT NOT NULL, state TEXT NOT NULL, \
             status_message TEXT, created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL, \
             ttl_ms BIGINT, expires_ms BIGINT, poll_ms BIGINT NOT NULL, open TEXT NOT NULL, \
             responses TEXT NOT NULL, outcome TEXT, cancel_requested BOOLEAN NOT NULL, \
             version BIGINT NOT NULL, rev BIGINT NOT NULL, lease_owner TEXT NOT NULL, \
             lease_until_ms BIGINT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS backchannel_tasks_lease \
             ON backchannel_tasks (lease_owner, lease_until_ms)",
            "CREATE INDEX IF NOT EXISTS backchannel_tasks_expiry \
             ON backchannel_tasks (expires_ms)",
            // A task's recorded steps (`Ctx::step`): one row each, written once.
            "CREATE TABLE IF NOT EXISTS backchannel_task_steps (\
             task_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, \
             PRIMARY KEY (task_id, name))",
        ];
        match &pool {
            Pool::Postgres(pg) => {
                let mut tx = pg.begin().await.map_err(failed)?;
                sqlx::query("SELECT pg_advisory_xact_lock(7340004)")
                    .execute(&mut *tx)
                    .await
                    .map_err(failed)?;
                for statement in statements {
                    sqlx::query(statement)
                        .execute(&mut *tx)
                        .await
                        .map_err(failed)?;
                }
                tx.commit().await.map_err(failed)?;
            }
            Pool::Sqlite(lite) => {
                for statement in statements {
                    sqlx::query(statement).execute(lite).await.map_err(failed)?;
                }
            }
        }
        Ok(Self { pool })
    }

    /// The pool it uses.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Read a row and write back `change`'s version of it, if no one wrote it meanwhile.
    /// `change` returns `None` to leave the row as it is (the answer is then `Ok(false)`).
    async fn change(
        pool: Pool,
        id: String,
        now_ms: u64,
        change: impl Fn(&mut TaskRecord) -> bool + Send,
    ) -> StoreResult<bool> {
        let select = pool.sql("SELECT rev, state, open, responses, cancel_requested, version FROM backchannel_tasks WHERE id = ?").into_owned();
        let update = pool
            .sql(
                "UPDATE backchannel_tasks SET state = ?, open = ?, responses = ?, \
                 cancel_requested = ?, version = ?, updated_ms = ?, rev = rev + 1 \
                 WHERE id = ? AND rev = ?",
            )
            .into_owned();
        for _ in 0..MAX_RETRIES {
            let row = on_pool!(&pool, p => sqlx::query(&select).bind(&id).fetch_optional(p).await.map(|row| row.map(|r| Partial::read(&r))))
                .map_err(failed)?;
            let Some(partial) = row.transpose()? else {
                return Ok(false);
            };
            let mut record = partial.record;
            if !change(&mut record) {
                return Ok(false);
            }
            let done = on_pool!(&pool, p => sqlx::query(&update)
                .bind(record.state.as_str())
                .bind(json(&record.open))
                .bind(json(&record.responses))
                .bind(record.cancel_requested)
                .bind(ms(record.version))
                .bind(ms(now_ms))
                .bind(&id)
                .bind(partial.rev)
                .execute(p)
                .await
                .map(|done| done.rows_affected()))
            .map_err(failed)?;
            if done == 1 {
                return Ok(true);
            }
        }
        Err(TaskStoreError(format!(
            "task {id} changed {MAX_RETRIES} times while it was being updated"
        )))
    }
}

/// Whether `look` (a `SELECT 1 … LIMIT 1` with one `?`, bound to `now_ms`) finds a row: the
/// read every tick does before it writes (a read takes no write lock on SQLite).
async fn any_row(pool: &Pool, look: &str, now_ms: u64) -> StoreResult<bool> {
    let look = pool.sql(look);
    on_pool!(pool, p => sqlx::query(&look)
        .bind(ms(now_ms))
        .fetch_optional(p)
        .await
        .map(|row| row.is_some()))
    .map_err(failed)
}

/// What a change reads: the row's revision and the fields it may change.
struct Partial {
    rev: i64,
    record: TaskRecord,
}

/// A row of either backend.
trait Columns {
    fn text(&self, column: &str) -> StoreResult<String>;
    fn maybe_text(&self, column: &str) -> StoreResult<Option<String>>;
    fn int(&self, column: &str) -> StoreResult<i64>;
    fn maybe_int(&self, column: &str) -> StoreResult<Option<i64>>;
    fn flag(&self, column: &str) -> StoreResult<bool>;
}

macro_rules! columns {
    ($($row:ty),*) => {$(
        impl Columns for $row {
            fn text(&self, column: &str) -> StoreResult<String> {
                self.try_get(column).map_err(failed)
            }
            fn maybe_text(&self, column: &str) -> StoreResult<Option<String>> {
                self.try_get(column).map_err(failed)
            }
            fn int(&self, column: &str) -> StoreResult<i64> {
                self.try_get(column).map_err(failed)
            }
            fn maybe_int(&self, column: &str) -> StoreResult<Option<i64>> {
                self.try_get(column).map_err(failed)
            }
            fn flag(&self, column: &str) -> StoreResult<bool> {
                self.try_get(column).map_err(failed)
            }
        }
    )*};
}
columns!(SqliteRow, PgRow);

fn parse_json<T: serde::de::DeserializeOwned>(text: &str, column: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| TaskStoreError(format!("unreadable {column}: {e}")))
}

fn state(row: &impl Columns) -> StoreResult<TaskState> {
    let name = row.text("state")?;
    TaskState::parse(&name).ok_or_else(|| TaskStoreError(format!("unknown task state {name:?}")))
}

fn unsigned(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

impl Partial {
    fn read(row: &impl Columns) -> StoreResult<Self> {
        Ok(Self {
            rev: row.int("rev")?,
            record: TaskRecord {
                state: state(row)?,
                open: parse_json(&row.text("open")?, "open")?,
                responses: parse_json(&row.text("responses")?, "responses")?,
                cancel_requested: row.flag("cancel_requested")?,
                version: unsigned(row.int("version")?),
                ..TaskRecord::blank()
            },
        })
    }
}

fn record(row: &impl Columns) -> StoreResult<TaskRecord> {
    Ok(TaskRecord {
        id: row.text("id")?,
        owner: row.text("owner")?,
        tool: row.text("tool")?,
        request: row.text("request")?,
        answers: row.text("answers")?,
        state: state(row)?,
        status_message: row.maybe_text("status_message")?,
        created_ms: unsigned(row.int("created_ms")?),
        updated_ms: unsigned(row.int("updated_ms")?),
        ttl_ms: row.maybe_int("ttl_ms")?.map(unsigned),
        poll_ms: unsigned(row.int("poll_ms")?),
        open: parse_json(&row.text("open")?, "open")?,
        responses: parse_json(&row.text("responses")?, "responses")?,
        outcome: row.maybe_text("outcome")?,
        cancel_requested: row.flag("cancel_requested")?,
        version: unsigned(row.int("version")?),
        lease_owner: row.text("lease_owner")?,
        lease_until_ms: unsigned(row.int("lease_until_ms")?),
    })
}

impl TaskRecord {
    /// An empty record, for partial reads.
    fn blank() -> Self {
        Self {
            id: String::new(),
            owner: String::new(),
            tool: String::new(),
            request: String::new(),
            answers: String::new(),
            state: TaskState::Working,
            status_message: None,
            created_ms: 0,
            updated_ms: 0,
            ttl_ms: None,
            poll_ms: 0,
            open: BTreeMap::new(),
            responses: BTreeMap::new(),
            outcome: None,
            cancel_requested: false,
            version: 0,
            lease_owner: String::new(),
            lease_until_ms: 0,
        }
    }
}

impl TaskStore for SqlTaskStore {
    fn create(&self, task: TaskRecord) -> StoreFuture<()> {
        let pool = self.pool.clone();
        Box::pin(async move {
            let sql = pool.sql(
                "INSERT INTO backchannel_tasks (id, owner, tool, request, answers, state, \
                 status_message, created_ms, updated_ms, ttl_ms, expires_ms, poll_ms, open, \
                 responses, outcome, cancel_requested, version, rev, lease_owner, \
                 lease_until_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, \
                 ?, ?)",
            );
            let expires = task
                .ttl_ms
                .map(|ttl| ms(task.created_ms.saturating_add(ttl)));
            on_pool!(&pool, p => sqlx::query(&sql)
                .bind(&task.id)
                .bind(&task.owner)
                .bind(&task.tool)
                .bind(&task.request)
                .bind(&task.answers)
                .bind(task.state.as_str())
                .bind(&task.status_message)
                .bind(ms(task.created_ms))
                .bind(ms(task.updated_ms))
                .bind(task.ttl_ms.map(ms))
                .bind(expires)
                .bind(ms(task.poll_ms))
                .bind(json(&task.open))
                .bind(json(&task.responses))
                .bind(&task.outcome)
                .bind(task.cancel_requested)
                .bind(ms(task.version))
                .bind(&task.lease_owner)
                .bind(ms(task.lease_until_ms))
                .execute(p)
                .await
                .map(drop))
            .map_err(failed)
        })
    }

    fn get(&self, id: &str, now_ms: u64) -> StoreFuture<Option<TaskRecord>> {
        let pool = self.pool.clone();
        let id = id.to_owned();
        Box::pin(async move {
            let sql = pool
                .sql(&format!(
                    "SELECT {COLUMNS} FROM backchannel_tasks \
                 WHERE id = ? AND (expires_ms IS NULL OR expires_ms > ?)"
                ))
                .into_owned();
            on_pool!(&pool, p => sqlx::query(&sql)
                .bind(&id)
                .bind(ms(now_ms))
                .fetch_optional(p)
                .await
                .map_err(failed)?
                .map(|row| record(&row))
                .transpose())
        })
    }

    fn ask(&self, id: &str, open: BTreeMap<String, Value>, now_ms: u64) -> StoreFuture<bool> {
        let pool = self.pool.clone();
        let id = id.to_owned();
        Box::pin(Self::change(pool, id, now_ms, move |task| {
            task.open_questions(open.clone())
        }))
    }

    fn answer(
        &self,
        id: &str,
        responses: BTreeMap<String, Value>,
        now_ms: u64,
    ) -> StoreFuture<bool> {
        let pool = self.pool.clone();
        let id = id.to_owned();
        Box::pin(Self::change(pool, id, now_ms, move |task| {
            task.take_answers(&responses);
            true
        }))
    }

    fn save_answers(&self, id: &str, answers: String, now_ms: u64) -> StoreFuture<()> {
        let pool = self.pool.clone();
        let id = id.to_owned();
        Box::pin(async move {
            let sql = pool.sql(&format!(
                "UPDATE backchannel_tasks SET answers = ?, updated_ms = ? WHERE id = ? AND {RUNNING}"
            )).into_owned();
            on_pool!(&pool, p => sqlx::query(&sql)
                .bind(&answers)
                .bind(ms(now_ms))
                .bind(&id)
                .execute(p)
                .await
                .map(drop))
            .map_err(failed)
        })
    }

    fn set_status(&self, id: &str, message: String, now_ms: u64) -> StoreFuture<bool> {
        let pool = self.pool.clone();
        let id = id.to_owned();
        Box::pin(async move {
            let sql = pool.sql(&format!(
                "UPDATE backchannel_tasks SET status_message = ?, updated_ms = ? WHERE id = ? AND {RUNNING}"
            )).into_owned();
            on_pool!(&pool, p => sqlx::query(&sql)
                .bind(&message)
                .bind(ms(now_ms))
                .bind(&id)
                .execute(p)
                .await
                .map(|done| done.rows_affected() == 1))
            .map_err(failed)
        })
    }

    fn cancel(&self, id: &str, now_ms: u64) -> StoreFuture<bool> {
        let pool = self.pool.clone();
        let id = id.to_owned();
        Box::pin(async move {
            let exists = pool.sql("SELECT 1 AS one FROM backchannel_tasks WHERE id = ?");
            let update = pool
                .sql(&format!(
                    "UPDATE backchannel_tasks SET cancel_requested = ?, open = '{{}}', \
                 state = 'working', version = version + 1, rev = rev + 1, updated_ms = ? \
                 WHERE id = ? AND {RUNNING}"
                ))
                .into_owned();
            on_pool!(&pool, p => {
                sqlx::query(&update)
                    .bind(true)
                    .bind(ms(now_ms))
                    .bind(&id)
                    .execute(p)
                    .await
                    .map_err(failed)?;
                // A finished task acknowledges the cancel and stays as it was.
                let found = sqlx::query(&exists).bind(&id).fetch_optional(p).await.map_err(failed)?;
                Ok(found.is_some())
            })
        })
    }

    fn finish(
        &self,
        id: &str,
        lease_owner: &str,
        state: TaskState,
        outcome: Option<String>,
        now_ms: u64,
    ) -> StoreFuture<bool> {
        let pool = self.pool.clone();
        let id = id.to_owned();
        let lease_owner = lease_owner.to_owned();
        Box::pin(async move {
            let sql = pool
                .sql(&format!(
                    "UPDATE backchannel_tasks SET state = ?, outcome = ?, open = '{{}}', \
                 updated_ms = ?, rev = rev + 1 WHERE id = ? AND lease_owner = ? AND {RUNNING}"
                ))
                .into_owned();
            on_pool!(&pool, p => sqlx::query(&sql)
                .bind(state.as_str())
                .bind(&outcome)
                .bind(ms(now_ms))
                .bind(&id)
                .bind(&lease_owner)
                .execute(p)
                .await
                .map(|done| done.rows_affected() == 1))
            .map_err(failed)
        })
    }

    fn renew(&self, lease_owner: &str, until_ms: u64) -> StoreFuture<Vec<Held>> {
        let pool = self.pool.clone();
        let lease_owner = lease_owner.to_owned();
        Box::pin(async move {
            let sql = pool
                .sql(&format!(
                    "UPDATE backchannel_tasks SET lease_until_ms = ? \
                 WHERE lease_owner = ? AND {RUNNING} RETURNING id, version, cancel_requested"
                ))
                .into_owned();
            on_pool!(&pool, p => {
                let rows = sqlx::query(&sql)
                    .bind(ms(until_ms))
                    .bind(&lease_owner)
                    .fetch_all(p)
                    .await
                    .map_err(failed)?;
                rows.iter()
                    .map(|row| {
                        Ok(Held {
                            id: row.text("id")?,
                            version: unsigned(row.int("version")?),
                            cancel_requested: row.flag("cancel_requested")?,
                        })
                    })
                    .collect()
            })
        })
    }

    fn claim_expired(
        &self,
        lease_owner: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> StoreFuture<Vec<TaskRecord>> {
        let pool = self.pool.clone();
        let lease_owner = lease_owner.to_owned();
        Box::pin(async move {
            // Asked every tick by every instance: look first (a read takes no write lock), and
            // write only when there is something to take.
            let look = format!(
                "SELECT 1 AS one FROM backchannel_tasks \
                 WHERE {RUNNING} AND lease_until_ms < ? LIMIT 1"
            );
            if !any_row(&pool, &look, now_ms).await? {
                return Ok(Vec::new());
            }
            // On PostgreSQL a second instance's UPDATE waits for the first and then sees the
            // renewed lease, so it takes nothing.
            let sql = pool
                .sql(&format!(
                    "UPDATE backchannel_tasks SET lease_owner = ?, lease_until_ms = ? \
                 WHERE {RUNNING} AND lease_until_ms < ? RETURNING {COLUMNS}"
                ))
                .into_owned();
            on_pool!(&pool, p => {
                let rows = sqlx::query(&sql)
                    .bind(&lease_owner)
                    .bind(ms(until_ms))
                    .bind(ms(now_ms))
                    .fetch_all(p)
                    .await
                    .map_err(failed)?;
                rows.iter().map(record).collect()
            })
        })
    }

    fn sweep(&self, now_ms: u64) -> StoreFuture<u64> {
        let pool = self.pool.clone();
        Box::pin(async move {
            let look = "SELECT 1 AS one FROM backchannel_tasks \
                        WHERE expires_ms IS NOT NULL AND expires_ms <= ? LIMIT 1";
            if !any_row(&pool, look, now_ms).await? {
                return Ok(0);
            }
            let steps = pool.sql(
                "DELETE FROM backchannel_task_steps WHERE task_id IN (SELECT id FROM \
                 backchannel_tasks WHERE expires_ms IS NOT NULL AND expires_ms <= ?)",
            );
            let sql = pool.sql(
                "DELETE FROM backchannel_tasks WHERE expires_ms IS NOT NULL AND expires_ms <= ?",
            );
            on_pool!(&pool, p => async {
                let mut tx = p.begin().await?;
                sqlx::query(&steps).bind(ms(now_ms)).execute(&mut *tx).await?;
                let removed = sqlx::query(&sql)
                    .bind(ms(now_ms))
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                tx.commit().await.map(|()| removed)
            }.await)
            .map_err(failed)
        })
    }

    fn steps(&self, id: &str) -> StoreFuture<BTreeMap<String, String>> {
        let pool = self.pool.clone();
        let id = id.to_owned();
        Box::pin(async move {
            let sql = pool.sql("SELECT name, value FROM backchannel_task_steps WHERE task_id = ?");
            let rows: Vec<(String, String)> = on_pool!(&pool, p => sqlx::query_as(&sql)
                .bind(&id)
                .fetch_all(p)
                .await)
            .map_err(failed)?;
            Ok(rows.into_iter().collect())
        })
    }

    fn record_step(
        &self,
        id: &str,
        lease_owner: &str,
        name: &str,
        value: String,
    ) -> StoreFuture<bool> {
        let pool = self.pool.clone();
        let (id, lease_owner, name) = (id.to_owned(), lease_owner.to_owned(), name.to_owned());
        Box::pin(async move {
            // The fence and the record in one statement (no transaction held open across
            // awaits: a body's steps may run inside a stream its caller is not polling). On
            // PostgreSQL the task row is locked for share: a takeover (which rewrites
            // `lease_owner`) either commits first, and the row no longer matches, or waits for
            // this record and then reads it.
            let lock = match pool {
                Pool::Postgres(_) => " FOR SHARE",
                Pool::Sqlite(_) => "",
            };
            let insert = pool
                .sql(&format!(
                    "INSERT INTO backchannel_task_steps (task_id, name, value) \
                     SELECT id, ?, ? FROM backchannel_tasks \
                     WHERE id = ? AND lease_owner = ? AND {RUNNING}{lock} \
                     ON CONFLICT (task_id, name) DO NOTHING"
                ))
                .into_owned();
            let inserted = on_pool!(&pool, p => sqlx::query(&insert)
                .bind(&name)
                .bind(&value)
                .bind(&id)
                .bind(&lease_owner)
                .execute(p)
                .await
                .map(|done| done.rows_affected() == 1))
            .map_err(failed)?;
            if inserted {
                return Ok(true);
            }
            // Nothing inserted: recorded before (it keeps its first result), or fenced off.
            let held = pool
                .sql(&format!(
                    "SELECT 1 AS one FROM backchannel_tasks \
                     WHERE id = ? AND lease_owner = ? AND {RUNNING}"
                ))
                .into_owned();
            on_pool!(&pool, p => sqlx::query(&held)
                .bind(&id)
                .bind(&lease_owner)
                .fetch_optional(p)
                .await
                .map(|row| row.is_some()))
            .map_err(failed)
        })
    }
}
