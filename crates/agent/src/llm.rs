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
        let response = Endpoint::send(self.request(messages, tools, false)).await?;
        openai_answer(&response.bytes().await?)
    }

    /// One completion, streamed: `on_text` gets each piece of the reply's words as it comes.
    /// A server that answers whole (JSON, not an event stream) is read as by
    /// [`OpenAiCompatible::complete`].
    pub async fn stream(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        on_text: OnText<'_>,
    ) -> Result<Turn, LlmError> {
        let response = Endpoint::send(self.request(messages, tools, true)).await?;
        if !is_event_stream(&response) {
            return openai_answer(&response.bytes().await?);
        }
        let mut turn = OpenAiStream::default();
        each_event(response, |data| turn.take(data, on_text)).await?;
        turn.finish()
    }

    fn request(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        stream: bool,
    ) -> reqwest::RequestBuilder {
        let endpoint = &self.endpoint;
        let mut body = serde_json::json!({ "model": endpoint.model, "messages": messages });
        endpoint.generation.apply(&mut body);
        if !tools.is_empty() {
            body["tools"] = serde_json::to_value(tools).unwrap_or_default();
        }
        if stream {
            body["stream"] = Value::Bool(true);
            body["stream_options"] = serde_json::json!({ "include_usage": true });
        }
        let request = endpoint
            .http
            .post(format!("{}/chat/completions", endpoint.base_url))
            .json(&body);
        match &endpoint.api_key {
            Some(key) => request.bearer_auth(key.expose()),
            None => request,
        }
    }
}

/// A whole chat-completions answer.
fn openai_answer(answer: &[u8]) -> Result<Turn, LlmError> {
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
        prompt_tokens: u64,
        #[serde(default)]
        completion_tokens: u64,
    }
    let answer: Answer =
        serde_json::from_slice(answer).map_err(|e| LlmError::Unreadable(e.to_string()))?;
    let message = answer
        .choices
        .into_iter()
        .next()
        .ok_or(LlmError::Empty)?
        .message;
    Ok(Turn {
        message,
        usage: answer.usage.map_or_else(Default::default, |u| self::Usage {
            input: u.prompt_tokens,
            output: u.completion_tokens,
        }),
    })
}

/// Where streamed words go as they arrive.
pub type OnText<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// The most one event of a streamed answer may hold, in bytes; a longer one ends the stream.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// Read a server-sent event stream, handing `take` each `data:` payload; `take` returns
/// `true` when the answer is complete. Lines are capped at [`MAX_EVENT_BYTES`] before they
/// are parsed.
async fn each_event(
    response: reqwest::Response,
    mut take: impl FnMut(&str) -> Result<bool, LlmError>,
) -> Result<(), LlmError> {
    use futures::StreamExt;
    let mut bytes = response.bytes_stream();
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(chunk) = bytes.next().await {
        buffer.extend_from_slice(&chunk?);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if let Some(data) = line.strip_prefix("data:")
                && take(data.trim_start())?
            {
                return Ok(());
            }
        }
        if buffer.len() > MAX_EVENT_BYTES {
            return Err(LlmError::Stream(format!(
                "an event is longer than {MAX_EVENT_BYTES} bytes"
            )));
        }
    }
    // Some servers end the stream without a last marker; what came is the answer.
    Ok(())
}

/// A chat-completions answer being streamed: words, and tool calls by index.
#[derive(Default)]
struct OpenAiStream {
    text: String,
    calls: Vec<ToolCall>,
    usage: Usage,
}

impl OpenAiStream {
    fn take(&mut self, data: &str, on_text: OnText<'_>) -> Result<bool, LlmError> {
        if data == "[DONE]" {
            return Ok(true);
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| LlmError::Stream(e.to_string()))?;
        if let Some(error) = chunk.get("error") {
            return Err(LlmError::Stream(error_text(error)));
        }
        if let Some(usage) = chunk["usage"].as_object() {
            let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Usage {
                input: count("prompt_tokens"),
                output: count("completion_tokens"),
            };
        }
        let delta = &chunk["choices"][0]["delta"];
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            self.text.push_str(text);
            on_text(text);
        }
        for (position, part) in delta["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = part["index"].as_u64().map_or(position, |i| i as usize);
            if index > 64 {
                return Err(LlmError::Stream("more than 64 tool calls".into()));
            }
            while self.calls.len() <= index {
                self.calls.push(ToolCall {
                    id: String::new(),
                    kind: function_type(),
                    function: FunctionCall {
                        name: String::new(),
                        arguments: String::new(),
                    },
                });
            }
            let call = &mut self.calls[index];
            if let Some(id) = part["id"].as_str() {
                call.id = id.to_owned();
            }
            if let Some(name) = part["function"]["name"].as_str() {
                call.function.name.push_str(name);
            }
            if let Some(arguments) = part["function"]["arguments"].as_str() {
                call.function.arguments.push_str(arguments);
            }
        }
        Ok(false)
    }

    fn finish(self) -> Result<Turn, LlmError> {
        let calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(index, mut call)| {
                if call.id.is_empty() {
                    call.id = format!("call_{index}");
                }
                call
            })
            .collect();
        Ok(Turn {
            message: Message {
                role: "assistant".into(),
                content: (!self.text.is_empty()).then_some(self.text),
                tool_calls: calls,
                tool_call_id: None,
            },
            usage: self.usage,
        })
    }
}

/// The message of an error object in a stream (`{"message": ...}` or a bare string).
fn error_text(error: &Value) -> String {
    error["message"]
        .as_str()
        .or_else(|| error.as_str())
        .map_or_else(|| error.to_string(), str::to_owned)
        .chars()
        .take(500)
        .collect()
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
        let response = Endpoint::send(self.request(messages, tools, false)).await?;
        anthropic_answer(response.json().await?)
    }

    /// One completion, streamed (Anthropic's message events): `on_text` gets each piece of the
    /// reply's words as it comes. A server that answers whole is read as by
    /// [`AnthropicMessages::complete`].
    pub async fn stream(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        on_text: OnText<'_>,
    ) -> Result<Turn, LlmError> {
        let response = Endpoint::send(self.request(messages, tools, true)).await?;
        if !is_event_stream(&response) {
            return anthropic_answer(response.json().await?);
        }
        let mut turn = AnthropicStream::default();
        each_event(response, |data| turn.take(data, on_text)).await?;
        Ok(turn.finish())
    }

    fn request(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        stream: bool,
    ) -> reqwest::RequestBuilder {
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
        if stream {
            body["stream"] = Value::Bool(true);
        }
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
        let request = endpoint
            .http
            .post(format!("{}/v1/messages", endpoint.base_url))
            .header("anthropic-version", "2023-06-01")
            .json(&body);
        match &endpoint.api_key {
            Some(key) => request.header("x-api-key", key.expose()),
            None => request,
        }
    }
}

/// A whole Messages answer.
fn anthropic_answer(answer: Value) -> Result<Turn, LlmError> {
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
    let usage = Usage {
        input: usage["input_tokens"].as_u64().unwrap_or(0),
        output: usage["output_tokens"].as_u64().unwrap_or(0),
    };
    Ok(Turn {
        message: Message {
            role: "assistant".into(),
            content: (!text.is_empty()).then(|| text.join("\n")),
            tool_calls,
            tool_call_id: None,
        },
        usage,
    })
}

/// One content block of a streamed Messages answer.
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: String,
    },
}

/// A Messages answer being streamed: its blocks by index, and the tokens counted.
#[derive(Default)]
struct AnthropicStream {
    blocks: Vec<Block>,
    usage: Usage,
}

impl AnthropicStream {
    fn take(&mut self, data: &str, on_text: OnText<'_>) -> Result<bool, LlmError> {
        let event: Value =
            serde_json::from_str(data).map_err(|e| LlmError::Stream(e.to_string()))?;
        let index = event["index"].as_u64().unwrap_or(0) as usize;
        match event["type"].as_str().unwrap_or_default() {
            "message_start" => {
                self.usage.input += event["message"]["usage"]["input_tokens"]
                    .as_u64()
                    .unwrap_or(0);
            }
            "content_block_start" => {
                if index > 64 {
                    return Err(LlmError::Stream("more than 64 content blocks".into()));
                }
                let block = &event["content_block"];
                let block = if block["type"] == "tool_use" {
                    Block::ToolUse {
                        id: block["id"].as_str().unwrap_or_default().to_owned(),
                        name: block["name"].as_str().unwrap_or_default().to_owned(),
                        input: String::new(),
                    }
                } else {
                    Block::Text(block["text"].as_str().unwrap_or_default().to_owned())
                };
                while self.blocks.len() < index {
                    self.blocks.push(Block::Text(String::new()));
                }
                if self.blocks.len() == index {
                    self.blocks.push(block);
                } else {
                    self.blocks[index] = block;
                }
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                match self.blocks.get_mut(index) {
                    Some(Block::Text(text)) => {
                        if let Some(piece) = delta["text"].as_str().filter(|t| !t.is_empty()) {
                            text.push_str(piece);
                            on_text(piece);
                        }
                    }
                    Some(Block::ToolUse { input, .. }) => {
                        input.push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    None => return Err(LlmError::Stream("a delta of no block".into())),
                }
            }
            "message_delta" => {
                self.usage.output += event["usage"]["output_tokens"].as_u64().unwrap_or(0);
            }
            "message_stop" => return Ok(true),
            "error" => return Err(LlmError::Stream(error_text(&event["error"]))),
            _ => {}
        }
        Ok(false)
    }

    fn finish(self) -> Turn {
        let mut text: Vec<String> = Vec::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks {
            match block {
                Block::Text(words) if !words.is_empty() => text.push(words),
                Block::Text(_) => {}
                Block::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                    id,
                    kind: function_type(),
                    function: FunctionCall {
                        name,
                        // A tool called without arguments streams no input at all.
                        arguments: if input.trim().is_empty() {
                            "{}".into()
                        } else {
                            input
                        },
                    },
                }),
            }
        }
        Turn {
            message: Message {
                role: "assistant".into(),
                content: (!text.is_empty()).then(|| text.join("\n")),
                tool_calls,
                tool_call_id: None,
            },
            usage: self.usage,
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
            Provider::OpenAi(model) => model.complete(messages, tools).await,
            Provider::Anthropic(model) => model.complete(messages, tools).await,
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
            Provider::OpenAi(model) => model.stream(messages, tools, on_text).await,
            Provider::Anthropic(model) => model.stream(messages, tools, on_text).await,
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
