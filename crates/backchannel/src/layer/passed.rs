//! Rounds of another server passed on without a body of the layer's running (a gateway's
//! pass-through, [`crate::serve::PassThrough`]): sealed and opened exactly as
//! [`Ctx::pass_round`](crate::Ctx::pass_round) seals a body's and its retry opens it, so a
//! round sealed one way is opened the other: bound to the call and its caller, spent once,
//! expiring, and no more of them than the layer allows.

use std::collections::BTreeMap;

use rmcp::ErrorData;
use rmcp::model::{InputRequests, InputRequiredResult, InputResponses, JsonObject};

use super::{Backchannel, Owner};
use crate::ctx::PassedRound;
use crate::principal::Principal;
use crate::state::{Answer, CallBinding, PassedOn, Sealed};

/// A tool call whose rounds another server asks, passed on without a body: what its rounds are
/// bound to ([`Backchannel::passed_call`]).
#[derive(Debug)]
pub struct PassedCall<'a> {
    binding: CallBinding<'a>,
    owner: Owner,
}

impl PassedCall<'_> {
    /// Who a task this call becomes belongs to, as [`Backchannel::owner_key`] names it.
    pub fn owner_key(&self) -> String {
        self.owner.key()
    }
}

/// The round a retry of a [`PassedCall`] answers, opened and spent: the other server's state
/// and the client's answers to the keys that round asked ([`OpenedRound::passed`]).
#[derive(Debug)]
pub struct OpenedRound {
    passed: PassedRound,
    round: u32,
    nonce: String,
    answers: BTreeMap<String, Answer>,
    progress: Option<f64>,
    trace: Option<String>,
}

impl OpenedRound {
    /// What the client answered, for the other server: its state and the answers by its keys
    /// (answers to other keys dropped), as [`Ctx::passed_round`](crate::Ctx::passed_round)
    /// gives them to a body.
    pub fn passed(&self) -> &PassedRound {
        &self.passed
    }
}

impl Backchannel {
    /// The 2026-07-28 tool call `name` with `arguments`, made by the request whose head is
    /// `parts` (its caller the [`Principal`] an HTTP layer put there), for passing its rounds on
    /// without a body. `None` when the layer reads callers with a function of its builder's,
    /// which needs the whole request context.
    pub fn passed_call<'a>(
        &self,
        parts: &http::request::Parts,
        name: &'a str,
        arguments: Option<&'a JsonObject>,
    ) -> Option<PassedCall<'a>> {
        if self.inner.principal.is_some() {
            return None;
        }
        let principal = parts
            .extensions
            .get::<Principal>()
            .map(|principal| principal.0.clone());
        let owner = match &principal {
            Some(principal) => Owner::Principal(principal.clone()),
            None => Owner::Anyone,
        };
        Some(PassedCall {
            binding: CallBinding::new("tool", name, arguments, principal),
            owner,
        })
    }

    /// Seal another server's round of `call` (its questions as that server asked them, its
    /// `state`) as [`Ctx::pass_round`](crate::Ctx::pass_round) does: the round after `after`
    /// (the round the client's retry answered), or the first.
    pub fn seal_passed_round(
        &self,
        call: &PassedCall<'_>,
        after: Option<OpenedRound>,
        requests: InputRequests,
        state: Option<String>,
    ) -> Result<InputRequiredResult, ErrorData> {
        let round = after.as_ref().map_or(0, |opened| opened.round) + 1;
        if round > self.inner.max_rounds {
            return Err(self.too_many_rounds());
        }
        let passed = PassedOn {
            keys: requests.keys().cloned().collect(),
            state,
        };
        // What the call carries from round to round, as a body's `next_state` carries it.
        let (nonce, answers, progress, trace) = match after {
            Some(opened) => (opened.nonce, opened.answers, opened.progress, opened.trace),
            None => (
                crate::util::fresh_nonce(),
                BTreeMap::new(),
                None,
                crate::telemetry::current_traceparent(),
            ),
        };
        let sealed = Sealed {
            exp: self.inner.shared.clock.now_ms() + self.inner.state_ttl.as_millis() as u64,
            round,
            nonce,
            answers,
            asked: BTreeMap::new(),
            progress,
            trace,
            passed: Some(passed),
        };
        let sealed = self.inner.codec.seal(&call.binding, &sealed);
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
    }

    /// Open and spend the `request_state` a retry of `call` sent with `responses`, as the
    /// layer opens a body's: refused (an error the client reads) when it is not this call's
    /// and this caller's, expired, or spent already. `None`, with nothing spent, when it is
    /// not a round passed on from another server (a body's own questions): the body's to open.
    pub async fn open_passed_round(
        &self,
        call: &PassedCall<'_>,
        request_state: &str,
        responses: &InputResponses,
    ) -> Result<Option<OpenedRound>, ErrorData> {
        let accept = |sealed: &Sealed| sealed.passed.is_some() && sealed.asked.is_empty();
        let Some(mut sealed) = self
            .open_sealed(&call.binding, request_state, accept)
            .await?
        else {
            return Ok(None);
        };
        let passed = sealed.passed.take().unwrap_or_default();
        let responses = passed
            .keys
            .iter()
            .filter_map(|key| {
                responses
                    .get(key)
                    .map(|answer| (key.clone(), answer.clone()))
            })
            .collect();
        Ok(Some(OpenedRound {
            passed: PassedRound {
                state: passed.state,
                responses,
            },
            round: sealed.round,
            nonce: sealed.nonce,
            answers: sealed.answers,
            progress: sealed.progress,
            trace: sealed.trace,
        }))
    }
}
