//! What the caller is told of an upstream's task, and what of the caller goes upstream: the
//! call context (the `_meta` the configuration allows) and only the questions the client
//! declared.

use backchannel::Ctx;
use backchannel_host::{CallContext, Declared, HostError};
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, CreateTaskResult, ResultType};

use super::route::{Caller, Route};
use crate::config::{LOG_LEVEL_META_KEY, forwarded_meta};
use crate::tasks;
use crate::upstream::Upstreams;

/// The upstream made the call `task`: the client gets it under the gateway's id for its owner.
pub(crate) fn task_created(
    upstreams: &Upstreams,
    caller: &Caller,
    route: &Route,
    task: rmcp::model::Task,
    made_at: Option<String>,
) -> CallToolResponse {
    // A task a 2025-11-25 upstream made lives in the session that made it: this instance's,
    // unless the call ran on another (`made_at`).
    let instance = made_at.or_else(|| {
        let in_session = upstreams
            .host
            .connection(&route.connection)
            .is_ok_and(|connection| connection.has_sessions());
        upstreams
            .hop
            .here()
            .filter(|_| in_session)
            .map(str::to_owned)
    });
    let route = tasks::TaskRoute {
        connection: route.connection.clone(),
        declared: caller.declared,
        upstream: task.task_id.clone(),
        instance,
    };
    tracing::debug!(upstream = %route.connection, task = %route.upstream, "the upstream made the call a task");
    CallToolResponse::Task(CreateTaskResult::new(upstreams.task_ids.shown(
        &caller.owner,
        &route,
        task,
    )))
}

/// An upstream call's end as the downstream client gets it: its result; its protocol error as
/// the client's (the tool never ran); a failure to reach it as a tool error the model reads.
pub(crate) fn finished(
    route: &Route,
    outcome: Result<CallToolResult, HostError>,
) -> Result<CallToolResponse, ErrorData> {
    match outcome {
        Ok(mut result) => {
            // A 2025-11-25 upstream's result has no `resultType`; rmcp drops it again for a
            // 2025-11-25 downstream.
            result.result_type = Some(ResultType::COMPLETE);
            Ok(result.into())
        }
        Err(HostError::Refused { error, .. }) => Err(error),
        Err(error) => {
            tracing::warn!(upstream = %route.connection, tool = %route.tool, %error, "upstream call failed");
            Ok(backchannel::error_text(format!(
                "the upstream server {:?} could not run {:?}: {error}",
                route.connection, route.tool
            ))
            .into())
        }
    }
}

/// The call context of an upstream call made for `ctx`, naming it by `token`: the caller's
/// `_meta` the configuration allows, and every log message asked for (the gateway passes on
/// those the downstream client asked for: its session's level, or its request's).
pub(super) fn upstream_context(upstreams: &Upstreams, ctx: &Ctx, token: String) -> CallContext {
    callers_context(upstreams, ctx.meta())
        .with("progressToken", token)
        .with(LOG_LEVEL_META_KEY, "debug")
}

/// The caller's `_meta` (`meta`) the configuration lets go upstream, as a call context.
pub(crate) fn callers_context(
    upstreams: &Upstreams,
    meta: &rmcp::model::RequestMetaObject,
) -> CallContext {
    forwarded_meta(meta, &upstreams.config.meta_allow)
        .into_iter()
        .fold(CallContext::new(), |context, (key, value)| {
            context.with(key, value)
        })
}

/// Only questions the client declared it can answer go to it: the error a round with another
/// kind ends its call with (logged), if it has one.
pub(crate) fn not_passable(
    route: &Route,
    declared: &Declared,
    questions: &rmcp::model::InputRequests,
) -> Option<HostError> {
    let why = questions
        .values()
        .find_map(|question| crate::switchboard::passable(declared, question).err())?;
    tracing::info!(upstream = %route.connection, %why, "an upstream's round was not passed on");
    Some(HostError::Call {
        connection: route.connection.clone(),
        message: format!("it asked a question that was not passed on ({why})"),
    })
}
