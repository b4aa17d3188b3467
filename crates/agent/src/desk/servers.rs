//! Servers the person names (`--server NAME=URL`) beside the order service: connected as the
//! order service is (every question, sampling request, progress and log message shown), their
//! tools offered to the model under `NAME_`, and any tool callable by hand from the page and
//! the terminal, without a model (as MCP Inspector does).

use rmcp::model::CallToolResult;
use serde::Serialize;
use serde_json::Value;

use super::Desk;

/// A tool as the page and the terminal list it for calling by hand.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOffered {
    /// The server (the desk's name for its connection).
    pub server: String,
    /// The name to call it by (with its server's prefix, as the model sees it).
    pub name: String,
    /// What it does, as its server says.
    pub description: String,
    /// Its arguments' JSON Schema.
    pub input_schema: Value,
}

/// A call made by hand: its text, and whether the tool said it failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CalledByHand {
    /// The result's text (its structured content's JSON when it has no text).
    pub text: String,
    /// The tool's own failure (`isError`), which the person reads like any result.
    pub is_error: bool,
}

impl Desk {
    /// The connection a tool offered as `name` belongs to, and its name there: a named
    /// server's when `name` carries its prefix, else the order service's.
    pub(crate) fn route_of<'a>(&self, name: &'a str) -> (String, &'a str) {
        for server in &self.config.servers {
            if let Some(tool) = name.strip_prefix(server.prefix().as_str()) {
                return (server.name.clone(), tool);
            }
        }
        ("orders".to_owned(), name)
    }

    /// Every tool of every server the desk reaches (not the notes' servers: the desk searches
    /// those itself), for calling by hand.
    pub async fn tools_by_hand(&self) -> Result<Vec<ToolOffered>, String> {
        let host = self.host.host().await?;
        let mut offered = Vec::new();
        for connection in host.connections() {
            if connection.name().starts_with("knowledge-base") {
                continue;
            }
            let tools = connection.tools().await.map_err(|e| e.to_string())?;
            offered.extend(tools.iter().map(|tool| ToolOffered {
                server: connection.name().to_owned(),
                name: tool.name.to_string(),
                description: tool.description.as_deref().unwrap_or_default().to_owned(),
                input_schema: serde_json::to_value(&*tool.input_schema).unwrap_or_default(),
            }));
        }
        Ok(offered)
    }

    /// Call the tool offered as `name` by hand in `conversation` (its questions, progress and
    /// logs shown there, as a model's call's are).
    pub async fn call_by_hand(
        &self,
        conversation: &str,
        name: &str,
        arguments: Value,
    ) -> Result<CalledByHand, String> {
        if !arguments.is_object() {
            return Err("a tool's arguments are a JSON object".into());
        }
        let offered = self.tools_by_hand().await?;
        if !offered.iter().any(|tool| tool.name == name) {
            return Err(format!(
                "no server of this desk offers a tool named {name:?}"
            ));
        }
        let result = self.call_routed(conversation, name, arguments).await?;
        Ok(CalledByHand {
            text: result_text(&result),
            is_error: result.is_error == Some(true),
        })
    }
}

/// A result's text blocks, or its structured content's JSON when it has none.
fn result_text(result: &CallToolResult) -> String {
    let text: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect();
    match (&result.structured_content, text.is_empty()) {
        (Some(structured), true) => structured.to_string(),
        _ => text.join("\n"),
    }
}
