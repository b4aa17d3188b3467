//! The typed outcomes of every ask ([`Elicited`], [`UrlElicited`], [`Sampled`], [`RootsListed`]):
//! each fallback a tool can meet (declined, cancelled, unsupported, timed out) is a variant it
//! must handle, not an error it may forget.

use rmcp::model::{CreateMessageResult, Root};

/// The outcome of a form question (`ctx.elicit::<T>`).
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// The person submitted the form; the content parsed as `T`.
    Accepted(T),
    /// The person explicitly said no.
    Declined,
    /// The person dismissed the question without choosing.
    Cancelled,
    /// This client did not declare form elicitation, so nothing was asked.
    Unsupported,
    /// Nobody answered within the ask's timeout.
    TimedOut,
}

/// The `_meta` key under which a client says why it answered a question as it did
/// ([`AnswerReason`]); a client of ours sets it, and [`crate::Ctx::answer_reason`] reads it.
pub const ANSWER_REASON_META_KEY: &str = "dev.backchannel/answerReason";

/// Why a client answered a question as it did, as it said in its answer's `_meta`
/// ([`ANSWER_REASON_META_KEY`]): a tool can then say "you said no" for a No, and keep a hedge
/// for a question nobody saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnswerReason {
    /// The person chose the answer (`"person"`).
    Person,
    /// The question could not be shown to anyone, so the client declined it unseen
    /// (`"notShown"`).
    NotShown,
    /// The question was shown, and nobody answered in the time it had (`"expired"`).
    Expired,
}

impl AnswerReason {
    /// The value a client sends for it.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerReason::Person => "person",
            AnswerReason::NotShown => "notShown",
            AnswerReason::Expired => "expired",
        }
    }

    /// The reason a value names, if any.
    pub fn from_name(name: &str) -> Option<AnswerReason> {
        [
            AnswerReason::Person,
            AnswerReason::NotShown,
            AnswerReason::Expired,
        ]
        .into_iter()
        .find(|reason| reason.as_str() == name)
    }
}

/// The outcome of a URL-mode question (`ctx.elicit_url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlElicited {
    /// The person agreed to open the URL. The interaction itself happens out of band; call
    /// [`crate::Ctx::url_elicitation_complete`] with this id when the server sees it finish.
    Accepted {
        /// The id sent with the question, stable across the rounds of one call.
        elicitation_id: String,
    },
    /// The person explicitly said no.
    Declined,
    /// The person dismissed the question.
    Cancelled,
    /// This client did not declare URL elicitation, so nothing was asked.
    Unsupported,
    /// Nobody answered within the ask's timeout.
    TimedOut,
}

/// The outcome of a request for the client's model (`ctx.sample`).
#[derive(Debug, Clone, PartialEq)]
pub enum Sampled {
    /// The client's model answered.
    Message(Box<CreateMessageResult>),
    /// The client (or the person approving the request) refused it with an error.
    Refused {
        /// The JSON-RPC error code the client sent.
        code: i32,
        /// The client's error message.
        message: String,
    },
    /// This client did not declare sampling, so nothing was asked.
    Unsupported,
    /// No answer arrived within the ask's timeout.
    TimedOut,
    /// The client's answer was not a sampling result: a bug in the client, not a refusal. A
    /// tool should let it reach its caller rather than fall back as if refused.
    Failed {
        /// What was wrong with the answer.
        message: String,
    },
}

impl Sampled {
    /// The text of the model's answer, if it answered with text.
    pub fn text(&self) -> Option<&str> {
        match self {
            Sampled::Message(result) => result
                .message
                .content
                .first()
                .and_then(|content| content.as_text())
                .map(|text| text.text.as_str()),
            _ => None,
        }
    }
}

/// The outcome of asking the client for its roots (`ctx.roots`).
#[derive(Debug, Clone, PartialEq)]
pub enum RootsListed {
    /// The client listed its roots (possibly none).
    Listed(Vec<Root>),
    /// The client answered with an error.
    Failed {
        /// The JSON-RPC error code the client sent.
        code: i32,
        /// The client's error message.
        message: String,
    },
    /// This client did not declare roots, so nothing was asked.
    Unsupported,
    /// No answer arrived within the ask's timeout.
    TimedOut,
}

/// Why [`Ctx::step`](crate::Ctx::step) has no result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StepError<E> {
    /// The step's work failed; nothing was recorded, so a later run does it again.
    #[error(transparent)]
    Failed(E),
    /// The task is no longer this instance's (another instance took it over, or it finished,
    /// or this instance stops): the body is stopped and its result goes nowhere.
    #[error("this task is run by another instance now")]
    Lost,
    /// The recorded result does not read as the step's type (the tool changed between runs), or
    /// the result could not be written as JSON.
    #[error("the step {name:?} could not be kept or read back: {reason}")]
    Unreadable {
        /// The step.
        name: String,
        /// What the JSON reader or writer said.
        reason: String,
    },
}
