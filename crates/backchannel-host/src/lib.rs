//! The host side of two-way MCP, over rmcp's client: a [`Host`] keeps many named MCP
//! connections (stdio or HTTP, either revision) and answers their elicitation, sampling and roots
//! requests through one [`HostHandler`], with each question routed to the call that caused it.
//! Feature `oauth` signs in to servers that need OAuth 2.1 ([`auth`]).
//!
//! The server side, and the vocabulary both sides share ([`backchannel::Revision`],
//! [`backchannel::ListKind`], [`backchannel::LogLevel`]), is the `backchannel` crate.
//!
//! # Layout
//!
//! - `handler`: [`HostHandler`], what the application decides, and the questions it is handed.
//! - `host`: [`Host`], every connection of a configuration; the shared HTTP client.
//! - `connection`: [`Connection`], opening one (either revision), signing in again, closing;
//!   `transports`: what it opens (a stdio server's process, an HTTP connection's settings and
//!   service, plain or signed in).
//! - `rounds`: a call's or a prompt's rounds of questions, tasks followed or handed back;
//!   `patience`: a request's timeout counting the server's time only.
//! - `direct`: a stateless connection's rounds on the host's own HTTP/1.1
//!   ([`ConnectionConfig::direct_rounds`]).
//! - `roots`: a connection's roots while it is open, added and removed, the server told.
//! - `routed`: the rmcp client handler of one connection, routing to the [`HostHandler`].
//! - `routes`: which call in flight a server's question belongs to.
//! - `streams`: the pooled HTTP client, a 2026-07-28 connection's listen stream.
//! - `listening`: a 2025-11-25 session's listening stream, watched until it is answered.
//! - `config`: [`HostConfig`], the TOML configuration.
//! - `error`: [`HostError`].
//! - [`auth`] (feature `oauth`): OAuth 2.1 sign-in and the token file; `credentials`: a
//!   connection's OAuth tokens kept where the program keeps them.
//! - `fuzzing` (feature `fuzzing`): entry points for the fuzzers.
//! - [`guide`]: a host that answers its servers, step by step (its examples compile).

// rmcp marks sampling, roots and logging deprecated (SEP-2577) although they remain the
// protocol the host answers.
#![warn(missing_docs)]
#![expect(deprecated, reason = "SEP-2577 deprecates what the host answers")]

#[cfg(feature = "oauth")]
pub mod auth;
mod config;
mod connection;
#[cfg(feature = "oauth")]
mod credentials;
mod direct;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod guide;
mod handler;
mod host;
mod listening;
mod patience;
mod roots;
mod rounds;
mod routed;
mod routes;
mod streams;
mod transports;

pub use config::{
    AuthConfig, ConfigError, ConnectionConfig, DEFAULT_LOG_LEVEL, Declared, HostConfig,
    MAX_CONFIG_BYTES, RootConfig, Transport, file_uri,
};
pub use connection::{Connection, MAX_SIGN_INS_PER_REQUEST};
pub use error::{AuthorizeError, HostError, SignInError};
pub use handler::{
    HostHandler, LogMessage, ModelWish, SamplingAnswer, SamplingQuestion, SamplingTurn,
};
pub use host::Host;
pub use rounds::{CallContext, Relayed, Started};
pub use transports::STDERR_TARGET;
