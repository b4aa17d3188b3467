//! Asking the person: a question shown to the page that watches its conversation (and in its
//! person's inbox), waited for until it is answered, expires, is withdrawn or is answered at
//! another desk; an answer taken once, from the conversation's page, in the form it was asked.

use std::time::Duration;

use backchannel::lock;
use tokio::sync::oneshot;

use super::vocabulary::fitting;
use super::{
    Answer, AnswerError, Asked, CallShown, Event, Events, Field, Question, Shown, random_id, shared,
};

impl Events {
    /// Ask the person watching `conversation` and wait at most `deadline`.
    pub async fn ask(&self, conversation: &str, message: &str, deadline: Duration) -> Asked {
        let confirmation = QuestionKind::Form(Vec::new());
        self.ask_of(confirmation, "a server", conversation, message, deadline)
            .await
    }

    /// A question asked inside a task: it waits in the owner's inbox for `deadline` whether or
    /// not a page watches the conversation now (shown to it if one does, and to a page that
    /// opens later). It names `call`, the call that started the task (`None`: not known, as
    /// for a task taken over from a stopped desk), never another call running meanwhile in the
    /// conversation. `None` when `elsewhere` ends first: another desk got the answer, and the
    /// question is taken off here (its page told so).
    pub async fn ask_waiting(
        &self,
        (server, call): (&str, Option<CallShown>),
        conversation: &str,
        message: &str,
        deadline: Duration,
        elsewhere: impl std::future::Future<Output = ()>,
    ) -> Option<Asked> {
        let question = Asking::confirmation(server, message);
        self.ask_as(question, (conversation, call), deadline, false, elsewhere)
            .await
    }

    /// Ask a question of `kind` from `server` in `conversation`, shown only if a page watches
    /// it now; expired if nobody could be shown it.
    pub async fn ask_of(
        &self,
        kind: QuestionKind,
        server: &str,
        conversation: &str,
        message: &str,
        deadline: Duration,
    ) -> Asked {
        let question = Asking {
            kind,
            ..Asking::confirmation(server, message)
        };
        // Asked within the call that runs in the conversation now: it names that call.
        let call = lock(&self.calls).get(conversation).cloned();
        let never = std::future::pending();
        let asked = self.ask_as(question, (conversation, call), deadline, true, never);
        asked.await.unwrap_or(Asked::Expired)
    }

    /// Ask `question` in `conversation`, naming `call` (only if a page watches it now, when
    /// `needs_a_page`); `None` if `elsewhere` ends first.
    async fn ask_as(
        &self,
        question: Asking<'_>,
        (conversation, call): (&str, Option<CallShown>),
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

/// What is asked: by which server, the words, and what kind of question it is.
struct Asking<'a> {
    server: &'a str,
    message: &'a str,
    kind: QuestionKind,
}

/// A question's kind.
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionKind {
    /// A server's form; none of its own fields: a yes/no confirmation.
    Form(Vec<Field>),
    /// An approval of a request for the model.
    Sampling,
    /// A server's page to open at `url` (checked by the caller: `https:`, or `http:` on
    /// loopback), leading to `origin`.
    Link {
        /// The page.
        url: String,
        /// Its scheme, host and port, shown before anything opens.
        origin: String,
    },
}

impl QuestionKind {
    /// The event that asks a question of this kind.
    fn event(
        self,
        id: String,
        server: &str,
        message: &str,
        seconds: u64,
        call: Option<CallShown>,
    ) -> Event {
        let question = Shown {
            id,
            server: server.to_owned(),
            message: message.to_owned(),
            seconds,
            call,
        };
        match self {
            QuestionKind::Sampling => Event::Sampling { question },
            QuestionKind::Form(fields) => Event::Confirmation { question, fields },
            QuestionKind::Link { url, origin } => Event::Link {
                question,
                url,
                origin,
            },
        }
    }
}

impl<'a> Asking<'a> {
    fn confirmation(server: &'a str, message: &'a str) -> Self {
        Asking {
            server,
            message,
            kind: QuestionKind::Form(Vec::new()),
        }
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
