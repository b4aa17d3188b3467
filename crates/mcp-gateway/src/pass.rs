//! The pass-through: a 2026-07-28 client's rounds of a tool call to a shared 2026-07-28
//! upstream, relayed as soon as the endpoint has checked them (backchannel's `PassThrough`),
//! without rmcp's dispatch, the layer's driving, `Ctx` and the switchboard, when nothing of
//! the call needs them: its client asked for neither progress nor log messages, so nothing of
//! the upstream call is passed on before its end. One upstream request per round, as
//! `Forward` makes it: the upstream's round goes to the client with its state sealed by the
//! layer (`Backchannel::seal_passed_round`, as `Ctx::pass_round` seals it), a retry's state is
//! opened and spent the same way, so a round either path sealed is opened by the other. The
//! answers are `Forward::tool`'s; a plain complete result goes to the client as the text the
//! upstream wrote (`Connection::relay_round`, `Passed::Relayed`), not read and written again.

use std::sync::Arc;

use backchannel::Backchannel;
use backchannel::serve::{PassThrough, Passed, PlainToolCall};
use backchannel_host::{HostError, Relayed, Started};
use futures::future::BoxFuture;
use rmcp::model::{CallToolResponse, ClientCapabilities};

use crate::config::{LOG_LEVEL_META_KEY, answerable};
use crate::forward::{Caller, Route, callers_context, finished, not_passable, task_created};
use crate::upstream::Upstreams;

/// Where the calls of a tool offered now go, by its name.
pub(crate) type Routes = Box<dyn Fn(&str) -> Option<Route> + Send + Sync>;

/// The gateway's pass-through (see the module's docs).
pub(crate) struct Pass {
    /// Where the calls of a tool offered now go.
    pub(crate) route: Routes,
    pub(crate) upstreams: Arc<Upstreams>,
    pub(crate) layer: Backchannel,
}

impl Pass {
    /// Where `call` goes, when the pass-through takes it.
    fn route_of(&self, call: &PlainToolCall) -> Option<Route> {
        // Progress and log messages of the upstream call would be passed on through `Ctx`.
        if call.meta.contains_key("progressToken") || call.meta.contains_key(LOG_LEVEL_META_KEY) {
            return None;
        }
        let route = (self.route)(call.params.name.as_ref())?;
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
        // Answers without a state are the handler's to refuse.
        if call.params.input_responses.is_some() && call.params.request_state.is_none() {
            return Err(Box::new(call));
        }
        let (upstreams, layer) = (self.upstreams.clone(), self.layer.clone());
        Ok(Box::pin(async move {
            match relay(&upstreams, &layer, &route, &call, &capabilities).await {
                Some(passed) => passed,
                None => Passed::Handler(Box::new(call)),
            }
        }))
    }
}

/// One round of `call` upstream, answered as `Forward::tool` answers it; `None` when the
/// handler is to serve it (nothing done upstream, nothing spent).
async fn relay(
    upstreams: &Upstreams,
    layer: &Backchannel,
    route: &Route,
    call: &PlainToolCall,
    capabilities: &ClientCapabilities,
) -> Option<Passed> {
    let params = &call.params;
    let passed = layer.passed_call(&call.parts, &params.name, params.arguments.as_ref())?;
    let opened = match &params.request_state {
        Some(state) => {
            let responses = params.input_responses.clone().unwrap_or_default();
            match layer.open_passed_round(&passed, state, &responses).await {
                Ok(Some(opened)) => Some(opened),
                // A round of the gateway's own: the handler opens it.
                Ok(None) => return None,
                Err(error) => return Some(Passed::Refused(error)),
            }
        }
        None => None,
    };
    // What the handler would declare upstream for this caller, and the `_meta` it would send,
    // without the progress token and log level it adds for `Ctx`.
    let declared = answerable(capabilities);
    let host = match upstreams.declaring(declared).await {
        Ok(host) => host,
        Err(error) => return Some(Passed::Refused(error)),
    };
    let context = callers_context(upstreams, &call.meta);
    let (responses, state) = match &opened {
        Some(opened) => {
            let passed = opened.passed();
            (Some(passed.responses.clone()), passed.state.clone())
        }
        None => (None, None),
    };
    let outcome = match host.connection(&route.connection) {
        Ok(connection) => {
            let arguments = params.arguments.clone();
            // Awaited where it is made: a future kept in a local first is held twice.
            connection
                .relay_round(&route.tool, arguments, &context, responses, state)
                .await
        }
        Err(error) => Err(error),
    };
    Some(match outcome {
        Ok(Started::Done(Relayed::Text(text))) => Passed::Relayed(text),
        Ok(Started::Done(result)) => match result.into_read() {
            Ok(result) => answered(route, Ok(result)),
            Err(error) => answered(
                route,
                Err(HostError::Call {
                    connection: route.connection.clone(),
                    message: format!("an unreadable result: {error}"),
                }),
            ),
        },
        Ok(Started::InputRequired {
            input_requests,
            request_state,
        }) => {
            if let Some(error) = not_passable(route, &declared, &input_requests) {
                return Some(answered(route, Err(error)));
            }
            match layer.seal_passed_round(&passed, opened, input_requests, request_state) {
                Ok(round) => Passed::Answered(CallToolResponse::InputRequired(round)),
                Err(error) => Passed::Refused(error),
            }
        }
        Ok(Started::Task(task)) => {
            let caller = Caller {
                owner: passed.owner_key(),
                declared,
            };
            Passed::Answered(task_created(upstreams, &caller, route, task, None))
        }
        Err(error) => answered(route, Err(error)),
    })
}

/// The answer `Forward::tool` gives for this end of a shared upstream's call.
fn answered(route: &Route, outcome: Result<rmcp::model::CallToolResult, HostError>) -> Passed {
    match finished(route, outcome) {
        Ok(response) => Passed::Answered(response),
        Err(error) => Passed::Refused(error),
    }
}
