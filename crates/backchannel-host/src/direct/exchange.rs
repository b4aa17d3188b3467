//! A direct round's HTTP exchange: the POST sent on hyper's client or reqwest ([`Post`]), what
//! comes back read as a whole body or as a stream ([`open`]) and a stream's events handed on
//! one at a time ([`events`]), each capped before it is parsed; and why a round gave no result
//! ([`DirectError`]).

use http::HeaderMap;
use rmcp::ErrorData;

/// Why a direct round gave no result.
#[derive(Debug)]
pub(crate) enum DirectError {
    /// The server asks for credentials (401, or 403 with a challenge).
    Unauthorized(String),
    /// The server's JSON-RPC error.
    Refused(ErrorData),
    /// Anything else, said to a person.
    Failed(Failure),
    /// A token was sent and refused: the round goes through rmcp, which refreshes it.
    TokenRefused,
}

/// An error of another library, kept as the cause.
pub(crate) type Cause = Box<dyn std::error::Error + Send + Sync>;

/// What failed in the direct rounds (their opening, or one round), for a person: the words
/// name the step, the cause is kept as the error's source.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    #[error("{url:?} is not a usable URL: {cause}")]
    Url { url: String, cause: Cause },
    #[error("cannot make an HTTP client: {0}")]
    Client(#[source] reqwest13::Error),
    #[error("the configured header {name:?} is not usable: {cause}")]
    Header { name: String, cause: Cause },
    #[error("the client's request context could not be written")]
    Context,
    #[error("cannot read the bearer file {}: {cause}", path.display())]
    BearerFile {
        path: std::path::PathBuf,
        #[source]
        cause: std::io::Error,
    },
    #[error("the bearer file {} holds no token on its first line (printable ASCII, no spaces)", .0.display())]
    NoBearer(std::path::PathBuf),
    #[cfg(feature = "oauth")]
    #[error("an unusable token: {0}")]
    Token(#[source] http::header::InvalidHeaderValue),
    #[cfg(feature = "oauth")]
    #[error(transparent)]
    SignIn(#[from] rmcp::transport::auth::AuthError),
    #[error("the request could not be written: {0}")]
    Unwritable(#[source] serde_json::Error),
    #[error("the request is not an object")]
    NotAnObject,
    #[error("the request failed: {}", innermost(.0.as_ref()))]
    Request(#[source] Cause),
    #[error("the response broke off: {}", innermost(.0.as_ref()))]
    BrokeOff(#[source] Cause),
    #[error("the server's response is larger than {0} bytes")]
    TooLarge(usize),
    #[error("an event of the server's response is larger than {0} bytes")]
    EventTooLarge(usize),
    #[error("HTTP {status}: {preview}")]
    Status {
        status: http::StatusCode,
        preview: String,
    },
    #[error("the server's response is not a JSON-RPC message: {0}")]
    NotAMessage(String),
    #[error("the server's response is not JSON ({error}): {preview}")]
    NotJson {
        #[source]
        error: serde_json::Error,
        preview: String,
    },
    #[error("the server's response answers another request")]
    AnswersAnother,
    #[error("the server's answer has neither a result nor an error")]
    Empty,
    #[error("an unreadable error: {0}")]
    UnreadableError(#[source] serde_json::Error),
    #[error("an unreadable result: {0}")]
    UnreadableResult(#[source] serde_json::Error),
    #[error("the response ended before the answer")]
    EndedEarly,
}

impl From<Failure> for DirectError {
    fn from(failure: Failure) -> Self {
        DirectError::Failed(failure)
    }
}

/// One keep-alive HTTP/1.1 connection to an `http://` server, driven by a task of its own.
type Sender = hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>;

/// The most idle connections an `http://` server keeps; one more is closed when it is done.
const MAX_IDLE: usize = 256;

/// The body of a round's response, from either client.
pub(super) type Body = http_body_util::Either<hyper::body::Incoming, reqwest13::Body>;

/// A connection's server and the clients that reach it.
pub(super) struct Endpoint {
    client: reqwest13::Client,
    url: reqwest13::Url,
    /// For an `http://` server: its own keep-alive connections.
    plain: Option<Plain>,
}

/// The keep-alive connections to an `http://` server, each carrying one round at a time: taken
/// by a round, given back when its response has been read to the end ([`Lease`]).
struct Plain {
    /// Where to connect.
    host: String,
    port: u16,
    /// The request's target (the URL's path and query) and `Host` header.
    target: http::Uri,
    authority: http::HeaderValue,
    /// Connections no round is using, the most recently used last.
    idle: std::sync::Mutex<Vec<Sender>>,
}

impl Plain {
    fn new(url: &reqwest13::Url) -> Result<Self, Failure> {
        let unusable = |cause: Cause| Failure::Url {
            url: url.to_string(),
            cause,
        };
        let Some(name) = url.host_str() else {
            return Err(unusable("it names no host".into()));
        };
        // An IPv6 address is written in brackets in a URL, and without them for `connect`.
        let host = name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = url.port_or_known_default().unwrap_or(80);
        let mut target = url.path().to_owned();
        if let Some(query) = url.query() {
            target.push('?');
            target.push_str(query);
        }
        let target = http::Uri::try_from(target).map_err(|e| unusable(e.into()))?;
        let mut authority = name.to_owned();
        if let Some(port) = url.port() {
            authority.push_str(&format!(":{port}"));
        }
        let authority = http::HeaderValue::try_from(authority).map_err(|e| unusable(e.into()))?;
        Ok(Plain {
            host,
            port,
            target,
            authority,
            idle: std::sync::Mutex::default(),
        })
    }

    /// An idle connection the server has not closed, if there is one.
    fn take_idle(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(sender) = idle.pop() {
            if !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    /// A new connection, its task spawned.
    async fn connect(&self) -> Result<Sender, Failure> {
        let failed = |e: std::io::Error| Failure::Request(e.into());
        let stream = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(failed)?;
        stream.set_nodelay(true).map_err(failed)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| Failure::Request(e.into()))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "a direct connection ended");
            }
        });
        Ok(sender)
    }

    /// Send `request` on an idle connection, or a new one. A request the server closed an
    /// idle connection on before it was sent goes out again on another, as hyper's pooled
    /// client would send it.
    async fn send(
        &self,
        mut request: http::Request<http_body_util::Full<bytes::Bytes>>,
    ) -> Result<(http::Response<hyper::body::Incoming>, Sender), Failure> {
        loop {
            let (mut sender, reused) = match self.take_idle() {
                Some(sender) => (sender, true),
                None => (self.connect().await?, false),
            };
            if let Err(error) = sender.ready().await {
                if reused {
                    continue;
                }
                return Err(Failure::Request(error.into()));
            }
            match sender.try_send_request(request).await {
                Ok(response) => return Ok((response, sender)),
                Err(mut error) => match error.take_message() {
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(Failure::Request(error.into_error().into())),
                },
            }
        }
    }
}

/// The connection a round's response came on, given back to its server's idle ones once the
/// response is read to the end; dropped before, it closes when the response is done with.
pub(super) struct Lease(Option<(Sender, std::sync::Arc<Endpoint>)>);

impl Lease {
    /// Give the connection back: the response was read to its end.
    fn give_back(self) {
        if let Some((sender, to)) = self.0
            && let Some(plain) = &to.plain
        {
            let mut idle = plain.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < MAX_IDLE {
                idle.push(sender);
            }
        }
    }
}

impl Endpoint {
    /// The server at `url`, reached through `client` (and connections of its own for
    /// `http://`).
    pub(super) fn new(client: reqwest13::Client, url: &str) -> Result<Self, Failure> {
        let url = reqwest13::Url::parse(url).map_err(|e| Failure::Url {
            url: url.to_owned(),
            cause: e.into(),
        })?;
        let plain = match url.scheme() {
            "http" => Some(Plain::new(&url)?),
            _ => None,
        };
        Ok(Endpoint { client, url, plain })
    }
}

/// One round's POST.
pub(super) struct Post {
    pub(super) to: std::sync::Arc<Endpoint>,
    pub(super) headers: HeaderMap,
    pub(super) body: bytes::Bytes,
}

impl Post {
    /// Send it: on a connection of its own to an `http://` server, through reqwest otherwise
    /// and for a redirect (see the module's documentation). The error says what failed, for a
    /// person.
    async fn send(self) -> Result<(http::Response<Body>, Lease), Failure> {
        let to = &self.to;
        if let Some(plain) = &to.plain {
            let mut request = http::Request::new(http_body_util::Full::new(self.body.clone()));
            *request.method_mut() = http::Method::POST;
            *request.uri_mut() = plain.target.clone();
            let headers = request.headers_mut();
            *headers = self.headers.clone();
            headers.insert(http::header::HOST, plain.authority.clone());
            let (response, sender) = plain.send(request).await?;
            if !matches!(response.status().as_u16(), 307 | 308) {
                let lease = Lease(Some((sender, self.to.clone())));
                return Ok((response.map(http_body_util::Either::Left), lease));
            }
        }
        let response = to
            .client
            .post(to.url.clone())
            .headers(self.headers)
            .body(self.body)
            .send()
            .await
            .map_err(|e| Failure::Request(e.into()))?;
        let response = http::Response::from(response).map(http_body_util::Either::Right);
        Ok((response, Lease(None)))
    }
}

/// What a round's POST brought back, once the head of its response is read.
pub(super) enum Opened {
    /// The whole body of a response that is not an event stream (or not a success).
    Body {
        status: http::StatusCode,
        body: Vec<u8>,
    },
    /// An event stream's body, to be read event by event ([`events`]), and its connection.
    Stream(Body, Lease),
}

/// Send `post` and read what comes back as far as telling it is a body or a stream: a body
/// is read whole, refused past `max_json` bytes before it is parsed. A refusal of the
/// credentials (401, or 403 with a challenge) is its own error; `token_sent` tells a refused
/// token from none.
pub(super) async fn open(
    post: Post,
    token_sent: bool,
    max_json: usize,
) -> Result<Opened, DirectError> {
    let (response, lease) = post.send().await?;
    let status = response.status();
    if status == http::StatusCode::UNAUTHORIZED || status == http::StatusCode::FORBIDDEN {
        let challenge = response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        match challenge {
            Some(_) if token_sent => return Err(DirectError::TokenRefused),
            Some(challenge) => return Err(DirectError::Unauthorized(challenge)),
            None if status == http::StatusCode::UNAUTHORIZED => {
                return Err(DirectError::Unauthorized(String::new()));
            }
            None => {}
        }
    }
    let sse = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if sse && status.is_success() {
        return Ok(Opened::Stream(response.into_body(), lease));
    }
    let body = capped_body(response, max_json).await?;
    lease.give_back();
    Ok(Opened::Body { status, body })
}

/// Hand the data of the events of the stream `body` to `events` one by one, each refused
/// past `max_event` bytes before it is handed on; a broken stream ends with its error. The
/// connection is given back when the stream ends.
pub(super) async fn events(
    mut body: Body,
    lease: Lease,
    max_event: usize,
    events: tokio::sync::mpsc::Sender<Result<Vec<u8>, DirectError>>,
) {
    let mut buffer: Vec<u8> = Vec::new();
    loop {
        while let Some((end, skip)) = event_end(&buffer) {
            let data = event_data(&buffer[..end]);
            buffer.drain(..end + skip);
            if !data.is_empty() && events.send(Ok(data)).await.is_err() {
                return;
            }
        }
        if buffer.len() > max_event {
            let why = Failure::EventTooLarge(max_event);
            let _ = events.send(Err(why.into())).await;
            return;
        }
        match next_chunk(&mut body).await {
            Some(Ok(chunk)) => buffer.extend_from_slice(&chunk),
            Some(Err(why)) => {
                let _ = events.send(Err(why.into())).await;
                return;
            }
            None => {
                lease.give_back();
                return;
            }
        }
    }
}

/// Where the first complete SSE event in `buffer` ends, and the length of the blank line
/// after it.
fn event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i + 1 < buffer.len() {
        match (buffer[i], buffer[i + 1]) {
            (b'\n', b'\n') => return Some((i, 2)),
            (b'\n', b'\r') if buffer.get(i + 2) == Some(&b'\n') => return Some((i, 3)),
            _ => i += 1,
        }
    }
    None
}

/// The data of one SSE event: its `data:` lines joined by newlines.
fn event_data(event: &[u8]) -> Vec<u8> {
    let mut data = Vec::new();
    for line in event.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(rest) = line.strip_prefix(b"data:") {
            if !data.is_empty() {
                data.push(b'\n');
            }
            data.extend_from_slice(rest.strip_prefix(b" ").unwrap_or(rest));
        }
    }
    data
}

/// The next chunk of data of `body` (trailers skipped); `None` at its end. The error says how
/// it broke off, for a person.
async fn next_chunk(body: &mut Body) -> Option<Result<bytes::Bytes, Failure>> {
    use http_body_util::BodyExt as _;
    loop {
        match body.frame().await? {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    return Some(Ok(data));
                }
            }
            Err(e) => {
                return Some(Err(Failure::BrokeOff(e)));
            }
        }
    }
}

/// The body of `response`, refused past `max` bytes before it is parsed.
async fn capped_body(response: http::Response<Body>, max: usize) -> Result<Vec<u8>, DirectError> {
    let too_large = || DirectError::Failed(Failure::TooLarge(max));
    if http_body::Body::size_hint(response.body())
        .exact()
        .is_some_and(|length| length > max as u64)
    {
        return Err(too_large());
    }
    let mut stream = response.into_body();
    let mut body = Vec::new();
    while let Some(chunk) = next_chunk(&mut stream).await {
        let chunk = chunk?;
        if body.len() + chunk.len() > max {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An error's innermost cause (for HTTP, what failed and where), not its chain of wrappers.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_stream_is_read_event_by_event_whatever_its_line_ends() {
        let stream = b"id: 1\ndata: {\"a\":1}\n\ndata: x\r\ndata: y\r\n\r\nrest";
        let (end, skip) = event_end(stream).unwrap();
        assert_eq!(event_data(&stream[..end]), b"{\"a\":1}");
        let rest = &stream[end + skip..];
        let (end, _) = event_end(rest).unwrap();
        assert_eq!(event_data(&rest[..end]), b"x\ny");
        assert_eq!(event_end(b"data: partial\n"), None);
    }
}
