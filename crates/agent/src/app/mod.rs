//! Entry points of the `support-agent` binary.
//!
//! The library does not know the order service: the demo is handed a function that serves it on
//! a listener (the binary passes `orders::app::serve_http`), so `agent` builds without `orders`
//! (`cargo tree -p agent --no-default-features -e normal` shows none; the `demo` feature adds it
//! for the binary alone).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use backchannel::serve;
use tokio_util::sync::CancellationToken;

use crate::desk::{Desk, DeskConfig, DeskError};

mod launch;

pub use launch::{ModelApi, bearer_beside_if_kept, model, read_password, web_people};
#[cfg(feature = "demo")]
pub use launch::{demo_orders, serve_demo_orders};

/// Errors of the entry points.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The desk could not start.
    #[error(transparent)]
    Desk(#[from] DeskError),
    /// The order service (the demo's companion server) failed.
    #[error("the order service failed: {0}")]
    Orders(Box<dyn std::error::Error + Send + Sync>),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
    /// The desk's token for the order service could not be read or made.
    #[error("cannot keep the desk's token for the order service in {0}: {1}")]
    Bearer(std::path::PathBuf, std::io::Error),
    /// No loopback port could be had for the terminal's sign-in callbacks.
    #[error("cannot open a loopback port for sign-in callbacks: {0}")]
    Callback(std::io::Error),
    /// Without people, the web UI serves loopback only.
    #[error(
        "{flag} {addr} is not a loopback address: the desk signs no one in, so anyone who \
         reached it could act for its person; listen on 127.0.0.1 (or ::1){}",
        or_people(*.people)
    )]
    NotLoopback {
        /// The address.
        addr: SocketAddr,
        /// The flag that sets it.
        flag: &'static str,
        /// Whether a people file would allow it.
        people: bool,
    },
    /// The people file could not be used.
    #[error("cannot use the people file: {0}")]
    People(#[from] crate::people::PeopleError),
    /// A folder for the desk's files could not be made.
    #[error("cannot make the folder {0}: {1}")]
    Folder(std::path::PathBuf, std::io::Error),
    /// The servers file could not be read or does not parse.
    #[error("--servers-file {path}: {why}")]
    ServersFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The terminal could not be written to or read.
    #[error("the terminal: {0}")]
    Terminal(std::io::Error),
    /// The two passwords typed differ.
    #[error("the two passwords differ; nothing was changed")]
    PasswordsDiffer,
    /// The model could not be set up.
    #[error(transparent)]
    Model(#[from] crate::llm::LlmError),
    /// A socket could not be bound (the address came from the flag `flag`).
    #[error("cannot listen on {addr}: {error}; choose another address with {flag}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The flag that sets it.
        flag: &'static str,
        /// What the system said.
        error: std::io::Error,
    },
}

/// Serve the web UI on `listener` until `shutdown`.
pub async fn serve_web(
    listener: tokio::net::TcpListener,
    config: DeskConfig,
    web: serve::HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), AppError> {
    let mut config = config;
    if let Ok(addr) = listener.local_addr() {
        config
            .sign_in_callback
            .get_or_insert_with(|| callback_url(addr));
    }
    let desk = Arc::new(Desk::start(config).await?);
    desk.follow_kept_tasks().await?;
    close_pages_on(&desk, &shutdown);
    let app = crate::web::routes(desk);
    serve::http(
        listener,
        app,
        &web,
        async move { shutdown.cancelled().await },
    )
    .await?;
    Ok(())
}

/// When `shutdown` comes, end the pages' event streams, so the stop does not wait for them.
fn close_pages_on(desk: &Arc<Desk>, shutdown: &CancellationToken) {
    let (events, shutdown) = (desk.events().clone(), shutdown.clone());
    tokio::spawn(async move {
        shutdown.cancelled().await;
        events.close_all();
    });
}

/// The desk's sign-in callback on the web UI's address.
fn callback_url(addr: SocketAddr) -> String {
    format!("http://{addr}{}", crate::web::CALLBACK_PATH)
}

/// Start the desk for the terminal: its sign-in callback is served on a loopback port of its
/// own (until `shutdown`), so a server that asks the person to sign in can be answered from a
/// browser on this machine.
pub async fn terminal_desk(
    mut config: DeskConfig,
    shutdown: CancellationToken,
) -> Result<Arc<Desk>, AppError> {
    let any_loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let listener = tokio::net::TcpListener::bind(any_loopback)
        .await
        .map_err(AppError::Callback)?;
    let addr = listener.local_addr().map_err(AppError::Callback)?;
    config
        .sign_in_callback
        .get_or_insert_with(|| callback_url(addr));
    let desk = Arc::new(Desk::start(config).await?);
    desk.answer_from_terminal();
    let routes = crate::web::callback_routes(desk.clone());
    tokio::spawn(async move {
        let options = serve::HttpOptions::default();
        if let Err(error) =
            serve::http(listener, routes, &options, shutdown.cancelled_owned()).await
        {
            tracing::error!(%error, "the sign-in callback stopped");
        }
    });
    Ok(desk)
}

/// Settings of the demo.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// Where the order service listens.
    pub orders_listen: SocketAddr,
    /// Where the web UI listens.
    pub web_listen: SocketAddr,
    /// The desk's settings (the order service URL is filled in).
    pub desk: DeskConfig,
    /// Who may call the web UI (Host/Origin); loopback by default.
    pub web: serve::HttpOptions,
}

/// The name the demo's order service knows its desk by.
pub const DESK_PRINCIPAL: &str = "support-desk";

/// The file beside the desk's database that holds the token the desk presents to the demo's
/// order service.
pub const BEARER_FILE: &str = "orders.bearer";

/// How the demo's order service is to know its desk: by `token`, as [`DESK_PRINCIPAL`], at
/// `addr` (the address it listens on; its tokens are for `http://{addr}/mcp`).
#[derive(Clone)]
pub struct DeskCaller {
    /// Where the order service listens.
    pub addr: SocketAddr,
    /// The token the desk presents.
    pub token: String,
}

impl std::fmt::Debug for DeskCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeskCaller")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// The bearer file beside the desk's database at `database` (a SQLite URL).
pub fn bearer_beside(database: &str) -> std::path::PathBuf {
    let file = crate::store::sqlite_file(database);
    file.with_file_name(BEARER_FILE)
}

/// The token in the bearer file at `path`, made (64 hex digits of OS randomness, the file
/// readable by its user only) when there is none yet: the same token across restarts, so a
/// restarted desk is the caller its tasks were bound to.
pub fn desk_token(path: &std::path::Path) -> Result<String, AppError> {
    let fail = |error| AppError::Bearer(path.to_path_buf(), error);
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let token = text.lines().next().unwrap_or_default().trim();
            if token.len() < 32 || !token.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(fail(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "its first line is not the 64 hex digits the desk wrote; remove the file \
                     and a new token is made",
                )));
            }
            return Ok(token.to_owned());
        }
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(fail(error)),
        Err(_) => {}
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| fail(std::io::Error::other(e.to_string())))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(fail)?;
    std::io::Write::write_all(&mut file, format!("{token}\n").as_bytes()).map_err(fail)?;
    Ok(token)
}

/// Start the order service (`orders`, given its listener, how to know the desk, and the
/// shutdown token) and the web UI, talking over loopback HTTP; calls `ready` with the UI's URL
/// once both listen, and runs until `shutdown`.
///
/// With a desk database (a file), the desk presents a token of its own to the order service
/// (kept in [`BEARER_FILE`] beside the database) and `orders` is asked to know it by it
/// (`orders::app::Config::knowing`): the tasks the desk starts are then bound to the desk, not
/// to one MCP session, and a restarted desk, or `support-agent cli` beside it, reaches them on
/// either revision. Everyone else is served as without sign-in.
pub async fn demo<Orders, Running, E>(
    config: DemoConfig,
    orders: Orders,
    shutdown: CancellationToken,
    ready: impl FnOnce(String) + Send,
) -> Result<(), AppError>
where
    Orders: FnOnce(tokio::net::TcpListener, Option<DeskCaller>, CancellationToken) -> Running,
    Running: Future<Output = Result<(), E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let orders_bind = |error| AppError::Bind {
        addr: config.orders_listen,
        flag: "--orders-listen",
        error,
    };
    let web_bind = |error| AppError::Bind {
        addr: config.web_listen,
        flag: "--listen",
        error,
    };
    let orders_listener = tokio::net::TcpListener::bind(config.orders_listen)
        .await
        .map_err(orders_bind)?;
    let web_listener = tokio::net::TcpListener::bind(config.web_listen)
        .await
        .map_err(web_bind)?;
    let orders_addr = orders_listener.local_addr().map_err(orders_bind)?;
    let web_addr = web_listener.local_addr().map_err(web_bind)?;
    let mut desk = config.desk;
    let caller = match &desk.database {
        Some(database) if desk.orders_bearer_file.is_none() => {
            let file = bearer_beside(database);
            let token = desk_token(&file)?;
            desk.orders_bearer_file = Some(file);
            Some(DeskCaller {
                addr: orders_addr,
                token,
            })
        }
        _ => None,
    };
    let orders_task = tokio::spawn(orders(orders_listener, caller, shutdown.clone()));
    desk.orders_url = format!("http://{orders_addr}/mcp");
    desk.sign_in_callback
        .get_or_insert_with(|| callback_url(web_addr));
    let desk = Arc::new(Desk::start(desk).await?);
    desk.follow_kept_tasks().await?;
    close_pages_on(&desk, &shutdown);
    let app = crate::web::routes(desk);
    ready(format!("http://{web_addr}/"));
    serve::http(web_listener, app, &config.web, async move {
        shutdown.cancelled().await
    })
    .await?;
    match orders_task.await {
        Ok(result) => result.map_err(|e| AppError::Orders(Box::new(e)))?,
        Err(error) => tracing::error!(%error, "the order service task failed"),
    }
    Ok(())
}

/// What else a web UI beyond loopback may do.
fn or_people(people: bool) -> &'static str {
    if people {
        ", or give --people FILE (see `support-agent people add`) so each person signs in"
    } else {
        ""
    }
}

/// Without a people file the desk signs no one in: a page's session is whoever reached it
/// first, so it serves loopback only (as the gateway and the order service do without sign-in).
/// `people`: whether a people file would allow `addr` (the web UI's address, not the demo's
/// order service's).
pub fn loopback_only(addr: SocketAddr, flag: &'static str, people: bool) -> Result<(), AppError> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    Err(AppError::NotLoopback { addr, flag, people })
}

/// The desk's database as `--database` gives it (default: `data/desk.sqlite`, the folder made);
/// `None` for one in memory (nothing kept).
pub fn desk_database(database: Option<String>) -> Result<Option<String>, AppError> {
    let database = match database {
        Some(url) => url,
        None => sql_pool::file_url(std::path::Path::new(""), "desk.sqlite")
            .map_err(|(dir, error)| AppError::Folder(dir, error))?,
    };
    Ok((!sql_pool::is_memory(&database)).then_some(database))
}

/// The servers named with `--server`, and those of `--servers-file` when given.
pub fn named_servers(
    mut servers: Vec<crate::desk::Server>,
    file: Option<&std::path::Path>,
) -> Result<Vec<crate::desk::Server>, AppError> {
    if let Some(path) = file {
        let failed = |why: String| AppError::ServersFile {
            path: path.to_path_buf(),
            why,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| failed(format!("cannot read it: {e}")))?;
        servers.extend(crate::desk::Server::from_toml(&text).map_err(failed)?);
    }
    Ok(servers)
}

/// The people of `path`, when given, and what to say at start: who may sign in, and who the
/// terminal on the same database answers as (`terminal_user`).
pub fn people(
    path: Option<&std::path::Path>,
    terminal_user: &str,
) -> Result<Option<(crate::people::People, String)>, AppError> {
    let Some(path) = path else {
        return Ok(None);
    };
    let people = crate::people::People::load(path)?;
    let said = format!(
        "People: {} may sign in ({}); each page asks who it is first. `support-agent cli` on \
         this desk's database answers as {terminal_user}.",
        match people.len() {
            1 => "1 person".to_owned(),
            n => format!("{n} people"),
        },
        path.display()
    );
    Ok(Some((people, said)))
}

/// Add `name` with `password` to the people file at `path` (its folder made when missing).
pub fn add_person(path: &std::path::Path, name: &str, password: &str) -> Result<(), AppError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| AppError::Folder(dir.to_path_buf(), e))?;
    }
    crate::people::add(path, name, password)?;
    Ok(())
}

/// Add `name` with `password` to the people the desk's database at `url` keeps (a team's desks
/// sharing one PostgreSQL; the database is migrated when new).
pub async fn add_person_to_database(url: &str, name: &str, password: &str) -> Result<(), AppError> {
    if !crate::people::valid_name(name) {
        return Err(crate::people::PeopleError::BadName(name.to_owned()).into());
    }
    let hash = crate::people::hash_password(password)?;
    let store = crate::store::DeskStore::open(url)
        .await
        .map_err(DeskError::from)?;
    store
        .save_person(name, &hash)
        .await
        .map_err(DeskError::from)?;
    Ok(())
}

/// The people the desk's database at `url` keeps, when it is PostgreSQL (a team's desks share
/// them there; a SQLite desk's people are its people file); `None` when it keeps nobody.
pub async fn people_in_database(url: &str) -> Result<Option<crate::people::People>, AppError> {
    if !sql_pool::is_postgres(url) {
        return Ok(None);
    }
    let store = crate::store::DeskStore::open(url)
        .await
        .map_err(DeskError::from)?;
    let people = store.people().await.map_err(DeskError::from)?;
    Ok(crate::people::People::from_database(people)?)
}

/// Loopback, and the names given with `--allow-host`.
pub fn web_options(allow_hosts: &[String]) -> serve::HttpOptions {
    allow_hosts
        .iter()
        .fold(serve::HttpOptions::default(), |options, host| {
            options.allow_host(host)
        })
}

/// Serve the web UI on `listen` (`--listen`) until `shutdown`; `ready` is told its URL.
pub async fn web(
    listen: SocketAddr,
    config: DeskConfig,
    allow_hosts: &[String],
    shutdown: CancellationToken,
    ready: impl FnOnce(String),
) -> Result<(), AppError> {
    let bind = |error| AppError::Bind {
        addr: listen,
        flag: "--listen",
        error,
    };
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(bind)?;
    let address = listener.local_addr().map_err(bind)?;
    ready(format!("http://{address}/"));
    serve_web(listener, config, web_options(allow_hosts), shutdown).await
}

/// Chat at the terminal until the person quits (saying first where the log goes, `log_file`).
pub async fn terminal(
    config: DeskConfig,
    log_file: &std::path::Path,
    shutdown: CancellationToken,
) -> Result<(), AppError> {
    use std::io::Write as _;
    let desk = terminal_desk(config, shutdown).await?;
    writeln!(
        std::io::stdout(),
        "(The log goes to {}.)",
        log_file.display()
    )
    .map_err(AppError::Terminal)?;
    let (lines, above_prompt) = crate::cli::terminal_lines();
    match above_prompt {
        Some(out) => crate::cli::run_with(desk, lines, out, crate::cli::Bar::Quarters).await,
        None => crate::cli::run(desk, lines, std::io::stdout()).await,
    }
    .map_err(AppError::Terminal)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_desks_token_is_made_once_kept_private_and_a_foreign_file_refused() {
        let dir = std::env::temp_dir().join(format!("desk-bearer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let database = format!("sqlite://{}?mode=rwc", dir.join("desk.sqlite").display());
        let file = bearer_beside(&database);
        assert_eq!(file, dir.join(BEARER_FILE));
        let first = desk_token(&file).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(desk_token(&file).unwrap(), first, "a restart must keep it");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        std::fs::write(&file, "short\n").unwrap();
        let error = desk_token(&file).unwrap_err().to_string();
        assert!(error.contains("remove the file"), "{error}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "short\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
