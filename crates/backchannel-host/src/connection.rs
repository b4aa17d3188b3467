//! One open connection ([`Connection`]): opening it (stdio or HTTP, either revision, the
//! revision fallback), signing in again when a server asks (feature `oauth`), its stderr, its
//! tools, and closing it.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ProtocolVersion, Root};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient};

#[cfg(feature = "oauth")]
use crate::auth;
#[cfg(feature = "oauth")]
use crate::config::AuthConfig;
use crate::config::{ConnectionConfig, HostConfig, Transport, file_uri};
use crate::direct::{Cause, Failure};
use crate::error::HostError;
use crate::handler::HostHandler;
use crate::listening::Listening;
#[cfg(feature = "oauth")]
use crate::listening::ListeningOpened;
use crate::routed::Routed;
use crate::routes::{Routes, Tagging};
use crate::streams::{http_client, listen_for_changes, wait_for_listening};

/// One open connection.
pub struct Connection<H: HostHandler> {
    pub(crate) name: String,
    pub(crate) config: ConnectionConfig,
    pub(crate) meta_allow: Arc<Vec<String>>,
    pub(crate) service: RunningService<RoleClient, Routed<H>>,
    pub(crate) stderr_tail: Arc<StderrTail>,
    /// Times the session for `mcp.client.session.duration`.
    pub(crate) _session: backchannel::metrics::ClientSession,
    /// Stops the 2026-07-28 listen stream's watcher with the connection.
    pub(crate) _listening: Option<tokio_util::sync::DropGuard>,
    /// The HTTP connection's session, and a way to end one at its server (`None` for stdio).
    pub(crate) sessions: Option<crate::listening::Sessions>,
    /// The direct path of a 2026-07-28 HTTP connection (`None` otherwise).
    pub(crate) direct: Option<crate::direct::Direct>,
    /// The roots declared now, shared with the client handler that lists them.
    pub(crate) roots: Arc<std::sync::RwLock<Vec<Root>>>,
    /// The folders a root may lie in (the host's configuration).
    pub(crate) trusted_folders: Arc<Vec<std::path::PathBuf>>,
    #[cfg(feature = "oauth")]
    pub(crate) handler: Arc<H>,
    /// How to sign in again when the server refuses the credentials (HTTP connections).
    #[cfg(feature = "oauth")]
    pub(crate) reauth: Option<auth::Reauth>,
}

/// How many times one request may sign in again before its error stands.
pub const MAX_SIGN_INS_PER_REQUEST: usize = 3;

/// The last lines a child wrote to stderr, and a signal for each new one.
#[derive(Default)]
pub(crate) struct StderrTail {
    pub(crate) lines: Mutex<std::collections::VecDeque<String>>,
    pub(crate) written: tokio::sync::Notify,
}

impl StderrTail {
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

/// The log target of the lines stdio servers write to their stderr: INFO wherever
/// `backchannel_host` is at INFO, and quieted on its own with `backchannel_host::stderr=warn`.
pub const STDERR_TARGET: &str = "backchannel_host::stderr";

/// Log each line a child writes to its stderr (at INFO, under [`STDERR_TARGET`], with the
/// connection's name) and keep its last lines.
pub(crate) fn keep_stderr(
    connection: &str,
    stderr: tokio::process::ChildStderr,
    tail: Arc<StderrTail>,
) {
    use tokio::io::AsyncBufReadExt;
    let connection = connection.to_owned();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(target: STDERR_TARGET, connection, "{line}");
            {
                let mut lines = tail.lines.lock().unwrap_or_else(|e| e.into_inner());
                lines.push_back(line);
                if lines.len() > 200 {
                    lines.pop_front();
                }
            }
            tail.written.notify_waiters();
        }
    });
}

impl<H: HostHandler> std::fmt::Debug for Connection<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The lifecycle rmcp runs for a connection: `initialize` for a session revision, discovery for
/// a stateless one, and with no preference the newest first, falling back to 2025-11-25.
pub(crate) fn lifecycle_for(protocol: Option<backchannel::Revision>) -> ClientLifecycleMode {
    match protocol {
        Some(revision) if revision.has_sessions() => ClientLifecycleMode::Initialize,
        Some(revision) => ClientLifecycleMode::Discover {
            preferred_versions: vec![revision.protocol_version()],
        },
        None => ClientLifecycleMode::Auto {
            preferred_versions: vec![backchannel::Revision::LATEST.protocol_version()],
            legacy_version: Some(backchannel::Revision::V2025_11_25.protocol_version()),
        },
    }
}

/// A connection's start failed with `error`, as the host reports it: rmcp's "no compatible
/// protocol version" from a server whose list names a revision with sessions apart (it speaks
/// 2025-11-25, not the stateless revision), read from rmcp's type, not its text.
pub(crate) fn connect_failed(
    connection: &str,
    error: rmcp::service::ClientInitializeError,
) -> HostError {
    let sessions_only = matches!(
        &error,
        rmcp::service::ClientInitializeError::NoCompatibleProtocolVersion { server_supported, .. }
            if server_supported
                .iter()
                .any(|version| backchannel::Revision::of(version).has_sessions())
    );
    let (connection, message) = (connection.to_owned(), readable(&error));
    if sessions_only {
        HostError::SessionsOnly {
            connection,
            message,
        }
    } else {
        HostError::Connect {
            connection,
            message,
        }
    }
}

/// What went wrong connecting, for a person: the transport's innermost cause (for HTTP, the
/// request that failed and its URL), not the chain of wrappers, whose texts carry Rust type
/// names. Errors without a transport cause read as they are.
fn readable(error: &rmcp::service::ClientInitializeError) -> String {
    let rmcp::service::ClientInitializeError::TransportError { error, .. } = error else {
        return error.to_string();
    };
    let mut cause: &(dyn std::error::Error + 'static) = &*error.error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    let text = cause.to_string();
    if text.contains("::") {
        "the server could not be reached".into()
    } else {
        text
    }
}

/// A connection's folders as the `file://` roots it declares, each named as configured or
/// after its folder.
pub(crate) fn declared_roots(roots: &[crate::RootConfig]) -> Vec<Root> {
    roots
        .iter()
        .map(|configured| {
            let mut root = Root::new(file_uri(&configured.path));
            root.name = configured.name.clone().or_else(|| {
                configured
                    .path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            });
            root
        })
        .collect()
}

/// The configured extra request headers, each checked as an HTTP header name and value.
pub(crate) fn custom_headers(
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, Failure> {
    headers
        .iter()
        .map(|(key, value)| {
            let unusable = |cause: Cause| Failure::Header {
                name: key.clone(),
                cause,
            };
            let key = http::HeaderName::try_from(key.as_str()).map_err(|e| unusable(e.into()))?;
            let value =
                http::HeaderValue::try_from(value.as_str()).map_err(|e| unusable(e.into()))?;
            Ok((key, value))
        })
        .collect()
}

/// The bearer token of `config`'s bearer file, if it names one.
fn bearer_of(config: &ConnectionConfig) -> Result<Option<String>, Failure> {
    match config
        .auth
        .as_ref()
        .and_then(|auth| auth.bearer_file.as_deref())
    {
        Some(path) => read_bearer(path).map(Some),
        None => Ok(None),
    }
}

/// The bearer token in the first line of the file at `path`.
fn read_bearer(path: &std::path::Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path).map_err(|cause| Failure::BearerFile {
        path: path.to_owned(),
        cause,
    })?;
    let token = text.lines().next().unwrap_or_default().trim();
    if token.is_empty() || !token.chars().all(|c| c.is_ascii_graphic()) {
        return Err(Failure::NoBearer(path.to_owned()));
    }
    Ok(token.to_owned())
}

/// Start a stdio server's process, its stderr kept (the last lines) in `tail`.
pub(crate) fn spawn_stdio(
    name: &str,
    command: &str,
    args: &[String],
    cwd: Option<&std::path::Path>,
    env: &BTreeMap<String, String>,
    tail: &Arc<StderrTail>,
) -> std::io::Result<TokioChildProcess> {
    let mut process = tokio::process::Command::new(command);
    process.args(args).envs(env);
    if let Some(cwd) = cwd {
        process.current_dir(cwd);
    }
    let (transport, stderr) = TokioChildProcess::builder(process)
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    if let Some(stderr) = stderr {
        keep_stderr(name, stderr, tail.clone());
    }
    Ok(transport)
}

/// Why a stdio server's command did not start, naming the command: a missing program says so
/// (the system's "No such file or directory" leaves the person guessing which file).
fn not_started(command: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => {
            format!("the command `{command}` was not found (is it installed and on PATH?)")
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("the command `{command}` may not be run (permission denied)")
        }
        _ => format!("the command `{command}` could not be started: {error}"),
    }
}

/// What signing in to one HTTP connection needs (feature `oauth`).
#[cfg(feature = "oauth")]
pub(crate) struct SigningIn<'a, H> {
    name: &'a str,
    url: &'a str,
    settings: AuthConfig,
    client_name: &'a str,
    handler: &'a Arc<H>,
}

#[cfg(feature = "oauth")]
impl<H: HostHandler> SigningIn<'_, H> {
    /// Connect with the tokens the store has (or none); when the server answers 401 or 403
    /// with a challenge, sign in through the handler and connect again (at most
    /// [`auth::MAX_SIGN_INS`] times).
    pub(crate) async fn serve(
        &self,
        transport_config: rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig,
        make_routed: impl Fn() -> Routed<H>,
        routes: &Arc<Routes>,
        lifecycle: ClientLifecycleMode,
    ) -> Result<
        (
            RunningService<RoleClient, Routed<H>>,
            auth::Reauth,
            ListeningOpened,
        ),
        HostError,
    > {
        let failed = |message: String| HostError::Connect {
            connection: self.name.to_owned(),
            message,
        };
        let store = auth::TokenStore::for_config(&self.settings);
        let mut manager = auth::manager(self.url, &store)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let http = http_client().map_err(|e| failed(e.to_string()))?;
        for attempt in 0..=auth::MAX_SIGN_INS {
            let client = rmcp::transport::auth::AuthClient::new(http.clone(), manager);
            let held = client.auth_manager.clone();
            let (client, opened) = Listening::new(client, &transport_config);
            let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                client,
                transport_config.clone(),
            );
            let error = match make_routed()
                .serve_with_lifecycle(Tagging::new(transport, routes.clone()), lifecycle.clone())
                .await
            {
                Ok(service) => {
                    let reauth = auth::Reauth {
                        url: self.url.to_owned(),
                        settings: self.settings.clone(),
                        client_name: self.client_name.to_owned(),
                        store,
                        manager: held,
                    };
                    return Ok((service, reauth, opened));
                }
                Err(error) => error,
            };
            let Some(challenge) = error.auth_challenge().map(str::to_owned) else {
                return Err(connect_failed(self.name, error));
            };
            if attempt == auth::MAX_SIGN_INS {
                return Err(failed(format!(
                    "the server still refuses after {} sign-ins: {error}",
                    auth::MAX_SIGN_INS
                )));
            }
            tracing::info!(connection = self.name, "the server asks to sign in");
            if self.settings.client_credentials {
                manager = auth::client_credentials(self.url, &self.settings, &store)
                    .await
                    .map_err(|e| failed(format!("the client credentials grant failed: {e}")))?;
                continue;
            }
            manager = auth::sign_in(
                self.url,
                &self.settings,
                self.client_name,
                Some(&challenge),
                &store,
                |url| self.handler.authorize(self.name, url),
            )
            .await
            .map_err(|e| failed(format!("signing in failed: {e}")))?;
        }
        Err(failed("signing in failed".to_owned()))
    }
}

/// The transport settings of an HTTP connection to `url`, and whether it is plain (a bearer
/// of its own, or no OAuth built in) rather than signed in by OAuth.
fn http_settings(
    config: &ConnectionConfig,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<
    (
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig,
        bool,
    ),
    Failure,
> {
    let mut transport_config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .custom_headers(custom_headers(headers)?);
    let bearer = bearer_of(config)?;
    let plain = bearer.is_some() || cfg!(not(feature = "oauth"));
    if let Some(token) = bearer {
        transport_config = transport_config.auth_header(token);
    }
    Ok((transport_config, plain))
}

impl<H: HostHandler> Connection<H> {
    /// Open one connection. With no revision asked for ("auto"), a server that refuses
    /// 2026-07-28 as an unsupported version while listing 2025-11-25 is opened again on
    /// 2025-11-25 (rmcp falls back only for a server that does not know `server/discover`).
    pub async fn open(
        name: &str,
        config: &ConnectionConfig,
        host: &HostConfig,
        handler: Arc<H>,
    ) -> Result<Connection<H>, HostError> {
        match Self::open_as(name, config, host, handler.clone()).await {
            Err(HostError::SessionsOnly { .. }) if config.protocol.is_none() => {
                tracing::debug!(connection = %name, "the server refused 2026-07-28; opening on 2025-11-25");
                let legacy = ConnectionConfig {
                    protocol: Some(backchannel::Revision::V2025_11_25),
                    ..config.clone()
                };
                Self::open_as(name, &legacy, host, handler).await
            }
            opened => opened,
        }
    }

    pub(crate) async fn open_as(
        name: &str,
        config: &ConnectionConfig,
        host: &HostConfig,
        handler: Arc<H>,
    ) -> Result<Connection<H>, HostError> {
        let routes = Arc::new(Routes::default());
        let roots = Arc::new(std::sync::RwLock::new(declared_roots(&config.roots)));
        let make_routed = || Routed {
            connection: name.to_owned(),
            client_name: host.client_name.clone(),
            declared: config.capabilities,
            roots: roots.clone(),
            handler: handler.clone(),
            routes: routes.clone(),
        };
        let lifecycle = lifecycle_for(config.protocol);
        let connect_error = |message: &dyn std::fmt::Display| HostError::Connect {
            connection: name.to_owned(),
            message: message.to_string(),
        };
        let stderr_tail = Arc::new(StderrTail::default());
        #[cfg(feature = "oauth")]
        let mut reauth = None;
        let mut sessions = None;
        let service = match &config.transport {
            Transport::Http { url, headers } => {
                let (transport_config, plain) =
                    http_settings(config, url, headers).map_err(|e| connect_error(&e))?;
                let (service, opened) = if plain {
                    let client = http_client().map_err(|e| connect_error(&e))?;
                    let (client, opened) = Listening::new(client, &transport_config);
                    let transport =
                        StreamableHttpClientTransport::with_client(client, transport_config);
                    let service = make_routed()
                        .serve_with_lifecycle(Tagging::new(transport, routes.clone()), lifecycle)
                        .await
                        .map_err(|error| connect_failed(name, error))?;
                    (service, opened)
                } else {
                    #[cfg(feature = "oauth")]
                    {
                        let signing_in = SigningIn {
                            name,
                            url,
                            settings: config.auth.clone().unwrap_or_default(),
                            client_name: &host.client_name,
                            handler: &handler,
                        };
                        let (service, signed_in, opened) = signing_in
                            .serve(transport_config, make_routed, &routes, lifecycle)
                            .await?;
                        reauth = Some(signed_in);
                        (service, opened)
                    }
                    #[cfg(not(feature = "oauth"))]
                    unreachable!("without feature `oauth` every HTTP connection is plain")
                };
                sessions = Some(opened.sessions());
                wait_for_listening(name, &service, opened, config.request_timeout()).await;
                service
            }
            Transport::Stdio {
                command,
                args,
                cwd,
                env,
            } => {
                let transport = spawn_stdio(name, command, args, cwd.as_deref(), env, &stderr_tail)
                    .map_err(|e| connect_error(&not_started(command, &e)))?;
                make_routed()
                    .serve_with_lifecycle(Tagging::new(transport, routes.clone()), lifecycle)
                    .await
                    .map_err(|error| connect_failed(name, error))?
            }
        };
        let mut connection = Connection {
            name: name.to_owned(),
            config: config.clone(),
            meta_allow: Arc::new(host.meta_allow.clone()),
            _listening: listen_for_changes(name, &service, handler.clone()),
            service,
            stderr_tail,
            _session: backchannel::metrics::ClientSession::start(),
            sessions,
            direct: None,
            roots,
            trusted_folders: Arc::new(host.trusted_folders.clone()),
            #[cfg(feature = "oauth")]
            handler,
            #[cfg(feature = "oauth")]
            reauth,
        };
        connection.direct = connection.direct_path().map_err(|e| connect_error(&e))?;
        connection.ask_for_logs().await;
        Ok(connection)
    }

    /// On a session (2025-11-25) whose server declares logging, ask for the configured level of
    /// log messages (`logging/setLevel`); without it the server sends none. A refusal is the
    /// server's to make, and costs the connection nothing.
    async fn ask_for_logs(&self) {
        let Some(level) = self.config.log_level else {
            return;
        };
        let declares_logging = self
            .service
            .peer()
            .peer_info()
            .is_some_and(|info| info.capabilities.logging.is_some());
        if !self.has_sessions() || !declares_logging {
            return;
        }
        let params = rmcp::model::SetLevelRequestParams::new(level.into());
        if let Err(error) = self.service.peer().set_level(params).await {
            tracing::debug!(connection = %self.name, %error, "the server refused a log level");
        }
    }

    /// `meta` with the configured log level, for a request on a revision without sessions
    /// (2026-07-28), unless it names one already.
    pub(crate) fn with_log_level(&self, meta: &mut rmcp::model::RequestMetaObject) {
        if let Some(level) = self.config.log_level
            && meta.log_level().is_none()
            && !self.has_sessions()
        {
            meta.set_log_level(level.into());
        }
    }

    /// The direct path of an HTTP connection that negotiated a stateless revision, authenticated
    /// by the tokens of its sign-in or its bearer file; `None` for any other
    /// connection.
    fn direct_path(&self) -> Result<Option<crate::direct::Direct>, Failure> {
        let (config, service) = (&self.config, &self.service);
        #[cfg(feature = "oauth")]
        let managed = self.reauth.as_ref().map(|reauth| reauth.manager.clone());
        #[cfg(not(feature = "oauth"))]
        let managed: Option<crate::direct::Managed> = None;
        let Transport::Http { url, headers } = &config.transport else {
            return Ok(None);
        };
        if !config.direct_rounds {
            return Ok(None);
        }
        let auth = match managed {
            #[cfg(feature = "oauth")]
            Some(manager) => crate::direct::DirectAuth::Managed(manager),
            #[cfg(not(feature = "oauth"))]
            Some(never) => match never {},
            None => crate::direct::DirectAuth::plain(bearer_of(config)?.as_deref()),
        };
        let Some(info) = service.peer().peer_info() else {
            return Ok(None);
        };
        let version = &info.protocol_version;
        if backchannel::Revision::of(version).has_sessions() {
            return Ok(None);
        }
        let client = service.service().get_info();
        let context = rmcp::model::RequestMetaObject::with_client_context(
            version.clone(),
            client.client_info,
            client.capabilities,
        );
        let context = match serde_json::to_value(context) {
            Ok(serde_json::Value::Object(context)) => context,
            _ => return Err(Failure::Context),
        };
        let direct = crate::direct::Direct::new(
            http_client()?,
            url.as_str(),
            &custom_headers(headers)?,
            version.as_str(),
            context,
            auth,
        )?;
        Ok(Some(direct))
    }

    /// Whether this connection's tool calls and prompt requests go on the host's own HTTP/1.1
    /// rounds ([`crate::ConnectionConfig::direct_rounds`], on a stateless HTTP connection)
    /// rather than through rmcp's client.
    pub fn uses_direct_rounds(&self) -> bool {
        self.direct.is_some()
    }

    /// The session this connection's server gave it (2025-11-25 over HTTP), as its requests
    /// carry it; `None` before it has one, on 2026-07-28 (which has none), and over stdio.
    pub fn session_id(&self) -> Option<String> {
        self.sessions
            .as_ref()
            .and_then(|sessions| sessions.current())
    }

    /// End `session` at this connection's server: an HTTP `DELETE` with it as the
    /// `Mcp-Session-Id`, authenticated as this connection is. For a session of the same server
    /// that another process opened and can no longer end (it was killed): the server then stops
    /// what that session's calls were waiting for. Never this connection's own session.
    pub async fn end_session(&self, session: &str) -> Result<(), HostError> {
        let refused = |message: String| HostError::Call {
            connection: self.name.clone(),
            message,
        };
        let Some(sessions) = &self.sessions else {
            return Err(refused("a stdio connection has no sessions to end".into()));
        };
        if sessions.current().as_deref() == Some(session) {
            return Err(refused("that is this connection's own session".into()));
        }
        sessions
            .end(session)
            .await
            .map_err(|why| refused(format!("the session could not be ended: {why}")))
    }

    /// The last lines a stdio server wrote to its stderr (empty for HTTP).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail.lines()
    }

    /// Wait at most `timeout` for a stdio server to write a stderr line matching `wanted`
    /// (servers report some things, such as the roots they took, only there). Returns whether
    /// one came.
    pub async fn wait_for_stderr(&self, wanted: impl Fn(&str) -> bool, timeout: Duration) -> bool {
        let tail = &self.stderr_tail;
        let wait = async {
            loop {
                let written = tail.written.notified();
                if tail.lines().iter().any(|line| wanted(line)) {
                    return;
                }
                written.await;
            }
        };
        tokio::time::timeout(timeout, wait).await.is_ok()
    }

    /// The connection's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The protocol revision the connection negotiated.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.service
            .peer()
            .peer_info()
            .map(|info| info.protocol_version.clone())
    }

    /// Whether this connection speaks a revision with sessions (2025-11-25, or a server that
    /// has not said): the server sends its questions as requests while a call runs.
    pub fn has_sessions(&self) -> bool {
        self.protocol_version()
            .is_none_or(|version| backchannel::Revision::of(&version).has_sessions())
    }

    /// The rmcp client, for everything else (resources, prompts, completion).
    pub fn client(&self) -> &RunningService<RoleClient, impl ClientHandler> {
        &self.service
    }

    /// The tools this connection offers the model: filtered by the configuration, named with
    /// its prefix.
    pub async fn tools(&self) -> Result<Vec<rmcp::model::Tool>, HostError> {
        let mut sign_ins = 0;
        let tools = loop {
            // Every page of the list is one operation, as the model sees one list.
            let span = backchannel::telemetry::client_span("tools/list", None, &self.name);
            let started = std::time::Instant::now();
            let listed =
                tracing::Instrument::instrument(self.service.list_all_tools(), span.clone()).await;
            let error = listed.as_ref().err().map(|_| "_OTHER");
            if let Some(error) = error {
                backchannel::telemetry::record_failure(&span, error);
            }
            backchannel::metrics::client_operation("tools/list", error, started.elapsed());
            match listed {
                Ok(tools) => {
                    if let Some(direct) = &self.direct {
                        direct.learn(&tools);
                    }
                    break tools;
                }
                Err(error) => {
                    let error = self.service_error(error);
                    self.sign_in_again_after(error, &mut sign_ins).await?;
                }
            }
        };
        Ok(tools
            .into_iter()
            .filter(|tool| {
                self.config
                    .tools
                    .as_ref()
                    .is_none_or(|keep| keep.iter().any(|k| *k == tool.name))
            })
            .map(|mut tool| {
                if let Some(prefix) = &self.config.tool_prefix {
                    tool.name = format!("{prefix}{}", tool.name).into();
                }
                tool
            })
            .collect())
    }

    /// A request failed: a sign-in question when the server refused the credentials, else the
    /// error as text.
    pub(crate) fn service_error(&self, error: rmcp::service::ServiceError) -> HostError {
        match error.auth_challenge() {
            Some(challenge) => HostError::Unauthorized {
                connection: self.name.clone(),
                challenge: challenge.to_owned(),
            },
            None => match error {
                rmcp::service::ServiceError::McpError(error) => HostError::Refused {
                    connection: self.name.clone(),
                    error,
                },
                other => self.call_error(other.to_string()),
            },
        }
    }

    /// After `error`: when it asks to sign in and this connection can (feature `oauth`, at
    /// most [`MAX_SIGN_INS_PER_REQUEST`] times per request), sign in again and return `Ok`
    /// (the caller retries); otherwise return the error.
    pub(crate) async fn sign_in_again_after(
        &self,
        error: HostError,
        sign_ins: &mut usize,
    ) -> Result<(), HostError> {
        let HostError::Unauthorized { challenge, .. } = &error else {
            return Err(error);
        };
        if *sign_ins >= MAX_SIGN_INS_PER_REQUEST {
            return Err(self.call_error(format!(
                "the server still refuses after {MAX_SIGN_INS_PER_REQUEST} sign-ins"
            )));
        }
        *sign_ins += 1;
        #[cfg(feature = "oauth")]
        if let Some(reauth) = &self.reauth {
            return reauth
                .sign_in_again(self.name.as_str(), challenge, &*self.handler)
                .await
                .map_err(|error| HostError::SignInFailed {
                    connection: self.name.clone(),
                    error: Box::new(error),
                });
        }
        let _ = challenge;
        Err(error)
    }

    pub(crate) fn call_error(&self, message: String) -> HostError {
        HostError::Call {
            connection: self.name.clone(),
            message,
        }
    }

    /// Run `attempt` bounded by the connection's request timeout; when the server asks to sign
    /// in, sign in again (where this connection can) and run it once more.
    pub(crate) async fn signed_in<T, F, Fut>(&self, mut attempt: F) -> Result<T, HostError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, HostError>>,
    {
        let timeout = self.config.request_timeout();
        let mut sign_ins = 0;
        loop {
            // The server's time only: a question of its being answered stops the clock.
            let result = crate::patience::Patience::bound(timeout, attempt())
                .await
                .map_err(|_| HostError::Timeout {
                    connection: self.name.clone(),
                    timeout,
                })?;
            match result {
                Err(error @ HostError::Unauthorized { .. }) => {
                    // Boxed: signing in is rare and its future large, and every round's future
                    // holds this one's.
                    Box::pin(self.sign_in_again_after(error, &mut sign_ins)).await?;
                }
                other => return other,
            }
        }
    }

    /// Close the connection.
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_command_that_does_not_start_is_named_with_why() {
        let tail = Arc::new(StderrTail::default());
        let missing = "/nonexistent/backchannel-no-such-command";
        let Err(error) = spawn_stdio("notes", missing, &[], None, &BTreeMap::new(), &tail) else {
            panic!("a missing command started");
        };
        assert_eq!(
            not_started(missing, &error),
            format!("the command `{missing}` was not found (is it installed and on PATH?)")
        );
    }

    #[tokio::test]
    async fn a_stdio_servers_stderr_shows_at_info_under_its_connections_name() {
        let written = backchannel::testing::CapturedLogs::default();
        let writer = written.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "warn,backchannel_host=info",
            ))
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _default = tracing::subscriber::set_default(subscriber);
        let mut child = tokio::process::Command::new("sh")
            .args([
                "-c",
                "echo 'Updated allowed directories from MCP roots: 1 valid directories' >&2",
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sh starts");
        let tail = Arc::new(StderrTail::default());
        let wrote = tail.written.notified();
        keep_stderr("notes", child.stderr.take().expect("piped"), tail.clone());
        wrote.await;
        child.wait().await.expect("sh ends");
        let log = written.text();
        assert!(
            log.contains(" INFO backchannel_host::stderr: Updated allowed directories from MCP roots: 1 valid directories connection=\"notes\""),
            "{log}"
        );
        assert_eq!(
            tail.lines(),
            ["Updated allowed directories from MCP roots: 1 valid directories"]
        );

        let quiet = backchannel::testing::CapturedLogs::default();
        let writer = quiet.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "warn,backchannel_host=info,backchannel_host::stderr=warn",
            ))
            .with_writer(move || writer.clone())
            .finish();
        let _quiet = tracing::subscriber::set_default(subscriber);
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", "echo noisy >&2"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sh starts");
        let wrote = tail.written.notified();
        keep_stderr("notes", child.stderr.take().expect("piped"), tail.clone());
        wrote.await;
        child.wait().await.expect("sh ends");
        assert!(quiet.text().is_empty());
        assert_eq!(tail.lines().last().map(String::as_str), Some("noisy"));
    }
}
