//! [`HttpOptions`]: who may call an HTTP server (its Host and Origin policy) and what it
//! accepts (sizes, times, sessions, connections).

use std::time::Duration;

/// Options of an HTTP server: who may call it, and what it accepts.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// `Host` values accepted on every route. An entry without a port accepts its name on any
    /// port; an entry with one (`orders.example:8443`) accepts that name on that port only.
    /// Default: loopback names only.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted when a browser sends one, on every route (`:*` matches any
    /// port). Default: loopback origins only.
    pub allowed_origins: Vec<String>,
    /// Largest request body accepted on `/mcp` (default 1 MiB); larger bodies get 413.
    pub max_body_bytes: usize,
    /// How long a request body may take to arrive on `/mcp` (default 30 s).
    pub body_read_timeout: Duration,
    /// How long a connection may take to send a request's headers, and how long it may sit
    /// idle between requests (default 10 s).
    pub header_read_timeout: Duration,
    /// Connections served at once (default 4,096); further ones wait to be accepted.
    pub max_connections: usize,
    /// Keep 2025-11-25 sessions (needed for server-to-client requests). Default true.
    pub legacy_sessions: bool,
    /// 2025-11-25 sessions open at once (default 1,000); `initialize` beyond it gets 503.
    pub max_sessions: usize,
    /// Answer a 2026-07-28 request whose first message is its result as `application/json`
    /// (default true); one that sends progress, a log message or a question first still gets
    /// an SSE stream.
    pub json_response: bool,
    /// SSE keep-alive interval.
    pub sse_keep_alive: Option<Duration>,
    /// Serve well-formed 2026-07-28 requests in the request's own task, without rmcp's
    /// per-request service, transport, peer and spawned task (default true). Such a handler
    /// sends its notifications through [`crate::Ctx`]; a message sent through
    /// `RequestContext::peer` during one is dropped. Off, rmcp serves every request.
    pub stateless_fast_path: bool,
    /// Serve a 2025-11-25 session's messages by calling the handler directly once rmcp has
    /// answered its `initialize` (default true), instead of through a serve loop of rmcp's for
    /// each session (a task and two channels: about 33 KiB a session). Such a handler sends its
    /// notifications and questions through [`crate::Ctx`]; a message sent through
    /// `RequestContext::peer` is dropped. Off, rmcp serves every session to its end.
    pub direct_sessions: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            allowed_hosts: vec![
                "localhost".into(),
                "127.0.0.1".into(),
                "::1".into(),
                "[::1]".into(),
            ],
            allowed_origins: vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "http://[::1]:*".into(),
            ],
            max_body_bytes: 1024 * 1024,
            body_read_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(10),
            max_connections: 4096,
            legacy_sessions: true,
            max_sessions: 1000,
            json_response: true,
            sse_keep_alive: Some(Duration::from_secs(15)),
            stateless_fast_path: true,
            direct_sessions: true,
        }
    }
}

impl HttpOptions {
    /// Also accept `host` as a `Host` name (and `http://host:*`, `https://host:*` as
    /// origins), for a server reached by a name other than loopback. With a port
    /// (`orders.example:8443`), only that port is accepted, in `Host` and in origins.
    pub fn allow_host(mut self, host: &str) -> Self {
        self.allowed_hosts.push(host.to_owned());
        let any_port = if host_port(host).is_some() { "" } else { ":*" };
        self.allowed_origins
            .push(format!("http://{host}{any_port}"));
        self.allowed_origins
            .push(format!("https://{host}{any_port}"));
        self
    }
}

/// The port a `Host` value (`name`, `name:port`, `[v6]`, `[v6]:port`) names, if any.
pub(crate) fn host_port(host: &str) -> Option<&str> {
    let rest = if host.starts_with('[') {
        &host[host.find(']')? + 1..]
    } else {
        &host[host.find(':')?..]
    };
    rest.strip_prefix(':').filter(|port| !port.is_empty())
}
