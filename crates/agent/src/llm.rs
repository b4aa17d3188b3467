//! Model providers. `OpenAiCompatible` speaks the chat-completions API with tool calling
//! (OpenAI, Ollama, llama.cpp, vLLM); the loop that uses it lives in `desk.rs`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// Tokens the call used (prompt + completion), if the server said.
    pub tokens: u64,
}

/// Errors talking to a model.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The HTTP request failed or timed out.
    #[error("the model could not be reached: {0}")]
    Http(#[from] reqwest::Error),
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
}

/// An OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    base_url: String,
    api_key: Option<String>,
    model: String,
    http: reqwest::Client,
}

impl OpenAiCompatible {
    /// `base_url` up to `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama).
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
        model: impl Into<String>,
        timeout: std::time::Duration,
    ) -> Self {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .unwrap_or_default();
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key,
            model: model.into(),
            http,
        }
    }

    /// One completion.
    pub async fn complete(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Turn, LlmError> {
        let mut body = serde_json::json!({ "model": self.model, "messages": messages });
        if !tools.is_empty() {
            body["tools"] = serde_json::to_value(tools).unwrap_or_default();
        }
        let mut request = self
            .http
            .post(format!("{}/chat/completions", self.base_url))
            .json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await?;
        let status = response.status();
        if !status.is_success() {
            let body: String = response
                .text()
                .await
                .unwrap_or_default()
                .chars()
                .take(500)
                .collect();
            return Err(LlmError::Status {
                status: status.as_u16(),
                body,
            });
        }
        #[derive(Deserialize)]
        struct Answer {
            choices: Vec<Choice>,
            #[serde(default)]
            usage: Option<Usage>,
        }
        #[derive(Deserialize)]
        struct Choice {
            message: Message,
        }
        #[derive(Deserialize)]
        struct Usage {
            #[serde(default)]
            total_tokens: u64,
        }
        let answer: Answer = response.json().await?;
        let message = answer
            .choices
            .into_iter()
            .next()
            .ok_or(LlmError::Empty)?
            .message;
        Ok(Turn {
            message,
            tokens: answer.usage.map_or(0, |u| u.total_tokens),
        })
    }
}
