//! Every integration test of the support agent, in one binary (one link instead of one per file).

mod cli;
mod cluster;
mod common;
mod flags;
mod model;
mod odd_replies;
mod people;
mod questions;
mod real_model;
mod restart;
mod seed;
mod store;
mod streaming;
mod telemetry;
mod web;
