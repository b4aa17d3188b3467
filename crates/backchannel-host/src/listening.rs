//! A session's listening stream, watched: on 2025-11-25 a server sends the requests and
//! notifications that belong to no call (an elicitation a tool sends on its own, a
//! `list_changed`) on the GET stream the client opens after `initialize`. rmcp opens that stream
//! in the background, so a first call made at once can reach the server before it does, and a
//! server that sends its question right then has nowhere to send it (the TypeScript SDK drops
//! it). [`Listening`] wraps the HTTP client and reports when the first GET for the session has
//! been answered (opened or refused), so the host can wait for it before its first call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};
use tokio::sync::watch;

/// An HTTP client for rmcp's streamable HTTP transport that tells when the session's
/// listening stream has been answered, and which session the server gave.
#[derive(Clone)]
pub(crate) struct Listening<C> {
    inner: C,
    answered: Arc<watch::Sender<bool>>,
    seen: Arc<Mutex<Option<Arc<str>>>>,
}

/// The other end of [`Listening`]: waits until the listening stream has been answered.
pub(crate) struct ListeningOpened(watch::Receiver<bool>, Sessions);

/// Ends one session at the server (an HTTP DELETE, authenticated as the connection is).
type EndSession = Arc<
    dyn Fn(Arc<str>) -> futures::future::BoxFuture<'static, Result<(), crate::direct::Cause>>
        + Send
        + Sync,
>;

/// A connection's 2025-11-25 session as its requests carry it, and a way to end a session at
/// the same server.
#[derive(Clone)]
pub(crate) struct Sessions {
    seen: Arc<Mutex<Option<Arc<str>>>>,
    end: EndSession,
}

impl Sessions {
    /// The session the connection's requests carry now; `None` before it has one (and on
    /// 2026-07-28, which has none).
    pub(crate) fn current(&self) -> Option<String> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_deref()
            .map(str::to_owned)
    }

    /// End `session` at the server.
    pub(crate) async fn end(&self, session: &str) -> Result<(), crate::direct::Cause> {
        (self.end)(Arc::from(session)).await
    }
}

impl<C> Listening<C>
where
    C: StreamableHttpClient + Clone + Send + Sync + 'static,
    C::Error: std::error::Error + Send + Sync + 'static,
{
    /// Wrap `inner`, which reaches the server as `config` says.
    pub(crate) fn new(
        inner: C,
        config: &rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig,
    ) -> (Self, ListeningOpened) {
        let (answered, opened) = watch::channel(false);
        let seen = Arc::new(Mutex::new(None));
        let (uri, auth, headers) = (
            config.uri.clone(),
            config.auth_header.clone(),
            config.custom_headers.clone(),
        );
        let client = inner.clone();
        let end: EndSession = Arc::new(move |session| {
            let (client, uri, auth, headers) =
                (client.clone(), uri.clone(), auth.clone(), headers.clone());
            Box::pin(async move {
                client
                    .delete_session(uri, session, auth, headers)
                    .await
                    .map_err(crate::direct::Cause::from)
            })
        });
        let sessions = Sessions {
            seen: seen.clone(),
            end,
        };
        (
            Self {
                inner,
                answered: Arc::new(answered),
                seen,
            },
            ListeningOpened(opened, sessions),
        )
    }
}

impl<C> Listening<C> {
    /// Note the session a request carries.
    fn carries(&self, session: Option<&Arc<str>>) {
        if let Some(session) = session {
            let mut seen = self
                .seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if seen.as_ref() != Some(session) {
                *seen = Some(session.clone());
            }
        }
    }
}

impl ListeningOpened {
    /// The connection's sessions (see [`Sessions`]).
    pub(crate) fn sessions(&self) -> Sessions {
        self.1.clone()
    }

    /// Wait until the server has answered the listening GET (with a stream or a refusal), at
    /// most `limit`. Returns whether it did.
    pub(crate) async fn wait(mut self, limit: Duration) -> bool {
        tokio::time::timeout(limit, self.0.wait_for(|answered| *answered))
            .await
            .is_ok_and(|answered| answered.is_ok())
    }
}

impl<C> Listening<C> {
    /// After a GET: when it was the session's listening stream (a session, and not resuming
    /// after an event), report it answered.
    fn answered_if_listening(&self, session: bool, resuming: bool) {
        if session && !resuming {
            self.answered.send_replace(true);
        }
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Listening<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.carries(session_id.as_ref());
        self.inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.carries(session_id.as_ref());
        self.inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.carries(session_id.as_ref());
        self.inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let (session, resuming) = (session_id.is_some(), last_event_id.is_some());
        let answer = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
        self.answered_if_listening(session, resuming);
        answer
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let (session, resuming) = (session_id.is_some(), last_event_id.is_some());
        let answer = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.answered_if_listening(session, resuming);
        answer
    }
}
