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
    MAX_RESULT_SHOWN,
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

    /// Ask the person watching `conversation` and wait at most `deadline`.
    pub async fn ask(&self, conversation: &str, message: &str, deadline: Duration) -> Asked {
        self.ask_from("a server", conversation, message, deadline)
            .await
    }

    /// A question asked inside a task: it waits in the owner's inbox for `deadline` whether or
    /// not a page watches the conversation now (shown to it if one does, and to a page that
    /// opens later). `None` when `elsewhere` ends first: another desk got the answer, and the
    /// question is taken off here (its page told so).
    pub async fn ask_waiting(
        &self,
        server: &str,
        conversation: &str,
        message: &str,
        deadline: Duration,
        elsewhere: impl std::future::Future<Output = ()>,
    ) -> Option<Asked> {
        let question = Asking::confirmation(server, message);
        self.ask_as(question, conversation, deadline, false, elsewhere)
            .await
    }

    /// [`Events::ask`], naming the server that asks.
    pub async fn ask_from(
        &self,
        server: &str,
        conversation: &str,
        message: &str,
        deadline: Duration,
    ) -> Asked {
        self.ask_form(server, conversation, message, Vec::new(), deadline)
            .await
    }

    /// Ask the person to fill in a server's form (`fields`; none: a yes/no confirmation).
    pub async fn ask_form(
        &self,
        server: &str,
        conversation: &str,
        message: &str,
        fields: Vec<Field>,
        deadline: Duration,
    ) -> Asked {
        self.ask_kind(Kind::Form(fields), server, conversation, message, deadline)
            .await
    }

    /// Ask the person to open a server's page at `url` (checked by the caller: `https:`, or
    /// `http:` on loopback), leading to `origin`.
    pub async fn ask_link(
        &self,
        server: &str,
        conversation: &str,
        message: &str,
        (url, origin): (String, String),
        deadline: Duration,
    ) -> Asked {
        self.ask_kind(
            Kind::Link { url, origin },
            server,
            conversation,
            message,
            deadline,
        )
        .await
    }

    /// Ask the person to approve a request for the model.
    pub async fn approve(
        &self,
        server: &str,
        conversation: &str,
        message: &str,
        deadline: Duration,
    ) -> Asked {
        self.ask_kind(Kind::Sampling, server, conversation, message, deadline)
            .await
    }

    /// Ask a question of `kind` from `server` in `conversation`, shown only if a page watches
    /// it now; expired if nobody could be shown it.
    async fn ask_kind(
        &self,
        kind: Kind,
        server: &str,
        conversation: &str,
        message: &str,
        deadline: Duration,
    ) -> Asked {
        let question = Asking {
            kind,
            ..Asking::confirmation(server, message)
        };
        let never = std::future::pending();
        let asked = self.ask_as(question, conversation, deadline, true, never);
        asked.await.unwrap_or(Asked::Expired)
    }

    /// Ask `question` in `conversation` (only if a page watches it now, when `needs_a_page`);
    /// `None` if `elsewhere` ends first.
    async fn ask_as(
        &self,
        question: Asking<'_>,
        conversation: &str,
        deadline: Duration,
        needs_a_page: bool,
        elsewhere: impl std::future::Future<Output = ()>,
    ) -> Option<Asked> {
        let Asking {
            server,
            message,
            kind,
        } = question;
        if needs_a_page && !self.is_watched(conversation) {
            return Some(Asked::NobodyWatching);
        }
        let id = random_id();
        let (tx, rx) = oneshot::channel();
        let call = lock(&self.calls).get(conversation).cloned();
        let event = kind.event(id.clone(), server, message, deadline.as_secs(), call);
        let owner = self.owner_for(conversation);
        let now = tokio::time::Instant::now();
        lock(&self.questions).insert(
            id.clone(),
            Question {
                conversation: conversation.to_owned(),
                owner: owner.clone(),
                server: server.to_owned(),
                asked: now,
                answer: tx,
                shown: event.clone(),
                until: now + deadline,
            },
        );
        // A page at another desk gets it from the `Question` every desk is told of below.
        let here = lock(&self.watchers).contains_key(conversation);
        let shown = match here {
            true => self.emit_here(conversation, event.clone()),
            false => self.watched_at(conversation).is_some(),
        };
        if !shown && needs_a_page {
            lock(&self.questions).remove(&id);
            return Some(Asked::NobodyWatching);
        }
        self.tell_all(shared::Message::Question {
            id: id.clone(),
            owner: owner.clone(),
            conversation: conversation.to_owned(),
            server: server.to_owned(),
            shown: event,
            waited_ms: 0,
            left_ms: u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
        });
        self.inbox_changed(&owner);
        // Removed however this ends, the caller's drop included; unanswered, the page is told.
        let open = OpenQuestion {
            events: self,
            id,
            conversation: conversation.to_owned(),
            owner,
            answered: false,
            elsewhere: false,
            expired: false,
        };
        tokio::select! {
            got = tokio::time::timeout(deadline, rx) => match got {
                Ok(Ok(answer)) => {
                    open.answered();
                    Some(Asked::Answered(answer))
                }
                Ok(Err(_)) | Err(_) => {
                    open.expired();
                    Some(Asked::Expired)
                }
            },
            () = elsewhere => {
                open.answered_elsewhere();
                None
            }
        }
    }

    /// Answer an open question, proving the conversation with its secret.
    pub fn answer(&self, id: &str, secret: &str, answer: Answer) -> Result<(), AnswerError> {
        let mut questions = lock(&self.questions);
        let question = questions.get(id).ok_or(AnswerError::NotFound)?;
        if !self.owns(&question.conversation, secret) {
            return Err(AnswerError::Forbidden);
        }
        let answer = fitting(&question.shown, answer)?;
        let question = questions.remove(id).ok_or(AnswerError::NotFound)?;
        drop(questions);
        let sent = question
            .answer
            .send(answer)
            .map_err(|_| AnswerError::NotFound);
        self.inbox_changed(&question.owner);
        sent
    }
}

/// `event` (a question) asked again with `left` to answer it (at least a second).
fn with_seconds_left(mut event: Event, left: Duration) -> Event {
    if let Event::Confirmation { seconds, .. }
    | Event::Sampling { seconds, .. }
    | Event::Link { seconds, .. } = &mut event
    {
        *seconds = left.as_secs().max(1);
    }
    event
}

/// `question` (whose id is `id`) as an inbox lists it at `now`.
fn inbox_item(id: String, question: InboxQuestion, now: tokio::time::Instant) -> InboxItem {
    let (kind, message, call, url, fields) = match question.shown {
        Event::Sampling { message, call, .. } => ("sampling", message, call, None, Vec::new()),
        Event::Confirmation {
            message,
            call,
            fields,
            ..
        } => ("confirmation", message, call, None, fields),
        Event::Link {
            message, call, url, ..
        } => ("link", message, call, Some(url), Vec::new()),
        _ => ("confirmation", String::new(), None, None, Vec::new()),
    };
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

/// What is asked: by which server, the words, and what kind of question it is.
struct Asking<'a> {
    server: &'a str,
    message: &'a str,
    kind: Kind,
}

/// A question's kind: a form (none of its own fields: a yes/no confirmation), a sampling
/// approval, a page to open.
enum Kind {
    Form(Vec<Field>),
    Sampling,
    Link { url: String, origin: String },
}

impl Kind {
    /// The event that asks a question of this kind.
    fn event(
        self,
        id: String,
        server: &str,
        message: &str,
        seconds: u64,
        call: Option<CallShown>,
    ) -> Event {
        let (server, message) = (server.to_owned(), message.to_owned());
        match self {
            Kind::Sampling => Event::Sampling {
                id,
                server,
                message,
                seconds,
                call,
            },
            Kind::Form(fields) => Event::Confirmation {
                id,
                server,
                message,
                seconds,
                call,
                fields,
            },
            Kind::Link { url, origin } => Event::Link {
                id,
                server,
                message,
                url,
                origin,
                seconds,
                call,
            },
        }
    }
}

impl<'a> Asking<'a> {
    fn confirmation(server: &'a str, message: &'a str) -> Self {
        Asking {
            server,
            message,
            kind: Kind::Form(Vec::new()),
        }
    }
}

/// `answer` as the question `shown` takes it: a form's values checked against its fields; a
/// yes to a form, or values to a question without fields, refused (the question still waits).
fn fitting(shown: &Event, answer: Answer) -> Result<Answer, AnswerError> {
    let fields: &[Field] = match shown {
        Event::Confirmation { fields, .. } => fields,
        _ => &[],
    };
    match answer {
        Answer::Filled(values) if !fields.is_empty() => form::check(fields, &values)
            .map(Answer::Filled)
            .map_err(|error| AnswerError::Refused(error.to_string())),
        Answer::Filled(_) => Err(AnswerError::Refused(
            "this question is answered yes or no, not with a form".into(),
        )),
        Answer::Yes { .. } if !fields.is_empty() => Err(AnswerError::Refused(
            "this question is a form: send its fields".into(),
        )),
        other => Ok(other),
    }
}

/// A question on screen: when it ends unanswered, it is removed and the page told.
struct OpenQuestion<'a> {
    events: &'a Events,
    id: String,
    conversation: String,
    owner: String,
    answered: bool,
    /// Answered at another desk: the page is told so, not that it expired.
    elsewhere: bool,
    /// Its time ran out; neither this nor an answer: it was withdrawn.
    expired: bool,
}

impl OpenQuestion<'_> {
    fn answered(mut self) {
        self.answered = true;
    }

    fn answered_elsewhere(mut self) {
        self.elsewhere = true;
    }

    fn expired(mut self) {
        self.expired = true;
    }
}

impl Drop for OpenQuestion<'_> {
    fn drop(&mut self) {
        let was_open = lock(&self.events.questions).remove(&self.id).is_some();
        let id = self.id.clone();
        // The page that asked hears why first ("closed": it expired), then every inbox (at
        // the other desks too, told after the page: the bus keeps this desk's order).
        if !self.answered {
            self.events.emit(
                &self.conversation,
                Event::Closed {
                    id: std::mem::take(&mut self.id),
                    answered_elsewhere: self.elsewhere,
                    withdrawn: !self.elsewhere && !self.expired,
                },
            );
        }
        self.events.tell_all(shared::Message::QuestionClosed { id });
        if was_open {
            self.events.inbox_changed(&self.owner);
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

mod sessions;
mod shared;
#[cfg(test)]
mod tests;

pub use sessions::{session_digest, terminal_may_answer};
pub use shared::VERDICT_WITHIN;
