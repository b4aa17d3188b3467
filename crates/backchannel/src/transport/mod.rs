//! The wire this library owns: where rmcp's own wire handling is replaced, for speed, each
//! piece behind a switch back to rmcp's (ARCHITECTURE.md's "The wire we own" names each with
//! its switch and the test that it answers as rmcp would; it is the checklist of an rmcp
//! upgrade).
//!
//! - `raw_result`: a tool result already written as JSON text ([`RawToolResult`](crate::RawToolResult)).
//! - With the `http` feature, beneath `serve`'s HTTP edge: `jsonrpc` (a body checked and parsed
//!   once), `stateless` (2026-07-28 requests each in a task of their own, the switch
//!   `HttpOptions::stateless_fast_path`; `answer_json` writes their answers, `pass_through` hands a
//!   plain call to a gateway), and the 2025-11-25 sessions kept lean (`sessions`: rmcp's
//!   `SessionManager`, one lock per session around plain queues; `driver`, the dispatch that
//!   serves a session once rmcp has answered its `initialize`; `queue`, what its SSE streams are
//!   read from; `sse_body`, the event streams of both paths; `session_post`, a message to an open session from the body parsed once; the
//!   switch `HttpOptions::direct_sessions`). The core reaches a session through a
//!   `SessionLink` in a request's extensions.

/// Items that exist only with the `http` feature (one `cfg` for all of them).
macro_rules! with_http {
    ($($item:item)*) => { $(#[cfg(feature = "http")] $item)* };
}

pub(crate) mod raw_result;

with_http! {
    mod answer_json;
    pub(crate) mod driver;
    pub mod jsonrpc;
    pub(crate) mod pass_through;
    mod queue;
    pub(crate) mod session_post;
    pub(crate) mod sessions;
    mod sse_body;
    pub(crate) mod stateless;
    pub(crate) use sessions::{LeanSessions, NoAnswer, SessionLink};
}
