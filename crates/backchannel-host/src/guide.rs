//! # Guide: a host that answers its servers
//!
//! A host opens connections to MCP servers and answers what they ask while a call runs: the
//! person's questions (forms and links), the host's model (sampling), the folders a server may
//! use (roots); it shows their progress and log messages. Every example here compiles in the
//! test command (`cargo test --doc`); `examples/terminal-host.rs` is a whole one at the
//! terminal.
//!
//! ## 1. Connections from configuration
//!
//! [`HostConfig`](crate::HostConfig) is TOML: each `[connections.NAME]` is a server over
//! stdio or HTTP, on either revision (`protocol = "auto"` tries the newest first), with the
//! roots it may use, the capabilities to declare, a tool prefix and filter, and how to sign in.
//!
//! ```
//! # fn main() -> Result<(), backchannel_host::ConfigError> {
//! let config = backchannel_host::HostConfig::from_toml(
//!     r#"
//!     client_name = "my-host"
//!     trusted_folders = ["/srv"]
//!
//!     [connections.orders]
//!     transport = "http"
//!     url = "http://127.0.0.1:8080/mcp"
//!     roots = ["/srv/orders"]
//!     capabilities = { elicitation = true, sampling = false, roots = true }
//!
//!     [connections.files]
//!     transport = "stdio"
//!     command = "npx"
//!     args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]
//!     "#,
//! )?;
//! assert_eq!(config.connections.len(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! ## 2. One handler for every question
//!
//! [`HostHandler`](crate::HostHandler) is what the application decides. Every method has a
//! safe default (questions declined, sampling refused, notifications ignored), so a host
//! writes only what it answers. `caller` is the progress token of the call that is waiting on
//! the question, so an application with many people routes each question to the one whose call
//! asked it, never to whoever is looking.
//!
//! ```
//! use backchannel_host::{HostHandler, LogMessage};
//! use rmcp::model::{
//!     ElicitRequestParams, ElicitResult, ElicitationAction, ProgressNotificationParam,
//!     ProgressToken, RequestMetaObject,
//! };
//!
//! struct Desk;
//!
//! impl HostHandler for Desk {
//!     async fn elicit(
//!         &self,
//!         connection: &str,
//!         request: ElicitRequestParams,
//!         _meta: RequestMetaObject,
//!         caller: Option<ProgressToken>,
//!     ) -> ElicitResult {
//!         match request {
//!             // Show the form to the person whose call `caller` is, and send what they said.
//!             ElicitRequestParams::FormElicitationParams { message, .. } => {
//!                 println!("[{connection}] {message} (for {caller:?})");
//!                 ElicitResult::new(ElicitationAction::Accept)
//!                     .with_content(serde_json::json!({"confirmed": true}))
//!             }
//!             // A link: show it as a link, open nothing on the person's behalf.
//!             _ => ElicitResult::new(ElicitationAction::Decline),
//!         }
//!     }
//!
//!     fn on_progress(&self, connection: &str, progress: ProgressNotificationParam) {
//!         println!("[{connection}] {} of {:?}", progress.progress, progress.total);
//!     }
//!
//!     fn on_log(&self, connection: &str, message: LogMessage) {
//!         println!("[{connection}] {:?}", message.level);
//!     }
//! }
//! ```
//!
//! A progress value that does not go up is dropped before it reaches `on_progress`, and a call's
//! result is returned only after the progress that came ahead of it.
//!
//! ## 3. Opening, calling, closing
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use backchannel_host::{CallContext, Host, HostConfig, HostHandler};
//! # struct Desk;
//! # impl HostHandler for Desk {}
//! # async fn run(config: HostConfig) -> Result<(), backchannel_host::HostError> {
//! let host = Host::open(&config, Arc::new(Desk)).await?;
//! // A server that cannot be reached is listed, not fatal.
//! for (name, why) in &host.unavailable {
//!     eprintln!("{name}: {why}");
//! }
//! let orders = host.connection("orders")?;
//! let arguments = serde_json::json!({"order_id": "ORD-10001"});
//! // The caller's token rides with the call: its questions come back with it.
//! let context = CallContext::new().with("progressToken", "ana-1");
//! let result = orders
//!     .call_tool("cancel_order", arguments.as_object().cloned(), &context)
//!     .await?;
//! println!("{:?}", result.content);
//! host.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! The same call works on both revisions: on 2025-11-25 the server's questions arrive as
//! requests on the session; on 2026-07-28 `call_tool` answers each `input_required` round
//! through the handler and retries until the result. To hand a round's questions to the
//! person and come back later (a page that reloads), take them one round at a time with
//! [`Connection::call_round`](crate::Connection::call_round); a call the server runs as a task
//! is followed with `get_task` and answered with `update_task`.
//!
//! ## 4. Signing in (feature `oauth`)
//!
//! A server that answers 401 with a challenge is signed in to with OAuth 2.1 (PKCE, dynamic
//! registration or a configured client, the resource indicator from the server's metadata):
//! [`HostHandler::authorize`](crate::HostHandler::authorize) shows the person the link and
//! returns where the browser came back to. Tokens are kept per connection (`token_file`) and
//! refreshed; a token is only ever sent to the resource it was issued for.
