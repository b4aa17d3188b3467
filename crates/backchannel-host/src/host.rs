//! All connections of a configuration ([`Host`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::HostConfig;
use crate::connection::Connection;
use crate::error::HostError;
use crate::handler::HostHandler;

/// All connections of a configuration.
pub struct Host<H: HostHandler> {
    pub(crate) connections: BTreeMap<String, Connection<H>>,
    /// Connections that could not be opened, with the reason (the host runs without them).
    pub unavailable: BTreeMap<String, String>,
}

impl<H: HostHandler> std::fmt::Debug for Host<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("connections", &self.connections.keys().collect::<Vec<_>>())
            .field("unavailable", &self.unavailable)
            .finish()
    }
}

impl<H: HostHandler> Host<H> {
    /// Open every connection of `config`; the ones that fail are listed in `unavailable`.
    pub async fn open(config: &HostConfig, handler: Arc<H>) -> Result<Host<H>, HostError> {
        config.check()?;
        let mut connections = BTreeMap::new();
        let mut unavailable = BTreeMap::new();
        for (name, connection) in &config.connections {
            match Connection::open(name, connection, config, handler.clone()).await {
                Ok(open) => {
                    connections.insert(name.clone(), open);
                }
                Err(error) => {
                    unavailable.insert(name.clone(), error.to_string());
                }
            }
        }
        Ok(Host {
            connections,
            unavailable,
        })
    }

    /// A connection by name.
    pub fn connection(&self, name: &str) -> Result<&Connection<H>, HostError> {
        self.connections
            .get(name)
            .ok_or_else(|| HostError::UnknownConnection(name.to_owned()))
    }

    /// The open connections.
    pub fn connections(&self) -> impl Iterator<Item = &Connection<H>> {
        self.connections.values()
    }

    /// Close every connection.
    pub async fn close(self) {
        for (_, connection) in self.connections {
            connection.close().await;
        }
    }
}
