//! Small helpers every module may use: a lock that survives a panicked holder, and random ids.

use std::sync::{Mutex, MutexGuard};

/// Lock `mutex`, taking the data even if a holder panicked (every guarded value here stays
/// consistent between statements). The one poison-tolerant lock of the workspace: the host, the
/// gateway and the desk use it too.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP edge")
)]
/// Keep `cx`'s waker in `slot` to be woken later (cloning it only when it is not the one kept).
pub(crate) fn keep_waker(slot: &mut Option<std::task::Waker>, cx: &std::task::Context<'_>) {
    if !slot
        .as_ref()
        .is_some_and(|waker| waker.will_wake(cx.waker()))
    {
        *slot = Some(cx.waker().clone());
    }
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
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

/// A fresh random nonce (128 bits, hex), from the operating system's random source (see
/// [`fresh_random`]).
pub(crate) fn fresh_nonce() -> String {
    hex(&fresh_random::<16>())
}

/// `N` fresh random bytes from the operating system's random source, each handed out once.
///
/// Every call that asks needs a nonce and every sealed state another, and a system call each
/// was a percent of a confirmed cancel's CPU: the bytes are fetched [`NONCE_BATCH`] nonces at a
/// time into a buffer of this thread's, and what is handed out is wiped from it.
pub(crate) fn fresh_random<const N: usize>() -> [u8; N] {
    const BUFFER: usize = 16 * NONCE_BATCH;
    const { assert!(N <= BUFFER) };
    thread_local! {
        static RANDOM: std::cell::RefCell<([u8; BUFFER], usize)> =
            const { std::cell::RefCell::new(([0; BUFFER], BUFFER)) };
    }
    RANDOM.with_borrow_mut(|(bytes, used)| {
        if *used + N > BUFFER {
            *bytes = random_bytes::<BUFFER>();
            *used = 0;
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&bytes[*used..*used + N]);
        // Handed out once: nothing of it stays to be read again.
        bytes[*used..*used + N].fill(0);
        *used += N;
        out
    })
}

/// How many nonces one read of the operating system's random source makes.
const NONCE_BATCH: usize = 64;

/// Run `check` on every input in `fuzz/seeds/<target>` (a small corpus spread over the sizes
/// `scripts/fuzz` found) and `fuzz/regressions/<target>` (every input a fuzzer ever crashed
/// on); panics naming the first input that makes `check` panic, or when there are none.
/// Shared by the library's own corpus tests and `testing::replay_fuzz_corpus`.
#[cfg(any(test, feature = "test-util"))]
pub(crate) fn replay_fuzz_corpus(target: &str, check: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut seen = 0;
    for dir in ["seeds", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let outcome = std::panic::catch_unwind(|| check(&bytes));
            assert!(outcome.is_ok(), "{} fails", path.display());
            seen += 1;
        }
    }
    assert!(seen > 0, "fuzz/seeds/{target} holds the seeds");
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_two_lower_case_digits_a_byte() {
        assert_eq!(super::hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(super::hex(&[]), "");
        assert_eq!(super::fresh_nonce().len(), 32);
    }

    #[test]
    fn fresh_random_bytes_do_not_repeat_across_refills() {
        // 200 draws of 24 bytes take several of the thread's buffers.
        let drawn: std::collections::HashSet<[u8; 24]> =
            (0..200).map(|_| super::fresh_random::<24>()).collect();
        assert_eq!(drawn.len(), 200);
        assert!(!drawn.contains(&[0u8; 24]));
    }
}
