//! `mcp-gateway`: one MCP endpoint in front of other MCP servers (upstreams), served on both
//! protocol revisions whatever revision each upstream speaks. A 2025-11-25 client can use a
//! 2026-07-28-only server and the reverse: the upstream's questions (form and URL elicitation,
//! sampling) are asked of the downstream client in the downstream's revision, and the
//! upstream's progress reaches the downstream call.
//!
//! The gateway is a [`Gateway`] server on `backchannel`'s layer, whose tools are the upstreams'
//! tools; each call is forwarded through `backchannel-host`, which speaks the upstream's
//! revision. How a question crosses:
//!
//! A 2026-07-28 client's rounds pass through to a 2026-07-28 upstream (its keys, its state
//! sealed inside the layer's: `Ctx::pass_round`), and hold a 2025-11-25 upstream's call open
//! between them (module `hold`). Otherwise (a 2025-11-25 client, and prompts):
//!
//! The layer runs a tool body again once its questions are answered, and the gateway's body
//! is a call upstream, so a question ends the run: the layer asks it of the downstream client
//! (on a 2025-11-25 session as a request, on 2026-07-28 as `input_required`, keeping nothing
//! between rounds), the run's upstream call is dropped, which cancels it upstream, and the next
//! run calls upstream again and finds that question answered (the answer goes upstream in the
//! upstream's revision: a 2025 response, or a 2026 retry with `inputResponses`). Questions are
//! matched by what they ask (kind, text and schema) and their order, so this holds for upstream
//! tools that act only after their questions (the rule `backchannel`'s own tools follow). No
//! answer reaches an upstream before its call is dropped: a question of an abandoned run is
//! answered only once the run has ended and the cancellation had time to arrive.
//!
//! An upstream's task (tasks extension) is relayed rather than run by the gateway: a client
//! that declared tasks gets it under a sealed id of the gateway's, bound to that client, and
//! its `tasks/get`, `tasks/update` and `tasks/cancel` go to the upstream task (module `tasks`).

// Sampling is deprecated in rmcp (SEP-2577) but remains the protocol, and the gateway relays it.
#![expect(
    deprecated,
    reason = "the gateway relays sampling, which rmcp marks deprecated (SEP-2577)"
)]

mod catalog;
mod hold;
mod relay;
mod tasks;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use backchannel::{Backchannel, Ctx, Revision};
use backchannel_host::{
    CallContext, ConnectionConfig, Declared, Host, HostConfig, HostError, Started, Transport,
};
use futures::future::BoxFuture;
use rmcp::RoleServer;
use rmcp::handler::server::common::FromContextPart as _;
use rmcp::handler::server::prompt::PromptContext;
use rmcp::handler::server::router::prompt::{PromptRoute, PromptRouter};
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, ClientCapabilities, CompleteRequestParams, CompleteResult,
    CreateTaskResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult,
    Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    LoggingLevel, PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResponse,
    ResultType, ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, ServerHandler};

pub use relay::Relay;

/// The `_meta` key of a 2026-07-28 request's log level.
const LOG_LEVEL_META_KEY: &str = "io.modelcontextprotocol/logLevel";

/// How long one forwarded call may take upstream, questions to the person included.
pub const UPSTREAM_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// One upstream named on the command line: `NAME=URL` (Streamable HTTP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Its name: the connection's, and the tool prefix when there are several.
    pub name: String,
    /// Its MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    pub url: String,
}

impl std::str::FromStr for Upstream {
    type Err = GatewayError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| GatewayError::BadUpstream(format!("{text:?}: {why}"));
        let (name, url) = text
            .split_once('=')
            .ok_or_else(|| bad("expected NAME=URL"))?;
        let (name, url) = (name.trim(), url.trim());
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(bad("the name must be letters, digits, '-' or '_'"));
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(bad("the URL must start with http:// or https://"));
        }
        Ok(Upstream {
            name: name.to_owned(),
            url: url.to_owned(),
        })
    }
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// An upstream given on the command line is not `NAME=URL`.
    #[error("bad upstream {0}")]
    BadUpstream(String),
    /// A revision named for an upstream that was not given.
    #[error("--upstream-revision names {0:?}, which is no upstream")]
    UnknownUpstream(String),
    /// The host could not be opened.
    #[error(transparent)]
    Host(#[from] HostError),
    /// No upstream could be reached.
    #[error("no upstream could be reached: {0}")]
    NoUpstream(String),
    /// Two upstreams offer a tool under the same name.
    #[error(
        "upstreams {first:?} and {second:?} both offer a tool named {tool:?}: give one a tool_prefix"
    )]
    Clash {
        /// The tool's name as the gateway would offer it.
        tool: String,
        /// The upstream seen first.
        first: String,
        /// The other.
        second: String,
    },
    /// The layer could not be built.
    #[error(transparent)]
    Layer(#[from] backchannel::BuildError),
    /// No random key could be had for the gateway's task ids.
    #[error("no random key for the gateway's task ids: {0}")]
    Random(#[from] getrandom::Error),
}

/// The host configuration of the quick start: each upstream over HTTP, speaking the revision
/// `revisions` names for it (else whichever it offers, newest first), its tools prefixed with
/// `NAME_` when there are several upstreams.
pub fn quick_config(
    upstreams: &[Upstream],
    revisions: &BTreeMap<String, Revision>,
) -> Result<HostConfig, GatewayError> {
    quick_config_with_meta(upstreams, revisions, &[])
}

/// [`quick_config`], with the caller's `_meta` keys `allow_meta` passed on to the upstreams
/// (none by default: a client's `_meta` may hold what is meant for the gateway alone).
pub fn quick_config_with_meta(
    upstreams: &[Upstream],
    revisions: &BTreeMap<String, Revision>,
    allow_meta: &[String],
) -> Result<HostConfig, GatewayError> {
    if let Some(unknown) = revisions
        .keys()
        .find(|name| !upstreams.iter().any(|u| &u.name == *name))
    {
        return Err(GatewayError::UnknownUpstream(unknown.clone()));
    }
    let several = upstreams.len() > 1;
    let connections = upstreams
        .iter()
        .map(|upstream| {
            let connection = ConnectionConfig {
                transport: Transport::Http {
                    url: upstream.url.clone(),
                    headers: BTreeMap::new(),
                },
                request_timeout_secs: UPSTREAM_CALL_TIMEOUT.as_secs(),
                roots: Vec::new(),
                protocol: revisions.get(&upstream.name).copied(),
                tool_prefix: several.then(|| format!("{}_", upstream.name)),
                tools: None,
                capabilities: relayed_capabilities(),
                auth: None,
            };
            (upstream.name.clone(), connection)
        })
        .collect();
    Ok(HostConfig {
        client_name: "mcp-gateway".into(),
        trusted_folders: Vec::new(),
        meta_allow: ["progressToken", LOG_LEVEL_META_KEY]
            .into_iter()
            .map(String::from)
            .chain(allow_meta.iter().cloned())
            .collect(),
        connections,
    })
}

/// What the gateway declares to its upstreams: the questions it can relay (forms, URLs,
/// sampling and roots).
pub fn relayed_capabilities() -> Declared {
    Declared {
        elicitation: true,
        url_elicitation: true,
        sampling: true,
        roots: true,
        tasks: true,
    }
}

/// The gateway's server: the upstreams' tools, each call forwarded (see the crate's docs).
/// Cheap to clone; every clone serves the same upstreams.
#[derive(Clone)]
pub struct Gateway {
    layer: Backchannel,
    /// The upstreams' tools; made again when one says its tools changed.
    tools: Arc<std::sync::RwLock<Arc<ToolRouter<Gateway>>>>,
    upstreams: Arc<Upstreams>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("host", &self.upstreams.host)
            .finish_non_exhaustive()
    }
}

struct Upstreams {
    /// The upstream connections declaring every question the gateway can relay: for the
    /// lists, and for the calls of clients that can answer every kind.
    host: Arc<Host<Relay>>,
    /// The same upstreams again, opened the first time a client that can answer fewer kinds
    /// of question calls a tool, declaring only those: an upstream sees what its caller can do
    /// (a 2025-11-25 upstream reads it once per session).
    narrower: tokio::sync::Mutex<HashMap<Declared, Arc<Host<Relay>>>>,
    /// Each connection's tool prefix ("" for none).
    prefixes: BTreeMap<String, String>,
    config: HostConfig,
    relay: Arc<Relay>,
    catalog: catalog::Catalog,
    /// The downstream ids of the upstreams' tasks.
    task_ids: tasks::TaskIds,
    /// 2025-11-25 upstream calls held between a 2026-07-28 client's rounds.
    holds: hold::Holds,
}

/// Where a tool's calls go.
#[derive(Debug, Clone)]
struct Route {
    connection: String,
    tool: String,
}

impl Gateway {
    /// Connect to every upstream of `config` and gather their tools. Upstreams that cannot be
    /// reached are left out (logged); none reachable is an error.
    pub async fn open(config: &HostConfig) -> Result<Gateway, GatewayError> {
        // The gateway's own `_meta` keys go upstream whatever the configuration allows.
        let mut config = config.clone();
        for key in ["progressToken", LOG_LEVEL_META_KEY] {
            if !config.meta_allow.iter().any(|allowed| allowed == key) {
                config.meta_allow.push(key.to_owned());
            }
        }
        let config = &config;
        let relay = Arc::new(Relay::default());
        let host = open_upstreams(config, &relay).await?;
        if host.connections().next().is_none() {
            let why = host
                .unavailable
                .iter()
                .map(|(name, why)| format!("{name}: {why}"))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(GatewayError::NoUpstream(why));
        }
        let prefixes: BTreeMap<String, String> = host
            .connections()
            .map(|connection| {
                let prefix = config
                    .connections
                    .get(connection.name())
                    .and_then(|c| c.tool_prefix.clone())
                    .unwrap_or_default();
                (connection.name().to_owned(), prefix)
            })
            .collect();
        let (router, offered) = tool_router(&host, &prefixes).await?;
        tracing::info!(
            upstreams = host.connections().count(),
            tools = offered,
            "gateway ready"
        );
        let catalog = catalog::Catalog::new(&host, &prefixes);
        let layer = Backchannel::builder().build()?;
        relay.announce_through(&layer);
        let (tools_changed, changes) = tokio::sync::mpsc::unbounded_channel();
        relay.on_tools_changed(tools_changed);
        let gateway = Gateway {
            layer,
            tools: Arc::new(std::sync::RwLock::new(Arc::new(router))),
            upstreams: Arc::new(Upstreams {
                host: Arc::new(host),
                prefixes,
                narrower: tokio::sync::Mutex::new(HashMap::new()),
                config: config.clone(),
                relay,
                catalog,
                task_ids: tasks::TaskIds::new()?,
                holds: hold::Holds::default(),
            }),
        };
        tokio::spawn(offer_changed_tools(
            changes,
            Arc::downgrade(&gateway.tools),
            Arc::downgrade(&gateway.upstreams),
            gateway.layer.downgrade(),
        ));
        Ok(gateway)
    }

    /// The names of the tools offered, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .router()
            .list_all()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        names.sort();
        names
    }
}

/// Whether `connection` speaks a revision with sessions (2025-11-25 or older: questions as
/// requests, `logging/setLevel`, `resources/subscribe`).
pub(crate) fn speaks_sessions(connection: &backchannel_host::Connection<Relay>) -> bool {
    connection
        .protocol_version()
        .is_none_or(|version| version.as_str() <= "2025-11-25")
}

/// Open the upstream connections of `config`, each asked for every log message; an upstream
/// that cannot be reached is left out (logged).
async fn open_upstreams(config: &HostConfig, relay: &Arc<Relay>) -> Result<Host<Relay>, HostError> {
    let host = Host::open(config, relay.clone()).await?;
    for (name, why) in &host.unavailable {
        tracing::warn!(upstream = %name, %why, "upstream left out: it cannot be reached");
    }
    for connection in host.connections() {
        ask_for_every_log_message(connection).await;
    }
    Ok(host)
}

/// A 2025-11-25 upstream logs at the level its session set: the gateway asks for every
/// message and passes on what each downstream client asked for. (A 2026-07-28 upstream is
/// asked per call.)
async fn ask_for_every_log_message(connection: &backchannel_host::Connection<Relay>) {
    let client = connection.client();
    let logs = client
        .peer_info()
        .is_some_and(|info| info.capabilities.logging.is_some());
    let sessions = speaks_sessions(connection);
    if logs && sessions {
        let level = SetLevelRequestParams::new(LoggingLevel::Debug);
        if let Err(error) = client.set_level(level).await {
            tracing::warn!(upstream = %connection.name(), %error, "the upstream refused logging/setLevel; its log messages may not come through");
        }
    }
}

impl Gateway {
    /// The tools as they are now.
    fn router(&self) -> Arc<ToolRouter<Gateway>> {
        self.tools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// The upstreams' tools, each a route forwarding its calls; and how many there are.
async fn tool_router(
    host: &Host<Relay>,
    prefixes: &BTreeMap<String, String>,
) -> Result<(ToolRouter<Gateway>, usize), GatewayError> {
    let mut router = ToolRouter::new();
    let mut offered: BTreeMap<String, String> = BTreeMap::new();
    for connection in host.connections() {
        let prefix = prefixes.get(connection.name()).cloned().unwrap_or_default();
        for tool in connection.tools().await? {
            let offered_as = tool.name.to_string();
            if let Some(first) = offered.insert(offered_as.clone(), connection.name().into()) {
                return Err(GatewayError::Clash {
                    tool: offered_as,
                    first,
                    second: connection.name().into(),
                });
            }
            let route = Route {
                connection: connection.name().to_owned(),
                tool: offered_as
                    .strip_prefix(prefix.as_str())
                    .unwrap_or(&offered_as)
                    .to_owned(),
            };
            router.add_route(ToolRoute::new_dyn(tool, move |context| {
                let route = route.clone();
                Box::pin(forward(context, route))
            }));
        }
    }
    Ok((router, offered.len()))
}

/// List every connection's tools once, so its HTTP transport knows their schemas: a
/// 2026-07-28 call sends the arguments a schema marks `x-mcp-header` as `Mcp-Param-*`
/// headers, which rmcp's client takes from the tool list it saw on that connection.
async fn learn_tools(host: &Host<Relay>) {
    for connection in host.connections() {
        if let Err(error) = connection.tools().await {
            tracing::warn!(upstream = %connection.name(), %error, "the upstream's tools could not be listed");
        }
    }
}

/// Each time an upstream says its tools changed: list them all again, offer the new list,
/// and tell the downstream clients (a list that cannot be made, two upstreams offering one
/// name, keeps the old one). Ends with the gateway.
async fn offer_changed_tools(
    mut changes: tokio::sync::mpsc::UnboundedReceiver<()>,
    tools: std::sync::Weak<std::sync::RwLock<Arc<ToolRouter<Gateway>>>>,
    upstreams: std::sync::Weak<Upstreams>,
    layer: backchannel::WeakBackchannel,
) {
    while changes.recv().await.is_some() {
        // Several changes at once are one new list.
        while changes.try_recv().is_ok() {}
        let (Some(tools), Some(upstreams), Some(layer)) =
            (tools.upgrade(), upstreams.upgrade(), layer.upgrade())
        else {
            return;
        };
        let narrower: Vec<Arc<Host<Relay>>> =
            upstreams.narrower.lock().await.values().cloned().collect();
        for host in &narrower {
            learn_tools(host).await;
        }
        match tool_router(&upstreams.host, &upstreams.prefixes).await {
            Ok((router, count)) => {
                *tools
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(router);
                tracing::info!(
                    tools = count,
                    "the upstreams' tools changed; offering the new list"
                );
                layer
                    .notify_list_changed(backchannel::ListKind::Tools)
                    .await;
            }
            Err(error) => {
                tracing::warn!(%error, "the upstreams' tools changed, but the new list cannot be offered; keeping the old one");
            }
        }
    }
}

/// Forward one call: the upstream's questions and progress go to this call's `Ctx` through
/// the relay; on a 2026-07-28 downstream a question ends this run with the `Suspend` the
/// layer turns into `input_required`.
async fn forward(
    mut context: ToolCallContext<'_, Gateway>,
    route: Route,
) -> Result<CallToolResponse, ErrorData> {
    let ctx = Ctx::from_context_part(&mut context)?;
    let arguments = context.arguments.take();
    let tool = route.tool.clone();
    // A client that declared tasks gets the upstream's task, if it makes one; for any other
    // the upstream runs the call to its end (it was told the client has no tasks).
    let declared = answerable(ctx.client_capabilities());
    // A 2026-07-28 client's rounds with a 2026-07-28 upstream pass through: the upstream's
    // questions under its own keys, its state sealed inside the layer's, one upstream request
    // per round.
    let passes = ctx.passes_rounds();
    if passes {
        // A 2025-11-25 upstream asks inside its call: the call is held between the rounds.
        let host = context
            .service
            .upstreams
            .host_for(ctx.client_capabilities())
            .await?;
        let connection = host
            .connection(&route.connection)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        if speaks_sessions(connection) {
            let owner = context.service.layer.owner_key(&context.request_context);
            let call = HeldCall {
                host: host.clone(),
                arguments,
                owner,
                declared,
            };
            return held_round(context.service, &ctx, &route, call).await;
        }
    }
    let passed = ctx.passed_round();
    let outcome = relayed(
        context.service,
        &ctx,
        &route,
        move |connection, call_context| {
            Box::pin(async move {
                if passes && !speaks_sessions(connection) {
                    let (responses, state) = match passed {
                        Some(passed) => (Some(passed.responses), passed.state),
                        None => (None, None),
                    };
                    connection
                        .call_round(&tool, arguments, call_context, responses, state)
                        .await
                } else if declared.tasks {
                    connection.start_tool(&tool, arguments, call_context).await
                } else {
                    connection
                        .call_tool(&tool, arguments, call_context)
                        .await
                        .map(Started::Done)
                }
            })
        },
    )
    .await?;
    Ok(match outcome {
        // The upstream's protocol error is the downstream's (a capability it lacks, bad
        // arguments): the tool never ran.
        Err(HostError::Refused { error, .. }) => return Err(error),
        Ok(Started::InputRequired {
            input_requests,
            request_state,
        }) => return Err(ctx.pass_round(input_requests, request_state).into()),
        Ok(Started::Task(task)) => {
            let owner = context.service.layer.owner_key(&context.request_context);
            task_created(context.service, &owner, &route, declared, task)
        }
        Ok(Started::Done(result)) => finished(&route, Ok(result))?,
        Err(error) => finished(&route, Err(error))?,
    })
}

/// The upstream made the call `task`: the client gets it under the gateway's id for `owner`.
fn task_created(
    gateway: &Gateway,
    owner: &str,
    route: &Route,
    declared: Declared,
    task: rmcp::model::Task,
) -> CallToolResponse {
    let route = tasks::TaskRoute {
        connection: route.connection.clone(),
        declared,
        upstream: task.task_id.clone(),
    };
    tracing::debug!(upstream = %route.connection, task = %route.upstream, "the upstream made the call a task");
    CallToolResponse::Task(CreateTaskResult::new(
        gateway.upstreams.task_ids.shown(owner, &route, task),
    ))
}

/// An upstream call's end as the downstream client gets it: its result; its protocol error as
/// the client's (the tool never ran); a failure to reach it as a tool error the model reads.
fn finished(
    route: &Route,
    outcome: Result<rmcp::model::CallToolResult, HostError>,
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

/// One round of a 2026-07-28 client's call to a 2025-11-25 upstream, whose call is held
/// between the rounds (see `hold`): the first round starts the upstream call, a later one
/// takes it by the id its sealed state names and hands it the client's answers; then the round
/// waits for the call's end, or for the upstream's next questions, which it passes on with the
/// hold's id as its state.
async fn held_round(
    gateway: &Gateway,
    ctx: &Ctx,
    route: &Route,
    call: HeldCall,
) -> Result<CallToolResponse, ErrorData> {
    let HeldCall {
        host,
        arguments,
        owner,
        declared,
    } = call;
    let holds = &gateway.upstreams.holds;
    let (id, mut held, mut asked) = match ctx.passed_round() {
        Some(passed) => {
            let id = passed.state.unwrap_or_default();
            let Ok(held) = holds.take(&id, &owner) else {
                return Ok(backchannel::error_text(format!(
                    "the upstream call these answers were for is no longer waiting (it waits {} s                      for each round, on the gateway instance that asked); call the tool again",
                    hold::HOLD_FOR.as_secs()
                ))
                .into());
            };
            // Counted from before the answers go, so a question they lead to is seen.
            let asked = held.inbox.asked();
            held.inbox.answer(passed.responses);
            (id, held, asked)
        }
        None => {
            if holds.room().is_err() {
                return Ok(backchannel::error_text(
                    "too many calls are waiting for answers on this gateway; try again later",
                )
                .into());
            }
            let (token, inbox, updates, registered) = gateway.upstreams.relay.open_held();
            let call_context = upstream_context(gateway, ctx, token);
            let (sent, outcome) = tokio::sync::oneshot::channel();
            let (connection, tool) = (route.connection.clone(), route.tool.clone());
            let task = tokio::spawn(async move {
                let result = match host.connection(&connection) {
                    Ok(connection) if declared.tasks => {
                        connection.start_tool(&tool, arguments, &call_context).await
                    }
                    Ok(connection) => connection
                        .call_tool(&tool, arguments, &call_context)
                        .await
                        .map(Started::Done),
                    Err(error) => Err(error),
                };
                let _ = sent.send(result);
            });
            let asked = inbox.asked();
            let held = hold::Held::new(owner.clone(), inbox, outcome, updates, task, registered);
            (tasks::fresh_id()?, held, asked)
        }
    };
    let cancelled = ctx.cancellation().clone();
    let mut unanswered = !held.inbox.open().is_empty();
    let outcome = loop {
        if unanswered {
            gather_questions(&mut asked).await;
            let suspend = ctx.pass_round(held.inbox.open(), Some(id.clone()));
            if holds.keep(id, held).is_err() {
                return Ok(backchannel::error_text(
                    "too many calls are waiting for answers on this gateway; try again later",
                )
                .into());
            }
            return Err(suspend.into());
        }
        tokio::select! {
            biased;
            () = cancelled.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
            Some(update) = held.updates.recv() => pass_on(ctx, route, update).await,
            outcome = &mut held.outcome => break outcome,
            Ok(()) = asked.changed() => unanswered = !held.inbox.open().is_empty(),
        }
    };
    while let Ok(update) = held.updates.try_recv() {
        pass_on(ctx, route, update).await;
    }
    match outcome {
        Ok(Ok(Started::Task(task))) => Ok(task_created(gateway, &owner, route, declared, task)),
        Ok(Ok(Started::Done(result))) => finished(route, Ok(result)),
        Ok(Ok(Started::InputRequired { .. })) => finished(
            route,
            Err(HostError::Call {
                connection: route.connection.clone(),
                message: "a 2025-11-25 upstream answered with a round of questions".into(),
            }),
        ),
        Ok(Err(error)) => finished(route, Err(error)),
        Err(_) => finished(
            route,
            Err(HostError::Call {
                connection: route.connection.clone(),
                message: "the held call ended without a result".into(),
            }),
        ),
    }
}

/// What a held call is started with.
struct HeldCall {
    host: Arc<Host<Relay>>,
    arguments: Option<rmcp::model::JsonObject>,
    /// Who it belongs to (`Backchannel::owner_key`).
    owner: String,
    /// What its caller can answer (and whether it takes tasks).
    declared: Declared,
}

/// The call context of an upstream call made for `ctx`, naming it by `token`: the caller's
/// `_meta` the configuration allows, and every log message asked for (the gateway passes on
/// those the downstream client asked for: its session's level, or its request's).
fn upstream_context(gateway: &Gateway, ctx: &Ctx, token: String) -> CallContext {
    forwarded_meta(ctx.meta(), &gateway.upstreams.config.meta_allow)
        .into_iter()
        .fold(CallContext::new(), |context, (key, value)| {
            context.with(key, value)
        })
        .with("progressToken", token)
        .with(LOG_LEVEL_META_KEY, "debug")
}

/// Get one prompt (`route.tool` names it upstream), its questions relayed as a tool call's.
async fn forward_prompt(
    mut context: PromptContext<'_, Gateway>,
    route: Route,
) -> Result<GetPromptResponse, ErrorData> {
    let ctx = Ctx::from_context_part(&mut context)?;
    let arguments = context.arguments.take();
    let prompt = route.tool.clone();
    let outcome = relayed(
        context.server,
        &ctx,
        &route,
        move |connection, call_context| {
            Box::pin(async move {
                connection
                    .get_prompt(&prompt, arguments, call_context)
                    .await
            })
        },
    )
    .await?;
    match outcome {
        Ok(mut result) => {
            result.result_type = Some(ResultType::COMPLETE);
            Ok(GetPromptResponse::Complete(result))
        }
        Err(HostError::Refused { error, .. }) => Err(error),
        Err(error) => Err(ErrorData::internal_error(
            format!(
                "the upstream server {:?} could not make the prompt {:?}: {error}",
                route.connection, route.tool
            ),
            None,
        )),
    }
}

/// Run one request upstream (`send` makes it on the connection, with the call context that
/// names this downstream call) with its questions, progress and log messages relayed to
/// `ctx`. Ends with the layer's `Suspend` when a question must go to the client first (on a
/// 2026-07-28 downstream), and with an error when the client cancelled.
async fn relayed<T>(
    gateway: &Gateway,
    ctx: &Ctx,
    route: &Route,
    send: impl for<'a> FnOnce(
        &'a backchannel_host::Connection<Relay>,
        &'a CallContext,
    ) -> BoxFuture<'a, Result<T, HostError>>,
) -> Result<Result<T, HostError>, ErrorData> {
    let host = gateway
        .upstreams
        .host_for(ctx.client_capabilities())
        .await?;
    let connection = host
        .connection(&route.connection)
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
    let relay::Open {
        token,
        mut suspended,
        mut updates,
        mut questions,
        registered: _registered,
    } = gateway.upstreams.relay.open(ctx.clone());
    let sessions = speaks_sessions(connection);
    let call_context = upstream_context(gateway, ctx, token);
    let mut call = send(connection, &call_context);
    let cancelled = ctx.cancellation().clone();
    let outcome = loop {
        tokio::select! {
            biased;
            suspend = suspended.wait() => {
                if sessions {
                    gather_questions(&mut questions).await;
                }
                return Err(suspend.into());
            }
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

impl Gateway {
    /// Send `request` about the downstream task `id` of the caller of `context` to the upstream
    /// that runs it (given the connection and the upstream's task id).
    async fn on_task<T>(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
        request: impl for<'a> FnOnce(
            &'a backchannel_host::Connection<Relay>,
            &'a str,
        ) -> BoxFuture<'a, Result<T, HostError>>,
    ) -> Result<T, ErrorData> {
        let owner = self.layer.owner_key(context);
        let route = self.upstreams.task_ids.open(&owner, id)?;
        let host = self.upstreams.declaring(route.declared).await?;
        let connection = host
            .connection(&route.connection)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        request(connection, &route.upstream)
            .await
            .map_err(|error| tasks::task_error(&route, error))
    }
}

impl Upstreams {
    /// The upstream connections for a caller with `capabilities`: declaring the questions the
    /// caller can answer (and the gateway relays), opened once per such set.
    async fn host_for(
        &self,
        capabilities: &ClientCapabilities,
    ) -> Result<Arc<Host<Relay>>, ErrorData> {
        self.declaring(answerable(capabilities)).await
    }

    /// The upstream connections declaring `wanted`, opened once per such set.
    async fn declaring(&self, wanted: Declared) -> Result<Arc<Host<Relay>>, ErrorData> {
        if wanted == relayed_capabilities() {
            return Ok(self.host.clone());
        }
        let mut narrower = self.narrower.lock().await;
        if let Some(host) = narrower.get(&wanted) {
            return Ok(host.clone());
        }
        let mut config = self.config.clone();
        for connection in config.connections.values_mut() {
            let declared = &mut connection.capabilities;
            declared.elicitation &= wanted.elicitation;
            declared.url_elicitation &= wanted.url_elicitation;
            declared.sampling &= wanted.sampling;
            declared.roots &= wanted.roots;
            declared.tasks &= wanted.tasks;
        }
        tracing::debug!(
            ?wanted,
            "opening the upstreams for clients that answer fewer kinds of question"
        );
        let host = open_upstreams(&config, &self.relay)
            .await
            .map_err(|error| {
                ErrorData::internal_error(
                    format!("the upstreams could not be reached: {error}"),
                    None,
                )
            })?;
        learn_tools(&host).await;
        let host = Arc::new(host);
        narrower.insert(wanted, host.clone());
        Ok(host)
    }
}

/// The kinds of question a client with `capabilities` can answer, as the gateway declares
/// them upstream.
fn answerable(capabilities: &ClientCapabilities) -> Declared {
    let elicitation = capabilities.elicitation.as_ref();
    Declared {
        // A client that declares `elicitation: {}` with neither mode answers forms.
        elicitation: elicitation.is_some_and(|e| e.form.is_some() || e.url.is_none()),
        url_elicitation: elicitation.is_some_and(|e| e.url.is_some()),
        sampling: capabilities.sampling.is_some(),
        roots: capabilities.roots.is_some(),
        tasks: capabilities.supports_tasks(),
    }
}

/// The entries of a caller's `_meta` that go upstream: the keys `allow` names, but never the
/// progress token or the log level (the gateway's own for its upstream call).
fn forwarded_meta(
    meta: &rmcp::model::RequestMetaObject,
    allow: &[String],
) -> Vec<(String, serde_json::Value)> {
    meta.iter()
        .filter(|(key, _)| {
            key.as_str() != "progressToken"
                && key.as_str() != LOG_LEVEL_META_KEY
                && allow.iter().any(|allowed| allowed == *key)
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// How long a run whose upstream speaks 2025-11-25 waits, after a question it cannot answer,
/// for the upstream's other questions of the same round, so they go to the client together
/// (a 2025 server sends each as a request of its own, back to back; a 2026 server's round
/// arrives whole).
const QUESTION_GATHER_QUIET: Duration = Duration::from_millis(50);
/// The longest a round is gathered.
const QUESTION_GATHER_MAX: Duration = Duration::from_millis(250);

/// Wait until no further question of the run came for [`QUESTION_GATHER_QUIET`] (at most
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
async fn pass_on(ctx: &Ctx, route: &Route, update: relay::Update) {
    match update {
        relay::Update::Progress(update) => {
            ctx.progress(update.progress, update.total, update.message.as_deref())
                .await;
        }
        relay::Update::Log(message) => {
            let logger = message.logger.as_deref().unwrap_or(&route.connection);
            ctx.log(message.level, logger, message.data).await;
        }
    }
}

impl ServerHandler for Gateway {
    backchannel::layer_hooks!(layer, without tasks);

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let mut current = self
            .on_task(&request.task_id, &context, |connection, upstream| {
                Box::pin(connection.get_task(upstream))
            })
            .await?;
        current.task.task.task_id = request.task_id;
        Ok(current)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let responses = request.input_responses;
        self.on_task(&request.task_id, &context, move |connection, upstream| {
            Box::pin(connection.update_task(upstream, responses))
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.on_task(&request.task_id, &context, |connection, upstream| {
            Box::pin(connection.cancel_task(upstream))
        })
        .await
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tools = self.router();
        self.layer.call_tool(&tools, self, request, context).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        Ok(rmcp::model::ListToolsResult::with_all_items(
            self.router().list_all(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.router().get(name).cloned()
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let upstreams = &self.upstreams;
        upstreams.catalog.list_prompts(&upstreams.host).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        // The layer drives it like a tool call (its questions relayed, on 2026-07-28 as
        // rounds), through a router of this one prompt.
        let Some((connection, upstream_name)) = self.upstreams.catalog.prompt_route(&request.name)
        else {
            return Err(ErrorData::invalid_params(
                format!("no prompt is named {:?}", request.name),
                None,
            ));
        };
        let route = Route {
            connection,
            tool: upstream_name,
        };
        let mut router = PromptRouter::<Gateway>::new();
        router.add_route(PromptRoute::new_dyn(
            Prompt::new(request.name.clone(), None::<String>, None),
            move |context| Box::pin(forward_prompt(context, route.clone())),
        ));
        self.layer.get_prompt(&router, self, request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let upstreams = &self.upstreams;
        upstreams.catalog.list_resources(&upstreams.host).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let upstreams = &self.upstreams;
        upstreams
            .catalog
            .list_resource_templates(&upstreams.host)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let upstreams = &self.upstreams;
        upstreams
            .catalog
            .read_resource(&upstreams.host, request)
            .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // This session hears the upstream's updates of the resource from the layer.
        self.layer.subscribe_resource(&request.uri, &context)?;
        let upstreams = &self.upstreams;
        upstreams.catalog.subscribe(&upstreams.host, request).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.layer.unsubscribe_resource(&request.uri, &context);
        let upstreams = &self.upstreams;
        upstreams
            .catalog
            .unsubscribe(&upstreams.host, request)
            .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let upstreams = &self.upstreams;
        upstreams.catalog.complete(&upstreams.host, request).await
    }

    fn get_info(&self) -> ServerConfig {
        let offered = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        ServerConfig::new(self.upstreams.catalog.capabilities(offered))
            .with_server_info(Implementation::new(
                "mcp-gateway",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "A gateway: these tools belong to the servers behind it, which may ask you \
                 questions through it while a call runs.",
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_is_name_equals_url() {
        let upstream: Upstream = "orders=http://127.0.0.1:8080/mcp".parse().unwrap();
        assert_eq!(upstream.name, "orders");
        assert_eq!(upstream.url, "http://127.0.0.1:8080/mcp");
        for bad in [
            "orders",
            "=http://x/mcp",
            "or ders=http://x/mcp",
            "orders=ftp://x",
        ] {
            assert!(bad.parse::<Upstream>().is_err(), "{bad}");
        }
    }

    #[test]
    fn only_the_allowed_meta_goes_upstream() {
        let mut meta = rmcp::model::RequestMetaObject::default();
        meta.insert("support_agent_id".into(), serde_json::json!("ana"));
        meta.insert("secret".into(), serde_json::json!("not for upstream"));
        meta.insert("progressToken".into(), serde_json::json!("client-7"));
        meta.insert(LOG_LEVEL_META_KEY.into(), serde_json::json!("error"));
        let allow: Vec<String> = ["support_agent_id", "progressToken", LOG_LEVEL_META_KEY]
            .map(String::from)
            .to_vec();
        assert_eq!(
            forwarded_meta(&meta, &allow),
            vec![("support_agent_id".to_owned(), serde_json::json!("ana"))]
        );
        assert!(forwarded_meta(&meta, &[]).is_empty());
        let config = quick_config_with_meta(
            &["a=http://127.0.0.1:1/mcp".parse().unwrap()],
            &BTreeMap::new(),
            &["support_agent_id".to_owned()],
        )
        .unwrap();
        assert!(
            config
                .meta_allow
                .iter()
                .any(|key| key == "support_agent_id")
        );
    }

    #[test]
    fn several_upstreams_are_prefixed_and_revisions_must_name_one() {
        let upstreams: Vec<Upstream> = ["a=http://127.0.0.1:1/mcp", "b=http://127.0.0.1:2/mcp"]
            .iter()
            .map(|text| text.parse().unwrap())
            .collect();
        let revisions = BTreeMap::from([("b".to_owned(), Revision::V2025_11_25)]);
        let config = quick_config(&upstreams, &revisions).unwrap();
        assert_eq!(config.connections["a"].tool_prefix.as_deref(), Some("a_"));
        assert_eq!(config.connections["a"].protocol, None);
        assert_eq!(
            config.connections["b"].protocol,
            Some(Revision::V2025_11_25)
        );
        let one = quick_config(&upstreams[..1], &BTreeMap::new()).unwrap();
        assert_eq!(one.connections["a"].tool_prefix, None);
        let unknown = BTreeMap::from([("c".to_owned(), Revision::V2025_11_25)]);
        assert!(matches!(
            quick_config(&upstreams, &unknown),
            Err(GatewayError::UnknownUpstream(name)) if name == "c"
        ));
    }
}
