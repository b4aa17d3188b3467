//! A server whose tools use each two-way feature once, written once for both revisions:
//! `wrap_parcel` reports progress and logs, `cancel_order` asks the person to confirm (a form),
//! `verify_email` sends the person to a URL, `summarise` borrows the client's model, and
//! `list_folders` asks which folders it may use.
//!
//! ```text
//! cargo run -p backchannel --example two-way-server            # HTTP on a free loopback port
//! cargo run -p backchannel --example two-way-server -- --stdio # one session on stdin/stdout
//! ```
//!
//! Over HTTP it prints the endpoint (`http://127.0.0.1:PORT/mcp`), which serves 2025-11-25
//! sessions and 2026-07-28 stateless requests alike; Ctrl-C stops it.
#![allow(clippy::print_stdout, reason = "an example prints where it listens")]

use backchannel::{
    Backchannel, Ctx, Elicited, LogLevel, RootsListed, Sampled, ToolResult, UrlElicited, serve,
    user_prompt,
};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

/// The form the person fills in before an order is cancelled.
#[derive(Debug, Deserialize, JsonSchema)]
struct Confirmation {
    /// Cancel the order?
    confirmed: bool,
}
backchannel::elicit_safe!(Confirmation);

#[derive(Debug, Deserialize, JsonSchema)]
struct OrderRef {
    /// The order ID, like ORD-10001
    order_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Text {
    /// What to summarise
    text: String,
}

#[derive(Clone)]
struct Shop {
    layer: Backchannel,
    tools: ToolRouter<Self>,
}

fn reply(text: impl Into<String>) -> ToolResult {
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

#[tool_router]
impl Shop {
    /// Wrap a parcel in three steps, reporting each.
    #[tool]
    async fn wrap_parcel(&self, ctx: Ctx) -> ToolResult {
        for (step, what) in ["box", "tape", "label"].iter().enumerate() {
            ctx.progress(step as f64 + 1.0, Some(3.0), Some(what)).await;
            ctx.log(LogLevel::Info, "shop", format!("{what} done"))
                .await;
        }
        reply("Wrapped.")
    }

    /// Cancel an order once the person confirms.
    #[tool]
    async fn cancel_order(&self, ctx: Ctx, Parameters(args): Parameters<OrderRef>) -> ToolResult {
        let question = format!("Cancel {}?", args.order_id);
        // Code before an ask may run more than once: only reads there, writes after.
        reply(
            match ctx.elicit::<Confirmation>("confirm", question).await? {
                Elicited::Accepted(c) if c.confirmed => format!("{} is cancelled.", args.order_id),
                Elicited::Accepted(_) | Elicited::Declined => "Left as it was.".to_owned(),
                Elicited::Cancelled | Elicited::TimedOut => {
                    "No answer; nothing changed.".to_owned()
                }
                Elicited::Unsupported => {
                    "This client cannot ask; use the admin console.".to_owned()
                }
            },
        )
    }

    /// Ask the person to open a link that verifies their e-mail address.
    #[tool]
    async fn verify_email(&self, ctx: Ctx) -> ToolResult {
        let link = "https://example.com/verify";
        reply(
            match ctx
                .elicit_url("verify", "Verify your e-mail address", link)
                .await?
            {
                UrlElicited::Accepted { .. } => "Thanks: the link is open.",
                UrlElicited::Declined | UrlElicited::Cancelled => "Not verified.",
                UrlElicited::TimedOut => "No answer; not verified.",
                UrlElicited::Unsupported => "This client cannot open links.",
            },
        )
    }

    /// Summarise a text in one sentence with the client's model.
    #[tool]
    async fn summarise(&self, ctx: Ctx, Parameters(args): Parameters<Text>) -> ToolResult {
        let prompt = user_prompt(format!("Summarise in one sentence:\n\n{}", args.text), 100);
        let outcome = ctx.sample("summary", prompt).await?;
        reply(match &outcome {
            Sampled::Message(_) => outcome.text().unwrap_or("(no text)").to_owned(),
            Sampled::Refused { message, .. } => format!("The client refused: {message}"),
            Sampled::Unsupported => "This client has no model to lend.".to_owned(),
            Sampled::TimedOut => "The model did not answer in time.".to_owned(),
            Sampled::Failed { message } => format!("The client's answer was broken: {message}"),
        })
    }

    /// List the folders the client lets this server use.
    #[tool]
    async fn list_folders(&self, ctx: Ctx) -> ToolResult {
        let roots = ctx.roots("roots").await?;
        reply(match &roots {
            RootsListed::Listed(_) => roots.uris().join("\n"),
            RootsListed::Failed { message, .. } => format!("The client could not say: {message}"),
            RootsListed::Unsupported => "This client has no roots.".to_owned(),
            RootsListed::TimedOut => "The client did not answer in time.".to_owned(),
        })
    }
}

impl ServerHandler for Shop {
    backchannel::layer_hooks!(layer, tools: tools);

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(backchannel::with_logging(
            ServerCapabilities::builder().enable_tools().build(),
        ))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shop = Shop {
        layer: Backchannel::builder().build()?,
        tools: Shop::tool_router(),
    };
    if std::env::args().any(|arg| arg == "--stdio") {
        serve::stdio(shop).await?;
        return Ok(());
    }
    let options = serve::HttpOptions::default();
    let stop = serve::shutdown_on_signal();
    let app = serve::router(move || shop.clone(), &options, stop.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    serve::http(
        listener,
        app,
        &options,
        async move { stop.cancelled().await },
    )
    .await?;
    Ok(())
}
