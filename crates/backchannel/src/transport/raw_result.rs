//! [`RawToolResult`]: a complete `tools/call` result kept as the JSON text another server wrote,
//! for code that passes it on unread (a gateway relaying an upstream's result to its client).
//!
//! Reading a result into rmcp's [`CallToolResult`] builds every content block (each through
//! serde's buffering of an internally tagged enum) and the whole `structuredContent` as a
//! `serde_json::Value` tree, only for the next hop to write them out again. The check here reads
//! the text once, content blocks as they are met and strings skipped over rather than decoded,
//! and allocates nothing but the kept copy for a result of the usual shape; whatever it does not
//! take at sight (a content block other than plain text, a `_meta`) it reads with rmcp's own
//! types and drops, and anything rmcp would not read, or would read into less than the text says
//! (an unknown field, which rmcp drops), is refused, so the caller reads it with rmcp instead.
//! What passes is what rmcp would read and write again, up to whitespace, escapes and the order
//! of keys.

use std::borrow::Cow;

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde::Deserialize;
use serde_json::value::RawValue;

/// A complete `tools/call` result as JSON text, checked to be one rmcp reads in full (see
/// [`RawToolResult::complete`]).
#[derive(Debug, Clone)]
pub struct RawToolResult {
    text: Box<str>,
    is_error: bool,
}

impl RawToolResult {
    /// `text` when it is a complete `tools/call` result that rmcp's [`CallToolResult`] reads
    /// and writes again without adding or dropping anything: one JSON object (whitespace
    /// around it aside) whose `resultType` is `"complete"`, with a `content` array of blocks
    /// rmcp reads, and of the other fields of a result only `structuredContent` (any JSON),
    /// `isError` (a boolean) and `_meta` (an object). `None` otherwise (a round's questions, a
    /// task, a 2025-11-25 result without a type, anything malformed or unusual): read it with
    /// rmcp.
    ///
    /// The text is read once when its content blocks are plain text; a block of any other kind
    /// has the content read again, block by block, by rmcp's own types.
    pub fn complete(text: &str) -> Option<Self> {
        let text = text.trim_matches([' ', '\t', '\n', '\r']);
        if !text.starts_with('{') {
            return None;
        }
        let shape: Shape<'_> = serde_json::from_str(text).ok()?;
        if shape.result_type != "complete" {
            return None;
        }
        // rmcp reads a result without `content` as one with none, and writes `"content": []`.
        let content_read = match shape.content? {
            Content::PlainText => true,
            Content::Other => serde_json::from_str::<Blocks<'_>>(text)
                .is_ok_and(|blocks| blocks.content.iter().all(|block| block_reads(block))),
        };
        let meta_reads = shape
            .meta
            .is_none_or(|meta| serde_json::from_str::<MetaObject>(meta.get()).is_ok());
        (content_read && meta_reads).then(|| RawToolResult {
            text: text.into(),
            is_error: shape.is_error == Some(true),
        })
    }

    /// The result's JSON text: one JSON object, checked whole.
    pub fn get(&self) -> &str {
        &self.text
    }

    /// Whether the result says the tool failed (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The result read with rmcp's types.
    pub fn parse(&self) -> Result<CallToolResult, serde_json::Error> {
        serde_json::from_str(&self.text)
    }
}

/// A result's fields as far as the check needs them; any other field refuses it. A field
/// present is `Some` even when it is `null`: then it must be what rmcp reads a `null` as
/// (`structuredContent` keeps it; a `null` anywhere else refuses the result, as rmcp would
/// write it back without the field).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Shape<'a> {
    #[serde(borrow)]
    result_type: Cow<'a, str>,
    #[serde(default, deserialize_with = "present")]
    content: Option<Content>,
    #[expect(
        dead_code,
        reason = "allowed with any JSON; read only to be told from an unknown field"
    )]
    #[serde(default, deserialize_with = "present")]
    structured_content: Option<serde::de::IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    is_error: Option<bool>,
    #[serde(rename = "_meta", default, borrow, deserialize_with = "present")]
    meta: Option<&'a RawValue>,
}

/// A result's `content` array, read block by block as it is met.
enum Content {
    /// Every block is plain text.
    PlainText,
    /// Some block is something else, or not as plain text is written: rmcp is to tell.
    Other,
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of content blocks")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Content, A::Error> {
                let mut plain = true;
                while let Some(block) = seq.next_element::<Block>()? {
                    plain &= block.plain_text;
                }
                Ok(if plain {
                    Content::PlainText
                } else {
                    Content::Other
                })
            }
        }
        deserializer.deserialize_seq(Visitor)
    }
}

/// One content block: an object, plain text when it is `{"type": "text", "text": …}` with
/// a text rmcp reads and nothing else.
struct Block {
    plain_text: bool,
}

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Block;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Block, A::Error> {
                let (mut text_tag, mut text, mut other) = (None, None, false);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "type" if text_tag.is_none() => {
                            let tag: &RawValue = map.next_value()?;
                            text_tag = Some(tag.get() == "\"text\"");
                        }
                        "text" if text.is_none() => {
                            let value: &RawValue = map.next_value()?;
                            text = Some(string_reads(value));
                        }
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                            other = true;
                        }
                    }
                }
                Ok(Block {
                    plain_text: text_tag == Some(true) && text == Some(true) && !other,
                })
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A result's content blocks, each left as its text for rmcp to read; the other fields
/// skipped (the check of [`Shape`] has read them).
#[derive(Deserialize)]
struct Blocks<'a> {
    #[serde(borrow)]
    content: Vec<&'a RawValue>,
}

/// A field that is there, read as `T` (a `null` only if `T` reads one).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// Whether `text` is a JSON string rmcp reads. Skipped over, a string's escapes are checked
/// but not decoded, so a `\u` escape (which may be half of a surrogate pair, or a lone half
/// rmcp refuses) is decoded to tell; any other string is taken as it was skipped, without
/// copying its escaped characters out.
fn string_reads(text: &RawValue) -> bool {
    let text = text.get();
    text.starts_with('"')
        && (!text.contains("\\u") || serde_json::from_str::<Cow<'_, str>>(text).is_ok())
}

/// Whether rmcp reads `block` (an object) as a content block. Only a result with some block
/// other than plain text comes here, so its plain text blocks are read by rmcp too.
fn block_reads(block: &RawValue) -> bool {
    block.get().starts_with('{') && serde_json::from_str::<ContentBlock>(block.get()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(value: &serde_json::Value) -> String {
        value.to_string()
    }

    /// What rmcp reads `value` into and writes again, as a JSON value.
    fn through_rmcp(value: &serde_json::Value) -> Option<serde_json::Value> {
        let result: CallToolResult = serde_json::from_value(value.clone()).ok()?;
        Some(serde_json::to_value(result).unwrap())
    }

    #[test]
    fn a_result_taken_as_it_is_is_the_one_rmcp_would_write_again() {
        let taken = [
            json!({"resultType": "complete", "content": [{"type": "text", "text": "a \"quoted\" order"}],
                   "structuredContent": {"order": {"id": "A-1", "lines": [1, 2.5, null]}}}),
            json!({"resultType": "complete", "content": [], "isError": true}),
            json!({"resultType": "complete", "content": [], "structuredContent": null}),
            json!({"resultType": "complete", "content": [
                {"type": "text", "text": "x", "annotations": {"audience": ["user"], "priority": 0.5}},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///a", "name": "a"}],
                "_meta": {"trace": 1}}),
        ];
        for value in taken {
            let result = RawToolResult::complete(&raw(&value)).unwrap_or_else(|| panic!("{value}"));
            let written: serde_json::Value = serde_json::from_str(result.get()).unwrap();
            assert_eq!(Some(written), through_rmcp(&value), "{value}");
            assert_eq!(result.is_error(), value["isError"] == json!(true));
            assert_eq!(
                result.parse().unwrap(),
                serde_json::from_value(value).unwrap()
            );
        }
    }

    #[test]
    fn anything_rmcp_would_refuse_or_read_into_less_is_left_to_rmcp() {
        let left = [
            // Not complete, or no result type (a 2025-11-25 result: rmcp adds none).
            json!({"resultType": "input_required", "inputRequests": {}}),
            json!({"content": []}),
            // A field rmcp drops, or a field of the wrong type.
            json!({"resultType": "complete", "content": [], "extra": 1}),
            json!({"resultType": "complete", "content": [], "isError": "yes"}),
            json!({"resultType": "complete", "content": {}}),
            // A block rmcp cannot read: unknown kind, text that is not a string, not an object.
            json!({"resultType": "complete", "content": [{"type": "video", "url": "x"}]}),
            json!({"resultType": "complete", "content": [{"type": "text", "text": 1}]}),
            json!({"resultType": "complete", "content": [{"type": "text", "text": null}]}),
            json!({"resultType": "complete", "content": [["text", "x"]]}),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "x", "annotations": {"priority": "high"}}]}),
            // `_meta` not an object; no content (rmcp would add it).
            json!({"resultType": "complete", "content": [], "_meta": [1]}),
            json!({"resultType": "complete", "structuredContent": {"a": 1}}),
            // A `null` rmcp would write back as no field at all.
            json!({"resultType": "complete", "content": null, "isError": false}),
            json!({"resultType": "complete", "content": [], "isError": null}),
            json!({"resultType": "complete", "content": [], "_meta": null}),
            json!({"resultType": "complete", "_meta": {}}),
            // Not an object at all.
            json!(["complete", []]),
        ];
        for value in left {
            assert!(RawToolResult::complete(&raw(&value)).is_none(), "{value}");
        }
        // A duplicated field (which a JSON value cannot hold) is refused too.
        let twice =
            r#"{"resultType":"complete","content":[],"content":[{"type":"text","text":"x"}]}"#;
        assert!(RawToolResult::complete(twice).is_none());
        let twice_in_a_block =
            r#"{"resultType":"complete","content":[{"type":"text","text":"x","text":"y"}]}"#;
        assert!(serde_json::from_str::<CallToolResult>(twice_in_a_block).is_err());
        assert!(RawToolResult::complete(twice_in_a_block).is_none());
    }

    #[test]
    fn a_texts_unicode_escapes_are_decoded_to_tell_whether_rmcp_reads_them() {
        let with = |text: &str| {
            format!(r#"{{"resultType":"complete","content":[{{"type":"text","text":"{text}"}}]}}"#)
        };
        // A lone half of a surrogate pair, which serde skips over but rmcp cannot read.
        for lone in [r"\ud800", r#"a \"b\" \udfff"#] {
            let result = with(lone);
            assert!(serde_json::from_str::<CallToolResult>(&result).is_err());
            assert!(RawToolResult::complete(&result).is_none(), "{lone}");
        }
        for read in [r"\ud83d\ude00 \u00e9", r#"\\u and \"quotes\"\n"#, "plain"] {
            let result = with(read);
            let taken = RawToolResult::complete(&result).unwrap_or_else(|| panic!("{read}"));
            assert_eq!(
                taken.parse().unwrap(),
                serde_json::from_str::<CallToolResult>(&result).unwrap()
            );
        }
    }
}
