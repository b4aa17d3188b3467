//! The audit log of tool calls: one record per call, handed to a sink the application chooses.

use serde::Serialize;

use std::sync::Arc;

/// One tool call, as the audit log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// The signed-in user, or `anonymous`.
    pub user: String,
    /// The tool's name.
    pub tool: String,
    /// `ok`, `error` (an isError result), `input_required` (a 2026-07-28 round ended with a
    /// question), `task`, or `protocol_error`.
    pub outcome: &'static str,
    /// How long the request took, in milliseconds.
    pub duration_ms: f64,
}

/// Where audit records go. The default writes each as one JSON line on the `audit.mcp`
/// tracing target.
#[derive(Clone)]
pub struct AuditSink(pub(crate) Arc<dyn Fn(&AuditRecord) + Send + Sync>);

impl AuditSink {
    /// A sink that hands each record to `f`.
    pub fn new(f: impl Fn(&AuditRecord) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl Default for AuditSink {
    fn default() -> Self {
        Self::new(|record| {
            let line = serde_json::to_string(record).unwrap_or_default();
            tracing::info!(target: "audit.mcp", "{line}");
        })
    }
}

impl std::fmt::Debug for AuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditSink")
    }
}
