//! The lessons' flow where tasks are not offered: a desk that declares the tasks extension,
//! in front of an order service that runs no tasks (`order-service serve --no-tasks`), asks
//! the confirmation directly on the call, with its deadline, and the chat waits for it. And
//! the person's time apart from the tool's: hours for a question waiting in a task, the direct
//! share for one that holds a request open.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use agent::desk::DeskConfig;
use backchannel::Revision;

use crate::common::{Events, answer, status_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tasks_at_the_server_the_desk_asks_directly_with_its_deadline() {
    for protocol in Revision::ALL {
        let orders = orders::app::Config {
            no_tasks: true,
            ..crate::common::orders_in_memory(Duration::ZERO)
        };
        let desk = DeskConfig {
            protocol: Some(protocol),
            tasks: true,
            // Hours for a question in a task; a direct one gets two thirds of the order
            // service's 90 s.
            person_deadline: Duration::from_secs(3 * 3600),
            ..DeskConfig::default()
        };
        let demo = crate::common::start(orders, desk).await;
        let (mut page, secret) = Events::open(&demo, "seed").await;
        let url = demo.url.clone();
        let reply = tokio::spawn(async move {
            crate::common::chat(&url, "seed", "please cancel ORD-10002").await
        });
        let question = page.next_of("confirmation").await;
        // Today's dialog: the person's deadline, and the chat waiting on the answer.
        let seconds = question["seconds"].as_u64().unwrap();
        assert!((55..=60).contains(&seconds), "{protocol:?}: {question}");
        assert!(!reply.is_finished(), "{protocol:?}: the chat went on");
        let id = question["id"].as_str().unwrap();
        assert_eq!(answer(&demo.url, id, &secret, true).await, 204);
        let reply = reply.await.unwrap();
        assert_eq!(
            reply, "Order ORD-10002 is cancelled and a refund of €34.99 has been started.",
            "{protocol:?}"
        );
        assert_eq!(status_of(&demo.url, "ORD-10002").await, "CANCELLED");
    }
}

/// The order service without tasks declares no tasks extension (what the desk reads to
/// know a call will not become a task).
#[tokio::test]
async fn without_tasks_the_order_service_declares_no_tasks_extension() {
    for no_tasks in [false, true] {
        let config = orders::app::Config {
            no_tasks,
            ..crate::common::orders_in_memory(Duration::ZERO)
        };
        let service = orders::app::open_service(&config).await.unwrap();
        let server = orders::app::durable_mcp_server(service, &config)
            .await
            .unwrap();
        let info = rmcp::ServerHandler::get_info(&server);
        let declared = info
            .capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.contains_key(rmcp::model::TASKS_EXTENSION_ID));
        assert_eq!(declared, !no_tasks);
    }
}

/// In a task the person's time is theirs (`--answer-seconds`), not the server's ask timeout,
/// up to how long the server keeps the task (an hour): a desk given three hours starts, and
/// its question waits in the inbox with the task's hour, not 60 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class13_check_it_longer_timeouts_in_a_task_the_persons_time_is_theirs() {
    let desk = DeskConfig {
        protocol: Some(Revision::V2026_07_28),
        tasks: true,
        person_deadline: Duration::from_secs(3 * 3600),
        ..DeskConfig::default()
    };
    let demo = crate::common::start(crate::common::orders_in_memory(Duration::ZERO), desk).await;
    let (mut page, secret) = Events::open(&demo, "long").await;
    let reply = crate::common::chat(&demo.url, "long", "please cancel ORD-10002").await;
    assert!(reply.starts_with("Waiting for your answer"), "{reply}");
    let question = page.next_of("confirmation").await;
    let seconds = question["seconds"].as_u64().unwrap();
    assert!((3500..=3600).contains(&seconds), "{question}");
    assert_eq!(status_of(&demo.url, "ORD-10002").await, "PENDING");
    // Answered (forty seconds or an hour later alike: the time is the person's), the
    // cancellation completes and is said in the conversation.
    let status =
        crate::common::answer(&demo.url, question["id"].as_str().unwrap(), &secret, true).await;
    assert_eq!(status, 204);
    page.said_ending("is cancelled and a refund of €34.99 has been started.")
        .await;
    assert_eq!(status_of(&demo.url, "ORD-10002").await, "CANCELLED");
}
