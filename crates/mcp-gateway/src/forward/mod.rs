//! How a tool call or a prompt goes upstream, by the revisions on either side. In every case
//! the upstream runs the call once, and the client answers the questions as the upstream asked
//! them:
//!
//! - **a 2025-11-25 client**: the upstream's questions (its requests, or a 2026-07-28 round's
//!   `inputRequests`) are asked of the client at once on its session (`Ctx::ask_now`), and the
//!   answers go back into the running call;
//! - **a 2026-07-28 client, a 2026-07-28 upstream**: one upstream request per round; the
//!   upstream's round goes to the client as it is, its `requestState` sealed inside the layer's
//!   (`Ctx::pass_round`), and the retry sends the answers and that state upstream;
//! - **a 2026-07-28 client, a 2025-11-25 upstream**: the upstream call is held open between the
//!   client's rounds (`hold`), its questions passed on under the gateway's keys.
//!
//! Progress and log messages of the upstream call reach the downstream call in order, ahead of
//! its result.

use std::sync::Arc;

use backchannel_host::{Host, HostError, Started};
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, GetPromptResponse, JsonObject, ResultType};

use crate::hold::{HeldOutcome, Outcome};
use crate::personal::NotSignedIn;
use crate::switchboard::Switchboard;

mod context;
mod held;
mod route;
mod send;

pub(crate) use context::{callers_context, finished, not_passable, task_created};
pub(crate) use held::round_here;
use route::How;
pub(crate) use route::{Caller, Forward, Request, Route};
use send::{relayed, unexpected};

impl Forward<'_> {
    /// The connections this call goes through (the caller's own for a per-person upstream,
    /// who may be asked to sign in first).
    async fn host(&self) -> Result<Arc<Host<Switchboard>>, NotSignedIn> {
        let caller = (self.caller.owner.as_str(), self.caller.declared);
        self.upstreams
            .for_call(&self.ctx, caller, &self.route.connection)
            .await
    }

    /// Forward a tool call with `arguments`.
    pub(crate) async fn tool(self, arguments: Option<JsonObject>) -> ToolAnswer {
        let request = Request::Tool(self.route.tool.clone(), arguments);
        let route = &self.route;
        let host = match self.host().await {
            Ok(host) => host,
            Err(NotSignedIn::Tool(why)) => return Ok(backchannel::error_text(why).into()),
            Err(NotSignedIn::Protocol(error)) => return Err(error),
        };
        match self.upstream(host, request).await? {
            Ok(Outcome::Tool(Started::Task(task))) => Ok(task_created(
                self.upstreams,
                &self.caller,
                route,
                task,
                None,
            )),
            Ok(Outcome::TaskAt(task, instance)) => Ok(task_created(
                self.upstreams,
                &self.caller,
                route,
                task,
                Some(instance),
            )),
            Ok(Outcome::Tool(Started::Done(result))) => finished(route, Ok(result)),
            Ok(other) => finished(route, Err(unexpected(route, &other))),
            Err(error @ (HostError::Unauthorized { .. } | HostError::SignInFailed { .. })) => {
                self.refused_sign_in(error).await
            }
            Err(error) => finished(route, Err(error)),
        }
    }

    /// The upstream refused credentials it took before: a person's own tokens are dropped, so
    /// their next call asks them to sign in again.
    async fn refused_sign_in(&self, error: HostError) -> ToolAnswer {
        let (route, caller) = (&self.route, &self.caller);
        let Some(personal) = self
            .upstreams
            .personal
            .as_ref()
            .filter(|personal| personal.covers(&route.connection))
        else {
            return finished(route, Err(error));
        };
        personal.forget(&caller.owner, &route.connection).await;
        tracing::info!(upstream = %route.connection, %error, "an upstream refused a person's tokens; they are asked again next time");
        Ok(backchannel::error_text(format!(
            "The server {:?} no longer accepts your sign-in, so {:?} was not run. Call again to \
             sign in again.",
            route.connection, route.tool
        ))
        .into())
    }

    /// Get a prompt with `arguments`, its questions relayed as a call's.
    pub(crate) async fn prompt(self, arguments: Option<JsonObject>) -> PromptAnswer {
        let request = Request::Prompt(self.route.tool.clone(), arguments);
        let route = &self.route;
        let host = match self.host().await {
            Ok(host) => host,
            Err(NotSignedIn::Tool(why)) => {
                return Err(ErrorData::invalid_request(why, None));
            }
            Err(NotSignedIn::Protocol(error)) => return Err(error),
        };
        match self.upstream(host, request).await? {
            Ok(Outcome::Prompt(Started::Done(mut result))) => {
                result.result_type = Some(ResultType::COMPLETE);
                Ok(GetPromptResponse::Complete(result))
            }
            Ok(other) => Err(prompt_failed(route, unexpected(route, &other))),
            Err(HostError::Refused { error, .. }) => Err(error),
            Err(error) => Err(prompt_failed(route, error)),
        }
    }

    /// Run `request` upstream for the downstream call of `ctx`, as the revisions on either side
    /// want (see the module's docs). Ends with the layer's `Suspend` when a round goes to a
    /// 2026-07-28 client, and with an error when the client cancelled.
    async fn upstream(
        &self,
        host: Arc<Host<Switchboard>>,
        request: Request,
    ) -> Result<HeldOutcome, ErrorData> {
        let (upstreams, ctx, route, caller) = self.parts();
        let connection = host
            .connection(&route.connection)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        if !ctx.passes_rounds() {
            let how = How::ToTheEnd {
                tasks: caller.declared.tasks,
            };
            return relayed(upstreams, ctx, route, connection, request, how).await;
        }
        if connection.has_sessions() {
            return self.held_round(host.clone(), request).await;
        }
        let how = How::OneRound(ctx.passed_round());
        match relayed(upstreams, ctx, route, connection, request, how).await? {
            Ok(Outcome::Tool(Started::InputRequired {
                input_requests,
                request_state,
            }))
            | Ok(Outcome::Prompt(Started::InputRequired {
                input_requests,
                request_state,
            })) => {
                if let Some(error) = not_passable(route, &caller.declared, &input_requests) {
                    return Ok(Err(error));
                }
                Err(ctx.pass_round(input_requests, request_state).into())
            }
            other => Ok(other),
        }
    }
}

/// What a forwarded tool call answers downstream.
type ToolAnswer = Result<CallToolResponse, ErrorData>;
/// What a forwarded prompt answers downstream.
type PromptAnswer = Result<GetPromptResponse, ErrorData>;

fn prompt_failed(route: &Route, error: HostError) -> ErrorData {
    ErrorData::internal_error(
        format!(
            "the upstream server {:?} could not make the prompt {:?}: {error}",
            route.connection, route.tool
        ),
        None,
    )
}
