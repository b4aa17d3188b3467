//! `conformance-client URL`: the official suite's client under test, built on
//! `backchannel_host`. The suite starts it with the mock server's URL as the last argument,
//! the scenario in `$MCP_CONFORMANCE_SCENARIO`, its data in `$MCP_CONFORMANCE_CONTEXT` (JSON)
//! and the revision in `$MCP_CONFORMANCE_PROTOCOL_VERSION`. It connects one host connection,
//! lists the tools and calls them (the ones the context names, with their arguments, or every
//! tool with arguments made from its schema), answering questions as a person who accepts the
//! form's defaults would.

use std::sync::Arc;

use anyhow::Context;
use backchannel_host::{Host, HostConfig};
use conformance::client::{ConformanceHandler, Scenario, arguments_for};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _logs = backchannel::logging::init(&["conformance", "conformance_client"]);
    let url = std::env::args()
        .next_back()
        .filter(|arg| arg.starts_with("http"))
        .context("usage: conformance-client SERVER_URL")?;
    let scenario = Scenario::from_env(
        std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default(),
        std::env::var("MCP_CONFORMANCE_CONTEXT").ok().as_deref(),
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
            .ok()
            .as_deref(),
    )?;
    let config: HostConfig = scenario.host_config(&url);
    let host = Host::open(&config, Arc::new(ConformanceHandler)).await?;
    if let Some((name, reason)) = host.unavailable.iter().next() {
        anyhow::bail!("cannot connect to {name}: {reason}");
    }
    let connection = host.connection(conformance::client::CONNECTION)?;
    let tools = connection.tools().await?;
    let calls = match scenario.tool_calls() {
        Some(calls) => calls,
        None => conformance::client::echo_schema_call(&tools).unwrap_or_else(|| {
            tools
                .iter()
                .map(|tool| (tool.name.to_string(), arguments_for(tool)))
                .collect()
        }),
    };
    for (name, arguments) in calls {
        match connection
            .call_tool(&name, Some(arguments), &Default::default())
            .await
        {
            Ok(result) => tracing::info!(tool = %name, is_error = ?result.is_error, "called"),
            Err(error) => tracing::warn!(tool = %name, %error, "call failed"),
        }
    }
    host.close().await;
    Ok(())
}
