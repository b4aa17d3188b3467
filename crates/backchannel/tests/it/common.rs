//! The library's test server ([`backchannel::testing::TestServer`]) and a scripted client, for
//! the integration tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use backchannel::testing::TestServer;
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient};

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
            caps.extensions = Some([(TASKS_EXTENSION_ID.to_owned(), JsonObject::new())].into());
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

/// A 2026-07-28 client of `server` that declares everything and is never asked directly (the
/// tasks' tests: questions inside a task are answered by `tasks/update`).
pub async fn task_client(server: &TestServer) -> Client {
    connect(
        server.clone(),
        TestClient::new(Declares::ALL, vec![]),
        Revision::V2026_07_28,
    )
    .await
}

/// Call `tool`, which the server makes a task: its id.
pub async fn start_task(running: &Client, tool: &str) -> String {
    let CallToolResponse::Task(created) = running.call_tool_once(call(tool)).await.unwrap() else {
        panic!("expected a task");
    };
    created.task.task_id
}

/// Poll `tasks/get` through `running` (test time moves on between polls, a minute at most)
/// until `done`.
pub async fn poll_task(
    running: &Client,
    id: &str,
    done: impl Fn(&TaskPayload) -> bool,
) -> TaskPayload {
    for _ in 0..1_200 {
        let task = running.get_task(GetTaskParams::new(id)).await.unwrap();
        if done(&task.task.payload) {
            return task.task.payload;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the task never reached the expected state");
}

/// Whether a task waits for an answer.
pub fn parked(payload: &TaskPayload) -> bool {
    matches!(payload, TaskPayload::InputRequired { .. })
}

/// A `tasks/update` of task `id` that answers its `confirm` question yes.
pub fn yes_to(id: &str) -> UpdateTaskParams {
    let mut update = UpdateTaskParams::new(id.to_owned(), Default::default());
    update.input_responses = [(
        "confirm".to_owned(),
        serde_json::json!({"action": "accept", "content": {"confirmed": true}}),
    )]
    .into();
    update
}
