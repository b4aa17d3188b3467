//! The hop between gateway instances: a 2026-07-28 client's round that reaches an instance other
//! than the one holding its 2025-11-25 upstream call is passed to that owner, and its answer
//! comes back the same way, so the client never needs to reach the same instance twice.
//!
//! A held call's id names its owner (`<random>@<advertised URL>`). The id travels inside the
//! round's `requestState`, which the layer seals under the shared key ring (`--state-keys`),
//! so a client can neither read nor change it. An instance that finds no such call of its own
//! posts the round to the owner's [`HOP_PATH`], sealed under the same ring ([`HOP_CONTEXT`]),
//! with the caller's owner key and a time: only an instance holding the ring can make one, and
//! the owner checks the caller exactly as for a round that reached it directly. The owner
//! answers with the progress and log messages the call sent and the round's end (the next
//! questions, or the result), sealed under the ring too ([`HOP_REPLY_CONTEXT`]) and bound to the
//! envelope it answers: whatever else answers at the owner's address (a process on the path, or
//! one that took a stopped instance's port) can neither forge nor replay an answer, and the
//! questions it carries are checked again here before a client sees them. An envelope opens only
//! within [`HOP_DELIVERY`] of being made (give or take [`HOP_CLOCK_SKEW`] between the
//! instances' clocks). An owner that cannot be reached cannot pass the answers on: the round ends
//! with a tool error saying so, at once when the envelope was never sent, else only once the
//! envelope can no longer open anywhere, so an envelope withheld on the way and delivered later
//! cannot act after the client was told. A 2025-11-25 server does not take a dropped
//! connection for a cancellation, so the call it held would wait at the upstream, unanswerable,
//! until the upstream's own timeout; the id also names the upstream session the call runs in
//! (and the owner's run), so when nothing listens at the owner's address any more, or a later
//! run of it answers there, that session is ended at the upstream (`Connection::end_session`)
//! and what its calls waited for stops at once.
//!
//! Without a key ring, or without an advertised address, nothing is named and nothing hops:
//! a held call lives in one instance, as before.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::{
    CallToolResult, GetPromptResult, InputRequests, ProgressNotificationParam, Task,
};
use serde::{Deserialize, Serialize};

use crate::switchboard::Update;

/// Where an instance takes the rounds of the calls it holds.
pub const HOP_PATH: &str = "/gateway/hop";

/// What a hop's envelope is sealed for (the ring also seals round state; this keeps the two
/// apart).
const HOP_CONTEXT: &[u8] = b"mcp-gateway hop v1";

/// What an owner's answer is sealed for (apart from envelopes and round state).
const HOP_REPLY_CONTEXT: &[u8] = b"mcp-gateway hop reply v1";

/// How far the clocks of a gateway's instances may differ (they are expected to keep time by
/// NTP): an envelope dated up to this far ahead of the owner's clock still opens.
pub(crate) const HOP_CLOCK_SKEW: Duration = Duration::from_secs(5);

/// How long an envelope may take to reach its owner, by the owner's clock beyond the skew.
pub(crate) const HOP_DELIVERY: Duration = Duration::from_secs(5);

/// How long after making an envelope, by its maker's clock, it may still open at an owner
/// whose clock is behind by the whole skew: after it, whatever became of it is done.
const HOP_OPENS_UNTIL: Duration =
    Duration::from_secs(2 * HOP_CLOCK_SKEW.as_secs() + HOP_DELIVERY.as_secs());

/// How long an opened envelope is remembered at least, so that it opens once: longer than
/// the whole time it could open ([`HOP_CLOCK_SKEW`] before its date to [`HOP_DELIVERY`] and
/// the skew after).
const HOP_REMEMBERED_FOR: Duration = Duration::from_secs(60);

/// How long an instance tries to reach an owner before it calls it gone.
const HOP_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The largest envelope an instance reads (the answers of one round).
pub(crate) const MAX_HOP_BYTES: usize = 1024 * 1024;

/// The largest sealed answer an instance reads from an owner.
const MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;

/// What one instance asks of another, for a caller.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HopRound {
    /// The caller, as `Backchannel::owner_key` names it: the held call (or the task) must be
    /// theirs.
    pub(crate) owner: String,
    pub(crate) ask: HopAsk,
    /// When the envelope was made (seconds since the epoch).
    issued_at: u64,
    /// A random id of this envelope's own (inside the seal, so no copy can change it): the owner
    /// opens each once.
    once: String,
}

/// A round of a held call, or a request about a task made through the owner's upstream
/// session.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum HopAsk {
    Round {
        /// The held call's id.
        id: String,
        /// The upstream connection, for the messages.
        connection: String,
        /// The client's answers, by the keys that round asked.
        responses: BTreeMap<String, serde_json::Value>,
    },
    Task {
        /// The downstream task id (sealed for the caller).
        id: String,
        method: TaskMethod,
    },
}

/// A request about a task.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum TaskMethod {
    Get,
    Update(BTreeMap<String, serde_json::Value>),
    Cancel,
}

/// The owner's answer to a task request: the task's state for `Get`.
pub(crate) type TaskAnswer = Result<Option<rmcp::model::GetTaskResult>, rmcp::ErrorData>;

impl HopRound {
    pub(crate) fn new(owner: String, ask: HopAsk) -> Result<HopRound, rmcp::ErrorData> {
        Ok(HopRound {
            owner,
            ask,
            issued_at: now(),
            once: crate::hold::fresh_id()?,
        })
    }
}

/// An owner's answer as it is sealed: bound to the envelope it answers.
#[derive(Serialize, Deserialize)]
struct Answered<T> {
    to: String,
    answer: T,
}

/// A progress or log message of the held call, as it crosses.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum HopUpdate {
    Progress(ProgressNotificationParam),
    Log {
        level: rmcp::model::LoggingLevel,
        logger: Option<String>,
        data: serde_json::Value,
    },
}

impl From<Update> for HopUpdate {
    fn from(update: Update) -> Self {
        match update {
            Update::Progress(progress) => HopUpdate::Progress(progress),
            Update::Log(message) => HopUpdate::Log {
                level: message.level.into(),
                logger: message.logger,
                data: message.data,
            },
        }
    }
}

impl From<HopUpdate> for Update {
    fn from(update: HopUpdate) -> Self {
        match update {
            HopUpdate::Progress(progress) => Update::Progress(progress),
            HopUpdate::Log {
                level,
                logger,
                data,
            } => Update::Log(backchannel_host::LogMessage {
                level: level.into(),
                logger,
                data,
                caller: None,
            }),
        }
    }
}

/// How the round ended at the owner.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum HopEnd {
    /// The upstream asked again: these questions, under the same id.
    Round(InputRequests),
    Tool(CallToolResult),
    Task(Task),
    Prompt(GetPromptResult),
    /// The upstream call failed: why.
    Failed(String),
    /// The upstream answered with a JSON-RPC error (passed on to the client as it is).
    Refused(rmcp::ErrorData),
    /// The owner holds no such call of this caller (it waited too long, or it ended).
    NoLongerHeld,
    /// The call could not be held for another round: why.
    NotHeld(String),
}

/// The owner's answer to a [`HopRound`].
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HopReply {
    pub(crate) updates: Vec<HopUpdate>,
    pub(crate) end: HopEnd,
}

/// Why a round could not be passed to its owner.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HopError {
    /// Nothing listens at the owner's address: the instance stopped (the envelope was not
    /// sent).
    #[error("{0}")]
    Gone(String),
    /// No connection could be made (the envelope was not sent).
    #[error("{0}")]
    Unreachable(String),
    /// The envelope went out, and what came back was a refusal, nothing, or nothing the ring
    /// made for this envelope: whether the owner acted on it is not known until it can no
    /// longer open anywhere ([`Hop::settled`]).
    #[error("{0}")]
    Unconfirmed(String),
}

impl HopError {
    /// Whether the envelope certainly never left this instance.
    pub(crate) fn not_sent(&self) -> bool {
        matches!(self, HopError::Gone(_) | HopError::Unreachable(_))
    }
}

/// This instance's side of the hop: its advertised address and the ring's sealer.
pub(crate) struct Hop {
    advertised: OnceLock<String>,
    /// This run of the process (random), named in its ids.
    run: String,
    sealer: Option<backchannel::Sealer>,
    client: reqwest::Client,
    /// The envelopes opened lately, so that none opens twice.
    opened: std::sync::Mutex<Opened>,
}

/// The ids of the envelopes opened in two spans of [`HOP_REMEMBERED_FOR`]: the current span's
/// and the one before (dropped as a whole when the next span begins), so each is remembered
/// for one to two spans, and memory follows the rate of hops, not their total.
#[derive(Debug, Default)]
struct Opened {
    current: std::collections::HashSet<String>,
    previous: std::collections::HashSet<String>,
    /// When the current span began (seconds since the epoch).
    since: u64,
}

impl Opened {
    /// Whether `once` is new (and now remembered) at `now`.
    fn first_time(&mut self, once: &str, now: u64) -> bool {
        if now.saturating_sub(self.since) >= HOP_REMEMBERED_FOR.as_secs() {
            self.previous = std::mem::take(&mut self.current);
            self.since = now;
        }
        !self.previous.contains(once) && self.current.insert(once.to_owned())
    }
}

impl std::fmt::Debug for Hop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hop")
            .field("advertised", &self.advertised.get())
            .field("sealed", &self.sealer.is_some())
            .finish()
    }
}

impl Hop {
    /// The hop under `keys`, the ring every instance shares; `None` disables it.
    pub(crate) fn new(
        keys: Option<&backchannel::StateKeys>,
    ) -> Result<Hop, backchannel::SealError> {
        let run = crate::hold::fresh_id()
            .map_err(|error| backchannel::SealError::Random(error.message.into_owned()))?;
        Ok(Hop {
            advertised: OnceLock::new(),
            run,
            sealer: keys.map(backchannel::Sealer::with_keys).transpose()?,
            client: reqwest::Client::builder()
                .connect_timeout(HOP_CONNECT_TIMEOUT)
                .pool_max_idle_per_host(0)
                .tcp_nodelay(true)
                .build()
                .unwrap_or_default(),
            opened: Default::default(),
        })
    }

    /// Where the other instances reach this one (`http://host:port`, no path); once.
    pub(crate) fn advertise(&self, base: &str) -> bool {
        self.advertised
            .set(base.trim_end_matches('/').to_owned())
            .is_ok()
    }

    /// This instance's address, when rounds can hop (a ring and an address); also named in
    /// the routes of tasks that live in one upstream session.
    pub(crate) fn here(&self) -> Option<&str> {
        self.sealer.as_ref()?;
        self.advertised.get().map(String::as_str)
    }

    /// `id` naming this instance as its owner, and `session`, the upstream session its call
    /// runs in, when rounds can hop: `<id>@<instance>#<this run>.<session>`.
    pub(crate) fn name(&self, id: String, session: Option<&str>) -> String {
        match (self.here(), session) {
            (Some(base), Some(session)) => format!("{id}@{base}#{}.{session}", self.run),
            (Some(base), None) => format!("{id}@{base}"),
            (None, _) => id,
        }
    }

    /// The owner `id` names, when it is another instance and rounds can hop.
    pub(crate) fn elsewhere<'a>(&self, id: &'a str) -> Option<&'a str> {
        self.other(owner_of(id)?)
    }

    /// The upstream session `id` names, when it names this address but an earlier run of it
    /// (a process since stopped): that session is left over at the upstream.
    pub(crate) fn left_over<'a>(&self, id: &'a str) -> Option<&'a str> {
        let own = self.here()?;
        let (run, session) = run_and_session(id)?;
        (owner_of(id)? == own && run != self.run).then_some(session)
    }
}

/// The instance an id names.
fn owner_of(id: &str) -> Option<&str> {
    let (_, rest) = id.split_once('@')?;
    Some(rest.split_once('#').map_or(rest, |(owner, _)| owner))
}

/// The run of its instance and the upstream session an id names.
fn run_and_session(id: &str) -> Option<(&str, &str)> {
    let (_, rest) = id.split_once('@')?;
    let (_, named) = rest.split_once('#')?;
    named
        .split_once('.')
        .filter(|(_, session)| !session.is_empty())
}

/// The upstream session an id names.
pub(crate) fn session_of(id: &str) -> Option<&str> {
    run_and_session(id).map(|(_, session)| session)
}

impl Hop {
    /// `instance` when it is another instance and rounds can hop.
    pub(crate) fn other<'a>(&self, instance: &'a str) -> Option<&'a str> {
        let own = self.here()?;
        (instance != own && instance.starts_with("http")).then_some(instance)
    }

    /// Pass `round` to `owner` and wait for its answer (a [`HopReply`] for a round, a
    /// [`TaskAnswer`] for a task request), which must be sealed by the ring for this very
    /// envelope. When the envelope went out but no such answer came ([`HopError::Unconfirmed`]),
    /// wait for [`Hop::settled`] before telling the client anything.
    ///
    /// Every hop opens a connection of its own (none is kept idle between hops): a connection
    /// kept from an earlier hop to an owner since killed would take the envelope and break,
    /// where a new one is refused at once and the envelope is known not to have left.
    pub(crate) async fn relay<T: serde::de::DeserializeOwned>(
        &self,
        owner: &str,
        round: &HopRound,
    ) -> Result<T, HopError> {
        let sealer = self
            .sealer
            .as_ref()
            .ok_or_else(|| HopError::Unreachable("no key ring".into()))?;
        let json = serde_json::to_vec(round).map_err(|e| HopError::Unreachable(e.to_string()))?;
        let sent = self
            .client
            .post(format!("{owner}{HOP_PATH}"))
            .header(http::header::CONTENT_TYPE, "text/plain")
            .body(sealer.seal(&json, HOP_CONTEXT))
            .send()
            .await;
        let answered = match sent {
            Err(error) if error.is_connect() => {
                return Err(if refused(&error) {
                    HopError::Gone(cause(&error))
                } else {
                    HopError::Unreachable(cause(&error))
                });
            }
            Err(error) => Err(cause(&error)),
            Ok(response) if !response.status().is_success() => {
                Err(format!("it answered {}", response.status()))
            }
            Ok(response) => read_capped(response)
                .await
                .and_then(|sealed| self.open_answer(&sealed, round)),
        };
        answered.map_err(HopError::Unconfirmed)
    }

    /// Wait until `round`'s envelope can no longer open at any instance whose clock is within
    /// [`HOP_CLOCK_SKEW`] of this one's: whatever became of it is done by then.
    pub(crate) async fn settled(&self, round: &HopRound) {
        if let Some(left) = until_stale(round.issued_at, SystemTime::now()) {
            tokio::time::sleep(left).await;
        }
    }

    /// The owner's answer to `round`, sealed for it.
    pub(crate) fn seal_answer<T: Serialize>(
        &self,
        round: &HopRound,
        answer: T,
    ) -> Result<String, String> {
        let sealer = self.sealer.as_ref().ok_or("no key ring")?;
        let answered = Answered {
            to: round.once.clone(),
            answer,
        };
        let json = serde_json::to_vec(&answered).map_err(|e| e.to_string())?;
        Ok(sealer.seal(&json, HOP_REPLY_CONTEXT))
    }

    /// The answer in `sealed`, when the ring made it for `round`.
    fn open_answer<T: serde::de::DeserializeOwned>(
        &self,
        sealed: &[u8],
        round: &HopRound,
    ) -> Result<T, String> {
        let unverified =
            || "its answer was not one the gateway's ring made for this round".to_owned();
        let sealer = self.sealer.as_ref().ok_or("no key ring")?;
        let sealed = std::str::from_utf8(sealed).map_err(|_| unverified())?;
        let json = sealer
            .open(sealed.trim(), HOP_REPLY_CONTEXT)
            .ok_or_else(unverified)?;
        let answered: Answered<T> = serde_json::from_slice(&json).map_err(|_| unverified())?;
        if answered.to != round.once {
            return Err(unverified());
        }
        Ok(answered.answer)
    }

    /// Whether nothing listens at `owner` any more (a connection to it is refused): asked
    /// again after a hop broke, since a stopping process may take a connection and reset it
    /// before its port closes.
    pub(crate) async fn gone(&self, owner: &str) -> bool {
        match self.client.get(format!("{owner}/healthz")).send().await {
            Err(error) => error.is_connect() && refused(&error),
            Ok(_) => false,
        }
    }

    /// The round in `sealed`, when this ring made it, it is fresh and it was not opened
    /// before: an envelope seen on the way and posted again (its answers given twice, a task
    /// updated twice, or the same round sealed again) is refused like a forged one.
    pub(crate) fn open(&self, sealed: &str) -> Option<HopRound> {
        self.open_at(sealed, now())
    }

    fn open_at(&self, sealed: &str, now: u64) -> Option<HopRound> {
        let json = self.sealer.as_ref()?.open(sealed.trim(), HOP_CONTEXT)?;
        let round: HopRound = serde_json::from_slice(&json).ok()?;
        let ahead = round.issued_at.saturating_sub(now);
        let age = now.saturating_sub(round.issued_at);
        if ahead > HOP_CLOCK_SKEW.as_secs()
            || age > HOP_CLOCK_SKEW.as_secs() + HOP_DELIVERY.as_secs()
        {
            return None;
        }
        let first = self
            .opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .first_time(&round.once, now);
        first.then_some(round)
    }
}

/// How long from `now` (the maker's clock) until an envelope made at `issued_at` opens at no
/// instance whose clock is within [`HOP_CLOCK_SKEW`] of the maker's; `None` when it is so
/// already. A whole second more, since envelopes are dated in whole seconds.
fn until_stale(issued_at: u64, now: SystemTime) -> Option<Duration> {
    let stale = UNIX_EPOCH + Duration::from_secs(issued_at + 1) + HOP_OPENS_UNTIL;
    stale
        .duration_since(now)
        .ok()
        .filter(|left| !left.is_zero())
}

/// The body of `response`, at most [`MAX_REPLY_BYTES`].
async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) if body.len() + chunk.len() <= MAX_REPLY_BYTES => {
                body.extend_from_slice(&chunk);
            }
            Ok(Some(_)) => return Err("its answer was too large".into()),
            Ok(None) => return Ok(body),
            Err(error) => return Err(cause(&error)),
        }
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// Whether the connection was refused: nothing listens there.
fn refused(error: &reqwest::Error) -> bool {
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// What went wrong in a few words, without the instance's address (the client reads it).
fn cause(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "it did not answer in time".into();
    }
    let mut innermost: &dyn std::error::Error = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    if error.is_connect() {
        format!("it cannot be reached: {innermost}")
    } else {
        format!("the connection to it broke: {innermost}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(key: u8) -> backchannel::StateKeys {
        backchannel::StateKeys::new("k1", vec![key; 32]).unwrap()
    }

    #[test]
    fn ids_name_their_owner_only_with_a_ring_and_an_address() {
        let without_ring = Hop::new(None).unwrap();
        without_ring.advertise("http://10.0.0.1:8090");
        assert_eq!(without_ring.name("abc".into(), Some("s1")), "abc");

        let hop = Hop::new(Some(&ring(7))).unwrap();
        assert_eq!(hop.name("abc".into(), None), "abc", "no address yet");
        assert!(hop.advertise("http://10.0.0.1:8090/"));
        assert!(!hop.advertise("http://10.0.0.9:1"), "once");
        let id = hop.name("abc".into(), None);
        assert_eq!(id, "abc@http://10.0.0.1:8090");
        assert_eq!(hop.elsewhere(&id), None, "its own");
        assert_eq!(hop.left_over(&id), None);
        let id = hop.name("abc".into(), Some("s#1.@x"));
        assert_eq!(id, format!("abc@http://10.0.0.1:8090#{}.s#1.@x", hop.run));
        assert_eq!(hop.elsewhere(&id), None, "its own");
        assert_eq!(session_of(&id), Some("s#1.@x"));
        assert_eq!(hop.left_over(&id), None, "this run's own session");
        let earlier = "abc@http://10.0.0.1:8090#0123456789abcdef0123456789abcdef.s1";
        assert_eq!(hop.left_over(earlier), Some("s1"), "an earlier run's");
        let theirs = "abc@http://10.0.0.2:8090#0123456789abcdef.s2";
        assert_eq!(hop.elsewhere(theirs), Some("http://10.0.0.2:8090"));
        assert_eq!(session_of(theirs), Some("s2"));
        assert_eq!(hop.left_over(theirs), None, "another instance's");
        assert_eq!(
            hop.elsewhere("abc@http://10.0.0.2:8090"),
            Some("http://10.0.0.2:8090")
        );
        assert_eq!(hop.elsewhere("abc"), None);
        assert_eq!(hop.elsewhere("abc@file:///etc"), None);
    }

    #[test]
    fn only_the_ring_opens_an_envelope_and_only_while_it_is_fresh() {
        let hop = Hop::new(Some(&ring(7))).unwrap();
        let other = Hop::new(Some(&ring(8))).unwrap();
        let ask = HopAsk::Round {
            id: "abc".into(),
            connection: "orders".into(),
            responses: BTreeMap::new(),
        };
        let round = HopRound::new("anyone".into(), ask).unwrap();
        let sealed = hop
            .sealer
            .as_ref()
            .unwrap()
            .seal(&serde_json::to_vec(&round).unwrap(), HOP_CONTEXT);
        assert!(other.open(&sealed).is_none(), "another ring");
        assert!(matches!(hop.open(&sealed).unwrap().ask, HopAsk::Round { id, .. } if id == "abc"));
        assert!(hop.open(&sealed).is_none(), "opened once only");
        assert!(hop.open(&format!(" {sealed}\n")).is_none(), "nor padded");
        let resealed = hop
            .sealer
            .as_ref()
            .unwrap()
            .seal(&serde_json::to_vec(&round).unwrap(), HOP_CONTEXT);
        assert_ne!(resealed, sealed);
        assert!(hop.open(&resealed).is_none(), "nor sealed again");
        assert!(hop.open("not sealed").is_none());
        // Round state sealed under the same ring is not an envelope.
        let state = hop
            .sealer
            .as_ref()
            .unwrap()
            .seal(&serde_json::to_vec(&round).unwrap(), b"requestState");
        assert!(hop.open(&state).is_none());
        let stale = HopRound {
            issued_at: now() - 600,
            once: crate::hold::fresh_id().unwrap(),
            ..round
        };
        let sealed = hop
            .sealer
            .as_ref()
            .unwrap()
            .seal(&serde_json::to_vec(&stale).unwrap(), HOP_CONTEXT);
        assert!(hop.open(&sealed).is_none(), "stale");
    }

    fn seal_at(hop: &Hop, issued_at: u64) -> String {
        let round = HopRound {
            owner: "anyone".into(),
            ask: HopAsk::Task {
                id: "t".into(),
                method: TaskMethod::Cancel,
            },
            issued_at,
            once: crate::hold::fresh_id().unwrap(),
        };
        hop.sealer
            .as_ref()
            .unwrap()
            .seal(&serde_json::to_vec(&round).unwrap(), HOP_CONTEXT)
    }

    #[test]
    fn an_envelope_is_remembered_for_as_long_as_it_could_open_again() {
        let hop = Hop::new(Some(&ring(7))).unwrap();
        let (skew, delivery) = (HOP_CLOCK_SKEW.as_secs(), HOP_DELIVERY.as_secs());
        let t = 1_000_000;
        // Made as early as may be, opened now; then posted again at every second it is fresh,
        // across the spans the memory turns over in.
        let early = seal_at(&hop, t - skew - delivery);
        assert!(hop.open_at(&early, t).is_some());
        assert!(
            hop.open_at(&seal_at(&hop, t - skew - delivery - 1), t)
                .is_none(),
            "too old"
        );
        let late = seal_at(&hop, t + skew);
        assert!(hop.open_at(&late, t).is_some(), "a clock ahead by the skew");
        assert!(
            hop.open_at(&seal_at(&hop, t + skew + 1), t).is_none(),
            "too far ahead"
        );
        for again in t..=t + 2 * skew + delivery {
            assert!(hop.open_at(&late, again).is_none(), "at {again}");
        }
        // Another envelope, alike but for its id, still opens once.
        let twin = seal_at(&hop, t + skew);
        assert_ne!(twin, late);
        assert!(hop.open_at(&twin, t + 2 * skew + delivery).is_some());
        assert!(hop.open_at(&twin, t + 2 * skew + delivery).is_none());
        // What aged out of both spans is forgotten, and memory holds only the recent.
        let span = HOP_REMEMBERED_FOR.as_secs();
        assert!(span > 2 * skew + delivery);
        assert!(
            hop.open_at(&seal_at(&hop, t + 5 * span), t + 5 * span)
                .is_some()
        );
        assert!(
            hop.open_at(&seal_at(&hop, t + 7 * span), t + 7 * span)
                .is_some()
        );
        let opened = hop.opened.lock().unwrap();
        assert_eq!(opened.current.len() + opened.previous.len(), 2);
    }

    /// Finding 1 of issue 71: an envelope withheld on the way could be delivered within its
    /// 30 s after the client was told nothing was done. Now the asker says so only once the
    /// envelope opens at no instance whose clock is within the skew of its own.
    #[test]
    fn an_unconfirmed_round_is_said_only_once_its_envelope_can_no_longer_open() {
        let hop = Hop::new(Some(&ring(7))).unwrap();
        let skew = HOP_CLOCK_SKEW.as_secs();
        let t = 1_000_000;
        for sent_after in [0, 1, 3, 14, 15, 16, 30] {
            let made_at = t;
            let asked_at = UNIX_EPOCH + Duration::from_secs(made_at + sent_after);
            let told_at = asked_at + until_stale(made_at, asked_at).unwrap_or_default();
            let told = told_at.duration_since(UNIX_EPOCH).unwrap().as_secs();
            for behind in 0..=2 * skew {
                // The owner's clock, from the whole skew behind to the whole skew ahead.
                let owner_now = (told + skew).saturating_sub(behind);
                assert!(
                    hop.open_at(&seal_at(&hop, made_at), owner_now).is_none(),
                    "sent after {sent_after} s, the owner's clock {behind} s from ahead"
                );
            }
        }
        assert_eq!(
            until_stale(t, UNIX_EPOCH + Duration::from_secs(t + 60)),
            None
        );
    }

    /// Serve `answer` (its body, as the owner's address would) at a fresh loopback port.
    async fn fake_owner(answer: String) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route(
            HOP_PATH,
            axum::routing::post(move || {
                let answer = answer.clone();
                async move { answer }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}")
    }

    /// Finding 1 of issue 71: the owner's answer was plain JSON, so whatever answered at its
    /// address told a client "order cancelled" or sent it a `javascript:` URL question. Only an
    /// answer the ring sealed for this very envelope is taken now.
    #[tokio::test]
    async fn an_answer_on_the_hop_is_taken_only_when_the_ring_sealed_it_for_its_envelope() {
        let hop = Hop::new(Some(&ring(7))).unwrap();
        let reply = || HopReply {
            updates: Vec::new(),
            end: HopEnd::Failed("order cancelled and refunded".into()),
        };
        let round = || HopRound {
            owner: "ana".into(),
            ask: HopAsk::Task {
                id: "t".into(),
                method: TaskMethod::Get,
            },
            issued_at: now(),
            once: crate::hold::fresh_id().unwrap(),
        };
        let plain = fake_owner(serde_json::to_string(&reply()).unwrap()).await;
        let sent = round();
        let forged = hop.relay::<HopReply>(&plain, &sent).await;
        assert!(
            matches!(forged, Err(HopError::Unconfirmed(_))),
            "{forged:?}"
        );
        let other_ring = Hop::new(Some(&ring(8))).unwrap();
        let theirs = fake_owner(other_ring.seal_answer(&sent, reply()).unwrap()).await;
        assert!(matches!(
            hop.relay::<HopReply>(&theirs, &sent).await,
            Err(HopError::Unconfirmed(_))
        ));
        // An answer the ring did seal, but for another envelope, replayed.
        let earlier = round();
        let replayed = fake_owner(hop.seal_answer(&earlier, reply()).unwrap()).await;
        assert!(matches!(
            hop.relay::<HopReply>(&replayed, &sent).await,
            Err(HopError::Unconfirmed(_))
        ));
        let own = fake_owner(hop.seal_answer(&sent, reply()).unwrap()).await;
        let answered = hop.relay::<HopReply>(&own, &sent).await.unwrap();
        assert!(matches!(answered.end, HopEnd::Failed(why) if why.contains("refunded")));
        // Nothing listens: not sent, said at once.
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", listener.local_addr().unwrap())
        };
        let gone = hop.relay::<HopReply>(&closed, &sent).await.unwrap_err();
        assert!(gone.not_sent(), "{gone:?}");
        assert!(hop.gone(&closed).await);
        assert!(!hop.gone(&own).await);
    }
}
