//! The rmcp client handler of one connection ([`Routed`]): every question, notification and
//! log message of the server goes to the host's [`HostHandler`], named after the call that
//! caused it where the host can tell.

use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientInfo, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, Implementation, InputRequest,
    JsonObject, ListRootsResult, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, RequestMetaObject, Root, ServerNotification,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};

use backchannel::ListKind;

use crate::config::Declared;
use crate::handler::{HostHandler, LogMessage, SamplingQuestion};
use crate::routes::{Call, CallTag, ProgressSeq, Routes};

/// The refusal of a sampling request that asks what a reply of text cannot honour, naming
/// each thing (never answered as if it had not been asked).
fn not_honoured(question: &SamplingQuestion) -> Option<ErrorData> {
    (!question.not_honoured.is_empty()).then(|| {
        ErrorData::invalid_params(
            format!(
                "this host cannot honour this sampling request: it asks for {}",
                question.not_honoured.join("; ")
            ),
            None,
        )
    })
}

/// `asked`, the handler's answer to a server's request, unless the server withdraws the request
/// first (`notifications/cancelled`, which rmcp turns into the request's cancellation): then
/// the handler's question is dropped (the person is no longer asked) and no answer is sent.
async fn withdrawable<T>(
    context: &RequestContext<RoleClient>,
    asked: impl Future<Output = Result<T, ErrorData>>,
) -> Result<T, ErrorData> {
    tokio::select! {
        answer = asked => answer,
        () = context.ct.cancelled() => Err(ErrorData::internal_error(
            "the server withdrew the request",
            None,
        )),
    }
}

/// The rmcp client handler of one connection: routes everything to the host handler.
pub(crate) struct Routed<H> {
    pub(crate) connection: String,
    pub(crate) client_name: String,
    pub(crate) declared: Declared,
    /// The roots it declares now (the connection changes them: [`crate::Connection::add_root`]).
    pub(crate) roots: Arc<std::sync::RwLock<Vec<Root>>>,
    pub(crate) handler: Arc<H>,
    /// Which call each request, and so each server message, belongs to.
    pub(crate) routes: Arc<Routes>,
}

impl<H: HostHandler> Routed<H> {
    /// The roots declared now.
    pub(crate) fn current_roots(&self) -> Vec<Root> {
        self.roots
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The caller a server's request is for: the call whose HTTP response stream carried it,
    /// else the call its `conversationId` names (a request's progress token), else the one
    /// call in flight, if exactly one is.
    pub(crate) fn caller_of(
        &self,
        extensions: &rmcp::model::Extensions,
        meta: &RequestMetaObject,
    ) -> Option<ProgressToken> {
        self.call_of(extensions, meta)
            .and_then(|call| call.caller.clone())
    }

    /// The call a server's request is for, found as [`Routed::caller_of`] says.
    pub(crate) fn call_of(
        &self,
        extensions: &rmcp::model::Extensions,
        meta: &RequestMetaObject,
    ) -> Option<Arc<Call>> {
        if let Some(rmcp::service::InboundStreamOrigin::OutboundRequest(id)) =
            extensions.get::<rmcp::service::InboundStreamOrigin>()
            && let Some(call) = self.routes.call_of_request(id)
        {
            return Some(call);
        }
        if let Some(value) = meta.get("conversationId").cloned()
            && let Ok(token) = serde_json::from_value::<ProgressToken>(value)
            && let Some(call) = self.routes.tagged_token(&token)
        {
            return Some(call);
        }
        let active = self.routes.active.lock().unwrap_or_else(|e| e.into_inner());
        match active.as_slice() {
            [only] => Some(only.clone()),
            _ => None,
        }
    }

    /// A question names its request by the request's progress token (as `conversationId`);
    /// give the handler the caller's token instead of rmcp's.
    pub(crate) fn caller_meta(
        &self,
        mut meta: RequestMetaObject,
        caller: Option<&ProgressToken>,
    ) -> RequestMetaObject {
        if meta.contains_key("conversationId")
            && let Some(caller) = caller
        {
            meta.insert(
                "conversationId".into(),
                serde_json::to_value(caller).unwrap_or_default(),
            );
        }
        meta
    }

    /// A notification read off a direct round's response (see `direct`): it is `call`'s,
    /// and is handed on as one the transport brought would be.
    pub(crate) fn notified_directly(&self, notification: ServerNotification, call: &Call) {
        match notification {
            ServerNotification::ProgressNotification(progress) => {
                call.deliver_progress(progress.params, |progress| {
                    self.handler.on_progress(&self.connection, progress);
                });
            }
            ServerNotification::LoggingMessageNotification(log) => {
                self.deliver_log(log.params, call.caller.clone());
            }
            ServerNotification::CustomNotification(custom) => self.custom_notification(&custom),
            other => {
                tracing::debug!(connection = %self.connection, ?other, "a notification on a round's response was not handed on")
            }
        }
    }

    /// Hand a server's log message to the handler, as `caller`'s when a call is known.
    fn deliver_log(&self, params: LoggingMessageNotificationParam, caller: Option<ProgressToken>) {
        self.handler.on_log(
            &self.connection,
            LogMessage {
                level: params.level.into(),
                logger: params.logger,
                data: params.data,
                caller,
            },
        );
    }

    /// Answer one question of an `input_required` round of `call`.
    pub(crate) async fn answer(&self, request: InputRequest, call: &Call) -> serde_json::Value {
        let caller = call.caller.clone();
        // The person's and the model's time is not the server's: the call's clock stops.
        let _answering = call.answering();
        let value = match request {
            InputRequest::Elicitation(request) => {
                let meta =
                    self.caller_meta(request.params_meta().unwrap_or_default(), caller.as_ref());
                serde_json::to_value(
                    self.handler
                        .elicit(&self.connection, request.params, meta, caller)
                        .await,
                )
            }
            InputRequest::CreateMessage(request) => {
                let question = SamplingQuestion::from(&request.params);
                let answered = match not_honoured(&question) {
                    Some(refusal) => Err(refusal),
                    None => {
                        self.handler
                            .sample(&self.connection, question, caller)
                            .await
                    }
                };
                match answered {
                    Ok(answer) => serde_json::to_value(CreateMessageResult::from(answer)),
                    Err(error) => Ok(serde_json::json!({
                        "error": {"code": error.code.0, "message": error.message}
                    })),
                }
            }
            InputRequest::ListRoots(_) => match self
                .handler
                .list_roots(&self.connection, self.current_roots(), caller)
                .await
                .inspect(|_| self.routes.roots_listed.send_modify(|n| *n += 1))
            {
                Ok(roots) => serde_json::to_value(ListRootsResult::new(roots)),
                Err(error) => Ok(serde_json::json!({
                    "error": {"code": error.code.0, "message": error.message}
                })),
            },
            other => Ok(
                serde_json::json!({"error": {"code": -32601, "message": format!("unsupported input request {other:?}")}}),
            ),
        };
        value.unwrap_or(serde_json::Value::Null)
    }
}

pub(crate) trait ParamsMeta {
    fn params_meta(&self) -> Option<RequestMetaObject>;
}

impl ParamsMeta for rmcp::model::ElicitRequest {
    /// A request's `_meta` as rmcp parsed it: in the request's extensions, or (when built in
    /// process) in the params.
    fn params_meta(&self) -> Option<RequestMetaObject> {
        use rmcp::model::GetExtensions;
        if let Some(parsed) = self.extensions().get::<RequestMetaObject>()
            && !parsed.is_empty()
        {
            return Some(parsed.clone());
        }
        match &self.params {
            ElicitRequestParams::FormElicitationParams { meta, .. }
            | ElicitRequestParams::UrlElicitationParams { meta, .. } => meta.clone(),
            _ => None,
        }
    }
}

impl<H: HostHandler> ClientHandler for Routed<H> {
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        if self.declared.elicitation || self.declared.url_elicitation {
            let mut elicitation = ElicitationCapability::default();
            if self.declared.elicitation {
                elicitation = elicitation.with_form(Default::default());
            }
            if self.declared.url_elicitation {
                elicitation = elicitation.with_url(Default::default());
            }
            caps.elicitation = Some(elicitation);
        }
        if self.declared.sampling {
            caps.sampling = Some(Default::default());
        }
        if self.declared.roots {
            // The host tells the server when they change (`notifications/roots/list_changed`).
            let mut roots = rmcp::model::RootsCapabilities::default();
            roots.list_changed = Some(true);
            caps.roots = Some(roots);
        }
        if self.declared.tasks {
            caps.extensions = Some(
                [(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    JsonObject::new(),
                )]
                .into_iter()
                .collect(),
            );
        }
        ClientInfo::new(
            caps,
            Implementation::new(
                format!("{} - {}", self.client_name, self.connection),
                env!("CARGO_PKG_VERSION"),
            ),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let url = matches!(request, ElicitRequestParams::UrlElicitationParams { .. });
        if (url && !self.declared.url_elicitation) || (!url && !self.declared.elicitation) {
            return Err(ErrorData::invalid_request(
                if url {
                    "this connection does not ask URL questions"
                } else {
                    "this connection does not elicit"
                },
                None,
            ));
        }
        // rmcp hands a 2025 request's `_meta` over in the context.
        let meta = match &request {
            ElicitRequestParams::FormElicitationParams {
                meta: Some(meta), ..
            }
            | ElicitRequestParams::UrlElicitationParams {
                meta: Some(meta), ..
            } => meta.clone(),
            _ => context.meta.clone(),
        };
        let call = self.call_of(&context.extensions, &meta);
        // The person's time is not the server's: its request's clock stops meanwhile.
        let _answering = call.as_ref().and_then(|call| call.answering());
        let caller = call.and_then(|call| call.caller.clone());
        let meta = self.caller_meta(meta, caller.as_ref());
        let asked = self.handler.elicit(&self.connection, request, meta, caller);
        withdrawable(&context, async { Ok(asked.await) }).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        if !self.declared.sampling {
            return Err(ErrorData::invalid_request(
                "this connection does not sample",
                None,
            ));
        }
        let call = self.call_of(&context.extensions, &context.meta);
        // The person's and the model's time is not the server's.
        let _answering = call.as_ref().and_then(|call| call.answering());
        let caller = call.and_then(|call| call.caller.clone());
        let question = SamplingQuestion::from(&params);
        if let Some(refusal) = not_honoured(&question) {
            return Err(refusal);
        }
        let asked = self.handler.sample(&self.connection, question, caller);
        withdrawable(&context, async {
            asked.await.map(CreateMessageResult::from)
        })
        .await
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let caller = self.caller_of(&context.extensions, &context.meta);
        let listed = self
            .handler
            .list_roots(&self.connection, self.current_roots(), caller)
            .await;
        if listed.is_ok() {
            self.routes.roots_listed.send_modify(|n| *n += 1);
        }
        listed.map(ListRootsResult::new)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let call = self.routes.call_of_token(&params.progress_token);
        let deliver = |progress| self.handler.on_progress(&self.connection, progress);
        match context.extensions.get::<ProgressSeq>() {
            Some(ProgressSeq(seq)) => call.deliver_in_order(*seq, params, deliver),
            None => call.deliver_progress(params, deliver),
        }
        call.handled();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        // rmcp tells no notification's stream: the transport named the call when it was the
        // only one in flight as the message came off the wire.
        let call = context
            .extensions
            .get::<CallTag>()
            .map(|CallTag(call)| call.clone());
        self.deliver_log(params, call.as_ref().and_then(|call| call.caller.clone()));
        if let Some(call) = call {
            call.handled();
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.handler
            .on_list_changed(&self.connection, ListKind::Tools);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.handler
            .on_list_changed(&self.connection, ListKind::Prompts);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.handler
            .on_list_changed(&self.connection, ListKind::Resources);
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.handler
            .on_resource_updated(&self.connection, &params.uri);
    }

    /// rmcp 3.11 has no type for `notifications/elicitation/complete`: it comes as a custom
    /// notification, and is handed on when its id is a string (as the specification has it).
    async fn on_custom_notification(
        &self,
        notification: rmcp::model::CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        self.custom_notification(&notification);
    }
}

impl<H: HostHandler> Routed<H> {
    /// A notification rmcp has no type for: `notifications/elicitation/complete` is handed on.
    fn custom_notification(&self, notification: &rmcp::model::CustomNotification) {
        if notification.method != ELICITATION_COMPLETE {
            return;
        }
        match notification
            .params
            .as_ref()
            .and_then(|params| params.get("elicitationId"))
            .and_then(serde_json::Value::as_str)
        {
            Some(id) => self.handler.on_elicitation_complete(&self.connection, id),
            None => tracing::debug!(
                connection = %self.connection,
                "an elicitation/complete without a string elicitationId was ignored"
            ),
        }
    }
}

/// The notification that says a URL question's work is done (2025-11-25).
const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

#[cfg(test)]
mod tests {
    use super::*;

    struct Quiet;
    impl HostHandler for Quiet {}

    #[test]
    fn roots_are_declared_with_list_changed_the_host_tells_when_they_change() {
        let routed = Routed {
            connection: "notes".into(),
            client_name: "test".into(),
            declared: Declared {
                roots: true,
                ..Declared::default()
            },
            roots: Arc::default(),
            handler: Arc::new(Quiet),
            routes: Arc::default(),
        };
        let roots = routed
            .get_info()
            .capabilities
            .roots
            .expect("roots declared");
        assert_eq!(roots.list_changed, Some(true));
    }
}
