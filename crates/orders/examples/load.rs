//! The load client of `scripts/bench` for the confirmed cancellation (not a test): many flows at
//! once over keep-alive HTTP/1.1 connections, each flow cancelling an order of its own and
//! answering the confirmation with yes, against any MCP server that serves `cancel_order`.
//!
//! ```text
//! load 2026 PORT SECONDS CONCURRENCY ORDERS_FILE   # the input_required round, then the retry
//! load 2025 PORT SECONDS CONCURRENCY ORDERS_FILE   # a session per flow; elicitation/create on
//!                                                  # the call's stream, answered by a POST
//! ```
//!
//! `ORDERS_FILE` holds one cancellable order ID per line; each flow takes the next. Prints one
//! JSON line: completed flows per second, failures, the flows' p50 and p99 in milliseconds, and
//! `ran_out_after_s`, when the orders ran out before the time was up (else `null`): a run that
//! ends early measures its start more than its steady state.
//! A Python client saturated its core near 4,700 flows/s here, below what the servers do; this
//! one spends a few microseconds per request, so the server is what is measured.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One keep-alive connection, reading responses (whole, or SSE events one by one).
struct Conn {
    port: u16,
    stream: Option<TcpStream>,
    buffer: Vec<u8>,
    /// Decoded body bytes of the chunked response being read (SSE).
    events: Vec<u8>,
    /// Bytes left in the current chunk, and whether the last chunk was read.
    chunk_left: usize,
    body_done: bool,
}

/// A response's head.
struct Head {
    status: u16,
    session: Option<String>,
    length: Option<usize>,
}

impl Conn {
    fn new(port: u16) -> Self {
        Self {
            port,
            stream: None,
            buffer: Vec::with_capacity(16 * 1024),
            events: Vec::new(),
            chunk_left: 0,
            body_done: true,
        }
    }

    async fn post(&mut self, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<Head> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(("127.0.0.1", self.port)).await?;
            stream.set_nodelay(true)?;
            self.stream = Some(stream);
            self.buffer.clear();
        }
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.port,
            body.len()
        )
        .into_bytes();
        for (name, value) in headers {
            request.extend_from_slice(name.as_bytes());
            request.extend_from_slice(b": ");
            request.extend_from_slice(value.as_bytes());
            request.extend_from_slice(b"\r\n");
        }
        request.extend_from_slice(b"\r\n");
        request.extend_from_slice(body);
        let stream = self.stream.as_mut().unwrap();
        stream.write_all(&request).await?;
        let head = self.head().await?;
        self.events.clear();
        self.chunk_left = 0;
        self.body_done = head.length.is_some();
        Ok(head)
    }

    async fn fill(&mut self) -> std::io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.as_mut().unwrap().read(&mut chunk).await?;
        if n == 0 {
            self.stream = None;
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    async fn head(&mut self) -> std::io::Result<Head> {
        let end = loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                break end;
            }
            self.fill().await?;
        };
        let text = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
        self.buffer.drain(..end + 4);
        let mut lines = text.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        let (mut session, mut length) = (None, None);
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("mcp-session-id") {
                session = Some(value.to_owned());
            } else if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().ok();
            } else if name.eq_ignore_ascii_case("transfer-encoding")
                && !value.eq_ignore_ascii_case("chunked")
            {
                return Err(std::io::ErrorKind::InvalidData.into());
            }
        }
        if status == 202 || status == 204 {
            length = Some(length.unwrap_or(0));
        }
        Ok(Head {
            status,
            session,
            length,
        })
    }

    /// The whole body of a response.
    async fn body(&mut self, head: &Head) -> std::io::Result<Vec<u8>> {
        let Some(length) = head.length else {
            // Chunked: JSON or an SSE stream, decoded whole.
            while !self.body_done {
                self.read_chunk().await?;
            }
            return Ok(std::mem::take(&mut self.events));
        };
        while self.buffer.len() < length {
            self.fill().await?;
        }
        Ok(self.buffer.drain(..length).collect())
    }

    /// The next `data:` payload of a chunked SSE body; `None` at its end.
    async fn next_data(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        loop {
            while let Some(end) = find(&self.events, b"\n\n") {
                let event: Vec<u8> = self.events.drain(..end + 2).collect();
                for line in event.split(|&b| b == b'\n') {
                    if let Some(data) = line.strip_prefix(b"data:") {
                        let data = data.trim_ascii();
                        if !data.is_empty() {
                            return Ok(Some(data.to_vec()));
                        }
                    }
                }
            }
            if self.body_done {
                return Ok(None);
            }
            self.read_chunk().await?;
        }
    }

    async fn read_chunk(&mut self) -> std::io::Result<()> {
        if self.chunk_left == 0 {
            let end = loop {
                if let Some(end) = find(&self.buffer, b"\r\n") {
                    break end;
                }
                self.fill().await?;
            };
            let size = std::str::from_utf8(&self.buffer[..end])
                .ok()
                .and_then(|text| usize::from_str_radix(text.trim(), 16).ok())
                .ok_or(std::io::ErrorKind::InvalidData)?;
            self.buffer.drain(..end + 2);
            if size == 0 {
                while self.buffer.len() < 2 {
                    self.fill().await?;
                }
                self.buffer.drain(..2);
                self.body_done = true;
                return Ok(());
            }
            self.chunk_left = size + 2;
        }
        if self.buffer.is_empty() {
            self.fill().await?;
        }
        let take = self.chunk_left.min(self.buffer.len());
        let data: Vec<u8> = self.buffer.drain(..take).collect();
        self.chunk_left -= take;
        // The chunk's trailing CRLF is not data.
        let keep = if self.chunk_left == 0 {
            data.len().saturating_sub(2)
        } else if self.chunk_left == 1 {
            data.len().saturating_sub(1)
        } else {
            data.len()
        };
        self.events.extend_from_slice(&data[..keep]);
        Ok(())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The JSON-RPC message answering request `id` in a body (JSON, or the SSE event that has it).
fn answer_in(body: &[u8], id: u64) -> Option<Value> {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        return Some(value);
    }
    body.split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data:"))
        .map(<[u8]>::trim_ascii)
        .filter_map(|data| serde_json::from_slice::<Value>(data).ok())
        .find(|message| message["id"] == id)
}

fn says_cancelled(answer: &Value) -> bool {
    answer["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|text| text.contains("is cancelled"))
}

const META_2026: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0"}}"#;

const HEADERS_2026: &[(&str, &str)] = &[
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "cancel_order"),
];

/// One 2026-07-28 confirmed cancellation: the round, then the retry with yes to every question.
async fn flow_2026(conn: &mut Conn, order: &str) -> std::io::Result<bool> {
    let meta: Value = serde_json::from_str(META_2026).unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "cancel_order", "arguments": {"orderId": order}, "_meta": meta}});
    let head = conn.post(HEADERS_2026, call.to_string().as_bytes()).await?;
    let body = conn.body(&head).await?;
    let Some(round) = answer_in(&body, 1).filter(|_| head.status == 200) else {
        return Ok(false);
    };
    let Some(asked) = round["result"]["inputRequests"].as_object() else {
        return Ok(false);
    };
    let yes: serde_json::Map<String, Value> = asked
        .keys()
        .map(|key| {
            (
                key.clone(),
                json!({"action": "accept", "content": {"confirmed": true}}),
            )
        })
        .collect();
    let mut params = json!({"name": "cancel_order", "arguments": {"orderId": order},
        "_meta": meta, "inputResponses": yes});
    if let Some(state) = round["result"].get("requestState") {
        params["requestState"] = state.clone();
    }
    let retry = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params});
    let head = conn
        .post(HEADERS_2026, retry.to_string().as_bytes())
        .await?;
    let body = conn.body(&head).await?;
    Ok(answer_in(&body, 2).is_some_and(|answer| says_cancelled(&answer)))
}

/// A 2025-11-25 session of one worker: the connection its calls stream on, one for answers.
struct Session {
    calls: Conn,
    answers: Conn,
    id: String,
    next: u64,
}

impl Session {
    async fn open(port: u16) -> std::io::Result<Session> {
        let mut calls = Conn::new(port);
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "bench", "version": "0"}}});
        let head = calls.post(&[], init.to_string().as_bytes()).await?;
        let id = head
            .session
            .clone()
            .ok_or(std::io::ErrorKind::InvalidData)?;
        calls.body(&head).await?;
        let headers = [
            ("Mcp-Session-Id", id.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let head = calls.post(&headers, note.to_string().as_bytes()).await?;
        calls.body(&head).await?;
        Ok(Session {
            calls,
            answers: Conn::new(port),
            id,
            next: 1,
        })
    }

    async fn flow(&mut self, order: &str) -> std::io::Result<bool> {
        self.next += 1;
        let call_id = self.next;
        let headers = [
            ("Mcp-Session-Id", self.id.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        let call = json!({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
            "params": {"name": "cancel_order", "arguments": {"orderId": order}}});
        let head = self
            .calls
            .post(&headers, call.to_string().as_bytes())
            .await?;
        if head.length.is_some() {
            self.calls.body(&head).await?;
            return Ok(false);
        }
        let mut cancelled = false;
        while let Some(data) = self.calls.next_data().await? {
            let message: Value = serde_json::from_slice(&data)?;
            if message["method"] == "elicitation/create" {
                let yes = json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"action": "accept", "content": {"confirmed": true}}});
                let head = self
                    .answers
                    .post(&headers, yes.to_string().as_bytes())
                    .await?;
                self.answers.body(&head).await?;
            } else if message["id"] == call_id {
                cancelled = says_cancelled(&message);
            }
        }
        Ok(cancelled)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [revision, port, seconds, concurrency, orders] = args.as_slice() else {
        eprintln!("usage: load 2026|2025 PORT SECONDS CONCURRENCY ORDERS_FILE");
        std::process::exit(2);
    };
    let port: u16 = port.parse().unwrap();
    let seconds: f64 = seconds.parse().unwrap();
    let concurrency: usize = concurrency.parse().unwrap();
    let orders: Arc<Vec<String>> = Arc::new(
        std::fs::read_to_string(orders)
            .unwrap()
            .lines()
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect(),
    );
    let next = Arc::new(AtomicUsize::new(0));
    // When the first flow found no order left (microseconds after the start, 0 if none did).
    let ran_out = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let modern = revision == "2026";
    let started = Instant::now();
    let workers = (0..concurrency).map(|_| {
        let (orders, next, ran_out) = (orders.clone(), next.clone(), ran_out.clone());
        tokio::spawn(async move {
            let (mut done, mut failed, mut times) = (0usize, 0usize, Vec::new());
            let mut conn = Conn::new(port);
            let mut session = None;
            while Instant::now() < deadline {
                let Some(order) = orders.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    let at = started.elapsed().as_micros().max(1) as u64;
                    let _ = ran_out.compare_exchange(0, at, Ordering::Relaxed, Ordering::Relaxed);
                    break;
                };
                let t0 = Instant::now();
                let ok = if modern {
                    flow_2026(&mut conn, order).await
                } else {
                    if session.is_none() {
                        session = Session::open(port).await.ok();
                    }
                    match session.as_mut() {
                        Some(session) => session.flow(order).await,
                        None => Ok(false),
                    }
                };
                match ok {
                    Ok(true) => {
                        done += 1;
                        times.push(t0.elapsed());
                    }
                    Ok(false) => failed += 1,
                    Err(_) => {
                        failed += 1;
                        conn = Conn::new(port);
                        session = None;
                    }
                }
            }
            (done, failed, times)
        })
    });
    let (mut done, mut failed, mut times) = (0, 0, Vec::new());
    for worker in futures::future::join_all(workers).await {
        let (d, f, t) = worker.unwrap();
        done += d;
        failed += f;
        times.extend(t);
    }
    let elapsed = started.elapsed().as_secs_f64();
    times.sort();
    let at = |p: f64| {
        times
            .get(((times.len() as f64 * p) as usize).min(times.len().saturating_sub(1)))
            .map_or(f64::NAN, |t| t.as_secs_f64() * 1000.0)
    };
    let ran_out = match ran_out.load(Ordering::Relaxed) {
        0 => None,
        micros => Some(micros as f64 / 1e6),
    };
    println!(
        "{}",
        json!({"flows_per_s": done as f64 / elapsed, "failed": failed,
            "p50_ms": at(0.5), "p90_ms": at(0.9), "p99_ms": at(0.99), "max_ms": at(1.0),
            "ran_out_after_s": ran_out})
    );
}
