//! The 2025-11-25 sessions behind `/mcp`: rmcp's `SessionManager`, kept lean.
//!
//! rmcp's own `LocalSessionManager` runs a worker task per session with three channels between
//! it, the HTTP side and the session's serve loop, each channel allocating its first block of
//! 32 message slots when made (about 60 KiB a session before anything is sent). Here a session
//! is one lock around plain queues: the serve loop's transport routes each server message
//! where it goes while it holds the lock, the HTTP side reads its streams through shared
//! queues, and nothing is allocated for a stream until it carries something.
//!
//! What goes where is rmcp's rule: a response, an error and a server request tied to a call
//! (SEP-2260) go on that call's POST stream; progress goes on the stream of the request whose
//! token it names; a cancellation on the stream of the request it cancels; everything else on
//! the session's GET stream. Every event has an id (`index/stream` on a call's stream, `index`
//! on the GET stream) and the last 16 of each stream are kept, so a client that lost a stream
//! resumes it with `Last-Event-ID` (a call's stream for a minute after it ended). A session
//! nobody used for five minutes is closed.
//!
//! rmcp's serve loop runs a session only through `initialize`: rmcp checks and answers it as
//! it always does, and when its answer passes through here the session is handed to a
//! [`Dispatch`] of its own (`driver`), which serves every later message by calling the
//! server's handler directly; the serve loop reads the end of its input and stops. A session
//! then costs a map entry and what it holds, not a serve loop with its task and two channels
//! (about 33 KiB a session, heaptrack). The handler answers through a [`SessionLink`] in the
//! request's extensions: `Ctx` sends its notifications and questions through it, and the
//! client's answers come back here by id.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use futures::Stream;
use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ClientResult, GetMeta,
    InitializeRequestParams, ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio_util::sync::CancellationToken;

use crate::util::lock;

use super::queue::{Queue, Reader, Replay};

/// How long a call's finished stream can still be resumed.
const FINISHED_KEPT: Duration = Duration::from_secs(60);
/// A session nobody used for this long is closed.
const IDLE: Duration = Duration::from_secs(300);

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    /// No such session (it ended, or never was).
    #[error("no such session")]
    NotFound,
    /// The session's serve loop has ended.
    #[error("the session is closed")]
    Closed,
    /// A `Last-Event-ID` that names no stream of this session.
    #[error("that event id names no stream of this session")]
    UnknownEvent,
}

/// Serves a session's messages once `initialize` is answered (see the module's documentation).
pub(crate) trait Dispatch: Send + Sync {
    /// Serve a client request, in a task of its own: its answer goes to
    /// [`SessionLink::finish_call`]. `ct` is cancelled when the client cancels the request or
    /// the session ends.
    fn request(
        &self,
        link: SessionLink,
        id: RequestId,
        request: ClientRequest,
        ct: CancellationToken,
    );
    /// Hand the handler a client notification.
    fn notification(&self, link: SessionLink, notification: ClientNotification);
}

/// Makes the [`Dispatch`] of a session whose `initialize` was answered, from the parameters
/// the client sent with the version agreed on.
pub(crate) trait DriverFactory: Send + Sync {
    /// The session's dispatch.
    fn driver(&self, client: InitializeRequestParams) -> Arc<dyn Dispatch>;
}

/// The sessions of one endpoint.
pub(crate) struct LeanSessions {
    sessions: std::sync::RwLock<HashMap<SessionId, Arc<Session>>>,
    sse_retry: Option<Duration>,
    /// Takes sessions over from rmcp's serve loop once they are initialized (none: the serve
    /// loop serves them to their end).
    drivers: Option<Arc<dyn DriverFactory>>,
    /// When idle sessions were last looked for.
    swept: Mutex<Instant>,
}

impl std::fmt::Debug for LeanSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeanSessions")
            .field("open", &self.len())
            .finish_non_exhaustive()
    }
}

impl LeanSessions {
    pub(crate) fn new(
        sse_retry: Option<Duration>,
        drivers: Option<Arc<dyn DriverFactory>>,
    ) -> Self {
        Self {
            sessions: Default::default(),
            sse_retry,
            drivers,
            swept: Mutex::new(Instant::now()),
        }
    }

    /// How many sessions are open.
    pub(crate) fn len(&self) -> usize {
        self.sessions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Whether `id` is an open session.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.sessions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(id)
    }

    fn get(&self, id: &SessionId) -> Result<Arc<Session>, SessionError> {
        self.sweep();
        let session = self
            .sessions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or(SessionError::NotFound)?;
        lock(&session.state).last_used = Instant::now();
        Ok(session)
    }

    /// Close the sessions nobody used for [`IDLE`] (at most every half minute).
    fn sweep(&self) {
        {
            let mut swept = lock(&self.swept);
            if swept.elapsed() < Duration::from_secs(30) {
                return;
            }
            *swept = Instant::now();
        }
        let idle: Vec<SessionId> = self
            .sessions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|(_, session)| lock(&session.state).last_used.elapsed() > IDLE)
            .map(|(id, _)| id.clone())
            .collect();
        for id in idle {
            tracing::debug!(session = %id, "closing a session idle for {} s", IDLE.as_secs());
            self.remove(&id);
        }
    }

    /// A message to a session served by its dispatch: a notification to the handler, an
    /// answer to the question that waits for it.
    fn accept(session: &Arc<Session>, id: &SessionId, message: ClientJsonRpcMessage) {
        let mut state = lock(&session.state);
        match message {
            ClientJsonRpcMessage::Notification(notification) => {
                let Some(driver) = state.driver.clone() else {
                    return;
                };
                drop(state);
                driver.notification(SessionLink::of(session, id), notification.notification);
            }
            ClientJsonRpcMessage::Response(response) => {
                if let Some(waiting) = state.asked.remove(&response.id) {
                    let _ = waiting.send(Ok(response.result));
                }
            }
            ClientJsonRpcMessage::Error(error) => {
                if let Some(waiting) = error.id.as_ref().and_then(|id| state.asked.remove(id)) {
                    let _ = waiting.send(Err(error.error));
                }
            }
            ClientJsonRpcMessage::Request(request) => {
                // A request reaches here only without a stream of its own: nobody would read
                // its answer, so it is refused on the session's GET stream.
                drop(state);
                let refused = ServerJsonRpcMessage::error(
                    ErrorData::invalid_request("a request needs a POST of its own", None),
                    Some(request.id),
                );
                let _ = session.post(refused);
            }
        }
    }

    fn remove(&self, id: &SessionId) {
        let removed = self
            .sessions
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id);
        if let Some(session) = removed {
            crate::metrics::session_closed(session.opened.elapsed());
            session.close();
        }
    }
}

/// One session: its state behind one lock.
struct Session {
    state: Mutex<State>,
    /// When it opened (for the session-duration histogram).
    opened: Instant,
    /// Cancelled when it closes: the requests it serves end with it.
    ct: CancellationToken,
}

/// What a server request waits for: the client's result or error.
type Answered = tokio::sync::oneshot::Sender<Result<ClientResult, ErrorData>>;

/// The `initialize` in flight: its id, who waits for its answer, and (when sessions are taken
/// over) the client's parameters and the factory of the session's dispatch.
struct Initializing {
    id: RequestId,
    answer: tokio::sync::oneshot::Sender<ServerJsonRpcMessage>,
    takeover: Option<(InitializeRequestParams, Arc<dyn DriverFactory>)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Resource {
    Request(RequestId),
    Progress(ProgressToken),
}

struct State {
    /// Client messages for the serve loop, and its waker.
    inbound: VecDeque<ClientJsonRpcMessage>,
    waiting: Option<Waker>,
    closed: bool,
    /// The `initialize` in flight.
    initializing: Option<Initializing>,
    /// Serves the session once it is initialized; rmcp's serve loop has then been told to end.
    driver: Option<Arc<dyn Dispatch>>,
    /// The serve loop's worker closes the session when the loop ends; after a takeover that
    /// close is not the client's, and is ignored once.
    ignore_close: bool,
    /// Questions sent to the client (server requests), by id, waiting for its answer.
    asked: HashMap<RequestId, Answered>,
    next_asked: i64,
    /// The client's requests being served, by id: what cancels each.
    serving: HashMap<RequestId, CancellationToken>,
    next_stream: u64,
    /// The POST streams of calls, by stream number.
    calls: HashMap<u64, CallStream>,
    /// Which stream a request id or a progress token belongs to.
    routes: HashMap<Resource, u64>,
    /// The session's GET stream (one reader at a time; later ones only stay open).
    common: Replay,
    shadows: Vec<Arc<Queue>>,
    last_used: Instant,
}

struct CallStream {
    replay: Replay,
    routes: HashSet<Resource>,
    finished: Option<Instant>,
}

impl Session {
    fn close(&self) {
        self.ct.cancel();
        let waker = {
            let mut state = lock(&self.state);
            state.closed = true;
            state.inbound.clear();
            // Questions still waiting learn that no answer will come.
            state.asked.clear();
            state.serving.clear();
            for call in state.calls.values() {
                call.replay.queue.end();
            }
            state.common.queue.end();
            for shadow in &state.shadows {
                shadow.end();
            }
            state.waiting.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Give the serve loop a client message.
    fn deliver(state: &mut State, message: ClientJsonRpcMessage) -> Option<Waker> {
        state.inbound.push_back(message);
        state.waiting.take()
    }

    /// Where a message from the serve loop goes, as rmcp's local session manager decides.
    fn route(state: &State, message: &ServerJsonRpcMessage) -> (Option<u64>, bool) {
        let call = |resource: Resource| state.routes.get(&resource).copied();
        match message {
            ServerJsonRpcMessage::Request(request) => {
                use rmcp::model::GetExtensions;
                let originating = request
                    .request
                    .extensions()
                    .get::<rmcp::service::OriginatingRequestId>();
                (
                    originating.and_then(|origin| call(Resource::Request(origin.0.clone()))),
                    false,
                )
            }
            ServerJsonRpcMessage::Notification(notification) => match &notification.notification {
                ServerNotification::ProgressNotification(progress) => (
                    call(Resource::Progress(progress.params.progress_token.clone())),
                    false,
                ),
                ServerNotification::CancelledNotification(cancelled) => (
                    cancelled
                        .params
                        .request_id
                        .clone()
                        .and_then(|id| call(Resource::Request(id))),
                    false,
                ),
                // A log message a call sent goes on that call's stream while it is open.
                other => {
                    use rmcp::model::GetExtensions;
                    let originating = other
                        .extensions()
                        .get::<rmcp::service::OriginatingRequestId>();
                    (
                        originating.and_then(|origin| call(Resource::Request(origin.0.clone()))),
                        false,
                    )
                }
            },
            ServerJsonRpcMessage::Response(response) => {
                (call(Resource::Request(response.id.clone())), true)
            }
            ServerJsonRpcMessage::Error(error) => (
                error.id.clone().and_then(|id| call(Resource::Request(id))),
                true,
            ),
        }
    }

    /// A message from the serve loop: to whoever waits for the `initialize` answer, to its
    /// call's stream, or to the GET stream.
    fn post(&self, message: ServerJsonRpcMessage) -> Result<(), SessionError> {
        let mut state = lock(&self.state);
        if state.closed {
            return Err(SessionError::Closed);
        }
        let answers_initialize = match (&state.initializing, &message) {
            (Some(init), ServerJsonRpcMessage::Response(response)) => init.id == response.id,
            (Some(init), ServerJsonRpcMessage::Error(error)) => error.id.as_ref() == Some(&init.id),
            _ => false,
        };
        if answers_initialize && let Some(init) = state.initializing.take() {
            if let (Some((mut client, drivers)), ServerJsonRpcMessage::Response(response)) =
                (init.takeover, &message)
                && let rmcp::model::ServerResult::InitializeResult(result) = &response.result
            {
                // From now on the session is served here; the serve loop reads the end of its
                // input and stops.
                client.protocol_version = result.protocol_version.clone();
                state.driver = Some(drivers.driver(client));
                state.ignore_close = true;
                wake(state.waiting.take());
            }
            let _ = init.answer.send(message);
            return Ok(());
        }
        let (stream, ends) = Self::route(&state, &message);
        let event = ServerSseMessage::from_message(message);
        match stream.and_then(|stream| state.calls.get_mut(&stream).map(|call| (stream, call))) {
            Some((number, call)) => {
                call.replay.send(event, Some(number));
                if ends {
                    Self::finish(&mut state, number);
                }
            }
            None => state.common.send(event, None),
        }
        Ok(())
    }

    /// A client's cancellation ends the stream of the call it cancels.
    fn cancelled(state: &mut State, id: &RequestId) {
        if let Some(&number) = state.routes.get(&Resource::Request(id.clone())) {
            Self::finish(state, number);
        }
    }

    /// Call stream `number` is over: end it, and route nothing more to it.
    fn finish(state: &mut State, number: u64) {
        let Some(call) = state.calls.get_mut(&number) else {
            return;
        };
        call.replay.queue.end();
        call.finished = Some(Instant::now());
        for route in call.routes.drain() {
            state.routes.remove(&route);
        }
    }

    fn forget_finished(state: &mut State) {
        state.calls.retain(|_, call| {
            call.finished
                .is_none_or(|finished| finished.elapsed() < FINISHED_KEPT)
        });
    }
}

/// A handle on one session, for the handler serving its requests (in a request's extensions)
/// and for the registry of sessions: what goes to the client goes through it, and the
/// client's answers to its questions come back through it.
#[derive(Clone)]
pub(crate) struct SessionLink {
    session: Weak<Session>,
    id: SessionId,
}

impl std::fmt::Debug for SessionLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLink").field("id", &self.id).finish()
    }
}

impl SessionLink {
    fn of(session: &Arc<Session>, id: &SessionId) -> Self {
        Self {
            session: Arc::downgrade(session),
            id: id.clone(),
        }
    }

    /// The session's id (the registry of sessions knows it by this).
    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// Whether the session is still open.
    pub(crate) fn is_open(&self) -> bool {
        self.session
            .upgrade()
            .is_some_and(|session| !lock(&session.state).closed)
    }

    /// Send a message to the client, routed as every message of the session is.
    pub(crate) fn send(&self, message: ServerJsonRpcMessage) -> bool {
        self.session
            .upgrade()
            .is_some_and(|session| session.post(message).is_ok())
    }

    /// Send a notification to the client.
    pub(crate) fn notify(&self, notification: ServerNotification) -> bool {
        self.send(ServerJsonRpcMessage::notification(notification))
    }

    /// The answer of the client's request `id`: sent on its stream, which it ends, unless the
    /// client cancelled the request (then nothing is sent, as the cancellation asks).
    pub(crate) fn finish_call(&self, id: &RequestId, message: ServerJsonRpcMessage) {
        let Some(session) = self.session.upgrade() else {
            return;
        };
        let Some(ct) = lock(&session.state).serving.remove(id) else {
            tracing::debug!(%id, "not answering a cancelled request");
            return;
        };
        let _ = session.post(message);
        // What the request started and left running ends with it.
        ct.cancel();
    }
}

/// The serve loop's side of a session.
pub(crate) struct SessionTransport {
    session: Weak<Session>,
}

impl Transport<RoleServer> for SessionTransport {
    type Error = SessionError;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sent = match self.session.upgrade() {
            Some(session) => session.post(item),
            None => Err(SessionError::Closed),
        };
        std::future::ready(sent)
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        let session = self.session.clone();
        std::future::poll_fn(move |cx| {
            let Some(session) = session.upgrade() else {
                return Poll::Ready(None);
            };
            let mut state = lock(&session.state);
            if let Some(message) = state.inbound.pop_front() {
                if state.inbound.is_empty() {
                    // A session mostly waits: it keeps no room for messages it does not have.
                    state.inbound = VecDeque::new();
                }
                return Poll::Ready(Some(message));
            }
            if state.closed || state.driver.is_some() {
                return Poll::Ready(None);
            }
            crate::util::keep_waker(&mut state.waiting, cx);
            Poll::Pending
        })
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        if let Some(session) = self.session.upgrade() {
            // A serve loop that ends because the session was taken over leaves it open.
            let taken_over = lock(&session.state).driver.is_some();
            if !taken_over {
                session.close();
            }
        }
        std::future::ready(Ok(()))
    }
}

fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}

impl SessionManager for LeanSessions {
    type Error = SessionError;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.sweep();
        let id: SessionId = crate::util::fresh_nonce().into();
        let session = Arc::new(Session {
            state: Mutex::new(State {
                inbound: VecDeque::new(),
                waiting: None,
                closed: false,
                initializing: None,
                driver: None,
                ignore_close: false,
                asked: HashMap::new(),
                next_asked: 0,
                serving: HashMap::new(),
                next_stream: 0,
                calls: HashMap::new(),
                routes: HashMap::new(),
                common: Replay::new(Queue::unread()),
                shadows: Vec::new(),
                last_used: Instant::now(),
            }),
            opened: Instant::now(),
            ct: CancellationToken::new(),
        });
        let transport = SessionTransport {
            session: Arc::downgrade(&session),
        };
        self.sessions
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id.clone(), session);
        crate::metrics::session_opened();
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let session = self.get(id)?;
        let (answer, answered) = tokio::sync::oneshot::channel();
        let waker = {
            let mut state = lock(&session.state);
            let ClientJsonRpcMessage::Request(request) = &message else {
                return Err(SessionError::Closed);
            };
            let takeover = match (&request.request, &self.drivers) {
                (ClientRequest::InitializeRequest(init), Some(drivers)) => {
                    Some((init.params.clone(), drivers.clone()))
                }
                _ => None,
            };
            state.initializing = Some(Initializing {
                id: request.id.clone(),
                answer,
                takeover,
            });
            Session::deliver(&mut state, message)
        };
        wake(waker);
        answered.await.map_err(|_| SessionError::Closed)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.contains(id))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let taken_over = self
            .sessions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .is_some_and(|session| std::mem::take(&mut lock(&session.state).ignore_close));
        if !taken_over {
            self.remove(id);
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let session = self.get(id)?;
        let (queue, waker) = {
            let mut state = lock(&session.state);
            if state.closed {
                return Err(SessionError::Closed);
            }
            Session::forget_finished(&mut state);
            let number = state.next_stream;
            state.next_stream += 1;
            let queue = Queue::new();
            let mut call = CallStream {
                replay: Replay::new(queue.clone()),
                routes: HashSet::new(),
                finished: None,
            };
            if let Some(retry) = self.sse_retry {
                call.replay
                    .send(ServerSseMessage::retry(retry), Some(number));
            }
            if let ClientJsonRpcMessage::Request(request) = &message {
                let mut routes = vec![Resource::Request(request.id.clone())];
                if let Some(token) = request.request.get_meta().get_progress_token() {
                    routes.push(Resource::Progress(token));
                }
                for route in routes {
                    call.routes.insert(route.clone());
                    state.routes.insert(route, number);
                }
            }
            state.calls.insert(number, call);
            match (state.driver.clone(), message) {
                (Some(driver), ClientJsonRpcMessage::Request(request)) => {
                    let ct = session.ct.child_token();
                    state.serving.insert(request.id.clone(), ct.clone());
                    drop(state);
                    let link = SessionLink::of(&session, id);
                    driver.request(link, request.id, request.request, ct);
                    return Ok(Reader(queue));
                }
                (Some(_), other) => {
                    // Only requests open a stream; anything else goes where it would as a POST.
                    drop(state);
                    Self::accept(&session, id, other);
                    return Ok(Reader(queue));
                }
                (None, message) => (queue, Session::deliver(&mut state, message)),
            }
        };
        wake(waker);
        Ok(Reader(queue))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        let session = self.get(id)?;
        let waker = {
            let mut state = lock(&session.state);
            if state.closed {
                return Err(SessionError::Closed);
            }
            if let ClientJsonRpcMessage::Notification(notification) = &message
                && let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                && let Some(request) = &cancelled.params.request_id
            {
                Session::cancelled(&mut state, request);
                if let Some(ct) = state.serving.remove(request) {
                    ct.cancel();
                }
            }
            if state.driver.is_some() {
                drop(state);
                Self::accept(&session, id, message);
                return Ok(());
            }
            Session::deliver(&mut state, message)
        };
        wake(waker);
        Ok(())
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let session = self.get(id)?;
        let mut state = lock(&session.state);
        resume_common(&mut state, 0).map(Reader)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let session = self.get(id)?;
        let mut state = lock(&session.state);
        let (index, stream) = match last_event_id.split_once('/') {
            Some((index, stream)) => (index, Some(stream)),
            None => (last_event_id.as_str(), None),
        };
        let seen: usize = index.parse().map_err(|_| SessionError::UnknownEvent)?;
        // The client has event `seen`; it is sent what came after (rmcp sends `seen` again).
        let index = seen.saturating_add(1);
        let queue = match stream {
            None => resume_common(&mut state, index)?,
            Some(stream) => {
                let number: u64 = stream.parse().map_err(|_| SessionError::UnknownEvent)?;
                let call = state
                    .calls
                    .get_mut(&number)
                    .ok_or(SessionError::UnknownEvent)?;
                let queue = call
                    .replay
                    .resume(index)
                    .ok_or(SessionError::UnknownEvent)?;
                if call.finished.is_some() {
                    queue.end();
                }
                queue
            }
        };
        Ok(Reader(queue))
    }
}

/// The GET stream from `index` on: the session's stream if nobody reads it now, else one that
/// only stays open (so reconnecting clients do not take it from each other).
fn resume_common(state: &mut State, index: usize) -> Result<Arc<Queue>, SessionError> {
    if state.closed {
        return Err(SessionError::Closed);
    }
    if state.common.queue.is_dead() {
        return state.common.resume(index).ok_or(SessionError::UnknownEvent);
    }
    const MAX_SHADOWS: usize = 32;
    state.shadows.retain(|shadow| !shadow.is_dead());
    if state.shadows.len() >= MAX_SHADOWS {
        state.shadows.remove(0).end();
    }
    let shadow = Queue::new();
    state.shadows.push(shadow.clone());
    Ok(shadow)
}

mod asking;
pub(crate) use asking::NoAnswer;

#[cfg(test)]
mod tests;
