//! Calls the order service runs as tasks (the desk declares the tasks extension with
//! `--tasks`): the chat waits while the task works, never while it waits for the person. A
//! question asked inside a task goes to the person's inbox and the conversation goes on; the
//! answer, from any page or terminal of theirs, goes to the task by `tasks/update`, and the
//! task's result is said in its conversation when it comes.
//!
//! With the desk's database a task that waits for the person is kept there (which task, which
//! conversation, until when) before the chat says it waits, and a desk that starts again
//! follows it again: the question is back in the person's inbox with the time it had left.

use std::sync::Arc;
use std::time::Duration;

use backchannel_host::Host;
use rmcp::model::{
    CallToolResult, ContentBlock, ElicitRequestParams, ElicitResult, ElicitationAction,
    InputRequest, InputRequests, TaskPayload,
};
use serde_json::{Value, json};

use super::DeskHandler;
use crate::events::{Event, Events};
use crate::store::{DeskStore, Wait};

/// The desk's name for the server whose tasks it follows.
const SERVER: &str = "orders";

/// The most polls of one task's status (with its poll interval, hours of work).
const MAX_POLLS: usize = 100_000;

/// What a task follower needs: the host (its connection `orders`), the events, whose
/// conversation it is, and how long the person has.
#[derive(Clone)]
pub(crate) struct Follower {
    pub(crate) host: Arc<Host<DeskHandler>>,
    pub(crate) events: Arc<Events>,
    pub(crate) conversation: String,
    pub(crate) answer_within: Duration,
    /// Where a task that waits for the person is kept (none: in memory only).
    pub(crate) store: Option<DeskStore>,
    /// Who phrases the task's result in the conversation (none: said as the server wrote it).
    pub(crate) speaker: Option<Speaker>,
    /// The call that started the task, which its questions name (none: not known, as for a
    /// task taken over from a stopped desk).
    pub(crate) call: Option<crate::events::CallShown>,
}

/// The model, given a turn to tell the person a task's result that came after the chat went
/// on: it reads the conversation so far and the result, and its words are said (and
/// remembered as the conversation's next turn). It is offered no tools: it can only phrase.
#[derive(Clone)]
pub(crate) struct Speaker {
    pub(crate) model: crate::llm::Provider,
    pub(crate) memory: Arc<super::model::Memory>,
    pub(crate) context_tokens: u32,
}

impl Speaker {
    /// The model's words for `result` in `conversation`; `None` when it gave none (the result
    /// is then said as it is).
    async fn phrase(&self, conversation: &str, result: &str) -> Option<String> {
        let note = crate::messages::task_result_for_model(result);
        let reserved = self.model.generation().max_tokens as usize;
        let (messages, _) = super::model::opening_messages(
            &self.memory,
            self.context_tokens,
            conversation,
            &note,
            None,
            reserved,
        );
        let turn = async { self.model.complete(&messages, &[]).await };
        let span = super::model::model_span(&self.model);
        match tracing::Instrument::instrument(turn, span).await {
            Ok(turn) => {
                let words = turn.message.content.as_deref().map(str::trim)?;
                if words.is_empty() {
                    return None;
                }
                super::model::remember(&self.memory, conversation, &note, words);
                Some(words.to_owned())
            }
            Err(error) => {
                tracing::warn!(%error, "the model could not phrase a task's result; said as it is");
                None
            }
        }
    }
}

impl Follower {
    /// Follow `task` while it works: its result, or, when it asks the person, what the chat
    /// says meanwhile (the rest is followed in the background).
    pub(crate) async fn follow(
        mut self,
        task: rmcp::model::Task,
    ) -> Result<CallToolResult, String> {
        let poll = poll_interval(&task);
        let started = tokio::time::Instant::now();
        let mut shown: Option<String> = None;
        // The status shows progress only while no notification does (on 2025-11-25 the
        // server may send both; two sources would make the bar jump back).
        let mut expected = self.events.progress_sent(&self.conversation);
        for _ in 0..MAX_POLLS {
            let (payload, message) = self.status_and_message(&task.task_id).await?;
            let ours = self.events.progress_sent(&self.conversation) == expected;
            let message = message.filter(|_| ours);
            if !ours {
                shown = None;
            }
            if matches!(payload, TaskPayload::Completed { .. }) {
                // The work is done: a bar that was shown, or that its last words measure, is
                // full (the server's poll interval may be longer than the work).
                let drawn = shown.is_some();
                let last = message.clone().or_else(|| shown.take());
                if let Some(last) = last.filter(|l| drawn || percent_of(l).is_some()) {
                    self.progress(100, Some(last));
                }
            }
            match payload {
                TaskPayload::Working => {
                    if let Some(message) = message.filter(|m| shown.as_ref() != Some(m)) {
                        if let Some(percent) = percent_of(&message) {
                            self.progress(percent, Some(message.clone()));
                            expected += 1;
                        }
                        shown = Some(message);
                    }
                    tokio::time::sleep(poll).await
                }
                TaskPayload::InputRequired { input_requests } => {
                    // The person's time ends with the task's, if the server keeps it less.
                    if let Some(ttl) = task.ttl_ms.map(Duration::from_millis) {
                        let left = ttl.saturating_sub(started.elapsed());
                        if left < self.answer_within {
                            tracing::info!(
                                seconds = left.as_secs(),
                                "the person's time is the task's: the server keeps it no longer"
                            );
                            self.answer_within = left;
                        }
                    }
                    let waiting = waiting_text(&input_requests);
                    self.keep(&task.task_id).await?;
                    tokio::spawn(self.clone().answer_then_finish(task, input_requests));
                    return Ok(CallToolResult::success(vec![ContentBlock::text(waiting)]));
                }
                other => return ended(other),
            }
        }
        Err("the task did not end".into())
    }

    /// Keep the task in the desk's database, so a desk that starts again follows it again.
    async fn keep(&self, task_id: &str) -> Result<(), String> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let now = std::time::SystemTime::now();
        let wait = Wait {
            server: SERVER.into(),
            task_id: task_id.into(),
            conversation: self.conversation.clone(),
            owner: self.events.owner_for(&self.conversation),
            asked: now,
            until: now + self.answer_within,
            desk: self.events.desk_name(),
        };
        store.save_wait(&wait).await.map_err(|e| e.to_string())
    }

    /// Follow again a task kept before the desk stopped: its questions go back to the
    /// person's inbox (with the time they have left), its result to its conversation.
    pub(crate) async fn resume(self, task_id: String) -> Resumed {
        let got = match self.host.connection(SERVER) {
            Ok(orders) => orders.get_task(&task_id).await.map_err(|e| e.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match got {
            Ok(got) => {
                tracing::info!(task = %task_id, "following again a task that waits for the person");
                let asks = match got.task.payload {
                    TaskPayload::InputRequired { input_requests } => input_requests,
                    _ => InputRequests::new(),
                };
                self.answer_then_finish(got.task.task, asks).await;
                Resumed::Followed
            }
            Err(error) if !error.contains("unknown task") => {
                // Not reachable now: kept for the next start (or the next desk), nothing said.
                tracing::warn!(task = %task_id, %error, "a task kept across a restart cannot be reached now");
                Resumed::Unreachable
            }
            Err(error) => {
                // The server no longer knows it (expired, or bound to a session that ended):
                // nothing can be answered, and the conversation is told why.
                tracing::warn!(task = %task_id, %error, "a task kept across a restart is gone");
                self.say(&format!(
                    "A question you had not answered yet is gone: the order service no longer \
                     knows its task ({error}). Nothing was done for it."
                ));
                self.forget(&task_id).await;
                Resumed::Gone
            }
        }
    }

    /// Ask here too a task another desk follows (see [`adopt_waits`]); a task this desk cannot
    /// reach (on 2025-11-25 a task belongs to the other desk's session) is left to it.
    async fn adopt(self, task_id: String) {
        let Ok(orders) = self.host.connection(SERVER) else {
            return;
        };
        match orders.get_task(&task_id).await {
            Ok(got) => {
                let TaskPayload::InputRequired { input_requests } = got.task.payload else {
                    return;
                };
                tracing::info!(task = %task_id, "asking here too a question another desk keeps");
                self.answer_then_finish(got.task.task, input_requests).await;
            }
            Err(error) => {
                tracing::debug!(task = %task_id, %error, "a question another desk keeps is not reachable from here");
            }
        }
    }

    async fn forget(&self, task_id: &str) {
        if let Some(store) = &self.store
            && let Err(error) = store.forget_wait(SERVER, task_id).await
        {
            tracing::error!(task = %task_id, %error, "could not forget a task that ended");
        }
    }

    fn say(&self, text: &str) {
        self.events.emit(&self.conversation, Event::said(text));
    }

    async fn status(&self, task_id: &str) -> Result<TaskPayload, String> {
        self.status_and_message(task_id)
            .await
            .map(|(payload, _)| payload)
    }

    /// The task's state, and the server's words for where its work is ("40 of 87").
    async fn status_and_message(
        &self,
        task_id: &str,
    ) -> Result<(TaskPayload, Option<String>), String> {
        let orders = self.host.connection(SERVER).map_err(|e| e.to_string())?;
        orders
            .get_task(task_id)
            .await
            .map(|got| (got.task.payload, got.task.task.status_message))
            .map_err(|e| e.to_string())
    }

    /// Show the task's progress in its conversation, as a progress notification would.
    fn progress(&self, percent: u32, message: Option<String>) {
        let message = message.map(|m| {
            m.chars()
                .take(super::handler::MAX_PROGRESS_MESSAGE)
                .collect()
        });
        self.events.emit(
            &self.conversation,
            Event::Progress {
                percent: percent.min(100),
                server: SERVER.into(),
                message,
            },
        );
    }

    /// Ask the person, answer the task, and follow it to its end; say the outcome in the
    /// conversation.
    async fn answer_then_finish(self, task: rmcp::model::Task, mut asks: InputRequests) {
        let poll = poll_interval(&task);
        let outcome = async {
            for _ in 0..MAX_POLLS {
                let answers = match asks.is_empty() {
                    true => Default::default(),
                    false => {
                        let asks = std::mem::take(&mut asks);
                        self.answers(&task.task_id, poll, asks).await
                    }
                };
                if !answers.is_empty() {
                    let answered = || async {
                        let orders = self.host.connection(SERVER).map_err(|e| e.to_string())?;
                        let answers = answers.clone();
                        orders
                            .update_task(&task.task_id, answers)
                            .await
                            .map_err(|e| e.to_string())
                    };
                    again_while_unreachable(answered).await?;
                }
                let status = again_while_unreachable(|| self.status(&task.task_id)).await?;
                match status {
                    TaskPayload::Working => tokio::time::sleep(poll).await,
                    TaskPayload::InputRequired { input_requests } => asks = input_requests,
                    other => return ended(other),
                }
            }
            Err("the task did not end".to_owned())
        };
        let text = match outcome.await {
            Ok(result) => super::text_of(&result),
            Err(error) => format!("The order service's task ended without a result: {error}"),
        };
        tracing::info!(task = %task.task_id, "a task that waited for the person ended");
        self.forget(&task.task_id).await;
        let phrased = match &self.speaker {
            Some(speaker) => speaker.phrase(&self.conversation, &text).await,
            None => None,
        };
        self.say(phrased.as_deref().unwrap_or(&text));
    }

    /// The person's answers to a task's questions, by their keys (a question the desk cannot
    /// put to the person is declined, never answered for them). A question answered elsewhere
    /// meanwhile (another desk of the person's: the terminal) is taken off this desk's inbox
    /// and gets no answer from here.
    async fn answers(
        &self,
        task_id: &str,
        poll: Duration,
        asks: InputRequests,
    ) -> std::collections::BTreeMap<String, Value> {
        let mut answers = std::collections::BTreeMap::new();
        for (key, ask) in asks {
            let answer = match ask {
                InputRequest::Elicitation(request) => match &request.params {
                    ElicitRequestParams::FormElicitationParams { message, .. } => {
                        let elsewhere = self.answered_elsewhere(task_id, &key, poll);
                        let asked = self.events.ask_waiting(
                            (SERVER, self.call.clone()),
                            &self.conversation,
                            message,
                            self.answer_within,
                            elsewhere,
                        );
                        match asked.await {
                            Some(asked) => super::handler::elicit_result(asked),
                            None => continue,
                        }
                    }
                    _ => ElicitResult::new(ElicitationAction::Decline),
                },
                _ => {
                    answers.insert(
                        key,
                        json!({"error": {"code": -32601, "message": "the desk answers only form questions inside a task"}}),
                    );
                    continue;
                }
            };
            answers.insert(key, serde_json::to_value(answer).unwrap_or_default());
        }
        answers
    }
}

impl Follower {
    /// Returns once the task no longer asks `key` (answered by another desk, or ended).
    async fn answered_elsewhere(&self, task_id: &str, key: &str, poll: Duration) {
        loop {
            tokio::time::sleep(poll).await;
            match self.status(task_id).await {
                Ok(TaskPayload::InputRequired { input_requests })
                    if input_requests.contains_key(key) => {}
                // Unreachable for now: the question stays; its deadline still ends it.
                Err(_) => {}
                Ok(_) => return,
            }
        }
    }
}

/// Follow again, once the connections are open, the tasks the desk's database says wait for
/// the person (a desk without tasks leaves them: it cannot follow a task).
pub(crate) fn resume_waits(
    waits: Vec<Wait>,
    store: DeskStore,
    ready: tokio::sync::watch::Receiver<Option<super::connecting::Opened>>,
    events: Arc<Events>,
    tasks: bool,
    speaker: Option<Speaker>,
) {
    tokio::spawn(async move {
        let host = match super::connecting::opened(ready).await {
            Ok(host) if tasks => host,
            Ok(_) => {
                tracing::warn!(
                    waits = waits.len(),
                    "questions kept from before a restart are not followed: the desk runs \
                     without tasks (--no-tasks)"
                );
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "questions kept from before a restart wait for the connection");
                return;
            }
        };
        let now = std::time::SystemTime::now();
        for wait in waits {
            let follower = Follower {
                host: host.clone(),
                events: events.clone(),
                conversation: wait.conversation,
                answer_within: wait.until.duration_since(now).unwrap_or_default(),
                store: Some(store.clone()),
                speaker: speaker.clone(),
                // Not kept across a restart.
                call: None,
            };
            tokio::spawn(follower.resume(wait.task_id));
        }
    });
}

/// How a task kept across a restart (or taken over from a desk that stopped) went on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resumed {
    /// Followed to its end.
    Followed,
    /// The server no longer knows it; the conversation was told.
    Gone,
    /// The server could not be reached: it is left for later.
    Unreachable,
}

/// How many times a task's call is tried while the server does not answer (a restart, its
/// database stopped for a moment), a second apart, before the task is given up.
const TRIES_WHILE_UNREACHABLE: usize = 30;

/// `call`'s answer, tried again (a second apart, [`TRIES_WHILE_UNREACHABLE`] times at most)
/// while it fails for another reason than an unknown task: a person's answer is not lost to a
/// server that is down for a moment.
async fn again_while_unreachable<T, F, Fut>(call: F) -> Result<T, String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let mut tries = 0;
    loop {
        match call().await {
            Ok(done) => return Ok(done),
            Err(error)
                if error.contains("unknown task") || tries + 1 >= TRIES_WHILE_UNREACHABLE =>
            {
                return Err(error);
            }
            Err(error) => {
                tries += 1;
                tracing::debug!(%error, "the order service does not answer a task's call: trying again");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// How often the terminal looks in the desk's database for questions it may answer.
pub(crate) const ADOPT_EVERY: Duration = Duration::from_secs(1);

/// Which desk asks again the questions another desk on the same database keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Adopter {
    /// The terminal: the web UI's questions of a person it may answer for
    /// ([`crate::events::terminal_may_answer`]).
    Terminal,
    /// The web UI: the terminal's questions, for the pages of its person (see
    /// [`crate::events::Events::inbox`]).
    Pages,
}

impl Adopter {
    /// Whether this desk asks `wait` too (`person`: the terminal's user).
    fn takes(self, wait: &Wait, person: &str) -> bool {
        let terminals = wait.conversation == crate::events::TERMINAL;
        match self {
            Adopter::Terminal => {
                !terminals && crate::events::terminal_may_answer(&wait.owner, person)
            }
            Adopter::Pages => terminals && wait.owner == person,
        }
    }
}

/// A person's inbox shared by their desks on one database: every [`ADOPT_EVERY`], the tasks
/// another desk keeps waiting for the person are asked here too ([`Adopter`]), in this desk's
/// terminal conversation (whose owner is the terminal's user); whichever desk is answered
/// first answers the task, and the other takes its question off. `followed`: tasks this desk
/// already follows.
pub(crate) async fn adopt_waits(
    store: DeskStore,
    host: Arc<Host<DeskHandler>>,
    events: Arc<Events>,
    person: String,
    adopter: Adopter,
    mut followed: std::collections::HashSet<String>,
) {
    loop {
        match store.waits().await {
            Ok(waits) => {
                let now = std::time::SystemTime::now();
                for wait in waits {
                    if !adopter.takes(&wait, &person) {
                        continue;
                    }
                    let Ok(left) = wait.until.duration_since(now) else {
                        continue;
                    };
                    if !followed.insert(wait.task_id.clone()) {
                        continue;
                    }
                    let follower = Follower {
                        host: host.clone(),
                        events: events.clone(),
                        conversation: crate::events::TERMINAL.into(),
                        answer_within: left,
                        store: None,
                        // The desk that started the task says its result.
                        speaker: None,
                        call: None,
                    };
                    tokio::spawn(follower.adopt(wait.task_id));
                }
            }
            Err(error) => tracing::warn!(%error, "the desk's database could not be read"),
        }
        tokio::time::sleep(ADOPT_EVERY).await;
    }
}

/// What the chat says while the task waits: the questions, and where to answer them.
fn waiting_text(asks: &InputRequests) -> String {
    let questions: Vec<String> = asks
        .values()
        .filter_map(|ask| match ask {
            InputRequest::Elicitation(request) => match &request.params {
                ElicitRequestParams::FormElicitationParams { message, .. } => Some(message.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    format!(
        "Waiting for your answer: {} It is in your inbox; the result will be said here once you answer.",
        questions.join(" ")
    )
}

/// How far a task's status message says its work is: "40 of 87" or "46%" (else `None`).
fn percent_of(message: &str) -> Option<u32> {
    if let Some((done, total)) = message.split_once(" of ") {
        let (done, total): (f64, f64) = (done.trim().parse().ok()?, total.trim().parse().ok()?);
        return (total > 0.0).then(|| (done / total * 100.0).round().clamp(0.0, 100.0) as u32);
    }
    let percent: f64 = message.trim().strip_suffix('%')?.parse().ok()?;
    Some(percent.round().clamp(0.0, 100.0) as u32)
}

fn poll_interval(task: &rmcp::model::Task) -> Duration {
    Duration::from_millis(task.poll_interval_ms.unwrap_or(500).clamp(10, 2_000))
}

/// A task's end as a result (a failure or a cancellation as an error).
fn ended(payload: TaskPayload) -> Result<CallToolResult, String> {
    match payload {
        TaskPayload::Completed { result } => serde_json::from_value(Value::Object(result))
            .map_err(|e| format!("unreadable task result: {e}")),
        TaskPayload::Failed { error } => Err(error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("the task failed")
            .to_owned()),
        TaskPayload::Cancelled => Err("the task was cancelled".into()),
        other => Err(format!("unexpected task state {:?}", other.status())),
    }
}

#[cfg(test)]
mod tests {
    use super::percent_of;

    #[test]
    fn a_status_message_reads_as_a_percentage_when_it_is_one() {
        assert_eq!(percent_of("40 of 87"), Some(46));
        assert_eq!(percent_of("87 of 87"), Some(100));
        assert_eq!(percent_of("46%"), Some(46));
        assert_eq!(percent_of("0 of 0"), None);
        assert_eq!(percent_of("checking carriers"), None);
        assert_eq!(percent_of("3 of many"), None);
    }
}
