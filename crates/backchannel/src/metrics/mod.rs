//! What an operator watches, in Prometheus's text format, named after OpenTelemetry's semantic
//! conventions for MCP (`mcp.server.operation.duration` becomes
//! `mcp_server_operation_duration_seconds`, attribute `mcp.method.name` the label
//! `mcp_method_name`).
//!
//! One registry per process: the layer and the HTTP edge record into it wherever they are, and
//! a server shows it with [`serve::metrics_router`](crate::serve::metrics_router). Counters and
//! gauges are single atomics and always kept; the duration histograms take a lock per
//! operation and are kept only once [`enable`] was called (a server does so when it serves
//! `/metrics`), so a server without metrics pays one relaxed load per operation.
//!
//! While OTLP export runs (`telemetry::export`, feature `otel`), the same figures go out as
//! OpenTelemetry metrics too, named as the conventions name them.
//!
//! Label values come from fixed lists (methods MCP defines, the revisions we serve, HTTP
//! statuses), never from what a client sent, so no client can grow the registry.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(feature = "otel")]
pub(crate) mod otel;
mod registry;

use crate::util::lock;
pub(crate) use registry::help;
pub use registry::{BUCKETS, Reason};
use registry::{ENDED, METHODS, REGISTRY, SIGN_IN_KINDS};

/// Keep the duration histograms from now on (counters and gauges are always kept).
pub fn enable() {
    REGISTRY.enabled.store(true, Ordering::Relaxed);
}

/// Whether [`enable`] was called.
pub fn enabled() -> bool {
    REGISTRY.enabled.load(Ordering::Relaxed)
}

/// The label value for a method name: itself when MCP defines it, `other` otherwise.
pub fn method_label(method: &str) -> &'static str {
    METHODS
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or("other")
}

/// The label value for a protocol revision: one we serve, or `other`.
pub fn revision_label(revision: Option<&str>) -> &'static str {
    crate::Revision::ALL
        .into_iter()
        .map(crate::Revision::date)
        .find(|date| Some(*date) == revision)
        .unwrap_or("other")
}

/// The `error.type` of an HTTP status: `None` below 400, its number otherwise.
pub fn status_error(status: http::StatusCode) -> Option<&'static str> {
    if status.as_u16() < 400 {
        return None;
    }
    Some(match status.as_u16() {
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        406 => "406",
        408 => "408",
        409 => "409",
        413 => "413",
        415 => "415",
        429 => "429",
        500 => "500",
        503 => "503",
        _ if status.is_client_error() => "4xx",
        _ => "5xx",
    })
}

/// One MCP operation served (a request or notification, from its arrival to the end of its
/// answer), when the histograms are kept.
pub fn operation(
    method: &'static str,
    revision: &'static str,
    error: Option<&'static str>,
    elapsed: Duration,
) {
    if !enabled() {
        return;
    }
    lock(&REGISTRY.operations)
        .entry((method, revision, error))
        .or_default()
        .record(elapsed);
    #[cfg(feature = "otel")]
    otel::operation(method, revision, error, elapsed);
}

/// One request this program sent as an MCP client (a host's `tools/call`), from sending to
/// its final answer, when the histograms are kept. `error` is the conventions' `error.type`
/// (`tool_error` for a result marked `isError`).
pub fn client_operation(method: &str, error: Option<&'static str>, elapsed: Duration) {
    if !enabled() {
        return;
    }
    let method = method_label(method);
    lock(&REGISTRY.client_operations)
        .entry((method, error))
        .or_default()
        .record(elapsed);
    #[cfg(feature = "otel")]
    otel::client_operation(method, error, elapsed);
}

/// A client's session with a server (a host's connection), timed from its start until the
/// value is dropped; recorded when the histograms are kept.
#[derive(Debug)]
pub struct ClientSession(std::time::Instant);

impl ClientSession {
    /// The session starts now.
    pub fn start() -> Self {
        ClientSession(std::time::Instant::now())
    }
}

impl Drop for ClientSession {
    fn drop(&mut self) {
        if enabled() {
            let lasted = self.0.elapsed();
            lock(&REGISTRY.client_sessions).record(lasted);
            #[cfg(feature = "otel")]
            otel::client_session(lasted);
        }
    }
}

/// A request refused for `reason`.
pub fn refused(reason: Reason) {
    let at = Reason::ALL
        .iter()
        .position(|r| *r == reason)
        .unwrap_or_default();
    REGISTRY.refused[at].fetch_add(1, Ordering::Relaxed);
}

#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP edge")
)]
/// A 2025-11-25 session opened.
pub(crate) fn session_opened() {
    REGISTRY.open_sessions.fetch_add(1, Ordering::Relaxed);
}

#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP edge")
)]
/// A 2025-11-25 session closed after `lasted`.
pub(crate) fn session_closed(lasted: Duration) {
    REGISTRY.open_sessions.fetch_sub(1, Ordering::Relaxed);
    if enabled() {
        lock(&REGISTRY.sessions).record(lasted);
        #[cfg(feature = "otel")]
        otel::server_session(lasted);
    }
}

/// A task's body started (`1`) or stopped (`-1`) on this instance.
pub(crate) fn task_running(change: i64) {
    REGISTRY.tasks_running.fetch_add(change, Ordering::Relaxed);
}

/// This instance recorded a task's end in `state` (`completed`, `failed`, `cancelled`).
pub(crate) fn task_ended(state: &str) {
    if let Some(at) = ENDED.iter().position(|s| *s == state) {
        REGISTRY.tasks_ended[at].fetch_add(1, Ordering::Relaxed);
    }
}

/// A request let on by a sign-in of `kind` (`token-file`, `oauth`; another kind is not
/// counted).
pub fn signed_in(kind: &str) {
    if let Some(at) = SIGN_IN_KINDS.iter().position(|k| *k == kind) {
        REGISTRY.signed_in[at].fetch_add(1, Ordering::Relaxed);
    }
}

/// This instance took over a task whose instance stopped (its lease ran out).
pub(crate) fn task_taken_over() {
    REGISTRY.task_takeovers.fetch_add(1, Ordering::Relaxed);
}

/// Counts a question as waiting for a person's answer (elicitation, sampling or roots sent
/// to the client) while it lives.
#[derive(Debug)]
#[must_use = "the question counts as waiting only while this lives"]
pub struct Waiting(());

impl Waiting {
    /// One more question waiting, until the value is dropped.
    pub fn start() -> Self {
        REGISTRY.waiting_questions.fetch_add(1, Ordering::Relaxed);
        Waiting(())
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        REGISTRY.waiting_questions.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A counter family, a sample per label value.
fn counters<'a>(
    out: &mut String,
    name: &str,
    help: &str,
    samples: impl Iterator<Item = ((&'static str, &'static str), &'a AtomicU64)>,
) {
    head(out, name, help, "counter");
    for ((label, value), count) in samples {
        let _ = writeln!(
            out,
            "{name}{{{label}=\"{value}\"}} {}",
            count.load(Ordering::Relaxed)
        );
    }
}

/// A family's `# HELP` and `# TYPE` lines.
fn head(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The registry in Prometheus's text exposition format (version 0.0.4).
pub fn render() -> String {
    let mut out = String::new();
    histograms(&mut out);
    let gauges = [
        (
            "mcp_server_sessions_open",
            help::SESSIONS_OPEN,
            &REGISTRY.open_sessions,
        ),
        (
            "mcp_server_questions_waiting",
            help::QUESTIONS_WAITING,
            &REGISTRY.waiting_questions,
        ),
        (
            "mcp_server_tasks_running",
            help::TASKS_RUNNING,
            &REGISTRY.tasks_running,
        ),
    ];
    for (name, help, value) in gauges {
        head(&mut out, name, help, "gauge");
        let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
    }
    counters(
        &mut out,
        "mcp_server_refused_requests_total",
        help::REFUSED,
        Reason::ALL
            .iter()
            .map(|reason| ("reason", reason.as_str()))
            .zip(&REGISTRY.refused),
    );
    counters(
        &mut out,
        "mcp_server_signed_in_requests_total",
        help::SIGNED_IN,
        SIGN_IN_KINDS
            .iter()
            .map(|kind| ("kind", *kind))
            .zip(&REGISTRY.signed_in),
    );
    counters(
        &mut out,
        "mcp_server_tasks_ended_total",
        help::TASKS_ENDED,
        ENDED
            .iter()
            .map(|state| ("state", *state))
            .zip(&REGISTRY.tasks_ended),
    );
    let name = "mcp_server_task_takeovers_total";
    head(&mut out, name, help::TAKEOVERS, "counter");
    let takeovers = REGISTRY.task_takeovers.load(Ordering::Relaxed);
    let _ = writeln!(out, "{name} {takeovers}");
    out
}

/// The duration histograms: operations and sessions, the server's and the client's.
fn histograms(out: &mut String) {
    let with_error = |mut labels: String, error: &Option<_>| {
        if let Some(error) = error {
            let _ = write!(labels, ",error_type=\"{error}\"");
        }
        labels
    };
    let name = "mcp_server_operation_duration_seconds";
    head(out, name, help::SERVER_OPERATIONS, "histogram");
    for ((method, revision, error), histogram) in lock(&REGISTRY.operations).iter() {
        let labels = format!("mcp_method_name=\"{method}\",mcp_protocol_version=\"{revision}\"");
        histogram.render(out, name, &with_error(labels, error));
    }
    let name = "mcp_server_session_duration_seconds";
    head(out, name, help::SERVER_SESSIONS, "histogram");
    let sessions = lock(&REGISTRY.sessions).clone();
    sessions.render(out, name, "");
    let name = "mcp_client_operation_duration_seconds";
    head(out, name, help::CLIENT_OPERATIONS, "histogram");
    for ((method, error), histogram) in lock(&REGISTRY.client_operations).iter() {
        let labels = format!("mcp_method_name=\"{method}\"");
        histogram.render(out, name, &with_error(labels, error));
    }
    let name = "mcp_client_session_duration_seconds";
    head(out, name, help::CLIENT_SESSIONS, "histogram");
    let sessions = lock(&REGISTRY.client_sessions).clone();
    sessions.render(out, name, "");
}

#[cfg(test)]
mod tests {
    use super::registry::Histogram;
    use super::*;

    #[test]
    fn a_histogram_counts_cumulatively_with_an_infinite_bucket() {
        let mut histogram = Histogram::default();
        histogram.record(Duration::from_millis(5));
        histogram.record(Duration::from_millis(15));
        histogram.record(Duration::from_secs(400));
        let mut out = String::new();
        histogram.render(&mut out, "x", "a=\"b\"");
        assert!(out.contains("x_bucket{a=\"b\",le=\"0.01\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"0.02\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"300\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("x_count{a=\"b\"} 3\n"), "{out}");
        assert!(out.contains("x_sum{a=\"b\"} 400.02\n"), "{out}");
    }

    #[test]
    fn labels_come_from_fixed_lists() {
        assert_eq!(method_label("tools/call"), "tools/call");
        assert_eq!(method_label("tools/call\"} 1\nevil"), "other");
        assert_eq!(revision_label(Some("2026-07-28")), "2026-07-28");
        assert_eq!(revision_label(Some("1999-01-01")), "other");
        assert_eq!(status_error(http::StatusCode::OK), None);
        assert_eq!(status_error(http::StatusCode::IM_A_TEAPOT), Some("4xx"));
    }
}
