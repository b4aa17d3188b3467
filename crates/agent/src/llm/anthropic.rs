//! [`AnthropicMessages`]: Anthropic's Messages API with tool use, whole or streamed.

use serde_json::Value;

use super::endpoint::{Ask, Gather, Wire};
use super::sse::{OnText, error_text};
use super::{AnthropicMessages, FunctionCall, LlmError, ToolCall, Turn, Usage, function_type};

/// The conversation is given in the chat-completions shape and converted: system messages
/// become `system`, tool calls `tool_use` blocks, tool results `tool_result` blocks in a user
/// turn.
impl Wire for AnthropicMessages {
    type Streamed = AnthropicStream;

    fn request(&self, ask: Ask<'_>) -> reqwest::RequestBuilder {
        let system: Vec<&str> = ask
            .messages
            .iter()
            .filter(|m| m.role == "system")
            .filter_map(|m| m.content.as_deref())
            .collect();
        let mut turns: Vec<Value> = Vec::new();
        for message in ask.messages.iter().filter(|m| m.role != "system") {
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
        if ask.stream {
            body["stream"] = Value::Bool(true);
        }
        self.endpoint.generation.apply(&mut body, "stop_sequences");
        if !system.is_empty() {
            body["system"] = Value::String(system.join("\n\n"));
        }
        if !ask.tools.is_empty() {
            body["tools"] = Value::Array(
                ask.tools
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

    fn whole(answer: &[u8]) -> Result<Turn, LlmError> {
        anthropic_answer(
            serde_json::from_slice(answer).map_err(|e| LlmError::Unreadable(e.to_string()))?,
        )
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
    Ok(Turn::assistant(text.join("\n"), tool_calls, usage))
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
pub(crate) struct AnthropicStream {
    blocks: Vec<Block>,
    usage: Usage,
}

impl Gather for AnthropicStream {
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

    fn finish(self) -> Result<Turn, LlmError> {
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
        Ok(Turn::assistant(text.join("\n"), tool_calls, self.usage))
    }
}
