//! The pass-through: a 2026-07-28 client's first round of a tool call to a shared 2026-07-28
//! upstream, relayed as soon as the endpoint has checked it (backchannel's `PassThrough`),
//! without rmcp's dispatch, the layer, `Ctx` and the switchboard, when nothing of the call
//! needs them: its client asked for neither progress nor log messages, so nothing of the
//! upstream call is passed on before its end. The upstream's result, or its failure, is the
//! answer, as `Forward::tool` makes it. When the upstream answers with a round of questions or
//! a task, that answer is handed to the handler with the request (`Prefetched`), and the call
//! goes on exactly as if the handler had made the upstream request itself: the round sealed
//! and bound to its caller by the layer, the task named by the gateway. The upstream is asked
//! once either way.

use std::sync::{Arc, Mutex};

use backchannel::serve::{PassThrough, Passed, PlainToolCall};
use backchannel_host::{CallContext, HostError, Started};
use futures::future::BoxFuture;

use crate::config::{LOG_LEVEL_META_KEY, answerable, forwarded_meta};
use crate::forward::{Prefetched, Route, finished};
use crate::hold::{HeldOutcome, Outcome};
use crate::upstream::Upstreams;

/// Where the calls of a tool offered now go, by its name.
pub(crate) type Routes = Box<dyn Fn(&str) -> Option<Route> + Send + Sync>;

/// The gateway's pass-through (see the module's docs).
pub(crate) struct Pass {
    /// Where the calls of a tool offered now go.
    pub(crate) route: Routes,
    pub(crate) upstreams: Arc<Upstreams>,
}

impl Pass {
    /// Where `call` goes, when the pass-through takes it.
    fn route_of(&self, call: &PlainToolCall) -> Option<Route> {
        let params = &call.params;
        // A later round carries the gateway's sealed state: the layer opens it.
        if params.request_state.is_some() || params.input_responses.is_some() {
            return None;
        }
        // Progress and log messages of the upstream call would be passed on through `Ctx`.
        if call.meta.contains_key("progressToken") || call.meta.contains_key(LOG_LEVEL_META_KEY) {
            return None;
        }
        let route = (self.route)(params.name.as_ref())?;
        // A per-person upstream is reached through the caller's own connection, which may
        // first ask them to sign in; a 2025-11-25 upstream's call is held between rounds.
        let personal = self
            .upstreams
            .personal
            .as_ref()
            .is_some_and(|personal| personal.covers(&route.connection));
        let one_request = self
            .upstreams
            .host
            .connection(&route.connection)
            .is_ok_and(|connection| !connection.has_sessions());
        (!personal && one_request).then_some(route)
    }
}

impl PassThrough for Pass {
    fn pass(&self, call: PlainToolCall) -> Result<BoxFuture<'static, Passed>, Box<PlainToolCall>> {
        let Some(route) = self.route_of(&call) else {
            return Err(Box::new(call));
        };
        let Some(capabilities) = call.meta.client_capabilities() else {
            return Err(Box::new(call));
        };
        let upstreams = self.upstreams.clone();
        Ok(Box::pin(async move {
            // What the handler would declare upstream for this caller, and the `_meta` it
            // would send, without the progress token and log level it adds for `Ctx`.
            let host = match upstreams.declaring(answerable(&capabilities)).await {
                Ok(host) => host,
                Err(error) => return Passed::Refused(error),
            };
            let context = forwarded_meta(&call.meta, &upstreams.config.meta_allow)
                .into_iter()
                .fold(CallContext::new(), |context, (key, value)| {
                    context.with(key, value)
                });
            let outcome = match host.connection(&route.connection) {
                Ok(connection) => {
                    let arguments = call.params.arguments.clone();
                    connection
                        .call_round(&route.tool, arguments, &context, None, None)
                        .await
                }
                Err(error) => Err(error),
            };
            match outcome {
                Ok(Started::Done(result)) => answered(&route, Ok(result)),
                Ok(started @ (Started::InputRequired { .. } | Started::Task(_))) => {
                    handed_on(call, Ok(Outcome::Tool(started)))
                }
                Err(error) => answered(&route, Err(error)),
            }
        }))
    }
}

/// The answer `Forward::tool` gives for this end of a shared upstream's call.
fn answered(route: &Route, outcome: Result<rmcp::model::CallToolResult, HostError>) -> Passed {
    match finished(route, outcome) {
        Ok(rmcp::model::CallToolResponse::Complete(result)) => Passed::Answered(result),
        Ok(other) => {
            tracing::error!(?other, "a finished call made something other than a result");
            Passed::Refused(rmcp::ErrorData::internal_error(
                "the gateway could not answer this call",
                None,
            ))
        }
        Err(error) => Passed::Refused(error),
    }
}

/// The call goes to the handler, which goes on from `outcome` instead of asking upstream.
fn handed_on(mut call: PlainToolCall, outcome: HeldOutcome) -> Passed {
    call.parts
        .extensions
        .insert(Prefetched(Arc::new(Mutex::new(Some(outcome)))));
    Passed::Handler(Box::new(call))
}
