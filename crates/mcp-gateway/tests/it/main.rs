//! Every integration test of the gateway, in one binary.
#![allow(clippy::unwrap_used)]
// The tests play the client, which answers sampling: rmcp marks it deprecated (SEP-2577),
// though it is the protocol.
#![expect(deprecated, reason = "the client side of sampling")]

mod bridge;
mod common;
mod guarded;
mod pass;
mod personal;
mod replicas;
mod signed_in;
mod stdio;
mod tasks;
mod two_way;
