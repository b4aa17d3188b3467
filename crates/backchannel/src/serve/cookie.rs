//! Reading a cookie from a request's `Cookie` headers, once for every server's pages.

/// The longest cookie value read (our cookies hold random ids of 32 hex digits; anything much
/// longer is not one of ours and is not looked up).
pub const MAX_COOKIE_VALUE_BYTES: usize = 64;

/// The value of the cookie `name` in `headers`: the first one of that name that is not empty
/// and at most [`MAX_COOKIE_VALUE_BYTES`] long, across every `Cookie` header. Names match
/// exactly (case matters, as browsers send them).
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert(http::header::COOKIE, "theme=dark; desk=0123abcd".parse().unwrap());
/// assert_eq!(backchannel::serve::cookie(&headers, "desk").as_deref(), Some("0123abcd"));
/// assert_eq!(backchannel::serve::cookie(&headers, "Desk"), None);
/// ```
pub fn cookie(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, value)| *n == name && !value.is_empty() && value.len() <= MAX_COOKIE_VALUE_BYTES)
        .map(|(_, value)| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        for value in values {
            headers.append(http::header::COOKIE, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn the_first_usable_value_of_the_name_in_any_cookie_header() {
        let both = headers(&["a=1; desk=", "desk=two; desk=three"]);
        assert_eq!(cookie(&both, "desk").as_deref(), Some("two"));
        assert_eq!(cookie(&both, "a").as_deref(), Some("1"));
        assert_eq!(cookie(&both, "missing"), None);
        let long = format!("desk={}", "x".repeat(MAX_COOKIE_VALUE_BYTES + 1));
        assert_eq!(cookie(&headers(&[&long]), "desk"), None);
        // A name that only ends or starts with the one asked for is another cookie.
        assert_eq!(cookie(&headers(&["my_desk=1; desk_x=2"]), "desk"), None);
    }
}
