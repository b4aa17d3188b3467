//! The desk's settings ([`DeskConfig`], [`Knowledge`], the servers the person names:
//! [`Server`]) and why it could not start ([`DeskError`]).

use std::time::Duration;

use backchannel::Revision;

/// Settings of the desk.
#[derive(Debug, Clone)]
pub struct DeskConfig {
    /// The order service's MCP endpoint.
    pub orders_url: String,
    /// The protocol revision to speak to it; `None` tries the newest, then 2025-11-25.
    pub protocol: Option<Revision>,
    /// How long the person has to answer a question (default 60 s).
    pub person_deadline: Duration,
    /// How long the order service waits for an answer (its ask timeout; by default
    /// [`backchannel::DEFAULT_ASK_TIMEOUT`]).
    pub server_ask_timeout: Duration,
    /// How long one request to the order service may take (default 120 s).
    pub connection_timeout: Duration,
    /// Who the agent is, sent as `_meta.support_agent_id`.
    pub agent_id: String,
    /// The model; `None` runs the offline rules planner.
    pub model: Option<crate::llm::Provider>,
    /// Tokens one conversation may spend with the model.
    pub token_budget: u64,
    /// The model's context, in tokens: what is sent (the rules, the tools, the conversation)
    /// and the reply's `max_tokens` must fit in it, so the oldest turns are left out first.
    pub context_tokens: u32,
    /// The knowledge base; `None` runs without it.
    pub knowledge: Option<Knowledge>,
    /// Where the authorization server sends the browser back to (the desk's
    /// `/oauth/callback`); `None` means the desk cannot sign in, and an order service that
    /// asks for it stays unavailable.
    pub sign_in_callback: Option<String>,
    /// Where the tokens of a sign-in are kept (a file only the user can read); `None` keeps
    /// them in memory until the desk stops.
    pub token_file: Option<std::path::PathBuf>,
    /// A file whose first line is a bearer token the desk presents to the order service (no
    /// OAuth sign-in then): the demo's desk is known to its order service by one, so the
    /// tasks it starts are bound to it rather than to one MCP session ([`crate::app::demo`]).
    pub orders_bearer_file: Option<std::path::PathBuf>,
    /// Serve Prometheus text at `/metrics` on the web UI (behind its Host checks): the host's
    /// `mcp_client_*` histograms, and in the demo the order service's too.
    pub metrics: bool,
    /// Who may sign in to the web UI; `None` means one implicit person (`agent_id`), for a
    /// desk on loopback.
    pub people: Option<crate::people::People>,
    /// With people: the person whose pages get a server's "Sign in" link (the desk's one
    /// connection to that server then acts under their account, for everyone), and who alone
    /// may open it; without one named, such a sign-in is refused. Unused without people.
    pub sign_in_person: Option<String>,
    /// Declare the tasks extension: a server that runs a call as a task asks its questions
    /// inside it, and they wait in the person's inbox (up to `person_deadline`) while the
    /// conversation goes on; the result is said in the conversation when it comes.
    pub tasks: bool,
    /// The desk's own SQLite database (a URL: `sqlite://data/desk.sqlite`): browser sessions,
    /// conversations and the tasks that wait for the person outlive a restart. `None` keeps
    /// them in memory.
    pub database: Option<String>,
    /// Servers the person names beside the order service (`--server NAME=URL`).
    pub servers: Vec<Server>,
}

impl Default for DeskConfig {
    fn default() -> Self {
        Self {
            orders_url: "http://127.0.0.1:8080/mcp".into(),
            protocol: None,
            person_deadline: Duration::from_secs(60),
            server_ask_timeout: backchannel::DEFAULT_ASK_TIMEOUT,
            connection_timeout: Duration::from_secs(120),
            agent_id: "support-agent".into(),
            model: None,
            token_budget: 20_000,
            context_tokens: 8192,
            knowledge: None,
            sign_in_callback: None,
            token_file: None,
            orders_bearer_file: None,
            metrics: false,
            people: None,
            sign_in_person: None,
            tasks: false,
            database: None,
            servers: Vec::new(),
        }
    }
}

/// Errors starting or using the desk.
#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    /// The timeouts are not ordered person < server < connection.
    #[error(
        "timeouts must nest: the person's {person:?} (--answer-seconds) must be shorter than \
         the order service's ask timeout {server:?} (--server-ask-seconds), which must be \
         shorter than a request's {connection:?} (--orders-timeout-seconds)"
    )]
    Timeouts {
        /// The person's deadline.
        person: Duration,
        /// The server's ask timeout.
        server: Duration,
        /// The connection timeout.
        connection: Duration,
    },
    /// The host failed.
    #[error(transparent)]
    Host(#[from] backchannel_host::HostError),
    /// The desk's database failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The person named to sign the desk's connections in is not in the people file.
    #[error("--sign-in-person {0}: nobody of that name is in the people file")]
    UnknownSignInPerson(String),
    /// Two servers named alike (`--server NAME=URL`).
    #[error("--server {0}=…: two servers have that name")]
    SameServerTwice(String),
}

/// Where the notes are and which filesystem server reads them.
#[derive(Debug, Clone)]
pub struct Knowledge {
    /// The server's command line; the folder is added as its last argument, and the roots
    /// name the same folder.
    pub server: Vec<String>,
    /// Current notes (absolute).
    pub current: std::path::PathBuf,
    /// Archived notes (absolute).
    pub archive: std::path::PathBuf,
    /// The filesystem servers are not started by the desk but reached through the order
    /// service's endpoint: an `mcp-gateway` in front of the order service and of the two
    /// servers, named `knowledge_base` and `knowledge_base_archive` (their tools prefixed with
    /// those names and `_`), serving [`Knowledge::current`] and [`Knowledge::archive`].
    pub through_orders: bool,
    /// Folders inside which the person may add folders of notes while the desk runs (the
    /// filesystem server is told each as a root); the notes' own folders always.
    pub trusted: Vec<std::path::PathBuf>,
}

impl Knowledge {
    /// The official `@modelcontextprotocol/server-filesystem` through `npx`, over the notes in
    /// `support-kb/` and `support-kb-archive/` under `base`.
    pub fn npx(base: &std::path::Path) -> Knowledge {
        Knowledge {
            server: ["npx", "-y", "@modelcontextprotocol/server-filesystem"]
                .map(String::from)
                .to_vec(),
            current: base.join("support-kb"),
            archive: base.join("support-kb-archive"),
            through_orders: false,
            // The folder the desk runs in: a folder of notes beside the demo's may be added.
            trusted: vec![base.to_path_buf()],
        }
    }
}

/// A server the person names: the desk's name for it and its MCP endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Its name (letters, digits, `-`, `_`; not a name the desk uses itself).
    pub name: String,
    /// Its streamable HTTP endpoint (`http://…/mcp`).
    pub url: String,
}

/// The names the desk's own connections have.
const TAKEN: [&str; 3] = ["orders", "knowledge-base", "knowledge-base-archive"];

impl std::str::FromStr for Server {
    type Err = String;

    /// `NAME=URL`, as `--server` takes it.
    fn from_str(text: &str) -> Result<Server, String> {
        let (name, url) = text.split_once('=').ok_or_else(|| {
            format!("{text:?} is not NAME=URL (movies=http://127.0.0.1:4000/mcp)")
        })?;
        let name = name.trim();
        let named = !name.is_empty()
            && name.len() <= 32
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !named {
            return Err(format!(
                "{name:?}: a server's name is 1 to 32 letters, digits, '-' or '_'"
            ));
        }
        if TAKEN.contains(&name) {
            return Err(format!(
                "{name:?} is the name of one of the desk's own connections"
            ));
        }
        let parsed = reqwest::Url::parse(url.trim())
            .map_err(|error| format!("{name}: {url:?} is not a URL ({error})"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("{name}: {url:?} is not an http or https URL"));
        }
        Ok(Server {
            name: name.to_owned(),
            url: parsed.to_string(),
        })
    }
}

impl Server {
    /// The servers of a TOML file written as the host's configuration writes its connections
    /// (`[connections.movies]`, `transport = "http"`, `url = "…"`), each checked as `--server`
    /// checks it. Only HTTP servers: the desk starts no programs on a file's word.
    pub fn from_toml(text: &str) -> Result<Vec<Server>, String> {
        let config = backchannel_host::HostConfig::from_toml(text).map_err(|e| e.to_string())?;
        config
            .connections
            .iter()
            .map(|(name, connection)| match &connection.transport {
                backchannel_host::Transport::Http { url, .. } => {
                    format!("{name}={url}").parse::<Server>()
                }
                _ => Err(format!(
                    "{name}: only HTTP servers (transport = \"http\") may be named here"
                )),
            })
            .collect()
    }

    /// What its tools are called where the model and the person see them: `movies_…`.
    pub fn prefix(&self) -> String {
        format!("{}_", self.name.replace('-', "_"))
    }

    /// Its connection: what the desk declares to the order service, but no tasks (a task is
    /// followed through the order service's connection only).
    pub(crate) fn connection(&self, config: &DeskConfig) -> backchannel_host::ConnectionConfig {
        backchannel_host::ConnectionConfig {
            tool_prefix: Some(self.prefix()),
            ..config.http_connection(&self.url, false)
        }
    }
}

impl DeskConfig {
    /// A connection of the desk to the server at `url`: forms and links (a link opened only on
    /// the person's click), sampling only with a model to sample with, tasks when `tasks`.
    pub(crate) fn http_connection(
        &self,
        url: &str,
        tasks: bool,
    ) -> backchannel_host::ConnectionConfig {
        use backchannel_host::{ConnectionConfig, Declared, Transport};
        ConnectionConfig {
            transport: Transport::Http {
                url: url.to_owned(),
                headers: Default::default(),
            },
            request_timeout_secs: self.connection_timeout.as_secs(),
            roots: Vec::new(),
            protocol: self.protocol,
            tool_prefix: None,
            tools: None,
            capabilities: Declared {
                elicitation: true,
                url_elicitation: true,
                sampling: self.model.is_some(),
                roots: false,
                tasks,
            },
            auth: None,
            log_level: backchannel_host::DEFAULT_LOG_LEVEL,
            direct_rounds: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Server;

    #[test]
    fn servers_are_read_from_the_hosts_toml_connections_http_only() {
        let servers = Server::from_toml(
            "[connections.movies]\ntransport = \"http\"\nurl = \"http://127.0.0.1:4000/mcp\"\n",
        )
        .unwrap();
        assert_eq!(
            servers,
            vec![Server {
                name: "movies".into(),
                url: "http://127.0.0.1:4000/mcp".into()
            }]
        );
        let stdio = "[connections.files]\ntransport = \"stdio\"\ncommand = \"rm\"\n";
        assert!(Server::from_toml(stdio).unwrap_err().contains("only HTTP"));
        let taken = "[connections.orders]\ntransport = \"http\"\nurl = \"http://x/mcp\"\n";
        assert!(Server::from_toml(taken).is_err());
    }

    #[test]
    fn a_server_is_named_name_equals_url() {
        let server: Server = "movies=http://127.0.0.1:4000/mcp".parse().unwrap();
        assert_eq!(server.name, "movies");
        assert_eq!(server.url, "http://127.0.0.1:4000/mcp");
        assert_eq!(server.prefix(), "movies_");
        assert_eq!(
            "my-films=https://films.example/mcp"
                .parse::<Server>()
                .unwrap()
                .prefix(),
            "my_films_"
        );
        for wrong in [
            "movies",
            "=http://x/mcp",
            "orders=http://x/mcp",
            "mo vies=http://x/mcp",
            "movies=ftp://x/",
            "movies=not a url",
        ] {
            assert!(wrong.parse::<Server>().is_err(), "{wrong}");
        }
    }
}
