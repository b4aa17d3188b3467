//! Model providers: [`OpenAiCompatible`] speaks the chat-completions API with tool calling
//! (OpenAI, Ollama, llama.cpp, vLLM), [`AnthropicMessages`] Anthropic's Messages API; both
//! whole or streamed. The loop that uses them lives in `desk::model`.
//!
//! Rooms: this module holds the vocabulary (messages, tool calls, turns, usage, errors, the
//! key, the generation settings); `provider` the two providers' structs and [`Provider`];
//! `endpoint` their `Wire`, one completion whole or streamed, sent with its retries; `sse`
//! reads an event stream; `openai` and `anthropic` speak each provider's wire.

mod anthropic;
mod endpoint;
mod openai;
mod provider;
mod sse;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use endpoint::{ATTEMPTS, MAX_RETRY_AFTER};
pub use provider::{AnthropicMessages, OpenAiCompatible, Provider};
pub use sse::{MAX_EVENT_BYTES, OnText};

/// One message of a chat-completions conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text (absent on an assistant turn that only calls tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Tool calls of an assistant turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A message with a role and text.
    pub fn text(role: &str, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A server's sampling request as a conversation: its system prompt, then its turns.
    pub fn sampled(question: &backchannel_host::SamplingQuestion) -> Vec<Message> {
        let system = question
            .system_prompt
            .iter()
            .map(|system| Message::text("system", system.clone()));
        let turns = question.messages.iter().map(|turn| {
            let role = if turn.assistant { "assistant" } else { "user" };
            Message::text(role, turn.text.clone())
        });
        system.chain(turns).collect()
    }

    /// The result of a tool call.
    pub fn tool_result(call_id: &str, content: impl Into<String>) -> Self {
        Self {
            role: "tool".into(),
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Its id, echoed by the tool result.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// The function and its JSON arguments.
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".into()
}

/// The function part of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Tool name as offered.
    pub name: String,
    /// Arguments as a JSON string.
    pub arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionSpec,
}

#[derive(Debug, Clone, Serialize)]
struct FunctionSpec {
    name: String,
    description: String,
    parameters: Value,
}

impl ToolSpec {
    /// The function's name, as the model calls it.
    pub fn name(&self) -> &str {
        &self.function.name
    }

    /// A function tool.
    pub fn function(name: &str, description: &str, parameters: Value) -> Self {
        Self {
            kind: "function",
            function: FunctionSpec {
                name: name.into(),
                description: description.into(),
                parameters,
            },
        }
    }
}

/// The model's turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The assistant message (text and/or tool calls).
    pub message: Message,
    /// The tokens the call used, as far as the server said.
    pub usage: Usage,
}

impl Turn {
    /// The assistant's turn: its words (none when empty) and its tool calls.
    pub(crate) fn assistant(text: String, tool_calls: Vec<ToolCall>, usage: Usage) -> Turn {
        Turn {
            message: Message {
                role: "assistant".into(),
                content: (!text.is_empty()).then_some(text),
                tool_calls,
                tool_call_id: None,
            },
            usage,
        }
    }
}

/// Tokens one model call used (0 where the server did not say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens read: the prompt, the tools, the conversation.
    pub input: u64,
    /// Tokens written: the reply.
    pub output: u64,
}

impl Usage {
    /// Both together, what a conversation's budget counts.
    pub fn total(self) -> u64 {
        self.input + self.output
    }
}

/// Errors talking to a model.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The HTTP request failed or timed out.
    #[error("the model could not be reached: {0}")]
    Http(#[from] reqwest::Error),
    /// The HTTP client could not be built (TLS set-up).
    #[error("cannot build the HTTP client for the model: {0}")]
    Client(reqwest::Error),
    /// The server answered with an error status.
    #[error("the model answered {status}: {body}")]
    Status {
        /// HTTP status.
        status: u16,
        /// Response body (truncated).
        body: String,
    },
    /// The answer had no choice.
    #[error("the model's answer had no message")]
    Empty,
    /// The answer was not the API's shape.
    #[error("the model's answer could not be read: {0}")]
    Unreadable(String),
    /// A streamed answer broke off or said it failed.
    #[error("the model's streamed answer failed: {0}")]
    Stream(String),
}

/// An API key: sent in a header, never printed (`{:?}` shows `Secret(<redacted>)`).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a key.
    pub fn new(key: impl Into<String>) -> Self {
        Secret(key.into())
    }

    /// The key itself, for the one header that carries it.
    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// How much the model may write and how freely: sent with every request, on both providers.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The most tokens one reply may take (both APIs' `max_tokens`; a server's own cap, such
    /// as llama-server's `-n`, does not apply to a request that names one).
    pub max_tokens: u32,
    /// Sampling temperature; `None` leaves it to the server.
    pub temperature: Option<f32>,
    /// Where the model stops writing (a sampling request's `stopSequences`); none by default.
    pub stop: Vec<String>,
}

impl Default for Generation {
    /// 1,024 tokens a reply (a support answer is a few sentences), the server's temperature.
    fn default() -> Self {
        Generation {
            max_tokens: 1024,
            temperature: None,
            stop: Vec::new(),
        }
    }
}

impl Generation {
    /// Put the settings into a request body (both APIs name them alike but for the stop
    /// sequences, which go under `stop_key`).
    fn apply(&self, body: &mut Value, stop_key: &str) {
        body["max_tokens"] = Value::from(self.max_tokens);
        if let Some(temperature) = self.temperature {
            body["temperature"] = Value::from(temperature);
        }
        if !self.stop.is_empty() {
            body[stop_key] = Value::from(self.stop.clone());
        }
    }
}
