//! `support-agent`: the Support Desk agent.
//!
//! - `support-agent demo`: the order service on 127.0.0.1:8080 and the web UI on 127.0.0.1:8081,
//!   over real loopback HTTP, SQLite and the rules planner.
//! - `support-agent web [--listen ADDR] [--orders URL]`: the web UI against a running order service.
//! - `support-agent cli [--orders URL]`: the same desk at the terminal.

use std::net::SocketAddr;
use std::time::Duration;

use agent::app::{self, DemoConfig};
use agent::desk::DeskConfig;
use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "support-agent", about = "The Support Desk agent")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `auto` (`None`), or a revision's date.
#[derive(Debug, Clone, Copy)]
struct ProtocolChoice(Option<backchannel::Revision>);

fn protocol_arg(text: &str) -> Result<ProtocolChoice, String> {
    if text == "auto" {
        return Ok(ProtocolChoice(None));
    }
    text.parse()
        .map(|revision| ProtocolChoice(Some(revision)))
        .map_err(|e: backchannel::UnknownRevision| e.to_string())
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ProviderArg {
    /// Chat completions with tool calling (OpenAI, Ollama, llama.cpp, vLLM); URL up to `/v1`.
    Openai,
    /// Anthropic messages; URL without `/v1` (`https://api.anthropic.com`).
    Anthropic,
}

#[derive(Debug, clap::Args)]
struct DeskArgs {
    /// Another server the desk reaches beside the order service, as NAME=URL (its streamable
    /// HTTP endpoint); repeat for more. Its tools are offered as NAME_tool, its questions,
    /// sampling requests, progress and logs shown as the order service's are.
    #[arg(long = "server", value_name = "NAME=URL")]
    servers: Vec<agent::desk::Server>,
    /// Servers as a TOML file names them, as the host's configuration writes connections
    /// (`[connections.movies]`, `transport = "http"`, `url = "…"`); HTTP servers only.
    #[arg(long, value_name = "FILE")]
    servers_file: Option<std::path::PathBuf>,
    /// Not a flag of ours: a port is set with --listen 127.0.0.1:PORT (said plainly, rather
    /// than a flag of a similar name suggested).
    #[arg(long, hide = true)]
    port: Option<String>,
    /// Protocol revision to speak to the order service: auto, 2025-11-25 or 2026-07-28.
    #[arg(long, value_parser = protocol_arg, default_value = "auto")]
    protocol: ProtocolChoice,
    /// Seconds the person has to answer a question. One that waits in a task (the default)
    /// may take hours, up to how long the server keeps the task (the order service: an
    /// hour); one asked directly holds the server's request open, so with tasks it gets at
    /// most two thirds of the server's ask timeout (60 s of 90), and with --no-tasks the time
    /// must be shorter than that timeout.
    #[arg(long, default_value_t = 60)]
    answer_seconds: u64,
    /// Seconds the order service waits for an answer it asks on the call itself (its
    /// `--ask-seconds`; the demo's order service is started with this). Raise it, and
    /// --orders-timeout-seconds above it, to give the person longer with --no-tasks.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u64).range(1..=3600))]
    server_ask_seconds: u64,
    /// Seconds one request to the order service may take; longer than --server-ask-seconds.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=7200))]
    orders_timeout_seconds: u64,
    /// Do not declare the tasks extension. With it (the default) a call the order service
    /// runs as a task asks inside it: the question waits in your inbox, across reloads and
    /// restarts, and the conversation goes on; the result is said in the conversation when it
    /// comes. Without it every question is asked at once and waits at most --answer-seconds.
    #[arg(long)]
    no_tasks: bool,
    /// The model's endpoint (see `--provider`). Without it the agent follows its offline
    /// rules. The key, if any, is read from $SUPPORT_AGENT_API_KEY.
    #[arg(long)]
    model_url: Option<String>,
    /// Which API `--model-url` speaks.
    #[arg(long, value_enum, default_value = "openai")]
    provider: ProviderArg,
    /// The model name to ask for.
    #[arg(long, default_value = "qwen3:8b")]
    model: String,
    /// The most tokens one reply of the model may take.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=200_000))]
    max_tokens: u32,
    /// The model's sampling temperature, 0 to 2 (default: the server's).
    #[arg(long, value_parser = temperature_arg)]
    temperature: Option<f32>,
    /// Seconds one model request may take before it is given up.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    model_timeout_seconds: u64,
    /// Tokens one conversation may spend with the model.
    #[arg(long, default_value_t = 20_000)]
    token_budget: u64,
    /// The model's context in tokens: longer conversations are trimmed, oldest turn first.
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u32).range(512..=10_000_000))]
    context_tokens: u32,
    /// The filesystem MCP server that reads the notes in support-kb/ and support-kb-archive/
    /// (default: `npx -y @modelcontextprotocol/server-filesystem`).
    #[arg(long)]
    kb_server: Option<String>,
    /// Run without the knowledge base.
    #[arg(long)]
    no_knowledge_base: bool,
    /// Read the notes through the `--orders` endpoint: an `mcp-gateway` in front of the order
    /// service and of two filesystem servers named `knowledge_base` (support-kb/) and
    /// `knowledge_base_archive` (support-kb-archive/), whose tools carry those names and `_`.
    #[arg(long, conflicts_with_all = ["no_knowledge_base", "kb_server"])]
    kb_through_orders: bool,
    /// Keep the tokens of a sign-in (to an order service that asks for one) in this file,
    /// readable only by you; without it they last until the desk stops.
    #[arg(long, value_name = "FILE")]
    token_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the order service and the web UI together.
    Demo {
        /// Where the web UI listens.
        #[arg(long, default_value = "127.0.0.1:8081")]
        listen: SocketAddr,
        /// Where the order service listens.
        #[arg(long, default_value = "127.0.0.1:8080")]
        orders_listen: SocketAddr,
        /// The order service's database (default: data/orders.sqlite).
        #[arg(long)]
        database: Option<String>,
        /// Simulated carrier latency per shipment, in milliseconds: long enough by default for
        /// the progress bar of "refresh delivery estimates" to be seen (about 3 s in all).
        #[arg(long, default_value_t = 250)]
        carrier_latency_ms: u64,
        #[command(flatten)]
        web_ui: WebUi,
        /// Start from the seed: orders are kept between runs (a cancelled order stays
        /// cancelled), and this writes the seed again first.
        #[arg(long)]
        reset: bool,
        #[command(flatten)]
        desk: DeskArgs,
    },
    /// Chat at the terminal with a running order service.
    Cli {
        /// The order service's MCP endpoint.
        #[arg(long, default_value = "http://127.0.0.1:8080/mcp")]
        orders: String,
        /// Where the log goes (the screen is the chat's): warnings only, more with -v, -vv.
        #[arg(long, default_value = "data/support-agent.log")]
        log_file: std::path::PathBuf,
        /// The web UI's database (`support-agent web --database`, the demo's desk.sqlite):
        /// questions waiting there in tasks for you are asked here too, and the first answer,
        /// here or in a page, is the one sent (default: data/desk.sqlite;
        /// `sqlite::memory:` for none).
        #[arg(long, value_name = "URL")]
        database: Option<String>,
        /// A file whose first line is the token to present to the order service (the demo's
        /// desk keeps one as orders.bearer beside its database, and is known by it; default:
        /// that file, when it is there).
        #[arg(long, value_name = "FILE")]
        orders_bearer_file: Option<std::path::PathBuf>,
        /// More detail in the log file (-v: what the desk does, -vv: debug).
        #[arg(short, long, action = clap::ArgAction::Count)]
        verbose: u8,
        #[command(flatten)]
        desk: DeskArgs,
    },
    /// Serve the web UI against a running order service.
    Web(WebArgs),
    /// The people who may sign in to the web UI.
    People {
        #[command(subcommand)]
        action: PeopleAction,
    },
}

/// The web UI's flags (`demo` and `web`): the names it answers to, who may use it, in whose name
/// the desk signs in to a server, its metrics.
#[derive(Debug, clap::Args)]
struct WebUi {
    /// A host name (besides loopback) the web UI answers to (in the demo, the order service
    /// too); repeat for more.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
    /// Who may sign in to the web UI (`support-agent people add` writes it); without it
    /// the desk has one person and serves loopback only.
    #[arg(long, value_name = "FILE")]
    people: Option<std::path::PathBuf>,
    /// With --people: the person who signs the desk in to a server that asks for it (the
    /// link is shown on their pages only; the desk's one connection then acts under their
    /// account for everyone). Without it such a sign-in is refused.
    #[arg(long, value_name = "NAME", requires = "people")]
    sign_in_person: Option<String>,
    /// Serve Prometheus metrics at /metrics on the web UI (the desk's MCP client histograms;
    /// in the demo, the order service's too).
    #[arg(long)]
    metrics: bool,
}

/// The flags of `support-agent web`.
#[derive(Debug, clap::Args)]
struct WebArgs {
    /// Where the web UI listens.
    #[arg(long, default_value = "127.0.0.1:8081")]
    listen: SocketAddr,
    /// The order service's MCP endpoint.
    #[arg(long, default_value = "http://127.0.0.1:8080/mcp")]
    orders: String,
    #[command(flatten)]
    web_ui: WebUi,
    /// The desk's own database (browser sessions, conversations, the questions that wait
    /// in tasks), kept across restarts: a SQLite file, a PostgreSQL database
    /// (`postgres://USER@HOST:PORT/DB`, which must exist; migrated on first start), or
    /// `sqlite::memory:` to keep nothing (default: data/desk.sqlite).
    #[arg(long, value_name = "URL")]
    database: Option<String>,
    /// A file whose first line is the token to present to the order service (then no
    /// OAuth sign-in toward it).
    #[arg(long, value_name = "FILE")]
    orders_bearer_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    desk: DeskArgs,
}

#[derive(Debug, Subcommand)]
enum PeopleAction {
    /// Add a person (or set their password), reading the password from the first line of
    /// standard input: `read -rs PW && printf '%s\n' "$PW" | support-agent people add ana`.
    Add {
        /// The person's name (letters, digits, '.', '-', '_').
        name: String,
        /// The people file (created, readable by you only, when missing).
        #[arg(long, value_name = "FILE", default_value = "data/people")]
        people: std::path::PathBuf,
        /// Keep the person in the desk's database instead (`postgres://…`: the desks of a team
        /// sharing it let them sign in; `support-agent web --database` on it reads them).
        #[arg(long, value_name = "URL", conflicts_with = "people")]
        database: Option<String>,
    },
}

/// The people file at `path`, if one was given (what is said of them at start, said).
fn load_people(path: Option<&std::path::Path>) -> anyhow::Result<Option<agent::people::People>> {
    let found = app::people(path, &terminal_person())?;
    Ok(found.map(|(people, said)| {
        eprintln!("{said}");
        people
    }))
}

/// Whom the terminal answers as: the system's user.
fn terminal_person() -> String {
    std::env::var("USER").unwrap_or_else(|_| "support-agent".into())
}

/// `--temperature`: a number from 0 to 2.
fn temperature_arg(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(t) if (0.0..=2.0).contains(&t) => Ok(t),
        _ => Err(format!("'{text}' is not a temperature from 0 to 2")),
    }
}

fn desk_config(args: &DeskArgs) -> anyhow::Result<DeskConfig> {
    if let Some(port) = &args.port {
        anyhow::bail!(
            "there is no --port: the web UI's address and port are --listen 127.0.0.1:{port} \
             (and the demo's order service's --orders-listen)"
        );
    }
    let model = match &args.model_url {
        None => None,
        Some(url) => {
            let key = std::env::var("SUPPORT_AGENT_API_KEY")
                .ok()
                .filter(|key| !key.is_empty())
                .map(agent::llm::Secret::new);
            let generation = agent::llm::Generation {
                max_tokens: args.max_tokens,
                temperature: args.temperature,
                stop: Vec::new(),
            };
            let timeout = Duration::from_secs(args.model_timeout_seconds);
            let api = match args.provider {
                ProviderArg::Openai => app::ModelApi::OpenAi,
                ProviderArg::Anthropic => app::ModelApi::Anthropic,
            };
            Some(app::model(
                api,
                url,
                key,
                &args.model,
                (timeout, generation),
            )?)
        }
    };
    let knowledge = if args.no_knowledge_base {
        None
    } else {
        let base = std::env::current_dir().context("cannot read the current folder")?;
        let mut knowledge = agent::desk::Knowledge::npx(&base);
        if let Some(server) = &args.kb_server {
            knowledge.server = vec![server.clone()];
        }
        knowledge.through_orders = args.kb_through_orders;
        Some(knowledge)
    };
    Ok(DeskConfig {
        protocol: args.protocol.0,
        agent_id: terminal_person(),
        person_deadline: Duration::from_secs(args.answer_seconds),
        server_ask_timeout: Duration::from_secs(args.server_ask_seconds),
        connection_timeout: Duration::from_secs(args.orders_timeout_seconds),
        model,
        token_budget: args.token_budget,
        context_tokens: args.context_tokens,
        knowledge,
        token_file: args.token_file.clone(),
        tasks: !args.no_tasks,
        servers: app::named_servers(args.servers.clone(), args.servers_file.as_deref())?,
        ..DeskConfig::default()
    })
}

/// Our log targets, at INFO by default (`backchannel_host`: the sign-ins and what the stdio
/// servers write to their stderr, as the classes show the filesystem servers' roots line).
const OURS: [&str; 4] = ["agent", "support_agent", "orders", "backchannel_host"];

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let _logs = logs(&cli.command)?;
    let shutdown = backchannel::serve::shutdown_on_signal();
    match cli.command {
        Command::Demo {
            listen,
            orders_listen,
            database,
            carrier_latency_ms,
            web_ui,
            reset,
            desk,
        } => {
            let people = load_people(web_ui.people.as_deref())?;
            if people.is_none() {
                app::loopback_only(listen, "--listen", true)?;
            }
            app::loopback_only(orders_listen, "--orders-listen", false)?;
            let (latency, ask) = (carrier_latency_ms, desk.server_ask_seconds);
            let (latency, ask) = (Duration::from_millis(latency), Duration::from_secs(ask));
            let data_dir = std::env::var_os("ORDER_SERVICE_DATA").unwrap_or_default();
            let stored = (database, data_dir.into());
            let orders = app::demo_orders(stored, latency, ask, &web_ui.allow_hosts);
            let said =
                orders::app::kept_or_reset(&orders, reset, "support-agent demo --reset").await?;
            if !said.is_empty() {
                eprintln!("{said}");
            }
            let config = DemoConfig {
                orders_listen,
                web_listen: listen,
                desk: DeskConfig {
                    people,
                    sign_in_person: web_ui.sign_in_person,
                    metrics: web_ui.metrics,
                    database: orders.file_beside("desk.sqlite")?,
                    ..desk_config(&desk)?
                },
                web: app::web_options(&web_ui.allow_hosts),
            };
            let serve_orders =
                move |listener, desk, stop| app::serve_demo_orders(orders, listener, desk, stop);
            app::demo(config, serve_orders, shutdown, |url| {
                eprintln!("Support Desk demo: open {url}  (Ctrl-C stops it)");
            })
            .await?;
        }
        Command::Cli {
            orders,
            log_file,
            verbose: _,
            database,
            orders_bearer_file,
            desk,
        } => {
            let database = app::desk_database(database)?;
            let config = DeskConfig {
                orders_url: orders,
                orders_bearer_file: orders_bearer_file
                    .or_else(|| app::bearer_beside_if_kept(database.as_deref())),
                database,
                ..desk_config(&desk)?
            };
            app::terminal(config, &log_file, shutdown).await?;
        }
        Command::Web(args) => web(args, shutdown).await?,
        Command::People {
            action:
                PeopleAction::Add {
                    name,
                    people,
                    database,
                },
        } => add_person(&name, &people, database.as_deref()).await?,
    }
    Ok(())
}

/// `support-agent web`: the web UI until `shutdown`.
async fn web(args: WebArgs, shutdown: tokio_util::sync::CancellationToken) -> anyhow::Result<()> {
    let WebArgs {
        listen,
        orders,
        web_ui,
        database,
        orders_bearer_file,
        desk,
    } = args;
    let database = app::desk_database(database)?;
    let (file, terminal) = (web_ui.people.as_deref(), terminal_person());
    let found = app::web_people(file, database.as_deref(), &terminal).await?;
    let people = found.map(|(people, said)| {
        eprintln!("{said}");
        people
    });
    if people.is_none() {
        app::loopback_only(listen, "--listen", true)?;
    }
    let config = DeskConfig {
        orders_url: orders,
        people,
        sign_in_person: web_ui.sign_in_person,
        metrics: web_ui.metrics,
        orders_bearer_file,
        database,
        ..desk_config(&desk)?
    };
    app::web(listen, config, &web_ui.allow_hosts, shutdown, |url| {
        eprintln!("Support Desk web UI: open {url}");
    })
    .await?;
    Ok(())
}

/// `support-agent people add`: `name` with a password asked at the terminal (twice, never
/// shown), or read from standard input when that is not a terminal (a script's pipe).
async fn add_person(
    name: &str,
    people: &std::path::Path,
    database: Option<&str>,
) -> anyhow::Result<()> {
    let password = app::read_password(name)?;
    match database {
        Some(url) => {
            app::add_person_to_database(url, name, &password).await?;
            eprintln!("{name} may sign in to the desks on that database");
        }
        None => {
            app::add_person(people, name, &password)?;
            eprintln!("{name} may sign in to the desk ({})", people.display());
        }
    }
    Ok(())
}

/// The logs: to a file for the terminal front end (the screen is the chat's), else to stderr
/// (and exported when the environment asks).
fn logs(command: &Command) -> anyhow::Result<backchannel::logging::Guard> {
    Ok(match command {
        Command::Cli {
            log_file, verbose, ..
        } => backchannel::logging::init_file(
            log_file,
            backchannel::logging::verbosity_filter(&OURS, *verbose),
        )
        .with_context(|| format!("cannot write the log file {}", log_file.display()))?,
        _ => backchannel::logging::init_with(
            &OURS,
            backchannel::telemetry::Export::from_vars(
                |name| std::env::var(name).ok(),
                "support-agent",
            )
            .as_ref(),
        ),
    })
}
