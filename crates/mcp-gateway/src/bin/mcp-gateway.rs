//! `mcp-gateway serve --upstream NAME=URL [--listen ADDR]`: the upstreams' tools on one
//! Streamable HTTP endpoint for both protocol revisions (prints `listening on http://ADDR/mcp`
//! once ready; port 0 picks a free port). `--token-file FILE` or `--oauth-issuer URL` signs
//! clients in (required beyond loopback); sessions, rounds, held calls and task ids are then
//! bound to the person a token stands for. `mcp-gateway stdio --upstream NAME=URL`: the same
//! over stdin/stdout, for desktop clients. `--config FILE` reads the upstreams from the host's
//! TOML connection settings instead (`[connections.NAME]`, HTTP or stdio, either revision,
//! OAuth sign-in, tool prefix and filter).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use backchannel::Revision;
use backchannel::serve::{self, HttpOptions, ResourceServer};
use backchannel_host::HostConfig;
use clap::{Args, Parser, Subcommand};
use mcp_gateway::{Gateway, GatewayOptions, Upstream, quick_config_with_meta};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(about = "One MCP endpoint in front of other MCP servers, on both protocol revisions")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the upstreams over Streamable HTTP (both revisions on one endpoint).
    Serve {
        /// Address to listen on (loopback by default; port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:8070")]
        listen: SocketAddr,
        /// A host name (besides loopback) clients use to reach the gateway; repeat for more.
        #[arg(long = "allow-host", value_name = "NAME")]
        allow_hosts: Vec<String>,
        /// Where the other instances of this gateway reach this one (http://HOST:PORT), so a
        /// 2026-07-28 client's round that reaches another instance is passed to the one holding
        /// its 2025-11-25 upstream call. Needs --state-keys, the ring every instance shares.
        /// Default: http://ADDRESS, ADDRESS the one it listens on.
        #[arg(long, value_name = "URL")]
        advertise: Option<String>,
        #[command(flatten)]
        sign_in: SignInArgs,
        #[command(flatten)]
        upstreams: Upstreams,
    },
    /// Serve the upstreams over stdin/stdout; logs go to stderr.
    Stdio {
        #[command(flatten)]
        upstreams: Upstreams,
    },
}

/// How clients sign in to the gateway (none by default: loopback only).
#[derive(Debug, Args)]
struct SignInArgs {
    /// Require a bearer token on every route: a file of `name=token` lines (tokens of 32+
    /// characters), the name being the person's principal.
    #[arg(long, value_name = "FILE", conflicts_with = "oauth_issuer")]
    token_file: Option<PathBuf>,
    /// Require an OAuth token from this authorization server (its issuer URL), issued for
    /// this gateway's resource; tokens are checked with its introspection endpoint. Clients
    /// find it through /.well-known/oauth-protected-resource/mcp.
    #[arg(long, value_name = "URL")]
    oauth_issuer: Option<String>,
    /// The authorization server's token introspection endpoint, when its metadata does not
    /// name one.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    oauth_introspection: Option<String>,
    /// The gateway's MCP URL as its clients reach it: the resource a token must be issued for
    /// (an OAuth token's audience; a token issued for an upstream is refused). Default:
    /// http://ADDRESS/mcp, ADDRESS the one it listens on. Never taken from a request.
    #[arg(long, value_name = "URL")]
    resource: Option<String>,
}

impl SignInArgs {
    /// The sign-in these flags ask for, for a gateway listening on `addr`; `None` without
    /// `--token-file` or `--oauth-issuer`.
    async fn resource_server(&self, addr: SocketAddr) -> anyhow::Result<Option<ResourceServer>> {
        let resource = match &self.resource {
            Some(resource) => resource.clone(),
            None => format!("http://{addr}/mcp"),
        };
        let server = if let Some(path) = &self.token_file {
            let tokens = serve::Tokens::from_file(path)?;
            ResourceServer::tokens(&resource, "mcp-gateway", tokens)?
        } else if let Some(issuer) = &self.oauth_issuer {
            anyhow::ensure!(
                self.resource.is_some() || !addr.ip().is_unspecified(),
                "listening on {addr}, the gateway cannot tell the URL its clients reach it at, \
                 which their tokens must be issued for: give it with --resource URL"
            );
            ResourceServer::oauth(
                &resource,
                "mcp-gateway",
                issuer,
                self.oauth_introspection.as_deref(),
            )
            .await?
        } else {
            anyhow::ensure!(
                self.resource.is_none(),
                "--resource names what a token must be issued for: give --token-file or \
                 --oauth-issuer with it"
            );
            return Ok(None);
        };
        tracing::info!(%resource, "clients sign in: tokens must be issued for this resource");
        Ok(Some(server))
    }
}

#[derive(Debug, Args)]
struct Upstreams {
    /// An upstream server: NAME=URL (Streamable HTTP); repeat for more.
    #[arg(
        long = "upstream",
        value_name = "NAME=URL",
        required_unless_present = "config"
    )]
    upstreams: Vec<Upstream>,
    /// The revision to speak to an upstream: NAME=2025-11-25|2026-07-28|auto (default auto:
    /// the newest it offers).
    #[arg(long = "upstream-revision", value_name = "NAME=REVISION")]
    revisions: Vec<String>,
    /// A key of a call's `_meta` to pass on to the upstream (none by default); repeat for
    /// more. With --config, the file's `meta_allow` says it.
    #[arg(long = "allow-meta", value_name = "KEY", conflicts_with = "config")]
    allow_meta: Vec<String>,
    /// The upstreams as the host's TOML connection settings, instead of --upstream.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["upstreams", "revisions"])]
    config: Option<PathBuf>,
    /// How the gateway reaches an upstream that needs credentials: NAME=bearer-file:PATH (a
    /// token of the gateway's own, from a file), NAME=client-credentials:CLIENT_ID:SECRET_FILE
    /// (the gateway's own OAuth client, by the client credentials grant) or NAME=per-person
    /// (each person signs in with their own account, asked by URL elicitation; their tokens
    /// kept sealed in --database).
    /// Without it, none. A caller's own token is never passed on. Repeat for more.
    #[arg(long = "upstream-auth", value_name = "NAME=HOW")]
    auth: Vec<String>,
    /// Where each person's upstream tokens are kept: `sqlite://PATH` or
    /// `postgres://USER@HOST:PORT/DB`. Default: data/mcp-gateway.sqlite (only with per-person
    /// upstreams).
    #[arg(long, value_name = "URL")]
    database: Option<String>,
    /// The key ring sealing round state and the people's upstream tokens (the order
    /// service's format; the same file for every instance); or $MCP_GATEWAY_STATE_KEYS.
    /// Without one, a key made at start (kept tokens then do not survive a restart).
    #[arg(long, value_name = "FILE")]
    state_keys: Option<PathBuf>,
}

impl Upstreams {
    /// The upstreams' configuration, and the gateway's options, from the flags.
    fn open_options(&self) -> anyhow::Result<(HostConfig, GatewayOptions)> {
        let mut config = self.host_config()?;
        let mut options = GatewayOptions {
            database: self.database.clone(),
            ..GatewayOptions::default()
        };
        let keys = self
            .state_keys
            .clone()
            .or_else(|| std::env::var_os("MCP_GATEWAY_STATE_KEYS").map(PathBuf::from));
        if let Some(path) = keys {
            options.state_keys = Some(backchannel::StateKeys::from_file(&path)?);
        }
        for text in &self.auth {
            let (name, how) = text
                .split_once('=')
                .with_context(|| format!("--upstream-auth {text:?}: expected NAME=HOW"))?;
            let (name, how) = (name.trim(), how.trim());
            let connection = config
                .connections
                .get_mut(name)
                .with_context(|| format!("--upstream-auth {text:?}: {name:?} is no upstream"))?;
            let auth = connection.auth.get_or_insert_with(Default::default);
            match how.split_once(':') {
                Some(("bearer-file", path)) => auth.bearer_file = Some(PathBuf::from(path)),
                Some(("client-credentials", rest)) => {
                    let (id, secret_file) = rest.split_once(':').with_context(|| {
                        format!(
                            "--upstream-auth {text:?}: client-credentials:CLIENT_ID:SECRET_FILE"
                        )
                    })?;
                    let secret = std::fs::read_to_string(secret_file)
                        .with_context(|| format!("cannot read the client secret {secret_file}"))?;
                    auth.client_credentials = true;
                    auth.client_id = Some(id.to_owned());
                    auth.client_secret =
                        Some(secret.lines().next().unwrap_or_default().trim().to_owned());
                }
                _ if how == "per-person" => {
                    options.per_person.insert(name.to_owned());
                }
                _ if how == "none" => connection.auth = None,
                _ => anyhow::bail!(
                    "--upstream-auth {text:?}: HOW is none, bearer-file:PATH, \
                     client-credentials:CLIENT_ID:SECRET_FILE or per-person"
                ),
            }
        }
        Ok((config, options))
    }

    fn host_config(&self) -> anyhow::Result<HostConfig> {
        if let Some(path) = &self.config {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            return HostConfig::from_toml(&text).with_context(|| format!("in {}", path.display()));
        }
        let mut revisions = BTreeMap::new();
        for text in &self.revisions {
            let (name, revision) = text
                .split_once('=')
                .with_context(|| format!("--upstream-revision {text:?}: expected NAME=REVISION"))?;
            if revision.trim() == "auto" {
                continue;
            }
            let revision: Revision = revision
                .trim()
                .parse()
                .with_context(|| format!("--upstream-revision {text:?}"))?;
            revisions.insert(name.trim().to_owned(), revision);
        }
        Ok(quick_config_with_meta(
            &self.upstreams,
            &revisions,
            &self.allow_meta,
        )?)
    }
}

fn main() -> anyhow::Result<()> {
    // One worker (TOKIO_WORKER_THREADS=1) runs on tokio's current-thread scheduler.
    let workers = std::env::var("TOKIO_WORKER_THREADS").ok();
    let scheduler = backchannel::serve::Scheduler::for_workers(workers.as_deref());
    scheduler.build()?.block_on(run(scheduler))
}

async fn run(scheduler: backchannel::serve::Scheduler) -> anyhow::Result<()> {
    let export =
        backchannel::telemetry::Export::from_vars(|name| std::env::var(name).ok(), "mcp-gateway");
    let _logs = backchannel::logging::init_with(&["mcp_gateway"], export.as_ref());
    scheduler.log();
    match Cli::parse().command {
        Command::Serve {
            listen,
            allow_hosts,
            advertise,
            sign_in,
            upstreams,
        } => {
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            let addr = listener.local_addr()?;
            let sign_in = sign_in.resource_server(addr).await?;
            // Without sign-in, anyone who reaches the gateway reaches its upstreams.
            anyhow::ensure!(
                sign_in.is_some() || addr.ip().is_loopback(),
                "refusing to listen on {listen}: without sign-in, anything that reaches that \
                 address could call every upstream's tools; listen on a loopback address such \
                 as 127.0.0.1, or require sign-in with --token-file FILE or --oauth-issuer URL"
            );
            let (config, gateway_options) = upstreams.open_options()?;
            anyhow::ensure!(
                advertise.is_none() || gateway_options.state_keys.is_some(),
                "--advertise lets other instances pass rounds to this one, sealed under the \
                 key ring they share: give it with --state-keys FILE"
            );
            let advertise = advertise
                .unwrap_or_else(|| format!("http://{addr}"))
                .trim_end_matches('/')
                .to_owned();
            anyhow::ensure!(
                advertise.starts_with("http://") || advertise.starts_with("https://"),
                "--advertise {advertise:?}: expected http://HOST:PORT"
            );
            let gateway = Gateway::open_with(&config, gateway_options).await?;
            gateway.advertise_at(&advertise);
            // The other instances reach this one by its advertised name: allowed as a Host.
            let advertised_host = advertise
                .split_once("://")
                .map(|(_, rest)| rest.split('/').next().unwrap_or_default().to_owned())
                .filter(|host| !host.is_empty());
            let options = allow_hosts
                .iter()
                .chain(advertised_host.iter())
                .fold(HttpOptions::default(), |options, host| {
                    options.allow_host(host)
                });
            let shutdown = CancellationToken::new();
            let sign_in = sign_in.map(Arc::new);
            // Links and the upstreams' redirect go to where browsers reach the gateway: the
            // origin of its resource.
            let base = match &sign_in {
                Some(sign_in) => origin_of(sign_in.resource()),
                None => format!("http://{addr}"),
            };
            let pages = gateway.sign_in_pages(&base, sign_in.clone());
            let served = gateway.clone();
            let pass = gateway.pass_through();
            let mut app =
                serve::router_passing(move || served.clone(), &options, shutdown.clone(), pass);
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
            app = app.merge(gateway.cluster_routes());
            eprintln!("listening on http://{addr}/mcp");
            serve::http(listener, app, &options, async move {
                serve::shutdown_signal().await;
                shutdown.cancel();
            })
            .await?;
        }
        Command::Stdio { upstreams } => {
            let (config, options) = upstreams.open_options()?;
            anyhow::ensure!(
                options.per_person.is_empty(),
                "per-person upstreams need the gateway's sign-in pages: use `mcp-gateway serve`"
            );
            let gateway = Gateway::open_with(&config, options).await?;
            serve::stdio(gateway).await?;
        }
    }
    Ok(())
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

/// jemalloc, as the order service: a forwarded call allocates and frees much (two JSON-RPC
/// messages each way), and glibc's malloc took about a sixth of the gateway's CPU under load
/// (`scripts/bench`'s gateway row).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
