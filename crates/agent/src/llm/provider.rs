//! [`Provider`], the model the desk talks to, and the two providers' structs: each an
//! [`Endpoint`] that speaks its [`Wire`](super::endpoint::Wire) (`openai`, `anthropic`).

use super::endpoint::{self, Endpoint, providers};
use super::{Generation, LlmError, Message, OnText, Secret, ToolSpec, Turn};

providers! {
    /// An OpenAI-compatible chat-completions endpoint (see `openai`).
    OpenAiCompatible: "`base_url` up to `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama).";
    /// Anthropic's Messages API, with tool use (see `anthropic`).
    AnthropicMessages: "`base_url` without `/v1` (e.g. `https://api.anthropic.com`).";
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

    /// The same model, its replies held to at most `max_tokens` (a sampling request's own
    /// cap); a larger number leaves the desk's cap as it is.
    pub fn capped(&self, max_tokens: u32) -> Provider {
        let mut capped = self.clone();
        let generation = match &mut capped {
            Provider::OpenAi(model) => &mut model.endpoint.generation,
            Provider::Anthropic(model) => &mut model.endpoint.generation,
        };
        generation.max_tokens = generation.max_tokens.min(max_tokens.max(1));
        capped
    }

    /// How much each reply may write and how freely.
    pub fn generation(&self) -> Generation {
        match self {
            Provider::OpenAi(model) => model.endpoint.generation.clone(),
            Provider::Anthropic(model) => model.endpoint.generation.clone(),
        }
    }

    /// The same model, its generation settings changed by `change` (a sampling request's
    /// temperature and stop sequences, say).
    pub fn tuned(&self, change: impl FnOnce(&mut Generation)) -> Provider {
        let mut changed = self.clone();
        match &mut changed {
            Provider::OpenAi(model) => change(&mut model.endpoint.generation),
            Provider::Anthropic(model) => change(&mut model.endpoint.generation),
        }
        changed
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
    use crate::llm::Secret;

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
