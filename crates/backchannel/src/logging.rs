//! The log set-up our binaries share: quiet by default (the binary's own events and the
//! library's at INFO, every other crate at WARN, so rmcp's per-request lines stay out), `RUST_LOG`
//! to override, written to stderr by a background thread so a busy server never waits on its
//! log. The thread writes in batches: a line lands in a shared buffer (no wake-up, no system
//! call), and the thread writes what has gathered every [`FLUSH_EVERY`], or at once when
//! [`FLUSH_AT`] bytes are waiting. A server writing an audit line per call pays for the line,
//! not for a thread switch per line.

use std::io::IsTerminal;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long a line may wait before it is written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// Waiting bytes that get written at once, without waiting for [`FLUSH_EVERY`].
pub const FLUSH_AT: usize = 64 * 1024;

/// The most bytes kept waiting; lines beyond it are dropped (and counted) rather than let a
/// stalled output grow the server's memory.
const MAX_WAITING: usize = 16 * 1024 * 1024;

/// The default filter: WARN, and INFO for `backchannel` and each of `ours`.
pub fn default_filter(ours: &[&str]) -> String {
    let mut filter = String::from("warn,backchannel=info");
    for target in ours {
        filter.push(',');
        filter.push_str(target);
        filter.push_str("=info");
    }
    filter
}

/// Keeps the background writer running; logs written before it drops are flushed.
#[must_use = "hold the guard for as long as the program logs"]
#[derive(Debug)]
pub struct Guard {
    shared: Arc<Shared>,
    worker: Option<std::thread::JoinHandle<()>>,
    /// Exports spans while held (feature `otel`, when asked for).
    #[cfg(feature = "otel")]
    exporter: Option<crate::telemetry::Exporter>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Spans still waiting go out first, while their errors can still be logged.
        #[cfg(feature = "otel")]
        drop(self.exporter.take());
        self.shared.lock().closing = true;
        self.shared.wake.notify_one();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// What the program's threads and the writer thread share.
#[derive(Debug, Default)]
struct Shared {
    state: Mutex<Waiting>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct Waiting {
    bytes: Vec<u8>,
    dropped: u64,
    closing: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The writer each log line is written through: appends to the shared buffer.
#[derive(Debug, Clone)]
struct Batched(Arc<Shared>);

impl std::io::Write for Batched {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let mut waiting = self.0.lock();
        if waiting.bytes.len() + line.len() > MAX_WAITING {
            waiting.dropped += 1;
            return Ok(line.len());
        }
        waiting.bytes.extend_from_slice(line);
        if waiting.bytes.len() >= FLUSH_AT {
            self.0.wake.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Batched {
    type Writer = Batched;
    fn make_writer(&'a self) -> Batched {
        self.clone()
    }
}

/// Start the writer thread over `out`.
fn batched(mut out: Box<dyn std::io::Write + Send>) -> (Batched, Guard) {
    use std::io::Write as _;
    let shared = Arc::new(Shared::default());
    let theirs = shared.clone();
    let worker = std::thread::Builder::new()
        .name("log-writer".into())
        .spawn(move || {
            let mut spare = Vec::new();
            loop {
                let (closing, dropped) = {
                    let mut waiting = theirs.lock();
                    if !waiting.closing && waiting.bytes.len() < FLUSH_AT {
                        waiting = theirs
                            .wake
                            .wait_timeout(waiting, FLUSH_EVERY)
                            .map(|(guard, _)| guard)
                            .unwrap_or_else(|e| e.into_inner().0);
                    }
                    std::mem::swap(&mut waiting.bytes, &mut spare);
                    (waiting.closing, std::mem::take(&mut waiting.dropped))
                };
                if dropped > 0 {
                    let _ = writeln!(
                        out,
                        "({dropped} log lines dropped: the log output could not keep up)"
                    );
                }
                if !spare.is_empty() {
                    let _ = out.write_all(&spare);
                    let _ = out.flush();
                    spare.clear();
                }
                if closing {
                    return;
                }
            }
        });
    let worker = match worker {
        Ok(worker) => Some(worker),
        Err(error) => {
            // Without a thread nothing would ever be written: say so once, where it shows.
            eprintln!("cannot start the log writer thread: {error}");
            None
        }
    };
    (
        Batched(shared.clone()),
        Guard {
            shared,
            worker,
            #[cfg(feature = "otel")]
            exporter: None,
        },
    )
}

/// A filter by verbosity, for programs whose screen is not for logs: 0 warnings only, 1 also
/// our INFO events ([`default_filter`]), 2 our DEBUG events, 3 or more everything at DEBUG.
pub fn verbosity_filter(ours: &[&str], verbose: u8) -> String {
    match verbose {
        0 => "warn".into(),
        1 => default_filter(ours),
        2 => default_filter(ours).replace("=info", "=debug"),
        _ => "debug".into(),
    }
}

/// Log to stderr with [`default_filter`] unless `RUST_LOG` says otherwise.
pub fn init(ours: &[&str]) -> Guard {
    init_to(
        Box::new(std::io::stderr()),
        std::io::stderr().is_terminal(),
        default_filter(ours),
        None,
    )
}

/// [`init`], and the spans made for export sent over OTLP to `export` when it is given (a
/// program reads the standard `OTEL_EXPORTER_OTLP_ENDPOINT` and `OTEL_SERVICE_NAME`). Export
/// that cannot start is logged and left off.
#[cfg(feature = "otel")]
pub fn init_with(ours: &[&str], export: Option<&crate::telemetry::Export>) -> Guard {
    init_to(
        Box::new(std::io::stderr()),
        std::io::stderr().is_terminal(),
        default_filter(ours),
        export,
    )
}

/// A server binary's logging: [`init_with`] for `ours`, exporting as OpenTelemetry's standard
/// variables read through `var` say ([`crate::telemetry::Export::from_vars`], `service` the
/// name unless `OTEL_SERVICE_NAME` gives one); then `scheduler` says in the log how tasks run.
#[cfg(feature = "otel")]
pub fn init_server(
    service: &str,
    ours: &[&str],
    var: impl Fn(&str) -> Option<String>,
    scheduler: crate::serve::Scheduler,
) -> Guard {
    let export = crate::telemetry::Export::from_vars(var, service);
    let guard = init_with(ours, export.as_ref());
    scheduler.log();
    guard
}

/// Log to the file `path` (appended to, created if missing) with `filter` unless `RUST_LOG`
/// says otherwise: for a program that owns the terminal, such as a chat prompt.
pub fn init_file(path: &std::path::Path, filter: String) -> std::io::Result<Guard> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    Ok(init_to(Box::new(file), false, filter, None))
}

#[cfg(feature = "otel")]
type Export<'a> = Option<&'a crate::telemetry::Export>;
#[cfg(not(feature = "otel"))]
type Export<'a> = Option<std::convert::Infallible>;

fn init_to(
    out: Box<dyn std::io::Write + Send>,
    ansi: bool,
    default: String,
    export: Export<'_>,
) -> Guard {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    #[cfg_attr(not(feature = "otel"), allow(unused_mut))]
    let (writer, mut guard) = batched(out);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // The spans made for export are not log lines, whatever `RUST_LOG` says; their callsites
    // are off for the log once and for all (no check per span).
    let not_exported = crate::telemetry::ExportedSpans { exported: false };
    let log = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(ansi)
        .with_filter(tracing_subscriber::filter::FilterExt::and(
            tracing_subscriber::filter::FilterExt::and(filter, not_exported),
            PeerLeft,
        ));
    #[cfg(feature = "otel")]
    let (spans, failed) = match export.map(crate::telemetry::export) {
        Some(Ok((spans, exporter))) => {
            guard.exporter = Some(exporter);
            (Some(spans), None)
        }
        Some(Err(error)) => (None, Some(error)),
        None => (None, None),
    };
    #[cfg(not(feature = "otel"))]
    let spans: Option<tracing_subscriber::layer::Identity> = export.map(|never| match never {});
    let exporting = spans.is_some();
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(spans)
        .try_init();
    #[cfg(feature = "otel")]
    match (export, failed) {
        (_, Some(error)) => tracing::warn!(%error, "spans are not exported"),
        (Some(export), None) if exporting => tracing::info!(
            endpoint = %export.endpoint,
            metrics = export.metrics_endpoint.as_deref().unwrap_or("off"),
            service = %export.service_name,
            "exporting spans and metrics over OTLP"
        ),
        _ => {}
    }
    #[cfg(not(feature = "otel"))]
    let _ = exporting;
    guard
}

/// What rmcp says at ERROR when a client left while a response to it was on its way (a page
/// closed, a desk stopped): the response has no one to go to, which is no error of the server's.
const PEER_LEFT: [&str; 2] = [
    "failed to send pending response during drain",
    "fail to response message",
];

/// Drops rmcp's [`PEER_LEFT`] lines when the channel they name was closed: the log stays quiet
/// when a client leaves, and every other rmcp error still shows.
#[derive(Debug, Clone, Copy)]
struct PeerLeft;

impl<S> tracing_subscriber::layer::Filter<S> for PeerLeft {
    fn enabled(
        &self,
        _: &tracing::Metadata<'_>,
        _: &tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        true
    }

    fn event_enabled(
        &self,
        event: &tracing::Event<'_>,
        _: &tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        let meta = event.metadata();
        if *meta.level() != tracing::Level::ERROR || !meta.target().starts_with("rmcp::service") {
            return true;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        !(PEER_LEFT.contains(&fields.message.as_str()) && fields.error.contains("channel closed"))
    }
}

/// An event's `message` and `error`, as text.
#[derive(Default)]
struct Fields {
    message: String,
    error: String,
}

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "error" => self.error = format!("{value:?}"),
            _ => {}
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_owned(),
            "error" => self.error = value.to_owned(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn batched_lines_come_out_whole_and_in_order_by_the_time_the_guard_drops() {
        use std::io::Write as _;
        let sink = Captured::default();
        let (writer, guard) = batched(Box::new(sink.clone()));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mut writer = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..500 {
                        writer
                            .write_all(format!("thread {t} line {i}\n").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        drop(guard);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 2000);
        for t in 0..4 {
            let mine: Vec<usize> = text
                .lines()
                .filter_map(|line| line.strip_prefix(&format!("thread {t} line ")))
                .map(|n| n.parse().unwrap())
                .collect();
            assert_eq!(mine, (0..500).collect::<Vec<_>>(), "thread {t}");
        }
    }

    #[test]
    fn a_client_that_left_is_no_error_but_other_rmcp_errors_show() {
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || writer.clone())
                .with_filter(PeerLeft),
        );
        tracing::subscriber::with_default(subscriber, || {
            let error = "channel closed";
            tracing::error!(target: "rmcp::service", %error, "failed to send pending response during drain");
            tracing::error!(target: "rmcp::service", %error, "fail to response message");
            let error = "broken pipe";
            tracing::error!(target: "rmcp::service", %error, "fail to response message");
            tracing::error!(target: "rmcp::service", "response send task failed during drain");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("during drain error"), "{text}");
        assert!(!text.contains("channel closed"), "{text}");
        assert!(text.contains("broken pipe"), "{text}");
        assert!(text.contains("response send task failed"), "{text}");
    }

    #[test]
    fn the_default_drops_rmcp_per_request_lines_and_keeps_ours() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_env_filter(tracing_subscriber::EnvFilter::new(default_filter(&[
                "orders",
            ])))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "rmcp::service", "serve finished");
            tracing::info!(target: "rmcp::transport::streamable_http_server", "input stream terminated");
            tracing::info!(target: "orders::mcp", "get_order ORD-10001 requested by desk");
            tracing::warn!(target: "rmcp::service", "a warning still shows");
            tracing::debug!(target: "orders::mcp", "debug stays out");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(
            !text.contains("serve finished") && !text.contains("input stream"),
            "{text}"
        );
        assert!(text.contains("requested by desk"), "{text}");
        assert!(text.contains("a warning still shows"), "{text}");
        assert!(!text.contains("debug stays out"), "{text}");
    }
}
