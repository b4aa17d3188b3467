//! Live events per conversation (progress, confirmations, logs) and the questions waiting for
//! the person. A question is bound to the conversation it was asked in: only the page holding
//! that conversation's secret (sent on its event stream) can answer it, once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use backchannel::lock;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

/// An event for the page of one conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Event {
    /// First event of a stream: the secret that answers this conversation's questions.
    Hello {
        /// Present it with every answer.
        secret: String,
    },
    /// Progress of a long tool, in percent.
    Progress {
        /// 0 to 100.
        percent: u32,
    },
    /// A question for the person.
    Confirmation {
        /// Random; answer with it.
        id: String,
        /// The question.
        message: String,
        /// How long the person has.
        seconds: u64,
    },
    /// A request for the model that the person must approve first.
    Sampling {
        /// Random; answer with it.
        id: String,
        /// What the server wants the model to do.
        message: String,
        /// How long the person has.
        seconds: u64,
    },
    /// The model's reply so far, growing as it streams (a few times a second at most); the
    /// chat's answer, when it comes, is the whole reply and replaces it.
    Reply {
        /// The reply's Markdown so far.
        text: String,
        /// The same, rendered and sanitised for the page (`render::html`).
        html: String,
    },
    /// A question closed without an answer (its deadline passed, or the work that asked it
    /// stopped): the page closes its dialog, the terminal stops waiting for a yes.
    Closed {
        /// The question's id.
        id: String,
    },
    /// A server the desk talks to wants the person to sign in: open `url` (the authorization
    /// server's page); it sends the browser back to the desk's `/oauth/callback`. Sent to every
    /// page, and to a page that opens while the sign-in is waiting.
    #[serde(rename = "signin")]
    SignIn {
        /// The connection's name.
        server: String,
        /// The authorization URL.
        url: String,
    },
    /// The sign-in to `server` is over (the browser came back, or it waited too long): the
    /// link goes away.
    #[serde(rename = "signinended")]
    SignInEnded {
        /// The connection's name.
        server: String,
        /// Whether the browser came back in time.
        completed: bool,
    },
}

impl Event {
    /// The name of every kind of event, as the stream names them (the `event` field too).
    pub const NAMES: [&'static str; 8] = [
        "hello",
        "progress",
        "confirmation",
        "sampling",
        "closed",
        "signin",
        "signinended",
        "reply",
    ];

    /// This event's name in the stream (one of [`Event::NAMES`]).
    pub fn name(&self) -> &'static str {
        match self {
            Event::Hello { .. } => "hello",
            Event::Progress { .. } => "progress",
            Event::Confirmation { .. } => "confirmation",
            Event::Sampling { .. } => "sampling",
            Event::Closed { .. } => "closed",
            Event::SignIn { .. } => "signin",
            Event::SignInEnded { .. } => "signinended",
            Event::Reply { .. } => "reply",
        }
    }
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Yes, with an optional note.
    Yes {
        /// The note.
        note: String,
    },
    /// No.
    No,
}

/// How a question ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// The person answered.
    Answered(Answer),
    /// Nobody is watching this conversation, so nobody could be asked.
    NobodyWatching,
    /// The person did not answer in time.
    Expired,
}

/// Why an answer was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No open question has that id (never asked, already answered, or expired).
    #[error("no open question with that id")]
    NotFound,
    /// The secret does not belong to the question's conversation.
    #[error("that secret does not answer this question")]
    Forbidden,
}

struct Watcher {
    secret: String,
    tx: mpsc::UnboundedSender<Event>,
}

struct Question {
    conversation: String,
    answer: oneshot::Sender<Answer>,
}

/// A sign-in waiting for the browser to come back.
struct PendingSignIn {
    server: String,
    url: String,
    back: oneshot::Sender<String>,
}

/// Why a callback was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignInError {
    /// The callback names no sign-in that is waiting (never started, already finished, or
    /// given up on).
    #[error("no sign-in is waiting for this callback")]
    NotWaiting,
}

/// The most conversations kept, and per browser session; beyond either the oldest go.
const MAX_CONVERSATIONS: usize = 10_000;
const MAX_CONVERSATIONS_PER_SESSION: usize = 64;

/// All conversations' streams and open questions.
#[derive(Default)]
pub struct Events {
    /// Which browser session made each conversation (the server made its id), in the order
    /// they were made.
    conversations: Mutex<Vec<(String, String)>>,
    watchers: Mutex<HashMap<String, Watcher>>,
    questions: Mutex<HashMap<String, Question>>,
    /// Sign-ins by their OAuth `state`.
    sign_ins: Mutex<HashMap<String, PendingSignIn>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").finish_non_exhaustive()
    }
}

/// A random id: 128 bits, hex.
pub fn random_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Without OS randomness no id is safe to hand out.
        panic!("the operating system provided no random bytes");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Events {
    /// A new conversation for the browser session `session`: its id, made here from the
    /// operating system's randomness (a page never names its own).
    pub fn start_conversation(&self, session: &str) -> String {
        let conversation = random_id();
        let mut conversations = lock(&self.conversations);
        let theirs = conversations.iter().filter(|(_, s)| s == session).count();
        if theirs >= MAX_CONVERSATIONS_PER_SESSION
            && let Some(oldest) = conversations.iter().position(|(_, s)| s == session)
        {
            conversations.remove(oldest);
        }
        if conversations.len() >= MAX_CONVERSATIONS {
            conversations.remove(0);
        }
        conversations.push((conversation.clone(), session.to_owned()));
        conversation
    }

    /// Whether `conversation` was made for the browser session `session`.
    pub fn belongs_to(&self, conversation: &str, session: &str) -> bool {
        lock(&self.conversations)
            .iter()
            .any(|(c, s)| c == conversation && constant_time_eq(s.as_bytes(), session.as_bytes()))
    }

    /// The conversation a question was asked in, while it is open.
    pub fn conversation_of(&self, question: &str) -> Option<String> {
        lock(&self.questions)
            .get(question)
            .map(|q| q.conversation.clone())
    }

    /// Open the event stream of a conversation (replacing an older one) and get its secret,
    /// which the stream's first event also carries.
    pub fn open(&self, conversation: &str) -> (String, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let secret = random_id();
        let _ = tx.send(Event::Hello {
            secret: secret.clone(),
        });
        for pending in lock(&self.sign_ins).values() {
            let _ = tx.send(Event::SignIn {
                server: pending.server.clone(),
                url: pending.url.clone(),
            });
        }
        lock(&self.watchers).insert(
            conversation.to_owned(),
            Watcher {
                secret: secret.clone(),
                tx,
            },
        );
        (secret, rx)
    }

    /// Send an event to a conversation's page; false if nobody is watching.
    pub fn emit(&self, conversation: &str, event: Event) -> bool {
        let mut watchers = lock(&self.watchers);
        match watchers.get(conversation) {
            Some(watcher) if watcher.tx.send(event).is_ok() => true,
            Some(_) => {
                watchers.remove(conversation);
                false
            }
            None => false,
        }
    }

    /// Send an event to every page.
    pub fn emit_all(&self, event: &Event) {
        lock(&self.watchers).retain(|_, watcher| watcher.tx.send(event.clone()).is_ok());
    }

    /// Show every page (and the terminal) a "Sign in to `server`" link to `url`, and wait at
    /// most `deadline` for the browser to come back to the desk's callback with the same
    /// OAuth `state`. Returns the callback's query string.
    pub async fn sign_in(
        &self,
        server: &str,
        url: &str,
        deadline: Duration,
    ) -> Result<String, String> {
        let state = reqwest::Url::parse(url)
            .ok()
            .and_then(|url| url.query().and_then(|query| query_param(query, "state")))
            .filter(|state| !state.is_empty())
            .ok_or("the authorization URL carries no state to match the callback with")?;
        let (back, came_back) = oneshot::channel();
        lock(&self.sign_ins).insert(
            state.clone(),
            PendingSignIn {
                server: server.to_owned(),
                url: url.to_owned(),
                back,
            },
        );
        tracing::info!(server, "waiting for the person to sign in");
        self.emit_all(&Event::SignIn {
            server: server.to_owned(),
            url: url.to_owned(),
        });
        let outcome = tokio::time::timeout(deadline, came_back).await;
        lock(&self.sign_ins).remove(&state);
        let completed = matches!(outcome, Ok(Ok(_)));
        self.emit_all(&Event::SignInEnded {
            server: server.to_owned(),
            completed,
        });
        match outcome {
            Ok(Ok(query)) => Ok(query),
            _ => Err(format!(
                "nobody signed in to {server} within {} minutes",
                deadline.as_secs() / 60
            )),
        }
    }

    /// The browser came back to the callback with `query`: hand it to the sign-in with the
    /// same `state`, once. Returns that sign-in's server.
    pub fn signed_in(&self, query: &str) -> Result<String, SignInError> {
        let state = query_param(query, "state").ok_or(SignInError::NotWaiting)?;
        let pending = lock(&self.sign_ins)
            .remove(&state)
            .ok_or(SignInError::NotWaiting)?;
        pending
            .back
            .send(query.to_owned())
            .map_err(|_| SignInError::NotWaiting)?;
        Ok(pending.server)
    }

    /// Whether `secret` is the secret of this conversation's current stream.
    pub fn owns(&self, conversation: &str, secret: &str) -> bool {
        lock(&self.watchers)
            .get(conversation)
            .is_some_and(|w| constant_time_eq(w.secret.as_bytes(), secret.as_bytes()))
    }

    /// Whether a page is watching this conversation.
    pub fn is_watched(&self, conversation: &str) -> bool {
        lock(&self.watchers)
            .get(conversation)
            .is_some_and(|w| !w.tx.is_closed())
    }

    /// Ask the person watching `conversation` and wait at most `deadline`.
    pub async fn ask(&self, conversation: &str, message: &str, deadline: Duration) -> Asked {
        self.ask_as(conversation, deadline, |id, seconds| Event::Confirmation {
            id,
            message: message.to_owned(),
            seconds,
        })
        .await
    }

    /// Ask the person to approve a request for the model.
    pub async fn approve(&self, conversation: &str, message: &str, deadline: Duration) -> Asked {
        self.ask_as(conversation, deadline, |id, seconds| Event::Sampling {
            id,
            message: message.to_owned(),
            seconds,
        })
        .await
    }

    async fn ask_as(
        &self,
        conversation: &str,
        deadline: Duration,
        event: impl FnOnce(String, u64) -> Event,
    ) -> Asked {
        if !self.is_watched(conversation) {
            return Asked::NobodyWatching;
        }
        let id = random_id();
        let (tx, rx) = oneshot::channel();
        lock(&self.questions).insert(
            id.clone(),
            Question {
                conversation: conversation.to_owned(),
                answer: tx,
            },
        );
        let event = event(id.clone(), deadline.as_secs());
        if !self.emit(conversation, event) {
            lock(&self.questions).remove(&id);
            return Asked::NobodyWatching;
        }
        // Removed however this ends, the caller's drop included; unanswered, the page is told.
        let open = OpenQuestion {
            events: self,
            id,
            conversation: conversation.to_owned(),
            answered: false,
        };
        match tokio::time::timeout(deadline, rx).await {
            Ok(Ok(answer)) => {
                open.answered();
                Asked::Answered(answer)
            }
            Ok(Err(_)) | Err(_) => Asked::Expired,
        }
    }

    /// Answer an open question, proving the conversation with its secret.
    pub fn answer(&self, id: &str, secret: &str, answer: Answer) -> Result<(), AnswerError> {
        let mut questions = lock(&self.questions);
        let question = questions.get(id).ok_or(AnswerError::NotFound)?;
        let watchers = lock(&self.watchers);
        let owner = watchers
            .get(&question.conversation)
            .ok_or(AnswerError::Forbidden)?;
        if !constant_time_eq(owner.secret.as_bytes(), secret.as_bytes()) {
            return Err(AnswerError::Forbidden);
        }
        drop(watchers);
        let question = questions.remove(id).ok_or(AnswerError::NotFound)?;
        question
            .answer
            .send(answer)
            .map_err(|_| AnswerError::NotFound)
    }
}

/// A question on screen: when it ends unanswered, it is removed and the page told.
struct OpenQuestion<'a> {
    events: &'a Events,
    id: String,
    conversation: String,
    answered: bool,
}

impl OpenQuestion<'_> {
    fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for OpenQuestion<'_> {
    fn drop(&mut self) {
        lock(&self.events.questions).remove(&self.id);
        if !self.answered {
            self.events.emit(
                &self.conversation,
                Event::Closed {
                    id: std::mem::take(&mut self.id),
                },
            );
        }
    }
}

/// The (decoded) value of parameter `name` in a URL's query string.
pub(crate) fn query_param(query: &str, name: &str) -> Option<String> {
    reqwest::Url::parse(&format!("http://query/?{query}"))
        .ok()?
        .query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_is_named_as_its_json_names_it() {
        let events = [
            Event::Hello { secret: "s".into() },
            Event::Progress { percent: 1 },
            Event::Confirmation {
                id: "i".into(),
                message: "m".into(),
                seconds: 1,
            },
            Event::Sampling {
                id: "i".into(),
                message: "m".into(),
                seconds: 1,
            },
            Event::Closed { id: "i".into() },
            Event::SignIn {
                server: "s".into(),
                url: "https://a.example/".into(),
            },
            Event::SignInEnded {
                server: "s".into(),
                completed: true,
            },
            Event::Reply {
                text: "t".into(),
                html: "t".into(),
            },
        ];
        let names: Vec<&str> = events.iter().map(Event::name).collect();
        assert_eq!(names, Event::NAMES);
        for event in &events {
            assert_eq!(serde_json::to_value(event).unwrap()["event"], event.name());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_question_is_answered_once_and_only_with_its_secret() {
        let events = std::sync::Arc::new(Events::default());
        let (secret, mut rx) = events.open("c1");
        let (other_secret, _other) = events.open("c2");
        assert!(matches!(rx.recv().await, Some(Event::Hello { .. })));
        let asking = {
            let events = events.clone();
            tokio::spawn(async move { events.ask("c1", "Cancel?", Duration::from_secs(60)).await })
        };
        let Some(Event::Confirmation { id, seconds, .. }) = rx.recv().await else {
            panic!("no question")
        };
        assert_eq!(seconds, 60);
        assert_eq!(
            events.answer(&id, &other_secret, Answer::No),
            Err(AnswerError::Forbidden)
        );
        assert_eq!(
            events.answer("forged", &secret, Answer::No),
            Err(AnswerError::NotFound)
        );
        events
            .answer(&id, &secret, Answer::Yes { note: "ok".into() })
            .unwrap();
        assert_eq!(
            events.answer(&id, &secret, Answer::No),
            Err(AnswerError::NotFound),
            "replayed"
        );
        assert_eq!(
            asking.await.unwrap(),
            Asked::Answered(Answer::Yes { note: "ok".into() })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_sign_in_is_shown_to_every_page_and_ends_with_its_own_callback() {
        let events = std::sync::Arc::new(Events::default());
        let (_secret, mut early) = events.open("c1");
        assert!(matches!(early.recv().await, Some(Event::Hello { .. })));
        let signing_in = {
            let events = events.clone();
            tokio::spawn(async move {
                events
                    .sign_in(
                        "orders",
                        "http://as.example/authorize?client_id=x&state=s-123",
                        Duration::from_secs(600),
                    )
                    .await
            })
        };
        let Some(Event::SignIn { server, url }) = early.recv().await else {
            panic!("no sign-in link")
        };
        assert_eq!(server, "orders");
        assert!(url.ends_with("state=s-123"), "{url}");
        // A page opened later sees the link too.
        let (_secret, mut late) = events.open("c2");
        assert!(matches!(late.recv().await, Some(Event::Hello { .. })));
        assert!(matches!(late.recv().await, Some(Event::SignIn { .. })));
        assert_eq!(
            events.signed_in("code=c&state=forged"),
            Err(SignInError::NotWaiting)
        );
        assert_eq!(events.signed_in("code=c&state=s-123"), Ok("orders".into()));
        assert_eq!(
            events.signed_in("code=c&state=s-123"),
            Err(SignInError::NotWaiting),
            "replayed"
        );
        assert_eq!(signing_in.await.unwrap(), Ok("code=c&state=s-123".into()));
        assert!(matches!(
            early.recv().await,
            Some(Event::SignInEnded {
                completed: true,
                ..
            })
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_sign_in_nobody_finishes_ends_and_says_so() {
        let events = Events::default();
        let (_secret, mut rx) = events.open("c1");
        let outcome = events
            .sign_in(
                "orders",
                "http://as.example/authorize?state=s-1",
                Duration::from_secs(600),
            )
            .await;
        assert_eq!(
            outcome,
            Err("nobody signed in to orders within 10 minutes".into())
        );
        assert!(matches!(rx.recv().await, Some(Event::Hello { .. })));
        assert!(matches!(rx.recv().await, Some(Event::SignIn { .. })));
        assert!(matches!(
            rx.recv().await,
            Some(Event::SignInEnded {
                completed: false,
                ..
            })
        ));
        assert_eq!(
            events
                .sign_in(
                    "orders",
                    "http://as.example/authorize",
                    Duration::from_secs(1)
                )
                .await,
            Err("the authorization URL carries no state to match the callback with".into())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn nobody_watching_or_nobody_answering() {
        let events = Events::default();
        assert_eq!(
            events.ask("c1", "?", Duration::from_secs(60)).await,
            Asked::NobodyWatching
        );
        let (_secret, _rx) = events.open("c1");
        assert_eq!(
            events.ask("c1", "?", Duration::from_secs(60)).await,
            Asked::Expired
        );
    }
}
