//! Every integration test of the library, in one binary (one link instead of one per file).

mod common;
mod host;
mod http;
mod tasks;
mod two_way;
