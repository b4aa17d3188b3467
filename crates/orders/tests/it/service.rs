//! The service rules over a real database (a fresh SQLite file per test, or a fresh
//! PostgreSQL database on the PostgreSQL run).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures::StreamExt;
use orders::domain::{OrderId, OrderStatus};
use orders::service::{OrderError, OrderService, ServiceConfig};
use orders::store::Store;

async fn service() -> OrderService {
    service_checking(8).await
}

/// A service on a fresh database whose carrier answers at once, checking `concurrency`
/// shipments at a time.
async fn service_checking(concurrency: usize) -> OrderService {
    let store = Store::open(&crate::common::fresh_database().await)
        .await
        .unwrap();
    let config = ServiceConfig {
        carrier_latency: Duration::ZERO,
        carrier_concurrency: concurrency,
        order_cache: true,
        ..ServiceConfig::default()
    };
    OrderService::new(store, config)
}

/// The status of order `id`, which must exist.
async fn status_of(service: &OrderService, id: &str) -> OrderStatus {
    service.order(OrderId::new(id)).await.unwrap().status
}

/// The note kept with order `id`'s cancellation, if any.
async fn note_of(service: &OrderService, id: &str) -> Option<String> {
    service.store().cancellation_note(id).await.unwrap()
}

#[tokio::test]
async fn the_seeded_database_holds_the_reference_spread() {
    let service = service().await;
    let counts = service.store().status_counts().await.unwrap();
    assert_eq!(
        counts,
        vec![
            (OrderStatus::Pending, 30),
            (OrderStatus::Processing, 25),
            (OrderStatus::Shipped, 87),
            (OrderStatus::Delivered, 50),
            (OrderStatus::Cancelled, 8),
        ]
    );
    let order = service.order(OrderId::new("ORD-10001")).await.unwrap();
    assert_eq!(order.customer.name, "Ana Ruiz");
    assert_eq!(order.customer.email, "ana.ruiz@example.com");
    assert_eq!(order.total_amount.to_string(), "179.99");
    assert_eq!(order.items.len(), 2);
    assert_eq!(order.shipment.unwrap().tracking_number, "DHL-88213");
}

#[tokio::test]
async fn an_unknown_order_has_the_reference_message() {
    let error = service()
        .await
        .order(OrderId::new("ORD-99999"))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "No order with ID 'ORD-99999'. Check the ID and try again."
    );
}

#[tokio::test]
async fn a_customers_orders_come_newest_first_and_an_unknown_customer_has_none() {
    let service = service().await;
    let orders = service.customer_orders("CUST-42").await.unwrap();
    assert_eq!(orders.len(), 7);
    assert!(
        orders
            .windows(2)
            .all(|w| w[0].created_at >= w[1].created_at)
    );
    assert!(service.customer_orders("CUST-99").await.unwrap().is_empty());
}

#[tokio::test]
async fn an_invalid_status_names_the_valid_ones() {
    let error = service().await.orders_by_status("lost").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "Invalid status 'lost'. Must be one of: [PENDING, PROCESSING, SHIPPED, DELIVERED, CANCELLED]"
    );
}

#[tokio::test]
async fn prefix_completion_lists_ids_in_order() {
    let ids = service()
        .await
        .order_ids_with_prefix("ord-1000", 21)
        .await
        .unwrap();
    assert_eq!(ids[..3], ["ORD-10001", "ORD-10002", "ORD-10003"]);
    assert_eq!(ids.len(), 9);
}

#[tokio::test]
async fn cancelling_a_shipped_order_is_refused_and_a_pending_one_works() {
    let service = service().await;
    let error = service
        .cancel(OrderId::new("ORD-10001"), None)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "Order ORD-10001 is SHIPPED and can no longer be cancelled. Only PENDING and PROCESSING orders can."
    );
    assert_eq!(status_of(&service, "ORD-10001").await, OrderStatus::Shipped);

    let cancelled = service
        .cancel(OrderId::new("ORD-10002"), Some("changed mind"))
        .await
        .unwrap();
    assert_eq!(cancelled.order_id, "ORD-10002");
    assert!(cancelled.at > chrono::Utc::now() - chrono::Duration::minutes(1));
    let order = service.order(OrderId::new("ORD-10002")).await.unwrap();
    assert_eq!(order.status, OrderStatus::Cancelled);
    assert_eq!(order.last_updated.timestamp(), cancelled.at.timestamp());
    assert_eq!(cancelled.refund, order.total_amount);
    assert_eq!(
        note_of(&service, "ORD-10002").await.as_deref(),
        Some("changed mind")
    );
    assert!(matches!(
        service.cancel(OrderId::new("ORD-10002"), None).await,
        Err(OrderError::NotCancellable { .. })
    ));
}

#[tokio::test]
async fn concurrent_cancellations_of_one_order_cancel_it_once() {
    let service = service().await;
    let attempts = (0..8).map(|_| {
        let service = service.clone();
        tokio::spawn(async move { service.cancel(OrderId::new("ORD-10008"), None).await })
    });
    let results = futures::future::join_all(attempts).await;
    let won = results.iter().filter(|r| matches!(r, Ok(Ok(_)))).count();
    let refused = results
        .iter()
        .filter(|r| {
            matches!(
                r,
                Ok(Err(OrderError::NotCancellable {
                    status: OrderStatus::Cancelled,
                    ..
                }))
            )
        })
        .count();
    assert_eq!((won, refused), (1, 7));
}

#[tokio::test]
async fn a_cancellation_asked_again_under_its_key_is_reported_done_and_writes_nothing() {
    let service = service().await;
    let order = OrderId::new("ORD-10002");
    let first = service
        .cancel_once(order, Some("first"), Some("task-1/cancel"))
        .await
        .unwrap();
    let stamped = service.order(order).await.unwrap().last_updated;
    // The step ran again (its instance stopped before recording it): the same refund, and the
    // row as the first write left it (its note and time).
    let again = service
        .cancel_once(order, Some("second"), Some("task-1/cancel"))
        .await
        .unwrap();
    assert_eq!(again.refund, first.refund);
    assert_eq!(service.order(order).await.unwrap().last_updated, stamped);
    assert_eq!(
        note_of(&service, "ORD-10002").await.as_deref(),
        Some("first")
    );
    // Another key (another call), or none, finds it cancelled.
    for key in [Some("task-2/cancel"), None] {
        assert!(matches!(
            service.cancel_once(order, None, key).await,
            Err(OrderError::NotCancellable {
                status: OrderStatus::Cancelled,
                ..
            })
        ));
    }
}

#[tokio::test]
async fn update_status_refuses_cancelled_and_changes_nothing() {
    let service = service().await;
    let error = service
        .update_status(OrderId::new("ORD-10002"), "cancelled")
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("Use cancel_order to cancel an order."),
        "{error}"
    );
    assert_eq!(status_of(&service, "ORD-10002").await, OrderStatus::Pending);
    let updated = service
        .update_status(OrderId::new("ORD-10002"), " processing ")
        .await
        .unwrap();
    assert_eq!(updated.status, OrderStatus::Processing);
    assert!(matches!(
        service
            .update_status(OrderId::new("ORD-0"), "SHIPPED")
            .await,
        Err(OrderError::NotFound(_))
    ));
}

#[tokio::test]
async fn the_carrier_refresh_changes_13_then_nothing() {
    let service = service().await;
    for expected in [13, 0] {
        let (total, stream) = service.recheck_shipments().await.unwrap();
        let steps: Vec<_> = stream.map(|s| s.unwrap()).collect().await;
        assert_eq!(total, 87);
        assert_eq!(steps.len(), 87);
        assert_eq!(
            steps.iter().map(|s| s.done).collect::<Vec<_>>(),
            (1..=87).collect::<Vec<_>>()
        );
        assert_eq!(steps.iter().filter(|s| s.changed).count(), expected);
    }
}

#[tokio::test]
async fn a_database_file_keeps_changes_across_restarts_and_reset_reseeds() {
    if crate::common::on_postgres() {
        return; // About SQLite files; the PostgreSQL run reopens databases elsewhere.
    }
    let dir = std::env::temp_dir().join(format!("orders-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("orders.sqlite").display());
    {
        let store = Store::open(&url).await.unwrap();
        let service = OrderService::new(store, ServiceConfig::default());
        service
            .cancel(OrderId::new("ORD-10002"), None)
            .await
            .unwrap();
    }
    let store = Store::open(&url).await.unwrap();
    assert_eq!(
        store.get("ORD-10002").await.unwrap().unwrap().status,
        OrderStatus::Cancelled
    );
    store.reset().await.unwrap();
    assert_eq!(
        store.get("ORD-10002").await.unwrap().unwrap().status,
        OrderStatus::Pending
    );
    assert_eq!(store.order_count().await.unwrap(), 200);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn dropping_a_recheck_stops_it_and_a_later_pass_finishes_the_work() {
    let service = service_checking(2).await;
    let (_, stream) = service.recheck_shipments().await.unwrap();
    let first: Vec<_> = stream.take(10).map(|s| s.unwrap()).collect().await;
    let changed_first = first.iter().filter(|s| s.changed).count();
    // The stream is gone; nothing of the first pass runs any more.
    let (_, stream) = service.recheck_shipments().await.unwrap();
    let second: Vec<_> = stream.map(|s| s.unwrap()).collect().await;
    let changed_second = second.iter().filter(|s| s.changed).count();
    assert!(changed_second > 0, "the first pass stopped early");
    assert!(changed_first + changed_second <= 13 && changed_second >= 13 - changed_first - 2);
}

#[tokio::test]
async fn on_a_file_reads_run_on_the_callers_thread_and_cancels_commit_together() {
    if crate::common::on_postgres() {
        return; // The direct connection is SQLite's.
    }
    let store = Store::open(&crate::common::new_sqlite_file())
        .await
        .unwrap();
    // Finished at the first poll: no hop to another thread, nothing to wait for.
    let read = std::pin::pin!(store.get("ORD-10002"));
    let std::task::Poll::Ready(order) = futures::poll!(read) else {
        panic!("a read through the direct connection finishes without waiting");
    };
    assert_eq!(order.unwrap().unwrap().status, OrderStatus::Pending);
    // Two cancellations written before either commits: one batch, one commit for both.
    let now = chrono::Utc::now();
    let mut first = std::pin::pin!(store.cancel("ORD-10002", Some("batched"), now));
    let mut second = std::pin::pin!(store.cancel("ORD-10008", None, now));
    assert!(
        futures::poll!(first.as_mut()).is_pending(),
        "waits for its commit"
    );
    assert!(
        futures::poll!(second.as_mut()).is_pending(),
        "joins the open batch"
    );
    // A read in between commits the batch first: what it sees is on disk.
    let seen = store.get("ORD-10002").await.unwrap().unwrap();
    assert_eq!(seen.status, OrderStatus::Cancelled);
    let (first, second) = futures::join!(first, second);
    for (outcome, id) in [(first, "ORD-10002"), (second, "ORD-10008")] {
        assert!(
            matches!(outcome.unwrap(), orders::store::CancelOutcome::Cancelled(c) if c.order_id == id),
            "{id}"
        );
        assert_eq!(
            store.get(id).await.unwrap().unwrap().status,
            OrderStatus::Cancelled
        );
    }
    assert_eq!(
        store
            .cancellation_note("ORD-10002")
            .await
            .unwrap()
            .as_deref(),
        Some("batched")
    );
    // A refusal inside a batch reads the status the refusal saw.
    let again = store.cancel("ORD-10002", None, now).await.unwrap();
    assert_eq!(
        again,
        orders::store::CancelOutcome::NotCancellable(OrderStatus::Cancelled)
    );
}

#[tokio::test]
async fn a_cancellation_that_would_wait_for_another_writer_waits_in_the_pool() {
    if crate::common::on_postgres() {
        return; // The direct connection is SQLite's.
    }
    let url = crate::common::new_sqlite_file();
    let store = Store::open(&url).await.unwrap();
    // Another connection (the pool's) holds the write lock.
    let sql_pool::Pool::Sqlite(pool) = store.pool() else {
        panic!("a file store has a SQLite pool");
    };
    let mut writing = pool.begin().await.unwrap();
    sqlx::query("UPDATE orders SET last_updated = last_updated WHERE order_id = 'ORD-10001'")
        .execute(&mut *writing)
        .await
        .unwrap();
    let mut cancel = std::pin::pin!(store.cancel("ORD-10002", None, chrono::Utc::now()));
    assert!(
        futures::poll!(cancel.as_mut()).is_pending(),
        "refused at once by the direct connection, it waits for the lock in the pool"
    );
    writing.commit().await.unwrap();
    let outcome = cancel.await.unwrap();
    assert!(
        matches!(outcome, orders::store::CancelOutcome::Cancelled(_)),
        "{outcome:?}"
    );
    assert_eq!(
        store.get("ORD-10002").await.unwrap().unwrap().status,
        OrderStatus::Cancelled
    );
}

#[tokio::test]
async fn an_in_memory_database_is_served_by_its_pool_alone() {
    let store = Store::open("sqlite::memory:").await.unwrap();
    let service = OrderService::new(store, ServiceConfig::default());
    let cancelled = service
        .cancel(OrderId::new("ORD-10002"), None)
        .await
        .unwrap();
    assert_eq!(
        service
            .order(OrderId::new("ORD-10002"))
            .await
            .unwrap()
            .total_amount,
        cancelled.refund
    );
    assert!(matches!(
        service.cancel(OrderId::new("ORD-10002"), None).await,
        Err(OrderError::NotCancellable { .. })
    ));
}

#[tokio::test]
async fn a_reset_by_another_process_is_seen_at_the_next_read_and_own_writes_keep_the_cache() {
    if crate::common::on_postgres() {
        return; // Instances sharing PostgreSQL read without the cache.
    }
    let url = crate::common::new_sqlite_file();
    let config = ServiceConfig {
        carrier_latency: Duration::ZERO,
        carrier_concurrency: 2,
        order_cache: true,
        order_cache_check: Duration::ZERO,
    };
    let service = OrderService::new(Store::open(&url).await.unwrap(), config);
    let kept = service
        .shared_order(OrderId::new("ORD-10001"))
        .await
        .unwrap();
    service
        .cancel(OrderId::new("ORD-10002"), None)
        .await
        .unwrap();
    let cancelled = service
        .shared_order(OrderId::new("ORD-10002"))
        .await
        .unwrap();
    assert_eq!(cancelled.status, OrderStatus::Cancelled);
    // The service's own write left the other cached order where it was.
    let again = service
        .shared_order(OrderId::new("ORD-10001"))
        .await
        .unwrap();
    assert!(std::sync::Arc::ptr_eq(&kept, &again), "read from the cache");

    // `order-service reset` in another process: a store of its own on the same file.
    let elsewhere = Store::open(&url).await.unwrap();
    elsewhere.reset().await.unwrap();
    drop(elsewhere);
    let after = service
        .shared_order(OrderId::new("ORD-10002"))
        .await
        .unwrap();
    assert_eq!(after.status, OrderStatus::Pending, "the reset is seen");
    let reread = service
        .shared_order(OrderId::new("ORD-10001"))
        .await
        .unwrap();
    assert!(
        !std::sync::Arc::ptr_eq(&kept, &reread),
        "the cache was emptied"
    );
}

#[tokio::test]
async fn the_file_is_asked_about_other_writers_at_most_once_per_interval() {
    if crate::common::on_postgres() {
        return;
    }
    let url = crate::common::new_sqlite_file();
    let config = ServiceConfig {
        carrier_latency: Duration::ZERO,
        carrier_concurrency: 2,
        order_cache: true,
        order_cache_check: Duration::from_secs(3600),
    };
    let service = OrderService::new(Store::open(&url).await.unwrap(), config);
    let first = service.order(OrderId::new("ORD-10002")).await.unwrap();
    assert_eq!(first.status, OrderStatus::Pending);
    let elsewhere = Store::open(&url).await.unwrap();
    elsewhere
        .cancel("ORD-10002", None, chrono::Utc::now())
        .await
        .unwrap();
    drop(elsewhere);
    // Within the interval the cache is trusted: the other process's write is not seen yet.
    let cached = service.order(OrderId::new("ORD-10002")).await.unwrap();
    assert_eq!(cached.status, OrderStatus::Pending);
}

/// A recheck taken over after a crash reads each order afresh, but compares with the estimate
/// recorded when the recheck began: a shipment the stopped pass already wrote still counts as
/// changed, and is not written again.
#[tokio::test]
async fn a_shipment_already_written_by_an_interrupted_pass_still_counts_as_changed() {
    let service = service().await;
    let shipped = service.shipped().await.unwrap();
    let moving = shipped
        .into_iter()
        .find(|order| {
            let shipment = order.shipment.as_ref().unwrap();
            orders::domain::carrier_estimate(&order.order_id, shipment)
                != shipment.estimated_delivery
        })
        .expect("the seed has estimates that move");
    assert!(service.recheck_one(&moving).await.unwrap(), "written");
    let written = service.order(OrderId::new(&moving.order_id)).await.unwrap();
    assert_ne!(written.shipment, moving.shipment);
    // The interrupted pass's order, as recorded before it wrote: still a change.
    assert!(service.recheck_one(&moving).await.unwrap());
    // A new pass over the written order: nothing moves.
    assert!(!service.recheck_one(&written).await.unwrap());
    let again = service.order(OrderId::new(&moving.order_id)).await.unwrap();
    assert_eq!(again, written);
}

#[tokio::test]
async fn a_database_made_before_the_tables_were_keyed_by_id_keeps_its_rows_and_references() {
    if crate::common::on_postgres() {
        return; // The change of storage is SQLite's; PostgreSQL's tables are as they were.
    }
    let url = crate::common::new_sqlite_file();
    // The database as the two earlier migrations left it, with a cancellation already made
    // under a key and an order with lines.
    {
        let pool = sql_pool::connect(&url).await.unwrap();
        let mut earlier = sqlx::migrate!("./migrations/sqlite");
        earlier.migrations.to_mut().retain(|m| m.version <= 2);
        earlier.run(&pool).await.unwrap();
        for statement in [
            "INSERT INTO customers VALUES ('C-1', 'Ada', 'ada@example.com', 'GOLD')",
            "INSERT INTO orders (order_id, status, customer_id, total_cents, created_at, \
             last_updated, cancellation_note, cancel_key) VALUES ('ORD-1', 'CANCELLED', 'C-1', \
             1250, '2026-01-02T03:04:05Z', '2026-01-03T00:00:00Z', 'changed my mind', 'key-1')",
            "INSERT INTO orders (order_id, status, customer_id, total_cents, created_at, \
             last_updated) VALUES ('ORD-2', 'PENDING', 'C-1', 700, '2026-01-02T03:04:05Z', \
             '2026-01-02T03:04:05Z')",
            "INSERT INTO order_items VALUES ('ORD-2', 2, 'P-2', 'Lamp', 1, 500)",
            "INSERT INTO order_items VALUES ('ORD-2', 1, 'P-1', 'Bulb', 2, 100)",
        ] {
            sqlx::query(statement).execute(&pool).await.unwrap();
        }
        pool.close().await;
    }
    let store = Store::open(&url).await.unwrap();
    // Found with everything it had, the lines in their order, and nothing seeded beside it.
    let order = store.get("ORD-2").await.unwrap().unwrap();
    assert_eq!(order.status, OrderStatus::Pending);
    assert_eq!(order.customer.name, "Ada");
    let lines: Vec<_> = order.items.iter().map(|i| i.product_id.as_str()).collect();
    assert_eq!(lines, ["P-1", "P-2"]);
    assert_eq!(store.by_customer("C-1").await.unwrap().len(), 2);
    assert_eq!(
        store.cancellation_note("ORD-1").await.unwrap().as_deref(),
        Some("changed my mind")
    );
    // The key a cancellation was made under still finds it done.
    let again = store
        .cancel_once("ORD-1", None, Some("key-1"), chrono::Utc::now())
        .await
        .unwrap();
    assert!(
        matches!(again, orders::store::CancelOutcome::Cancelled(_)),
        "{again:?}"
    );
    // The references point at the new tables: a line of no order is refused, and removing an
    // order removes its lines.
    let pool = sql_pool::connect(&url).await.unwrap();
    let orphan = sqlx::query("INSERT INTO order_items VALUES ('ORD-9', 1, 'P-1', 'Bulb', 1, 1)")
        .execute(&pool)
        .await;
    assert!(orphan.is_err(), "a line of a missing order was stored");
    sqlx::query("DELETE FROM orders WHERE order_id = 'ORD-2'")
        .execute(&pool)
        .await
        .unwrap();
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM order_items")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(left, 0);
    let keyed: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%WITHOUT ROWID' \
         AND name IN ('customers', 'orders', 'order_items')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(keyed, 3);
}
