//! A question that waits in a task outlives the desk: the demo (the desk and its order service
//! in one process) stops while a confirmation waits, starts again on the same files and port,
//! and the person's inbox has the question back; answered, the order is cancelled once.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use agent::app::{self, DemoConfig};
use agent::desk::DeskConfig;
use backchannel::Revision;
use tokio_util::sync::CancellationToken;

use crate::common::{Events, answer, chat, status_of};

/// A demo over the files in `dir`, its web UI on `web`: its URL, its stop, and its end. With
/// `knows_desk` false, its order service ignores the desk's token (as one without sign-in).
async fn run(
    dir: &std::path::Path,
    web: SocketAddr,
    protocol: Revision,
    knows_desk: bool,
) -> (String, CancellationToken, tokio::task::JoinHandle<()>) {
    let orders = orders::app::Config {
        database: Some(format!("sqlite://{}", dir.join("orders.sqlite").display())),
        // As in the demo: the next run takes over at start what the first left.
        sole_instance: true,
        ..crate::common::orders_in_memory(Duration::ZERO)
    };
    let desk = DeskConfig {
        protocol: Some(protocol),
        tasks: true,
        database: Some(format!("sqlite://{}", dir.join("desk.sqlite").display())),
        ..DeskConfig::default()
    };
    let config = DemoConfig {
        orders_listen: "127.0.0.1:0".parse().unwrap(),
        web_listen: web,
        desk,
        web: Default::default(),
    };
    let stop = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let shutdown = stop.clone();
    let serve_orders = move |listener, desk: Option<app::DeskCaller>, stop| {
        crate::common::serve_orders(orders, listener, desk.filter(|_| knows_desk), stop)
    };
    let running = tokio::spawn(async move {
        app::demo(config, serve_orders, shutdown, move |url| {
            let _ = tx.send(url);
        })
        .await
        .unwrap();
    });
    (rx.await.unwrap(), stop, running)
}

/// A fresh folder for one test's files.
fn folder(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("desk-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Ask for ORD-10002's cancellation in the conversation "kept", then stop the demo and start
/// it again on the same files and port: the new URL, stop and end.
/// Check that the restarted desk keeps no wait, then stop it and remove its folder.
async fn nothing_waits_then_stop(
    dir: &std::path::Path,
    (url, stop, running): (String, CancellationToken, tokio::task::JoinHandle<()>),
) {
    assert_eq!(waits_kept(dir).await, 0);
    // Forgotten while the port is still this test's.
    crate::common::forget(&url);
    stop.cancel();
    running.await.unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

async fn asked_then_restarted(
    dir: &std::path::Path,
    protocol: Revision,
    knows_desk: bool,
) -> (String, CancellationToken, tokio::task::JoinHandle<()>) {
    let (url, stop, running) = run(dir, "127.0.0.1:0".parse().unwrap(), protocol, knows_desk).await;
    let web: SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let reply = chat(&url, "kept", "please cancel ORD-10002").await;
    assert!(reply.starts_with("Waiting for your answer"), "{reply}");
    stop.cancel();
    running.await.unwrap();
    // Started again at once: until then another test may take the port (and a demo started
    // there forgets this test's browser session, see `common::start`).
    let restarted = run(dir, web, protocol, knows_desk).await;
    cookie_kept_as_its_digest_only(dir, &url).await;
    restarted
}

/// The desk's file keeps the session by its cookie's SHA-256, never the cookie, and only its
/// user may read it.
async fn cookie_kept_as_its_digest_only(dir: &std::path::Path, url: &str) {
    let cookie = crate::common::cookie(url).await;
    let value = cookie.split_once('=').unwrap().1.to_owned();
    let file = dir.join("desk.sqlite");
    let desk = sqlx::SqlitePool::connect(&format!("sqlite://{}", file.display()))
        .await
        .unwrap();
    let digests: Vec<(String,)> = sqlx::query_as("SELECT digest FROM desk_sessions")
        .fetch_all(&desk)
        .await
        .unwrap();
    assert_eq!(digests, vec![(agent::events::session_digest(&value),)]);
    desk.close().await;
    for kept in [file.clone(), dir.join("desk.sqlite-wal")] {
        let bytes = std::fs::read(&kept).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(&value),
            "the cookie itself is in {}",
            kept.display()
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
}

async fn waits_kept(dir: &std::path::Path) -> usize {
    let url = format!("sqlite://{}", dir.join("desk.sqlite").display());
    let store = agent::store::DeskStore::open(&url).await.unwrap();
    store.waits().await.unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_waiting_in_a_task_survives_the_desk_restarting() {
    survives_the_desk_restarting("restart", Revision::V2026_07_28).await;
}

/// On 2025-11-25 the task is the desk's (its token), not its old MCP session's: the restarted
/// desk, on a new session, reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2025_11_25_a_question_waiting_in_a_task_survives_the_desk_restarting() {
    survives_the_desk_restarting("restart-2025", Revision::V2025_11_25).await;
}

async fn survives_the_desk_restarting(name: &str, protocol: Revision) {
    let dir = folder(name);
    let (url, stop, running) = asked_then_restarted(&dir, protocol, true).await;
    // The same browser (its cookie) and conversation, after the restart.
    let (mut page, secret) = Events::open_at(&url, "kept").await;
    let question = page.next_of("confirmation").await;
    assert_eq!(question["server"], "orders");
    let left = question["seconds"].as_u64().unwrap();
    assert!((1..=60).contains(&left), "{question}");
    let listed = loop {
        let inbox = page.next_of("inbox").await;
        let questions = inbox["questions"].as_array().unwrap().clone();
        if !questions.is_empty() {
            break questions;
        }
    };
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], question["id"]);
    assert_eq!(status_of(&url, "ORD-10002").await, "PENDING");
    let id = question["id"].as_str().unwrap();
    assert_eq!(answer(&url, id, &secret, true).await, 204);
    page.said_ending("Order ORD-10002 is cancelled and a refund of €34.99 has been started.")
        .await;
    assert_eq!(status_of(&url, "ORD-10002").await, "CANCELLED");
    // By the task's step (its key kept with the order: a run again finds it and never cancels
    // twice), and the desk no longer waits.
    let orders = format!("sqlite://{}", dir.join("orders.sqlite").display());
    let orders = sqlx::SqlitePool::connect(&orders).await.unwrap();
    let (status, key): (String, Option<String>) =
        sqlx::query_as("SELECT status, cancel_key FROM orders WHERE order_id = 'ORD-10002'")
            .fetch_one(&orders)
            .await
            .unwrap();
    assert_eq!(status, "CANCELLED");
    assert!(key.is_some(), "cancelled outside the task's step");
    drop(page);
    nothing_waits_then_stop(&dir, (url, stop, running)).await;
}

/// On 2025-11-25 an order service that does not know the desk binds a task to the MCP session
/// that started it, and a restarted desk has a new session: the question cannot come back, and
/// the conversation is told so (nothing was done), instead of waiting for an answer in silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2025_11_25_a_task_bound_to_the_old_session_is_said_to_be_gone() {
    let dir = folder("restart-2025-unknown");
    let (url, stop, running) = asked_then_restarted(&dir, Revision::V2025_11_25, false).await;
    let (mut page, _) = Events::open_at(&url, "kept").await;
    let said = loop {
        let event = page.next().await;
        assert_ne!(event["event"], "confirmation", "{event}");
        if event["event"] == "said" {
            break event;
        }
    };
    let text = said["text"].as_str().unwrap();
    assert!(
        text.contains("is gone") && text.contains("Nothing was done"),
        "{text}"
    );
    assert_eq!(status_of(&url, "ORD-10002").await, "PENDING");
    drop(page);
    nothing_waits_then_stop(&dir, (url, stop, running)).await;
}
