//! Live events per conversation (progress, confirmations, logs) and the questions waiting for
//! the person. A question is bound to the conversation it was asked in: only the page holding
//! that conversation's secret (sent on its event stream) can answer it, once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

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
    /// A question closed without an answer (its deadline passed, or the work that asked it
    /// stopped): the page closes its dialog, the terminal stops waiting for a yes.
    Closed {
        /// The question's id.
        id: String,
    },
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

/// All conversations' streams and open questions.
#[derive(Default)]
pub struct Events {
    watchers: Mutex<HashMap<String, Watcher>>,
    questions: Mutex<HashMap<String, Question>>,
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

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Events {
    /// Open the event stream of a conversation (replacing an older one) and get its secret,
    /// which the stream's first event also carries.
    pub fn open(&self, conversation: &str) -> (String, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let secret = random_id();
        let _ = tx.send(Event::Hello {
            secret: secret.clone(),
        });
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

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

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
