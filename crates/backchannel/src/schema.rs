//! Tool schemas as any client reads them. schemars writes two things that MCP Inspector's
//! schema check (`--method tools/list --strict`) flags as unportable:
//! - `format` values for Rust numbers (`uint64`, `uint`, `int32`, `double`, …) that JSON
//!   Schema does not define: [`portable_formats`] drops them;
//! - a `type` array for an `Option` (`["number", "null"]`), which single-`type` dialects
//!   (Gemini's function declarations) cannot read: it becomes `anyOf` branches of one `type`
//!   each, the same set of values.
//!
//! Every other keyword stays exactly as written, and values (`enum`, `const`, `default`,
//! `examples`) are never rewritten.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::JsonObject;
use serde_json::Value;

/// The `format` values schemars writes for Rust numbers; none is a JSON Schema format.
const NUMERIC_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
    "uint64", "uint128", "float", "double",
];

fn strip(value: &mut Value) {
    match value {
        Value::Object(object) => strip_object(object),
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

/// Keywords whose values are data, not schemas.
const DATA_KEYWORDS: &[&str] = &["enum", "const", "default", "examples"];

fn strip_object(object: &mut JsonObject) {
    split_type_union(object);
    if object
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| NUMERIC_FORMATS.contains(&format))
    {
        object.remove("format");
    }
    for (key, value) in object.iter_mut() {
        if !DATA_KEYWORDS.contains(&key.as_str()) {
            strip(value);
        }
    }
}

/// `"type": ["number", "null"]` as `"anyOf": [{"type": "number"}, {"type": "null"}]`. Left
/// alone when the node already has an `anyOf` (the two would have to be merged) or when the
/// array holds anything but type names.
fn split_type_union(object: &mut JsonObject) {
    let Some(Value::Array(types)) = object.get("type") else {
        return;
    };
    if types.is_empty() || object.contains_key("anyOf") || !types.iter().all(Value::is_string) {
        return;
    }
    let branches = types
        .iter()
        .map(|name| serde_json::json!({ "type": name }))
        .collect();
    object.remove("type");
    object.insert("anyOf".to_owned(), Value::Array(branches));
}

/// The names an object schema's `required` lists (none when it lists none, or is not an
/// array of names), as a client reads them to tell what it must fill in.
///
/// ```
/// let schema = serde_json::json!({"required": ["orderId", 7]});
/// assert_eq!(backchannel::schema::required(&schema), ["orderId"]);
/// ```
pub fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The same schema without schemars' numeric `format` values and with each `type` array
/// written as `anyOf` branches.
pub fn portable_schema(schema: &JsonObject) -> JsonObject {
    let mut schema = schema.clone();
    strip_object(&mut schema);
    schema
}

/// Every tool of `router` with portable input and output schemas (see [`portable_schema`]).
pub fn portable_formats<S>(mut router: ToolRouter<S>) -> ToolRouter<S> {
    for route in router.map.values_mut() {
        route.attr.input_schema = Arc::new(portable_schema(&route.attr.input_schema));
        if let Some(output) = &route.attr.output_schema {
            route.attr.output_schema = Some(Arc::new(portable_schema(output)));
        }
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_numeric_formats_go() {
        let schema = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint64", "minimum": 0},
                "score": {"type": ["number", "null"], "format": "double"},
                "when": {"type": "string", "format": "date-time"},
                "items": {"type": "array", "items": {"type": "integer", "format": "int32"}}
            },
            "$defs": {"Size": {"type": "integer", "format": "uint"}}
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let portable = Value::Object(portable_schema(&schema));
        assert_eq!(
            portable["properties"]["count"],
            serde_json::json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(
            portable["properties"]["score"],
            serde_json::json!({"anyOf": [{"type": "number"}, {"type": "null"}]})
        );
        assert_eq!(portable["properties"]["when"]["format"], "date-time");
        assert!(
            portable["properties"]["items"]["items"]
                .get("format")
                .is_none()
        );
        assert!(portable["$defs"]["Size"].get("format").is_none());
        assert_eq!(
            portable["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
    }

    #[test]
    fn values_are_never_rewritten_and_an_existing_any_of_is_left_alone() {
        let schema = serde_json::json!({
            "type": "object",
            "default": {"type": ["a", "b"], "format": "uint"},
            "enum": [{"type": ["x"]}],
            "properties": {
                "both": {"type": ["string", "null"], "anyOf": [{"minLength": 1}, {"type": "null"}]},
                "odd": {"type": ["string", 3]}
            }
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let portable = Value::Object(portable_schema(&schema));
        assert_eq!(portable["default"], schema["default"]);
        assert_eq!(portable["enum"], schema["enum"]);
        assert_eq!(portable["properties"], schema["properties"]);
    }
}
