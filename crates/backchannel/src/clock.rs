//! Wall-clock time that follows tokio's clock, so paused-time tests can move it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A wall clock anchored once to the system time and advanced by tokio's monotonic clock.
///
/// Sealed request state carries absolute expiry times (any server instance may open it), so the
/// layer needs wall-clock milliseconds. Reading them through tokio's `Instant` keeps them
/// monotonic and lets tests with `tokio::time::pause` expire state without waiting.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    anchor_unix_ms: u64,
    anchor: tokio::time::Instant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        let anchor_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_millis() as u64;
        Self {
            anchor_unix_ms,
            anchor: tokio::time::Instant::now(),
        }
    }

    /// Milliseconds since the Unix epoch.
    pub(crate) fn now_ms(&self) -> u64 {
        self.anchor_unix_ms + self.anchor.elapsed().as_millis() as u64
    }
}
