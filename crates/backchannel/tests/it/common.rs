//! A small server written once with `Ctx`, and a scripted client, for the integration tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backchannel::{
    Backchannel, Ctx, Elicited, ListKind, LogLevel, RootsListed, Sampled, ToolError, ToolResult,
    UrlElicited,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServerHandler, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Confirmation {
    /// Do you confirm?
    pub confirmed: bool,
    /// Anything to add
    #[serde(default)]
    pub note: Option<String>,
}
backchannel::elicit_safe!(Confirmation);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Color {
    pub color: String,
}
backchannel::elicit_safe!(Color);

/// What happened on the server side, for assertions.
#[derive(Debug, Default)]
pub struct Observed {
    /// Runs of the code before the first ask, per tool body.
    pub runs_before_ask: AtomicU32,
    /// Writes done after the last ask.
    pub writes: AtomicU32,
}

#[derive(Clone)]
pub struct TestServer {
    pub layer: Backchannel,
    pub observed: Arc<Observed>,
    tools: ToolRouter<Self>,
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

pub fn elicited<T: std::fmt::Debug>(outcome: &Elicited<T>) -> String {
    match outcome {
        Elicited::Accepted(value) => format!("accepted {value:?}"),
        Elicited::Declined => "declined".into(),
        Elicited::Cancelled => "cancelled".into(),
        Elicited::Unsupported => "unsupported".into(),
        Elicited::TimedOut => "timed out".into(),
    }
}

#[tool_router]
impl TestServer {
    #[tool(description = "Asks to confirm, then writes")]
    async fn confirm(&self, ctx: Ctx) -> ToolResult {
        self.observed.runs_before_ask.fetch_add(1, Ordering::SeqCst);
        let outcome = ctx.elicit::<Confirmation>("confirm", "Go ahead?").await?;
        if matches!(
            outcome,
            Elicited::Accepted(Confirmation {
                confirmed: true,
                ..
            })
        ) {
            self.observed.writes.fetch_add(1, Ordering::SeqCst);
        }
        Ok(text(elicited(&outcome)))
    }

    #[tool(description = "Asks twice in a row")]
    async fn two_steps(&self, ctx: Ctx) -> ToolResult {
        self.observed.runs_before_ask.fetch_add(1, Ordering::SeqCst);
        let first = ctx.elicit::<Confirmation>("first", "First?").await?;
        let second = ctx.elicit::<Color>("second", "Colour?").await?;
        self.observed.writes.fetch_add(1, Ordering::SeqCst);
        Ok(text(format!("{}; {}", elicited(&first), elicited(&second))))
    }

    #[tool(description = "Reports progress, asks to confirm, then reports the rest")]
    async fn progress_then_ask(&self, ctx: Ctx) -> ToolResult {
        ctx.progress(0.25, Some(1.0), Some("before")).await;
        let outcome = ctx.elicit::<Confirmation>("confirm", "Go ahead?").await?;
        ctx.progress(1.0, Some(1.0), Some("after")).await;
        Ok(text(elicited(&outcome)))
    }

    #[tool(description = "Asks the client's model")]
    async fn summarise(&self, ctx: Ctx) -> ToolResult {
        self.observed.runs_before_ask.fetch_add(1, Ordering::SeqCst);
        let outcome = ctx
            .sample("summary", backchannel::user_prompt("Summarise", 50))
            .await?;
        Ok(text(match outcome {
            Sampled::Message(_) => format!("message {}", outcome.text().unwrap_or("")),
            Sampled::Refused { code, message } => format!("refused {code} {message}"),
            Sampled::Unsupported => "unsupported".into(),
            Sampled::TimedOut => "timed out".into(),
        }))
    }

    #[tool(description = "Asks for the client's roots")]
    async fn folders(&self, ctx: Ctx) -> ToolResult {
        self.observed.runs_before_ask.fetch_add(1, Ordering::SeqCst);
        let outcome = ctx.roots("roots").await?;
        Ok(text(match outcome {
            RootsListed::Listed(roots) => {
                format!(
                    "listed {}",
                    roots
                        .iter()
                        .map(|r| r.uri.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            }
            RootsListed::Failed { code, .. } => format!("failed {code}"),
            RootsListed::Unsupported => "unsupported".into(),
            RootsListed::TimedOut => "timed out".into(),
        }))
    }

    #[tool(description = "Asks the person to open a URL, then says it is done")]
    async fn sign_in(&self, ctx: Ctx) -> ToolResult {
        self.observed.runs_before_ask.fetch_add(1, Ordering::SeqCst);
        let outcome = ctx
            .elicit_url("login", "Sign in to continue", "https://example.test/login")
            .await?;
        Ok(text(match outcome {
            UrlElicited::Accepted { elicitation_id } => {
                let sent = ctx.url_elicitation_complete(&elicitation_id).await;
                format!("accepted {elicitation_id} complete-sent={sent}")
            }
            UrlElicited::Declined => "declined".into(),
            UrlElicited::Cancelled => "cancelled".into(),
            UrlElicited::Unsupported => "unsupported".into(),
            UrlElicited::TimedOut => "timed out".into(),
        }))
    }

    #[tool(description = "Reports progress, including values that do not increase")]
    async fn progress(&self, ctx: Ctx) -> ToolResult {
        let mut sent = Vec::new();
        for value in [0.1, 0.5, 0.5, 0.3, 1.0] {
            sent.push(ctx.progress(value, Some(1.0), None).await);
        }
        Ok(text(format!("{sent:?}")))
    }

    #[tool(description = "Logs at every level")]
    async fn logs(&self, ctx: Ctx) -> ToolResult {
        let mut sent = Vec::new();
        for level in [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Warning,
            LogLevel::Error,
        ] {
            sent.push(ctx.log(level, "test", format!("{level:?}")).await);
        }
        Ok(text(format!("{sent:?}")))
    }

    #[tool(description = "Tells every listener the tool list changed")]
    async fn touch_tools(&self) -> ToolResult {
        let n = self.layer.notify_list_changed(ListKind::Tools).await;
        Ok(text(format!("notified {n}")))
    }

    #[tool(description = "Continues as a task, then asks to confirm")]
    async fn task_confirm(&self, ctx: Ctx) -> ToolResult {
        self.observed.runs_before_ask.fetch_add(1, Ordering::SeqCst);
        ctx.escalate().await?;
        let outcome = ctx.elicit::<Confirmation>("confirm", "Go ahead?").await?;
        if matches!(
            outcome,
            Elicited::Accepted(Confirmation {
                confirmed: true,
                ..
            })
        ) {
            self.observed.writes.fetch_add(1, Ordering::SeqCst);
        }
        Ok(text(format!(
            "in task={}: {}",
            ctx.in_task(),
            elicited(&outcome)
        )))
    }

    #[tool(description = "Fails")]
    async fn fails(&self) -> ToolResult {
        Err(ToolError::failed("it broke"))
    }
}

impl TestServer {
    pub fn new(layer: Backchannel) -> Self {
        Self {
            layer,
            observed: Arc::new(Observed::default()),
            tools: Self::tool_router(),
        }
    }

    /// Take over tasks of stopped instances through this server's tools, until `shutdown`.
    pub fn resume_tasks(&self, shutdown: tokio_util::sync::CancellationToken) {
        self.layer
            .resume_tasks(self.tools.clone(), self.clone(), shutdown);
    }
}

impl ServerHandler for TestServer {
    backchannel::layer_hooks!(layer, tools: tools);

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("test-server", "0.0.0"))
    }
}

/// How the scripted client answers a question.
#[derive(Debug, Clone)]
pub enum Reply {
    Accept(serde_json::Value),
    Decline,
    Cancel,
    /// Answer with an error.
    Refuse,
    /// Answer `Accept(value)` only after this long.
    Late(Duration, serde_json::Value),
}

/// What the client declares.
#[derive(Debug, Clone, Copy)]
pub struct Declares {
    pub elicitation: bool,
    pub url: bool,
    pub sampling: bool,
    pub roots: bool,
    pub tasks: bool,
}

impl Declares {
    pub const ALL: Declares = Declares {
        elicitation: true,
        url: true,
        sampling: true,
        roots: true,
        tasks: true,
    };
    pub const NONE: Declares = Declares {
        elicitation: false,
        url: false,
        sampling: false,
        roots: false,
        tasks: false,
    };
}

#[derive(Debug, Default)]
pub struct Seen {
    pub questions: Mutex<Vec<String>>,
    pub progress: Mutex<Vec<f64>>,
    pub logs: Mutex<Vec<String>>,
    pub tool_list_changed: AtomicU32,
    pub custom: Mutex<Vec<String>>,
}

#[derive(Clone)]
pub struct TestClient {
    pub declares: Declares,
    pub replies: Arc<Mutex<Vec<Reply>>>,
    pub seen: Arc<Seen>,
}

impl TestClient {
    pub fn new(declares: Declares, replies: Vec<Reply>) -> Self {
        Self {
            declares,
            replies: Arc::new(Mutex::new(replies)),
            seen: Arc::new(Seen::default()),
        }
    }

    fn next_reply(&self) -> Reply {
        let mut replies = self.replies.lock().unwrap();
        if replies.len() > 1 {
            replies.remove(0)
        } else {
            replies[0].clone()
        }
    }

    async fn reply_value(&self) -> Result<serde_json::Value, ErrorData> {
        match self.next_reply() {
            Reply::Accept(v) => Ok(v),
            Reply::Late(delay, v) => {
                tokio::time::sleep(delay).await;
                Ok(v)
            }
            Reply::Refuse => Err(ErrorData::new(ErrorCode(-1), "the person refused", None)),
            Reply::Decline => Ok(serde_json::json!({"__action": "decline"})),
            Reply::Cancel => Ok(serde_json::json!({"__action": "cancel"})),
        }
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        if self.declares.elicitation || self.declares.url {
            let mut e = ElicitationCapability::default();
            if self.declares.elicitation {
                e.form = Some(Default::default());
            }
            if self.declares.url {
                e.url = Some(Default::default());
            }
            caps.elicitation = Some(e);
        }
        if self.declares.sampling {
            caps.sampling = Some(Default::default());
        }
        if self.declares.roots {
            caps.roots = Some(Default::default());
        }
        if self.declares.tasks {
            caps.extensions = Some(
                [(TASKS_EXTENSION_ID.to_owned(), JsonObject::new())]
                    .into_iter()
                    .collect(),
            );
        }
        ClientInfo::new(caps, Implementation::new("test-client", "0.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => {
                format!("form: {message}")
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                format!("url: {message} {url}")
            }
            _ => "other".into(),
        };
        self.seen.questions.lock().unwrap().push(message);
        let value = self.reply_value().await?;
        Ok(match value.get("__action").and_then(|a| a.as_str()) {
            Some("decline") => ElicitResult::new(ElicitationAction::Decline),
            Some("cancel") => ElicitResult::new(ElicitationAction::Cancel),
            _ => ElicitResult::new(ElicitationAction::Accept).with_content(value),
        })
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.seen.questions.lock().unwrap().push("sampling".into());
        let value = self.reply_value().await?;
        let text = value.as_str().unwrap_or("ok").to_owned();
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(text),
            "fake-model".into(),
        ))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.seen.questions.lock().unwrap().push("roots".into());
        let _ = self.reply_value().await?;
        Ok(ListRootsResult::new(vec![
            Root::new("file:///srv/data").with_name("data"),
        ]))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.progress.lock().unwrap().push(params.progress);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen
            .logs
            .lock()
            .unwrap()
            .push(params.data.as_str().unwrap_or_default().to_owned());
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.seen.tool_list_changed.fetch_add(1, Ordering::SeqCst);
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.custom.lock().unwrap().push(notification.method);
    }
}

pub use backchannel::testing::Revision;

pub type Client = RunningService<RoleClient, TestClient>;

/// Connect `client` to `server` over an in-process duplex pipe on the given revision.
pub async fn connect(server: TestServer, client: TestClient, revision: Revision) -> Client {
    backchannel::testing::connect(server, client, revision).await
}

pub fn call(name: &str) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned())
}

pub use backchannel::testing::text_of as result_text;
