//! A connection's roots while it is open: listed, added and removed, the server told of each
//! change (`notifications/roots/list_changed`), so it asks for them again.

use std::path::Path;

use rmcp::model::Root;

use crate::config::{file_uri, trusted_root};
use crate::connection::Connection;
use crate::error::HostError;
use crate::handler::HostHandler;

impl<H: HostHandler> Connection<H> {
    /// The roots this connection declares now.
    pub fn roots(&self) -> Vec<Root> {
        self.roots
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The folders this connection declares as roots now, in order (those whose `file:` URI
    /// names a folder of this machine).
    pub fn root_folders(&self) -> Vec<std::path::PathBuf> {
        let roots = serde_json::to_value(self.roots()).unwrap_or_default();
        roots
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|root| root.get("uri")?.as_str().map(str::to_owned))
            .filter_map(|uri| reqwest13::Url::parse(&uri).ok()?.to_file_path().ok())
            .collect()
    }

    /// A count of the times the server has listed this connection's roots, which changes at
    /// each listing: subscribe before [`Connection::add_root`] or
    /// [`Connection::remove_root`] and wait for a change to know the server has the new list.
    pub fn roots_listed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.service.service().routes.roots_listed.subscribe()
    }

    /// Add the folder `path` (absolute, inside one of the host's trusted folders) as a root
    /// named `name` (its folder's name when `None`), and tell the server. `false` when it was
    /// a root already (nothing changes then).
    pub async fn add_root(&self, path: &Path, name: Option<&str>) -> Result<bool, HostError> {
        let path = trusted_root(&self.trusted_folders, &self.name, path)?;
        let uri = file_uri(&path);
        {
            let mut roots = self
                .roots
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if roots.iter().any(|root| root.uri == uri) {
                return Ok(false);
            }
            let mut root = Root::new(uri);
            root.name = name
                .map(str::to_owned)
                .or_else(|| path.file_name().map(|n| n.to_string_lossy().into_owned()));
            roots.push(root);
        }
        self.roots_changed().await;
        Ok(true)
    }

    /// Stop declaring the folder `path` as a root, and tell the server. `false` when it was
    /// not one (nothing changes then); a path that could not be a root is refused as
    /// [`Connection::add_root`] refuses it.
    pub async fn remove_root(&self, path: &Path) -> Result<bool, HostError> {
        let uri = file_uri(&trusted_root(&self.trusted_folders, &self.name, path)?);
        let removed = {
            let mut roots = self
                .roots
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let before = roots.len();
            roots.retain(|root| root.uri != uri);
            roots.len() != before
        };
        if removed {
            self.roots_changed().await;
        }
        Ok(removed)
    }

    /// Tell the server the roots changed, when this connection declares roots.
    async fn roots_changed(&self) {
        if !self.config.capabilities.roots {
            return;
        }
        if let Err(error) = self.service.peer().notify_roots_list_changed().await {
            tracing::warn!(connection = %self.name, %error, "the server could not be told the roots changed");
        }
    }
}
