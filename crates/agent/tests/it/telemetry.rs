//! One trace for a confirmed cancel through the desk, on each revision: the desk's chat turn,
//! the model's calls, the host's `tools/call`, the order service's rounds (continued from the
//! `traceparent` in `_meta`, and on 2026-07-28 from the sealed state), the person's wait and
//! the `UPDATE`, exported over OTLP to a real receiver and decoded with OpenTelemetry's own
//! protobuf definitions. Desk and order service run in this process, so this test sets the
//! process's subscriber.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use agent::desk::DeskConfig;
use agent::llm::{OpenAiCompatible, Provider};
use axum::Json;
use backchannel::Revision;
use backchannel::testing::otlp::{CLIENT, Collector, SERVER, Span, assert_attributes, attribute};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt as _;

use crate::common::Events;

/// The model: asked anything, it cancels ORD-10002; shown the tool's result, it says so.
async fn completions(Json(body): Json<Value>) -> Json<Value> {
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    let message = if last["role"] == "tool" {
        json!({"role": "assistant", "content": "Done."})
    } else {
        crate::common::tool_call("cancel_order", r#"{"orderId":"ORD-10002"}"#)
    };
    crate::common::completion(message)
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|span| span.name == name).collect()
}

#[tokio::test(flavor = "current_thread")]
async fn a_confirmed_cancel_through_the_desk_is_one_trace_from_the_chat_turn_to_the_update() {
    let collector = Collector::start().await;
    let export = backchannel::telemetry::Export::new(
        format!("{}/v1/traces", collector.endpoint()),
        "desk-under-test",
    )
    .with_batch_delay(Duration::from_millis(50));
    let (layer, exporter) = backchannel::telemetry::export(&export).unwrap();
    // The process's subscriber (a subscriber scoped to this thread is not enough: tracing
    // decides once per callsite whether anyone wants it, and with a single scoped subscriber
    // it asks whichever thread got there first, maybe another test's, which has none).
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .expect("no other test of this binary sets the global subscriber");
    let model_url = crate::common::serve_fake(
        axum::Router::new().route("/v1/chat/completions", axum::routing::post(completions)),
    )
    .await;
    for protocol in Revision::ALL {
        let model = OpenAiCompatible::new(
            format!("{model_url}/v1"),
            None,
            "fake",
            Duration::from_secs(10),
        )
        .unwrap();
        let desk = DeskConfig {
            protocol: Some(protocol),
            model: Some(Provider::OpenAi(model)),
            ..DeskConfig::default()
        };
        let demo =
            crate::common::start(crate::common::orders_in_memory(Duration::ZERO), desk).await;
        let conversation = format!("{protocol:?}");
        let (mut events, secret) = Events::open(&demo, &conversation).await;
        let reply = tokio::spawn({
            let (url, conversation) = (demo.url.clone(), conversation.clone());
            async move { crate::common::chat(&url, &conversation, "please cancel ORD-10002").await }
        });
        let question = events.next_of("confirmation").await;
        let id = question["id"].as_str().unwrap();
        assert_eq!(
            crate::common::answer(&demo.url, id, &secret, true).await,
            204
        );
        let reply = reply.await.unwrap();
        assert!(reply.contains("Done."), "{protocol:?}: {reply}");
        assert_eq!(
            crate::common::status_of(&demo.url, "ORD-10002").await,
            "CANCELLED"
        );

        // The conversation's id in the span is the one the desk made (no credential: the id
        // alone opens nothing without its browser session).
        let id_made = crate::common::conversation(&demo.url, &conversation).await;
        let turn = collector
            .first(|span| {
                span.name == "invoke_agent support-desk"
                    && attribute(span, "gen_ai.conversation.id").as_deref()
                        == Some(id_made.as_str())
            })
            .await;
        assert!(
            turn.parent_span_id.is_empty(),
            "{protocol:?}: the turn starts the trace"
        );
        // A 2025-11-25 call is one request; a 2026-07-28 one is asked again with the answer.
        let rounds = match protocol {
            Revision::V2025_11_25 => 1,
            _ => 2,
        };
        let trace = turn.trace_id.clone();
        let spans = collector
            .wait_for(
                |span| span.trace_id == trace,
                |spans| {
                    named(spans, "tools/call cancel_order").len() == 1 + rounds
                        && named(spans, "chat fake").len() == 2
                        && !named(spans, "elicitation/create").is_empty()
                        && !named(spans, "UPDATE orders").is_empty()
                },
            )
            .await;
        let parent_of = |span: &Span| {
            spans
                .iter()
                .find(|other| other.span_id == span.parent_span_id)
                .unwrap_or_else(|| panic!("{protocol:?}: {}'s parent is in the trace", span.name))
                .clone()
        };
        for chat in named(&spans, "chat fake") {
            assert_eq!(chat.parent_span_id, turn.span_id, "{protocol:?}");
            assert_eq!(chat.kind, CLIENT);
            assert_attributes(
                chat,
                &[
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.request.model", "fake"),
                    ("gen_ai.usage.input_tokens", "40"),
                    ("gen_ai.usage.output_tokens", "10"),
                ],
            );
        }
        let calls = named(&spans, "tools/call cancel_order");
        let (client, served): (Vec<&Span>, Vec<&Span>) =
            calls.iter().partition(|span| span.kind == CLIENT);
        assert_eq!(client.len(), 1, "{protocol:?}: the host's call");
        assert_eq!(client[0].parent_span_id, turn.span_id, "{protocol:?}");
        assert_eq!(served.len(), rounds, "{protocol:?}: the server's rounds");
        for round in &served {
            assert_eq!(round.kind, SERVER);
            assert_attributes(
                round,
                &[
                    ("mcp.method.name", "tools/call"),
                    ("gen_ai.tool.name", "cancel_order"),
                    ("mcp.protocol.version", protocol.date()),
                ],
            );
            assert!(attribute(round, "jsonrpc.request.id").is_some());
        }
        // The first round continues the host's span; a later one the first round.
        let first = served
            .iter()
            .find(|round| round.parent_span_id == client[0].span_id)
            .unwrap_or_else(|| panic!("{protocol:?}: a round under the host's call"));
        let wait = named(&spans, "elicitation/create")[0];
        assert_eq!(wait.kind, CLIENT);
        assert_eq!(
            wait.parent_span_id, first.span_id,
            "{protocol:?}: the person's wait"
        );
        let update = named(&spans, "UPDATE orders")[0];
        let written_in = parent_of(update);
        assert_eq!(written_in.name, "tools/call cancel_order", "{protocol:?}");
        assert_eq!(written_in.kind, SERVER);
        if rounds == 2 {
            assert_eq!(written_in.parent_span_id, first.span_id, "{protocol:?}");
        }
        assert_eq!(
            attribute(update, "db.operation.name").as_deref(),
            Some("UPDATE")
        );
    }
    // Its last flush waits for the receiver, which runs on this thread.
    tokio::task::spawn_blocking(move || drop(exporter))
        .await
        .unwrap();
    collector.assert_only_service("desk-under-test");
}

/// `support-agent web --metrics`, a process of its own (the registry is the process's): one
/// tool call through the host is counted once in `mcp_client_operation_duration_seconds`,
/// read with a Prometheus text parser, and the open connection is not yet a finished session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desks_metrics_count_each_tool_call_of_its_host_once() {
    let stop = tokio_util::sync::CancellationToken::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let orders_url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let orders_config = crate::common::orders_in_memory(Duration::ZERO);
    let shutdown = stop.clone();
    tokio::spawn(async move { orders::app::serve_http(listener, &orders_config, shutdown).await });
    let mut desk = tokio::process::Command::new(env!("CARGO_BIN_EXE_support-agent"));
    desk.args(["web", "--listen", "127.0.0.1:0", "--orders", &orders_url])
        .args(["--database", "sqlite::memory:"])
        .args([
            "--protocol",
            "2026-07-28",
            "--no-knowledge-base",
            "--metrics",
        ]);
    let (_desk, mut lines) = crate::common::spawn_with_stderr(&mut desk);
    let url = crate::common::after(
        &mut lines,
        "Support Desk web UI: open ",
        "the desk's address",
    )
    .await;
    let url = url.trim().to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let scrape = || async {
        let response = reqwest::get(format!("{url}metrics")).await.unwrap();
        assert_eq!(response.status(), 200);
        let text = response.text().await.unwrap();
        prometheus_parse::Scrape::parse(text.lines().map(|line| Ok(line.to_owned()))).unwrap()
    };
    let count = |scrape: &prometheus_parse::Scrape, metric: &str, method: Option<&str>| -> f64 {
        scrape
            .samples
            .iter()
            .filter(|s| s.metric == metric && s.labels.get("mcp_method_name") == method)
            .map(|s| match &s.value {
                prometheus_parse::Value::Histogram(buckets) => {
                    buckets.iter().map(|b| b.count).fold(0.0, f64::max)
                }
                _ => 0.0,
            })
            .sum()
    };
    let reply = crate::common::chat(&url, "c1", "where is ORD-10001?").await;
    assert!(reply.contains("SHIPPED"), "{reply}");
    let after = scrape().await;
    let operations = "mcp_client_operation_duration_seconds";
    assert_eq!(count(&after, operations, Some("tools/call")), 1.0);
    let failed = after.samples.iter().any(|s| {
        s.metric == "mcp_client_operation_duration_seconds" && s.labels.get("error_type").is_some()
    });
    assert!(!failed, "the call succeeded");
    assert_eq!(
        count(&after, "mcp_client_session_duration_seconds", None),
        0.0
    );
    stop.cancel();
}
