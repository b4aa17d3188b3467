//! `conformance-server [--listen ADDR]`: the fixture server on `http://ADDR/mcp`.
//! `conformance-server --stdio`: the same fixtures over stdin/stdout (logs go to stderr).

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
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _logs = backchannel::logging::init(&["conformance", "conformance_server"]);
    let args = Args::parse();
    let server = ConformanceServer::new();
    if args.stdio {
        serve::stdio(server).await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let shutdown = CancellationToken::new();
    let options = HttpOptions::default();
    let app = serve::router(move || server.clone(), &options, shutdown.clone());
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
