//! `order-service`: the Support Desk order service.
//!
//! - `order-service serve [--listen ADDR] [--token-file FILE] [--database URL]`: REST + MCP on
//!   one port; beyond loopback only with sign-in (`--token-file` or `--oauth-issuer`).
//! - `order-service stdio [--database URL]`: MCP over stdio (for Claude Desktop).
//! - `order-service reset [--database URL]`: write the seed again.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use backchannel::serve;
use clap::{Parser, Subcommand};
use orders::app::{self, Config};

#[derive(Debug, Parser)]
#[command(
    name = "order-service",
    about = "The Support Desk order service (REST + MCP)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Args)]
struct Database {
    /// `sqlite://PATH`, `sqlite::memory:`, or `postgres://USER@HOST:PORT/DB` (an existing
    /// database, which instances may share). Default: data/orders.sqlite (or
    /// $ORDER_SERVICE_DATA/orders.sqlite). Created and seeded on first start.
    #[arg(long)]
    database: Option<String>,
}

/// What a running service (`serve`, `stdio`) takes besides its database.
#[derive(Debug, clap::Args)]
struct Running {
    /// Simulated carrier latency per order, in milliseconds.
    #[arg(long, default_value_t = 30)]
    carrier_latency_ms: u64,
    /// Read every order from the database, never from memory (for measuring SQLite alone).
    #[arg(long)]
    no_order_cache: bool,
    /// The key ring sealing `requestState` (lines `current ID HEX`, `previous ID HEX`), the
    /// same file for every instance; or the file named by $ORDER_SERVICE_STATE_KEYS. Without
    /// one, a key made at start.
    #[arg(long, value_name = "FILE")]
    state_keys: Option<PathBuf>,
    /// How long an instance holds a task it runs before another instance (or this one, after
    /// a restart) may take it over, in milliseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    task_lease_ms: u64,
    /// Seconds a question asked on the call itself (not in a task) waits for the person before
    /// the tool goes on without an answer. A desk in front must give up later than this
    /// (`support-agent --server-ask-seconds`).
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u64).range(1..=3600))]
    ask_seconds: u64,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve REST (/api/orders) and MCP (/mcp) over HTTP.
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        #[command(flatten)]
        sign_in: serve::SignInSettings,
        /// A host name (besides loopback) clients use to reach the service; repeat for more.
        #[arg(long = "allow-host", value_name = "NAME")]
        allow_hosts: Vec<String>,
        /// 2025-11-25 sessions open at once; `initialize` beyond it gets 503.
        #[arg(long, default_value_t = 1000)]
        max_sessions: usize,
        /// Connections served at once; further ones wait to be accepted.
        #[arg(long, default_value_t = 4096)]
        max_connections: usize,
        /// Serve Prometheus metrics at /metrics (behind the same Host checks and sign-in as
        /// every route): operation and session durations, open sessions, questions waiting for
        /// a person, refused requests by reason.
        #[arg(long)]
        metrics: bool,
        /// Serve this protocol revision only (2025-11-25 or 2026-07-28), refusing the other as
        /// an unsupported version: for testing bridges and clients.
        #[arg(long, value_name = "REVISION")]
        only_revision: Option<backchannel::Revision>,
        /// Run no call as a task and declare no tasks extension: a confirmation is asked on
        /// the call itself, with its deadline, as in the lessons.
        #[arg(long)]
        no_tasks: bool,
        #[command(flatten)]
        database: Database,
        #[command(flatten)]
        running: Running,
    },
    /// Serve MCP over stdin/stdout; logs go to stderr.
    Stdio {
        #[command(flatten)]
        database: Database,
        #[command(flatten)]
        running: Running,
    },
    /// Delete all orders and write the seed again.
    Reset {
        #[command(flatten)]
        database: Database,
    },
}

/// The settings every command shares: where the database is.
fn database_config(database: Database) -> Config {
    Config {
        database: database.database,
        data_dir: std::env::var_os("ORDER_SERVICE_DATA")
            .map(PathBuf::from)
            .unwrap_or_default(),
        ..Config::default()
    }
}

/// The settings of a running service.
fn config(database: Database, running: Running) -> anyhow::Result<Config> {
    let keys_file = running
        .state_keys
        .or_else(|| std::env::var_os("ORDER_SERVICE_STATE_KEYS").map(PathBuf::from));
    let state_keys = match keys_file {
        Some(path) => Some(backchannel::StateKeys::from_file(&path)?),
        None => None,
    };
    let mut config = Config {
        state_keys,
        ..database_config(database)
    };
    config.service.carrier_latency = Duration::from_millis(running.carrier_latency_ms);
    config.service.order_cache = !running.no_order_cache;
    config.task_lease = Some(Duration::from_millis(running.task_lease_ms));
    config.ask_timeout = Some(Duration::from_secs(running.ask_seconds));
    Ok(config)
}

fn main() -> anyhow::Result<()> {
    // One worker (TOKIO_WORKER_THREADS=1) runs on tokio's current-thread scheduler.
    backchannel::serve::Scheduler::from_vars(|name| std::env::var(name).ok()).run(run)?
}

async fn run(scheduler: backchannel::serve::Scheduler) -> anyhow::Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    let _logs = backchannel::logging::init_server(
        "order-service",
        &["orders", "order_service"],
        env,
        scheduler,
    );
    match Cli::parse().command {
        Command::Serve {
            listen,
            sign_in,
            allow_hosts,
            max_sessions,
            max_connections,
            metrics,
            only_revision,
            no_tasks,
            database,
            running,
        } => {
            let mut config = config(database, running)?;
            config.metrics = metrics;
            config.only_revision = only_revision;
            config.no_tasks = no_tasks;
            config.http.max_sessions = max_sessions;
            config.http.max_connections = max_connections;
            config.http = allow_hosts
                .iter()
                .fold(config.http, |options, host| options.allow_host(host));
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| {
                    format!("cannot listen on {listen}; choose another address with --listen")
                })?;
            let addr = listener.local_addr()?;
            let resource_server = sign_in.resource_server(addr, "order-service").await?;
            config.sign_in = resource_server.map(Arc::new);
            let shutdown = backchannel::serve::shutdown_on_signal();
            app::serve_http(listener, &config, shutdown).await?;
        }
        Command::Stdio { database, running } => {
            app::serve_stdio(&config(database, running)?).await?;
        }
        Command::Reset { database } => {
            app::reset(&database_config(database)).await?;
            eprintln!("order-service: the database holds the seed again");
        }
    }
    Ok(())
}

/// jemalloc: glibc's malloc took a sixth of the CPU of a confirmed cancel (`scripts/bench`).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
