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
use std::time::Duration;

use backchannel::{Ctx, PassedRound};
use backchannel_host::{CallContext, Connection, Declared, Host, HostError, Started};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, CreateTaskResult, GetPromptResponse, JsonObject, ResultType,
};

use crate::config::{LOG_LEVEL_META_KEY, forwarded_meta};
use crate::hold::{self, HeldOutcome, Outcome};
use crate::hop;
use crate::personal::NotSignedIn;
use crate::switchboard::{Switchboard, Update};
use crate::tasks;
use crate::upstream::Upstreams;

/// How long a held call's round waits, after a question, for the upstream's other questions
/// of the same round, so they go to the client together (a 2025-11-25 server sends each as a
/// request of its own, back to back).
const QUESTION_GATHER_QUIET: Duration = Duration::from_millis(50);
/// The longest a round is gathered.
const QUESTION_GATHER_MAX: Duration = Duration::from_millis(250);

/// What goes upstream: a tool call or a prompt, by its upstream name.
#[derive(Debug, Clone)]
pub(crate) enum Request {
    Tool(String, Option<JsonObject>),
    Prompt(String, Option<JsonObject>),
}

/// How far one upstream request goes.
enum How {
    /// Its questions answered through the relay; a task handed back when the caller takes
    /// tasks, else followed to its end.
    ToTheEnd { tasks: bool },
    /// One 2026-07-28 round, continuing the one passed on before, if any.
    OneRound(Option<PassedRound>),
}

/// Where a tool's (or a prompt's) calls go: the upstream connection and the name there.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub(crate) connection: String,
    pub(crate) tool: String,
}

/// Who a forwarded call is for: its owner (`Backchannel::owner_key`), and what its client can
/// answer (as the gateway declares it upstream).
#[derive(Debug)]
pub(crate) struct Caller {
    pub(crate) owner: String,
    pub(crate) declared: Declared,
}

/// One downstream request of `caller` to pass to `route` (its upstream name), made by the
/// gateway for the call of `ctx`.
pub(crate) struct Forward<'a> {
    pub(crate) upstreams: &'a Upstreams,
    pub(crate) ctx: Ctx,
    pub(crate) caller: Caller,
    pub(crate) route: Route,
}

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
        let (upstreams, ctx, route, caller) =
            (self.upstreams, &self.ctx, &self.route, &self.caller);
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

    /// One round of a 2026-07-28 client's call to a 2025-11-25 upstream, whose call is held
    /// between the rounds (see `hold`): the first round starts the upstream call, a later one
    /// takes it by the id its sealed state names and hands it the client's answers; then the round
    /// waits for the call's end, or for the upstream's next questions, which it passes on with the
    /// hold's id as its state.
    async fn held_round(
        &self,
        host: Arc<Host<Switchboard>>,
        request: Request,
    ) -> Result<HeldOutcome, ErrorData> {
        let (upstreams, ctx, route, caller) =
            (self.upstreams, &self.ctx, &self.route, &self.caller);
        let holds = &upstreams.holds;
        let (id, held, asked) = match ctx.passed_round() {
            Some(passed) => {
                let id = passed.state.unwrap_or_default();
                let Ok(held) = holds.take(&id, &caller.owner) else {
                    if let Some(owner) = upstreams.hop.elsewhere(&id) {
                        return self
                            .round_elsewhere(&host, owner, &id, passed.responses)
                            .await;
                    }
                    if let Some(session) = upstreams.hop.left_over(&id) {
                        end_left_over(&host, &route.connection, session).await;
                    }
                    return Ok(Err(no_longer_held(route)));
                };
                // Counted from before the answers go, so a question they lead to is seen.
                let asked = held.inbox.asked();
                held.inbox.answer(passed.responses);
                (id, held, asked)
            }
            None => {
                let session = host
                    .connection(&route.connection)
                    .ok()
                    .and_then(Connection::session_id);
                let held = self.start_held(host, request);
                let asked = held.inbox.asked();
                let id = upstreams.hop.name(hold::fresh_id()?, session.as_deref());
                (id, held, asked)
            }
        };
        let sink = Sink::Pass(ctx, route);
        let named = (id.as_str(), route.connection.as_str());
        match drive(holds, named, held, asked, ctx.cancellation(), sink).await? {
            Driven::Round(open) => Err(ctx.pass_round(open, Some(id)).into()),
            Driven::Ended(outcome) => Ok(outcome),
            Driven::NotHeld(why) => Ok(Err(not_held(route, why))),
        }
    }

    /// A round whose call another instance holds (`owner`, as the call's id names it): passed
    /// to that instance, and its answer given to the client as this instance's own.
    async fn round_elsewhere(
        &self,
        host: &Host<Switchboard>,
        owner: &str,
        id: &str,
        responses: std::collections::BTreeMap<String, serde_json::Value>,
    ) -> Result<HeldOutcome, ErrorData> {
        let (ctx, route) = (&self.ctx, &self.route);
        let ask = hop::HopAsk::Round {
            id: id.to_owned(),
            connection: route.connection.clone(),
            responses,
        };
        let round = hop::HopRound::new(self.caller.owner.clone(), ask)?;
        let reply: hop::HopReply = match self.upstreams.hop.relay(owner, &round).await {
            Ok(reply) => reply,
            Err(error) => {
                tracing::warn!(upstream = %route.connection, owner, %error, "a held call's instance could not be reached");
                // Nothing listens there: the instance stopped, and its upstream session (with
                // the call's question, waiting) is left over. A stopping process may take the
                // connection and reset it before its port closes, so a broken hop asks again.
                let gone = match &error {
                    hop::HopError::Gone(_) => true,
                    _ => self.upstreams.hop.gone(owner).await,
                };
                if let (true, Some(session)) = (gone, hop::session_of(id)) {
                    end_left_over(host, &route.connection, session).await;
                }
                if !error.not_sent() {
                    self.upstreams.hop.settled(&round).await;
                }
                let message = if error.not_sent() {
                    format!(
                        "the question expired with the gateway instance that asked it ({error}); \
                         these answers cannot reach the upstream call it held, so nothing was \
                         done with them: call again"
                    )
                } else {
                    format!(
                        "the gateway instance that holds this call gave no answer that could be \
                         verified ({error}); whether it passed these answers on is not known, \
                         and nothing more will come of them: check before you call again"
                    )
                };
                return Ok(Err(HostError::Call {
                    connection: route.connection.clone(),
                    message,
                }));
            }
        };
        if let hop::HopEnd::Round(open) = &reply.end
            && let Some(error) = not_passable(route, &self.caller.declared, open)
        {
            return Ok(Err(error));
        }
        for update in reply.updates {
            pass_on(ctx, route, update.into()).await;
        }
        let failed = |message| HostError::Call {
            connection: route.connection.clone(),
            message,
        };
        Ok(match reply.end {
            hop::HopEnd::Round(open) => {
                return Err(ctx.pass_round(open, Some(id.to_owned())).into());
            }
            hop::HopEnd::Tool(result) => Ok(Outcome::Tool(Started::Done(result))),
            hop::HopEnd::Task(task) => Ok(Outcome::TaskAt(task, owner.to_owned())),
            hop::HopEnd::Prompt(result) => Ok(Outcome::Prompt(Started::Done(result))),
            hop::HopEnd::Failed(message) | hop::HopEnd::NotHeld(message) => Err(failed(message)),
            hop::HopEnd::Refused(error) => Err(HostError::Refused {
                connection: route.connection.clone(),
                error,
            }),
            hop::HopEnd::NoLongerHeld => Err(no_longer_held(route)),
        })
    }

    /// Start `request` upstream for `caller`, running on its own so it can be held between the
    /// client's rounds; its questions go to the held call's inbox.
    fn start_held(
        &self,
        host: Arc<Host<Switchboard>>,
        request: Request,
    ) -> hold::Held<HeldOutcome> {
        let (upstreams, ctx, route, caller) =
            (self.upstreams, &self.ctx, &self.route, &self.caller);
        let (token, inbox, updates, registered) = upstreams.switchboard.open_held(caller.declared);
        let call_context = upstream_context(upstreams, ctx, token);
        let (sent, outcome) = tokio::sync::oneshot::channel();
        let connection = route.connection.clone();
        let how = How::ToTheEnd {
            tasks: caller.declared.tasks,
        };
        let task = tokio::spawn(async move {
            let result = match host.connection(&connection) {
                Ok(connection) => send(connection, request, &call_context, how).await,
                Err(error) => Err(error),
            };
            let _ = sent.send(result);
        });
        hold::Held::new(
            caller.owner.clone(),
            share_of(caller, ctx),
            inbox,
            outcome,
            updates,
            task,
            registered,
        )
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

fn unexpected(route: &Route, outcome: &Outcome) -> HostError {
    HostError::Call {
        connection: route.connection.clone(),
        message: format!("unexpected answer: {outcome:?}"),
    }
}

/// Make `request` on `connection`, naming the downstream call by `call`.
async fn send(
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
fn answers(passed: Option<PassedRound>) -> (Option<rmcp::model::InputResponses>, Option<String>) {
    match passed {
        Some(passed) => (Some(passed.responses), passed.state),
        None => (None, None),
    }
}

/// Make `request` upstream while this downstream call waits, its questions asked of the
/// client through `ctx` and its progress and log messages passed on. Ends with an error when
/// the client cancelled (dropping the upstream request cancels it there).
async fn relayed(
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

/// Where a held call's messages go while a round waits on it.
enum Sink<'a> {
    /// To the downstream call, at once.
    Pass(&'a Ctx, &'a Route),
    /// Kept, for the instance the round came through (see `hop`).
    Keep(&'a mut Vec<hop::HopUpdate>),
}

impl Sink<'_> {
    async fn put(&mut self, update: Update) {
        match self {
            Sink::Pass(ctx, route) => pass_on(ctx, route, update).await,
            Sink::Keep(kept) => kept.push(update.into()),
        }
    }
}

/// How a round on a held call ended.
enum Driven {
    /// The upstream asked these questions; the call is kept under its id for the next round.
    Round(rmcp::model::InputRequests),
    /// The call ended.
    Ended(HeldOutcome),
    /// The call could not be kept for another round (and was stopped).
    NotHeld(hold::NotHeld),
}

/// Wait on `held` (answered already, when this round carried answers) until the upstream
/// asks again or the call ends, its messages to `sink`.
async fn drive(
    holds: &hold::Holds<HeldOutcome>,
    (id, connection): (&str, &str),
    mut held: hold::Held<HeldOutcome>,
    mut asked: tokio::sync::watch::Receiver<u32>,
    cancelled: &tokio_util::sync::CancellationToken,
    mut sink: Sink<'_>,
) -> Result<Driven, ErrorData> {
    let mut unanswered = !held.inbox.open().is_empty();
    let outcome = loop {
        if unanswered {
            gather_questions(&mut asked).await;
            let open = held.inbox.open();
            if let Err(why) = holds.keep(id.to_owned(), held) {
                // The held call was dropped, which cancelled it upstream; no round goes out.
                return Ok(Driven::NotHeld(why));
            }
            return Ok(Driven::Round(open));
        }
        tokio::select! {
            biased;
            () = cancelled.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
            Some(update) = held.updates.recv() => sink.put(update).await,
            outcome = &mut held.outcome => break outcome,
            Ok(()) = asked.changed() => unanswered = !held.inbox.open().is_empty(),
        }
    };
    while let Ok(update) = held.updates.try_recv() {
        sink.put(update).await;
    }
    Ok(Driven::Ended(outcome.unwrap_or_else(|_| {
        Err(HostError::Call {
            connection: connection.to_owned(),
            message: "the held call ended without a result".into(),
        })
    })))
}

/// The owner's side of a hop: `round`, which came through another instance, continued on the
/// call this instance holds, as if it had come here directly.
pub(crate) async fn round_here(
    upstreams: &Upstreams,
    owner: &str,
    (id, connection, responses): (
        String,
        String,
        std::collections::BTreeMap<String, serde_json::Value>,
    ),
) -> hop::HopReply {
    let mut updates = Vec::new();
    let Ok(held) = upstreams.holds.take(&id, owner) else {
        return hop::HopReply {
            updates,
            end: hop::HopEnd::NoLongerHeld,
        };
    };
    let asked = held.inbox.asked();
    held.inbox.answer(responses);
    // Dropped when the other instance goes away, which drops the call: no token is needed.
    let never = tokio_util::sync::CancellationToken::new();
    let named = (id.as_str(), connection.as_str());
    let sink = Sink::Keep(&mut updates);
    let driven = drive(&upstreams.holds, named, held, asked, &never, sink).await;
    let route = Route {
        connection,
        tool: String::new(),
    };
    let end = match driven {
        Ok(Driven::Round(open)) => hop::HopEnd::Round(open),
        Ok(Driven::Ended(Ok(Outcome::Tool(Started::Done(result))))) => hop::HopEnd::Tool(result),
        Ok(Driven::Ended(Ok(Outcome::Tool(Started::Task(task))))) => hop::HopEnd::Task(task),
        Ok(Driven::Ended(Ok(Outcome::Prompt(Started::Done(result))))) => {
            hop::HopEnd::Prompt(result)
        }
        Ok(Driven::Ended(Ok(other))) => hop::HopEnd::Failed(unexpected(&route, &other).to_string()),
        Ok(Driven::Ended(Err(HostError::Refused { error, .. }))) => hop::HopEnd::Refused(error),
        Ok(Driven::Ended(Err(HostError::Call { message, .. }))) => hop::HopEnd::Failed(message),
        Ok(Driven::Ended(Err(error))) => hop::HopEnd::Failed(error.to_string()),
        Ok(Driven::NotHeld(why)) => hop::HopEnd::NotHeld(not_held_message(why)),
        Err(error) => hop::HopEnd::Failed(error.message.to_string()),
    };
    hop::HopReply { updates, end }
}

/// End `session`, an upstream session of a gateway instance that stopped, at the upstream
/// `connection` leads to: what its calls wait for (a question nobody can answer any more) stops
/// there now rather than at the upstream's own timeout. Logged, never an error of the round.
async fn end_left_over(host: &Host<Switchboard>, connection: &str, session: &str) {
    let ended = match host.connection(connection) {
        Ok(upstream) => upstream.end_session(session).await,
        Err(error) => Err(error),
    };
    match ended {
        Ok(()) => {
            tracing::info!(upstream = %connection, "ended the upstream session of a gateway instance that stopped")
        }
        Err(error) => {
            tracing::warn!(upstream = %connection, %error, "the upstream session of a gateway instance that stopped could not be ended")
        }
    }
}

/// A round whose held call is gone (it waited too long, or another instance holds it).
fn no_longer_held(route: &Route) -> HostError {
    HostError::Call {
        connection: route.connection.clone(),
        message: format!(
            "the upstream call these answers were for is no longer waiting (it waits {} s for \
             each round, on the gateway instance that asked); start again",
            hold::HOLD_FOR.as_secs()
        ),
    }
}

/// A call that could not be held: the table is full, or its caller holds its whole share.
fn not_held(route: &Route, why: hold::NotHeld) -> HostError {
    HostError::Call {
        connection: route.connection.clone(),
        message: not_held_message(why),
    }
}

/// Why a call could not be held, as the client reads it.
fn not_held_message(why: hold::NotHeld) -> String {
    match why {
        hold::NotHeld::OverShare => format!(
            "you already have {} calls waiting for answers on this gateway; answer or abandon \
             one of them first",
            hold::MAX_HOLDS_PER_CALLER
        ),
        _ => "too many calls are waiting for answers on this gateway; try again later".to_owned(),
    }
}

/// Whose share of the held calls a call of `caller` counts against: its owner (a principal,
/// else a 2025-11-25 session), else the address it came from.
fn share_of(caller: &Caller, ctx: &Ctx) -> String {
    if !caller.owner.is_empty() {
        return caller.owner.clone();
    }
    let address = ctx
        .extensions()
        .get::<http::request::Parts>()
        .and_then(|parts| {
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        })
        .map(|info| info.0.ip().to_string())
        .unwrap_or_default();
    format!("address:{address}")
}

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
fn upstream_context(upstreams: &Upstreams, ctx: &Ctx, token: String) -> CallContext {
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

/// Wait until no further question came for [`QUESTION_GATHER_QUIET`] (at most
/// [`QUESTION_GATHER_MAX`]).
async fn gather_questions(questions: &mut tokio::sync::watch::Receiver<u32>) {
    let deadline = tokio::time::Instant::now() + QUESTION_GATHER_MAX;
    questions.borrow_and_update();
    loop {
        let quiet = (tokio::time::Instant::now() + QUESTION_GATHER_QUIET).min(deadline);
        match tokio::time::timeout_at(quiet, questions.changed()).await {
            Ok(Ok(())) => continue,
            _ => return,
        }
    }
}

/// Pass an upstream's progress or log message on to the downstream call.
async fn pass_on(ctx: &Ctx, route: &Route, update: Update) {
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
