//! [`TestServer`]: one server written once with [`Ctx`](crate::Ctx), whose tools use every
//! two-way feature, for tests of the library and of hosts against it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    Backchannel, Ctx, Elicited, ListKind, LogLevel, RootsListed, Sampled, ToolError, ToolResult,
    UrlElicited,
};

/// The form the confirming tools ask for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Confirmation {
    /// Do you confirm?
    pub confirmed: bool,
    /// Anything to add
    #[serde(default)]
    pub note: Option<String>,
}
crate::elicit_safe!(Confirmation);

/// The form `two_steps` asks for second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Color {
    /// A colour
    pub color: String,
}
crate::elicit_safe!(Color);

/// The page `open_url` asks the person to open.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct Page {
    /// Any URL, as an upstream that a gateway must not trust might send it
    pub url: String,
}

/// What happened on the server side, for assertions.
#[derive(Debug, Default)]
pub struct Observed {
    /// Runs of the code before the first ask, per tool body.
    pub runs_before_ask: AtomicU32,
    /// Writes done after the last ask.
    pub writes: AtomicU32,
    /// `task_steps`: how often its first step's work ran.
    pub prepared: AtomicU32,
    /// `task_steps`: the writes its second step made, by the step's key (a system honouring
    /// the key keeps the first); how often the step's work ran is `writes`.
    pub keyed: std::sync::Mutex<std::collections::BTreeMap<String, u32>>,
    /// `task_steps`: halt this instance (`kill -9`) inside its write step, after the write and
    /// before the step is recorded.
    pub halt_after_write: std::sync::atomic::AtomicBool,
    /// `task_steps`: halt this instance after its write step is recorded, before the task ends.
    pub halt_after_record: std::sync::atomic::AtomicBool,
}

/// A server whose tools use every two-way feature of [`Ctx`](crate::Ctx), written once for both
/// revisions: `confirm`, `two_steps`, `progress_then_ask`, `summarise`, `folders`, `sign_in`,
/// `open_url`, `progress`, `logs`, `touch_tools`, `task_confirm` and `task_steps` (register
/// them with [`BackchannelBuilder::task_tool`](crate::BackchannelBuilder::task_tool)) and
/// `fails`.
#[derive(Clone)]
pub struct TestServer {
    /// The server's layer.
    pub layer: Backchannel,
    /// What its tools did.
    pub observed: Arc<Observed>,
    tools: ToolRouter<Self>,
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

/// An outcome as the tools report it: `accepted {value:?}`, `declined`, `cancelled`,
/// `unsupported` or `timed out`.
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
        let outcome = self.ask_to_confirm(&ctx).await?;
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
            .sample("summary", crate::user_prompt("Summarise", 50))
            .await?;
        Ok(text(match outcome {
            Sampled::Message(_) => format!("message {}", outcome.text().unwrap_or("")),
            Sampled::Refused { code, message } => format!("refused {code} {message}"),
            Sampled::Unsupported => "unsupported".into(),
            Sampled::TimedOut => "timed out".into(),
            Sampled::Failed { message } => format!("failed {message}"),
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
                        .map(|r| match &r.name {
                            Some(name) => format!("{} ({name})", r.uri),
                            None => r.uri.clone(),
                        })
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

    #[tool(description = "Asks the person to open the URL it is given, whatever it is")]
    async fn open_url(
        &self,
        ctx: Ctx,
        rmcp::handler::server::wrapper::Parameters(page): rmcp::handler::server::wrapper::Parameters<
            Page,
        >,
    ) -> ToolResult {
        let outcome = ctx.elicit_url("open", "Open this page", &page.url).await?;
        Ok(text(match outcome {
            UrlElicited::Accepted { .. } => "accepted".to_owned(),
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

    #[tool(description = "Reports progress 1,000 times, each value above the last")]
    async fn progress_many(&self, ctx: Ctx) -> ToolResult {
        for value in 1..=1000 {
            ctx.progress(f64::from(value), Some(1000.0), None).await;
        }
        Ok(text("1000"))
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
        let outcome = self.ask_to_confirm(&ctx).await?;
        Ok(text(format!(
            "in task={}: {}",
            ctx.in_task(),
            elicited(&outcome)
        )))
    }

    #[tool(
        description = "Continues as a task, prepares in a step, asks to confirm, then writes in a step"
    )]
    async fn task_steps(&self, ctx: Ctx) -> ToolResult {
        ctx.escalate().await?;
        let observed = &self.observed;
        let prepared = ctx
            .step("prepare", async {
                Ok::<_, ToolError>(observed.prepared.fetch_add(1, Ordering::SeqCst) + 1)
            })
            .await?;
        let outcome = ctx.elicit::<Confirmation>("confirm", "Go ahead?").await?;
        if !matches!(
            outcome,
            Elicited::Accepted(Confirmation {
                confirmed: true,
                ..
            })
        ) {
            return Ok(text(format!("prepared {prepared}; {}", elicited(&outcome))));
        }
        let key = ctx.step_key("write");
        let write = ctx.step("write", async {
            observed.writes.fetch_add(1, Ordering::SeqCst);
            let total = {
                let mut keyed = crate::util::lock(&observed.keyed);
                let next = keyed.len() as u32 + 1;
                *keyed.entry(key.clone()).or_insert(next)
            };
            if observed.halt_after_write.swap(false, Ordering::SeqCst) {
                self.layer.halt_tasks();
            }
            Ok::<_, ToolError>(total)
        });
        let written = write.await?;
        if observed.halt_after_record.swap(false, Ordering::SeqCst) {
            self.layer.halt_tasks();
        }
        Ok(text(format!("prepared {prepared}; write number {written}")))
    }

    #[tool(description = "Fails")]
    async fn fails(&self) -> ToolResult {
        Err(ToolError::failed("it broke"))
    }
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("observed", &self.observed)
            .finish_non_exhaustive()
    }
}

impl TestServer {
    /// Ask "Go ahead?" and write (count a write) after a yes.
    async fn ask_to_confirm(&self, ctx: &Ctx) -> Result<Elicited<Confirmation>, crate::Suspend> {
        let outcome = ctx.elicit::<Confirmation>("confirm", "Go ahead?").await?;
        if let Elicited::Accepted(Confirmation {
            confirmed: true, ..
        }) = outcome
        {
            self.observed.writes.fetch_add(1, Ordering::SeqCst);
        }
        Ok(outcome)
    }

    /// The server over `layer`.
    pub fn new(layer: Backchannel) -> Self {
        Self::observed_by(layer, Arc::default())
    }

    /// The server over `layer`, reporting to `observed` (instances of one server share it, as
    /// they share the systems they write to).
    pub fn observed_by(layer: Backchannel, observed: Arc<Observed>) -> Self {
        Self {
            layer,
            observed,
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
    crate::layer_hooks!(layer, tools: tools);

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
