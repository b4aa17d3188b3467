//! What the gateway's tests share: the gateway in front of an upstream, the revision across
//! from a client's, and a call driven to its result the way each revision's client does it.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use backchannel::Revision;
use backchannel::serve::HttpOptions;
use backchannel::testing::{Served, TestServer, call, serve_with};
use mcp_gateway::{Gateway, Upstream, quick_config};
use rmcp::model::{CallToolResponse, CallToolResult, InputRequest};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;

/// `server` over Streamable HTTP on a free loopback port.
async fn served<S: rmcp::ServerHandler + Clone>(server: S) -> Served {
    let options = HttpOptions::default();
    serve_with(
        |stop| backchannel::serve::router(move || server.clone(), &options, stop),
        &options,
    )
    .await
}

/// `backchannel`'s test server on `layer`, on a free port.
pub(crate) async fn test_server_on(layer: backchannel::Backchannel) -> (Served, TestServer) {
    let server = TestServer::new(layer);
    (served(server.clone()).await, server)
}

/// The other revision: the upstream's when `revision` is the client's.
pub(crate) fn other(revision: Revision) -> Revision {
    match revision {
        Revision::V2025_11_25 => Revision::V2026_07_28,
        Revision::V2026_07_28 => Revision::V2025_11_25,
    }
}

/// The gateway on a free port in front of the upstream `name` at `upstream`, speaking
/// `revision` to it.
pub(crate) async fn gateway(
    name: &str,
    upstream: SocketAddr,
    revision: Revision,
) -> (Served, Gateway) {
    let upstreams: Vec<Upstream> = vec![format!("{name}=http://{upstream}/mcp").parse().unwrap()];
    let revisions = BTreeMap::from([(name.to_owned(), revision)]);
    let gateway = Gateway::open(&quick_config(&upstreams, &revisions).unwrap())
        .await
        .unwrap();
    (served_gateway(gateway.clone()).await, gateway)
}

/// `gateway` over Streamable HTTP on a free loopback port, as the binary serves it: with its
/// pass-through.
pub(crate) async fn served_gateway(gateway: Gateway) -> Served {
    let options = HttpOptions::default();
    let pass = gateway.pass_through();
    serve_with(
        |stop| backchannel::serve::router_passing(move || gateway.clone(), &options, stop, pass),
        &options,
    )
    .await
}

/// Call `tool` to its final result: on 2025-11-25 one request (rmcp hands the questions to the
/// client's handler); on 2026-07-28 each `input_required` round's questions answered with
/// `answer` and the call retried with the answers and the state, as a 2026 client does.
pub(crate) async fn call_to_the_end<C: ClientHandler>(
    client: &RunningService<RoleClient, C>,
    tool: &str,
    arguments: Value,
    answer: impl Fn(InputRequest) -> Value,
) -> CallToolResult {
    let mut params = call(tool, arguments);
    for _ in 0..6 {
        match client.peer().call_tool_once(params.clone()).await.unwrap() {
            CallToolResponse::Complete(result) => return result,
            CallToolResponse::InputRequired(round) => {
                let answers: BTreeMap<String, Value> = round
                    .input_requests
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(key, request)| (key, answer(request)))
                    .collect();
                params.input_responses = Some(answers);
                params.request_state = round.request_state;
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    panic!("more than six rounds");
}

/// The JSON body of the answer to a GET of `url` (which must be answered).
pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(url: impl reqwest::IntoUrl) -> T {
    json_answer(reqwest::Client::new().get(url)).await
}

/// The JSON body of the answer to `request` (which must be answered).
async fn json_answer<T: serde::de::DeserializeOwned>(request: reqwest::RequestBuilder) -> T {
    request.send().await.unwrap().json().await.unwrap()
}

/// A 2026-07-28 `tools/call` of `tool` as raw HTTP through `client`, with `params` (the
/// `_meta` a client with form elicitation sends added to what `params` holds of it): the last
/// JSON-RPC message of the answer (JSON, or the last of an SSE stream).
pub(crate) async fn raw_call(
    client: &reqwest::Client,
    url: &str,
    tool: &str,
    mut params: Value,
) -> Value {
    params["name"] = tool.into();
    let meta = &mut params["_meta"];
    meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28".into();
    meta["io.modelcontextprotocol/clientCapabilities"] =
        serde_json::json!({"elicitation": {"form": {}}});
    meta["io.modelcontextprotocol/clientInfo"] = serde_json::json!({"name": "raw", "version": "0"});
    let body =
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let text = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain([text.as_str()])
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .next_back()
        .unwrap_or_else(|| panic!("no JSON-RPC message in {text}"))
}
