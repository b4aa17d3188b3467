//! The REST API, for scripts and operators (the desk itself speaks MCP): one order, lists by
//! status or customer, and the health check a load balancer polls.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use crate::domain::{OrderId, OrderStatus};
use crate::service::{OrderError, OrderService};
use crate::wire::OrderView;

/// `GET /healthz`: 200 when the database answers, 503 otherwise; needs no token, says nothing
/// else (for a load balancer's checks).
pub fn health(service: OrderService) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .with_state(service)
}

async fn healthz(State(service): State<OrderService>) -> Response {
    match service.store().ping().await {
        Ok(()) => Json(serde_json::json!({ "status": "ok" })).into_response(),
        Err(store) => {
            tracing::warn!(%store, "health check: the database does not answer");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "The order database does not answer.".into(),
            )
        }
    }
}

/// `GET /api/orders/{orderId}` and `GET /api/orders?status=|customerId=`.
pub fn routes(service: OrderService) -> Router {
    Router::new()
        .route("/api/orders/{order_id}", get(order))
        .route("/api/orders", get(orders))
        .with_state(service)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    status: Option<String>,
    customer_id: Option<String>,
}

fn error(status: StatusCode, message: String) -> Response {
    (status, Json(serde_json::json!({ "message": message }))).into_response()
}

impl IntoResponse for OrderError {
    fn into_response(self) -> Response {
        match self {
            OrderError::NotFound(_) => error(StatusCode::NOT_FOUND, self.to_string()),
            OrderError::InvalidStatus(_) => error(StatusCode::BAD_REQUEST, self.to_string()),
            OrderError::NotCancellable { .. }
            | OrderError::UseCancelOrder
            | OrderError::StaysCancelled(_) => error(StatusCode::CONFLICT, self.to_string()),
            OrderError::Store(store) => {
                let incident = backchannel::Incident::record("order database failure", &store);
                error(StatusCode::INTERNAL_SERVER_ERROR, incident.message())
            }
        }
    }
}

async fn order(State(service): State<OrderService>, Path(order_id): Path<String>) -> Response {
    match service.order(OrderId::new(&order_id)).await {
        Ok(order) => Json(OrderView::from(order)).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn orders(State(service): State<OrderService>, Query(query): Query<ListQuery>) -> Response {
    let result = match (query.customer_id, query.status) {
        (Some(customer), _) => service.customer_orders(&customer).await,
        (None, Some(status)) => service.orders_by_status(&status).await,
        (None, None) => {
            service
                .orders_by_status(OrderStatus::Pending.as_str())
                .await
        }
    };
    match result {
        Ok(orders) => {
            Json(orders.into_iter().map(OrderView::from).collect::<Vec<_>>()).into_response()
        }
        Err(e) => e.into_response(),
    }
}
