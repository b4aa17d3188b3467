//! Several `order-service` processes over one database file, as behind a load balancer: a
//! 2026-07-28 round sealed by one instance is answered on another when they share a key ring,
//! a rotated ring still opens what the previous key sealed, and a key that left the ring opens
//! nothing (and changes nothing).
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{has_status, modern_call, poll_task, post, start_task, yes};

const OLD: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const NEW: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";

/// A folder of its own for one test: the database file and the key files.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "orders-instances-{name}-{}-{}",
            std::process::id(),
            nonce()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// The database the instances share: a file here, or a new PostgreSQL database on the
    /// PostgreSQL run.
    async fn database(&self) -> String {
        if crate::common::on_postgres() {
            crate::common::fresh_database().await
        } else {
            format!("sqlite://{}", self.0.join("orders.sqlite").display())
        }
    }

    fn keys(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u8(0);
    hasher.finish()
}

/// One running `order-service serve`, killed when dropped.
struct Instance {
    child: Child,
    addr: SocketAddr,
    /// Every line it has written to stderr (its log) so far, updated as lines arrive.
    log: tokio::sync::watch::Receiver<Vec<String>>,
}

impl Instance {
    /// Wait (up to ten seconds) for a log line containing `text`.
    async fn logged(&self, text: &str) -> bool {
        let mut log = self.log.clone();
        let found = log.wait_for(|lines| lines.iter().any(|line| line.contains(text)));
        matches!(
            tokio::time::timeout(Duration::from_secs(10), found).await,
            Ok(Ok(_))
        )
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start an instance on a free port over `database`, sealing with `keys` (or a key of its own),
/// reading orders from the database every time (no per-instance cache: another instance
/// writes too); returns once it listens.
fn start(database: &str, keys: Option<&Path>) -> Instance {
    start_with(database, keys, &[])
}

/// Asks [`start_with`] for the service's default order cache (not an `order-service` flag).
const WITH_ORDER_CACHE: &str = "(with its order cache)";

/// [`start`], with more arguments (which may override the defaults).
fn start_with(database: &str, keys: Option<&Path>, extra: &[&str]) -> Instance {
    start_with_env(database, keys, extra, &[])
}

/// An instance on a database of its own (named after `name`) exporting over OTLP to
/// `collector` as `orders-under-test`, with one more OTel `setting` (how soon it sends); the
/// database lives as long as the scratch returned with it.
async fn exporting_to(
    collector: &backchannel::testing::otlp::Collector,
    name: &str,
    setting: (&str, &str),
) -> (Scratch, String, Instance) {
    let scratch = Scratch::new(name);
    let database = scratch.database().await;
    let endpoint = collector.endpoint();
    let otlp = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "orders-under-test"),
        setting,
    ];
    let instance = start_with_env(&database, None, &[], &otlp);
    (scratch, database, instance)
}

/// [`start_with`], with variables set in its environment.
fn start_with_env(
    database: &str,
    keys: Option<&Path>,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Instance {
    let mut command = Command::new(env!("CARGO_BIN_EXE_order-service"));
    command.envs(env.iter().copied());
    command.args(["serve", "--listen", "127.0.0.1:0", "--database", database]);
    if !extra.contains(&WITH_ORDER_CACHE) {
        command.arg("--no-order-cache");
    }
    let extra: Vec<&str> = extra
        .iter()
        .copied()
        .filter(|arg| *arg != WITH_ORDER_CACHE)
        .collect();
    command
        .env_remove("ORDER_SERVICE_STATE_KEYS")
        .env("RUST_LOG", "orders=info,backchannel=info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(keys) = keys {
        command.arg("--state-keys").arg(keys);
    }
    if !extra.contains(&"--carrier-latency-ms") {
        command.args(["--carrier-latency-ms", "0"]);
    }
    command.args(&extra);
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let (lines, log) = tokio::sync::watch::channel(Vec::new());
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            lines.send_modify(|lines| lines.push(line.clone()));
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let addr = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let _ = tx.send(Ok(addr));
            } else if line.contains("ERROR") || line.starts_with("Error") {
                let _ = tx.send(Err(line));
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the instance did not start within a minute")
        .unwrap_or_else(|line| panic!("the instance failed: {line}"));
    Instance {
        child,
        addr: addr.parse().unwrap(),
        log,
    }
}

/// `n` orders that can still be cancelled, as `instance` lists them.
async fn cancellable(instance: &Instance, n: usize) -> Vec<String> {
    let mut ids = crate::common::cancellable(instance.addr).await;
    assert!(ids.len() >= n, "{ids:?}");
    ids.truncate(n);
    ids
}

async fn status_via(instance: &Instance, order: &str) -> String {
    crate::common::status_at(instance.addr, order).await
}

/// The `input_required` round of cancelling `order`, asked on `instance`: its requestState.
async fn round_on(instance: &Instance, order: &str) -> String {
    let call = modern_call(1, "cancel_order", json!({"orderId": order}), json!({}));
    let (_, round) = post(instance.addr, &call, &[]).await;
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    round["result"]["requestState"].as_str().unwrap().to_owned()
}

/// The retry with `yes`, sent to `instance`: the JSON-RPC answer.
async fn yes_on(instance: &Instance, order: &str, state: &str) -> Value {
    let retry = modern_call(
        2,
        "cancel_order",
        json!({"orderId": order}),
        json!({"requestState": state, "inputResponses": yes()}),
    );
    post(instance.addr, &retry, &[]).await.1
}

fn says_cancelled(answer: &Value) -> bool {
    answer["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|text| text.contains("is cancelled"))
}

#[tokio::test]
async fn a_round_sealed_by_one_instance_is_answered_on_another_sharing_the_key_ring() {
    let scratch = Scratch::new("shared");
    let keys = scratch.keys("keys", &format!("current k1 {OLD}\n"));
    let database = scratch.database().await;
    let a = start(&database, Some(&keys));
    let b = start(&database, Some(&keys));

    let orders = cancellable(&a, 2).await;
    let state = round_on(&a, &orders[0]).await;
    let answer = yes_on(&b, &orders[0], &state).await;
    assert!(says_cancelled(&answer), "{answer}");
    assert_eq!(status_via(&a, &orders[0]).await, "CANCELLED");

    // Each with a key of its own (the default), the same move is refused, and nothing changes.
    let c = start(&database, None);
    let d = start(&database, None);
    let before = status_via(&c, &orders[1]).await;
    let state = round_on(&c, &orders[1]).await;
    let answer = yes_on(&d, &orders[1], &state).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(status_via(&c, &orders[1]).await, before);
}

#[tokio::test]
async fn a_rotated_ring_opens_what_the_previous_key_sealed_and_a_retired_key_opens_nothing() {
    let scratch = Scratch::new("rotation");
    let before = scratch.keys("before", &format!("current k1 {OLD}\n"));
    let rotated = scratch.keys("rotated", &format!("current k2 {NEW}\nprevious k1 {OLD}\n"));
    let retired = scratch.keys("retired", &format!("current k2 {NEW}\n"));
    let database = scratch.database().await;
    let old = start(&database, Some(&before));
    let new = start(&database, Some(&rotated));
    let newest = start(&database, Some(&retired));

    let orders = cancellable(&old, 3).await;
    // In flight across the rotation: asked before, answered after.
    let state = round_on(&old, &orders[0]).await;
    let answer = yes_on(&new, &orders[0], &state).await;
    assert!(says_cancelled(&answer), "{answer}");

    // The rotated instance seals with the new key, which the retired ring still holds.
    let state = round_on(&new, &orders[1]).await;
    let answer = yes_on(&newest, &orders[1], &state).await;
    assert!(says_cancelled(&answer), "{answer}");

    // A round sealed with a key no longer in the ring: refused, the order untouched.
    let state = round_on(&old, &orders[2]).await;
    let before = status_via(&newest, &orders[2]).await;
    let answer = yes_on(&newest, &orders[2], &state).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(status_via(&newest, &orders[2]).await, before);
    assert_ne!(before, "CANCELLED");
}

#[tokio::test]
async fn a_cancellation_reported_to_the_person_survives_kill_9() {
    let scratch = Scratch::new("durable");
    let database = scratch.database().await;
    // With its order cache, as the service runs by default (the cache holds nothing on disk),
    // and on one thread, as the benchmark runs it (tokio's current-thread scheduler).
    let mut first = start_with_env(
        &database,
        None,
        &[WITH_ORDER_CACHE],
        &[("TOKIO_WORKER_THREADS", "1")],
    );
    assert!(first.logged("current-thread scheduler").await);
    let orders = cancellable(&first, 3).await;
    for order in &orders {
        let state = round_on(&first, order).await;
        let answer = yes_on(&first, order, &state).await;
        assert!(says_cancelled(&answer), "{answer}");
    }
    // kill -9 the moment the last answer arrived: no shutdown, no flush, no checkpoint.
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let second = start(&database, None);
    for order in &orders {
        assert_eq!(status_via(&second, order).await, "CANCELLED", "{order}");
    }
}

#[tokio::test]
async fn class13_check_it_audit_line_get_order_logs_who_asked_from_the_request_meta() {
    let scratch = Scratch::new("audit");
    let instance = start(&scratch.database().await, None);
    let orders = cancellable(&instance, 1).await;
    let mut call = modern_call(1, "get_order", json!({"orderId": orders[0]}), json!({}));
    call["params"]["_meta"]["support_agent_id"] = json!("agent-7");
    let (status, answer) = post(instance.addr, &call, &[]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let line = format!("get_order {} requested by agent-7", orders[0]);
    assert!(
        instance.logged(&line).await,
        "{:#?}",
        *instance.log.borrow()
    );
}

/// Carrier latency for the task tests: a recheck of 87 orders, 8 at a time, takes about 3 s.
const SLOW_CARRIER: [&str; 4] = ["--carrier-latency-ms", "250", "--task-lease-ms", "1000"];

/// Every write to an order's estimate or status from now on, counted by the database itself
/// (a trigger per column writes a row to `order_writes`), whichever connection makes it.
async fn count_writes(database: &str) -> WriteLog {
    let pool = if crate::common::on_postgres() {
        let pool = sql_pool::Pool::Postgres(sql_pool::connect_postgres(database).await.unwrap());
        for statement in [
            "CREATE TABLE order_writes (order_id TEXT NOT NULL, col TEXT NOT NULL)",
            "CREATE FUNCTION log_order_write() RETURNS trigger AS $$ BEGIN \
             INSERT INTO order_writes VALUES (NEW.order_id, TG_ARGV[0]); RETURN NEW; END $$ \
             LANGUAGE plpgsql",
            "CREATE TRIGGER log_estimate AFTER UPDATE OF estimated_delivery ON orders \
             FOR EACH ROW EXECUTE FUNCTION log_order_write('estimated_delivery')",
            "CREATE TRIGGER log_status AFTER UPDATE OF status ON orders \
             FOR EACH ROW EXECUTE FUNCTION log_order_write('status')",
        ] {
            let sql_pool::Pool::Postgres(pg) = &pool else {
                unreachable!()
            };
            sqlx::query(statement).execute(pg).await.unwrap();
        }
        pool
    } else {
        let pool = sql_pool::Pool::Sqlite(sql_pool::connect(database).await.unwrap());
        for statement in [
            "CREATE TABLE order_writes (order_id TEXT NOT NULL, col TEXT NOT NULL)",
            "CREATE TRIGGER log_estimate AFTER UPDATE OF estimated_delivery ON orders BEGIN \
             INSERT INTO order_writes VALUES (NEW.order_id, 'estimated_delivery'); END",
            "CREATE TRIGGER log_status AFTER UPDATE OF status ON orders BEGIN \
             INSERT INTO order_writes VALUES (NEW.order_id, 'status'); END",
        ] {
            let sql_pool::Pool::Sqlite(lite) = &pool else {
                unreachable!()
            };
            sqlx::query(statement).execute(lite).await.unwrap();
        }
        pool
    };
    WriteLog(pool)
}

/// The writes [`count_writes`] logged.
struct WriteLog(sql_pool::Pool);

impl WriteLog {
    /// How many writes to `column`, and to how many orders.
    async fn of(&self, column: &str) -> (i64, i64) {
        let sql = self
            .0
            .sql("SELECT COUNT(*), COUNT(DISTINCT order_id) FROM order_writes WHERE col = ?");
        sql_pool::on_pool!(&self.0, p => sqlx::query_as(&sql).bind(column).fetch_one(p).await)
            .unwrap()
    }
}

/// The `done` of a recheck's status message ("40 of 87").
fn done_of(task: &Value) -> Option<u64> {
    task["statusMessage"]
        .as_str()?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

#[tokio::test]
async fn a_recheck_task_outlives_kill_9_and_finishes_after_the_restart() {
    let scratch = Scratch::new("task-restart");
    let database = scratch.database().await;
    let mut first = start_with(&database, None, &SLOW_CARRIER);
    let writes = count_writes(&database).await;
    let id = start_task(first.addr, "recheck_shipments", json!({})).await;
    // About half way (87 shipments), then kill -9: no shutdown, no end recorded.
    let half = poll_task(first.addr, &id, Duration::from_secs(30), |task| {
        done_of(task).is_some_and(|done| done >= 40)
    })
    .await;
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let last = std::cell::Cell::new(done_of(&half).unwrap());

    let second = start_with(
        &database,
        None,
        &[&SLOW_CARRIER[..], &["--metrics"]].concat(),
    );
    // Its progress goes on from where it was, never back.
    let done = poll_task(second.addr, &id, Duration::from_secs(30), |task| {
        if let Some(done) = done_of(task) {
            let before = last.replace(done);
            assert!(
                done >= before,
                "progress went back from {before} to {done}: {task}"
            );
        }
        task["status"] != "working"
    })
    .await;
    assert_eq!(done["status"], "completed", "{done}");
    // The same text as an uninterrupted recheck of the seed (crates/orders/tests/it/mcp.rs):
    // the shipments the first instance changed count, though the second did not redo them.
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "Rechecked 87 shipments, 13 estimates changed.");
    let (estimate_writes, orders) = writes.of("estimated_delivery").await;
    assert_eq!(
        (estimate_writes, orders),
        (13, 13),
        "each changed shipment written once"
    );
    assert!(second.logged("resumed a task whose server stopped").await);
    // The operator sees it: one task taken over, its end recorded here, no body left running
    // (the body is let go of just after its end is stored).
    let scrape = scrape_until(&second, |scrape| {
        sample(scrape, "mcp_server_tasks_running", &[]) == 0.0
    })
    .await;
    assert_eq!(sample(&scrape, "mcp_server_task_takeovers_total", &[]), 1.0);
    let ended = |state| sample(&scrape, "mcp_server_tasks_ended_total", &[("state", state)]);
    assert_eq!((ended("completed"), ended("failed")), (1.0, 0.0));
    assert_eq!(sample(&scrape, "mcp_server_tasks_running", &[]), 0.0);
}

#[tokio::test]
async fn a_confirmation_waiting_in_a_killed_server_is_answered_through_a_third_and_cancels_once() {
    let scratch = Scratch::new("task-confirm");
    let database = scratch.database().await;
    let mut first = start_with(&database, None, &SLOW_CARRIER);
    let writes = count_writes(&database).await;
    let order = cancellable(&first, 1).await.remove(0);
    let id = start_task(first.addr, "cancel_order", json!({"orderId": order})).await;
    let parked = poll_task(
        first.addr,
        &id,
        Duration::from_secs(10),
        has_status("input_required"),
    )
    .await;
    assert!(parked["inputRequests"]["confirm"].is_object(), "{parked}");
    first.child.kill().unwrap();
    first.child.wait().unwrap();

    // Another instance takes the task over once the lease ran out; the question is still
    // open, and a third instance takes the answer.
    let second = start_with(&database, None, &SLOW_CARRIER);
    let third = start_with(&database, None, &SLOW_CARRIER);
    assert!(
        second.logged("resumed a task whose server stopped").await
            || third.logged("resumed a task whose server stopped").await
    );
    let still = poll_task(
        third.addr,
        &id,
        Duration::from_secs(10),
        has_status("input_required"),
    )
    .await;
    assert!(still["inputRequests"]["confirm"].is_object(), "{still}");
    let update =
        crate::common::task_request(3, "tasks/update", &id, json!({"inputResponses": yes()}));
    post(third.addr, &update, &[]).await;
    let done = poll_task(
        second.addr,
        &id,
        Duration::from_secs(15),
        has_status("completed"),
    )
    .await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("Order {order} is cancelled and a refund of ")),
        "{text}"
    );
    assert_eq!(status_via(&third, &order).await, "CANCELLED");
    assert_eq!(writes.of("status").await, (1, 1), "cancelled once");
}

/// `/metrics` of `instance`, read with a Prometheus text parser.
async fn scrape(instance: &Instance) -> prometheus_parse::Scrape {
    let response = reqwest::get(format!("http://{}/metrics", instance.addr))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let text = response.text().await.unwrap();
    prometheus_parse::Scrape::parse(text.lines().map(|line| Ok(line.to_owned()))).unwrap()
}

/// The value of the counter, gauge or untyped sample `metric` whose labels include `labels`
/// (0 when there is none yet: a histogram's series appear with their first operation).
fn sample(scrape: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let mut found = scrape.samples.iter().filter(|sample| {
        sample.metric == metric
            && labels
                .iter()
                .all(|(name, value)| sample.labels.get(name) == Some(*value))
    });
    let value = match found.next() {
        None => return 0.0,
        Some(sample) => match sample.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            ref other => panic!("{metric} is not a single value: {other:?}"),
        },
    };
    assert!(found.next().is_none(), "more than one {metric} {labels:?}");
    value
}

/// Scrape `instance` until `done` holds (an operation is recorded when its answer's body has
/// ended, which may be a moment after the client read the answer); at most 10 s.
async fn scrape_until(
    instance: &Instance,
    done: impl Fn(&prometheus_parse::Scrape) -> bool,
) -> prometheus_parse::Scrape {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let scrape = scrape(instance).await;
        if done(&scrape) || std::time::Instant::now() > deadline {
            return scrape;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A 2025-11-25 client that says yes to a confirmation once told to: until then the question
/// waits.
#[derive(Clone, Default)]
struct HoldsThenSaysYes {
    asked: std::sync::Arc<tokio::sync::Notify>,
    answer: std::sync::Arc<tokio::sync::Notify>,
}

impl rmcp::ClientHandler for HoldsThenSaysYes {
    fn get_info(&self) -> rmcp::model::ClientInfo {
        let mut caps = rmcp::model::ClientCapabilities::default();
        caps.elicitation =
            Some(rmcp::model::ElicitationCapability::default().with_form(Default::default()));
        rmcp::model::ClientInfo::new(caps, rmcp::model::Implementation::new("metrics", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asked.notify_one();
        self.answer.notified().await;
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"confirmed": true})),
        )
    }
}

/// `get_order` posted to `instance` with a foreign `Host`: the status.
async fn call_with_a_foreign_host(instance: &Instance) -> u16 {
    reqwest::Client::new()
        .post(format!("http://{}/mcp", instance.addr))
        .header("Host", "attacker.example")
        .header("Content-Type", "application/json")
        .body(modern_call(9, "get_order", json!({"orderId": "ORD-10001"}), json!({})).to_string())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// A 2025-11-25 session's `cancel_order`, its confirmation asked and held until `say_yes`.
struct HeldCancel {
    client: HoldsThenSaysYes,
    session: rmcp::service::RunningService<rmcp::RoleClient, HoldsThenSaysYes>,
    cancel:
        tokio::task::JoinHandle<Result<rmcp::model::CallToolResult, rmcp::service::ServiceError>>,
}

impl HeldCancel {
    /// Cancel `order` on `instance`; returns once the person is asked.
    async fn start(instance: &Instance, order: &str) -> HeldCancel {
        let client = HoldsThenSaysYes::default();
        let session = backchannel::testing::connect_http(
            client.clone(),
            &format!("http://{}/mcp", instance.addr),
            backchannel::testing::Revision::V2025_11_25,
            None,
        )
        .await;
        let peer = session.peer().clone();
        let arguments = json!({"orderId": order});
        let cancel = tokio::spawn(async move {
            peer.call_tool(backchannel::testing::call("cancel_order", arguments))
                .await
        });
        client.asked.notified().await;
        HeldCancel {
            client,
            session,
            cancel,
        }
    }

    /// Say yes; the order is cancelled. Returns the session, still open.
    async fn say_yes(self) -> rmcp::service::RunningService<rmcp::RoleClient, HoldsThenSaysYes> {
        self.client.answer.notify_one();
        let result = self.cancel.await.unwrap().unwrap();
        assert!(
            backchannel::testing::text_of(&result).contains("is cancelled"),
            "{result:?}"
        );
        self.session
    }
}

#[tokio::test]
async fn metrics_count_each_call_once_a_refusal_by_reason_and_a_question_while_it_waits() {
    let scratch = Scratch::new("metrics");
    let database = scratch.database().await;
    let instance = start_with(&database, None, &["--metrics"]);
    let calls_2026 = [
        ("mcp_method_name", "tools/call"),
        ("mcp_protocol_version", "2026-07-28"),
    ];
    let first = scrape(&instance).await;
    assert_eq!(sample(&first, "mcp_server_questions_waiting", &[]), 0.0);
    assert_eq!(sample(&first, "mcp_server_sessions_open", &[]), 0.0);
    assert_eq!(
        sample(
            &first,
            "mcp_server_operation_duration_seconds_count",
            &calls_2026
        ),
        0.0
    );

    for id in 1..=5 {
        let call = modern_call(id, "get_order", json!({"orderId": "ORD-10001"}), json!({}));
        let (status, answer) = post(instance.addr, &call, &[]).await;
        assert_eq!(status, 200, "{answer}");
    }
    let counted = |scrape: &prometheus_parse::Scrape| {
        sample(
            scrape,
            "mcp_server_operation_duration_seconds_count",
            &calls_2026,
        )
    };
    let after = scrape_until(&instance, |s| counted(s) >= 5.0).await;
    assert_eq!(counted(&after), 5.0, "each call counted once");
    let buckets = after
        .samples
        .iter()
        .find(|s| {
            s.metric == "mcp_server_operation_duration_seconds"
                && s.labels.get("mcp_method_name") == Some("tools/call")
        })
        .unwrap();
    let prometheus_parse::Value::Histogram(buckets) = &buckets.value else {
        panic!("not a histogram: {buckets:?}");
    };
    assert_eq!(buckets.last().map(|b| b.count), Some(5.0), "{buckets:?}");

    // A foreign Host is refused, counted by its reason, and is no operation.
    assert_eq!(call_with_a_foreign_host(&instance).await, 403);
    let after_refusal = scrape(&instance).await;
    let host = [("reason", "host")];
    assert_eq!(
        sample(&after_refusal, "mcp_server_refused_requests_total", &host),
        1.0
    );
    assert_eq!(counted(&after_refusal), 5.0);

    // A 2025-11-25 session whose confirmation waits for the person: one session open, one
    // question waiting, until the answer; then none waiting and the order cancelled.
    let order = cancellable(&instance, 1).await.remove(0);
    let held = HeldCancel::start(&instance, &order).await;
    let waiting = scrape(&instance).await;
    assert_eq!(sample(&waiting, "mcp_server_questions_waiting", &[]), 1.0);
    assert_eq!(sample(&waiting, "mcp_server_sessions_open", &[]), 1.0);
    let session = held.say_yes().await;
    // The question stops counting when its answer arrives, before the tool goes on to answer
    // the call: no wait needed.
    let answered = scrape(&instance).await;
    assert_eq!(sample(&answered, "mcp_server_questions_waiting", &[]), 0.0);
    session.cancel().await.unwrap();
    assert_eq!(status_via(&instance, &order).await, "CANCELLED");
}

#[tokio::test]
async fn every_round_of_a_confirmed_cancel_and_the_persons_wait_are_one_trace_to_the_update() {
    use backchannel::testing::otlp::{
        CLIENT, Collector, SERVER, Span, assert_attributes, attribute, hex_bytes,
    };
    let collector = Collector::start().await;
    let (_scratch, database, instance) =
        exporting_to(&collector, "telemetry", ("OTEL_BSP_SCHEDULE_DELAY", "50")).await;
    let order = cancellable(&instance, 1).await.remove(0);
    // The client's own trace: the first round names it in `_meta`; the retry does not, so
    // only the sealed state can carry it over.
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let first = modern_call(
        1,
        "cancel_order",
        json!({"orderId": order}),
        json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "prober", "version": "0"},
            "traceparent": format!("00-{trace_id}-{client_span}-01"),
        }}),
    );
    let (_, round) = post(instance.addr, &first, &[]).await;
    let state = round["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = yes_on(&instance, &order, &state).await;
    assert!(says_cancelled(&answer), "{answer}");

    let trace = hex_bytes(trace_id);
    let spans = collector
        .wait_for(
            |span| span.trace_id == trace,
            |spans| {
                spans
                    .iter()
                    .filter(|s| s.name == "tools/call cancel_order")
                    .count()
                    == 2
                    && spans.iter().any(|s| s.name == "elicitation/create")
                    && spans.iter().any(|s| s.name == "UPDATE orders")
            },
        )
        .await;
    let calls: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "tools/call cancel_order")
        .collect();
    for call in &calls {
        assert_attributes(
            call,
            &[
                ("mcp.method.name", "tools/call"),
                ("gen_ai.tool.name", "cancel_order"),
                ("mcp.protocol.version", "2026-07-28"),
            ],
        );
        assert_eq!(call.kind, SERVER);
    }
    let ids: Vec<Option<String>> = calls
        .iter()
        .map(|call| attribute(call, "jsonrpc.request.id"))
        .collect();
    assert!(
        ids.contains(&Some("1".into())) && ids.contains(&Some("2".into())),
        "{ids:?}"
    );
    let round = |id: &str| {
        *calls
            .iter()
            .find(|c| attribute(c, "jsonrpc.request.id").as_deref() == Some(id))
            .unwrap()
    };
    let (first, second) = (round("1"), round("2"));
    // The first round hangs off the client's span; the second, whose request names no trace,
    // off the first, through the sealed state; the person's wait too, from the question on.
    assert_eq!(first.parent_span_id, hex_bytes(client_span));
    assert_eq!(second.parent_span_id, first.span_id);
    let wait = spans
        .iter()
        .find(|s| s.name == "elicitation/create")
        .unwrap();
    assert_eq!(wait.parent_span_id, first.span_id);
    assert_eq!(wait.kind, CLIENT);
    // A question's time is kept in milliseconds.
    assert!(wait.start_time_unix_nano + 1_000_000 >= first.start_time_unix_nano);
    assert!(wait.end_time_unix_nano <= second.end_time_unix_nano);
    // The write is a child of the second round.
    let update = spans.iter().find(|s| s.name == "UPDATE orders").unwrap();
    assert_eq!(update.parent_span_id, second.span_id);
    assert_eq!(update.kind, CLIENT);
    let system = if database.starts_with("postgres") {
        "postgresql"
    } else {
        "sqlite"
    };
    assert_attributes(
        update,
        &[("db.system.name", system), ("db.operation.name", "UPDATE")],
    );
    collector.assert_only_service("orders-under-test");
}

#[tokio::test]
async fn the_same_metrics_go_out_over_otlp_in_the_conventions_names() {
    use backchannel::testing::otlp::{Collector, Data, histogram_count, value};
    let collector = Collector::start().await;
    let (_scratch, _, instance) = exporting_to(
        &collector,
        "otlp-metrics",
        ("OTEL_METRIC_EXPORT_INTERVAL", "100"),
    )
    .await;
    let calls_2026 = [
        ("mcp.method.name", "tools/call"),
        ("mcp.protocol.version", "2026-07-28"),
    ];
    for id in 1..=5 {
        let call = modern_call(id, "get_order", json!({"orderId": "ORD-10001"}), json!({}));
        let (status, answer) = post(instance.addr, &call, &[]).await;
        assert_eq!(status, 200, "{answer}");
    }
    let operations = collector
        .metric("mcp.server.operation.duration", |metric| {
            histogram_count(metric, &calls_2026) >= 5
        })
        .await;
    assert_eq!(
        histogram_count(&operations, &calls_2026),
        5,
        "each call counted once"
    );
    assert_eq!(operations.unit, "s");
    let Some(Data::Histogram(histogram)) = &operations.data else {
        panic!("not a histogram: {operations:?}");
    };
    assert_eq!(
        histogram.data_points[0].explicit_bounds,
        backchannel::metrics::BUCKETS.to_vec()
    );

    // A foreign Host is refused and counted by its reason.
    assert_eq!(call_with_a_foreign_host(&instance).await, 403);
    let host = [("reason", "host")];
    collector
        .metric("mcp.server.refused_requests", |metric| {
            value(metric, &host) == Some(1)
        })
        .await;

    // A question waiting for the person is counted while it waits, and not after.
    let order = cancellable(&instance, 1).await.remove(0);
    let held = HeldCancel::start(&instance, &order).await;
    collector
        .metric("mcp.server.questions.waiting", |metric| {
            value(metric, &[]) == Some(1)
        })
        .await;
    collector
        .metric("mcp.server.sessions.open", |metric| {
            value(metric, &[]) == Some(1)
        })
        .await;
    let session = held.say_yes().await;
    collector
        .metric("mcp.server.questions.waiting", |metric| {
            value(metric, &[]) == Some(0)
        })
        .await;
    session.cancel().await.unwrap();
    collector
        .metric("mcp.server.session.duration", |metric| {
            histogram_count(metric, &[]) == 1
        })
        .await;
}

/// `initialize` on 2025-11-25 sent to `addr` as a 2025 client opens its session (no protocol
/// header yet): the JSON-RPC answer.
async fn initialize_2025(addr: SocketAddr) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "prober", "version": "0"}
    }});
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_service_limited_to_one_revision_refuses_the_other_as_unsupported() {
    let scratch = Scratch::new("only-revision");
    let database = scratch.database().await;
    let unsupported = |answer: &Value| answer["error"]["code"] == json!(-32022);

    let modern_only = start_with(&database, None, &["--only-revision", "2026-07-28"]);
    let get = modern_call(2, "get_order", json!({"orderId": "ORD-10001"}), json!({}));
    let (status, answer) = post(modern_only.addr, &get, &[]).await;
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"].is_string(),
        "{answer}"
    );
    let answer = initialize_2025(modern_only.addr).await;
    assert!(unsupported(&answer), "{answer}");
    drop(modern_only);

    let legacy_only = start_with(&database, None, &["--only-revision", "2025-11-25"]);
    let (status, answer) = post(legacy_only.addr, &get, &[]).await;
    assert!(unsupported(&answer), "{status} {answer}");
    let session = backchannel::testing::connect_http(
        (),
        &format!("http://{}/mcp", legacy_only.addr),
        backchannel::testing::Revision::V2025_11_25,
        None,
    )
    .await;
    let result = session
        .peer()
        .call_tool(backchannel::testing::call(
            "get_order",
            json!({"orderId": "ORD-10001"}),
        ))
        .await
        .unwrap();
    assert!(
        backchannel::testing::text_of(&result).contains("ORD-10001"),
        "{result:?}"
    );
    session.cancel().await.unwrap();
}

/// Issue 72: nothing checked that `--ask-seconds` is applied (the desk's `--server-ask-seconds`
/// starts the demo's order service with it). With `--ask-seconds 1`, a question nobody answers
/// ends the call with its unanswered result, and the order stays as it was; with the default 90 s
/// the call would still be waiting when the test gives up (at 30 s).
#[tokio::test]
async fn class12_check_it_the_order_services_ask_seconds_is_applied() {
    let instance = start_with(
        "sqlite::memory:",
        None,
        &["--ask-seconds", "1", "--no-tasks"],
    );
    let held = HeldCancel::start(&instance, "ORD-10002").await;
    let result = tokio::time::timeout(Duration::from_secs(30), held.cancel)
        .await
        .expect("the question was still waiting: --ask-seconds was not applied")
        .unwrap()
        .unwrap();
    assert_eq!(
        backchannel::testing::text_of(&result),
        "Order ORD-10002 was not cancelled: nobody answered the question in time."
    );
    assert_eq!(status_via(&instance, "ORD-10002").await, "PENDING");
    drop(held.session);
}
