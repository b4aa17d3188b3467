//! A call's recorded steps ([`crate::Ctx::step`]). Inside a task they are read from the store
//! once per body and written by the lease holder only (the store fences each record with the
//! lease), so a body that runs again (after an answer, or on the instance that took the task
//! over) skips what is recorded. Outside a task they live as long as the call's runs in this
//! process (a 2025-11-25 call's; a 2026-07-28 round is a new request, so its steps run again).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::TaskRuntime;
use crate::util::lock;

/// A step could not be read or kept: the task is not this instance's any more (taken over,
/// finished or removed), or this instance stops. The body must stop without doing more.
#[derive(Debug)]
pub(crate) struct Lost;

/// One call's steps.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// Inside a task, where its steps are kept.
    task: Option<Kept>,
    /// The steps recorded so far (inside a task, read from the store on first use).
    recorded: tokio::sync::OnceCell<Mutex<BTreeMap<String, String>>>,
}

/// Where a task's steps are kept.
#[derive(Debug)]
struct Kept {
    task: String,
    runtime: Arc<TaskRuntime>,
    /// The body's own handle: lost when a record is refused.
    local: super::Local,
}

impl Ledger {
    /// The steps of a body running inside `task`.
    pub(crate) fn of_task(task: &str, runtime: Arc<TaskRuntime>, local: super::Local) -> Self {
        Self {
            task: Some(Kept {
                task: task.to_owned(),
                runtime,
                local,
            }),
            recorded: tokio::sync::OnceCell::new(),
        }
    }

    /// The task's id, inside a task (steps' idempotency keys start with it).
    pub(crate) fn task(&self) -> Option<&str> {
        self.task.as_ref().map(|kept| kept.task.as_str())
    }

    /// The result recorded for the step `name`, if any.
    pub(crate) async fn recorded(&self, name: &str) -> Result<Option<String>, Lost> {
        Ok(lock(self.loaded().await?).get(name).cloned())
    }

    /// The steps recorded so far, read from the store the first time.
    async fn loaded(&self) -> Result<&Mutex<BTreeMap<String, String>>, Lost> {
        self.recorded
            .get_or_try_init(|| async { self.load().await.map(Mutex::new) })
            .await
    }

    /// Read the task's steps, trying again every tick while the store fails and the body runs.
    async fn load(&self) -> Result<BTreeMap<String, String>, Lost> {
        let Some(kept) = &self.task else {
            return Ok(BTreeMap::new());
        };
        loop {
            match kept.runtime.store.steps(&kept.task).await {
                Ok(steps) => return Ok(steps),
                Err(error) => {
                    tracing::warn!(task = %kept.task, %error, "a task's steps could not be read");
                }
            }
            kept.pause().await?;
        }
    }

    /// Record the step `name` with its result (inside a task, fenced by this instance's lease:
    /// a refusal means another instance holds the task now, and the body is stopped).
    pub(crate) async fn record(&self, name: &str, value: String) -> Result<(), Lost> {
        if let Some(kept) = &self.task {
            kept.record(name, value.clone()).await?;
        }
        lock(self.loaded().await?)
            .entry(name.to_owned())
            .or_insert(value);
        Ok(())
    }
}

impl Kept {
    /// Store the step `name` with its result, fenced by this instance's lease.
    async fn record(&self, name: &str, value: String) -> Result<(), Lost> {
        loop {
            if self.runtime.halted() || self.local.cancel.is_cancelled() {
                return Err(Lost);
            }
            let runtime = &self.runtime;
            match runtime
                .store
                .record_step(&self.task, &runtime.instance, name, value.clone())
                .await
            {
                Ok(true) => return Ok(()),
                Ok(false) => {
                    tracing::info!(task = %self.task, step = name, "a step was not recorded: the task is no longer this instance's");
                    self.local.lose();
                    return Err(Lost);
                }
                Err(error) => {
                    tracing::warn!(task = %self.task, step = name, %error, "a step could not be recorded");
                }
            }
            self.pause().await?;
        }
    }

    /// Wait a tick before trying the store again; `Lost` if the body is stopped meanwhile (the
    /// runtime stops it once its lease went unrenewed for a whole lease).
    async fn pause(&self) -> Result<(), Lost> {
        tokio::select! {
            () = self.local.cancel.cancelled() => Err(Lost),
            () = tokio::time::sleep(self.runtime.tick) => Ok(()),
        }
    }
}
