//! Every integration test of the conformance fixture server, in one binary (one link instead of one per file).

mod stdio;
