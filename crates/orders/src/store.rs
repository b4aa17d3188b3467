//! Orders in SQLite or PostgreSQL through sqlx: migrations (one set per backend), the seed,
//! queries, and the conditional writes that decide a cancellation atomically.
//!
//! The queries are written once, with `?` placeholders; `Store::sql` numbers them for
//! PostgreSQL, and `on_pool!` runs the same code on whichever pool the store holds. The two
//! places the dialects differ (aggregating an order's lines as JSON, finding a prefix) say so.
//!
//! On a database file the hot path — reading one order, cancelling one — runs on the caller's
//! thread through a [`Direct`] connection (no hop to sqlx's connection thread); a statement
//! that would have to wait for another writer, or fails in any way, is run again through the
//! pool, which waits and reports the error.

use std::borrow::Cow;

use std::sync::{Arc, LazyLock};

use sql_pool::rusqlite;
use sql_pool::{Direct, Pool, on_pool};

use crate::domain::{
    Cancellation, Customer, Date, Instant, Money, Order, OrderItem, OrderStatus, Shipment, Tier,
};
use crate::seed;

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened or queried.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A migration failed.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The direct connection to the database file could not be opened.
    #[error(transparent)]
    Direct(#[from] sql_pool::DirectError),
    /// A stored value is not what the schema promises.
    #[error("corrupt row in the database: {0}")]
    Corrupt(String),
}

/// What a status change found.
#[derive(Debug)]
pub enum SetStatus {
    /// Changed; the order as it is now.
    Updated(Box<Order>),
    /// No such order.
    NotFound,
    /// The order is cancelled, and stays so.
    Cancelled,
}

/// The outcome of a conditional cancellation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The order was cancellable and is now cancelled.
    Cancelled(Cancellation),
    /// No such order.
    NotFound,
    /// The order's status (read at write time) does not allow cancelling.
    NotCancellable(OrderStatus),
}

/// The order database.
#[derive(Debug, Clone)]
pub struct Store {
    pool: Pool,
    /// On a database file, the connection the hot path uses on the caller's thread.
    direct: Option<Arc<Direct>>,
}

/// An order row as `load` selects it, the same on both backends.
#[derive(sqlx::FromRow)]
struct OrderRow {
    order_id: String,
    status: String,
    total_cents: i64,
    created_at: String,
    last_updated: String,
    carrier: Option<String>,
    tracking_number: Option<String>,
    shipped_on: Option<String>,
    estimated_delivery: Option<String>,
    customer_id: String,
    name: String,
    email: String,
    tier: String,
    items: String,
}

const TIMESTAMP: &str = "%Y-%m-%dT%H:%M:%SZ";

fn ts(instant: &Instant) -> String {
    use chrono::{Datelike, Timelike};
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        instant.year(),
        instant.month(),
        instant.day(),
        instant.hour(),
        instant.minute(),
        instant.second()
    )
}

/// The digits of `text[range]` as a number, if they are all digits.
fn digits(text: &[u8], range: std::ops::Range<usize>) -> Option<u32> {
    text.get(range)?.iter().try_fold(0u32, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0'))
    })
}

/// `YYYY-MM-DD` at the start of `text`, read by position (chrono's format parser is the
/// slow way for the one format the store writes).
fn ymd(text: &[u8]) -> Option<Date> {
    if text.get(4) != Some(&b'-') || text.get(7) != Some(&b'-') {
        return None;
    }
    let year = i32::try_from(digits(text, 0..4)?).ok()?;
    Date::from_ymd_opt(year, digits(text, 5..7)?, digits(text, 8..10)?)
}

fn parse_ts(text: &str) -> Result<Instant, StoreError> {
    let bytes = text.as_bytes();
    let quick = (bytes.len() == 20
        && bytes[10] == b'T'
        && bytes[13] == b':'
        && bytes[16] == b':'
        && bytes[19] == b'Z')
        .then(|| {
            ymd(bytes)?.and_hms_opt(
                digits(bytes, 11..13)?,
                digits(bytes, 14..16)?,
                digits(bytes, 17..19)?,
            )
        })
        .flatten();
    match quick {
        Some(time) => Ok(time.and_utc()),
        None => chrono::NaiveDateTime::parse_from_str(text, TIMESTAMP)
            .map(|t| t.and_utc())
            .map_err(|e| StoreError::Corrupt(format!("timestamp {text:?}: {e}"))),
    }
}

fn parse_date(text: &str) -> Result<Date, StoreError> {
    match ymd(text.as_bytes()).filter(|_| text.len() == 10) {
        Some(date) => Ok(date),
        None => Date::parse_from_str(text, "%Y-%m-%d")
            .map_err(|e| StoreError::Corrupt(format!("date {text:?}: {e}"))),
    }
}

const ORDER_COLUMNS: &str = "o.order_id, o.status, o.total_cents, o.created_at, o.last_updated, \
     o.carrier, o.tracking_number, o.shipped_on, o.estimated_delivery, \
     c.customer_id, c.name, c.email, c.tier";

/// An order's lines as one JSON array of `[productId, name, quantity, unitPriceCents]`, on SQLite.
const SQLITE_ITEMS: &str = "(SELECT json_group_array(json_array(i.product_id, i.product_name, \
     i.quantity, i.unit_price_cents)) FROM (SELECT * FROM order_items WHERE order_id = o.order_id \
     ORDER BY line) i)";

/// The same, on PostgreSQL.
const POSTGRES_ITEMS: &str = "(SELECT COALESCE(json_agg(json_build_array(i.product_id, \
     i.product_name, i.quantity, i.unit_price_cents) ORDER BY i.line), '[]')::text \
     FROM order_items i WHERE i.order_id = o.order_id)";

/// How often the log of the direct connection's commits is checkpointed (by the pool).
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// One order by ID with its lines, a row per line (the order's columns repeated), on SQLite:
/// the direct connection's read, cheaper than building the lines as JSON to parse again.
static SQLITE_GET: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {ORDER_COLUMNS}, i.product_id, i.product_name, i.quantity, i.unit_price_cents \
         FROM orders o JOIN customers c ON c.customer_id = o.customer_id \
         LEFT JOIN order_items i ON i.order_id = o.order_id \
         WHERE o.order_id = ? ORDER BY i.line"
    )
});

/// The conditional cancellation: one statement decides, and says what the refund is.
const CANCEL: &str = "UPDATE orders SET status = 'CANCELLED', cancellation_note = ?, last_updated = ?, \
     cancel_key = ? WHERE order_id = ? AND status IN ('PENDING', 'PROCESSING') RETURNING total_cents";

/// What a refused cancellation reads to say why: the status, and whether the same key
/// cancelled it already (then the refund is the order's total).
const STATUS: &str = "SELECT status, cancel_key, total_cents FROM orders WHERE order_id = ?";

/// The direct connection's cancellation, read then written in one transaction.
const SET_CANCELLED: &str = "UPDATE orders SET status = 'CANCELLED', cancellation_note = ?, \
     last_updated = ?, cancel_key = ? WHERE order_id = ?";

/// An order row read through the direct connection, in `ORDER_COLUMNS` order (its `items`
/// left empty: they are read apart).
fn direct_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<OrderRow> {
    Ok(OrderRow {
        order_id: row.get(0)?,
        status: row.get(1)?,
        total_cents: row.get(2)?,
        created_at: row.get(3)?,
        last_updated: row.get(4)?,
        carrier: row.get(5)?,
        tracking_number: row.get(6)?,
        shipped_on: row.get(7)?,
        estimated_delivery: row.get(8)?,
        customer_id: row.get(9)?,
        name: row.get(10)?,
        email: row.get(11)?,
        tier: row.get(12)?,
        items: String::new(),
    })
}

/// A line as `(productId, name, quantity, unitPriceCents)`.
type Line = (String, String, i64, i64);

/// One order and its lines through the direct connection (one statement, so one snapshot).
fn direct_order(
    connection: &rusqlite::Connection,
    order_id: &str,
) -> rusqlite::Result<Option<(OrderRow, Vec<Line>)>> {
    let mut statement = connection.prepare_cached(&SQLITE_GET)?;
    let mut rows = statement.query([order_id])?;
    let mut found: Option<(OrderRow, Vec<Line>)> = None;
    while let Some(row) = rows.next()? {
        let (_, lines) = match &mut found {
            Some(found) => found,
            None => found.insert((direct_row(row)?, Vec::new())),
        };
        // An order without lines has one row, its line columns NULL.
        if let Some(product_id) = row.get::<_, Option<String>>(13)? {
            lines.push((product_id, row.get(14)?, row.get(15)?, row.get(16)?));
        }
    }
    Ok(found)
}

/// What a direct statement that did not run is left to: the pool. Logged, not returned: the
/// pool runs it again and reports its own error, if any.
fn direct_failed(what: &str, error: &rusqlite::Error) {
    tracing::debug!(%error, "{what} goes through the pool");
}

impl Store {
    /// Open the database at `url`, migrate it, and seed it if it holds no orders:
    /// `sqlite://PATH` (created if missing), `sqlite::memory:` (private, in memory), or
    /// `postgres://…` (the database must exist; instances may share it).
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let pool = sql_pool::open_migrated!(url, StoreError).await?;
        let direct = match &pool {
            Pool::Sqlite(pool) => Direct::open(url)?.map(Arc::new).inspect(|direct| {
                tokio::spawn(Direct::checkpoint_through(
                    Arc::downgrade(direct),
                    pool.clone(),
                    CHECKPOINT_EVERY,
                ));
            }),
            Pool::Postgres(_) => None,
        };
        let store = Store { pool, direct };
        if store.order_count().await? == 0 {
            store.seed().await?;
        }
        Ok(store)
    }

    /// Whether the database is shared with other processes by design (PostgreSQL), so that
    /// nothing read from it may be kept in one process's memory.
    pub fn is_shared(&self) -> bool {
        self.pool.is_shared()
    }

    /// The pool (the MCP layer keeps its tasks in the same database).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    fn sql<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.pool.sql(text)
    }

    /// Whether the database answers (for health checks).
    pub async fn ping(&self) -> Result<(), StoreError> {
        on_pool!(&self.pool, pool => {
            sqlx::query("SELECT 1").execute(pool).await?;
        });
        Ok(())
    }

    /// How many orders are stored.
    pub async fn order_count(&self) -> Result<i64, StoreError> {
        Ok(
            on_pool!(&self.pool, pool => sqlx::query_scalar("SELECT COUNT(*) FROM orders")
            .fetch_one(pool)
            .await?),
        )
    }

    /// Delete everything and write the seed again.
    pub async fn reset(&self) -> Result<(), StoreError> {
        on_pool!(&self.pool, pool => {
            let mut tx = pool.begin().await?;
            for table in ["order_items", "orders", "customers"] {
                sqlx::query(&format!("DELETE FROM {table}"))
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        });
        self.seed().await
    }

    async fn seed(&self) -> Result<(), StoreError> {
        let customers = seed::customers();
        let orders = seed::orders(&customers);
        let insert_customer =
            self.sql("INSERT INTO customers (customer_id, name, email, tier) VALUES (?, ?, ?, ?)");
        let insert_order = self.sql(
            "INSERT INTO orders (order_id, status, customer_id, total_cents, created_at, last_updated, \
             carrier, tracking_number, shipped_on, estimated_delivery) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        );
        let insert_item = self.sql(
            "INSERT INTO order_items (order_id, line, product_id, product_name, quantity, unit_price_cents) \
             VALUES (?, ?, ?, ?, ?, ?)",
        );
        on_pool!(&self.pool, pool => {
            let mut tx = pool.begin().await?;
            if sql_pool::seeded_elsewhere!(self.pool, tx, 7340001, "orders") {
                return Ok(());
            }
            for c in &customers {
                sqlx::query(&insert_customer)
                    .bind(&c.customer_id)
                    .bind(&c.name)
                    .bind(&c.email)
                    .bind(c.tier.as_str())
                    .execute(&mut *tx)
                    .await?;
            }
            for o in &orders {
                let shipment = o.shipment.as_ref();
                sqlx::query(&insert_order)
                    .bind(&o.order_id)
                    .bind(o.status.as_str())
                    .bind(&o.customer.customer_id)
                    .bind(o.total_amount.cents())
                    .bind(ts(&o.created_at))
                    .bind(ts(&o.last_updated))
                    .bind(shipment.map(|s| s.carrier.clone()))
                    .bind(shipment.map(|s| s.tracking_number.clone()))
                    .bind(shipment.map(|s| s.shipped_on.to_string()))
                    .bind(shipment.map(|s| s.estimated_delivery.to_string()))
                    .execute(&mut *tx)
                    .await?;
                for (line, item) in o.items.iter().enumerate() {
                    sqlx::query(&insert_item)
                        .bind(&o.order_id)
                        .bind(line as i64)
                        .bind(&item.product_id)
                        .bind(&item.product_name)
                        .bind(i64::from(item.quantity))
                        .bind(item.unit_price.cents())
                        .execute(&mut *tx)
                        .await?;
                }
            }
            tx.commit().await?;
        });
        tracing::info!(
            "Seeded {} customers and {} orders",
            customers.len(),
            orders.len()
        );
        Ok(())
    }

    /// Load the orders a `WHERE` clause selects (over `orders o JOIN customers c`), with their
    /// lines, in the order `order_by` gives: one statement, the lines aggregated as JSON.
    async fn load(
        &self,
        filter: &str,
        order_by: &str,
        binds: &[&str],
    ) -> Result<Vec<Order>, StoreError> {
        let items = match self.pool {
            Pool::Sqlite(_) => SQLITE_ITEMS,
            Pool::Postgres(_) => POSTGRES_ITEMS,
        };
        let sql = format!(
            "SELECT {ORDER_COLUMNS}, {items} AS items \
             FROM orders o JOIN customers c ON c.customer_id = o.customer_id \
             WHERE {filter} ORDER BY {order_by}"
        );
        let sql = self.sql(&sql);
        let rows: Vec<OrderRow> = on_pool!(&self.pool, pool => {
            let mut query = sqlx::query_as(&sql);
            for bind in binds {
                query = query.bind(*bind);
            }
            query.fetch_all(pool).await?
        });
        rows.into_iter().map(order_from_row).collect()
    }

    /// Whether another connection wrote the database since this was last asked: another
    /// process on the same file (`order-service reset` while a server runs), or this store's
    /// own pool (writes that did not go through the direct connection). Without a direct
    /// connection (in memory, or PostgreSQL) nothing else can write unseen: `false`. A failed
    /// check says `true`, so a cache in front of the store is dropped rather than trusted.
    pub fn written_elsewhere(&self) -> bool {
        self.direct.as_ref().is_some_and(|direct| {
            direct.written_elsewhere().unwrap_or_else(|error| {
                direct_failed("the data version check", &error);
                true
            })
        })
    }

    /// One order.
    pub async fn get(&self, order_id: &str) -> Result<Option<Order>, StoreError> {
        if let Some(direct) = &self.direct {
            match direct.read(order_id, |connection| direct_order(connection, order_id)) {
                Ok(found) => {
                    return found
                        .map(|(row, lines)| assemble(row, items_of(lines)?))
                        .transpose();
                }
                Err(error) => direct_failed("an order read", &error),
            }
        }
        Ok(self
            .load("o.order_id = ?", "o.order_id", &[order_id])
            .await?
            .pop())
    }

    /// A customer's orders, newest first.
    pub async fn by_customer(&self, customer_id: &str) -> Result<Vec<Order>, StoreError> {
        self.load(
            "o.customer_id = ?",
            "o.created_at DESC, o.order_id DESC",
            &[customer_id],
        )
        .await
    }

    /// The orders in one status, newest first.
    pub async fn by_status(&self, status: OrderStatus) -> Result<Vec<Order>, StoreError> {
        self.load(
            "o.status = ?",
            "o.created_at DESC, o.order_id DESC",
            &[status.as_str()],
        )
        .await
    }

    /// Order IDs starting with `prefix`, ascending, at most `limit`.
    pub async fn ids_with_prefix(
        &self,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        // A position test instead of LIKE: the prefix may contain `%` or `_`.
        let sql = self.sql(match self.pool {
            Pool::Sqlite(_) => {
                "SELECT order_id FROM orders WHERE instr(order_id, ?) = 1 ORDER BY order_id LIMIT ?"
            }
            Pool::Postgres(_) => {
                "SELECT order_id FROM orders WHERE strpos(order_id, ?) = 1 ORDER BY order_id LIMIT ?"
            }
        });
        Ok(on_pool!(&self.pool, pool => sqlx::query_scalar(&sql)
            .bind(prefix)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?))
    }

    /// How many orders are in each status.
    pub async fn status_counts(&self) -> Result<Vec<(OrderStatus, i64)>, StoreError> {
        let rows: Vec<(String, i64)> = on_pool!(&self.pool, pool => {
            sqlx::query_as("SELECT status, COUNT(*) AS n FROM orders GROUP BY status")
                .fetch_all(pool)
                .await?
        });
        let mut counts = Vec::new();
        for (status, n) in rows {
            counts.push((parse_status(&status)?, n));
        }
        counts.sort();
        Ok(counts)
    }

    /// Cancel the order if, at the moment of writing, its status allows it. The check and the
    /// write are one conditional `UPDATE`, so a status that changed since the caller last looked
    /// (another cancellation, a shipment) is seen and refused; it returns the refund, so
    /// nothing is read after it. Returns once the outcome is committed.
    pub async fn cancel(
        &self,
        order_id: &str,
        note: Option<&str>,
        now: Instant,
    ) -> Result<CancelOutcome, StoreError> {
        self.cancel_once(order_id, note, None, now).await
    }

    /// [`Store::cancel`] under an idempotency key: the key is written with the cancellation,
    /// and a cancellation asked again under the same key (a step that runs again after its
    /// instance stopped) finds it done and reports it as done, writing nothing.
    pub async fn cancel_once(
        &self,
        order_id: &str,
        note: Option<&str>,
        key: Option<&str>,
        now: Instant,
    ) -> Result<CancelOutcome, StoreError> {
        // A client span in OpenTelemetry's database conventions; made only when something
        // exports spans of this target (otherwise its callsite is off and this is a no-op).
        let span = tracing::info_span!(
            target: "orders::telemetry",
            "UPDATE orders",
            otel.kind = "client",
            db.system.name = match self.pool {
                Pool::Postgres(_) => "postgresql",
                Pool::Sqlite(_) => "sqlite",
            },
            db.operation.name = "UPDATE",
            db.collection.name = "orders",
        );
        tracing::Instrument::instrument(self.cancel_now(order_id, note, key, now), span).await
    }

    async fn cancel_now(
        &self,
        order_id: &str,
        note: Option<&str>,
        key: Option<&str>,
        now: Instant,
    ) -> Result<CancelOutcome, StoreError> {
        let at = ts(&now);
        if let Some(direct) = &self.direct {
            // Inside the batch's transaction, which holds the write lock, a read and then the
            // write are as atomic as one conditional statement, and cheaper on SQLite (whose
            // `RETURNING` and `IN (…)` each build a temporary table).
            let decided = direct
                .write(order_id, |connection| {
                    use rusqlite::OptionalExtension;
                    let found: Option<(String, Option<String>, i64)> = connection
                        .prepare_cached(STATUS)?
                        .query_row([order_id], |row| {
                            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                        })
                        .optional()?;
                    let Some((status, done_by, cents)) = found else {
                        return Ok(Err(None));
                    };
                    if key.is_some() && done_by.as_deref() == key {
                        return Ok(Ok(cents));
                    }
                    if !OrderStatus::parse(&status).is_ok_and(OrderStatus::is_cancellable) {
                        return Ok(Err(Some(status)));
                    }
                    connection
                        .prepare_cached(SET_CANCELLED)?
                        .execute(rusqlite::params![note, at, key, order_id])?;
                    Ok(Ok(cents))
                })
                .await;
            match decided {
                Ok(Ok(cents)) => return Ok(self.cancelled(order_id, cents, now)),
                Ok(Err(None)) => return Ok(CancelOutcome::NotFound),
                Ok(Err(Some(status))) => {
                    return Ok(CancelOutcome::NotCancellable(parse_status(&status)?));
                }
                Err(error) => tracing::debug!(%error, "a cancellation goes through the pool"),
            }
        }
        // One statement decides. When it refuses, the status is read to say why; if that read
        // finds the order cancellable again (it changed in between), the write is tried again,
        // so the answer is always either "cancelled" or a status that refused it.
        let update = self.sql(CANCEL);
        let read = self.sql(STATUS);
        for attempt in 1.. {
            let refund: Option<i64> = on_pool!(&self.pool, pool => sqlx::query_scalar(&update)
                .bind(note)
                .bind(&at)
                .bind(key)
                .bind(order_id)
                .fetch_optional(pool)
                .await?);
            if let Some(cents) = refund {
                return Ok(self.cancelled(order_id, cents, now));
            }
            let found: Option<(String, Option<String>, i64)> = on_pool!(&self.pool, pool => sqlx::query_as(&read)
                .bind(order_id)
                .fetch_optional(pool)
                .await?);
            let Some((status, done_by, cents)) = found else {
                return Ok(CancelOutcome::NotFound);
            };
            if key.is_some() && done_by.as_deref() == key {
                return Ok(self.cancelled(order_id, cents, now));
            }
            let status = parse_status(&status)?;
            if !status.is_cancellable() || attempt >= 3 {
                return Ok(CancelOutcome::NotCancellable(status));
            }
        }
        unreachable!("the loop returns by its third attempt")
    }

    fn cancelled(&self, order_id: &str, cents: i64, now: Instant) -> CancelOutcome {
        CancelOutcome::Cancelled(Cancellation {
            order_id: order_id.to_owned(),
            refund: Money::from_cents(cents),
            at: now,
        })
    }

    /// The note recorded with a cancellation (internal; not part of the order's JSON).
    pub async fn cancellation_note(&self, order_id: &str) -> Result<Option<String>, StoreError> {
        let sql = self.sql("SELECT cancellation_note FROM orders WHERE order_id = ?");
        let note: Option<Option<String>> = on_pool!(&self.pool, pool => sqlx::query_scalar(&sql)
            .bind(order_id)
            .fetch_optional(pool)
            .await?);
        Ok(note.flatten())
    }

    /// Set an order's status. Returns the updated order, or `None` if there is no such order.
    pub async fn set_status(
        &self,
        order_id: &str,
        status: OrderStatus,
        now: Instant,
    ) -> Result<SetStatus, StoreError> {
        // A cancelled order stays cancelled (its refund has started): decided in the write.
        let sql = self.sql(
            "UPDATE orders SET status = ?, last_updated = ? WHERE order_id = ? AND status <> 'CANCELLED'",
        );
        let updated = on_pool!(&self.pool, pool => sqlx::query(&sql)
            .bind(status.as_str())
            .bind(ts(&now))
            .bind(order_id)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(match (updated, self.get(order_id).await?) {
            (_, None) => SetStatus::NotFound,
            (0, Some(_)) => SetStatus::Cancelled,
            (_, Some(order)) => SetStatus::Updated(Box::new(order)),
        })
    }

    /// Set a shipment's estimated delivery; returns whether it changed.
    pub async fn set_estimate(&self, order_id: &str, estimate: Date) -> Result<bool, StoreError> {
        let sql = self.sql(
            "UPDATE orders SET estimated_delivery = ? \
             WHERE order_id = ? AND estimated_delivery IS DISTINCT FROM ?",
        );
        let updated = on_pool!(&self.pool, pool => sqlx::query(&sql)
            .bind(estimate.to_string())
            .bind(order_id)
            .bind(estimate.to_string())
            .execute(pool)
            .await?
            .rows_affected());
        Ok(updated > 0)
    }
}

/// Lines as the `load` query aggregates them: `[[productId, name, quantity, unitPriceCents], …]`.
fn parse_items(json: &str) -> Result<Vec<OrderItem>, StoreError> {
    let lines: Vec<Line> = serde_json::from_str(json)
        .map_err(|e| StoreError::Corrupt(format!("order lines {json:?}: {e}")))?;
    items_of(lines)
}

/// Lines as `(productId, name, quantity, unitPriceCents)`.
fn items_of(lines: Vec<Line>) -> Result<Vec<OrderItem>, StoreError> {
    lines
        .into_iter()
        .map(|(product_id, product_name, quantity, cents)| {
            Ok(OrderItem {
                product_id,
                product_name,
                quantity: u32::try_from(quantity)
                    .map_err(|_| StoreError::Corrupt(format!("quantity {quantity}")))?,
                unit_price: Money::from_cents(cents),
            })
        })
        .collect()
}

fn parse_status(text: &str) -> Result<OrderStatus, StoreError> {
    OrderStatus::parse(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn order_from_row(mut row: OrderRow) -> Result<Order, StoreError> {
    let items = parse_items(&std::mem::take(&mut row.items))?;
    assemble(row, items)
}

/// An order from its row (its `items` text unused) and its lines.
fn assemble(row: OrderRow, items: Vec<OrderItem>) -> Result<Order, StoreError> {
    let shipment = match row.carrier {
        Some(carrier) => Some(Shipment {
            carrier,
            tracking_number: row.tracking_number.ok_or_else(|| {
                StoreError::Corrupt("a shipment without a tracking number".into())
            })?,
            shipped_on: parse_date(row.shipped_on.as_deref().unwrap_or_default())?,
            estimated_delivery: parse_date(row.estimated_delivery.as_deref().unwrap_or_default())?,
        }),
        None => None,
    };
    Ok(Order {
        items,
        order_id: row.order_id,
        status: parse_status(&row.status)?,
        customer: Customer {
            customer_id: row.customer_id,
            name: row.name,
            email: row.email,
            tier: Tier::parse(&row.tier)
                .ok_or_else(|| StoreError::Corrupt(format!("tier {:?}", row.tier)))?,
        },
        total_amount: Money::from_cents(row.total_cents),
        created_at: parse_ts(&row.created_at)?,
        last_updated: parse_ts(&row.last_updated)?,
        shipment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_by_position_agree_with_chrono() {
        for text in [
            "2024-02-29T23:59:59Z",
            "1999-01-01T00:00:00Z",
            "2026-12-01T10:05:07Z",
        ] {
            let quick = parse_ts(text).unwrap();
            let slow = chrono::NaiveDateTime::parse_from_str(text, TIMESTAMP)
                .unwrap()
                .and_utc();
            assert_eq!(quick, slow);
            assert_eq!(ts(&quick), text);
        }
        for bad in [
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-01-01 00:00:00",
            "x",
        ] {
            assert!(parse_ts(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_date("2024-02-29").unwrap(),
            Date::from_ymd_opt(2024, 2, 29).unwrap()
        );
        for bad in ["2024-02-30", "2024-02-011", ""] {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
    }
}
