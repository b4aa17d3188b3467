//! Entry points for the fuzz targets in `fuzz/` and for the tests that replay their corpus:
//! each takes arbitrary bytes, feeds them to a parser that reads outside input, and checks what
//! must hold whatever the bytes are. Not an API.

use rmcp::model::JsonObject;

use crate::clock::Clock;
use crate::state::{AskKind, CallBinding, KeyChoice, Sealed, StateCodec, StateError};

fn codec() -> StateCodec {
    StateCodec::new(KeyChoice::Single(vec![0x5a; 32])).expect("a 32-byte key is long enough")
}

/// Open bytes as a sealed `requestState` (they never verify unless they came from the codec),
/// then seal a payload read from the same bytes and check it opens to itself for the call it
/// was sealed for only.
pub fn request_state(data: &[u8]) {
    let clock = Clock::new();
    let mut arguments = JsonObject::new();
    arguments.insert("orderId".into(), "ORD-10002".into());
    let binding = CallBinding::new("tool", "cancel_order", Some(&arguments), Some("p".into()));
    let text = String::from_utf8_lossy(data);
    match codec().open(&binding, &text, &clock) {
        Err(StateError::Invalid) => {}
        other => panic!("arbitrary bytes opened as state: {other:?}"),
    }
    if let Ok(mut payload) = serde_json::from_slice::<Sealed>(data) {
        payload.exp = u64::MAX;
        // Values that do not survive a JSON round trip (a NaN progress) are not compared.
        if payload.progress.is_some_and(|p| !p.is_finite()) {
            payload.progress = None;
        }
        let sealed = codec().seal(&binding, &payload);
        let opened = codec().open(&binding, &sealed, &clock);
        assert_eq!(opened.as_ref().map(|p| p.round), Ok(payload.round));
        let other = CallBinding::new("tool", "cancel_order", Some(&arguments), Some("q".into()));
        assert_eq!(
            codec().open(&other, &sealed, &clock),
            Err(StateError::Invalid)
        );
    }
}

/// Read bytes as an `inputResponses` value for each kind of question.
pub fn input_response(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    for kind in [
        AskKind::Form,
        AskKind::Url,
        AskKind::Sampling,
        AskKind::Roots,
    ] {
        let _ = crate::sampling_roots_logging::read_response(kind, &value);
    }
}

/// Check bytes as a POSTed JSON-RPC body; a body that passes is one JSON-RPC object.
pub fn jsonrpc_body(data: &[u8]) {
    if crate::serve::jsonrpc::check_body(data).is_ok() {
        let value: serde_json::Value =
            serde_json::from_slice(data).unwrap_or_else(|e| panic!("passed but unparsable: {e}"));
        assert!(value.is_object());
        assert_eq!(value["jsonrpc"], "2.0");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay(target: &str, check: fn(&[u8])) {
        crate::util::replay_fuzz_corpus(target, check);
    }

    #[test]
    fn the_request_state_corpus_replays() {
        replay("request_state", request_state);
    }

    #[test]
    fn the_input_response_corpus_replays() {
        replay("input_response", input_response);
    }

    #[test]
    fn the_jsonrpc_body_corpus_replays() {
        replay("jsonrpc_body", jsonrpc_body);
    }
}
