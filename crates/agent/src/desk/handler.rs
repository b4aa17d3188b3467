//! The desk's [`HostHandler`]: the order service's questions, sampling requests, progress
//! and log messages, turned into events for the person.

use std::sync::Arc;
use std::time::Duration;

use backchannel_host::{HostHandler, LogMessage, SamplingAnswer, SamplingQuestion};
use rmcp::ErrorData;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ProgressNotificationParam,
    RequestMetaObject,
};
use serde_json::{Value, json};

use crate::events::{Answer, Asked, Event, Events, QuestionKind};

/// The most characters of a server's progress message shown.
pub(crate) const MAX_PROGRESS_MESSAGE: usize = 80;

/// Turns the order service's questions and progress into events for the person.
#[derive(Debug)]
pub struct DeskHandler {
    pub(crate) events: Arc<Events>,
    pub(crate) person_deadline: Duration,
    pub(crate) model: Option<crate::llm::Provider>,
    pub(crate) sign_in_callback: Option<String>,
    /// Whose pages a server's sign-in link goes to.
    pub(crate) sign_in_for: SignInFor,
    /// The link questions the person opened, by connection and elicitation id: the
    /// conversation told when the server says the page's work is done.
    pub(crate) links: std::sync::Mutex<std::collections::HashMap<(String, String), String>>,
    /// The host this handler serves, once open: a server's changed tool list is listed again
    /// through it (weak, so closing the host is not held up by its handler).
    pub(crate) host: std::sync::OnceLock<std::sync::Weak<backchannel_host::Host<DeskHandler>>>,
}

/// Whose pages a server's "Sign in" link goes to. The desk's connection to a server is one
/// for every person of the desk, so it acts under the account of whoever signs it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SignInFor {
    /// A desk of one person: every page is theirs.
    ThePerson,
    /// A desk with people: the one person named to sign its connections in
    /// (`--sign-in-person`); no one else sees or may open the link.
    Person(String),
    /// A desk with people and nobody named: no sign-in is shown (a person who opened it would
    /// have the desk act for everyone under their account).
    Nobody,
}

impl DeskHandler {
    /// Ask the person watching `conversation` to approve `text`, a step of `connection`'s
    /// request for the model.
    async fn approval(&self, connection: &str, conversation: &str, text: &str) -> Asked {
        let (kind, deadline) = (QuestionKind::Sampling, self.person_deadline);
        let asked = self
            .events
            .ask_of(kind, connection, conversation, text, deadline);
        asked.await
    }
}

/// How long a "Sign in" link waits for the person.
pub const SIGN_IN_DEADLINE: Duration = Duration::from_secs(10 * 60);

impl HostHandler for DeskHandler {
    /// Show the person a "Sign in to `connection`" link and wait for the browser to come back
    /// to the desk's callback.
    async fn authorize(
        &self,
        connection: &str,
        authorization_url: String,
    ) -> Result<String, backchannel_host::AuthorizeError> {
        let Some(callback) = &self.sign_in_callback else {
            return Err(backchannel_host::AuthorizeError::Failed(format!(
                "{connection} asks to sign in, and this desk has no callback address to sign in with"
            )));
        };
        let for_person = match &self.sign_in_for {
            SignInFor::ThePerson => None,
            SignInFor::Person(person) => Some(person.as_str()),
            SignInFor::Nobody => {
                return Err(backchannel_host::AuthorizeError::Failed(format!(
                    "{connection} asks to sign in; this desk's connection to it acts for every \
                     person of the desk, so it signs in only as the person named with \
                     --sign-in-person NAME, and none is named"
                )));
            }
        };
        let query = self
            .events
            .sign_in(connection, &authorization_url, SIGN_IN_DEADLINE, for_person)
            .await?;
        Ok(format!("{callback}?{query}"))
    }

    async fn elicit(
        &self,
        connection: &str,
        request: ElicitRequestParams,
        meta: RequestMetaObject,
        caller: Option<rmcp::model::ProgressToken>,
    ) -> ElicitResult {
        // The host names the call's conversation; a server may name it too.
        let conversation = match caller {
            Some(rmcp::model::ProgressToken(rmcp::model::NumberOrString::String(c))) => {
                Some(c.to_string())
            }
            _ => meta
                .get("conversationId")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        let Some(conversation) = conversation else {
            return elicit_result(Asked::NobodyWatching);
        };
        let deadline = self.person_deadline;
        let events = &self.events;
        match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
                let fields = match crate::events::form::fields(&schema) {
                    Ok(fields) => fields,
                    Err(error) => {
                        tracing::warn!(connection, %error, "a server's form was declined unseen");
                        let said = format!("{connection} asked with a form {error}; declined.");
                        events.emit(&conversation, Event::said(&said));
                        return elicit_result(Asked::NobodyWatching);
                    }
                };
                let asked = events
                    .ask_of(
                        QuestionKind::Form(fields),
                        connection,
                        &conversation,
                        &message,
                        deadline,
                    )
                    .await;
                elicit_result(asked)
            }
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => {
                let Some(origin) = offered_link(&url) else {
                    tracing::warn!(connection, "a server's link that is not https was declined");
                    let said = format!(
                        "{connection} asked you to open a link this desk does not open (only \
                         https, or http on this machine); declined."
                    );
                    events.emit(&conversation, Event::said(&said));
                    return elicit_result(Asked::NobodyWatching);
                };
                let link = QuestionKind::Link { url, origin };
                let asked = events
                    .ask_of(link, connection, &conversation, &message, deadline)
                    .await;
                if matches!(asked, Asked::Answered(Answer::Yes { .. })) {
                    let opened = (connection.to_owned(), elicitation_id);
                    backchannel::lock(&self.links).insert(opened, conversation);
                }
                elicit_result(asked)
            }
            _ => elicit_result(Asked::NobodyWatching),
        }
    }

    /// The page a link question sent the person to is done: said in the conversation that
    /// asked (once; an id the desk never accepted is ignored).
    fn on_elicitation_complete(&self, connection: &str, elicitation_id: &str) {
        let opened = (connection.to_owned(), elicitation_id.to_owned());
        let Some(conversation) = backchannel::lock(&self.links).remove(&opened) else {
            return;
        };
        let said = format!("{connection} says what the link was for is done.");
        self.events.emit(&conversation, Event::said(&said));
    }

    async fn sample(
        &self,
        connection: &str,
        question: SamplingQuestion,
        caller: Option<rmcp::model::ProgressToken>,
    ) -> Result<SamplingAnswer, ErrorData> {
        use crate::llm::Message;
        let Some(model) = &self.model else {
            return Err(ErrorData::invalid_request(
                "this desk has no model to sample with",
                None,
            ));
        };
        let Some(rmcp::model::ProgressToken(rmcp::model::NumberOrString::String(conversation))) =
            caller
        else {
            return Err(ErrorData::invalid_request(
                "no conversation to ask for approval",
                None,
            ));
        };
        let messages = Message::sampled(&question);
        let ask = approval_text(connection, &question);
        match self.approval(connection, &conversation, &ask).await {
            Asked::Answered(Answer::Yes { .. }) => {}
            Asked::Answered(Answer::No | Answer::Cancel | Answer::Filled(_))
            | Asked::NobodyWatching => {
                return Err(ErrorData::new(
                    rmcp::model::ErrorCode(-1),
                    "the person declined the request for the model",
                    None,
                ));
            }
            Asked::Expired => {
                return Err(ErrorData::new(
                    rmcp::model::ErrorCode(-1),
                    "nobody approved the request for the model in time",
                    None,
                ));
            }
        }
        // Every field the request names is honoured (the host refused those a reply of text
        // cannot): its cap, its temperature, its stop sequences.
        let asked = model.capped(question.max_tokens).tuned(|generation| {
            if let Some(temperature) = question.temperature {
                generation.temperature = Some(temperature.clamp(0.0, 2.0));
            }
            generation.stop = question.stop_sequences.clone();
        });
        let turn = asked
            .complete(&messages, &[])
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let text = turn.message.content.unwrap_or_default();
        // The reply goes to the server only once the person has read it.
        let review = format!("The model answered. Send this reply to {connection}? {text}");
        match self.approval(connection, &conversation, &review).await {
            // The result names the model that answered.
            Asked::Answered(Answer::Yes { .. }) => Ok(SamplingAnswer {
                text,
                model: model.describe().1.to_owned(),
            }),
            Asked::Answered(Answer::No | Answer::Cancel | Answer::Filled(_))
            | Asked::NobodyWatching => Err(ErrorData::new(
                rmcp::model::ErrorCode(-1),
                "the person did not let the model's reply go to the server",
                None,
            )),
            Asked::Expired => Err(ErrorData::new(
                rmcp::model::ErrorCode(-1),
                "nobody let the model's reply go in time",
                None,
            )),
        }
    }

    fn on_progress(&self, connection: &str, progress: ProgressNotificationParam) {
        let rmcp::model::NumberOrString::String(conversation) = &progress.progress_token.0 else {
            return;
        };
        let fraction = match progress.total {
            Some(total) if total > 0.0 => progress.progress / total,
            _ => progress.progress,
        };
        let percent = (fraction * 100.0).round().clamp(0.0, 100.0) as u32;
        // The server's own words, kept short (a progress line, not a message).
        let message = progress
            .message
            .map(|text| text.chars().take(MAX_PROGRESS_MESSAGE).collect());
        let server = connection.to_owned();
        let event = Event::Progress {
            percent,
            server,
            message,
        };
        self.events.emit(conversation, event);
    }

    /// A server's tools changed: say what it offers now, as at start-up (the model is given the
    /// new list at its next turn, which lists the tools afresh).
    fn on_list_changed(&self, connection: &str, kind: backchannel::ListKind) {
        if kind != backchannel::ListKind::Tools {
            tracing::info!(connection, ?kind, "a server's list changed");
            return;
        }
        let Some(host) = self.host.get().and_then(std::sync::Weak::upgrade) else {
            return;
        };
        let connection = connection.to_owned();
        tokio::spawn(async move {
            let Ok(server) = host.connection(&connection) else {
                return;
            };
            match server.tools().await {
                Ok(tools) => {
                    tracing::info!("{}", offers(&connection, "now offers", &tools));
                }
                Err(error) => {
                    tracing::warn!(%connection, %error, "its tools changed and could not be listed")
                }
            }
        });
    }

    /// A server's log message: in the desk's log at its own level, and on the page of the
    /// conversation whose call it came with (when the host could tell).
    fn on_log(&self, connection: &str, message: LogMessage) {
        use backchannel::LogLevel;
        let text = match &message.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let text: String = text.chars().take(crate::events::MAX_LOG_TEXT).collect();
        let logger = message.logger.as_deref().unwrap_or(connection);
        match message.level {
            LogLevel::Debug => tracing::debug!(connection, logger, "{text}"),
            LogLevel::Info | LogLevel::Notice => tracing::info!(connection, logger, "{text}"),
            LogLevel::Warning => tracing::warn!(connection, logger, "{text}"),
            _ => tracing::error!(connection, logger, level = ?message.level, "{text}"),
        }
        if let Some(rmcp::model::ProgressToken(rmcp::model::NumberOrString::String(conversation))) =
            &message.caller
        {
            let event = Event::Log {
                server: connection.to_owned(),
                level: message.level.as_str().to_owned(),
                text,
            };
            self.events.emit(conversation, event);
        }
    }
}

/// The person's answer as the server reads it, with why it is so in its `_meta`
/// ([`backchannel::ANSWER_REASON_META_KEY`]): yes (with the note) or no, the person's; declined
/// unseen when nobody could be shown the question (asking again cannot help while nobody is
/// there); cancelled when it was shown and nobody answered in time (nobody said no).
pub(crate) fn elicit_result(asked: Asked) -> ElicitResult {
    use backchannel::AnswerReason;
    let (mut result, reason) = match asked {
        Asked::Answered(Answer::Yes { note }) => (
            ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"confirmed": true, "note": note})),
            AnswerReason::Person,
        ),
        Asked::Answered(Answer::Filled(content)) => (
            ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content)),
            AnswerReason::Person,
        ),
        Asked::Answered(Answer::No) => (
            ElicitResult::new(ElicitationAction::Decline),
            AnswerReason::Person,
        ),
        Asked::Answered(Answer::Cancel) => (
            ElicitResult::new(ElicitationAction::Cancel),
            AnswerReason::Person,
        ),
        Asked::NobodyWatching => (
            ElicitResult::new(ElicitationAction::Decline),
            AnswerReason::NotShown,
        ),
        Asked::Expired => (
            ElicitResult::new(ElicitationAction::Cancel),
            AnswerReason::Expired,
        ),
    };
    result.meta =
        serde_json::from_value(json!({ backchannel::ANSWER_REASON_META_KEY: reason.as_str() }))
            .ok();
    result
}

/// The origin of `url` when the desk offers it as a link: `https:`, or `http:` on a loopback
/// address (a server on this machine); anything else (`javascript:`, `file:`, plain `http:`
/// across the network) is never offered.
pub(crate) fn offered_link(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let offered = match parsed.scheme() {
        "https" => true,
        "http" => loopback,
        _ => false,
    };
    (offered && parsed.username().is_empty() && parsed.password().is_none())
        .then(|| parsed.origin().ascii_serialization())
}

/// "orders offers 6 tools: …": what a server offers, as the desk says it.
pub(crate) fn offers(connection: &str, verb: &str, tools: &[rmcp::model::Tool]) -> String {
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    format!(
        "{connection} {verb} {} tools: {}",
        names.len(),
        names.join(", ")
    )
}

/// What the person approves for a sampling request: everything the model would be given (the
/// server's instructions, the turns) and how long a reply it may write.
fn approval_text(connection: &str, question: &SamplingQuestion) -> String {
    let shown: Vec<&str> = question.messages.iter().map(|t| t.text.as_str()).collect();
    let instructions = question
        .system_prompt
        .as_deref()
        .filter(|system| !system.trim().is_empty())
        .map(|system| format!(", with the instructions \"{}\"", system.trim()))
        .unwrap_or_default();
    let wish = question
        .model_preferences
        .as_ref()
        .map(preferred)
        .unwrap_or_default();
    format!(
        "{connection} asks the model (a reply of at most {} tokens{wish}){instructions}: {}",
        question.max_tokens,
        shown.join(" / ")
    )
}

/// What a server's model preferences ask for, in words ("; it would like a fast, cheap
/// model"): the priorities it rates above one half, and its name hints. The desk has one model,
/// so this is for the person to read, not a choice it makes.
fn preferred(wish: &backchannel_host::ModelWish) -> String {
    let high = |priority: Option<f32>| priority.is_some_and(|p| p > 0.5);
    let mut qualities: Vec<String> = [
        (wish.speed, "fast"),
        (wish.cost, "cheap"),
        (wish.intelligence, "capable"),
    ]
    .into_iter()
    .filter(|(priority, _)| high(*priority))
    .map(|(_, word)| word.to_owned())
    .collect();
    if !wish.hints.is_empty() {
        qualities.push(format!("like {}", wish.hints.join(" or ")));
    }
    if qualities.is_empty() {
        return String::new();
    }
    format!("; it would like a {} model", qualities.join(", "))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use backchannel_host::{HostHandler as _, SamplingQuestion, SamplingTurn};

    use super::DeskHandler;
    use crate::events::{Answer, Event, Events};

    /// A chat-completions model on a loopback port that answers "a summary" and keeps what it
    /// was sent.
    async fn fake_model(seen: Arc<Mutex<Vec<serde_json::Value>>>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route(
            "/chat/completions",
            axum::routing::post(move |axum::Json(body): axum::Json<serde_json::Value>| {
                seen.lock().unwrap().push(body);
                async {
                    axum::Json(serde_json::json!({"choices": [{"message":
                        {"role": "assistant", "content": "a summary"}}]}))
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}")
    }

    /// Issue 72: the desk dropped a sampling request's temperature and stop sequences without a
    /// word, and named a fixed "support-agent-model" in its result. Both reach the model now,
    /// and the result names the model that answered.
    #[tokio::test]
    async fn a_sampling_requests_settings_reach_the_model_and_the_result_names_it() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let url = fake_model(seen.clone()).await;
        let model = crate::llm::OpenAiCompatible::new(
            &url,
            None,
            "tiny-model",
            std::time::Duration::from_secs(10),
        )
        .unwrap();
        let events = Arc::new(Events::default());
        let handler = DeskHandler {
            events: events.clone(),
            person_deadline: std::time::Duration::from_secs(60),
            model: Some(crate::llm::Provider::OpenAi(model)),
            sign_in_callback: None,
            sign_in_for: super::SignInFor::ThePerson,
            links: Default::default(),
            host: Default::default(),
        };
        let (secret, mut page) = events.open("c1");
        let question = SamplingQuestion {
            system_prompt: None,
            messages: vec![SamplingTurn {
                assistant: false,
                text: "Summarize: great film".into(),
            }],
            max_tokens: 40,
            model_preferences: None,
            temperature: Some(0.3),
            stop_sequences: vec!["END".into()],
            not_honoured: Vec::new(),
        };
        let caller = rmcp::model::ProgressToken(rmcp::model::NumberOrString::String("c1".into()));
        let sampled =
            tokio::spawn(async move { handler.sample("moviedb", question, Some(caller)).await });
        // Approve the request, then the reply.
        for _ in 0..2 {
            let id = loop {
                if let Some(Event::Sampling { question }) = page.recv().await {
                    break question.id;
                }
            };
            events
                .answer(
                    &id,
                    &secret,
                    Answer::Yes {
                        note: String::new(),
                    },
                )
                .unwrap();
        }
        let answer = sampled.await.unwrap().unwrap();
        assert_eq!(answer.text, "a summary");
        assert_eq!(answer.model, "tiny-model");
        let sent = seen.lock().unwrap()[0].clone();
        assert_eq!(sent["max_tokens"], 40, "{sent}");
        assert!(
            (sent["temperature"].as_f64().unwrap() - 0.3).abs() < 1e-6,
            "{sent}"
        );
        assert_eq!(sent["stop"], serde_json::json!(["END"]), "{sent}");
    }

    /// Issue 72: only `https:` (and `http:` on this machine) is offered as a link, and the
    /// origin shown is where it leads.
    #[test]
    fn only_https_or_loopback_http_is_offered_as_a_link() {
        use super::offered_link;
        assert_eq!(
            offered_link("https://auth.example.com:8443/authorize?x=1").as_deref(),
            Some("https://auth.example.com:8443")
        );
        assert_eq!(
            offered_link("http://127.0.0.1:4000/upstream-sign-in/ab").as_deref(),
            Some("http://127.0.0.1:4000")
        );
        assert_eq!(
            offered_link("http://localhost/x").as_deref(),
            Some("http://localhost")
        );
        for refused in [
            "javascript:alert(1)",
            "http://example.com/login",
            "file:///etc/passwd",
            "data:text/html,hi",
            "https://user:pw@example.com/",
            "not a url",
        ] {
            assert_eq!(offered_link(refused), None, "{refused}");
        }
    }

    #[test]
    fn the_approval_shows_the_instructions_the_turns_and_the_cap() {
        let mut question = SamplingQuestion {
            system_prompt: Some("You summarize movie reviews.".into()),
            messages: vec![SamplingTurn {
                assistant: false,
                text: "Summarize: great film".into(),
            }],
            max_tokens: 300,
            model_preferences: None,
            temperature: None,
            stop_sequences: Vec::new(),
            not_honoured: Vec::new(),
        };
        assert_eq!(
            super::approval_text("moviedb", &question),
            "moviedb asks the model (a reply of at most 300 tokens), with the instructions \
             \"You summarize movie reviews.\": Summarize: great film"
        );
        question.system_prompt = Some("  ".into());
        assert_eq!(
            super::approval_text("moviedb", &question),
            "moviedb asks the model (a reply of at most 300 tokens): Summarize: great film"
        );
        question.model_preferences = Some(backchannel_host::ModelWish {
            speed: Some(0.8),
            cost: Some(0.7),
            intelligence: Some(0.3),
            hints: Vec::new(),
        });
        assert_eq!(
            super::approval_text("moviedb", &question),
            "moviedb asks the model (a reply of at most 300 tokens; it would like a fast, cheap \
             model): Summarize: great film"
        );
    }
}
