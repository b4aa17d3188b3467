//! Every integration test of the Movie Database, in one binary (one link instead of one per file).

mod app;
mod common;
mod graphql;
mod http;
mod mcp;
mod security;
