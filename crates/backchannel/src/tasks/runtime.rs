//! The layer's task runtime: the task bodies running in this instance, and the supervisor
//! that keeps their leases, carries news to them, takes over tasks whose instance stopped, and
//! removes expired ones.
//!
//! One supervisor per layer, started with the first task or with `Backchannel::resume_tasks`.
//! Every tick it renews the leases of this instance's tasks in one step and learns from the
//! answer which of them were cancelled or answered elsewhere (their version moved), or lost
//! (taken over, or removed); with a runner registered, it takes over tasks whose lease ended.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{TaskRecord, TaskState, TaskStore};
use crate::clock::Clock;
use crate::util::lock;

/// Runs a task body again in this instance.
pub(crate) trait Resume: Send + Sync + 'static {
    /// Start `task`'s body here, if its tool is registered as resumable; `false` otherwise.
    fn resume(&self, task: TaskRecord) -> bool;
}

/// A task body running here: how to stop it and how to tell it news.
#[derive(Debug, Clone)]
pub(crate) struct Local {
    pub(crate) cancel: CancellationToken,
    pub(crate) wake: Arc<Notify>,
    version: u64,
    /// Set when the task stopped being this instance's (taken over, finished or removed
    /// elsewhere, or its lease unrenewed for a whole lease): the body stops and records nothing.
    lost: Arc<std::sync::atomic::AtomicBool>,
}

impl Local {
    /// The task is not this instance's any more: stop the body, record nothing.
    pub(crate) fn lose(&self) {
        self.lost.store(true, std::sync::atomic::Ordering::SeqCst);
        self.cancel.cancel();
    }

    /// Whether [`Local::lose`] was called.
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// What the layer keeps about tasks.
pub(crate) struct TaskRuntime {
    pub(crate) store: Arc<dyn TaskStore>,
    /// This instance's name in leases (random per process).
    pub(crate) instance: String,
    pub(crate) lease: Duration,
    pub(crate) tick: Duration,
    pub(crate) ttl: Option<Duration>,
    pub(crate) poll: Duration,
    /// Where and when bodies run.
    pub(crate) executor: Arc<dyn super::TaskExecutor>,
    clock: Clock,
    local: Mutex<HashMap<String, Local>>,
    runner: Mutex<Option<Arc<dyn Resume>>>,
    supervisor: std::sync::OnceLock<()>,
    /// Set by `halt` (tests): this instance behaves as if its process had been killed.
    halted: std::sync::atomic::AtomicBool,
    /// When the leases were last renewed (or first failed to be).
    renewed_ms: Mutex<Option<u64>>,
    /// No other instance uses the store ([`TaskRuntime::sole_instance`]).
    sole: std::sync::atomic::AtomicBool,
    /// Set when the runner is registered on a sole instance: the next take-over takes every
    /// unfinished task, its lease ended or not.
    take_all_once: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for TaskRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRuntime")
            .field("instance", &self.instance)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

/// The message of a task whose instance stopped before it finished and that cannot be resumed.
pub(crate) const STOPPED: &str =
    "the server running this task stopped before it finished; start the call again";

/// How many ticks between sweeps of expired tasks.
const SWEEP_EVERY: u64 = 16;

impl TaskRuntime {
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        lease: Duration,
        tick: Duration,
        ttl: Option<Duration>,
        poll: Duration,
        executor: Arc<dyn super::TaskExecutor>,
        clock: Clock,
    ) -> Self {
        Self {
            store,
            instance: crate::util::fresh_nonce(),
            lease,
            tick,
            ttl,
            poll,
            executor,
            clock,
            local: Mutex::default(),
            runner: Mutex::default(),
            supervisor: std::sync::OnceLock::new(),
            halted: std::sync::atomic::AtomicBool::new(false),
            renewed_ms: Mutex::default(),
            sole: std::sync::atomic::AtomicBool::new(false),
            take_all_once: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// No other instance uses this store: a task still unfinished when the runner is
    /// registered was left by an earlier run of this server (stopped or killed), and is taken
    /// over at once rather than after its lease.
    pub(crate) fn sole_instance(&self) {
        self.sole.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    pub(crate) fn lease_until(&self) -> u64 {
        self.now_ms() + self.lease.as_millis() as u64
    }

    /// A body starts here: how it is stopped and woken.
    pub(crate) fn register(&self, id: &str, version: u64) -> Local {
        let local = Local {
            cancel: CancellationToken::new(),
            wake: Arc::new(Notify::new()),
            version,
            lost: Arc::default(),
        };
        if lock(&self.local)
            .insert(id.to_owned(), local.clone())
            .is_none()
        {
            crate::metrics::task_running(1);
        }
        local
    }

    /// The body `local` of task `id` has ended here. A body that started since for the same
    /// task (this instance took it over again after losing it) stays.
    pub(crate) fn unregister(&self, id: &str, local: &Local) {
        let mut bodies = lock(&self.local);
        if bodies
            .get(id)
            .is_some_and(|entry| Arc::ptr_eq(&entry.lost, &local.lost))
        {
            bodies.remove(id);
            crate::metrics::task_running(-1);
        }
    }

    pub(crate) fn local(&self, id: &str) -> Option<Local> {
        lock(&self.local).get(id).cloned()
    }

    /// How many bodies run here.
    pub(crate) fn running(&self) -> usize {
        lock(&self.local).len()
    }

    /// From now on, take over tasks whose instance stopped, and run the resumable ones with
    /// `runner`, until `shutdown`.
    pub(crate) fn set_runner(
        self: &Arc<Self>,
        runner: Arc<dyn Resume>,
        shutdown: CancellationToken,
    ) {
        *lock(&self.runner) = Some(runner);
        if self.sole.load(std::sync::atomic::Ordering::SeqCst) {
            self.take_all_once
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let runtime = Arc::downgrade(self);
        tokio::spawn(async move {
            shutdown.cancelled().await;
            // The runner holds the server, which holds this runtime: let both go.
            if let Some(runtime) = runtime.upgrade() {
                lock(&runtime.runner).take();
            }
        });
        self.supervise();
    }

    /// Start the supervisor, once.
    pub(crate) fn supervise(self: &Arc<Self>) {
        if self.supervisor.set(()).is_err() {
            return;
        }
        let weak = Arc::downgrade(self);
        let tick = self.tick;
        tokio::spawn(supervise(weak, tick));
    }

    /// Behave as if this process had been killed: bodies stop without recording anything,
    /// leases are no longer renewed, nothing is taken over.
    #[cfg(feature = "test-util")]
    pub(crate) fn halt(&self) {
        self.halted.store(true, std::sync::atomic::Ordering::SeqCst);
        for local in lock(&self.local).values() {
            local.cancel.cancel();
        }
    }

    pub(crate) fn halted(&self) -> bool {
        self.halted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// One supervisor step.
    async fn step(&self, round: u64) {
        if self.halted() {
            return;
        }
        // Only bodies registered before the renewal count as lost when it misses them.
        let before: HashMap<String, Local> = lock(&self.local).clone();
        if !before.is_empty() {
            self.renew(&before).await;
        }
        let runner = lock(&self.runner).clone();
        if let Some(runner) = runner {
            self.take_over(runner.as_ref()).await;
        }
        if round.is_multiple_of(SWEEP_EVERY) {
            match self.store.sweep(self.now_ms()).await {
                Ok(0) => {}
                Ok(removed) => tracing::debug!(removed, "expired tasks removed"),
                Err(error) => tracing::warn!(%error, "expired tasks could not be removed"),
            }
        }
    }

    /// Renew the leases of the bodies in `before`, and pass on what the store says about them.
    async fn renew(&self, before: &HashMap<String, Local>) {
        let now = self.now_ms();
        match self.store.renew(&self.instance, self.lease_until()).await {
            Ok(held) => {
                *lock(&self.renewed_ms) = Some(now);
                let held: HashMap<_, _> = held.into_iter().map(|h| (h.id.clone(), h)).collect();
                for (id, local) in before {
                    match held.get(id) {
                        None => local.lose(),
                        Some(h) if h.cancel_requested => local.cancel.cancel(),
                        Some(h) if h.version != local.version => {
                            if let Some(entry) = lock(&self.local).get_mut(id) {
                                entry.version = h.version;
                            }
                            local.wake.notify_one();
                        }
                        Some(_) => {}
                    }
                }
            }
            Err(error) => {
                tracing::warn!(%error, "task leases could not be renewed");
                // Unrenewed for a whole lease, the tasks may run elsewhere by now: stop them
                // here rather than run them twice.
                let since = lock(&self.renewed_ms).unwrap_or(now);
                *lock(&self.renewed_ms) = Some(since);
                if now.saturating_sub(since) >= self.lease.as_millis() as u64 {
                    tracing::warn!(
                        tasks = before.len(),
                        "task leases have not been renewed for a whole lease; stopping them here"
                    );
                    for local in before.values() {
                        local.lose();
                    }
                }
            }
        }
    }

    /// Take over tasks whose lease ended: resume the resumable ones, end the others.
    async fn take_over(&self, runner: &dyn Resume) {
        let mut now = self.now_ms();
        if self
            .take_all_once
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            // An earlier run's leases end at most a lease from now.
            now += self.lease.as_millis() as u64 + 1;
        }
        let claimed = match self
            .store
            .claim_expired(&self.instance, now, self.lease_until())
            .await
        {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::warn!(%error, "tasks whose server stopped could not be taken over");
                return;
            }
        };
        for task in claimed {
            crate::metrics::task_taken_over();
            let id = task.id.clone();
            let tool = task.tool.clone();
            if task.cancel_requested {
                self.end(&id, TaskState::Cancelled, None).await;
            } else if runner.resume(task) {
                tracing::info!(task = %id, %tool, "resumed a task whose server stopped");
            } else {
                tracing::info!(task = %id, %tool, "a task whose server stopped cannot be resumed; it failed");
                let error = serde_json::json!({ "code": -32603, "message": STOPPED }).to_string();
                self.end(&id, TaskState::Failed, Some(error)).await;
            }
        }
    }

    /// Record a task's end, trying again every tick while the store fails: a task whose end
    /// was not stored would stay `working` under a lease this instance keeps renewing. Stops
    /// trying when this instance halts (its lease then runs out, and another takes it over).
    pub(crate) async fn end(&self, id: &str, state: TaskState, outcome: Option<String>) {
        loop {
            if self.halted() {
                return;
            }
            match self
                .store
                .finish(id, &self.instance, state, outcome.clone(), self.now_ms())
                .await
            {
                Ok(true) => return crate::metrics::task_ended(state.as_str()),
                Ok(false) => return,
                Err(error) => {
                    tracing::warn!(task = %id, %error, "a task's end could not be stored; trying again");
                }
            }
            tokio::time::sleep(self.tick).await;
        }
    }
}

async fn supervise(runtime: Weak<TaskRuntime>, tick: Duration) {
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut round = 0u64;
    loop {
        interval.tick().await;
        let Some(runtime) = runtime.upgrade() else {
            return;
        };
        runtime.step(round).await;
        round += 1;
    }
}
