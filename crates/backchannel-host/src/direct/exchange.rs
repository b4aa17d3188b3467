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
    /// Anything else, for a person.
    Failed(String),
    /// A token was sent and refused: the round goes through rmcp, which refreshes it.
    TokenRefused,
}

/// hyper's pooled client, for rounds to an `http://` server.
type PlainClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<bytes::Bytes>,
>;

/// The body of a round's response, from either client.
pub(super) type Body = http_body_util::Either<hyper::body::Incoming, reqwest13::Body>;

/// A connection's server and the clients that reach it.
pub(super) struct Endpoint {
    client: reqwest13::Client,
    url: reqwest13::Url,
    /// For an `http://` server: hyper's client and the URL as its URI.
    plain: Option<(PlainClient, http::Uri)>,
}

impl Endpoint {
    /// The server at `url`, reached through `client` (and hyper's own for `http://`).
    pub(super) fn new(client: reqwest13::Client, url: &str) -> Result<Self, String> {
        let url = reqwest13::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        let plain = match url.scheme() {
            "http" => {
                let uri = http::Uri::try_from(url.as_str())
                    .map_err(|e| format!("{url:?} is not a URI: {e}"))?;
                let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
                connector.set_nodelay(true);
                let plain = hyper_util::client::legacy::Client::builder(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .build(connector);
                Some((plain, uri))
            }
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
    /// Send it: on hyper's client to an `http://` server, through reqwest otherwise and for a
    /// redirect (see the module's documentation). The error says what failed, for a person.
    async fn send(self) -> Result<http::Response<Body>, String> {
        let failed =
            |e: &(dyn std::error::Error + 'static)| format!("the request failed: {}", innermost(e));
        let to = &self.to;
        if let Some((client, uri)) = &to.plain {
            let mut request = http::Request::new(http_body_util::Full::new(self.body.clone()));
            *request.method_mut() = http::Method::POST;
            *request.uri_mut() = uri.clone();
            *request.headers_mut() = self.headers.clone();
            let response = client.request(request).await.map_err(|e| failed(&e))?;
            if !matches!(response.status().as_u16(), 307 | 308) {
                return Ok(response.map(http_body_util::Either::Left));
            }
        }
        let response = to
            .client
            .post(to.url.clone())
            .headers(self.headers)
            .body(self.body)
            .send()
            .await
            .map_err(|e| failed(&e))?;
        Ok(http::Response::from(response).map(http_body_util::Either::Right))
    }
}

/// What a round's POST brought back, once the head of its response is read.
pub(super) enum Opened {
    /// The whole body of a response that is not an event stream (or not a success).
    Body {
        status: http::StatusCode,
        body: Vec<u8>,
    },
    /// An event stream's body, to be read event by event ([`events`]).
    Stream(Body),
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
    let response = post.send().await.map_err(DirectError::Failed)?;
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
        return Ok(Opened::Stream(response.into_body()));
    }
    let body = capped_body(response, max_json).await?;
    Ok(Opened::Body { status, body })
}

/// Hand the data of the events of the stream `body` to `events` one by one, each refused
/// past `max_event` bytes before it is handed on; a broken stream ends with its error.
pub(super) async fn events(
    mut body: Body,
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
            let why = format!("an event of the server's response is larger than {max_event} bytes");
            let _ = events.send(Err(DirectError::Failed(why))).await;
            return;
        }
        match next_chunk(&mut body).await {
            Some(Ok(chunk)) => buffer.extend_from_slice(&chunk),
            Some(Err(why)) => {
                let _ = events.send(Err(DirectError::Failed(why))).await;
                return;
            }
            None => return,
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
async fn next_chunk(body: &mut Body) -> Option<Result<bytes::Bytes, String>> {
    use http_body_util::BodyExt as _;
    loop {
        match body.frame().await? {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    return Some(Ok(data));
                }
            }
            Err(e) => {
                return Some(Err(format!(
                    "the response broke off: {}",
                    innermost(e.as_ref())
                )));
            }
        }
    }
}

/// The body of `response`, refused past `max` bytes before it is parsed.
async fn capped_body(response: http::Response<Body>, max: usize) -> Result<Vec<u8>, DirectError> {
    let too_large =
        || DirectError::Failed(format!("the server's response is larger than {max} bytes"));
    if http_body::Body::size_hint(response.body())
        .exact()
        .is_some_and(|length| length > max as u64)
    {
        return Err(too_large());
    }
    let mut stream = response.into_body();
    let mut body = Vec::new();
    while let Some(chunk) = next_chunk(&mut stream).await {
        let chunk = chunk.map_err(DirectError::Failed)?;
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
