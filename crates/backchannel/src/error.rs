//! What a tool body returns when it does not produce a result.

use rmcp::ErrorData;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock as Content};

use crate::ctx::Suspend;
use crate::outcome::StepError;

/// The error side of a tool body.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolError {
    /// An ask has no answer yet; the layer fetches it and runs the body again.
    Suspended,
    /// The tool failed in a way the model should read: becomes an `isError` result.
    Failed(String),
    /// A protocol error (JSON-RPC error response). Use sparingly: a tool's own failure is a
    /// [`ToolError::Failed`].
    Protocol(ErrorData),
}

impl ToolError {
    /// A failure the model reads as an `isError` result.
    pub fn failed(message: impl std::fmt::Display) -> Self {
        ToolError::Failed(message.to_string())
    }
}

impl From<Suspend> for ToolError {
    fn from(_: Suspend) -> Self {
        ToolError::Suspended
    }
}

impl From<ErrorData> for ToolError {
    fn from(error: ErrorData) -> Self {
        ToolError::Protocol(error)
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::Suspended => f.write_str("waiting for the client's answers"),
            ToolError::Failed(message) => f.write_str(message),
            ToolError::Protocol(error) => write!(f, "{}", error.message),
        }
    }
}

impl IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        match self {
            // The layer discards a suspended run's result; this text is never seen by a client.
            ToolError::Suspended => Ok(CallToolResult::error(vec![Content::text(
                "waiting for the client's answers",
            )])
            .into()),
            ToolError::Failed(message) => {
                Ok(CallToolResult::error(vec![Content::text(message)]).into())
            }
            ToolError::Protocol(error) => Err(error),
        }
    }
}

/// A server failure whose inside the client must not see (database text, paths, internals).
///
/// [`Incident::record`] logs the error at ERROR with a fresh reference, and the client is told
/// only that reference: as a tool's `isError` text (`ToolError::from`), or in whatever envelope
/// the surface has (GraphQL's `extensions.reference`) through [`Incident::message`] and
/// [`Incident::reference`]. Both servers report internal errors this way and no other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incident {
    reference: String,
}

impl Incident {
    /// Log `error` (what failed: `context`) under a new reference.
    pub fn record(context: &str, error: &dyn std::fmt::Display) -> Self {
        let reference = crate::util::hex(&crate::util::random_bytes::<16>());
        tracing::error!(%reference, %error, "{context}");
        Incident { reference }
    }

    /// The reference the log line carries: 32 hexadecimal digits.
    pub fn reference(&self) -> &str {
        &self.reference
    }

    /// What the client reads.
    pub fn message(&self) -> String {
        format!(
            "An unexpected error occurred. Reference: {}",
            self.reference
        )
    }
}

impl From<Incident> for ToolError {
    fn from(incident: Incident) -> Self {
        ToolError::Failed(incident.message())
    }
}

impl<E: std::fmt::Display> From<StepError<E>> for ToolError {
    fn from(error: StepError<E>) -> Self {
        ToolError::Failed(error.to_string())
    }
}

/// What a tool body returns.
pub type ToolResult<T = CallToolResult> = Result<T, ToolError>;

impl From<Suspend> for ErrorData {
    /// For prompt bodies that return `Result<_, ErrorData>`: a suspended run's error is
    /// discarded by the layer, never sent.
    fn from(_: Suspend) -> Self {
        ErrorData::internal_error("waiting for the client's answers", None)
    }
}
