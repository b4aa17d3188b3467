//! A direct round's HTTP exchange ([`exchange`]): the POST sent on hyper's client or reqwest
//! ([`Post`]), and what comes back handed to the round one message at a time, capped before it
//! is parsed; and why a round gave no result ([`DirectError`]).

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
type Body = http_body_util::Either<hyper::body::Incoming, reqwest13::Body>;

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

/// What a direct round's exchange hands its caller.
pub(super) enum Frame {
    /// The whole body of a response that is not an event stream (or not a success).
    Body {
        status: http::StatusCode,
        body: Vec<u8>,
    },
    /// The data of one event of an event stream.
    Event(Vec<u8>),
}

/// Send `post` and hand what comes back to `frames`: one [`Frame::Body`], or the events of a
/// stream one by one, each capped (`limits`: a body's, an event's) before it is handed on.
pub(super) async fn exchange(
    post: Post,
    token_sent: bool,
    (max_json, max_event): (usize, usize),
    frames: tokio::sync::mpsc::Sender<Result<Frame, DirectError>>,
) {
    let response = match post.send().await {
        Ok(response) => response,
        Err(why) => {
            let _ = frames.send(Err(DirectError::Failed(why))).await;
            return;
        }
    };
    let status = response.status();
    if status == http::StatusCode::UNAUTHORIZED || status == http::StatusCode::FORBIDDEN {
        let challenge = response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let refused = match challenge {
            Some(_) if token_sent => Some(DirectError::TokenRefused),
            Some(challenge) => Some(DirectError::Unauthorized(challenge)),
            None if status == http::StatusCode::UNAUTHORIZED => {
                Some(DirectError::Unauthorized(String::new()))
            }
            None => None,
        };
        if let Some(refused) = refused {
            let _ = frames.send(Err(refused)).await;
            return;
        }
    }
    let sse = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !(sse && status.is_success()) {
        let body = capped_body(response, max_json).await;
        let _ = frames
            .send(body.map(|body| Frame::Body { status, body }))
            .await;
        return;
    }
    let mut body = response.into_body();
    let mut buffer: Vec<u8> = Vec::new();
    loop {
        while let Some((end, skip)) = event_end(&buffer) {
            let data = event_data(&buffer[..end]);
            buffer.drain(..end + skip);
            if !data.is_empty() && frames.send(Ok(Frame::Event(data))).await.is_err() {
                return;
            }
        }
        if buffer.len() > max_event {
            let why = format!("an event of the server's response is larger than {max_event} bytes");
            let _ = frames.send(Err(DirectError::Failed(why))).await;
            return;
        }
        match next_chunk(&mut body).await {
            Some(Ok(chunk)) => buffer.extend_from_slice(&chunk),
            Some(Err(why)) => {
                let _ = frames.send(Err(DirectError::Failed(why))).await;
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
