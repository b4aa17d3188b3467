//! Every kind of question the gateway relays, in both directions: `backchannel`'s test server
//! (a tool per two-way feature) limited to one revision, the gateway in front of it, and a
//! client on the other revision answering forms, a URL and sampling.

use std::sync::atomic::Ordering;

use backchannel::testing::TestServer;
use backchannel::testing::{Served, connect_http, text_of};
use backchannel::{Backchannel, Revision};

use crate::common::{call_to_the_end, gateway, other, test_server_on};
use rmcp::model::*;
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::json;

async fn test_server(only: Revision) -> (Served, TestServer) {
    test_server_on(Backchannel::builder().only_revision(only).build().unwrap()).await
}

/// A client that says yes, picks blue, opens URLs and answers sampling with a fixed text.
#[derive(Clone)]
struct Agreeable;

impl Agreeable {
    fn form(message: &str) -> ElicitResult {
        let content = match message {
            "Colour?" => json!({"color": "blue"}),
            _ => json!({"confirmed": true}),
        };
        ElicitResult::new(ElicitationAction::Accept).with_content(content)
    }

    fn elicit(request: ElicitRequestParams) -> ElicitResult {
        match request {
            ElicitRequestParams::FormElicitationParams { message, .. } => Self::form(&message),
            _ => ElicitResult::new(ElicitationAction::Accept),
        }
    }

    fn sample() -> CreateMessageResult {
        CreateMessageResult::new(
            SamplingMessage::assistant_text("a short summary"),
            "client-model".into(),
        )
    }
}

impl ClientHandler for Agreeable {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(
            ElicitationCapability::default()
                .with_form(Default::default())
                .with_url(Default::default()),
        );
        caps.sampling = Some(Default::default());
        ClientConfig::new(caps, Implementation::new("agreeable", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(Self::elicit(request))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Ok(Self::sample())
    }
}

/// `tool` called to its final result, every question answered as `Agreeable` answers.
async fn call_through(client: &RunningService<RoleClient, Agreeable>, tool: &str) -> String {
    let result = call_to_the_end(client, tool, json!({}), |request| {
        let answer = match request {
            InputRequest::Elicitation(request) => {
                serde_json::to_value(Agreeable::elicit(request.params))
            }
            InputRequest::CreateMessage(_) => serde_json::to_value(Agreeable::sample()),
            other => panic!("not asked here: {other:?}"),
        };
        answer.unwrap()
    })
    .await;
    text_of(&result)
}

async fn every_question_crosses(downstream: Revision) {
    let upstream = other(downstream);
    let (served, server) = test_server(upstream).await;
    let (front, _gateway) = gateway("test", served.addr, upstream).await;
    let client = connect_http(
        Agreeable,
        &format!("http://{}/mcp", front.addr),
        downstream,
        None,
    )
    .await;

    // Two questions in a row, each answered once; the tool writes once, after both.
    let two = call_through(&client, "two_steps").await;
    assert!(
        two.contains("blue") && two.contains("confirmed: true"),
        "{two}"
    );
    assert_eq!(
        server.observed.writes.load(Ordering::SeqCst),
        1,
        "{two} runs before ask {}",
        server.observed.runs_before_ask.load(Ordering::SeqCst)
    );
    // One upstream call, whose body the upstream's layer runs once, then again after each of
    // its two answers (a call made again for each round would have run it six times): a
    // 2025-11-25 upstream's call is held between a 2026-07-28 client's rounds, and a
    // 2025-11-25 client is asked at once, inside the upstream's round.
    assert_eq!(server.observed.runs_before_ask.load(Ordering::SeqCst), 3);
    let summary = call_through(&client, "summarise").await;
    assert_eq!(summary, "message a short summary", "{downstream}");
    let signed_in = call_through(&client, "sign_in").await;
    assert!(signed_in.starts_with("accepted "), "{signed_in}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_2025_client_answers_forms_a_url_and_sampling_of_a_2026_only_server() {
    every_question_crosses(Revision::V2025_11_25).await;
}

#[tokio::test]
async fn a_2026_client_answers_forms_a_url_and_sampling_of_a_2025_only_server() {
    every_question_crosses(Revision::V2026_07_28).await;
}

/// A client that counts the tool list changes it is told of.
#[derive(Clone, Default)]
struct Listening(std::sync::Arc<tokio::sync::Notify>);

impl ClientHandler for Listening {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.0.notify_one();
    }
}

/// An upstream on `upstream` says its tools changed (a 2025-11-25 session's notification, a
/// 2026-07-28 listen stream's); the gateway's 2025-11-25 client hears of it.
async fn a_tool_list_change_crosses(upstream: Revision) {
    let (served, _server) = test_server(upstream).await;
    let (front, gateway) = gateway("test", served.addr, upstream).await;
    let told = Listening::default();
    let client = connect_http(
        told.clone(),
        &format!("http://{}/mcp", front.addr),
        Revision::V2025_11_25,
        None,
    )
    .await;
    // The tool tells the upstream's sessions (the gateway's among them) that its tools changed.
    let result = call_to_the_end(&client, "touch_tools", json!({}), |_| json!({})).await;
    assert!(text_of(&result).starts_with("notified "), "{result:?}");
    tokio::time::timeout(std::time::Duration::from_secs(10), told.0.notified())
        .await
        .expect("the gateway's client is told the tools changed");
    // The list was made again, and still offers every tool.
    let listed = client.peer().list_all_tools().await.unwrap();
    assert_eq!(listed.len(), gateway.tool_names().len());
    assert!(listed.iter().any(|tool| tool.name == "touch_tools"));
}

#[tokio::test]
async fn a_2025_upstreams_tool_list_change_reaches_the_gateways_clients() {
    a_tool_list_change_crosses(Revision::V2025_11_25).await;
}

#[tokio::test]
async fn a_2026_upstreams_tool_list_change_reaches_the_gateways_clients() {
    a_tool_list_change_crosses(Revision::V2026_07_28).await;
}

#[tokio::test]
async fn a_2026_servers_rounds_reach_a_2026_client_with_their_own_keys_and_sealed_state() {
    let (served, server) = test_server(Revision::V2026_07_28).await;
    let (front, _gateway) = gateway("test", served.addr, Revision::V2026_07_28).await;
    let upstream_url = format!("http://{}/mcp", served.addr);
    let client = connect_http(
        Agreeable,
        &format!("http://{}/mcp", front.addr),
        Revision::V2026_07_28,
        None,
    )
    .await;
    let direct = connect_http(Agreeable, &upstream_url, Revision::V2026_07_28, None).await;

    // Round by round: the upstream's keys, one upstream run per round.
    let mut params = backchannel::testing::call("two_steps", json!({}));
    let mut keys = Vec::new();
    let result = loop {
        match client.peer().call_tool_once(params.clone()).await.unwrap() {
            CallToolResponse::Complete(result) => break result,
            CallToolResponse::InputRequired(round) => {
                let state = round.request_state.clone().unwrap();
                // The upstream does not take the gateway's state: it is the gateway's seal.
                let mut replayed = backchannel::testing::call("two_steps", json!({}));
                replayed.request_state = Some(state.clone());
                replayed.input_responses = Some(Default::default());
                assert!(
                    direct.peer().call_tool_once(replayed).await.is_err(),
                    "the upstream took the gateway's state"
                );
                // A changed state is refused by the gateway.
                let mut tampered = params.clone();
                tampered.request_state = Some(format!("{state}x"));
                tampered.input_responses = Some(Default::default());
                let refused = client.peer().call_tool_once(tampered).await.unwrap_err();
                assert!(refused.to_string().contains("requestState"), "{refused}");
                let requests = round.input_requests.unwrap_or_default();
                keys.extend(requests.keys().cloned());
                params.input_responses = Some(
                    requests
                        .into_iter()
                        .map(|(key, request)| {
                            let InputRequest::Elicitation(request) = request else {
                                panic!("a form was expected: {request:?}");
                            };
                            (
                                key,
                                serde_json::to_value(Agreeable::elicit(request.params)).unwrap(),
                            )
                        })
                        .collect(),
                );
                params.request_state = round.request_state;
            }
            other => panic!("unexpected answer {other:?}"),
        }
    };
    assert_eq!(keys, ["first", "second"], "the upstream's own keys");
    let text = text_of(&result);
    assert!(
        text.contains("blue") && text.contains("confirmed: true"),
        "{text}"
    );
    assert_eq!(server.observed.writes.load(Ordering::SeqCst), 1);
    // One upstream run per round: the first request and one per answered round (the
    // gateway's checks above never reached the upstream's tool).
    assert_eq!(server.observed.runs_before_ask.load(Ordering::SeqCst), 3);
    client.cancel().await.unwrap();
    direct.cancel().await.unwrap();
}
