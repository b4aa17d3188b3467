//! A 2025-11-25 upstream's call held open between a 2026-07-28 client's rounds.
//!
//! A 2025-11-25 server asks its questions as requests inside the call and waits for their
//! answers; a 2026-07-28 client answers only by retrying its call. So the upstream call is
//! started once and kept running while the client answers: its questions are passed on as the
//! round's `inputRequests` ([`backchannel::Ctx::pass_round`]) with the hold's id as the state
//! the layer seals, and the retry finds the call by that id and hands the answers to the
//! questions still waiting. The upstream sees one call, answered, as a 2025 client would answer
//! it; nothing runs twice.
//!
//! A hold is bounded: it belongs to the owner that made it (the layer's seal binds the call and
//! its caller; the hold checks the owner again), it waits at most [`HOLD_FOR`] for the next
//! round (the time a person is given to answer, after which the upstream call is cancelled),
//! at most [`MAX_HOLDS`] calls are held at once, and one caller (a principal, else a client
//! address) holds at most [`MAX_HOLDS_PER_CALLER`] of them, so one caller cannot take the
//! others' share. A call is held only once it asked a question: a call that asks nothing is
//! never refused for a full table. Each held call keeps one upstream request (one HTTP
//! connection) open, so the total stays a quarter of a server's default connection cap.
//! It lives in this gateway instance's memory. A round that reaches another instance is passed
//! here when the instances share a key ring (see `hop`); a round that comes after the hold
//! ended is told to call again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backchannel::lock;
use backchannel_host::{HostError, Started};
use rmcp::ErrorData;
use rmcp::model::GetPromptResult;
use tokio::sync::{mpsc, oneshot};

use crate::switchboard::{Inbox, Registered, Update};

/// What came back from upstream: a tool call's or a prompt's answer.
#[derive(Debug)]
pub(crate) enum Outcome {
    Tool(Started),
    Prompt(Started<GetPromptResult>),
    /// A task the upstream made in the session of another gateway instance (its address),
    /// whose held call this round continued there (see `hop`).
    TaskAt(rmcp::model::Task, String),
}

/// What a held call ends with.
pub(crate) type HeldOutcome = Result<Outcome, HostError>;

/// How long a held call waits for the client's next round: the time a person is given to
/// answer a question (`backchannel`'s default ask timeout). Then the upstream call is
/// cancelled.
pub(crate) const HOLD_FOR: Duration = backchannel::DEFAULT_ASK_TIMEOUT;

/// The most upstream calls held at once; a call that would be one more is refused. A quarter
/// of the 4,096 connections `backchannel`'s servers accept by default, so held calls cannot
/// take an upstream's connection cap.
pub(crate) const MAX_HOLDS: usize = 1024;

/// The most upstream calls one caller (a principal, else a client address) holds at once.
pub(crate) const MAX_HOLDS_PER_CALLER: usize = 64;

/// One upstream call, running, between or during rounds. Dropped, it stops the call (which
/// cancels it upstream).
pub(crate) struct Held<T> {
    owner: String,
    /// Whose share of the table it counts against.
    share: String,
    pub(crate) inbox: Arc<Inbox>,
    pub(crate) outcome: oneshot::Receiver<T>,
    pub(crate) updates: mpsc::UnboundedReceiver<Update>,
    task: tokio::task::JoinHandle<()>,
    _registered: Registered,
}

impl<T> Drop for Held<T> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<T> std::fmt::Debug for Held<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl<T> Held<T> {
    /// A call of `owner` running as `task`, counted against `share`, whose questions come to
    /// `inbox` and whose progress and log messages to `updates`; `registered` keeps it known
    /// to the relay.
    pub(crate) fn new(
        owner: String,
        share: String,
        inbox: Arc<Inbox>,
        outcome: oneshot::Receiver<T>,
        updates: mpsc::UnboundedReceiver<Update>,
        task: tokio::task::JoinHandle<()>,
        registered: Registered,
    ) -> Held<T> {
        Held {
            owner,
            share,
            inbox,
            outcome,
            updates,
            task,
            _registered: registered,
        }
    }
}

/// A fresh random id (128 bits, hex), for a held call.
pub(crate) fn fresh_id() -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| {
        ErrorData::internal_error(format!("no random id could be made: {error}"), None)
    })?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Why a round found no held call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotHeld {
    /// Gone: it waited longer than [`HOLD_FOR`], or ended, or another instance holds it.
    Gone,
    /// Too many calls are held.
    Full,
    /// This caller holds its whole share.
    OverShare,
}

/// The held calls by id, each with the generation it was kept at (a later keep restarts its
/// bound).
type Table<T> = Arc<Mutex<HashMap<String, (u64, Held<T>)>>>;

/// The held calls of this gateway, by id; each ends with a `T`.
#[derive(Debug)]
pub(crate) struct Holds<T> {
    held: Table<T>,
    generation: std::sync::atomic::AtomicU64,
}

impl<T> Default for Holds<T> {
    fn default() -> Self {
        Holds {
            held: Arc::new(Mutex::new(HashMap::new())),
            generation: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl<T: Send + 'static> Holds<T> {
    /// Keep `held` under `id` until its next round takes it, at most [`HOLD_FOR`]. Refused
    /// (and `held` dropped, which stops its upstream call) when the table is full or its
    /// caller holds its whole share.
    pub(crate) fn keep(&self, id: String, held: Held<T>) -> Result<(), NotHeld> {
        let generation = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        {
            let mut table = lock(&self.held);
            if table.len() >= MAX_HOLDS {
                return Err(NotHeld::Full);
            }
            let share = table
                .values()
                .filter(|(_, other)| other.share == held.share)
                .count();
            if share >= MAX_HOLDS_PER_CALLER {
                return Err(NotHeld::OverShare);
            }
            table.insert(id.clone(), (generation, held));
        }
        let table = Arc::downgrade(&self.held);
        tokio::spawn(async move {
            tokio::time::sleep(HOLD_FOR).await;
            let Some(table) = table.upgrade() else {
                return;
            };
            let mut table = lock(&table);
            if table.get(&id).is_some_and(|(kept, _)| *kept == generation) {
                tracing::debug!(hold = %id, "a held upstream call waited too long for its answers; cancelling it");
                table.remove(&id);
            }
        });
        Ok(())
    }

    /// The call held under `id` for `owner`, taken out (the round works on it).
    pub(crate) fn take(&self, id: &str, owner: &str) -> Result<Held<T>, NotHeld> {
        let mut table = lock(&self.held);
        match table.get(id) {
            Some((_, held)) if held.owner == owner => Ok(table
                .remove(id)
                .map(|(_, held)| held)
                .ok_or(NotHeld::Gone)?),
            _ => Err(NotHeld::Gone),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tells when it is dropped.
    struct Tell(Option<oneshot::Sender<()>>);

    impl Drop for Tell {
        fn drop(&mut self) {
            if let Some(tell) = self.0.take() {
                let _ = tell.send(());
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_call_belongs_to_its_owner_and_is_stopped_after_hold_for() {
        let switchboard = Arc::new(crate::Switchboard::default());
        let (_token, inbox, updates, registered) =
            switchboard.open_held(crate::config::relayed_capabilities());
        let (told, stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let _tell = Tell(Some(told));
            std::future::pending::<()>().await;
        });
        let (_sent, outcome) = oneshot::channel::<()>();
        let holds = Holds::default();
        let held = Held::new(
            "principal:alice".into(),
            "principal:alice".into(),
            inbox,
            outcome,
            updates,
            task,
            registered,
        );
        holds.keep("hold-1".into(), held).unwrap();

        assert_eq!(
            holds.take("hold-1", "principal:mallory").unwrap_err(),
            NotHeld::Gone
        );
        // Taken and kept again within the bound: a fresh bound from then.
        tokio::time::sleep(HOLD_FOR - Duration::from_secs(1)).await;
        let held = holds.take("hold-1", "principal:alice").unwrap();
        holds.keep("hold-1".into(), held).unwrap();
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(
            holds
                .take("hold-1", "principal:alice")
                .is_ok_and(|held| { holds.keep("hold-1".into(), held).is_ok() })
        );
        // Not taken for longer than the bound: gone, and its upstream call stopped.
        tokio::time::sleep(HOLD_FOR + Duration::from_secs(1)).await;
        assert_eq!(
            holds.take("hold-1", "principal:alice").unwrap_err(),
            NotHeld::Gone
        );
        stopped.await.unwrap();
    }

    /// A held call of `share` whose upstream call does nothing, and the relay it is known to.
    fn idle(switchboard: &Arc<crate::Switchboard>, share: &str) -> Held<()> {
        let (_token, inbox, updates, registered) =
            switchboard.open_held(crate::config::relayed_capabilities());
        let task = tokio::spawn(std::future::pending::<()>());
        let (_sent, outcome) = oneshot::channel::<()>();
        Held::new(
            share.into(),
            share.into(),
            inbox,
            outcome,
            updates,
            task,
            registered,
        )
    }

    #[tokio::test(start_paused = true)]
    async fn one_caller_holds_at_most_its_share_and_others_still_get_theirs() {
        let switchboard = Arc::new(crate::Switchboard::default());
        let holds = Holds::default();
        for n in 0..MAX_HOLDS_PER_CALLER {
            holds
                .keep(format!("m-{n}"), idle(&switchboard, "address:10.0.0.9"))
                .unwrap();
        }
        assert_eq!(
            holds
                .keep("m-over".into(), idle(&switchboard, "address:10.0.0.9"))
                .unwrap_err(),
            NotHeld::OverShare
        );
        // Another caller is not affected by the first one's flood.
        holds
            .keep("a-1".into(), idle(&switchboard, "principal:alice"))
            .unwrap();
        // Once one of the first caller's calls is taken, it may hold one more.
        drop(holds.take("m-0", "address:10.0.0.9").unwrap());
        holds
            .keep("m-again".into(), idle(&switchboard, "address:10.0.0.9"))
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_table_refuses_a_further_hold() {
        let switchboard = Arc::new(crate::Switchboard::default());
        let holds = Holds::default();
        for n in 0..MAX_HOLDS {
            let share = format!("address:10.0.{}.{}", n / 64, n % 64);
            holds
                .keep(format!("h-{n}"), idle(&switchboard, &share))
                .unwrap();
        }
        assert_eq!(
            holds
                .keep("one-more".into(), idle(&switchboard, "principal:bob"))
                .unwrap_err(),
            NotHeld::Full
        );
    }
}
