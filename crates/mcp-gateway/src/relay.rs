//! The host handler of the gateway's upstream connections: each question and progress
//! notification of an upstream call goes to the downstream call it belongs to, found by the
//! caller token the gateway gave that call (the `progressToken` of its [`CallContext`]
//! (backchannel_host::CallContext)).

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use backchannel::{
    Backchannel, Change, Ctx, Elicited, ListKind, NotAnswered, Root, RootsListed, Sampled,
    SamplingMessage, SamplingRequest, Suspend, UrlElicited, WeakBackchannel,
};
use backchannel_host::{HostHandler, LogMessage, SamplingAnswer, SamplingQuestion};
use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequest, CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, InputRequest, InputRequests, ListRootsRequest, ListRootsResult,
    NumberOrString, ProgressNotificationParam, ProgressToken, RequestMetaObject,
};

use tokio::sync::{mpsc, oneshot, watch};

/// How long the answer to a question of an abandoned run is held back (see
/// [`Asking::suspend`]): a 2025-11-25 upstream's question waits at most this long after its
/// call was cancelled.
const ABANDONED_ANSWER_HOLD: std::time::Duration = std::time::Duration::from_secs(30);

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
    /// Ask `request` under `key` and wait for the client's answer (`None` when the call ended
    /// first).
    pub(crate) async fn ask(
        &self,
        key: String,
        request: InputRequest,
    ) -> Option<serde_json::Value> {
        let (answer, answered) = oneshot::channel();
        lock(&self.open).insert(key, Question { request, answer });
        self.asked.send_modify(|count| *count += 1);
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
pub struct Relay {
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
    /// Through the downstream call's `Ctx` (the layer's rounds).
    Ctx(Ctx),
    /// To a held call's inbox, whose questions the gateway passes on itself (see `hold`).
    Held(Arc<Inbox>),
}

/// One downstream call, while its upstream call runs.
#[derive(Debug)]
struct Asking {
    asker: Asker,
    /// Taken by the first question that cannot be answered in this run (2026-07-28
    /// downstream): the call then ends with it.
    suspend: Mutex<Option<oneshot::Sender<Suspend>>>,
    updates: mpsc::UnboundedSender<Update>,
    /// How often each question (by its hash) was asked in this run: the same question asked
    /// again gets a key of its own.
    asked: Mutex<HashMap<u64, u32>>,
    /// Cancelled when the run has ended (its upstream call dropped, and so cancelled upstream).
    ended: tokio_util::sync::CancellationToken,
    /// How many questions of this run went to the layer unanswered.
    suspended: tokio::sync::watch::Sender<u32>,
}

/// A downstream call registered with the relay; unregistered when dropped.
pub(crate) struct Open {
    /// The caller token its upstream call carries.
    pub(crate) token: String,
    /// The question that could not be answered in this run, when one comes.
    pub(crate) suspended: Suspended,
    /// The upstream's progress and log messages, in order.
    pub(crate) updates: mpsc::UnboundedReceiver<Update>,
    /// Counts the questions of this run that went to the layer unanswered.
    pub(crate) questions: tokio::sync::watch::Receiver<u32>,
    pub(crate) registered: Registered,
}

/// What an upstream tells of a call while it runs.
#[derive(Debug)]
pub(crate) enum Update {
    Progress(ProgressNotificationParam),
    Log(LogMessage),
}

/// Waits for a [`Suspend`]; never ready when none comes.
pub(crate) struct Suspended(oneshot::Receiver<Suspend>);

impl Suspended {
    pub(crate) async fn wait(&mut self) -> Suspend {
        match (&mut self.0).await {
            Ok(suspend) => suspend,
            Err(_) => std::future::pending().await,
        }
    }
}

/// Removes a call's entry from the relay when dropped.
pub(crate) struct Registered {
    relay: Arc<Relay>,
    token: String,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(asking) = lock(&self.relay.calls).remove(&self.token) {
            asking.ended.cancel();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Relay {
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

    /// Register a downstream call whose questions are asked through `ctx`.
    pub(crate) fn open(self: &Arc<Self>, ctx: Ctx) -> Open {
        let token = format!("gateway-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (suspend, suspended) = oneshot::channel();
        let (updates, updates_rx) = mpsc::unbounded_channel();
        let (suspended_count, questions) = tokio::sync::watch::channel(0);
        let asking = Asking {
            asker: Asker::Ctx(ctx),
            suspend: Mutex::new(Some(suspend)),
            updates,
            asked: Mutex::new(HashMap::new()),
            ended: tokio_util::sync::CancellationToken::new(),
            suspended: suspended_count,
        };
        lock(&self.calls).insert(token.clone(), Arc::new(asking));
        Open {
            token: token.clone(),
            suspended: Suspended(suspended),
            updates: updates_rx,
            questions,
            registered: Registered {
                relay: self.clone(),
                token,
            },
        }
    }

    /// Register an upstream call held between a 2026-07-28 client's rounds: its questions
    /// go to the returned inbox. Returns its caller token, the inbox, its progress and log
    /// messages, and the registration.
    pub(crate) fn open_held(
        self: &Arc<Self>,
    ) -> (
        String,
        Arc<Inbox>,
        mpsc::UnboundedReceiver<Update>,
        Registered,
    ) {
        let token = format!("gateway-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let inbox = Arc::new(Inbox::default());
        let (updates, updates_rx) = mpsc::unbounded_channel();
        let (suspended, _) = tokio::sync::watch::channel(0);
        let asking = Asking {
            asker: Asker::Held(inbox.clone()),
            suspend: Mutex::new(None),
            updates,
            asked: Mutex::new(HashMap::new()),
            ended: tokio_util::sync::CancellationToken::new(),
            suspended,
        };
        lock(&self.calls).insert(token.clone(), Arc::new(asking));
        let registered = Registered {
            relay: self.clone(),
            token: token.clone(),
        };
        (token, inbox, updates_rx, registered)
    }

    fn asking(&self, caller: Option<&ProgressToken>) -> Option<Arc<Asking>> {
        let ProgressToken(NumberOrString::String(token)) = caller? else {
            return None;
        };
        lock(&self.calls).get(token.as_ref()).cloned()
    }
}

impl Asking {
    /// The key of a question in the layer's answers: what it asks, and how many times the same
    /// was asked before in this run, so a run made again asks (and finds answered) the same
    /// keys in the same order.
    fn key(&self, kind: &str, question: &impl Hash) -> String {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        question.hash(&mut hasher);
        let hash = hasher.finish();
        let mut asked = lock(&self.asked);
        let seen = asked.entry(hash).or_default();
        let key = format!("{kind}-{hash:016x}-{seen}");
        *seen += 1;
        key
    }

    /// This run cannot answer: the downstream call ends with `suspend` (the layer asks the
    /// questions and runs the call again with the answers). Returns once the run has ended:
    /// no answer may reach the upstream before its call is dropped, or the upstream would go on
    /// with an answer the person never gave. (Asked inside a 2026-07-28 upstream round, the
    /// question's future is dropped with the call; asked by a 2025-11-25 upstream, the answer
    /// that follows finds the call cancelled.)
    async fn suspend(&self, suspend: Suspend) {
        if let Some(sender) = lock(&self.suspend).take() {
            let _ = sender.send(suspend);
        }
        self.suspended.send_modify(|count| *count += 1);
        self.ended.cancelled().await;
        // The host sends the upstream `notifications/cancelled` as the call is dropped, on a
        // request of its own that may arrive after this answer would: hold the answer back
        // long enough for the cancellation to land first.
        tokio::time::sleep(ABANDONED_ANSWER_HOLD).await;
    }
}

/// Why the client gave no answer, for the upstream.
fn not_answered(why: &NotAnswered) -> String {
    match why {
        NotAnswered::Unsupported => {
            "the gateway's client does not answer this kind of question".into()
        }
        NotAnswered::TimedOut => "the gateway's client did not answer in time".into(),
        NotAnswered::Cancelled => "the call was cancelled".into(),
        NotAnswered::Refused(error) => error.message.to_string(),
        _ => "the gateway's client cannot be asked now".into(),
    }
}

fn action(action: ElicitationAction) -> ElicitResult {
    ElicitResult::new(action)
}

impl HostHandler for Relay {
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
            // The upstream's question as it asked it; the client's answer as it gave it.
            let ctx = match &asking.asker {
                Asker::Ctx(ctx) if ctx.asks_now() => {
                    let request = InputRequest::Elicitation(ElicitRequest::new(request));
                    return match ctx.ask_now(request).await {
                        Ok(answer) => serde_json::from_value::<ElicitResult>(answer)
                            .unwrap_or_else(|_| action(ElicitationAction::Cancel)),
                        Err(NotAnswered::Unsupported | NotAnswered::Refused(_)) => {
                            action(ElicitationAction::Decline)
                        }
                        Err(_) => action(ElicitationAction::Cancel),
                    };
                }
                Asker::Ctx(ctx) => ctx,
                Asker::Held(inbox) => {
                    let key = asking.key(
                        "elicit",
                        &serde_json::to_string(&request).unwrap_or_default(),
                    );
                    let request = InputRequest::Elicitation(ElicitRequest::new(request));
                    return inbox
                        .ask(key, request)
                        .await
                        .and_then(|answer| serde_json::from_value::<ElicitResult>(answer).ok())
                        .unwrap_or_else(|| action(ElicitationAction::Cancel));
                }
            };
            match request {
                ElicitRequestParams::FormElicitationParams {
                    message,
                    requested_schema,
                    ..
                } => {
                    let schema = serde_json::to_string(&requested_schema).unwrap_or_default();
                    let key = asking.key("form", &(&message, &schema));
                    match ctx.elicit_form(&key, message, requested_schema).await {
                        Ok(Elicited::Accepted(content)) => {
                            action(ElicitationAction::Accept).with_content(content)
                        }
                        Ok(Elicited::Declined | Elicited::Unsupported) => {
                            action(ElicitationAction::Decline)
                        }
                        Ok(_) => action(ElicitationAction::Cancel),
                        Err(suspend) => {
                            asking.suspend(suspend).await;
                            action(ElicitationAction::Cancel)
                        }
                    }
                }
                ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                    let key = asking.key("url", &(&message, &url));
                    match ctx.elicit_url(&key, message, url).await {
                        Ok(UrlElicited::Accepted { .. }) => action(ElicitationAction::Accept),
                        Ok(UrlElicited::Declined | UrlElicited::Unsupported) => {
                            action(ElicitationAction::Decline)
                        }
                        Ok(_) => action(ElicitationAction::Cancel),
                        Err(suspend) => {
                            asking.suspend(suspend).await;
                            action(ElicitationAction::Cancel)
                        }
                    }
                }
                _ => action(ElicitationAction::Decline),
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
            let refused = |why: &str| ErrorData::invalid_request(why.to_owned(), None);
            let Some(asking) = asking else {
                return Err(refused(
                    "no call of this gateway is waiting for this answer",
                ));
            };
            let turns: Vec<(bool, &str)> = question
                .messages
                .iter()
                .map(|turn| (turn.assistant, turn.text.as_str()))
                .collect();
            let key = asking.key(
                "sampling",
                &(&question.system_prompt, &turns, question.max_tokens),
            );
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
            let sampled = |answer: serde_json::Value| {
                let answer = serde_json::from_value::<CreateMessageResult>(answer)
                    .map_err(|_| refused("the gateway's client gave no sampling result"))?;
                let text = Sampled::Message(Box::new(answer.clone()))
                    .text()
                    .unwrap_or_default()
                    .to_owned();
                Ok(SamplingAnswer {
                    text,
                    model: answer.model,
                })
            };
            let ctx = match &asking.asker {
                Asker::Ctx(ctx) if ctx.asks_now() => {
                    let request = InputRequest::CreateMessage(CreateMessageRequest::new(request));
                    return match ctx.ask_now(request).await {
                        Ok(answer) => sampled(answer),
                        Err(NotAnswered::Refused(error)) => Err(error),
                        Err(other) => Err(refused(&not_answered(&other))),
                    };
                }
                Asker::Ctx(ctx) => ctx,
                Asker::Held(inbox) => {
                    let request = InputRequest::CreateMessage(CreateMessageRequest::new(request));
                    return match inbox.ask(key, request).await {
                        Some(answer) => sampled(answer),
                        None => Err(refused("the gateway's client gave no sampling result")),
                    };
                }
            };
            match ctx.sample(&key, request).await {
                Ok(Sampled::Message(result)) => Ok(SamplingAnswer {
                    text: Sampled::Message(result.clone())
                        .text()
                        .unwrap_or_default()
                        .to_owned(),
                    model: result.model.clone(),
                }),
                Ok(Sampled::Refused { message, .. }) => Err(refused(&message)),
                Ok(Sampled::Unsupported) => {
                    Err(refused("the gateway's client does not offer sampling"))
                }
                Ok(_) => Err(refused("the gateway's client did not answer in time")),
                Err(suspend) => {
                    asking.suspend(suspend).await;
                    Err(refused("the question goes to the client in a later round"))
                }
            }
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
            let refused = |why: &str| ErrorData::invalid_request(why.to_owned(), None);
            // Asked outside any call (a server asks once it starts): the connection's own
            // roots, from the gateway's configuration.
            let Some(asking) = asking else {
                return Ok(configured);
            };
            let key = asking.key("roots", &());
            let request = || {
                InputRequest::ListRoots(ListRootsRequest {
                    method: Default::default(),
                    extensions: Default::default(),
                })
            };
            let listed = |answer: serde_json::Value| {
                serde_json::from_value::<ListRootsResult>(answer)
                    .map(|listed| listed.roots)
                    .map_err(|_| refused("the gateway's client listed no roots"))
            };
            let ctx = match &asking.asker {
                Asker::Ctx(ctx) if ctx.asks_now() => {
                    return match ctx.ask_now(request()).await {
                        Ok(answer) => listed(answer),
                        Err(NotAnswered::Refused(error)) => Err(error),
                        Err(other) => Err(refused(&not_answered(&other))),
                    };
                }
                Asker::Ctx(ctx) => ctx,
                Asker::Held(inbox) => {
                    return match inbox.ask(key, request()).await {
                        Some(answer) => listed(answer),
                        None => Err(refused("the gateway's client listed no roots")),
                    };
                }
            };
            match ctx.roots(&key).await {
                Ok(RootsListed::Listed(roots)) => Ok(roots),
                Ok(RootsListed::Failed { code, message }) => {
                    Err(ErrorData::new(rmcp::model::ErrorCode(code), message, None))
                }
                Ok(RootsListed::Unsupported) => {
                    Err(refused("the gateway's client does not offer roots"))
                }
                Ok(_) => Err(refused("the gateway's client did not answer in time")),
                Err(suspend) => {
                    asking.suspend(suspend).await;
                    Err(refused("the question goes to the client in a later round"))
                }
            }
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
                inbox.ask("roots".into(), request).await
            }
        });
        asked.changed().await.unwrap();
        assert_eq!(inbox.open().keys().collect::<Vec<_>>(), ["roots"]);
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
            "roots".to_owned(),
            serde_json::json!({"roots": []}),
        )]));
        assert_eq!(
            asking.await.unwrap(),
            Some(serde_json::json!({"roots": []}))
        );
        assert!(inbox.open().is_empty());
    }
}
