//! The agent's core: one MCP connection to the order service through `backchannel_host`, the
//! rules planner, chat memory per conversation, guardrails, and the handler that turns the
//! server's questions and progress into events for the person.
//!
//! Rooms: `handler` (the server's questions and progress, as events for the person),
//! `connecting` (the connections, opened in the background), `model` (the model loop and its
//! streamed replies), `knowledge` (the support notes).

mod cluster;
pub use cluster::{CONNECTED_BEFORE_TAKING_OVER, LEASE, RENEW};
mod calls;
mod config;
mod connecting;
mod folders;
mod handler;
mod knowledge;
mod model;
mod servers;
mod tasks;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolResult, GetPromptRequestParams};
use serde_json::{Value, json};

use crate::events::{Event, Events};
use crate::rules::{self, Plan};
pub use config::{DeskConfig, DeskError, Knowledge, Server};
use connecting::{Connecting, host_config};
pub use handler::{DeskHandler, SIGN_IN_DEADLINE};
pub use model::EMPTY_REPLY;
pub use servers::{CalledByHand, ToolOffered};

/// The person's time for a question asked directly (holding the server's request open): the
/// configured time, or with tasks declared (where the configured time is for questions that
/// wait in tasks, and may be hours) at most two thirds of the server's ask timeout.
fn direct_deadline(config: &DeskConfig) -> Duration {
    match config.tasks {
        false => config.person_deadline,
        true => config
            .person_deadline
            .min(config.server_ask_timeout * 2 / 3),
    }
}

/// Whose pages a desk set up as `config` shows its sign-ins on.
fn sign_in_for(config: &DeskConfig) -> Result<handler::SignInFor, DeskError> {
    use handler::SignInFor;
    Ok(match (&config.people, &config.sign_in_person) {
        (None, _) => SignInFor::ThePerson,
        (Some(people), Some(person)) if people.contains(person) => {
            SignInFor::Person(person.clone())
        }
        (Some(_), Some(person)) => return Err(DeskError::UnknownSignInPerson(person.clone())),
        (Some(_), None) => SignInFor::Nobody,
    })
}

/// The stop button of each conversation's message in flight, and its run.
pub(crate) type Running = Mutex<HashMap<String, (u64, tokio_util::sync::CancellationToken)>>;

/// Stop the message in flight in `conversation` of `running`; false if there is none.
fn stop_in(running: &Running, conversation: &str) -> bool {
    match running
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

/// Words the desk refuses to discuss.
pub(crate) const BLOCKED: [&str; 3] = ["password", "credit card", "social security"];

/// The agent.
pub struct Desk {
    pub(crate) host: Connecting,
    pub(crate) events: Arc<Events>,
    pub(crate) config: DeskConfig,
    pub(crate) memory: Arc<model::Memory>,
    /// Conversations told that their oldest turns no longer fit the model's context.
    pub(crate) trimmed: Mutex<std::collections::HashSet<String>>,
    pub(crate) spent: Mutex<HashMap<String, u64>>,
    /// The stop button of each conversation's message in flight.
    pub(crate) running: Arc<Running>,
    pub(crate) next_run: std::sync::atomic::AtomicU64,
    /// The desk's database, if it has one.
    pub(crate) store: Option<crate::store::DeskStore>,
    /// The refund reasons the order service offered, once it was asked.
    pub(crate) kept_refund_reasons: std::sync::OnceLock<Vec<String>>,
}

/// One step of the model loop.
#[derive(Debug)]
pub(crate) enum Step {
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

pub(crate) fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// What a stopped message replies.
pub const STOPPED: &str = "Stopped. Nothing more will be done for that message.";

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
        // A question asked directly holds the server's request open, so the person's time
        // must end before the server stops waiting. With tasks a question waits in the task
        // instead, as long as the person's time (and the task) lasts; one a server asks
        // directly all the same gets the direct share.
        let direct = direct_deadline(&config);
        if !(direct < config.server_ask_timeout
            && config.server_ask_timeout < config.connection_timeout)
        {
            return Err(DeskError::Timeouts {
                person: config.person_deadline,
                server: config.server_ask_timeout,
                connection: config.connection_timeout,
            });
        }
        let host_config = host_config(&config)?;
        let events = Arc::new(Events::default());
        events.set_default_person(&config.agent_id);
        events.set_people(config.people.is_some());
        let store = match &config.database {
            Some(url) => {
                let store = crate::store::DeskStore::open(url).await?;
                let now = std::time::SystemTime::now();
                // A session goes on only for someone who may still sign in here (a person of
                // the people file, or the one implicit person of a desk without one).
                let sessions =
                    store
                        .sessions(now)
                        .await?
                        .into_iter()
                        .filter(|s| match &config.people {
                            Some(people) => people.contains(&s.person),
                            None => s.person == config.agent_id,
                        });
                events.restore(sessions.collect(), store.conversations().await?);
                cluster::join(&store, &events).await?;
                Some(store)
            }
            None => None,
        };
        let sign_in_for = sign_in_for(&config)?;
        let handler = Arc::new(DeskHandler {
            events: events.clone(),
            person_deadline: direct,
            model: config.model.clone(),
            sign_in_callback: config.sign_in_callback.clone(),
            sign_in_for,
            links: Default::default(),
            host: Default::default(),
        });
        let host = Connecting::open(host_config, handler);
        let running: Arc<Running> = Arc::default();
        // A Stop posted at another desk for a message this desk works on.
        let stops = running.clone();
        events.on_stop(move |conversation| stop_in(&stops, conversation));
        Ok(Desk {
            host,
            events,
            config,
            memory: Arc::default(),
            trimmed: Mutex::new(std::collections::HashSet::new()),
            spent: Mutex::new(HashMap::new()),
            running,
            next_run: std::sync::atomic::AtomicU64::new(0),
            kept_refund_reasons: std::sync::OnceLock::new(),
            store,
        })
    }

    /// Follow again, once the connections are open, the tasks the desk's database keeps
    /// waiting for the person (what the web UI's desk does at start, after a restart); then
    /// ask on the pages the questions the terminal on the same database keeps for its user
    /// (`tasks::Adopter::Pages`).
    pub async fn follow_kept_tasks(&self) -> Result<(), DeskError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let waits = store.waits().await?;
        self.adopt(tasks::Adopter::Pages, &waits);
        if store.is_shared() {
            // Among other desks: the tasks no live desk follows, on a lease.
            self.keep_lease();
        } else if !waits.is_empty() {
            let (ready, events) = (self.host.ready.clone(), self.events.clone());
            let speaker = self.speaker();
            tasks::resume_waits(
                waits,
                store.clone(),
                ready,
                events,
                self.config.tasks,
                speaker,
            );
        }
        Ok(())
    }

    /// The terminal's share of its person's inbox: questions that wait in tasks another desk
    /// (the web UI, on the same database) keeps are asked at the terminal too, and the first
    /// answer, here or there, is the one the task gets (see `desk/tasks.rs`).
    pub fn answer_from_terminal(&self) {
        self.adopt(tasks::Adopter::Terminal, &[]);
    }

    /// Ask here too, as `adopter`, the questions another desk on this database keeps
    /// (`followed`: the waits this desk follows already).
    fn adopt(&self, adopter: tasks::Adopter, followed: &[crate::store::Wait]) {
        let Some(store) = self.store.clone() else {
            return;
        };
        if !self.config.tasks {
            return;
        }
        let (ready, events) = (self.host.ready.clone(), self.events.clone());
        let person = self.config.agent_id.clone();
        let followed = followed.iter().map(|w| w.task_id.clone()).collect();
        tokio::spawn(async move {
            if let Ok(host) = connecting::opened(ready).await {
                tasks::adopt_waits(store, host, events, person, adopter, followed).await;
            }
        });
    }

    /// A new browser session for `person`, kept in the desk's database before its cookie is
    /// handed out; `Ok(None)` when every session has a page open.
    pub async fn start_session(
        &self,
        person: &str,
    ) -> Result<Option<String>, crate::store::StoreError> {
        let Some(new) = self.events.open_session(person) else {
            return Ok(None);
        };
        if let Some(store) = &self.store {
            for gone in &new.gone {
                store.forget_session(gone).await?;
            }
            store.save_session(&new.kept).await?;
        }
        Ok(Some(new.id))
    }

    /// End a browser session (signing out), in the database too.
    pub async fn end_session(&self, session: &str) -> Result<(), crate::store::StoreError> {
        let digest = self.events.end_session(session);
        match &self.store {
            Some(store) => store.forget_session(&digest).await,
            None => Ok(()),
        }
    }

    /// A new conversation for the browser session `session`, kept in the desk's database
    /// before its id is handed out.
    pub async fn start_conversation(
        &self,
        session: &str,
    ) -> Result<String, crate::store::StoreError> {
        let conversation = self.events.start_conversation(session);
        if let Some(store) = &self.store {
            let digest = crate::events::session_digest(session);
            let keep = crate::events::MAX_CONVERSATIONS_PER_SESSION;
            store
                .save_conversation(&conversation, &digest, keep)
                .await?;
        }
        Ok(conversation)
    }

    /// Who may sign in to the web UI (`None`: one implicit person).
    pub fn people(&self) -> Option<&crate::people::People> {
        self.config.people.as_ref()
    }

    /// Whether browsers reach the desk over `https:` (its sign-in callback's address says so):
    /// its cookies are then `Secure`.
    pub fn reached_over_https(&self) -> bool {
        self.config
            .sign_in_callback
            .as_deref()
            .is_some_and(|url| url.starts_with("https:"))
    }

    /// The person of a conversation without a session (the terminal's user, the desk's one
    /// implicit person).
    pub fn implicit_person(&self) -> &str {
        &self.config.agent_id
    }

    /// The person a conversation is for: its session's, else the desk's own (the terminal's
    /// user, the implicit person). The order service writes it to its audit line.
    pub fn person_of(&self, conversation: &str) -> String {
        self.events.person_for(conversation)
    }

    /// Where the desk looks for the order service.
    pub fn orders_url(&self) -> &str {
        &self.config.orders_url
    }

    /// Wait until the desk's connections are open; `Err` says why the order service is not
    /// connected (with its address), for the person to act on.
    pub async fn connected(&self) -> Result<(), String> {
        let host = self
            .host
            .host()
            .await
            .map_err(|why| self.not_connected(&why))?;
        if host.connection("orders").is_ok() {
            return Ok(());
        }
        let why = host
            .unavailable
            .get("orders")
            .map_or("not connected", String::as_str);
        Err(self.not_connected(why))
    }

    /// Why nothing can be done with the order service: `why`, and where the desk looked.
    fn not_connected(&self, why: &str) -> String {
        format!(
            "Not connected to order-service at {} ({why}). Is it running there? \
             --orders says where the desk looks.",
            self.config.orders_url
        )
    }

    /// The live events.
    pub fn events(&self) -> &Arc<Events> {
        &self.events
    }

    /// Answer one chat message.
    pub async fn chat(&self, conversation: &str, message: &str, order_id: Option<&str>) -> String {
        self.chat_run(conversation, message, order_id).await.0
    }

    /// [`Desk::chat`], with the number of its run, which the `done` event carries too: a page
    /// that gets the reply both ways shows it once.
    pub async fn chat_run(
        &self,
        conversation: &str,
        message: &str,
        order_id: Option<&str>,
    ) -> (String, u64) {
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
        self.recall_turns(conversation).await;
        let answered = self.answer(conversation, message, order_id);
        let reply = tokio::select! {
            reply = tracing::Instrument::instrument(answered, turn) => reply,
            () = stop.cancelled() => STOPPED.to_owned(),
        };
        {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if running.get(conversation).is_some_and(|(id, _)| *id == run) {
                running.remove(conversation);
            }
        }
        self.events.emit(
            conversation,
            Event::Done {
                text: crate::render::plain(&reply),
                html: crate::render::html(&reply),
                run,
            },
        );
        (reply, run)
    }

    /// Whether a message of `conversation` is being worked on.
    pub fn is_working(&self, conversation: &str) -> bool {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(conversation)
    }

    /// Stop the message in flight in a conversation, here or at another desk of the same
    /// database; false if there is none.
    pub async fn stop(&self, conversation: &str) -> bool {
        stop_in(&self.running, conversation) || self.events.stop_elsewhere(conversation).await
    }

    /// Whether the web UI serves `/metrics` ([`DeskConfig::metrics`]).
    pub fn serves_metrics(&self) -> bool {
        self.config.metrics
    }

    /// What the desk says first: who it is and what it can do.
    pub fn greeting(&self) -> String {
        crate::messages::greeting(self.config.model.is_some(), self.config.knowledge.is_some())
    }

    pub(crate) async fn answer(
        &self,
        conversation: &str,
        message: &str,
        order_id: Option<&str>,
    ) -> String {
        let lower = message.to_lowercase();
        if BLOCKED.iter().any(|word| lower.contains(word)) {
            return "I can only help with orders and deliveries. Please contact support directly for anything else.".into();
        }
        if let Some(model) = self.config.model.clone() {
            let (reply, note) = self
                .model_chat(&model, conversation, message, order_id)
                .await;
            // The model reads its own answers back, not the desk's notes to the person.
            self.remember(conversation, message, &reply).await;
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
        self.remember(conversation, message, &reply).await;
        reply
    }

    /// Remember a turn of `conversation`; on a database desks share, kept there before the
    /// reply goes out (the conversation's next message may go to another desk).
    pub(crate) async fn remember(&self, conversation: &str, message: &str, reply: &str) {
        model::remember(&self.memory, conversation, message, reply);
        if let Some(store) = self.store.as_ref().filter(|s| s.is_shared())
            && let Err(error) = store
                .save_turn(conversation, (message, reply), model::MEMORY_TURNS)
                .await
        {
            tracing::warn!(%error, "a conversation's turn could not be kept for the other desks");
        }
    }

    /// On a database desks share, the turns of `conversation` as the desks kept them (its
    /// last message may have gone to another desk).
    async fn recall_turns(&self, conversation: &str) {
        let Some(store) = self.store.as_ref().filter(|s| s.is_shared()) else {
            return;
        };
        match store.turns(conversation).await {
            Ok(turns) if !turns.is_empty() => {
                let mut memory = self.memory.lock().unwrap_or_else(|e| e.into_inner());
                memory.insert(conversation.to_owned(), turns.into_iter().collect());
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "a conversation's turns could not be read from the desks' database");
            }
        }
    }

    /// Who phrases a task's result when it comes: the model, when the desk has one.
    fn speaker(&self) -> Option<tasks::Speaker> {
        let model = self.config.model.clone()?;
        Some(tasks::Speaker {
            model,
            memory: self.memory.clone(),
            context_tokens: self.config.context_tokens,
        })
    }

    pub(crate) fn summarise(&self, tool: &str, result: &CallToolResult) -> String {
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

    /// The reasons for a refund the order service offers (`completion/complete` of the
    /// `draft_refund_email` prompt's `reason`): its list, written once there, asked once and
    /// kept. None while the desk's connections are still opening (never waited for: the page
    /// asks at load, and a connection may be waiting for that page's person to sign in) or the
    /// order service cannot be reached; the page asks again when it needs them, and takes the
    /// reason as typed meanwhile.
    pub async fn refund_reasons(&self) -> Vec<String> {
        if let Some(kept) = self.kept_refund_reasons.get() {
            return kept.clone();
        }
        let Some(Ok(host)) = self.host.opened_now() else {
            return Vec::new();
        };
        let Ok(orders) = host.connection("orders") else {
            return Vec::new();
        };
        match orders
            .complete_prompt_argument("draft_refund_email", "reason", "")
            .await
        {
            Ok(reasons) => self.kept_refund_reasons.get_or_init(|| reasons).clone(),
            Err(error) => {
                tracing::warn!(%error, "the order service offered no refund reasons");
                Vec::new()
            }
        }
    }

    /// Draft a refund email from the `draft_refund_email` prompt. Without a language model the
    /// desk fills a fixed template with the order's facts, following the prompt's limits.
    pub async fn refund_email(&self, order_id: &str, reason: &str) -> String {
        let host = self.host.host().await;
        let Some(orders) = host.as_ref().ok().and_then(|h| h.connection("orders").ok()) else {
            return self.not_connected("not connected");
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
        let status = order["status"].as_str().unwrap_or_default();
        if !crate::vocabulary::refundable(status) {
            return format!(
                "Order {order_id} is {status}: a refund e-mail is drafted only for an order that \
                 shipped, was delivered or was cancelled."
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Finding 3 of issue 71: with people, a sign-in of the desk's one connection goes to the
    /// person named for it, or to nobody; never to whoever opens it first.
    #[test]
    fn with_people_a_sign_in_is_for_the_person_named_or_nobody() {
        let file = std::env::temp_dir().join(format!("desk-sign-in-for-{}", std::process::id()));
        let _ = std::fs::remove_file(&file);
        crate::people::add(&file, "ana", "ana-password").unwrap();
        let people = crate::people::People::load(&file).unwrap();
        let with = |person: Option<&str>, people: Option<crate::people::People>| DeskConfig {
            people,
            sign_in_person: person.map(str::to_owned),
            ..DeskConfig::default()
        };
        assert_eq!(
            sign_in_for(&with(None, None)).unwrap(),
            handler::SignInFor::ThePerson
        );
        assert_eq!(
            sign_in_for(&with(None, Some(people.clone()))).unwrap(),
            handler::SignInFor::Nobody
        );
        assert_eq!(
            sign_in_for(&with(Some("ana"), Some(people.clone()))).unwrap(),
            handler::SignInFor::Person("ana".into())
        );
        assert!(matches!(
            sign_in_for(&with(Some("dee"), Some(people))),
            Err(DeskError::UnknownSignInPerson(name)) if name == "dee"
        ));
        let _ = std::fs::remove_file(&file);
    }
}
