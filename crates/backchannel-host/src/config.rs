//! The host's configuration: named connections, read from TOML.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use backchannel::{LogLevel, Revision};

/// `"auto"` (or nothing) for `None`, or a revision's date.
fn revision_or_auto<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Revision>, D::Error> {
    let text = String::deserialize(deserializer)?;
    if text.trim() == "auto" {
        return Ok(None);
    }
    text.parse().map(Some).map_err(serde::de::Error::custom)
}

/// `"debug"` … `"emergency"` (the protocol's names), or `"off"` for none.
fn level_or_off<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<LogLevel>, D::Error> {
    let text = String::deserialize(deserializer)?;
    if text.trim() == "off" {
        return Ok(None);
    }
    text.trim().parse::<LogLevel>().map(Some).map_err(|_| {
        serde::de::Error::custom(format!(
            "log_level {text:?}: expected debug, info, notice, warning, error, critical, \
                 alert, emergency or off"
        ))
    })
}

/// The level a connection asks for unless configured otherwise.
pub const DEFAULT_LOG_LEVEL: Option<LogLevel> = Some(LogLevel::Info);

fn default_log_level() -> Option<LogLevel> {
    DEFAULT_LOG_LEVEL
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum Transport {
    /// Streamable HTTP.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:8080/mcp`.
        url: String,
        /// Extra request headers.
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Its working directory (default: the host's).
        #[serde(default)]
        cwd: Option<PathBuf>,
        /// Extra environment variables.
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
}

/// Which client capabilities a connection declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(default)]
pub struct Declared {
    /// Form elicitation.
    pub elicitation: bool,
    /// URL elicitation (the handler sees `UrlElicitationParams`; a gateway passing questions
    /// on declares it).
    pub url_elicitation: bool,
    /// Sampling (the host answers with its model, after the person approves).
    pub sampling: bool,
    /// Roots (the connection's `roots` list).
    pub roots: bool,
    /// The tasks extension.
    pub tasks: bool,
}

impl Declared {
    /// What both declare: each capability kept only where `wanted` declares it too (a gateway
    /// declares upstream no more than its client declared to it).
    pub fn narrowed_to(self, wanted: Declared) -> Declared {
        Declared {
            elicitation: self.elicitation && wanted.elicitation,
            url_elicitation: self.url_elicitation && wanted.url_elicitation,
            sampling: self.sampling && wanted.sampling,
            roots: self.roots && wanted.roots,
            tasks: self.tasks && wanted.tasks,
        }
    }
}

impl Default for Declared {
    fn default() -> Self {
        Self {
            elicitation: true,
            url_elicitation: false,
            sampling: false,
            roots: false,
            tasks: true,
        }
    }
}

/// One named connection.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ConnectionConfig {
    /// How to reach the server.
    #[serde(flatten)]
    pub transport: Transport,
    /// How long one request may take, in seconds (default 30).
    #[serde(default = "default_timeout_secs")]
    pub request_timeout_secs: u64,
    /// Folders this connection's server may use, as absolute paths; each must lie inside one
    /// of the host's trusted folders. Declared as `file://` roots, named as given or after
    /// their folder: `roots = ["/srv/kb", { path = "/srv/old", name = "Archive" }]`.
    #[serde(default)]
    pub roots: Vec<RootConfig>,
    /// The protocol revision to speak; `None` ("auto", the default) tries the newest and falls
    /// back to 2025-11-25.
    #[serde(default, deserialize_with = "revision_or_auto")]
    pub protocol: Option<Revision>,
    /// Prefix for this connection's tool names as the model sees them (none by default).
    #[serde(default)]
    pub tool_prefix: Option<String>,
    /// Only these tools are offered (all by default).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Capabilities to declare.
    #[serde(default)]
    pub capabilities: Declared,
    /// How to sign in when an HTTP server asks (feature `oauth`; the `[…auth]` table).
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// The least severe log messages to ask the server for: `logging/setLevel` once a
    /// 2025-11-25 session opens (when the server declares logging), each request's
    /// `io.modelcontextprotocol/logLevel` on 2026-07-28 (unless the caller's context names one).
    /// `"debug"` … `"emergency"`, or `"off"` to ask for none; default `"info"`
    /// ([`DEFAULT_LOG_LEVEL`]).
    #[serde(default = "default_log_level", deserialize_with = "level_or_off")]
    pub log_level: Option<LogLevel>,
    /// Send a stateless (2026-07-28) HTTP connection's tool calls and prompt requests on the
    /// host's own HTTP/1.1 rounds (`direct/`: no rmcp transport, worker or channel per
    /// request; default true). Off, rmcp's client sends every request: the switch of this
    /// wire of our own, for comparing the two and for an rmcp upgrade.
    #[serde(default = "direct_rounds_by_default")]
    pub direct_rounds: bool,
}

fn direct_rounds_by_default() -> bool {
    true
}

/// How a connection signs in, when its server asks (a 401 with a `WWW-Authenticate`
/// challenge). Every field is optional; with none, the host registers itself dynamically.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// The HTTPS URL of this client's metadata document (used as its client ID by servers
    /// that support client ID metadata documents).
    pub client_metadata_url: Option<String>,
    /// A client ID registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// The secret of that client, if it is a confidential one.
    pub client_secret: Option<String>,
    /// Scopes to ask for; empty: the server's challenge, else all it supports.
    pub scopes: Vec<String>,
    /// Where the browser is sent back after signing in (default
    /// `http://127.0.0.1:8976/callback`).
    pub redirect_uri: Option<String>,
    /// The token file (readable by the user only); without one, tokens live in memory.
    pub token_file: Option<PathBuf>,
    /// Sign in as the host itself, with `client_id` and `client_secret`, by the OAuth client
    /// credentials grant: no person and no browser (a gateway's own access to a server).
    pub client_credentials: bool,
    /// A file holding a bearer token sent with every request: a static credential of the
    /// host's own, read when the connection opens (no OAuth sign-in then; only its first line
    /// counts).
    pub bearer_file: Option<PathBuf>,
    /// Where this connection's OAuth tokens are kept, given by the program rather than read
    /// from the configuration (a gateway keeps each person's own in its database); it wins
    /// over `token_file`.
    #[cfg(feature = "oauth")]
    #[serde(skip)]
    pub credentials: Option<crate::credentials::SharedCredentials>,
}

fn default_timeout_secs() -> u64 {
    30
}

impl ConnectionConfig {
    /// The request timeout.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
    }
}

/// The whole host configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct HostConfig {
    /// The client name servers see (`<name> - <connection>`).
    #[serde(default = "default_client_name")]
    pub client_name: String,
    /// Folders roots may point into.
    #[serde(default)]
    pub trusted_folders: Vec<PathBuf>,
    /// The `_meta` keys a caller's context may send (default: `progressToken`).
    #[serde(default = "default_meta_allow")]
    pub meta_allow: Vec<String>,
    /// Connections by name.
    #[serde(default)]
    pub connections: BTreeMap<String, ConnectionConfig>,
}

fn default_client_name() -> String {
    "backchannel-host".into()
}

fn default_meta_allow() -> Vec<String> {
    vec!["progressToken".into()]
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Not valid TOML, or not the expected shape.
    #[error("the host configuration is not valid: {0}")]
    Parse(#[from] toml::de::Error),
    /// A root is not absolute.
    #[error("connection {connection:?}: root {root:?} must be an absolute path")]
    RelativeRoot {
        /// The connection.
        connection: String,
        /// The root.
        root: PathBuf,
    },
    /// A root lies outside every trusted folder.
    #[error("connection {connection:?}: root {root:?} is not inside a trusted folder")]
    UntrustedRoot {
        /// The connection.
        connection: String,
        /// The root.
        root: PathBuf,
    },
    /// The configuration is larger than [`MAX_CONFIG_BYTES`].
    #[error("the configuration is {0} bytes; at most {MAX_CONFIG_BYTES} are read")]
    TooLarge(usize),
    /// A connection name is empty or has characters other than letters, digits, `-` and `_`.
    #[error("connection name {0:?} must be letters, digits, '-' or '_'")]
    BadName(String),
}

/// The largest configuration read, in bytes.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024;

impl HostConfig {
    /// Parse and check a TOML configuration (at most [`MAX_CONFIG_BYTES`]).
    pub fn from_toml(text: &str) -> Result<HostConfig, ConfigError> {
        if text.len() > MAX_CONFIG_BYTES {
            return Err(ConfigError::TooLarge(text.len()));
        }
        let config: HostConfig = toml::from_str(text)?;
        config.check()?;
        Ok(config)
    }

    /// Check names and roots.
    pub fn check(&self) -> Result<(), ConfigError> {
        for (name, connection) in &self.connections {
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(ConfigError::BadName(name.clone()));
            }
            for RootConfig { path: root, .. } in &connection.roots {
                trusted_root(&self.trusted_folders, name, root)?;
            }
        }
        Ok(())
    }
}

/// A folder a connection's server may use, and the name the person reads for it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "RootSpelling")]
pub struct RootConfig {
    /// The folder, an absolute path.
    pub path: PathBuf,
    /// What the root is called (its folder's name when `None`).
    pub name: Option<String>,
}

impl RootConfig {
    /// `path`, called `name`.
    pub fn named(path: impl Into<PathBuf>, name: impl Into<String>) -> RootConfig {
        RootConfig {
            path: path.into(),
            name: Some(name.into()),
        }
    }
}

impl From<PathBuf> for RootConfig {
    fn from(path: PathBuf) -> RootConfig {
        RootConfig { path, name: None }
    }
}

/// A root as the configuration may write it: a path alone, or a path and a name.
#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "a folder's path, or { path = \"…\", name = \"…\" }"
)]
enum RootSpelling {
    Path(PathBuf),
    Named { path: PathBuf, name: Option<String> },
}

impl From<RootSpelling> for RootConfig {
    fn from(spelling: RootSpelling) -> RootConfig {
        match spelling {
            RootSpelling::Path(path) => RootConfig { path, name: None },
            RootSpelling::Named { path, name } => RootConfig { path, name },
        }
    }
}

/// Resolve `.` and `..` without touching the file system (a root may not exist yet).
/// `root`, normalised, when it may be a root of `connection`: absolute and inside one of the
/// `trusted` folders.
pub(crate) fn trusted_root(
    trusted: &[PathBuf],
    connection: &str,
    root: &Path,
) -> Result<PathBuf, ConfigError> {
    if !root.is_absolute() {
        return Err(ConfigError::RelativeRoot {
            connection: connection.to_owned(),
            root: root.to_owned(),
        });
    }
    let root = normalise(root);
    if !trusted
        .iter()
        .any(|trusted| root.starts_with(normalise(trusted)))
    {
        return Err(ConfigError::UntrustedRoot {
            connection: connection.to_owned(),
            root,
        });
    }
    Ok(root)
}

fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A path as a `file://` URI.
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in normalise(path).to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
client_name = "support-agent"
trusted_folders = ["/srv/kb"]
meta_allow = ["progressToken", "support_agent_id"]

[connections.orders]
transport = "http"
url = "http://127.0.0.1:8080/mcp"
request_timeout_secs = 120
protocol = "2026-07-28"

[connections.knowledge-base]
transport = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/kb/current"]
roots = [{ path = "/srv/kb/current", name = "Support knowledge base" }]
tool_prefix = "knowledge_base_"
tools = ["read_text_file", "list_directory"]
capabilities = { roots = true, elicitation = false }
"#;

    #[test]
    fn a_connection_names_how_it_signs_in() {
        let config = HostConfig::from_toml(
            r#"
[connections.hosted]
transport = "http"
url = "https://mcp.example.com/mcp"

[connections.hosted.auth]
client_metadata_url = "https://agent.example.com/client.json"
scopes = ["orders:read", "orders:write"]
token_file = "/home/me/.local/state/agent/tokens.json"
"#,
        )
        .unwrap();
        let auth = config.connections["hosted"].auth.clone().unwrap();
        assert_eq!(auth.scopes, ["orders:read", "orders:write"]);
        assert_eq!(
            auth.token_file.as_deref(),
            Some(Path::new("/home/me/.local/state/agent/tokens.json"))
        );
        assert_eq!(auth.client_id, None);
        // A misspelt setting is refused rather than ignored.
        let refused = HostConfig::from_toml(
            "[connections.h]\ntransport = \"http\"\nurl = \"https://x/mcp\"\n\
             [connections.h.auth]\nclient_secrets = \"oops\"\n",
        );
        assert!(refused.is_err());
        assert!(
            HostConfig::from_toml(CONFIG).unwrap().connections["orders"]
                .auth
                .is_none()
        );
    }

    #[test]
    fn a_configuration_parses_with_its_defaults() {
        let config = HostConfig::from_toml(CONFIG).unwrap();
        let orders = &config.connections["orders"];
        assert_eq!(orders.request_timeout(), Duration::from_secs(120));
        assert_eq!(orders.protocol, Some(Revision::V2026_07_28));
        assert!(orders.capabilities.elicitation);
        let kb = &config.connections["knowledge-base"];
        assert!(matches!(&kb.transport, Transport::Stdio { command, .. } if command == "npx"));
        assert_eq!(kb.request_timeout(), Duration::from_secs(30));
        assert!(kb.capabilities.roots && !kb.capabilities.elicitation);
        assert_eq!(
            kb.roots,
            [RootConfig::named(
                "/srv/kb/current",
                "Support knowledge base"
            )]
        );
        let plain = HostConfig::from_toml(&CONFIG.replace(
            r#"[{ path = "/srv/kb/current", name = "Support knowledge base" }]"#,
            r#"["/srv/kb/current"]"#,
        ))
        .unwrap();
        assert_eq!(
            plain.connections["knowledge-base"].roots,
            [RootConfig::from(PathBuf::from("/srv/kb/current"))]
        );
        assert_eq!(
            file_uri(&plain.connections["knowledge-base"].roots[0].path),
            "file:///srv/kb/current"
        );
    }

    #[test]
    fn roots_outside_the_trusted_folders_are_refused() {
        let configured =
            r#"roots = [{ path = "/srv/kb/current", name = "Support knowledge base" }]"#;
        assert!(CONFIG.contains(configured));
        let escaping = CONFIG.replace(configured, r#"roots = ["/srv/kb/../etc"]"#);
        let error = HostConfig::from_toml(&escaping).unwrap_err();
        assert!(
            matches!(error, ConfigError::UntrustedRoot { .. }),
            "{error}"
        );
        let relative = CONFIG.replace(configured, r#"roots = ["kb"]"#);
        assert!(matches!(
            HostConfig::from_toml(&relative),
            Err(ConfigError::RelativeRoot { .. })
        ));
    }

    #[test]
    fn file_uris_escape_what_they_must() {
        assert_eq!(file_uri(Path::new("/a b/c%d")), "file:///a%20b/c%25d");
    }
}
