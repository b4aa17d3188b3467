//! Every integration test of the host, in one binary (one link instead of one per file).
mod host;
mod oauth;
