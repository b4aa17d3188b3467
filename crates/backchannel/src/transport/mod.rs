//! The transport this library owns beneath the HTTP edge (feature `http`): the 2025-11-25
//! sessions behind `/mcp` kept lean (`sessions`: rmcp's `SessionManager`, one lock per session
//! around plain queues), the dispatch that serves a session once rmcp has answered its
//! `initialize` (`driver`), and the queues its SSE streams are read from (`queue`). The core
//! reaches a session through a [`SessionLink`] in a request's extensions.

pub(crate) mod driver;
mod queue;
pub(crate) mod sessions;

pub(crate) use sessions::{LeanSessions, NoAnswer, SessionLink};
