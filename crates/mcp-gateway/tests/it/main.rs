//! Every integration test of the gateway, in one binary.
#![allow(clippy::unwrap_used)]

mod bridge;
mod stdio;
