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

mod clock;
mod ctx;
mod deprecated;
mod error;
mod layer;
mod outcome;
pub mod serve;
mod sessions;
mod state;

pub use ctx::{Ctx, Revision, Suspend};
pub use deprecated::user_prompt;
pub use deprecated::{
    ListRootsResult, LogLevel, Root, SamplingMessage, SamplingRequest, SamplingResult,
    SetLevelParams,
};
pub use error::{ToolError, ToolResult};
pub use layer::{Backchannel, BackchannelBuilder, BuildError, TaskSupport, error_text};
pub use outcome::{Elicited, RootsListed, Sampled, UrlElicited};
pub use rmcp::elicit_safe;
pub use sessions::ListKind;
pub use state::StateError;
