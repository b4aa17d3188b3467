//! What the HTTP edge does for each MCP message (its span, its operation metric), done around
//! a server reached another way: over stdio, or any transport of a program's own.

use std::time::Instant;

use rmcp::model::{ClientNotification, ClientRequest, ErrorCode, ServerResult};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, Service};

/// A server whose every request and notification gets a span named as the conventions say
/// (`tools/call get_order`, `network.transport=pipe`, continuing the client's `_meta` trace)
/// and an `mcp.server.operation.duration` record. [`serve::stdio`](crate::serve::stdio) wraps
/// its server in one; wrap yours when you serve it over a transport of your own.
#[derive(Debug, Clone)]
pub struct Traced<S>(pub S);

/// What a request names beyond its method: the tool, the prompt or the resource.
fn target(request: &ClientRequest) -> Option<&str> {
    Some(match request {
        ClientRequest::CallToolRequest(r) => &r.params.name,
        ClientRequest::GetPromptRequest(r) => &r.params.name,
        ClientRequest::ReadResourceRequest(r) => &r.params.uri,
        ClientRequest::SubscribeRequest(r) => &r.params.uri,
        ClientRequest::UnsubscribeRequest(r) => &r.params.uri,
        _ => return None,
    })
}

fn notification_method(notification: &ClientNotification) -> &str {
    match notification {
        ClientNotification::CancelledNotification(_) => "notifications/cancelled",
        ClientNotification::ProgressNotification(_) => "notifications/progress",
        ClientNotification::InitializedNotification(_) => "notifications/initialized",
        ClientNotification::RootsListChangedNotification(_) => "notifications/roots/list_changed",
        ClientNotification::CustomNotification(custom) => &custom.method,
        _ => "other",
    }
}

/// The conventions' `error.type` for a JSON-RPC error: its code, from a fixed list.
fn code_label(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::PARSE_ERROR => "-32700",
        ErrorCode::INVALID_REQUEST => "-32600",
        ErrorCode::METHOD_NOT_FOUND => "-32601",
        ErrorCode::INVALID_PARAMS => "-32602",
        ErrorCode::INTERNAL_ERROR => "-32603",
        ErrorCode::RESOURCE_NOT_FOUND => "-32002",
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => "-32022",
        _ => "_OTHER",
    }
}

/// The error type of an answer: its JSON-RPC code, or `tool_error` for a tool's own failure.
fn error_type(result: &Result<ServerResult, ErrorData>) -> Option<&'static str> {
    match result {
        Err(error) => Some(code_label(error.code)),
        Ok(ServerResult::CallToolResult(result)) if result.is_error == Some(true) => {
            Some("tool_error")
        }
        Ok(_) => None,
    }
}

impl<S: Service<RoleServer>> Service<RoleServer> for Traced<S> {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let started = Instant::now();
        let method = crate::metrics::method_label(request.method());
        let version = context.protocol_version();
        let version = version.as_ref().map(|v| v.as_str());
        let revision = crate::metrics::revision_label(version);
        let span = crate::telemetry::pipe_span(
            request.method(),
            target(&request),
            Some(&context.id),
            version,
            Some(&context.meta),
        );
        let result =
            tracing::Instrument::instrument(self.0.handle_request(request, context), span.clone())
                .await;
        let error = error_type(&result);
        if let Some(error) = error {
            crate::telemetry::record_failure(&span, error);
        }
        crate::metrics::operation(method, revision, error, started.elapsed());
        result
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let started = Instant::now();
        let method = notification_method(&notification);
        let label = crate::metrics::method_label(method);
        let version = context
            .peer
            .peer_info()
            .map(|info| info.protocol_version.clone());
        let version = version.as_ref().map(|v| v.as_str());
        let revision = crate::metrics::revision_label(version);
        let span = crate::telemetry::pipe_span(method, None, None, version, Some(&context.meta));
        let result = tracing::Instrument::instrument(
            self.0.handle_notification(notification, context),
            span.clone(),
        )
        .await;
        let error = result.as_ref().err().map(|error| code_label(error.code));
        if let Some(error) = error {
            crate::telemetry::record_failure(&span, error);
        }
        crate::metrics::operation(label, revision, error, started.elapsed());
        result
    }

    fn get_info(&self) -> rmcp::model::ServerInfo {
        self.0.get_info()
    }

    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        self.0.supported_protocol_versions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_types_come_from_a_fixed_list() {
        assert_eq!(code_label(ErrorCode::INVALID_PARAMS), "-32602");
        assert_eq!(code_label(ErrorCode(-1)), "_OTHER");
        let tool_failed = rmcp::model::CallToolResult::error(vec![]);
        assert_eq!(
            error_type(&Ok(ServerResult::CallToolResult(tool_failed))),
            Some("tool_error")
        );
        assert_eq!(error_type(&Ok(ServerResult::empty(()))), None);
    }
}
