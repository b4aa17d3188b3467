//! The lean sessions, message by message: routing, resumption, idle sessions, takeover.

use super::*;
use futures::StreamExt;
use rmcp::model::ServerRequest;
use serde_json::json;

fn client(value: serde_json::Value) -> ClientJsonRpcMessage {
    serde_json::from_value(value).expect("a client message")
}

fn server(value: serde_json::Value) -> ServerJsonRpcMessage {
    serde_json::from_value(value).expect("a server message")
}

fn call(id: u64, token: &str) -> ClientJsonRpcMessage {
    client(json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "cancel_order", "arguments": {}, "_meta": {"progressToken": token}}
    }))
}

fn progress(token: &str, progress: u32) -> ServerJsonRpcMessage {
    server(json!({
        "jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": token, "progress": progress}
    }))
}

fn answer(id: u64) -> ServerJsonRpcMessage {
    server(json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}))
}

fn log() -> ServerJsonRpcMessage {
    server(json!({
        "jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "hello"}
    }))
}

/// Each event as `id method-or-result`.
fn shown(events: &[ServerSseMessage]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            let message = serde_json::to_value(event.message.as_deref()).expect("json");
            let what = message
                .get("method")
                .and_then(|method| method.as_str())
                .map_or_else(|| format!("answer {}", message["id"]), str::to_owned);
            format!("{} {what}", event.event_id.as_deref().unwrap_or("-"))
        })
        .collect()
}

#[tokio::test]
async fn a_call_stream_carries_its_progress_and_ends_with_its_answer() {
    let sessions = LeanSessions::new(None, None);
    let (id, mut serve_loop) = sessions.create_session().await.expect("session");
    let stream = sessions
        .create_stream(&id, call(7, "p"))
        .await
        .expect("stream");
    let other = sessions
        .create_stream(&id, call(8, "q"))
        .await
        .expect("stream");
    assert!(matches!(
        serve_loop.receive().await,
        Some(ClientJsonRpcMessage::Request(request)) if request.id == RequestId::Number(7)
    ));
    serve_loop.send(progress("p", 1)).await.expect("sent");
    serve_loop.send(progress("q", 1)).await.expect("sent");
    serve_loop.send(log()).await.expect("sent");
    serve_loop.send(answer(7)).await.expect("sent");
    let events: Vec<_> = stream.collect().await;
    assert_eq!(
        shown(&events),
        ["0/0 notifications/progress", "1/0 answer 7"],
        "the call's own progress and its answer, nothing of the other call's"
    );
    // A message tied to no call waits on the session's GET stream.
    let mut common = sessions.create_standalone_stream(&id).await.expect("GET");
    let first = common.next().await.expect("an event");
    assert_eq!(shown(&[first]), ["0 notifications/message"]);
    // After its answer, the first call's token routes nowhere; the other call's still does.
    serve_loop.send(progress("q", 2)).await.expect("sent");
    serve_loop.send(answer(8)).await.expect("sent");
    let events: Vec<_> = other.collect().await;
    assert_eq!(
        shown(&events),
        [
            "0/1 notifications/progress",
            "1/1 notifications/progress",
            "2/1 answer 8"
        ]
    );
}

#[tokio::test]
async fn last_event_id_sends_what_came_after_it_and_nothing_twice() {
    let sessions = LeanSessions::new(None, None);
    let (id, mut serve_loop) = sessions.create_session().await.expect("session");
    let mut stream = sessions
        .create_stream(&id, call(1, "p"))
        .await
        .expect("stream");
    serve_loop.send(progress("p", 1)).await.expect("sent");
    let first = stream.next().await.expect("an event");
    assert_eq!(first.event_id.as_deref(), Some("0/0"));
    drop(stream); // the connection is lost
    serve_loop.send(progress("p", 2)).await.expect("sent");
    serve_loop.send(answer(1)).await.expect("sent");
    let resumed = sessions.resume(&id, "0/0".into()).await.expect("resumable");
    let events: Vec<_> = resumed.collect().await;
    assert_eq!(
        shown(&events),
        ["1/0 notifications/progress", "2/0 answer 1"],
        "the events after 0/0, and the stream ends because the call has"
    );
    for unknown in ["9/0", "0/5", "x/0", "nonsense"] {
        assert!(
            matches!(
                sessions.resume(&id, unknown.into()).await,
                Err(SessionError::UnknownEvent)
            ),
            "{unknown} names no event of this session"
        );
    }
}

#[tokio::test]
async fn a_second_get_stream_stays_open_without_taking_the_first_ones_events() {
    let sessions = LeanSessions::new(None, None);
    let (id, mut serve_loop) = sessions.create_session().await.expect("session");
    let mut first = sessions.create_standalone_stream(&id).await.expect("GET");
    let mut second = sessions.create_standalone_stream(&id).await.expect("GET");
    serve_loop.send(log()).await.expect("sent");
    assert_eq!(
        shown(&[first.next().await.expect("an event")]),
        ["0 notifications/message"]
    );
    sessions.close_session(&id).await.expect("closed");
    assert!(
        second.next().await.is_none(),
        "the shadow ends with the session"
    );
    assert!(first.next().await.is_none());
    assert!(
        serve_loop.receive().await.is_none(),
        "the serve loop sees the end"
    );
    assert!(serve_loop.send(log()).await.is_err());
    assert!(matches!(
        sessions.create_stream(&id, call(2, "p")).await,
        Err(SessionError::NotFound)
    ));
}

/// A dispatch that hands each request's link to the test, and answers nothing itself.
struct Links(tokio::sync::mpsc::UnboundedSender<(SessionLink, RequestId)>);

impl Dispatch for Links {
    fn request(&self, link: SessionLink, id: RequestId, _: ClientRequest, _: CancellationToken) {
        let _ = self.0.send((link, id));
    }
    fn notification(&self, _: SessionLink, _: ClientNotification) {}
}

impl DriverFactory for Links {
    fn driver(&self, _: InitializeRequestParams) -> Arc<dyn Dispatch> {
        Arc::new(Links(self.0.clone()))
    }
}

fn initialize() -> ClientJsonRpcMessage {
    client(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}
    }))
}

/// A session taken over once initialized; its serve loop has seen the end of its input.
async fn taken_over() -> (
    Arc<LeanSessions>,
    SessionId,
    tokio::sync::mpsc::UnboundedReceiver<(SessionLink, RequestId)>,
) {
    let (links, calls) = tokio::sync::mpsc::unbounded_channel();
    let sessions = Arc::new(LeanSessions::new(None, Some(Arc::new(Links(links)))));
    let (id, mut serve_loop) = sessions.create_session().await.expect("session");
    let waiting = tokio::spawn({
        let (sessions, id) = (sessions.clone(), id.clone());
        async move { sessions.initialize_session(&id, initialize()).await }
    });
    assert!(serve_loop.receive().await.is_some(), "the initialize");
    let initialized = server(json!({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "serverInfo": {"name": "s", "version": "1"}}}));
    serve_loop.send(initialized).await.expect("sent");
    waiting.await.expect("joined").expect("answered");
    assert!(
        serve_loop.receive().await.is_none(),
        "the serve loop is told to end"
    );
    serve_loop.close().await.expect("its close");
    // The worker's close after its serve loop ended leaves the session open.
    sessions.close_session(&id).await.expect("closed");
    assert!(sessions.contains(&id));
    (sessions, id, calls)
}

fn elicit() -> ServerRequest {
    serde_json::from_value(json!({"method": "elicitation/create", "params": {
        "mode": "form", "message": "Go ahead?", "requestedSchema": {"type": "object", "properties": {}}}}))
    .expect("a server request")
}

#[tokio::test(start_paused = true)]
async fn a_taken_over_session_asks_through_its_link_and_hears_the_answer_or_withdraws() {
    let (sessions, id, mut calls) = taken_over().await;
    let stream = sessions
        .create_stream(&id, call(7, "p"))
        .await
        .expect("stream");
    let (link, call_id) = calls
        .recv()
        .await
        .expect("the request reached the dispatch");
    assert_eq!(call_id, RequestId::Number(7));
    // Answered: the question goes out on the call's stream and the answer comes back.
    let asking = tokio::spawn({
        let link = link.clone();
        async move {
            link.ask(elicit(), &RequestId::Number(7), Duration::from_secs(90))
                .await
        }
    });
    tokio::task::yield_now().await;
    let declined = client(json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "decline"}}));
    sessions
        .accept_message(&id, declined)
        .await
        .expect("accepted");
    let answered = asking.await.expect("joined").expect("an answer");
    assert!(
        matches!(answered, Ok(ClientResult::ElicitResult(_))),
        "{answered:?}"
    );
    // Unanswered: after the timeout the question is withdrawn (on the GET stream, as rmcp
    // routes a cancellation of a server request) and the wait ends.
    let mut common = sessions.create_standalone_stream(&id).await.expect("GET");
    let late = link
        .ask(elicit(), &RequestId::Number(7), Duration::from_secs(90))
        .await;
    assert!(matches!(late, Err(NoAnswer::TimedOut)), "{late:?}");
    assert_eq!(
        shown(&[common.next().await.expect("an event")]),
        ["0 notifications/cancelled"]
    );
    // The call's answer ends its stream, after its two questions.
    link.finish_call(&RequestId::Number(7), answer(7));
    let events: Vec<_> = stream.collect().await;
    assert_eq!(
        shown(&events),
        [
            "0/0 elicitation/create",
            "1/0 elicitation/create",
            "2/0 answer 7"
        ]
    );
    // Once the session closes, a question waiting for an answer hears it never will.
    let second = sessions
        .create_stream(&id, call(8, "q"))
        .await
        .expect("stream");
    let (link, _) = calls.recv().await.expect("the request");
    let waiting = tokio::spawn(async move {
        link.ask(elicit(), &RequestId::Number(8), Duration::from_secs(90))
            .await
    });
    tokio::task::yield_now().await;
    sessions
        .close_session(&id)
        .await
        .expect("the client's close");
    assert!(!sessions.contains(&id));
    assert!(matches!(
        waiting.await.expect("joined"),
        Err(NoAnswer::Closed)
    ));
    drop(second);
}

/// Issue 72: a call cancelled while its question waited left the question open at the client
/// (the wait was forgotten here, the client never told), so a person's dialog stayed open for a
/// call that no longer existed. Now the client hears the question is withdrawn.
#[tokio::test(start_paused = true)]
async fn a_question_whose_call_ends_is_withdrawn_at_the_client() {
    let (sessions, id, mut calls) = taken_over().await;
    let _stream = sessions
        .create_stream(&id, call(7, "p"))
        .await
        .expect("stream");
    let (link, _) = calls
        .recv()
        .await
        .expect("the request reached the dispatch");
    let mut common = sessions.create_standalone_stream(&id).await.expect("GET");
    let asking = tokio::spawn(async move {
        link.ask(elicit(), &RequestId::Number(7), Duration::from_secs(90))
            .await
    });
    tokio::task::yield_now().await;
    // The call is cancelled while the question waits: its wait is dropped.
    asking.abort();
    let _ = asking.await;
    let withdrawn = common.next().await.expect("an event");
    assert_eq!(
        shown(std::slice::from_ref(&withdrawn)),
        ["0 notifications/cancelled"]
    );
    let text = format!("{withdrawn:?}");
    assert!(text.contains("the call that asked it ended"), "{text}");
}

#[tokio::test]
async fn a_call_the_client_cancels_is_not_answered() {
    let (sessions, id, mut calls) = taken_over().await;
    let stream = sessions
        .create_stream(&id, call(3, "p"))
        .await
        .expect("stream");
    let (link, _) = calls.recv().await.expect("the request");
    let cancel = client(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": 3}}),
    );
    sessions
        .accept_message(&id, cancel)
        .await
        .expect("accepted");
    link.finish_call(&RequestId::Number(3), answer(3));
    let events: Vec<_> = stream.collect().await;
    assert!(events.is_empty(), "{:?}", shown(&events));
}

#[tokio::test]
async fn the_initialize_answer_goes_to_whoever_waits_for_it() {
    let sessions = Arc::new(LeanSessions::new(None, None));
    let (id, mut serve_loop) = sessions.create_session().await.expect("session");
    let initialize = client(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}
    }));
    let waiting = tokio::spawn({
        let sessions = sessions.clone();
        let id = id.clone();
        async move { sessions.initialize_session(&id, initialize).await }
    });
    assert!(matches!(
        serve_loop.receive().await,
        Some(ClientJsonRpcMessage::Request(_))
    ));
    serve_loop.send(answer(0)).await.expect("sent");
    let answered = waiting.await.expect("joined").expect("answered");
    assert!(
        matches!(answered, ServerJsonRpcMessage::Response(response) if response.id == RequestId::Number(0))
    );
}
