//! # Guide: writing a two-way tool
//!
//! A walk from an empty server to a tool that reports progress, asks the person, borrows the
//! client's model and survives its instance. Every example here compiles in the test command
//! (`cargo test --doc`); `examples/two-way-server.rs` has all of them in one server.
//!
//! ## 1. A server whose tool asks
//!
//! A server is rmcp's: a `ServerHandler` with a `ToolRouter`. It keeps one [`Backchannel`]
//! (the layer) and lets [`layer_hooks!`](crate::layer_hooks) write the handler methods that
//! drive each call through it. A tool takes a [`Ctx`] and asks inline; the answer comes back
//! typed ([`Elicited`]), and the question's form is the answer type's JSON schema.
//!
//! ```no_run
//! use backchannel::{Backchannel, Ctx, Elicited, ToolResult, serve};
//! use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
//! use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
//! use rmcp::{ServerHandler, tool, tool_router};
//!
//! /// The form the person fills in.
//! #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
//! struct Confirmation {
//!     /// Cancel the order?
//!     confirmed: bool,
//! }
//! backchannel::elicit_safe!(Confirmation);
//!
//! #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
//! struct OrderRef {
//!     /// The order, like ORD-10001
//!     order_id: String,
//! }
//!
//! #[derive(Clone)]
//! struct Shop {
//!     layer: Backchannel,
//!     tools: ToolRouter<Self>,
//! }
//!
//! #[tool_router]
//! impl Shop {
//!     /// Cancel an order once the person confirms.
//!     #[tool]
//!     async fn cancel_order(&self, ctx: Ctx, Parameters(args): Parameters<OrderRef>) -> ToolResult {
//!         let answer = ctx
//!             .elicit::<Confirmation>("confirm", format!("Cancel {}?", args.order_id))
//!             .await?;
//!         let said = match answer {
//!             Elicited::Accepted(Confirmation { confirmed: true }) => "Cancelled.",
//!             Elicited::Accepted(_) | Elicited::Declined => "Left as it was.",
//!             Elicited::Cancelled | Elicited::TimedOut => "No answer; nothing changed.",
//!             Elicited::Unsupported => "This client cannot ask; nothing changed.",
//!         };
//!         Ok(CallToolResult::success(vec![ContentBlock::text(said)]))
//!     }
//! }
//!
//! impl ServerHandler for Shop {
//!     backchannel::layer_hooks!(layer, tools: tools);
//!
//!     fn get_info(&self) -> ServerConfig {
//!         ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let shop = Shop { layer: Backchannel::builder().build()?, tools: Shop::tool_router() };
//!     // Both revisions on one endpoint, loopback only, a free port.
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//!     println!("http://{}/mcp", listener.local_addr()?);
//!     let options = serve::HttpOptions::default();
//!     let stop = tokio_util::sync::CancellationToken::new();
//!     let app = serve::router(move || shop.clone(), &options, stop.clone());
//!     serve::http(listener, app, &options, serve::shutdown_signal()).await?;
//!     Ok(())
//! }
//! ```
//!
//! The question's key (`"confirm"`) names it within the call: a tool that asks twice uses two
//! keys. `?` on an ask is how the body stops while the question is open ([`Suspend`]).
//!
//! ## 2. The one rule: code before an ask runs again
//!
//! An ask without an answer ends the run; the answer runs the body again from the top (on
//! 2026-07-28 the client retries with it, on 2025-11-25 the layer asks on the session and runs
//! the body again itself). So everything before the last ask must be a read, or idempotent, and
//! every write comes after it:
//!
//! ```
//! # use backchannel::{Ctx, Elicited, Suspend};
//! # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Confirmation { confirmed: bool }
//! # backchannel::elicit_safe!(Confirmation);
//! # struct Orders;
//! # impl Orders { async fn status(&self, _: &str) -> String { "PENDING".into() }
//! #              async fn cancel(&self, _: &str) {} }
//! async fn cancel(ctx: &Ctx, orders: &Orders, id: &str) -> Result<String, Suspend> {
//!     let status = orders.status(id).await; // a read: fine to repeat
//!     if status != "PENDING" {
//!         return Ok(format!("{id} is {status}; nothing to cancel."));
//!     }
//!     let answer = ctx.elicit::<Confirmation>("confirm", format!("Cancel {id}?")).await?;
//!     if matches!(answer, Elicited::Accepted(Confirmation { confirmed: true })) {
//!         orders.cancel(id).await; // the write, after the last ask: once
//!         return Ok(format!("{id} is cancelled."));
//!     }
//!     Ok("Left as it was.".into())
//! }
//! ```
//!
//! ## 3. Progress, log messages, a link, the client's model, its folders
//!
//! ```
//! # use backchannel::{Ctx, LogLevel, RootsListed, Sampled, Suspend, UrlElicited, user_prompt};
//! async fn the_rest(ctx: &Ctx) -> Result<(), Suspend> {
//!     // Progress only goes up (a lower value is dropped), across rounds too.
//!     ctx.progress(1.0, Some(3.0), Some("box")).await;
//!     ctx.log(LogLevel::Info, "shop", "boxed").await;
//!
//!     // A link the person opens outside the client (signing in, paying).
//!     match ctx.elicit_url("verify", "Verify your e-mail", "https://example.com/v").await? {
//!         UrlElicited::Accepted { elicitation_id } => {
//!             // ... when the page's work is done (a 2025-11-25 session hears of it):
//!             ctx.url_elicitation_complete(&elicitation_id).await;
//!         }
//!         _ => {}
//!     }
//!
//!     // The client's model, by its leave (the host asks its person).
//!     let summary = ctx.sample("summary", user_prompt("Summarise: ...", 100)).await?;
//!     if let Sampled::Message(_) = &summary {
//!         let _text = summary.text();
//!     }
//!
//!     // The folders the client lets this server use.
//!     if let RootsListed::Listed(_) = ctx.roots("roots").await? {}
//!     Ok(())
//! }
//! ```
//!
//! Each outcome says when the client cannot do it (`Unsupported`: it did not declare the
//! capability, so nothing was asked) and when nobody answered in time (`TimedOut`). A tool's
//! own failure is a result the model can read ([`ToolError::failed`](crate::ToolError)), not a
//! protocol error.
//!
//! ## 4. Tasks that outlive their instance
//!
//! Registered as a task tool, a call may run as a durable task (the client asks for one on
//! 2025-11-25; on 2026-07-28 it is the server's choice): its questions wait in the task, any
//! instance takes the answer, and with a shared [`tasks::TaskStore`](crate::tasks) a task whose
//! instance stops is taken over after its lease. A `resumable` tool runs again from the top
//! there, and [`Ctx::step`] returns what an earlier run recorded instead of doing it again:
//!
//! ```
//! # use backchannel::{Backchannel, BuildError, TaskSupport};
//! fn layer() -> Result<Backchannel, BuildError> {
//!     Backchannel::builder()
//!         .task_tool("cancel_order", TaskSupport::Optional)
//!         .resumable("cancel_order")
//!         .build()
//! }
//! ```
//!
//! In the body, the write becomes a step keyed for the system it writes to:
//! `let key = ctx.step_key("cancel"); ctx.step("cancel", orders.cancel_once(id, Some(&key))).await?`.
//! The crate's README has the table of what is exactly once and what is at least once.
//!
//! ## 5. Serving
//!
//! - [`serve::router`] and [`serve::http`]: one Streamable HTTP endpoint for both revisions,
//!   behind the Host/Origin policy, size caps and timeouts of [`serve::HttpOptions`]; loopback
//!   unless a sign-in is configured (`serve::ResourceServer`, feature `resource-server`).
//! - [`serve::stdio`]: one session on stdin/stdout (logs to stderr).
//! - Many instances: a key ring every instance shares ([`StateKeys`](crate::StateKeys)) seals
//!   the `requestState`, so a round sealed on one is answered on any, once.
//!
//! ## 6. Testing a tool on both revisions
//!
//! Loop over [`Revision::ALL`](crate::Revision): the same calls, the same outcomes. The feature
//! `test-util` gives `backchannel::testing`: a server on port 0, a client that answers as told,
//! and the calls made to the end on either revision (see this crate's `tests/it/`).
//!
//! [`Backchannel`]: crate::Backchannel
//! [`Ctx`]: crate::Ctx
//! [`Elicited`]: crate::Elicited
//! [`Suspend`]: crate::Suspend
//! [`Ctx::step`]: crate::Ctx::step
//! [`serve::router`]: crate::serve::router
//! [`serve::http`]: crate::serve::http
//! [`serve::HttpOptions`]: crate::serve::HttpOptions
//! [`serve::stdio`]: crate::serve::stdio
