//! [`PassThrough`]: a plain 2026-07-28 `tools/call` offered, once the endpoint has checked it, to
//! code that answers it without the handler (a gateway relaying it to another server), before
//! rmcp's dispatch, the layer and `Ctx` are built for it.

use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, RequestMetaObject};

/// A plain 2026-07-28 `tools/call` the endpoint has checked as its fast path checks one (one
/// known `MCP-Protocol-Version` from 2026-07-28 on and the same in `_meta` with the client's
/// capabilities, no session, the media types, agreeing `Mcp-*` headers, a body of only the
/// fields a call holds, each of its type).
#[derive(Debug)]
pub struct PlainToolCall {
    /// The HTTP head, with its extensions (a [`super::Principal`] a layer outside put there).
    /// What a [`PassThrough`] puts into its extensions reaches the handler when the call is
    /// handed on ([`Passed::Handler`]).
    pub parts: http::request::Parts,
    /// The call's parameters, as rmcp's parse builds them.
    pub params: CallToolRequestParams,
    /// The request's `_meta`.
    pub meta: RequestMetaObject,
}

/// How a [`PassThrough`] disposed of a call.
#[derive(Debug)]
pub enum Passed {
    /// Answered with this: the call's result, its next round, or its task.
    Answered(CallToolResponse),
    /// Answered with this protocol error.
    Refused(ErrorData),
    /// Handed on: the handler serves it as if it had never been offered (with what the pass
    /// through put into the head's extensions).
    Handler(Box<PlainToolCall>),
}

/// Takes plain 2026-07-28 `tools/call` requests before the handler does (see
/// [`super::router_passing`]).
pub trait PassThrough: Send + Sync + 'static {
    /// The call's future answer, or the call back at once when it is not one to take (then the
    /// handler serves it, with no further cost).
    fn pass(&self, call: PlainToolCall) -> Result<BoxFuture<'static, Passed>, Box<PlainToolCall>>;
}
