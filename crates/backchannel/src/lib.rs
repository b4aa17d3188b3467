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
//!
//! # Durable tasks
//!
//! Inside a task a body may run more than once: after each answer, and on the instance that
//! takes the task over when its own stops (tools registered
//! [`resumable`](BackchannelBuilder::resumable)). [`Ctx::step`] records a piece of work's
//! result with the task, so a later run returns it without doing the work again; only the lease
//! holder records (the store checks the lease in the same atomic write), so a holder whose task
//! was taken over records nothing and finishes nothing. The record and the task's end are
//! exactly once; a step's work is at least once (an instance killed between the work and its
//! record leaves it to run again), and exactly once in effect when the system it writes to
//! honours [`Ctx::step_key`]. The crate's README has the table and both examples
//! (`cancel_order`, `recheck_shipments`).
//!
//! # Layout
//!
//! - [`Backchannel`] (`layer`): drives a body through its rounds; its builder, session hooks and
//!   tasks; [`layer_hooks!`] (`handler_hooks`) writes the `ServerHandler` methods that call it.
//! - [`Ctx`] (`ctx`): what a tool asks through; the typed outcomes (`outcome`); the call's shared
//!   state (`call`).
//! - The sealed `requestState` (`state`, `seal`: [`Sealer`]) and its key ring (`keys`).
//! - [`tasks`]: durable tasks, their stores and runtime.
//! - [`serve`]: stdio, and (feature `http`) one Streamable HTTP endpoint for both revisions,
//!   over the wire we own (`transport`: the fast path, the lean 2025-11-25 sessions); (feature
//!   `resource-server`) a server as an OAuth protected resource, its sign-in settings
//!   (`serve::SignInSettings`, `clap` flags with feature `cli`).
//! - `sessions` and `reach`: who hears of a change, and how a session is reached.
//! - [`metrics`], [`telemetry`], `logging` (feature `logging`): what an operator watches.
//! - [`Revision`] (`revision`): the one place that knows what differs between revisions;
//!   `principal`: who is calling.
//! - [`standard_headers`]: the SEP-2243 headers, written by hosts and checked by servers.
//! - `sampling_roots_logging`: every call into rmcp's deprecated API, and [`LogLevel`];
//!   `outbox`: the queue between a fast-path handler and its response stream; `transport`'s `raw_result`:
//!   a result as text ([`RawToolResult`]).
//! - `error`: [`ToolError`], [`Incident`]; [`schema`]: tool schemas as clients read them;
//!   `clock` and `util`: time that follows tokio's clock, the one [`lock`], nonces.
//! - [`postgres`] (feature `postgres`): instances sharing one database.
//! - [`testing`] (feature `test-util`), `fuzzing` (feature `fuzzing`): the tests' and fuzzers' kits.
//! - [`guide`]: writing a two-way tool, step by step (its examples compile).

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
pub mod guide;
mod handler_hooks;
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
pub mod standard_headers;
mod state;
pub mod tasks;
pub mod telemetry;
#[cfg(feature = "test-util")]
pub mod testing;
mod transport;
mod util;

pub use call::DEFAULT_ASK_TIMEOUT;
pub use ctx::{Ctx, NotAnswered, PassedRound, Suspend, TASK_PROGRESS_EVERY};
pub use error::{Incident, ToolError, ToolResult};
pub use keys::{MAX_KEY_FILE_BYTES, MIN_KEY_BYTES, StateKeys, StateKeysError};
pub use layer::{
    Backchannel, BackchannelBuilder, BuildError, ChangeBus, LedgerError, OpenedRound, PassedCall,
    Spend, SpentLedger, TaskSupport, WeakBackchannel, error_text,
};
pub use outcome::{
    ANSWER_REASON_META_KEY, AnswerReason, Elicited, RootsListed, Sampled, StepError, UrlElicited,
};
pub use revision::{Revision, UnknownRevision};
pub use rmcp::elicit_safe;
pub use sampling_roots_logging::{
    ListRootsResult, LogLevel, ModelPreferences, Root, SamplingMessage, SamplingRequest,
    SamplingResult, SetLevelParams,
};
pub use sampling_roots_logging::{user_prompt, with_logging};
pub use seal::{SealError, Sealer};
pub use sessions::{Change, ListKind};
pub use state::StateError;
pub use transport::raw_result::RawToolResult;
pub use util::lock;

#[doc(hidden)]
pub use rmcp as __rmcp;

// The README's example is compiled with the doc tests, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExample;
