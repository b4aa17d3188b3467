//! What the gateway is told and what it declares: the upstreams of the quick start
//! ([`Upstream`], [`quick_config`]), the questions it can relay upstream
//! ([`relayed_capabilities`]) and those a client can answer (`answerable`), and which of a
//! caller's `_meta` goes upstream.

use std::collections::BTreeMap;
use std::time::Duration;

use backchannel::Revision;
use backchannel_host::{ConnectionConfig, Declared, HostConfig, Transport};
use rmcp::model::ClientCapabilities;

use crate::error::GatewayError;

/// The `_meta` key of a 2026-07-28 request's log level.
pub(crate) const LOG_LEVEL_META_KEY: &str = "io.modelcontextprotocol/logLevel";

/// How long one forwarded call may take upstream, questions to the person included.
pub const UPSTREAM_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// How the gateway runs beyond its upstreams' configuration.
#[derive(Debug, Clone, Default)]
pub struct GatewayOptions {
    /// Upstreams each person signs in to with their own account (their tokens kept by the
    /// gateway, asked for by URL elicitation); each must be an HTTP connection.
    pub per_person: std::collections::BTreeSet<String>,
    /// Where each person's upstream tokens are kept: a SQLite or PostgreSQL URL; `None` for
    /// `data/mcp-gateway.sqlite` (used only with per-person upstreams).
    pub database: Option<String>,
    /// The key ring sealing round state and the tokens at rest, shared by every instance;
    /// `None` for a random key per process (kept tokens then open only in that process).
    pub state_keys: Option<backchannel::StateKeys>,
}

/// One upstream named on the command line: `NAME=URL` (Streamable HTTP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Its name: the connection's, and the tool prefix when there are several.
    pub name: String,
    /// Its MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    pub url: String,
}

impl std::str::FromStr for Upstream {
    type Err = GatewayError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| GatewayError::BadUpstream(format!("{text:?}: {why}"));
        let (name, url) = text
            .split_once('=')
            .ok_or_else(|| bad("expected NAME=URL"))?;
        let (name, url) = (name.trim(), url.trim());
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(bad("the name must be letters, digits, '-' or '_'"));
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(bad("the URL must start with http:// or https://"));
        }
        Ok(Upstream {
            name: name.to_owned(),
            url: url.to_owned(),
        })
    }
}

/// The host configuration of the quick start: each upstream over HTTP, speaking the revision
/// `revisions` names for it (else whichever it offers, newest first), its tools prefixed with
/// `NAME_` when there are several upstreams.
pub fn quick_config(
    upstreams: &[Upstream],
    revisions: &BTreeMap<String, Revision>,
) -> Result<HostConfig, GatewayError> {
    quick_config_with_meta(upstreams, revisions, &[])
}

/// [`quick_config`], with the caller's `_meta` keys `allow_meta` passed on to the upstreams
/// (none by default: a client's `_meta` may hold what is meant for the gateway alone).
pub fn quick_config_with_meta(
    upstreams: &[Upstream],
    revisions: &BTreeMap<String, Revision>,
    allow_meta: &[String],
) -> Result<HostConfig, GatewayError> {
    if let Some(unknown) = revisions
        .keys()
        .find(|name| !upstreams.iter().any(|u| &u.name == *name))
    {
        return Err(GatewayError::UnknownUpstream(unknown.clone()));
    }
    let several = upstreams.len() > 1;
    let connections = upstreams
        .iter()
        .map(|upstream| {
            let connection = ConnectionConfig {
                transport: Transport::Http {
                    url: upstream.url.clone(),
                    headers: BTreeMap::new(),
                },
                request_timeout_secs: UPSTREAM_CALL_TIMEOUT.as_secs(),
                roots: Vec::new(),
                protocol: revisions.get(&upstream.name).copied(),
                tool_prefix: several.then(|| format!("{}_", upstream.name)),
                tools: None,
                capabilities: relayed_capabilities(),
                auth: None,
                // Asked per call, as its client asks (`LOG_LEVEL_META_KEY`), never by default.
                log_level: None,
                direct_rounds: true,
            };
            (upstream.name.clone(), connection)
        })
        .collect();
    Ok(HostConfig {
        client_name: "mcp-gateway".into(),
        trusted_folders: Vec::new(),
        meta_allow: ["progressToken", LOG_LEVEL_META_KEY]
            .into_iter()
            .map(String::from)
            .chain(allow_meta.iter().cloned())
            .collect(),
        connections,
    })
}

/// What the gateway declares to its upstreams: the questions it can relay (forms, URLs,
/// sampling and roots).
pub fn relayed_capabilities() -> Declared {
    Declared {
        elicitation: true,
        url_elicitation: true,
        sampling: true,
        roots: true,
        tasks: true,
    }
}

/// The kinds of question a client with `capabilities` can answer, as the gateway declares
/// them upstream.
pub(crate) fn answerable(capabilities: &ClientCapabilities) -> Declared {
    let elicitation = capabilities.elicitation.as_ref();
    Declared {
        // A client that declares `elicitation: {}` with neither mode answers forms.
        elicitation: elicitation.is_some_and(|e| e.form.is_some() || e.url.is_none()),
        url_elicitation: elicitation.is_some_and(|e| e.url.is_some()),
        sampling: capabilities.sampling.is_some(),
        roots: capabilities.roots.is_some(),
        tasks: capabilities.supports_tasks(),
    }
}

/// The entries of a caller's `_meta` that go upstream: the keys `allow` names, but never the
/// progress token or the log level (the gateway's own for its upstream call).
pub(crate) fn forwarded_meta(
    meta: &rmcp::model::RequestMetaObject,
    allow: &[String],
) -> Vec<(String, serde_json::Value)> {
    meta.iter()
        .filter(|(key, _)| {
            key.as_str() != "progressToken"
                && key.as_str() != LOG_LEVEL_META_KEY
                && allow.iter().any(|allowed| allowed == *key)
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_is_name_equals_url() {
        let upstream: Upstream = "orders=http://127.0.0.1:8080/mcp".parse().unwrap();
        assert_eq!(upstream.name, "orders");
        assert_eq!(upstream.url, "http://127.0.0.1:8080/mcp");
        for bad in [
            "orders",
            "=http://x/mcp",
            "or ders=http://x/mcp",
            "orders=ftp://x",
        ] {
            assert!(bad.parse::<Upstream>().is_err(), "{bad}");
        }
    }

    #[test]
    fn only_the_allowed_meta_goes_upstream() {
        let mut meta = rmcp::model::RequestMetaObject::default();
        meta.insert("support_agent_id".into(), serde_json::json!("ana"));
        meta.insert("secret".into(), serde_json::json!("not for upstream"));
        meta.insert("progressToken".into(), serde_json::json!("client-7"));
        meta.insert(LOG_LEVEL_META_KEY.into(), serde_json::json!("error"));
        let allow: Vec<String> = ["support_agent_id", "progressToken", LOG_LEVEL_META_KEY]
            .map(String::from)
            .to_vec();
        assert_eq!(
            forwarded_meta(&meta, &allow),
            vec![("support_agent_id".to_owned(), serde_json::json!("ana"))]
        );
        assert!(forwarded_meta(&meta, &[]).is_empty());
        let config = quick_config_with_meta(
            &["a=http://127.0.0.1:1/mcp".parse().unwrap()],
            &BTreeMap::new(),
            &["support_agent_id".to_owned()],
        )
        .unwrap();
        assert!(
            config
                .meta_allow
                .iter()
                .any(|key| key == "support_agent_id")
        );
    }

    #[test]
    fn several_upstreams_are_prefixed_and_revisions_must_name_one() {
        let upstreams: Vec<Upstream> = ["a=http://127.0.0.1:1/mcp", "b=http://127.0.0.1:2/mcp"]
            .iter()
            .map(|text| text.parse().unwrap())
            .collect();
        let revisions = BTreeMap::from([("b".to_owned(), Revision::V2025_11_25)]);
        let config = quick_config(&upstreams, &revisions).unwrap();
        assert_eq!(config.connections["a"].tool_prefix.as_deref(), Some("a_"));
        assert_eq!(config.connections["a"].protocol, None);
        assert_eq!(
            config.connections["b"].protocol,
            Some(Revision::V2025_11_25)
        );
        let one = quick_config(&upstreams[..1], &BTreeMap::new()).unwrap();
        assert_eq!(one.connections["a"].tool_prefix, None);
        let unknown = BTreeMap::from([("c".to_owned(), Revision::V2025_11_25)]);
        assert!(matches!(
            quick_config(&upstreams, &unknown),
            Err(GatewayError::UnknownUpstream(name)) if name == "c"
        ));
    }
}
