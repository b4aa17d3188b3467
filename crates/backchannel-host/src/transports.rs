//! The transports a connection opens ([`crate::Connection`]): a stdio server's process and
//! the last lines of its stderr; an HTTP connection's settings (its extra headers, a bearer of
//! its own); its service served plainly or after a sign-in (feature `oauth`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rmcp::RoleClient;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::TokioChildProcess;

#[cfg(feature = "oauth")]
use crate::auth;
#[cfg(feature = "oauth")]
use crate::config::AuthConfig;
use crate::config::ConnectionConfig;
use crate::direct::{Cause, Failure};
use crate::error::HostError;
use crate::handler::HostHandler;
use crate::listening::{Listening, ListeningOpened};
use crate::routed::Routed;
use crate::routes::{Routes, Tagging};
use crate::streams::http_client;

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
pub(crate) fn bearer_of(config: &ConnectionConfig) -> Result<Option<String>, Failure> {
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
pub(crate) fn not_started(command: &str, error: &std::io::Error) -> String {
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
    pub(crate) name: &'a str,
    pub(crate) url: &'a str,
    pub(crate) settings: AuthConfig,
    pub(crate) client_name: &'a str,
    pub(crate) handler: &'a Arc<H>,
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

/// Serve `routed` over a plain HTTP connection (a bearer of its own, or none): its listen
/// stream's opening is watched (see [`Listening`]).
pub(crate) async fn serve_plain<H: HostHandler>(
    name: &str,
    routed: Routed<H>,
    transport_config: rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig,
    routes: &Arc<Routes>,
    lifecycle: ClientLifecycleMode,
) -> Result<(RunningService<RoleClient, Routed<H>>, ListeningOpened), HostError> {
    let client = http_client().map_err(|e| HostError::Connect {
        connection: name.to_owned(),
        message: e.to_string(),
    })?;
    let (client, opened) = Listening::new(client, &transport_config);
    let transport = StreamableHttpClientTransport::with_client(client, transport_config);
    let service = routed
        .serve_with_lifecycle(Tagging::new(transport, routes.clone()), lifecycle)
        .await
        .map_err(|error| connect_failed(name, error))?;
    Ok((service, opened))
}

/// The transport settings of an HTTP connection to `url`, and whether it is plain (a bearer
/// of its own, or no OAuth built in) rather than signed in by OAuth.
pub(crate) fn http_settings(
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
