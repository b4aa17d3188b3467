//! Every integration test of the order service, in one binary (one link instead of one per file).

mod mcp;
mod security;
mod service;
