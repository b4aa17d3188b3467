//! The fixture server over stdio, on both revisions, through a real rmcp client driving the
//! child process.
#![allow(clippy::unwrap_used)]

use rmcp::model::*;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};

#[derive(Clone)]
struct NamedClient;

impl ClientHandler for NamedClient {
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(ElicitationCapability::default().with_form(Default::default()));
        ClientInfo::new(caps, Implementation::new("stdio-test", "0"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(serde_json::json!({"name": "Ada"})))
    }
}

fn child() -> TokioChildProcess {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_conformance-server"));
    command.arg("--stdio");
    TokioChildProcess::new(command).unwrap()
}

#[tokio::test]
async fn the_same_asking_tool_answers_over_stdio_on_both_revisions() {
    for modern in [false, true] {
        let service = if modern {
            NamedClient
                .serve_with_lifecycle(
                    child(),
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
                .unwrap()
        } else {
            NamedClient.serve(child()).await.unwrap()
        };
        let result = service
            .call_tool(CallToolRequestParams::new(
                "test_input_required_result_elicitation",
            ))
            .await
            .unwrap();
        let text = result.content[0].as_text().unwrap().text.clone();
        assert_eq!(text, "Hello, Ada!", "modern={modern}");
        service.cancel().await.unwrap();
    }
}

/// Over stdio too, a call's span continues the client's trace from `_meta` (no HTTP edge to
/// make it): exported over OTLP to a real receiver.
#[tokio::test]
async fn a_call_over_stdio_continues_the_clients_trace() {
    use backchannel::testing::otlp::{Collector, SERVER, assert_attributes, hex_bytes};
    let collector = Collector::start().await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_conformance-server"));
    command
        .arg("--stdio")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())
        .env("OTEL_SERVICE_NAME", "fixture-over-stdio")
        .env("OTEL_BSP_SCHEDULE_DELAY", "50");
    let service = NamedClient
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap();
    let trace_id = backchannel::testing::random_hex();
    let client_span = &backchannel::testing::random_hex()[..16];
    let mut params = CallToolRequestParams::new("test_input_required_result_elicitation");
    params.set_traceparent(&format!("00-{trace_id}-{client_span}-01"));
    let result = service.call_tool(params).await.unwrap();
    assert_eq!(result.content[0].as_text().unwrap().text, "Hello, Ada!");
    let trace = hex_bytes(&trace_id);
    let call = collector.first(|span| span.trace_id == trace).await;
    service.cancel().await.unwrap();
    assert_eq!(
        call.name,
        "tools/call test_input_required_result_elicitation"
    );
    assert_eq!(call.kind, SERVER);
    assert_eq!(call.parent_span_id, hex_bytes(client_span));
    assert_attributes(
        &call,
        &[
            ("network.transport", "pipe"),
            ("mcp.protocol.version", "2025-11-25"),
        ],
    );
    collector.assert_only_service("fixture-over-stdio");
}
