//! Who is calling ([`Principal`]), as the application's own authentication established it.

/// Who is calling, as established by the application's own authentication (a bearer token,
/// a signed-in user). Put it in the request's extensions before `/mcp`: sessions, tasks and
/// sealed state are then bound to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(pub String);
