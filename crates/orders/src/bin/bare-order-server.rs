//! `bare-order-server [--listen ADDR]`: the benchmark baseline. A plain rmcp server whose one
//! tool, `get_order`, answers from an in-memory map of the seed, with the same response framing
//! as `order-service` (Streamable HTTP, SSE, structured content). No backchannel, no database.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use orders::wire::OrderView;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8180")]
    listen: SocketAddr,
}

#[derive(Clone)]
struct Bare {
    orders: Arc<HashMap<String, OrderView>>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Bare {
    /// Look up one order by its ID.
    #[tool]
    async fn get_order(
        &self,
        Parameters(args): Parameters<orders::mcp::OrderRef>,
    ) -> Result<Json<OrderView>, String> {
        self.orders
            .get(args.order_id.trim())
            .cloned()
            .map(Json)
            .ok_or_else(|| format!("No order with ID '{}'.", args.order_id))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let customers = orders::seed::customers();
    let map: HashMap<String, OrderView> = orders::seed::orders(&customers)
        .into_iter()
        .map(|o| (o.order_id.clone(), OrderView::from(o)))
        .collect();
    let server = Bare {
        orders: Arc::new(map),
        tool_router: Bare::tool_router(),
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    eprintln!(
        "bare-order-server listening on http://{}",
        listener.local_addr()?
    );
    let shutdown = CancellationToken::new();
    let options = backchannel::serve::HttpOptions::default();
    let app = backchannel::serve::router(move || server.clone(), &options, shutdown.clone());
    backchannel::serve::http(listener, app, &options, async move {
        backchannel::serve::shutdown_signal().await;
        shutdown.cancel();
    })
    .await?;
    Ok(())
}
