//! Live events per conversation (progress, confirmations, logs) and the questions waiting for
//! the person. A question is bound to the conversation it was asked in: only the page holding
//! that conversation's secret (sent on its event stream) can answer it, once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use backchannel::lock;
use tokio::sync::{mpsc, oneshot};

pub mod form;
mod sign_in;
mod vocabulary;

pub use form::Field;
pub use sign_in::SignInError;
pub use vocabulary::{
    Answer, AnswerError, Asked, CallShown, Event, InboxItem, MAX_ARGUMENTS_SHOWN, MAX_LOG_TEXT,
    MAX_RESULT_SHOWN, Shown,
};

struct Watcher {
    secret: String,
    tx: mpsc::UnboundedSender<Event>,
}

struct Question {
    conversation: String,
    /// Whose inbox it is in ([`Events::owner_for`] its conversation when it was asked).
    owner: String,
    /// Which server asks.
    server: String,
    asked: tokio::time::Instant,
    answer: oneshot::Sender<Answer>,
    /// The event that asked it, to show it again to a page opened while it waits.
    shown: Event,
    /// When it stops waiting.
    until: tokio::time::Instant,
}

/// A sign-in waiting for the browser to come back.
struct PendingSignIn {
    server: String,
    url: String,
    /// The person whose pages show it and whose browser alone may open it; `None` on a desk
    /// of one person (every page is theirs).
    for_person: Option<String>,
    back: oneshot::Sender<String>,
    /// The browser session that opened it from a page, and the nonce its browser holds.
    claimed: Option<(String, String)>,
}

/// The terminal's one conversation (it has no browser session).
pub const TERMINAL: &str = "cli";

/// The most conversations kept, and per browser session; beyond either the oldest go.
const MAX_CONVERSATIONS: usize = 10_000;
/// The most conversations kept per browser session.
pub const MAX_CONVERSATIONS_PER_SESSION: usize = 64;
/// The most things said in a conversation nobody watched kept for its next page.
pub const MAX_UNHEARD: usize = 16;

/// How long a browser session lasts, and the most kept (per person, and in all); beyond
/// either the oldest goes.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
const MAX_SESSIONS_PER_PERSON: usize = 64;
const MAX_SESSIONS: usize = 10_000;

/// A browser session: the digest of its cookie, whose it is, and until when.
struct Session {
    digest: String,
    person: String,
    until: tokio::time::Instant,
}

/// All conversations' streams and open questions.
#[derive(Default)]
pub struct Events {
    /// Browser sessions, oldest first.
    sessions: Mutex<Vec<Session>>,
    /// The person of a conversation without a session (the terminal's): the desk's own.
    default_person: Mutex<String>,
    /// Whether sessions are people's (a people file); else each browser session keeps its
    /// own inbox (one implicit person, but no local client answers another's questions).
    people: std::sync::atomic::AtomicBool,
    /// Which browser session (its digest) made each conversation (the server made its id), in
    /// the order they were made.
    conversations: Mutex<Vec<(String, String)>>,
    watchers: Mutex<HashMap<String, Watcher>>,
    /// What was said in conversations nobody watched, for their next page.
    unheard: Mutex<HashMap<String, Vec<Event>>>,
    /// How many progress events each conversation was sent (whoever sent them).
    progress_sent: Mutex<HashMap<String, u64>>,
    questions: Mutex<HashMap<String, Question>>,
    /// Sign-ins by their OAuth `state`.
    sign_ins: Mutex<HashMap<String, PendingSignIn>>,
    /// The tool call running in each conversation, which its questions name.
    calls: Mutex<HashMap<String, CallShown>>,
    /// The other desks on the same database, when there are ([`crate::bus`]).
    shared: shared::Shared,
}

/// An open question as an inbox lists it, wherever it is open.
#[derive(Clone)]
pub(super) struct InboxQuestion {
    conversation: String,
    server: String,
    shown: Event,
    asked: tokio::time::Instant,
    until: tokio::time::Instant,
}

/// A call running in a conversation ([`Events::calling`]): forgotten when dropped.
#[derive(Debug)]
pub struct Calling<'a> {
    events: &'a Events,
    conversation: String,
}

impl Drop for Calling<'_> {
    fn drop(&mut self) {
        lock(&self.events.calls).remove(&self.conversation);
    }
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
    /// Name the person of conversations without a session (the terminal's user).
    pub fn set_default_person(&self, person: &str) {
        *lock(&self.default_person) = person.to_owned();
    }

    /// Sessions are people's (the desk has a people file).
    pub fn set_people(&self, people: bool) {
        self.people
            .store(people, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whose inbox a conversation's questions go to ([`Events::owner_of_session`]; the
    /// default person's for a conversation without a session, the terminal's).
    pub fn owner_for(&self, conversation: &str) -> String {
        self.session_of(conversation)
            .and_then(|s| self.owner_of_digest(&s))
            .unwrap_or_else(|| lock(&self.default_person).clone())
    }

    /// The person a conversation is for: its session's, else the default person.
    pub fn person_for(&self, conversation: &str) -> String {
        self.person_of(conversation)
            .unwrap_or_else(|| lock(&self.default_person).clone())
    }

    /// Whose questions `viewer`'s inbox holds besides their own: on a desk without people, a
    /// browser session's holds the terminal user's too (the sessions of a loopback desk are
    /// all its one implicit person's, see [`terminal_may_answer`]).
    fn also_sees(&self, viewer: &str) -> Option<String> {
        let loopback = !self.people.load(std::sync::atomic::Ordering::Relaxed)
            && viewer.starts_with(sessions::LOOPBACK_OWNER);
        loopback.then(|| lock(&self.default_person).clone())
    }

    /// The open questions in `owner`'s inbox ([`Events::owner_for`]), oldest first: asked
    /// here or at another desk on the same database.
    pub fn inbox(&self, owner: &str) -> Vec<InboxItem> {
        let now = tokio::time::Instant::now();
        let also = self.also_sees(owner);
        let mut open: Vec<(String, InboxQuestion)> = lock(&self.questions)
            .iter()
            .filter(|(_, q)| {
                (q.owner == owner || also.as_deref() == Some(&q.owner)) && q.until > now
            })
            .map(|(id, q)| {
                let question = InboxQuestion {
                    conversation: q.conversation.clone(),
                    server: q.server.clone(),
                    shown: q.shown.clone(),
                    asked: q.asked,
                    until: q.until,
                };
                (id.clone(), question)
            })
            .collect();
        open.extend(self.questions_there_of(owner, also.as_deref(), now));
        open.sort_by_key(|(_, q)| q.asked);
        open.into_iter()
            .map(|(id, q)| inbox_item(id, q, now))
            .collect()
    }

    /// Send their inbox to every stream whose inbox holds `owner`'s questions.
    fn inbox_changed(&self, owner: &str) {
        let conversations: Vec<String> = lock(&self.watchers).keys().cloned().collect();
        // Each viewer's inbox read once, however many pages they have open.
        let mut inboxes: HashMap<String, Vec<InboxItem>> = HashMap::new();
        for conversation in conversations {
            let viewer = self.owner_for(&conversation);
            if viewer != owner && self.also_sees(&viewer).as_deref() != Some(owner) {
                continue;
            }
            let questions = inboxes
                .entry(viewer)
                .or_insert_with_key(|viewer| self.inbox(viewer))
                .clone();
            self.emit(&conversation, Event::Inbox { questions });
        }
    }

    /// Answer an open question of `owner` (from any page or terminal of theirs).
    pub fn answer_for(&self, id: &str, owner: &str, answer: Answer) -> Result<(), AnswerError> {
        let also = self.also_sees(owner);
        let question = {
            let mut questions = lock(&self.questions);
            let question = questions.get(id).ok_or(AnswerError::NotFound)?;
            let own = constant_time_eq(question.owner.as_bytes(), owner.as_bytes());
            if !own && also.as_deref() != Some(question.owner.as_str()) {
                return Err(AnswerError::Forbidden);
            }
            let answer = fitting(&question.shown, answer)?;
            (questions.remove(id).ok_or(AnswerError::NotFound)?, answer)
        };
        let (question, answer) = question;
        let sent = question
            .answer
            .send(answer)
            .map_err(|_| AnswerError::NotFound);
        self.inbox_changed(owner);
        sent
    }

    /// The person a conversation belongs to (through its session), while the session lives.
    pub fn person_of(&self, conversation: &str) -> Option<String> {
        self.person_of_digest(&self.session_of(conversation)?)
    }

    /// The browser session (its digest) that made `conversation`.
    fn session_of(&self, conversation: &str) -> Option<String> {
        lock(&self.conversations)
            .iter()
            .find(|(c, _)| c == conversation)
            .map(|(_, s)| s.clone())
    }

    fn forget_conversations_of(&self, session: &str) {
        let gone: Vec<String> = {
            let mut conversations = lock(&self.conversations);
            let gone = conversations
                .iter()
                .filter(|(_, s)| s == session)
                .map(|(c, _)| c.clone())
                .collect();
            conversations.retain(|(_, s)| s != session);
            gone
        };
        let mut watchers = lock(&self.watchers);
        for conversation in &gone {
            watchers.remove(conversation);
        }
        drop(watchers);
        let mut unheard = lock(&self.unheard);
        for conversation in &gone {
            unheard.remove(conversation);
        }
        drop(unheard);
        let mut progress = lock(&self.progress_sent);
        for conversation in &gone {
            progress.remove(conversation);
        }
    }

    /// A new conversation for the browser session `session`: its id, made here from the
    /// operating system's randomness (a page never names its own).
    pub fn start_conversation(&self, session: &str) -> String {
        let conversation = random_id();
        self.add_conversation(conversation.clone(), session_digest(session));
        conversation
    }

    /// Keep `conversation` for the session with the cookie digest `digest` (beyond the caps the
    /// oldest goes).
    fn add_conversation(&self, conversation: String, digest: String) {
        let mut conversations = lock(&self.conversations);
        let theirs = conversations.iter().filter(|(_, s)| *s == digest).count();
        if theirs >= MAX_CONVERSATIONS_PER_SESSION
            && let Some(oldest) = conversations.iter().position(|(_, s)| *s == digest)
        {
            conversations.remove(oldest);
        }
        if conversations.len() >= MAX_CONVERSATIONS {
            conversations.remove(0);
        }
        conversations.push((conversation, digest));
    }

    /// Whether `conversation` was made for the browser session `session`, which still lives.
    pub fn belongs_to(&self, conversation: &str, session: &str) -> bool {
        let Some(digest) = self.live_digest(session) else {
            return false;
        };
        lock(&self.conversations)
            .iter()
            .any(|(c, s)| c == conversation && constant_time_eq(s.as_bytes(), digest.as_bytes()))
    }

    /// The conversation a question was asked in, while it is open.
    pub fn conversation_of(&self, question: &str) -> Option<String> {
        let here = lock(&self.questions)
            .get(question)
            .map(|q| q.conversation.clone());
        here.or_else(|| self.conversation_there(question))
    }

    /// Open the event stream of a conversation (replacing an older one) and get its secret,
    /// which the stream's first event also carries.
    pub fn open(&self, conversation: &str) -> (String, mpsc::UnboundedReceiver<Event>) {
        self.open_working(conversation, false)
    }

    /// [`Events::open`], the hello saying whether a message is being worked on; the
    /// conversation's open questions are asked again on the new stream, with the time they
    /// have left (a page reloaded while a question waits gets it back).
    pub fn open_working(
        &self,
        conversation: &str,
        working: bool,
    ) -> (String, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let secret = random_id();
        let _ = tx.send(Event::Hello {
            secret: secret.clone(),
            working,
        });
        let person = self.person_for(conversation);
        for pending in lock(&self.sign_ins)
            .values()
            .filter(|pending| pending.for_person.as_ref().is_none_or(|p| *p == person))
        {
            let _ = tx.send(Event::SignIn {
                server: pending.server.clone(),
                url: pending.url.clone(),
            });
        }
        for said in lock(&self.unheard).remove(conversation).unwrap_or_default() {
            let _ = tx.send(said);
        }
        for again in self.open_questions_of(conversation) {
            let _ = tx.send(again);
        }
        let _ = tx.send(Event::Inbox {
            questions: self.inbox(&self.owner_for(conversation)),
        });
        lock(&self.watchers).insert(
            conversation.to_owned(),
            Watcher {
                secret: secret.clone(),
                tx,
            },
        );
        self.watching_here(conversation, &secret);
        (secret, rx)
    }

    /// The questions open here in `conversation`, as events asking them again with the time
    /// they have left.
    fn open_questions_of(&self, conversation: &str) -> Vec<Event> {
        let now = tokio::time::Instant::now();
        lock(&self.questions)
            .values()
            .filter(|q| q.conversation == conversation && q.until > now)
            .map(|question| with_seconds_left(question.shown.clone(), question.until - now))
            .collect()
    }

    /// Send an event to a conversation's page; false if nobody is watching. What the desk says
    /// in a conversation nobody watches (a task's result) is kept for the next page that opens
    /// it (at most [`MAX_UNHEARD`] per conversation, newest kept).
    /// A page that watches it at another desk of the same database gets it there.
    pub fn emit(&self, conversation: &str, event: Event) -> bool {
        if matches!(event, Event::Progress { .. }) && self.is_known(conversation) {
            *lock(&self.progress_sent)
                .entry(conversation.to_owned())
                .or_default() += 1;
        }
        if !lock(&self.watchers).contains_key(conversation)
            && let Some(desk) = self.watched_at(conversation)
        {
            self.send_there(&desk, conversation, event);
            return true;
        }
        self.emit_here(conversation, event)
    }

    /// [`Events::emit`] to this desk's page only (or kept for the next).
    fn emit_here(&self, conversation: &str, event: Event) -> bool {
        let mut watchers = lock(&self.watchers);
        let event = match watchers.get(conversation) {
            Some(watcher) => match watcher.tx.send(event) {
                Ok(()) => return true,
                Err(unsent) => {
                    watchers.remove(conversation);
                    unsent.0
                }
            },
            None => event,
        };
        drop(watchers);
        if matches!(event, Event::Said { .. }) && self.is_known(conversation) {
            let mut unheard = lock(&self.unheard);
            if unheard.len() < MAX_CONVERSATIONS || unheard.contains_key(conversation) {
                let kept = unheard.entry(conversation.to_owned()).or_default();
                if kept.len() >= MAX_UNHEARD {
                    kept.remove(0);
                }
                kept.push(event);
            }
        }
        false
    }

    /// How many progress events `conversation` was sent so far (from notifications, or from a
    /// task's status): a task's follower shows its status only while nothing else does.
    pub fn progress_sent(&self, conversation: &str) -> u64 {
        lock(&self.progress_sent)
            .get(conversation)
            .copied()
            .unwrap_or(0)
    }

    /// Whether the desk made `conversation` (for a browser session), or it is the terminal's.
    fn is_known(&self, conversation: &str) -> bool {
        self.session_of(conversation).is_some() || conversation == TERMINAL
    }

    /// End every page's event stream (the desk is stopping: an open page must not hold the
    /// server's graceful stop; the page reconnects to the desk that comes next).
    pub fn close_all(&self) {
        lock(&self.watchers).clear();
    }

    /// `call` runs in `conversation` until the returned guard is dropped: the questions asked
    /// there meanwhile name it.
    pub fn calling(&self, conversation: &str, call: CallShown) -> Calling<'_> {
        lock(&self.calls).insert(conversation.to_owned(), call);
        Calling {
            events: self,
            conversation: conversation.to_owned(),
        }
    }

    /// Send an event to every page.
    pub fn emit_all(&self, event: &Event) {
        lock(&self.watchers).retain(|_, watcher| watcher.tx.send(event.clone()).is_ok());
    }

    /// Send an event to every page of `person` ([`Events::person_for`] its conversation), or
    /// to every page when `None`.
    pub(crate) fn emit_to(&self, person: Option<&str>, event: &Event) {
        let Some(person) = person else {
            return self.emit_all(event);
        };
        let conversations: Vec<String> = lock(&self.watchers).keys().cloned().collect();
        for conversation in conversations {
            if self.person_for(&conversation) == person {
                self.emit(&conversation, event.clone());
            }
        }
    }

    /// Whether `secret` is the secret of this conversation's current stream.
    /// (whose page may be at another desk of the same database).
    pub fn owns(&self, conversation: &str, secret: &str) -> bool {
        let here = lock(&self.watchers)
            .get(conversation)
            .is_some_and(|w| constant_time_eq(w.secret.as_bytes(), secret.as_bytes()));
        here || self.owns_there(conversation, secret)
    }

    /// Whether a page is watching this conversation.
    pub fn is_watched(&self, conversation: &str) -> bool {
        let here = lock(&self.watchers)
            .get(conversation)
            .is_some_and(|w| !w.tx.is_closed());
        here || self.watched_at(conversation).is_some()
    }
}

/// `event` (a question) asked again with `left` to answer it (at least a second).
fn with_seconds_left(mut event: Event, left: Duration) -> Event {
    if let Some(question) = event.question_mut() {
        question.seconds = left.as_secs().max(1);
    }
    event
}

/// `question` (whose id is `id`) as an inbox lists it at `now`.
fn inbox_item(id: String, question: InboxQuestion, now: tokio::time::Instant) -> InboxItem {
    let (kind, shown, url, fields) = match question.shown {
        Event::Sampling { question } => ("sampling", Some(question), None, Vec::new()),
        Event::Confirmation { question, fields } => ("confirmation", Some(question), None, fields),
        Event::Link { question, url, .. } => ("link", Some(question), Some(url), Vec::new()),
        _ => ("confirmation", None, None, Vec::new()),
    };
    let (message, call) = shown.map_or((String::new(), None), |shown| (shown.message, shown.call));
    InboxItem {
        id,
        server: question.server,
        kind,
        message,
        url,
        fields,
        conversation: question.conversation,
        waited_seconds: (now - question.asked).as_secs(),
        seconds_left: question.until.saturating_duration_since(now).as_secs(),
        call,
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

mod asking;
use vocabulary::fitting;
mod sessions;
mod shared;
#[cfg(test)]
mod tests;

pub use asking::QuestionKind;
pub use sessions::{session_digest, terminal_may_answer};
pub use shared::VERDICT_WITHIN;
