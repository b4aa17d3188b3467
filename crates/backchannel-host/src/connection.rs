//! One open connection ([`Connection`]): opening it (stdio or HTTP, either revision, the
//! revision fallback), signing in again when a server asks (feature `oauth`), its stderr, its
//! tools, and closing it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ProtocolVersion, Root};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::{ClientHandler, RoleClient};

#[cfg(feature = "oauth")]
use crate::auth;
use crate::config::{ConnectionConfig, HostConfig, Transport, file_uri};
use crate::direct::Failure;
use crate::error::HostError;
use crate::handler::HostHandler;
use crate::routed::Routed;
use crate::routes::{Routes, Tagging};
use crate::streams::{http_client, listen_for_changes, wait_for_listening};
#[cfg(feature = "oauth")]
use crate::transports::SigningIn;
use crate::transports::{
    StderrTail, bearer_of, connect_failed, custom_headers, http_settings, not_started, serve_plain,
    spawn_stdio,
};

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
                    let routed = make_routed();
                    serve_plain(name, routed, transport_config, &routes, lifecycle).await?
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
