//! The order service as a cluster: instances on one PostgreSQL database, one key ring, HAProxy in
//! front (`scripts/cluster up 3`). Ignored in the ordinary run; `scripts/test-cluster` starts the
//! cluster, runs these with `--ignored --test-threads=1` (in this order: the last one kills an
//! instance) and stops it. `$CLUSTER_DIR` names the cluster's folder.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use backchannel::testing::{Revision, call, text_of};
use rmcp::model::{
    ClientCapabilities, ClientInfo, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, Implementation,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};

use crate::common::{Watcher, cancellable, modern_call, post, status_at, yes};

struct Cluster {
    dir: std::path::PathBuf,
    endpoints: HashMap<String, String>,
}

impl Cluster {
    fn open() -> Self {
        let (dir, endpoints) = backchannel::testing::cluster();
        Cluster { dir, endpoints }
    }

    /// The address of an endpoint (`balancer`, `order-1`, …).
    fn addr(&self, name: &str) -> SocketAddr {
        let url = &self.endpoints[name];
        url.trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap()
    }

    fn instances(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .endpoints
            .keys()
            .filter(|name| name.starts_with("order-"))
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// Start `tool` with `arguments` as a task on the endpoint `on`: its id.
    async fn start_task(&self, on: &str, tool: &str, arguments: Value) -> String {
        crate::common::start_task(self.addr(on), tool, arguments).await
    }

    /// Poll task `id` through the endpoint `on` until `done` holds (a hang fails after
    /// `seconds`).
    async fn poll_task(
        &self,
        on: &str,
        id: &str,
        seconds: u64,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        crate::common::poll_task(self.addr(on), id, Duration::from_secs(seconds), done).await
    }

    /// Start `recheck_shipments` (a long task with no question) on the endpoint `on` and wait
    /// until it works: its id.
    async fn recheck_working(&self, on: &str) -> String {
        let id = self.start_task(on, "recheck_shipments", json!({})).await;
        self.poll_task(on, &id, 10, |t| t["status"] == "working")
            .await;
        id
    }

    /// Answer yes to task `id`'s confirmation through the endpoint `on`.
    async fn yes_to_task(&self, on: &str, id: &str) {
        let answer = json!({"inputResponses": yes()});
        let update = crate::common::task_request(3, "tasks/update", id, answer);
        let (status, answer) = post(self.addr(on), &update, &[]).await;
        assert_eq!(status, 200, "{answer}");
    }

    async fn database(&self) -> sqlx::PgConnection {
        use sqlx::Connection;
        sqlx::PgConnection::connect(&self.endpoints["postgres"])
            .await
            .unwrap()
    }
}

/// One confirmed cancel through the balancer (round, then retry with yes), each POST sent to
/// `route` if given: the text of the final answer.
async fn confirmed_cancel(balancer: SocketAddr, order: &str, route: [Option<&str>; 2]) -> String {
    fn header(name: Option<&str>) -> Vec<(&'static str, &str)> {
        name.map(|n| vec![("X-Backend", n)]).unwrap_or_default()
    }
    let call = modern_call(1, "cancel_order", json!({"orderId": order}), json!({}));
    let (_, round) = post(balancer, &call, &header(route[0])).await;
    if round["result"]["resultType"] != "input_required" {
        return round["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    }
    let state = round["result"]["requestState"].as_str().unwrap();
    let retry = modern_call(
        2,
        "cancel_order",
        json!({"orderId": order}),
        json!({"requestState": state, "inputResponses": yes()}),
    );
    let (_, done) = post(balancer, &retry, &header(route[1])).await;
    done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{done}"))
        .to_owned()
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn a_round_asked_on_one_instance_is_answered_through_the_balancer_on_another() {
    let cluster = Cluster::open();
    let instances = cluster.instances();
    assert!(instances.len() >= 3, "{instances:?}");
    let balancer = cluster.addr("balancer");
    let order = cancellable(cluster.addr(&instances[0])).await.remove(0);
    // Every instance reads it first, so one that kept it in memory would have it to serve.
    for name in &instances {
        assert_ne!(status_at(cluster.addr(name), &order).await, "CANCELLED");
    }
    let text = confirmed_cancel(
        balancer,
        &order,
        [Some(instances[0].as_str()), Some(instances[1].as_str())],
    )
    .await;
    assert!(text.contains("is cancelled"), "{text}");
    // Never served in its old state by any instance afterwards.
    for name in &instances {
        assert_eq!(
            status_at(cluster.addr(name), &order).await,
            "CANCELLED",
            "{name}"
        );
    }
    let mut db = cluster.database().await;
    let (status,): (String,) = sqlx::query_as("SELECT status FROM orders WHERE order_id = $1")
        .bind(&order)
        .fetch_one(&mut db)
        .await
        .unwrap();
    assert_eq!(status, "CANCELLED");
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn a_round_answered_on_one_instance_cannot_be_answered_again_on_another() {
    let cluster = Cluster::open();
    let instances = cluster.instances();
    let balancer = cluster.addr("balancer");
    let order = cancellable(cluster.addr(&instances[0])).await.remove(1);
    let call = modern_call(1, "cancel_order", json!({"orderId": order}), json!({}));
    let headers = [("X-Backend", instances[0].as_str())];
    let (_, round) = post(balancer, &call, &headers).await;
    let state = round["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = modern_call(
        2,
        "cancel_order",
        json!({"orderId": order}),
        json!({"requestState": state, "inputResponses": yes()}),
    );
    let (_, done) = post(balancer, &retry, &headers).await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("is cancelled"), "{done}");
    // The same answer again, on each other instance: refused, whoever receives it.
    for name in &instances[1..] {
        let (_, again) = post(balancer, &retry, &[("X-Backend", name.as_str())]).await;
        assert_eq!(
            again["error"]["message"], "requestState has already been used; start the call again",
            "{name}: {again}"
        );
    }
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn an_order_cancelled_on_one_instance_is_announced_to_subscribers_held_by_the_others() {
    let cluster = Cluster::open();
    let instances = cluster.instances();
    let order = cancellable(cluster.addr(&instances[0])).await.remove(0);
    let uri = format!("order://{order}");
    // A 2026-07-28 listen stream held by the third instance, a 2025-11-25 session subscribed
    // on the second.
    let url = |name: &str| format!("http://{}/mcp", cluster.addr(name));
    let modern =
        backchannel::testing::connect_http((), &url(&instances[2]), Revision::V2026_07_28, None)
            .await;
    let mut stream = modern
        .listen(
            rmcp::model::SubscriptionFilter::builder()
                .resource_subscription(uri.clone())
                .build(),
        )
        .await
        .unwrap();
    let watcher = Watcher::default();
    let legacy = backchannel::testing::connect_http(
        watcher.clone(),
        &url(&instances[1]),
        Revision::V2025_11_25,
        None,
    )
    .await;
    legacy
        .subscribe(rmcp::model::SubscribeRequestParams::new(uri.clone()))
        .await
        .unwrap();
    // Cancelled on the first instance alone (round and retry both there).
    let started = Instant::now();
    let text = confirmed_cancel(
        cluster.addr("balancer"),
        &order,
        [Some(instances[0].as_str()), Some(instances[0].as_str())],
    )
    .await;
    assert!(text.contains("is cancelled"), "{text}");
    let notification = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the listen stream on another instance heard nothing")
        .unwrap()
        .unwrap();
    match notification {
        rmcp::model::ServerNotification::ResourceUpdatedNotification(n) => {
            assert_eq!(n.params.uri, uri);
        }
        other => panic!("{other:?}"),
    }
    tokio::time::timeout(Duration::from_secs(10), watcher.heard.notified())
        .await
        .expect("the subscribed session on another instance heard nothing");
    assert_eq!(*watcher.updated.lock().unwrap(), vec![uri]);
    eprintln!(
        "cluster: the update reached both other instances' subscribers {} ms after the cancel began",
        started.elapsed().as_millis()
    );
    modern.cancel().await.unwrap();
    legacy.cancel().await.unwrap();
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn forty_confirmed_cancels_over_the_instances_cancel_each_order_exactly_once() {
    let cluster = Cluster::open();
    let balancer = cluster.addr("balancer");
    let orders = cancellable(cluster.addr("order-1")).await;
    assert!(orders.len() >= 33, "{} cancellable", orders.len());
    // 32 orders once each, and one order eight times at once.
    let mut flows: Vec<String> = orders[..32].to_vec();
    flows.extend(std::iter::repeat_n(orders[32].clone(), 8));
    let answers = futures::future::join_all(flows.iter().map(|order| {
        let order = order.clone();
        async move {
            let text = confirmed_cancel(balancer, &order, [None, None]).await;
            (order, text)
        }
    }))
    .await;
    let mut cancelled: HashMap<&str, usize> = HashMap::new();
    for (order, text) in &answers {
        if text.contains("is cancelled") {
            *cancelled.entry(order.as_str()).or_default() += 1;
        } else {
            assert_eq!(order, &orders[32], "{order}: {text}");
            assert!(
                text.contains("can no longer be cancelled") || text.contains("was not cancelled"),
                "{order}: {text}"
            );
        }
    }
    for order in &orders[..33] {
        assert_eq!(cancelled.get(order.as_str()), Some(&1), "{order}");
    }
    let mut db = cluster.database().await;
    let ids: Vec<String> = orders[..33].to_vec();
    let (done,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM orders WHERE order_id = ANY($1) AND status = 'CANCELLED'",
    )
    .bind(&ids)
    .fetch_one(&mut db)
    .await
    .unwrap();
    assert_eq!(done, 33);
}

/// A 2025-11-25 client whose person says yes to every confirmation.
#[derive(Clone)]
struct SaysYes;

impl ClientHandler for SaysYes {
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(ElicitationCapability::default().with_form(Default::default()));
        ClientInfo::new(caps, Implementation::new("cluster-test", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirmed": true})))
    }
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn a_2025_session_stays_on_its_instance_through_the_balancer() {
    let cluster = Cluster::open();
    let balancer = &cluster.endpoints["balancer"];
    let orders = cancellable(cluster.addr("order-1")).await;
    // Several sessions at once, so round robin would scatter their requests: each session's
    // initialize, the tool call, and the answer to the server's question reach one instance.
    let sessions = futures::future::join_all(orders[..6].iter().map(|order| async move {
        let client =
            backchannel::testing::connect_http(SaysYes, balancer, Revision::V2025_11_25, None)
                .await;
        let result = client
            .call_tool(call("cancel_order", json!({"orderId": order})))
            .await
            .unwrap();
        client.cancel().await.unwrap();
        text_of(&result)
    }))
    .await;
    for (order, text) in orders[..6].iter().zip(&sessions) {
        assert!(text.contains("is cancelled"), "{order}: {text}");
    }
    // A session id the instances never issued (or one whose instance is gone) is not found.
    let response = reqwest::Client::new()
        .post(balancer)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", "no-such-session")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
}

/// The key of id `id` in a key file's text.
fn key_in(text: &str, id: &str) -> String {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|fields| fields.len() == 3 && fields[1] == id)
        .map(|fields| fields[2].to_owned())
        .unwrap_or_else(|| panic!("no key {id} in {text}"))
}

impl Cluster {
    /// Write the ring every instance reads at start, then restart them one by one.
    async fn roll(&self, ring: &str) {
        std::fs::write(self.dir.join("state-keys"), ring).unwrap();
        for name in self.instances() {
            self.revive(&name).await;
        }
    }
}

/// Asks the question for `order` through the balancer: the round's requestState.
async fn round_through(balancer: SocketAddr, order: &str, route: &str) -> String {
    let call = modern_call(1, "cancel_order", json!({"orderId": order}), json!({}));
    let (_, round) = post(balancer, &call, &[("X-Backend", route)]).await;
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    round["result"]["requestState"].as_str().unwrap().to_owned()
}

/// Answers yes to a round through the balancer (any instance): the final text, or the error.
async fn answer_through(balancer: SocketAddr, order: &str, state: &str) -> Value {
    let retry = modern_call(
        2,
        "cancel_order",
        json!({"orderId": order}),
        json!({"requestState": state, "inputResponses": yes()}),
    );
    post(balancer, &retry, &[]).await.1
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn keys_rotated_instance_by_instance_keep_every_round_in_flight_answerable() {
    let cluster = Cluster::open();
    let balancer = cluster.addr("balancer");
    let instances = cluster.instances();
    let ring = std::fs::read_to_string(cluster.dir.join("state-keys")).unwrap();
    let old = key_in(&ring, "k1");
    let new = "5e".repeat(32);
    let mut orders = cancellable(cluster.addr("order-1")).await.into_iter();
    let mut in_flight = Vec::new();
    let mut ask = |route: &str| {
        let order = orders.next().unwrap();
        let route = route.to_owned();
        async move {
            let state = round_through(balancer, &order, &route).await;
            (order, state)
        }
    };
    // Sealed with the old key, before anything changes; kept to be refused at the end.
    let retired = ask(&instances[0]).await;
    for name in &instances {
        in_flight.push(ask(name).await);
    }
    // Stage 1: every instance learns the new key, still sealing with the old one.
    cluster
        .roll(&format!("current k1 {old}\nprevious k2 {new}\n"))
        .await;
    for name in &instances {
        in_flight.push(ask(name).await);
    }
    // Stage 2: the new key seals; the old one still opens.
    cluster
        .roll(&format!("current k2 {new}\nprevious k1 {old}\n"))
        .await;
    for name in &instances {
        in_flight.push(ask(name).await);
    }
    // Every round asked under any stage completes on whichever instance the balancer picks.
    for (order, state) in &in_flight {
        let answer = answer_through(balancer, order, state).await;
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("is cancelled"), "{order}: {answer}");
    }
    // Stage 3: the old key retired. What it sealed is refused, and changes nothing.
    cluster.roll(&format!("current k2 {new}\n")).await;
    let (order, state) = retired;
    let before = status_at(cluster.addr("order-1"), &order).await;
    for _ in &instances {
        let answer = answer_through(balancer, &order, &state).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    assert_eq!(status_at(cluster.addr("order-1"), &order).await, before);
    assert_ne!(before, "CANCELLED");
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn killing_an_instance_under_load_loses_no_call_once_the_balancer_has_noticed() {
    let cluster = Cluster::open();
    let balancer = cluster.addr("balancer");
    let victim = cluster.instances().last().unwrap().clone();
    let pid = std::fs::read_to_string(cluster.dir.join(format!("{victim}.pid"))).unwrap();
    let call = modern_call(1, "get_order", json!({"orderId": "ORD-10001"}), json!({}));
    let ok = |answer: &(u16, Value)| answer.0 == 200 && answer.1["result"]["isError"] == false;

    // Load from four callers; the victim dies a quarter of the way in.
    let killed_at = Instant::now() + Duration::from_millis(500);
    let load = futures::future::join_all((0..4).map(|_| {
        let call = call.clone();
        async move {
            let mut outcomes = Vec::new();
            let end = Instant::now() + Duration::from_secs(6);
            while Instant::now() < end {
                let answer = post(balancer, &call, &[]).await;
                outcomes.push((Instant::now(), ok(&answer)));
            }
            outcomes
        }
    }));
    let kill = async {
        tokio::time::sleep_until(killed_at.into()).await;
        let status = std::process::Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    let (outcomes, ()) = tokio::join!(load, kill);
    let outcomes: Vec<(Instant, bool)> = outcomes.into_iter().flatten().collect();
    let failed = outcomes.iter().filter(|(_, ok)| !ok).count();
    // Two missed checks a second apart take it out (a refused connection is retried on
    // another instance even before); give it three seconds, and from then on nothing may fail.
    let noticed = killed_at + Duration::from_secs(3);
    let late_failures = outcomes
        .iter()
        .filter(|(at, ok)| *at > noticed && !ok)
        .count();
    let late_calls = outcomes.iter().filter(|(at, _)| *at > noticed).count();
    eprintln!(
        "cluster: {} calls, {failed} failed, none of {late_calls} after the balancer noticed",
        outcomes.len()
    );
    assert!(late_calls > 0);
    assert_eq!(late_failures, 0);
    // Nothing half-written: every order still has its lines.
    let mut db = cluster.database().await;
    let (orders, without_lines): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE NOT EXISTS \
         (SELECT 1 FROM order_items i WHERE i.order_id = o.order_id)) FROM orders o",
    )
    .fetch_one(&mut db)
    .await
    .unwrap();
    assert_eq!((orders, without_lines), (200, 0));
}

impl Cluster {
    /// `kill -9` the instance `name` (no shutdown: it records nothing more).
    fn kill(&self, name: &str) {
        let pid = std::fs::read_to_string(self.dir.join(format!("{name}.pid"))).unwrap();
        let status = std::process::Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .unwrap();
        assert!(status.success(), "killing {name}");
    }

    /// Stop the instance `name` if it runs and start it again (after [`Self::kill`], or to make
    /// it read the key ring anew); returns once it is healthy.
    async fn revive(&self, name: &str) {
        self.revive_with(name, &[]).await;
    }

    /// [`Self::revive`], the instance started with these variables set.
    async fn revive_with(&self, name: &str, env: &[(&str, &str)]) {
        let script = std::env::var("CLUSTER_SCRIPT").unwrap();
        let dir = self.dir.clone();
        let instance = name.to_owned();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        let status = tokio::task::spawn_blocking(move || {
            std::process::Command::new(script)
                .args(["restart", &instance])
                .envs(env)
                .env("CLUSTER_DIR", dir)
                .stdout(std::process::Stdio::null())
                .status()
        })
        .await
        .unwrap()
        .unwrap();
        assert!(status.success(), "restarting {name}");
    }

    /// Which instance holds the task's lease now.
    /// Who holds the task `task`, and until when (Unix ms), as the database says.
    async fn lease(&self, task: &str) -> (String, i64) {
        let mut db = self.database().await;
        sqlx::query_as("SELECT lease_owner, lease_until_ms FROM backchannel_tasks WHERE id = $1")
            .bind(task)
            .fetch_one(&mut db)
            .await
            .unwrap()
    }
}

/// The cluster's task lease and renewal tick (`scripts/test-cluster`: TASK_LEASE_MS=2000).
const LEASE: Duration = Duration::from_millis(2_000);
const TICK: Duration = Duration::from_millis(200);

fn text_in(task: &Value) -> String {
    task["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn a_task_is_polled_to_completion_through_the_balancer() {
    let cluster = Cluster::open();
    let id = cluster
        .start_task("order-1", "recheck_shipments", json!({}))
        .await;
    // Round robin: the polls land on every instance, and each answers from the database.
    let done = cluster
        .poll_task("balancer", &id, 30, |t| t["status"] != "working")
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        text_in(&done).starts_with("Rechecked 87 shipments"),
        "{done}"
    );
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn a_task_of_a_killed_instance_is_resumed_by_another_within_the_lease() {
    let cluster = Cluster::open();
    let id = cluster.recheck_working("order-1").await;
    cluster.kill("order-1");
    // The dead instance renews nothing more: this is the lease it left.
    let (first, left_until) = cluster.lease(&id).await;
    let killed = Instant::now();
    let (taker, taken_until) = loop {
        let (owner, until) = cluster.lease(&id).await;
        if owner != first {
            break (owner, until);
        }
        // Only a hang is bounded: a busy machine may take its time.
        assert!(
            killed.elapsed() < Duration::from_secs(60),
            "no instance took the task over"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    eprintln!(
        "cluster: task taken over by {taker} {:?} after kill -9 (lease {LEASE:?}, tick {TICK:?})",
        killed.elapsed()
    );
    // Taken only once the lease had run out: the new lease began at the claim, after the old
    // one ended.
    let lease_ms = i64::try_from(LEASE.as_millis()).unwrap();
    assert!(
        taken_until - lease_ms >= left_until,
        "taken over at {} though the lease ran until {left_until}",
        taken_until - lease_ms
    );
    let done = cluster
        .poll_task("order-2", &id, 30, |t| t["status"] != "working")
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        text_in(&done).starts_with("Rechecked 87 shipments"),
        "{done}"
    );
    cluster.revive("order-1").await;
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn a_task_taken_over_after_kill_9_continues_the_trace_of_the_call_that_started_it() {
    use backchannel::testing::otlp::{Collector, attribute, hex_bytes};
    let cluster = Cluster::open();
    let collector = Collector::start().await;
    let endpoint = collector.endpoint();
    let exporting = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50"),
    ];
    let instances = ["order-1", "order-2", "order-3"];
    // However this test ends, the cluster is left as the next test expects it.
    let _restored = Restored(&cluster, &instances);
    for name in instances {
        cluster.revive_with(name, &exporting).await;
    }
    let trace_id = backchannel::testing::random_hex();
    let client_span = &backchannel::testing::random_hex()[..16];
    let mut call = crate::common::task_call(1, "recheck_shipments", json!({}));
    call["params"]["_meta"]["traceparent"] = json!(format!("00-{trace_id}-{client_span}-01"));
    let (status, created) = crate::common::post(cluster.addr("order-1"), &call, &[]).await;
    assert_eq!(status, 200, "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    cluster
        .poll_task("order-1", &id, 10, |t| t["status"] == "working")
        .await;
    let trace = hex_bytes(&trace_id);
    // The call's span is out before the kill (it ended when the task was created).
    let started = collector
        .first(|span| span.trace_id == trace && span.name == "tools/call recheck_shipments")
        .await;
    assert_eq!(started.parent_span_id, hex_bytes(client_span));
    cluster.kill("order-1");
    let done = cluster
        .poll_task("order-2", &id, 30, |t| t["status"] != "working")
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    let resumed = collector
        .first(|span| span.trace_id == trace && span.name == "task recheck_shipments")
        .await;
    // The body's span on the instance that took the task over hangs off the call that
    // started it, on the instance that was killed.
    assert_eq!(resumed.parent_span_id, started.span_id);
    assert_eq!(
        attribute(&resumed, "mcp.task.id").as_deref(),
        Some(id.as_str())
    );
    let by: Vec<Option<String>> = collector
        .received()
        .into_iter()
        .filter(|r| r.span.span_id == resumed.span_id)
        .map(|r| r.instance)
        .collect();
    assert!(
        by.iter()
            .all(|instance| instance.as_deref().is_some_and(|i| i != "order-1")),
        "{by:?}"
    );
}

/// Restarts these instances of the cluster, as `scripts/cluster` starts them, when dropped.
struct Restored<'a>(&'a Cluster, &'a [&'a str]);

impl Drop for Restored<'_> {
    fn drop(&mut self) {
        for name in self.1 {
            let status = std::process::Command::new(std::env::var("CLUSTER_SCRIPT").unwrap())
                .args(["restart", name])
                .env("CLUSTER_DIR", &self.0.dir)
                .stdout(std::process::Stdio::null())
                .status();
            if !status.is_ok_and(|s| s.success()) {
                eprintln!("cluster: restarting {name} failed");
            }
        }
    }
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn a_confirmation_task_of_a_killed_instance_is_taken_over_and_answered_on_another() {
    let cluster = Cluster::open();
    let order = cancellable(cluster.addr("order-2")).await.remove(0);
    let id = cluster
        .start_task("order-2", "cancel_order", json!({"orderId": order}))
        .await;
    cluster
        .poll_task("order-2", &id, 10, |t| t["status"] == "input_required")
        .await;
    cluster.kill("order-2");
    // The question stays open; the answer goes through another instance, and the instance
    // that takes the task over (after the lease) finds it and cancels once.
    cluster.yes_to_task("order-1", &id).await;
    let done = cluster
        .poll_task("order-1", &id, 30, |t| {
            t["status"] != "input_required" && t["status"] != "working"
        })
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with(&format!("Order {order} is cancelled")),
        "{text}"
    );
    assert_eq!(
        status_at(cluster.addr("order-1"), &order).await,
        "CANCELLED"
    );
    cluster.revive("order-2").await;
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn a_task_cancel_sent_to_one_instance_stops_the_body_on_another() {
    let cluster = Cluster::open();
    let id = cluster.recheck_working("order-1").await;
    let cancel = crate::common::task_request(3, "tasks/cancel", &id, json!({}));
    let sent = Instant::now();
    let (status, answer) = post(cluster.addr("order-2"), &cancel, &[]).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.get("error").is_none(), "{answer}");
    let stopped = cluster
        .poll_task("order-2", &id, 10, |t| t["status"] != "working")
        .await;
    let took = sent.elapsed();
    eprintln!(
        "cluster: a cancel sent to order-2 stopped the body on order-1 in {took:?} (tick {TICK:?})"
    );
    // The body stopped: the task ended cancelled, not completed, and no instance holds it.
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    let again = cluster
        .poll_task("order-1", &id, 10, |t| t["status"] != "working")
        .await;
    assert_eq!(again["status"], "cancelled", "{again}");
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn a_task_question_asked_on_one_instance_is_answered_on_another() {
    let cluster = Cluster::open();
    let order = cancellable(cluster.addr("order-1")).await.remove(0);
    let id = cluster
        .start_task("order-1", "cancel_order", json!({"orderId": order}))
        .await;
    let parked = cluster
        .poll_task("order-2", &id, 10, |t| t["status"] == "input_required")
        .await;
    assert!(parked["inputRequests"]["confirm"].is_object(), "{parked}");
    cluster.yes_to_task("order-3", &id).await;
    let done = cluster
        .poll_task("balancer", &id, 10, |t| {
            t["status"] != "working" && t["status"] != "input_required"
        })
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(text_in(&done).contains("is cancelled"), "{done}");
    assert_eq!(
        status_at(cluster.addr("order-2"), &order).await,
        "CANCELLED"
    );
}
