//! An OTLP/HTTP receiver for tests: every span and metric exported to it, decoded with
//! OpenTelemetry's published protobuf definitions (`opentelemetry-proto`), with its resource's
//! `service.name`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::util::lock;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
pub use opentelemetry_proto::tonic::metrics::v1::Metric;
pub use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::resource::v1::Resource;
pub use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

/// `SpanKind::SERVER` in OTLP's numbering.
pub const SERVER: i32 = 2;
/// `SpanKind::CLIENT` in OTLP's numbering.
pub const CLIENT: i32 = 3;

/// What came, and a wake-up for whoever waits for more.
#[derive(Debug, Default)]
struct Kept {
    received: Mutex<Vec<Received>>,
    metrics: Mutex<Vec<Metric>>,
    arrived: tokio::sync::Notify,
}

/// A span as received, with what its resource says of where it came from.
#[derive(Debug, Clone)]
pub struct Received {
    /// `service.name`.
    pub service: String,
    /// `service.instance.id`, when the exporter said.
    pub instance: Option<String>,
    /// The span.
    pub span: Span,
}

/// A receiver on a free loopback port; stops when dropped.
#[derive(Debug)]
pub struct Collector {
    /// Where it listens; `OTEL_EXPORTER_OTLP_ENDPOINT` is `http://{addr}`.
    pub addr: SocketAddr,
    kept: Arc<Kept>,
    served: tokio::task::JoinHandle<()>,
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.served.abort();
    }
}

impl Collector {
    /// Start receiving at `POST /v1/traces` and `POST /v1/metrics`.
    pub async fn start() -> Collector {
        let kept = Arc::new(Kept::default());
        let on_spans = kept.clone();
        let on_metrics = kept.clone();
        let app = axum::Router::new()
            .route(
                "/v1/traces",
                axum::routing::post(move |body: axum::body::Bytes| {
                    let kept = on_spans.clone();
                    async move {
                        let Ok(request) = ExportTraceServiceRequest::decode(body) else {
                            return http::StatusCode::BAD_REQUEST;
                        };
                        let mut received = lock(&kept.received);
                        for resource in request.resource_spans {
                            let of =
                                |key: &str| resource_attribute(resource.resource.as_ref(), key);
                            let service = of("service.name").unwrap_or_default();
                            let instance = of("service.instance.id");
                            for scope in resource.scope_spans {
                                for span in scope.spans {
                                    received.push(Received {
                                        service: service.clone(),
                                        instance: instance.clone(),
                                        span,
                                    });
                                }
                            }
                        }
                        drop(received);
                        kept.arrived.notify_waiters();
                        http::StatusCode::OK
                    }
                }),
            )
            .route(
                "/v1/metrics",
                axum::routing::post(move |body: axum::body::Bytes| {
                    let kept = on_metrics.clone();
                    async move {
                        let Ok(request) = ExportMetricsServiceRequest::decode(body) else {
                            return http::StatusCode::BAD_REQUEST;
                        };
                        lock(&kept.metrics).extend(
                            request
                                .resource_metrics
                                .into_iter()
                                .flat_map(|resource| resource.scope_metrics)
                                .flat_map(|scope| scope.metrics),
                        );
                        kept.arrived.notify_waiters();
                        http::StatusCode::OK
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let served = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Collector { addr, kept, served }
    }

    /// The base URL to export to (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.kept.received).clone()
    }

    /// The newest report of the metric `name`, once one holds for which `done` does (checked
    /// as each batch arrives); panics, naming every metric received, after twenty seconds of
    /// real time. Reports are cumulative, so the newest holds every count so far.
    pub async fn metric(&self, name: &str, done: impl Fn(&Metric) -> bool) -> Metric {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let arrived = self.kept.arrived.notified();
            let newest = lock(&self.kept.metrics)
                .iter()
                .rev()
                .find(|metric| metric.name == name)
                .cloned();
            if let Some(metric) = newest.filter(|metric| done(metric)) {
                return metric;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                let names: std::collections::BTreeSet<String> = lock(&self.kept.metrics)
                    .iter()
                    .map(|metric| metric.name.clone())
                    .collect();
                panic!("the metric {name} never came as expected; received: {names:?}");
            }
        }
    }

    /// Assert that every span received so far came from the service `name`.
    pub fn assert_only_service(&self, name: &str) {
        let services: Vec<String> = self.received().into_iter().map(|r| r.service).collect();
        assert!(services.iter().all(|s| s == name), "{services:?}");
    }

    /// The spans that `select` picks, once `done` holds for them (checked as each batch
    /// arrives); panics, listing every span received, after twenty seconds of real time.
    pub async fn wait_for(
        &self,
        select: impl Fn(&Span) -> bool,
        done: impl Fn(&[Span]) -> bool,
    ) -> Vec<Span> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            // Registered before looking, so a batch that lands in between still wakes it.
            let arrived = self.kept.arrived.notified();
            let spans: Vec<Span> = self
                .received()
                .into_iter()
                .map(|received| received.span)
                .filter(|span| select(span))
                .collect();
            if done(&spans) {
                return spans;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!(
                    "the spans never came: {:#?}",
                    self.received()
                        .iter()
                        .map(|received| &received.span.name)
                        .collect::<Vec<_>>()
                );
            }
        }
    }

    /// The first span that `select` picks, once one has come (see [`Collector::wait_for`]).
    pub async fn first(&self, select: impl Fn(&Span) -> bool) -> Span {
        self.wait_for(select, |spans| !spans.is_empty())
            .await
            .remove(0)
    }
}

fn resource_attribute(resource: Option<&Resource>, key: &str) -> Option<String> {
    find(
        resource
            .map(|r| r.attributes.as_slice())
            .unwrap_or_default(),
        key,
    )
}

fn find(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| text(a.value.as_ref()?.value.as_ref()?))
}

fn has_all(attributes: &[KeyValue], with: &[(&str, &str)]) -> bool {
    with.iter()
        .all(|(key, value)| find(attributes, key).as_deref() == Some(*value))
}

/// How many operations a histogram counted in its points whose attributes include every one
/// of `with`.
pub fn histogram_count(metric: &Metric, with: &[(&str, &str)]) -> u64 {
    match &metric.data {
        Some(Data::Histogram(histogram)) => histogram
            .data_points
            .iter()
            .filter(|point| has_all(&point.attributes, with))
            .map(|point| point.count)
            .sum(),
        _ => 0,
    }
}

/// The value of a gauge's or a sum's point whose attributes include every one of `with`.
pub fn value(metric: &Metric, with: &[(&str, &str)]) -> Option<i64> {
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
    let points = match &metric.data {
        Some(Data::Gauge(gauge)) => &gauge.data_points,
        Some(Data::Sum(sum)) => &sum.data_points,
        _ => return None,
    };
    let point = points
        .iter()
        .find(|point| has_all(&point.attributes, with))?;
    match point.value? {
        Value::AsInt(int) => Some(int),
        Value::AsDouble(double) => Some(double as i64),
    }
}

/// Assert that every attribute of `expected` has its value on `span` (as [`attribute`] reads
/// it).
pub fn assert_attributes(span: &Span, expected: &[(&str, &str)]) {
    for (key, value) in expected {
        assert_eq!(
            attribute(span, key).as_deref(),
            Some(*value),
            "{}'s {key}",
            span.name
        );
    }
}

/// A span's attribute as text (numbers and booleans written out).
pub fn attribute(span: &Span, key: &str) -> Option<String> {
    find(&span.attributes, key)
}

fn text(value: &AnyValue) -> Option<String> {
    Some(match value {
        AnyValue::StringValue(s) => s.clone(),
        AnyValue::IntValue(i) => i.to_string(),
        AnyValue::BoolValue(b) => b.to_string(),
        AnyValue::DoubleValue(d) => d.to_string(),
        _ => return None,
    })
}

/// Bytes from hex (a trace or span id as W3C `traceparent` writes it).
pub fn hex_bytes(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .filter_map(|i| u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}
