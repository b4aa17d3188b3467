//! The client under test for the suite's client scenarios: how a scenario configures the host
//! (`Scenario`), how it answers a server's questions (`ConformanceHandler`: a person who accepts
//! a form's defaults, a model that answers with a fixed text), and arguments made from a tool's
//! schema.

use std::collections::BTreeMap;

use backchannel::Revision;
use backchannel_host::{
    AuthConfig, ConnectionConfig, Declared, HostConfig, HostHandler, SamplingAnswer,
    SamplingQuestion, Transport,
};
use rmcp::ErrorData;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, JsonObject, ProgressToken,
    RequestMetaObject, Tool,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// The one connection's name.
pub const CONNECTION: &str = "server";

/// What the suite asked for.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Its name (`MCP_CONFORMANCE_SCENARIO`).
    pub name: String,
    context: Context,
    revision: Option<Revision>,
}

/// A tool call the scenario names.
#[derive(Debug, Clone, Default, Deserialize)]
struct ToolCall {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
}

/// `MCP_CONFORMANCE_CONTEXT`, as far as this client reads it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Context {
    #[serde(default, alias = "tool_calls")]
    tool_calls: Option<Vec<ToolCall>>,
    /// Pre-registered client credentials (the pre-registration scenarios).
    #[serde(default, alias = "client_id")]
    client_id: Option<String>,
    #[serde(default, alias = "client_secret")]
    client_secret: Option<String>,
}

/// The client metadata document URL this client presents as its client ID where the
/// authorization server accepts one (the suite's mock does not fetch it).
pub const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Where the mock authorization server sends the browser back to.
pub const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The longest context read (the suite's are a few hundred bytes).
const MAX_CONTEXT: usize = 64 * 1024;

impl Scenario {
    /// Read the scenario from the suite's environment values.
    pub fn from_env(
        name: String,
        context: Option<&str>,
        version: Option<&str>,
    ) -> anyhow::Result<Self> {
        let context = match context {
            Some(text) if text.len() > MAX_CONTEXT => {
                anyhow::bail!("the scenario context is larger than {MAX_CONTEXT} bytes")
            }
            Some(text) if !text.trim().is_empty() => serde_json::from_str(text)?,
            _ => Context::default(),
        };
        let revision = match version {
            Some(version) if !version.is_empty() => Some(version.parse::<Revision>()?),
            _ => None,
        };
        Ok(Self {
            name,
            context,
            revision,
        })
    }

    /// The host configuration for `url`: one HTTP connection on the scenario's revision
    /// (2025-11-25 when it names none), declaring forms, sampling and tasks.
    pub fn host_config(&self, url: &str) -> HostConfig {
        let connection = ConnectionConfig {
            transport: Transport::Http {
                url: url.to_owned(),
                headers: BTreeMap::new(),
            },
            request_timeout_secs: 20,
            roots: Vec::new(),
            protocol: Some(self.revision.unwrap_or(Revision::V2025_11_25)),
            tool_prefix: None,
            tools: None,
            capabilities: Declared {
                elicitation: true,
                url_elicitation: false,
                sampling: true,
                roots: false,
                tasks: true,
            },
            auth: Some(AuthConfig {
                client_metadata_url: Some(CLIENT_METADATA_URL.into()),
                client_id: self.context.client_id.clone(),
                client_secret: self.context.client_secret.clone(),
                scopes: Vec::new(),
                redirect_uri: Some(REDIRECT_URI.into()),
                ..AuthConfig::default()
            }),
            log_level: backchannel_host::DEFAULT_LOG_LEVEL,
            direct_rounds: true,
        };
        HostConfig {
            client_name: "backchannel-conformance-client".into(),
            trusted_folders: Vec::new(),
            meta_allow: vec!["progressToken".into()],
            connections: [(CONNECTION.to_owned(), connection)].into(),
        }
    }

    /// The calls the scenario names, if it names any.
    pub fn tool_calls(&self) -> Option<Vec<(String, JsonObject)>> {
        let calls = self.context.tool_calls.as_ref()?;
        Some(
            calls
                .iter()
                .map(|call| {
                    (
                        call.name.clone(),
                        call.arguments.clone().unwrap_or_default(),
                    )
                })
                .collect(),
        )
    }
}

/// The schema-preservation scenario's server offers `json_schema_echo`: the client hands back
/// the input schema of the server's other tool exactly as the host read it.
pub fn echo_schema_call(tools: &[Tool]) -> Option<Vec<(String, JsonObject)>> {
    tools.iter().find(|tool| tool.name == "json_schema_echo")?;
    let observed = tools.iter().find(|tool| tool.name != "json_schema_echo")?;
    let arguments: JsonObject = [(
        "schema".to_owned(),
        Value::Object((*observed.input_schema).clone()),
    )]
    .into_iter()
    .collect();
    Some(vec![("json_schema_echo".to_owned(), arguments)])
}

/// Arguments for `tool` made from its input schema: each required property gets its default,
/// else a plain value of its type.
pub fn arguments_for(tool: &Tool) -> JsonObject {
    let schema = &tool.input_schema;
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let schema = Value::Object((**schema).clone());
    let required = backchannel::schema::required(&schema);
    properties
        .iter()
        .filter(|(name, _)| required.contains(&name.as_str()))
        .map(|(name, property)| (name.clone(), example(property)))
        .collect()
}

/// A value fitting a property's schema.
fn example(property: &Value) -> Value {
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    if let Some(first) = property
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    match property.get("type").and_then(Value::as_str) {
        Some("number") | Some("integer") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!("test"),
    }
}

/// Answers a server's questions for the suite.
#[derive(Debug, Clone, Copy)]
pub struct ConformanceHandler;

impl HostHandler for ConformanceHandler {
    async fn elicit(
        &self,
        _connection: &str,
        request: ElicitRequestParams,
        _meta: RequestMetaObject,
        _caller: Option<ProgressToken>,
    ) -> ElicitResult {
        // A person who accepts what the form proposes: each field's default.
        let schema = match &request {
            ElicitRequestParams::FormElicitationParams {
                requested_schema, ..
            } => serde_json::to_value(requested_schema).unwrap_or_default(),
            _ => return ElicitResult::new(ElicitationAction::Accept),
        };
        let content: JsonObject = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .filter_map(|(name, property)| {
                        property.get("default").map(|d| (name.clone(), d.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
    }

    /// Sign in as a person who approves at once: fetch the authorization URL without following
    /// its redirect, and hand back where it sends the browser.
    async fn authorize(
        &self,
        _connection: &str,
        authorization_url: String,
    ) -> Result<String, backchannel_host::AuthorizeError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let response = client
            .get(&authorization_url)
            .send()
            .await
            .map_err(|e| format!("the authorization server could not be reached: {e}"))?;
        response
            .headers()
            .get(http::header::LOCATION)
            .and_then(|location| location.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "the authorization server answered {} without sending the browser back",
                    response.status()
                )
                .into()
            })
    }

    async fn sample(
        &self,
        _connection: &str,
        question: SamplingQuestion,
        _caller: Option<ProgressToken>,
    ) -> Result<SamplingAnswer, ErrorData> {
        let asked = question
            .messages
            .last()
            .map(|turn| turn.text.clone())
            .unwrap_or_default();
        Ok(SamplingAnswer {
            text: format!("A scripted answer to: {asked}"),
            model: "conformance-model".into(),
        })
    }
}
