//! The upstream connections: one set declaring every question the gateway relays, and a
//! narrower set per kind of client opened on first use (an upstream sees what its caller can
//! answer); each asked for every log message; their tools learnt.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use backchannel_host::{Declared, Host, HostConfig, HostError};
use rmcp::ErrorData;
use rmcp::model::{LoggingLevel, SetLevelRequestParams};

use backchannel::Ctx;
use backchannel_host::Transport;

use crate::catalog;
use crate::config::relayed_capabilities;
use crate::hold::{self, HeldOutcome};
use crate::personal::{NotSignedIn, Personal};
use crate::switchboard::Switchboard;
use crate::tasks;

/// Tools learnt from the per-person upstreams (through a person's connection), by upstream.
pub(crate) type PersonalTools = std::sync::RwLock<BTreeMap<String, Vec<rmcp::model::Tool>>>;

pub(crate) struct Upstreams {
    /// The upstream connections declaring every question the gateway can switchboard: for the
    /// lists, and for the calls of clients that can answer every kind.
    pub(crate) host: Arc<Host<Switchboard>>,
    /// The same upstreams again, opened the first time a client that can answer fewer kinds
    /// of question calls a tool, declaring only those: an upstream sees what its caller can do
    /// (a 2025-11-25 upstream reads it once per session).
    pub(crate) narrower: tokio::sync::Mutex<HashMap<Declared, Arc<Host<Switchboard>>>>,
    /// Each connection's tool prefix ("" for none).
    pub(crate) prefixes: BTreeMap<String, String>,
    pub(crate) config: HostConfig,
    pub(crate) switchboard: Arc<Switchboard>,
    pub(crate) catalog: catalog::Catalog,
    /// The downstream ids of the upstreams' tasks.
    pub(crate) task_ids: tasks::TaskIds,
    /// 2025-11-25 upstream calls held between a 2026-07-28 client's rounds.
    pub(crate) holds: hold::Holds<HeldOutcome>,
    /// Rounds of calls another instance holds, passed to it (see `hop`).
    pub(crate) hop: crate::hop::Hop,
    /// The per-person upstreams and their people's tokens; `None` when there are none.
    pub(crate) personal: Option<Arc<Personal>>,
    /// The per-person upstreams' tools, as learnt through a person's connection.
    pub(crate) personal_tools: PersonalTools,
}

/// Open the upstream connections of `config`, each asked for every log message; an upstream
/// that cannot be reached is left out (logged).
pub(crate) async fn open_upstreams(
    config: &HostConfig,
    switchboard: &Arc<Switchboard>,
) -> Result<Host<Switchboard>, HostError> {
    let host = Host::open(config, switchboard.clone()).await?;
    for (name, why) in &host.unavailable {
        tracing::warn!(upstream = %name, %why, "upstream left out: it cannot be reached");
    }
    for connection in host.connections() {
        ask_for_every_log_message(connection).await;
    }
    Ok(host)
}

/// A 2025-11-25 upstream logs at the level its session set: the gateway asks for every
/// message and passes on what each downstream client asked for. (A 2026-07-28 upstream is
/// asked per call.)
pub(crate) async fn ask_for_every_log_message(
    connection: &backchannel_host::Connection<Switchboard>,
) {
    let client = connection.client();
    let logs = client
        .peer_info()
        .is_some_and(|info| info.capabilities.logging.is_some());
    let sessions = connection.has_sessions();
    if logs && sessions {
        let level = SetLevelRequestParams::new(LoggingLevel::Debug);
        if let Err(error) = client.set_level(level).await {
            tracing::warn!(upstream = %connection.name(), %error, "the upstream refused logging/setLevel; its log messages may not come through");
        }
    }
}

/// List every connection's tools once, so its HTTP transport knows their schemas: a
/// 2026-07-28 call sends the arguments a schema marks `x-mcp-header` as `Mcp-Param-*`
/// headers, which rmcp's client takes from the tool list it saw on that connection.
pub(crate) async fn learn_tools(host: &Host<Switchboard>) {
    for connection in host.connections() {
        if let Err(error) = connection.tools().await {
            tracing::warn!(upstream = %connection.name(), %error, "the upstream's tools could not be listed");
        }
    }
}

impl Upstreams {
    /// The upstream connections declaring `wanted` (the questions a caller can answer, see
    /// `answerable`), opened once per such set.
    pub(crate) async fn declaring(
        &self,
        wanted: Declared,
    ) -> Result<Arc<Host<Switchboard>>, ErrorData> {
        if wanted == relayed_capabilities() {
            return Ok(self.host.clone());
        }
        let mut narrower = self.narrower.lock().await;
        if let Some(host) = narrower.get(&wanted) {
            return Ok(host.clone());
        }
        // Opened once per set: boxed, so that the future of every call, which holds this
        // one's, is not as large as opening the connections is.
        let host = Box::pin(self.open_declaring(wanted)).await?;
        narrower.insert(wanted, host.clone());
        Ok(host)
    }

    /// The upstream connections opened anew declaring no more than `wanted`.
    async fn open_declaring(&self, wanted: Declared) -> Result<Arc<Host<Switchboard>>, ErrorData> {
        let mut config = self.config.clone();
        for connection in config.connections.values_mut() {
            connection.capabilities = connection.capabilities.narrowed_to(wanted);
        }
        tracing::debug!(
            ?wanted,
            "opening the upstreams for clients that answer fewer kinds of question"
        );
        let host = open_upstreams(&config, &self.switchboard)
            .await
            .map_err(|error| {
                ErrorData::internal_error(
                    format!("the upstreams could not be reached: {error}"),
                    None,
                )
            })?;
        learn_tools(&host).await;
        Ok(Arc::new(host))
    }
}

impl Upstreams {
    /// The connections a call of `caller` to `upstream` goes through: the shared ones, or, for
    /// a per-person upstream, the caller's own, signed in with their tokens (asked for first
    /// when they hold none, and again when the upstream refuses them).
    pub(crate) async fn for_call(
        &self,
        ctx: &Ctx,
        (owner, declared): (&str, Declared),
        upstream: &str,
    ) -> Result<Arc<Host<Switchboard>>, NotSignedIn> {
        let Some(personal) = self.personal.as_ref().filter(|p| p.covers(upstream)) else {
            return Ok(self.declaring(declared).await?);
        };
        if let Some(host) = personal.host(owner, declared, upstream).await {
            return Ok(host);
        }
        let (url, configured) = self.personal_target(upstream)?;
        let auth = personal
            .auth_for(owner, upstream, configured.as_ref())
            .map_err(NotSignedIn::Tool)?;
        let mut refused = String::new();
        for _ in 0..2 {
            if !personal.signed_in(owner, upstream).await {
                personal
                    .ask(ctx, owner, upstream, &url, auth.clone())
                    .await?;
            }
            // Boxed, as in `declaring`: opening a connection is rare and its future large.
            match Box::pin(self.open_personal(personal, (owner, declared), upstream, &auth)).await {
                Ok(host) => return Ok(host),
                Err(why) => {
                    // Tokens the upstream refuses (and refresh could not mend) are dropped: the
                    // person is asked again.
                    tracing::info!(%upstream, %why, "an upstream refused a person's tokens");
                    personal.forget(owner, upstream).await;
                    refused = why;
                }
            }
        }
        Err(NotSignedIn::Tool(format!(
            "The server {upstream:?} refused your sign-in ({refused}); nothing was sent to it."
        )))
    }

    /// The per-person connections of the owner of a task (never asking: a task's person
    /// signed in when it started).
    pub(crate) async fn for_task(
        &self,
        owner: &str,
        declared: Declared,
        upstream: &str,
    ) -> Result<Arc<Host<Switchboard>>, ErrorData> {
        let Some(personal) = self.personal.as_ref().filter(|p| p.covers(upstream)) else {
            return self.declaring(declared).await;
        };
        if let Some(host) = personal.host(owner, declared, upstream).await {
            return Ok(host);
        }
        let refused = |why: String| ErrorData::internal_error(why, None);
        let (_, configured) = self.personal_target(upstream).map_err(|e| match e {
            NotSignedIn::Tool(why) => refused(why),
            NotSignedIn::Protocol(error) => error,
        })?;
        let auth = personal
            .auth_for(owner, upstream, configured.as_ref())
            .map_err(refused)?;
        Box::pin(self.open_personal(personal, (owner, declared), upstream, &auth))
            .await
            .map_err(|why| refused(format!("{upstream:?} refused your sign-in: {why}")))
    }

    /// The URL and configured sign-in settings of the per-person `upstream`.
    fn personal_target(
        &self,
        upstream: &str,
    ) -> Result<(String, Option<backchannel_host::AuthConfig>), NotSignedIn> {
        match self.config.connections.get(upstream) {
            Some(connection) => match &connection.transport {
                Transport::Http { url, .. } => Ok((url.clone(), connection.auth.clone())),
                Transport::Stdio { .. } => Err(NotSignedIn::Tool(format!(
                    "{upstream:?} is no HTTP upstream"
                ))),
            },
            None => Err(NotSignedIn::Tool(format!("{upstream:?} is no upstream"))),
        }
    }

    /// Open `caller`'s own connection to `upstream` with `auth` (their tokens), kept for their
    /// next calls; the upstream's tools learnt the first time.
    async fn open_personal(
        &self,
        personal: &Personal,
        (owner, wanted): (&str, Declared),
        upstream: &str,
        auth: &backchannel_host::AuthConfig,
    ) -> Result<Arc<Host<Switchboard>>, String> {
        let mut config = self.config.clone();
        config.connections.retain(|name, _| name == upstream);
        for connection in config.connections.values_mut() {
            connection.capabilities = connection.capabilities.narrowed_to(wanted);
            connection.auth = Some(auth.clone());
        }
        let host = open_upstreams(&config, &self.switchboard)
            .await
            .map_err(|error| error.to_string())?;
        if let Some(why) = host.unavailable.get(upstream) {
            return Err(why.clone());
        }
        learn_tools(&host).await;
        let host = Arc::new(host);
        personal
            .keep_host(owner, wanted, upstream, host.clone())
            .await;
        let unknown = !self
            .personal_tools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(upstream);
        if unknown {
            // The stand-in gives way to the upstream's tools (the sign-in tool offers them).
            self.learn_personal_tools(upstream, &host).await;
        }
        Ok(host)
    }

    /// Learn `upstream`'s tools through `host`; whether they could be listed.
    async fn learn_personal_tools(&self, upstream: &str, host: &Host<Switchboard>) -> bool {
        let Ok(connection) = host.connection(upstream) else {
            return false;
        };
        match connection.tools().await {
            Ok(tools) => {
                self.personal_tools
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(upstream.to_owned(), tools);
                true
            }
            Err(error) => {
                tracing::warn!(%upstream, %error, "the upstream's tools could not be listed");
                false
            }
        }
    }

    /// List the per-person upstreams' tools again through any person's open connection.
    pub(crate) async fn relearn_personal_tools(&self) {
        let Some(personal) = &self.personal else {
            return;
        };
        for upstream in personal.upstreams() {
            if let Some(host) = personal.any_host(upstream).await {
                self.learn_personal_tools(upstream, &host).await;
            }
        }
    }
}
