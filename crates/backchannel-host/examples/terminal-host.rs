//! A host that answers its server's questions at the terminal: it connects to one MCP server
//! over HTTP (either revision), calls one tool, and when the server asks, the person at the
//! keyboard answers: each field of a form, the text a "model" would write, and it sees the
//! call's progress and the server's logs as they come.
//!
//! ```text
//! cargo run -p backchannel --example two-way-server            # prints its URL
//! cargo run -p backchannel-host --example terminal-host -- URL                 # lists the tools
//! cargo run -p backchannel-host --example terminal-host -- URL cancel_order '{"order_id":"ORD-1"}'
//! ```
//!
//! Folders named in `--root DIR` (any number) are declared as the connection's roots.
#![allow(
    clippy::print_stdout,
    reason = "an example talks to the person at the terminal"
)]

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

use backchannel_host::{
    CallContext, Host, HostConfig, HostHandler, LogMessage, SamplingAnswer, SamplingQuestion,
};
use rmcp::ErrorData;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ProgressNotificationParam, ProgressToken,
    RequestMetaObject,
};
use serde_json::{Map, Value};

/// Ask the person one line at the terminal (on a blocking thread: stdin is not async).
async fn ask(prompt: String) -> String {
    tokio::task::spawn_blocking(move || {
        print!("{prompt}");
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        line.trim().to_owned()
    })
    .await
    .unwrap_or_default()
}

/// One field of a form, typed as its schema says: `y`/`n` for booleans, numbers parsed, text
/// as it is; an empty answer leaves an optional field out.
fn field_value(kind: &str, answer: &str) -> Option<Value> {
    match kind {
        _ if answer.is_empty() => None,
        "boolean" => Some(Value::Bool(matches!(answer, "y" | "yes" | "true"))),
        "integer" => answer.parse::<i64>().ok().map(Value::from),
        "number" => answer.parse::<f64>().ok().map(Value::from),
        _ => Some(Value::String(answer.to_owned())),
    }
}

struct Terminal;

impl HostHandler for Terminal {
    async fn elicit(
        &self,
        connection: &str,
        request: ElicitRequestParams,
        _meta: RequestMetaObject,
        _caller: Option<ProgressToken>,
    ) -> ElicitResult {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            // This host declares forms only, so a server asks nothing else.
            return ElicitResult::new(ElicitationAction::Decline);
        };
        println!("[{connection}] asks: {message}");
        if ask("answer? [y = answer, n = decline] ".into()).await != "y" {
            return ElicitResult::new(ElicitationAction::Decline);
        }
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        let mut content = Map::new();
        let properties = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (name, property) in properties {
            let kind = property["type"].as_str().unwrap_or("string").to_owned();
            let about = property["description"].as_str().unwrap_or(&name).to_owned();
            let answer = ask(format!("  {about} ({kind}): ")).await;
            if let Some(value) = field_value(&kind, &answer) {
                content.insert(name, value);
            }
        }
        ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
    }

    async fn sample(
        &self,
        connection: &str,
        question: SamplingQuestion,
        _caller: Option<ProgressToken>,
    ) -> Result<SamplingAnswer, ErrorData> {
        println!("[{connection}] wants a model's answer to:");
        for turn in &question.messages {
            let who = if turn.assistant { "assistant" } else { "user" };
            println!("  {who}: {}", turn.text);
        }
        let text = ask("you are the model (empty refuses): ".into()).await;
        if text.is_empty() {
            return Err(ErrorData::invalid_request("the person refused", None));
        }
        Ok(SamplingAnswer {
            text,
            model: "the person at the terminal".into(),
        })
    }

    fn on_progress(&self, connection: &str, progress: ProgressNotificationParam) {
        let total = progress
            .total
            .map(|t| format!(" of {t}"))
            .unwrap_or_default();
        let message = progress.message.unwrap_or_default();
        println!(
            "[{connection}] progress {}{total} {message}",
            progress.progress
        );
    }

    fn on_log(&self, connection: &str, message: LogMessage) {
        println!("[{connection}] {:?}: {}", message.level, message.data);
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut roots = Vec::new();
    while let Some(at) = args.iter().position(|arg| arg == "--root") {
        args.remove(at);
        if at < args.len() {
            roots.push(std::fs::canonicalize(PathBuf::from(args.remove(at)))?);
        }
    }
    let [url, rest @ ..] = args.as_slice() else {
        return Err("usage: terminal-host URL [TOOL [JSON_ARGUMENTS]] [--root DIR]...".into());
    };
    // The configuration a host application would read from a file (`HostConfig::from_toml`).
    let quoted = |path: &PathBuf| Value::String(path.display().to_string()).to_string();
    let folders: Vec<String> = roots.iter().map(quoted).collect();
    let config = HostConfig::from_toml(&format!(
        "trusted_folders = [{folders}]\n\
         [connections.server]\n\
         transport = \"http\"\n\
         url = {url}\n\
         roots = [{folders}]\n\
         capabilities = {{ roots = {declares_roots}, sampling = true }}\n",
        folders = folders.join(", "),
        url = Value::String(url.clone()),
        declares_roots = !roots.is_empty(),
    ))?;

    let host = Host::open(&config, Arc::new(Terminal)).await?;
    if let Some((name, reason)) = host.unavailable.iter().next() {
        return Err(format!("cannot connect to {name}: {reason}").into());
    }
    let server = host.connection("server")?;
    match rest {
        [] => {
            for tool in server.tools().await? {
                let about = tool.description.as_deref().unwrap_or("");
                println!("{}: {about}", tool.name);
            }
        }
        [tool, arguments @ ..] => {
            let arguments = match arguments.first() {
                Some(json) => Some(serde_json::from_str::<Map<String, Value>>(json)?),
                None => None,
            };
            let result = server
                .call_tool(tool, arguments, &CallContext::new())
                .await?;
            for content in &result.content {
                if let Some(text) = content.as_text() {
                    println!("{}", text.text);
                }
            }
        }
    }
    host.close().await;
    Ok(())
}
