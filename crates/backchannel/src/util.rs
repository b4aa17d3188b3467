//! Small helpers every module may use: a lock that survives a panicked holder, and random ids.

use std::sync::{Mutex, MutexGuard};

/// Lock `mutex`, taking the data even if a holder panicked (every guarded value here stays
/// consistent between statements).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `N` bytes from the operating system's random source.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if let Err(error) = getrandom::fill(&mut bytes) {
        // No OS randomness means no safe key or id; refuse to run rather than use zeros.
        panic!("the operating system provided no random bytes: {error}");
    }
    bytes
}

/// Lower-case hexadecimal.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh random nonce (128 bits, hex).
pub(crate) fn fresh_nonce() -> String {
    hex(&random_bytes::<16>())
}
