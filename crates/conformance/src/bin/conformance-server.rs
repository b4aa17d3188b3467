//! `conformance-server [--listen ADDR]`: the fixture server on `http://ADDR/mcp`.
//! `conformance-server --stdio`: the same fixtures over stdin/stdout (logs go to stderr).
//! `--tasks URL` keeps tasks in that SQLite or PostgreSQL database instead of memory;
//! `--metrics` serves Prometheus text at `/metrics`; `--only-revision R` serves one revision.

use std::net::SocketAddr;

use anyhow::Context;
use backchannel::serve::{self, HttpOptions};
use clap::Parser;
use conformance::ConformanceServer;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(about = "Fixture server for the official MCP conformance suite")]
struct Args {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1:3000")]
    listen: SocketAddr,
    /// Serve one session over stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
    /// Keep tasks in this database (`sqlite://FILE?mode=rwc` or `postgres://…`) instead of memory.
    #[arg(long, value_name = "URL")]
    tasks: Option<String>,
    /// Serve Prometheus metrics at /metrics (behind the same Host checks as /mcp).
    #[arg(long)]
    metrics: bool,
    /// Serve this protocol revision only (2025-11-25 or 2026-07-28), refusing the other as an
    /// unsupported version: the fixture behind a bridge under test.
    #[arg(long, value_name = "REVISION")]
    only_revision: Option<backchannel::Revision>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let export = backchannel::telemetry::Export::from_vars(
        |name| std::env::var(name).ok(),
        "conformance-server",
    );
    let _logs =
        backchannel::logging::init_with(&["conformance", "conformance_server"], export.as_ref());
    let args = Args::parse();
    let store = match &args.tasks {
        Some(url) => Some(std::sync::Arc::new(
            backchannel::tasks::SqlTaskStore::open(url)
                .await
                .with_context(|| format!("cannot open the task database {url}"))?,
        )
            as std::sync::Arc<dyn backchannel::tasks::TaskStore>),
        None => None,
    };
    let server = ConformanceServer::with_options(store, args.only_revision);
    if args.stdio {
        serve::stdio(server).await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let shutdown = CancellationToken::new();
    let mut options = HttpOptions::default();
    if args.only_revision == Some(backchannel::Revision::V2026_07_28) {
        // No 2025-11-25 sessions to keep: every request goes the stateless way.
        options.legacy_sessions = false;
    }
    let mut app = serve::router(move || server.clone(), &options, shutdown.clone());
    if args.metrics {
        app = app.merge(serve::metrics_router());
    }
    eprintln!(
        "conformance-server listening on http://{}/mcp",
        listener.local_addr()?
    );
    serve::http(listener, app, &options, async move {
        serve::shutdown_signal().await;
        shutdown.cancel();
    })
    .await?;
    Ok(())
}
