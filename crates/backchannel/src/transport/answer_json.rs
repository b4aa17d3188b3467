//! A server message written as JSON, with an `input_required` result's questions written
//! straight from their typed parameters.
//!
//! rmcp serializes every request, a question inside `inputRequests` included, by first turning
//! its parameters into a `serde_json::Value` tree (to merge a `_meta` kept in the request's
//! extensions with one in the parameters), then writing that tree: for an elicitation, the
//! whole form schema is built twice. A question this crate asks carries its `_meta` in its
//! parameters and nothing in its extensions, so there is nothing to merge and its parameters
//! are written as they are. Anything else (a question with extensions, a kind without
//! parameters, any other message) is written by rmcp. The JSON is the same either way, up to
//! the order of keys.

use rmcp::model::{InputRequest, InputRequiredResult, JsonRpcMessage, ServerJsonRpcMessage, ServerResult};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// `message` as JSON bytes.
pub(crate) fn to_vec(message: &ServerJsonRpcMessage) -> serde_json::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(256);
    to_writer(&mut bytes, message)?;
    Ok(bytes)
}

/// `message` as JSON, written to `writer`.
pub(crate) fn to_writer(
    writer: impl std::io::Write,
    message: &ServerJsonRpcMessage,
) -> serde_json::Result<()> {
    serde_json::to_writer(writer, &Message(message))
}

struct Message<'a>(&'a ServerJsonRpcMessage);

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let JsonRpcMessage::Response(response) = self.0 else {
            return self.0.serialize(serializer);
        };
        let ServerResult::InputRequiredResult(result) = &response.result else {
            return self.0.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", &response.jsonrpc)?;
        map.serialize_entry("id", &response.id)?;
        map.serialize_entry("result", &InputRequired(result))?;
        map.end()
    }
}

struct InputRequired<'a>(&'a InputRequiredResult);

impl Serialize for InputRequired<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let result = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("resultType", &result.result_type)?;
        if let Some(requests) = &result.input_requests {
            map.serialize_entry("inputRequests", &Questions(requests))?;
        }
        if let Some(state) = &result.request_state {
            map.serialize_entry("requestState", state)?;
        }
        if let Some(meta) = &result.meta {
            map.serialize_entry("_meta", meta)?;
        }
        map.end()
    }
}

struct Questions<'a>(&'a rmcp::model::InputRequests);

impl Serialize for Questions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(key, question)| (key, Question(question))))
    }
}

struct Question<'a>(&'a InputRequest);

impl Serialize for Question<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            InputRequest::Elicitation(request) if request.extensions.is_empty() => {
                method_and_params(serializer, &request.method, &request.params)
            }
            InputRequest::CreateMessage(request) if request.extensions.is_empty() => {
                method_and_params(serializer, &request.method, &request.params)
            }
            other => other.serialize(serializer),
        }
    }
}

fn method_and_params<S: Serializer>(
    serializer: S,
    method: &impl Serialize,
    params: &impl Serialize,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(2))?;
    map.serialize_entry("method", method)?;
    map.serialize_entry("params", params)?;
    map.end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        CreateMessageRequestParams, ElicitRequestParams, ElicitationSchema, InputRequests,
        JsonRpcResponse, JsonRpcVersion2_0, ListRootsRequest, MetaObject, NumberOrString,
        Request, RequestMetaObject, SamplingMessage,
    };
    use serde_json::{Value, json};

    fn meta(value: Value) -> RequestMetaObject {
        RequestMetaObject(MetaObject(value.as_object().cloned().unwrap_or_default()))
    }

    fn answer(requests: InputRequests) -> ServerJsonRpcMessage {
        let result = InputRequiredResult::new(Some(requests), Some("sealed".into()));
        JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: NumberOrString::Number(7),
            result: ServerResult::InputRequiredResult(result),
        })
    }

    fn both_ways(message: &ServerJsonRpcMessage) -> (Value, Value) {
        let ours: Value = serde_json::from_slice(&to_vec(message).unwrap()).unwrap();
        let rmcp = serde_json::to_value(message).unwrap();
        (ours, rmcp)
    }

    #[test]
    fn every_kind_of_question_is_written_as_rmcp_writes_it() {
        let schema = ElicitationSchema::builder()
            .required_bool("confirmed")
            .optional_string("note")
            .build()
            .unwrap();
        let form = |meta| ElicitRequestParams::FormElicitationParams {
            meta,
            message: "Cancel ORD-1?".into(),
            requested_schema: schema.clone(),
        };
        let mut requests = InputRequests::new();
        requests.insert(
            "plain".into(),
            InputRequest::Elicitation(Request::new(form(None))),
        );
        requests.insert(
            "with-meta".into(),
            InputRequest::Elicitation(Request::new(form(Some(meta(json!({"conversationId": "c-1"})))))),
        );
        // Meta in the request's extensions: rmcp merges it into the parameters' `_meta`.
        let mut extended = Request::new(form(Some(meta(json!({"a": 1, "b": 2})))));
        extended.extensions.insert(meta(json!({"b": 3, "c": 4})));
        requests.insert("extended".into(), InputRequest::Elicitation(extended));
        requests.insert(
            "url".into(),
            InputRequest::Elicitation(Request::new(ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: "Sign in".into(),
                url: "https://example.com/sign-in".into(),
                elicitation_id: "e-1".into(),
            })),
        );
        requests.insert(
            "sampling".into(),
            InputRequest::CreateMessage(Request::new(CreateMessageRequestParams::new(
                vec![SamplingMessage::user_text("Summarise")],
                100,
            ))),
        );
        requests.insert(
            "roots".into(),
            InputRequest::ListRoots(ListRootsRequest::default()),
        );
        let message = answer(requests);
        let (ours, rmcp) = both_ways(&message);
        assert_eq!(ours, rmcp);
        assert_eq!(
            ours["result"]["inputRequests"]["extended"]["params"]["_meta"],
            json!({"a": 1, "b": 3, "c": 4})
        );
        assert_eq!(
            ours["result"]["inputRequests"]["with-meta"]["params"]["_meta"],
            json!({"conversationId": "c-1"})
        );
        assert_eq!(ours["result"]["resultType"], "input_required");
        assert_eq!(ours["result"]["requestState"], "sealed");
    }

    #[test]
    fn other_messages_are_rmcp_own() {
        let message: ServerJsonRpcMessage = JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: NumberOrString::String("a".into()),
            result: ServerResult::empty(()),
        });
        let (ours, rmcp) = both_ways(&message);
        assert_eq!(ours, rmcp);
        assert_eq!(to_vec(&message).unwrap(), serde_json::to_vec(&message).unwrap());
    }
}
