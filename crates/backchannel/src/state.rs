//! The sealed `requestState` that carries earlier rounds' answers between 2026-07-28 retries.
//!
//! The payload is encrypted and signed ([`crate::Sealer`]: XChaCha20-Poly1305 inside rmcp's
//! HMAC `RequestStateCodec`), so a client can neither read the earlier answers it carries nor
//! change them; the associated data binds it to the call (tool or prompt name, a digest of the
//! arguments, and the caller's identity where there is one), and the payload carries its own
//! expiry read from the layer's [`Clock`].

use std::collections::BTreeMap;

use rmcp::model::{ElicitationAction, JsonObject};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::clock::Clock;

/// An answer the layer holds for one ask key, normalised across both revisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "o", rename_all = "snake_case")]
pub(crate) enum Answer {
    /// An elicitation result (form or URL mode).
    Elicit {
        action: ElicitationAction,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<serde_json::Value>,
        /// The `_meta` the client sent with its answer (why it answered so, say).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        meta: Option<serde_json::Map<String, serde_json::Value>>,
    },
    /// A sampling result, kept as the JSON the client sent.
    Sampled { result: serde_json::Value },
    /// A roots result, kept as the JSON the client sent.
    Roots { result: serde_json::Value },
    /// The client answered the request with a JSON-RPC error.
    Refused { code: i32, message: String },
    /// No answer arrived within the ask's timeout.
    TimedOut,
    /// The client's answer was not an answer to what was asked (a result of another kind): a
    /// bug in the client, not a person's choice.
    Failed { message: String },
}

/// What kind of request an ask sent; decides how its response is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AskKind {
    Form,
    Url,
    Sampling,
    Roots,
}

impl AskKind {
    /// The request the question goes out as.
    pub(crate) fn method(self) -> &'static str {
        match self {
            AskKind::Form | AskKind::Url => "elicitation/create",
            AskKind::Sampling => "sampling/createMessage",
            AskKind::Roots => "roots/list",
        }
    }
}

/// An ask that went out in the previous round and awaits its response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Asked {
    pub(crate) kind: AskKind,
    /// When the question went out (unix ms).
    pub(crate) at: u64,
    /// How long the person may take (ms); a later response counts as timed out.
    pub(crate) timeout: u64,
}

/// The sealed payload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    /// Expiry (unix ms).
    pub(crate) exp: u64,
    /// Rounds completed so far.
    pub(crate) round: u32,
    /// Random per-call nonce; URL elicitation ids derive from it.
    pub(crate) nonce: String,
    /// Answers of every earlier round, by key.
    #[serde(default)]
    pub(crate) answers: BTreeMap<String, Answer>,
    /// Asks of the latest round, by key.
    #[serde(default)]
    pub(crate) asked: BTreeMap<String, Asked>,
    /// The highest progress value sent so far, so a retry's replay does not send progress
    /// backwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) progress: Option<f64>,
    /// The W3C `traceparent` of the call's first round, when its spans are exported: every
    /// later round continues that trace (`telemetry::continue_call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace: Option<String>,
    /// The round the body passed on from another server ([`crate::Ctx::pass_round`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) passed: Option<PassedOn>,
}

/// A round another server asked, passed on to the client as it was: the keys asked, and that
/// server's own `requestState`, handed back to the next round's body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct PassedOn {
    pub(crate) keys: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) state: Option<String>,
}

/// Why a `requestState` was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// The state does not verify: tampered, sealed for another call, or by another key.
    #[error("requestState failed verification (tampered, or sealed for a different call)")]
    Invalid,
    /// The state verified but its expiry has passed.
    #[error("requestState has expired; start the call again")]
    Expired,
    /// The state was already used for a retry: each round's state answers once.
    #[error("requestState has already been used; start the call again")]
    Spent,
}

/// Remembers which rounds' state has been used, until it would have expired anyway.
#[derive(Debug, Default)]
pub(crate) struct SpentRounds {
    /// (nonce, round) → expiry (unix ms).
    spent: std::sync::Mutex<std::collections::HashMap<(String, u32), u64>>,
}

impl SpentRounds {
    /// Mark the round as used; `false` if it already was.
    pub(crate) fn spend(&self, nonce: &str, round: u32, expires: u64, now: u64) -> bool {
        let mut spent = self
            .spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if spent.len() >= 1024 && spent.len().is_power_of_two() {
            spent.retain(|_, exp| *exp >= now);
        }
        match spent.entry((nonce.to_owned(), round)) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(expires);
                true
            }
        }
    }
}

/// Identity of one call, bound into the seal. Cheap to make: the digest is computed only when
/// state is actually sealed or opened, so calls that never ask pay nothing for it.
#[derive(Debug, Clone)]
pub(crate) struct CallBinding<'a> {
    kind: &'static str,
    name: std::borrow::Cow<'a, str>,
    arguments: Option<std::borrow::Cow<'a, JsonObject>>,
    principal: Option<String>,
    bytes: std::sync::OnceLock<Vec<u8>>,
}

impl<'a> CallBinding<'a> {
    pub(crate) fn new(
        kind: &'static str,
        name: &'a str,
        arguments: Option<&'a JsonObject>,
        principal: Option<String>,
    ) -> Self {
        Self {
            kind,
            name: std::borrow::Cow::Borrowed(name),
            arguments: arguments.map(std::borrow::Cow::Borrowed),
            principal,
            bytes: std::sync::OnceLock::new(),
        }
    }

    /// The same binding, owning its parts (for a task that outlives the request).
    pub(crate) fn into_owned(self) -> CallBinding<'static> {
        CallBinding {
            kind: self.kind,
            name: std::borrow::Cow::Owned(self.name.into_owned()),
            arguments: self
                .arguments
                .map(|a| std::borrow::Cow::Owned(a.into_owned())),
            principal: self.principal,
            bytes: self.bytes,
        }
    }

    fn bytes(&self) -> &[u8] {
        self.bytes.get_or_init(|| {
            let mut hasher = Sha256::new();
            // serde_json's map keeps insertion order only with `preserve_order`; without it the
            // map is sorted, so equal arguments always hash equally.
            hasher.update(serde_json::to_vec(&self.arguments).unwrap_or_default());
            let digest = hasher.finalize();
            let principal = self.principal.as_deref().unwrap_or("");
            let mut bytes = Vec::with_capacity(64 + self.name.len());
            for part in [
                self.kind.as_bytes(),
                self.name.as_bytes(),
                principal.as_bytes(),
            ] {
                bytes.extend_from_slice(&(part.len() as u32).to_be_bytes());
                bytes.extend_from_slice(part);
            }
            bytes.extend_from_slice(&digest);
            bytes
        })
    }
}

/// Seals and opens request state.
#[derive(Clone)]
pub(crate) struct StateCodec {
    sealer: crate::Sealer,
}

impl std::fmt::Debug for StateCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateCodec(..)")
    }
}

/// The key material a layer seals with: one key, or a ring (see [`crate::StateKeys`]).
#[derive(Debug, Clone)]
pub(crate) enum KeyChoice {
    Single(Vec<u8>),
    Ring(crate::StateKeys),
}

impl StateCodec {
    /// The codec for `keys`; the builder has checked their lengths and ids.
    pub(crate) fn new(keys: KeyChoice) -> Result<Self, crate::SealError> {
        let sealer = match keys {
            KeyChoice::Single(key) => crate::Sealer::with_key(&key)?,
            KeyChoice::Ring(ring) => crate::Sealer::with_keys(&ring)?,
        };
        Ok(Self { sealer })
    }

    pub(crate) fn seal(&self, binding: &CallBinding<'_>, payload: &Sealed) -> String {
        let json = serde_json::to_vec(payload).unwrap_or_default();
        self.sealer.seal(&json, binding.bytes())
    }

    pub(crate) fn open(
        &self,
        binding: &CallBinding<'_>,
        sealed: &str,
        clock: &Clock,
    ) -> Result<Sealed, StateError> {
        let bytes = self
            .sealer
            .open(sealed, binding.bytes())
            .ok_or(StateError::Invalid)?;
        let payload: Sealed = serde_json::from_slice(&bytes).map_err(|_| StateError::Invalid)?;
        if clock.now_ms() > payload.exp {
            return Err(StateError::Expired);
        }
        Ok(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec() -> StateCodec {
        StateCodec::new(KeyChoice::Single(vec![7u8; 32])).unwrap()
    }

    fn ring(keys: crate::StateKeys) -> StateCodec {
        StateCodec::new(KeyChoice::Ring(keys)).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn state_sealed_with_a_previous_key_opens_until_the_key_leaves_the_ring() {
        let clock = Clock::new();
        let binding = CallBinding::new("tool", "cancel", None, None);
        let payload = Sealed {
            exp: clock.now_ms() + 1_000,
            round: 1,
            ..Sealed::default()
        };
        let old = crate::StateKeys::new("old", vec![1u8; 32]).unwrap();
        let rotated = crate::StateKeys::new("new", vec![2u8; 32])
            .unwrap()
            .with_previous("old", vec![1u8; 32])
            .unwrap();
        let retired = crate::StateKeys::new("new", vec![2u8; 32]).unwrap();

        let sealed_before = ring(old.clone()).seal(&binding, &payload);
        // Another instance, already rotated, opens it; and what it seals, an instance not yet
        // rotated cannot (it does not know the new key), which is why rotation adds first.
        assert_eq!(
            ring(rotated.clone()).open(&binding, &sealed_before, &clock),
            Ok(payload.clone())
        );
        let sealed_after = ring(rotated).seal(&binding, &payload);
        assert_eq!(
            ring(retired.clone()).open(&binding, &sealed_after, &clock),
            Ok(payload)
        );
        assert_eq!(
            ring(old).open(&binding, &sealed_after, &clock),
            Err(StateError::Invalid)
        );
        // Once the old key is dropped, what it sealed is refused.
        assert_eq!(
            ring(retired).open(&binding, &sealed_before, &clock),
            Err(StateError::Invalid)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn state_opens_only_for_the_call_it_was_sealed_for() {
        let clock = Clock::new();
        let mut args = JsonObject::new();
        args.insert("orderId".into(), "ORD-1".into());
        let binding = CallBinding::new("tool", "cancel", Some(&args), None);
        let payload = Sealed {
            exp: clock.now_ms() + 1_000,
            round: 1,
            ..Sealed::default()
        };
        let sealed = codec().seal(&binding, &payload);
        assert_eq!(codec().open(&binding, &sealed, &clock), Ok(payload));

        let mut other_args = args.clone();
        other_args.insert("orderId".into(), "ORD-2".into());
        let other = CallBinding::new("tool", "cancel", Some(&other_args), None);
        assert_eq!(
            codec().open(&other, &sealed, &clock),
            Err(StateError::Invalid)
        );
        let other_tool = CallBinding::new("tool", "refund", Some(&args), None);
        assert_eq!(
            codec().open(&other_tool, &sealed, &clock),
            Err(StateError::Invalid)
        );
        let other_user = CallBinding::new("tool", "cancel", Some(&args), Some("mallory".into()));
        assert_eq!(
            codec().open(&other_user, &sealed, &clock),
            Err(StateError::Invalid)
        );

        let mut tampered = sealed.clone();
        let last = tampered.pop().map(|c| if c == 'A' { 'B' } else { 'A' });
        tampered.extend(last);
        assert_eq!(
            codec().open(&binding, &tampered, &clock),
            Err(StateError::Invalid)
        );

        tokio::time::advance(std::time::Duration::from_millis(1_001)).await;
        assert_eq!(
            codec().open(&binding, &sealed, &clock),
            Err(StateError::Expired)
        );
    }
}
