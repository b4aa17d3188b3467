//! The lessons' flow where tasks are not offered: a desk that declares the tasks extension,
//! in front of an order service that runs no tasks (`order-service serve --no-tasks`), asks
//! the confirmation directly on the call, with its deadline, and the chat waits for it.
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
            person_deadline: Duration::from_secs(45),
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
        assert!((40..=45).contains(&seconds), "{protocol:?}: {question}");
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
