//! Write-once two-way MCP tools for protocol revisions 2025-11-25 and 2026-07-28, over rmcp.
//!
//! A tool takes a [`Ctx`] and asks its client questions inline:
//!
//! ```ignore
//! #[tool(description = "Cancel an order after the person confirms")]
//! async fn cancel(&self, ctx: Ctx, Parameters(args): Parameters<OrderRef>) -> ToolResult {
//!     let order = self.orders.get(&args.order_id).await?;
//!     match ctx.elicit::<Confirm>("confirm", format!("Cancel {}?", order.id)).await? {
//!         Elicited::Accepted(c) if c.confirmed => self.orders.cancel(&order.id).await,
//!         Elicited::Accepted(_) | Elicited::Declined => Ok(text("Left as it was.")),
//!         Elicited::Cancelled | Elicited::TimedOut => Ok(text("No answer; nothing changed.")),
//!         Elicited::Unsupported => Ok(text("This client cannot ask; use the admin console.")),
//!     }
//! }
//! ```
//!
//! [`Backchannel::call_tool`] drives the body. An ask without an answer suspends it. On
//! 2026-07-28 the layer answers `input_required` and the client's retry runs the body again
//! with the answer; on 2025-11-25 the layer sends the real server-to-client requests itself and
//! runs the body again. Either way the body runs the same number of times, so code before an
//! ask must be a read or idempotent, and writes belong after the last ask.

// rmcp marks sampling, roots and logging deprecated (SEP-2577) although they remain the
// protocol this library speaks. The library names them; its users do not have to (it gives
// them `LogLevel`, the outcomes and the host's own sampling types).
#![warn(missing_docs)]
#![expect(
    deprecated,
    reason = "sampling, roots and logging are the protocol (SEP-2577)"
)]

mod call;
mod clock;
mod ctx;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod keys;
mod layer;
#[cfg(feature = "logging")]
pub mod logging;
pub mod metrics;
mod outbox;
mod outcome;
#[cfg(feature = "postgres")]
pub mod postgres;
mod principal;
mod reach;
mod revision;
mod sampling_roots_logging;
pub mod schema;
mod seal;
pub mod serve;
mod sessions;
mod state;
pub mod tasks;
pub mod telemetry;
#[cfg(feature = "test-util")]
pub mod testing;
#[cfg(feature = "http")]
mod transport;
mod util;

pub use ctx::{Ctx, NotAnswered, PassedRound, Suspend, TASK_PROGRESS_EVERY};
pub use error::{Incident, ToolError, ToolResult};
pub use keys::{MAX_KEY_FILE_BYTES, MIN_KEY_BYTES, StateKeys, StateKeysError};
pub use layer::{
    Backchannel, BackchannelBuilder, BuildError, Relay, SpentLedger, TaskSupport, WeakBackchannel,
    error_text,
};
pub use outcome::{Elicited, RootsListed, Sampled, UrlElicited};
pub use revision::{Revision, UnknownRevision};
pub use rmcp::elicit_safe;
pub use sampling_roots_logging::{
    ListRootsResult, LogLevel, Root, SamplingMessage, SamplingRequest, SamplingResult,
    SetLevelParams,
};
pub use sampling_roots_logging::{user_prompt, with_logging};
pub use seal::{SealError, Sealer};
pub use sessions::{Change, ListKind};
pub use state::StateError;
pub use util::lock;

#[doc(hidden)]
pub use rmcp as __rmcp;

// The README's example is compiled with the doc tests, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExample;

/// How long a server waits for a person's answer unless told otherwise
/// ([`BackchannelBuilder::ask_timeout`]); a host that knows the server's setting waits as long.
pub const DEFAULT_ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);

/// Inside an `impl rmcp::ServerHandler` block, writes the methods that hand requests to the
/// layer in the field `$layer`:
///
/// - always: `supported_protocol_versions` (the layer's), `set_level`, `on_initialized`, `accepted_subscription_filter`, `listen`,
///   and, unless written `without tasks` (a server that answers `tasks/*` itself),
///   `get_task`, `update_task` and `cancel_task`;
/// - with `tools: field`: `call_tool` (driven by the layer), `list_tools` and `get_tool` over
///   the `ToolRouter` in that field;
/// - with `prompts: field` (alone or after `tools`): `get_prompt` (driven by the layer) and
///   `list_prompts` over the `PromptRouter` in that field.
///
/// ```ignore
/// impl ServerHandler for MyServer {
///     backchannel::layer_hooks!(layer, tools: tools, prompts: prompts);
///     fn get_info(&self) -> ServerConfig { /* … */ }
/// }
/// ```
#[macro_export]
macro_rules! layer_hooks {
    ($layer:ident, tools: $tools:ident, prompts: $prompts:ident) => {
        $crate::layer_hooks!($layer, tools: $tools);
        $crate::layer_hooks!(@prompts $layer, $prompts);
    };
    ($layer:ident, prompts: $prompts:ident) => {
        $crate::layer_hooks!($layer);
        $crate::layer_hooks!(@prompts $layer, $prompts);
    };
    (@prompts $layer:ident, $prompts:ident) => {
        async fn get_prompt(
            &self,
            request: $crate::__rmcp::model::GetPromptRequestParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::__rmcp::model::GetPromptResponse, $crate::__rmcp::ErrorData> {
            self.$layer.get_prompt(&self.$prompts, self, request, context).await
        }

        async fn list_prompts(
            &self,
            _request: ::std::option::Option<$crate::__rmcp::model::PaginatedRequestParams>,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::__rmcp::model::ListPromptsResult, $crate::__rmcp::ErrorData> {
            Ok($crate::__rmcp::model::ListPromptsResult::with_all_items(self.$prompts.list_all()))
        }
    };
    ($layer:ident, tools: $tools:ident) => {
        $crate::layer_hooks!($layer);

        async fn call_tool(
            &self,
            request: $crate::__rmcp::model::CallToolRequestParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::__rmcp::model::CallToolResponse, $crate::__rmcp::ErrorData> {
            self.$layer.call_tool(&self.$tools, self, request, context).await
        }

        async fn list_tools(
            &self,
            _request: ::std::option::Option<$crate::__rmcp::model::PaginatedRequestParams>,
            _context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::__rmcp::model::ListToolsResult, $crate::__rmcp::ErrorData> {
            Ok($crate::__rmcp::model::ListToolsResult::with_all_items(self.$tools.list_all()))
        }

        fn get_tool(&self, name: &str) -> ::std::option::Option<$crate::__rmcp::model::Tool> {
            self.$tools.get(name).cloned()
        }
    };
    ($layer:ident) => {
        $crate::layer_hooks!($layer, without tasks);
        $crate::layer_hooks!(@tasks $layer);
    };
    ($layer:ident, without tasks) => {
        fn supported_protocol_versions(
            &self,
        ) -> ::std::borrow::Cow<'static, [$crate::__rmcp::model::ProtocolVersion]> {
            self.$layer.supported_protocol_versions()
        }

        async fn set_level(
            &self,
            request: $crate::SetLevelParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<(), $crate::__rmcp::ErrorData> {
            self.$layer.set_level(&request, &context);
            Ok(())
        }

        async fn on_initialized(
            &self,
            context: $crate::__rmcp::service::NotificationContext<$crate::__rmcp::RoleServer>,
        ) {
            self.$layer.on_initialized(&context);
        }

        fn accepted_subscription_filter(
            &self,
            requested: &$crate::__rmcp::model::SubscriptionFilter,
        ) -> ::std::option::Option<$crate::__rmcp::model::SubscriptionFilter> {
            self.$layer.accepted_subscription_filter(requested)
        }

        async fn listen(
            &self,
            subscription: $crate::__rmcp::service::SubscriptionContext,
        ) -> ::std::result::Result<(), $crate::__rmcp::ErrorData> {
            self.$layer.listen(subscription).await
        }
    };
    (@tasks $layer:ident) => {
        async fn get_task(
            &self,
            request: $crate::__rmcp::model::GetTaskParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::__rmcp::model::GetTaskResult, $crate::__rmcp::ErrorData>
        {
            self.$layer.get_task(&request, &context).await
        }

        async fn update_task(
            &self,
            request: $crate::__rmcp::model::UpdateTaskParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<(), $crate::__rmcp::ErrorData> {
            self.$layer.update_task(request, &context).await
        }

        async fn cancel_task(
            &self,
            request: $crate::__rmcp::model::CancelTaskParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<(), $crate::__rmcp::ErrorData> {
            self.$layer.cancel_task(&request, &context).await
        }
    };
}
