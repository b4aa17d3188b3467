//! The terminal front end: a line-editing prompt, a progress bar for long tools, and the order
//! service's questions asked at the terminal. Thin over the desk, like the web UI.

use std::io::Write;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::desk::Desk;
use crate::events::{Answer, Event};

/// The conversation id the terminal uses.
pub const CONVERSATION: &str = "cli";

/// Run the chat loop: `lines` are what the person types (None at end of input), `out` is the
/// terminal. Returns when the person types `quit`/`exit` or the input ends.
pub async fn run(
    desk: Arc<Desk>,
    mut lines: mpsc::Receiver<String>,
    mut out: impl Write + Send,
) -> std::io::Result<()> {
    let (secret, mut events) = desk.events().open(CONVERSATION);
    writeln!(
        out,
        "Support desk ready. {} Type 'quit' to exit.",
        crate::render::plain(&desk.greeting())
    )?;
    let (replies_tx, mut replies) = mpsc::channel::<String>(4);
    let mut question: Option<String> = None;
    let mut busy = false;
    loop {
        tokio::select! {
            // Events first: a long tool's last progress is queued before its reply, so the
            // bar is finished before the reply is printed.
            biased;
            Some(event) = events.recv() => match event {
                Event::Progress { percent } => {
                    let filled = (percent as usize * 30) / 100;
                    write!(out, "\r  [{}{}] {percent:>3}%", "#".repeat(filled), " ".repeat(30 - filled))?;
                    if percent >= 100 {
                        writeln!(out)?;
                    }
                    out.flush()?;
                }
                Event::Confirmation { id, message, seconds } | Event::Sampling { id, message, seconds } => {
                    writeln!(out, "\r{message}\nType 'yes' to confirm ({seconds} seconds):")?;
                    question = Some(id);
                }
                Event::Closed { id } => {
                    if question.as_deref() == Some(id.as_str()) {
                        question = None;
                        writeln!(out, "\rThe question closed without an answer; nothing was changed.")?;
                    }
                }
                Event::Log { level, message } => writeln!(out, "\r  {level} {message}")?,
                Event::Hello { .. } => {}
            },
            Some(reply) = replies.recv() => {
                busy = false;
                writeln!(out, "\rAgent: {}", crate::render::plain(&reply))?;
            }
            line = lines.recv() => {
                let Some(line) = line else { break };
                let line = line.trim().to_owned();
                if let Some(id) = question.take() {
                    let answer = if line.eq_ignore_ascii_case("yes") {
                        Answer::Yes { note: "confirmed at the command line".into() }
                    } else {
                        Answer::No
                    };
                    if desk.events().answer(&id, &secret, answer).is_err() {
                        writeln!(out, "Too late: the question had already closed.")?;
                    }
                    continue;
                }
                if line.is_empty() {
                    continue;
                }
                if line.eq_ignore_ascii_case("quit") || line.eq_ignore_ascii_case("exit") {
                    break;
                }
                if busy {
                    writeln!(out, "Still working on the last question; one at a time, please.")?;
                    continue;
                }
                busy = true;
                let desk = desk.clone();
                let replies = replies_tx.clone();
                tokio::spawn(async move {
                    let reply = desk.chat(CONVERSATION, &line, None).await;
                    let _ = replies.send(reply).await;
                });
            }
        }
        out.flush()?;
    }
    Ok(())
}

/// Read lines from the terminal with line editing, on a thread of their own.
pub fn terminal_lines() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(8);
    std::thread::spawn(move || {
        let Ok(mut editor) = rustyline::DefaultEditor::new() else {
            return;
        };
        while let Ok(line) = editor.readline("> ") {
            let _ = editor.add_history_entry(line.as_str());
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    rx
}
