//! One request to a model's endpoint, sent with its retries: a busy answer (429, 5xx) is tried
//! again, at most [`ATTEMPTS`] times, waiting what `Retry-After` says up to
//! [`MAX_RETRY_AFTER`].

use super::sse::{OnText, each_event, is_event_stream};
use super::{Generation, LlmError, Message, Secret, ToolSpec, Turn};

/// The providers' structs, each over one [`Endpoint`], with its constructor (`$base_url`
/// documents the base URL it wants) and `with_generation`.
macro_rules! providers {
    ($($(#[$doc:meta])* $name:ident: $base_url:literal;)+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            pub(crate) endpoint: Endpoint,
        }

        impl $name {
            #[doc = $base_url]
            pub fn new(
                base_url: impl Into<String>,
                api_key: Option<Secret>,
                model: impl Into<String>,
                timeout: std::time::Duration,
            ) -> Result<Self, LlmError> {
                let endpoint = Endpoint::new(base_url.into(), api_key, model.into(), timeout)?;
                Ok(Self { endpoint })
            }

            /// The same endpoint with other [`Generation`] settings.
            pub fn with_generation(mut self, generation: Generation) -> Self {
                self.endpoint.generation = generation;
                self
            }
        }
    )+};
}

/// What one completion asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ask<'a> {
    /// The conversation so far.
    pub(crate) messages: &'a [Message],
    /// The tools the model may call.
    pub(crate) tools: &'a [ToolSpec],
    /// Whether the answer should come as an event stream.
    pub(crate) stream: bool,
}

/// What one provider says on the wire: how it asks, and how its answers read, whole or
/// streamed. [`complete`] and [`stream`] are written once over it.
pub(crate) trait Wire {
    /// An answer being streamed, gathered event by event.
    type Streamed: Gather;

    /// The request for one completion.
    fn request(&self, ask: Ask<'_>) -> reqwest::RequestBuilder;

    /// A whole answer's body.
    fn whole(answer: &[u8]) -> Result<Turn, LlmError>;
}

/// A streamed answer being gathered, event by event.
pub(crate) trait Gather: Default {
    /// One event's `data:`; `true` once the answer is complete.
    fn take(&mut self, data: &str, on_text: OnText<'_>) -> Result<bool, LlmError>;

    /// The answer, once its events are in.
    fn finish(self) -> Result<Turn, LlmError>;
}

/// One completion, answered whole.
pub(crate) async fn complete<W: Wire>(
    wire: &W,
    messages: &[Message],
    tools: &[ToolSpec],
) -> Result<Turn, LlmError> {
    let ask = Ask {
        messages,
        tools,
        stream: false,
    };
    let response = Endpoint::send(wire.request(ask)).await?;
    W::whole(&response.bytes().await?)
}

/// One completion, streamed: `on_text` gets each piece of the reply's words as it comes. A
/// server that answers whole (JSON, not an event stream) is read as by [`complete`].
pub(crate) async fn stream<W: Wire>(
    wire: &W,
    messages: &[Message],
    tools: &[ToolSpec],
    on_text: OnText<'_>,
) -> Result<Turn, LlmError> {
    let ask = Ask {
        messages,
        tools,
        stream: true,
    };
    let response = Endpoint::send(wire.request(ask)).await?;
    if !is_event_stream(&response) {
        return W::whole(&response.bytes().await?);
    }
    let mut streamed = W::Streamed::default();
    each_event(response, |data| streamed.take(data, on_text)).await?;
    streamed.finish()
}

/// Where a model lives and how to reach it; shared by the providers.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) base_url: String,
    pub(crate) api_key: Option<Secret>,
    pub(crate) model: String,
    pub(crate) http: reqwest::Client,
    pub(crate) generation: Generation,
}

impl Endpoint {
    pub(crate) fn new(
        base_url: String,
        api_key: Option<Secret>,
        model: String,
        timeout: std::time::Duration,
    ) -> Result<Self, LlmError> {
        // No fallback to a default client: that one would wait for a model forever.
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(LlmError::Client)?;
        Ok(Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            model,
            http,
            generation: Generation::default(),
        })
    }

    /// Send a request; a non-success status becomes [`LlmError::Status`] with the body's start.
    /// A busy or failing server (429, 500, 502, 503, 504) is asked again, at most
    /// [`ATTEMPTS`] times in all, after its `Retry-After` (whole seconds, at most
    /// [`MAX_RETRY_AFTER`]) or else after half a second per attempt made.
    pub(crate) async fn send(
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, LlmError> {
        let mut attempt: u32 = 1;
        loop {
            let copy = if attempt < ATTEMPTS {
                request.try_clone()
            } else {
                None
            };
            let Some(this) = copy else {
                return send_once(request).await?.map_err(LlmError::from);
            };
            match send_once(this).await? {
                Ok(response) => return Ok(response),
                Err(refused) if busy(refused.status) => {
                    let wait = refused
                        .retry_after
                        .unwrap_or(std::time::Duration::from_millis(500) * attempt)
                        .min(MAX_RETRY_AFTER);
                    tracing::info!(
                        status = refused.status,
                        attempt,
                        wait_ms = wait.as_millis() as u64,
                        "the model is busy; asking again"
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(refused) => return Err(refused.into()),
            }
        }
    }
}

/// Whether a status says the server is busy or failing for now (worth asking again).
pub(crate) fn busy(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504)
}

impl LlmError {
    /// The server answered that it is busy or failing for now (429 or a 5xx gateway status),
    /// after the retries.
    pub fn is_busy(&self) -> bool {
        matches!(self, LlmError::Status { status, .. } if busy(*status))
    }
}

/// How many times one request is sent at most (the first time and the retries).
pub const ATTEMPTS: u32 = 3;
/// The longest wait before a retry, whatever `Retry-After` asks.
pub const MAX_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

/// A non-success answer: its status, the start of its body, and the wait it asked for.
pub(crate) struct Refused {
    pub(crate) status: u16,
    pub(crate) body: String,
    pub(crate) retry_after: Option<std::time::Duration>,
}

impl From<Refused> for LlmError {
    fn from(refused: Refused) -> Self {
        LlmError::Status {
            status: refused.status,
            body: refused.body,
        }
    }
}

/// One request: the response, or what a non-success status said.
pub(crate) async fn send_once(
    request: reqwest::RequestBuilder,
) -> Result<Result<reqwest::Response, Refused>, LlmError> {
    let response = request.send().await?;
    let status = response.status();
    if status.is_success() {
        return Ok(Ok(response));
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map(std::time::Duration::from_secs);
    let body: String = response
        .text()
        .await
        .unwrap_or_default()
        .chars()
        .take(500)
        .collect();
    Ok(Err(Refused {
        status: status.as_u16(),
        body,
        retry_after,
    }))
}

pub(crate) use providers;
