//! The order service as an OAuth 2.1 resource server (`order-service serve --oauth-issuer URL`):
//! it names its authorization server in protected-resource metadata (RFC 9728), answers a
//! request without a valid bearer token with 401 and a `WWW-Authenticate` challenge that points
//! there, and checks tokens with the authorization server's introspection endpoint (RFC 7662),
//! keeping an answer for at most a minute. The principal of a request is the token's `sub`, or
//! its `client_id` when it has none.
//!
//! The resource a token must be issued for is configuration (`--resource URL`, by default the
//! address the service listens on), never read from a request: a token whose audience does not
//! name this resource, or that names no audience at all, is refused, whatever `Host` the
//! request carries (a server sharing the authorization server cannot replay its callers'
//! tokens here).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

/// The largest metadata or introspection answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How long an introspection answer is kept (never past the token's expiry).
const KEEP_ANSWER: Duration = Duration::from_secs(60);

/// The most token answers kept; beyond it the oldest are forgotten.
const MAX_KEPT: usize = 1024;

/// How long a refused token is remembered as refused: the same bad token sent again within it
/// costs no introspection call.
const KEEP_REFUSAL: Duration = Duration::from_secs(10);

/// Why the authorization server cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// Its metadata could not be read.
    #[error("cannot read the authorization server's metadata at {url}: {reason}")]
    Metadata {
        /// Where it was looked for.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The resource URL is not an absolute `http(s)` URL.
    #[error("the resource {0:?} is not an absolute http:// or https:// URL")]
    Resource(String),
    /// It offers no way to check tokens.
    #[error(
        "the authorization server {0} names no introspection endpoint (RFC 7662), so its tokens \
         cannot be checked"
    )]
    NoIntrospection(String),
}

/// The authorization server this service trusts, the resource its tokens must be for, and the
/// tokens it has vouched for (or refused) lately.
pub struct OAuthResource {
    issuer: String,
    resource: String,
    introspection: reqwest::Url,
    client: reqwest::Client,
    /// Principal (`None`: refused) and how long the answer holds, by token.
    vouched: Mutex<HashMap<String, (Option<String>, Instant)>>,
}

impl std::fmt::Debug for OAuthResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthResource")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("introspection", &self.introspection.as_str())
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Metadata {
    introspection_endpoint: Option<String>,
}

#[derive(Deserialize)]
struct Introspection {
    #[serde(default)]
    active: bool,
    exp: Option<u64>,
    sub: Option<String>,
    client_id: Option<String>,
    aud: Option<Value>,
}

async fn read_capped(response: reqwest::Response) -> Result<Vec<u8>, String> {
    if response
        .content_length()
        .is_some_and(|length| length > MAX_ANSWER_BYTES as u64)
    {
        return Err(format!(
            "the answer is larger than {MAX_ANSWER_BYTES} bytes"
        ));
    }
    let mut response = response;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(format!(
                "the answer is larger than {MAX_ANSWER_BYTES} bytes"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl OAuthResource {
    /// Trust the authorization server `issuer` for tokens issued for `resource` (this service's
    /// MCP URL, from configuration), checking them at `introspection` when given, else at the
    /// introspection endpoint its metadata names (RFC 8414, the well-known path inserted
    /// before the issuer's own path).
    pub async fn discover(
        issuer: &str,
        introspection: Option<&str>,
        resource: &str,
    ) -> Result<OAuthResource, OAuthError> {
        let fail = |url: &str, reason: String| OAuthError::Metadata {
            url: url.to_owned(),
            reason,
        };
        let resource = checked_resource(resource)?;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| fail(issuer, e.to_string()))?;
        let endpoint = match introspection {
            Some(endpoint) => endpoint.to_owned(),
            None => Self::introspection_endpoint(&client, issuer).await?,
        };
        let introspection =
            reqwest::Url::parse(&endpoint).map_err(|e| fail(&endpoint, e.to_string()))?;
        Ok(OAuthResource {
            issuer: issuer.to_owned(),
            resource,
            introspection,
            client,
            vouched: Mutex::new(HashMap::new()),
        })
    }

    /// The introspection endpoint the metadata of `issuer` names.
    async fn introspection_endpoint(
        client: &reqwest::Client,
        issuer: &str,
    ) -> Result<String, OAuthError> {
        let fail = |url: &str, reason: String| OAuthError::Metadata {
            url: url.to_owned(),
            reason,
        };
        let mut metadata_url =
            reqwest::Url::parse(issuer).map_err(|e| fail(issuer, e.to_string()))?;
        let path = metadata_url.path().trim_end_matches('/').to_owned();
        metadata_url.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
        metadata_url.set_query(None);
        let shown = metadata_url.to_string();
        let response = client
            .get(metadata_url)
            .send()
            .await
            .map_err(|e| fail(&shown, e.to_string()))?;
        if !response.status().is_success() {
            return Err(fail(&shown, format!("it answered {}", response.status())));
        }
        let body = read_capped(response).await.map_err(|e| fail(&shown, e))?;
        let metadata: Metadata =
            serde_json::from_slice(&body).map_err(|e| fail(&shown, e.to_string()))?;
        metadata
            .introspection_endpoint
            .ok_or_else(|| OAuthError::NoIntrospection(issuer.to_owned()))
    }

    /// The resource tokens must be issued for (this service's MCP URL).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Where the protected-resource metadata of this resource is (RFC 9728: the well-known
    /// path inserted between the resource's host and its path).
    pub fn metadata_url(&self) -> String {
        match reqwest::Url::parse(&self.resource) {
            Ok(mut url) => {
                let path = url.path().trim_end_matches('/').to_owned();
                url.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
                url.set_query(None);
                url.to_string()
            }
            Err(_) => self.resource.clone(),
        }
    }

    /// The protected-resource metadata (RFC 9728) of this resource.
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "order-service",
        })
    }

    /// Who `token` stands for, if the authorization server vouches for it for this resource:
    /// active, unexpired, and with an audience (`aud`) that names this resource.
    pub async fn principal(&self, token: &str) -> Option<String> {
        let now = Instant::now();
        if let Some((principal, until)) = self.lock().get(token)
            && *until > now
        {
            return principal.clone();
        }
        let answer = match self.introspect(token).await {
            Ok(answer) => answer,
            Err(reason) => {
                // Not remembered: the authorization server may answer next time.
                tracing::warn!(%reason, "the authorization server could not check a token");
                return None;
            }
        };
        let unix_now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let vouched = self.vouched_for(&answer, unix_now);
        let (principal, keep) = match vouched {
            Some((principal, expires)) => (
                Some(principal),
                Duration::from_secs(expires - unix_now).min(KEEP_ANSWER),
            ),
            None => (None, KEEP_REFUSAL),
        };
        let mut kept = self.lock();
        if kept.len() >= MAX_KEPT {
            kept.retain(|_, (_, until)| *until > now);
            if kept.len() >= MAX_KEPT {
                kept.clear();
            }
        }
        kept.insert(token.to_owned(), (principal.clone(), now + keep));
        principal
    }

    /// The principal an introspection answer vouches for, and until when (unix seconds): only
    /// an active, unexpired token issued for this resource.
    fn vouched_for(&self, answer: &Introspection, unix_now: u64) -> Option<(String, u64)> {
        let for_us = match &answer.aud {
            // A token that names no audience could be meant for any server: refused.
            None => false,
            Some(Value::String(aud)) => same_resource(aud, &self.resource),
            Some(Value::Array(auds)) => auds
                .iter()
                .filter_map(Value::as_str)
                .any(|aud| same_resource(aud, &self.resource)),
            Some(_) => false,
        };
        let expires = answer.exp.filter(|exp| *exp > unix_now)?;
        if !answer.active || !for_us {
            return None;
        }
        let principal = answer.sub.clone().or_else(|| answer.client_id.clone())?;
        Some((principal, expires))
    }

    async fn introspect(&self, token: &str) -> Result<Introspection, String> {
        let response = self
            .client
            .post(self.introspection.clone())
            .form(&[("token", token)])
            .send()
            .await
            .map_err(|e| e.to_string())?;
        // An inactive token may come back as 401 with `active: false`; read it either way.
        let body = read_capped(response).await?;
        serde_json::from_slice(&body).map_err(|e| e.to_string())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Option<String>, Instant)>> {
        self.vouched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether an audience names this resource (a trailing slash aside).
fn same_resource(aud: &str, resource: &str) -> bool {
    aud.trim_end_matches('/') == resource.trim_end_matches('/')
}

/// `resource` if it is an absolute `http(s)` URL with a host and no fragment.
fn checked_resource(resource: &str) -> Result<String, OAuthError> {
    match reqwest::Url::parse(resource) {
        Ok(url)
            if matches!(url.scheme(), "http" | "https")
                && url.host().is_some()
                && url.fragment().is_none() =>
        {
            Ok(resource.to_owned())
        }
        _ => Err(OAuthError::Resource(resource.to_owned())),
    }
}
