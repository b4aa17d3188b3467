//! `moviedb serve|stdio`: the Movie Database over HTTP (GraphQL + MCP on one port) or MCP over
//! stdio for desktop clients. Builds the configuration, then calls `moviedb::app`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use moviedb::app::{self, Config};

#[derive(Debug, Parser)]
#[command(name = "moviedb", about = "The Movie Database: GraphQL and MCP")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve GraphQL at /graphql (GraphiQL on GET) and MCP at /mcp on one port.
    Serve {
        /// Address to listen on (loopback by default).
        #[arg(long, default_value = "127.0.0.1:8090")]
        listen: SocketAddr,
        #[command(flatten)]
        common: Common,
        /// MCP calls allowed per minute per user (or address).
        #[arg(long, default_value_t = 60)]
        mcp_calls_per_minute: u32,
        /// Serve Prometheus metrics at /metrics (no sign-in, like /healthz; the same Host
        /// checks as every route).
        #[arg(long)]
        metrics: bool,
    },
    /// Serve MCP over stdin/stdout as one local user (for Claude Desktop). Logs go to stderr.
    Stdio {
        #[command(flatten)]
        common: Common,
        /// The account every call acts as.
        #[arg(long, default_value = "user")]
        user: String,
    },
}

#[derive(Debug, clap::Args)]
struct Common {
    /// SQLite URL, e.g. sqlite://data/moviedb.sqlite or sqlite::memory: (default: a file in
    /// $MOVIEDB_DATA or ./data).
    #[arg(long)]
    database: Option<String>,
    /// Seconds a review summary is reused: the model's, or the server's after a refusal, a
    /// timeout or an answer that ignored the format.
    #[arg(long, default_value_t = 60)]
    summary_cache_seconds: u64,
    /// Seconds to wait for the client's model before the server summarises itself.
    #[arg(long, default_value_t = 20)]
    sampling_timeout_seconds: u64,
    /// Seconds the watch-status question waits for the person; past it the add is a tool
    /// error and nothing is added.
    #[arg(long, default_value_t = 20)]
    watch_status_seconds: u64,
    /// The key ring sealing `requestState` (lines `current ID HEX`, `previous ID HEX`), the
    /// same file for every instance; or the file named by $MOVIEDB_STATE_KEYS. Without one, a
    /// key made at start.
    #[arg(long, value_name = "FILE")]
    state_keys: Option<PathBuf>,
}

fn config(common: &Common) -> anyhow::Result<Config> {
    let keys_file = common
        .state_keys
        .clone()
        .or_else(|| std::env::var_os("MOVIEDB_STATE_KEYS").map(PathBuf::from));
    let state_keys = match keys_file {
        Some(path) => Some(backchannel::StateKeys::from_file(&path)?),
        None => None,
    };
    let mut config = Config {
        database: common.database.clone(),
        data_dir: std::env::var_os("MOVIEDB_DATA")
            .map(PathBuf::from)
            .unwrap_or_default(),
        // The secret comes from the environment and is never printed.
        jwt_secret: std::env::var("MOVIEDB_JWT_SECRET")
            .ok()
            .filter(|s| !s.is_empty()),
        ..Config::default()
    };
    config.mcp.summary_cache_ttl = Duration::from_secs(common.summary_cache_seconds);
    config.mcp.sampling_timeout = Duration::from_secs(common.sampling_timeout_seconds);
    config.mcp.watch_status_timeout = Duration::from_secs(common.watch_status_seconds);
    config.mcp.state_keys = state_keys;
    Ok(config)
}

fn main() -> anyhow::Result<()> {
    // One worker (TOKIO_WORKER_THREADS=1) runs on tokio's current-thread scheduler.
    backchannel::serve::Scheduler::from_vars(|name| std::env::var(name).ok()).run(run)?
}

async fn run(scheduler: backchannel::serve::Scheduler) -> anyhow::Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    let _logs = backchannel::logging::init_server("moviedb", &["moviedb", "audit"], env, scheduler);
    let args = Args::parse();
    match args.command {
        Command::Serve {
            listen,
            common,
            mcp_calls_per_minute,
            metrics,
        } => {
            let config = Config {
                mcp_calls_per_minute,
                metrics,
                ..config(&common)?
            };
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            let shutdown = backchannel::serve::shutdown_on_signal();
            app::serve_http(listener, &config, shutdown).await?;
        }
        Command::Stdio { common, user } => {
            app::serve_stdio(&config(&common)?, &user).await?;
        }
    }
    Ok(())
}
