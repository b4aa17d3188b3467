//! Traces with OpenTelemetry's names for MCP (semantic conventions, `gen-ai/mcp.md`): a span per
//! MCP request served over HTTP, named `{mcp.method.name} {target}` (`tools/call get_order`),
//! with `mcp.method.name`, `gen_ai.tool.name`, `jsonrpc.request.id`, `mcp.protocol.version`,
//! `mcp.session.id` and `error.type`; the client's trace continued from `params._meta`
//! (`traceparent`, `tracestate`); every round of a 2026-07-28 call in the trace of its first
//! round, whose context travels inside the sealed `requestState` (nothing is kept between
//! rounds), with the person's wait between two rounds a span of its own; a question sent on a
//! 2025-11-25 session a span around its wait.
//!
//! Nothing is made unless a program turned export on ([`export`], with the feature `otel`):
//! until then [`exporting`] is one relaxed load, and every function here returns at once.

use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::JsonObject;

/// The target of the spans made for export (the log's own filter leaves them out).
pub const TARGET: &str = "backchannel::telemetry";

/// The span of one MCP request served, its fields named and those filled later empty; the
/// fields after `protocol_version` say how it came (`network.transport` and the like).
macro_rules! server_span {
    ($protocol_version:expr, $($how:tt)*) => {
        tracing::info_span!(
            target: TARGET,
            "mcp",
            otel.name = tracing::field::Empty,
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            mcp.method.name = tracing::field::Empty,
            gen_ai.tool.name = tracing::field::Empty,
            gen_ai.prompt.name = tracing::field::Empty,
            mcp.resource.uri = tracing::field::Empty,
            jsonrpc.request.id = tracing::field::Empty,
            mcp.principal.kind = tracing::field::Empty,
            mcp.protocol.version = $protocol_version,
            error.type = tracing::field::Empty,
            $($how)*
        )
    };
}

static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Whether a span or event is one made for export (its target is this module's or ends in
/// `::telemetry`, as a server's own are: `orders::telemetry`); the log leaves them out.
pub fn is_exported(meta: &tracing::Metadata<'_>) -> bool {
    meta.target().ends_with("::telemetry")
}

/// Whether spans are being exported. A server's own spans (a store's statement, say) are
/// worth making only then: `if backchannel::telemetry::exporting() { … }`.
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP edge")
)]
/// The span of one MCP request at the HTTP edge, before its body is read (or a disabled span
/// when nothing is exported). Named and described by [`describe_request`] once the body is.
pub(crate) fn request_span(protocol_version: Option<&str>, session: Option<&str>) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    server_span!(
        protocol_version,
        mcp.session.id = session,
        network.transport = "tcp",
        network.protocol.name = "http",
    )
}

/// A request's span, kept in the HTTP request's extensions for the handler: rmcp serves some
/// requests from a task of its own, where the edge's span is not the current one.
#[derive(Debug, Clone)]
pub(crate) struct RequestSpan(pub(crate) tracing::Span);

/// The span a `tools/call` handler should run in: its HTTP request's (see [`RequestSpan`])
/// when it runs apart from it; none when it already runs in one (the edge's, or
/// [`Traced`](crate::serve::Traced)'s over stdio) or nothing is exported.
pub(crate) fn span_for_call(request: Option<&http::request::Parts>) -> tracing::Span {
    if !exporting() || !tracing::Span::current().is_none() {
        return tracing::Span::none();
    }
    request
        .and_then(|parts| parts.extensions.get::<RequestSpan>())
        .map_or_else(tracing::Span::none, |span| span.0.clone())
}

/// The span of one MCP message that came another way than over HTTP (stdio): described and
/// continued from its `_meta` at once, as [`describe_request`] does at the HTTP edge.
pub(crate) fn pipe_span(
    method: &str,
    target: Option<&str>,
    id: Option<&dyn std::fmt::Display>,
    protocol_version: Option<&str>,
    meta: Option<&JsonObject>,
) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    let span = server_span!(protocol_version, network.transport = "pipe",);
    describe(&span, method, target, id, meta);
    span
}

/// A per-layer filter by [`is_exported`], decided once per callsite: `exported` keeps only
/// the spans made for export (the exporter's layer), else everything but them (the log's).
#[cfg(feature = "logging")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExportedSpans {
    pub(crate) exported: bool,
}

#[cfg(feature = "logging")]
impl ExportedSpans {
    fn keeps(self, meta: &tracing::Metadata<'_>) -> bool {
        if self.exported {
            meta.is_span() && is_exported(meta)
        } else {
            !is_exported(meta)
        }
    }
}

#[cfg(feature = "logging")]
impl<S> tracing_subscriber::layer::Filter<S> for ExportedSpans {
    fn enabled(
        &self,
        meta: &tracing::Metadata<'_>,
        _: &tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        self.keeps(meta)
    }

    fn callsite_enabled(
        &self,
        meta: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if self.keeps(meta) {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }
}

#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP edge")
)]
/// Name the current request's span after its method and target, record its id, and continue
/// the trace its `_meta` names.
pub(crate) fn describe_request(
    method: &str,
    target: Option<&str>,
    id: Option<&dyn std::fmt::Display>,
    meta: Option<&JsonObject>,
) {
    if !exporting() {
        return;
    }
    describe(&tracing::Span::current(), method, target, id, meta);
}

fn describe(
    span: &tracing::Span,
    method: &str,
    target: Option<&str>,
    id: Option<&dyn std::fmt::Display>,
    meta: Option<&JsonObject>,
) {
    span.record("otel.name", span_name(method, target).as_str());
    span.record("mcp.method.name", method);
    if let Some(target) = target {
        let field = match method {
            "tools/call" => "gen_ai.tool.name",
            "prompts/get" => "gen_ai.prompt.name",
            _ => "mcp.resource.uri",
        };
        span.record(field, target);
    }
    if let Some(id) = id {
        span.record("jsonrpc.request.id", tracing::field::display(id));
    }
    #[cfg(feature = "otel")]
    if let Some(meta) = meta {
        otel::continue_from_meta(span, meta);
    }
    #[cfg(not(feature = "otel"))]
    let _ = meta;
}

/// A span's name in the conventions: `{mcp.method.name} {target}`, or the method alone.
fn span_name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    }
}

/// The current span's trace context as a W3C `traceparent`: what a call's state seals, and
/// what a host puts in a request's `_meta` for the server to continue. `None` unless spans
/// are exported and the current span is one of them.
pub fn current_traceparent() -> Option<String> {
    if !exporting() {
        return None;
    }
    #[cfg(feature = "otel")]
    return otel::traceparent_of(&tracing::Span::current());
    #[cfg(not(feature = "otel"))]
    None
}

/// A later round of a call: its span joins the trace of the call's first round (`traceparent`,
/// from the sealed state), and each question of the previous round gets a span from when it
/// went out until now, the person's wait (`asked`: the question's method, its key, and when
/// it went out in unix milliseconds).
pub(crate) fn continue_call(traceparent: &str, asked: &[(&str, &str, u64)]) {
    if !exporting() {
        return;
    }
    #[cfg(feature = "otel")]
    otel::continue_call(traceparent, asked);
    #[cfg(not(feature = "otel"))]
    let _ = (traceparent, asked);
}

/// A span around a request this program sends as a client (a host's `tools/call`), named as
/// the server names its own: `{method} {target}`. A disabled span unless spans are exported.
pub fn client_span(method: &str, target: Option<&str>, connection: &str) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        target: TARGET,
        "mcp client",
        otel.name = span_name(method, target),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = method,
        gen_ai.tool.name = tracing::field::Empty,
        server.address = connection,
        error.type = tracing::field::Empty,
    );
    if let (Some(target), "tools/call") = (target, method) {
        span.record("gen_ai.tool.name", target);
    }
    span
}

/// Record on `span` that what it covers failed (`error.type`, `_OTHER` when nothing more
/// precise is known, as the conventions say).
pub fn record_failure(span: &tracing::Span, error_type: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP edge")
)]
/// A span around a question sent to a 2025-11-25 client and its answer.
pub(crate) fn question_span(method: &str) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "question",
        otel.name = method,
        otel.kind = "client",
        mcp.method.name = method,
    )
}

/// The span of a task's body, in the trace of the call that started it (`traceparent`, kept
/// with the task), on whichever instance runs it.
pub(crate) fn task_span(tool: &str, task: &str, traceparent: Option<&str>) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    // A root in tracing's tree (a child would hold the request's span open for as long as the
    // body runs); its OpenTelemetry parent comes from the stored context.
    let span = tracing::info_span!(
        target: TARGET,
        parent: None,
        "task",
        otel.name = format!("task {tool}"),
        gen_ai.tool.name = tool,
        mcp.task.id = task,
    );
    #[cfg(feature = "otel")]
    if let Some(traceparent) = traceparent {
        otel::set_parent(&span, traceparent);
    }
    #[cfg(not(feature = "otel"))]
    let _ = traceparent;
    span
}

#[cfg(feature = "otel")]
pub use otel::{Export, ExportError, Exporter, export};

#[cfg(feature = "otel")]
mod otel {
    use std::collections::HashMap;
    use std::time::{Duration, SystemTime};

    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::{Span as _, SpanKind, TraceContextExt, Tracer, TracerProvider as _};
    use opentelemetry_sdk::metrics::SdkMeterProvider;
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use rmcp::model::JsonObject;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// Where and as what to export.
    #[derive(Debug, Clone)]
    #[non_exhaustive]
    pub struct Export {
        /// Where spans are posted: OTLP/HTTP's traces URL (`…/v1/traces`).
        pub endpoint: String,
        /// Where metrics are posted (`…/v1/metrics`), if they are exported.
        pub metrics_endpoint: Option<String>,
        /// `service.name` of every span and metric (`OTEL_SERVICE_NAME`).
        pub service_name: String,
        /// How long finished spans may wait to go out together (else `OTEL_BSP_SCHEDULE_DELAY`,
        /// else the SDK's 5 s).
        pub batch_delay: Option<Duration>,
        /// How often metrics go out (else `OTEL_METRIC_EXPORT_INTERVAL`, else the SDK's 60 s).
        pub metric_interval: Option<Duration>,
    }

    impl Export {
        /// Export spans to `endpoint` (the traces URL) as `service_name`; no metrics unless
        /// [`Export::with_metrics`] says where.
        pub fn new(endpoint: impl Into<String>, service_name: impl Into<String>) -> Export {
            Export {
                endpoint: endpoint.into(),
                metrics_endpoint: None,
                service_name: service_name.into(),
                batch_delay: None,
                metric_interval: None,
            }
        }

        /// Send finished spans at least this often.
        pub fn with_batch_delay(mut self, delay: Duration) -> Export {
            self.batch_delay = Some(delay);
            self
        }

        /// Export metrics too, to `endpoint` (the metrics URL).
        pub fn with_metrics(mut self, endpoint: impl Into<String>) -> Export {
            self.metrics_endpoint = Some(endpoint.into());
            self
        }

        /// Send metrics this often.
        pub fn with_metric_interval(mut self, interval: Duration) -> Export {
            self.metric_interval = Some(interval);
            self
        }

        /// Export as OpenTelemetry's standard variables say, read through `var`:
        /// `OTEL_EXPORTER_OTLP_ENDPOINT` (the base; unset, nothing is exported) or
        /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (the
        /// whole URL of each), `OTEL_METRICS_EXPORTER=none` for spans only,
        /// `OTEL_SERVICE_NAME` (else `service`), and `OTEL_SDK_DISABLED=true` to turn it off.
        pub fn from_vars(var: impl Fn(&str) -> Option<String>, service: &str) -> Option<Export> {
            if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
                return None;
            }
            let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
            let base = set("OTEL_EXPORTER_OTLP_ENDPOINT");
            let under = |path: &str| {
                base.as_ref()
                    .map(|base| format!("{}/{path}", base.trim_end_matches('/')))
            };
            let endpoint =
                set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| under("v1/traces"))?;
            let metrics_off = set("OTEL_METRICS_EXPORTER")
                .is_some_and(|exporter| exporter.trim().eq_ignore_ascii_case("none"));
            let metrics_endpoint = if metrics_off {
                None
            } else {
                set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").or_else(|| under("v1/metrics"))
            };
            let service_name = set("OTEL_SERVICE_NAME").unwrap_or_else(|| service.to_owned());
            Some(Export {
                metrics_endpoint,
                ..Export::new(endpoint, service_name)
            })
        }
    }

    /// Why export could not start.
    #[derive(Debug, thiserror::Error)]
    #[error("the OTLP exporter could not be made: {0}")]
    pub struct ExportError(String);

    /// Exports while held; dropping it sends what is still waiting and stops.
    #[must_use = "hold it for as long as the program runs"]
    #[derive(Debug)]
    pub struct Exporter {
        provider: SdkTracerProvider,
        meters: Option<SdkMeterProvider>,
    }

    impl Drop for Exporter {
        fn drop(&mut self) {
            crate::telemetry::EXPORTING.store(false, std::sync::atomic::Ordering::Relaxed);
            let _ = self.provider.force_flush();
            let _ = self.provider.shutdown();
            if let Some(meters) = self.meters.take() {
                crate::metrics::otel::stop();
                let _ = meters.force_flush();
                let _ = meters.shutdown();
            }
        }
    }

    /// Metrics every `interval` (else as the SDK's variables say) to `endpoint`.
    fn meter_provider(
        endpoint: &str,
        interval: Option<Duration>,
        resource: opentelemetry_sdk::Resource,
    ) -> Result<SdkMeterProvider, ExportError> {
        use opentelemetry_otlp::WithExportConfig;
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .build()
            .map_err(|error| ExportError(error.to_string()))?;
        let mut reader = opentelemetry_sdk::metrics::PeriodicReader::builder(exporter);
        if let Some(interval) = interval {
            reader = reader.with_interval(interval);
        }
        Ok(SdkMeterProvider::builder()
            .with_reader(reader.build())
            .with_resource(resource)
            .build())
    }

    /// Start exporting spans over OTLP/HTTP (protobuf, batched on a thread of the exporter's
    /// own; the standard `OTEL_BSP_*` variables tune the batches), and the metrics of
    /// [`crate::metrics`] when `export` says where (their histograms are kept from now on).
    /// Returns the layer to add to
    /// the program's subscriber (it takes the spans made for export and nothing else) and the
    /// guard that keeps export running.
    pub fn export<S>(
        export: &Export,
    ) -> Result<(impl tracing_subscriber::Layer<S> + 'static, Exporter), ExportError>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        use opentelemetry_otlp::WithExportConfig;
        use tracing_subscriber::Layer as _;
        let endpoint = export.endpoint.clone();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .build()
            .map_err(|error| ExportError(error.to_string()))?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(export.service_name.clone())
            .build();
        let mut batches = opentelemetry_sdk::trace::BatchConfigBuilder::default();
        if let Some(delay) = export.batch_delay {
            batches = batches.with_scheduled_delay(delay);
        }
        let batches = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter)
            .with_batch_config(batches.build())
            .build();
        let meters = match &export.metrics_endpoint {
            Some(endpoint) => Some(meter_provider(
                endpoint,
                export.metric_interval,
                resource.clone(),
            )?),
            None => None,
        };
        let provider = SdkTracerProvider::builder()
            .with_span_processor(batches)
            .with_resource(resource)
            .build();
        if let Some(meters) = &meters {
            use opentelemetry::metrics::MeterProvider as _;
            crate::metrics::otel::start(&meters.meter("backchannel"));
            crate::metrics::enable();
        }
        opentelemetry::global::set_tracer_provider(provider.clone());
        let tracer = provider.tracer("backchannel");
        // Without context activation a span starts when its first child does (or when it
        // ends), so a request's span can still take the parent its body names after it was
        // entered.
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_context_activation(false)
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_level(false)
            .with_filter(crate::telemetry::ExportedSpans { exported: true });
        crate::telemetry::EXPORTING.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok((layer, Exporter { provider, meters }))
    }

    /// `_meta`'s `traceparent` and `tracestate`, as a propagator reads them.
    struct Meta<'a>(&'a JsonObject);

    impl opentelemetry::propagation::Extractor for Meta<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|value| value.as_str())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }

    /// The context a carrier names, if it names a valid one.
    fn valid(context: opentelemetry::Context) -> Option<opentelemetry::Context> {
        context.span().span_context().is_valid().then_some(context)
    }

    fn context_of(traceparent: &str) -> Option<opentelemetry::Context> {
        let carrier: HashMap<String, String> =
            HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
        valid(TraceContextPropagator::new().extract(&carrier))
    }

    pub(super) fn continue_from_meta(span: &tracing::Span, meta: &JsonObject) {
        if !meta.contains_key("traceparent") {
            return;
        }
        if let Some(parent) = valid(TraceContextPropagator::new().extract(&Meta(meta))) {
            let _ = span.set_parent(parent);
        }
    }

    pub(super) fn traceparent_of(span: &tracing::Span) -> Option<String> {
        let context = span.context();
        if !context.span().span_context().is_valid() {
            return None;
        }
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&context, &mut carrier);
        carrier.remove("traceparent")
    }

    pub(super) fn set_parent(span: &tracing::Span, traceparent: &str) {
        if let Some(parent) = context_of(traceparent) {
            let _ = span.set_parent(parent);
        }
    }

    pub(super) fn continue_call(traceparent: &str, asked: &[(&str, &str, u64)]) {
        let Some(first) = context_of(traceparent) else {
            return;
        };
        let _ = tracing::Span::current().set_parent(first.clone());
        let tracer = opentelemetry::global::tracer("backchannel");
        let now = SystemTime::now();
        for (method, key, at) in asked {
            let start = SystemTime::UNIX_EPOCH + Duration::from_millis(*at);
            let mut span = tracer
                .span_builder(method.to_string())
                .with_kind(SpanKind::Client)
                .with_start_time(start.min(now))
                .with_attributes([
                    opentelemetry::KeyValue::new("mcp.method.name", method.to_string()),
                    opentelemetry::KeyValue::new("backchannel.question.key", key.to_string()),
                ])
                .start_with_context(&tracer, &first);
            span.end_with_timestamp(now);
        }
    }
}

#[cfg(all(test, feature = "otel"))]
mod tests {
    use crate::telemetry::Export;

    fn vars<'a>(set: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            set.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn the_standard_variables_say_whether_and_where_spans_go() {
        assert!(Export::from_vars(vars(&[]), "svc").is_none());
        assert!(Export::from_vars(vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]), "svc").is_none());
        let base = Export::from_vars(
            vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/")]),
            "svc",
        )
        .unwrap();
        assert_eq!(base.endpoint, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(
            base.metrics_endpoint.as_deref(),
            Some("http://127.0.0.1:4318/v1/metrics")
        );
        assert_eq!(base.service_name, "svc");
        let traces = Export::from_vars(
            vars(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/t"),
                ("OTEL_SERVICE_NAME", "desk"),
            ]),
            "svc",
        )
        .unwrap();
        assert_eq!(traces.endpoint, "http://127.0.0.1:9/t");
        assert_eq!(
            traces.metrics_endpoint.as_deref(),
            Some("http://127.0.0.1:4318/v1/metrics")
        );
        let spans_only = Export::from_vars(
            vars(&[
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/t"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_METRICS_EXPORTER", "none"),
            ]),
            "svc",
        )
        .unwrap();
        assert_eq!(spans_only.metrics_endpoint, None);
        let own_metrics = Export::from_vars(
            vars(&[
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/t"),
                (
                    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                    "http://127.0.0.1:9/m",
                ),
            ]),
            "svc",
        )
        .unwrap();
        assert_eq!(
            own_metrics.metrics_endpoint.as_deref(),
            Some("http://127.0.0.1:9/m")
        );
        assert_eq!(traces.service_name, "desk");
        let off = vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ]);
        assert!(Export::from_vars(off, "svc").is_none());
    }
}
