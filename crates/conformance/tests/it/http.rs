//! The fixture server over HTTP, as the conformance scripts start it: a child process on port 0.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

/// The fixture on a free loopback port with `extra` arguments, and where it listens.
async fn start(extra: &[&str]) -> (tokio::process::Child, SocketAddr) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_conformance-server"))
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        if let Some(url) = line.split("listening on http://").nth(1) {
            let addr = url.trim_end_matches("/mcp").parse().unwrap();
            // Keep draining its log so the child never blocks on a full pipe.
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return (child, addr);
        }
    }
    panic!("the fixture ended before it listened");
}

async fn scrape(addr: SocketAddr, host: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .get(format!("http://{addr}/metrics"))
        .header("Host", host)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

fn calls_counted(text: &str) -> f64 {
    let scrape =
        prometheus_parse::Scrape::parse(text.lines().map(|line| Ok(line.to_owned()))).unwrap();
    scrape
        .samples
        .iter()
        .filter(|sample| {
            sample.metric == "mcp_server_operation_duration_seconds_count"
                && sample.labels.get("mcp_method_name") == Some("tools/call")
        })
        .map(|sample| match sample.value {
            prometheus_parse::Value::Untyped(v) | prometheus_parse::Value::Counter(v) => v,
            ref other => panic!("not a count: {other:?}"),
        })
        .sum()
}

#[tokio::test]
async fn with_metrics_the_fixture_counts_each_call_once_behind_its_host_checks() {
    let (_child, addr) = start(&["--metrics"]).await;
    let session = backchannel::testing::connect_http(
        (),
        &format!("http://{addr}/mcp"),
        backchannel::testing::Revision::V2026_07_28,
        None,
    )
    .await;
    for _ in 0..3 {
        let result = session
            .peer()
            .call_tool(backchannel::testing::call(
                "test_simple_text",
                serde_json::json!({}),
            ))
            .await
            .unwrap();
        assert!(!backchannel::testing::text_of(&result).is_empty());
    }
    // An operation is recorded once its answer's body has ended, which may be a moment after
    // the client has read it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut counted = 0.0;
    while counted < 3.0 && tokio::time::Instant::now() < deadline {
        let (status, text) = scrape(addr, &addr.to_string()).await;
        assert_eq!(status, 200);
        counted = calls_counted(&text);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(counted, 3.0);
    let (status, _) = scrape(addr, "attacker.example").await;
    assert_eq!(status, 403);
    session.cancel().await.unwrap();
}

#[tokio::test]
async fn without_metrics_there_is_no_metrics_route() {
    let (_child, addr) = start(&[]).await;
    let (status, _) = scrape(addr, &addr.to_string()).await;
    assert_eq!(status, 404);
}
