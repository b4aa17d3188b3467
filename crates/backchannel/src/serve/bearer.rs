//! Reading a bearer token from an `Authorization` header, once for every server.

/// The longest token accepted (longer ones are refused before anything looks them up).
pub const MAX_TOKEN_BYTES: usize = 4096;

/// Why an `Authorization` header holds no usable bearer token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BearerError {
    /// The header is not visible ASCII.
    #[error("the Authorization header is not readable text")]
    Unreadable,
    /// Another scheme, or no scheme.
    #[error("the Authorization header must be 'Bearer <token>'")]
    NotBearer,
    /// `Bearer` with nothing after it, or more than one word.
    #[error("the Authorization header's bearer token is empty or not one word")]
    Malformed,
    /// A token longer than [`MAX_TOKEN_BYTES`].
    #[error("the bearer token is longer than {MAX_TOKEN_BYTES} bytes")]
    TooLong,
}

/// The bearer token of `headers`: `Ok(None)` when there is no `Authorization` header, the
/// token when it is `Bearer <token>` (the scheme in any letter case, as RFC 7235 has it, and
/// any run of spaces after it), an error otherwise.
///
/// ```
/// use backchannel::serve::{BearerError, bearer_token};
/// let mut headers = http::HeaderMap::new();
/// assert_eq!(bearer_token(&headers), Ok(None));
/// headers.insert(http::header::AUTHORIZATION, "bearer abc.def".parse().unwrap());
/// assert_eq!(bearer_token(&headers), Ok(Some("abc.def")));
/// headers.insert(http::header::AUTHORIZATION, "Basic dXNlcjpwdw==".parse().unwrap());
/// assert_eq!(bearer_token(&headers), Err(BearerError::NotBearer));
/// ```
pub fn bearer_token(headers: &http::HeaderMap) -> Result<Option<&str>, BearerError> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| BearerError::Unreadable)?;
    let value = value.trim_matches(' ');
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(BearerError::NotBearer);
    }
    let token = rest.trim_start_matches(' ');
    if token.is_empty() || token.contains([' ', '\t']) {
        return Err(BearerError::Malformed);
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(BearerError::TooLong);
    }
    Ok(Some(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(value: &[u8]) -> Result<Option<String>, BearerError> {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_bytes(value).expect("a header value"),
        );
        bearer_token(&headers).map(|token| token.map(str::to_owned))
    }

    #[test]
    fn the_scheme_is_read_in_any_letter_case() {
        for value in [
            "Bearer t0k",
            "bearer t0k",
            "BEARER t0k",
            "BeArEr   t0k",
            " Bearer t0k ",
        ] {
            assert_eq!(read(value.as_bytes()), Ok(Some("t0k".into())), "{value:?}");
        }
    }

    #[test]
    fn anything_else_is_refused_with_its_reason() {
        assert_eq!(read(b"Basic dXNlcjpwdw=="), Err(BearerError::NotBearer));
        assert_eq!(read(b"Bearertok"), Err(BearerError::NotBearer));
        assert_eq!(read(b"t0k"), Err(BearerError::NotBearer));
        assert_eq!(read(b"Bearer"), Err(BearerError::Malformed));
        assert_eq!(read(b"Bearer    "), Err(BearerError::Malformed));
        assert_eq!(read(b"Bearer two words"), Err(BearerError::Malformed));
        assert_eq!(read(b"Bearer t\xe9k"), Err(BearerError::Unreadable));
        let long = format!("Bearer {}", "x".repeat(MAX_TOKEN_BYTES + 1));
        assert_eq!(read(long.as_bytes()), Err(BearerError::TooLong));
        let longest = format!("Bearer {}", "x".repeat(MAX_TOKEN_BYTES));
        assert!(read(longest.as_bytes()).is_ok());
        assert_eq!(bearer_token(&http::HeaderMap::new()), Ok(None));
    }
}
