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
    /// Tokens the call used (prompt + completion), if the server said.
    pub tokens: u64,
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

/// Where a model lives and how to reach it; shared by the providers.
#[derive(Debug, Clone)]
struct Endpoint {
    base_url: String,
    api_key: Option<Secret>,
    model: String,
    http: reqwest::Client,
    generation: Generation,
}

impl Endpoint {
    fn new(
        base_url: String,
        api_key: Option<Secret>,
        model: String,
        timeout: std::time::Duration,
    ) -> Result<Self, LlmError> {
        // No fallback to a default client: that one would wait for a model forever.
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(LlmError::Client)?;
        Ok(Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            model,
            http,
            generation: Generation::default(),
        })
    }

    /// Send a request; a non-success status becomes [`LlmError::Status`] with the body's start.
    /// A busy or failing server (429, 500, 502, 503, 504) is asked again, at most
    /// [`ATTEMPTS`] times in all, after its `Retry-After` (whole seconds, at most
    /// [`MAX_RETRY_AFTER`]) or else after half a second per attempt made.
    async fn send(request: reqwest::RequestBuilder) -> Result<reqwest::Response, LlmError> {
        let mut attempt: u32 = 1;
        loop {
            let copy = if attempt < ATTEMPTS {
                request.try_clone()
            } else {
                None
            };
            let Some(this) = copy else {
                return send_once(request).await?.map_err(LlmError::from);
            };
            match send_once(this).await? {
                Ok(response) => return Ok(response),
                Err(refused) if busy(refused.status) => {
                    let wait = refused
                        .retry_after
                        .unwrap_or(std::time::Duration::from_millis(500) * attempt)
                        .min(MAX_RETRY_AFTER);
                    tracing::info!(
                        status = refused.status,
                        attempt,
                        wait_ms = wait.as_millis() as u64,
                        "the model is busy; asking again"
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(refused) => return Err(refused.into()),
            }
        }
    }
}

/// Whether a status says the server is busy or failing for now (worth asking again).
fn busy(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504)
}

impl LlmError {
    /// The server answered that it is busy or failing for now (429 or a 5xx gateway status),
    /// after the retries.
    pub fn is_busy(&self) -> bool {
        matches!(self, LlmError::Status { status, .. } if busy(*status))
    }
}

/// How many times one request is sent at most (the first time and the retries).
pub const ATTEMPTS: u32 = 3;
/// The longest wait before a retry, whatever `Retry-After` asks.
pub const MAX_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

/// A non-success answer: its status, the start of its body, and the wait it asked for.
struct Refused {
    status: u16,
    body: String,
    retry_after: Option<std::time::Duration>,
}

impl From<Refused> for LlmError {
    fn from(refused: Refused) -> Self {
        LlmError::Status {
            status: refused.status,
            body: refused.body,
        }
    }
}

/// One request: the response, or what a non-success status said.
async fn send_once(
    request: reqwest::RequestBuilder,
) -> Result<Result<reqwest::Response, Refused>, LlmError> {
    let response = request.send().await?;
    let status = response.status();
    if status.is_success() {
        return Ok(Ok(response));
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map(std::time::Duration::from_secs);
    let body: String = response
        .text()
        .await
        .unwrap_or_default()
        .chars()
        .take(500)
        .collect();
    Ok(Err(Refused {
        status: status.as_u16(),
        body,
        retry_after,
    }))
}

/// An OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    endpoint: Endpoint,
}

impl OpenAiCompatible {
    /// `base_url` up to `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama).
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<Secret>,
        model: impl Into<String>,
        timeout: std::time::Duration,
    ) -> Result<Self, LlmError> {
        Ok(Self {
            endpoint: Endpoint::new(base_url.into(), api_key, model.into(), timeout)?,
        })
    }

    /// The same endpoint with other [`Generation`] settings.
    pub fn with_generation(mut self, generation: Generation) -> Self {
        self.endpoint.generation = generation;
        self
    }

    /// One completion.
    pub async fn complete(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Turn, LlmError> {
        let endpoint = &self.endpoint;
        let mut body = serde_json::json!({ "model": endpoint.model, "messages": messages });
        endpoint.generation.apply(&mut body);
        if !tools.is_empty() {
            body["tools"] = serde_json::to_value(tools).unwrap_or_default();
        }
        let mut request = endpoint
            .http
            .post(format!("{}/chat/completions", endpoint.base_url))
            .json(&body);
        if let Some(key) = &endpoint.api_key {
            request = request.bearer_auth(key.expose());
        }
        let response = Endpoint::send(request).await?;
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

/// Anthropic's Messages API, with tool use.
#[derive(Debug, Clone)]
pub struct AnthropicMessages {
    endpoint: Endpoint,
}

impl AnthropicMessages {
    /// `base_url` without `/v1` (e.g. `https://api.anthropic.com`).
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<Secret>,
        model: impl Into<String>,
        timeout: std::time::Duration,
    ) -> Result<Self, LlmError> {
        Ok(Self {
            endpoint: Endpoint::new(base_url.into(), api_key, model.into(), timeout)?,
        })
    }

    /// The same endpoint with other [`Generation`] settings.
    pub fn with_generation(mut self, generation: Generation) -> Self {
        self.endpoint.generation = generation;
        self
    }

    /// One completion. The conversation is given in the chat-completions shape and converted:
    /// system messages become `system`, tool calls `tool_use` blocks, tool results
    /// `tool_result` blocks in a user turn.
    pub async fn complete(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Turn, LlmError> {
        let system: Vec<&str> = messages
            .iter()
            .filter(|m| m.role == "system")
            .filter_map(|m| m.content.as_deref())
            .collect();
        let mut turns: Vec<Value> = Vec::new();
        for message in messages.iter().filter(|m| m.role != "system") {
            let (role, blocks) = match message.role.as_str() {
                "tool" => (
                    "user",
                    vec![serde_json::json!({
                        "type": "tool_result",
                        "tool_use_id": message.tool_call_id,
                        "content": message.content.clone().unwrap_or_default(),
                    })],
                ),
                "assistant" => {
                    let mut blocks = Vec::new();
                    if let Some(text) = message.content.as_deref().filter(|t| !t.is_empty()) {
                        blocks.push(serde_json::json!({"type": "text", "text": text}));
                    }
                    for call in &message.tool_calls {
                        let input: Value =
                            serde_json::from_str(&call.function.arguments).unwrap_or_default();
                        blocks.push(serde_json::json!({
                            "type": "tool_use", "id": call.id, "name": call.function.name, "input": input
                        }));
                    }
                    ("assistant", blocks)
                }
                _ => (
                    "user",
                    vec![
                        serde_json::json!({"type": "text", "text": message.content.clone().unwrap_or_default()}),
                    ],
                ),
            };
            // Consecutive turns of one role (several tool results) become one turn.
            match turns.last_mut() {
                Some(last) if last["role"] == role => {
                    if let Some(content) = last["content"].as_array_mut() {
                        content.extend(blocks);
                    }
                }
                _ => turns.push(serde_json::json!({"role": role, "content": blocks})),
            }
        }
        let mut body = serde_json::json!({
            "model": self.endpoint.model,
            "messages": turns,
        });
        self.endpoint.generation.apply(&mut body);
        if !system.is_empty() {
            body["system"] = Value::String(system.join("\n\n"));
        }
        if !tools.is_empty() {
            body["tools"] = Value::Array(
                tools
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "name": t.function.name,
                            "description": t.function.description,
                            "input_schema": t.function.parameters,
                        })
                    })
                    .collect(),
            );
        }
        let endpoint = &self.endpoint;
        let mut request = endpoint
            .http
            .post(format!("{}/v1/messages", endpoint.base_url))
            .header("anthropic-version", "2023-06-01")
            .json(&body);
        if let Some(key) = &endpoint.api_key {
            request = request.header("x-api-key", key.expose());
        }
        let response = Endpoint::send(request).await?;
        let answer: Value = response.json().await?;
        let blocks = answer["content"].as_array().ok_or(LlmError::Empty)?;
        let text: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        let tool_calls = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| ToolCall {
                id: b["id"].as_str().unwrap_or_default().to_owned(),
                kind: "function".into(),
                function: FunctionCall {
                    name: b["name"].as_str().unwrap_or_default().to_owned(),
                    arguments: b["input"].to_string(),
                },
            })
            .collect();
        let usage = &answer["usage"];
        let tokens = usage["input_tokens"].as_u64().unwrap_or(0)
            + usage["output_tokens"].as_u64().unwrap_or(0);
        Ok(Turn {
            message: Message {
                role: "assistant".into(),
                content: (!text.is_empty()).then(|| text.join("\n")),
                tool_calls,
                tool_call_id: None,
            },
            tokens,
        })
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

    /// One completion.
    pub async fn complete(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Turn, LlmError> {
        match self {
            Provider::OpenAi(model) => model.complete(messages, tools).await,
            Provider::Anthropic(model) => model.complete(messages, tools).await,
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
