//! `mcp-gateway`: one MCP endpoint in front of other MCP servers (upstreams), served on both
//! protocol revisions whatever revision each upstream speaks. A 2025-11-25 client can use a
//! 2026-07-28-only server and the reverse: the upstream's questions (form and URL elicitation,
//! sampling) are asked of the downstream client in the downstream's revision, and the
//! upstream's progress reaches the downstream call.
//!
//! The gateway is a [`Gateway`] server on `backchannel`'s layer, whose tools and prompts are
//! the upstreams'; each call is forwarded through `backchannel-host`, which speaks the
//! upstream's revision. The upstream runs each call once, and the client answers its questions
//! as the upstream asked them (module `forward`):
//!
//! - a 2025-11-25 client is asked at once, on its session, inside the upstream's call;
//! - a 2026-07-28 client talking to a 2026-07-28 upstream gets the upstream's own rounds (its
//!   keys; its `requestState` sealed inside the layer's), one upstream request per round, the
//!   gateway keeping nothing between them;
//! - a 2026-07-28 client talking to a 2025-11-25 upstream: the upstream's call is held open
//!   between the client's rounds, bounded in time and number (module `hold`).
//!
//! An upstream's task (tasks extension) is relayed rather than run by the gateway: a client
//! that declared tasks gets it under a sealed id of the gateway's, bound to that client, and
//! its `tasks/get`, `tasks/update` and `tasks/cancel` go to the upstream task (module `tasks`).
//!
//! A caller's own credentials never go upstream. An upstream is reached with the gateway's
//! credentials (none, a bearer file, its own OAuth sign-in), or, when marked per-person, with
//! the calling person's own tokens, which the gateway asks them to obtain by a URL elicitation
//! (module `personal`).

//!
//! # Layout
//!
//! - [`app`]: what the binary calls: serving over HTTP or stdio from the flags' settings.
//! - `gateway`: [`Gateway`], the server: tool routes, prompts, resources, tasks, list changes.
//! - `upstream`: the upstream connections, by the kinds of question their callers answer.
//! - `forward`: one call or prompt sent upstream, as the revisions on either side want.
//! - `pass`: a 2026-07-28 client's plain first round to a 2026-07-28 upstream, relayed before
//!   the handler's machinery is built for it ([`Gateway::pass_through`]).
//! - `switchboard`: [`Switchboard`], where an upstream call's questions, progress and log
//!   messages go (the downstream call that caused it).
//! - `hold`: a 2025-11-25 upstream's call held between a 2026-07-28 client's rounds; `hop`: a
//!   round passed to the instance that holds its call.
//! - `tasks`: an upstream's tasks under sealed ids of the gateway's.
//! - `personal`: each person's own sign-in to an upstream marked per-person (URL elicitation,
//!   the sign-in pages, their tokens sealed in the gateway's database).
//! - `catalog`: the upstreams' resources, templates, prompts and completions.
//! - `config`: [`Upstream`], [`quick_config`], what the gateway declares upstream.
//! - `error`: [`GatewayError`].

// Sampling is deprecated in rmcp (SEP-2577) but remains the protocol, and the gateway relays it.
#![expect(
    deprecated,
    reason = "the gateway relays sampling, which rmcp marks deprecated (SEP-2577)"
)]

pub mod app;
mod catalog;
mod config;
mod error;
mod forward;
mod gateway;
mod hold;
mod hop;
mod pass;
mod personal;
mod switchboard;
mod tasks;
mod upstream;

pub use config::{
    GatewayOptions, UPSTREAM_CALL_TIMEOUT, Upstream, quick_config, quick_config_with_meta,
    relayed_capabilities,
};
pub use error::GatewayError;
pub use gateway::Gateway;
pub use hop::HOP_PATH;
pub use personal::{LINK_LIFETIME, SIGN_IN_WAIT};
pub use switchboard::Switchboard;
