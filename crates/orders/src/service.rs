//! The order service's rules over the store: lookups with the reference's messages, the
//! cancellation and status rules, and the simulated carrier refresh.

use std::time::Duration;

use futures::{Stream, StreamExt};

use crate::domain::{self, Cancellation, Order, OrderId, OrderStatus, StatusParseError};
use crate::store::{CancelOutcome, Store, StoreError};

/// Why an order operation did not happen. The messages are what the model and the person read.
#[derive(Debug, thiserror::Error)]
pub enum OrderError {
    /// No order with that ID.
    #[error("No order with ID '{0}'. Check the ID and try again.")]
    NotFound(String),
    /// The status text is not a status.
    #[error(transparent)]
    InvalidStatus(#[from] StatusParseError),
    /// The order has left the warehouse (or is already cancelled).
    #[error(
        "Order {order_id} is {status} and can no longer be cancelled. Only PENDING and PROCESSING orders can."
    )]
    NotCancellable {
        /// The order.
        order_id: String,
        /// Its status when the cancellation was attempted.
        status: OrderStatus,
    },
    /// `update_order_status` does not cancel.
    #[error(
        "Use cancel_order to cancel an order. It asks the customer to confirm first and records the reason. \
         This tool sets the other four statuses."
    )]
    UseCancelOrder,
    /// A cancelled order cannot move to another status.
    #[error(
        "Order {0} is CANCELLED and stays so: its refund has started, so it cannot be shipped or \
         reopened. Place a new order instead."
    )]
    StaysCancelled(String),
    /// The database failed.
    #[error("the order database failed: {0}")]
    Store(#[from] StoreError),
}

/// Settings of the service.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Simulated carrier latency per order (default 30 ms).
    pub carrier_latency: Duration,
    /// How many carrier lookups run at once (default 8).
    pub carrier_concurrency: usize,
    /// Keep single orders in memory between reads (default on). A SQLite file written by
    /// another process meanwhile (`order-service reset`) empties the cache at the first read
    /// after [`order_cache_check`](Self::order_cache_check); a database shared by instances
    /// (PostgreSQL) is read without it.
    pub order_cache: bool,
    /// How often a cached read asks the SQLite file whether another process wrote it
    /// (default 100 ms): at most one read per interval pays for the question.
    pub order_cache_check: Duration,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            carrier_latency: Duration::from_millis(30),
            carrier_concurrency: 8,
            order_cache: true,
            order_cache_check: Duration::from_millis(100),
        }
    }
}

/// Orders read by ID, kept until a write through this service touches them; at most
/// [`OrderCache::MAX_ENTRIES`], the oldest going first.
///
/// A read that raced with a write must not put the old order back: every write bumps the
/// generation and notes it against the order it wrote, and a read stores its result only if
/// no write to that order happened since it started. (Writes to other orders do not stop it:
/// on a busy server some write is always under way, and a read of an order being confirmed
/// must still be kept for the confirmation's second round.)
#[derive(Debug, Default)]
struct OrderCache {
    entries: std::sync::RwLock<Entries>,
    generation: std::sync::atomic::AtomicU64,
    /// When the file was last asked about other writers: milliseconds since [`check_epoch`].
    checked_at: std::sync::atomic::AtomicU64,
}

/// The origin of [`OrderCache::checked_at`].
fn check_epoch() -> std::time::Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

#[derive(Debug, Default)]
struct Entries {
    /// Shared: a read hands out the cached order itself, not a copy.
    orders: std::collections::HashMap<String, std::sync::Arc<Order>>,
    /// Insertion order, for eviction (an ID may appear after its entry left; it is skipped).
    age: std::collections::VecDeque<String>,
    /// The generation of the latest write to each order written lately.
    written: std::collections::HashMap<String, u64>,
    /// Writes older than `written` remembers: a read that started before this generation
    /// stores nothing.
    floor: u64,
}

impl OrderCache {
    /// About a megabyte of orders: the orders in play stay, a scan of every order does not.
    const MAX_ENTRIES: usize = 1024;

    fn get(&self, order_id: &str) -> Option<std::sync::Arc<Order>> {
        self.entries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .orders
            .get(order_id)
            .cloned()
    }

    /// Whether this read is the one to ask the file about other writers: the first after
    /// `interval` has passed since the last one asked (one caller wins the race).
    fn check_due(&self, interval: Duration) -> bool {
        use std::sync::atomic::Ordering;
        let now = u64::try_from(check_epoch().elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.checked_at.load(Ordering::Relaxed);
        let interval = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        now.saturating_sub(last) >= interval
            && self
                .checked_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many written orders are remembered before they are forgotten all at once.
    const MAX_WRITTEN: usize = 4 * Self::MAX_ENTRIES;

    fn store(&self, order: &std::sync::Arc<Order>, read_started_at: u64) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        let written_since = entries.floor > read_started_at
            || entries
                .written
                .get(&order.order_id)
                .is_some_and(|&at| at > read_started_at);
        if written_since {
            return;
        }
        while entries.orders.len() >= Self::MAX_ENTRIES {
            let Some(oldest) = entries.age.pop_front() else {
                break;
            };
            entries.orders.remove(&oldest);
        }
        if entries
            .orders
            .insert(order.order_id.clone(), std::sync::Arc::clone(order))
            .is_none()
        {
            entries.age.push_back(order.order_id.clone());
        }
        // IDs of entries forgotten since are dropped as they reach the front.
        if entries.age.len() > 2 * Self::MAX_ENTRIES {
            let Entries { orders, age, .. } = &mut *entries;
            age.retain(|id| orders.contains_key(id));
        }
    }

    fn forget(&self, order_id: &str) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        let generation = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        entries.orders.remove(order_id);
        if entries.written.len() >= Self::MAX_WRITTEN {
            entries.written.clear();
            entries.floor = generation;
        } else {
            entries.written.insert(order_id.to_owned(), generation);
        }
    }

    fn clear(&self) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        let generation = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        entries.orders.clear();
        entries.age.clear();
        entries.written.clear();
        entries.floor = generation;
    }
}

/// One step of a shipment recheck.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rechecked {
    /// The order just checked.
    pub order_id: String,
    /// Whether its estimate moved.
    pub changed: bool,
    /// How many orders have been checked so far (1-based, in completion order).
    pub done: usize,
    /// How many orders the recheck covers.
    pub total: usize,
}

/// The order service.
#[derive(Debug, Clone)]
pub struct OrderService {
    store: Store,
    config: ServiceConfig,
    cache: std::sync::Arc<OrderCache>,
}

impl OrderService {
    /// A service over `store`.
    pub fn new(store: Store, config: ServiceConfig) -> Self {
        Self {
            store,
            config,
            cache: Default::default(),
        }
    }

    /// The store underneath.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// One order, or [`OrderError::NotFound`].
    pub async fn order(&self, order_id: OrderId<'_>) -> Result<Order, OrderError> {
        self.shared_order(order_id)
            .await
            .map(std::sync::Arc::unwrap_or_clone)
    }

    /// [`OrderService::order`], shared with the cache: two reads of an order nobody wrote in
    /// between give the same `Arc` (a caller may compare by pointer before comparing orders).
    pub async fn shared_order(
        &self,
        order_id: OrderId<'_>,
    ) -> Result<std::sync::Arc<Order>, OrderError> {
        let order_id = order_id.as_str();
        if self.config.order_cache {
            // Another process may have written the file (`order-service reset` beside a
            // running server): then nothing cached can be trusted.
            if self.cache.check_due(self.config.order_cache_check) && self.store.written_elsewhere()
            {
                self.cache.clear();
            } else if let Some(order) = self.cache.get(order_id) {
                return Ok(order);
            }
        }
        let generation = self.cache.generation();
        let order = std::sync::Arc::new(
            self.store
                .get(order_id)
                .await?
                .ok_or_else(|| OrderError::NotFound(order_id.to_owned()))?,
        );
        if self.config.order_cache {
            self.cache.store(&order, generation);
        }
        Ok(order)
    }

    /// Write the seed again (and forget every cached order).
    pub async fn reset(&self) -> Result<(), OrderError> {
        let result = self.store.reset().await;
        self.cache.clear();
        Ok(result?)
    }

    /// A customer's orders, newest first (empty if none).
    pub async fn customer_orders(&self, customer_id: &str) -> Result<Vec<Order>, OrderError> {
        Ok(self.store.by_customer(customer_id.trim()).await?)
    }

    /// The orders in a status given as text, newest first.
    pub async fn orders_by_status(&self, status: &str) -> Result<Vec<Order>, OrderError> {
        let status = OrderStatus::parse(status)?;
        Ok(self.store.by_status(status).await?)
    }

    /// Set any status but CANCELLED (which goes through [`OrderService::cancel`]).
    pub async fn update_status(
        &self,
        order_id: OrderId<'_>,
        new_status: &str,
    ) -> Result<Order, OrderError> {
        let status = OrderStatus::parse(new_status)?;
        if status == OrderStatus::Cancelled {
            return Err(OrderError::UseCancelOrder);
        }
        let order_id = order_id.as_str();
        let updated = self
            .store
            .set_status(order_id, status, chrono::Utc::now())
            .await;
        self.cache.forget(order_id);
        match updated? {
            crate::store::SetStatus::Updated(order) => Ok(*order),
            crate::store::SetStatus::NotFound => Err(OrderError::NotFound(order_id.to_owned())),
            crate::store::SetStatus::Cancelled => {
                Err(OrderError::StaysCancelled(order_id.to_owned()))
            }
        }
    }

    /// Cancel an order, deciding cancellability atomically at write time.
    pub async fn cancel(
        &self,
        order_id: OrderId<'_>,
        note: Option<&str>,
    ) -> Result<Cancellation, OrderError> {
        self.cancel_once(order_id, note, None).await
    }

    /// [`OrderService::cancel`] under an idempotency key: asked again with the same key (a
    /// step that runs again after its server stopped), a cancellation that key made is
    /// reported as made, and nothing is written twice.
    pub async fn cancel_once(
        &self,
        order_id: OrderId<'_>,
        note: Option<&str>,
        key: Option<&str>,
    ) -> Result<Cancellation, OrderError> {
        let order_id = order_id.as_str();
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        let outcome = self
            .store
            .cancel_once(order_id, note, key, chrono::Utc::now())
            .await;
        self.cache.forget(order_id);
        match outcome? {
            CancelOutcome::Cancelled(cancellation) => Ok(cancellation),
            CancelOutcome::NotFound => Err(OrderError::NotFound(order_id.to_owned())),
            CancelOutcome::NotCancellable(status) => Err(OrderError::NotCancellable {
                order_id: order_id.to_owned(),
                status,
            }),
        }
    }

    /// Order IDs starting with `prefix` (upper-cased), ascending, at most `limit`.
    pub async fn order_ids_with_prefix(
        &self,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, OrderError> {
        Ok(self
            .store
            .ids_with_prefix(&prefix.trim().to_uppercase(), limit)
            .await?)
    }

    /// Ask the (simulated) carrier for a fresh estimate of every SHIPPED order, a bounded number
    /// at a time. Yields one [`Rechecked`] per order as each lookup finishes; dropping the stream
    /// stops the recheck. Idempotent: a second pass changes nothing.
    pub async fn recheck_shipments(
        &self,
    ) -> Result<
        (
            usize,
            impl Stream<Item = Result<Rechecked, OrderError>> + Send + '_,
        ),
        OrderError,
    > {
        let shipped = self.shipped().await?;
        let total = shipped.len();
        let lookups = futures::stream::iter(shipped)
            .map(move |order| async move {
                let changed = self.recheck_one(&order).await?;
                Ok::<_, OrderError>((order.order_id, changed))
            })
            .buffer_unordered(self.carrier_concurrency());
        let stream = lookups.enumerate().map(move |(i, result)| {
            result.map(|(order_id, changed)| Rechecked {
                order_id,
                changed,
                done: i + 1,
                total,
            })
        });
        Ok((total, stream))
    }

    /// The SHIPPED orders a recheck covers, by ID.
    pub async fn shipped(&self) -> Result<Vec<Order>, OrderError> {
        let mut shipped = self.store.by_status(OrderStatus::Shipped).await?;
        shipped.sort_by(|a, b| a.order_id.cmp(&b.order_id));
        Ok(shipped)
    }

    /// How many carrier lookups a recheck runs at once.
    pub fn carrier_concurrency(&self) -> usize {
        self.config.carrier_concurrency.max(1)
    }

    /// Ask the (simulated) carrier for a fresh estimate of one shipped order and keep it;
    /// returns whether the estimate moved from the one `order` carries (a write already made
    /// by an earlier, interrupted pass still counts). Idempotent.
    pub async fn recheck_one(&self, order: &Order) -> Result<bool, OrderError> {
        tokio::time::sleep(self.config.carrier_latency).await;
        let Some(shipment) = order.shipment.as_ref() else {
            return Ok(false);
        };
        let estimate = domain::carrier_estimate(&order.order_id, shipment);
        if estimate == shipment.estimated_delivery {
            return Ok(false);
        }
        if self.store.set_estimate(&order.order_id, estimate).await? {
            self.cache.forget(&order.order_id);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(id: &str) -> Order {
        let customers = crate::seed::customers();
        let mut order = crate::seed::orders(&customers).remove(0);
        order.order_id = id.to_owned();
        order
    }

    #[test]
    fn the_cache_keeps_the_newest_orders_and_never_puts_back_a_raced_read() {
        let cache = OrderCache::default();
        let total = OrderCache::MAX_ENTRIES + 10;
        for n in 0..total {
            cache.store(
                &std::sync::Arc::new(order(&format!("ORD-{n}"))),
                cache.generation(),
            );
        }
        let kept = (0..total)
            .filter(|n| cache.get(&format!("ORD-{n}")).is_some())
            .count();
        assert_eq!(kept, OrderCache::MAX_ENTRIES);
        assert!(cache.get("ORD-0").is_none(), "the oldest went first");
        assert!(cache.get(&format!("ORD-{}", total - 1)).is_some());
        // A read that started before a write does not store what it read.
        let started = cache.generation();
        cache.forget("ORD-X");
        cache.store(&std::sync::Arc::new(order("ORD-X")), started);
        assert!(cache.get("ORD-X").is_none());
        // A write to another order does not stop it.
        let started = cache.generation();
        cache.forget("ORD-Y");
        cache.store(&std::sync::Arc::new(order("ORD-X")), started);
        assert!(cache.get("ORD-X").is_some());
        // Once more orders were written than are remembered one by one, every read that
        // started before the last of those writes stores nothing.
        let started = cache.generation();
        for n in 0..=OrderCache::MAX_WRITTEN {
            cache.forget(&format!("ORD-W{n}"));
        }
        cache.store(&std::sync::Arc::new(order("ORD-Z")), started);
        assert!(cache.get("ORD-Z").is_none());
        cache.store(&std::sync::Arc::new(order("ORD-Z")), cache.generation());
        assert!(cache.get("ORD-Z").is_some());
        // After a reset, no read that started before it stores anything.
        let started = cache.generation();
        cache.clear();
        cache.store(&std::sync::Arc::new(order("ORD-Z")), started);
        assert!(cache.get("ORD-Z").is_none());
    }
}
