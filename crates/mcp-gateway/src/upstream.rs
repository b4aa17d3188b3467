//! The upstream connections: one set declaring every question the gateway relays, and a
//! narrower set per kind of client opened on first use (an upstream sees what its caller can
//! answer); each asked for every log message; their tools learnt.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use backchannel_host::{Declared, Host, HostConfig, HostError};
use rmcp::ErrorData;
use rmcp::model::{LoggingLevel, SetLevelRequestParams};

use crate::catalog;
use crate::config::relayed_capabilities;
use crate::hold::{self, HeldOutcome};
use crate::switchboard::Switchboard;
use crate::tasks;

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
        let mut config = self.config.clone();
        for connection in config.connections.values_mut() {
            let declared = &mut connection.capabilities;
            declared.elicitation &= wanted.elicitation;
            declared.url_elicitation &= wanted.url_elicitation;
            declared.sampling &= wanted.sampling;
            declared.roots &= wanted.roots;
            declared.tasks &= wanted.tasks;
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
        let host = Arc::new(host);
        narrower.insert(wanted, host.clone());
        Ok(host)
    }
}
