//! Shared by the agent's integration tests: the demo on free loopback ports, and a chat call.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::time::Duration;

use agent::app::{self, DemoConfig};
use agent::desk::DeskConfig;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A running demo: the order service and the web UI; stopped when dropped.
pub struct Demo {
    /// The web UI, ending in `/`.
    pub url: String,
    stop: CancellationToken,
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The order service's settings for a test: SQLite in memory, this carrier latency.
pub fn orders_in_memory(carrier_latency: Duration) -> orders::app::Config {
    orders::app::Config {
        database: Some("sqlite::memory:".into()),
        service: orders::service::ServiceConfig {
            carrier_latency,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Start the demo on free ports; returns once the web UI listens.
pub async fn start(orders: orders::app::Config, desk: DeskConfig) -> Demo {
    let stop = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let config = DemoConfig {
        orders_listen: "127.0.0.1:0".parse().unwrap(),
        web_listen: "127.0.0.1:0".parse().unwrap(),
        desk,
        web: Default::default(),
    };
    let shutdown = stop.clone();
    let serve_orders =
        move |listener, stop| async move { orders::app::serve_http(listener, &orders, stop).await };
    tokio::spawn(async move {
        app::demo(config, serve_orders, shutdown, move |url| {
            let _ = tx.send(url);
        })
        .await
        .unwrap();
    });
    Demo {
        url: rx.await.unwrap(),
        stop,
    }
}

/// Post one chat message and return the reply.
pub async fn chat(url: &str, conversation: &str, message: &str) -> String {
    chat_about(url, conversation, message, None).await
}

/// Post one chat message with an order open in the UI, and return the reply.
pub async fn chat_about(
    url: &str,
    conversation: &str,
    message: &str,
    order: Option<&str>,
) -> String {
    let reply: Value = reqwest::Client::new()
        .post(format!("{url}api/chat"))
        .json(&json!({"conversationId": conversation, "message": message, "orderId": order}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    reply["reply"].as_str().unwrap().to_owned()
}

/// The notes of this repository, read by the pinned official filesystem server.
pub fn knowledge() -> agent::desk::Knowledge {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let server = repo.join("tools/node/node_modules/.bin/mcp-server-filesystem");
    assert!(
        server.exists(),
        "run scripts/test first: it installs tools/node"
    );
    agent::desk::Knowledge {
        server: vec![server.display().to_string()],
        current: repo.join("support-kb"),
        archive: repo.join("support-kb-archive"),
    }
}
