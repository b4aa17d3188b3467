//! The host handler of the gateway's upstream connections: each question, progress
//! notification and log message of an upstream call goes to the downstream call it belongs
//! to, found by the caller token the gateway gave that call (the `progressToken` of its
//! [`CallContext`](backchannel_host::CallContext)). A question goes as the upstream asked it:
//! to a 2025-11-25 client at once (`Ctx::ask_now`), or into a held call's [`Inbox`], whose
//! round passes it on to a 2026-07-28 client; the client's answer goes back as it gave it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use backchannel::lock;
use backchannel::{
    Backchannel, Change, Ctx, ListKind, NotAnswered, Root, Sampled, SamplingMessage,
    SamplingRequest, WeakBackchannel,
};
use backchannel_host::{Declared, HostHandler, LogMessage, SamplingAnswer, SamplingQuestion};
use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequest, CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, InputRequest, InputRequests, ListRootsRequest, ListRootsResult,
    NumberOrString, ProgressNotificationParam, ProgressToken, RequestMetaObject,
};
use tokio::sync::{mpsc, oneshot, watch};

/// The questions a held call's upstream asked and waits on, by the gateway's keys.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    open: Mutex<BTreeMap<String, Question>>,
    /// Counts the questions asked, so a round can wait for the next one.
    asked: watch::Sender<u32>,
}

#[derive(Debug)]
struct Question {
    request: InputRequest,
    answer: oneshot::Sender<serde_json::Value>,
}

impl Inbox {
    /// Ask `request` under a key of its own (`kind` and how many questions came before it
    /// in the call) and wait for the client's answer (`None` when the call ended first).
    pub(crate) async fn ask(&self, kind: &str, request: InputRequest) -> Option<serde_json::Value> {
        let (answer, answered) = oneshot::channel();
        self.asked.send_modify(|count| {
            *count += 1;
            lock(&self.open).insert(format!("{kind}-{count}"), Question { request, answer });
        });
        answered.await.ok()
    }

    /// The questions waiting for an answer.
    pub(crate) fn open(&self) -> InputRequests {
        lock(&self.open)
            .iter()
            .map(|(key, question)| (key.clone(), question.request.clone()))
            .collect()
    }

    /// Hand the client's answers to the questions they answer; the rest stay open.
    pub(crate) fn answer(&self, responses: BTreeMap<String, serde_json::Value>) {
        let mut open = lock(&self.open);
        for (key, response) in responses {
            if let Some(question) = open.remove(&key) {
                let _ = question.answer.send(response);
            }
        }
    }

    /// Counts the questions asked.
    pub(crate) fn asked(&self) -> watch::Receiver<u32> {
        self.asked.subscribe()
    }
}

/// Routes upstream questions and progress to the downstream calls waiting on them.
#[derive(Debug, Default)]
pub struct Switchboard {
    calls: Mutex<HashMap<String, Arc<Asking>>>,
    next: AtomicU64,
    /// The gateway's layer, which tells the downstream clients of the upstreams' changes.
    layer: std::sync::OnceLock<WeakBackchannel>,
    /// Told when an upstream's tools changed (the gateway makes its list again).
    tools_changed: std::sync::OnceLock<mpsc::UnboundedSender<()>>,
}

/// Where an upstream call's questions go.
#[derive(Debug)]
enum Asker {
    /// To the client of the downstream call, at once on its 2025-11-25 session.
    Ctx(Ctx),
    /// To a held call's inbox, whose round passes them on (see `hold`).
    Held(Arc<Inbox>),
}

/// One downstream call, while its upstream call runs.
#[derive(Debug)]
struct Asking {
    asker: Asker,
    /// What the downstream client declared it can answer: nothing else is passed on.
    declared: Declared,
    updates: mpsc::UnboundedSender<Update>,
}

/// What an upstream tells of a call while it runs.
#[derive(Debug)]
pub(crate) enum Update {
    Progress(ProgressNotificationParam),
    Log(LogMessage),
}

/// Removes a call's entry from the relay when dropped.
pub(crate) struct Registered {
    relay: Arc<Switchboard>,
    token: String,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.relay.calls).remove(&self.token);
    }
}

impl Switchboard {
    /// Tell the downstream clients of upstream changes through `layer` from now on.
    pub(crate) fn announce_through(&self, layer: &Backchannel) {
        let _ = self.layer.set(layer.downgrade());
    }

    /// Tell `changed` when an upstream's tools changed, from now on.
    pub(crate) fn on_tools_changed(&self, changed: mpsc::UnboundedSender<()>) {
        let _ = self.tools_changed.set(changed);
    }

    fn announce(&self, change: Change) {
        let Some(layer) = self.layer.get().and_then(WeakBackchannel::upgrade) else {
            return;
        };
        tokio::spawn(async move {
            match change {
                Change::ListChanged(kind) => layer.notify_list_changed(kind).await,
                Change::ResourceUpdated(uri) => layer.notify_resource_updated(&uri).await,
            };
        });
    }

    fn register(
        self: &Arc<Self>,
        asker: Asker,
        declared: Declared,
    ) -> (String, mpsc::UnboundedReceiver<Update>, Registered) {
        let token = format!("gateway-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (updates, updates_rx) = mpsc::unbounded_channel();
        let asking = Asking {
            asker,
            declared,
            updates,
        };
        lock(&self.calls).insert(token.clone(), Arc::new(asking));
        let registered = Registered {
            relay: self.clone(),
            token: token.clone(),
        };
        (token, updates_rx, registered)
    }

    /// Register a downstream call whose questions are asked of its client through `ctx`.
    /// Returns the caller token its upstream call carries, the upstream's progress and log
    /// messages in order, and the registration.
    pub(crate) fn open(
        self: &Arc<Self>,
        ctx: Ctx,
    ) -> (String, mpsc::UnboundedReceiver<Update>, Registered) {
        let declared = crate::config::answerable(ctx.client_capabilities());
        self.register(Asker::Ctx(ctx), declared)
    }

    /// Register an upstream call held between a 2026-07-28 client's rounds: its questions
    /// go to the returned inbox. Returns its caller token, the inbox, its progress and log
    /// messages, and the registration.
    pub(crate) fn open_held(
        self: &Arc<Self>,
        declared: Declared,
    ) -> (
        String,
        Arc<Inbox>,
        mpsc::UnboundedReceiver<Update>,
        Registered,
    ) {
        let inbox = Arc::new(Inbox::default());
        let (token, updates, registered) = self.register(Asker::Held(inbox.clone()), declared);
        (token, inbox, updates, registered)
    }

    fn asking(&self, caller: Option<&ProgressToken>) -> Option<Arc<Asking>> {
        let ProgressToken(NumberOrString::String(token)) = caller? else {
            return None;
        };
        lock(&self.calls).get(token.as_ref()).cloned()
    }
}

impl Asking {
    /// Ask `request` of the client, as the upstream asked it, and return the client's answer
    /// as it gave it; a question the client did not declare it can answer (or a URL it must
    /// not be sent) is not passed on.
    async fn ask(
        &self,
        kind: &str,
        request: InputRequest,
    ) -> Result<serde_json::Value, NotAnswered> {
        if let Err(why) = passable(&self.declared, &request) {
            tracing::info!(%why, "an upstream's question was not passed on");
            return Err(NotAnswered::Unsupported);
        }
        match &self.asker {
            Asker::Ctx(ctx) => ctx.ask_now(request).await,
            Asker::Held(inbox) => inbox.ask(kind, request).await.ok_or(NotAnswered::Cancelled),
        }
    }
}

/// Why a question may not go to a client that declared `declared`, if it may not: a kind of
/// question it did not declare, or a URL that is not `https:` (`http:` on loopback only).
pub(crate) fn passable(declared: &Declared, request: &InputRequest) -> Result<(), String> {
    let declared_it = match request {
        InputRequest::Elicitation(elicit) => match &elicit.params {
            ElicitRequestParams::UrlElicitationParams { url, .. } => {
                if !declared.url_elicitation {
                    false
                } else {
                    return safe_url(url);
                }
            }
            _ => declared.elicitation,
        },
        InputRequest::CreateMessage(_) => declared.sampling,
        InputRequest::ListRoots(_) => declared.roots,
        _ => false,
    };
    if declared_it {
        Ok(())
    } else {
        Err(format!(
            "the client did not declare it can answer {}",
            question_kind(request)
        ))
    }
}

fn question_kind(request: &InputRequest) -> &'static str {
    match request {
        InputRequest::Elicitation(elicit) => match &elicit.params {
            ElicitRequestParams::UrlElicitationParams { .. } => "URL elicitation",
            _ => "form elicitation",
        },
        InputRequest::CreateMessage(_) => "sampling",
        InputRequest::ListRoots(_) => "roots",
        _ => "this kind of question",
    }
}

/// `url` if a person may be sent to it: `https:`, or `http:` on a loopback host; never
/// `javascript:`, `data:`, `file:` and the like, nor a URL without a host.
fn safe_url(url: &str) -> Result<(), String> {
    let refused = |why: &str| Err(format!("the URL is not passed on: {why}"));
    let Some((scheme, rest)) = url.split_once(':') else {
        return refused("it has no scheme");
    };
    let Some(authority) = rest.strip_prefix("//") else {
        return refused("it names no host");
    };
    let authority = authority.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return refused("it carries credentials before its host");
    }
    let host = if authority.starts_with('[') {
        authority
            .find(']')
            .map_or(authority, |end| &authority[..=end])
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    if host.is_empty() || url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return refused("it names no host");
    }
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host == "[::1]"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback());
    match scheme.to_ascii_lowercase().as_str() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        "http" => refused("plain http is allowed on loopback only"),
        _ => refused("only https: (or http: on loopback) URLs are opened"),
    }
}

/// Why the client gave no answer, for the upstream.
fn not_answered(why: &NotAnswered) -> ErrorData {
    let message = match why {
        NotAnswered::Refused(error) => return error.clone(),
        NotAnswered::Unsupported => "the gateway's client does not answer this kind of question",
        NotAnswered::TimedOut => "the gateway's client did not answer in time",
        NotAnswered::Cancelled => "the call was cancelled",
        _ => "the gateway's client cannot be asked now",
    };
    ErrorData::invalid_request(message.to_owned(), None)
}

fn action(action: ElicitationAction) -> ElicitResult {
    ElicitResult::new(action)
}

/// The client's answer read as `T`, else an error naming what was missing.
fn read<T: serde::de::DeserializeOwned>(
    answer: Result<serde_json::Value, NotAnswered>,
    what: &str,
) -> Result<T, ErrorData> {
    let answer = answer.map_err(|why| not_answered(&why))?;
    serde_json::from_value(answer).map_err(|_| {
        ErrorData::invalid_request(format!("the gateway's client gave no {what}"), None)
    })
}

impl HostHandler for Switchboard {
    fn elicit(
        &self,
        _connection: &str,
        request: ElicitRequestParams,
        _meta: RequestMetaObject,
        caller: Option<ProgressToken>,
    ) -> impl Future<Output = ElicitResult> + Send {
        let asking = self.asking(caller.as_ref());
        async move {
            let Some(asking) = asking else {
                return action(ElicitationAction::Decline);
            };
            let request = InputRequest::Elicitation(ElicitRequest::new(request));
            match asking.ask("elicit", request).await {
                Ok(answer) => serde_json::from_value::<ElicitResult>(answer)
                    .unwrap_or_else(|_| action(ElicitationAction::Cancel)),
                Err(NotAnswered::Unsupported | NotAnswered::Refused(_)) => {
                    action(ElicitationAction::Decline)
                }
                Err(_) => action(ElicitationAction::Cancel),
            }
        }
    }

    fn sample(
        &self,
        _connection: &str,
        question: SamplingQuestion,
        caller: Option<ProgressToken>,
    ) -> impl Future<Output = Result<SamplingAnswer, ErrorData>> + Send {
        let asking = self.asking(caller.as_ref());
        async move {
            let Some(asking) = asking else {
                return Err(ErrorData::invalid_request(
                    "no call of this gateway is waiting for this answer",
                    None,
                ));
            };
            let messages = question
                .messages
                .iter()
                .map(|turn| {
                    if turn.assistant {
                        SamplingMessage::assistant_text(turn.text.clone())
                    } else {
                        SamplingMessage::user_text(turn.text.clone())
                    }
                })
                .collect();
            let mut request = SamplingRequest::new(messages, question.max_tokens);
            request.system_prompt = question.system_prompt.clone();
            // Every field the host hands on goes on (it refused the upstream's request if it
            // asked what cannot: tools, content that is not text, context).
            request.temperature = question.temperature;
            request.stop_sequences =
                (!question.stop_sequences.is_empty()).then(|| question.stop_sequences.clone());
            let request = InputRequest::CreateMessage(CreateMessageRequest::new(request));
            let answer: CreateMessageResult =
                read(asking.ask("sampling", request).await, "sampling result")?;
            let text = Sampled::Message(Box::new(answer.clone()))
                .text()
                .unwrap_or_default()
                .to_owned();
            Ok(SamplingAnswer {
                text,
                model: answer.model,
            })
        }
    }

    fn list_roots(
        &self,
        _connection: &str,
        configured: Vec<Root>,
        caller: Option<ProgressToken>,
    ) -> impl Future<Output = Result<Vec<Root>, ErrorData>> + Send {
        let asking = self.asking(caller.as_ref());
        async move {
            // Asked outside any call (a server asks once it starts): the connection's own
            // roots, from the gateway's configuration.
            let Some(asking) = asking else {
                return Ok(configured);
            };
            let request = InputRequest::ListRoots(ListRootsRequest {
                method: Default::default(),
                extensions: Default::default(),
            });
            let listed: ListRootsResult = read(asking.ask("roots", request).await, "roots")?;
            Ok(listed.roots)
        }
    }

    fn on_progress(&self, _connection: &str, progress: ProgressNotificationParam) {
        if let Some(asking) = self.asking(Some(&progress.progress_token)) {
            let _ = asking.updates.send(Update::Progress(progress));
        }
    }

    fn on_list_changed(&self, connection: &str, kind: ListKind) {
        match kind {
            // The gateway lists the tools again, then tells its clients.
            ListKind::Tools => {
                tracing::debug!(upstream = %connection, "the upstream's tools changed");
                if let Some(changed) = self.tools_changed.get() {
                    let _ = changed.send(());
                }
            }
            // Prompts and resources are listed anew on every request.
            other => self.announce(Change::ListChanged(other)),
        }
    }

    fn on_resource_updated(&self, _connection: &str, uri: &str) {
        self.announce(Change::ResourceUpdated(uri.to_owned()));
    }

    fn on_log(&self, connection: &str, message: LogMessage) {
        match self.asking(message.caller.as_ref()) {
            Some(asking) => {
                let _ = asking.updates.send(Update::Log(message));
            }
            // Not a call's (or not known whose): the gateway's own log has it.
            None => {
                tracing::debug!(upstream = %connection, level = ?message.level, data = %message.data, "upstream log message")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_safe_urls_are_passed_on() {
        for ok in [
            "https://auth.example/sign-in?state=1",
            "HTTPS://auth.example:8443/x",
            "http://127.0.0.1:8080/callback",
            "http://localhost/x",
            "http://[::1]:9/x",
        ] {
            assert_eq!(safe_url(ok), Ok(()), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "JavaScript://%0aalert(1)",
            "data:text/html,<script>",
            "file:///etc/passwd",
            "http://auth.example/x",
            "https://",
            "https:///x",
            "https://user:pw@auth.example/x",
            "https://auth.example/x y",
            "ftp://auth.example/x",
            "auth.example/x",
        ] {
            assert!(safe_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_question_goes_only_to_a_client_that_declared_its_kind() {
        let url = |url: &str| {
            InputRequest::Elicitation(ElicitRequest::new(
                ElicitRequestParams::UrlElicitationParams {
                    meta: None,
                    message: "Sign in".into(),
                    url: url.into(),
                    elicitation_id: "e1".into(),
                },
            ))
        };
        let form_only = Declared {
            elicitation: true,
            url_elicitation: false,
            sampling: false,
            roots: false,
            tasks: false,
        };
        assert!(passable(&form_only, &url("https://auth.example/")).is_err());
        let roots = InputRequest::ListRoots(ListRootsRequest {
            method: Default::default(),
            extensions: Default::default(),
        });
        assert!(passable(&form_only, &roots).is_err());
        let everything = crate::config::relayed_capabilities();
        assert_eq!(passable(&everything, &url("https://auth.example/")), Ok(()));
        assert!(passable(&everything, &url("javascript:alert(1)")).is_err());
        assert_eq!(passable(&everything, &roots), Ok(()));
    }

    #[tokio::test]
    async fn an_answer_reaches_only_the_question_it_answers() {
        let inbox = Arc::new(Inbox::default());
        let mut asked = inbox.asked();
        let asking = tokio::spawn({
            let inbox = inbox.clone();
            async move {
                let request = backchannel::__rmcp::model::InputRequest::ListRoots(
                    rmcp::model::ListRootsRequest {
                        method: Default::default(),
                        extensions: Default::default(),
                    },
                );
                inbox.ask("roots", request).await
            }
        });
        asked.changed().await.unwrap();
        assert_eq!(inbox.open().keys().collect::<Vec<_>>(), ["roots-1"]);
        inbox.answer(BTreeMap::from([(
            "other".to_owned(),
            serde_json::json!({"roots": []}),
        )]));
        assert_eq!(
            inbox.open().len(),
            1,
            "an answer to another key changes nothing"
        );
        inbox.answer(BTreeMap::from([(
            "roots-1".to_owned(),
            serde_json::json!({"roots": []}),
        )]));
        assert_eq!(
            asking.await.unwrap(),
            Some(serde_json::json!({"roots": []}))
        );
        assert!(inbox.open().is_empty());
    }
}
