//! Model providers: [`OpenAiCompatible`] speaks the chat-completions API with tool calling
//! (OpenAI, Ollama, llama.cpp, vLLM), [`AnthropicMessages`] Anthropic's Messages API; both
//! whole or streamed. The loop that uses them lives in `desk::model`.
//!
//! Rooms: this module holds the vocabulary (messages, tool calls, turns, usage, errors, the
//! key, the generation settings) and [`Provider`]; `endpoint` sends one request with its
//! retries; `sse` reads an event stream; `openai` and `anthropic` are the two providers.

mod anthropic;
mod endpoint;
mod openai;
mod sse;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use endpoint::{ATTEMPTS, MAX_RETRY_AFTER};
pub use sse::{MAX_EVENT_BYTES, OnText};

use endpoint::{Endpoint, providers};

providers! {
    /// An OpenAI-compatible chat-completions endpoint (see `openai`).
    OpenAiCompatible: "`base_url` up to `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama).";
    /// Anthropic's Messages API, with tool use (see `anthropic`).
    AnthropicMessages: "`base_url` without `/v1` (e.g. `https://api.anthropic.com`).";
}

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
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Generation {
    /// The most tokens one reply may take (both APIs' `max_tokens`; a server's own cap, such
    /// as llama-server's `-n`, does not apply to a request that names one).
    pub max_tokens: u32,
    /// Sampling temperature; `None` leaves it to the server.
    pub temperature: Option<f32>,
}

impl Default for Generation {
    /// 1,024 tokens a reply (a support answer is a few sentences), the server's temperature.
    fn default() -> Self {
        Generation {
            max_tokens: 1024,
            temperature: None,
        }
    }
}

impl Generation {
    /// Put the settings into a request body (both APIs name them alike).
    fn apply(&self, body: &mut Value) {
        body["max_tokens"] = Value::from(self.max_tokens);
        if let Some(temperature) = self.temperature {
            body["temperature"] = Value::from(temperature);
        }
    }
}

/// The model the desk talks to.
#[derive(Debug, Clone)]
pub enum Provider {
    /// Chat completions (OpenAI, Ollama, llama.cpp, vLLM).
    OpenAi(OpenAiCompatible),
    /// Anthropic messages.
    Anthropic(AnthropicMessages),
}

impl Provider {
    /// Where the model lives and which model is asked for, for messages to the person.
    pub fn describe(&self) -> (&str, &str) {
        let endpoint = match self {
            Provider::OpenAi(model) => &model.endpoint,
            Provider::Anthropic(model) => &model.endpoint,
        };
        (&endpoint.base_url, &endpoint.model)
    }

    /// How much each reply may write and how freely.
    pub fn generation(&self) -> Generation {
        match self {
            Provider::OpenAi(model) => model.endpoint.generation,
            Provider::Anthropic(model) => model.endpoint.generation,
        }
    }

    /// One completion.
    pub async fn complete(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Turn, LlmError> {
        match self {
            Provider::OpenAi(model) => endpoint::complete(model, messages, tools).await,
            Provider::Anthropic(model) => endpoint::complete(model, messages, tools).await,
        }
    }

    /// One completion, its words handed to `on_text` as they arrive.
    pub async fn stream(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        on_text: OnText<'_>,
    ) -> Result<Turn, LlmError> {
        match self {
            Provider::OpenAi(model) => endpoint::stream(model, messages, tools, on_text).await,
            Provider::Anthropic(model) => endpoint::stream(model, messages, tools, on_text).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-5f1c0ffee";

    #[test]
    fn an_api_key_is_never_printed() {
        let timeout = std::time::Duration::from_secs(1);
        let openai = OpenAiCompatible::new(
            "http://127.0.0.1:1/v1",
            Some(Secret::new(KEY)),
            "m",
            timeout,
        )
        .unwrap();
        let anthropic =
            AnthropicMessages::new("http://127.0.0.1:1", Some(Secret::new(KEY)), "m", timeout)
                .unwrap();
        let printed = [
            format!("{:?}", Secret::new(KEY)),
            format!("{openai:?}"),
            format!("{:#?}", Provider::OpenAi(openai.clone())),
            format!("{:?}", Provider::Anthropic(anthropic)),
            format!(
                "{:?}",
                crate::desk::DeskConfig {
                    model: Some(Provider::OpenAi(openai)),
                    ..Default::default()
                }
            ),
        ];
        for text in printed {
            assert!(!text.contains(KEY), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
    }

    #[test]
    fn the_key_is_still_what_is_sent() {
        assert_eq!(Secret::new(KEY).expose(), KEY);
    }
}
