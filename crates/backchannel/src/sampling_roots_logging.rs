//! Every call into rmcp's SEP-2577-deprecated sampling, roots and logging API lives here, and
//! the aliases users name those types by. (The deprecation is acknowledged once, for the whole
//! library, in `lib.rs`.)

use std::time::Duration;

use rmcp::model::{
    ClientResult, CustomNotification, InputRequest, RequestId, ServerNotification, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, ServiceError};

use crate::reach::Reach;
use crate::state::Answer;
#[cfg(feature = "http")]
use crate::transport::NoAnswer;

/// Log severity, least to most severe (the protocol's syslog levels). Ours, so code that logs
/// to a client never names rmcp's deprecated logging types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal events.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A component is failing.
    Critical,
    /// Act now.
    Alert,
    /// Unusable.
    Emergency,
}

impl LogLevel {
    /// The level as the protocol names it (`"debug"` … `"emergency"`).
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl std::str::FromStr for LogLevel {
    type Err = String;

    /// A level by its protocol name.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Notice,
            LogLevel::Warning,
            LogLevel::Error,
            LogLevel::Critical,
            LogLevel::Alert,
            LogLevel::Emergency,
        ]
        .into_iter()
        .find(|level| level.as_str() == name)
        .ok_or_else(|| format!("{name:?} is no log level"))
    }
}

impl From<rmcp::model::LoggingLevel> for LogLevel {
    fn from(level: rmcp::model::LoggingLevel) -> Self {
        use rmcp::model::LoggingLevel as L;
        match level {
            L::Debug => LogLevel::Debug,
            L::Info => LogLevel::Info,
            L::Notice => LogLevel::Notice,
            L::Warning => LogLevel::Warning,
            L::Error => LogLevel::Error,
            L::Critical => LogLevel::Critical,
            L::Alert => LogLevel::Alert,
            L::Emergency => LogLevel::Emergency,
        }
    }
}

impl From<LogLevel> for rmcp::model::LoggingLevel {
    fn from(level: LogLevel) -> Self {
        use rmcp::model::LoggingLevel as L;
        match level {
            LogLevel::Debug => L::Debug,
            LogLevel::Info => L::Info,
            LogLevel::Notice => L::Notice,
            LogLevel::Warning => L::Warning,
            LogLevel::Error => L::Error,
            LogLevel::Critical => L::Critical,
            LogLevel::Alert => L::Alert,
            LogLevel::Emergency => L::Emergency,
        }
    }
}
/// Parameters of `sampling/createMessage`.
pub type SamplingRequest = rmcp::model::CreateMessageRequestParams;
/// Result of `sampling/createMessage`.
pub type SamplingResult = rmcp::model::CreateMessageResult;
/// One message of a sampling conversation.
pub type SamplingMessage = rmcp::model::SamplingMessage;
/// What model a sampling request would like (`modelPreferences`: advisory priorities and hints;
/// the client chooses).
pub type ModelPreferences = rmcp::model::ModelPreferences;
/// A root (folder) the client lets the server use.
pub type Root = rmcp::model::Root;
/// Result of `roots/list`.
pub type ListRootsResult = rmcp::model::ListRootsResult;
/// Parameters of `logging/setLevel`.
pub type SetLevelParams = rmcp::model::SetLevelRequestParams;

/// `capabilities` with logging declared (the protocol's `logging` capability, which
/// [`crate::Ctx::log`] serves).
pub fn with_logging(
    mut capabilities: rmcp::model::ServerCapabilities,
) -> rmcp::model::ServerCapabilities {
    capabilities.logging = Some(rmcp::model::JsonObject::new());
    capabilities
}

impl crate::RootsListed {
    /// The URIs of the roots the client listed (`file:///…`), in its order; none unless
    /// [`Listed`](crate::RootsListed::Listed).
    pub fn uris(&self) -> Vec<&str> {
        match self {
            crate::RootsListed::Listed(roots) => {
                roots.iter().map(|root| root.uri.as_str()).collect()
            }
            _ => Vec::new(),
        }
    }
}

/// The level a `logging/setLevel` request asks for.
pub(crate) fn requested_level(params: &SetLevelParams) -> LogLevel {
    params.level.into()
}

/// The level a 2026-07-28 request asks for in its `_meta`, if any.
pub(crate) fn request_log_level(meta: &rmcp::model::RequestMetaObject) -> Option<LogLevel> {
    meta.log_level().map(LogLevel::from)
}

/// A `notifications/message` log message.
pub(crate) fn log_notification(
    level: LogLevel,
    logger: &str,
    data: serde_json::Value,
) -> ServerNotification {
    let param =
        rmcp::model::LoggingMessageNotificationParam::new(level.into(), data).with_logger(logger);
    ServerNotification::LoggingMessageNotification(rmcp::model::LoggingMessageNotification::new(
        param,
    ))
}

/// A `notifications/elicitation/complete` for a URL question.
pub(crate) fn elicitation_complete(elicitation_id: &str) -> ServerNotification {
    ServerNotification::CustomNotification(CustomNotification::new(
        "notifications/elicitation/complete",
        Some(serde_json::json!({ "elicitationId": elicitation_id })),
    ))
}

pub(crate) fn sampling_request(params: SamplingRequest) -> InputRequest {
    InputRequest::CreateMessage(rmcp::model::CreateMessageRequest::new(params))
}

/// A sampling request of one user message, answered in at most `max_tokens`.
pub fn user_prompt(text: impl Into<String>, max_tokens: u32) -> SamplingRequest {
    SamplingRequest::new(vec![SamplingMessage::user_text(text.into())], max_tokens)
}

pub(crate) fn list_roots_request() -> InputRequest {
    InputRequest::ListRoots(rmcp::model::ListRootsRequest {
        method: Default::default(),
        extensions: Default::default(),
    })
}

/// Send one question as a real server-to-client request (2025-11-25) to the session `reach`
/// names, on behalf of its request `origin`, and wait at most `timeout`.
#[cfg_attr(
    not(feature = "http"),
    expect(unused_variables, reason = "a session link is HTTP's")
)]
pub(crate) async fn fulfil(
    reach: &Reach,
    origin: &RequestId,
    request: InputRequest,
    timeout: Duration,
) -> Answer {
    let request = match request {
        InputRequest::CreateMessage(request) => ServerRequest::CreateMessageRequest(request),
        InputRequest::Elicitation(request) => ServerRequest::ElicitRequest(request),
        InputRequest::ListRoots(request) => ServerRequest::ListRootsRequest(request),
        other => {
            tracing::error!(?other, "unknown kind of input request");
            return Answer::Refused {
                code: -32603,
                message: "unknown kind of input request".into(),
            };
        }
    };
    let response = match reach {
        #[cfg(feature = "http")]
        Reach::Link(link) => match link.ask(request, origin, timeout).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(ServiceError::McpError(error)),
            Err(NoAnswer::TimedOut) => return Answer::TimedOut,
            Err(NoAnswer::Closed) => Err(ServiceError::TransportClosed),
        },
        Reach::Peer(peer) => {
            let sent = peer
                .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
                .await;
            match sent {
                Ok(handle) => handle.await_response().await,
                Err(error) => Err(error),
            }
        }
    };
    match response {
        Ok(ClientResult::ElicitResult(result)) => Answer::Elicit {
            meta: answer_meta(&result),
            action: result.action,
            content: result.content,
        },
        Ok(ClientResult::CreateMessageResult(result)) => Answer::Sampled {
            result: serde_json::to_value(&*result).unwrap_or_default(),
        },
        Ok(ClientResult::ListRootsResult(result)) => Answer::Roots {
            result: serde_json::to_value(&result).unwrap_or_default(),
        },
        Ok(other) => {
            let mut seen = format!("{other:?}");
            if let Some((cut, _)) = seen.char_indices().nth(120) {
                seen.truncate(cut);
                seen.push('…');
            }
            Answer::Failed {
                message: format!("the client answered with another kind of result: {seen}"),
            }
        }
        Err(ServiceError::Timeout { .. }) => Answer::TimedOut,
        Err(ServiceError::McpError(error)) => Answer::Refused {
            code: error.code.0,
            message: error.message.into_owned(),
        },
        Err(error) => Answer::Refused {
            code: -32603,
            message: error.to_string(),
        },
    }
}

/// The `_meta` of an elicitation answer, as JSON (`None` when it has none).
fn answer_meta(
    result: &rmcp::model::ElicitResult,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    match serde_json::to_value(result.meta.as_ref()?) {
        Ok(serde_json::Value::Object(meta)) if !meta.is_empty() => Some(meta),
        _ => None,
    }
}

/// Read a 2026-07-28 `inputResponses` value for a question of `kind`; `None` if malformed.
pub(crate) fn read_response(
    kind: crate::state::AskKind,
    value: &serde_json::Value,
) -> Option<Answer> {
    use crate::state::AskKind;
    if let Some(error) = value.get("error").filter(|e| e.is_object()) {
        return Some(Answer::Refused {
            code: error.get("code").and_then(|c| c.as_i64()).unwrap_or(-32603) as i32,
            message: error
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or("refused")
                .to_owned(),
        });
    }
    match kind {
        AskKind::Form | AskKind::Url => {
            let result: rmcp::model::ElicitResult = serde_json::from_value(value.clone()).ok()?;
            Some(Answer::Elicit {
                meta: answer_meta(&result),
                action: result.action,
                content: result.content,
            })
        }
        AskKind::Sampling => {
            serde_json::from_value::<SamplingResult>(value.clone()).ok()?;
            Some(Answer::Sampled {
                result: value.clone(),
            })
        }
        AskKind::Roots => {
            serde_json::from_value::<ListRootsResult>(value.clone()).ok()?;
            Some(Answer::Roots {
                result: value.clone(),
            })
        }
    }
}
