//! Entry points the binary calls: open the database, then serve GraphQL and MCP over HTTP on
//! one port (sign-in by bearer token, loopback Host/Origin checks, a per-user rate limit on
//! `/mcp`), or MCP over stdio as a configured local user.

use std::path::PathBuf;

use backchannel::serve::{self, HttpOptions};
use tokio_util::sync::CancellationToken;

use crate::auth::{AuthError, TokenKeys};
use crate::graphql;
use crate::http::{self, RateLimits};
use crate::mcp::{McpConfig, MovieServer};
use crate::service::{Catalog, Viewer};
use crate::store::{Store, StoreError};

/// Errors starting the service.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The database could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The data folder could not be created.
    #[error("cannot create the data folder {0}: {1}")]
    DataDir(PathBuf, std::io::Error),
    /// The JWT secret is unusable.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The stdio user does not exist.
    #[error(
        "there is no account named '{0}'; pass --user with an existing username (the seed has \
         'user' and 'admin')"
    )]
    UnknownUser(String),
    /// The layer's configuration is invalid.
    #[error(transparent)]
    Layer(#[from] backchannel::BuildError),
    /// Serving failed.
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
    /// The link to the other instances could not start.
    #[error(transparent)]
    Instances(#[from] backchannel::postgres::PgError),
}

/// Settings of a running movie database. Its `Debug` output never shows the JWT secret.
#[derive(Clone)]
pub struct Config {
    /// `sqlite::memory:` or a SQLite URL; `None` for the default file.
    pub database: Option<String>,
    /// Where the default database lives (created if missing); `data` when empty.
    pub data_dir: PathBuf,
    /// The JWT secret (64 hex characters); `None` for a random key per process.
    pub jwt_secret: Option<String>,
    /// MCP tool settings.
    pub mcp: McpConfig,
    /// HTTP endpoint settings.
    pub http: HttpOptions,
    /// MCP calls allowed per minute per user (or address).
    pub mcp_calls_per_minute: u32,
    /// GraphQL requests allowed per minute per user (or address).
    pub graphql_calls_per_minute: u32,
    /// Serve Prometheus metrics at `/metrics` (`backchannel::serve::metrics_router`).
    pub metrics: bool,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("database", &self.database)
            .field("data_dir", &self.data_dir)
            .field(
                "jwt_secret",
                &self.jwt_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("mcp", &self.mcp)
            .field("http", &self.http)
            .field("mcp_calls_per_minute", &self.mcp_calls_per_minute)
            .field("graphql_calls_per_minute", &self.graphql_calls_per_minute)
            .field("metrics", &self.metrics)
            .finish()
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            database: None,
            data_dir: PathBuf::new(),
            jwt_secret: None,
            mcp: McpConfig::default(),
            http: HttpOptions::default(),
            mcp_calls_per_minute: 60,
            graphql_calls_per_minute: 600,
            metrics: false,
        }
    }
}

/// The default database: `moviedb.sqlite` in `dir` (`data` when empty), created if missing.
pub fn default_database(dir: &std::path::Path) -> Result<String, AppError> {
    sql_pool::file_url(dir, "moviedb.sqlite").map_err(|(dir, e)| AppError::DataDir(dir, e))
}

/// Open the database (creating, migrating and seeding it on first use) and build the
/// operations over it.
pub async fn open_catalog(config: &Config) -> Result<Catalog, AppError> {
    let url = match &config.database {
        Some(url) => url.clone(),
        None => default_database(&config.data_dir)?,
    };
    let store = Store::open(&url).await?;
    let keys = match &config.jwt_secret {
        Some(secret) => TokenKeys::from_hex(secret)?,
        None => {
            tracing::info!(
                "no JWT secret configured (MOVIEDB_JWT_SECRET): tokens are valid for 24 hours, \
                 but are signed with a key made at start, so they stop working when this \
                 process stops"
            );
            TokenKeys::random()
        }
    };
    Ok(Catalog::new(store, keys))
}

/// The MCP server over `catalog`.
pub fn mcp_server(catalog: &Catalog, config: &McpConfig) -> Result<MovieServer, AppError> {
    let layer = MovieServer::layer_builder(config).build()?;
    Ok(
        MovieServer::new(graphql::schema(catalog.clone()), layer, config.clone())
            .sharing(catalog.store().shared_state()),
    )
}

/// GraphQL at `/graphql` (GraphiQL on GET) and MCP at `/mcp`, on one router.
pub fn router(
    catalog: Catalog,
    config: &Config,
    shutdown: CancellationToken,
) -> Result<axum::Router, AppError> {
    let server = mcp_server(&catalog, &config.mcp)?;
    Ok(router_with(catalog, server, config, shutdown))
}

fn router_with(
    catalog: Catalog,
    server: MovieServer,
    config: &Config,
    shutdown: CancellationToken,
) -> axum::Router {
    let limits = RateLimits {
        mcp_per_minute: config.mcp_calls_per_minute,
        graphql_per_minute: config.graphql_calls_per_minute,
    };
    http::router(
        catalog,
        server,
        &config.http,
        limits,
        http::WithMetrics(config.metrics),
        shutdown,
    )
}

/// Serve GraphQL and MCP on `listener` until `shutdown` is cancelled.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    config: &Config,
    shutdown: CancellationToken,
) -> Result<(), AppError> {
    let catalog = open_catalog(config).await?;
    backchannel::StateKeys::announce(config.mcp.state_keys.as_ref());
    let server = mcp_server(&catalog, &config.mcp)?;
    if let Some(url) = config
        .database
        .as_deref()
        .filter(|url| sql_pool::is_postgres(url))
    {
        // A round answered here is spent for every instance on this database.
        backchannel::postgres::share(url, server.layer()).await?;
        tracing::info!("instances share this database: each round answers once in all");
    }
    let app = router_with(catalog, server, config, shutdown.clone());
    if let Ok(addr) = listener.local_addr() {
        tracing::info!("moviedb listening on http://{addr} (GraphQL at /graphql, MCP at /mcp)");
    }
    serve::http(listener, app, &config.http, async move {
        shutdown.cancelled().await
    })
    .await?;
    Ok(())
}

/// Serve one MCP session over stdin/stdout, acting as the account `user`.
pub async fn serve_stdio(config: &Config, user: &str) -> Result<(), AppError> {
    let catalog = open_catalog(config).await?;
    let account = catalog
        .store()
        .user_by_name(user)
        .await?
        .ok_or_else(|| AppError::UnknownUser(user.to_owned()))?;
    let mcp = McpConfig {
        fixed_user: Some(Viewer {
            username: account.username,
            role: account.role,
        }),
        ..config.mcp.clone()
    };
    serve::stdio(mcp_server(&catalog, &mcp)?).await?;
    Ok(())
}
