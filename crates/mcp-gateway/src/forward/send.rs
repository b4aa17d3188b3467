//! One request upstream: made on a connection ([`send`]), or made while the downstream call
//! waits, its questions, progress and log messages relayed ([`relayed`]).

use backchannel::{Ctx, PassedRound};
use backchannel_host::{CallContext, Connection, HostError, Started};
use rmcp::ErrorData;

use super::context::upstream_context;
use super::route::{How, Request, Route};
use crate::hold::{HeldOutcome, Outcome};
use crate::switchboard::{Switchboard, Update};
use crate::upstream::Upstreams;

pub(super) fn unexpected(route: &Route, outcome: &Outcome) -> HostError {
    HostError::Call {
        connection: route.connection.clone(),
        message: format!("unexpected answer: {outcome:?}"),
    }
}

/// Make `request` on `connection`, naming the downstream call by `call`.
pub(super) async fn send(
    connection: &Connection<Switchboard>,
    request: Request,
    call: &CallContext,
    how: How,
) -> HeldOutcome {
    match how {
        How::OneRound(passed) => {
            let (responses, state) = answers(passed);
            match request {
                Request::Tool(name, arguments) => {
                    let round = connection.call_round(&name, arguments, call, responses, state);
                    round.await.map(Outcome::Tool)
                }
                Request::Prompt(name, arguments) => {
                    let round = connection.prompt_round(&name, arguments, call, responses, state);
                    round.await.map(Outcome::Prompt)
                }
            }
        }
        How::ToTheEnd { tasks } => match request {
            Request::Tool(name, arguments) if tasks => connection
                .start_tool(&name, arguments, call)
                .await
                .map(Outcome::Tool),
            Request::Tool(name, arguments) => {
                let result = connection.call_tool(&name, arguments, call).await;
                result.map(|result| Outcome::Tool(Started::Done(result)))
            }
            Request::Prompt(name, arguments) => {
                let result = connection.get_prompt(&name, arguments, call).await;
                result.map(|result| Outcome::Prompt(Started::Done(result)))
            }
        },
    }
}

/// The answers and the upstream's state of the round passed on before.
pub(super) fn answers(
    passed: Option<PassedRound>,
) -> (Option<rmcp::model::InputResponses>, Option<String>) {
    match passed {
        Some(passed) => (Some(passed.responses), passed.state),
        None => (None, None),
    }
}

/// Make `request` upstream while this downstream call waits, its questions asked of the
/// client through `ctx` and its progress and log messages passed on. Ends with an error when
/// the client cancelled (dropping the upstream request cancels it there).
pub(super) async fn relayed(
    upstreams: &Upstreams,
    ctx: &Ctx,
    route: &Route,
    connection: &Connection<Switchboard>,
    request: Request,
    how: How,
) -> Result<HeldOutcome, ErrorData> {
    let (token, mut updates, _registered) = upstreams.switchboard.open(ctx.clone());
    let call_context = upstream_context(upstreams, ctx, token);
    let call = send(connection, request, &call_context, how);
    tokio::pin!(call);
    let cancelled = ctx.cancellation().clone();
    let outcome = loop {
        tokio::select! {
            biased;
            () = cancelled.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
            Some(update) = updates.recv() => pass_on(ctx, route, update).await,
            outcome = &mut call => break outcome,
        }
    };
    // The host hands over a result only after the progress ahead of it; pass that on first.
    while let Ok(update) = updates.try_recv() {
        pass_on(ctx, route, update).await;
    }
    Ok(outcome)
}

/// Pass an upstream's progress or log message on to the downstream call.
pub(super) async fn pass_on(ctx: &Ctx, route: &Route, update: Update) {
    match update {
        Update::Progress(update) => {
            ctx.progress(update.progress, update.total, update.message.as_deref())
                .await;
        }
        Update::Log(message) => {
            let logger = message.logger.as_deref().unwrap_or(&route.connection);
            ctx.log(message.level, logger, message.data).await;
        }
    }
}
