//! Reading a model's event stream (server-sent events), one event at a time, each capped at
//! [`MAX_EVENT_BYTES`].

use serde_json::Value;

use super::LlmError;

/// Where streamed words go as they arrive.
pub type OnText<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// The most one event of a streamed answer may hold, in bytes; a longer one ends the stream.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// Read a server-sent event stream, handing `take` each `data:` payload; `take` returns
/// `true` when the answer is complete. Lines are capped at [`MAX_EVENT_BYTES`] before they
/// are parsed.
pub(crate) async fn each_event(
    response: reqwest::Response,
    mut take: impl FnMut(&str) -> Result<bool, LlmError>,
) -> Result<(), LlmError> {
    use futures::StreamExt;
    let mut bytes = response.bytes_stream();
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(chunk) = bytes.next().await {
        buffer.extend_from_slice(&chunk?);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if let Some(data) = line.strip_prefix("data:")
                && take(data.trim_start())?
            {
                return Ok(());
            }
        }
        if buffer.len() > MAX_EVENT_BYTES {
            return Err(LlmError::Stream(format!(
                "an event is longer than {MAX_EVENT_BYTES} bytes"
            )));
        }
    }
    // Some servers end the stream without a last marker; what came is the answer.
    Ok(())
}

/// The message of an error object in a stream (`{"message": ...}` or a bare string).
pub(crate) fn error_text(error: &Value) -> String {
    error["message"]
        .as_str()
        .or_else(|| error.as_str())
        .map_or_else(|| error.to_string(), str::to_owned)
        .chars()
        .take(500)
        .collect()
}
