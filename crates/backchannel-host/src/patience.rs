//! How long a request waits for its server ([`Patience`]): the connection's request timeout,
//! counted only while the server has the turn. While the host answers one of the server's
//! questions (the person deciding, the model writing a sampled reply) the clock stops, and it
//! starts afresh when the answer goes back: a person's or a model's time is theirs, not the
//! server's (a model that took 135 s to write a summary no longer fails a call whose server
//! answers in a second).
//!
//! A request bounded this way ([`Patience::bound`]) makes its patience the task's
//! ([`Patience::current`]); the call it starts keeps it, and the host's handler of the server's
//! questions holds [`Patience::answering`] while it answers one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backchannel::lock;
use tokio::time::Instant;

tokio::task_local! {
    static CURRENT: Arc<Patience>;
}

/// The time a request's server has had, stopped while the host answers its questions.
#[derive(Debug)]
pub(crate) struct Patience {
    /// When the server last got the turn (the request was sent, or an answer went back).
    since: Mutex<Instant>,
    /// Questions of the server being answered now.
    answering: AtomicUsize,
    changed: tokio::sync::Notify,
}

/// The server ran out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutOfPatience;

/// A question of the server being answered: the clock is stopped until it is dropped.
#[derive(Debug)]
pub(crate) struct Answering(Arc<Patience>);

impl Drop for Answering {
    fn drop(&mut self) {
        *lock(&self.0.since) = Instant::now();
        self.0.answering.fetch_sub(1, Ordering::AcqRel);
        self.0.changed.notify_waiters();
    }
}

impl Patience {
    /// The patience of the request this task runs, if it runs in one.
    pub(crate) fn current() -> Option<Arc<Patience>> {
        CURRENT.try_with(Arc::clone).ok()
    }

    /// Stop the clock while a question of the server is answered.
    pub(crate) fn answering(self: &Arc<Self>) -> Answering {
        self.answering.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_waiters();
        Answering(self.clone())
    }

    /// Run `request` with `timeout` of the server's time (its patience the task's meanwhile).
    pub(crate) async fn bound<T>(
        timeout: Duration,
        request: impl Future<Output = T>,
    ) -> Result<T, OutOfPatience> {
        let patience = Arc::new(Patience {
            since: Mutex::new(Instant::now()),
            answering: AtomicUsize::new(0),
            changed: tokio::sync::Notify::new(),
        });
        let request = CURRENT.scope(patience.clone(), request);
        tokio::pin!(request);
        loop {
            let changed = patience.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let answering = patience.answering.load(Ordering::Acquire) > 0;
            let deadline = *lock(&patience.since) + timeout;
            tokio::select! {
                out = &mut request => return Ok(out),
                () = &mut changed => {}
                () = tokio::time::sleep_until(deadline), if !answering => {
                    let still_idle = patience.answering.load(Ordering::Acquire) == 0;
                    if still_idle && *lock(&patience.since) + timeout <= Instant::now() {
                        return Err(OutOfPatience);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{OutOfPatience, Patience};

    /// A server that takes longer than the timeout runs out of it; the time a question of
    /// its spends being answered (a person, a model) does not count, and the server gets a
    /// whole timeout again after the answer.
    #[tokio::test(start_paused = true)]
    async fn the_clock_stops_while_a_question_is_answered() {
        let timeout = Duration::from_secs(30);
        let slow_server = Patience::bound(timeout, tokio::time::sleep(Duration::from_secs(31)));
        assert_eq!(slow_server.await, Err(OutOfPatience));
        let asks_the_model = Patience::bound(timeout, async {
            tokio::time::sleep(Duration::from_secs(20)).await;
            let patience = Patience::current().expect("the request's patience");
            let answering = patience.answering();
            // The model writes for 135 s.
            tokio::time::sleep(Duration::from_secs(135)).await;
            drop(answering);
            // The server takes 29 s more after the answer.
            tokio::time::sleep(Duration::from_secs(29)).await;
            "done"
        });
        assert_eq!(asks_the_model.await, Ok("done"));
        let slow_after_the_answer = Patience::bound(timeout, async {
            let answering = Patience::current().unwrap().answering();
            tokio::time::sleep(Duration::from_secs(100)).await;
            drop(answering);
            tokio::time::sleep(Duration::from_secs(31)).await;
        });
        assert_eq!(slow_after_the_answer.await, Err(OutOfPatience));
        assert!(Patience::current().is_none(), "no request, no patience");
    }
}
