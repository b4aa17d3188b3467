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

/// Over stdio too (no HTTP edge to do it), every message gets its span, a call's continues the
/// client's trace from `_meta`, and each counts as an operation: exported over OTLP to a real
/// receiver.
#[tokio::test]
async fn every_message_over_stdio_has_its_span_and_metric_and_a_call_continues_the_clients_trace() {
    use backchannel::testing::otlp::{
        Collector, SERVER, assert_attributes, attribute, hex_bytes, histogram_count,
    };
    let collector = Collector::start().await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_conformance-server"));
    command
        .arg("--stdio")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())
        .env("OTEL_SERVICE_NAME", "fixture-over-stdio")
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "100");
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
    let tools = service.list_all_tools().await.unwrap();
    assert!(!tools.is_empty());
    let unknown = service
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
    let list = collector.first(|span| span.name == "tools/list").await;
    assert_attributes(&list, &[("network.transport", "pipe")]);
    let initialized = collector
        .first(|span| span.name == "notifications/initialized")
        .await;
    assert_eq!(initialized.kind, SERVER);
    let failed = collector
        .first(|span| span.name == "tools/call no_such_tool")
        .await;
    let error = attribute(&failed, "error.type").unwrap();
    let on_2025 = |method| {
        [
            ("mcp.method.name", method),
            ("mcp.protocol.version", "2025-11-25"),
        ]
    };
    let operations = collector
        .metric("mcp.server.operation.duration", |metric| {
            histogram_count(metric, &on_2025("tools/call")) >= 2
                && histogram_count(metric, &on_2025("tools/list")) >= 1
        })
        .await;
    assert_eq!(histogram_count(&operations, &on_2025("tools/call")), 2);
    let failed_calls = [
        ("mcp.method.name", "tools/call"),
        ("error.type", error.as_str()),
    ];
    assert_eq!(histogram_count(&operations, &failed_calls), 1);
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
