//! The vocabulary of a forwarded call: what goes upstream ([`Request`]), how far ([`How`]),
//! where ([`Route`]), for whom ([`Caller`]), and the call itself ([`Forward`]).

use backchannel::{Ctx, PassedRound};
use backchannel_host::Declared;
use rmcp::model::JsonObject;

use crate::upstream::Upstreams;

/// What goes upstream: a tool call or a prompt, by its upstream name.
#[derive(Debug, Clone)]
pub(crate) enum Request {
    Tool(String, Option<JsonObject>),
    Prompt(String, Option<JsonObject>),
}

/// How far one upstream request goes.
pub(crate) enum How {
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

impl<'a> Forward<'a> {
    /// Its parts, borrowed at once: the upstreams, the call's `Ctx`, the route, the caller.
    pub(crate) fn parts(&self) -> (&'a Upstreams, &Ctx, &Route, &Caller) {
        (self.upstreams, &self.ctx, &self.route, &self.caller)
    }
}
