//! Orders in SQLite through sqlx: migrations, the seed, queries, and the conditional writes
//! that decide a cancellation atomically.

use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqlitePool};

use crate::domain::{
    Customer, Date, Instant, Money, Order, OrderItem, OrderStatus, Shipment, Tier,
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
    Cancelled(Box<Order>),
    /// No such order.
    NotFound,
    /// The order's status (read at write time) does not allow cancelling.
    NotCancellable(OrderStatus),
}

/// The order database.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
}

const TIMESTAMP: &str = "%Y-%m-%dT%H:%M:%SZ";

fn ts(instant: &Instant) -> String {
    instant.format(TIMESTAMP).to_string()
}

fn parse_ts(text: &str) -> Result<Instant, StoreError> {
    chrono::NaiveDateTime::parse_from_str(text, TIMESTAMP)
        .map(|t| t.and_utc())
        .map_err(|e| StoreError::Corrupt(format!("timestamp {text:?}: {e}")))
}

fn parse_date(text: &str) -> Result<Date, StoreError> {
    Date::parse_from_str(text, "%Y-%m-%d")
        .map_err(|e| StoreError::Corrupt(format!("date {text:?}: {e}")))
}

const ORDER_COLUMNS: &str = "o.order_id, o.status, o.total_cents, o.created_at, o.last_updated, \
     o.carrier, o.tracking_number, o.shipped_on, o.estimated_delivery, \
     c.customer_id, c.name, c.email, c.tier";

impl Store {
    /// Open (creating if missing) the database at `url`, migrate it, and seed it if it holds
    /// no orders. `sqlite::memory:` gives a private in-memory database.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let pool = sqlite_pool::connect(url).await?;
        sqlx::migrate!("./migrations").run(&pool).await?;
        let store = Store { pool };
        if store.order_count().await? == 0 {
            store.seed().await?;
        }
        Ok(store)
    }

    /// Whether the database answers (for health checks).
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// How many orders are stored.
    pub async fn order_count(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM orders")
            .fetch_one(&self.pool)
            .await?)
    }

    /// Delete everything and write the seed again.
    pub async fn reset(&self) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM order_items")
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM orders").execute(&mut *tx).await?;
        sqlx::query("DELETE FROM customers")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.seed().await
    }

    async fn seed(&self) -> Result<(), StoreError> {
        let customers = seed::customers();
        let orders = seed::orders(&customers);
        let mut tx = self.pool.begin().await?;
        for c in &customers {
            sqlx::query(
                "INSERT INTO customers (customer_id, name, email, tier) VALUES (?, ?, ?, ?)",
            )
            .bind(&c.customer_id)
            .bind(&c.name)
            .bind(&c.email)
            .bind(c.tier.as_str())
            .execute(&mut *tx)
            .await?;
        }
        for o in &orders {
            let shipment = o.shipment.as_ref();
            sqlx::query(
                "INSERT INTO orders (order_id, status, customer_id, total_cents, created_at, last_updated, \
                 carrier, tracking_number, shipped_on, estimated_delivery) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
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
                sqlx::query(
                    "INSERT INTO order_items (order_id, line, product_id, product_name, quantity, unit_price_cents) \
                     VALUES (?, ?, ?, ?, ?, ?)",
                )
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
        let sql = format!(
            "SELECT {ORDER_COLUMNS}, \
             (SELECT json_group_array(json_array(i.product_id, i.product_name, i.quantity, i.unit_price_cents)) \
              FROM (SELECT * FROM order_items WHERE order_id = o.order_id ORDER BY line) i) AS items \
             FROM orders o JOIN customers c ON c.customer_id = o.customer_id \
             WHERE {filter} ORDER BY {order_by}"
        );
        let mut query = sqlx::query(&sql);
        for bind in binds {
            query = query.bind(*bind);
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter()
            .map(|row| {
                let items: String = row.try_get("items")?;
                order_from_row(row, parse_items(&items)?)
            })
            .collect()
    }

    /// One order.
    pub async fn get(&self, order_id: &str) -> Result<Option<Order>, StoreError> {
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
        // `instr(..) = 1` instead of LIKE: the prefix may contain `%` or `_`.
        Ok(sqlx::query_scalar(
            "SELECT order_id FROM orders WHERE instr(order_id, ?) = 1 ORDER BY order_id LIMIT ?",
        )
        .bind(prefix)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?)
    }

    /// How many orders are in each status.
    pub async fn status_counts(&self) -> Result<Vec<(OrderStatus, i64)>, StoreError> {
        let rows = sqlx::query("SELECT status, COUNT(*) AS n FROM orders GROUP BY status")
            .fetch_all(&self.pool)
            .await?;
        let mut counts = Vec::new();
        for row in rows {
            let status: String = row.try_get("status")?;
            counts.push((parse_status(&status)?, row.try_get("n")?));
        }
        counts.sort();
        Ok(counts)
    }

    /// Cancel the order if, at the moment of writing, its status allows it. The check and the
    /// write are one conditional `UPDATE`, so a status that changed since the caller last looked
    /// (another cancellation, a shipment) is seen and refused.
    pub async fn cancel(
        &self,
        order_id: &str,
        note: Option<&str>,
        now: Instant,
    ) -> Result<CancelOutcome, StoreError> {
        let mut tx = self.pool.begin().await?;
        let updated = sqlx::query(
            "UPDATE orders SET status = 'CANCELLED', cancellation_note = ?, last_updated = ? \
             WHERE order_id = ? AND status IN ('PENDING', 'PROCESSING')",
        )
        .bind(note)
        .bind(ts(&now))
        .bind(order_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if updated == 0 {
            let status: Option<String> =
                sqlx::query_scalar("SELECT status FROM orders WHERE order_id = ?")
                    .bind(order_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            tx.rollback().await?;
            return Ok(match status {
                None => CancelOutcome::NotFound,
                Some(status) => CancelOutcome::NotCancellable(parse_status(&status)?),
            });
        }
        tx.commit().await?;
        match self.get(order_id).await? {
            Some(order) => Ok(CancelOutcome::Cancelled(Box::new(order))),
            None => Ok(CancelOutcome::NotFound),
        }
    }

    /// The note recorded with a cancellation (internal; not part of the order's JSON).
    pub async fn cancellation_note(&self, order_id: &str) -> Result<Option<String>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT cancellation_note FROM orders WHERE order_id = ?")
                .bind(order_id)
                .fetch_optional(&self.pool)
                .await?
                .flatten(),
        )
    }

    /// Set an order's status. Returns the updated order, or `None` if there is no such order.
    pub async fn set_status(
        &self,
        order_id: &str,
        status: OrderStatus,
        now: Instant,
    ) -> Result<SetStatus, StoreError> {
        // A cancelled order stays cancelled (its refund has started): decided in the write.
        let updated = sqlx::query(
            "UPDATE orders SET status = ?, last_updated = ? WHERE order_id = ? AND status <> 'CANCELLED'",
        )
        .bind(status.as_str())
        .bind(ts(&now))
        .bind(order_id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(match (updated, self.get(order_id).await?) {
            (_, None) => SetStatus::NotFound,
            (0, Some(_)) => SetStatus::Cancelled,
            (_, Some(order)) => SetStatus::Updated(Box::new(order)),
        })
    }

    /// Set a shipment's estimated delivery; returns whether it changed.
    pub async fn set_estimate(&self, order_id: &str, estimate: Date) -> Result<bool, StoreError> {
        let updated = sqlx::query(
            "UPDATE orders SET estimated_delivery = ? WHERE order_id = ? AND estimated_delivery IS NOT ?",
        )
        .bind(estimate.to_string())
        .bind(order_id)
        .bind(estimate.to_string())
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(updated > 0)
    }
}

/// Lines as the `load` query aggregates them: `[[productId, name, quantity, unitPriceCents], …]`.
fn parse_items(json: &str) -> Result<Vec<OrderItem>, StoreError> {
    let lines: Vec<(String, String, i64, i64)> = serde_json::from_str(json)
        .map_err(|e| StoreError::Corrupt(format!("order lines {json:?}: {e}")))?;
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

fn order_from_row(row: &SqliteRow, items: Vec<OrderItem>) -> Result<Order, StoreError> {
    let status: String = row.try_get("status")?;
    let tier: String = row.try_get("tier")?;
    let carrier: Option<String> = row.try_get("carrier")?;
    let shipment = match carrier {
        Some(carrier) => {
            let shipped_on: String = row.try_get("shipped_on")?;
            let estimate: String = row.try_get("estimated_delivery")?;
            Some(Shipment {
                carrier,
                tracking_number: row.try_get("tracking_number")?,
                shipped_on: parse_date(&shipped_on)?,
                estimated_delivery: parse_date(&estimate)?,
            })
        }
        None => None,
    };
    let created: String = row.try_get("created_at")?;
    let updated: String = row.try_get("last_updated")?;
    Ok(Order {
        order_id: row.try_get("order_id")?,
        status: parse_status(&status)?,
        customer: Customer {
            customer_id: row.try_get("customer_id")?,
            name: row.try_get("name")?,
            email: row.try_get("email")?,
            tier: Tier::parse(&tier)
                .ok_or_else(|| StoreError::Corrupt(format!("tier {tier:?}")))?,
        },
        items,
        total_amount: Money::from_cents(row.try_get("total_cents")?),
        created_at: parse_ts(&created)?,
        last_updated: parse_ts(&updated)?,
        shipment,
    })
}
