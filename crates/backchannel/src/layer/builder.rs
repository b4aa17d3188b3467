//! [`BackchannelBuilder`]: a layer's configuration, checked once when it is built
//! ([`BuildError`]).

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::RequestContext;

use crate::call::Shared;
use crate::clock::Clock;
use crate::revision::Revision;
use crate::sampling_roots_logging::LogLevel;
use crate::sessions::Sessions;
use crate::state::StateCodec;
use crate::tasks::{TaskRuntime, TaskStore};
use crate::util::random_bytes;

use super::{Backchannel, Inner, PrincipalFn, TaskSupport};

/// Configures a [`Backchannel`].
pub struct BackchannelBuilder {
    key: Option<crate::state::KeyChoice>,
    ask_timeout: Duration,
    state_ttl: Duration,
    max_rounds: u32,
    default_log_level: LogLevel,
    principal: Option<Box<PrincipalFn>>,
    task_tools: std::collections::HashMap<String, TaskSupport>,
    resumable: std::collections::HashSet<String>,
    task_store: Option<Arc<dyn TaskStore>>,
    task_lease: Duration,
    task_tick: Duration,
    task_ttl: Option<Duration>,
    task_poll: Duration,
    task_executor: Option<Arc<dyn crate::tasks::TaskExecutor>>,
    task_sole_instance: bool,
    only: Option<Revision>,
}

impl std::fmt::Debug for BackchannelBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackchannelBuilder")
            .field("ask_timeout", &self.ask_timeout)
            .field("state_ttl", &self.state_ttl)
            .finish_non_exhaustive()
    }
}

/// Errors building a [`Backchannel`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The sealing key is shorter than 32 bytes.
    #[error("the request-state key must be at least 32 bytes, got {0}")]
    KeyTooShort(usize),
    /// rmcp refused the key ring.
    #[error("the request-state key ring is not valid: {0}")]
    Keys(String),
    /// The state must outlive the person's answer time.
    #[error(
        "the request-state lifetime ({state_ttl:?}) must be longer than the ask timeout ({ask_timeout:?})"
    )]
    StateShorterThanAsk {
        /// Configured state lifetime.
        state_ttl: Duration,
        /// Configured ask timeout.
        ask_timeout: Duration,
    },
    /// A task lease must outlast two renewals.
    #[error("the task lease ({lease:?}) must be at least two ticks ({tick:?} each, not zero)")]
    TaskLease {
        /// Configured lease.
        lease: Duration,
        /// Configured tick.
        tick: Duration,
    },
}

impl BackchannelBuilder {
    /// The HMAC key sealing `requestState` (at least 32 bytes). Default: a random key per
    /// process, so a round survives neither a restart nor a move to another instance.
    pub fn state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key = Some(crate::state::KeyChoice::Single(key.into()));
        self
    }

    /// The key ring sealing `requestState`: instances behind a load balancer share one, and
    /// rotate by adding a new current key while the old one stays as previous.
    pub fn state_keys(mut self, keys: crate::StateKeys) -> Self {
        self.key = Some(crate::state::KeyChoice::Ring(keys));
        self
    }

    /// How long a question may wait for the person (default [`crate::DEFAULT_ASK_TIMEOUT`]).
    pub fn ask_timeout(mut self, timeout: Duration) -> Self {
        self.ask_timeout = timeout;
        self
    }

    /// How long sealed state stays valid (default 10 minutes).
    pub fn state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// The most rounds one call may take (default 10).
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = rounds;
        self
    }

    /// The log level of a 2025-11-25 session that never sent `logging/setLevel` (default info).
    pub fn default_log_level(mut self, level: LogLevel) -> Self {
        self.default_log_level = level;
        self
    }

    /// How to read the caller's identity from a request; sealed state is bound to it.
    pub fn principal(
        mut self,
        principal: impl Fn(&RequestContext<RoleServer>) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.principal = Some(Box::new(principal));
        self
    }

    /// Let the tool `name` run as a task (tasks extension) from its `ctx.escalate()` on.
    pub fn task_tool(mut self, name: impl Into<String>, support: TaskSupport) -> Self {
        self.task_tools.insert(name.into(), support);
        self
    }

    /// Let the task of tool `name` run again from the start on another instance (or after a
    /// restart) when the instance running it stopped. Promise this only for a body that is
    /// idempotent to its end: it runs again with the answers gathered so far. Other tasks of a
    /// stopped instance end `failed`.
    pub fn resumable(mut self, name: impl Into<String>) -> Self {
        self.resumable.insert(name.into());
        self
    }

    /// Where tasks live (default: this process's memory, [`crate::tasks::MemoryTaskStore`]).
    /// With a shared store ([`crate::tasks::SqlTaskStore`] on PostgreSQL) every instance
    /// answers `tasks/*`, and a task survives the instance that runs it.
    pub fn task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// Where and when task bodies run (default: each at once on the Tokio runtime,
    /// [`crate::tasks::Spawn`]); see [`crate::tasks::TaskExecutor`] for the contract.
    pub fn task_executor(mut self, executor: Arc<dyn crate::tasks::TaskExecutor>) -> Self {
        self.task_executor = Some(executor);
        self
    }

    /// How long an instance holds a task it runs before another may take it over (default
    /// 10 s), and how often it renews its leases and looks for news (default 250 ms; the
    /// lease must be at least two ticks). A cancel or an answer given on another instance
    /// reaches the body within one tick.
    pub fn task_lease(mut self, lease: Duration, tick: Duration) -> Self {
        self.task_lease = lease;
        self.task_tick = tick;
        self
    }

    /// No other instance uses the task store (a SQLite file of this server's own): tasks an
    /// earlier run of this server left unfinished (it stopped or was killed) are taken over as
    /// soon as [`Backchannel::resume_tasks`] starts, not after their lease. Never set it on a
    /// store instances share: a live instance's tasks would be taken from it.
    pub fn sole_instance(mut self) -> Self {
        self.task_sole_instance = true;
        self
    }

    /// How long a task is kept after it was created (default one hour; `None`: until the store
    /// is cleared), and the poll interval suggested to clients (default 500 ms).
    pub fn task_retention(mut self, ttl: Option<Duration>, poll: Duration) -> Self {
        self.task_ttl = ttl;
        self.task_poll = poll;
        self
    }

    /// Serve this revision only: the other is refused as an unsupported protocol version
    /// (`initialize` of a 2026-07-28-only server fails to agree on a version; a request naming
    /// 2026-07-28 in its `_meta` on a 2025-11-25-only server gets `-32022`). For tests of
    /// bridges and clients; a real server serves both. Takes effect through
    /// [`layer_hooks!`](crate::layer_hooks)' `supported_protocol_versions`.
    pub fn only_revision(mut self, revision: Revision) -> Self {
        self.only = Some(revision);
        self
    }

    /// Build the layer.
    pub fn build(self) -> Result<Backchannel, BuildError> {
        let key = match self.key {
            Some(crate::state::KeyChoice::Single(key)) if key.len() < 32 => {
                return Err(BuildError::KeyTooShort(key.len()));
            }
            Some(key) => key,
            None => crate::state::KeyChoice::Single(random_bytes::<32>().to_vec()),
        };
        let codec = StateCodec::new(key).map_err(|e| BuildError::Keys(e.to_string()))?;
        if self.state_ttl <= self.ask_timeout {
            return Err(BuildError::StateShorterThanAsk {
                state_ttl: self.state_ttl,
                ask_timeout: self.ask_timeout,
            });
        }
        if self.task_tick.is_zero() || self.task_lease < self.task_tick * 2 {
            return Err(BuildError::TaskLease {
                lease: self.task_lease,
                tick: self.task_tick,
            });
        }
        let clock = Clock::new();
        let store = self
            .task_store
            .unwrap_or_else(|| Arc::new(crate::tasks::MemoryTaskStore::new()));
        let tasks = Arc::new(TaskRuntime::new(
            store,
            self.task_lease,
            self.task_tick,
            self.task_ttl,
            self.task_poll,
            self.task_executor
                .unwrap_or_else(|| Arc::new(crate::tasks::Spawn)),
            clock,
        ));
        if self.task_sole_instance {
            tasks.sole_instance();
        }
        Ok(Backchannel {
            inner: Arc::new(Inner {
                codec,
                shared: Arc::new(Shared {
                    clock,
                    ask_timeout: self.ask_timeout,
                    default_log_level: self.default_log_level,
                    sessions: Sessions::default(),
                }),
                state_ttl: self.state_ttl,
                max_rounds: self.max_rounds,
                principal: self.principal,
                spent: crate::state::SpentRounds::default(),
                tasks,
                task_tools: self.task_tools,
                resumable: self.resumable,
                bus: std::sync::OnceLock::new(),
                spent_ledger: std::sync::OnceLock::new(),
                only: self.only,
            }),
        })
    }
}

impl Backchannel {
    /// Configure a layer.
    pub fn builder() -> BackchannelBuilder {
        BackchannelBuilder {
            key: None,
            ask_timeout: crate::DEFAULT_ASK_TIMEOUT,
            state_ttl: Duration::from_secs(600),
            max_rounds: 10,
            default_log_level: LogLevel::Info,
            principal: None,
            task_tools: std::collections::HashMap::new(),
            resumable: std::collections::HashSet::new(),
            task_store: None,
            task_lease: Duration::from_secs(10),
            task_tick: Duration::from_millis(250),
            task_ttl: Some(Duration::from_secs(3600)),
            task_poll: Duration::from_millis(500),
            task_executor: None,
            task_sole_instance: false,
            only: None,
        }
    }
}
