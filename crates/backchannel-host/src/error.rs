//! The host's errors ([`HostError`]).

use std::time::Duration;

use rmcp::ErrorData;

use crate::config::ConfigError;

/// Errors of the host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The configuration was refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A connection could not be opened.
    #[error("cannot connect to {connection:?}: {message}")]
    Connect {
        /// The connection.
        connection: String,
        /// What went wrong.
        message: String,
    },
    /// The server refused the revision asked for and speaks only 2025-11-25 (with no revision
    /// configured, the host opens the connection again on it).
    #[error("cannot connect to {connection:?}: {message}")]
    SessionsOnly {
        /// The connection.
        connection: String,
        /// What went wrong.
        message: String,
    },
    /// No connection has that name.
    #[error("no connection named {0:?}")]
    UnknownConnection(String),
    /// The server answered with an error, or the transport failed.
    #[error("{connection:?}: {message}")]
    Call {
        /// The connection.
        connection: String,
        /// What went wrong.
        message: String,
    },
    /// The server answered the request with a JSON-RPC error (a protocol error: a tool's own
    /// failure is a result with `isError`).
    #[error("{connection:?}: Mcp error: {error}")]
    Refused {
        /// The connection.
        connection: String,
        /// The server's error, as it sent it.
        error: ErrorData,
    },
    /// The server refused the connection's credentials (401, or 403 for a scope it lacks).
    #[error("{connection:?} asks to sign in again")]
    Unauthorized {
        /// The connection.
        connection: String,
        /// The server's `WWW-Authenticate` challenge.
        challenge: String,
    },
    /// The server refused the connection's credentials, and signing in again failed (or
    /// could not be done): the credentials are no good until someone signs in anew.
    #[error("{connection:?} refused its credentials, and signing in again failed: {error}")]
    SignInFailed {
        /// The connection.
        connection: String,
        /// Why signing in again failed.
        #[source]
        error: Box<SignInError>,
    },
    /// The request took longer than the connection's timeout.
    #[error("{connection:?} did not answer within {timeout:?}")]
    Timeout {
        /// The connection.
        connection: String,
        /// The timeout.
        timeout: Duration,
    },
}

/// Why a person's sign-in to a server did not come back ([`crate::HostHandler::authorize`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthorizeError {
    /// This host has no way to take a person through a sign-in.
    #[error("this host cannot sign in to servers")]
    Unsupported,
    /// The sign-in was tried and did not finish: why, for the person.
    #[error("{0}")]
    Failed(String),
}

/// Why signing in to a server failed ([`crate::auth::sign_in_with`], and a connection's own
/// sign-in, said in [`HostError::Connect`] and [`HostError::SignInFailed`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignInError {
    /// The client credentials grant was asked for without a client id and secret.
    #[error("the client credentials grant needs the connection's client_id and client_secret")]
    NoClientSecret,
    /// Discovery, registration, the exchange of the code or the grant failed.
    #[cfg(feature = "oauth")]
    #[error(transparent)]
    OAuth(#[from] rmcp::transport::auth::AuthError),
    /// The person's part of the sign-in did not come back.
    #[error(transparent)]
    Authorize(#[from] AuthorizeError),
    /// Every step answered, yet no token came of it.
    #[error("the sign-in did not complete")]
    Incomplete,
}

impl From<String> for AuthorizeError {
    fn from(reason: String) -> Self {
        AuthorizeError::Failed(reason)
    }
}
