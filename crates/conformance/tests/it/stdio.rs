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
