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

use super::registry::{BUCKETS, ENDED, REGISTRY, Reason, SIGN_IN_KINDS, help};

/// The instruments of one export, kept while it runs.
struct Instruments {
    server_operation: Histogram<f64>,
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "used by the HTTP edge")
    )]
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
        gauge("mcp.server.sessions.open", help::SESSIONS_OPEN, || {
            REGISTRY.open_sessions.load(Ordering::Relaxed)
        }),
        gauge(
            "mcp.server.questions.waiting",
            help::QUESTIONS_WAITING,
            || REGISTRY.waiting_questions.load(Ordering::Relaxed),
        ),
        gauge("mcp.server.tasks.running", help::TASKS_RUNNING, || {
            REGISTRY.tasks_running.load(Ordering::Relaxed)
        }),
    ];
    let counters = vec![
        meter
            .u64_observable_counter("mcp.server.refused_requests")
            .with_description(help::REFUSED)
            .with_callback(|observer| {
                for (reason, count) in Reason::ALL.iter().zip(&REGISTRY.refused) {
                    let reason = KeyValue::new("reason", reason.as_str());
                    observer.observe(count.load(Ordering::Relaxed), &[reason]);
                }
            })
            .build(),
        meter
            .u64_observable_counter("mcp.server.signed_in_requests")
            .with_description(help::SIGNED_IN)
            .with_callback(|observer| {
                for (kind, count) in SIGN_IN_KINDS.iter().zip(&REGISTRY.signed_in) {
                    let kind = KeyValue::new("kind", *kind);
                    observer.observe(count.load(Ordering::Relaxed), &[kind]);
                }
            })
            .build(),
        meter
            .u64_observable_counter("mcp.server.tasks.ended")
            .with_description(help::TASKS_ENDED)
            .with_callback(|observer| {
                for (state, count) in ENDED.iter().zip(&REGISTRY.tasks_ended) {
                    let state = KeyValue::new("state", *state);
                    observer.observe(count.load(Ordering::Relaxed), &[state]);
                }
            })
            .build(),
        meter
            .u64_observable_counter("mcp.server.task.takeovers")
            .with_description(help::TAKEOVERS)
            .with_callback(|observer| {
                observer.observe(REGISTRY.task_takeovers.load(Ordering::Relaxed), &[]);
            })
            .build(),
    ];
    let instruments = Instruments {
        server_operation: duration(
            meter,
            "mcp.server.operation.duration",
            help::SERVER_OPERATIONS,
        ),
        server_session: duration(meter, "mcp.server.session.duration", help::SERVER_SESSIONS),
        client_operation: duration(
            meter,
            "mcp.client.operation.duration",
            help::CLIENT_OPERATIONS,
        ),
        client_session: duration(meter, "mcp.client.session.duration", help::CLIENT_SESSIONS),
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

#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP edge")
)]
pub(super) fn server_session(lasted: Duration) {
    with(|instruments| instruments.server_session.record(lasted.as_secs_f64(), &[]));
}

pub(super) fn client_session(lasted: Duration) {
    with(|instruments| instruments.client_session.record(lasted.as_secs_f64(), &[]));
}
