//! Bearer tokens read from a file, each naming the principal it stands for (`name=token`
//! lines): the simplest sign-in a server can require.

use std::path::Path;

/// The accepted tokens. Its `Debug` output never shows them.
#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<(String, String)>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field(
                "principals",
                &self
                    .entries
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Why a token file was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("cannot read the token file {0}: {1}")]
    Read(String, std::io::Error),
    /// A line is malformed.
    #[error(
        "line {line} of the token file: {reason} (each line is `name=token`, the token at \
         least 32 characters; `#` starts a comment)"
    )]
    Line {
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No token at all.
    #[error("the token file holds no token")]
    Empty,
}

/// Shortest token accepted.
pub const MIN_TOKEN_LEN: usize = 32;

impl Tokens {
    /// Read `name=token` lines (blank lines and `#` comments skipped).
    pub fn parse(text: &str) -> Result<Tokens, TokenFileError> {
        let mut entries = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |reason| TokenFileError::Line {
                line: index + 1,
                reason,
            };
            let (name, token) = line.split_once('=').ok_or_else(|| fail("no `=`"))?;
            let (name, token) = (name.trim(), token.trim());
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
            {
                return Err(fail("the name must be letters, digits or `-_.@`"));
            }
            if token.len() < MIN_TOKEN_LEN || !token.chars().all(|c| c.is_ascii_graphic()) {
                return Err(fail("the token is too short or not printable ASCII"));
            }
            entries.push((name.to_owned(), token.to_owned()));
        }
        if entries.is_empty() {
            return Err(TokenFileError::Empty);
        }
        Ok(Tokens { entries })
    }

    /// Read a token file.
    pub fn from_file(path: &Path) -> Result<Tokens, TokenFileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TokenFileError::Read(path.display().to_string(), e))?;
        Tokens::parse(&text)
    }

    /// The principal a presented token stands for. Compares in constant time per token.
    pub fn principal(&self, presented: &str) -> Option<&str> {
        let mut found = None;
        for (name, token) in &self.entries {
            if constant_time_eq(token.as_bytes(), presented.as_bytes()) {
                found = Some(name.as_str());
            }
        }
        found
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_principal_and_never_print() {
        let tokens = Tokens::parse(
            "# desk\nsupport-desk = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n\nops=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n",
        )
        .unwrap();
        assert_eq!(
            tokens.principal("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
            Some("support-desk")
        );
        assert_eq!(tokens.principal("aaaa"), None);
        let shown = format!("{tokens:?}");
        assert!(
            shown.contains("support-desk") && !shown.contains("aaaa"),
            "{shown}"
        );
        assert!(matches!(
            Tokens::parse("desk=short"),
            Err(TokenFileError::Line { line: 1, .. })
        ));
        assert!(matches!(
            Tokens::parse("# nothing\n"),
            Err(TokenFileError::Empty)
        ));
    }
}
