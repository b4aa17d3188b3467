//! One call's state, shared by every run of its body, and what it needs from the layer.
//! Both the layer (which drives calls) and the context (which a body asks through) use it;
//! it uses neither.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ClientCapabilities, InputRequest, ServerNotification};
use rmcp::service::{Peer, RequestContext};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::outbox::Outbox;
use crate::revision::Revision;
use crate::sampling_roots_logging::LogLevel;
use crate::sessions::Sessions;
use crate::state::{Answer, AskKind};
#[cfg(feature = "http")]
use crate::transport::SessionLink;
use crate::util::lock;

/// Inside a task, where the body's progress is kept: the task's status message, which
/// `tasks/get` shows (nobody listens on the stream of the request that started the task).
#[derive(Clone)]
pub(crate) struct StatusSink(
    pub(crate) Arc<dyn Fn(String) -> futures::future::BoxFuture<'static, ()> + Send + Sync>,
);

impl std::fmt::Debug for StatusSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StatusSink(..)")
    }
}

/// How long a server waits for a person's answer unless told otherwise
/// ([`BackchannelBuilder::ask_timeout`](crate::BackchannelBuilder::ask_timeout)); a host that knows the server's setting waits as long.
pub const DEFAULT_ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);

/// What every call of one layer shares: its clock, its defaults and its sessions.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) clock: Clock,
    pub(crate) ask_timeout: Duration,
    pub(crate) default_log_level: LogLevel,
    pub(crate) sessions: Sessions,
}

/// Whether a call may continue as a task (tasks extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Escalation {
    /// Not a task tool, or the client did not declare tasks: `escalate` is a no-op.
    NotAvailable,
    /// May become a task; `escalate` asks for it.
    Allowed,
    /// `escalate` was called in this run.
    Requested,
    /// Already running as a task.
    InTask,
}

/// A question that went out (or will go out) in this round.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) kind: AskKind,
    pub(crate) request: InputRequest,
    pub(crate) timeout: Duration,
}

/// State shared by every run of one call's body.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) revision: Revision,
    /// The request, as the body's `Ctx` extractor saw it (without the `Ctx` itself). Taken only
    /// by bodies that take a `Ctx`, which are the only ones that can ask and so run again;
    /// later runs get clones of it.
    pub(crate) rc: std::sync::OnceLock<RequestContext<RoleServer>>,
    pub(crate) caps: std::sync::OnceLock<ClientCapabilities>,
    /// Random per-call nonce (URL elicitation ids, sealed state), drawn on first use or taken
    /// from the sealed state.
    pub(crate) nonce: std::sync::OnceLock<String>,
    /// Inside a task, the task's own token; otherwise the request's.
    pub(crate) task_ct: Option<CancellationToken>,
    /// What the call needs from the layer.
    pub(crate) shared: Arc<Shared>,
    pub(crate) answers: Mutex<BTreeMap<String, Answer>>,
    /// Raw `inputResponses` of this request (2026-07-28), read when the body asks.
    pub(crate) responses: BTreeMap<String, serde_json::Value>,
    /// When each question of the previous round went out, from the sealed state.
    pub(crate) asked: BTreeMap<String, crate::state::Asked>,
    pub(crate) escalation: Mutex<Escalation>,
    /// Rounds of questions inside a task (task input keys must be unique per task).
    pub(crate) task_round: AtomicU32,
    pub(crate) pending: Mutex<BTreeMap<String, Pending>>,
    pub(crate) last_progress: Mutex<Option<f64>>,
    /// Inside a task, where its progress goes (see [`StatusSink`]), and when it last went.
    pub(crate) task_status: Option<StatusSink>,
    /// Its recorded steps ([`crate::Ctx::step`]), kept with the task inside one.
    pub(crate) steps: crate::tasks::Ledger,
    pub(crate) status_at: Mutex<Option<tokio::time::Instant>>,
    pub(crate) runs: AtomicU32,
    /// The trace of the call's first round, from the sealed state (2026-07-28, when exported).
    pub(crate) trace: Option<String>,
    /// The round passed on in the previous request, from the sealed state.
    pub(crate) passed_in: Option<crate::state::PassedOn>,
    /// The round this run passes on: the other server's questions and state.
    pub(crate) pass_out: Mutex<Option<(rmcp::model::InputRequests, Option<String>)>>,
}

impl Call {
    /// The request. Every path here starts from a `Ctx`, whose extractor stored it.
    pub(crate) fn rc(&self) -> &RequestContext<RoleServer> {
        self.rc
            .get()
            .expect("a Ctx exists only after its extractor stored the request")
    }

    /// Whether the call's questions go to the client as `input_required` rounds (2026-07-28,
    /// not inside a task), so a body may pass another server's round on.
    pub(crate) fn passes_rounds(&self) -> bool {
        !self.revision.has_sessions() && self.task_ct.is_none()
    }

    pub(crate) fn caps(&self) -> &ClientCapabilities {
        self.caps
            .get_or_init(|| self.rc().client_capabilities().unwrap_or_default())
    }

    pub(crate) fn peer(&self) -> &Peer<RoleServer> {
        &self.rc().peer
    }

    /// Send a notification to the client: on the request's own response stream when it came
    /// through the stateless fast path (its [`Outbox`]), through its session when `serve`
    /// serves that session itself (its [`SessionLink`]), else through the rmcp peer. Returns
    /// whether it was sent.
    pub(crate) async fn notify(&self, notification: ServerNotification) -> bool {
        let extensions = &self.rc().extensions;
        if let Some(outbox) = extensions.get::<Arc<Outbox>>() {
            return outbox.send(notification);
        }
        #[cfg(feature = "http")]
        if let Some(link) = extensions.get::<SessionLink>() {
            // A message of this request goes on its stream, ahead of its answer (a host
            // can tell whose it is, and reads it before the result).
            let mut notification = notification;
            use rmcp::model::GetExtensions as _;
            notification
                .extensions_mut()
                .insert(rmcp::service::OriginatingRequestId(self.rc().id.clone()));
            return link.notify(notification);
        }
        self.peer().send_notification(notification).await.is_ok()
    }

    pub(crate) fn ct(&self) -> &CancellationToken {
        self.task_ct.as_ref().unwrap_or(&self.rc().ct)
    }

    pub(crate) fn nonce(&self) -> &str {
        self.nonce.get_or_init(crate::util::fresh_nonce)
    }

    pub(crate) fn take_pending(&self) -> BTreeMap<String, Pending> {
        std::mem::take(&mut *lock(&self.pending))
    }
}
