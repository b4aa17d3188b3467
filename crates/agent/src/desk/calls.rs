//! The desk's tool calls: on the server that offers a tool, as the person asked it (the call
//! named in its questions), and routed by the tool's prefix.

use backchannel_host::CallContext;
use rmcp::model::CallToolResult;
use serde_json::Value;

use super::connecting::NOTES_TOOL;
use super::{Desk, DeskHandler, tasks, text_of};
use crate::events::Event;

impl Desk {
    pub(crate) async fn call(
        &self,
        conversation: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, String> {
        self.call_on(conversation, "orders", tool, arguments).await
    }

    /// Call `tool` of the connection `server` in `conversation` (a task only on the order
    /// service's, which declares tasks).
    pub(crate) async fn call_on(
        &self,
        conversation: &str,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, String> {
        let host = self.host.host().await?;
        let orders = host.connection(server).map_err(|_| {
            if server == "orders" {
                self.not_connected("not connected")
            } else {
                format!("{server} is not connected")
            }
        })?;
        let context = CallContext::new()
            .with("progressToken", conversation)
            .with("support_agent_id", self.person_of(conversation).as_str());
        // Its questions name it, so the person sees what a yes will do; the page shows it as a
        // card, its result filled in when it comes.
        let shown = crate::events::CallShown::new(server, tool, &arguments);
        let card = crate::events::random_id();
        self.events.emit(
            conversation,
            Event::Call {
                id: card.clone(),
                call: shown.clone(),
                result: None,
                is_error: false,
            },
        );
        let _calling = self.events.calling(conversation, shown.clone());
        let asked = (server, tool, arguments, &shown);
        let result = self
            .call_as_asked(conversation, orders, asked, context)
            .await;
        let (text, is_error) = match &result {
            Ok(result) => (text_of(result), result.is_error == Some(true)),
            Err(message) => (message.clone(), true),
        };
        let text: String = text.chars().take(crate::events::MAX_RESULT_SHOWN).collect();
        let done = Event::Call {
            id: card,
            call: shown,
            result: Some(text),
            is_error,
        };
        self.events.emit(conversation, done);
        result
    }

    /// [`Desk::call_on`]'s call itself: as a task on the order service when the desk
    /// declares tasks, else answered in the call.
    async fn call_as_asked(
        &self,
        conversation: &str,
        orders: &backchannel_host::Connection<DeskHandler>,
        (server, tool, arguments, shown): (&str, &str, Value, &crate::events::CallShown),
        context: CallContext,
    ) -> Result<CallToolResult, String> {
        let host = self.host.host().await?;
        if !self.config.tasks || server != "orders" {
            return orders
                .call_tool(tool, arguments.as_object().cloned(), &context)
                .await
                .map_err(|e| e.to_string());
        }
        let started = orders
            .start_tool(tool, arguments.as_object().cloned(), &context)
            .await
            .map_err(|e| e.to_string())?;
        match started {
            backchannel_host::Started::Done(result) => Ok(result),
            backchannel_host::Started::Task(task) => {
                let follower = tasks::Follower {
                    host: host.clone(),
                    events: self.events.clone(),
                    conversation: conversation.to_owned(),
                    answer_within: self.config.person_deadline,
                    store: self.store.clone(),
                    speaker: self.speaker(),
                    call: Some(shown.clone()),
                };
                follower.follow(task).await
            }
            backchannel_host::Started::InputRequired { .. } => {
                Err("the order service asked questions the desk did not expect".into())
            }
        }
    }

    /// Call a tool by the name the model saw: knowledge-base tools carry their server's prefix.
    pub(crate) async fn call_routed(
        &self,
        conversation: &str,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, String> {
        if name == NOTES_TOOL {
            let question = arguments["question"].as_str().unwrap_or_default();
            let archive = arguments["archive"].as_bool().unwrap_or(false);
            return Ok(CallToolResult::success(vec![
                rmcp::model::ContentBlock::text(self.search_notes(question, archive).await),
            ]));
        }
        // Through the orders endpoint (a gateway), the notes' tools are its tools.
        let spawned = self
            .config
            .knowledge
            .as_ref()
            .is_some_and(|k| !k.through_orders);
        let knowledge_connections = [
            ("knowledge-base-archive", "knowledge_base_archive_"),
            ("knowledge-base", "knowledge_base_"),
        ];
        for (connection, prefix) in knowledge_connections.into_iter().filter(|_| spawned) {
            if let Some(tool) = name.strip_prefix(prefix) {
                let host = self.host.host().await?;
                let connection = host.connection(connection).map_err(|e| e.to_string())?;
                return connection
                    .call_tool(tool, arguments.as_object().cloned(), &CallContext::new())
                    .await
                    .map_err(|e| e.to_string());
            }
        }
        let (server, tool) = self.route_of(name);
        self.call_on(conversation, &server, tool, arguments).await
    }
}
