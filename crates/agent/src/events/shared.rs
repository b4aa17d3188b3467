//! The events of a desk among other desks on one database ([`crate::bus`]): a conversation's
//! page may watch it at another desk (its events go there), a question open at another desk is
//! in this desk's inboxes (and an answer to it posted here goes to that desk, which judges it),
//! and what waits here for a page opened at another desk is sent there.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use backchannel::lock;
use tokio::sync::oneshot;

use serde::{Deserialize, Serialize};

use super::vocabulary::fitting;
use super::{Answer, AnswerError, Event, Events, constant_time_eq, random_id};

/// This desk's end of the bus, saying [`Message`]s.
pub(crate) type Bus = crate::bus::Bus<Message>;
type Envelope = crate::bus::Envelope<Message>;

/// How long an answer posted here waits for the verdict of the desk that holds its question.
pub const VERDICT_WITHIN: Duration = Duration::from_secs(5);

/// What one desk tells the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum Message {
    /// `event` was said in `conversation`, whose page watches it at another desk.
    #[serde(rename_all = "camelCase")]
    Event {
        /// The conversation.
        conversation: String,
        /// What was said.
        event: Event,
    },
    /// The sender joined the desks (it started): each desk tells it where its pages are and
    /// which questions it holds.
    Joined,
    /// A page now watches `conversation` at the sender (the stream another desk had for it is
    /// over); a desk holding its questions or what was said while nobody watched sends them.
    #[serde(rename_all = "camelCase")]
    Watching {
        /// The conversation.
        conversation: String,
        /// The SHA-256 of the page's secret (its stream's, at the sender): a Stop or an answer
        /// of that page's posted at another desk carries the secret itself.
        secret: String,
    },
    /// The page watching `conversation` at the sender went away.
    #[serde(rename_all = "camelCase")]
    Unwatched {
        /// The conversation.
        conversation: String,
    },
    /// A question is open at the sender, for `owner`'s inbox everywhere (and for its
    /// conversation's page, at whichever desk serves it).
    #[serde(rename_all = "camelCase")]
    Question {
        /// Its id.
        id: String,
        /// Whose inbox it is in.
        owner: String,
        /// The conversation it was asked in.
        conversation: String,
        /// The server that asks.
        server: String,
        /// The event that asks it.
        shown: Event,
        /// How long it has waited, in milliseconds.
        waited_ms: u64,
        /// How long it still waits, in milliseconds.
        left_ms: u64,
    },
    /// The question `id`, open at the sender, is closed.
    #[serde(rename_all = "camelCase")]
    QuestionClosed {
        /// Its id.
        id: String,
    },
    /// `owner` answered the question `question` (open at the desk the message is for) at the
    /// sender, which waits for the verdict under `ask`.
    #[serde(rename_all = "camelCase")]
    Answer {
        /// The sender's name for this answer.
        ask: String,
        /// The question.
        question: String,
        /// Who answered (the owner of the sender's session that posted it).
        owner: String,
        /// The answer.
        answer: Answer,
    },
    /// Stop the message in flight in `conversation`, at whichever desk works on it; that
    /// desk says `Answered` under `ask`.
    #[serde(rename_all = "camelCase")]
    Stop {
        /// The sender's name for this stop.
        ask: String,
        /// The conversation.
        conversation: String,
    },
    /// The verdict on the answer (or stop) `ask` (none: taken).
    #[serde(rename_all = "camelCase")]
    Answered {
        /// The answer's name at the desk that sent it.
        ask: String,
        /// Why it was refused, if it was.
        refused: Option<AnswerError>,
    },
}

/// How a desk stops the message in flight in a conversation: whether one was.
type Stopper = dyn Fn(&str) -> bool + Send + Sync;

/// What this desk knows of the others.
#[derive(Default)]
pub(super) struct Shared {
    bus: OnceLock<Bus>,
    /// Conversations whose page watches them at another desk: that desk, the page's secret.
    watched_there: Mutex<HashMap<String, PageThere>>,
    /// Questions open at other desks, by id.
    questions_there: Mutex<HashMap<String, There>>,
    /// Answers (and stops) posted here for another desk, waiting for its verdict.
    verdicts: Mutex<HashMap<String, oneshot::Sender<Result<(), AnswerError>>>>,
    /// Stops the message in flight in a conversation here (the desk's), if any.
    stop_here: OnceLock<Box<Stopper>>,
}

/// A page served by another desk: the desk's name, the SHA-256 of the page's secret.
pub(super) struct PageThere {
    desk: String,
    secret: String,
}

/// A question open at another desk.
pub(super) struct There {
    desk: String,
    owner: String,
    question: super::InboxQuestion,
}

impl Events {
    /// Join the other desks: from now on this desk's events, questions and pages are told to
    /// them through `bus` (see [`Events::heard`] for the other way).
    pub(crate) fn join(&self, bus: Bus) {
        let _ = self.shared.bus.set(bus);
        self.tell_all(Message::Joined);
    }

    /// Tell the desk `to` (which just joined) where this desk's pages are and which questions
    /// it holds.
    fn welcome(&self, to: &str) {
        let pages: Vec<(String, String)> = lock(&self.watchers)
            .iter()
            .map(|(conversation, page)| (conversation.clone(), super::session_digest(&page.secret)))
            .collect();
        for (conversation, secret) in pages {
            self.tell(
                to,
                Message::Watching {
                    conversation,
                    secret,
                },
            );
        }
        let now = tokio::time::Instant::now();
        let questions: Vec<Message> = lock(&self.questions)
            .iter()
            .filter(|(_, q)| q.until > now)
            .map(|(id, q)| Message::Question {
                id: id.clone(),
                owner: q.owner.clone(),
                conversation: q.conversation.clone(),
                server: q.server.clone(),
                shown: q.shown.clone(),
                waited_ms: u64::try_from((now - q.asked).as_millis()).unwrap_or(u64::MAX),
                left_ms: u64::try_from((q.until - now).as_millis()).unwrap_or(u64::MAX),
            })
            .collect();
        for question in questions {
            self.tell(to, question);
        }
    }

    /// This desk's name among the desks on its database, once it joined them.
    pub(crate) fn desk_name(&self) -> Option<String> {
        self.shared.bus.get().map(|bus| bus.desk().to_owned())
    }

    pub(super) fn tell_all(&self, message: Message) {
        if let Some(bus) = self.shared.bus.get() {
            bus.tell_all(message);
        }
    }

    fn tell(&self, to: &str, message: Message) {
        if let Some(bus) = self.shared.bus.get() {
            bus.tell(to, message);
        }
    }

    /// The desk where a page watches `conversation`, when it is another.
    pub(super) fn watched_at(&self, conversation: &str) -> Option<String> {
        lock(&self.shared.watched_there)
            .get(conversation)
            .map(|page| page.desk.clone())
    }

    /// Whether `secret` is the secret of the page that watches `conversation` at another desk.
    pub(super) fn owns_there(&self, conversation: &str, secret: &str) -> bool {
        let digest = super::session_digest(secret);
        lock(&self.shared.watched_there)
            .get(conversation)
            .is_some_and(|page| constant_time_eq(page.secret.as_bytes(), digest.as_bytes()))
    }

    /// `event` of `conversation`, for the page watching it at `desk`.
    pub(super) fn send_there(&self, desk: &str, conversation: &str, event: Event) {
        let message = Message::Event {
            conversation: conversation.to_owned(),
            event,
        };
        self.tell(desk, message);
    }

    /// A page watches `conversation` here now: the other desks send here what they hold for it.
    pub(super) fn watching_here(&self, conversation: &str, secret: &str) {
        lock(&self.shared.watched_there).remove(conversation);
        let conversation = conversation.to_owned();
        let secret = super::session_digest(secret);
        self.tell_all(Message::Watching {
            conversation,
            secret,
        });
    }

    /// The page of `conversation` whose stream had `secret` went away (its stream ended): the
    /// other desks stop sending its events here.
    pub(crate) fn stopped_watching(&self, conversation: &str, secret: &str) {
        let mut watchers = lock(&self.watchers);
        let ours = watchers
            .get(conversation)
            .is_some_and(|w| constant_time_eq(w.secret.as_bytes(), secret.as_bytes()));
        if ours {
            watchers.remove(conversation);
            drop(watchers);
            let conversation = conversation.to_owned();
            self.tell_all(Message::Unwatched { conversation });
        }
    }

    /// The open questions of other desks in `owner`'s inbox (or `also`'s), as (asked, id, …).
    pub(super) fn questions_there_of(
        &self,
        owner: &str,
        also: Option<&str>,
        now: tokio::time::Instant,
    ) -> Vec<(String, super::InboxQuestion)> {
        lock(&self.shared.questions_there)
            .iter()
            .filter(|(_, q)| {
                (q.owner == owner || also == Some(q.owner.as_str())) && q.question.until > now
            })
            .map(|(id, q)| (id.clone(), q.question.clone()))
            .collect()
    }

    /// The conversation of a question open at another desk.
    pub(super) fn conversation_there(&self, question: &str) -> Option<String> {
        lock(&self.shared.questions_there)
            .get(question)
            .map(|q| q.question.conversation.clone())
    }

    /// A message of another desk's.
    pub(crate) fn heard(&self, envelope: Envelope) {
        let Envelope { from, message, .. } = envelope;
        match message {
            Message::Event {
                conversation,
                event,
            } => {
                self.emit_here(&conversation, event);
            }
            Message::Joined => self.welcome(&from),
            Message::Watching {
                conversation,
                secret,
            } => self.watched_from(&from, conversation, secret),
            Message::Unwatched { conversation } => {
                let mut watched = lock(&self.shared.watched_there);
                if watched
                    .get(&conversation)
                    .is_some_and(|page| page.desk == from)
                {
                    watched.remove(&conversation);
                }
            }
            Message::Question {
                id,
                owner,
                conversation,
                server,
                shown,
                waited_ms,
                left_ms,
            } => {
                let now = tokio::time::Instant::now();
                let asked = now
                    .checked_sub(Duration::from_millis(waited_ms))
                    .unwrap_or(now);
                let until = now + Duration::from_millis(left_ms);
                let again = super::with_seconds_left(shown.clone(), until - now);
                let there = There {
                    desk: from,
                    owner: owner.clone(),
                    question: super::InboxQuestion {
                        conversation: conversation.clone(),
                        server,
                        shown,
                        asked,
                        until,
                    },
                };
                lock(&self.shared.questions_there).insert(id, there);
                // Its page, when this desk serves it, is asked.
                let here = lock(&self.watchers).contains_key(&conversation);
                if here {
                    self.emit_here(&conversation, again);
                }
                self.inbox_changed(&owner);
            }
            Message::QuestionClosed { id } => {
                let gone = lock(&self.shared.questions_there).remove(&id);
                if let Some(gone) = gone {
                    self.inbox_changed(&gone.owner);
                }
            }
            Message::Answer {
                ask,
                question,
                owner,
                answer,
            } => {
                let refused = self.answer_for(&question, &owner, answer).err();
                self.tell(&from, Message::Answered { ask, refused });
            }
            Message::Stop { ask, conversation } => {
                let stopped = self
                    .shared
                    .stop_here
                    .get()
                    .is_some_and(|stop| stop(&conversation));
                if stopped {
                    self.tell(&from, Message::Answered { ask, refused: None });
                }
            }
            Message::Answered { ask, refused } => {
                if let Some(waits) = lock(&self.shared.verdicts).remove(&ask) {
                    let _ = waits.send(refused.map_or(Ok(()), Err));
                }
            }
        }
    }

    /// A page watches `conversation` at `desk`: its stream here (if any) is over, and what
    /// waits here for it goes there: what was said while nobody watched, and its open
    /// questions with the time they have left.
    fn watched_from(&self, desk: &str, conversation: String, secret: String) {
        lock(&self.watchers).remove(&conversation);
        let page = PageThere {
            desk: desk.to_owned(),
            secret,
        };
        lock(&self.shared.watched_there).insert(conversation.clone(), page);
        let unheard = lock(&self.unheard)
            .remove(&conversation)
            .unwrap_or_default();
        for said in unheard {
            self.send_there(desk, &conversation, said);
        }
        for again in self.open_questions_of(&conversation) {
            self.send_there(desk, &conversation, again);
        }
    }

    /// The desks that live now are `live`: what this desk knew of the others is forgotten
    /// (their questions, the pages they served).
    pub(crate) fn forget_desks_but(&self, live: &[String]) {
        let gone: Vec<String> = {
            let mut questions = lock(&self.shared.questions_there);
            let gone = questions
                .values()
                .filter(|q| !live.contains(&q.desk))
                .map(|q| q.owner.clone())
                .collect();
            questions.retain(|_, q| live.contains(&q.desk));
            gone
        };
        lock(&self.shared.watched_there).retain(|_, page| live.contains(&page.desk));
        for owner in gone {
            self.inbox_changed(&owner);
        }
    }

    /// [`Events::answer_for`], for a question open here or at another desk (which judges it
    /// too, and whose verdict this waits for, at most [`VERDICT_WITHIN`]).
    pub async fn answer_for_anywhere(
        &self,
        id: &str,
        owner: &str,
        answer: Answer,
    ) -> Result<(), AnswerError> {
        match self.answer_for(id, owner, answer.clone()) {
            Err(AnswerError::NotFound) => {}
            done => return done,
        }
        let also = self.also_sees(owner);
        let may = |q: &There| {
            constant_time_eq(q.owner.as_bytes(), owner.as_bytes())
                || also.as_deref() == Some(q.owner.as_str())
        };
        self.forward(id, answer, may).await
    }

    /// [`Events::answer`], for a question open here or at another desk (the page's stream,
    /// whose secret it is, may be at any desk).
    pub async fn answer_anywhere(
        &self,
        id: &str,
        secret: &str,
        answer: Answer,
    ) -> Result<(), AnswerError> {
        match self.answer(id, secret, answer.clone()) {
            Err(AnswerError::NotFound) => {}
            done => return done,
        }
        let may = |q: &There| self.owns(&q.question.conversation, secret);
        self.forward(id, answer, may).await
    }

    /// How this desk stops the message in flight in a conversation (for a Stop posted at
    /// another desk).
    pub(crate) fn on_stop(&self, stop: impl Fn(&str) -> bool + Send + Sync + 'static) {
        let _ = self.shared.stop_here.set(Box::new(stop));
    }

    /// Ask the other desks to stop the message in flight in `conversation`: whether one did
    /// (within [`VERDICT_WITHIN`]; at once `false` on a desk of its own).
    pub(crate) async fn stop_elsewhere(&self, conversation: &str) -> bool {
        if self.shared.bus.get().is_none() {
            return false;
        }
        let conversation = conversation.to_owned();
        let stop = |ask| Message::Stop { ask, conversation };
        self.verdict(None, stop).await == Some(Ok(()))
    }

    /// Send `answer` to the desk holding question `id`, open there, when `may` (whoever posted
    /// it may answer it) and it fits the question; wait for that desk's verdict.
    async fn forward(
        &self,
        id: &str,
        answer: Answer,
        may: impl FnOnce(&There) -> bool,
    ) -> Result<(), AnswerError> {
        let (desk, owner) = {
            let questions = lock(&self.shared.questions_there);
            let question = questions.get(id).ok_or(AnswerError::NotFound)?;
            if !may(question) {
                return Err(AnswerError::Forbidden);
            }
            fitting(&question.question.shown, answer.clone())?;
            (question.desk.clone(), question.owner.clone())
        };
        let ask = |ask| Message::Answer {
            ask,
            question: id.to_owned(),
            owner,
            answer,
        };
        // The desk that holds it did not say: it is gone (its question with it).
        self.verdict(Some(&desk), ask)
            .await
            .unwrap_or(Err(AnswerError::NotFound))
    }

    /// Tell `to` (none: every other desk) the message `ask` makes of a new name, and wait for
    /// the verdict said under that name (`None`: none within [`VERDICT_WITHIN`]).
    async fn verdict(
        &self,
        to: Option<&str>,
        ask: impl FnOnce(String) -> Message,
    ) -> Option<Result<(), AnswerError>> {
        let name = random_id();
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.verdicts).insert(name.clone(), tx);
        let message = ask(name.clone());
        match to {
            Some(to) => self.tell(to, message),
            None => self.tell_all(message),
        }
        let verdict = tokio::time::timeout(VERDICT_WITHIN, rx).await;
        lock(&self.shared.verdicts).remove(&name);
        verdict.ok().and_then(Result::ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reads_back_as_it_was_written() {
        let messages = [
            Message::Event {
                conversation: "c".into(),
                event: Event::said("**done**"),
            },
            Message::Answer {
                ask: "a".into(),
                question: "q".into(),
                owner: "ana".into(),
                answer: Answer::Filled(serde_json::Map::from_iter([(
                    "reason".to_owned(),
                    serde_json::json!("late"),
                )])),
            },
            Message::Answered {
                ask: "a".into(),
                refused: Some(AnswerError::Refused("no".into())),
            },
        ];
        for message in messages {
            let envelope = Envelope {
                from: "d1".into(),
                to: Some("d2".into()),
                message,
            };
            let text = serde_json::to_string(&envelope).unwrap_or_default();
            let back: Envelope = serde_json::from_str(&text).expect("it reads back");
            assert_eq!(back, envelope);
        }
    }
}
