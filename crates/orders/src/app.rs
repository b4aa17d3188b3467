//! Entry points the binary calls: open the database, serve HTTP (REST + MCP on one port) or
//! stdio, and reset the seed.

use std::net::SocketAddr;
use std::path::PathBuf;

use backchannel::serve::{self, HttpOptions};
use tokio_util::sync::CancellationToken;

use crate::mcp::OrderServer;
use crate::service::{OrderService, ServiceConfig};
use crate::store::{Store, StoreError};

/// Errors starting the service.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The database could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An order operation failed.
    #[error(transparent)]
    Order(#[from] crate::service::OrderError),
    /// The data folder could not be created.
    #[error("cannot create the data folder {0}: {1}")]
    DataDir(PathBuf, std::io::Error),
    /// The database could not be opened: where, and why (the innermost cause, once).
    #[error("cannot open the order database {place}: {reason}")]
    Open {
        /// The database's file, or its URL without credentials.
        place: String,
        /// Why.
        reason: String,
    },
    /// The layer's configuration is invalid.
    #[error(transparent)]
    Layer(#[from] backchannel::BuildError),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
    /// The link to the other instances could not start.
    #[error(transparent)]
    Instances(#[from] backchannel::postgres::PgError),
    /// The task table could not be opened.
    #[error(transparent)]
    Tasks(#[from] backchannel::tasks::TaskStoreError),
    /// The sign-in could not be set up.
    #[error(transparent)]
    SignIn(#[from] serve::ResourceError),
    /// Listening beyond loopback needs sign-in.
    #[error(
        "refusing to listen on {0} without authentication: anything that reaches that address \
         could read and cancel orders. Pass --token-file FILE (lines of `name=token`), or listen \
         on a loopback address such as 127.0.0.1"
    )]
    Unauthenticated(SocketAddr),
}

/// Settings of a running order service.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `sqlite::memory:` or a SQLite URL; `None` for `orders.sqlite` in `data_dir`.
    pub database: Option<String>,
    /// Where the default database lives (created if missing); `data` when empty.
    pub data_dir: PathBuf,
    /// Service settings (carrier latency, concurrency).
    pub service: ServiceConfig,
    /// HTTP endpoint settings.
    pub http: HttpOptions,
    /// The sign-in every route but the health check and the protected-resource metadata
    /// requires (a token file or an OAuth issuer); `None` serves without sign-in (loopback
    /// only).
    pub sign_in: Option<std::sync::Arc<serve::ResourceServer>>,
    /// The key ring sealing `requestState`, shared by every instance; `None` for a random key
    /// per process (rounds then survive neither a restart nor a move to another instance).
    pub state_keys: Option<backchannel::StateKeys>,
    /// How long an instance holds a task it runs before another may take it over; `None` for
    /// the library's default (10 s).
    pub task_lease: Option<std::time::Duration>,
    /// Serve Prometheus metrics at `/metrics` (`backchannel::serve::metrics_router`).
    pub metrics: bool,
    /// No other process uses this database (the demo's own file): tasks an earlier run left
    /// unfinished are taken over at start, not after their lease
    /// (`BackchannelBuilder::sole_instance`). Never with instances sharing the database.
    pub sole_instance: bool,
    /// Run no call as a task and declare no tasks extension: every question is asked on the
    /// call itself, as in the lessons (`order-service serve --no-tasks`).
    pub no_tasks: bool,
    /// Serve this protocol revision only, refusing the other as an unsupported version (for
    /// testing bridges and clients); `None` serves both.
    pub only_revision: Option<backchannel::Revision>,
    /// How long a question asked on the call itself waits for the person; `None` for the
    /// library's default ([`backchannel::DEFAULT_ASK_TIMEOUT`]).
    pub ask_timeout: Option<std::time::Duration>,
}

impl Config {
    /// Know one caller, `name`, by `token` on the service at `addr`, and serve everyone else
    /// anonymously as without sign-in (loopback only, then). The demo's desk presents its
    /// token so that the tasks it starts are bound to it, not to an MCP session: a restarted
    /// desk, or its terminal beside it, reaches them again on 2025-11-25 too, while the REST
    /// calls and MCP Inspector of the lessons still need no token.
    pub fn knowing(
        mut self,
        addr: SocketAddr,
        name: &str,
        token: &str,
    ) -> Result<Config, AppError> {
        let tokens =
            serve::Tokens::parse(&format!("{name}={token}")).map_err(serve::ResourceError::from)?;
        let resource = format!("http://{addr}/mcp");
        let server = serve::ResourceServer::tokens(&resource, "order-service", tokens)?;
        self.sign_in = Some(std::sync::Arc::new(server.anonymous_too()));
        Ok(self)
    }
}

/// The default database: `orders.sqlite` in `dir` (`data` when empty), created if missing.
pub fn default_database(dir: &std::path::Path) -> Result<String, AppError> {
    sql_pool::file_url(dir, "orders.sqlite").map_err(|(dir, e)| AppError::DataDir(dir, e))
}

/// Open the database (creating, migrating and seeding it on first use) and build the service.
pub async fn open_service(config: &Config) -> Result<OrderService, AppError> {
    let url = match &config.database {
        Some(url) => url.clone(),
        None => default_database(&config.data_dir)?,
    };
    let store = Store::open(&url)
        .await
        .map_err(|error| open_failed(&url, &error))?;
    let mut service = config.service.clone();
    if store.is_shared() && service.order_cache {
        // Other instances write to this database: an order kept in this process's memory
        // could be served after another instance changed it.
        tracing::info!("the order cache is off: the database is shared with other instances");
        service.order_cache = false;
    }
    Ok(OrderService::new(store, service))
}

/// Why `url` could not be opened, in one sentence: a SQLite file whose folder is missing says
/// so; otherwise the innermost cause (not the chain of wrappers around it, each repeating it).
fn open_failed(url: &str, error: &StoreError) -> AppError {
    let path = url
        .strip_prefix("sqlite://")
        .map(|rest| rest.split('?').next().unwrap_or(rest));
    let place = match path {
        Some(path) => path.to_owned(),
        // A PostgreSQL URL may carry a password: name its host and database only.
        None => url.rsplit('@').next().unwrap_or(url).to_owned(),
    };
    let missing = path
        .map(std::path::Path::new)
        .and_then(std::path::Path::parent)
        .filter(|dir| !dir.as_os_str().is_empty() && !dir.exists());
    let reason = match missing {
        Some(dir) => format!("its folder {} does not exist", dir.display()),
        None => {
            let mut cause: &dyn std::error::Error = error;
            while let Some(inner) = cause.source() {
                cause = inner;
            }
            cause.to_string()
        }
    };
    AppError::Open { place, reason }
}

/// The MCP server over `service`, sealing with `keys` (a random key per process without),
/// keeping its tasks in memory.
pub fn mcp_server(
    service: OrderService,
    keys: Option<&backchannel::StateKeys>,
) -> Result<OrderServer, AppError> {
    let builder = OrderServer::layer_builder();
    let builder = match keys {
        Some(keys) => builder.state_keys(keys.clone()),
        None => builder,
    };
    Ok(OrderServer::new(service, builder.build()?))
}

/// `builder` limited to the configured revision, if any, asking with the configured timeout.
fn limited(
    builder: backchannel::BackchannelBuilder,
    config: &Config,
) -> backchannel::BackchannelBuilder {
    let builder = match config.ask_timeout {
        Some(timeout) => builder.ask_timeout(timeout),
        None => builder,
    };
    match config.only_revision {
        Some(revision) => builder.only_revision(revision),
        None => builder,
    }
}

/// The MCP server as `serve` runs it: sealing with the configured keys, and keeping its tasks
/// in the order database, so they survive a restart and (on PostgreSQL) every instance
/// answers for them.
pub async fn durable_mcp_server(
    service: OrderService,
    config: &Config,
) -> Result<OrderServer, AppError> {
    let tasks = backchannel::tasks::SqlTaskStore::on(service.store().pool().clone()).await?;
    let mut builder = limited(
        OrderServer::layer_builder_for(!config.no_tasks).task_store(std::sync::Arc::new(tasks)),
        config,
    );
    if let Some(keys) = &config.state_keys {
        builder = builder.state_keys(keys.clone());
    }
    if config.sole_instance {
        builder = builder.sole_instance();
    }
    if let Some(lease) = config.task_lease {
        // Renew (and look for news) ten times per lease.
        builder = builder.task_lease(
            lease,
            (lease / 10).max(std::time::Duration::from_millis(20)),
        );
    }
    Ok(OrderServer::new(service, builder.build()?))
}

/// REST and MCP on one router: `/api/orders…` and `/mcp`; with `config.sign_in`, every route
/// but the health check needs a bearer token (401 with the protected-resource metadata's
/// address otherwise), and the principal it stands for is the caller's (sealed state, sessions
/// and tasks are bound to it).
pub fn router(
    service: OrderService,
    config: &Config,
    shutdown: CancellationToken,
) -> Result<axum::Router, AppError> {
    let mut builder = limited(OrderServer::layer_builder(), config);
    if let Some(keys) = &config.state_keys {
        builder = builder.state_keys(keys.clone());
    }
    let server = OrderServer::new(service.clone(), builder.build()?);
    Ok(router_with(server, service, config, shutdown))
}

/// [`router`] around a server built already.
fn router_with(
    server: OrderServer,
    service: OrderService,
    config: &Config,
    shutdown: CancellationToken,
) -> axum::Router {
    let health = crate::rest::health(service.clone());
    let mut http = config.http.clone();
    if config.only_revision == Some(backchannel::Revision::V2026_07_28) {
        // No 2025-11-25 sessions to keep: every request goes the stateless way.
        http.legacy_sessions = false;
    }
    let mut app =
        serve::router(move || server.clone(), &http, shutdown).merge(crate::rest::routes(service));
    if config.metrics {
        app = app.merge(serve::metrics_router());
    }
    let app = match &config.sign_in {
        Some(sign_in) => sign_in.clone().protect(app),
        None => app,
    };
    // The health check needs no token (a load balancer has none) and tells nothing else.
    app.merge(health)
}

/// Serve REST and MCP on `listener` until `shutdown` is cancelled.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    config: &Config,
    shutdown: CancellationToken,
) -> Result<(), AppError> {
    let addr: Option<SocketAddr> = listener.local_addr().ok();
    if let Some(addr) = addr
        && !addr.ip().is_loopback()
        && config
            .sign_in
            .as_ref()
            .is_none_or(|sign_in| sign_in.allows_anonymous())
    {
        return Err(AppError::Unauthenticated(addr));
    }
    let service = open_service(config).await?;
    backchannel::StateKeys::announce(config.state_keys.as_ref());
    let server = durable_mcp_server(service.clone(), config).await?;
    // Tasks whose instance stopped (this one, before a restart, or another) go on here.
    server.resume_tasks(shutdown.clone());
    if let Some(url) = config
        .database
        .as_deref()
        .filter(|url| sql_pool::is_postgres(url))
    {
        // Order updates raised here reach subscribers held by every other instance, and a
        // round answered here is spent for all of them.
        backchannel::postgres::share(url, server.layer()).await?;
        tracing::info!(
            "instances share this database: rounds answer once in all, and order updates reach \
             every instance's subscribers"
        );
    }
    let app = router_with(server, service, config, shutdown.clone());
    if let Some(addr) = addr {
        tracing::info!(
            "order-service listening on http://{addr} (MCP at /mcp, REST at /api/orders)"
        );
    }
    serve::http(listener, app, &config.http, async move {
        shutdown.cancelled().await
    })
    .await?;
    Ok(())
}

/// Serve one MCP session over stdin/stdout.
pub async fn serve_stdio(config: &Config) -> Result<(), AppError> {
    let service = open_service(config).await?;
    let server = durable_mcp_server(service, config).await?;
    let shutdown = CancellationToken::new();
    server.resume_tasks(shutdown.clone());
    serve::stdio(server).await?;
    shutdown.cancel();
    Ok(())
}

/// Re-seed the database.
pub async fn reset(config: &Config) -> Result<(), AppError> {
    open_service(config).await?.reset().await?;
    Ok(())
}

impl Config {
    /// The database's URL as the service opens it (the default file when none is given).
    pub fn database_url(&self) -> Result<String, AppError> {
        match &self.database {
            Some(url) => Ok(url.clone()),
            None => default_database(&self.data_dir),
        }
    }

    /// A SQLite file `name` beside the orders' database file (in the data folder when the
    /// orders are elsewhere, the folder made): where a companion keeps its own state, as the
    /// demo's desk does. `None` when the orders are in memory (nothing outlives the process).
    pub fn file_beside(&self, name: &str) -> Result<Option<String>, AppError> {
        let url = self.database_url()?;
        if sql_pool::is_memory(&url) {
            return Ok(None);
        }
        let beside = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .map(|path| std::path::Path::new(path.split('?').next().unwrap_or(path)))
            .and_then(std::path::Path::parent)
            .map(|dir| match dir.as_os_str().is_empty() {
                true => std::path::PathBuf::from("."),
                false => dir.to_path_buf(),
            });
        let dir = beside.unwrap_or_else(|| self.data_dir.clone());
        sql_pool::file_url(&dir, name)
            .map(Some)
            .map_err(|(dir, e)| AppError::DataDir(dir, e))
    }
}

/// The orders as a demo starts them: written from the seed again when `reset`; otherwise, when
/// they live in a file, what to say (a second run finds the first run's cancellations, and how
/// to start over, `start_over`).
pub async fn kept_or_reset(
    config: &Config,
    reset_them: bool,
    start_over: &str,
) -> Result<String, AppError> {
    if reset_them {
        reset(config).await?;
        return Ok("Orders: written from the seed again.".into());
    }
    let url = config.database_url()?;
    Ok(match url.strip_prefix("sqlite://") {
        Some(path) => format!(
            "Orders: kept between runs in {path} (what you cancel stays cancelled); \
             `{start_over}` starts again from the seed."
        ),
        None => String::new(),
    })
}
