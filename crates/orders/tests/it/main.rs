//! Every integration test of the order service, in one binary (one link instead of one per file).
// The tests play the client, which answers sampling and roots: rmcp marks those deprecated
// (SEP-2577), though they are the protocol.
#![expect(deprecated, reason = "the client side of sampling, roots and logging")]

mod cluster;
mod common;
mod flags;
mod instances;
mod mcp;
mod security;
mod service;
