//! [`OpenAiCompatible`]: the chat-completions API with tool calling, whole or streamed.

use serde::Deserialize;
use serde_json::Value;

use super::endpoint::{Ask, Gather, Wire};
use super::sse::{OnText, error_text};
use super::{
    FunctionCall, LlmError, Message, OpenAiCompatible, ToolCall, Turn, Usage, function_type,
};

impl Wire for OpenAiCompatible {
    type Streamed = OpenAiStream;

    fn request(&self, ask: Ask<'_>) -> reqwest::RequestBuilder {
        let endpoint = &self.endpoint;
        let mut body = serde_json::json!({ "model": endpoint.model, "messages": ask.messages });
        endpoint.generation.apply(&mut body, "stop");
        if !ask.tools.is_empty() {
            body["tools"] = serde_json::to_value(ask.tools).unwrap_or_default();
        }
        if ask.stream {
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

    fn whole(answer: &[u8]) -> Result<Turn, LlmError> {
        openai_answer(answer)
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

/// A chat-completions answer being streamed: words, and tool calls by index.
#[derive(Default)]
pub(crate) struct OpenAiStream {
    text: String,
    calls: Vec<ToolCall>,
    usage: Usage,
}

impl Gather for OpenAiStream {
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
        Ok(Turn::assistant(self.text, calls, self.usage))
    }
}
