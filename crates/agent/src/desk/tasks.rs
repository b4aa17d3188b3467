//! Calls the order service runs as tasks (the desk declares the tasks extension with
//! `--tasks`): the chat waits while the task works, never while it waits for the person. A
//! question asked inside a task goes to the person's inbox and the conversation goes on; the
//! answer, from any page or terminal of theirs, goes to the task by `tasks/update`, and the
//! task's result is said in its conversation when it comes.

use std::sync::Arc;
use std::time::Duration;

use backchannel_host::Host;
use rmcp::model::{
    CallToolResult, ContentBlock, ElicitRequestParams, ElicitResult, ElicitationAction,
    InputRequest, InputRequests, TaskPayload,
};
use serde_json::{Value, json};

use super::DeskHandler;
use crate::events::{Answer, Asked, Event, Events};

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
}

impl Follower {
    /// Follow `task` while it works: its result, or, when it asks the person, what the chat
    /// says meanwhile (the rest is followed in the background).
    pub(crate) async fn follow(self, task: rmcp::model::Task) -> Result<CallToolResult, String> {
        let poll = poll_interval(&task);
        for _ in 0..MAX_POLLS {
            match self.status(&task.task_id).await? {
                TaskPayload::Working => tokio::time::sleep(poll).await,
                TaskPayload::InputRequired { input_requests } => {
                    let waiting = waiting_text(&input_requests);
                    tokio::spawn(self.clone().answer_then_finish(task, input_requests));
                    return Ok(CallToolResult::success(vec![ContentBlock::text(waiting)]));
                }
                other => return ended(other),
            }
        }
        Err("the task did not end".into())
    }

    async fn status(&self, task_id: &str) -> Result<TaskPayload, String> {
        let orders = self.host.connection("orders").map_err(|e| e.to_string())?;
        orders
            .get_task(task_id)
            .await
            .map(|got| got.task.payload)
            .map_err(|e| e.to_string())
    }

    /// Ask the person, answer the task, and follow it to its end; say the outcome in the
    /// conversation.
    async fn answer_then_finish(self, task: rmcp::model::Task, mut asks: InputRequests) {
        let poll = poll_interval(&task);
        let outcome = async {
            for _ in 0..MAX_POLLS {
                if !asks.is_empty() {
                    let answers = self.answers(std::mem::take(&mut asks)).await;
                    let orders = self.host.connection("orders").map_err(|e| e.to_string())?;
                    orders
                        .update_task(&task.task_id, answers)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                match self.status(&task.task_id).await? {
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
        self.events.emit(
            &self.conversation,
            Event::Said {
                html: crate::render::html(&text),
                text: crate::render::plain(&text),
            },
        );
    }

    /// The person's answers to a task's questions, by their keys (a question the desk cannot
    /// put to the person is declined, never answered for them).
    async fn answers(&self, asks: InputRequests) -> std::collections::BTreeMap<String, Value> {
        let mut answers = std::collections::BTreeMap::new();
        for (key, ask) in asks {
            let answer = match ask {
                InputRequest::Elicitation(request) => match &request.params {
                    ElicitRequestParams::FormElicitationParams { message, .. } => {
                        let asked = self
                            .events
                            .ask_waiting("orders", &self.conversation, message, self.answer_within)
                            .await;
                        elicit_result(asked)
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

/// The person's answer as the server reads it: yes (with the note), no, or nobody answered.
fn elicit_result(asked: Asked) -> ElicitResult {
    match asked {
        Asked::Answered(Answer::Yes { note }) => ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"confirmed": true, "note": note})),
        Asked::Answered(Answer::No) => ElicitResult::new(ElicitationAction::Decline),
        Asked::NobodyWatching | Asked::Expired => ElicitResult::new(ElicitationAction::Cancel),
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
