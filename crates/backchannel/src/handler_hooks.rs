//! [`layer_hooks!`](crate::layer_hooks): the `ServerHandler` methods that hand requests to the
//! layer, written once for every server.

/// Inside an `impl rmcp::ServerHandler` block, writes the methods that hand requests to the
/// layer in the field `$layer`:
///
/// - always: `supported_protocol_versions` (the layer's), `set_level`, `on_initialized`, `accepted_subscription_filter`, `listen`,
///   and, unless written `without tasks` (a server that answers `tasks/*` itself),
///   `get_task`, `update_task` and `cancel_task`;
/// - with `tools: field`: `call_tool` (driven by the layer), `list_tools` and `get_tool` over
///   the `ToolRouter` in that field;
/// - with `prompts: field` (alone or after `tools`): `get_prompt` (driven by the layer) and
///   `list_prompts` over the `PromptRouter` in that field.
///
/// ```ignore
/// impl ServerHandler for MyServer {
///     backchannel::layer_hooks!(layer, tools: tools, prompts: prompts);
///     fn get_info(&self) -> ServerConfig { /* … */ }
/// }
/// ```
#[macro_export]
macro_rules! layer_hooks {
    ($layer:ident, tools: $tools:ident, prompts: $prompts:ident) => {
        $crate::layer_hooks!($layer, tools: $tools);
        $crate::layer_hooks!(@prompts $layer, $prompts);
    };
    ($layer:ident, prompts: $prompts:ident) => {
        $crate::layer_hooks!($layer);
        $crate::layer_hooks!(@prompts $layer, $prompts);
    };
    (@prompts $layer:ident, $prompts:ident) => {
        async fn get_prompt(
            &self,
            request: $crate::__rmcp::model::GetPromptRequestParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::__rmcp::model::GetPromptResponse, $crate::__rmcp::ErrorData> {
            self.$layer.get_prompt(&self.$prompts, self, request, context).await
        }

        async fn list_prompts(
            &self,
            _request: ::std::option::Option<$crate::__rmcp::model::PaginatedRequestParams>,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::__rmcp::model::ListPromptsResult, $crate::__rmcp::ErrorData> {
            Ok($crate::__rmcp::model::ListPromptsResult::with_all_items(self.$prompts.list_all()))
        }
    };
    ($layer:ident, tools: $tools:ident) => {
        $crate::layer_hooks!($layer);

        async fn call_tool(
            &self,
            request: $crate::__rmcp::model::CallToolRequestParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::__rmcp::model::CallToolResponse, $crate::__rmcp::ErrorData> {
            self.$layer.call_tool(&self.$tools, self, request, context).await
        }

        async fn list_tools(
            &self,
            _request: ::std::option::Option<$crate::__rmcp::model::PaginatedRequestParams>,
            _context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::__rmcp::model::ListToolsResult, $crate::__rmcp::ErrorData> {
            Ok($crate::__rmcp::model::ListToolsResult::with_all_items(self.$tools.list_all()))
        }

        fn get_tool(&self, name: &str) -> ::std::option::Option<$crate::__rmcp::model::Tool> {
            self.$tools.get(name).cloned()
        }
    };
    ($layer:ident) => {
        $crate::layer_hooks!($layer, without tasks);
        $crate::layer_hooks!(@tasks $layer);
    };
    ($layer:ident, without tasks) => {
        fn supported_protocol_versions(
            &self,
        ) -> ::std::borrow::Cow<'static, [$crate::__rmcp::model::ProtocolVersion]> {
            self.$layer.supported_protocol_versions()
        }

        async fn set_level(
            &self,
            request: $crate::SetLevelParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<(), $crate::__rmcp::ErrorData> {
            self.$layer.set_level(&request, &context);
            Ok(())
        }

        async fn on_initialized(
            &self,
            context: $crate::__rmcp::service::NotificationContext<$crate::__rmcp::RoleServer>,
        ) {
            self.$layer.on_initialized(&context);
        }

        fn accepted_subscription_filter(
            &self,
            requested: &$crate::__rmcp::model::SubscriptionFilter,
        ) -> ::std::option::Option<$crate::__rmcp::model::SubscriptionFilter> {
            self.$layer.accepted_subscription_filter(requested)
        }

        async fn listen(
            &self,
            subscription: $crate::__rmcp::service::SubscriptionContext,
        ) -> ::std::result::Result<(), $crate::__rmcp::ErrorData> {
            self.$layer.listen(subscription).await
        }
    };
    (@tasks $layer:ident) => {
        async fn get_task(
            &self,
            request: $crate::__rmcp::model::GetTaskParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::__rmcp::model::GetTaskResult, $crate::__rmcp::ErrorData>
        {
            self.$layer.get_task(&request, &context).await
        }

        async fn update_task(
            &self,
            request: $crate::__rmcp::model::UpdateTaskParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<(), $crate::__rmcp::ErrorData> {
            self.$layer.update_task(request, &context).await
        }

        async fn cancel_task(
            &self,
            request: $crate::__rmcp::model::CancelTaskParams,
            context: $crate::__rmcp::service::RequestContext<$crate::__rmcp::RoleServer>,
        ) -> ::std::result::Result<(), $crate::__rmcp::ErrorData> {
            self.$layer.cancel_task(&request, &context).await
        }
    };
}
