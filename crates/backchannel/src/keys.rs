//! The keys that seal `requestState`, as a ring: one current key seals, and every key in the
//! ring (the current one and the previous ones) opens. Instances behind a load balancer share
//! one ring, so a round sealed by one is honoured by any other; rotating means adding a new
//! current key and keeping the old one as previous until the state it sealed has expired
//! (`state_ttl`, ten minutes by default), then dropping it.
//!
//! A key file holds one key a line, `current ID HEX` once and `previous ID HEX` any number of
//! times, with `#` comments and blank lines allowed:
//!
//! ```text
//! # openssl rand -hex 32
//! current  2026-12  6f1d…(64 hex digits or more)
//! previous 2026-11  93ab…
//! ```

use std::path::{Path, PathBuf};

/// The shortest key accepted, in bytes (rmcp's minimum for HMAC-SHA256 state).
pub const MIN_KEY_BYTES: usize = 32;

/// The most bytes read from a key file.
pub const MAX_KEY_FILE_BYTES: usize = 64 * 1024;

/// A ring of state keys: the current one seals, all of them open. `Debug` shows the ids only.
#[derive(Clone, PartialEq, Eq)]
pub struct StateKeys {
    current: String,
    keys: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Debug for StateKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKeys")
            .field("current", &self.current)
            .field(
                "ids",
                &self
                    .keys
                    .iter()
                    .map(|(id, _)| id.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("keys", &"<redacted>")
            .finish()
    }
}

/// Why a key ring was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateKeysError {
    /// A key is too short to be safe.
    #[error(
        "state key {id:?} is {len} bytes; at least {MIN_KEY_BYTES} are needed (64 hex digits: `openssl rand -hex 32`)"
    )]
    TooShort {
        /// The key's id.
        id: String,
        /// Its length in bytes.
        len: usize,
    },
    /// A key id is empty, too long, or has characters other than letters, digits, `-`, `_`, `.`.
    #[error("state key id {0:?} is not valid: use 1 to 64 letters, digits, '-', '_' or '.'")]
    BadId(String),
    /// Two keys share an id.
    #[error("state key id {0:?} is used twice")]
    Duplicate(String),
    /// A line of a key file is not `current ID HEX` or `previous ID HEX`.
    #[error("line {line} of the key file: {reason}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The file has no `current` line, or more than one.
    #[error("the key file must name exactly one current key, it names {0}")]
    Current(usize),
    /// The file could not be read.
    #[error("cannot read the key file {0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// The file is larger than [`MAX_KEY_FILE_BYTES`].
    #[error("the key file {0} is larger than {MAX_KEY_FILE_BYTES} bytes")]
    TooLarge(PathBuf),
}

fn check_id(id: &str) -> Result<(), StateKeysError> {
    let ok = (1..=64).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(StateKeysError::BadId(id.to_owned()))
    }
}

fn check_key(id: &str, key: &[u8]) -> Result<(), StateKeysError> {
    if key.len() < MIN_KEY_BYTES {
        return Err(StateKeysError::TooShort {
            id: id.to_owned(),
            len: key.len(),
        });
    }
    Ok(())
}

impl StateKeys {
    /// A ring holding one key, the current one.
    pub fn new(id: impl Into<String>, key: impl Into<Vec<u8>>) -> Result<Self, StateKeysError> {
        let (id, key) = (id.into(), key.into());
        check_id(&id)?;
        check_key(&id, &key)?;
        Ok(StateKeys {
            current: id.clone(),
            keys: vec![(id, key)],
        })
    }

    /// Add a previous key: state it sealed still opens, nothing new is sealed with it.
    pub fn with_previous(
        mut self,
        id: impl Into<String>,
        key: impl Into<Vec<u8>>,
    ) -> Result<Self, StateKeysError> {
        let (id, key) = (id.into(), key.into());
        check_id(&id)?;
        check_key(&id, &key)?;
        if self.keys.iter().any(|(existing, _)| *existing == id) {
            return Err(StateKeysError::Duplicate(id));
        }
        self.keys.push((id, key));
        Ok(self)
    }

    /// Read a ring from the text of a key file (see the module documentation).
    pub fn parse(text: &str) -> Result<Self, StateKeysError> {
        let mut current = Vec::new();
        let mut previous = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_error = |reason: &str| StateKeysError::Line {
                line: index + 1,
                reason: reason.to_owned(),
            };
            let content = line.split('#').next().unwrap_or_default().trim();
            if content.is_empty() {
                continue;
            }
            let fields: Vec<&str> = content.split_whitespace().collect();
            let [role, id, hex] = fields[..] else {
                return Err(line_error("expected `current ID HEX` or `previous ID HEX`"));
            };
            let key = decode_hex(hex)
                .ok_or_else(|| line_error("the key is not an even number of hex digits"))?;
            match role {
                "current" => current.push((id.to_owned(), key)),
                "previous" => previous.push((id.to_owned(), key)),
                _ => return Err(line_error("a line starts with `current` or `previous`")),
            }
        }
        if current.len() != 1 {
            return Err(StateKeysError::Current(current.len()));
        }
        let (id, key) = current.remove(0);
        previous
            .into_iter()
            .try_fold(StateKeys::new(id, key)?, |ring, (id, key)| {
                ring.with_previous(id, key)
            })
    }

    /// Read a ring from a key file (at most [`MAX_KEY_FILE_BYTES`]).
    pub fn from_file(path: &Path) -> Result<Self, StateKeysError> {
        let io = |e| StateKeysError::Io(path.to_path_buf(), e);
        let size = std::fs::metadata(path).map_err(io)?.len();
        if size > MAX_KEY_FILE_BYTES as u64 {
            return Err(StateKeysError::TooLarge(path.to_path_buf()));
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        Self::parse(&text)
    }

    /// Say in the log, once at start, how a server seals `requestState`: with this ring, or
    /// (`None`) with a key made at start, which a round does not survive a restart or a move
    /// to another instance with.
    pub fn announce(keys: Option<&StateKeys>) {
        match keys {
            Some(keys) => tracing::info!(
                current = keys.current(),
                keys = keys.keys.len(),
                "requestState is sealed with the configured key ring"
            ),
            None => tracing::info!(
                "requestState is sealed with a key made at start: a question waiting for its \
                 answer does not survive a restart or reach another instance (give every \
                 instance the same key file with --state-keys)"
            ),
        }
    }

    /// The id of the key that seals.
    pub fn current(&self) -> &str {
        &self.current
    }

    /// Every id in the ring, the current one first.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|(id, _)| id.as_str())
    }

    pub(crate) fn entries(&self) -> impl Iterator<Item = (String, Vec<u8>)> + '_ {
        self.keys.iter().cloned()
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    const B: &str = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

    #[test]
    fn a_key_file_names_one_current_key_and_any_previous_ones() {
        let ring = StateKeys::parse(&format!(
            "# rotated monthly\ncurrent 2026-12 {A}\n\nprevious 2026-11 {B}  # until the 10th\n"
        ))
        .unwrap();
        assert_eq!(ring.current(), "2026-12");
        assert_eq!(ring.ids().collect::<Vec<_>>(), ["2026-12", "2026-11"]);
        let printed = format!("{ring:?}");
        assert!(
            !printed.contains(&A[..16]) && !printed.contains(&B[..16]),
            "{printed}"
        );
    }

    #[test]
    fn a_bad_key_file_says_what_is_wrong() {
        let cases = [
            (
                format!("previous old {B}"),
                "exactly one current key, it names 0",
            ),
            (format!("current a {A}\ncurrent b {B}"), "it names 2"),
            (format!("current a {A}\nprevious a {B}"), "used twice"),
            ("current a 0011".to_owned(), "2 bytes; at least 32"),
            ("current a xyz".to_owned(), "line 1"),
            (format!("current a +{}", &A[1..]), "line 1"),
            (format!("current a {A} extra"), "line 1"),
            (format!("newest a {A}"), "line 1"),
            (format!("current a/b {A}"), "not valid"),
        ];
        for (text, expected) in cases {
            let error = StateKeys::parse(&text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }
}
