//! Everything but tools: the upstreams' resources, resource templates and prompts, listed
//! together and each request sent to the upstream it belongs to, and completions.
//!
//! Prompts carry the upstream's tool prefix, as tools do. Resources keep their URIs (a URI
//! names its resource already): a read goes to the upstreams that offer resources in order
//! until one has it. Lists are asked of the upstreams on every request, so a list that changed
//! upstream is seen at once.

use std::collections::BTreeMap;
use std::sync::Mutex;

use backchannel_host::Connection;
use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResponse, Reference, ResultType,
    ServerCapabilities, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::ServiceError;

use crate::switchboard::Switchboard;
use backchannel::lock;

/// The upstreams as the catalog sees them: each connection with its prefix and what it offers.
pub(crate) struct Catalog {
    entries: Vec<Entry>,
    /// How many downstream subscriptions each resource URI has (the upstream session is
    /// shared, so it is subscribed while any downstream is).
    subscribed: Mutex<BTreeMap<String, usize>>,
}

struct Entry {
    connection: String,
    prefix: String,
    capabilities: ServerCapabilities,
    /// Whether the upstream speaks 2025-11-25 (sessions: `resources/subscribe`, `logging`).
    sessions: bool,
}

/// An upstream's error as the downstream client reads it: the upstream's own JSON-RPC error
/// when it gave one (a missing resource stays -32002), else an internal error naming it.
pub(crate) fn upstream_error(connection: &str, error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => ErrorData::internal_error(
            format!("the upstream server {connection:?} failed: {other}"),
            None,
        ),
    }
}

impl Catalog {
    /// What each connection of `host` offers, as it said when it connected.
    pub(crate) fn new(
        host: &backchannel_host::Host<Switchboard>,
        prefixes: &BTreeMap<String, String>,
    ) -> Catalog {
        let entries = host
            .connections()
            .map(|connection| Entry {
                connection: connection.name().to_owned(),
                prefix: prefixes.get(connection.name()).cloned().unwrap_or_default(),
                capabilities: connection
                    .client()
                    .peer_info()
                    .map(|info| info.capabilities.clone())
                    .unwrap_or_default(),
                sessions: connection.has_sessions(),
            })
            .collect();
        Catalog {
            entries,
            subscribed: Mutex::new(BTreeMap::new()),
        }
    }

    /// The capabilities the gateway offers beyond tools: what any upstream offers.
    pub(crate) fn capabilities(&self, mut offered: ServerCapabilities) -> ServerCapabilities {
        for entry in &self.entries {
            let theirs = &entry.capabilities;
            if let Some(prompts) = &theirs.prompts {
                let ours = offered.prompts.get_or_insert_with(Default::default);
                ours.list_changed = ours.list_changed.or(prompts.list_changed);
            }
            if let Some(resources) = &theirs.resources {
                let ours = offered.resources.get_or_insert_with(Default::default);
                ours.list_changed = ours.list_changed.or(resources.list_changed);
                if entry.sessions {
                    ours.subscribe = ours.subscribe.or(resources.subscribe);
                }
            }
            if theirs.completions.is_some() {
                offered.completions = Some(Default::default());
            }
            // Their tasks are relayed (see `tasks`).
            if theirs.supports_tasks() {
                offered
                    .extensions
                    .get_or_insert_with(Default::default)
                    .insert(
                        rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                        Default::default(),
                    );
            }
        }
        offered
    }

    /// The upstreams whose capabilities pass `offers`, in order.
    fn offering<'a>(
        &'a self,
        offers: impl Fn(&ServerCapabilities) -> bool + 'a,
    ) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries
            .iter()
            .filter(move |entry| offers(&entry.capabilities))
    }

    /// The upstream whose prefix `name` carries (the longest), and the name without it.
    fn by_prefix<'a>(
        &'a self,
        name: &'a str,
        offers: impl Fn(&ServerCapabilities) -> bool,
    ) -> Option<(&'a Entry, &'a str)> {
        self.entries
            .iter()
            .filter(|entry| offers(&entry.capabilities))
            .filter_map(|entry| Some((entry, name.strip_prefix(entry.prefix.as_str())?)))
            .max_by_key(|(entry, _)| entry.prefix.len())
    }

    pub(crate) async fn list_prompts(
        &self,
        host: &backchannel_host::Host<Switchboard>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut prompts = Vec::new();
        for entry in self.offering(|c| c.prompts.is_some()) {
            let connection = connection(host, entry)?;
            match connection.client().list_all_prompts().await {
                Ok(listed) => prompts.extend(listed.into_iter().map(|mut prompt| {
                    prompt.name = format!("{}{}", entry.prefix, prompt.name);
                    prompt
                })),
                Err(error) => listing_failed(&entry.connection, "prompts", error),
            }
        }
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    /// The upstream connection and name of the prompt offered as `name`.
    pub(crate) fn prompt_route(&self, name: &str) -> Option<(String, String)> {
        let (entry, upstream_name) = self.by_prefix(name, |c| c.prompts.is_some())?;
        Some((entry.connection.clone(), upstream_name.to_owned()))
    }

    pub(crate) async fn list_resources(
        &self,
        host: &backchannel_host::Host<Switchboard>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut resources = Vec::new();
        for entry in self.offering(|c| c.resources.is_some()) {
            match connection(host, entry)?.client().list_all_resources().await {
                Ok(listed) => resources.extend(listed),
                Err(error) => listing_failed(&entry.connection, "resources", error),
            }
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    pub(crate) async fn list_resource_templates(
        &self,
        host: &backchannel_host::Host<Switchboard>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut templates = Vec::new();
        for entry in self.offering(|c| c.resources.is_some()) {
            match connection(host, entry)?
                .client()
                .list_all_resource_templates()
                .await
            {
                Ok(listed) => templates.extend(listed),
                Err(error) => listing_failed(&entry.connection, "resource templates", error),
            }
        }
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    /// Read a resource from the first upstream that has it; when none has, the first
    /// upstream's error.
    pub(crate) async fn read_resource(
        &self,
        host: &backchannel_host::Host<Switchboard>,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let mut first_error = None;
        for entry in self.offering(|c| c.resources.is_some()) {
            let connection = connection(host, entry)?;
            match connection.client().read_resource(request.clone()).await {
                Ok(mut result) => {
                    result.result_type = Some(ResultType::COMPLETE);
                    return Ok(result.into());
                }
                Err(error) => {
                    first_error.get_or_insert(upstream_error(&entry.connection, error));
                }
            }
        }
        Err(first_error.unwrap_or_else(|| {
            ErrorData::resource_not_found(
                "Resource not found",
                Some(serde_json::json!({ "uri": request.uri })),
            )
        }))
    }

    /// Subscribe to a resource's updates (2025-11-25 downstream): at the session upstreams
    /// that take subscriptions, the first time any downstream asks.
    pub(crate) async fn subscribe(
        &self,
        host: &backchannel_host::Host<Switchboard>,
        request: SubscribeRequestParams,
    ) -> Result<(), ErrorData> {
        let first = {
            let mut subscribed = lock(&self.subscribed);
            let count = subscribed.entry(request.uri.clone()).or_default();
            *count += 1;
            *count == 1
        };
        if first {
            for entry in self.subscribers() {
                let connection = connection(host, entry)?;
                if let Err(error) = connection.client().subscribe(request.clone()).await {
                    tracing::warn!(upstream = %entry.connection, uri = %request.uri, %error, "subscribing upstream failed");
                }
            }
        }
        Ok(())
    }

    /// Undo one [`Catalog::subscribe`]; the last one unsubscribes upstream.
    pub(crate) async fn unsubscribe(
        &self,
        host: &backchannel_host::Host<Switchboard>,
        request: UnsubscribeRequestParams,
    ) -> Result<(), ErrorData> {
        let last = {
            let mut subscribed = lock(&self.subscribed);
            match subscribed.get_mut(&request.uri) {
                Some(count) if *count > 1 => {
                    *count -= 1;
                    false
                }
                Some(_) => {
                    subscribed.remove(&request.uri);
                    true
                }
                None => false,
            }
        };
        if last {
            for entry in self.subscribers() {
                let connection = connection(host, entry)?;
                if let Err(error) = connection.client().unsubscribe(request.clone()).await {
                    tracing::warn!(upstream = %entry.connection, uri = %request.uri, %error, "unsubscribing upstream failed");
                }
            }
        }
        Ok(())
    }

    fn subscribers(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|entry| {
            entry.sessions
                && entry
                    .capabilities
                    .resources
                    .as_ref()
                    .is_some_and(|r| r.subscribe == Some(true))
        })
    }

    /// Complete an argument: of a prompt at its upstream, of a resource template at the first
    /// upstream that completes it.
    pub(crate) async fn complete(
        &self,
        host: &backchannel_host::Host<Switchboard>,
        mut request: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let completes = |c: &ServerCapabilities| c.completions.is_some();
        if let Reference::Prompt(prompt) = &mut request.r#ref {
            let name = prompt.name.clone();
            let Some((entry, upstream_name)) = self.by_prefix(&name, completes) else {
                return Err(ErrorData::invalid_params(
                    format!("no prompt is named {name:?}"),
                    None,
                ));
            };
            prompt.name = upstream_name.to_owned();
            return self.complete_at(host, entry, request).await;
        }
        let mut first_error = None;
        for entry in self.offering(completes) {
            match self.complete_at(host, entry, request.clone()).await {
                Ok(result) => return Ok(result),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        Err(first_error
            .unwrap_or_else(|| ErrorData::invalid_params("no upstream completes arguments", None)))
    }

    async fn complete_at(
        &self,
        host: &backchannel_host::Host<Switchboard>,
        entry: &Entry,
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let mut result = connection(host, entry)?
            .client()
            .complete(request)
            .await
            .map_err(|error| upstream_error(&entry.connection, error))?;
        result.result_type = Some(ResultType::COMPLETE);
        Ok(result)
    }
}

fn connection<'h>(
    host: &'h backchannel_host::Host<Switchboard>,
    entry: &Entry,
) -> Result<&'h Connection<Switchboard>, ErrorData> {
    host.connection(&entry.connection)
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))
}

/// One upstream's list failed: the others' are still listed.
fn listing_failed(connection: &str, what: &str, error: ServiceError) {
    tracing::warn!(upstream = %connection, %error, "listing the upstream's {what} failed; left out");
}
