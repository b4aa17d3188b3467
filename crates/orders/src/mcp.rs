//! The MCP server `order-service`: six tools, two policy resources and an order template, and
//! the `draft_refund_email` prompt with completion. Every two-way call goes through
//! `backchannel`, so the same tools serve 2025-11-25 and 2026-07-28 clients.

use backchannel::{AnswerReason, Backchannel, Ctx, Elicited, LogLevel, ToolError, ToolResult};
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, prompt, prompt_router, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::{Order, OrderId};
use crate::messages;
use crate::service::{OrderError, OrderService};
use crate::wire::OrderView;

/// The logger name on log notifications.
const LOGGER: &str = "order-service";

const RETURNS_POLICY: &str = include_str!("../policies/returns.md");
const SHIPPING_POLICY: &str = include_str!("../policies/shipping.md");

/// Arguments naming one order.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OrderRef {
    /// The order ID, for example ORD-10001
    #[serde(rename = "orderId")]
    pub order_id: String,
}

/// Arguments of `cancel_order`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CancelArgs {
    /// The order to cancel, for example ORD-10002
    #[serde(rename = "orderId")]
    pub order_id: String,
}

/// Arguments naming one customer.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CustomerRef {
    /// The customer ID, for example CUST-42
    #[serde(rename = "customerId")]
    pub customer_id: String,
}

/// Arguments of `get_orders_by_status`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatusArg {
    /// One of PENDING, PROCESSING, SHIPPED, DELIVERED, CANCELLED
    pub status: String,
}

/// Arguments of `update_order_status`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UpdateArgs {
    /// The order ID, for example ORD-10001
    #[serde(rename = "orderId")]
    pub order_id: String,
    /// The new status
    #[serde(rename = "newStatus")]
    pub new_status: String,
}

/// The form `cancel_order` asks the person to fill in.
///
/// The schema marks `confirmed` required, yet a submitted form without it reads as "not
/// confirmed" rather than as malformed: a person who submits an empty form has not said yes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CancellationConfirmation {
    /// Confirm this order should be cancelled
    #[serde(default)]
    pub confirmed: bool,
    /// Optional note recorded against the cancellation
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl JsonSchema for CancellationConfirmation {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CancellationConfirmation".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "confirmed": {
                    "type": "boolean",
                    "description": "Confirm this order should be cancelled"
                },
                "note": {
                    "type": "string",
                    "description": "Optional note recorded against the cancellation"
                }
            },
            "required": ["confirmed"]
        })
    }
}
backchannel::elicit_safe!(CancellationConfirmation);

/// Arguments of the `draft_refund_email` prompt.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RefundArgs {
    /// The order being refunded
    #[serde(rename = "orderId")]
    pub order_id: String,
    /// Why the order is being refunded
    pub reason: String,
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

/// The person-facing message of a refusal; a database failure reaches the model only as a
/// reference (the text stays in the log).
fn failed(error: OrderError) -> ToolError {
    match &error {
        OrderError::Store(store) => {
            backchannel::Incident::record("order database failure", store).into()
        }
        _ => ToolError::failed(error),
    }
}

/// A step that did not finish: its work's own failure as [`failed`] reports it; a task lost to
/// another instance says so (nobody reads it); a step that cannot be kept or read back is an
/// incident (its text is internal).
fn step_failed(error: backchannel::StepError<OrderError>) -> ToolError {
    match error {
        backchannel::StepError::Failed(error) => failed(error),
        // The body stops and its result goes nowhere: another instance runs the task now.
        lost @ backchannel::StepError::Lost => ToolError::failed(lost),
        other => backchannel::Incident::record("a task step could not be kept", &other).into(),
    }
}

fn orders_json(orders: Vec<Order>) -> ToolResult {
    let views: Vec<OrderView> = orders.into_iter().map(OrderView::from).collect();
    let json = serde_json::to_string(&views).map_err(ToolError::failed)?;
    Ok(text(json))
}

/// The order-service MCP server. Cheap to clone; clones share the service and the layer.
#[derive(Clone)]
pub struct OrderServer {
    service: OrderService,
    layer: Backchannel,
    // Behind `Arc`: the HTTP transport builds a handler per stateless request by cloning.
    tools: std::sync::Arc<ToolRouter<Self>>,
    prompts: std::sync::Arc<PromptRouter<Self>>,
    rendered: std::sync::Arc<Rendered>,
}

/// `get_order`'s results for the orders asked about lately, each with the order it shows.
///
/// Turning an order into its structured content and the text beside it was an eighth of a
/// `get_order`'s CPU; a result is made again only when the order read differs from the one it
/// was made from, so what is shown is always what was read.
#[derive(Debug, Default)]
struct Rendered {
    results: std::sync::Mutex<
        std::collections::HashMap<String, (std::sync::Arc<Order>, CallToolResult)>,
    >,
}

impl Rendered {
    /// Enough for the orders in play; a scan of every order empties it instead of growing it.
    const MAX_ENTRIES: usize = 256;

    /// The result showing `order`. The order cache hands out the same `Arc` until the order is
    /// written, so the comparison is usually a pointer's.
    fn result(&self, order: std::sync::Arc<Order>) -> Result<CallToolResult, ErrorData> {
        let mut results = self
            .results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((shown, result)) = results.get(&order.order_id)
            && (std::sync::Arc::ptr_eq(shown, &order) || **shown == *order)
        {
            return Ok(result.clone());
        }
        // What rmcp makes of a `Json<OrderView>`: the structured content and its text.
        let value = serde_json::to_value(OrderView::from((*order).clone())).map_err(|error| {
            ErrorData::internal_error(format!("an order could not be shown: {error}"), None)
        })?;
        let result = CallToolResult::structured(value);
        if results.len() >= Self::MAX_ENTRIES {
            results.clear();
        }
        results.insert(order.order_id.clone(), (order, result.clone()));
        Ok(result)
    }
}

impl std::fmt::Debug for OrderServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrderServer").finish_non_exhaustive()
    }
}

#[tool_router]
impl OrderServer {
    /// Look up one order by its ID (like ORD-10001): status, customer, lines, total and shipment.
    #[tool(
        output_schema = rmcp::handler::server::tool::schema_for_output::<OrderView>(),
        annotations(
        title = "Get order",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn get_order(
        &self,
        meta: RequestMetaObject,
        Parameters(args): Parameters<OrderRef>,
    ) -> Result<CallToolResult, ToolError> {
        // A read that never asks: it takes the request's `_meta` rather than a `Ctx`.
        let agent = meta
            .get("support_agent_id")
            .and_then(|v| v.as_str())
            .unwrap_or("unknown")
            .to_owned();
        tracing::info!("get_order {} requested by {agent}", args.order_id.trim());
        let order = self
            .service
            .shared_order(OrderId::new(&args.order_id))
            .await
            .map_err(failed)?;
        // What `Json<OrderView>` would give, made once per version of the order.
        Ok(self.rendered.result(order)?)
    }

    /// Every order of one customer (IDs like CUST-42), newest first. An empty list means the
    /// customer has no orders.
    #[tool(annotations(
        title = "Get a customer's orders",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn get_customer_orders(&self, Parameters(args): Parameters<CustomerRef>) -> ToolResult {
        orders_json(
            self.service
                .customer_orders(&args.customer_id)
                .await
                .map_err(failed)?,
        )
    }

    /// The orders in one status, newest first. Valid statuses: PENDING, PROCESSING, SHIPPED,
    /// DELIVERED and CANCELLED. An empty list means none are in that status.
    #[tool(annotations(
        title = "Get orders by status",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn get_orders_by_status(&self, Parameters(args): Parameters<StatusArg>) -> ToolResult {
        orders_json(
            self.service
                .orders_by_status(&args.status)
                .await
                .map_err(failed)?,
        )
    }

    /// Set an order's status to PENDING, PROCESSING, SHIPPED or DELIVERED and return the updated
    /// order. To cancel, use cancel_order instead: it asks the customer to confirm first.
    #[tool(annotations(
        title = "Update order status",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn update_order_status(&self, Parameters(args): Parameters<UpdateArgs>) -> ToolResult {
        let order = self
            .service
            .update_status(OrderId::new(&args.order_id), &args.new_status)
            .await
            .map_err(failed)?;
        self.changed(&order.order_id).await;
        Ok(text(
            serde_json::to_string(&OrderView::from(order)).map_err(ToolError::failed)?,
        ))
    }

    /// Ask the carriers for fresh delivery estimates of every order that has shipped but not yet
    /// arrived. Takes a while; reports progress and returns a summary. Use it for a bulk
    /// refresh, not for one order.
    #[tool(annotations(
        title = "Recheck shipments",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = true
    ))]
    async fn recheck_shipments(&self, ctx: Ctx) -> ToolResult {
        use futures::{StreamExt, TryStreamExt};
        use std::sync::atomic::Ordering;
        // Runs as a task when the client supports tasks; synchronously otherwise.
        ctx.escalate().await?;
        let mut shipped = self.service.shipped().await.map_err(failed)?;
        // The estimates as they were when this recheck began, recorded: a recheck taken over
        // after its instance stopped compares with them, so a shipment the stopped instance
        // wrote but had not yet recorded still counts as changed.
        let before: Vec<(String, crate::domain::Date)> = ctx
            .step("estimates before", async {
                Ok::<_, OrderError>(
                    shipped
                        .iter()
                        .filter_map(|order| {
                            let shipment = order.shipment.as_ref()?;
                            Some((order.order_id.clone(), shipment.estimated_delivery))
                        })
                        .collect(),
                )
            })
            .await
            .map_err(step_failed)?;
        let before: std::collections::HashMap<_, _> = before.into_iter().collect();
        for order in &mut shipped {
            if let (Some(shipment), Some(date)) =
                (order.shipment.as_mut(), before.get(&order.order_id))
            {
                shipment.estimated_delivery = *date;
            }
        }
        let total = shipped.len();
        ctx.log(LogLevel::Info, LOGGER, messages::recheck_started(total))
            .await;
        // Each shipment is a step: a recheck taken over from a stopped instance skips the
        // shipments already done (their outcome recorded) and reports progress only for new
        // work, so its progress goes on from where it was. Each lookup reports for itself:
        // lookups wait for the database, and none may wait on a consumer busy elsewhere.
        let done = std::sync::atomic::AtomicUsize::new(0);
        let moved = std::sync::atomic::AtomicUsize::new(0);
        let (ctx_ref, done_ref, moved_ref) = (&ctx, &done, &moved);
        let lookups = futures::stream::iter(shipped)
            .map(|order| async move {
                let name = format!("shipment {}", order.order_id);
                let replayed = ctx_ref.recorded(&name).await;
                let changed = ctx_ref
                    .step(&name, self.service.recheck_one(&order))
                    .await
                    .map_err(step_failed)?;
                let now_done = done_ref.fetch_add(1, Ordering::SeqCst) + 1;
                if changed {
                    moved_ref.fetch_add(1, Ordering::SeqCst);
                }
                if !replayed {
                    if changed {
                        let updated = messages::estimate_updated(&order.order_id);
                        ctx_ref.log(LogLevel::Debug, LOGGER, updated).await;
                    }
                    let fraction = now_done as f64 / total as f64;
                    let message = format!("{now_done} of {total}");
                    ctx_ref.progress(fraction, Some(1.0), Some(&message)).await;
                }
                Ok::<_, ToolError>(())
            })
            .buffer_unordered(self.service.carrier_concurrency())
            .try_for_each(|()| std::future::ready(Ok(())));
        tokio::select! {
            finished = lookups => finished?,
            () = ctx.cancellation().cancelled() => {
                let (done, changed) = (done.load(Ordering::SeqCst), moved.load(Ordering::SeqCst));
                return Ok(text(messages::recheck_stopped(done, total, changed)));
            }
        }
        let changed = moved.load(Ordering::SeqCst);
        ctx.log(LogLevel::Info, LOGGER, messages::recheck_finished(changed))
            .await;
        Ok(text(messages::recheck_summary(total, changed)))
    }

    /// Cancel an order and start its refund. The person is asked to confirm first. Only PENDING
    /// and PROCESSING orders can be cancelled.
    #[tool(annotations(
        title = "Cancel order",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn cancel_order(&self, ctx: Ctx, Parameters(args): Parameters<CancelArgs>) -> ToolResult {
        let order_id = OrderId::new(&args.order_id);
        let order = self.service.shared_order(order_id).await.map_err(failed)?;
        let id = order_id.as_str();
        // Whether the order could be cancelled when the call began, kept as a step: a run
        // taken over after the cancellation must not find its own write in the way.
        let refusal = ctx
            .step("check", async {
                Ok((!order.status.is_cancellable()).then(|| {
                    OrderError::NotCancellable {
                        order_id: id.to_owned(),
                        status: order.status,
                    }
                    .to_string()
                }))
            })
            .await
            .map_err(step_failed)?;
        if let Some(refusal) = refusal {
            return Ok(text(refusal));
        }
        // With a client that runs tasks, the confirmation waits in a task (a person may take
        // a while); without, the call asks directly.
        ctx.escalate().await?;
        // The progress token names the conversation, so a host can show the question there.
        let ask = match ctx.progress_token() {
            Some(token) => {
                let mut meta = RequestMetaObject::default();
                meta.insert(
                    "conversationId".into(),
                    serde_json::to_value(&token.0).unwrap_or_default(),
                );
                ctx.with_question_meta(meta)
            }
            None => ctx.clone(),
        };
        let answer = ask
            .elicit::<CancellationConfirmation>("confirm", messages::confirm_cancellation(&order))
            .await?;
        Ok(text(match answer {
            Elicited::Accepted(CancellationConfirmation {
                confirmed: true,
                note,
            }) => {
                let decided = self.cancel_step(&ctx, order_id, note.as_deref()).await?;
                if decided.cancelled {
                    self.changed(id).await;
                    ctx.log(LogLevel::Info, LOGGER, messages::cancelled_log(id))
                        .await;
                }
                decided.text
            }
            Elicited::Accepted(_) => messages::not_confirmed(id),
            // A client of ours says why it declined: a person's No, or a question nobody saw.
            Elicited::Declined => match ask.answer_reason("confirm") {
                Some(AnswerReason::NotShown) => messages::not_shown(id),
                _ => messages::declined(id),
            },
            Elicited::Cancelled => messages::dismissed(id),
            Elicited::TimedOut => messages::unanswered(id),
            Elicited::Unsupported => messages::use_admin_console(id),
        }))
    }
}

/// What the cancellation step decided, as recorded with its task.
#[derive(Debug, Serialize, Deserialize)]
struct Decided {
    /// Whether this call cancelled the order.
    cancelled: bool,
    /// What the person is told.
    text: String,
}

impl OrderServer {
    /// The cancellation, as a step under its key: the status is decided again, atomically, at
    /// write time, and a run taken over after the write finds it done (by the key) instead of
    /// writing again.
    async fn cancel_step(
        &self,
        ctx: &Ctx,
        order_id: OrderId<'_>,
        note: Option<&str>,
    ) -> Result<Decided, ToolError> {
        let key = ctx.step_key("cancel");
        let id = order_id.as_str();
        let work = async {
            match self.service.cancel_once(order_id, note, Some(&key)).await {
                Ok(cancelled) => Ok(Decided {
                    cancelled: true,
                    text: messages::cancelled(id, cancelled.refund),
                }),
                Err(error @ OrderError::NotCancellable { .. }) => Ok(Decided {
                    cancelled: false,
                    text: error.to_string(),
                }),
                Err(error) => Err(error),
            }
        };
        ctx.step("cancel", work).await.map_err(step_failed)
    }
}

#[prompt_router]
impl OrderServer {
    /// Write an email to a customer confirming a refund for one order.
    #[prompt(name = "draft_refund_email", title = "Draft a refund email")]
    async fn draft_refund_email(
        &self,
        Parameters(args): Parameters<RefundArgs>,
    ) -> Result<Vec<PromptMessage>, ErrorData> {
        let order = self
            .service
            .order(OrderId::new(&args.order_id))
            .await
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        Ok(vec![PromptMessage::new_text(
            Role::User,
            messages::refund_email_prompt(&order, args.reason.trim()),
        )])
    }
}

impl OrderServer {
    /// The server over `service`, with its own backchannel layer.
    pub fn new(service: OrderService, layer: Backchannel) -> Self {
        Self {
            service,
            layer,
            tools: std::sync::Arc::new(backchannel::schema::portable_formats(Self::tool_router())),
            prompts: std::sync::Arc::new(Self::prompt_router()),
            rendered: std::sync::Arc::default(),
        }
    }

    /// This server's backchannel layer (for the change bus between instances).
    pub fn layer(&self) -> &Backchannel {
        &self.layer
    }

    /// Tell whoever subscribed to `order://{id}` (here, and on every instance through the
    /// change bus) that the order changed.
    async fn changed(&self, id: &str) {
        self.layer
            .notify_resource_updated(&format!("order://{id}"))
            .await;
    }

    /// The layer configuration this server expects: `recheck_shipments` and `cancel_order` may
    /// run as tasks, and both are resumed on another instance if their own stops: their work
    /// is in steps (each shipment; the cancellation under its key), so a resumed run skips
    /// what was done and never writes twice.
    pub fn layer_builder() -> backchannel::BackchannelBuilder {
        Self::layer_builder_for(true)
    }

    /// The layer's settings, with the task tools only when `tasks`: without them no call runs
    /// as a task, the tasks extension is not declared, and every question is asked on the call
    /// itself (the lessons' flow).
    pub fn layer_builder_for(tasks: bool) -> backchannel::BackchannelBuilder {
        if !tasks {
            return Backchannel::builder();
        }
        Backchannel::builder()
            .task_tool("recheck_shipments", backchannel::TaskSupport::Optional)
            .task_tool("cancel_order", backchannel::TaskSupport::Optional)
            .resumable("recheck_shipments")
            .resumable("cancel_order")
    }

    /// Run here the tasks of instances that stopped, until `shutdown`.
    pub fn resume_tasks(&self, shutdown: tokio_util::sync::CancellationToken) {
        self.layer
            .resume_tasks((*self.tools).clone(), self.clone(), shutdown);
    }

    /// The tools as `tools/list` shows them.
    pub fn tool_list(&self) -> Vec<Tool> {
        self.tools.list_all()
    }

    async fn complete_refund(&self, argument: &ArgumentInfo) -> Result<CompletionInfo, ErrorData> {
        let internal = |e: String| ErrorData::internal_error(e, None);
        match argument.name.as_str() {
            "reason" => {
                let values: Vec<String> = messages::REFUND_REASONS
                    .iter()
                    .filter(|r| r.starts_with(argument.value.as_str()))
                    .map(|r| (*r).to_owned())
                    .collect();
                let mut info = CompletionInfo::new(values).map_err(internal)?;
                info.total = Some(info.values.len() as u32);
                info.has_more = Some(false);
                Ok(info)
            }
            "orderId" => {
                const SHOWN: usize = 20;
                let mut ids = self
                    .service
                    .order_ids_with_prefix(&argument.value, SHOWN as u32 + 1)
                    .await
                    .map_err(|e| internal(e.to_string()))?;
                let more = ids.len() > SHOWN;
                ids.truncate(SHOWN);
                let count = ids.len() as u32;
                let mut info = CompletionInfo::new(ids).map_err(internal)?;
                info.has_more = Some(more);
                info.total = (!more).then_some(count);
                Ok(info)
            }
            _ => CompletionInfo::new(Vec::new()).map_err(internal),
        }
    }
}

impl ServerHandler for OrderServer {
    backchannel::layer_hooks!(layer, tools: tools, prompts: prompts);

    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_prompts()
            .enable_completions();
        let capabilities = match self.layer.runs_tasks() {
            true => capabilities.enable_tasks().build(),
            false => capabilities.build(),
        };
        let capabilities = backchannel::with_logging(capabilities);
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("order-service", "1.0.0"))
            .with_instructions(
                "Orders of an online shop: look them up, list them by customer or status, update \
                 their status, recheck shipments, and cancel with the customer's confirmation.",
            )
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.layer.subscribe_resource(&request.uri, &context)
    }

    async fn unsubscribe(
        &self,
        UnsubscribeRequestParams { uri, .. }: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.layer.unsubscribe_resource(&uri, &context);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("policy://returns", "returns_policy")
                .with_title("Returns policy")
                .with_mime_type("text/markdown")
                .with_description(
                    "The current returns policy, including the returns window and exclusions.",
                ),
            Resource::new("policy://shipping", "shipping_policy")
                .with_title("Shipping policy")
                .with_mime_type("text/markdown")
                .with_description(
                    "Carriers, delivery estimates and what happens to a delayed shipment.",
                ),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("order://{orderId}", "order")
                .with_title("Order")
                .with_mime_type("application/json")
                .with_description("One order as JSON, for example order://ORD-10001."),
        ]))
    }

    async fn read_resource(
        &self,
        ReadResourceRequestParams { uri, .. }: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = uri.as_str();
        let (mime, body) = match uri {
            "policy://returns" => ("text/markdown", RETURNS_POLICY.to_owned()),
            "policy://shipping" => ("text/markdown", SHIPPING_POLICY.to_owned()),
            _ => match uri.strip_prefix("order://") {
                Some(id) => {
                    let order =
                        self.service
                            .order(OrderId::new(id))
                            .await
                            .map_err(|e| match e {
                                OrderError::NotFound(_) => ErrorData::resource_not_found(
                                    e.to_string(),
                                    Some(serde_json::json!({"uri": uri})),
                                ),
                                other => ErrorData::internal_error(other.to_string(), None),
                            })?;
                    let json = serde_json::to_string_pretty(&OrderView::from(order))
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                    ("application/json", json)
                }
                None => {
                    return Err(ErrorData::resource_not_found(
                        format!("No resource at {uri}"),
                        Some(serde_json::json!({"uri": uri})),
                    ));
                }
            },
        };
        Ok(
            ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
                uri: uri.into(),
                mime_type: Some(mime.into()),
                text: body,
                meta: None,
            }])
            .into(),
        )
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let info = match &request.r#ref {
            Reference::Prompt(prompt) if prompt.name == "draft_refund_email" => {
                self.complete_refund(&request.argument).await?
            }
            _ => CompletionInfo::new(Vec::new()).map_err(|e| ErrorData::internal_error(e, None))?,
        };
        Ok(CompleteResult::new(info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreError;

    #[test]
    fn a_rendered_order_is_made_again_when_the_order_changed() {
        let rendered = Rendered::default();
        let order = crate::seed::orders(&crate::seed::customers())
            .into_iter()
            .next()
            .expect("a seeded order");
        let shown = |result: &CallToolResult| {
            let structured = result.structured_content.clone().expect("structured");
            let text = result.content[0].as_text().expect("text").text.clone();
            (structured, text)
        };
        let first = rendered
            .result(std::sync::Arc::new(order.clone()))
            .expect("rendered");
        let (structured, text) = shown(&first);
        assert_eq!(
            structured,
            serde_json::to_value(OrderView::from(order.clone())).unwrap()
        );
        assert_eq!(
            text,
            structured.to_string(),
            "the text is the structured content"
        );
        assert_eq!(
            shown(&rendered.result(std::sync::Arc::new(order.clone())).unwrap()),
            (structured.clone(), text)
        );
        let mut changed = order;
        changed.status = match changed.status {
            crate::domain::OrderStatus::Delivered => crate::domain::OrderStatus::Pending,
            _ => crate::domain::OrderStatus::Delivered,
        };
        let (after, _) = shown(
            &rendered
                .result(std::sync::Arc::new(changed.clone()))
                .unwrap(),
        );
        assert_ne!(after, structured, "a changed order is not shown as it was");
        assert_eq!(
            after,
            serde_json::to_value(OrderView::from(changed)).unwrap()
        );
    }

    fn text_of(error: ToolError) -> String {
        match error {
            ToolError::Failed(text) => text,
            other => panic!("expected a failure the model reads, got {other:?}"),
        }
    }

    #[test]
    fn a_database_failure_reaches_the_model_as_a_reference_only() {
        let text = text_of(failed(OrderError::Store(StoreError::Corrupt(
            "orders.total_amount is 'abc' at /var/lib/orders.sqlite".into(),
        ))));
        assert!(
            text.starts_with("An unexpected error occurred. Reference: "),
            "{text}"
        );
        assert!(!text.contains("sqlite") && !text.contains("abc"), "{text}");
    }

    #[test]
    fn a_refusal_reaches_the_model_in_full() {
        let text = text_of(failed(OrderError::NotFound("ORD-99999".into())));
        assert!(text.contains("ORD-99999"), "{text}");
    }
}
