//! [`SharedCredentials`]: a connection's OAuth tokens kept where the program keeps them
//! (feature `oauth`).

use std::sync::Arc;

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};

/// A credential store of the program's own ([`crate::AuthConfig::credentials`]): one connection's
/// tokens kept wherever the program keeps them. Two are equal when they are the same store.
#[derive(Clone)]
pub struct SharedCredentials(pub Arc<dyn CredentialStore>);

impl std::fmt::Debug for SharedCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedCredentials(..)")
    }
}

impl PartialEq for SharedCredentials {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedCredentials {}

#[async_trait::async_trait]
impl CredentialStore for SharedCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.0.load().await
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.0.save(credentials).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.0.clear().await
    }
}
