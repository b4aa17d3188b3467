//! The sign-in an operator asks of a server (a token file, or an OAuth authorization server,
//! and the resource tokens must be issued for), read once into a [`ResourceServer`]; with the
//! `cli` feature the same settings are `clap` flags, so every server binary offers them alike.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::{ResourceError, ResourceServer, TokenFileError, Tokens};

/// How clients sign in to a server: none by default (then it serves loopback only).
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct SignInSettings {
    /// Require a bearer token on every route: a file of `name=token` lines (tokens of 32+
    /// characters), the name being the caller's principal. Needed to listen beyond loopback.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub token_file: Option<PathBuf>,
    /// Require an OAuth token from this authorization server (its issuer URL) on every route;
    /// tokens are checked with its introspection endpoint. Clients find it through
    /// /.well-known/oauth-protected-resource/mcp.
    #[cfg_attr(feature = "cli", arg(long, value_name = "URL"))]
    pub oauth_issuer: Option<String>,
    /// The authorization server's token introspection endpoint, when its metadata does not
    /// name one.
    #[cfg_attr(feature = "cli", arg(long, value_name = "URL"))]
    pub oauth_introspection: Option<String>,
    /// This server's MCP URL as its clients reach it: the resource a token must be issued for
    /// (an OAuth token's audience; a token issued for another server is refused), named in the
    /// protected-resource metadata. Default: http://ADDRESS/mcp, ADDRESS the one it listens
    /// on. Never taken from a request; only with --token-file or --oauth-issuer.
    #[cfg_attr(feature = "cli", arg(long, value_name = "URL"))]
    pub resource: Option<String>,
}

/// Sign-in settings that cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum SignInSettingsError {
    /// OAuth on an unspecified address (`0.0.0.0`) without `resource`: the URL clients reach
    /// the server at is not known, so no audience could be checked.
    #[error(
        "listening on {0}, the server cannot tell the URL its clients reach it at, which their \
         tokens must be issued for: give it with --resource URL"
    )]
    NoResource(SocketAddr),
    /// Both a token file and an issuer: one way to check tokens, not two.
    #[error("--token-file and --oauth-issuer are two ways to check tokens: give one of them")]
    TwoWays,
    /// An introspection endpoint without an issuer.
    #[error("--oauth-introspection is the issuer's endpoint: give --oauth-issuer with it")]
    IntrospectionWithoutIssuer,
    /// `resource` without a token file or an issuer.
    #[error(
        "--resource names the resource tokens must be issued for, and without --token-file or \
         --oauth-issuer no token is asked for: give one of them, or leave --resource out"
    )]
    ResourceWithoutSignIn,
    /// The token file could not be read.
    #[error(transparent)]
    TokenFile(#[from] TokenFileError),
    /// The sign-in could not be set up (an unusable resource URL, an unreachable issuer).
    #[error(transparent)]
    Resource(#[from] ResourceError),
}

impl SignInSettings {
    /// The sign-in these settings ask for, for a server named `name` (in the metadata)
    /// listening on `addr`; `None` when they ask for none.
    pub async fn resource_server(
        &self,
        addr: SocketAddr,
        name: &str,
    ) -> Result<Option<ResourceServer>, SignInSettingsError> {
        if self.oauth_introspection.is_some() && self.oauth_issuer.is_none() {
            return Err(SignInSettingsError::IntrospectionWithoutIssuer);
        }
        // The configured resource, or this server's address; never guessed for OAuth on an
        // unspecified address, whose tokens name the URL clients really use.
        let resource = |oauth: bool| match &self.resource {
            Some(resource) => Ok(resource.clone()),
            None if oauth && addr.ip().is_unspecified() => {
                Err(SignInSettingsError::NoResource(addr))
            }
            None => Ok(format!("http://{addr}/mcp")),
        };
        let server = match (&self.token_file, &self.oauth_issuer) {
            (Some(_), Some(_)) => return Err(SignInSettingsError::TwoWays),
            (None, None) if self.resource.is_some() => {
                return Err(SignInSettingsError::ResourceWithoutSignIn);
            }
            (None, None) => return Ok(None),
            (Some(path), None) => {
                ResourceServer::tokens(&resource(false)?, name, Tokens::from_file(path)?)?
            }
            (None, Some(issuer)) => {
                let introspection = self.oauth_introspection.as_deref();
                ResourceServer::oauth(&resource(true)?, name, issuer, introspection).await?
            }
        };
        let resource = server.resource();
        tracing::info!(%resource, "clients sign in: tokens must be issued for this resource");
        Ok(Some(server))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_resource_without_a_way_to_sign_in_is_refused_and_none_is_no_sign_in() {
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let none = SignInSettings::default();
        assert!(none.resource_server(addr, "s").await.unwrap().is_none());
        let resource_only = SignInSettings {
            resource: Some("http://desk.example/mcp".into()),
            ..SignInSettings::default()
        };
        let refused = resource_only.resource_server(addr, "s").await.unwrap_err();
        assert!(matches!(
            refused,
            SignInSettingsError::ResourceWithoutSignIn
        ));
    }

    #[tokio::test]
    async fn two_ways_to_check_tokens_or_an_endpoint_without_its_issuer_are_refused() {
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let both = SignInSettings {
            token_file: Some("tokens.txt".into()),
            oauth_issuer: Some("http://127.0.0.1:9/".into()),
            ..SignInSettings::default()
        };
        let refused = both.resource_server(addr, "s").await.unwrap_err();
        assert!(matches!(refused, SignInSettingsError::TwoWays), "{refused}");
        let endpoint_only = SignInSettings {
            oauth_introspection: Some("http://127.0.0.1:9/introspect".into()),
            ..SignInSettings::default()
        };
        let refused = endpoint_only.resource_server(addr, "s").await.unwrap_err();
        assert!(
            matches!(refused, SignInSettingsError::IntrospectionWithoutIssuer),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn oauth_on_an_unspecified_address_needs_the_resource() {
        let addr: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let oauth = SignInSettings {
            oauth_issuer: Some("http://127.0.0.1:9/".into()),
            ..SignInSettings::default()
        };
        let refused = oauth.resource_server(addr, "s").await.unwrap_err();
        assert!(
            matches!(refused, SignInSettingsError::NoResource(at) if at == addr),
            "{refused}"
        );
    }
}
