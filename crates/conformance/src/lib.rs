//! The fixture server for the official MCP conformance suite, and the client it tests
//! ([`client`], binary `conformance-client`, built on `backchannel_host`).
//!
//! Every tool, prompt and resource the suite names is here. The two-way fixtures (progress,
//! logging, elicitation, sampling, roots, `input_required`) are written once with
//! [`backchannel::Ctx`] and serve both 2025-11-25 and 2026-07-28; only the scenarios that test
//! a wire detail the write-once API hides on purpose (hand-written enum schemas, SEP-1034
//! defaults) use rmcp directly.
// Sampling, roots and logging are deprecated in rmcp (SEP-2577) but remain the protocol.
#![expect(
    deprecated,
    reason = "the suite tests sampling, roots and logging, which rmcp marks deprecated (SEP-2577)"
)]

pub mod client;
mod fixtures;

pub use fixtures::ConformanceServer;
