//! The check every POSTed body passes before rmcp sees it: one full parse, with the nesting
//! capped before parsing, and the JSON-RPC envelope's shape checked, so a malformed message
//! gets the JSON-RPC error the spec names (as JSON) instead of rmcp's plain-text 415.

use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// The deepest nesting of arrays and objects a body may have.
pub const MAX_DEPTH: usize = 64;

/// What the check found wrong, as a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct BodyError {
    /// -32700 (parse error), -32600 (invalid request) or -32602 (invalid params).
    pub code: i32,
    /// What was wrong, for the client's developer.
    pub message: String,
    /// The request's id, when it had a usable one.
    pub id: Option<Value>,
}

impl BodyError {
    fn parse(message: impl Into<String>) -> Self {
        Self {
            code: -32700,
            message: message.into(),
            id: None,
        }
    }

    fn invalid(message: impl Into<String>, id: Option<&Value>) -> Self {
        Self {
            code: -32600,
            message: message.into(),
            id: id.cloned(),
        }
    }
}

/// What a well-formed body holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A request: its method and id.
    Request {
        /// The method.
        method: String,
        /// The id (a string or an integer).
        id: Value,
    },
    /// A notification (a method, no id).
    Notification {
        /// The method.
        method: String,
    },
    /// A response or error to a request the server sent.
    Response,
}

/// How deep arrays and objects nest, counted over the raw bytes (strings skipped), stopping
/// as soon as `limit` is passed. Linear, and safe on any bytes. A string's bytes are skipped
/// in one search for its end (they are most of a body: texts, sealed state), not one by one.
pub(crate) fn nesting_exceeds(bytes: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        at += 1;
        match byte {
            b'"' => loop {
                // The string's end: the next quote that no backslash escapes.
                let Some(found) = bytes
                    .get(at..)
                    .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                else {
                    return false;
                };
                at += found + 1;
                if bytes[at - 1] == b'"' {
                    break;
                }
                // A backslash escapes the byte after it.
                at += 1;
            },
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

fn usable_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// Check one POSTed body. Batches are refused (MCP sends one message per POST).
pub fn check_body(bytes: &[u8]) -> Result<Message, BodyError> {
    check(bytes).map(|(message, _)| message)
}

/// [`check_body`], keeping the parsed body for what comes next.
pub(crate) fn check(bytes: &[u8]) -> Result<(Message, Value), BodyError> {
    if nesting_exceeds(bytes, MAX_DEPTH) {
        return Err(BodyError::parse(format!(
            "Parse error: the body nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|error| BodyError::parse(format!("Parse error: {error}")))?;
    let object = match &value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(BodyError::invalid(
                "Invalid Request: batches are not supported; send one JSON-RPC message per POST",
                None,
            ));
        }
        _ => {
            return Err(BodyError::invalid(
                "Invalid Request: the body must be a JSON-RPC message object",
                None,
            ));
        }
    };
    let id = object.get("id").filter(|id| usable_id(id));
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(BodyError::invalid(
            "Invalid Request: \"jsonrpc\" must be \"2.0\"",
            id,
        ));
    }
    if let Some(raw) = object.get("id")
        && id.is_none()
    {
        return Err(BodyError::invalid(
            format!("Invalid Request: \"id\" must be a string or an integer, not {raw}"),
            None,
        ));
    }
    let Some(method) = object.get("method") else {
        // A response to a request the server sent.
        if id.is_some() && (object.contains_key("result") || object.contains_key("error")) {
            return Ok((Message::Response, value));
        }
        return Err(BodyError::invalid(
            "Invalid Request: a message needs a \"method\", or an \"id\" with a \"result\" or \
             \"error\"",
            id,
        ));
    };
    let Some(method) = method.as_str() else {
        return Err(BodyError::invalid(
            "Invalid Request: \"method\" must be a string",
            id,
        ));
    };
    let params = object.get("params");
    if let Some(params) = params
        && !params.is_object()
    {
        return Err(BodyError::invalid(
            "Invalid Request: \"params\" must be an object",
            id,
        ));
    }
    if method == "tools/call"
        && let Some(arguments) = params.and_then(|p| p.get("arguments"))
        && !arguments.is_object()
    {
        return Err(BodyError {
            code: -32602,
            message: "Invalid params: \"arguments\" must be an object".into(),
            id: id.cloned(),
        });
    }
    let message = match id {
        Some(id) => Message::Request {
            method: method.to_owned(),
            id: id.clone(),
        },
        None => Message::Notification {
            method: method.to_owned(),
        },
    };
    Ok((message, value))
}

/// A JSON-RPC error response with an HTTP status: `{"jsonrpc": "2.0", "id": …, "error": {"code":
/// …, "message": …}}` as `application/json`. Every server's HTTP edge answers its refusals with
/// it (the id is `None` when the request's id is unknown or unread).
///
/// ```
/// let response = backchannel::serve::jsonrpc_error(
///     http::StatusCode::UNAUTHORIZED,
///     -32001,
///     "Sign-in required",
///     None,
/// );
/// assert_eq!(response.status(), 401);
/// assert_eq!(response.headers()["content-type"], "application/json");
/// ```
pub fn jsonrpc_error(
    status: http::StatusCode,
    code: i32,
    message: impl Into<String>,
    id: Option<Value>,
) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message.into() },
    });
    (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &[u8]) -> i32 {
        check_body(body).unwrap_err().code
    }

    #[test]
    fn malformed_bodies_get_the_errors_the_spec_names() {
        for body in [
            &b"null"[..],
            b"[]",
            b"{}",
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
            b"3",
            b"\"x\"",
        ] {
            assert_eq!(code(body), -32600, "{}", String::from_utf8_lossy(body));
        }
        for body in [
            &br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#[..],
            br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":7}"#,
        ] {
            assert_eq!(code(body), -32600, "{}", String::from_utf8_lossy(body));
        }
        let not_object_arguments =
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","arguments":[1]}}"#;
        let error = check_body(not_object_arguments).unwrap_err();
        assert_eq!((error.code, error.id), (-32602, Some(Value::from(4))));
        for body in [
            &b"{not json"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\ud800"}}"#,
        ] {
            assert_eq!(code(body), -32700, "{}", String::from_utf8_lossy(body));
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(code(deep.as_bytes()), -32700);
    }

    #[test]
    fn well_formed_messages_pass() {
        assert_eq!(
            check_body(br#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#),
            Ok(Message::Request {
                method: "tools/list".into(),
                id: Value::from("a")
            })
        );
        assert_eq!(
            check_body(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification {
                method: "notifications/initialized".into()
            })
        );
        assert_eq!(
            check_body(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Ok(Message::Response)
        );
        let nested = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"a":{}1{}}}}}}}"#,
            "[".repeat(50),
            "]".repeat(50)
        );
        assert!(check_body(nested.as_bytes()).is_ok());
        // Brackets inside strings do not count as nesting.
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"s":"{}\"\\"}}}}"#,
            "[".repeat(500)
        );
        assert!(check_body(text.as_bytes()).is_ok());
    }

    /// The byte-by-byte count the string-skipping scan replaced, as the oracle.
    fn nesting_exceeds_byte_by_byte(bytes: &[u8], limit: usize) -> bool {
        let (mut depth, mut in_string, mut skip_next) = (0usize, false, false);
        bytes.iter().any(|&byte| {
            if skip_next {
                skip_next = false;
            } else if in_string {
                skip_next = byte == b'\\';
                in_string = byte != b'"';
            } else {
                in_string = byte == b'"';
                depth = match byte {
                    b'[' | b'{' => depth + 1,
                    b']' | b'}' => depth.saturating_sub(1),
                    _ => depth,
                };
            }
            depth > limit
        })
    }

    #[test]
    fn the_nesting_scan_agrees_with_a_byte_by_byte_count() {
        // Every string of up to seven bytes over the bytes that matter, and some longer ones
        // (a fixed generator, so a failure names its input again on the next run).
        let alphabet = b"[]{}\"\\a";
        let mut inputs: Vec<Vec<u8>> = vec![Vec::new()];
        let mut frontier = inputs.clone();
        for _ in 0..7 {
            frontier = frontier
                .iter()
                .flat_map(|prefix| {
                    alphabet.iter().map(move |&b| {
                        let mut next = prefix.clone();
                        next.push(b);
                        next
                    })
                })
                .collect();
            inputs.extend(frontier.iter().cloned());
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..2000 {
            let len = (seed % 200) as usize;
            let input = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            inputs.push(input);
        }
        for input in &inputs {
            for limit in [0, 1, 2, 3] {
                assert_eq!(
                    nesting_exceeds(input, limit),
                    nesting_exceeds_byte_by_byte(input, limit),
                    "{:?} at limit {limit}",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }
}
