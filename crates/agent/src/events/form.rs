//! A server's form, as the desk shows it ([`Field`]): the fields of an elicitation's
//! `requestedSchema` (flat, primitive, as MCP allows), and the check of what the person filled
//! in against them before anything is sent.

use serde::Serialize;
use serde_json::{Map, Value};

/// The most fields a form shows; a schema with more is not shown (declined unseen).
pub const MAX_FIELDS: usize = 20;
/// The most characters of a text field's value.
pub const MAX_TEXT: usize = 2_000;

/// One field of a server's form.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Field {
    /// The property's name (the key of its value in the answer).
    pub name: String,
    /// What the page labels it with: the schema's `title`, else its name.
    pub title: String,
    /// The schema's `description`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `string`, `number`, `integer` or `boolean`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The values a string may take (`enum`), when it is a choice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// Whether the form is incomplete without it.
    pub required: bool,
}

/// A field as another desk wrote it, before its type is checked.
#[derive(serde::Deserialize)]
struct FieldRead {
    name: String,
    title: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    options: Vec<String>,
    required: bool,
}

impl<'de> serde::Deserialize<'de> for Field {
    fn deserialize<D: serde::Deserializer<'de>>(from: D) -> Result<Field, D::Error> {
        Field::try_from(FieldRead::deserialize(from)?).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<FieldRead> for Field {
    type Error = String;

    fn try_from(read: FieldRead) -> Result<Field, String> {
        let kind = ["string", "number", "integer", "boolean"]
            .into_iter()
            .find(|known| *known == read.kind)
            .ok_or_else(|| format!("unknown field type {:?}", read.kind))?;
        Ok(Field {
            name: read.name,
            title: read.title,
            description: read.description,
            kind,
            options: read.options,
            required: read.required,
        })
    }
}

/// Why a form could not be shown, or what the person filled in was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormError {
    /// The schema is not a flat object of primitive fields (or has too many).
    #[error("the form cannot be shown: {0}")]
    NotShown(String),
    /// An answer does not fit the form.
    #[error("{0}")]
    Refused(String),
}

/// The fields of `schema` (an elicitation's `requestedSchema`), by name. Empty for the
/// desk's own confirmation (a `confirmed` yes/no with an optional `note`), which the page asks
/// as Yes and No.
pub fn fields(schema: &Value) -> Result<Vec<Field>, FormError> {
    let not_shown = |why: &str| FormError::NotShown(why.to_owned());
    let properties = match schema.get("properties") {
        None => return Ok(Vec::new()),
        Some(Value::Object(properties)) => properties,
        Some(_) => return Err(not_shown("its properties are not an object")),
    };
    if is_confirmation(properties) {
        return Ok(Vec::new());
    }
    if properties.len() > MAX_FIELDS {
        return Err(not_shown("it has more fields than a form shows"));
    }
    let required = backchannel::schema::required(schema);
    properties
        .iter()
        .map(|(name, property)| field(name, property, required.contains(&name.as_str())))
        .collect()
}

/// The order service's confirmation: `confirmed` (boolean) and at most a `note` (string).
fn is_confirmation(properties: &Map<String, Value>) -> bool {
    properties
        .get("confirmed")
        .is_some_and(|p| p["type"] == "boolean")
        && properties
            .iter()
            .all(|(name, p)| name == "confirmed" || (name == "note" && p["type"] == "string"))
}

fn field(name: &str, property: &Value, required: bool) -> Result<Field, FormError> {
    let kind = match property.get("type").and_then(Value::as_str) {
        Some("string") => "string",
        Some("number") => "number",
        Some("integer") => "integer",
        Some("boolean") => "boolean",
        other => {
            return Err(FormError::NotShown(format!(
                "the field {name:?} is of type {}, not a text, number or yes/no",
                other.unwrap_or("(none)")
            )));
        }
    };
    let options = match property.get("enum") {
        None => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| FormError::NotShown(format!("the choices of {name:?} are not text")))?,
        Some(_) => {
            return Err(FormError::NotShown(format!(
                "the choices of {name:?} are not a list"
            )));
        }
    };
    let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_owned);
    Ok(Field {
        name: name.to_owned(),
        title: text("title").unwrap_or_else(|| name.to_owned()),
        description: text("description"),
        kind,
        options,
        required,
    })
}

/// `filled` checked against `fields`: every required field present, each value of its field's
/// type (a choice one of its options, a text at most [`MAX_TEXT`] characters), no field the
/// form does not have. The answer to send, as the server asked for it.
pub fn check(
    fields: &[Field],
    filled: &Map<String, Value>,
) -> Result<Map<String, Value>, FormError> {
    let refused = |why: String| Err(FormError::Refused(why));
    if let Some(unknown) = filled
        .keys()
        .find(|k| !fields.iter().any(|f| &f.name == *k))
    {
        return refused(format!("the form has no field {unknown:?}"));
    }
    let mut answer = Map::new();
    for field in fields {
        let value = match filled.get(&field.name) {
            None | Some(Value::Null) => {
                if field.required {
                    return refused(format!("{} is required", field.title));
                }
                continue;
            }
            Some(Value::String(text)) if text.is_empty() && field.kind == "string" => {
                if field.required {
                    return refused(format!("{} is required", field.title));
                }
                continue;
            }
            Some(value) => value,
        };
        let fits = match (field.kind, value) {
            ("string", Value::String(text)) => {
                text.chars().count() <= MAX_TEXT
                    && (field.options.is_empty() || field.options.contains(text))
            }
            ("boolean", Value::Bool(_)) => true,
            ("number", Value::Number(_)) => true,
            ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
            _ => false,
        };
        if !fits {
            let wanted = match (field.kind, field.options.is_empty()) {
                ("string", false) => format!("one of {}", field.options.join(", ")),
                ("string", true) => format!("a text of at most {MAX_TEXT} characters"),
                ("boolean", _) => "yes or no".to_owned(),
                (kind, _) => format!("a {kind}"),
            };
            return refused(format!("{} must be {wanted}", field.title));
        }
        answer.insert(field.name.clone(), value.clone());
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{FormError, check, fields};

    #[test]
    fn the_order_services_confirmation_is_asked_as_yes_and_no() {
        let schema = json!({"type": "object", "properties": {
            "confirmed": {"type": "boolean"}, "note": {"type": "string"}}});
        assert_eq!(fields(&schema), Ok(Vec::new()));
    }

    #[test]
    fn a_servers_form_is_shown_field_by_field_and_its_answer_checked() {
        let schema = json!({"type": "object", "properties": {
            "status": {"type": "string", "title": "Watch status",
                       "enum": ["WANT_TO_WATCH", "WATCHED"]},
            "stars": {"type": "integer"}},
            "required": ["status"]});
        let form = fields(&schema).unwrap();
        assert_eq!(form.len(), 2);
        let (stars, status) = (&form[0], &form[1]);
        assert_eq!(status.title, "Watch status");
        assert_eq!(status.options, ["WANT_TO_WATCH", "WATCHED"]);
        assert!(status.required && !stars.required);
        assert_eq!(stars.kind, "integer");
        let ok = |v: serde_json::Value| check(&form, v.as_object().unwrap());
        assert_eq!(
            ok(json!({"status": "WATCHED"})).unwrap(),
            *json!({"status": "WATCHED"}).as_object().unwrap()
        );
        assert!(matches!(ok(json!({})), Err(FormError::Refused(why)) if why.contains("required")));
        assert!(
            matches!(ok(json!({"status": "SEEN"})), Err(FormError::Refused(why)) if why.contains("one of"))
        );
        assert!(ok(json!({"status": "WATCHED", "stars": 2.5})).is_err());
        assert!(ok(json!({"status": "WATCHED", "admin": true})).is_err());
    }

    #[test]
    fn a_form_that_is_not_flat_is_not_shown() {
        let nested = json!({"type": "object", "properties": {"address": {"type": "object"}}});
        assert!(matches!(fields(&nested), Err(FormError::NotShown(_))));
    }
}
