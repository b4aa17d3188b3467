//! The Support Desk agent: an MCP host over the order service, the offline rules planner, the
//! web front end with live confirmations and progress, and the one-command demo.

pub mod app;
pub mod bus;
pub mod cli;
pub mod desk;
pub mod events;
pub mod llm;
pub mod messages;
pub mod notes;
pub mod people;
pub mod render;
pub mod rules;
pub mod store;
pub mod vocabulary;
pub mod web;
mod web_session;
mod web_tools;
