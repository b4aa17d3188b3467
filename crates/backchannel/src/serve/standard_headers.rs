//! The SEP-2243 standard headers of a 2026-07-28 request — `Mcp-Method`, `Mcp-Name` and the
//! `Mcp-Param-*` headers a tool's input schema asks for with `x-mcp-header` — checked against
//! the body, so that what a middlebox routes on is what the server runs.
//!
//! The rules are rmcp's (`transport/common/mcp_headers.rs`, which is private to rmcp): every
//! header named here appears at most once; `Mcp-Method` equals the body's method; `Mcp-Name`
//! equals `params.name` (`tools/call`, `prompts/get`), `params.uri` (`resources/read`,
//! `resources/subscribe`, `resources/unsubscribe`) or `params.taskId` (`tasks/get`,
//! `tasks/update`, `tasks/cancel`) when the body has one; each annotated argument reached
//! through `properties` has its header exactly when it is present and not null, with the same
//! value. A value may travel Base64-wrapped as `=?base64?…?=`. The fast path serves only a
//! request that passes; any other goes to rmcp, which answers with the error.

use base64::Engine;
use http::HeaderMap;
use serde_json::Value;

use rmcp::model::JsonObject;

const METHOD: &str = "mcp-method";
const NAME: &str = "mcp-name";
const PARAM_PREFIX: &str = "mcp-param-";
const BASE64_PREFIX: &str = "=?base64?";
const BASE64_SUFFIX: &str = "?=";

/// Whether the request's standard headers agree with its body (`params` as sent; `schema` is
/// the called tool's input schema, for `tools/call`).
pub(super) fn agree(
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
pub(super) fn agree_with(
    headers: &HeaderMap,
    method: &str,
    name: Option<&str>,
    arguments: Option<&JsonObject>,
    schema: Option<&JsonObject>,
) -> bool {
    if single(headers, METHOD) != Ok(Some(method)) {
        return false;
    }
    if let Some(expected) = name {
        match single(headers, NAME) {
            Ok(Some(raw)) if decoded(raw).as_deref() == Some(expected) => {}
            _ => return false,
        }
    }
    if method != "tools/call" {
        return true;
    }
    let Some(schema) = schema else {
        return true;
    };
    let mut annotations = Vec::new();
    collect(schema.get("properties"), &mut Vec::new(), &mut annotations);
    annotations.into_iter().all(|(path, header)| {
        let name = format!("{PARAM_PREFIX}{header}");
        let Ok(sent) = single(headers, &name) else {
            return false;
        };
        let value = path
            .split_first()
            .and_then(|(first, rest)| {
                let top = arguments?.get(*first)?;
                rest.iter().try_fold(top, |v, key| v.get(*key))
            })
            .filter(|value| !value.is_null())
            .and_then(primitive_text);
        match (sent, value) {
            (None, None) => true,
            (Some(raw), Some(value)) => decoded(raw).is_some_and(|sent| sent == value),
            _ => false,
        }
    })
}

/// The value `Mcp-Name` must carry for `method`, if the body has one.
fn name_of<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params?.get(key)?.as_str()
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
fn decoded(raw: &str) -> Option<std::borrow::Cow<'_, str>> {
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
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    /// A header map of `pairs` (the serve module's tests build theirs with it).
    pub(in crate::serve) fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
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
}
