//! The one way the workspace's stores open their database, so the two stores cannot drift
//! apart: SQLite (the embedded default) or PostgreSQL (shared by many instances).
//!
//! - A file (`sqlite://path`): created if missing, readable and writable by its owner only
//!   (mode 0600; SQLite gives its `-wal` and `-shm` files the database file's mode), write-ahead
//!   log with `synchronous=NORMAL`
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
//!
//! Beside a file's pool, a store may keep a [`Direct`] connection for the few statements on
//! its hot path: they run on the caller's thread instead of the pool's.

use std::str::FromStr;
use std::time::Duration;

/// The SQLite library [`Direct`] speaks through (the same SQLite as sqlx's).
pub use rusqlite;

use sqlx::migrate::{MigrateError, Migrator};
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

/// [`Pool::open`] with the calling crate's migrations, kept in `migrations/postgres` and
/// `migrations/sqlite` beside its `Cargo.toml`; failures become `$error`.
#[macro_export]
macro_rules! open_migrated {
    ($url:expr, $error:ty) => {
        $crate::Pool::open::<$error>(
            $url,
            &::sqlx::migrate!("./migrations/postgres"),
            &::sqlx::migrate!("./migrations/sqlite"),
        )
    };
}

/// Whether another instance seeded the database already, asked inside the seeding transaction
/// `$tx` on a pool `$on` (a `&Pool`): on a shared database the instances starting together wait
/// for one advisory lock (`$lock`) so that one seeds and the others then find `$table` full;
/// on a database of one's own, `false` at once. Errors go out with `?`.
#[macro_export]
macro_rules! seeded_elsewhere {
    ($on:expr, $tx:ident, $lock:literal, $table:literal) => {
        $on.is_shared() && {
            ::sqlx::query(concat!("SELECT pg_advisory_xact_lock(", $lock, ")"))
                .execute(&mut *$tx)
                .await?;
            let existing: i64 = ::sqlx::query_scalar(concat!("SELECT COUNT(*) FROM ", $table))
                .fetch_one(&mut *$tx)
                .await?;
            existing > 0
        }
    };
}

impl Pool {
    /// Connect to `url` (PostgreSQL for a `postgres://` URL, else SQLite, created if missing)
    /// and bring its schema up to date with that backend's migrations. On PostgreSQL the
    /// migrator takes an advisory lock, so instances starting together migrate once. The error
    /// is the caller's own, made from either kind of failure.
    pub async fn open<E>(url: &str, postgres: &Migrator, sqlite: &Migrator) -> Result<Pool, E>
    where
        E: From<sqlx::Error> + From<MigrateError>,
    {
        if is_postgres(url) {
            let pool = connect_postgres(url).await?;
            postgres.run(&pool).await?;
            Ok(Pool::Postgres(pool))
        } else {
            let pool = connect(url).await?;
            sqlite.run(&pool).await?;
            Ok(Pool::Sqlite(pool))
        }
    }

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

/// A connection of its own to a database file, whose statements run on the calling thread.
///
/// sqlx runs each SQLite statement on the connection's own thread and hands it there and back
/// over channels; for a statement over cached pages the two thread switches cost more than the
/// statement (a lookup by key or a one-row `UPDATE` takes microseconds). `Direct` runs such
/// statements where they are called, with the pool's settings (write-ahead log,
/// `synchronous=NORMAL`, foreign keys), so a commit is as durable as one through the pool: it
/// survives the process being killed.
///
/// Writes ([`Direct::write`]) share one transaction per batch: the first write opens it, the
/// writes that run before its commit join it, and one commit makes them all durable at once;
/// each waits for that commit before it returns (group commit: a busy server writes the pages
/// its writes share once per batch instead of once per write). Reads ([`Direct::read`]) and
/// writes share the one connection, whose page cache stays warm (a second connection would
/// reread its pages from the file after every commit of the first).
///
/// Every statement names its key (an order's ID, say), and promises: a write changes rows of
/// its key only, and a read reads nothing that a write under another key changes. A read never
/// sees a write that is not durable yet: under a key the open batch has written, it commits
/// the batch first; under any other key it sees only committed rows of its own, and the batch
/// stays open for more writes.
///
/// It never waits for another connection: its busy timeout is zero, so a statement that would
/// wait for another writer fails at once with `SQLITE_BUSY`, and the caller runs it through the
/// pool instead, which waits on its own thread. Use it for single short statements only.
///
/// Nor does it checkpoint: a checkpoint copies the log into the database file and syncs both,
/// which takes milliseconds of disk waits. [`Direct::checkpoint_through`] has the pool do it,
/// on the pool's thread, after batches were committed.
pub struct Direct {
    state: std::sync::Arc<std::sync::Mutex<Writer>>,
    /// Batches committed, for [`Direct::checkpoint_through`].
    commits: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The connection and the batch open on it, if any.
struct Writer {
    connection: rusqlite::Connection,
    open: Option<Batch>,
    /// The number of the next batch.
    next: u64,
    /// `PRAGMA data_version` when last asked: it changes when another connection commits.
    data_version: i64,
}

/// An open batch: its number and where its end is told.
struct Batch {
    number: u64,
    done: tokio::sync::watch::Sender<Option<Committed>>,
    /// The keys its writes named.
    keys: Vec<String>,
}

/// How a batch ended: committed, or rolled back with the reason.
type Committed = Result<(), String>;

impl std::fmt::Debug for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Direct").finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why a [`Direct::write`] did not happen; nothing of it is in the database.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// SQLite refused the statement (`SQLITE_BUSY`: another connection is writing).
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// The batch it joined could not be committed and was rolled back.
    #[error("the batch could not be committed: {0}")]
    Commit(String),
}

impl WriteError {
    /// Whether another connection held the database (the pool will wait for it).
    pub fn is_busy(&self) -> bool {
        matches!(self, WriteError::Sqlite(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::DatabaseBusy)
    }
}

impl Writer {
    /// Commit the open batch (if any, and if it is `number` when given) and tell its writes.
    fn commit(&mut self, number: Option<u64>, commits: &std::sync::atomic::AtomicU64) {
        if number.is_some_and(|n| self.open.as_ref().is_none_or(|b| b.number != n)) {
            return;
        }
        let Some(batch) = self.open.take() else {
            return;
        };
        let ended = match run_cached(&self.connection, "COMMIT") {
            Ok(()) => {
                commits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            Err(error) => {
                let _ = run_cached(&self.connection, "ROLLBACK");
                Err(error.to_string())
            }
        };
        batch.done.send_replace(Some(ended));
    }
}

/// The connection's `PRAGMA data_version`.
fn data_version(connection: &rusqlite::Connection) -> rusqlite::Result<i64> {
    connection
        .prepare_cached("PRAGMA data_version")?
        .query_row([], |row| row.get(0))
}

/// Run a statement without parameters, prepared once per connection.
fn run_cached(connection: &rusqlite::Connection, sql: &str) -> rusqlite::Result<()> {
    connection.prepare_cached(sql)?.execute([]).map(drop)
}

impl Direct {
    /// A direct connection to the database file `url` names (open its pool first, which
    /// creates the file and sets its journal mode); `None` for an in-memory database, which
    /// only its pool's one connection can see, and for PostgreSQL.
    pub fn open(url: &str) -> Result<Option<Direct>, DirectError> {
        if is_postgres(url) || is_memory(url) {
            return Ok(None);
        }
        let options = SqliteConnectOptions::from_str(url).map_err(DirectError::Url)?;
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
            | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let connection = rusqlite::Connection::open_with_flags(options.get_filename(), flags)?;
        connection.busy_timeout(Duration::ZERO)?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.pragma_update(None, "foreign_keys", "ON")?;
        connection.pragma_update(None, "wal_autocheckpoint", 0)?;
        let mode: String = connection.pragma_query_value(None, "journal_mode", |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(DirectError::NotWal(mode));
        }
        let data_version = data_version(&connection)?;
        Ok(Some(Direct {
            state: std::sync::Arc::new(std::sync::Mutex::new(Writer {
                connection,
                open: None,
                next: 0,
                data_version,
            })),
            commits: Default::default(),
        }))
    }

    /// Until `direct` is dropped: every `every`, if batches were committed since the last
    /// look, checkpoint the log through `pool` (a passive checkpoint: it waits for no one).
    /// Spawn it next to the store that holds `direct`.
    pub async fn checkpoint_through(
        direct: std::sync::Weak<Direct>,
        pool: SqlitePool,
        every: Duration,
    ) {
        let mut seen = 0;
        loop {
            tokio::time::sleep(every).await;
            let Some(commits) = direct.upgrade().map(|d| d.commits.clone()) else {
                return;
            };
            let now = commits.load(std::sync::atomic::Ordering::Relaxed);
            if now == seen {
                continue;
            }
            seen = now;
            if let Err(error) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&pool)
                .await
            {
                tracing::warn!(%error, "the write-ahead log could not be checkpointed");
            }
        }
    }

    /// Whether another connection (this process's pool, or another process) committed since
    /// the last time this was asked (or since the connection was opened). A commit of this
    /// connection's own batches does not count. Costs one statement over a cached page.
    pub fn written_elsewhere(&self) -> rusqlite::Result<bool> {
        let mut writer = lock(&self.state);
        let now = data_version(&writer.connection)?;
        let changed = now != writer.data_version;
        writer.data_version = now;
        Ok(changed)
    }

    /// How many batches have been committed.
    pub fn batches_committed(&self) -> u64 {
        self.commits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Run a read of `key` on this thread (prepare with `prepare_cached`); it sees committed
    /// data only (see the type's documentation for what `key` promises).
    pub fn read<R>(
        &self,
        key: &str,
        statement: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<R>,
    ) -> rusqlite::Result<R> {
        let mut writer = lock(&self.state);
        if writer
            .open
            .as_ref()
            .is_some_and(|batch| batch.keys.iter().any(|written| written == key))
        {
            writer.commit(None, &self.commits);
        }
        statement(&writer.connection)
    }

    /// Run a write on this thread inside the open batch (opening one if none is), then wait for
    /// the batch's commit. Call inside a Tokio runtime: the commit is a task of its own, so a
    /// caller that goes away does not leave the batch open. A statement that fails leaves the
    /// batch's other writes as they were (SQLite rolls back that statement alone).
    pub async fn write<R>(
        &self,
        key: &str,
        statement: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<R>,
    ) -> Result<R, WriteError> {
        let (result, mut committed) = {
            let mut writer = lock(&self.state);
            let committed = match &mut writer.open {
                Some(batch) => {
                    batch.keys.push(key.to_owned());
                    batch.done.subscribe()
                }
                None => {
                    run_cached(&writer.connection, "BEGIN IMMEDIATE")?;
                    let number = writer.next;
                    writer.next += 1;
                    let (done, committed) = tokio::sync::watch::channel(None);
                    writer.open = Some(Batch {
                        number,
                        done,
                        keys: vec![key.to_owned()],
                    });
                    tokio::spawn(commit_soon(
                        self.state.clone(),
                        self.commits.clone(),
                        number,
                    ));
                    committed
                }
            };
            (statement(&writer.connection)?, committed)
        };
        let ended = match committed.wait_for(Option::is_some).await {
            Ok(ended) => ended
                .clone()
                .unwrap_or_else(|| Err("the batch ended without an outcome".to_owned())),
            Err(_) => Err("the batch was dropped before its commit".to_owned()),
        };
        ended.map(|()| result).map_err(WriteError::Commit)
    }
}

/// How many turns of the scheduler a batch stays open at most while writes keep joining it.
const MAX_TURNS_OPEN: usize = 4;

/// Commit batch `number` once the writes that are ready to run have joined it (unless a read
/// committed it first).
///
/// The batch stays open for one turn of the scheduler (every task that is ready runs, and the
/// I/O that arrived meanwhile is read), and for another while the last turn brought it more
/// writes, at most [`MAX_TURNS_OPEN`]: a lone write commits after one turn, as before, while
/// a busy server commits its writes in fewer, larger batches (the pages they share written
/// once, the locks taken once).
async fn commit_soon(
    state: std::sync::Arc<std::sync::Mutex<Writer>>,
    commits: std::sync::Arc<std::sync::atomic::AtomicU64>,
    number: u64,
) {
    let mut writes = 1;
    for _ in 0..MAX_TURNS_OPEN {
        // Every task that is ready now runs before this one does again.
        tokio::task::yield_now().await;
        let joined = match &lock(&state).open {
            Some(batch) if batch.number == number => batch.keys.len(),
            // A read committed it already.
            _ => return,
        };
        if joined == writes {
            break;
        }
        writes = joined;
    }
    lock(&state).commit(Some(number), &commits);
}

/// Why a [`Direct`] connection could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DirectError {
    /// The URL is not a SQLite URL.
    #[error("not a SQLite database URL: {0}")]
    Url(sqlx::Error),
    /// SQLite refused.
    #[error("could not open the database file directly: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The file is not in write-ahead-log mode, so a direct connection would block its pool.
    #[error("the database file is in journal mode {0}, not WAL")]
    NotWal(String),
}

/// Create the database file `path` readable and writable by its owner only, when it is missing
/// (an existing file keeps its mode: it is its owner's to choose). SQLite creates the `-wal`
/// and `-shm` files beside it with the same mode.
fn create_private(path: &std::path::Path) -> Result<(), sqlx::Error> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(sqlx::Error::Io(error)),
    }
}

/// Open the pool for `url` (see the crate documentation for the settings).
pub async fn connect(url: &str) -> Result<SqlitePool, sqlx::Error> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .foreign_keys(true)
        .busy_timeout(BUSY_TIMEOUT);
    if !is_memory(url) {
        create_private(options.get_filename())?;
    }
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

    /// Finding 9 of issue 71: the gateway's token database and the demo's `orders.sqlite`
    /// (with its `-wal` and `-shm`) were created 0644.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_database_file_and_its_logs_are_created_for_their_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("sql-pool-mode-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("private.sqlite");
        let pool = connect(&format!("sqlite://{}", file.display()))
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&pool)
            .await
            .unwrap();
        sqlx::query("INSERT INTO t VALUES (1)")
            .execute(&pool)
            .await
            .unwrap();
        let mut seen = 0;
        for name in ["private.sqlite", "private.sqlite-wal", "private.sqlite-shm"] {
            let path = dir.join(name);
            if let Ok(meta) = std::fs::metadata(&path) {
                seen += 1;
                assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{name}");
            }
        }
        assert_eq!(
            seen, 3,
            "the file and both logs exist while the pool is open"
        );
        pool.close().await;
        let _ = std::fs::remove_dir_all(&dir);
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

    /// A fresh database file in a directory of its own (removed with `remove_dir_all`).
    fn fresh_file(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("sql-pool-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join(format!("{name}.sqlite"));
        let _ = std::fs::remove_file(&file);
        (dir, file)
    }

    #[tokio::test]
    async fn a_direct_connection_sees_the_pools_writes_and_never_waits() {
        let (dir, file) = fresh_file("direct");
        let url = format!("sqlite://{}", file.display());
        let pool = connect(&url).await.expect("pool");
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&pool)
            .await
            .expect("create");
        let direct = Direct::open(&url).expect("open").expect("a file has one");
        direct
            .write("7", |c| c.execute("INSERT INTO t VALUES (7)", []))
            .await
            .expect("insert");
        let (x,): (i64,) = sqlx::query_as("SELECT x FROM t")
            .fetch_one(&pool)
            .await
            .expect("the pool sees it");
        assert_eq!(x, 7);
        let settings = direct
            .read("settings", |c| {
                let synchronous: i64 = c.pragma_query_value(None, "synchronous", |r| r.get(0))?;
                let keys: i64 = c.pragma_query_value(None, "foreign_keys", |r| r.get(0))?;
                let busy: i64 = c.pragma_query_value(None, "busy_timeout", |r| r.get(0))?;
                Ok((synchronous, keys, busy))
            })
            .expect("pragmas");
        assert_eq!(settings, (1, 1, 0), "NORMAL, foreign keys, no busy wait");
        // While the pool holds the write lock, a direct write fails at once instead of waiting.
        let mut writing = pool.begin().await.expect("begin");
        sqlx::query("INSERT INTO t VALUES (8)")
            .execute(&mut *writing)
            .await
            .expect("insert in a transaction");
        let busy = direct
            .write("9", |c| c.execute("INSERT INTO t VALUES (9)", []))
            .await;
        assert!(busy.as_ref().is_err_and(WriteError::is_busy), "{busy:?}");
        writing.rollback().await.expect("rollback");
        assert!(Direct::open("sqlite::memory:").expect("memory").is_none());
        assert!(Direct::open("postgres://h/db").expect("postgres").is_none());
        pool.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_read_sees_only_committed_rows_and_commits_a_batch_that_wrote_its_key() {
        let (dir, file) = fresh_file("keys");
        let url = format!("sqlite://{}", file.display());
        let pool = connect(&url).await.expect("pool");
        sqlx::query("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)")
            .execute(&pool)
            .await
            .expect("create");
        sqlx::query("INSERT INTO t VALUES ('a', 1), ('b', 1)")
            .execute(&pool)
            .await
            .expect("rows");
        let direct = Direct::open(&url).expect("open").expect("a file has one");
        let value = |key: &'static str| {
            direct.read(key, move |c| {
                c.query_row("SELECT v FROM t WHERE k = ?", [key], |row| {
                    row.get::<_, i64>(0)
                })
            })
        };
        let mut write = std::pin::pin!(direct.write("a", |c| {
            c.execute("UPDATE t SET v = 2 WHERE k = 'a'", [])
        }));
        assert!(
            futures::poll!(write.as_mut()).is_pending(),
            "waits for its batch"
        );
        // Another key: read inside the open batch, which stays open.
        assert_eq!(value("b").expect("b"), 1);
        assert_eq!(direct.batches_committed(), 0);
        assert!(futures::poll!(write.as_mut()).is_pending(), "still open");
        // The written key: the batch is committed first, so the read sees the write, durable.
        assert_eq!(value("a").expect("a"), 2);
        assert_eq!(direct.batches_committed(), 1);
        assert_eq!(write.await.expect("committed"), 1);
        let (outside,): (i64,) = sqlx::query_as("SELECT v FROM t WHERE k = 'a'")
            .fetch_one(&pool)
            .await
            .expect("the pool reads");
        assert_eq!(outside, 2);
        pool.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn writes_that_keep_coming_share_a_batch_and_a_lone_write_commits_alone() {
        let (dir, file) = fresh_file("batches");
        let url = format!("sqlite://{}", file.display());
        let pool = connect(&url).await.expect("pool");
        sqlx::query("CREATE TABLE t (k TEXT PRIMARY KEY)")
            .execute(&pool)
            .await
            .expect("create");
        let direct = Direct::open(&url).expect("open").expect("a file");
        let insert = |key: &'static str| {
            direct.write(key, move |c| c.execute("INSERT INTO t VALUES (?)", [key]))
        };
        // A write in each of three turns of the scheduler: the batch stays open for them.
        let (mut a, mut b, mut c) = (
            std::pin::pin!(insert("a")),
            std::pin::pin!(insert("b")),
            std::pin::pin!(insert("c")),
        );
        assert!(futures::poll!(a.as_mut()).is_pending());
        tokio::task::yield_now().await;
        assert!(futures::poll!(b.as_mut()).is_pending());
        tokio::task::yield_now().await;
        assert!(futures::poll!(c.as_mut()).is_pending());
        assert_eq!(
            direct.batches_committed(),
            0,
            "open while writes keep coming"
        );
        for write in [a, b, c] {
            assert_eq!(write.await.expect("committed"), 1);
        }
        assert_eq!(direct.batches_committed(), 1, "one commit for the three");
        // A lone write is not kept waiting for company.
        insert("d").await.expect("committed");
        assert_eq!(direct.batches_committed(), 2);
        // Writes that keep coming are committed after at most MAX_TURNS_OPEN turns each.
        let keys: Vec<&'static str> = (0..3 * MAX_TURNS_OPEN)
            .map(|n| &*format!("e{n}").leak())
            .collect();
        let mut writes: Vec<_> = keys.iter().map(|key| Box::pin(insert(key))).collect();
        for write in &mut writes {
            assert!(futures::poll!(write.as_mut()).is_pending());
            tokio::task::yield_now().await;
        }
        for write in writes {
            write.await.expect("committed");
        }
        assert!(
            direct.batches_committed() >= 4,
            "{}",
            direct.batches_committed()
        );
        let (rows,): (i64,) = sqlx::query_as("SELECT count(*) FROM t")
            .fetch_one(&pool)
            .await
            .expect("count");
        assert_eq!(rows, 4 + 3 * MAX_TURNS_OPEN as i64);
        pool.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_file_database_is_created_in_wal_mode_with_foreign_keys() {
        let (dir, file) = fresh_file("wal");
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
