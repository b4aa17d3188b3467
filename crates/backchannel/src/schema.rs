//! Tool schemas as any client reads them: schemars marks Rust number types with `format`
//! values (`uint64`, `uint`, `int32`, `double`, …) that JSON Schema does not define, and
//! clients such as MCP Inspector warn about them. [`portable_formats`] drops only those, and
//! leaves every other keyword exactly as written.

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

fn strip_object(object: &mut JsonObject) {
    if object
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| NUMERIC_FORMATS.contains(&format))
    {
        object.remove("format");
    }
    object.values_mut().for_each(strip);
}

/// The same schema without schemars' numeric `format` values.
pub fn portable_schema(schema: &JsonObject) -> JsonObject {
    let mut schema = schema.clone();
    strip_object(&mut schema);
    schema
}

/// Every tool of `router` with portable input and output schemas.
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
        assert!(portable["properties"]["score"].get("format").is_none());
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
}
