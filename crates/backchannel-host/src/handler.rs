//! What the host application decides when its servers talk back ([`HostHandler`]), and the
//! questions and messages it is handed (sampling, log messages).

use std::future::Future;

use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ProgressNotificationParam, ProgressToken, RequestMetaObject, Root,
};

use backchannel::ListKind;

use crate::error::AuthorizeError;

/// What the host application decides when its servers talk back. Every method has a safe
/// default: questions are declined, sampling is refused, notifications are ignored.
pub trait HostHandler: Send + Sync + 'static {
    /// A server asks the person a question. `meta` is the question's `_meta`; `caller` is the
    /// progress token the caller gave the call that is waiting on this question (from its
    /// [`CallContext`](crate::CallContext)), when the host can tell which call that is.
    fn elicit(
        &self,
        connection: &str,
        request: ElicitRequestParams,
        meta: RequestMetaObject,
        caller: Option<ProgressToken>,
    ) -> impl Future<Output = ElicitResult> + Send {
        let _ = (connection, request, meta, caller);
        async { ElicitResult::new(ElicitationAction::Decline) }
    }

    /// A server asks for the host's model. `caller` is as for [`HostHandler::elicit`].
    fn sample(
        &self,
        connection: &str,
        question: SamplingQuestion,
        caller: Option<ProgressToken>,
    ) -> impl Future<Output = Result<SamplingAnswer, ErrorData>> + Send {
        let _ = (connection, question, caller);
        async {
            Err(ErrorData::invalid_request(
                "this host does not sample",
                None,
            ))
        }
    }

    /// A server asks which folders it may use (`roots/list`). `configured` are the
    /// connection's roots from its configuration, the answer unless the handler knows better;
    /// `caller` is as for [`HostHandler::elicit`].
    fn list_roots(
        &self,
        connection: &str,
        configured: Vec<Root>,
        caller: Option<ProgressToken>,
    ) -> impl Future<Output = Result<Vec<Root>, ErrorData>> + Send {
        let _ = (connection, caller);
        async { Ok(configured) }
    }

    /// Progress of a call, in order: a value not above the last one delivered for the same
    /// call (over all its rounds) is dropped before it gets here. The token is the caller's,
    /// when it gave one. The call's result is returned only after the progress that came
    /// ahead of it has been delivered.
    fn on_progress(&self, connection: &str, progress: ProgressNotificationParam) {
        let _ = (connection, progress);
    }

    /// A log message from a server.
    fn on_log(&self, connection: &str, message: LogMessage) {
        let _ = (connection, message);
    }

    /// A server needs the person to sign in (OAuth, feature `oauth`): show them
    /// `authorization_url` (a link, a browser) and return the URL the browser was sent back to
    /// (the connection's redirect URI with the code). An error ends the sign-in and the
    /// connection fails with it.
    fn authorize(
        &self,
        connection: &str,
        authorization_url: String,
    ) -> impl Future<Output = Result<String, AuthorizeError>> + Send {
        let _ = (connection, authorization_url);
        async { Err(AuthorizeError::Unsupported) }
    }

    /// A server's tool, prompt or resource list changed.
    fn on_list_changed(&self, connection: &str, kind: ListKind) {
        let _ = (connection, kind);
    }

    /// A resource the host subscribed to changed (`notifications/resources/updated`).
    fn on_resource_updated(&self, connection: &str, uri: &str) {
        let _ = (connection, uri);
    }

    /// What a URL question sent the person to do is done, as its server says
    /// (`notifications/elicitation/complete`, 2025-11-25 sessions; on 2026-07-28 the retry
    /// that follows the answer is the sign). `elicitation_id` is the one the question carried.
    fn on_elicitation_complete(&self, connection: &str, elicitation_id: &str) {
        let _ = (connection, elicitation_id);
    }
}

/// A server's request for the host's model (`sampling/createMessage`), as a handler reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingQuestion {
    /// The system prompt the server asks for, if any.
    pub system_prompt: Option<String>,
    /// The conversation to complete: its text, turn by turn.
    pub messages: Vec<SamplingTurn>,
    /// The most tokens the answer may take.
    pub max_tokens: u32,
    /// What model the server would like, if it said (`modelPreferences`).
    pub model_preferences: Option<ModelWish>,
    /// How freely the model should write, if the server said (`temperature`).
    pub temperature: Option<f32>,
    /// Where the model should stop writing, if the server said (`stopSequences`).
    pub stop_sequences: Vec<String>,
    /// What the request asks that a reply of text cannot honour (tools, content that is not
    /// text, context from servers): the host refuses such a request with these reasons, which
    /// the server reads, rather than answer it without them.
    pub not_honoured: Vec<String>,
}

/// What model a server would like (`modelPreferences`): advisory priorities from 0 to 1 and
/// name hints; the host chooses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelWish {
    /// How much a fast model matters.
    pub speed: Option<f32>,
    /// How much a cheap model matters.
    pub cost: Option<f32>,
    /// How much a capable model matters.
    pub intelligence: Option<f32>,
    /// Model names or families, most wanted first.
    pub hints: Vec<String>,
}

/// One turn of a [`SamplingQuestion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingTurn {
    /// `true` for the assistant's turns, `false` for the user's.
    pub assistant: bool,
    /// The turn's text (its text parts joined by newlines).
    pub text: String,
}

/// The host's answer to a [`SamplingQuestion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingAnswer {
    /// What the model wrote.
    pub text: String,
    /// Which model wrote it.
    pub model: String,
}

/// What `params` asks that a reply of text cannot honour, each said in a few words.
fn not_honoured(params: &CreateMessageRequestParams) -> Vec<String> {
    use rmcp::model::{ContextInclusion, SamplingMessageContentBlock as Block};
    let mut reasons = Vec::new();
    if params.tools.as_ref().is_some_and(|tools| !tools.is_empty()) || params.tool_choice.is_some()
    {
        reasons.push(
            "tools for the model to call (this host's model answers with text only)".to_owned(),
        );
    }
    if params
        .include_context
        .as_ref()
        .is_some_and(|context| !matches!(context, ContextInclusion::None))
    {
        reasons.push(
            "includeContext other than \"none\" (this host gives the model no context of its \
             servers)"
                .to_owned(),
        );
    }
    let mut kinds: Vec<&str> = params
        .messages
        .iter()
        .flat_map(|message| message.content.clone().into_vec())
        .filter_map(|block| match block {
            Block::Text(_) => None,
            Block::Image(_) => Some("image"),
            Block::Audio(_) => Some("audio"),
            Block::ToolUse(_) => Some("tool use"),
            Block::ToolResult(_) => Some("tool result"),
            _ => Some("another kind of"),
        })
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    if !kinds.is_empty() {
        reasons.push(format!(
            "{} content in the messages (this host's model reads text only)",
            kinds.join(", ")
        ));
    }
    reasons
}

impl From<&CreateMessageRequestParams> for SamplingQuestion {
    fn from(params: &CreateMessageRequestParams) -> Self {
        SamplingQuestion {
            temperature: params.temperature,
            stop_sequences: params.stop_sequences.clone().unwrap_or_default(),
            not_honoured: not_honoured(params),
            system_prompt: params.system_prompt.clone(),
            messages: params
                .messages
                .iter()
                .map(|message| SamplingTurn {
                    assistant: matches!(message.role, rmcp::model::Role::Assistant),
                    text: message
                        .content
                        .clone()
                        .into_vec()
                        .into_iter()
                        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                        .collect::<Vec<_>>()
                        .join("\n"),
                })
                .collect(),
            max_tokens: params.max_tokens,
            model_preferences: params
                .model_preferences
                .as_ref()
                .map(|preferences| ModelWish {
                    speed: preferences.speed_priority,
                    cost: preferences.cost_priority,
                    intelligence: preferences.intelligence_priority,
                    hints: preferences
                        .hints
                        .iter()
                        .flatten()
                        .filter_map(|hint| hint.name.clone())
                        .collect(),
                }),
        }
    }
}

impl From<SamplingAnswer> for CreateMessageResult {
    fn from(answer: SamplingAnswer) -> Self {
        CreateMessageResult::new(
            rmcp::model::SamplingMessage::assistant_text(answer.text),
            answer.model,
        )
    }
}

/// A log message from a server (`notifications/message`).
#[derive(Debug, Clone, PartialEq)]
pub struct LogMessage {
    /// Its severity.
    pub level: backchannel::LogLevel,
    /// The server's logger name, if it gave one.
    pub logger: Option<String>,
    /// The message (a string or any JSON).
    pub data: serde_json::Value,
    /// The caller's token of the call the message belongs to, when the host can tell (the
    /// connection has one call in flight); `None` otherwise.
    pub caller: Option<ProgressToken>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(json: serde_json::Value) -> CreateMessageRequestParams {
        serde_json::from_value(json).unwrap()
    }

    /// Issue 72: temperature, stop sequences, includeContext, tools and content that is not
    /// text were dropped without a word. The first two reach the handler; what a reply of text
    /// cannot honour is named, for the host to refuse with.
    #[test]
    fn every_field_of_a_sampling_request_is_handed_on_or_named_as_not_honoured() {
        let text = serde_json::json!({"role": "user", "content": {"type": "text", "text": "Hi"}});
        let plain = SamplingQuestion::from(&params(serde_json::json!({
            "messages": [text.clone()], "maxTokens": 50, "temperature": 0.3,
            "stopSequences": ["END"], "includeContext": "none"
        })));
        assert_eq!(plain.temperature, Some(0.3));
        assert_eq!(plain.stop_sequences, ["END"]);
        assert!(plain.not_honoured.is_empty(), "{:?}", plain.not_honoured);
        let image = serde_json::json!({"role": "user", "content":
            {"type": "image", "data": "aGk=", "mimeType": "image/png"}});
        let asking_more = SamplingQuestion::from(&params(serde_json::json!({
            "messages": [text, image], "maxTokens": 50, "includeContext": "thisServer",
            "tools": [{"name": "lookup", "inputSchema": {"type": "object"}}]
        })));
        let reasons = asking_more.not_honoured.join("; ");
        assert!(reasons.contains("tools for the model to call"), "{reasons}");
        assert!(reasons.contains("includeContext"), "{reasons}");
        assert!(reasons.contains("image content"), "{reasons}");
    }
}
