//! [`ResourceError`]: why a resource server cannot be set up.

use super::tokens::TokenFileError;

/// Why a resource server cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// The authorization server's metadata could not be read.
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
    /// The authorization server offers no way to check tokens.
    #[error(
        "the authorization server {0} names no introspection endpoint (RFC 7662), so its tokens \
         cannot be checked"
    )]
    NoIntrospection(String),
    /// The token file was refused.
    #[error(transparent)]
    TokenFile(#[from] TokenFileError),
}
