//! The conformance suite's tools, prompts and resources, one function each, with the names and
//! answers the suite's scenarios expect.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use backchannel::{
    Backchannel, Ctx, Elicited, ListKind, LogLevel, RootsListed, Sampled, ToolError, ToolResult,
    UrlElicited,
};
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, prompt, prompt_router, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV header with no samples.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// The fixture server. Clones share the layer and the dynamic tool list.
#[derive(Clone)]
pub struct ConformanceServer {
    layer: Backchannel,
    tools: ToolRouter<Self>,
    prompts: PromptRouter<Self>,
    /// Tools added by `test_trigger_tool_change`.
    extra_tools: Arc<Mutex<Vec<Tool>>>,
    subscriptions: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for ConformanceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConformanceServer").finish_non_exhaustive()
    }
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

#[derive(Debug, Deserialize, JsonSchema)]
struct PromptArg {
    /// The prompt to send to the model.
    prompt: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct MessageArg {
    /// The message to show the person.
    message: String,
}

/// The form of `test_elicitation`.
#[derive(Debug, serde::Serialize, Deserialize, JsonSchema)]
struct UserInfo {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}
backchannel::elicit_safe!(UserInfo);

#[derive(Debug, serde::Serialize, Deserialize, JsonSchema)]
struct Name {
    name: String,
}
backchannel::elicit_safe!(Name);

#[derive(Debug, serde::Serialize, Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}
backchannel::elicit_safe!(Confirm);

#[derive(Debug, serde::Serialize, Deserialize, JsonSchema)]
struct Color {
    color: String,
}
backchannel::elicit_safe!(Color);

#[derive(Debug, serde::Serialize, Deserialize, JsonSchema)]
struct PromptContextForm {
    context: String,
}
backchannel::elicit_safe!(PromptContextForm);

#[derive(Debug, Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet
    name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ComputeArgs {
    /// How long to work, in seconds
    #[serde(default)]
    seconds: f64,
    /// A label echoed in the result
    #[serde(default)]
    label: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct FileArg {
    /// The file to delete
    filename: String,
}

#[derive(Debug, serde::Serialize, Deserialize, JsonSchema)]
struct DeleteConfirmation {
    /// Delete the file?
    confirm: bool,
}
backchannel::elicit_safe!(DeleteConfirmation);

#[derive(Debug, Deserialize, JsonSchema)]
struct TwoArgs {
    /// First test argument
    arg1: String,
    /// Second test argument
    arg2: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ResourceUriArg {
    /// URI of the resource to embed
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

fn sampled_text(outcome: &Sampled) -> String {
    match outcome {
        Sampled::Message(_) => outcome.text().unwrap_or("(no text)").to_owned(),
        Sampled::Refused { code, message } => format!("refused ({code}): {message}"),
        Sampled::Unsupported => "sampling unsupported".into(),
        Sampled::TimedOut => "sampling timed out".into(),
        Sampled::Failed { message } => format!("sampling failed: {message}"),
    }
}

fn roots_text(outcome: &RootsListed) -> String {
    match outcome {
        RootsListed::Listed(roots) => {
            let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
            format!("roots: {}", uris.join(", "))
        }
        RootsListed::Failed { code, message } => format!("roots failed ({code}): {message}"),
        RootsListed::Unsupported => "roots unsupported".into(),
        RootsListed::TimedOut => "roots timed out".into(),
    }
}

fn elicited_text<T: serde::Serialize>(outcome: &Elicited<T>) -> String {
    match outcome {
        Elicited::Accepted(value) => format!(
            "action=accept, content={}",
            serde_json::to_string(value).unwrap_or_default()
        ),
        Elicited::Declined => "action=decline".into(),
        Elicited::Cancelled => "action=cancel".into(),
        Elicited::Unsupported => "elicitation unsupported".into(),
        Elicited::TimedOut => "elicitation timed out".into(),
    }
}

#[tool_router]
impl ConformanceServer {
    #[tool(description = "Returns simple text content")]
    async fn test_simple_text(&self) -> CallToolResult {
        text("This is a simple text response for testing.")
    }

    #[tool(description = "Returns image content")]
    async fn test_image_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::image(PNG, "image/png")])
    }

    #[tool(description = "Returns audio content")]
    async fn test_audio_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::Audio(AudioContent::new(
            WAV,
            "audio/wav",
        ))])
    }

    #[tool(description = "Returns embedded resource content")]
    async fn test_embedded_resource(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::embedded_text(
            "test://embedded-resource",
            "This is an embedded resource content.",
        )])
    }

    #[tool(description = "Returns text, image and resource content together")]
    async fn test_multiple_content_types(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG, "image/png"),
            ContentBlock::resource(ResourceContents::TextResourceContents {
                uri: "test://mixed-content-resource".into(),
                mime_type: Some("application/json".into()),
                text: r#"{"test":"data","value":123}"#.into(),
                meta: None,
            }),
        ])
    }

    #[tool(description = "Sends three info log messages while it runs")]
    async fn test_tool_with_logging(&self, ctx: Ctx) -> CallToolResult {
        for (i, line) in [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            ctx.log(LogLevel::Info, "conformance", line).await;
        }
        text("Logging test completed")
    }

    #[tool(description = "Logs at info level; sends nothing unless the request asked for logs")]
    async fn test_logging_tool(&self, ctx: Ctx) -> CallToolResult {
        ctx.log(LogLevel::Info, "conformance", "test_logging_tool ran")
            .await;
        text("Logged (if the request asked for logs)")
    }

    #[tool(description = "Always fails with an isError result")]
    async fn test_error_handling(&self) -> ToolResult {
        Err(ToolError::failed(
            "This tool intentionally returns an error for testing",
        ))
    }

    #[tool(description = "Reports progress 0, 50 and 100 of 100")]
    async fn test_tool_with_progress(&self, ctx: Ctx) -> CallToolResult {
        for (i, (value, message)) in [(0.0, "Starting"), (50.0, "Halfway"), (100.0, "Complete")]
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            ctx.progress(value, Some(100.0), Some(message)).await;
        }
        text("Progress test completed")
    }

    #[tool(description = "Asks the client's model to answer a prompt")]
    async fn test_sampling(&self, ctx: Ctx, Parameters(args): Parameters<PromptArg>) -> ToolResult {
        let outcome = ctx
            .sample("answer", backchannel::user_prompt(args.prompt, 100))
            .await?;
        match outcome {
            Sampled::Message(_) => Ok(text(format!("LLM response: {}", sampled_text(&outcome)))),
            other => Err(ToolError::failed(sampled_text(&other))),
        }
    }

    #[tool(description = "Asks the person for a username and an email address")]
    async fn test_elicitation(
        &self,
        ctx: Ctx,
        Parameters(args): Parameters<MessageArg>,
    ) -> ToolResult {
        let outcome = ctx.elicit::<UserInfo>("user_info", args.message).await?;
        match outcome {
            Elicited::Unsupported => Err(ToolError::failed(
                "this client does not support elicitation",
            )),
            other => Ok(text(format!("User response: {}", elicited_text(&other)))),
        }
    }

    #[tool(description = "Asks a form whose every field has a default (SEP-1034)")]
    async fn test_elicitation_sep1034_defaults(&self, ctx: Ctx) -> ToolResult {
        // Wire detail: `default` values in the schema, written out by hand.
        raw_elicit(
            &ctx,
            "Please provide values (all have defaults)",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User's name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User's age", "default": 30},
                    "score": {"type": "number", "description": "User's score", "default": 95.5},
                    "status": {"type": "string", "description": "User's status",
                               "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Whether user is verified", "default": true}
                }
            }),
        )
        .await
    }

    #[tool(description = "Asks a form with all five enum shapes (SEP-1330)")]
    async fn test_elicitation_sep1330_enums(&self, ctx: Ctx) -> ToolResult {
        // Wire detail: the five enum schema shapes, written out by hand.
        raw_elicit(
            &ctx,
            "Please pick from each kind of list",
            json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                   "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}
                }
            }),
        )
        .await
    }

    #[tool(
        description = "Echoes its region; clients mirror it into the Mcp-Param-Region header \
                       (SEP-2243), and a request whose header disagrees with it is refused",
        input_schema = region_header_input()
    )]
    async fn test_custom_header(&self, Parameters(args): Parameters<RegionArgs>) -> CallToolResult {
        text(format!("region {}", args.region))
    }

    #[tool(
        description = "A tool whose input schema uses JSON Schema 2020-12 features",
        input_schema = json_schema_2020_12_input()
    )]
    async fn json_schema_2020_12_tool(&self) -> CallToolResult {
        text("json_schema_2020_12_tool called")
    }

    #[tool(description = "Needs the client's sampling capability; refuses with -32021 without it")]
    async fn test_missing_capability(&self, ctx: Ctx) -> ToolResult {
        if ctx.client_capabilities().sampling.is_none() {
            let mut required = ClientCapabilities::default();
            required.sampling = Some(Default::default());
            return Err(ToolError::Protocol(
                ErrorData::missing_required_client_capability(required),
            ));
        }
        Ok(text("sampling capability present"))
    }

    #[tool(
        description = "Asks the person to open a page (a URL-mode question), and on \
                          2025-11-25 says when the page's work is done"
    )]
    async fn test_url_elicitation(
        &self,
        ctx: Ctx,
        Parameters(args): Parameters<MessageArg>,
    ) -> ToolResult {
        let outcome = ctx
            .elicit_url("page", args.message, "https://example.test/verify")
            .await?;
        Ok(text(match outcome {
            UrlElicited::Accepted { elicitation_id } => {
                let told = ctx.url_elicitation_complete(&elicitation_id).await;
                format!(
                    "URL question: action=accept, elicitationId={elicitation_id}, completion sent={told}"
                )
            }
            UrlElicited::Declined => "URL question: action=decline".into(),
            UrlElicited::Cancelled => "URL question: action=cancel".into(),
            UrlElicited::Unsupported => "URL question: unsupported by this client".into(),
            UrlElicited::TimedOut => "URL question: timed out".into(),
        }))
    }

    #[tool(description = "Asks the person a question (on 2026-07-28 as an input_required result)")]
    async fn test_streaming_elicitation(&self, ctx: Ctx) -> ToolResult {
        let outcome = ctx.elicit::<Name>("name", "What is your name?").await?;
        Ok(text(elicited_text(&outcome)))
    }

    #[tool(description = "Adds a tool and tells every listener that the tool list changed")]
    async fn test_trigger_tool_change(&self) -> CallToolResult {
        let n = {
            let mut extra = self.extra_tools.lock().unwrap_or_else(|e| e.into_inner());
            let n = extra.len() + 1;
            extra.push(Tool::new(
                format!("dynamic_tool_{n}"),
                "A tool added at run time",
                Arc::new(serde_json::Map::from_iter([(
                    "type".to_owned(),
                    json!("object"),
                )])),
            ));
            n
        };
        let notified = self.layer.notify_list_changed(ListKind::Tools).await;
        text(format!(
            "added dynamic_tool_{n}; notified {notified} listener(s)"
        ))
    }

    #[tool(description = "Tells every listener that the prompt list changed")]
    async fn test_trigger_prompt_change(&self) -> CallToolResult {
        let notified = self.layer.notify_list_changed(ListKind::Prompts).await;
        text(format!("notified {notified} listener(s)"))
    }

    #[tool(description = "Asks for the person's name")]
    async fn test_input_required_result_elicitation(&self, ctx: Ctx) -> ToolResult {
        match ctx
            .elicit::<Name>("user_name", "What is your name?")
            .await?
        {
            Elicited::Accepted(Name { name }) => Ok(text(format!("Hello, {name}!"))),
            other => Ok(text(elicited_text(&other))),
        }
    }

    #[tool(description = "Asks the client's model a question")]
    async fn test_input_required_result_sampling(&self, ctx: Ctx) -> ToolResult {
        let outcome = ctx
            .sample(
                "capital_question",
                backchannel::user_prompt("What is the capital of France?", 100),
            )
            .await?;
        Ok(text(format!(
            "Sampling response: {}",
            sampled_text(&outcome)
        )))
    }

    #[tool(description = "Asks the client for its roots")]
    async fn test_input_required_result_list_roots(&self, ctx: Ctx) -> ToolResult {
        let outcome = ctx.roots("client_roots").await?;
        Ok(text(roots_text(&outcome)))
    }

    #[tool(description = "Asks for confirmation; earlier answers travel in sealed requestState")]
    async fn test_input_required_result_request_state(&self, ctx: Ctx) -> ToolResult {
        let outcome = ctx.elicit::<Confirm>("confirm", "Please confirm").await?;
        Ok(text(format!("state-ok: {}", elicited_text(&outcome))))
    }

    #[tool(description = "Asks three independent questions in one round")]
    async fn test_input_required_result_multiple_inputs(&self, ctx: Ctx) -> ToolResult {
        ask_name_greeting_roots(&ctx).await
    }

    #[tool(description = "Asks two questions, one after the other")]
    async fn test_input_required_result_multi_round(&self, ctx: Ctx) -> ToolResult {
        let name = ctx
            .elicit::<Name>("step1", "Step 1: What is your name?")
            .await?;
        let color = ctx
            .elicit::<Color>("step2", "Step 2: What is your favorite color?")
            .await?;
        Ok(text(format!(
            "step1 {}; step2 {}",
            elicited_text(&name),
            elicited_text(&color)
        )))
    }

    #[tool(description = "Asks a question; a tampered requestState is refused")]
    async fn test_input_required_result_tampered_state(&self, ctx: Ctx) -> ToolResult {
        let outcome = ctx.elicit::<Confirm>("confirm", "Please confirm").await?;
        Ok(text(format!("state verified: {}", elicited_text(&outcome))))
    }

    #[tool(description = "Asks only what the client declared it can answer")]
    async fn test_input_required_result_capabilities(&self, ctx: Ctx) -> ToolResult {
        // The same three asks; the layer leaves out what the client did not declare.
        ask_name_greeting_roots(&ctx).await
    }
}

/// Three independent asks made before the first `?`, so one round carries all of them.
async fn ask_name_greeting_roots(ctx: &Ctx) -> ToolResult {
    let name = ctx.elicit::<Name>("user_name", "What is your name?").await;
    let greeting = ctx
        .sample(
            "greeting",
            backchannel::user_prompt("Generate a greeting", 50),
        )
        .await;
    let roots = ctx.roots("client_roots").await;
    let (name, greeting, roots) = (name?, greeting?, roots?);
    Ok(text(format!(
        "{}; greeting: {}; {}",
        elicited_text(&name),
        sampled_text(&greeting),
        roots_text(&roots)
    )))
}

/// The tools that may run as tasks (tasks extension), and how.
pub(crate) const TASK_TOOLS: [(&str, backchannel::TaskSupport); 6] = [
    ("slow_compute", backchannel::TaskSupport::Optional),
    ("confirm_delete", backchannel::TaskSupport::Optional),
    ("multi_input", backchannel::TaskSupport::Optional),
    ("protocol_error_job", backchannel::TaskSupport::Optional),
    ("failing_job", backchannel::TaskSupport::Required),
    ("test_tool_with_task", backchannel::TaskSupport::Required),
];

#[tool_router(router = task_router)]
impl ConformanceServer {
    #[tool(description = "Greets someone, synchronously")]
    async fn greet(&self, Parameters(args): Parameters<GreetArgs>) -> CallToolResult {
        text(format!("Hello, {}!", args.name))
    }

    #[tool(description = "Works for `seconds` seconds, as a task when the client supports tasks")]
    async fn slow_compute(
        &self,
        ctx: Ctx,
        Parameters(args): Parameters<ComputeArgs>,
    ) -> ToolResult {
        ctx.escalate().await?;
        let seconds = args.seconds.clamp(0.0, 600.0);
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        Ok(text(format!(
            "computed {} after {seconds} s",
            args.label.unwrap_or_else(|| "result".into())
        )))
    }

    #[tool(description = "Always fails with a tool error (task support required)")]
    async fn failing_job(&self, ctx: Ctx) -> ToolResult {
        ctx.escalate().await?;
        Err(ToolError::failed("the job failed"))
    }

    #[tool(description = "Fails with a protocol error, so its task ends failed")]
    async fn protocol_error_job(&self, ctx: Ctx) -> ToolResult {
        ctx.escalate().await?;
        Err(ToolError::Protocol(ErrorData::internal_error(
            "the job hit a protocol error",
            None,
        )))
    }

    #[tool(description = "Asks before deleting a file, inside a task")]
    async fn confirm_delete(&self, ctx: Ctx, Parameters(args): Parameters<FileArg>) -> ToolResult {
        ctx.escalate().await?;
        let answer = ctx
            .elicit::<DeleteConfirmation>("confirm", format!("Delete {}?", args.filename))
            .await?;
        Ok(text(match answer {
            Elicited::Accepted(DeleteConfirmation { confirm: true }) => {
                format!("deleted {}", args.filename)
            }
            other => format!("kept {}: {}", args.filename, elicited_text(&other)),
        }))
    }

    #[tool(description = "Asks two questions at once, inside a task")]
    async fn multi_input(&self, ctx: Ctx) -> ToolResult {
        ctx.escalate().await?;
        let first = ctx.elicit::<Name>("first", "Your first name?").await;
        let second = ctx.elicit::<Name>("second", "Your family name?").await;
        let (first, second) = (first?, second?);
        Ok(text(format!(
            "first {}; second {}",
            elicited_text(&first),
            elicited_text(&second)
        )))
    }

    #[tool(description = "Asks for a name, then continues as a task (task support required)")]
    async fn test_tool_with_task(&self, ctx: Ctx) -> ToolResult {
        let name = match ctx
            .elicit::<Name>("user_name", "What is your name?")
            .await?
        {
            Elicited::Accepted(Name { name }) => name,
            _ => "stranger".into(),
        };
        ctx.escalate().await?;
        Ok(text(format!("Hello from the task, {name}!")))
    }
}

/// The argument of `test_custom_header`.
#[derive(Debug, Deserialize, JsonSchema)]
struct RegionArgs {
    region: String,
}

/// A string parameter annotated `x-mcp-header` (rmcp's HTTP server checks the header).
fn region_header_input() -> Arc<JsonObject> {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}
        },
        "required": ["region"]
    });
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn json_schema_2020_12_input() -> Arc<JsonObject> {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "address",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"}
        },
        "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["address"]}]}],
        "if": {"properties": {"name": {"const": "office"}}, "required": ["name"]},
        "then": {"required": ["address"]},
        "else": {},
        "additionalProperties": false
    });
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// Ask a hand-written form schema (these scenarios test schema wire details).
async fn raw_elicit(ctx: &Ctx, message: &str, schema: Value) -> ToolResult {
    let schema: ElicitationSchema = serde_json::from_value(schema)
        .map_err(|e| ToolError::failed(format!("bad fixture schema: {e}")))?;
    let outcome = ctx
        .with_timeout(Duration::from_secs(30))
        .elicit_form("form", message, schema)
        .await?;
    let (action, content) = match outcome {
        Elicited::Accepted(content) => ("accept", content),
        Elicited::Declined => ("decline", Value::Null),
        Elicited::Cancelled => ("cancel", Value::Null),
        Elicited::TimedOut => {
            return Err(ToolError::failed("Elicitation error: no answer in time"));
        }
        Elicited::Unsupported => {
            return Err(ToolError::failed(
                "this client does not support elicitation",
            ));
        }
    };
    Ok(text(format!(
        "Elicitation completed: action={action}, content={content}"
    )))
}

#[prompt_router]
impl ConformanceServer {
    #[prompt(
        name = "test_simple_prompt",
        description = "A prompt without arguments"
    )]
    async fn test_simple_prompt(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            "This is a simple prompt for testing.",
        )]
    }

    #[prompt(
        name = "test_prompt_with_arguments",
        description = "A prompt with two required arguments"
    )]
    async fn test_prompt_with_arguments(
        &self,
        Parameters(args): Parameters<TwoArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                args.arg1, args.arg2
            ),
        )]
    }

    #[prompt(
        name = "test_prompt_with_embedded_resource",
        description = "A prompt that embeds a resource"
    )]
    async fn test_prompt_with_embedded_resource(
        &self,
        Parameters(args): Parameters<ResourceUriArg>,
    ) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new(
                Role::User,
                ContentBlock::resource(ResourceContents::TextResourceContents {
                    uri: args.resource_uri,
                    mime_type: Some("text/plain".into()),
                    text: "Embedded resource content for testing.".into(),
                    meta: None,
                }),
            ),
            PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
        ]
    }

    #[prompt(
        name = "test_prompt_with_image",
        description = "A prompt with an image"
    )]
    async fn test_prompt_with_image(&self) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new(Role::User, ContentBlock::image(PNG, "image/png")),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ]
    }

    #[prompt(
        name = "test_input_required_result_prompt",
        description = "A prompt that first asks for context"
    )]
    async fn test_input_required_result_prompt(
        &self,
        ctx: Ctx,
    ) -> Result<Vec<PromptMessage>, ErrorData> {
        let context = match ctx
            .elicit::<PromptContextForm>("user_context", "What context should the prompt use?")
            .await?
        {
            Elicited::Accepted(form) => form.context,
            _ => "no context given".into(),
        };
        Ok(vec![PromptMessage::new_text(
            Role::User,
            format!("Use this context: {context}"),
        )])
    }
}

impl Default for ConformanceServer {
    fn default() -> Self {
        Self::new()
    }
}

impl ConformanceServer {
    /// A fixture server on its own layer, with the task fixtures registered for tasks (kept in
    /// memory).
    pub fn new() -> Self {
        Self::with_task_store(None)
    }

    /// The same, keeping its tasks in `store` (for example SQLite) when given.
    pub fn with_task_store(store: Option<Arc<dyn backchannel::tasks::TaskStore>>) -> Self {
        Self::with_options(store, None)
    }

    /// The same, serving `only` that revision when given (the other is refused as an
    /// unsupported version).
    pub fn with_options(
        store: Option<Arc<dyn backchannel::tasks::TaskStore>>,
        only: Option<backchannel::Revision>,
    ) -> Self {
        let mut layer = Backchannel::builder();
        if let Some(revision) = only {
            layer = layer.only_revision(revision);
        }
        for (name, support) in TASK_TOOLS {
            layer = layer.task_tool(name, support);
        }
        if let Some(store) = store {
            layer = layer.task_store(store);
        }
        let layer = layer
            .build()
            .unwrap_or_else(|error| unreachable!("the fixture configuration is valid: {error}"));
        Self {
            layer,
            tools: Self::tool_router() + Self::task_router(),
            prompts: Self::prompt_router(),
            extra_tools: Arc::new(Mutex::new(Vec::new())),
            subscriptions: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn static_resources() -> Vec<Resource> {
        vec![
            Resource::new("test://static-text", "static-text")
                .with_mime_type("text/plain")
                .with_description("A static text resource"),
            Resource::new("test://static-binary", "static-binary")
                .with_mime_type("image/png")
                .with_description("A static binary resource"),
            Resource::new("test://watched-resource", "watched-resource")
                .with_mime_type("text/plain")
                .with_description("A resource clients may subscribe to"),
        ]
    }
}

impl ServerHandler for ConformanceServer {
    backchannel::layer_hooks!(layer, prompts: prompts);

    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_logging()
            .enable_completions()
            .enable_tasks()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "backchannel-conformance",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Fixture server for the MCP conformance suite, built on backchannel.",
            )
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.layer
            .call_tool(&self.tools, self, request, context)
            .await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tools.list_all();
        tools.extend(
            self.extra_tools
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .cloned(),
        );
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.get(name).cloned()
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(Self::static_resources()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new("test://template/{id}/data", "template-data")
            .with_mime_type("application/json")
            .with_description("Data for an id");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => ResourceContents::TextResourceContents {
                uri: uri.into(),
                mime_type: Some("text/plain".into()),
                text: "This is the content of the static text resource.".into(),
                meta: None,
            },
            "test://static-binary" => ResourceContents::BlobResourceContents {
                uri: uri.into(),
                mime_type: Some("image/png".into()),
                blob: PNG.into(),
                meta: None,
            },
            "test://watched-resource" => ResourceContents::TextResourceContents {
                uri: uri.into(),
                mime_type: Some("text/plain".into()),
                text: "Watched resource content.".into(),
                meta: None,
            },
            _ => match uri.strip_prefix("test://template/").and_then(|rest| rest.strip_suffix("/data")) {
                Some(id) if !id.is_empty() && !id.contains('/') => ResourceContents::TextResourceContents {
                    uri: uri.into(),
                    mime_type: Some("application/json".into()),
                    text: json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string(),
                    meta: None,
                },
                _ => {
                    return Err(ErrorData::resource_not_found(
                        "Resource not found",
                        Some(json!({ "uri": uri })),
                    ));
                }
            },
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|u| u != &request.uri);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let candidates = ["paris", "park", "party", "hello", "world"];
        let prefix = request.argument.value.to_lowercase();
        let values: Vec<String> = candidates
            .iter()
            .filter(|c| c.starts_with(&prefix))
            .map(|c| (*c).to_owned())
            .collect();
        let mut info =
            CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        info.has_more = Some(false);
        Ok(CompleteResult::new(info))
    }
}
