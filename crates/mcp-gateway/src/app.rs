//! Entry points the binary calls: serve the upstreams over Streamable HTTP ([`serve_http`]) or
//! stdio ([`serve_stdio`]), from settings the binary read off its flags ([`ServeConfig`],
//! [`UpstreamSettings`], [`serve::SignInSettings`]). What is refused — listening beyond loopback without
//! sign-in, `--advertise` without a key ring, a flag that does not parse — is an [`AppError`]
//! that says which flag and what it expects.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use backchannel::serve::{self, HttpOptions, ResourceServer};
use backchannel::{Revision, StateKeys};
use backchannel_host::HostConfig;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::{Gateway, GatewayError, GatewayOptions, Upstream, quick_config_with_meta};

/// Why the gateway could not start or stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// The gateway could not open its upstreams.
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
    /// The sign-in could not be set up (a token file, an issuer, `--resource`).
    #[error(transparent)]
    SignIn(#[from] serve::SignInSettingsError),
    /// The key ring could not be read.
    #[error(transparent)]
    Keys(#[from] backchannel::StateKeysError),
    /// A file the flags name could not be read.
    #[error("cannot read {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The host's TOML connection settings do not parse.
    #[error("in {path}: {error}")]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong in it.
        error: backchannel_host::ConfigError,
    },
    /// A flag's value is not what the flag takes.
    #[error("{flag} {given:?}: {expected}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// Its value as given.
        given: String,
        /// What it takes.
        expected: &'static str,
    },
    /// A flag names an upstream that was not given.
    #[error("{flag} {given:?}: {name:?} is no upstream")]
    NoSuchUpstream {
        /// The flag.
        flag: &'static str,
        /// Its value as given.
        given: String,
        /// The name it gives.
        name: String,
    },
    /// `--upstream-revision` names no revision.
    #[error("--upstream-revision {given:?}: {error}")]
    Revision {
        /// The flag's value as given.
        given: String,
        /// Why.
        error: backchannel::UnknownRevision,
    },
    /// Listening beyond loopback needs sign-in.
    #[error(
        "refusing to listen on {0}: without sign-in, anything that reaches that address could \
         call every upstream's tools; listen on a loopback address such as 127.0.0.1, or require \
         sign-in with --token-file FILE or --oauth-issuer URL"
    )]
    Unauthenticated(SocketAddr),
    /// `--advertise` without the key ring the instances share.
    #[error(
        "--advertise lets other instances pass rounds to this one, sealed under the key ring \
         they share: give it with --state-keys FILE"
    )]
    AdvertiseWithoutKeys,
    /// Per-person upstreams need the sign-in pages of `serve`.
    #[error("per-person upstreams need the gateway's sign-in pages: use `mcp-gateway serve`")]
    PersonalOnStdio,
}

/// The upstreams and how the gateway reaches them.
#[derive(Debug, Clone, Default)]
pub struct UpstreamSettings {
    /// `--upstream NAME=URL`.
    pub upstreams: Vec<Upstream>,
    /// `--upstream-revision NAME=REVISION` (or `auto`).
    pub revisions: Vec<String>,
    /// `--allow-meta KEY`.
    pub allow_meta: Vec<String>,
    /// The host's TOML connection settings, instead of the three above.
    pub config: Option<PathBuf>,
    /// `--upstream-auth NAME=HOW`.
    pub auth: Vec<String>,
    /// Where each person's upstream tokens are kept.
    pub database: Option<String>,
    /// The key ring every instance shares.
    pub state_keys: Option<PathBuf>,
}

/// Settings of `mcp-gateway serve` (by default: loopback, no sign-in, plain 2026-07-28 calls
/// relayed by the pass-through).
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Host names (besides loopback) clients use to reach the gateway.
    pub allow_hosts: Vec<String>,
    /// Where the other instances reach this one (default `http://ADDRESS`).
    pub advertise: Option<String>,
    /// How clients sign in.
    pub sign_in: serve::SignInSettings,
    /// The upstreams.
    pub upstreams: UpstreamSettings,
    /// Relay a 2026-07-28 client's plain tool calls to a shared 2026-07-28 upstream before the
    /// handler (`Gateway::pass_through`, default true). Off, the handler serves every call: the
    /// switch of this wire of our own, for comparing the two and for an rmcp upgrade.
    pub pass_through: bool,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            allow_hosts: Vec::new(),
            advertise: None,
            sign_in: serve::SignInSettings::default(),
            upstreams: UpstreamSettings::default(),
            pass_through: true,
        }
    }
}

/// Serve the upstreams on `listener` (`/mcp`, the sign-in pages, the cluster's routes) until
/// `shutdown` completes; `ready` is told the MCP URL once the gateway listens.
pub async fn serve_http(
    listener: TcpListener,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ready: impl FnOnce(String),
) -> Result<(), AppError> {
    let addr = listener.local_addr().map_err(serve::ServeError::from)?;
    let sign_in = config.sign_in.resource_server(addr, "mcp-gateway").await?;
    // Without sign-in, anyone who reaches the gateway reaches its upstreams.
    if sign_in.is_none() && !addr.ip().is_loopback() {
        return Err(AppError::Unauthenticated(addr));
    }
    let (hosts, gateway_options) = config.upstreams.open_options()?;
    if config.advertise.is_some() && gateway_options.state_keys.is_none() {
        return Err(AppError::AdvertiseWithoutKeys);
    }
    let advertise = config
        .advertise
        .unwrap_or_else(|| format!("http://{addr}"))
        .trim_end_matches('/')
        .to_owned();
    if !advertise.starts_with("http://") && !advertise.starts_with("https://") {
        return Err(AppError::Flag {
            flag: "--advertise",
            given: advertise,
            expected: "expected http://HOST:PORT",
        });
    }
    let gateway = Gateway::open_with(&hosts, gateway_options).await?;
    gateway.advertise_at(&advertise);
    // The other instances reach this one by its advertised name: allowed as a Host.
    let advertised_host = advertise
        .split_once("://")
        .map(|(_, rest)| rest.split('/').next().unwrap_or_default().to_owned())
        .filter(|host| !host.is_empty());
    let options = config
        .allow_hosts
        .iter()
        .chain(advertised_host.iter())
        .fold(HttpOptions::default(), |options, host| {
            options.allow_host(host)
        });
    let stop = CancellationToken::new();
    let pass = config.pass_through.then(|| gateway.pass_through());
    let sign_in = sign_in.map(Arc::new);
    let app = router(&gateway, sign_in, addr, &options, stop.clone(), pass);
    ready(format!("http://{addr}/mcp"));
    serve::http(listener, app, &options, async move {
        shutdown.await;
        stop.cancel();
    })
    .await?;
    Ok(())
}

/// The gateway's routes: MCP behind the sign-in when there is one, the sign-in pages, and the
/// cluster's routes outside it. `stop` ends the open streams; `pass`, when given, takes plain
/// calls first.
fn router(
    gateway: &Gateway,
    sign_in: Option<Arc<ResourceServer>>,
    addr: SocketAddr,
    options: &HttpOptions,
    stop: CancellationToken,
    pass: Option<Arc<dyn serve::PassThrough>>,
) -> axum::Router {
    // Links and the upstreams' redirect go to where browsers reach the gateway: the origin of
    // its resource.
    let base = match &sign_in {
        Some(sign_in) => origin_of(sign_in.resource()),
        None => format!("http://{addr}"),
    };
    let pages = gateway.sign_in_pages(&base, sign_in.clone());
    let served = gateway.clone();
    let mut app = match pass {
        Some(pass) => serve::router_passing(move || served.clone(), options, stop, pass),
        None => serve::router(move || served.clone(), options, stop),
    };
    let mut open_pages = None;
    if let Some((pages, sign_out)) = pages {
        app = app.merge(sign_out);
        open_pages = Some(pages);
    }
    if let Some(sign_in) = sign_in {
        app = sign_in.protect(app);
    }
    if let Some(pages) = open_pages {
        app = app.merge(pages);
    }
    // Outside the sign-in: the hop's sealed envelope says who the caller is, and the
    // balancer's health checks carry no token.
    app.merge(gateway.cluster_routes())
}

/// Serve the upstreams over stdin/stdout, for desktop clients.
pub async fn serve_stdio(upstreams: UpstreamSettings) -> Result<(), AppError> {
    let (hosts, options) = upstreams.open_options()?;
    if !options.per_person.is_empty() {
        return Err(AppError::PersonalOnStdio);
    }
    let gateway = Gateway::open_with(&hosts, options).await?;
    serve::stdio(gateway).await?;
    Ok(())
}

impl UpstreamSettings {
    /// The upstreams' configuration, and the gateway's options.
    pub fn open_options(&self) -> Result<(HostConfig, GatewayOptions), AppError> {
        let mut config = self.host_config()?;
        let mut options = GatewayOptions {
            database: self.database.clone(),
            ..GatewayOptions::default()
        };
        if let Some(path) = &self.state_keys {
            options.state_keys = Some(StateKeys::from_file(path)?);
        }
        for text in &self.auth {
            let flag = |expected| AppError::Flag {
                flag: "--upstream-auth",
                given: text.clone(),
                expected,
            };
            let (name, how) = text.split_once('=').ok_or(flag("expected NAME=HOW"))?;
            let (name, how) = (name.trim(), how.trim());
            let connection =
                config
                    .connections
                    .get_mut(name)
                    .ok_or_else(|| AppError::NoSuchUpstream {
                        flag: "--upstream-auth",
                        given: text.clone(),
                        name: name.to_owned(),
                    })?;
            let auth = connection.auth.get_or_insert_with(Default::default);
            match how.split_once(':') {
                Some(("bearer-file", path)) => auth.bearer_file = Some(PathBuf::from(path)),
                Some(("client-credentials", rest)) => {
                    let (id, secret_file) = rest
                        .split_once(':')
                        .ok_or(flag("client-credentials:CLIENT_ID:SECRET_FILE"))?;
                    let secret =
                        std::fs::read_to_string(secret_file).map_err(|error| AppError::Read {
                            path: PathBuf::from(secret_file),
                            error,
                        })?;
                    auth.client_credentials = true;
                    auth.client_id = Some(id.to_owned());
                    auth.client_secret =
                        Some(secret.lines().next().unwrap_or_default().trim().to_owned());
                }
                _ if how == "per-person" => {
                    options.per_person.insert(name.to_owned());
                }
                _ if how == "none" => connection.auth = None,
                _ => {
                    return Err(flag(
                        "HOW is none, bearer-file:PATH, client-credentials:CLIENT_ID:SECRET_FILE \
                         or per-person",
                    ));
                }
            }
        }
        Ok((config, options))
    }

    fn host_config(&self) -> Result<HostConfig, AppError> {
        if let Some(path) = &self.config {
            let text = std::fs::read_to_string(path).map_err(|error| AppError::Read {
                path: path.clone(),
                error,
            })?;
            return HostConfig::from_toml(&text).map_err(|error| AppError::Config {
                path: path.clone(),
                error,
            });
        }
        let mut revisions = BTreeMap::new();
        for text in &self.revisions {
            let (name, revision) = text.split_once('=').ok_or_else(|| AppError::Flag {
                flag: "--upstream-revision",
                given: text.clone(),
                expected: "expected NAME=REVISION",
            })?;
            if revision.trim() == "auto" {
                continue;
            }
            let revision: Revision =
                revision
                    .trim()
                    .parse()
                    .map_err(|error| AppError::Revision {
                        given: text.clone(),
                        error,
                    })?;
            revisions.insert(name.trim().to_owned(), revision);
        }
        Ok(quick_config_with_meta(
            &self.upstreams,
            &revisions,
            &self.allow_meta,
        )?)
    }
}

/// The origin (`scheme://host[:port]`) of `url`.
fn origin_of(url: &str) -> String {
    match url.find("://") {
        Some(scheme_end) => {
            let rest = &url[scheme_end + 3..];
            let host_end = rest.find('/').unwrap_or(rest.len());
            url[..scheme_end + 3 + host_end].to_owned()
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_scheme_and_authority() {
        assert_eq!(origin_of("https://gw.example/mcp"), "https://gw.example");
        assert_eq!(origin_of("http://127.0.0.1:8070"), "http://127.0.0.1:8070");
        assert_eq!(origin_of("no-scheme"), "no-scheme");
    }

    #[test]
    fn a_bad_upstream_auth_says_the_flag_and_what_it_takes() {
        let settings = UpstreamSettings {
            upstreams: vec!["orders=http://127.0.0.1:1/mcp".parse().unwrap()],
            auth: vec!["orders=magic".into(), "other=none".into()],
            ..UpstreamSettings::default()
        };
        let error = settings.open_options().unwrap_err().to_string();
        assert!(
            error.starts_with("--upstream-auth \"orders=magic\": HOW is none"),
            "{error}"
        );
        let settings = UpstreamSettings {
            auth: vec!["other=none".into()],
            ..settings
        };
        let error = settings.open_options().unwrap_err().to_string();
        assert_eq!(
            error,
            "--upstream-auth \"other=none\": \"other\" is no upstream"
        );
    }
}
