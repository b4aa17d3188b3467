//! What the desk's live events say ([`Event`]) and what a question comes to ([`Asked`],
//! [`Answer`]): the words a page, the terminal and the desk share.

use serde::{Deserialize, Serialize};

use super::form::Field;

/// An event for the page of one conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Event {
    /// First event of a stream: the secret that answers this conversation's questions.
    Hello {
        /// Present it with every answer.
        secret: String,
        /// Whether a message of this conversation is being worked on (a page opened again
        /// waits for its `done`).
        working: bool,
    },
    /// Progress of a long tool, in percent, with what its server says of it.
    Progress {
        /// 0 to 100.
        percent: u32,
        /// The server running the tool (the desk's name for its connection).
        server: String,
        /// The server's words for where it is ("40 of 87"), if it said any.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A question for the person.
    Confirmation {
        /// What every question shows.
        #[serde(flatten)]
        question: Shown,
        /// The server's form, field by field; empty for a yes/no confirmation.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        fields: Vec<Field>,
    },
    /// A server asks the person to open a page of its own (an elicitation in URL mode: a
    /// sign-in, a payment). Opened only on the person's click, in a new tab; a yes says they
    /// opened it, and the call goes on when the server says the page's work is done.
    Link {
        /// What every question shows.
        #[serde(flatten)]
        question: Shown,
        /// The page to open (`https:`, or `http:` on a loopback address: nothing else is sent).
        url: String,
        /// Where it leads: the URL's scheme, host and port, shown before anything opens.
        origin: String,
    },
    /// A tool call in the conversation, shown as a card: sent when it starts (no result yet)
    /// and again with the same id when it ends.
    Call {
        /// The call's id in this conversation.
        id: String,
        /// The server, the tool and its arguments.
        call: CallShown,
        /// What it returned (at most [`MAX_RESULT_SHOWN`] characters), once it has.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        /// The tool failed (its own `isError`, or the call could not be made).
        #[serde(
            rename = "isError",
            default,
            skip_serializing_if = "std::ops::Not::not"
        )]
        is_error: bool,
    },
    /// A request for the model that the person must approve first (the message says what the
    /// server wants the model to do).
    Sampling {
        /// What every question shows.
        #[serde(flatten)]
        question: Shown,
    },
    /// The model's reply so far, growing as it streams (a few times a second at most); the
    /// chat's answer, when it comes, is the whole reply and replaces it.
    Reply {
        /// The reply's Markdown so far.
        text: String,
        /// The same, rendered and sanitised for the page (`render::html`).
        html: String,
    },
    /// A message's work is over: its whole reply (also the chat call's answer; a page opened
    /// again while the work ran gets it only this way).
    Done {
        /// The reply's Markdown.
        text: String,
        /// The same, rendered and sanitised for the page (`render::html`).
        html: String,
        /// The message's run, as the chat call's answer names it: a page that got the reply
        /// there does not show it again.
        run: u64,
    },
    /// Something the desk says in the conversation on its own (a task that waited for the
    /// person ended: its result).
    Said {
        /// The words' Markdown, as plain text.
        text: String,
        /// The same, rendered and sanitised for the page.
        html: String,
    },
    /// The person's open questions, in every conversation of theirs (sent when the list
    /// changes, and first thing on a stream): a page's badge and inbox, the terminal's
    /// `/inbox`.
    Inbox {
        /// Oldest first.
        questions: Vec<InboxItem>,
    },
    /// A question closed without an answer from here (its deadline passed, the work that
    /// asked it stopped, or another desk of the person's answered it): the page closes its
    /// dialog, the terminal stops waiting for a yes.
    Closed {
        /// The question's id.
        id: String,
        /// Answered at another desk of the person's (the terminal), not expired.
        #[serde(
            rename = "answeredElsewhere",
            default,
            skip_serializing_if = "std::ops::Not::not"
        )]
        answered_elsewhere: bool,
        /// Withdrawn: the call that asked it ended (stopped here, cancelled, or the server
        /// gave up on it) before anyone answered and before its time ran out.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        withdrawn: bool,
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
    /// A log message a server sent while a call of this conversation ran, at its own level.
    Log {
        /// The server (the desk's name for its connection).
        server: String,
        /// The message's level, as the protocol names it (`info`, `warning`, …).
        level: String,
        /// The message (its text, or its JSON), at most [`MAX_LOG_TEXT`] characters.
        text: String,
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

/// What every question shows, whatever its kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shown {
    /// Random; answer with it.
    pub id: String,
    /// The server that asks (the desk's name for its connection).
    pub server: String,
    /// The question.
    pub message: String,
    /// How long the person has.
    pub seconds: u64,
    /// The call that asks it: what will happen on a yes (when the desk knows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<CallShown>,
}

impl Event {
    /// What the question shows, if this event asks one.
    pub fn question(&self) -> Option<&Shown> {
        match self {
            Event::Confirmation { question, .. }
            | Event::Link { question, .. }
            | Event::Sampling { question } => Some(question),
            _ => None,
        }
    }

    /// [`Event::question`], to change.
    pub fn question_mut(&mut self) -> Option<&mut Shown> {
        match self {
            Event::Confirmation { question, .. }
            | Event::Link { question, .. }
            | Event::Sampling { question } => Some(question),
            _ => None,
        }
    }

    /// The desk saying `markdown` in a conversation on its own.
    pub fn said(markdown: &str) -> Event {
        Event::Said {
            html: crate::render::html(markdown),
            text: crate::render::plain(markdown),
        }
    }

    /// The name of every kind of event, as the stream names them (the `event` field too).
    pub const NAMES: [&'static str; 14] = [
        "hello",
        "progress",
        "call",
        "confirmation",
        "link",
        "sampling",
        "closed",
        "signin",
        "signinended",
        "reply",
        "done",
        "inbox",
        "said",
        "log",
    ];

    /// This event's name in the stream (one of [`Event::NAMES`]).
    pub fn name(&self) -> &'static str {
        match self {
            Event::Hello { .. } => "hello",
            Event::Progress { .. } => "progress",
            Event::Call { .. } => "call",
            Event::Confirmation { .. } => "confirmation",
            Event::Link { .. } => "link",
            Event::Sampling { .. } => "sampling",
            Event::Closed { .. } => "closed",
            Event::SignIn { .. } => "signin",
            Event::SignInEnded { .. } => "signinended",
            Event::Reply { .. } => "reply",
            Event::Done { .. } => "done",
            Event::Inbox { .. } => "inbox",
            Event::Said { .. } => "said",
            Event::Log { .. } => "log",
        }
    }
}

/// A tool call as the person sees it beside the question it asks: the server, the tool and
/// its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallShown {
    /// The server (the desk's name for its connection).
    pub server: String,
    /// The tool.
    pub tool: String,
    /// Its arguments (at most [`MAX_ARGUMENTS_SHOWN`] characters of their JSON each).
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

/// The most characters of a tool's result shown on its card.
pub const MAX_RESULT_SHOWN: usize = 2_000;

/// The most characters of one argument's value shown beside a question.
pub const MAX_ARGUMENTS_SHOWN: usize = 200;

impl CallShown {
    /// `tool` of `server` called with `arguments` (each value's JSON cut to
    /// [`MAX_ARGUMENTS_SHOWN`] characters).
    pub fn new(server: &str, tool: &str, arguments: &serde_json::Value) -> CallShown {
        let arguments = arguments
            .as_object()
            .map(|arguments| {
                arguments
                    .iter()
                    .map(|(key, value)| {
                        let text = value.to_string();
                        let shown = if text.chars().count() > MAX_ARGUMENTS_SHOWN {
                            let cut: String = text.chars().take(MAX_ARGUMENTS_SHOWN).collect();
                            serde_json::Value::String(format!("{cut}…"))
                        } else {
                            value.clone()
                        };
                        (key.clone(), shown)
                    })
                    .collect()
            })
            .unwrap_or_default();
        CallShown {
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments,
        }
    }

    /// One line for a terminal: `cancel_order(orderId: "ORD-10002")`.
    pub fn line(&self) -> String {
        let arguments: Vec<String> = self
            .arguments
            .iter()
            .map(|(key, value)| format!("{key}: {value}"))
            .collect();
        format!("{}({})", self.tool, arguments.join(", "))
    }
}

/// The most characters of a server's log message shown.
pub const MAX_LOG_TEXT: usize = 300;

/// An open question, as the person's inbox lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    /// Answer it with this.
    pub id: String,
    /// The server that asks (the desk's name for its connection).
    pub server: String,
    /// `confirmation`, `link` or `sampling`.
    pub kind: &'static str,
    /// What is asked.
    pub message: String,
    /// A link question's page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A form question's fields (empty for a yes/no confirmation).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<Field>,
    /// The conversation it was asked in.
    pub conversation: String,
    /// How long it has waited.
    pub waited_seconds: u64,
    /// How long it still waits.
    pub seconds_left: u64,
    /// The call that asks it, when the desk knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<CallShown>,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "lowercase")]
pub enum Answer {
    /// Yes, with an optional note.
    Yes {
        /// The note.
        note: String,
    },
    /// No.
    No,
    /// Put away without a choice (a link question's "Cancel": neither yes nor no).
    Cancel,
    /// A form's values, sent (checked against its fields first).
    Filled(serde_json::Map<String, serde_json::Value>),
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum AnswerError {
    /// No open question has that id (never asked, already answered, or expired).
    #[error("no open question with that id")]
    NotFound,
    /// The secret does not belong to the question's conversation.
    #[error("that secret does not answer this question")]
    Forbidden,
    /// The answer does not fit the question (a form's value of the wrong kind, a yes/no to a
    /// form); the question still waits.
    #[error("{0}")]
    Refused(String),
}

/// An inbox item as another desk wrote it, before its kind is checked.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InboxItemRead {
    id: String,
    server: String,
    kind: String,
    message: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    fields: Vec<Field>,
    conversation: String,
    waited_seconds: u64,
    seconds_left: u64,
    #[serde(default)]
    call: Option<CallShown>,
}

impl<'de> Deserialize<'de> for InboxItem {
    fn deserialize<D: serde::Deserializer<'de>>(from: D) -> Result<InboxItem, D::Error> {
        InboxItem::try_from(InboxItemRead::deserialize(from)?).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<InboxItemRead> for InboxItem {
    type Error = String;

    fn try_from(read: InboxItemRead) -> Result<InboxItem, String> {
        let kind = ["confirmation", "link", "sampling"]
            .into_iter()
            .find(|known| *known == read.kind)
            .ok_or_else(|| format!("unknown question kind {:?}", read.kind))?;
        Ok(InboxItem {
            id: read.id,
            server: read.server,
            kind,
            message: read.message,
            url: read.url,
            fields: read.fields,
            conversation: read.conversation,
            waited_seconds: read.waited_seconds,
            seconds_left: read.seconds_left,
            call: read.call,
        })
    }
}

/// `answer` as the question `shown` takes it: a form's values checked against its fields; a
/// yes to a form, or values to a question without fields, refused (the question still waits).
pub(super) fn fitting(shown: &Event, answer: Answer) -> Result<Answer, AnswerError> {
    let fields: &[Field] = match shown {
        Event::Confirmation { fields, .. } => fields,
        _ => &[],
    };
    match answer {
        Answer::Filled(values) if !fields.is_empty() => super::form::check(fields, &values)
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
