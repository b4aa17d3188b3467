//! Why the gateway could not start ([`GatewayError`]).

use backchannel_host::HostError;

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// An upstream given on the command line is not `NAME=URL`.
    #[error("bad upstream {0}")]
    BadUpstream(String),
    /// A revision named for an upstream that was not given.
    #[error("--upstream-revision names {0:?}, which is no upstream")]
    UnknownUpstream(String),
    /// The host could not be opened.
    #[error(transparent)]
    Host(#[from] HostError),
    /// No upstream could be reached.
    #[error("no upstream could be reached: {0}")]
    NoUpstream(String),
    /// Two upstreams offer a tool under the same name.
    #[error(
        "upstreams {first:?} and {second:?} both offer a tool named {tool:?}: give one a tool_prefix"
    )]
    Clash {
        /// The tool's name as the gateway would offer it.
        tool: String,
        /// The upstream seen first.
        first: String,
        /// The other.
        second: String,
    },
    /// The layer could not be built.
    #[error(transparent)]
    Layer(#[from] backchannel::BuildError),
    /// No random key could be had for the gateway's task ids.
    #[error("no key for the gateway's task ids: {0}")]
    Random(#[from] backchannel::SealError),
    /// An upstream marked per-person is not one of the HTTP upstreams.
    #[error("{0:?} cannot sign people in one by one: it is no HTTP upstream of this gateway")]
    NotPersonal(String),
    /// The gateway's database could not be opened.
    #[error("the gateway's database: {0}")]
    Database(#[from] sqlx::Error),
    /// The gateway's database could not be brought up to date.
    #[error("the gateway's database could not be migrated: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}
