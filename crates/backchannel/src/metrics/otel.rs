//! The registry mirrored into OpenTelemetry's metrics SDK while OTLP export runs: the duration
//! histograms are recorded into its instruments as well, and its callbacks read the gauges
//! and counters at each collection. Names and attributes are the conventions' own
//! (`mcp.server.operation.duration` with `mcp.method.name`, `mcp.protocol.version`,
//! `error.type`); Prometheus's names are these with dots as underscores and the unit added.

use std::sync::atomic::Ordering;
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter, ObservableCounter, ObservableGauge};

use super::{BUCKETS, ENDED, REGISTRY, Reason};

/// The instruments of one export, kept while it runs.
struct Instruments {
    server_operation: Histogram<f64>,
    server_session: Histogram<f64>,
    client_operation: Histogram<f64>,
    client_session: Histogram<f64>,
    // Held so their callbacks stay registered for as long as the export runs.
    _gauges: Vec<ObservableGauge<i64>>,
    _counters: Vec<ObservableCounter<u64>>,
}

static INSTRUMENTS: RwLock<Option<Instruments>> = RwLock::new(None);

fn with(record: impl FnOnce(&Instruments)) {
    if let Some(instruments) = INSTRUMENTS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        record(instruments);
    }
}

fn duration(meter: &Meter, name: &'static str, description: &'static str) -> Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(BUCKETS.to_vec())
        .build()
}

/// Mirror the registry into `meter`'s instruments from now on.
pub(crate) fn start(meter: &Meter) {
    let gauge = |name: &'static str, description: &'static str, read: fn() -> i64| {
        meter
            .i64_observable_gauge(name)
            .with_description(description)
            .with_callback(move |observer| observer.observe(read(), &[]))
            .build()
    };
    let gauges = vec![
        gauge(
            "mcp.server.sessions.open",
            "2025-11-25 sessions open now.",
            || REGISTRY.open_sessions.load(Ordering::Relaxed),
        ),
        gauge(
            "mcp.server.questions.waiting",
            "Questions sent to a client (elicitation, sampling, roots) waiting for the answer.",
            || REGISTRY.waiting_questions.load(Ordering::Relaxed),
        ),
        gauge(
            "mcp.server.tasks.running",
            "Task bodies running on this instance.",
            || REGISTRY.tasks_running.load(Ordering::Relaxed),
        ),
    ];
    let counters = vec![
        meter
            .u64_observable_counter("mcp.server.refused_requests")
            .with_description("Requests refused before a handler saw them, by reason.")
            .with_callback(|observer| {
                for (reason, count) in Reason::ALL.iter().zip(&REGISTRY.refused) {
                    let reason = KeyValue::new("reason", reason.as_str());
                    observer.observe(count.load(Ordering::Relaxed), &[reason]);
                }
            })
            .build(),
        meter
            .u64_observable_counter("mcp.server.tasks.ended")
            .with_description("Tasks whose end this instance recorded, by state.")
            .with_callback(|observer| {
                for (state, count) in ENDED.iter().zip(&REGISTRY.tasks_ended) {
                    let state = KeyValue::new("state", *state);
                    observer.observe(count.load(Ordering::Relaxed), &[state]);
                }
            })
            .build(),
        meter
            .u64_observable_counter("mcp.server.task.takeovers")
            .with_description("Tasks this instance took over after their instance stopped.")
            .with_callback(|observer| {
                observer.observe(REGISTRY.task_takeovers.load(Ordering::Relaxed), &[]);
            })
            .build(),
    ];
    let instruments = Instruments {
        server_operation: duration(
            meter,
            "mcp.server.operation.duration",
            "MCP requests and notifications served, from arrival to the end of the answer.",
        ),
        server_session: duration(
            meter,
            "mcp.server.session.duration",
            "2025-11-25 sessions, from opening to closing.",
        ),
        client_operation: duration(
            meter,
            "mcp.client.operation.duration",
            "MCP requests this program sent as a client, until their final answer.",
        ),
        client_session: duration(
            meter,
            "mcp.client.session.duration",
            "Sessions this program held with servers as a client, from start to end.",
        ),
        _gauges: gauges,
        _counters: counters,
    };
    *INSTRUMENTS.write().unwrap_or_else(PoisonError::into_inner) = Some(instruments);
}

/// Stop mirroring (the export ended).
pub(crate) fn stop() {
    *INSTRUMENTS.write().unwrap_or_else(PoisonError::into_inner) = None;
}

fn attributes(method: &'static str, error: Option<&'static str>) -> Vec<KeyValue> {
    let mut attributes = vec![KeyValue::new("mcp.method.name", method)];
    if let Some(error) = error {
        attributes.push(KeyValue::new("error.type", error));
    }
    attributes
}

pub(super) fn operation(
    method: &'static str,
    revision: &'static str,
    error: Option<&'static str>,
    elapsed: Duration,
) {
    with(|instruments| {
        let mut attributes = attributes(method, error);
        attributes.push(KeyValue::new("mcp.protocol.version", revision));
        instruments
            .server_operation
            .record(elapsed.as_secs_f64(), &attributes);
    });
}

pub(super) fn client_operation(
    method: &'static str,
    error: Option<&'static str>,
    elapsed: Duration,
) {
    with(|instruments| {
        instruments
            .client_operation
            .record(elapsed.as_secs_f64(), &attributes(method, error));
    });
}

pub(super) fn server_session(lasted: Duration) {
    with(|instruments| instruments.server_session.record(lasted.as_secs_f64(), &[]));
}

pub(super) fn client_session(lasted: Duration) {
    with(|instruments| instruments.client_session.record(lasted.as_secs_f64(), &[]));
}
