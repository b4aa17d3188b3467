//! `mcp-gateway serve --upstream NAME=URL [--listen ADDR]`: the upstreams' tools on one
//! Streamable HTTP endpoint for both protocol revisions (prints `listening on http://ADDR/mcp`
//! once ready; port 0 picks a free port). `--token-file FILE` or `--oauth-issuer URL` signs
//! clients in (required beyond loopback); sessions, rounds, held calls and task ids are then
//! bound to the person a token stands for. `mcp-gateway stdio --upstream NAME=URL`: the same
//! over stdin/stdout, for desktop clients. `--config FILE` reads the upstreams from the host's
//! TOML connection settings instead (`[connections.NAME]`, HTTP or stdio, either revision,
//! OAuth sign-in, tool prefix and filter).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use backchannel::serve;
use clap::{Args, Parser, Subcommand};
use mcp_gateway::{Upstream, app};

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
        /// Serve every call through the gateway's handler, without relaying a 2026-07-28
        /// client's plain calls first (to compare the two, or after an rmcp upgrade).
        #[arg(long)]
        no_pass_through: bool,
        #[command(flatten)]
        sign_in: serve::SignInSettings,
        #[command(flatten)]
        upstreams: Upstreams,
    },
    /// Serve the upstreams over stdin/stdout; logs go to stderr.
    Stdio {
        #[command(flatten)]
        upstreams: Upstreams,
    },
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

impl From<Upstreams> for app::UpstreamSettings {
    fn from(flags: Upstreams) -> Self {
        app::UpstreamSettings {
            upstreams: flags.upstreams,
            revisions: flags.revisions,
            allow_meta: flags.allow_meta,
            config: flags.config,
            auth: flags.auth,
            database: flags.database,
            state_keys: flags
                .state_keys
                .or_else(|| std::env::var_os("MCP_GATEWAY_STATE_KEYS").map(PathBuf::from)),
        }
    }
}

fn main() -> anyhow::Result<()> {
    // One worker (TOKIO_WORKER_THREADS=1) runs on tokio's current-thread scheduler.
    backchannel::serve::Scheduler::from_vars(|name| std::env::var(name).ok()).run(run)?
}

async fn run(scheduler: backchannel::serve::Scheduler) -> anyhow::Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    let _logs = backchannel::logging::init_server("mcp-gateway", &["mcp_gateway"], env, scheduler);
    match Cli::parse().command {
        Command::Serve {
            listen,
            allow_hosts,
            advertise,
            no_pass_through,
            sign_in,
            upstreams,
        } => {
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            let config = app::ServeConfig {
                allow_hosts,
                advertise,
                sign_in,
                upstreams: upstreams.into(),
                pass_through: !no_pass_through,
            };
            let ready = |url: String| eprintln!("listening on {url}");
            app::serve_http(listener, config, serve::shutdown_signal(), ready).await?;
        }
        Command::Stdio { upstreams } => app::serve_stdio(upstreams.into()).await?,
    }
    Ok(())
}

/// jemalloc, as the order service: a forwarded call allocates and frees much (two JSON-RPC
/// messages each way), and glibc's malloc took about a sixth of the gateway's CPU under load
/// (`scripts/bench`'s gateway row).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
