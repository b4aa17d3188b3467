//! `orders-turbomcp PORT ORDERS_JSON [MAX_REQUESTS]`: `get_order` and a confirmed `cancel_order`
//! on turbomcp 4 over Streamable HTTP on 127.0.0.1:PORT (0: a port of its own; it prints
//! `listening on http://ADDR/mcp` once bound), from the orders in ORDERS_JSON (the
//! order service's own seed, exported by the benchmark). The confirmation is the framework's
//! own idiom: `ctx.client.elicit`, which becomes an `input_required` round on 2026-07-28 and an
//! elicitation request on 2025-11-25. MAX_REQUESTS raises the framework's cap on requests in
//! flight (1,024), as the benchmark raises ours for many open confirmations.

// The tools take `orderId`, as the order service's do; the macro names its fields after the parameters.
#![allow(non_snake_case)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use turbomcp::http::{HttpConfig, router};
use turbomcp::prelude::*;

#[derive(Clone)]
struct Orders {
    orders: Arc<Mutex<HashMap<String, Value>>>,
}

fn missing(id: &str) -> String {
    format!("No order with ID '{id}'. Check the ID and try again.")
}

#[server(name = "orders-turbomcp", version = "1.0.0")]
impl Orders {
    /// One order by ID, as JSON.
    #[tool(description = "One order by ID, as JSON.")]
    #[allow(non_snake_case)]
    async fn get_order(&self, orderId: String) -> McpResult<String> {
        let orders = self.orders.lock().unwrap_or_else(|e| e.into_inner());
        Ok(match orders.get(&orderId) {
            Some(order) => order.to_string(),
            None => missing(&orderId),
        })
    }

    /// Cancel an order once the customer confirms.
    #[tool(description = "Cancel an order once the customer confirms.")]
    #[allow(non_snake_case)]
    async fn cancel_order(&self, ctx: &CallToolContext, orderId: String) -> McpResult<String> {
        if !self
            .orders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&orderId)
        {
            return Ok(missing(&orderId));
        }
        let outcome = ctx
            .client
            .elicit(
                "confirm",
                neutral::ElicitParams::new(
                    format!("Cancel order {orderId}?"),
                    json!({
                        "type": "object",
                        "properties": {"confirmed": {"type": "boolean"}},
                        "required": ["confirmed"],
                    }),
                ),
            )
            .await?;
        let confirmed =
            outcome.accepted() && outcome.content.get("confirmed").and_then(Value::as_bool) == Some(true);
        if !confirmed {
            return Ok(format!("Order {orderId} was not cancelled."));
        }
        let mut orders = self.orders.lock().unwrap_or_else(|e| e.into_inner());
        let Some(order) = orders.get_mut(&orderId) else {
            return Ok(missing(&orderId));
        };
        let status = order["status"].as_str().unwrap_or_default().to_owned();
        if status != "PENDING" && status != "PROCESSING" {
            return Ok(format!(
                "Order {orderId} can no longer be cancelled: it is {status}."
            ));
        }
        order["status"] = json!("CANCELLED");
        Ok(format!("Order {orderId} is cancelled."))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().ok_or("usage: orders-turbomcp PORT ORDERS_JSON")?.parse()?;
    let file = args.next().ok_or("usage: orders-turbomcp PORT ORDERS_JSON [MAX_REQUESTS]")?;
    let mut config = HttpConfig::new();
    if let Some(max) = args.next() {
        config = config.max_concurrent_requests(max.parse()?);
    }
    let list: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(file)?)?;
    let orders = list
        .into_iter()
        .filter_map(|order| Some((order["orderId"].as_str()?.to_owned(), order)))
        .collect();
    let server = Orders {
        orders: Arc::new(Mutex::new(orders)),
    };
    // turbomcp's `serve_http` binds an address it is given and does not say which port it got,
    // so the listener is bound here (port 0 allowed) and served as `serve_http` serves it: its
    // public `router`, with the peer address for its rate limiter.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("orders-turbomcp listening on http://{}/mcp", listener.local_addr()?);
    let app = router(server.into_server().build(), config);
    axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>()).await?;
    Ok(())
}
