//! The agent's core: one MCP connection to the order service through `backchannel_host`, the
//! rules planner, chat memory per conversation, guardrails, and the handler that turns the
//! server's questions and progress into events for the person.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backchannel::Revision;
use backchannel_host::{
    CallContext, Host, HostConfig, HostHandler, LogMessage, SamplingAnswer, SamplingQuestion,
};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ElicitRequestParams, ElicitResult, ElicitationAction, GetPromptRequestParams,
    ProgressNotificationParam, RequestMetaObject,
};
use serde_json::{Value, json};

use crate::events::{Answer, Asked, Event, Events};
use crate::rules::{self, Plan};

/// Settings of the desk.
#[derive(Debug, Clone)]
pub struct DeskConfig {
    /// The order service's MCP endpoint.
    pub orders_url: String,
    /// The protocol revision to speak to it; `None` tries the newest, then 2025-11-25.
    pub protocol: Option<Revision>,
    /// How long the person has to answer a question (default 60 s).
    pub person_deadline: Duration,
    /// How long the order service waits for an answer (its ask timeout; by default
    /// [`backchannel::DEFAULT_ASK_TIMEOUT`]).
    pub server_ask_timeout: Duration,
    /// How long one request to the order service may take (default 120 s).
    pub connection_timeout: Duration,
    /// Who the agent is, sent as `_meta.support_agent_id`.
    pub agent_id: String,
    /// The model; `None` runs the offline rules planner.
    pub model: Option<crate::llm::Provider>,
    /// Tokens one conversation may spend with the model.
    pub token_budget: u64,
    /// The model's context, in tokens: what is sent (the rules, the tools, the conversation)
    /// and the reply's `max_tokens` must fit in it, so the oldest turns are left out first.
    pub context_tokens: u32,
    /// The knowledge base; `None` runs without it.
    pub knowledge: Option<Knowledge>,
    /// Where the authorization server sends the browser back to (the desk's
    /// `/oauth/callback`); `None` means the desk cannot sign in, and an order service that
    /// asks for it stays unavailable.
    pub sign_in_callback: Option<String>,
    /// Where the tokens of a sign-in are kept (a file only the user can read); `None` keeps
    /// them in memory until the desk stops.
    pub token_file: Option<std::path::PathBuf>,
    /// Serve Prometheus text at `/metrics` on the web UI (behind its Host checks): the host's
    /// `mcp_client_*` histograms, and in the demo the order service's too.
    pub metrics: bool,
}

/// Where the notes are and which filesystem server reads them.
#[derive(Debug, Clone)]
pub struct Knowledge {
    /// The server's command line; the folder is added as its last argument, and the roots
    /// name the same folder.
    pub server: Vec<String>,
    /// Current notes (absolute).
    pub current: std::path::PathBuf,
    /// Archived notes (absolute).
    pub archive: std::path::PathBuf,
    /// The filesystem servers are not started by the desk but reached through the order
    /// service's endpoint: an `mcp-gateway` in front of the order service and of the two
    /// servers, named `knowledge_base` and `knowledge_base_archive` (their tools prefixed with
    /// those names and `_`), serving [`Knowledge::current`] and [`Knowledge::archive`].
    pub through_orders: bool,
}

impl Knowledge {
    /// The official `@modelcontextprotocol/server-filesystem` through `npx`, over the notes in
    /// `support-kb/` and `support-kb-archive/` under `base`.
    pub fn npx(base: &std::path::Path) -> Knowledge {
        Knowledge {
            server: ["npx", "-y", "@modelcontextprotocol/server-filesystem"]
                .map(String::from)
                .to_vec(),
            current: base.join("support-kb"),
            archive: base.join("support-kb-archive"),
            through_orders: false,
        }
    }
}

/// The knowledge-base server's tools the desk uses (the model gets passages through
/// [`NOTES_TOOL`], never whole files).
const KB_TOOLS: [&str; 2] = ["read_text_file", "list_directory"];

/// The desk's own tool for the model: the passages of the notes that answer a question.
const NOTES_TOOL: &str = "search_support_notes";

impl Default for DeskConfig {
    fn default() -> Self {
        Self {
            orders_url: "http://127.0.0.1:8080/mcp".into(),
            protocol: None,
            person_deadline: Duration::from_secs(60),
            server_ask_timeout: backchannel::DEFAULT_ASK_TIMEOUT,
            connection_timeout: Duration::from_secs(120),
            agent_id: "support-agent".into(),
            model: None,
            token_budget: 20_000,
            context_tokens: 8192,
            knowledge: None,
            sign_in_callback: None,
            token_file: None,
            metrics: false,
        }
    }
}

/// Errors starting or using the desk.
#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    /// The timeouts are not ordered person < server < connection.
    #[error(
        "timeouts must nest: the person's {person:?} must be shorter than the order service's \
         {server:?}, which must be shorter than the connection's {connection:?}"
    )]
    Timeouts {
        /// The person's deadline.
        person: Duration,
        /// The server's ask timeout.
        server: Duration,
        /// The connection timeout.
        connection: Duration,
    },
    /// The host failed.
    #[error(transparent)]
    Host(#[from] backchannel_host::HostError),
}

/// Turns the order service's questions and progress into events for the person.
#[derive(Debug)]
pub struct DeskHandler {
    events: Arc<Events>,
    person_deadline: Duration,
    model: Option<crate::llm::Provider>,
    sign_in_callback: Option<String>,
}

/// How long a "Sign in" link waits for the person.
pub const SIGN_IN_DEADLINE: Duration = Duration::from_secs(10 * 60);

impl HostHandler for DeskHandler {
    /// Show the person a "Sign in to `connection`" link and wait for the browser to come back
    /// to the desk's callback.
    async fn authorize(
        &self,
        connection: &str,
        authorization_url: String,
    ) -> Result<String, String> {
        let Some(callback) = &self.sign_in_callback else {
            return Err(format!(
                "{connection} asks to sign in, and this desk has no callback address to sign in with"
            ));
        };
        let query = self
            .events
            .sign_in(connection, &authorization_url, SIGN_IN_DEADLINE)
            .await?;
        Ok(format!("{callback}?{query}"))
    }

    async fn elicit(
        &self,
        _connection: &str,
        request: ElicitRequestParams,
        meta: RequestMetaObject,
        caller: Option<rmcp::model::ProgressToken>,
    ) -> ElicitResult {
        let message = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            // URL questions are not shown in this desk.
            _ => return ElicitResult::new(ElicitationAction::Decline),
        };
        // The host names the call's conversation; a server may name it too.
        let conversation = match caller {
            Some(rmcp::model::ProgressToken(rmcp::model::NumberOrString::String(c))) => {
                Some(c.to_string())
            }
            _ => meta
                .get("conversationId")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        let Some(conversation) = conversation else {
            return ElicitResult::new(ElicitationAction::Decline);
        };
        match self
            .events
            .ask(&conversation, &message, self.person_deadline)
            .await
        {
            Asked::Answered(Answer::Yes { note }) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"confirmed": true, "note": note})),
            Asked::Answered(Answer::No) => ElicitResult::new(ElicitationAction::Decline),
            // Nobody to show it to, or nobody answered: nobody said no.
            Asked::NobodyWatching | Asked::Expired => ElicitResult::new(ElicitationAction::Cancel),
        }
    }

    async fn sample(
        &self,
        connection: &str,
        question: SamplingQuestion,
        caller: Option<rmcp::model::ProgressToken>,
    ) -> Result<SamplingAnswer, ErrorData> {
        use crate::llm::Message;
        let Some(model) = &self.model else {
            return Err(ErrorData::invalid_request(
                "this desk has no model to sample with",
                None,
            ));
        };
        let Some(rmcp::model::ProgressToken(rmcp::model::NumberOrString::String(conversation))) =
            caller
        else {
            return Err(ErrorData::invalid_request(
                "no conversation to ask for approval",
                None,
            ));
        };
        let messages = Message::sampled(&question);
        let shown: Vec<&str> = question.messages.iter().map(|t| t.text.as_str()).collect();
        let ask = format!("{connection} asks the model: {}", shown.join(" / "));
        match self
            .events
            .approve(&conversation, &ask, self.person_deadline)
            .await
        {
            Asked::Answered(Answer::Yes { .. }) => {}
            Asked::Answered(Answer::No) | Asked::NobodyWatching => {
                return Err(ErrorData::new(
                    rmcp::model::ErrorCode(-1),
                    "the person declined the request for the model",
                    None,
                ));
            }
            Asked::Expired => {
                return Err(ErrorData::new(
                    rmcp::model::ErrorCode(-1),
                    "nobody approved the request for the model in time",
                    None,
                ));
            }
        }
        let turn = model
            .complete(&messages, &[])
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(SamplingAnswer {
            text: turn.message.content.unwrap_or_default(),
            model: "support-agent-model".into(),
        })
    }

    fn on_progress(&self, _connection: &str, progress: ProgressNotificationParam) {
        let rmcp::model::NumberOrString::String(conversation) = &progress.progress_token.0 else {
            return;
        };
        let fraction = match progress.total {
            Some(total) if total > 0.0 => progress.progress / total,
            _ => progress.progress,
        };
        let percent = (fraction * 100.0).round().clamp(0.0, 100.0) as u32;
        self.events.emit(conversation, Event::Progress { percent });
    }

    fn on_log(&self, connection: &str, message: LogMessage) {
        tracing::info!(connection, level = ?message.level, "{}", message.data);
    }
}

fn add_knowledge(host: &mut HostConfig, knowledge: &Knowledge) {
    use backchannel_host::{ConnectionConfig, Declared, Transport};
    let Some((command, args)) = knowledge.server.split_first() else {
        return;
    };
    if knowledge.through_orders {
        return;
    }
    for (name, dir, prefix) in [
        ("knowledge-base", &knowledge.current, "knowledge_base_"),
        (
            "knowledge-base-archive",
            &knowledge.archive,
            "knowledge_base_archive_",
        ),
    ] {
        host.trusted_folders.push(dir.clone());
        host.connections.insert(
            name.to_owned(),
            ConnectionConfig {
                transport: Transport::Stdio {
                    command: command.clone(),
                    // The folder is given as an argument too: the server asks for roots only
                    // after the handshake, and until the answer is applied its list of
                    // allowed folders would be empty, so a first call could be refused.
                    args: args
                        .iter()
                        .cloned()
                        .chain([dir.display().to_string()])
                        .collect(),
                    cwd: None,
                    env: Default::default(),
                },
                request_timeout_secs: 30,
                roots: vec![dir.clone()],
                protocol: Some(Revision::V2025_11_25),
                tool_prefix: Some(prefix.to_owned()),
                tools: Some(KB_TOOLS.map(String::from).to_vec()),
                capabilities: Declared {
                    elicitation: false,
                    url_elicitation: false,
                    sampling: false,
                    roots: true,
                    tasks: false,
                },
                auth: None,
            },
        );
    }
}

/// The host, opened in the background: a connection may wait for the person to sign in, and
/// the page that shows the link must be up by then. Whatever needs a connection waits here.
struct Connecting {
    ready: tokio::sync::watch::Receiver<Option<Opened>>,
    task: tokio::task::JoinHandle<()>,
}

/// The host, or why it could not be opened.
type Opened = Result<Arc<Host<DeskHandler>>, String>;

impl Connecting {
    fn open(config: HostConfig, handler: Arc<DeskHandler>) -> Connecting {
        let (done, ready) = tokio::sync::watch::channel(None);
        let task = tokio::spawn(async move {
            let opened = match Host::open(&config, handler).await {
                Ok(host) => {
                    if let Some(reason) = host.unavailable.get("orders") {
                        tracing::warn!("the order service is not reachable: {reason}");
                    }
                    for name in ["knowledge-base", "knowledge-base-archive"] {
                        if let Some(reason) = host.unavailable.get(name) {
                            // Said once, here; the desk works without its notes.
                            tracing::warn!("starting without the {name} notes: {reason}");
                        }
                    }
                    Ok(Arc::new(host))
                }
                Err(error) => {
                    tracing::error!(%error, "the desk's connections could not be opened");
                    Err(error.to_string())
                }
            };
            done.send_replace(Some(opened));
        });
        Connecting { ready, task }
    }

    /// The host, once its connections are open (or have failed).
    async fn host(&self) -> Opened {
        let mut ready = self.ready.clone();
        match ready.wait_for(Option::is_some).await {
            Ok(opened) => opened.clone().unwrap_or_else(|| Err("not opened".into())),
            Err(_) => Err("the desk stopped before its connections opened".into()),
        }
    }

    async fn close(self) {
        self.task.abort();
        let opened = self.ready.borrow().clone();
        drop(self.ready);
        if let Some(Ok(host)) = opened
            && let Ok(host) = Arc::try_unwrap(host)
        {
            host.close().await;
        }
    }
}

/// Words the desk refuses to discuss.
const BLOCKED: [&str; 3] = ["password", "credit card", "social security"];

/// The agent.
pub struct Desk {
    host: Connecting,
    events: Arc<Events>,
    config: DeskConfig,
    memory: Mutex<HashMap<String, VecDeque<(String, String)>>>,
    /// Conversations told that their oldest turns no longer fit the model's context.
    trimmed: Mutex<std::collections::HashSet<String>>,
    spent: Mutex<HashMap<String, u64>>,
    /// The stop button of each conversation's message in flight.
    running: Mutex<HashMap<String, (u64, tokio_util::sync::CancellationToken)>>,
    next_run: std::sync::atomic::AtomicU64,
}

/// The most times one message may ask the model.
const MAX_MODEL_CALLS: usize = 8;

/// One step of the model loop.
#[derive(Debug)]
enum Step {
    /// Ask the model, with the conversation so far and the tools.
    AskModel,
    /// The model answered: words for the person, or tool calls.
    ModelOutput(crate::llm::Turn),
    /// A tool the model called has returned.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// What the tool said.
        text: String,
    },
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// What a stopped message replies.
pub const STOPPED: &str = "Stopped. Nothing more will be done for that message.";

/// The rules the model works by (the reference's guidelines, in our words).
const SYSTEM: &str = "You are a support agent for an online shop. Answer with the tools you have; never guess an order or customer ID, a status, a total or a date. Order IDs look like ORD-10001 and customer IDs like CUST-42: if the person's input is not in that form, ask. Amounts are euros with two decimals and the € sign. When a tool reports an error, pass it on together with what the person can do instead. Keep answers to a few sentences. For tools that ask the person to confirm (such as cancel_order), call the tool and let it ask; do not ask in the chat first. If nothing you can look up covers the question, offer to escalate to a team lead; never invent policy.";

impl std::fmt::Debug for Desk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desk")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn describe(order: &Value) -> String {
    let id = order["orderId"].as_str().unwrap_or("?");
    let status = order["status"].as_str().unwrap_or("?");
    let customer = order["customer"]["name"].as_str().unwrap_or("?");
    let mut text = format!(
        "{id} is {status}: {customer}, {}",
        crate::messages::money(&order["totalAmount"])
    );
    if let Some(shipment) = order.get("shipment").filter(|s| s.is_object()) {
        text.push_str(&format!(
            ". {} {}, due {}",
            shipment["carrier"].as_str().unwrap_or("?"),
            shipment["trackingNumber"].as_str().unwrap_or("?"),
            shipment["estimatedDelivery"].as_str().unwrap_or("?")
        ));
    }
    text + "."
}

impl Desk {
    /// Connect to the order service.
    pub async fn start(config: DeskConfig) -> Result<Desk, DeskError> {
        if config.metrics {
            // From the first connection on, so its tool listing is counted too.
            backchannel::metrics::enable();
        }
        if !(config.person_deadline < config.server_ask_timeout
            && config.server_ask_timeout < config.connection_timeout)
        {
            return Err(DeskError::Timeouts {
                person: config.person_deadline,
                server: config.server_ask_timeout,
                connection: config.connection_timeout,
            });
        }
        use backchannel_host::{ConnectionConfig, Declared, Transport};
        let orders = ConnectionConfig {
            transport: Transport::Http {
                url: config.orders_url.clone(),
                headers: Default::default(),
            },
            request_timeout_secs: config.connection_timeout.as_secs(),
            roots: Vec::new(),
            protocol: config.protocol,
            tool_prefix: None,
            tools: None,
            capabilities: Declared {
                elicitation: true,
                url_elicitation: false,
                // With no model there is nothing to sample with, so sampling is not declared.
                sampling: config.model.is_some(),
                roots: false,
                tasks: false,
            },
            auth: config
                .sign_in_callback
                .as_ref()
                .map(|callback| backchannel_host::AuthConfig {
                    redirect_uri: Some(callback.clone()),
                    token_file: config.token_file.clone(),
                    ..Default::default()
                }),
        };
        let mut host_config = HostConfig {
            client_name: "support-agent".into(),
            trusted_folders: Vec::new(),
            meta_allow: vec!["progressToken".into(), "support_agent_id".into()],
            connections: [("orders".to_owned(), orders)].into_iter().collect(),
        };
        if let Some(knowledge) = &config.knowledge {
            add_knowledge(&mut host_config, knowledge);
        }
        let events = Arc::new(Events::default());
        let handler = Arc::new(DeskHandler {
            events: events.clone(),
            person_deadline: config.person_deadline,
            model: config.model.clone(),
            sign_in_callback: config.sign_in_callback.clone(),
        });
        let host = Connecting::open(host_config, handler);
        Ok(Desk {
            host,
            events,
            config,
            memory: Mutex::new(HashMap::new()),
            trimmed: Mutex::new(std::collections::HashSet::new()),
            spent: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
            next_run: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The live events.
    pub fn events(&self) -> &Arc<Events> {
        &self.events
    }

    async fn call(
        &self,
        conversation: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, String> {
        let host = self.host.host().await?;
        let orders = host.connection("orders").map_err(|_| {
            "Not connected to order-service. Is it running on port 8080?".to_owned()
        })?;
        let context = CallContext::new()
            .with("progressToken", conversation)
            .with("support_agent_id", self.config.agent_id.as_str());
        orders
            .call_tool(tool, arguments.as_object().cloned(), &context)
            .await
            .map_err(|e| e.to_string())
    }

    /// Call a tool by the name the model saw: knowledge-base tools carry their server's prefix.
    async fn call_routed(
        &self,
        conversation: &str,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, String> {
        if name == NOTES_TOOL {
            let question = arguments["question"].as_str().unwrap_or_default();
            let archive = arguments["archive"].as_bool().unwrap_or(false);
            return Ok(CallToolResult::success(vec![
                rmcp::model::ContentBlock::text(self.search_notes(question, archive).await),
            ]));
        }
        // Through the orders endpoint (a gateway), the notes' tools are its tools.
        let spawned = self
            .config
            .knowledge
            .as_ref()
            .is_some_and(|k| !k.through_orders);
        let knowledge_connections = [
            ("knowledge-base-archive", "knowledge_base_archive_"),
            ("knowledge-base", "knowledge_base_"),
        ];
        for (connection, prefix) in knowledge_connections.into_iter().filter(|_| spawned) {
            if let Some(tool) = name.strip_prefix(prefix) {
                let host = self.host.host().await?;
                let connection = host.connection(connection).map_err(|e| e.to_string())?;
                return connection
                    .call_tool(tool, arguments.as_object().cloned(), &CallContext::new())
                    .await
                    .map_err(|e| e.to_string());
            }
        }
        self.call(conversation, name, arguments).await
    }

    /// Answer one chat message.
    pub async fn chat(&self, conversation: &str, message: &str, order_id: Option<&str>) -> String {
        let stop = tokio_util::sync::CancellationToken::new();
        let run = self
            .next_run
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(conversation.to_owned(), (run, stop.clone()));
        // Stopping drops the work: the host's request is dropped with it, and rmcp tells the
        // server the request was cancelled, so a long tool stops there too.
        // The turn's span (OpenTelemetry's agent conventions): the model's calls and the tool
        // calls, with the servers' spans under them, are one trace from here.
        let turn = tracing::info_span!(
            target: "agent::telemetry",
            "invoke_agent",
            otel.name = "invoke_agent support-desk",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = "support-desk",
            gen_ai.conversation.id = conversation,
        );
        let answered = self.answer(conversation, message, order_id);
        let reply = tokio::select! {
            reply = tracing::Instrument::instrument(answered, turn) => reply,
            () = stop.cancelled() => STOPPED.to_owned(),
        };
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.get(conversation).is_some_and(|(id, _)| *id == run) {
            running.remove(conversation);
        }
        reply
    }

    /// Stop the message in flight in a conversation; false if there is none.
    pub fn stop(&self, conversation: &str) -> bool {
        match self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(conversation)
        {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Whether the web UI serves `/metrics` ([`DeskConfig::metrics`]).
    pub fn serves_metrics(&self) -> bool {
        self.config.metrics
    }

    /// What the desk says first: who it is and what it can do.
    pub fn greeting(&self) -> String {
        crate::messages::greeting(self.config.model.is_some(), self.config.knowledge.is_some())
    }

    async fn answer(&self, conversation: &str, message: &str, order_id: Option<&str>) -> String {
        let lower = message.to_lowercase();
        if BLOCKED.iter().any(|word| lower.contains(word)) {
            return "I can only help with orders and deliveries. Please contact support directly for anything else.".into();
        }
        if let Some(model) = self.config.model.clone() {
            let (reply, note) = self
                .model_chat(&model, conversation, message, order_id)
                .await;
            // The model reads its own answers back, not the desk's notes to the person.
            self.remember(conversation, message, &reply);
            return match note {
                Some(note) => format!("{reply}\n\n{note}"),
                None => reply,
            };
        }
        let reply = match rules::plan(message, order_id) {
            Plan::Say(text) => text,
            Plan::RefundEmail { order_id, reason } => self.refund_email(&order_id, &reason).await,
            Plan::Policy {
                note,
                archive,
                question,
            } => self.policy(note, archive, &question).await,
            Plan::Tool { name, arguments } => {
                match self.call(conversation, name, arguments).await {
                    Err(error) => format!("Something went wrong: {error}"),
                    Ok(result) if result.is_error == Some(true) => text_of(&result),
                    Ok(result) => self.summarise(name, &result),
                }
            }
        };
        self.remember(conversation, message, &reply);
        reply
    }

    fn remember(&self, conversation: &str, message: &str, reply: &str) {
        let mut memory = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        let turns = memory.entry(conversation.to_owned()).or_default();
        turns.push_back((message.to_owned(), reply.to_owned()));
        while turns.len() > 20 {
            turns.pop_front();
        }
    }

    /// The tool-calling loop: the model sees the order service's tools, calls them through the
    /// host (questions and progress reach the person as events), and answers in words. Returns
    /// the answer and, the first time this conversation no longer fits the model's context, a
    /// note for the person.
    async fn model_chat(
        &self,
        model: &crate::llm::Provider,
        conversation: &str,
        message: &str,
        order_id: Option<&str>,
    ) -> (String, Option<String>) {
        let spent = |this: &Self| {
            *this
                .spent
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(conversation)
                .unwrap_or(&0)
        };
        if spent(self) >= self.config.token_budget {
            tracing::warn!(
                conversation,
                spent = spent(self),
                budget = self.config.token_budget,
                "token budget spent"
            );
            return (
                "This conversation has reached its limit. Please start a new one.".into(),
                None,
            );
        }
        let host = match self.host.host().await {
            Ok(host) if host.connection("orders").is_ok() => host,
            _ => {
                return (
                    "Not connected to order-service. Is it running on port 8080?".into(),
                    None,
                );
            }
        };
        let tools = self.model_tools(&host).await;
        let reserved = model.generation().max_tokens as usize
            + estimated_tokens(&serde_json::to_string(&tools).unwrap_or_default());
        let (messages, left_out) = self.opening_messages(conversation, message, order_id, reserved);
        let note = (left_out > 0
            && self
                .trimmed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(conversation.to_owned()))
        .then(|| {
            tracing::info!(
                conversation,
                left_out,
                "the oldest turns no longer fit the model's context"
            );
            crate::messages::context_trimmed(left_out)
        });
        let reply = self.model_loop(model, conversation, messages, &tools).await;
        (reply, note)
    }

    /// Ask the model, make the tool calls it asks for, and ask again, until it answers in words.
    async fn model_loop(
        &self,
        model: &crate::llm::Provider,
        conversation: &str,
        mut messages: Vec<crate::llm::Message>,
        tools: &[crate::llm::ToolSpec],
    ) -> String {
        use crate::llm::{LlmError, Message};
        // The loop takes typed steps from a queue: asking the model, what the model said, what
        // a tool returned. Questions and progress travel as events to the person meanwhile, and
        // a stop drops the whole loop (`Desk::chat`).
        let mut steps = VecDeque::from([Step::AskModel]);
        let mut asked = 0;
        // What the model wrote beside its tool calls, in order.
        let mut said: Vec<String> = Vec::new();
        while let Some(step) = steps.pop_front() {
            match step {
                Step::AskModel => {
                    if asked == MAX_MODEL_CALLS {
                        break;
                    }
                    asked += 1;
                    let shown = StreamedReply::new(&self.events, conversation, &said);
                    let span = model_span(model);
                    let on_text = |piece: &str| shown.push(piece);
                    let streamed = model.stream(&messages, tools, &on_text);
                    let streamed = tracing::Instrument::instrument(streamed, span.clone()).await;
                    match &streamed {
                        Ok(turn) => {
                            span.record("gen_ai.usage.input_tokens", turn.usage.input);
                            span.record("gen_ai.usage.output_tokens", turn.usage.output);
                        }
                        Err(_) => {
                            span.record("error.type", "_OTHER");
                            span.record("otel.status_code", "ERROR");
                        }
                    }
                    match streamed {
                        Ok(turn) => steps.push_back(Step::ModelOutput(turn)),
                        Err(LlmError::Http(error)) if error.is_timeout() => {
                            return "The model did not answer in time, so the request was stopped. Ask again in a moment.".into();
                        }
                        Err(error) => {
                            tracing::warn!(%error, "model call failed");
                            return model_failure(model, &error);
                        }
                    }
                }
                Step::ModelOutput(turn) => {
                    *self
                        .spent
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .entry(conversation.to_owned())
                        .or_default() += turn.usage.total();
                    let text = turn.message.content.as_deref().map(str::trim).unwrap_or("");
                    let calls = turn.message.tool_calls.clone();
                    if calls.is_empty() {
                        if text.is_empty() && said.is_empty() {
                            tracing::warn!(conversation, "the model gave an empty reply");
                            return EMPTY_REPLY.into();
                        }
                        return joined(&said, text);
                    }
                    // Words beside tool calls ("Let me look that up") are the person's too:
                    // they lead the final answer rather than being lost.
                    if !text.is_empty() {
                        said.push(text.to_owned());
                    }
                    messages.push(turn.message);
                    for call in calls {
                        let text = match checked_call(tools, &call) {
                            Ok(arguments) => match self
                                .call_routed(conversation, &call.function.name, arguments)
                                .await
                            {
                                Ok(result) => text_of(&result),
                                Err(error) => format!("error: {error}"),
                            },
                            Err(refusal) => {
                                tracing::info!(
                                    conversation,
                                    tool = call.function.name,
                                    %refusal,
                                    "a tool call of the model was not made"
                                );
                                format!("error: {refusal}")
                            }
                        };
                        steps.push_back(Step::ToolResult {
                            call_id: call.id,
                            text,
                        });
                    }
                    steps.push_back(Step::AskModel);
                }
                Step::ToolResult { call_id, text } => {
                    messages.push(Message::tool_result(&call_id, text))
                }
            }
        }
        "I could not finish that in a reasonable number of steps. Please ask again more simply."
            .into()
    }

    /// The tools the model may call: the notes search (with a knowledge base) and every tool
    /// of the connected servers but the knowledge base's own.
    async fn model_tools(&self, host: &Host<DeskHandler>) -> Vec<crate::llm::ToolSpec> {
        use crate::llm::ToolSpec;
        let mut tools: Vec<ToolSpec> = Vec::new();
        if self.config.knowledge.is_some() {
            tools.push(ToolSpec::function(
                NOTES_TOOL,
                "Find the passages of the support notes (refunds and returns, carriers, when to \
             escalate) that answer a question. Set archive to true for the rules in force \
             before 2024.",
                json!({
                    "type": "object",
                    "properties": {
                        "question": {"type": "string", "description": "The policy question"},
                        "archive": {"type": "boolean", "description": "Rules before 2024"}
                    },
                    "required": ["question"]
                }),
            ));
        }
        for connection in host.connections() {
            if connection.name().starts_with("knowledge-base") {
                continue;
            }
            match connection.tools().await {
                Ok(list) => tools.extend(list.iter().map(|t| {
                    ToolSpec::function(
                        &t.name,
                        t.description.as_deref().unwrap_or(""),
                        serde_json::to_value(&*t.input_schema).unwrap_or_default(),
                    )
                })),
                Err(error) => {
                    tracing::warn!(connection = connection.name(), %error, "no tools from this server")
                }
            }
        }
        tools
    }

    /// The conversation so far as the model reads it: the system rules, the remembered
    /// turns, and the person's new message (naming the order on screen, if any). Turns that
    /// would not fit the model's context (with the tools and the reply's tokens) are left out,
    /// oldest first, and the rules say so; the count left out is returned.
    fn opening_messages(
        &self,
        conversation: &str,
        message: &str,
        order_id: Option<&str>,
        reserved: usize,
    ) -> (Vec<crate::llm::Message>, usize) {
        use crate::llm::Message;
        let user = match order_id {
            Some(order) => format!(
                "{message}\n\n(The person is looking at order {order}; \"this order\" means it.)"
            ),
            None => message.to_owned(),
        };
        let remembered: Vec<(String, String)> = self
            .memory
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(conversation)
            .map(|turns| turns.iter().cloned().collect())
            .unwrap_or_default();
        let budget = (self.config.context_tokens as usize).saturating_sub(reserved);
        let mut used =
            estimated_tokens(SYSTEM) + estimated_tokens(TRIMMED_NOTE) + estimated_tokens(&user);
        // Newest first, while they fit.
        let mut kept = 0;
        for (asked, answered) in remembered.iter().rev() {
            let cost = estimated_tokens(asked) + estimated_tokens(answered);
            if used + cost > budget {
                break;
            }
            used += cost;
            kept += 1;
        }
        let left_out = remembered.len() - kept;
        let system = if left_out > 0 {
            format!("{SYSTEM}\n\n{TRIMMED_NOTE}")
        } else {
            SYSTEM.to_owned()
        };
        let mut messages = vec![Message::text("system", system)];
        for (asked, answered) in &remembered[left_out..] {
            messages.push(Message::text("user", asked.clone()));
            messages.push(Message::text("assistant", answered.clone()));
        }
        messages.push(Message::text("user", user));
        (messages, left_out)
    }

    /// Where the current (or archived) notes are read: the connection, the prefix of its
    /// filesystem tools, and the folder.
    fn notes_at(&self, archive: bool) -> Option<(&'static str, &'static str, std::path::PathBuf)> {
        let knowledge = self.config.knowledge.as_ref()?;
        Some(match (knowledge.through_orders, archive) {
            (false, false) => ("knowledge-base", "", knowledge.current.clone()),
            (false, true) => ("knowledge-base-archive", "", knowledge.archive.clone()),
            (true, false) => ("orders", "knowledge_base_", knowledge.current.clone()),
            (true, true) => (
                "orders",
                "knowledge_base_archive_",
                knowledge.archive.clone(),
            ),
        })
    }

    /// Read every note of the current (or archived) knowledge base.
    async fn read_notes(&self, archive: bool) -> Result<Vec<(String, String)>, String> {
        let Some((name, prefix, dir)) = self.notes_at(archive) else {
            return Err("the knowledge base is not configured".into());
        };
        let host = self.host.host().await?;
        let connection = host
            .connection(name)
            .map_err(|_| "the knowledge base is not available right now".to_owned())?;
        let mut arguments = serde_json::Map::new();
        arguments.insert("path".into(), json!(dir));
        let listing = connection
            .call_tool(
                &format!("{prefix}list_directory"),
                Some(arguments),
                &CallContext::new(),
            )
            .await
            .map_err(|e| e.to_string())?;
        let mut notes = Vec::new();
        for line in text_of(&listing).lines() {
            let Some(file) = line.strip_prefix("[FILE] ").filter(|f| f.ends_with(".md")) else {
                continue;
            };
            let mut arguments = serde_json::Map::new();
            arguments.insert("path".into(), json!(dir.join(file)));
            let result = connection
                .call_tool(
                    &format!("{prefix}read_text_file"),
                    Some(arguments),
                    &CallContext::new(),
                )
                .await
                .map_err(|e| e.to_string())?;
            if result.is_error != Some(true) {
                notes.push((file.to_owned(), text_of(&result)));
            }
        }
        Ok(notes)
    }

    /// The passages of the notes that answer `question`, for the model: at most three, each
    /// naming its note.
    async fn search_notes(&self, question: &str, archive: bool) -> String {
        let notes = match self.read_notes(archive).await {
            Ok(notes) => notes,
            Err(error) => return format!("error: {error}"),
        };
        let borrowed: Vec<(&str, &str)> = notes
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        let found = crate::notes::ranked(&borrowed, question, 3);
        if found.is_empty() {
            return "No passage of the notes answers that; offer to escalate to a team lead."
                .into();
        }
        found
            .iter()
            .map(|(note, passage)| format!("[{note}] {}", passage.markdown()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Answer a policy question from one note: the passage that answers it best (a list item
    /// or paragraph, under its heading), naming the note; the note's opening if none does.
    async fn policy(&self, note: &str, archive: bool, question: &str) -> String {
        let Some((name, prefix, dir)) = self.notes_at(archive) else {
            return "The knowledge base is not configured, so I cannot answer policy questions."
                .into();
        };
        let host = self.host.host().await;
        let Some(connection) = host.as_ref().ok().and_then(|h| h.connection(name).ok()) else {
            return "The knowledge base is not available right now, so I cannot answer policy questions.".into();
        };
        let mut arguments = serde_json::Map::new();
        arguments.insert("path".into(), json!(dir.join(note)));
        let text = match connection
            .call_tool(
                &format!("{prefix}read_text_file"),
                Some(arguments),
                &CallContext::new(),
            )
            .await
        {
            Ok(result) if result.is_error != Some(true) => text_of(&result),
            Ok(result) => return format!("I could not read the notes: {}", text_of(&result)),
            Err(error) => return format!("I could not read the notes: {error}"),
        };
        let source = if archive {
            "the archived notes (rules in force until 31 December 2023)"
        } else {
            "the current notes"
        };
        match crate::notes::best_passage(&text, question) {
            Some(passage) => format!("From {source}, {note}: {}", passage.markdown()),
            None => {
                let opening = crate::notes::passages(&text)
                    .into_iter()
                    .next()
                    .map(|p| p.markdown())
                    .unwrap_or_default();
                format!(
                    "{source} ({note}) do not answer that directly. They begin: {opening}",
                    source = capitalised(source)
                )
            }
        }
    }

    fn summarise(&self, tool: &str, result: &CallToolResult) -> String {
        let json: Option<Value> = result
            .structured_content
            .clone()
            .or_else(|| serde_json::from_str(&text_of(result)).ok());
        match (tool, json) {
            ("get_order", Some(order)) => describe(&order),
            ("get_customer_orders" | "get_orders_by_status", Some(Value::Array(orders))) => {
                if orders.is_empty() {
                    return "There are no such orders.".into();
                }
                let shown: Vec<String> = orders.iter().take(10).map(describe).collect();
                let more = orders.len().saturating_sub(shown.len());
                let mut text = format!("{} orders:\n{}", orders.len(), shown.join("\n"));
                if more > 0 {
                    text.push_str(&format!("\n…and {more} more."));
                }
                text
            }
            _ => text_of(result),
        }
    }

    /// Draft a refund email from the `draft_refund_email` prompt. Without a language model the
    /// desk fills a fixed template with the order's facts, following the prompt's limits.
    pub async fn refund_email(&self, order_id: &str, reason: &str) -> String {
        let host = self.host.host().await;
        let Some(orders) = host.as_ref().ok().and_then(|h| h.connection("orders").ok()) else {
            return "Not connected to order-service. Is it running on port 8080?".into();
        };
        let mut arguments = serde_json::Map::new();
        arguments.insert("orderId".into(), json!(order_id));
        arguments.insert("reason".into(), json!(reason));
        if let Err(error) = orders
            .client()
            .get_prompt(GetPromptRequestParams::new("draft_refund_email").with_arguments(arguments))
            .await
        {
            return format!("I could not draft that email: {error}");
        }
        let order = match self
            .call("refund-email", "get_order", json!({"orderId": order_id}))
            .await
        {
            Ok(result) if result.is_error != Some(true) => {
                result.structured_content.unwrap_or_default()
            }
            Ok(result) => return text_of(&result),
            Err(error) => return error,
        };
        crate::messages::refund_email(
            order["customer"]["name"].as_str().unwrap_or("customer"),
            order_id,
            &crate::messages::money(&order["totalAmount"]),
            reason,
        )
    }

    /// Orders in one status, as the order service lists them (for the UI's tabs).
    pub async fn orders(&self, status: &str) -> Result<Value, String> {
        let result = self
            .call(
                "orders-tab",
                "get_orders_by_status",
                json!({"status": status}),
            )
            .await?;
        if result.is_error == Some(true) {
            return Err(text_of(&result));
        }
        serde_json::from_str(&text_of(&result)).map_err(|e| e.to_string())
    }

    /// Close the connections.
    pub async fn close(self) {
        self.host.close().await;
    }
}

/// What the person reads when the model cannot answer: what went wrong, naming the endpoint
/// and the model where that is what is wrong.
/// A reply as the person watches it grow: what the model said beside earlier tool calls, then
/// this turn's words as they stream, sent as [`Event::Reply`] at most every
/// [`REPLY_EVERY`].
struct StreamedReply<'a> {
    events: &'a Events,
    conversation: &'a str,
    state: std::sync::Mutex<(String, Option<std::time::Instant>)>,
}

/// How often a growing reply is sent to the page and the terminal, at most.
const REPLY_EVERY: Duration = Duration::from_millis(40);

impl<'a> StreamedReply<'a> {
    fn new(events: &'a Events, conversation: &'a str, said: &[String]) -> Self {
        let mut text = said.join("\n\n");
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        StreamedReply {
            events,
            conversation,
            state: std::sync::Mutex::new((text, None)),
        }
    }

    fn push(&self, piece: &str) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (text, last) = &mut *state;
        text.push_str(piece);
        if last.is_some_and(|at| at.elapsed() < REPLY_EVERY) {
            return;
        }
        *last = Some(std::time::Instant::now());
        self.events.emit(
            self.conversation,
            Event::Reply {
                text: text.clone(),
                html: crate::render::html(text),
            },
        );
    }
}

/// What the model reads when older turns were left out.
const TRIMMED_NOTE: &str = "(The oldest turns of this conversation were left out to fit your context; if the person refers to them, ask.)";

/// Tokens a text takes, estimated without the model's tokenizer: four bytes a token (about
/// right for English and JSON), and a few for the message around it.
fn estimated_tokens(text: &str) -> usize {
    text.len().div_ceil(4) + 4
}

/// What the person reads when the model answers with neither words nor tool calls.
pub const EMPTY_REPLY: &str =
    "The model gave an empty answer. Please ask again, perhaps in other words.";

/// The final answer: what the model said beside its tool calls, then its last words (not
/// repeated when a small model echoes itself).
fn joined(said: &[String], last: &str) -> String {
    let mut parts: Vec<&str> = said.iter().map(String::as_str).collect();
    if !last.is_empty() && parts.last() != Some(&last) {
        parts.push(last);
    }
    parts.join("\n\n")
}

/// Why a tool call of the model is not made.
#[derive(Debug, thiserror::Error, PartialEq)]
enum CallRefusal {
    /// The name is not one the model was offered.
    #[error("there is no tool named '{name}'; the tools are: {offered}")]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// The names offered, comma-separated.
        offered: String,
    },
    /// The arguments do not parse as JSON.
    #[error("the arguments of {tool} are not JSON ({reason}); send a JSON object")]
    NotJson {
        /// The tool called.
        tool: String,
        /// The parser's message.
        reason: String,
    },
    /// The arguments are JSON but not an object.
    #[error("the arguments of {tool} must be a JSON object, not {found}")]
    NotAnObject {
        /// The tool called.
        tool: String,
        /// What kind of JSON value came.
        found: &'static str,
    },
}

/// A tool call the model made, checked before anything is done: the name must be one offered
/// and the arguments a JSON object (an empty string counts as no arguments). Nothing a model
/// invents reaches a server.
fn checked_call(
    offered: &[crate::llm::ToolSpec],
    call: &crate::llm::ToolCall,
) -> Result<Value, CallRefusal> {
    let name = &call.function.name;
    if !offered.iter().any(|tool| tool.name() == name) {
        return Err(CallRefusal::UnknownTool {
            name: name.clone(),
            offered: offered
                .iter()
                .map(crate::llm::ToolSpec::name)
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let raw = call.function.arguments.trim();
    if raw.is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(arguments @ Value::Object(_)) => Ok(arguments),
        Ok(other) => Err(CallRefusal::NotAnObject {
            tool: name.clone(),
            found: match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                _ => "an array",
            },
        }),
        Err(error) => Err(CallRefusal::NotJson {
            tool: name.clone(),
            reason: error.to_string(),
        }),
    }
}

fn model_failure(model: &crate::llm::Provider, error: &crate::llm::LlmError) -> String {
    use crate::llm::LlmError;
    let (url, name) = model.describe();
    match error {
        LlmError::Http(error) if error.is_connect() => {
            format!("The model at {url} does not answer. Is it running?")
        }
        LlmError::Status {
            status: 401 | 403, ..
        } => format!("The model at {url} refused the API key. Check SUPPORT_AGENT_API_KEY."),
        LlmError::Status { status: 404, .. } => format!(
            "The model at {url} does not know a model named '{name}' (or the URL is not its API)."
        ),
        error if error.is_busy() => {
            format!("The model at {url} is busy or failing. Ask again in a moment.")
        }
        _ => "Something went wrong. Please try again later.".into(),
    }
}

/// The span of one call of the model (OpenTelemetry's `gen_ai` conventions: `chat {model}`,
/// the provider and model asked for; the tokens are recorded when the reply is in).
fn model_span(model: &crate::llm::Provider) -> tracing::Span {
    let (base_url, name) = model.describe();
    tracing::info_span!(
        target: "agent::telemetry",
        "chat",
        otel.name = format!("chat {name}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = match model {
            crate::llm::Provider::OpenAi(_) => "openai",
            crate::llm::Provider::Anthropic(_) => "anthropic",
        },
        gen_ai.request.model = name,
        server.address = base_url,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}
