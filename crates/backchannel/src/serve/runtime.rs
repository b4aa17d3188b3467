//! The tokio runtime a server binary runs on, chosen from `TOKIO_WORKER_THREADS` (which the
//! binary reads) as `#[tokio::main]` reads it, but for one worker: then tokio's current-thread
//! scheduler.
//!
//! With one worker, `#[tokio::main]` still builds the multi-thread scheduler: the main
//! thread runs the accept loop, one worker thread runs the connections, and every task woken
//! by the I/O driver passes through the scheduler's shared queues and its park/unpark
//! machinery. The current-thread scheduler runs the same tasks on the one thread that asked
//! for them, with none of that.

use std::io;

/// Which of tokio's schedulers a server binary runs on.
///
/// ```no_run
/// use backchannel::serve::Scheduler;
/// // In a binary's `main`, which reads the environment (libraries do not):
/// let scheduler = Scheduler::for_workers(std::env::var("TOKIO_WORKER_THREADS").ok().as_deref());
/// let runtime = scheduler.build().expect("a tokio runtime");
/// runtime.block_on(async move {
///     scheduler.log(); // once logging is set up
///     // serve here
/// });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheduler {
    /// One thread runs every task: `TOKIO_WORKER_THREADS=1`.
    CurrentThread,
    /// A worker thread per core, or as many as `TOKIO_WORKER_THREADS` says.
    MultiThread,
}

impl Scheduler {
    /// The scheduler for the value of `TOKIO_WORKER_THREADS` (`None` when it is not set). A
    /// value other than a count of one is left to tokio, which refuses a value that is not a
    /// count.
    pub fn for_workers(workers: Option<&str>) -> Self {
        match workers.map(|v| v.trim().parse::<usize>()) {
            Some(Ok(1)) => Scheduler::CurrentThread,
            _ => Scheduler::MultiThread,
        }
    }

    /// Say in the log (at INFO, once logging is set up) that every task runs on one thread,
    /// when it does.
    pub fn log(self) {
        if self == Scheduler::CurrentThread {
            tracing::info!(
                "one worker: every task runs on this thread (tokio's current-thread scheduler)"
            );
        }
    }

    /// The scheduler `TOKIO_WORKER_THREADS` asks for, read through `var` (a binary passes
    /// `|name| std::env::var(name).ok()`: libraries do not read the environment).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        Self::for_workers(var("TOKIO_WORKER_THREADS").as_deref())
    }

    /// Run `server` (given this scheduler, to say it in the log) to its end on a runtime of
    /// this scheduler: a server binary's `main`.
    pub fn run<F: std::future::Future>(
        self,
        server: impl FnOnce(Scheduler) -> F,
    ) -> io::Result<F::Output> {
        Ok(self.build()?.block_on(server(self)))
    }

    /// A runtime on this scheduler, with I/O and time enabled.
    pub fn build(self) -> io::Result<tokio::runtime::Runtime> {
        let mut builder = match self {
            Scheduler::CurrentThread => tokio::runtime::Builder::new_current_thread(),
            Scheduler::MultiThread => tokio::runtime::Builder::new_multi_thread(),
        };
        builder.enable_all().build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_is_the_current_thread_scheduler_and_anything_else_is_left_to_tokio() {
        for one in ["1", " 1", "1\n"] {
            assert_eq!(
                Scheduler::for_workers(Some(one)),
                Scheduler::CurrentThread,
                "{one:?}"
            );
        }
        for other in [
            None,
            Some("2"),
            Some("16"),
            Some("0"),
            Some(""),
            Some("one"),
        ] {
            assert_eq!(
                Scheduler::for_workers(other),
                Scheduler::MultiThread,
                "{other:?}"
            );
        }
    }

    #[test]
    fn the_current_thread_runtime_serves_spawned_tasks_and_timers() {
        let runtime = Scheduler::CurrentThread.build().unwrap();
        let answer = runtime.block_on(async {
            let task = tokio::spawn(async {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                42
            });
            task.await.unwrap()
        });
        assert_eq!(answer, 42);
    }
}
