//! The SEP-2243 standard headers of a 2026-07-28 request — `Mcp-Method`, `Mcp-Name` and the
//! `Mcp-Param-*` headers a tool's input schema asks for with `x-mcp-header` — written once for
//! both sides: a client writes them with [`write()`], a server checks them against the body with
//! [`agree`], so that what a middlebox routes on is what the server runs.
//!
//! The rules are rmcp's (`transport/common/mcp_headers.rs`, which is private to rmcp): every
//! header named here appears at most once; `Mcp-Method` equals the body's method; `Mcp-Name`
//! equals `params.name` (`tools/call`, `prompts/get`), `params.uri` (`resources/read`,
//! `resources/subscribe`, `resources/unsubscribe`) or `params.taskId` (`tasks/get`,
//! `tasks/update`, `tasks/cancel`) when the body has one; each annotated argument reached
//! through `properties` has its header exactly when it is present and not null, with the same
//! value. A value a header cannot carry as it is travels Base64-wrapped as `=?base64?…?=`.
//!
//! ```
//! use backchannel::standard_headers::{agree, write};
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "properties": {
//!     "region": {"type": "string", "x-mcp-header": "Region"}}});
//! let schema = schema.as_object().unwrap();
//! let params = json!({"name": "deploy", "arguments": {"region": "eu"}});
//! let mut headers = http::HeaderMap::new();
//! write(&mut headers, "tools/call", Some(&params), Some(schema));
//! assert_eq!(headers["mcp-param-region"], "eu");
//! assert!(agree(&headers, "tools/call", Some(&params), Some(schema)));
//! ```

use std::borrow::Cow;

use base64::Engine;
use http::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::JsonObject;
use serde_json::Value;

/// `Mcp-Method`: the body's method.
pub const METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`: the body's name, URI or task id (see [`name_of`]).
pub const NAME: HeaderName = HeaderName::from_static("mcp-name");
/// The prefix of an annotated argument's header (`Mcp-Param-` and the annotation).
pub const PARAM_PREFIX: &str = "mcp-param-";
const BASE64_PREFIX: &str = "=?base64?";
const BASE64_SUFFIX: &str = "?=";

/// Write the standard headers of a request (`params` as sent; `schema` is the called tool's
/// input schema, for `tools/call`), replacing any already there.
pub fn write(
    headers: &mut HeaderMap,
    method: &str,
    params: Option<&Value>,
    schema: Option<&JsonObject>,
) {
    let arguments = params
        .and_then(|params| params.get("arguments"))
        .and_then(Value::as_object);
    write_with(headers, method, name_of(method, params), arguments, schema);
}

/// [`write()`], with the body's name (or URI, or task id) and arguments already read out.
pub fn write_with(
    headers: &mut HeaderMap,
    method: &str,
    name: Option<&str>,
    arguments: Option<&JsonObject>,
    schema: Option<&JsonObject>,
) {
    if let Some(value) = method_value(method) {
        headers.insert(METHOD, value);
    }
    if let Some(name) = name {
        insert(headers, NAME, name);
    }
    if method != "tools/call" {
        return;
    }
    for (header, value) in param_values(schema, arguments) {
        if let Some(value) = value {
            insert(headers, format!("{PARAM_PREFIX}{header}"), &value);
        }
    }
}

/// Whether the request's standard headers agree with its body (`params` as sent; `schema` is
/// the called tool's input schema, for `tools/call`).
pub fn agree(
    headers: &HeaderMap,
    method: &str,
    params: Option<&Value>,
    schema: Option<&JsonObject>,
) -> bool {
    let arguments = params
        .and_then(|params| params.get("arguments"))
        .and_then(Value::as_object);
    agree_with(headers, method, name_of(method, params), arguments, schema)
}

/// [`agree`], with the body's name (or URI, or task id) and arguments already read out.
pub fn agree_with(
    headers: &HeaderMap,
    method: &str,
    name: Option<&str>,
    arguments: Option<&JsonObject>,
    schema: Option<&JsonObject>,
) -> bool {
    if single(headers, METHOD.as_str()) != Ok(Some(method)) {
        return false;
    }
    if let Some(expected) = name {
        match single(headers, NAME.as_str()) {
            Ok(Some(raw)) if decoded(raw).as_deref() == Some(expected) => {}
            _ => return false,
        }
    }
    if method != "tools/call" {
        return true;
    }
    param_values(schema, arguments)
        .into_iter()
        .all(|(header, value)| {
            let Ok(sent) = single(headers, &format!("{PARAM_PREFIX}{header}")) else {
                return false;
            };
            match (sent, value) {
                (None, None) => true,
                (Some(raw), Some(value)) => decoded(raw).is_some_and(|sent| sent == value),
                _ => false,
            }
        })
}

/// `Mcp-Method`'s value: made once for the methods hosts send on every call (no copy per
/// request), parsed for any other.
fn method_value(method: &str) -> Option<HeaderValue> {
    match method {
        "tools/call" => Some(HeaderValue::from_static("tools/call")),
        "prompts/get" => Some(HeaderValue::from_static("prompts/get")),
        other => HeaderValue::try_from(other).ok(),
    }
}

/// The value `Mcp-Name` must carry for `method`, if the body has one.
pub fn name_of<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params?.get(key)?.as_str()
}

/// Every annotated argument of `schema` (`x-mcp-header`, reached through `properties` alone):
/// its annotation and the text its header carries (`None`: absent, null or not a primitive, so
/// no header).
fn param_values<'a>(
    schema: Option<&'a JsonObject>,
    arguments: Option<&JsonObject>,
) -> Vec<(&'a str, Option<String>)> {
    let mut annotations = Vec::new();
    if let Some(schema) = schema {
        collect(schema.get("properties"), &mut Vec::new(), &mut annotations);
    }
    annotations
        .into_iter()
        .map(|(path, header)| {
            let value = path
                .split_first()
                .and_then(|(first, rest)| {
                    let top = arguments?.get(*first)?;
                    rest.iter().try_fold(top, |v, key| v.get(*key))
                })
                .filter(|value| !value.is_null())
                .and_then(primitive_text);
            (header, value)
        })
        .collect()
}

/// Insert header `name` (a `HeaderName`, or a name to parse) with `value`, Base64-wrapped when
/// a header cannot carry it as it is.
fn insert(headers: &mut HeaderMap, name: impl TryInto<HeaderName>, value: &str) {
    if let (Ok(name), Ok(value)) = (name.try_into(), HeaderValue::try_from(&*encoded(value))) {
        headers.insert(name, value);
    }
}

/// `value` as a header carries it: as it is, or Base64-wrapped when it has space or tab at
/// either end, a control or non-ASCII character, or looks wrapped already.
pub fn encoded(value: &str) -> Cow<'_, str> {
    let bytes = value.as_bytes();
    let wrap = matches!(bytes.first(), Some(b' ' | b'\t'))
        || matches!(bytes.last(), Some(b' ' | b'\t'))
        || value.chars().any(|c| !(' '..='~').contains(&c))
        || (value.starts_with(BASE64_PREFIX) && value.ends_with(BASE64_SUFFIX));
    if wrap {
        format!(
            "{BASE64_PREFIX}{}{BASE64_SUFFIX}",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
        .into()
    } else {
        value.into()
    }
}

/// The one value of a header: `Ok(None)` when absent, `Err` when repeated or not text.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ()> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(());
    }
    first.to_str().map(Some).map_err(|_| ())
}

/// A header value with its Base64 wrapping, if any, undone (`None`: the wrapping is broken).
pub fn decoded(raw: &str) -> Option<Cow<'_, str>> {
    match raw
        .strip_prefix(BASE64_PREFIX)
        .and_then(|inner| inner.strip_suffix(BASE64_SUFFIX))
    {
        None => Some(raw.into()),
        Some(inner) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(inner)
                .ok()?;
            String::from_utf8(bytes).ok().map(Into::into)
        }
    }
}

/// A string, boolean or number as its header text; anything else has none.
fn primitive_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// Every non-empty `x-mcp-header` string on a property reached from the root through
/// `properties` alone, with the property's path.
fn collect<'a>(
    properties: Option<&'a Value>,
    path: &mut Vec<&'a str>,
    out: &mut Vec<(Vec<&'a str>, &'a str)>,
) {
    let Some(Value::Object(properties)) = properties else {
        return;
    };
    for (name, schema) in properties {
        path.push(name);
        if let Some(Value::String(header)) = schema.get("x-mcp-header")
            && !header.is_empty()
        {
            out.push((path.clone(), header));
        }
        collect(schema.get("properties"), path, out);
        path.pop();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A header map of `pairs` (the serve module's tests build theirs with it).
    pub(crate) fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        map
    }

    fn schema() -> JsonObject {
        json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "where": {"type": "object", "properties": {
                    "zone": {"type": "integer", "x-mcp-header": "Zone"}
                }},
                "blank": {"type": "string", "x-mcp-header": ""}
            }
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn method_and_name_must_match_the_body_once() {
        let params = json!({"name": "get_order"});
        let call =
            |pairs: &[(&str, &str)]| agree(&headers(pairs), "tools/call", Some(&params), None);
        assert!(call(&[
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "get_order")
        ]));
        assert!(call(&[
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "=?base64?Z2V0X29yZGVy?=")
        ]));
        for bad in [
            &[("Mcp-Name", "get_order")][..],
            &[("Mcp-Method", "tools/list"), ("Mcp-Name", "get_order")],
            &[("Mcp-Method", "tools/call")],
            &[("Mcp-Method", "tools/call"), ("Mcp-Name", "other")],
            &[("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?!!?=")],
            &[
                ("Mcp-Method", "tools/call"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "get_order"),
            ],
            &[
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "get_order"),
                ("Mcp-Name", "get_order"),
            ],
        ] {
            assert!(!call(bad), "{bad:?}");
        }
        // A method without a name needs only Mcp-Method.
        assert!(agree(
            &headers(&[("Mcp-Method", "tools/list")]),
            "tools/list",
            None,
            None
        ));
        assert!(agree(
            &headers(&[("Mcp-Method", "tasks/get"), ("Mcp-Name", "t1")]),
            "tasks/get",
            Some(&json!({"taskId": "t1"})),
            None
        ));
    }

    #[test]
    fn annotated_arguments_travel_in_their_headers() {
        let schema = schema();
        let check = |arguments: Value, extra: &[(&str, &str)]| {
            let mut pairs = vec![("Mcp-Method", "tools/call"), ("Mcp-Name", "deploy")];
            pairs.extend_from_slice(extra);
            let params = json!({"name": "deploy", "arguments": arguments});
            agree(&headers(&pairs), "tools/call", Some(&params), Some(&schema))
        };
        assert!(check(json!({}), &[]));
        assert!(check(json!({"region": null}), &[]));
        assert!(check(
            json!({"region": "eu"}),
            &[("Mcp-Param-Region", "eu")]
        ));
        assert!(check(
            json!({"region": "eu", "where": {"zone": 7}}),
            &[("Mcp-Param-Region", "eu"), ("mcp-param-zone", "7")]
        ));
        assert!(!check(json!({"region": "eu"}), &[]), "missing");
        assert!(
            !check(json!({}), &[("Mcp-Param-Region", "eu")]),
            "unexpected"
        );
        assert!(
            !check(json!({"region": "eu"}), &[("Mcp-Param-Region", "us")]),
            "different"
        );
        assert!(
            !check(
                json!({"region": "eu"}),
                &[("Mcp-Param-Region", "eu"), ("Mcp-Param-Region", "eu")]
            ),
            "repeated"
        );
        assert!(
            !check(json!({"where": {"zone": 7}}), &[]),
            "a nested annotation counts"
        );
        // An object has no header text, so its header must be absent.
        assert!(check(json!({"region": {"a": 1}}), &[]));
    }

    #[test]
    fn what_a_client_writes_a_server_accepts() {
        let schema = schema();
        for (method, params) in [
            (
                "tools/call",
                json!({"name": "deploy", "arguments": {"region": " eu ", "where": {"zone": 7}}}),
            ),
            (
                "tools/call",
                json!({"name": "naïve", "arguments": {"region": null}}),
            ),
            ("prompts/get", json!({"name": "greeting"})),
            ("resources/read", json!({"uri": "test://static-text"})),
            ("tasks/get", json!({"taskId": "=?base64?looks wrapped?="})),
            ("tools/list", json!({})),
        ] {
            let mut written = HeaderMap::new();
            write(&mut written, method, Some(&params), Some(&schema));
            assert!(
                agree(&written, method, Some(&params), Some(&schema)),
                "{method} {params}"
            );
        }
        let mut written = HeaderMap::new();
        let params = json!({"name": "deploy", "arguments": {"region": " eu "}});
        write(&mut written, "tools/call", Some(&params), Some(&schema));
        assert_eq!(written["mcp-param-region"], "=?base64?IGV1IA==?=");
    }
}
