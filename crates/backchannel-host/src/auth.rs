//! Signing in to HTTP servers that need OAuth 2.1 (feature `oauth`), on rmcp's `auth` module:
//! it discovers the protected resource's and the authorization server's metadata, registers
//! (pre-registered client, client ID metadata document, or dynamic registration), runs the
//! authorization code flow with PKCE and the `resource` parameter, checks `iss`, and refreshes
//! tokens. What the host adds: the per-connection settings ([`AuthConfig`]), handing the
//! authorization URL to the [`crate::HostHandler`] (a person signs in in a browser, and the
//! handler returns where the browser was sent back to), and a token file only the user can
//! read, with one entry per authorization server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, ClientCredentialsConfig,
    CredentialStore, InMemoryCredentialStore, OAuthState, StoredCredentials, WWWAuthenticateParams,
};
use serde::Deserialize;

use crate::config::AuthConfig;
pub use crate::credentials::SharedCredentials;
use crate::error::SignInError;

/// The default redirect: a loopback callback the host's handler listens on.
pub const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1:8976/callback";

/// How many times one connection signs in before it gives up (a server that keeps asking).
pub const MAX_SIGN_INS: usize = 3;

fn redirect_uri(config: &AuthConfig) -> &str {
    config
        .redirect_uri
        .as_deref()
        .unwrap_or(DEFAULT_REDIRECT_URI)
}

/// Where a connection's tokens are kept.
#[derive(Clone)]
pub(crate) enum TokenStore {
    Memory(InMemoryCredentialStore),
    File(Arc<TokenFile>),
    Shared(SharedCredentials),
}

impl TokenStore {
    pub(crate) fn for_config(config: &AuthConfig) -> Self {
        if let Some(shared) = &config.credentials {
            return TokenStore::Shared(shared.clone());
        }
        match &config.token_file {
            Some(path) => TokenStore::File(Arc::new(TokenFile {
                path: path.clone(),
                lock: tokio::sync::Mutex::new(()),
            })),
            None => TokenStore::Memory(InMemoryCredentialStore::new()),
        }
    }

    fn install(&self, manager: &mut AuthorizationManager) {
        match self {
            TokenStore::Memory(store) => manager.set_credential_store(store.clone()),
            TokenStore::File(file) => manager.set_credential_store(SharedFile(file.clone())),
            TokenStore::Shared(shared) => manager.set_credential_store(shared.clone()),
        }
    }
}

/// A JSON file of credentials by authorization server (issuer), created with mode 0600, and
/// which one is in use. Tokens never reach a log: `StoredCredentials` redacts them in `Debug`.
pub(crate) struct TokenFile {
    path: PathBuf,
    lock: tokio::sync::Mutex<()>,
}

#[derive(Default, serde::Serialize, Deserialize)]
struct TokenFileContent {
    /// The issuer whose credentials are in use.
    #[serde(default)]
    current: Option<String>,
    /// Credentials by issuer (`""` when the server named none).
    #[serde(default)]
    by_issuer: BTreeMap<String, StoredCredentials>,
}

/// The longest token file read.
const MAX_TOKEN_FILE: u64 = 1024 * 1024;

fn store_error(error: impl std::fmt::Display) -> AuthError {
    AuthError::InternalError(format!("the token file: {error}"))
}

impl TokenFile {
    fn read(&self) -> Result<TokenFileContent, AuthError> {
        match std::fs::metadata(&self.path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TokenFileContent::default());
            }
            Err(error) => return Err(store_error(error)),
            Ok(meta) if meta.len() > MAX_TOKEN_FILE => {
                return Err(store_error(format!(
                    "{} is larger than {MAX_TOKEN_FILE} bytes",
                    self.path.display()
                )));
            }
            Ok(_) => {}
        }
        let text = std::fs::read_to_string(&self.path).map_err(store_error)?;
        serde_json::from_str(&text).map_err(store_error)
    }

    fn write(&self, content: &TokenFileContent) -> Result<(), AuthError> {
        let text = serde_json::to_string_pretty(content).map_err(store_error)?;
        write_private(&self.path, text.as_bytes()).map_err(store_error)
    }
}

/// Write `bytes` to `path` readable and writable by the user only: a new file beside it
/// (mode 0600 from its creation), then renamed over it.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
}

/// The file store as rmcp's `CredentialStore`.
struct SharedFile(Arc<TokenFile>);

#[async_trait::async_trait]
impl CredentialStore for SharedFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let _held = self.0.lock.lock().await;
        let content = self.0.read()?;
        Ok(content
            .current
            .as_ref()
            .and_then(|issuer| content.by_issuer.get(issuer).cloned()))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let _held = self.0.lock.lock().await;
        let mut content = self.0.read()?;
        let issuer = credentials.issuer.clone().unwrap_or_default();
        content.by_issuer.insert(issuer.clone(), credentials);
        content.current = Some(issuer);
        self.0.write(&content)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let _held = self.0.lock.lock().await;
        let mut content = self.0.read()?;
        // Only the credentials in use go; another server's stay for when it is used again.
        if let Some(issuer) = content.current.take() {
            content.by_issuer.remove(&issuer);
        }
        self.0.write(&content)
    }
}

/// A manager for `url` holding whatever the store has (possibly nothing yet: requests then go
/// out without a token, and a 401 starts a sign-in).
pub(crate) async fn manager(
    url: &str,
    store: &TokenStore,
) -> Result<AuthorizationManager, AuthError> {
    let mut manager = AuthorizationManager::new(url).await?;
    store.install(&mut manager);
    // Loading fails harmlessly when the store is empty or names another server.
    let _ = manager.initialize_from_store().await;
    Ok(manager)
}

/// Sign in to `url` as the host itself by the client credentials grant (`config`'s
/// `client_id` and `client_secret`, its scopes, the server's URL as the resource): the token
/// goes to `store`.
pub(crate) async fn client_credentials(
    url: &str,
    config: &AuthConfig,
    store: &TokenStore,
) -> Result<AuthorizationManager, SignInError> {
    let (Some(client_id), Some(client_secret)) = (&config.client_id, &config.client_secret) else {
        return Err(SignInError::NoClientSecret);
    };
    let mut manager = AuthorizationManager::new(url).await?;
    store.install(&mut manager);
    let mut state = OAuthState::Unauthorized(manager);
    state
        .authenticate_client_credentials(ClientCredentialsConfig::ClientSecret {
            client_id: client_id.clone(),
            client_secret: client_secret.clone(),
            scopes: config.scopes.clone(),
            resource: Some(url.to_owned()),
        })
        .await?;
    state
        .into_authorization_manager()
        .ok_or(SignInError::Incomplete)
}

/// Sign in to the server at `url` as `config` says, for a program that takes the person
/// through it itself (a gateway asking each person for their own sign-in): the server's
/// authorization server discovered from its protected-resource metadata, the client
/// registered, then `authorize` is given the authorization URL and returns the URL the browser
/// came back to (the redirect URI with the code), and the code is exchanged. The tokens go to
/// the store `config` names ([`AuthConfig::credentials`], else its token file, else nowhere
/// lasting).
pub async fn sign_in_with<F, Fut>(
    url: &str,
    config: &AuthConfig,
    client_name: &str,
    authorize: F,
) -> Result<(), SignInError>
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = Result<String, crate::error::AuthorizeError>>,
{
    let store = TokenStore::for_config(config);
    sign_in(url, config, client_name, None, &store, authorize)
        .await
        .map(drop)
}

/// Sign in to `url` after its `challenge` (if any): start the authorization, let `authorize`
/// take the person through it (it returns the URL the browser came back to), then exchange
/// the code.
pub(crate) async fn sign_in<F, Fut>(
    url: &str,
    config: &AuthConfig,
    client_name: &str,
    challenge: Option<&str>,
    store: &TokenStore,
    authorize: F,
) -> Result<AuthorizationManager, SignInError>
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = Result<String, crate::error::AuthorizeError>>,
{
    let mut manager = AuthorizationManager::new(url).await?;
    store.install(&mut manager);
    let mut state = OAuthState::Unauthorized(manager);
    let mut request = AuthorizationRequest::new(redirect_uri(config)).with_client_name(client_name);
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    if !config.scopes.is_empty() {
        request = request.with_scopes(config.scopes.clone());
    }
    if let Some(id) = &config.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &config.client_secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    if let Some(document) = &config.client_metadata_url {
        request = request.with_client_metadata_url(document.clone());
    }
    state.start_authorization(request).await?;
    let authorization_url = state.get_authorization_url().await?;
    let came_back = authorize(authorization_url).await?;
    state.handle_callback_url(&came_back).await?;
    state
        .into_authorization_manager()
        .ok_or(SignInError::Incomplete)
}

/// How a connected connection signs in again when a request is refused: a new sign-in whose
/// manager replaces the one the transport uses (the session goes on).
pub(crate) struct Reauth {
    pub(crate) url: String,
    pub(crate) settings: AuthConfig,
    pub(crate) client_name: String,
    pub(crate) store: TokenStore,
    pub(crate) manager: Arc<tokio::sync::Mutex<AuthorizationManager>>,
}

impl Reauth {
    /// Sign in again after `challenge` (for example a 403 naming a scope the token lacks).
    pub(crate) async fn sign_in_again<H: crate::handler::HostHandler>(
        &self,
        connection: &str,
        challenge: &str,
        handler: &H,
    ) -> Result<(), SignInError> {
        tracing::info!(connection, "the server asks to sign in again");
        // Ask for what was granted before and what the challenge names (SEP-2350), so a step
        // up for one operation does not lose the scopes the others need.
        let mut scopes = self.manager.lock().await.get_current_scopes().await;
        let challenged = reqwest13::Url::parse(&self.url)
            .ok()
            .and_then(|base| WWWAuthenticateParams::parse(challenge, &base).scope)
            .unwrap_or_default();
        for scope in challenged
            .split_whitespace()
            .chain(self.settings.scopes.iter().map(String::as_str))
        {
            if !scopes.iter().any(|s| s == scope) {
                scopes.push(scope.to_owned());
            }
        }
        let settings = AuthConfig {
            scopes,
            ..self.settings.clone()
        };
        if settings.client_credentials {
            let fresh = client_credentials(&self.url, &settings, &self.store).await?;
            *self.manager.lock().await = fresh;
            return Ok(());
        }
        let fresh = sign_in(
            &self.url,
            &settings,
            &self.client_name,
            Some(challenge),
            &self.store,
            |url| handler.authorize(connection, url),
        )
        .await?;
        *self.manager.lock().await = fresh;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn credentials(client: &str, issuer: &str) -> StoredCredentials {
        StoredCredentials::new(client.into(), None, vec!["mcp".into()], Some(1))
            .with_issuer(Some(issuer.into()))
    }

    #[tokio::test]
    async fn the_token_file_is_the_users_alone_and_keeps_each_servers_credentials_apart() {
        let dir =
            std::env::temp_dir().join(format!("bc-tokens-{}", backchannel::testing::random_hex()));
        let path = dir.join("nested").join("tokens.json");
        let store = SharedFile(Arc::new(TokenFile {
            path: path.clone(),
            lock: tokio::sync::Mutex::new(()),
        }));
        assert!(
            store.load().await.unwrap().is_none(),
            "no file, no credentials"
        );

        store
            .save(credentials("first-client", "https://as-one"))
            .await
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "only the user may read the token file");
        assert_eq!(
            store.load().await.unwrap().unwrap().client_id,
            "first-client"
        );

        // Another authorization server: its own entry; the first one's stays, unused.
        store
            .save(credentials("second-client", "https://as-two"))
            .await
            .unwrap();
        let loaded = store.load().await.unwrap().unwrap();
        assert_eq!(
            (loaded.client_id.as_str(), loaded.issuer.as_deref()),
            ("second-client", Some("https://as-two"))
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("first-client") && text.contains("https://as-one"));
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );

        // Clearing drops only the credentials in use.
        store.clear().await.unwrap();
        assert!(store.load().await.unwrap().is_none());
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("first-client")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn credentials_print_without_their_tokens() {
        let token: rmcp::transport::auth::OAuthTokenResponse = serde_json::from_value(
            serde_json::json!({"access_token": "secret-token-123", "token_type": "Bearer",
                               "refresh_token": "secret-refresh-456"}),
        )
        .unwrap();
        let stored = StoredCredentials::new("c".into(), Some(token), vec![], Some(1));
        let printed = format!("{stored:?}");
        assert!(!printed.contains("secret-token-123"), "{printed}");
        assert!(!printed.contains("secret-refresh-456"), "{printed}");
        assert!(printed.contains("REDACTED"), "{printed}");
    }
}
