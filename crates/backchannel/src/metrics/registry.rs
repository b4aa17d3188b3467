//! The process's one registry of figures, and what each holds: the duration histograms, the
//! counters and gauges, the fixed label lists (methods, refusal reasons, task ends) and each
//! metric's description. `metrics` records into it and renders it; `metrics::otel` mirrors it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::time::Duration;

/// The bucket boundaries (seconds) OpenTelemetry's MCP conventions give for operation and
/// session durations.
pub const BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The methods an operation is labelled with; anything else is `other`.
pub(crate) const METHODS: [&str; 22] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/cancel",
    "tasks/result",
    "tasks/update",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/roots/list_changed",
];

/// Why a request was refused before any handler saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Reason {
    /// A `Host` header outside the allowed hosts.
    Host,
    /// An `Origin` header outside the allowed origins.
    Origin,
    /// A body over the size cap.
    Size,
    /// A body that did not arrive in time.
    BodyTimeout,
    /// A new session over the cap on open sessions.
    Sessions,
    /// No valid sign-in.
    Auth,
    /// Over the caller's rate limit.
    RateLimit,
}

impl Reason {
    pub(crate) const ALL: [Reason; 7] = [
        Reason::Host,
        Reason::Origin,
        Reason::Size,
        Reason::BodyTimeout,
        Reason::Sessions,
        Reason::Auth,
        Reason::RateLimit,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Host => "host",
            Reason::Origin => "origin",
            Reason::Size => "size",
            Reason::BodyTimeout => "body_timeout",
            Reason::Sessions => "sessions",
            Reason::Auth => "auth",
            Reason::RateLimit => "rate_limit",
        }
    }
}

/// Counts per bucket (the last for +Inf), the sum in nanoseconds.
#[derive(Debug, Default, Clone)]
pub(crate) struct Histogram {
    pub(crate) buckets: [u64; BUCKETS.len() + 1],
    pub(crate) sum_nanos: u128,
    pub(crate) count: u64,
}

impl Histogram {
    pub(crate) fn record(&mut self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let at = BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BUCKETS.len());
        self.buckets[at] += 1;
        self.sum_nanos += elapsed.as_nanos();
        self.count += 1;
    }

    pub(crate) fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (at, count) in self.buckets.iter().enumerate() {
            cumulative += count;
            let le = BUCKETS
                .get(at)
                .map_or_else(|| "+Inf".to_owned(), |bound| bound.to_string());
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {cumulative}"
            );
        }
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {}", self.sum_nanos as f64 / 1e9);
        let _ = writeln!(out, "{name}_count{braces} {}", self.count);
    }
}

/// What each metric counts, as its Prometheus `HELP` line and its OpenTelemetry description
/// say.
pub(crate) mod help {
    pub(crate) const SERVER_OPERATIONS: &str =
        "MCP requests and notifications served, from arrival to the end of the answer.";
    pub(crate) const SERVER_SESSIONS: &str = "2025-11-25 sessions, from opening to closing.";
    pub(crate) const CLIENT_OPERATIONS: &str =
        "MCP requests this program sent as a client, until their final answer.";
    pub(crate) const CLIENT_SESSIONS: &str =
        "Sessions this program held with servers as a client, from start to end.";
    pub(crate) const SESSIONS_OPEN: &str = "2025-11-25 sessions open now.";
    pub(crate) const QUESTIONS_WAITING: &str =
        "Questions sent to a client (elicitation, sampling, roots) waiting for the answer.";
    pub(crate) const TASKS_RUNNING: &str = "Task bodies running on this instance.";
    pub(crate) const REFUSED: &str = "Requests refused before a handler saw them, by reason.";
    pub(crate) const TASKS_ENDED: &str = "Tasks whose end this instance recorded, by state.";
    pub(crate) const SIGNED_IN: &str =
        "Requests let on by a sign-in, by its kind (never by token or name).";
    pub(crate) const TAKEOVERS: &str =
        "Tasks this instance took over after their instance stopped.";
}

/// An operation's labels: method, revision, and the error type when it failed.
pub(crate) type OperationKey = (&'static str, &'static str, Option<&'static str>);

pub(crate) struct Registry {
    pub(crate) enabled: AtomicBool,
    pub(crate) operations: Mutex<BTreeMap<OperationKey, Histogram>>,
    pub(crate) sessions: Mutex<Histogram>,
    pub(crate) open_sessions: AtomicI64,
    pub(crate) waiting_questions: AtomicI64,
    pub(crate) refused: [AtomicU64; Reason::ALL.len()],
    pub(crate) tasks_running: AtomicI64,
    pub(crate) tasks_ended: [AtomicU64; ENDED.len()],
    pub(crate) task_takeovers: AtomicU64,
    pub(crate) signed_in: [AtomicU64; SIGN_IN_KINDS.len()],
    pub(crate) client_operations: Mutex<BTreeMap<(&'static str, Option<&'static str>), Histogram>>,
    pub(crate) client_sessions: Mutex<Histogram>,
}

/// The kinds of sign-in a request may have been let on by, as their metric labels them.
pub(crate) const SIGN_IN_KINDS: [&str; 2] = ["token-file", "oauth"];

/// The states a task ends in, as its metric labels them.
pub(crate) const ENDED: [&str; 3] = ["completed", "failed", "cancelled"];

pub(crate) static REGISTRY: Registry = Registry {
    enabled: AtomicBool::new(false),
    operations: Mutex::new(BTreeMap::new()),
    sessions: Mutex::new(Histogram {
        buckets: [0; BUCKETS.len() + 1],
        sum_nanos: 0,
        count: 0,
    }),
    open_sessions: AtomicI64::new(0),
    waiting_questions: AtomicI64::new(0),
    refused: [const { AtomicU64::new(0) }; Reason::ALL.len()],
    tasks_running: AtomicI64::new(0),
    tasks_ended: [const { AtomicU64::new(0) }; ENDED.len()],
    task_takeovers: AtomicU64::new(0),
    signed_in: [const { AtomicU64::new(0) }; SIGN_IN_KINDS.len()],
    client_operations: Mutex::new(BTreeMap::new()),
    client_sessions: Mutex::new(Histogram {
        buckets: [0; BUCKETS.len() + 1],
        sum_nanos: 0,
        count: 0,
    }),
};
