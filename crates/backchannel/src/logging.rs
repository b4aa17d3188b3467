//! The log set-up our binaries share: quiet by default (the binary's own events and the
//! library's at INFO, every other crate at WARN, so rmcp's per-request lines stay out), `RUST_LOG`
//! to override, written to stderr by a background thread so a busy server never waits on its
//! log.

use std::io::IsTerminal;

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
    _worker: tracing_appender::non_blocking::WorkerGuard,
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
    )
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
    Ok(init_to(Box::new(file), false, filter))
}

fn init_to(out: Box<dyn std::io::Write + Send>, ansi: bool, default: String) -> Guard {
    let (writer, guard) = tracing_appender::non_blocking(out);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(ansi)
        .with_env_filter(filter)
        .try_init();
    Guard { _worker: guard }
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
