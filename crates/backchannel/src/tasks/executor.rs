//! The executor seam: where and when a task's body runs. The layer decides *that* a body runs
//! (a call escalated, or a stopped instance's task was taken over) and keeps its lease; a
//! [`TaskExecutor`] decides where and when: at once on the Tokio runtime ([`Spawn`], the
//! default), behind a bound on how many run at once, on a runtime of its own, or in a queue a
//! worker drains.

use futures::future::BoxFuture;

/// What the layer hands an executor with a body.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskRun {
    /// The task.
    pub id: String,
    /// Its tool.
    pub tool: String,
    /// Whether this run takes over a task whose instance stopped (its recorded answers and
    /// steps are there for it).
    pub resumed: bool,
}

impl TaskRun {
    /// A run of task `id` of `tool`; `resumed` when it takes over a stopped instance's task.
    pub fn new(id: &str, tool: &str, resumed: bool) -> Self {
        Self {
            id: id.to_owned(),
            tool: tool.to_owned(),
            resumed,
        }
    }
}

/// Runs task bodies (see the module documentation).
///
/// The contract:
/// - `execute` returns at once; the body runs later, to its end, on any thread.
/// - From the hand-over on, the task is this instance's: its lease is renewed, `tasks/update`
///   and `tasks/cancel` reach it, whether the body has started or still waits its turn (a body
///   that waits long holds the task; a bound keeps that wait short).
/// - Dropping a body without running it to its end lets the task go: this instance stops
///   renewing its lease, and another instance takes it over after the lease (a resumable tool
///   runs there; any other ends `failed`).
///
/// ```
/// use std::sync::Arc;
/// use backchannel::tasks::{TaskExecutor, TaskRun};
/// use futures::future::BoxFuture;
///
/// /// At most `n` task bodies at once in this instance; the others wait their turn.
/// struct Bounded(Arc<tokio::sync::Semaphore>);
///
/// impl TaskExecutor for Bounded {
///     fn execute(&self, _run: TaskRun, body: BoxFuture<'static, ()>) {
///         let permits = self.0.clone();
///         tokio::spawn(async move {
///             let Ok(_permit) = permits.acquire_owned().await else { return };
///             body.await;
///         });
///     }
/// }
/// # let _ = Bounded(Arc::new(tokio::sync::Semaphore::new(4)));
/// ```
pub trait TaskExecutor: Send + Sync + 'static {
    /// Run `body`, the body of `run`, to its end (see the trait's contract).
    fn execute(&self, run: TaskRun, body: BoxFuture<'static, ()>);
}

/// The default executor: each body on the Tokio runtime, at once.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spawn;

impl TaskExecutor for Spawn {
    fn execute(&self, _run: TaskRun, body: BoxFuture<'static, ()>) {
        tokio::spawn(body);
    }
}
