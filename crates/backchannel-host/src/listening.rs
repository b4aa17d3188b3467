//! A session's listening stream, watched: on 2025-11-25 a server sends the requests and
//! notifications that belong to no call (an elicitation a tool sends on its own, a
//! `list_changed`) on the GET stream the client opens after `initialize`. rmcp opens that stream
//! in the background, so a first call made at once can reach the server before it does, and a
//! server that sends its question right then has nowhere to send it (the TypeScript SDK drops
//! it). [`Listening`] wraps the HTTP client and reports when the first GET for the session has
//! been answered (opened or refused), so the host can wait for it before its first call.

use std::collections::HashMap;
use std::sync::Arc;
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
/// listening stream has been answered.
#[derive(Clone)]
pub(crate) struct Listening<C> {
    inner: C,
    answered: Arc<watch::Sender<bool>>,
}

/// The other end of [`Listening`]: waits until the listening stream has been answered.
pub(crate) struct ListeningOpened(watch::Receiver<bool>);

impl<C> Listening<C> {
    /// Wrap `inner`.
    pub(crate) fn new(inner: C) -> (Self, ListeningOpened) {
        let (answered, opened) = watch::channel(false);
        (
            Self {
                inner,
                answered: Arc::new(answered),
            },
            ListeningOpened(opened),
        )
    }
}

impl ListeningOpened {
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
