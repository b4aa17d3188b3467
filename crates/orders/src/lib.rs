//! The Support Desk order service: orders, a confirmed `cancel_order`, and a progress-reporting
//! `recheck_shipments`, over MCP (both protocol revisions) and a small REST API.

pub mod app;
pub mod domain;
pub mod mcp;
pub mod messages;
pub mod rest;
pub mod seed;
pub mod service;
pub mod store;
pub mod wire;
