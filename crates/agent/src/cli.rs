//! The terminal front end: a line-editing prompt, a progress bar for long tools, and the order
//! service's questions asked at the terminal. Thin over the desk, like the web UI.
//!
//! On a real terminal the prompt stays put: everything the desk says is printed above it
//! (rustyline's external printer), so the progress bar is drawn as a line at each quarter
//! rather than redrawn in place. Logs never go to the chat screen (the binary writes them to a
//! file).

use std::io::Write;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::desk::Desk;
use crate::events::{Answer, Event, Field, InboxItem, Shown};

/// The conversation id the terminal uses.
pub const CONVERSATION: &str = crate::events::TERMINAL;

/// How the progress bar is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bar {
    /// Redrawn in place with `\r` on every step (a plain output stream).
    InPlace,
    /// A line at each quarter (a terminal whose prompt stays below the output).
    Quarters,
}

fn bar(percent: u32, note: &str) -> String {
    let filled = (percent.min(100) as usize * 30) / 100;
    format!(
        "  {note:<NOTE$.NOTE$} [{}{}] {percent:>3}%",
        "#".repeat(filled),
        " ".repeat(30 - filled)
    )
}

/// The width of the note before the bar (the server and its words): fixed, so a bar drawn
/// in place covers the one before.
const NOTE: usize = 28;

/// What the bar's note says: the server, and its words if any ("orders: 40 of 87").
fn note(server: &str, message: Option<&str>) -> String {
    match message {
        Some(message) => format!("{server}: {message}"),
        None => server.to_owned(),
    }
}

/// Run the chat loop: `lines` are what the person types (None at end of input), `out` is the
/// terminal. Returns when the person types `quit`/`exit` or the input ends.
pub async fn run(
    desk: Arc<Desk>,
    lines: mpsc::Receiver<String>,
    out: impl Write + Send,
) -> std::io::Result<()> {
    run_with(desk, lines, out, Bar::InPlace).await
}

/// What the terminal shows between lines typed: how far the bar was drawn, the question
/// waiting for an answer, whether a message is being worked on, the reply streamed so far.
struct Screen {
    /// The person's open questions, as last sent (every conversation of theirs).
    inbox: Vec<InboxItem>,
    style: Bar,
    shown_quarter: u32,
    question: Option<String>,
    /// The open question's form, when it is one.
    fields: Vec<Field>,
    busy: bool,
    streamed: String,
}

impl Screen {
    /// A screen showing nothing yet.
    fn new(style: Bar) -> Self {
        Screen {
            inbox: Vec::new(),
            style,
            shown_quarter: 0,
            question: None,
            fields: Vec::new(),
            busy: false,
            streamed: String::new(),
        }
    }

    /// Take `line` as the answer to the question shown, if one is and `line` answers it: true
    /// when the line went as an answer (or was refused as one); false when it is a message
    /// (said to be no answer first while a question waits).
    fn answer(
        &mut self,
        desk: &Desk,
        secret: &str,
        line: &str,
        out: &mut impl Write,
    ) -> std::io::Result<bool> {
        let Some(id) = self.question.clone() else {
            return Ok(false);
        };
        let Some(answer) = answer_of(line, &self.fields) else {
            let wanted = if self.fields.is_empty() {
                "yes or no"
            } else {
                "name=value answers, or no"
            };
            writeln!(
                out,
                "\rThat is not an answer: the question above waits for {wanted}."
            )?;
            return Ok(false);
        };
        match desk.events().answer(&id, secret, answer) {
            Ok(()) => self.question = None,
            Err(crate::events::AnswerError::Refused(why)) => {
                writeln!(out, "\r{why}: the question still waits.")?;
            }
            Err(_) => {
                self.question = None;
                writeln!(out, "Too late: the question had already closed.")?;
            }
        }
        Ok(true)
    }

    /// Show one event of the conversation.
    fn show(&mut self, event: Event, out: &mut impl Write) -> std::io::Result<()> {
        match event {
            Event::Progress {
                percent,
                server,
                message,
            } => self.progress(percent, &note(&server, message.as_deref()), out)?,
            question @ (Event::Confirmation { .. }
            | Event::Link { .. }
            | Event::Sampling { .. }) => {
                self.ask(question, out)?;
            }
            Event::Closed {
                id,
                answered_elsewhere,
                withdrawn,
            } => {
                if self.question.as_deref() == Some(id.as_str()) {
                    self.question = None;
                    let why = match (answered_elsewhere, withdrawn) {
                        (true, _) => "The question was answered in a page of yours.",
                        (false, true) => {
                            "The question was withdrawn: the call that asked it ended; nothing \
                             was changed."
                        }
                        (false, false) => {
                            "The question closed without an answer; nothing was changed."
                        }
                    };
                    writeln!(out, "\r{why}")?;
                }
            }
            Event::SignIn { server, url } => {
                writeln!(
                    out,
                    "\r{server} asks you to sign in. Open this address in a browser:\n  {url}"
                )?;
            }
            Event::SignInEnded { server, completed } => {
                if completed {
                    writeln!(out, "\rSigned in to {server}.")?;
                } else {
                    writeln!(out, "\rThe sign-in to {server} was not finished in time.")?;
                }
            }
            Event::Reply { text, .. } => {
                // The words as they come (the Markdown as the model writes it); the final
                // answer adds only what has not been printed.
                match text.strip_prefix(self.streamed.as_str()) {
                    Some(new) if !self.streamed.is_empty() => write!(out, "{new}")?,
                    _ => write!(out, "\rAgent: {text}")?,
                }
                out.flush()?;
                self.streamed = text;
            }
            // The chat's own answer prints the reply; the stream's copy is for a page.
            // A call's start, in the page's words; its result is the reply's to say.
            Event::Call {
                call, result: None, ..
            } => writeln!(out, "\r{} · {}", call.server, call.line())?,
            Event::Hello { .. } | Event::Done { .. } | Event::Call { .. } => {}
            Event::Said { text, .. } => writeln!(out, "\rAgent: {text}")?,
            Event::Log {
                server,
                level,
                text,
            } => writeln!(out, "\r{server} ({level}): {text}")?,
            Event::Inbox { questions } => {
                // Said once per question asked elsewhere (a page of the same person).
                for item in questions.iter().filter(|q| {
                    q.conversation != CONVERSATION && !self.inbox.iter().any(|o| o.id == q.id)
                }) {
                    writeln!(
                        out,
                        "\rIn your inbox, from {}: {} (/inbox lists it; /yes N or /no N answers)",
                        item.server, item.message
                    )?;
                }
                self.inbox = questions;
            }
        }
        Ok(())
    }

    /// Show a question and wait for its answer: a form field by field, a link with where it
    /// leads, a yes/no with the call that asks.
    fn ask(&mut self, question: Event, out: &mut impl Write) -> std::io::Result<()> {
        let Some(Shown {
            id,
            server,
            message,
            seconds: seconds_left,
            call,
        }) = question.question()
        else {
            return Ok(());
        };
        let fields = match &question {
            Event::Confirmation { fields, .. } => fields.clone(),
            _ => Vec::new(),
        };
        // The call that asks, so the person sees what a yes will do.
        let asking = call
            .as_ref()
            .map_or_else(String::new, |call| format!(" ({})", call.line()));
        let left = seconds(*seconds_left);
        if let Event::Link { url, origin, .. } = &question {
            writeln!(
                out,
                "\r{server}{asking} asks you to open a page at {origin}: {message}\n  {url}\n\
                 Type 'yes' once you have opened it in your browser, 'no' to refuse, or \
                 'cancel' ({left}):"
            )?;
        } else if fields.is_empty() {
            writeln!(
                out,
                "\r{server}{asking} asks: {message}\nType 'yes' to confirm or 'no' to refuse ({left}):"
            )?;
        } else {
            writeln!(out, "\r{server}{asking} asks: {message}")?;
            for field in &fields {
                writeln!(out, "  {}", field_line(field))?;
            }
            let example = fields
                .iter()
                .map(|f| format!("{}={}", f.name, f.options.first().map_or("…", |o| o)))
                .collect::<Vec<_>>()
                .join(" ");
            writeln!(
                out,
                "Type the answer as {example}, or 'no' to refuse ({left}):"
            )?;
        }
        self.question = Some(id.clone());
        self.fields = fields;
        Ok(())
    }

    /// The progress bar, drawn in place or a line per quarter.
    fn progress(&mut self, percent: u32, note: &str, out: &mut impl Write) -> std::io::Result<()> {
        match self.style {
            Bar::InPlace => {
                write!(out, "\r{}", bar(percent, note))?;
                if percent >= 100 {
                    writeln!(out)?;
                }
                out.flush()
            }
            Bar::Quarters => {
                let quarter = percent.min(100) / 25;
                if quarter > self.shown_quarter {
                    self.shown_quarter = quarter;
                    writeln!(out, "{}", bar(percent, note))?;
                }
                Ok(())
            }
        }
    }

    /// A message's final reply: only what the stream has not printed yet.
    fn reply(&mut self, reply: &str, out: &mut impl Write) -> std::io::Result<()> {
        self.busy = false;
        let printed = std::mem::take(&mut self.streamed);
        match reply.strip_prefix(printed.trim()) {
            Some(rest) if !printed.is_empty() => writeln!(out, "{rest}"),
            _ if !printed.is_empty() => writeln!(out, "\nAgent: {}", crate::render::plain(reply)),
            _ => writeln!(out, "\rAgent: {}", crate::render::plain(reply)),
        }
    }
}

/// The most messages kept to send once the one in flight (or the open question) is done.
const MAX_KEPT: usize = 8;

/// What a line typed while a question waits means: yes, no, cancel, or (for a form)
/// `name=value` pairs, each value read as its field's type.
fn answer_of(line: &str, fields: &[Field]) -> Option<Answer> {
    match line.to_ascii_lowercase().as_str() {
        "yes" | "y" if fields.is_empty() => {
            return Some(Answer::Yes {
                note: "confirmed at the command line".into(),
            });
        }
        "no" | "n" => return Some(Answer::No),
        "cancel" | "c" => return Some(Answer::Cancel),
        _ => {}
    }
    if fields.is_empty() || !line.contains('=') {
        return None;
    }
    let mut values = serde_json::Map::new();
    for pair in line.split_whitespace() {
        let (name, text) = pair.split_once('=')?;
        let kind = fields
            .iter()
            .find(|f| f.name == name)
            .map_or("string", |f| f.kind);
        let value = match kind {
            "boolean" => serde_json::Value::Bool(matches!(text, "yes" | "true" | "y")),
            "number" | "integer" => serde_json::from_str(text)
                .unwrap_or_else(|_| serde_json::Value::String(text.to_owned())),
            _ => serde_json::Value::String(text.to_owned()),
        };
        values.insert(name.to_owned(), value);
    }
    Some(Answer::Filled(values))
}

/// One field of a form as the terminal shows it: `Watch status (status): one of A, B; required`.
fn field_line(field: &Field) -> String {
    let wanted = match (field.kind, field.options.is_empty()) {
        ("string", false) => format!("one of {}", field.options.join(", ")),
        ("string", true) => "text".to_owned(),
        ("boolean", _) => "yes or no".to_owned(),
        (kind, _) => kind.to_owned(),
    };
    let about = field
        .description
        .as_deref()
        .map(|d| format!(" — {d}"))
        .unwrap_or_default();
    let required = if field.required { "; required" } else { "" };
    format!(
        "{} ({}): {wanted}{required}{about}",
        field.title, field.name
    )
}

/// Messages typed while the desk works on one (or a question waits), sent in turn after it.
struct Outbox {
    desk: Arc<Desk>,
    replies: mpsc::Sender<String>,
    kept: std::collections::VecDeque<String>,
}

impl Outbox {
    /// Send `line` now, or keep it for later when `busy` (saying so).
    fn send_or_keep(
        &mut self,
        screen: &mut Screen,
        line: String,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        if !screen.busy {
            self.send(screen, line);
            return Ok(());
        }
        if self.kept.len() >= MAX_KEPT {
            return writeln!(
                out,
                "\rStill working on earlier messages; {MAX_KEPT} are waiting already, so this one \
                 was not kept. Type it again once they are answered."
            );
        }
        self.kept.push_back(line);
        writeln!(
            out,
            "\rKept your message: it goes once the one before it is answered."
        )
    }

    /// The reply to the message in flight is in: send the next kept one, if any.
    fn next(&mut self, screen: &mut Screen) {
        if let Some(line) = self.kept.pop_front() {
            self.send(screen, line);
        }
    }

    fn send(&self, screen: &mut Screen, line: String) {
        screen.busy = true;
        screen.shown_quarter = 0;
        let desk = self.desk.clone();
        let replies = self.replies.clone();
        tokio::spawn(async move {
            let reply = desk.chat(CONVERSATION, &line, None).await;
            let _ = replies.send(reply).await;
        });
    }
}

/// "1 second", "30 seconds".
pub(crate) fn seconds(n: u64) -> String {
    if n == 1 {
        "1 second".to_owned()
    } else {
        format!("{n} seconds")
    }
}

/// `/inbox` (the person's open questions, numbered, one a line, their ages as they are now),
/// `/yes N` and `/no N` (answer one).
fn inbox_command(line: &str, desk: &Desk, out: &mut impl Write) -> std::io::Result<()> {
    let mut words = line.split_whitespace();
    let command = words.next().unwrap_or_default();
    // Read now, not from the last list the stream sent: the ages move.
    let owner = desk.events().owner_for(CONVERSATION);
    let inbox = desk.events().inbox(&owner);
    if command == "/inbox" {
        if inbox.is_empty() {
            return writeln!(
                out,
                "\rYour inbox is empty: no question is waiting for you."
            );
        }
        for (number, item) in inbox.iter().enumerate() {
            let asking = item
                .call
                .as_ref()
                .map(|call| format!(" ({})", call.line()))
                .unwrap_or_default();
            // One question a line, whatever line breaks its words hold.
            let message = item
                .message
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            writeln!(
                out,
                "\r{}. {}{asking} asks: {message} (asked {} ago, {} left)",
                number + 1,
                item.server,
                seconds(item.waited_seconds),
                seconds(item.seconds_left),
            )?;
        }
        return writeln!(out, "\rAnswer with /yes N or /no N.");
    }
    let answer = match command {
        "/yes" => Answer::Yes {
            note: "confirmed at the command line".into(),
        },
        "/no" => Answer::No,
        _ => {
            return writeln!(
                out,
                "Commands: /inbox, /yes N, /no N, /tools, /call TOOL {{json}}, /folders \
                 [add|remove PATH], quit."
            );
        }
    };
    let item = words
        .next()
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| n.checked_sub(1))
        .and_then(|n| inbox.get(n));
    let Some(item) = item else {
        return writeln!(out, "No question has that number: /inbox lists them.");
    };
    match desk.events().answer_for(&item.id, &owner, answer) {
        Ok(()) => writeln!(out, "Answered: {}", item.message),
        Err(_) => writeln!(out, "Too late: that question had already closed."),
    }
}

/// `/tools` (every server's tools, one a line) and `/call TOOL {json}` (call one by hand, without
/// the model: its questions and progress shown as a model's call's are), said through `said`.
async fn by_hand_command(line: String, desk: Arc<Desk>, said: mpsc::Sender<String>) {
    let text = if let Some(rest) = line.strip_prefix("/folders") {
        folders_command(rest.trim(), &desk).await
    } else if line == "/tools" {
        match desk.tools_by_hand().await {
            Ok(tools) => tools
                .iter()
                .map(|t| format!("{} · {}: {}", t.server, t.name, t.description))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(why) => format!("The tools could not be listed: {why}"),
        }
    } else {
        let rest = line.trim_start_matches("/call").trim();
        let (name, arguments) = rest.split_once(char::is_whitespace).unwrap_or((rest, "{}"));
        match serde_json::from_str::<serde_json::Value>(arguments.trim()) {
            Err(error) => {
                format!("The arguments are not JSON ({error}): /call TOOL {{\"key\": \"value\"}}")
            }
            Ok(arguments) => match desk.call_by_hand(CONVERSATION, name, arguments).await {
                Ok(called) if called.is_error => format!("{name} failed: {}", called.text),
                Ok(called) => format!("{name} returned: {}", called.text),
                Err(why) => format!("{name} was not called: {why}"),
            },
        }
    };
    let _ = said.send(text).await;
}

/// `/folders` (the folders of notes), `/folders add PATH`, `/folders remove PATH`.
async fn folders_command(rest: &str, desk: &Desk) -> String {
    let (action, path) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let path = std::path::Path::new(path.trim());
    let changed = match action {
        "" => Ok(true),
        "add" => desk.add_notes_folder(path).await,
        "remove" => desk.remove_notes_folder(path).await,
        _ => return "Use /folders, /folders add PATH or /folders remove PATH.".into(),
    };
    match (changed, desk.notes_folders().await) {
        (Err(why), _) | (_, Err(why)) => format!("The folders of notes did not change: {why}"),
        (Ok(changed), Ok(folders)) => {
            let listed: Vec<String> = folders.iter().map(|f| f.display().to_string()).collect();
            let was = match (action, changed) {
                ("add", false) => "It was one already. ",
                ("remove", false) => "It was not one. ",
                _ => "",
            };
            format!("{was}The notes are read from: {}", listed.join(", "))
        }
    }
}

/// [`run`], drawing the progress bar as `style` says.
pub async fn run_with(
    desk: Arc<Desk>,
    mut lines: mpsc::Receiver<String>,
    mut out: impl Write + Send,
    style: Bar,
) -> std::io::Result<()> {
    let (secret, mut events) = desk.events().open(CONVERSATION);
    writeln!(
        out,
        "Support desk starting: connecting to the order service at {}…",
        desk.orders_url()
    )?;
    // The connection is waited for beside the loop: it may need the person to sign in, and
    // the sign-in link is one of the events the loop shows.
    let (connected_tx, mut connected) = mpsc::channel(1);
    tokio::spawn({
        let desk = desk.clone();
        async move {
            let _ = connected_tx.send(desk.connected().await).await;
        }
    });
    let (replies_tx, mut replies) = mpsc::channel::<String>(4);
    // What a tool called by hand (`/call`) or `/tools` says, printed as it comes.
    let (by_hand_tx, mut by_hand) = mpsc::channel::<String>(4);
    let mut screen = Screen::new(style);
    let mut outbox = Outbox {
        desk: desk.clone(),
        replies: replies_tx,
        kept: Default::default(),
    };
    loop {
        tokio::select! {
            // Events first: a long tool's last progress is queued before its reply, so the
            // bar is finished before the reply is printed.
            biased;
            Some(event) = events.recv() => screen.show(event, &mut out)?,
            Some(reply) = replies.recv() => {
                screen.reply(&reply, &mut out)?;
                outbox.next(&mut screen);
            }
            Some(said) = by_hand.recv() => writeln!(out, "\r{said}")?,
            Some(result) = connected.recv() => match result {
                Ok(()) => writeln!(
                    out,
                    "Support desk ready. {} Type 'quit' to exit.",
                    crate::render::plain(&desk.greeting())
                )?,
                Err(why) => writeln!(out, "{why} Type 'quit' to exit.")?,
            },
            line = lines.recv() => {
                let Some(line) = line else { break };
                let line = line.trim().to_owned();
                if line.is_empty() {
                    continue;
                }
                if line.eq_ignore_ascii_case("quit") || line.eq_ignore_ascii_case("exit") {
                    break;
                }
                if line == "/tools" || line.starts_with("/call ") || line.starts_with("/folders") {
                    tokio::spawn(by_hand_command(line, desk.clone(), by_hand_tx.clone()));
                    continue;
                }
                if line.starts_with('/') {
                    inbox_command(&line, &desk, &mut out)?;
                    continue;
                }
                if !screen.answer(&desk, &secret, &line, &mut out)? {
                    outbox.send_or_keep(&mut screen, line, &mut out)?;
                }
            }
        }
        out.flush()?;
    }
    Ok(())
}

/// Output printed above rustyline's prompt, a line at a time, so the prompt and what the
/// person is typing stay intact.
pub struct AbovePrompt {
    printer: Box<dyn FnMut(String) + Send>,
    pending: Vec<u8>,
}

impl std::fmt::Debug for AbovePrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AbovePrompt").finish_non_exhaustive()
    }
}

impl Write for AbovePrompt {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..end]).replace('\r', "");
            (self.printer)(text);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Read lines from the terminal with line editing, on a thread of their own; returns them
/// and a writer that prints above the prompt (`None` when the terminal cannot do that, or
/// input is not a terminal: then write to stdout).
pub fn terminal_lines() -> (mpsc::Receiver<String>, Option<AbovePrompt>) {
    use rustyline::ExternalPrinter as _;
    let (tx, rx) = mpsc::channel(8);
    let (printer_tx, printer_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok(mut editor) = rustyline::DefaultEditor::new() else {
            let _ = printer_tx.send(None);
            return;
        };
        let printer = editor.create_external_printer().ok().map(|mut printer| {
            Box::new(move |line: String| {
                let _ = printer.print(line);
            }) as Box<dyn FnMut(String) + Send>
        });
        let _ = printer_tx.send(printer);
        while let Ok(line) = editor.readline("> ") {
            let _ = editor.add_history_entry(line.as_str());
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    let printer = printer_rx.recv().ok().flatten().map(|printer| AbovePrompt {
        printer,
        pending: Vec::new(),
    });
    (rx, printer)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::answer_of;
    use crate::events::{Answer, form};

    /// Issue 72: at the terminal a form is answered `name=value`, each value read as its
    /// field's type; a link or a yes/no question takes yes, no and cancel.
    #[test]
    fn a_line_answers_a_form_by_its_fields_and_a_question_by_yes_no_or_cancel() {
        let schema = json!({"type": "object", "properties": {
            "status": {"type": "string", "enum": ["WANT_TO_WATCH", "WATCHED"]},
            "stars": {"type": "integer"}, "seen": {"type": "boolean"}}});
        let fields = form::fields(&schema).unwrap();
        let Some(Answer::Filled(values)) = answer_of("status=WATCHED stars=4 seen=yes", &fields)
        else {
            panic!("not a form's answer");
        };
        assert_eq!(
            serde_json::Value::Object(values),
            json!({"status": "WATCHED", "stars": 4, "seen": true})
        );
        assert_eq!(
            answer_of("yes", &fields),
            None,
            "a form is not answered yes"
        );
        assert_eq!(answer_of("no", &fields), Some(Answer::No));
        assert_eq!(answer_of("cancel", &[]), Some(Answer::Cancel));
        assert!(matches!(answer_of("y", &[]), Some(Answer::Yes { .. })));
        assert_eq!(answer_of("maybe", &[]), None);
    }
}
