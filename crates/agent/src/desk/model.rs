//! The model loop: the rules the model works by, the messages it is given (trimmed to its
//! context), the tools it may call (checked before they run), and its reply streamed as the
//! person watches it grow.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use backchannel_host::Host;
use serde_json::{Value, json};

use super::connecting::NOTES_TOOL;
use super::{Desk, DeskHandler, Step, text_of};
use crate::events::{Event, Events};

/// The most times one message may ask the model.
pub(crate) const MAX_MODEL_CALLS: usize = 8;

/// The rules the model works by (the reference's guidelines, in our words).
pub(crate) const SYSTEM: &str = "You are a support agent for an online shop. Answer with the tools you have; never guess an order or customer ID, a status, a total or a date. Order IDs look like ORD-10001 and customer IDs like CUST-42: if the person's input is not in that form, ask. Amounts are euros with two decimals and the € sign. When a tool reports an error, pass it on together with what the person can do instead. Keep answers to a few sentences. For tools that ask the person to confirm (such as cancel_order), call the tool and let it ask; do not ask in the chat first. If nothing you can look up covers the question, offer to escalate to a team lead; never invent policy.";

impl Desk {
    /// The tool-calling loop: the model sees the order service's tools, calls them through the
    /// host (questions and progress reach the person as events), and answers in words. Returns
    /// the answer and, the first time this conversation no longer fits the model's context, a
    /// note for the person.
    pub(crate) async fn model_chat(
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
                return (self.not_connected("not connected"), None);
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
    pub(crate) async fn model_loop(
        &self,
        model: &crate::llm::Provider,
        conversation: &str,
        mut messages: Vec<crate::llm::Message>,
        tools: &[crate::llm::ToolSpec],
    ) -> String {
        use crate::llm::Message;
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
                    match self
                        .ask_model(model, conversation, &messages, tools, &said)
                        .await
                    {
                        Ok(turn) => steps.push_back(Step::ModelOutput(turn)),
                        Err(reply) => return reply,
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
                        let text = self.tool_call(conversation, tools, &call).await;
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

    /// One turn of the model, its words shown as they stream; `Err` is the reply to give the
    /// person when the model cannot answer.
    async fn ask_model(
        &self,
        model: &crate::llm::Provider,
        conversation: &str,
        messages: &[crate::llm::Message],
        tools: &[crate::llm::ToolSpec],
        said: &[String],
    ) -> Result<crate::llm::Turn, String> {
        use crate::llm::LlmError;
        let shown = StreamedReply::new(&self.events, conversation, said);
        let span = model_span(model);
        let on_text = |piece: &str| shown.push(piece);
        let streamed = model.stream(messages, tools, &on_text);
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
            Ok(turn) => Ok(turn),
            Err(LlmError::Http(error)) if error.is_timeout() => Err(
                "The model did not answer in time, so the request was stopped. Ask again in a moment."
                    .into(),
            ),
            Err(error) => {
                tracing::warn!(%error, "model call failed");
                Err(model_failure(model, &error))
            }
        }
    }

    /// Make one tool call the model asked for, if it may be made; what the model is told.
    async fn tool_call(
        &self,
        conversation: &str,
        tools: &[crate::llm::ToolSpec],
        call: &crate::llm::ToolCall,
    ) -> String {
        match checked_call(tools, call) {
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
        }
    }

    /// The tools the model may call: the notes search (with a knowledge base) and every tool
    /// of the connected servers but the knowledge base's own.
    pub(crate) async fn model_tools(&self, host: &Host<DeskHandler>) -> Vec<crate::llm::ToolSpec> {
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

    /// The conversation so far as the model reads it (see [`opening_messages`]).
    pub(crate) fn opening_messages(
        &self,
        conversation: &str,
        message: &str,
        order_id: Option<&str>,
        reserved: usize,
    ) -> (Vec<crate::llm::Message>, usize) {
        let context = self.config.context_tokens;
        opening_messages(
            &self.memory,
            context,
            conversation,
            message,
            order_id,
            reserved,
        )
    }
}

/// What the desk remembers of each conversation: (the person's message, the reply), oldest
/// first, at most [`MEMORY_TURNS`] of them.
pub(crate) type Memory = std::sync::Mutex<HashMap<String, VecDeque<(String, String)>>>;

/// The most turns remembered per conversation.
pub(crate) const MEMORY_TURNS: usize = 20;

/// Remember a turn of `conversation`.
pub(crate) fn remember(memory: &Memory, conversation: &str, message: &str, reply: &str) {
    let mut memory = memory.lock().unwrap_or_else(|e| e.into_inner());
    let turns = memory.entry(conversation.to_owned()).or_default();
    turns.push_back((message.to_owned(), reply.to_owned()));
    while turns.len() > MEMORY_TURNS {
        turns.pop_front();
    }
}

/// The conversation so far as the model reads it: the system rules, the remembered turns,
/// and the person's new message (naming the order on screen, if any). Turns that would not
/// fit the model's context (`context` tokens, less `reserved` for the tools and the reply)
/// are left out, oldest first, and the rules say so; the count left out is returned.
pub(crate) fn opening_messages(
    memory: &Memory,
    context: u32,
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
    let remembered: Vec<(String, String)> = memory
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(conversation)
        .map(|turns| turns.iter().cloned().collect())
        .unwrap_or_default();
    let budget = (context as usize).saturating_sub(reserved);
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

/// A reply as the person watches it grow: what the model said beside earlier tool calls, then
/// this turn's words as they stream, sent as [`Event::Reply`] at most every
/// [`REPLY_EVERY`].
pub(crate) struct StreamedReply<'a> {
    events: &'a Events,
    conversation: &'a str,
    state: std::sync::Mutex<(String, Option<std::time::Instant>)>,
}

/// How often a growing reply is sent to the page and the terminal, at most.
pub(crate) const REPLY_EVERY: Duration = Duration::from_millis(40);

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
pub(crate) const TRIMMED_NOTE: &str = "(The oldest turns of this conversation were left out to fit your context; if the person refers to them, ask.)";

/// Tokens a text takes, estimated without the model's tokenizer: four bytes a token (about
/// right for English and JSON), and a few for the message around it.
pub(crate) fn estimated_tokens(text: &str) -> usize {
    text.len().div_ceil(4) + 4
}

/// What the person reads when the model answers with neither words nor tool calls.
pub const EMPTY_REPLY: &str =
    "The model gave an empty answer. Please ask again, perhaps in other words.";

/// The final answer: what the model said beside its tool calls, then its last words (not
/// repeated when a small model echoes itself).
pub(crate) fn joined(said: &[String], last: &str) -> String {
    let mut parts: Vec<&str> = said.iter().map(String::as_str).collect();
    if !last.is_empty() && parts.last() != Some(&last) {
        parts.push(last);
    }
    parts.join("\n\n")
}

/// Why a tool call of the model is not made.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum CallRefusal {
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
pub(crate) fn checked_call(
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

/// What the person reads when the model cannot answer: what went wrong, naming the endpoint
/// and the model where that is what is wrong.
pub(crate) fn model_failure(model: &crate::llm::Provider, error: &crate::llm::LlmError) -> String {
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
pub(crate) fn model_span(model: &crate::llm::Provider) -> tracing::Span {
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
