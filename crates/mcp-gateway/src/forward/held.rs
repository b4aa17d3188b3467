//! A 2026-07-28 client's call to a 2025-11-25 upstream, held open between the client's rounds
//! (`hold`): its rounds here, a round that came through another instance (`hop`), and whose
//! share of the held calls a call counts against.

use std::sync::Arc;
use std::time::Duration;

use backchannel::Ctx;
use backchannel_host::{Connection, Host, HostError, Started};
use rmcp::ErrorData;

use super::context::{not_passable, upstream_context};
use super::route::{Caller, Forward, How, Request, Route};
use super::send::{pass_on, send, unexpected};
use crate::hold::{self, HeldOutcome, Outcome};
use crate::hop;
use crate::switchboard::{Switchboard, Update};
use crate::upstream::Upstreams;

/// How long a held call's round waits, after a question, for the upstream's other questions
/// of the same round, so they go to the client together (a 2025-11-25 server sends each as a
/// request of its own, back to back).
const QUESTION_GATHER_QUIET: Duration = Duration::from_millis(50);
/// The longest a round is gathered.
const QUESTION_GATHER_MAX: Duration = Duration::from_millis(250);

impl Forward<'_> {
    /// One round of a 2026-07-28 client's call to a 2025-11-25 upstream, whose call is held
    /// between the rounds (see `hold`): the first round starts the upstream call, a later one
    /// takes it by the id its sealed state names and hands it the client's answers; then the round
    /// waits for the call's end, or for the upstream's next questions, which it passes on with the
    /// hold's id as its state.
    pub(super) async fn held_round(
        &self,
        host: Arc<Host<Switchboard>>,
        request: Request,
    ) -> Result<HeldOutcome, ErrorData> {
        let (upstreams, ctx, route, caller) = self.parts();
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
        let (upstreams, ctx, route, caller) = self.parts();
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
