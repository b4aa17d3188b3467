//! Durable tasks (the SEP-2663 extension): what a task is as a store keeps it, the
//! [`TaskStore`] every backend implements, and the in-memory backend.
//!
//! A task row holds everything `tasks/get`, `tasks/update` and `tasks/cancel` need, so any
//! instance of a server answers them from the store: its status, the open questions and the
//! answers given, the outcome, the caller it belongs to, the tool and its request (so another
//! instance can run it again), the answers the body gathered so far, and a lease (which
//! instance runs it, and until when). The layer's runtime (`runtime.rs`) renews leases, takes
//! over tasks whose runner died, and removes expired ones.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::util::lock;

mod executor;
mod runtime;
#[cfg(feature = "sql")]
mod sql;
mod steps;

pub use executor::{Spawn, TaskExecutor, TaskRun};
pub(crate) use runtime::{Local, Resume, TaskRuntime};
#[cfg(feature = "sql")]
pub use sql::SqlTaskStore;
pub(crate) use steps::{Ledger, Lost};

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// The body runs.
    Working,
    /// The body waits for answers (`tasks/update`).
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Stopped by `tasks/cancel`.
    Cancelled,
}

impl TaskState {
    /// The wire name (`working`, `input_required`, …), also the stored one.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Working => "working",
            TaskState::InputRequired => "input_required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// Read a stored name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "working" => TaskState::Working,
            "input_required" => TaskState::InputRequired,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "cancelled" => TaskState::Cancelled,
            _ => return None,
        })
    }

    /// Whether the task has finished (completed, failed or cancelled).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Cancelled
        )
    }
}

/// One task as a store keeps it. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// Random, unguessable id (128 bits, hex).
    pub id: String,
    /// Who may see it: the layer's owner key (principal, session, or anyone).
    pub owner: String,
    /// The tool it runs.
    pub tool: String,
    /// What a run needs besides the tool: the arguments and the request's `_meta` (JSON text;
    /// kept as text, a finished task costs about a kilobyte instead of a tree of maps).
    pub request: String,
    /// The answers the body gathered so far (the layer's own format, JSON text), for a resumed
    /// run.
    pub answers: String,
    /// Where it stands.
    pub state: TaskState,
    /// A message for people, if any.
    pub status_message: Option<String>,
    /// When it was created.
    pub created_ms: u64,
    /// When it last changed.
    pub updated_ms: u64,
    /// How long after creation it may be removed; `None` keeps it until removed otherwise.
    pub ttl_ms: Option<u64>,
    /// How often clients should poll.
    pub poll_ms: u64,
    /// Questions waiting for `tasks/update`, by key (each an `InputRequest` as JSON).
    pub open: BTreeMap<String, Value>,
    /// Answers received for its questions, by key.
    pub responses: BTreeMap<String, Value>,
    /// The result (completed) or the error (failed), as JSON object text.
    pub outcome: Option<String>,
    /// `tasks/cancel` was received.
    pub cancel_requested: bool,
    /// Bumped by every `tasks/update` and `tasks/cancel`, so a runner sees news cheaply.
    pub version: u64,
    /// The instance running it.
    pub lease_owner: String,
    /// Until when that instance holds it; past this, another instance may take it over.
    pub lease_until_ms: u64,
}

impl TaskRecord {
    /// Open `open` as questions (`input_required`), unless it finished or was cancelled; the
    /// rule every store applies for [`TaskStore::ask`].
    pub fn open_questions(&mut self, open: BTreeMap<String, Value>) -> bool {
        if self.state.is_terminal() || self.cancel_requested {
            return false;
        }
        // A question answered already (before a resumed run asks it again) stays answered.
        let unanswered: BTreeMap<_, _> = open
            .into_iter()
            .filter(|(key, _)| !self.responses.contains_key(key))
            .collect();
        if !unanswered.is_empty() {
            self.open.extend(unanswered);
            self.state = TaskState::InputRequired;
        }
        true
    }

    /// Move the answers to open questions into the responses (other keys are ignored), be
    /// `working` again once nothing is open, and bump the version; the rule every store
    /// applies for [`TaskStore::answer`].
    pub fn take_answers(&mut self, responses: &BTreeMap<String, Value>) {
        for (key, value) in responses {
            if self.open.remove(key).is_some() {
                self.responses.insert(key.clone(), value.clone());
            }
        }
        if self.state == TaskState::InputRequired && self.open.is_empty() {
            self.state = TaskState::Working;
        }
        self.version += 1;
    }

    /// Whether its time to live has passed at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.ttl_ms
            .is_some_and(|ttl| now_ms >= self.created_ms.saturating_add(ttl))
    }
}

/// A task an instance still holds after renewing its leases, with what a runner watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The task.
    pub id: String,
    /// Its version (bumped by updates and cancels).
    pub version: u64,
    /// Whether `tasks/cancel` was received.
    pub cancel_requested: bool,
}

/// A task store failed.
#[derive(Debug, thiserror::Error)]
#[error("the task store failed: {0}")]
pub struct TaskStoreError(pub String);

/// The result of a store operation.
pub type StoreResult<T> = Result<T, TaskStoreError>;

/// A store operation under way: what every [`TaskStore`] method returns.
pub type StoreFuture<T> = BoxFuture<'static, StoreResult<T>>;

/// Where tasks live: in memory ([`MemoryTaskStore`]), or in SQLite or PostgreSQL
/// ([`SqlTaskStore`], feature `sql`). Every method is one atomic step; the ones that change a
/// task return `false` when there is no such task (or, for `ask` and `finish`, when the task
/// is not in a state that allows the change).
pub trait TaskStore: Send + Sync + 'static {
    /// Store a new task.
    fn create(&self, task: TaskRecord) -> StoreFuture<()>;
    /// The task `id`, if it exists and has not expired at `now_ms`.
    fn get(&self, id: &str, now_ms: u64) -> StoreFuture<Option<TaskRecord>>;
    /// Open questions (`input_required`), if the task runs and was not cancelled.
    fn ask(&self, id: &str, open: BTreeMap<String, Value>, now_ms: u64) -> StoreFuture<bool>;
    /// `tasks/update`: answers for open questions move to the responses (other keys are
    /// ignored); the task is `working` again once no question is open.
    fn answer(
        &self,
        id: &str,
        responses: BTreeMap<String, Value>,
        now_ms: u64,
    ) -> StoreFuture<bool>;
    /// Keep the answers the body gathered so far, for a run on another instance.
    fn save_answers(&self, id: &str, answers: String, now_ms: u64) -> StoreFuture<()>;
    /// `tasks/cancel`: mark it, and drop its open questions if it has not finished.
    fn cancel(&self, id: &str, now_ms: u64) -> StoreFuture<bool>;
    /// Set the message `tasks/get` shows for people (a body's progress, "40 of 87"), if it
    /// has not finished. The default keeps no message (a store written before this method).
    fn set_status(&self, id: &str, message: String, now_ms: u64) -> StoreFuture<bool> {
        let _ = (id, message, now_ms);
        Box::pin(futures::future::ready(Ok(false)))
    }
    /// Finish it, if it has not finished and `lease_owner` still holds it.
    fn finish(
        &self,
        id: &str,
        lease_owner: &str,
        state: TaskState,
        outcome: Option<String>,
        now_ms: u64,
    ) -> StoreFuture<bool>;
    /// Extend to `until_ms` the lease of every unfinished task `lease_owner` holds; returns
    /// them (a task missing from the answer was taken over, finished or removed).
    fn renew(&self, lease_owner: &str, until_ms: u64) -> StoreFuture<Vec<Held>>;
    /// Take over every unfinished task whose lease ended before `now_ms`: it is then held by
    /// `lease_owner` until `until_ms`. Two instances never take the same task.
    fn claim_expired(
        &self,
        lease_owner: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> StoreFuture<Vec<TaskRecord>>;
    /// Remove every task whose time to live has passed, with its steps; returns how many.
    fn sweep(&self, now_ms: u64) -> StoreFuture<u64>;
    /// The steps recorded for the task `id` (see [`crate::Ctx::step`]): each step's name and
    /// its result as JSON text. The default records none (a store written before steps).
    fn steps(&self, id: &str) -> StoreFuture<BTreeMap<String, String>> {
        let _ = id;
        Box::pin(futures::future::ready(Ok(BTreeMap::new())))
    }
    /// Record the step `name` of the task `id` with its result `value` (JSON text), if
    /// `lease_owner` still holds the task and it has not finished, in one atomic step with that
    /// check (the fence: a holder whose task was taken over records nothing). A step recorded
    /// already keeps its first result. Returns whether the step is recorded. The default
    /// refuses: a store written before steps cannot keep them.
    fn record_step(
        &self,
        id: &str,
        lease_owner: &str,
        name: &str,
        value: String,
    ) -> StoreFuture<bool> {
        let _ = (id, lease_owner, name, value);
        Box::pin(futures::future::ready(Err(TaskStoreError(
            "this task store does not record steps".into(),
        ))))
    }
}

/// Tasks in this process's memory: the default, and for tests. A restart forgets them, and
/// other instances cannot see them.
#[derive(Debug, Clone, Default)]
pub struct MemoryTaskStore {
    tasks: Arc<Mutex<HashMap<String, TaskRecord>>>,
    /// Each task's recorded steps, by name. Locked after `tasks` when both are.
    steps: Arc<Mutex<HashMap<String, BTreeMap<String, String>>>>,
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many tasks it holds (finished ones included).
    pub fn len(&self) -> usize {
        lock(&self.tasks).len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn with<T: Send + 'static>(
        &self,
        change: impl FnOnce(&mut HashMap<String, TaskRecord>) -> T,
    ) -> StoreFuture<T> {
        let value = change(&mut lock(&self.tasks));
        Box::pin(futures::future::ready(Ok(value)))
    }
}

/// The task `id` if it may still change (not finished).
fn running<'a>(tasks: &'a mut HashMap<String, TaskRecord>, id: &str) -> Option<&'a mut TaskRecord> {
    tasks.get_mut(id).filter(|task| !task.state.is_terminal())
}

impl TaskStore for MemoryTaskStore {
    fn create(&self, task: TaskRecord) -> StoreFuture<()> {
        self.with(|tasks| {
            tasks.insert(task.id.clone(), task);
        })
    }

    fn get(&self, id: &str, now_ms: u64) -> StoreFuture<Option<TaskRecord>> {
        self.with(|tasks| tasks.get(id).filter(|task| !task.expired(now_ms)).cloned())
    }

    fn ask(&self, id: &str, open: BTreeMap<String, Value>, now_ms: u64) -> StoreFuture<bool> {
        self.with(|tasks| {
            let Some(task) = tasks.get_mut(id) else {
                return false;
            };
            let opened = task.open_questions(open);
            if opened {
                task.updated_ms = now_ms;
            }
            opened
        })
    }

    fn answer(
        &self,
        id: &str,
        responses: BTreeMap<String, Value>,
        now_ms: u64,
    ) -> StoreFuture<bool> {
        self.with(|tasks| {
            let Some(task) = tasks.get_mut(id) else {
                return false;
            };
            task.take_answers(&responses);
            task.updated_ms = now_ms;
            true
        })
    }

    fn save_answers(&self, id: &str, answers: String, now_ms: u64) -> StoreFuture<()> {
        self.with(|tasks| {
            if let Some(task) = running(tasks, id) {
                task.answers = answers;
                task.updated_ms = now_ms;
            }
        })
    }

    fn set_status(&self, id: &str, message: String, now_ms: u64) -> StoreFuture<bool> {
        self.with(|tasks| match running(tasks, id) {
            Some(task) => {
                task.status_message = Some(message);
                task.updated_ms = now_ms;
                true
            }
            None => false,
        })
    }

    fn cancel(&self, id: &str, now_ms: u64) -> StoreFuture<bool> {
        self.with(|tasks| {
            let Some(task) = tasks.get_mut(id) else {
                return false;
            };
            if !task.state.is_terminal() {
                task.cancel_requested = true;
                task.open.clear();
                task.state = TaskState::Working;
                task.version += 1;
                task.updated_ms = now_ms;
            }
            true
        })
    }

    fn finish(
        &self,
        id: &str,
        lease_owner: &str,
        state: TaskState,
        outcome: Option<String>,
        now_ms: u64,
    ) -> StoreFuture<bool> {
        self.with(|tasks| match running(tasks, id) {
            Some(task) if task.lease_owner == lease_owner => {
                task.state = state;
                task.outcome = outcome;
                task.open.clear();
                task.updated_ms = now_ms;
                true
            }
            _ => false,
        })
    }

    fn renew(&self, lease_owner: &str, until_ms: u64) -> StoreFuture<Vec<Held>> {
        self.with(|tasks| {
            tasks
                .values_mut()
                .filter(|task| !task.state.is_terminal() && task.lease_owner == lease_owner)
                .map(|task| {
                    task.lease_until_ms = until_ms;
                    Held {
                        id: task.id.clone(),
                        version: task.version,
                        cancel_requested: task.cancel_requested,
                    }
                })
                .collect()
        })
    }

    fn claim_expired(
        &self,
        lease_owner: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> StoreFuture<Vec<TaskRecord>> {
        self.with(|tasks| {
            tasks
                .values_mut()
                .filter(|task| !task.state.is_terminal() && task.lease_until_ms < now_ms)
                .map(|task| {
                    task.lease_owner = lease_owner.to_owned();
                    task.lease_until_ms = until_ms;
                    task.clone()
                })
                .collect()
        })
    }

    fn sweep(&self, now_ms: u64) -> StoreFuture<u64> {
        let steps = self.steps.clone();
        self.with(|tasks| {
            let before = tasks.len();
            tasks.retain(|_, task| !task.expired(now_ms));
            lock(&steps).retain(|id, _| tasks.contains_key(id));
            (before - tasks.len()) as u64
        })
    }

    fn steps(&self, id: &str) -> StoreFuture<BTreeMap<String, String>> {
        let recorded = lock(&self.steps).get(id).cloned().unwrap_or_default();
        Box::pin(futures::future::ready(Ok(recorded)))
    }

    fn record_step(
        &self,
        id: &str,
        lease_owner: &str,
        name: &str,
        value: String,
    ) -> StoreFuture<bool> {
        let steps = self.steps.clone();
        self.with(|tasks| match running(tasks, id) {
            Some(task) if task.lease_owner == lease_owner => {
                lock(&steps)
                    .entry(id.to_owned())
                    .or_default()
                    .entry(name.to_owned())
                    .or_insert(value);
                true
            }
            _ => false,
        })
    }
}
