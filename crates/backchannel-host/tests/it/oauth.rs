//! The host signing in to an OAuth-protected MCP server: a scripted authorization server and
//! a test server behind a bearer check, both real HTTP on loopback. The host discovers, registers,
//! sends the person through the authorization URL (its handler), keeps the tokens in a file only
//! the user can read, refreshes a token before it is used expired, reuses the file on the next
//! start, and writes no token to its logs.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use backchannel::Backchannel;
use backchannel_host::{
    AuthConfig, ConnectionConfig, Declared, Host, HostConfig, HostHandler, Transport,
};
use serde_json::{Value, json};

use backchannel::testing::TestServer;

/// What the scripted authorization server issued and what the MCP endpoint was shown.
#[derive(Default)]
struct Ledger {
    base: Mutex<String>,
    nonce: String,
    /// Access tokens the MCP endpoint accepts.
    valid: Mutex<HashSet<String>>,
    /// Every bearer token the MCP endpoint was shown.
    presented: Mutex<Vec<String>>,
    refreshes: AtomicUsize,
    codes: AtomicUsize,
}

impl Ledger {
    fn first_token(&self) -> String {
        format!("at-first-{}", self.nonce)
    }
    fn fresh_token(&self) -> String {
        format!("at-fresh-{}", self.nonce)
    }
    fn refresh_token(&self) -> String {
        format!("rt-{}", self.nonce)
    }
    fn base(&self) -> String {
        self.lock_base().clone()
    }
    fn lock_base(&self) -> std::sync::MutexGuard<'_, String> {
        self.base.lock().unwrap()
    }
}

async fn protected_resource(State(ledger): State<Arc<Ledger>>) -> axum::Json<Value> {
    let base = ledger.base();
    axum::Json(json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [base],
        "scopes_supported": ["mcp"],
    }))
}

/// RFC 8414 metadata of a scripted authorization server at `issuer` (endpoints below it).
fn as_metadata(issuer: &str, client_auth: &str) -> Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": [client_auth],
        "scopes_supported": ["mcp"],
    })
}

async fn authorization_server(State(ledger): State<Arc<Ledger>>) -> axum::Json<Value> {
    axum::Json(as_metadata(&ledger.base(), "none"))
}

async fn register(axum::Json(request): axum::Json<Value>) -> Response {
    let body = json!({
        "client_id": "registered-client",
        "redirect_uris": request["redirect_uris"],
        "token_endpoint_auth_method": "none",
    });
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

/// The person approves at once: back to the redirect URI with a code.
async fn authorize(
    State(ledger): State<Arc<Ledger>>,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Response {
    ledger.codes.fetch_add(1, Ordering::SeqCst);
    let location = format!(
        "{}?code=code-1&state={}",
        query["redirect_uri"], query["state"]
    );
    (
        StatusCode::FOUND,
        [(axum::http::header::LOCATION, location)],
    )
        .into_response()
}

/// The first token expires as it is issued (`expires_in` 0); a refresh gives one for an hour.
async fn token(
    State(ledger): State<Arc<Ledger>>,
    Form(form): Form<std::collections::HashMap<String, String>>,
) -> Response {
    let (access, lifetime) = match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => (ledger.first_token(), 0),
        Some("refresh_token") if form.get("refresh_token") == Some(&ledger.refresh_token()) => {
            ledger.refreshes.fetch_add(1, Ordering::SeqCst);
            ledger.valid.lock().unwrap().insert(ledger.fresh_token());
            (ledger.fresh_token(), 3600)
        }
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": "invalid_grant"})),
            )
                .into_response();
        }
    };
    axum::Json(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": lifetime,
        "refresh_token": ledger.refresh_token(),
        "scope": "mcp",
    }))
    .into_response()
}

/// The bearer check in front of `/mcp`.
async fn bearer(
    State(ledger): State<Arc<Ledger>>,
    headers: HeaderMap,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if !request.uri().path().starts_with("/mcp") {
        return next.run(request).await;
    }
    let token = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    if let Some(token) = &token {
        ledger.presented.lock().unwrap().push(token.clone());
    }
    match token {
        Some(token) if ledger.valid.lock().unwrap().contains(&token) => next.run(request).await,
        _ => unauthorized(&ledger.base(), ", scope=\"mcp\""),
    }
}

/// An authorization server's routes (the protected resource's metadata, the server's own,
/// registration, authorization and token), each of its paths under `$at` (a path or "").
macro_rules! authorization_routes {
    ($at:literal, $resource:expr, $metadata:expr, $register:expr, $authorize:expr, $token:expr) => {
        axum::Router::new()
            .route("/.well-known/oauth-protected-resource/mcp", get($resource))
            .route(concat!("/.well-known/oauth-authorization-server", $at), get($metadata))
            .route(concat!($at, "/register"), post($register))
            .route(concat!($at, "/authorize"), get($authorize))
            .route(concat!($at, "/token"), post($token))
    };
}

/// A 401 whose challenge points at the resource metadata under `base`, then says `more`.
fn unauthorized(base: &str, more: &str) -> axum::response::Response {
    let challenge = format!(
        "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"{more}"
    );
    let header = [(axum::http::header::WWW_AUTHENTICATE, challenge)];
    (StatusCode::UNAUTHORIZED, header).into_response()
}

/// A person in a browser who approves every sign-in: fetches the authorization URL and hands
/// back where it redirects.
#[derive(Default)]
struct Browser {
    sign_ins: AtomicUsize,
}

impl HostHandler for Browser {
    async fn authorize(
        &self,
        _connection: &str,
        url: String,
    ) -> Result<String, backchannel_host::AuthorizeError> {
        self.sign_ins.fetch_add(1, Ordering::SeqCst);
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let response = client.get(&url).send().await.map_err(|e| e.to_string())?;
        response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| "no redirect".to_owned().into())
    }
}

fn host_config(url: &str, token_file: &std::path::Path) -> HostConfig {
    let connection = ConnectionConfig {
        transport: Transport::Http {
            url: url.to_owned(),
            headers: Default::default(),
        },
        request_timeout_secs: 20,
        roots: Vec::new(),
        protocol: Some(backchannel::Revision::V2026_07_28),
        tool_prefix: None,
        tools: None,
        capabilities: Declared::default(),
        auth: Some(AuthConfig {
            token_file: Some(token_file.to_owned()),
            ..AuthConfig::default()
        }),
        log_level: backchannel_host::DEFAULT_LOG_LEVEL,
        direct_rounds: true,
    };
    HostConfig {
        client_name: "oauth-test".into(),
        trusted_folders: Vec::new(),
        meta_allow: vec!["progressToken".into()],
        connections: [("desk".to_owned(), connection)].into(),
    }
}

#[tokio::test]
async fn the_host_signs_in_keeps_tokens_private_refreshes_before_use_and_logs_no_token() {
    let captured = backchannel::testing::CapturedLogs::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _logs = tracing::subscriber::set_default(subscriber);

    let ledger = Arc::new(Ledger {
        nonce: backchannel::testing::random_hex(),
        ..Ledger::default()
    });
    let state = ledger.clone();
    let served = backchannel::testing::serve_with(
        move |stop| {
            let server = TestServer::new(Backchannel::new());
            let authorization = authorization_routes!(
                "",
                protected_resource,
                authorization_server,
                register,
                authorize,
                token
            )
            .with_state(state.clone());
            backchannel::serve::router(move || server.clone(), &Default::default(), stop)
                .merge(authorization)
                .layer(axum::middleware::from_fn_with_state(state, bearer))
        },
        &Default::default(),
    )
    .await;
    *ledger.lock_base() = format!("http://{}", served.addr);
    let dir = std::env::temp_dir().join(format!("bc-oauth-{}", ledger.nonce));
    let token_file = dir.join("tokens.json");
    let config = host_config(&served.url("/mcp"), &token_file);
    // tracing caches each log call site's interest for the whole process. While only one
    // subscriber is registered, a call site first reached on another test's thread (which has
    // none) is cached as uninteresting for everyone, and this test would miss its lines. With a
    // second subscriber registered, tracing asks every registered one instead; call sites
    // cached before then are recomputed.
    let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    tracing::callsite::rebuild_interest_cache();

    let browser = Arc::new(Browser::default());
    let host = Host::open(&config, browser.clone()).await.unwrap();
    assert!(host.unavailable.is_empty(), "{:?}", host.unavailable);
    let desk = host.connection("desk").unwrap();
    let tools = desk.tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "progress"));
    let result = desk
        .call_tool("progress", None, &Default::default())
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));

    assert_eq!(browser.sign_ins.load(Ordering::SeqCst), 1, "one sign-in");
    assert_eq!(ledger.codes.load(Ordering::SeqCst), 1);
    assert!(
        ledger.refreshes.load(Ordering::SeqCst) >= 1,
        "the expiring token was refreshed"
    );
    let presented = ledger.presented.lock().unwrap().clone();
    assert!(
        !presented.contains(&ledger.first_token()),
        "an expired token was never sent"
    );
    assert!(presented.contains(&ledger.fresh_token()));

    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only the user may read the token file");
    assert!(
        std::fs::read_to_string(&token_file)
            .unwrap()
            .contains(&ledger.fresh_token())
    );
    host.close().await;

    // The next start signs in from the file: nobody is sent to the browser.
    let again = Host::open(&config, browser.clone()).await.unwrap();
    again.connection("desk").unwrap().tools().await.unwrap();
    assert_eq!(
        browser.sign_ins.load(Ordering::SeqCst),
        1,
        "the kept tokens were used"
    );
    again.close().await;

    let logs = captured.text();
    assert!(logs.contains("sign in"), "the sign-in itself is logged");
    for secret in [
        ledger.first_token(),
        ledger.fresh_token(),
        ledger.refresh_token(),
    ] {
        assert!(!logs.contains(&secret), "a token reached the log");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two authorization servers for one resource, mounted at `/as1` and `/as2`: the resource
/// names `current`; each server records every client ID and token shown to it.
#[derive(Default)]
struct TwoServers {
    base: Mutex<String>,
    nonce: String,
    current: AtomicUsize,
    /// What each server was shown, by server number.
    shown: Mutex<Vec<(usize, String)>>,
}

impl TwoServers {
    fn base(&self) -> String {
        self.base.lock().unwrap().clone()
    }
    fn access(&self, server: usize) -> String {
        format!("at-as{server}-{}", self.nonce)
    }
    fn show(&self, server: usize, what: impl Into<String>) {
        self.shown.lock().unwrap().push((server, what.into()));
    }
}

fn two_servers_router(state: Arc<TwoServers>) -> axum::Router {
    use axum::extract::Path;
    let resource = |State(s): State<Arc<TwoServers>>| async move {
        let base = s.base();
        axum::Json(json!({
            "resource": format!("{base}/mcp"),
            "authorization_servers": [format!("{base}/as{}", s.current.load(Ordering::SeqCst))],
        }))
    };
    let metadata = |State(s): State<Arc<TwoServers>>, Path(name): Path<String>| async move {
        axum::Json(as_metadata(
            &format!("{}/{name}", s.base()),
            "client_secret_post",
        ))
    };
    let number = |name: &str| name.trim_start_matches("as").parse::<usize>().unwrap_or(0);
    let register = move |State(s): State<Arc<TwoServers>>,
                         Path(name): Path<String>,
                         axum::Json(request): axum::Json<Value>| async move {
        let n = number(&name);
        s.show(n, "registration");
        let body = json!({
            "client_id": format!("client-of-as{n}"),
            "client_secret": format!("secret-of-as{n}-{}", s.nonce),
            "redirect_uris": request["redirect_uris"],
            "token_endpoint_auth_method": "client_secret_post",
        });
        (StatusCode::CREATED, axum::Json(body))
    };
    let authorize =
        move |State(s): State<Arc<TwoServers>>,
              Path(name): Path<String>,
              Query(query): Query<std::collections::HashMap<String, String>>| async move {
            let n = number(&name);
            s.show(n, query.get("client_id").cloned().unwrap_or_default());
            let location = format!(
                "{}?code=code-as{n}&state={}",
                query["redirect_uri"], query["state"]
            );
            (
                StatusCode::FOUND,
                [(axum::http::header::LOCATION, location)],
            )
        };
    let token = move |State(s): State<Arc<TwoServers>>,
                      Path(name): Path<String>,
                      headers: HeaderMap,
                      Form(form): Form<std::collections::HashMap<String, String>>| async move {
        let n = number(&name);
        for value in form.values() {
            s.show(n, value.clone());
        }
        if let Some(auth) = headers.get(axum::http::header::AUTHORIZATION) {
            s.show(n, auth.to_str().unwrap_or_default().to_owned());
        }
        axum::Json(json!({
            "access_token": s.access(n),
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": format!("rt-as{n}-{}", s.nonce),
        }))
    };
    authorization_routes!("/{name}", resource, metadata, register, authorize, token)
        .with_state(state)
}

#[tokio::test]
async fn a_new_authorization_server_never_sees_the_old_ones_credentials() {
    let state = Arc::new(TwoServers {
        nonce: backchannel::testing::random_hex(),
        current: AtomicUsize::new(1),
        ..TwoServers::default()
    });
    let checked = state.clone();
    let router_state = state.clone();
    let served = backchannel::testing::serve_with(
        move |stop| {
            let server = TestServer::new(Backchannel::new());
            // Only the current server's token opens `/mcp`.
            let bearer = move |request: axum::extract::Request, next: axum::middleware::Next| {
                let state = checked.clone();
                async move {
                    if !request.uri().path().starts_with("/mcp") {
                        return next.run(request).await;
                    }
                    let current = state.access(state.current.load(Ordering::SeqCst));
                    let presented = request
                        .headers()
                        .get(axum::http::header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Bearer "));
                    if presented == Some(current.as_str()) {
                        return next.run(request).await;
                    }
                    unauthorized(&state.base(), "")
                }
            };
            backchannel::serve::router(move || server.clone(), &Default::default(), stop)
                .merge(two_servers_router(router_state))
                .layer(axum::middleware::from_fn(bearer))
        },
        &Default::default(),
    )
    .await;
    *state.base.lock().unwrap() = format!("http://{}", served.addr);
    let dir = std::env::temp_dir().join(format!("bc-oauth-two-{}", state.nonce));
    let config = host_config(&served.url("/mcp"), &dir.join("tokens.json"));
    let browser = Arc::new(Browser::default());
    let host = Host::open(&config, browser.clone()).await.unwrap();
    let desk = host.connection("desk").unwrap();
    desk.tools().await.unwrap();

    // The resource moves to another authorization server: the old token is refused.
    state.current.store(2, Ordering::SeqCst);
    let result = desk
        .call_tool("progress", None, &Default::default())
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        browser.sign_ins.load(Ordering::SeqCst),
        2,
        "signed in once with each"
    );

    let shown = state.shown.lock().unwrap().clone();
    assert!(
        shown
            .iter()
            .any(|(n, what)| *n == 2 && what == "registration"),
        "the client registered anew with the second server: {shown:?}"
    );
    let first_ones = [
        "client-of-as1".to_owned(),
        format!("secret-of-as1-{}", state.nonce),
        state.access(1),
        format!("rt-as1-{}", state.nonce),
    ];
    for (server, what) in shown.iter().filter(|(n, _)| *n == 2) {
        assert!(
            !first_ones.iter().any(|old| what.contains(old.as_str())),
            "authorization server {server} was shown the first one's credential {what}"
        );
    }
    host.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
