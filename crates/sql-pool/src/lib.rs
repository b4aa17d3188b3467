//! The one way the workspace's stores open their database, so the two stores cannot drift
//! apart: SQLite (the embedded default) or PostgreSQL (shared by many instances).
//!
//! - A file (`sqlite://path`): created if missing, write-ahead log with `synchronous=NORMAL`
//!   (a commit survives the process crashing, and the file never corrupts; a power cut may
//!   lose the last commits, which are synced at each checkpoint instead of each commit),
//!   foreign keys on, a 5-second busy timeout, four connections.
//! - `sqlite::memory:` (or `mode=memory`): each connection to an in-memory database is a
//!   database of its own, so the pool keeps exactly one connection, forever, and never
//!   health-checks it (there is nothing to reconnect to).
//! - `postgres://…`: eight connections ([`connect_postgres`]); the database must exist.
//!
//! A store holds a [`Pool`] of either backend. Queries are written once with `?` placeholders;
//! [`Pool::sql`] (through [`numbered`]) rewrites them as PostgreSQL wants them (`$1`, `$2`, …),
//! and [`on_pool!`] runs the same code on whichever pool it is.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// How long a write waits for another writer before it fails with "database is locked".
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections to a database file (SQLite serialises writers; readers run side by side).
pub const FILE_CONNECTIONS: u32 = 4;

/// A pool on either backend.
#[derive(Debug, Clone)]
pub enum Pool {
    /// SQLite: one process serves the database.
    Sqlite(SqlitePool),
    /// PostgreSQL: instances may share the database.
    Postgres(PgPool),
}

/// Run `$body` with `$pool` bound to the pool inside `$on` (a `&Pool`), whichever backend it is.
#[macro_export]
macro_rules! on_pool {
    ($on:expr, $pool:ident => $body:expr) => {
        match $on {
            $crate::Pool::Sqlite($pool) => $body,
            $crate::Pool::Postgres($pool) => $body,
        }
    };
}

impl Pool {
    /// Whether the database is shared with other processes by design (PostgreSQL), so that
    /// nothing read from it may be kept in one process's memory.
    pub fn is_shared(&self) -> bool {
        matches!(self, Pool::Postgres(_))
    }

    /// The PostgreSQL pool, when it is one.
    pub fn postgres(&self) -> Option<&PgPool> {
        match self {
            Pool::Postgres(pool) => Some(pool),
            Pool::Sqlite(_) => None,
        }
    }

    /// `text` with its `?` placeholders as the backend writes them (`$1, $2, …` on PostgreSQL).
    pub fn sql<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        match self {
            Pool::Sqlite(_) => std::borrow::Cow::Borrowed(text),
            Pool::Postgres(_) => std::borrow::Cow::Owned(numbered(text)),
        }
    }
}

/// Connections each instance keeps to a PostgreSQL server.
pub const POSTGRES_CONNECTIONS: u32 = 8;

/// Whether `url` names a PostgreSQL database.
pub fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Open a pool on the PostgreSQL database at `url`.
pub async fn connect_postgres(url: &str) -> Result<PgPool, sqlx::Error> {
    PgPoolOptions::new()
        .max_connections(POSTGRES_CONNECTIONS)
        .connect(url)
        .await
}

/// `text` with its `?` placeholders numbered the PostgreSQL way (`$1, $2, …`). Write queries
/// with plain `?` only (no `?NNN`), and no `?` inside string literals.
pub fn numbered(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut n = 0;
    for c in text.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// Create a new, empty database named `PREFIX_PID_N_NANOS` on the PostgreSQL server at
/// `server` (a URL without a database name) and return its URL: a database of its own for
/// one test, or for one scratch run.
pub async fn create_database(server: &str, prefix: &str) -> Result<String, sqlx::Error> {
    use sqlx::Connection;
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let server = server.trim_end_matches('/');
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let name = format!(
        "{prefix}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    );
    let mut admin = sqlx::PgConnection::connect(&format!("{server}/postgres")).await?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await?;
    admin.close().await?;
    Ok(format!("{server}/{name}"))
}

/// Whether `url` names an in-memory database.
pub fn is_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

/// The URL of the database file `name` in `dir` (`data` when `dir` is empty), creating `dir`
/// if it is missing.
pub fn file_url(
    dir: &std::path::Path,
    name: &str,
) -> Result<String, (std::path::PathBuf, std::io::Error)> {
    let dir = if dir.as_os_str().is_empty() {
        std::path::Path::new("data")
    } else {
        dir
    };
    std::fs::create_dir_all(dir).map_err(|e| (dir.to_path_buf(), e))?;
    Ok(format!("sqlite://{}", dir.join(name).display()))
}

/// Open the pool for `url` (see the crate documentation for the settings).
pub async fn connect(url: &str) -> Result<SqlitePool, sqlx::Error> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .foreign_keys(true)
        .busy_timeout(BUSY_TIMEOUT);
    if is_memory(url) {
        SqlitePoolOptions::new()
            .test_before_acquire(false)
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
    } else {
        SqlitePoolOptions::new()
            .max_connections(FILE_CONNECTIONS)
            .connect_with(
                options
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal),
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(
            numbered("UPDATE t SET a = ? WHERE b = ? AND c IS NOT DISTINCT FROM ?"),
            "UPDATE t SET a = $1 WHERE b = $2 AND c IS NOT DISTINCT FROM $3"
        );
        assert_eq!(numbered("SELECT 1"), "SELECT 1");
        assert!(is_postgres("postgresql://h/db") && !is_postgres("sqlite://x"));
    }

    #[tokio::test]
    async fn an_in_memory_database_is_one_database_for_the_whole_pool() {
        let pool = connect("sqlite::memory:").await.expect("pool");
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&pool)
            .await
            .expect("create");
        // Many acquisitions later, the table is still there: the same connection every time.
        for _ in 0..5 {
            let mut connection = pool.acquire().await.expect("acquire");
            sqlx::query("INSERT INTO t VALUES (1)")
                .execute(&mut *connection)
                .await
                .expect("insert");
        }
        let (rows,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM t")
            .fetch_one(&pool)
            .await
            .expect("count");
        assert_eq!(rows, 5);
    }

    #[tokio::test]
    async fn a_file_database_is_created_in_wal_mode_with_foreign_keys() {
        let dir = std::env::temp_dir().join(format!("sql-pool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("test.sqlite");
        let _ = std::fs::remove_file(&file);
        let pool = connect(&format!("sqlite://{}", file.display()))
            .await
            .expect("pool");
        let (mode,): (String,) = sqlx::query_as("PRAGMA journal_mode")
            .fetch_one(&pool)
            .await
            .expect("journal mode");
        let (keys,): (i64,) = sqlx::query_as("PRAGMA foreign_keys")
            .fetch_one(&pool)
            .await
            .expect("foreign keys");
        let (synchronous,): (i64,) = sqlx::query_as("PRAGMA synchronous")
            .fetch_one(&pool)
            .await
            .expect("synchronous");
        assert_eq!((mode.as_str(), keys, synchronous), ("wal", 1, 1));
        assert!(file.exists());
        pool.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
