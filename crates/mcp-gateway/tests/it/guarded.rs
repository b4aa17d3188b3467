//! What the gateway refuses to pass on, and what no caller can take from another: questions a
//! client never declared, URLs a person must not be sent to, rounds whose state a client could
//! read, and held calls beyond a caller's share.

use std::sync::{Arc, Mutex};

use backchannel::testing::{Served, TestServer, connect_http, text_of};
use backchannel::{Backchannel, Revision};
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};

use crate::common::{call_to_the_end, gateway, test_server_on};

async fn test_server(only: Revision) -> (Served, TestServer) {
    test_server_on(Backchannel::builder().only_revision(only).build().unwrap()).await
}

/// A client that opens every URL it is shown and says yes to every form, recording the URLs;
/// it declares URL elicitation only when `urls`.
#[derive(Clone)]
struct Opener {
    urls: bool,
    shown: Arc<Mutex<Vec<String>>>,
}

impl Opener {
    fn new(urls: bool) -> Opener {
        Opener {
            urls,
            shown: Arc::default(),
        }
    }

    fn answer(&self, request: &ElicitRequestParams) -> ElicitResult {
        if let ElicitRequestParams::UrlElicitationParams { url, .. } = request {
            self.shown.lock().unwrap().push(url.clone());
            return ElicitResult::new(ElicitationAction::Accept);
        }
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirmed": true}))
    }

    fn shown(&self) -> Vec<String> {
        self.shown.lock().unwrap().clone()
    }
}

impl ClientHandler for Opener {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        let mut elicitation = ElicitationCapability::default().with_form(Default::default());
        if self.urls {
            elicitation = elicitation.with_url(Default::default());
        }
        caps.elicitation = Some(elicitation);
        ClientConfig::new(caps, Implementation::new("opener", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.answer(&request))
    }
}

const PAIRINGS: [(Revision, Revision); 4] = [
    (Revision::V2025_11_25, Revision::V2025_11_25),
    (Revision::V2025_11_25, Revision::V2026_07_28),
    (Revision::V2026_07_28, Revision::V2025_11_25),
    (Revision::V2026_07_28, Revision::V2026_07_28),
];

/// `open_url` of `url` through a gateway in front of an upstream on `upstream`, by `client` on
/// `downstream`: the tool's text (or its error's).
async fn open(opener: &Opener, downstream: Revision, upstream: Revision, url: &str) -> String {
    let (served, _server) = test_server(upstream).await;
    let (front, _gateway) = gateway("test", served.addr, upstream).await;
    let client = connect_http(
        opener.clone(),
        &format!("http://{}/mcp", front.addr),
        downstream,
        None,
    )
    .await;
    let result = call_to_the_end(&client, "open_url", json!({ "url": url }), |request| {
        let InputRequest::Elicitation(request) = request else {
            panic!("only a URL is asked here: {request:?}");
        };
        serde_json::to_value(opener.answer(&request.params)).unwrap()
    })
    .await;
    client.cancel().await.unwrap();
    text_of(&result)
}

#[tokio::test]
async fn a_url_a_person_must_not_be_sent_to_never_leaves_the_gateway() {
    for (downstream, upstream) in PAIRINGS {
        for url in [
            "javascript:alert(document.cookie)",
            "data:text/html,<script>alert(1)</script>",
            "http://sign-in.example/login",
            "https://user:secret@sign-in.example/login",
        ] {
            let opener = Opener::new(true);
            let text = open(&opener, downstream, upstream, url).await;
            assert!(
                opener.shown().is_empty(),
                "{downstream} from {upstream}: {url} reached the client"
            );
            assert!(
                text.contains("declined") || text.contains("not passed on"),
                "{downstream} from {upstream}, {url}: {text}"
            );
        }
        // An https URL goes, as the upstream asked it.
        let opener = Opener::new(true);
        let text = open(&opener, downstream, upstream, "https://sign-in.example/x").await;
        assert_eq!(opener.shown(), ["https://sign-in.example/x"], "{text}");
        assert_eq!(text, "accepted", "{downstream} from {upstream}");
    }
}

#[tokio::test]
async fn a_client_that_declared_forms_only_is_never_sent_a_url() {
    for (downstream, upstream) in PAIRINGS {
        let opener = Opener::new(false);
        let text = open(&opener, downstream, upstream, "https://sign-in.example/x").await;
        assert!(opener.shown().is_empty(), "{downstream} from {upstream}");
        assert!(
            ["unsupported", "declined"].contains(&text.as_str()),
            "{downstream} from {upstream}: {text}"
        );
    }
}

/// Every base64url part of `state`, decoded, as text (what a client can read from it).
fn readable(state: &str) -> String {
    state
        .split('.')
        .map(|part| {
            let bytes =
                base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, part)
                    .unwrap_or_default();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .collect::<Vec<_>>()
        .join("|")
}

#[tokio::test]
async fn a_rounds_state_tells_the_client_nothing_of_the_answers_it_carries() {
    for upstream in Revision::ALL {
        let (served, _server) = test_server(upstream).await;
        let (front, _gateway) = gateway("test", served.addr, upstream).await;
        let client = connect_http(
            Opener::new(false),
            &format!("http://{}/mcp", front.addr),
            Revision::V2026_07_28,
            None,
        )
        .await;
        let mut params = backchannel::testing::call("two_steps", json!({}));
        let mut states = Vec::new();
        for _ in 0..4 {
            match client.peer().call_tool_once(params.clone()).await.unwrap() {
                CallToolResponse::InputRequired(round) => {
                    let state = round.request_state.clone().unwrap_or_default();
                    states.push(state);
                    params.input_responses = Some(
                        round
                            .input_requests
                            .unwrap_or_default()
                            .into_keys()
                            .map(|key| {
                                let content = if key.contains('2') || key == "second" {
                                    json!({"color": "vermilion"})
                                } else {
                                    json!({"confirmed": true, "note": "card ending 4242"})
                                };
                                (key, json!({"action": "accept", "content": content}))
                            })
                            .collect(),
                    );
                    params.request_state = round.request_state;
                }
                CallToolResponse::Complete(result) => {
                    assert!(text_of(&result).contains("vermilion"), "{result:?}");
                    break;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(states.len(), 2, "from {upstream}");
        // The second round's state carries the first answer (or the hold it went to): a
        // client reads neither from it.
        for state in &states {
            let shown = readable(state);
            for secret in ["4242", "confirmed", "answers", "first"] {
                assert!(
                    !shown.contains(secret),
                    "from {upstream}: {secret} in {shown}"
                );
            }
        }
        client.cancel().await.unwrap();
    }
}

/// A 2026-07-28 `tools/call` of `tool` from `address` (a loopback address of the test's
/// choosing), as raw HTTP: the last JSON-RPC message of the answer.
async fn call_from(address: std::net::IpAddr, url: &str, tool: &str, arguments: Value) -> Value {
    let client = reqwest::Client::builder()
        .local_address(address)
        .build()
        .unwrap();
    crate::common::raw_call(&client, url, tool, json!({"arguments": arguments})).await
}

#[tokio::test]
async fn one_caller_holds_its_share_of_the_held_calls_and_no_more() {
    let (served, server) = test_server(Revision::V2025_11_25).await;
    let (front, _gateway) = gateway("test", served.addr, Revision::V2025_11_25).await;
    let url = format!("http://{}/mcp", front.addr);
    let flooder: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let other: std::net::IpAddr = "127.0.0.2".parse().unwrap();
    // One anonymous address opens calls that wait for answers, each held upstream.
    let mut held = 0;
    let refusal = loop {
        let answer = call_from(flooder, &url, "confirm", json!({})).await;
        if answer["result"]["resultType"] == "input_required" {
            held += 1;
            assert!(held <= 64, "more than its share was held");
            continue;
        }
        break answer;
    };
    assert_eq!(held, 64, "{refusal}");
    let text = refusal["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(refusal["result"]["isError"], true, "{refusal}");
    assert!(text.contains("64 calls waiting"), "{text}");
    // The refused call was stopped upstream: nothing more is held there than the share.
    assert_eq!(
        server
            .observed
            .writes
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    // A call that asks nothing still goes through for the same caller, and another caller
    // still gets calls held.
    let plain = call_from(flooder, &url, "progress", json!({})).await;
    assert_ne!(plain["result"]["isError"], true, "{plain}");
    assert!(plain["result"]["content"][0]["text"].is_string(), "{plain}");
    let theirs = call_from(other, &url, "confirm", json!({})).await;
    assert_eq!(theirs["result"]["resultType"], "input_required", "{theirs}");
}

#[tokio::test]
async fn a_callers_token_never_goes_upstream() {
    // The upstream records the Authorization header (or its absence) of every request.
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let server = TestServer::new(Backchannel::builder().build().unwrap());
    let options = backchannel::serve::HttpOptions::default();
    let record = seen.clone();
    let served = backchannel::testing::serve_with(
        |stop| {
            backchannel::serve::router(move || server.clone(), &options, stop).layer(
                axum::middleware::from_fn(
                    move |request: axum::extract::Request, next: axum::middleware::Next| {
                        let record = record.clone();
                        async move {
                            let authorization = request
                                .headers()
                                .get("authorization")
                                .map(|value| value.to_str().unwrap_or_default().to_owned());
                            record.lock().unwrap().push(authorization);
                            next.run(request).await
                        }
                    },
                ),
            )
        },
        &backchannel::serve::HttpOptions::default(),
    )
    .await;
    for upstream in Revision::ALL {
        let (front, _gateway) = gateway("test", served.addr, upstream).await;
        for downstream in Revision::ALL {
            let client = connect_http(
                Opener::new(false),
                &format!("http://{}/mcp", front.addr),
                downstream,
                Some("the-callers-own-token-5f2c"),
            )
            .await;
            let result = call_to_the_end(
                &client,
                "confirm",
                json!({}),
                |_| json!({"action": "accept", "content": {"confirmed": true}}),
            )
            .await;
            assert!(text_of(&result).contains("accepted"), "{result:?}");
            client.cancel().await.unwrap();
        }
    }
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 4, "the upstream was reached: {seen:?}");
    assert!(
        seen.iter().all(Option::is_none),
        "the upstream saw {seen:?}"
    );
}
