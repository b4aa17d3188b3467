//! Tokens checked with an OAuth authorization server's introspection endpoint (RFC 7662),
//! an answer kept for at most a minute (a refusal for ten seconds). A token is checked only when
//! its audience (`aud`) names the resource the server was configured with: a token issued for
//! another server, or for none in particular, is refused.
//!
//! Who a token stands for is typed by kind, so a client can never pass for a person: a token
//! with a `sub` stands for that subject (a person); one without stands for its client, named
//! [`CLIENT_PRINCIPAL`] and its `client_id` (`client:desk-7`), a name no subject can take (a
//! `sub` that begins so is refused). Before, a client that registered as "alice" was alice.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::error::ResourceError;

/// The largest metadata or introspection answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How long an introspection answer is kept (never past the token's expiry).
const KEEP_ANSWER: Duration = Duration::from_secs(60);

/// The most token answers kept; beyond it the oldest are forgotten.
const MAX_KEPT: usize = 1024;

/// How the principal of a token that names no subject begins (then its `client_id`).
pub const CLIENT_PRINCIPAL: &str = "client:";

/// How long a refused token is remembered as refused: the same bad token sent again within it
/// costs no introspection call.
const KEEP_REFUSAL: Duration = Duration::from_secs(10);

/// The authorization server a resource trusts, and the tokens it has vouched for (or refused)
/// lately.
pub(super) struct Introspector {
    issuer: String,
    introspection: reqwest::Url,
    client: reqwest::Client,
    /// Principal (`None`: refused) and how long the answer holds, by token.
    vouched: Mutex<HashMap<String, (Option<String>, Instant)>>,
}

impl std::fmt::Debug for Introspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspector")
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

impl Introspector {
    /// Trust the authorization server `issuer`, checking tokens at `introspection` when given,
    /// else at the introspection endpoint its metadata names (RFC 8414, the well-known path
    /// inserted before the issuer's own path).
    pub(super) async fn discover(
        issuer: &str,
        introspection: Option<&str>,
    ) -> Result<Introspector, ResourceError> {
        let fail = |url: &str, reason: String| ResourceError::Metadata {
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
        Ok(Introspector {
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
    ) -> Result<String, ResourceError> {
        let fail = |url: &str, reason: String| ResourceError::Metadata {
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
            .ok_or_else(|| ResourceError::NoIntrospection(issuer.to_owned()))
    }

    /// The issuer (named in the protected-resource metadata).
    pub(super) fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Who `token` stands for, if the authorization server vouches for it for `resource`:
    /// active, unexpired, and with an audience (`aud`) that names it.
    pub(super) async fn principal(&self, token: &str, resource: &str) -> Option<String> {
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
        let (principal, keep) = match vouched_for(&answer, resource, unix_now) {
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

/// The principal an introspection answer vouches for, and until when (unix seconds): only an
/// active, unexpired token issued for `resource`.
fn vouched_for(answer: &Introspection, resource: &str, unix_now: u64) -> Option<(String, u64)> {
    let for_us = match &answer.aud {
        // A token that names no audience could be meant for any server: refused.
        None => false,
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
    let principal = match (&answer.sub, &answer.client_id) {
        // A subject that would read as a client is no one's.
        (Some(sub), _) if !sub.is_empty() => {
            (!sub.starts_with(CLIENT_PRINCIPAL)).then(|| sub.clone())?
        }
        (_, Some(client)) if !client.is_empty() => format!("{CLIENT_PRINCIPAL}{client}"),
        _ => return None,
    };
    Some((principal, expires))
}

/// Whether an audience names this resource: the same URL, or the same but for one trailing
/// slash (`https://h/mcp` and `https://h/mcp/`), never more.
fn same_resource(aud: &str, resource: &str) -> bool {
    aud.strip_suffix('/').unwrap_or(aud) == resource.strip_suffix('/').unwrap_or(resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: Value) -> Introspection {
        serde_json::from_value(json).unwrap()
    }

    /// Finding 4 of issue 71: a token without `sub` stood for its `client_id`, a name the
    /// client chose, in the same namespace as people: a client registered as "alice" read
    /// alice's task. Principals are typed by kind now.
    #[test]
    fn a_token_without_a_subject_stands_for_its_client_never_for_a_person() {
        let resource = "https://orders.example/mcp";
        let now = 1_000;
        let vouched = |json: Value| vouched_for(&answer(json), resource, now).map(|(p, _)| p);
        let client_only = serde_json::json!({"active": true, "client_id": "alice", "exp": 2_000,
            "aud": resource});
        assert_eq!(vouched(client_only), Some("client:alice".to_owned()));
        let empty = serde_json::json!({"active": true, "sub": "", "client_id": "alice",
            "exp": 2_000, "aud": resource});
        assert_eq!(vouched(empty), Some("client:alice".to_owned()));
        let person = serde_json::json!({"active": true, "sub": "alice", "client_id": "desk",
            "exp": 2_000, "aud": resource});
        assert_eq!(vouched(person), Some("alice".to_owned()));
        // A subject cannot pass for a client either.
        let posing = serde_json::json!({"active": true, "sub": "client:desk", "exp": 2_000,
            "aud": resource});
        assert_eq!(vouched(posing), None);
        let nobody = serde_json::json!({"active": true, "exp": 2_000, "aud": resource});
        assert_eq!(vouched(nobody), None);
    }

    #[test]
    fn an_audience_names_the_resource_give_or_take_one_trailing_slash() {
        let resource = "https://orders.example/mcp";
        assert!(same_resource(resource, resource));
        assert!(same_resource("https://orders.example/mcp/", resource));
        assert!(same_resource(resource, "https://orders.example/mcp/"));
        assert!(!same_resource("https://orders.example/mcp//", resource));
        assert!(!same_resource("https://orders.example/mc", resource));
    }
}
