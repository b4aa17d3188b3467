//! Each person's own sign-in to an upstream that needs it: the order service requiring OAuth
//! tokens from an authorization server, behind a gateway with sign-in on its front door and the
//! order service marked per-person. A 2025-11-25 client and a 2026-07-28 client are each asked
//! by URL; the browser (a reqwest client carrying its cookie by hand) proves who it is, goes
//! through the authorization server and back; each person gets a token of their own, the call
//! goes on, and no caller's gateway token ever reaches the upstream. A link or a callback
//! opened by someone else changes nothing.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use backchannel::Revision;
use backchannel::serve::{self, HttpOptions, ResourceServer, Tokens};
use backchannel::testing::{Served, connect_http, serve_with};
use mcp_gateway::{Gateway, GatewayOptions, Upstream, quick_config};
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};

const ANA: &str = "ana-0123456789abcdef0123456789abcdef";
const BEN: &str = "ben-0123456789abcdef0123456789abcdef";
/// The gateway's own client secret at the authorization server.
const GATEWAY_SECRET: &str = "the-gateway-s-secret-0123456789";
const CY: &str = "cy-0123456789abcdef0123456789abcdef0";

/// What the authorization server did: the tokens it issued (by person at the authorization
/// server) and every token it was asked to introspect.
#[derive(Default)]
struct Issued {
    next: AtomicUsize,
    /// code → (redirect URI, code challenge, resource)
    codes: Mutex<BTreeMap<String, (String, String, String)>>,
    /// access token → (subject, audience)
    tokens: Mutex<BTreeMap<String, (String, String)>>,
    introspected: Mutex<Vec<String>>,
    /// Whether a code's token expires at once (so the first use refreshes it).
    expire_at_once: std::sync::atomic::AtomicBool,
    /// refresh token → the access token it was issued with
    refreshes: Mutex<BTreeMap<String, String>>,
    /// How many times a token was refreshed.
    refreshed: AtomicUsize,
}

impl Issued {
    /// Issue the `n`th access token, for `whose` (subject, audience), lasting `lasts` seconds,
    /// with a refresh token when `refreshable`: the token endpoint's answer.
    fn issue(
        &self,
        n: usize,
        whose: (String, String),
        refreshable: bool,
        lasts: u64,
    ) -> (axum::http::StatusCode, axum::Json<Value>) {
        let access = format!("upstream-token-{n}");
        self.tokens.lock().unwrap().insert(access.clone(), whose);
        let mut answer = json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": lasts,
        });
        if refreshable {
            let refresh = format!("refresh-{n}");
            answer["refresh_token"] = json!(refresh);
            self.refreshes.lock().unwrap().insert(refresh, access);
        }
        (axum::http::StatusCode::OK, axum::Json(answer))
    }
}

/// The token endpoint's refusal: `status`, and OAuth's `error`.
fn refused(
    status: axum::http::StatusCode,
    error: &str,
) -> (axum::http::StatusCode, axum::Json<Value>) {
    (status, axum::Json(json!({ "error": error })))
}

fn form(body: &str) -> BTreeMap<String, String> {
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| {
            let decoded = value.replace('+', " ");
            (name.to_owned(), percent_decode(&decoded))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

fn query_of(url: &str) -> BTreeMap<String, String> {
    form(
        url.split_once('?')
            .map(|(_, query)| query)
            .unwrap_or_default(),
    )
}

/// A small OAuth 2.1 authorization server: metadata, dynamic registration, an authorization
/// endpoint that approves at once (a new person at it each time), a token endpoint checking
/// PKCE (S256), and introspection.
async fn authorization_server(issued: Arc<Issued>) -> Served {
    use axum::routing::{get, post};
    // The issuer is the address the metadata was asked at (a test's server on loopback).
    let metadata = |headers: axum::http::HeaderMap| async move {
        let host = headers[axum::http::header::HOST]
            .to_str()
            .unwrap()
            .to_owned();
        let issuer = format!("http://{host}");
        axum::Json(json!({
                    "issuer": issuer,
                    "authorization_endpoint": format!("{issuer}/authorize"),
                    "token_endpoint": format!("{issuer}/token"),
                    "registration_endpoint": format!("{issuer}/register"),
                    "introspection_endpoint": format!("{issuer}/introspect"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
        }))
    };
    let register = |axum::Json(request): axum::Json<Value>| async move {
        (
            axum::http::StatusCode::CREATED,
            axum::Json(json!({
                "client_id": format!("client-{}", request["redirect_uris"][0].as_str().unwrap_or("").len()),
                "redirect_uris": request["redirect_uris"],
                "token_endpoint_auth_method": "none",
            })),
        )
    };
    let authorize = {
        let issued = issued.clone();
        move |uri: axum::http::Uri| {
            let issued = issued.clone();
            async move {
                let query = query_of(&uri.to_string());
                let code = format!("code-{}", issued.next.fetch_add(1, Ordering::SeqCst));
                issued.codes.lock().unwrap().insert(
                    code.clone(),
                    (
                        query["redirect_uri"].clone(),
                        query["code_challenge"].clone(),
                        query.get("resource").cloned().unwrap_or_default(),
                    ),
                );
                let back = format!(
                    "{}?code={code}&state={}",
                    query["redirect_uri"], query["state"]
                );
                (
                    axum::http::StatusCode::FOUND,
                    [(axum::http::header::LOCATION, back)],
                )
            }
        }
    };
    let token = {
        let issued = issued.clone();
        move |body: String| {
            let issued = issued.clone();
            async move {
                use base64::Engine as _;
                use sha2::Digest as _;
                let request = form(&body);
                if request.get("grant_type").map(String::as_str) == Some("client_credentials") {
                    let known = request.get("client_id").map(String::as_str) == Some("the-gateway")
                        && request.get("client_secret").map(String::as_str) == Some(GATEWAY_SECRET);
                    if !known {
                        return refused(axum::http::StatusCode::UNAUTHORIZED, "invalid_client");
                    }
                    let n = issued.next.fetch_add(1, Ordering::SeqCst);
                    let audience = request.get("resource").cloned().unwrap_or_default();
                    let whose = ("the-gateway".to_owned(), audience);
                    return issued.issue(n, whose, false, 3600);
                }
                if request.get("grant_type").map(String::as_str) == Some("refresh_token") {
                    let old = request
                        .get("refresh_token")
                        .and_then(|refresh| issued.refreshes.lock().unwrap().remove(refresh));
                    let Some(old) = old else {
                        return refused(axum::http::StatusCode::BAD_REQUEST, "invalid_grant");
                    };
                    // The old token goes; the new one stands for the same person.
                    let Some(whose) = issued.tokens.lock().unwrap().remove(&old) else {
                        return refused(axum::http::StatusCode::BAD_REQUEST, "invalid_grant");
                    };
                    issued.refreshed.fetch_add(1, Ordering::SeqCst);
                    let n = issued.next.fetch_add(1, Ordering::SeqCst);
                    return issued.issue(n, whose, true, 3600);
                }
                let Some((redirect, challenge, resource)) = request
                    .get("code")
                    .and_then(|code| issued.codes.lock().unwrap().remove(code))
                else {
                    return refused(axum::http::StatusCode::BAD_REQUEST, "invalid_grant");
                };
                let verifier = request.get("code_verifier").cloned().unwrap_or_default();
                let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(sha2::Sha256::digest(verifier.as_bytes()));
                if computed != challenge || request.get("redirect_uri") != Some(&redirect) {
                    return refused(axum::http::StatusCode::BAD_REQUEST, "invalid_grant");
                }
                let n = issued.next.fetch_add(1, Ordering::SeqCst);
                let audience = request.get("resource").cloned().unwrap_or(resource);
                let lasts = if issued.expire_at_once.load(Ordering::SeqCst) {
                    0
                } else {
                    3600
                };
                issued.issue(n, (format!("person-{n}"), audience), true, lasts)
            }
        }
    };
    let introspect = {
        let issued = issued.clone();
        move |body: String| {
            let issued = issued.clone();
            async move {
                let token = form(&body).get("token").cloned().unwrap_or_default();
                issued.introspected.lock().unwrap().push(token.clone());
                let later = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs()
                    + 3600;
                axum::Json(match issued.tokens.lock().unwrap().get(&token) {
                    Some((subject, audience)) => {
                        json!({"active": true, "sub": subject, "aud": audience, "exp": later})
                    }
                    None => json!({"active": false}),
                })
            }
        }
    };
    let app = axum::Router::new()
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/introspect", post(introspect));
    serve_with(|_| app, &HttpOptions::default()).await
}

/// The order service (2025-11-25 or 2026-07-28 only) requiring tokens of `issuer` issued for
/// its own address; with its service, to read the orders.
async fn order_service(
    issuer: SocketAddr,
    only: Revision,
) -> (
    SocketAddr,
    orders::service::OrderService,
    tokio_util::sync::CancellationToken,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let sign_in = ResourceServer::oauth(
        &format!("http://{addr}/mcp"),
        "order-service",
        &format!("http://{issuer}"),
        Some(&format!("http://{issuer}/introspect")),
    )
    .await
    .unwrap();
    let config = orders::app::Config {
        database: Some("sqlite::memory:".into()),
        service: orders::service::ServiceConfig {
            carrier_latency: std::time::Duration::ZERO,
            ..Default::default()
        },
        only_revision: Some(only),
        sign_in: Some(Arc::new(sign_in)),
        ..Default::default()
    };
    let service = orders::app::open_service(&config).await.unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let app = orders::app::router(service.clone(), &config, stop.clone()).unwrap();
    let shutdown = stop.clone();
    tokio::spawn(async move {
        serve::http(listener, app, &config.http, async move {
            shutdown.cancelled().await;
        })
        .await
    });
    (addr, service, stop)
}

/// A database of the gateway's own for one test: in memory, or, when
/// `$MCP_GATEWAY_TEST_POSTGRES` names a PostgreSQL server (`scripts/test-postgres`), a new
/// database on it.
async fn fresh_database() -> String {
    match std::env::var("MCP_GATEWAY_TEST_POSTGRES") {
        Ok(server) if !server.is_empty() => {
            sql_pool::create_database(&server, "gateway").await.unwrap()
        }
        _ => "sqlite::memory:".into(),
    }
}

/// The gateway with sign-in (Ana's and Ben's tokens) in front of the order service at
/// `orders`, which is per-person.
async fn gateway(orders: SocketAddr, revision: Revision) -> (Served, Gateway) {
    let upstreams: Vec<Upstream> = vec![format!("orders=http://{orders}/mcp").parse().unwrap()];
    let revisions = BTreeMap::from([("orders".to_owned(), revision)]);
    let options = GatewayOptions {
        per_person: ["orders".to_owned()].into(),
        database: Some(fresh_database().await),
        state_keys: None,
    };
    let gateway = Gateway::open_with(&quick_config(&upstreams, &revisions).unwrap(), options)
        .await
        .unwrap();
    let tokens = Tokens::parse(&format!("ana={ANA}\nben={BEN}\ncy={CY}\n")).unwrap();
    let front =
        Arc::new(ResourceServer::tokens("http://127.0.0.1/mcp", "mcp-gateway", tokens).unwrap());
    let options = HttpOptions::default();
    let served_gateway = gateway.clone();
    let served = serve_with(
        |stop| {
            let (pages, sign_out) = served_gateway
                .sign_in_pages("http://127.0.0.1", Some(front.clone()))
                .unwrap();
            let app = serve::router(move || served_gateway.clone(), &options, stop).merge(sign_out);
            front.clone().protect(app).merge(pages)
        },
        &options,
    )
    .await;
    // Links and the redirect name the address it was given.
    gateway.sign_in_pages(&format!("http://{}", served.addr), Some(front));
    (served, gateway)
}

/// A browser of one person: it keeps the gateway's cookie by hand.
struct Browser {
    http: reqwest::Client,
    cookie: Option<String>,
}

impl Browser {
    fn new() -> Browser {
        Browser {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookie: None,
        }
    }

    async fn get(&self, url: &str) -> reqwest::Response {
        let mut request = self.http.get(url);
        if let Some(cookie) = &self.cookie {
            request = request.header("Cookie", cookie);
        }
        request.send().await.unwrap()
    }

    /// Open the sign-in `link` as the person whose gateway token is `token`: the status of the
    /// gateway's answer to the token, and where the callback sent the browser back to (when it
    /// got that far).
    async fn open_link(&mut self, link: &str, token: &str) -> (u16, Option<String>) {
        let first = self.get(link).await;
        if first.status().as_u16() == 200 && self.cookie.is_none() {
            // The gateway's own sign-in form.
            let body = first.text().await.unwrap();
            assert!(body.contains("gateway-token"), "{body}");
            // As a browser posts a form: naming the page's origin, and the page.
            let origin = reqwest::Url::parse(link)
                .unwrap()
                .origin()
                .ascii_serialization();
            let answer = self
                .http
                .post(link)
                .header("Origin", origin)
                .header("Referer", link)
                .form(&[("token", token)])
                .send()
                .await
                .unwrap();
            let status = answer.status().as_u16();
            if status != 303 {
                return (status, None);
            }
            let cookie = answer.headers()["set-cookie"].to_str().unwrap().to_owned();
            assert!(
                cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
                "{cookie}"
            );
            self.cookie = Some(cookie.split(';').next().unwrap().to_owned());
        }
        let to_authorize = self.get(link).await;
        let status = to_authorize.status().as_u16();
        if status != 303 {
            return (status, None);
        }
        let authorize = to_authorize.headers()["location"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(authorize.contains("code_challenge="), "{authorize}");
        let back = self.get(&authorize).await;
        let callback = back.headers()["location"].to_str().unwrap().to_owned();
        (303, Some(callback))
    }
}

/// A client that declares URL elicitation and, asked to open a link, hands it to the test;
/// it says yes to every form.
#[derive(Clone)]
struct Person {
    links: tokio::sync::mpsc::UnboundedSender<String>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        crate::bridge::person_declaring(true)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::UrlElicitationParams { url, .. } = request {
            self.links.send(url).unwrap();
            return Ok(ElicitResult::new(ElicitationAction::Accept));
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirmed": true})))
    }
}

/// Ana at the gateway's `url` on 2025-11-25, and the links she is asked to open.
async fn ana_at(
    url: &str,
) -> (
    rmcp::service::RunningService<RoleClient, Person>,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let (links, asked) = tokio::sync::mpsc::unbounded_channel();
    let ana = connect_http(Person { links }, url, Revision::V2025_11_25, Some(ANA)).await;
    (ana, asked)
}

/// Call `tool` (with `arguments`) as `person` in the background: the call waits for their
/// sign-in.
fn calling(
    person: &rmcp::service::RunningService<RoleClient, Person>,
    tool: &'static str,
    arguments: Value,
) -> tokio::task::JoinHandle<Result<CallToolResult, rmcp::ServiceError>> {
    let peer = person.peer().clone();
    let mut call = CallToolRequestParams::new(tool);
    if let Value::Object(arguments) = arguments {
        call = call.with_arguments(arguments);
    }
    tokio::spawn(async move { peer.call_tool(call).await })
}

/// A call of the order service's `get_order` for `order`.
fn get_order(order: &str) -> CallToolRequestParams {
    let arguments = json!({ "orderId": order });
    CallToolRequestParams::new("get_order").with_arguments(arguments.as_object().unwrap().clone())
}

/// A client that answers forms and cannot open links.
#[derive(Clone)]
struct FormsOnly;

impl ClientHandler for FormsOnly {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(ElicitationCapability::default().with_form(Default::default()));
        ClientConfig::new(caps, Implementation::new("forms-only", "1.0.0"))
    }
}

async fn order_status(service: &orders::service::OrderService, id: &str) -> String {
    let order = service
        .order(orders::domain::OrderId::new(id))
        .await
        .unwrap();
    format!("{:?}", order.status).to_uppercase()
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect()
}

async fn each_person_signs_in_with_their_own_account(upstream: Revision) {
    let issued = Arc::new(Issued::default());
    let issuer = authorization_server(issued.clone()).await;
    let (orders, service, _stop) = order_service(issuer.addr, upstream).await;
    let (front, gateway) = gateway(orders, upstream).await;
    let url = format!("http://{}/mcp", front.addr);
    assert_eq!(gateway.tool_names(), ["sign_in_to_orders"], "{upstream}");

    // Ana, on 2025-11-25, is asked by URL inside her call.
    let (ana, mut asked) = ana_at(&url).await;
    let call = calling(&ana, "sign_in_to_orders", Value::Null);
    let link = asked.recv().await.unwrap();
    assert!(
        link.starts_with(&format!("http://{}/upstream-sign-in/", front.addr)),
        "{link}"
    );

    // Ben's browser cannot take Ana's link: his token is refused for it, nothing changes.
    let mut bens = Browser::new();
    let (refused, _) = bens.open_link(&link, BEN).await;
    assert_eq!(refused, 403, "{upstream}");
    // Ana's browser signs her in at the gateway, then at the authorization server.
    let mut anas = Browser::new();
    let (status, callback) = anas.open_link(&link, ANA).await;
    assert_eq!(status, 303);
    let callback = callback.unwrap();
    // The callback opened by a browser that is not Ana's changes nothing…
    assert_eq!(Browser::new().get(&callback).await.status().as_u16(), 403);
    // …Ana's finishes the sign-in, once.
    let done = anas.get(&callback).await;
    assert_eq!(done.status().as_u16(), 200);
    assert!(done.text().await.unwrap().contains("Signed in to orders"));
    assert_eq!(
        anas.get(&callback).await.status().as_u16(),
        400,
        "single use"
    );
    let result = call.await.unwrap().unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(
        text_of(&result).contains("signed in to \"orders\""),
        "{result:?}"
    );

    // Now the order service's tools are offered, and Ana's calls go through with her token.
    let tools = ana.list_all_tools().await.unwrap();
    assert!(
        tools.iter().any(|tool| tool.name == "cancel_order"),
        "{tools:?}"
    );
    let got = ana.call_tool(get_order("ORD-10001")).await.unwrap();
    assert!(text_of(&got).contains("ORD-10001"), "{got:?}");

    // Ben, on 2026-07-28, cancels an order: asked by URL in a round, then for the
    // confirmation, then the cancel happens once.
    let ben = connect_http(
        Person {
            links: tokio::sync::mpsc::unbounded_channel().0,
        },
        &url,
        Revision::V2026_07_28,
        Some(BEN),
    )
    .await;
    let mut params = CallToolRequestParams::new("cancel_order")
        .with_arguments(json!({"orderId": "ORD-10002"}).as_object().unwrap().clone());
    let mut asked_by_url = 0;
    let result = loop {
        match ben.peer().call_tool_once(params.clone()).await.unwrap() {
            CallToolResponse::Complete(result) => break result,
            CallToolResponse::InputRequired(round) => {
                let mut answers = BTreeMap::new();
                for (key, request) in round.input_requests.unwrap_or_default() {
                    let InputRequest::Elicitation(question) = request else {
                        panic!("{request:?}");
                    };
                    let answer = match question.params {
                        ElicitRequestParams::UrlElicitationParams { url, .. } => {
                            asked_by_url += 1;
                            let mut browser = Browser::new();
                            let (status, callback) = browser.open_link(&url, BEN).await;
                            assert_eq!(status, 303);
                            let done = browser.get(&callback.unwrap()).await;
                            assert_eq!(done.status().as_u16(), 200);
                            json!({"action": "accept"})
                        }
                        _ => json!({"action": "accept", "content": {"confirmed": true}}),
                    };
                    answers.insert(key, answer);
                }
                params.input_responses = Some(answers);
                params.request_state = round.request_state;
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(asked_by_url, 1, "{upstream}");
    assert!(text_of(&result).contains("ORD-10002"), "{result:?}");
    assert_eq!(order_status(&service, "ORD-10002").await, "CANCELLED");

    // Two people, two tokens of their own; the upstream never saw a gateway token.
    let introspected = issued.introspected.lock().unwrap().clone();
    let distinct: std::collections::BTreeSet<&String> = introspected.iter().collect();
    assert_eq!(distinct.len(), 2, "{introspected:?}");
    assert!(
        introspected
            .iter()
            .all(|token| token.starts_with("upstream-token-")),
        "{introspected:?}"
    );

    // Cy's client cannot open links: the tool error names the page to visit, and nothing
    // reaches the order service.
    let cy = connect_http(FormsOnly, &url, Revision::V2026_07_28, Some(CY)).await;
    let told = cy.call_tool(get_order("ORD-10001")).await.unwrap();
    assert_eq!(told.is_error, Some(true), "{told:?}");
    let told = text_of(&told);
    assert!(
        told.contains(&format!("open http://{}/upstream-sign-in/", front.addr))
            && told.contains("Nothing was sent"),
        "{told}"
    );

    // Ana signs out of the order service: her next call asks her again.
    let signed_out = reqwest::Client::new()
        .post(format!("http://{}/upstream-sign-out/orders", front.addr))
        .bearer_auth(ANA)
        .send()
        .await
        .unwrap();
    assert_eq!(signed_out.status().as_u16(), 204);
    let again = calling(&ana, "get_order", json!({"orderId": "ORD-10001"}));
    let asked_again = asked.recv().await.unwrap();
    assert_ne!(asked_again, link);
    again.abort();
}

/// Finding 6 of issue 71: the gateway's token form took a `POST` from any allowed origin (any
/// loopback port), so a page there could plant its own person's gateway session in someone
/// else's browser (login CSRF), and that person's upstream sign-in would be stored as theirs.
#[tokio::test]
async fn the_gateway_token_form_takes_a_post_only_from_the_links_own_page() {
    let issued = Arc::new(Issued::default());
    let issuer = authorization_server(issued.clone()).await;
    let (orders, _service, _stop) = order_service(issuer.addr, Revision::V2026_07_28).await;
    let (front, _gateway) = gateway(orders, Revision::V2026_07_28).await;
    let url = format!("http://{}/mcp", front.addr);
    let (ana, mut asked) = ana_at(&url).await;
    let call = calling(&ana, "sign_in_to_orders", Value::Null);
    let link = asked.recv().await.unwrap();
    let own = format!("http://{}", front.addr);
    let elsewhere = format!(
        "http://127.0.0.1:{}",
        front.addr.port().wrapping_add(1).max(1024)
    );
    let post = |origin: Option<String>, referer: Option<String>| {
        let link = link.clone();
        async move {
            let mut request = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap()
                .post(&link)
                .form(&[("token", ANA)]);
            if let Some(origin) = origin {
                request = request.header("Origin", origin);
            }
            if let Some(referer) = referer {
                request = request.header("Referer", referer);
            }
            let answer = request.send().await.unwrap();
            (
                answer.status().as_u16(),
                answer.headers().contains_key("set-cookie"),
            )
        }
    };
    // A page on another port of the same host, a page with no origin, none said at all, or
    // the gateway's origin but another page: refused, and no session is made.
    for (origin, referer) in [
        (Some(elsewhere.clone()), None),
        (Some(elsewhere.clone()), Some(format!("{elsewhere}/"))),
        (Some("null".to_owned()), None),
        (None, None),
        (None, Some(link.clone())),
        (Some(own.clone()), Some(format!("{own}/elsewhere"))),
    ] {
        let said = format!("{origin:?} {referer:?}");
        assert_eq!(post(origin, referer).await, (403, false), "{said}");
    }
    // The link's own page: the session is made.
    assert_eq!(
        post(Some(own.clone()), Some(link.clone())).await,
        (303, true)
    );
    assert_eq!(post(Some(own), None).await, (303, true));
    call.abort();
}

#[tokio::test]
async fn each_person_signs_in_to_a_2026_upstream_with_their_own_account() {
    each_person_signs_in_with_their_own_account(Revision::V2026_07_28).await;
}

#[tokio::test]
async fn each_person_signs_in_to_a_2025_upstream_with_their_own_account() {
    each_person_signs_in_with_their_own_account(Revision::V2025_11_25).await;
}

#[tokio::test]
async fn an_upstream_signed_in_to_by_the_gateway_itself_sees_its_token_only() {
    let issued = Arc::new(Issued::default());
    let issuer = authorization_server(issued.clone()).await;
    let (orders, _service, _stop) = order_service(issuer.addr, Revision::V2026_07_28).await;
    let upstreams: Vec<Upstream> = vec![format!("orders=http://{orders}/mcp").parse().unwrap()];
    let mut config = quick_config(&upstreams, &BTreeMap::new()).unwrap();
    config.connections.get_mut("orders").unwrap().auth = Some(backchannel_host::AuthConfig {
        client_credentials: true,
        client_id: Some("the-gateway".into()),
        client_secret: Some(GATEWAY_SECRET.into()),
        ..Default::default()
    });
    let gateway = Gateway::open(&config).await.unwrap();
    assert!(gateway.tool_names().contains(&"get_order".to_owned()));
    let options = HttpOptions::default();
    let tokens = Tokens::parse(&format!("ana={ANA}\n")).unwrap();
    let front =
        Arc::new(ResourceServer::tokens("http://127.0.0.1/mcp", "mcp-gateway", tokens).unwrap());
    let served = serve_with(
        |stop| front.protect(serve::router(move || gateway.clone(), &options, stop)),
        &options,
    )
    .await;
    let url = format!("http://{}/mcp", served.addr);
    let ana = connect_http(FormsOnly, &url, Revision::V2025_11_25, Some(ANA)).await;
    let got = ana.call_tool(get_order("ORD-10001")).await.unwrap();
    assert!(text_of(&got).contains("ORD-10001"), "{got:?}");
    // Every token the order service saw was one the gateway got for itself (one per set of
    // connections it opens: the 2025-11-25 client that answers fewer questions has its own).
    let introspected = issued.introspected.lock().unwrap().clone();
    assert!(!introspected.is_empty());
    let tokens = issued.tokens.lock().unwrap();
    for token in &introspected {
        assert_eq!(tokens[token].0, "the-gateway", "{introspected:?}");
    }
}

/// The test server (2026-07-28) requiring, on every `/mcp` request, a token the authorization
/// server of `issued` has issued and not revoked (checked each time: a revoked token is
/// refused at once), its protected-resource metadata naming the server at `issuer`.
async fn strict_upstream(issued: Arc<Issued>, issuer: SocketAddr) -> Served {
    let layer = backchannel::Backchannel::builder()
        .only_revision(Revision::V2026_07_28)
        .build()
        .unwrap();
    let server = backchannel::testing::TestServer::new(layer);
    let options = HttpOptions::default();
    let metadata = move |headers: axum::http::HeaderMap| async move {
        let host = headers[axum::http::header::HOST]
            .to_str()
            .unwrap()
            .to_owned();
        axum::Json(json!({
            "resource": format!("http://{host}/mcp"),
            "authorization_servers": [format!("http://{issuer}")],
        }))
    };
    let check = move |request: axum::extract::Request, next: axum::middleware::Next| {
        let issued = issued.clone();
        async move {
            let token = request
                .headers()
                .get(axum::http::header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.strip_prefix("Bearer "))
                .map(str::to_owned);
            let known =
                token.is_some_and(|token| issued.tokens.lock().unwrap().contains_key(&token));
            if known {
                return next.run(request).await;
            }
            let host = request.headers()[axum::http::header::HOST]
                .to_str()
                .unwrap();
            let challenge = format!(
                "Bearer resource_metadata=\"http://{host}/.well-known/oauth-protected-resource/mcp\""
            );
            axum::response::IntoResponse::into_response((
                axum::http::StatusCode::UNAUTHORIZED,
                [(axum::http::header::WWW_AUTHENTICATE, challenge)],
            ))
        }
    };
    serve_with(
        |stop| {
            serve::router(move || server.clone(), &options, stop)
                .layer(axum::middleware::from_fn(check))
                .route(
                    "/.well-known/oauth-protected-resource/mcp",
                    axum::routing::get(metadata),
                )
        },
        &options,
    )
    .await
}

#[tokio::test]
async fn a_token_the_upstream_stops_accepting_is_dropped_and_the_person_asked_again() {
    let issued = Arc::new(Issued::default());
    let issuer = authorization_server(issued.clone()).await;
    let upstream = strict_upstream(issued.clone(), issuer.addr).await;
    let (front, _gateway) = gateway(upstream.addr, Revision::V2026_07_28).await;
    let url = format!("http://{}/mcp", front.addr);
    let (ana, mut asked) = ana_at(&url).await;
    let mut browser = Browser::new();
    let call = calling(&ana, "sign_in_to_orders", Value::Null);
    let link = asked.recv().await.unwrap();
    let (_, callback) = browser.open_link(&link, ANA).await;
    assert_eq!(browser.get(&callback.unwrap()).await.status().as_u16(), 200);
    assert_eq!(call.await.unwrap().unwrap().is_error, Some(false));
    let progress = ana
        .call_tool(CallToolRequestParams::new("progress"))
        .await
        .unwrap();
    assert_eq!(progress.is_error, Some(false), "{progress:?}");

    // The authorization server revokes every token: the next call is refused upstream, the
    // person's tokens are dropped, and the call after asks them to sign in again.
    issued.tokens.lock().unwrap().clear();
    let refused = ana
        .call_tool(CallToolRequestParams::new("progress"))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(
        text_of(&refused).contains("no longer accepts your sign-in"),
        "{refused:?}"
    );
    let again = calling(&ana, "progress", Value::Null);
    let asked_again = asked.recv().await.unwrap();
    assert_ne!(asked_again, link);
    let (_, callback) = browser.open_link(&asked_again, ANA).await;
    assert_eq!(browser.get(&callback.unwrap()).await.status().as_u16(), 200);
    let done = again.await.unwrap().unwrap();
    assert_eq!(done.is_error, Some(false), "{done:?}");
}

#[tokio::test]
async fn an_expired_token_is_refreshed_and_the_new_one_kept() {
    let issued = Arc::new(Issued::default());
    issued.expire_at_once.store(true, Ordering::SeqCst);
    let issuer = authorization_server(issued.clone()).await;
    let upstream = strict_upstream(issued.clone(), issuer.addr).await;
    let (front, _gateway) = gateway(upstream.addr, Revision::V2026_07_28).await;
    let url = format!("http://{}/mcp", front.addr);
    let (ana, mut asked) = ana_at(&url).await;
    let call = calling(&ana, "sign_in_to_orders", Value::Null);
    let link = asked.recv().await.unwrap();
    let mut browser = Browser::new();
    let (_, callback) = browser.open_link(&link, ANA).await;
    assert_eq!(browser.get(&callback.unwrap()).await.status().as_u16(), 200);
    assert_eq!(call.await.unwrap().unwrap().is_error, Some(false));
    // The token expired as it came: the first use refreshed it (the old one is gone at the
    // authorization server, so only the new one could have been accepted), and calls go on
    // with the refreshed token, the person never asked again.
    assert!(issued.refreshed.load(Ordering::SeqCst) >= 1);
    issued.expire_at_once.store(false, Ordering::SeqCst);
    for _ in 0..2 {
        let progress = ana
            .call_tool(CallToolRequestParams::new("progress"))
            .await
            .unwrap();
        assert_eq!(progress.is_error, Some(false), "{progress:?}");
    }
    assert!(asked.try_recv().is_err(), "not asked again");
}
