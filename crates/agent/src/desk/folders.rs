//! Folders of notes added and removed while the desk runs (issue 72): each is a root of the
//! notes' filesystem server, which is told of every change (`notifications/roots/list_changed`)
//! and asks for the roots again; the desk then searches its notes too. Only inside the
//! knowledge base's trusted folders ([`super::Knowledge::trusted`]); the notes' own folder
//! stays.

use std::path::{Path, PathBuf};

use super::Desk;

/// The notes' connection (the current notes' filesystem server).
const NOTES: &str = "knowledge-base";

impl Desk {
    /// The folders of notes the desk searches now: the notes' own first.
    pub async fn notes_folders(&self) -> Result<Vec<PathBuf>, String> {
        let host = self.host.host().await?;
        let notes = host.connection(NOTES).map_err(|_| not_here())?;
        Ok(notes.root_folders())
    }

    /// Add the folder `path` (absolute, inside a trusted folder) to the notes: the filesystem
    /// server is told, and reads it from its next call. `false` when it was one already.
    pub async fn add_notes_folder(&self, path: &Path) -> Result<bool, String> {
        let host = self.host.host().await?;
        let notes = host.connection(NOTES).map_err(|_| not_here())?;
        if !path.is_dir() {
            return Err(format!("{} is not a folder here", path.display()));
        }
        let listed = notes.roots_listed();
        let added = notes
            .add_root(path, None)
            .await
            .map_err(|e| e.to_string())?;
        if added {
            taken(listed).await;
        }
        Ok(added)
    }

    /// Remove a folder the person added (the notes' own folder stays). `false` when it was not
    /// one.
    pub async fn remove_notes_folder(&self, path: &Path) -> Result<bool, String> {
        let own = self.config.knowledge.as_ref().map(|k| k.current.as_path());
        if own.is_some_and(|own| own == path) {
            return Err("the desk's own notes stay; only a folder you added can go".into());
        }
        let host = self.host.host().await?;
        let notes = host.connection(NOTES).map_err(|_| not_here())?;
        let listed = notes.roots_listed();
        let removed = notes.remove_root(path).await.map_err(|e| e.to_string())?;
        if removed {
            taken(listed).await;
        }
        Ok(removed)
    }
}

/// How long the notes' server is given to ask for the changed roots.
const ROOTS_TAKEN_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Wait until the notes' server has listed the roots again (it was told they changed), so the
/// next search reads what it now allows; a server that does not ask in time is logged.
async fn taken(mut listed: tokio::sync::watch::Receiver<u64>) {
    if tokio::time::timeout(ROOTS_TAKEN_WITHIN, listed.changed())
        .await
        .is_err()
    {
        tracing::warn!("the notes' server did not ask for the changed folders");
    }
}

fn not_here() -> String {
    "this desk reads no notes of its own (it runs without a knowledge base, or reaches it \
     through the order service)"
        .to_owned()
}
