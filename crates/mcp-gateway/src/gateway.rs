//! The gateway's server ([`Gateway`]): the upstreams' tools (each a route to `forward`), their
//! prompts, resources and completions (`catalog`), their tasks (`tasks`), and the tool list
//! made again when an upstream's changes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use backchannel::Backchannel;
use backchannel::Ctx;
use backchannel_host::{Host, HostConfig};
use rmcp::RoleServer;
use rmcp::handler::server::common::FromContextPart as _;
use rmcp::handler::server::prompt::PromptContext;
use rmcp::handler::server::router::prompt::{PromptRoute, PromptRouter};
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    Prompt, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, ServerHandler};

use backchannel::serve::ResourceServer;

use crate::catalog;
use crate::config::{GatewayOptions, LOG_LEVEL_META_KEY, answerable};
use crate::error::GatewayError;
use crate::forward::{Caller, Forward, Route, round_here};
use crate::hold;
use crate::hop::{HopAsk, HopRound, TaskAnswer, TaskMethod};
use crate::personal::Personal;
use crate::switchboard::Switchboard;
use crate::tasks;
use crate::upstream::{PersonalTools, Upstreams, learn_tools, open_upstreams};

/// A route's body that forwards: the call's `Ctx` and arguments taken from `$context` (a tool's
/// or a prompt's), the caller named by the gateway in `$context.$gateway` from the request in
/// `$context.$request`, then [`Forward`]'s `$what` to `$route`.
macro_rules! forwarded {
    ($context:ident, $gateway:ident, $request:ident, $route:ident, $what:ident) => {{
        let route = $route.clone();
        Box::pin(async move {
            let ctx = Ctx::from_context_part(&mut $context)?;
            let arguments = $context.arguments.take();
            let gateway = $context.$gateway;
            let caller = gateway.caller(&ctx, &$context.$request);
            let upstreams = &gateway.upstreams;
            let forward = Forward {
                upstreams,
                ctx,
                caller,
                route,
            };
            forward.$what(arguments).await
        })
    }};
}

/// The gateway's server: the upstreams' tools, each call forwarded (see the crate's docs).
/// Cheap to clone; every clone serves the same upstreams.
#[derive(Clone)]
pub struct Gateway {
    layer: Backchannel,
    /// The upstreams' tools; made again when one says its tools changed.
    tools: Arc<std::sync::RwLock<Arc<Tools>>>,
    upstreams: Arc<Upstreams>,
}

/// The tools offered: rmcp's router, and where each tool's calls go (for the pass-through).
pub(crate) struct Tools {
    pub(crate) router: ToolRouter<Gateway>,
    pub(crate) routes: HashMap<String, Route>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("host", &self.upstreams.host)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Connect to every upstream of `config` and gather their tools. Upstreams that cannot be
    /// reached are left out (logged); none reachable is an error.
    pub async fn open(config: &HostConfig) -> Result<Gateway, GatewayError> {
        Gateway::open_with(config, GatewayOptions::default()).await
    }

    /// [`Gateway::open`] with `options`: per-person upstreams (not connected until a person
    /// signs in; their tokens kept in the database), the state keys.
    pub async fn open_with(
        config: &HostConfig,
        options: GatewayOptions,
    ) -> Result<Gateway, GatewayError> {
        let config = &upstream_config(config, &options)?;
        // Per-person upstreams are reached with each person's tokens only.
        let mut shared = config.clone();
        shared
            .connections
            .retain(|name, _| !options.per_person.contains(name));
        let switchboard = Arc::new(Switchboard::default());
        let host = open_upstreams(&shared, &switchboard).await?;
        if host.connections().next().is_none() && options.per_person.is_empty() {
            let why = host
                .unavailable
                .iter()
                .map(|(name, why)| format!("{name}: {why}"))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(GatewayError::NoUpstream(why));
        }
        let prefixes: BTreeMap<String, String> = (config.connections.iter())
            .map(|(name, c)| (name.clone(), c.tool_prefix.clone().unwrap_or_default()))
            .collect();
        let personal = open_personal(&options).await?;
        let personal_tools = std::sync::RwLock::new(BTreeMap::new());
        let (router, offered) =
            tool_router(&host, &prefixes, &personal_tools, personal.as_deref()).await?;
        tracing::info!(
            upstreams = host.connections().count(),
            per_person = options.per_person.len(),
            tools = offered,
            "gateway ready"
        );
        let catalog = catalog::Catalog::new(&host, &prefixes);
        let mut layer = Backchannel::builder();
        let task_ids = match &options.state_keys {
            Some(keys) => tasks::TaskIds::with_keys(keys)?,
            None => tasks::TaskIds::new()?,
        };
        let hop = crate::hop::Hop::new(options.state_keys.as_ref())?;
        if let Some(keys) = options.state_keys {
            layer = layer.state_keys(keys);
        }
        let layer = layer.build()?;
        switchboard.announce_through(&layer);
        let (tools_changed, changes) = tokio::sync::mpsc::unbounded_channel();
        switchboard.on_tools_changed(tools_changed);
        let gateway = Gateway {
            layer,
            tools: Arc::new(std::sync::RwLock::new(Arc::new(router))),
            upstreams: Arc::new(Upstreams {
                host: Arc::new(host),
                prefixes,
                narrower: tokio::sync::Mutex::new(HashMap::new()),
                config: config.clone(),
                switchboard,
                catalog,
                task_ids,
                holds: hold::Holds::default(),
                hop,
                personal,
                personal_tools,
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

    /// The pages a person's browser opens to sign in to a per-person upstream, for a gateway
    /// that browsers reach at `base` (its origin, e.g. `http://127.0.0.1:8070`), with `front`
    /// the gateway's own sign-in (a browser proves who it is with one of its tokens): the
    /// pages (open to anyone: they check the browser themselves) and the sign-out route (to
    /// go behind the front door). `None` without per-person upstreams.
    pub fn sign_in_pages(
        &self,
        base: &str,
        front: Option<Arc<ResourceServer>>,
    ) -> Option<(axum::Router, axum::Router)> {
        let personal = self.upstreams.personal.clone()?;
        personal.serve_at(base, front);
        Some(crate::personal::routes(personal))
    }

    /// Tell the gateway where the other instances reach it (`http://host:port`, the origin of
    /// its [`HOP_PATH`](crate::HOP_PATH)), once, before it serves. With a key ring
    /// ([`GatewayOptions::state_keys`](crate::GatewayOptions)), a 2025-11-25 upstream call
    /// held between a 2026-07-28 client's rounds is then named after this instance, and a
    /// round that reaches another instance sharing the ring is passed here. `false` when an
    /// address was given already.
    pub fn advertise_at(&self, base: &str) -> bool {
        self.upstreams.hop.advertise(base)
    }

    /// The routes of a gateway among others, served beside the MCP endpoint, outside any
    /// sign-in: [`HOP_PATH`](crate::HOP_PATH), which other instances pass rounds through (an
    /// instance cannot sign in as the caller; the envelope, sealed under the shared ring,
    /// carries who the caller is), and `GET /healthz` for a balancer's checks (200 while the
    /// process serves; an upstream that cannot be reached is the calls' error, not this one's).
    pub fn cluster_routes(&self) -> axum::Router {
        let upstreams = self.upstreams.clone();
        axum::Router::new()
            .route("/healthz", axum::routing::get(|| async { "ok\n" }))
            .route(
                crate::hop::HOP_PATH,
                axum::routing::post(move |body: axum::body::Bytes| {
                    let upstreams = upstreams.clone();
                    async move { hop_round(&upstreams, &body).await }
                }),
            )
            .layer(axum::extract::DefaultBodyLimit::max(
                crate::hop::MAX_HOP_BYTES,
            ))
    }

    /// What takes a 2026-07-28 client's plain tool calls before the gateway's handler does
    /// (serve it with [`backchannel::serve::router_passing`]): the rounds of a call to a
    /// shared 2026-07-28 upstream, relayed without the handler's machinery when its client
    /// asked for neither progress nor log messages. The answers are the handler's.
    pub fn pass_through(&self) -> Arc<dyn backchannel::serve::PassThrough> {
        let tools = self.tools.clone();
        Arc::new(crate::pass::Pass {
            route: Box::new(move |name| {
                let tools = tools
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                tools.routes.get(name).cloned()
            }),
            upstreams: self.upstreams.clone(),
            layer: self.layer.clone(),
        })
    }

    /// The names of the tools offered, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tools()
            .router
            .list_all()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        names.sort();
        names
    }
}

impl Gateway {
    /// Who a call made by `rc` is for: its owner, and what its client can answer (a 2025-11-25
    /// client gets a task only when its request asked for one).
    fn caller(&self, ctx: &Ctx, rc: &RequestContext<RoleServer>) -> Caller {
        let mut declared = answerable(ctx.client_capabilities());
        declared.tasks &= self.layer.takes_tasks(rc);
        Caller {
            owner: self.layer.owner_key(rc),
            declared,
        }
    }

    /// The tools as they are now.
    fn tools(&self) -> Arc<Tools> {
        self.tools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// The host configuration a gateway opens: the gateway's own `_meta` keys allowed upstream
/// whatever the configuration says; each per-person upstream checked to be reached over HTTP.
fn upstream_config(
    config: &HostConfig,
    options: &GatewayOptions,
) -> Result<HostConfig, GatewayError> {
    let mut config = config.clone();
    for key in ["progressToken", LOG_LEVEL_META_KEY] {
        if !config.meta_allow.iter().any(|allowed| allowed == key) {
            config.meta_allow.push(key.to_owned());
        }
    }
    for name in &options.per_person {
        match config.connections.get(name).map(|c| &c.transport) {
            Some(backchannel_host::Transport::Http { .. }) => {}
            _ => return Err(GatewayError::NotPersonal(name.clone())),
        }
    }
    Ok(config)
}

/// The per-person upstreams of `options` and their people's tokens (the database opened and
/// migrated); `None` when there are none.
async fn open_personal(options: &GatewayOptions) -> Result<Option<Arc<Personal>>, GatewayError> {
    if options.per_person.is_empty() {
        return Ok(None);
    }
    let sealer = match &options.state_keys {
        Some(keys) => backchannel::Sealer::with_keys(keys)?,
        None => {
            tracing::warn!(
                "without --state-keys the people's upstream tokens are sealed under a key of \
                 this process's own: after a restart they are asked to sign in again"
            );
            backchannel::Sealer::random()?
        }
    };
    let database = match &options.database {
        Some(url) => url.clone(),
        None => sql_pool::file_url(std::path::Path::new(""), "mcp-gateway.sqlite").map_err(
            |(dir, error)| {
                GatewayError::Database(sqlx::Error::Configuration(
                    format!("cannot make {}: {error}", dir.display()).into(),
                ))
            },
        )?,
    };
    let vault = crate::personal::Vault::open(&database, sealer).await?;
    Ok(Some(Arc::new(Personal::new(
        options.per_person.clone(),
        vault,
    ))))
}

/// The upstreams' tools, each a route forwarding its calls; and how many there are. A
/// per-person upstream's tools are those learnt through a person's connection; until someone
/// has signed in, a tool `sign_in_to_NAME` stands in for them.
pub(crate) async fn tool_router(
    host: &Host<Switchboard>,
    prefixes: &BTreeMap<String, String>,
    personal_tools: &PersonalTools,
    personal: Option<&Personal>,
) -> Result<(Tools, usize), GatewayError> {
    let mut lists: Vec<(String, Vec<rmcp::model::Tool>)> = Vec::new();
    for connection in host.connections() {
        lists.push((connection.name().to_owned(), connection.tools().await?));
    }
    let learnt = personal_tools
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let mut router = ToolRouter::new();
    let mut routes = HashMap::new();
    for upstream in personal.map(Personal::upstreams).into_iter().flatten() {
        match learnt.get(upstream) {
            Some(tools) => lists.push((upstream.clone(), tools.clone())),
            None => router.add_route(sign_in_route(upstream)),
        }
    }
    let mut offered: BTreeMap<String, String> = BTreeMap::new();
    for (connection, tools) in lists {
        let prefix = prefixes.get(&connection).cloned().unwrap_or_default();
        for mut tool in tools {
            if !tool.name.starts_with(prefix.as_str()) {
                // Learnt through a person's connection, which does not prefix.
                tool.name = format!("{prefix}{}", tool.name).into();
            }
            let offered_as = tool.name.to_string();
            if let Some(first) = offered.insert(offered_as.clone(), connection.clone()) {
                return Err(GatewayError::Clash {
                    tool: offered_as,
                    first,
                    second: connection,
                });
            }
            let route = Route {
                connection: connection.clone(),
                tool: offered_as
                    .strip_prefix(prefix.as_str())
                    .unwrap_or(&offered_as)
                    .to_owned(),
            };
            routes.insert(offered_as.clone(), route.clone());
            router.add_route(ToolRoute::new_dyn(
                tool,
                move |mut context: ToolCallContext<'_, Gateway>| {
                    forwarded!(context, service, request_context, route, tool)
                },
            ));
        }
    }
    Ok((Tools { router, routes }, offered.len()))
}

/// The tool standing in for a per-person upstream whose tools nobody has seen yet: calling it
/// asks the person to sign in, after which the upstream's tools are offered.
fn sign_in_route(upstream: &str) -> ToolRoute<Gateway> {
    let mut schema = rmcp::model::JsonObject::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), rmcp::model::JsonObject::new().into());
    let tool = rmcp::model::Tool::new(
        format!("sign_in_to_{upstream}"),
        format!(
            "Sign in to the server {upstream:?} with your own account. Its tools are offered \
             once someone has signed in."
        ),
        Arc::new(schema),
    );
    let upstream = upstream.to_owned();
    ToolRoute::new_dyn(tool, move |mut context: ToolCallContext<'_, Gateway>| {
        let upstream = upstream.clone();
        Box::pin(async move {
            let ctx = Ctx::from_context_part(&mut context)?;
            let gateway = context.service;
            let caller = gateway.caller(&ctx, &context.request_context);
            let whose = (caller.owner.as_str(), caller.declared);
            match gateway.upstreams.for_call(&ctx, whose, &upstream).await {
                Ok(_) => {
                    // The upstream's tools were learnt through this person's connection: they
                    // are offered before this call answers.
                    offer_tools(&gateway.tools, &gateway.upstreams, &gateway.layer).await;
                    let signed_in =
                        format!("You are signed in to {upstream:?}; its tools are offered now.");
                    Ok(
                        rmcp::model::CallToolResult::success(vec![
                            rmcp::model::ContentBlock::text(signed_in),
                        ])
                        .into(),
                    )
                }
                Err(crate::personal::NotSignedIn::Tool(why)) => {
                    Ok(backchannel::error_text(why).into())
                }
                Err(crate::personal::NotSignedIn::Protocol(error)) => Err(error),
            }
        })
    })
}

/// Each time an upstream says its tools changed: list them all again, offer the new list,
/// and tell the downstream clients (a list that cannot be made, two upstreams offering one
/// name, keeps the old one). Ends with the gateway.
pub(crate) async fn offer_changed_tools(
    mut changes: tokio::sync::mpsc::UnboundedReceiver<()>,
    tools: std::sync::Weak<std::sync::RwLock<Arc<Tools>>>,
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
        let narrower: Vec<Arc<Host<Switchboard>>> =
            upstreams.narrower.lock().await.values().cloned().collect();
        for host in &narrower {
            learn_tools(host).await;
        }
        upstreams.relearn_personal_tools().await;
        offer_tools(&tools, &upstreams, &layer).await;
    }
}

/// Make the tool list again from what the upstreams offer, offer it, and tell the downstream
/// clients (a list that cannot be made, two upstreams offering one name, keeps the old one).
async fn offer_tools(
    tools: &std::sync::RwLock<Arc<Tools>>,
    upstreams: &Upstreams,
    layer: &Backchannel,
) {
    let personal = upstreams.personal.as_deref();
    let lists = (&upstreams.personal_tools, personal);
    match tool_router(&upstreams.host, &upstreams.prefixes, lists.0, lists.1).await {
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

/// A request about the downstream task `id` of `owner`, made of the upstream that runs it:
/// through this instance's upstream session, or through the instance whose session made the
/// task (see `hop`).
async fn task_request(
    upstreams: &Upstreams,
    owner: &str,
    id: &str,
    method: TaskMethod,
) -> TaskAnswer {
    let route = upstreams.task_ids.open(owner, id)?;
    let Some(instance) = route
        .instance
        .as_deref()
        .and_then(|i| upstreams.hop.other(i))
    else {
        return task_here(upstreams, owner, &route, method).await;
    };
    let ask = HopAsk::Task {
        id: id.to_owned(),
        method,
    };
    let round = HopRound::new(owner.to_owned(), ask)?;
    match upstreams.hop.relay::<TaskAnswer>(instance, &round).await {
        Ok(answer) => answer,
        Err(error) if error.not_sent() => {
            tracing::warn!(upstream = %route.connection, instance, %error, "a task's instance could not be reached");
            Err(ErrorData::internal_error(
                format!(
                    "the task lived in the upstream session of the gateway instance that started \
                     it, which cannot be asked ({error}); the task ended with that instance"
                ),
                None,
            ))
        }
        Err(error) => {
            tracing::warn!(upstream = %route.connection, instance, %error, "a task's instance gave no answer the gateway could verify");
            upstreams.hop.settled(&round).await;
            Err(ErrorData::internal_error(
                format!(
                    "the gateway instance that started the task gave no answer that could be \
                     verified ({error}); whether it acted on this request is not known, and \
                     nothing more will come of it: get the task again"
                ),
                None,
            ))
        }
    }
}

/// A request about the task `route` leads to, through this instance's upstream session.
async fn task_here(
    upstreams: &Upstreams,
    owner: &str,
    route: &tasks::TaskRoute,
    method: TaskMethod,
) -> TaskAnswer {
    let host = upstreams
        .for_task(owner, route.declared, &route.connection)
        .await?;
    let connection = host
        .connection(&route.connection)
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
    let upstream = route.upstream.as_str();
    let answer = match method {
        TaskMethod::Get => connection.get_task(upstream).await.map(Some),
        TaskMethod::Update(responses) => connection
            .update_task(upstream, responses)
            .await
            .map(|()| None),
        TaskMethod::Cancel => connection.cancel_task(upstream).await.map(|()| None),
    };
    answer.map_err(|error| tasks::task_error(route, error))
}

impl Gateway {
    /// `method` about the downstream task `id` of the caller of `context`.
    async fn on_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
        method: TaskMethod,
    ) -> TaskAnswer {
        let owner = self.layer.owner_key(context);
        task_request(&self.upstreams, &owner, id, method).await
    }
}

impl ServerHandler for Gateway {
    backchannel::layer_hooks!(layer, without tasks);

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let current = self
            .on_task(&request.task_id, &context, TaskMethod::Get)
            .await?;
        let Some(mut current) = current else {
            return Err(ErrorData::internal_error(
                "the task's state did not come back",
                None,
            ));
        };
        current.task.task.task_id = request.task_id;
        Ok(current)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let method = TaskMethod::Update(request.input_responses);
        self.on_task(&request.task_id, &context, method)
            .await
            .map(|_| ())
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.on_task(&request.task_id, &context, TaskMethod::Cancel)
            .await
            .map(|_| ())
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tools = self.tools();
        self.layer
            .call_tool(&tools.router, self, request, context)
            .await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        Ok(rmcp::model::ListToolsResult::with_all_items(
            self.tools().router.list_all(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tools().router.get(name).cloned()
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
            move |mut context: PromptContext<'_, Gateway>| {
                forwarded!(context, server, context, route, prompt)
            },
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

/// A round another instance passed here: opened under the ring, continued on the call held
/// here, answered as JSON. Anything not sealed under the ring, or stale, is refused unread.
async fn hop_round(upstreams: &Upstreams, body: &[u8]) -> axum::response::Response {
    use axum::response::IntoResponse;
    let Some(round) = std::str::from_utf8(body)
        .ok()
        .and_then(|sealed| upstreams.hop.open(sealed))
    else {
        return (
            http::StatusCode::FORBIDDEN,
            "not a round from an instance of this gateway",
        )
            .into_response();
    };
    let owner = round.owner.clone();
    let sealed = match &round.ask {
        HopAsk::Round {
            id,
            connection,
            responses,
        } => {
            let asked = (id.clone(), connection.clone(), responses.clone());
            let reply = round_here(upstreams, &owner, asked).await;
            upstreams.hop.seal_answer(&round, reply)
        }
        HopAsk::Task { id, method } => {
            // Answered through this instance's own session, never passed on again.
            let answer = match upstreams.task_ids.open(&owner, id) {
                Ok(route) => task_here(upstreams, &owner, &route, method.clone()).await,
                Err(error) => Err(error),
            };
            upstreams.hop.seal_answer(&round, answer)
        }
    };
    match sealed {
        Ok(sealed) => ([(http::header::CONTENT_TYPE, "text/plain")], sealed).into_response(),
        Err(error) => (http::StatusCode::INTERNAL_SERVER_ERROR, error).into_response(),
    }
}
