//! The order service as an OAuth 2.1 resource server (`order-service serve --oauth-issuer URL`):
//! it names its authorization server in protected-resource metadata (RFC 9728), answers a
//! request without a valid bearer token with 401 and a `WWW-Authenticate` challenge that points
//! there, and checks tokens with the authorization server's introspection endpoint (RFC 7662),
//! keeping an answer for at most a minute. The principal of a request is the token's `sub`, or
//! its `client_id` when it has none.

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
    /// It offers no way to check tokens.
    #[error(
        "the authorization server {0} names no introspection endpoint (RFC 7662), so its tokens \
         cannot be checked"
    )]
    NoIntrospection(String),
}

/// The authorization server this service trusts, and the tokens it has vouched for lately.
pub struct OAuthResource {
    issuer: String,
    introspection: reqwest::Url,
    client: reqwest::Client,
    /// Principal and how long the answer holds, by token.
    vouched: Mutex<HashMap<String, (String, Instant)>>,
}

impl std::fmt::Debug for OAuthResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthResource")
            .field("issuer", &self.issuer)
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
    /// Trust the authorization server `issuer`, checking tokens at `introspection` when given,
    /// else at the introspection endpoint its metadata names (RFC 8414, the well-known path
    /// inserted before the issuer's own path).
    pub async fn discover(
        issuer: &str,
        introspection: Option<&str>,
    ) -> Result<OAuthResource, OAuthError> {
        let fail = |url: &str, reason: String| OAuthError::Metadata {
            url: url.to_owned(),
            reason,
        };
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

    /// The protected-resource metadata of `resource` (this service's MCP URL).
    pub fn metadata(&self, resource: &str) -> Value {
        json!({
            "resource": resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "order-service",
        })
    }

    /// Who `token` stands for, if the authorization server vouches for it for `resource`.
    pub async fn principal(&self, token: &str, resource: &str) -> Option<String> {
        let now = Instant::now();
        if let Some((principal, until)) = self.lock().get(token)
            && *until > now
        {
            return Some(principal.clone());
        }
        let answer = match self.introspect(token).await {
            Ok(answer) => answer,
            Err(reason) => {
                tracing::warn!(%reason, "the authorization server could not check a token");
                return None;
            }
        };
        let unix_now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let for_us = match &answer.aud {
            None => true,
            Some(Value::String(aud)) => same_resource(aud, resource),
            Some(Value::Array(auds)) => auds
                .iter()
                .filter_map(Value::as_str)
                .any(|aud| same_resource(aud, resource)),
            Some(_) => false,
        };
        let expires = answer.exp.filter(|exp| *exp > unix_now)?;
        if !answer.active || !for_us {
            return None;
        }
        let principal = answer.sub.or(answer.client_id)?;
        let left = Duration::from_secs(expires - unix_now);
        let mut vouched = self.lock();
        if vouched.len() >= MAX_KEPT {
            vouched.retain(|_, (_, until)| *until > now);
            if vouched.len() >= MAX_KEPT {
                vouched.clear();
            }
        }
        vouched.insert(
            token.to_owned(),
            (principal.clone(), now + left.min(KEEP_ANSWER)),
        );
        Some(principal)
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        self.vouched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether an audience names this resource (a trailing slash aside).
fn same_resource(aud: &str, resource: &str) -> bool {
    aud.trim_end_matches('/') == resource.trim_end_matches('/')
}
