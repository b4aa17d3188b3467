//! The order tools through a real rmcp client, on 2025-11-25 and 2026-07-28, over an
//! in-process pipe: every cancel_order branch, races against the question, the recheck's
//! progress, bad input, the prompt and completion, and a snapshot of the tool list.
#![allow(clippy::unwrap_used, clippy::type_complexity)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use orders::domain::OrderStatus;
use orders::mcp::OrderServer;
use orders::service::{OrderService, ServiceConfig};
use orders::store::Store;
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};

use backchannel::testing::{Revision, call, text_of};

use crate::common::Watcher;

/// What the scripted person does when asked.
#[derive(Clone)]
enum Answer {
    Accept(Value),
    Decline,
    /// Declined, the client saying in the answer's `_meta` why (`backchannel::AnswerReason`).
    DeclineBecause(&'static str),
    Cancel,
}

type BeforeAnswer = Arc<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

#[derive(Clone)]
struct Person {
    can_elicit: bool,
    tasks: bool,
    schemas: Arc<Mutex<Vec<Value>>>,
    answer: Answer,
    before_answer: Option<BeforeAnswer>,
    questions: Arc<Mutex<Vec<(String, Option<Value>)>>>,
    progress: Arc<Mutex<Vec<f64>>>,
    logs: Arc<Mutex<Vec<String>>>,
}

impl Person {
    fn new(answer: Answer) -> Self {
        Self {
            can_elicit: true,
            tasks: false,
            schemas: Arc::default(),
            answer,
            before_answer: None,
            questions: Arc::default(),
            progress: Arc::default(),
            logs: Arc::default(),
        }
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        if self.can_elicit {
            caps.elicitation = Some(ElicitationCapability::default().with_form(Default::default()));
        }
        if self.tasks {
            caps.extensions = Some([(TASKS_EXTENSION_ID.to_owned(), JsonObject::new())].into());
        }
        ClientInfo::new(caps, Implementation::new("support-agent", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            meta,
            requested_schema,
        } = &request
        {
            self.schemas
                .lock()
                .unwrap()
                .push(serde_json::to_value(requested_schema).unwrap());
            // rmcp hands a request's `_meta` to the handler in the context (2025 session) or
            // leaves it in the params (2026 input request).
            let conversation = meta
                .as_ref()
                .and_then(|m| m.get("conversationId").cloned())
                .or_else(|| context.meta.get("conversationId").cloned());
            self.questions
                .lock()
                .unwrap()
                .push((message.clone(), conversation));
        }
        if let Some(before) = &self.before_answer {
            before().await;
        }
        Ok(match &self.answer {
            Answer::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content.clone())
            }
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::DeclineBecause(reason) => {
                let mut declined = ElicitResult::new(ElicitationAction::Decline);
                declined.meta =
                    serde_json::from_value(json!({ backchannel::ANSWER_REASON_META_KEY: reason }))
                        .ok();
                declined
            }
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs
            .lock()
            .unwrap()
            .push(params.data.as_str().unwrap_or_default().to_owned());
    }
}

struct Desk {
    service: OrderService,
}

impl Desk {
    async fn new() -> Self {
        let store = Store::open(&crate::common::fresh_database().await)
            .await
            .unwrap();
        let config = ServiceConfig {
            carrier_latency: Duration::ZERO,
            carrier_concurrency: 4,
            order_cache: true,
            ..ServiceConfig::default()
        };
        Self {
            service: OrderService::new(store, config),
        }
    }

    fn server(&self) -> OrderServer {
        OrderServer::new(
            self.service.clone(),
            OrderServer::layer_builder().build().unwrap(),
        )
    }

    async fn connect(
        &self,
        person: Person,
        revision: Revision,
    ) -> RunningService<RoleClient, Person> {
        backchannel::testing::connect(self.server(), person, revision).await
    }

    async fn status(&self, id: &str) -> OrderStatus {
        self.service
            .order(orders::domain::OrderId::new(id))
            .await
            .unwrap()
            .status
    }
}

async fn cancel(desk: &Desk, person: Person, wire: Revision, id: &str) -> CallToolResult {
    let client = desk.connect(person, wire).await;
    let result = client
        .call_tool(call("cancel_order", json!({"orderId": id})))
        .await
        .unwrap();
    client.cancel().await.unwrap();
    result
}

#[tokio::test]
async fn a_confirmed_cancellation_cancels_and_records_the_note() {
    for wire in Revision::ALL {
        let desk = Desk::new().await;
        let person = Person::new(Answer::Accept(
            json!({"confirmed": true, "note": "customer asked"}),
        ));
        let result = cancel(&desk, person.clone(), wire, "ORD-10002").await;
        assert_eq!(result.is_error, Some(false), "{wire:?}");
        assert_eq!(
            text_of(&result),
            "Order ORD-10002 is cancelled and a refund of €34.99 has been started."
        );
        assert_eq!(
            desk.status("ORD-10002").await,
            OrderStatus::Cancelled,
            "{wire:?}"
        );
        assert_eq!(
            desk.service
                .store()
                .cancellation_note("ORD-10002")
                .await
                .unwrap()
                .as_deref(),
            Some("customer asked")
        );
        let questions = person.questions.lock().unwrap().clone();
        assert_eq!(questions.len(), 1, "{wire:?}");
        assert_eq!(
            questions[0].0,
            "Cancel order ORD-10002 for Marcus Adeyemi? The total is €34.99 and a refund will be started."
        );
        assert!(
            questions[0].1.is_some(),
            "{wire:?}: the question carries the conversation id"
        );
        let schema = person.schemas.lock().unwrap()[0].clone();
        assert_eq!(
            schema["required"],
            json!(["confirmed"]),
            "{wire:?}: {schema}"
        );
        assert_eq!(schema["properties"]["confirmed"]["type"], "boolean");
        assert_eq!(schema["properties"]["note"]["type"], "string");
    }
}

#[tokio::test]
async fn every_other_answer_leaves_the_order_pending() {
    let cases = [
        (
            Answer::Accept(json!({"confirmed": false})),
            "Order ORD-10002 was not cancelled: the cancellation was not confirmed.",
        ),
        (
            Answer::Accept(json!({})),
            "Order ORD-10002 was not cancelled: the cancellation was not confirmed.",
        ),
        // Issue 72: a No read like a failure ("there was no yes (the person said no, or the
        // question could not be shown to them)"), the reason the client gave never reaching the
        // tool. A decline is the person's unless the client says the question was not shown.
        (
            Answer::Decline,
            "Order ORD-10002 was not cancelled: you said no.",
        ),
        (
            Answer::DeclineBecause("person"),
            "Order ORD-10002 was not cancelled: you said no.",
        ),
        (
            Answer::DeclineBecause("notShown"),
            "Order ORD-10002 was not cancelled: the question could not be shown to anyone, so nobody said yes.",
        ),
        (
            Answer::Cancel,
            "Order ORD-10002 was not cancelled: the question was closed without an answer.",
        ),
    ];
    for wire in Revision::ALL {
        for (answer, expected) in cases.clone() {
            let desk = Desk::new().await;
            let result = cancel(&desk, Person::new(answer), wire, "ORD-10002").await;
            assert_eq!(text_of(&result), expected, "{wire:?}");
            assert_eq!(
                desk.status("ORD-10002").await,
                OrderStatus::Pending,
                "{wire:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_client_that_cannot_ask_is_sent_to_the_admin_console() {
    for wire in Revision::ALL {
        let desk = Desk::new().await;
        let person = Person {
            can_elicit: false,
            ..Person::new(Answer::Accept(json!({"confirmed": true})))
        };
        let result = cancel(&desk, person.clone(), wire, "ORD-10009").await;
        assert_eq!(
            text_of(&result),
            "This client cannot ask for confirmation, and cancelling needs it. Cancel ORD-10009 through the admin console instead."
        );
        assert!(person.questions.lock().unwrap().is_empty());
        assert_eq!(
            desk.status("ORD-10009").await,
            OrderStatus::Processing,
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn a_shipped_or_unknown_order_is_refused_without_a_question() {
    for wire in Revision::ALL {
        let desk = Desk::new().await;
        let person = Person::new(Answer::Accept(json!({"confirmed": true})));
        let shipped = cancel(&desk, person.clone(), wire, "ORD-10001").await;
        assert_eq!(
            text_of(&shipped),
            "Order ORD-10001 is SHIPPED and can no longer be cancelled. Only PENDING and PROCESSING orders can."
        );
        let unknown = cancel(&desk, person.clone(), wire, "ORD-99999").await;
        assert_eq!(unknown.is_error, Some(true));
        assert_eq!(
            text_of(&unknown),
            "No order with ID 'ORD-99999'. Check the ID and try again."
        );
        assert!(person.questions.lock().unwrap().is_empty(), "{wire:?}");
    }
}

#[tokio::test]
async fn two_people_confirming_the_same_cancellation_cancel_it_once() {
    for wire in Revision::ALL {
        let desk = Desk::new().await;
        // Both people answer only once both have been asked.
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let person = |barrier: Arc<tokio::sync::Barrier>| Person {
            before_answer: Some(Arc::new(move || {
                let barrier = barrier.clone();
                Box::pin(async move {
                    barrier.wait().await;
                })
            })),
            ..Person::new(Answer::Accept(json!({"confirmed": true})))
        };
        let (a, b) = tokio::join!(
            cancel(&desk, person(barrier.clone()), wire, "ORD-10008"),
            cancel(&desk, person(barrier.clone()), wire, "ORD-10008"),
        );
        let mut texts = vec![text_of(&a), text_of(&b)];
        texts.sort();
        assert_eq!(
            texts,
            vec![
                "Order ORD-10008 is CANCELLED and can no longer be cancelled. Only PENDING and PROCESSING orders can.".to_owned(),
                "Order ORD-10008 is cancelled and a refund of €124.99 has been started.".to_owned(),
            ],
            "{wire:?}"
        );
        assert_eq!(desk.status("ORD-10008").await, OrderStatus::Cancelled);
    }
}

#[tokio::test]
async fn an_order_shipped_while_the_question_is_open_is_not_cancelled() {
    for wire in Revision::ALL {
        let desk = Desk::new().await;
        let service = desk.service.clone();
        let person = Person {
            before_answer: Some(Arc::new(move || {
                let service = service.clone();
                Box::pin(async move {
                    service
                        .update_status(orders::domain::OrderId::new("ORD-10009"), "SHIPPED")
                        .await
                        .unwrap();
                })
            })),
            ..Person::new(Answer::Accept(json!({"confirmed": true})))
        };
        let result = cancel(&desk, person, wire, "ORD-10009").await;
        assert_eq!(
            text_of(&result),
            "Order ORD-10009 is SHIPPED and can no longer be cancelled. Only PENDING and PROCESSING orders can.",
            "{wire:?}"
        );
        assert_eq!(
            desk.status("ORD-10009").await,
            OrderStatus::Shipped,
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn recheck_reports_rising_progress_to_one_and_the_summary() {
    for wire in Revision::ALL {
        let desk = Desk::new().await;
        let person = Person::new(Answer::Decline);
        let client = desk.connect(person.clone(), wire).await;
        let first = client
            .call_tool(call("recheck_shipments", json!({})))
            .await
            .unwrap();
        assert_eq!(
            text_of(&first),
            "Rechecked 87 shipments, 13 estimates changed.",
            "{wire:?}"
        );
        let second = client
            .call_tool(call("recheck_shipments", json!({})))
            .await
            .unwrap();
        assert_eq!(
            text_of(&second),
            "Rechecked 87 shipments, 0 estimates changed.",
            "{wire:?}"
        );
        client.cancel().await.unwrap();
        let mut progress = person.progress.lock().unwrap().clone();
        // Notifications are dispatched concurrently on the client; the values sent are distinct.
        progress.sort_by(f64::total_cmp);
        progress.dedup();
        assert_eq!(
            progress.len(),
            87,
            "{wire:?}: one value per order, none repeated"
        );
        assert_eq!(progress.last(), Some(&1.0));
        assert!(progress.iter().all(|p| *p > 0.0 && *p <= 1.0));
        if wire == Revision::V2025_11_25 {
            let logs = person.logs.lock().unwrap().clone();
            assert!(
                logs.contains(&"Rechecking 87 shipments".to_owned()),
                "{logs:?}"
            );
            assert!(
                logs.contains(&"Finished. 13 estimates changed.".to_owned()),
                "{logs:?}"
            );
        }
    }
}

#[tokio::test]
async fn recheck_runs_as_a_task_when_the_client_asks_for_tasks() {
    let desk = Desk::new().await;
    let person = Person {
        tasks: true,
        ..Person::new(Answer::Decline)
    };
    let client = desk.connect(person, Revision::V2026_07_28).await;
    let CallToolResponse::Task(created) = client
        .call_tool_once(call("recheck_shipments", json!({})))
        .await
        .unwrap()
    else {
        panic!("expected a task");
    };
    let task_id = created.task.task_id.clone();
    let (result, shown) = loop {
        let task = client
            .get_task(GetTaskParams::new(task_id.clone()))
            .await
            .unwrap();
        let shown = task.task.task.status_message.clone();
        match task.task.payload {
            TaskPayload::Completed { result } => break (result, shown),
            TaskPayload::Working => tokio::task::yield_now().await,
            other => panic!("unexpected task state {other:?}"),
        }
    };
    assert_eq!(
        result["content"][0]["text"],
        "Rechecked 87 shipments, 13 estimates changed."
    );
    // The body's progress is the task's status message (nobody listens on the request that
    // started it); its last step is always kept.
    assert_eq!(shown.as_deref(), Some("87 of 87"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn on_2025_11_25_a_client_that_declares_tasks_but_asks_for_none_gets_plain_calls() {
    // MCP Inspector in its default era declares the tasks extension and sends no `task` field.
    let desk = Desk::new().await;
    let person = Person {
        tasks: true,
        ..Person::new(Answer::Accept(json!({"confirmed": true})))
    };
    let client = desk.connect(person.clone(), Revision::V2025_11_25).await;
    let answer = client
        .call_tool_once(call("cancel_order", json!({"orderId": "ORD-10002"})))
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = answer else {
        panic!("a plain call was expected, got {answer:?}");
    };
    assert!(text_of(&result).contains("is cancelled"), "{result:?}");
    assert_eq!(
        person.questions.lock().unwrap().len(),
        1,
        "asked on the session"
    );
    let recheck = client
        .call_tool_once(call("recheck_shipments", json!({})))
        .await
        .unwrap();
    assert!(
        matches!(recheck, CallToolResponse::Complete(_)),
        "{recheck:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_input_is_a_readable_error_and_changes_nothing() {
    for wire in Revision::ALL {
        let desk = Desk::new().await;
        let before = desk.service.store().status_counts().await.unwrap();
        let client = desk
            .connect(
                Person::new(Answer::Accept(json!({"confirmed": true}))),
                wire,
            )
            .await;
        let cases = [
            (
                "get_order",
                json!({"orderId": "ORD-0"}),
                "No order with ID 'ORD-0'. Check the ID and try again.",
            ),
            (
                "get_orders_by_status",
                json!({"status": "lost"}),
                "Invalid status 'lost'. Must be one of: [PENDING, PROCESSING, SHIPPED, DELIVERED, CANCELLED]",
            ),
            (
                "update_order_status",
                json!({"orderId": "ORD-10002", "newStatus": "gone"}),
                "Invalid status 'gone'.",
            ),
            (
                "update_order_status",
                json!({"orderId": "ORD-10002", "newStatus": "CANCELLED"}),
                "Use cancel_order to cancel an order.",
            ),
            ("cancel_order", json!({}), "missing field `orderId`"),
            ("cancel_order", json!({"orderId": 10002}), "invalid type"),
            (
                "update_order_status",
                json!({"orderId": "ORD-10002"}),
                "missing field `newStatus`",
            ),
        ];
        for (tool, args, expected) in cases {
            let result = client.call_tool(call(tool, args.clone())).await.unwrap();
            assert_eq!(result.is_error, Some(true), "{wire:?} {tool} {args}");
            assert!(
                text_of(&result).contains(expected),
                "{wire:?} {tool}: {}",
                text_of(&result)
            );
        }
        client.cancel().await.unwrap();
        assert_eq!(
            desk.service.store().status_counts().await.unwrap(),
            before,
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn get_order_returns_structured_content() {
    for wire in Revision::ALL {
        let desk = Desk::new().await;
        let client = desk.connect(Person::new(Answer::Decline), wire).await;
        let result = client
            .call_tool(call("get_order", json!({"orderId": "ORD-10001"})))
            .await
            .unwrap();
        let order = result
            .structured_content
            .clone()
            .expect("structured content");
        assert_eq!(order["customer"]["name"], "Ana Ruiz");
        assert_eq!(order["totalAmount"], 179.99);
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn the_refund_prompt_and_its_completions() {
    let desk = Desk::new().await;
    let client = desk
        .connect(Person::new(Answer::Decline), Revision::V2025_11_25)
        .await;
    let mut args = serde_json::Map::new();
    args.insert("orderId".into(), json!("ORD-10001"));
    args.insert("reason".into(), json!("arrived damaged"));
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("draft_refund_email").with_arguments(args))
        .await
        .unwrap();
    assert_eq!(prompt.messages.len(), 1);
    assert_eq!(prompt.messages[0].role, Role::User);
    let text = &prompt.messages[0]
        .content
        .as_text()
        .expect("a text message")
        .text;
    for needle in [
        "Ana Ruiz",
        "ORD-10001",
        "Order total: 179.99",
        "arrived damaged",
        "three sentences",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }

    let complete = |name: &str, value: &str| {
        CompleteRequestParams::new(
            Reference::for_prompt("draft_refund_email"),
            ArgumentInfo::new(name, value),
        )
    };
    let reasons = client
        .complete(complete("reason", "arrived"))
        .await
        .unwrap()
        .completion;
    assert_eq!(reasons.values, ["arrived damaged", "arrived late"]);
    assert_eq!((reasons.total, reasons.has_more), (Some(2), Some(false)));
    let many = client
        .complete(complete("orderId", "ord-1"))
        .await
        .unwrap()
        .completion;
    assert_eq!(many.values.len(), 20);
    assert_eq!((many.total, many.has_more), (None, Some(true)));
    let few = client
        .complete(complete("orderId", "ORD-1000"))
        .await
        .unwrap()
        .completion;
    assert_eq!(few.values.len(), 9);
    assert_eq!((few.total, few.has_more), (Some(9), Some(false)));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_tool_list_matches_its_snapshot() {
    let desk = Desk::new().await;
    let tools = serde_json::to_value(desk.server().tool_list()).unwrap();
    let mut tools = tools.as_array().unwrap().clone();
    tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let actual = serde_json::to_string_pretty(&tools).unwrap() + "\n";
    let snapshots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    backchannel::testing::snapshot(&snapshots, "tools.json", &actual);
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "cancel_order",
            "get_customer_orders",
            "get_order",
            "get_orders_by_status",
            "recheck_shipments",
            "update_order_status"
        ]
    );
}

#[tokio::test]
async fn a_status_change_is_announced_to_the_subscribers_of_that_order_only() {
    let desk = Desk::new().await;
    let server = desk.server();
    let connect = |client, wire| backchannel::testing::connect(server.clone(), client, wire);
    let watching = |uri: &str| {
        SubscriptionFilter::builder()
            .resource_subscription(uri.to_owned())
            .build()
    };
    let modern = connect(Watcher::default(), Revision::V2026_07_28).await;
    let mut on_first = modern.listen(watching("order://ORD-10002")).await.unwrap();
    let mut on_second = modern.listen(watching("order://ORD-10003")).await.unwrap();
    let watcher = Watcher::default();
    let legacy = connect(watcher.clone(), Revision::V2025_11_25).await;
    legacy
        .subscribe(SubscribeRequestParams::new("order://ORD-10002"))
        .await
        .unwrap();
    let actor = connect(Watcher::default(), Revision::V2026_07_28).await;
    for order in ["ORD-10002", "ORD-10003"] {
        let result = actor
            .call_tool(call(
                "update_order_status",
                json!({"orderId": order, "newStatus": "PROCESSING"}),
            ))
            .await
            .unwrap();
        assert_ne!(result.is_error, Some(true), "{}", text_of(&result));
    }
    // Each listen stream's first notification is its own order's: the other's passed it by.
    for (stream, uri) in [
        (&mut on_first, "order://ORD-10002"),
        (&mut on_second, "order://ORD-10003"),
    ] {
        let heard = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match heard {
            ServerNotification::ResourceUpdatedNotification(n) => assert_eq!(n.params.uri, uri),
            other => panic!("{other:?}"),
        }
    }
    tokio::time::timeout(Duration::from_secs(5), watcher.heard.notified())
        .await
        .expect("the subscribed session heard nothing");
    legacy.list_tools(None).await.unwrap();
    assert_eq!(
        *watcher.updated.lock().unwrap(),
        vec!["order://ORD-10002".to_owned()]
    );
    // After unsubscribing, the session hears no more of it.
    legacy
        .unsubscribe(UnsubscribeRequestParams::new("order://ORD-10002"))
        .await
        .unwrap();
    let result = actor
        .call_tool(call(
            "update_order_status",
            json!({"orderId": "ORD-10002", "newStatus": "PENDING"}),
        ))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true));
    legacy.list_tools(None).await.unwrap();
    assert_eq!(watcher.updated.lock().unwrap().len(), 1);
}

/// Two instances (two layers) on one PostgreSQL database, linked by `postgres::share`: a list
/// change and an order update raised on one reach the listen streams held by the other. On
/// SQLite (one instance per database) there is nothing to link, and the run says so.
#[tokio::test]
async fn changes_raised_on_one_instance_reach_the_listeners_of_another() {
    let database = crate::common::fresh_database().await;
    if !crate::common::on_postgres() {
        eprintln!("on SQLite: instances are not linked (scripts/test-postgres runs this)");
        return;
    }
    let desk = Desk::new().await;
    let (a, b) = (desk.server(), desk.server());
    backchannel::postgres::share(&database, a.layer())
        .await
        .unwrap();
    backchannel::postgres::share(&database, b.layer())
        .await
        .unwrap();
    let client =
        backchannel::testing::connect(b.clone(), Watcher::default(), Revision::V2026_07_28).await;
    let mut stream = client
        .listen(
            SubscriptionFilter::builder()
                .tools_list_changed()
                .resource_subscription("order://ORD-10002")
                .build(),
        )
        .await
        .unwrap();
    // Raised on A, which holds no listener of its own.
    assert_eq!(
        a.layer()
            .notify_list_changed(backchannel::ListKind::Tools)
            .await,
        0
    );
    assert_eq!(
        a.layer().notify_resource_updated("order://ORD-10002").await,
        0
    );
    let mut heard = Vec::new();
    for _ in 0..2 {
        let notification = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("nothing reached the other instance")
            .unwrap()
            .unwrap();
        heard.push(match notification {
            ServerNotification::ToolListChangedNotification(_) => "tools".to_owned(),
            ServerNotification::ResourceUpdatedNotification(n) => n.params.uri,
            other => panic!("{other:?}"),
        });
    }
    assert_eq!(heard, ["tools", "order://ORD-10002"]);
    client.cancel().await.unwrap();
}
