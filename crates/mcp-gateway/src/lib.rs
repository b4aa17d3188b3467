//! `mcp-gateway`: one MCP endpoint in front of other MCP servers (upstreams), served on both
//! protocol revisions whatever revision each upstream speaks. A 2025-11-25 client can use a
//! 2026-07-28-only server and the reverse: the upstream's questions (form and URL elicitation,
//! sampling) are asked of the downstream client in the downstream's revision, and the
//! upstream's progress reaches the downstream call.
//!
//! The gateway is a [`Gateway`] server on `backchannel`'s layer, whose tools and prompts are
//! the upstreams'; each call is forwarded through `backchannel-host`, which speaks the
//! upstream's revision. The upstream runs each call once, and the client answers its questions
//! as the upstream asked them (module `forward`):
//!
//! - a 2025-11-25 client is asked at once, on its session, inside the upstream's call;
//! - a 2026-07-28 client talking to a 2026-07-28 upstream gets the upstream's own rounds (its
//!   keys; its `requestState` sealed inside the layer's), one upstream request per round, the
//!   gateway keeping nothing between them;
//! - a 2026-07-28 client talking to a 2025-11-25 upstream: the upstream's call is held open
//!   between the client's rounds, bounded in time and number (module `hold`).
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
mod forward;
mod hold;
mod relay;
mod tasks;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use backchannel::{Backchannel, Revision};
use backchannel_host::{ConnectionConfig, Declared, Host, HostConfig, HostError, Transport};
use futures::future::BoxFuture;
use rmcp::RoleServer;
use rmcp::handler::server::router::prompt::{PromptRoute, PromptRouter};
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::model::{
    CallToolResponse, CancelTaskParams, ClientCapabilities, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, LoggingLevel,
    PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
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
    #[error("no key for the gateway's task ids: {0}")]
    Random(#[from] backchannel::SealError),
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
    holds: hold::Holds<forward::HeldOutcome>,
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
    connection.has_sessions()
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
                Box::pin(forward::forward(context, route))
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
    /// The upstream connections declaring `wanted` (the questions a caller can answer, see
    /// `answerable`), opened once per such set.
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
            move |context| Box::pin(forward::forward_prompt(context, route.clone())),
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
