//! `mcp-gateway stdio`, as a desktop client starts it: a child process in front of the order
//! service limited to 2026-07-28, listed and called by an rmcp client on 2025-11-25.

use rmcp::ServiceExt as _;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use backchannel::Revision;
use backchannel::testing::{call, text_of};

#[tokio::test]
async fn a_stdio_client_lists_and_calls_the_upstreams_tools() {
    let orders = crate::bridge::order_service(Revision::V2026_07_28).await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"));
    command.args([
        "stdio",
        "--upstream",
        &format!("orders=http://{}/mcp", orders.addr),
        "--upstream-revision",
        "orders=2026-07-28",
    ]);
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert!(names.contains(&"get_order"), "{names:?}");
    assert!(names.contains(&"cancel_order"), "{names:?}");
    let answer = client
        .call_tool(call("get_order", json!({"orderId": "ORD-10001"})))
        .await
        .unwrap();
    assert!(text_of(&answer).contains("ORD-10001"), "{answer:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_clear_error_at_start() {
    // A loopback port nobody listens on: taken from the system, then let go.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args([
            "stdio",
            "--upstream",
            &format!("orders=http://{closed}/mcp"),
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no upstream could be reached"), "{stderr}");
    // The reason names the address, in words, not the transport's Rust types.
    let error = stderr
        .lines()
        .find(|line| line.starts_with("Error:"))
        .unwrap_or_default();
    assert!(
        error.contains("cannot connect to \"orders\": ") && error.contains(&closed.to_string()),
        "{stderr}"
    );
    assert!(!error.contains("::"), "{error}");
}

/// Every command the documents show for mcp-gateway (README.md, SECURITY.md, docs/; in a shell
/// block or inline) names a subcommand and flags the binary has.
#[test]
fn every_command_the_docs_show_for_mcp_gateway_names_its_real_flags() {
    let (dir, exe) = (
        env!("CARGO_MANIFEST_DIR"),
        env!("CARGO_BIN_EXE_mcp-gateway"),
    );
    backchannel::testing::docs::assert_commands_hold(dir, "mcp-gateway", exe, 8);
}
