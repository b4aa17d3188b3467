//! The Movie Database: a GraphQL API with sign-in over SQLite, and MCP tools (through
//! `backchannel`) that recommend by mood, summarise reviews with the client's model, and ask
//! the person whether they have already watched a title.
//!
//! Layers: [`domain`] and [`summary`] (rules, no I/O), [`store`] (sqlx), [`service`] (rules
//! over the store), [`graphql`] (async-graphql schema), [`mcp`] (tools over the in-process
//! schema), [`app`] (HTTP and stdio entry points).

pub mod app;
pub mod auth;
pub mod domain;
mod front;
pub mod graphql;
mod http;
pub mod limits;
pub mod mcp;
pub mod seed;
pub mod service;
pub mod store;
pub mod summary;
