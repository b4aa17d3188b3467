//! Who is calling ([`Principal`]), as the application's own authentication established it.

/// Who is calling, as established by the application's own authentication (a bearer token,
/// a signed-in user). Put it in the request's extensions before `/mcp`: sessions, tasks and
/// sealed state are then bound to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(pub String);

/// How the [`Principal`] of a request signed in (`"token-file"`, `"oauth"`, or a server's own
/// word), put beside it by the sign-in edge: spans name it as `mcp.principal.kind`, never the
/// principal's token (a request without a principal is `"anonymous"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrincipalKind(pub &'static str);
