//! The gateway between a client on one revision and the order service limited to the other:
//! the confirmation of `cancel_order` crosses in both directions (yes cancels once, no leaves
//! the order), and `recheck_shipments`' progress arrives in order.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backchannel::Revision;
use backchannel::serve::HttpOptions;
use backchannel::testing::{Served, call, connect_http, serve_with, text_of};

use crate::common::{call_to_the_end, gateway, get_json, other};
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};

/// The order service on a free port, in memory, serving `only` one revision.
pub(crate) async fn order_service(only: Revision) -> Served {
    let config = orders::app::Config {
        database: Some("sqlite::memory:".into()),
        service: orders::service::ServiceConfig {
            carrier_latency: Duration::ZERO,
            ..Default::default()
        },
        only_revision: Some(only),
        ..Default::default()
    };
    let service = orders::app::open_service(&config).await.unwrap();
    serve_with(
        |stop| orders::app::router(service, &config, stop).unwrap(),
        &HttpOptions::default(),
    )
    .await
}

pub(crate) async fn status(orders: SocketAddr, order: &str) -> String {
    let order: Value = get_json(format!("http://{orders}/api/orders/{order}")).await;
    order["status"].as_str().unwrap().to_owned()
}

pub(crate) async fn cancellable(orders: SocketAddr) -> Vec<String> {
    let pending: Vec<Value> = get_json(format!("http://{orders}/api/orders?status=PENDING")).await;
    pending
        .iter()
        .map(|order| order["orderId"].as_str().unwrap().to_owned())
        .collect()
}

/// The person at the client: says yes or no to every confirmation, and notes what it was
/// asked and the progress it saw.
#[derive(Clone)]
pub(crate) struct Person {
    yes: bool,
    pub(crate) asked: Arc<Mutex<Vec<String>>>,
    progress: Arc<Mutex<Vec<f64>>>,
    /// Rung at each progress notification handled.
    progressed: Arc<tokio::sync::Notify>,
}

impl Person {
    pub(crate) fn new(yes: bool) -> Self {
        Person {
            yes,
            asked: Arc::default(),
            progress: Arc::default(),
            progressed: Arc::default(),
        }
    }
}

impl Person {
    pub(crate) fn answer(&self, request: ElicitRequestParams) -> ElicitResult {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return ElicitResult::new(ElicitationAction::Decline);
        };
        self.asked.lock().unwrap().push(message);
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirmed": self.yes}))
    }
}

/// A person's client: it declares forms (and links, when `links`).
pub(crate) fn person_declaring(links: bool) -> ClientConfig {
    let mut elicitation = ElicitationCapability::default().with_form(Default::default());
    if links {
        elicitation = elicitation.with_url(Default::default());
    }
    let mut caps = ClientCapabilities::default();
    caps.elicitation = Some(elicitation);
    ClientConfig::new(caps, Implementation::new("person", "1.0.0"))
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        person_declaring(false)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.answer(request))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
        self.progressed.notify_waiters();
    }
}

/// `cancel_order` with `arguments`, `person` answering its confirmation on either revision.
async fn cancel_as(
    client: &rmcp::service::RunningService<RoleClient, Person>,
    person: &Person,
    arguments: Value,
) -> CallToolResult {
    call_to_the_end(client, "cancel_order", arguments, |request| {
        let InputRequest::Elicitation(request) = request else {
            panic!("only forms are asked here: {request:?}");
        };
        serde_json::to_value(person.answer(request.params)).unwrap()
    })
    .await
}

/// `downstream` is the client's revision; the order service serves only the other one.
async fn confirmation_crosses(downstream: Revision) {
    let upstream = other(downstream);
    let orders = order_service(upstream).await;
    let (front, gateway) = gateway("orders", orders.addr, upstream).await;
    assert!(gateway.tool_names().contains(&"cancel_order".to_owned()));
    let url = format!("http://{}/mcp", front.addr);
    let pending = cancellable(orders.addr).await;
    let (kept, cancelled) = (&pending[0], &pending[1]);

    let no = Person::new(false);
    let client = connect_http(no.clone(), &url, downstream, None).await;
    let answer = cancel_as(&client, &no, json!({"orderId": kept})).await;
    assert!(!text_of(&answer).contains("is cancelled"), "{answer:?}");
    assert_eq!(no.asked.lock().unwrap().len(), 1, "asked once");
    assert_eq!(status(orders.addr, kept).await, "PENDING");
    client.cancel().await.unwrap();

    let yes = Person::new(true);
    let client = connect_http(yes.clone(), &url, downstream, None).await;
    let answer = cancel_as(&client, &yes, json!({"orderId": cancelled})).await;
    assert!(text_of(&answer).contains("is cancelled"), "{answer:?}");
    assert_eq!(yes.asked.lock().unwrap().len(), 1, "asked once");
    assert_eq!(status(orders.addr, cancelled).await, "CANCELLED");
    // Cancelled once: a second attempt finds it cancelled already.
    let again = cancel_as(&client, &yes, json!({"orderId": cancelled})).await;
    assert!(!text_of(&again).contains("is cancelled"), "{again:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_2025_client_confirms_a_cancel_on_a_2026_only_server() {
    confirmation_crosses(Revision::V2025_11_25).await;
}

#[tokio::test]
async fn a_2026_client_confirms_a_cancel_on_a_2025_only_server() {
    confirmation_crosses(Revision::V2026_07_28).await;
}

/// A recheck through the gateway from an upstream on `upstream`: every progress notification
/// the upstream sent reaches a 2025-11-25 client (issue 76: from a 2025-11-25
/// upstream 73-82 of 87 did, rmcp handing the notifications to the gateway out of order).
async fn the_upstreams_progress_reaches_a_2025_client_whole(upstream: Revision) {
    let orders = order_service(upstream).await;
    let (front, _gateway) = gateway("orders", orders.addr, upstream).await;
    let person = Person::new(true);
    let client = connect_http(
        person.clone(),
        &format!("http://{}/mcp", front.addr),
        Revision::V2025_11_25,
        None,
    )
    .await;
    let mut params = call("recheck_shipments", json!({}));
    params.set_progress_token(ProgressToken(NumberOrString::String("recheck".into())));
    let answer = client.peer().call_tool(params).await.unwrap();
    assert!(!answer.is_error.unwrap_or(false), "{answer:?}");
    let said = text_of(&answer);
    let shipments: usize = said
        .split("Rechecked ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {said}"));
    // The client is an rmcp client too, which hands each notification on in a task of its own:
    // the last may reach the handler after the result, and in another order. What is judged is
    // that none was lost on the way (a lost one never arrives, however long this waits).
    let all_came = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let handled = person.progressed.notified();
            if person.progress.lock().unwrap().len() >= shipments {
                return;
            }
            handled.await;
        }
    })
    .await;
    let mut progress = person.progress.lock().unwrap().clone();
    assert!(
        all_came.is_ok(),
        "{upstream}: {} of {shipments}",
        progress.len()
    );
    assert_eq!(progress.len(), shipments, "{upstream}: {progress:?}");
    progress.sort_by(f64::total_cmp);
    progress.dedup();
    assert_eq!(progress.len(), shipments, "each value once: {progress:?}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_upstreams_progress_reaches_a_2025_client_whole() {
    the_upstreams_progress_reaches_a_2025_client_whole(Revision::V2026_07_28).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_upstreams_progress_reaches_a_2025_client_whole() {
    the_upstreams_progress_reaches_a_2025_client_whole(Revision::V2025_11_25).await;
}
