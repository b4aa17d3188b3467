//! The terminal front end against the real order service: a question answered at the prompt,
//! and the progress bar of three long tools in a row.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::desk::{Desk, DeskConfig};
use backchannel::Revision;
use tokio_util::sync::CancellationToken;

/// The terminal: what was written, and a bell rung on every write.
#[derive(Clone, Default)]
struct Screen(Arc<Mutex<Vec<u8>>>, Arc<tokio::sync::Notify>);

impl Write for Screen {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        self.1.notify_waiters();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Screen {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Wait (at most 10 s) until the screen shows `needle`, woken by each write.
    async fn shows(&self, needle: &str) {
        let wait = async {
            loop {
                let written = self.1.notified();
                if self.text().contains(needle) {
                    return;
                }
                written.await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .is_err()
        {
            panic!("the screen never showed {needle:?}:\n{}", self.text());
        }
    }
}

/// The order service on a free loopback port (SQLite in memory, this carrier latency), until
/// `stop`: its MCP endpoint.
async fn orders_at(stop: &CancellationToken, carrier_latency: Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let config = crate::common::orders_in_memory(carrier_latency);
    let shutdown = stop.clone();
    tokio::spawn(async move { orders::app::serve_http(listener, &config, shutdown).await });
    url
}

/// The order service's own carrier latency.
fn default_carrier() -> Duration {
    orders::service::ServiceConfig::default().carrier_latency
}

/// The terminal over `desk`: where the person types, the screen, and the chat loop.
fn terminal(
    desk: Arc<Desk>,
) -> (
    tokio::sync::mpsc::Sender<String>,
    Screen,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let (lines, input) = tokio::sync::mpsc::channel(8);
    let screen = Screen::default();
    let cli = tokio::spawn(agent::cli::run(desk, input, screen.clone()));
    (lines, screen, cli)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class12_try_it_a_question_is_answered_at_the_prompt_and_progress_is_drawn() {
    let stop = CancellationToken::new();
    let orders_url = orders_at(&stop, Duration::ZERO).await;
    let desk = Desk::start(DeskConfig {
        orders_url,
        protocol: Some(Revision::V2025_11_25),
        ..DeskConfig::default()
    })
    .await
    .unwrap();
    let (lines, screen, cli) = terminal(Arc::new(desk));
    screen.shows("Support desk ready.").await;
    // The greeting says how the desk answers.
    screen.shows("No language model is configured").await;

    lines.send("cancel ORD-10002".into()).await.unwrap();
    // As docs/lessons.md shows it: the server, the call that asks, the question.
    screen
        .shows(
            "orders (cancel_order(orderId: \"ORD-10002\")) asks: Cancel order ORD-10002 for \
             Marcus Adeyemi? The total is €34.99 and a refund will be started.",
        )
        .await;
    screen.shows("Type 'yes' to confirm").await;
    assert!(
        screen
            .text()
            .contains("Cancel order ORD-10002 for Marcus Adeyemi?")
    );
    lines.send("yes".into()).await.unwrap();
    screen
        .shows("Order ORD-10002 is cancelled and a refund of €34.99 has been started.")
        .await;

    // Three long tools in one conversation: each draws its bar to 100 %, values only going
    // up, and the bar is finished before the reply is printed.
    let before = screen.text().len();
    for round in 1..=3 {
        lines.send("recheck shipments".into()).await.unwrap();
        let wanted = "Rechecked 87 shipments, ";
        let shown = async {
            loop {
                let written = screen.1.notified();
                if screen.text()[before..].matches(wanted).count() >= round {
                    return;
                }
                written.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), shown)
            .await
            .unwrap_or_else(|_| panic!("refresh {round} never replied:\n{}", screen.text()));
    }
    let text = screen.text()[before..].to_owned();
    let replies: Vec<&str> = text.split("Agent: ").collect();
    assert_eq!(replies.len(), 4, "{text}");
    for (round, bar) in replies[..3].iter().enumerate() {
        let percents: Vec<u32> = bar
            .split('\r')
            .filter_map(|draw| draw.trim().strip_suffix('%'))
            .filter_map(|draw| draw.rsplit(' ').next()?.parse().ok())
            .collect();
        assert!(percents.len() > 1, "refresh {}: {bar:?}", round + 1);
        assert!(
            percents.windows(2).all(|w| w[0] < w[1]),
            "refresh {}: {percents:?}",
            round + 1
        );
        assert_eq!(
            percents.last(),
            Some(&100),
            "refresh {}: {bar:?}",
            round + 1
        );
        // The bar names the server and carries its words for where it is.
        assert!(
            bar.contains(": 87 of 87 "),
            "refresh {}: {bar:?}",
            round + 1
        );
    }

    lines.send("quit".into()).await.unwrap();
    cli.await.unwrap().unwrap();
    stop.cancel();
}

/// The real binary in a pseudo-terminal against a real order service: no log line on the chat
/// screen at the default level while a recheck runs, the prompt back after every answer, and a
/// question that expires giving the prompt back so the next question is asked and answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_terminal_the_prompt_stays_and_an_expired_question_gives_the_line_back() {
    let stop = CancellationToken::new();
    let orders_url = orders_at(&stop, default_carrier()).await;
    let log = std::env::temp_dir().join(format!("support-agent-pty-{}.log", std::process::id()));
    let log_path = log.clone();
    let screen = tokio::task::spawn_blocking(move || -> Result<String, rexpect::error::Error> {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_support-agent"));
        command
            .args(["cli", "--orders", &orders_url, "--answer-seconds", "2"])
            .args([
                "--protocol",
                "2025-11-25",
                "--no-knowledge-base",
                "--no-tasks",
                "--database",
                "sqlite::memory:",
                "--log-file",
            ])
            .arg(&log_path)
            .env_remove("RUST_LOG");
        let mut term = rexpect::session::spawn_command(command, Some(30_000))?;
        let mut screen = String::new();
        let mut upto = |term: &mut rexpect::session::PtySession, text: &str| {
            term.exp_string(text).map(|before| {
                screen.push_str(&before);
                screen.push_str(text);
            })
        };
        upto(&mut term, "Support desk ready.")?;
        upto(&mut term, "> ")?;
        term.send_line("refresh delivery estimates")?;
        upto(&mut term, "100%")?;
        upto(&mut term, "Rechecked 87 shipments")?;
        upto(&mut term, "> ")?;
        term.send_line("cancel ORD-10002")?;
        upto(
            &mut term,
            "Type 'yes' to confirm or 'no' to refuse (2 seconds)",
        )?;
        // Nobody answers: the question closes and the line is the person's again.
        upto(&mut term, "The question closed without an answer")?;
        upto(&mut term, "the question was closed without an answer.")?;
        upto(&mut term, "> ")?;
        term.send_line("cancel ORD-10008")?;
        upto(&mut term, "Type 'yes' to confirm")?;
        term.send_line("yes")?;
        upto(&mut term, "Order ORD-10008 is cancelled")?;
        upto(&mut term, "> ")?;
        term.send_line("quit")?;
        term.exp_eof()?;
        Ok(screen)
    })
    .await
    .unwrap();
    stop.cancel();
    let screen = screen.unwrap_or_else(|e| panic!("the terminal session failed: {e}"));
    for level in [" INFO ", " WARN ", " DEBUG ", "ProgressNotification"] {
        assert!(
            !screen.contains(level),
            "a log line reached the screen: {screen}"
        );
    }
    assert!(log.exists(), "the log goes to its file");
    let _ = std::fs::remove_file(&log);
}

/// At the prompt: "y" and "n" are answers, any other line is not (and is kept, not lost, to be
/// sent once the question's message is done), and a dead order service is named with its
/// address instead of "ready".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_answers_count_other_lines_are_kept_and_a_dead_service_is_named() {
    let stop = CancellationToken::new();
    let orders_url = orders_at(&stop, default_carrier()).await;
    let desk = Desk::start(DeskConfig {
        orders_url,
        protocol: Some(Revision::V2026_07_28),
        ..DeskConfig::default()
    })
    .await
    .unwrap();
    let (lines, screen, cli) = terminal(Arc::new(desk));
    screen.shows("Support desk ready.").await;

    lines.send("cancel ORD-10002".into()).await.unwrap();
    screen
        .shows("Type 'yes' to confirm or 'no' to refuse")
        .await;
    lines.send("what is ORD-10001?".into()).await.unwrap();
    screen.shows("That is not an answer").await;
    screen.shows("Kept your message").await;
    lines.send("n".into()).await.unwrap();
    screen.shows("was not cancelled").await;
    // The kept message goes next, on its own.
    screen.shows("ORD-10001 is").await;

    lines.send("cancel ORD-10008".into()).await.unwrap();
    screen.shows("Cancel order ORD-10008").await;
    lines.send("Y".into()).await.unwrap();
    screen.shows("Order ORD-10008 is cancelled").await;
    lines.send("quit".into()).await.unwrap();
    cli.await.unwrap().unwrap();
    stop.cancel();

    // Nothing listens here any more (the listener was dropped with its port).
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", listener.local_addr().unwrap())
    };
    let desk = Desk::start(DeskConfig {
        orders_url: dead.clone(),
        protocol: Some(Revision::V2026_07_28),
        ..DeskConfig::default()
    })
    .await
    .unwrap();
    let (lines, screen, cli) = terminal(Arc::new(desk));
    screen
        .shows(&format!("Not connected to order-service at {dead}"))
        .await;
    assert!(
        !screen.text().contains("ready"),
        "a dead service is not ready: {}",
        screen.text()
    );
    lines.send("quit".into()).await.unwrap();
    cli.await.unwrap().unwrap();
}

/// A question asked on a page of the same person waits in the terminal's inbox too: `/inbox`
/// lists it, `/yes 1` answers it, and the page's inbox empties.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pages_question_is_answered_from_the_terminals_inbox() {
    let stop = CancellationToken::new();
    let orders_url = orders_at(&stop, default_carrier()).await;
    let desk = Arc::new(
        Desk::start(DeskConfig {
            orders_url,
            protocol: Some(Revision::V2025_11_25),
            ..DeskConfig::default()
        })
        .await
        .unwrap(),
    );
    let (lines, screen, cli) = terminal(desk.clone());
    screen.shows("Support desk ready.").await;
    lines.send("/inbox".into()).await.unwrap();
    screen.shows("Your inbox is empty").await;

    // The page: a conversation of the desk's person (no browser session: the same person).
    let (_secret, mut page) = desk.events().open("page");
    let reply = tokio::spawn({
        let desk = desk.clone();
        async move { desk.chat("page", "cancel ORD-10002", None).await }
    });
    screen
        .shows("In your inbox, from orders: Cancel order ORD-10002")
        .await;
    lines.send("/inbox".into()).await.unwrap();
    // One question a line, naming the call that asks it, with its ages read as they are now.
    screen
        .shows("1. orders (cancel_order(orderId: \"ORD-10002\")) asks: Cancel order ORD-10002")
        .await;
    screen.shows(" left)\n").await;
    lines.send("/yes 2".into()).await.unwrap();
    screen.shows("No question has that number").await;
    lines.send("/yes 1".into()).await.unwrap();
    screen.shows("Answered: Cancel order ORD-10002").await;
    let reply = reply.await.unwrap();
    assert!(reply.contains("Order ORD-10002 is cancelled"), "{reply}");
    // The page was told: its last inbox is empty.
    let mut last = None;
    while let Ok(event) = page.try_recv() {
        if let agent::events::Event::Inbox { questions } = event {
            last = Some(questions.len());
        }
    }
    assert_eq!(last, Some(0), "the page's inbox emptied");
    lines.send("quit".into()).await.unwrap();
    cli.await.unwrap().unwrap();
    stop.cancel();
}

/// With tasks, the terminal is not held by a question: the reply says it waits, the person
/// answers from the inbox when they like, and the task's result is printed when it comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tasks_the_prompt_is_free_and_the_result_comes_after_the_answer() {
    let stop = CancellationToken::new();
    let orders_url = orders_at(&stop, default_carrier()).await;
    let desk = Desk::start(DeskConfig {
        orders_url,
        protocol: Some(Revision::V2026_07_28),
        tasks: true,
        ..DeskConfig::default()
    })
    .await
    .unwrap();
    let (lines, screen, cli) = terminal(Arc::new(desk));
    screen.shows("Support desk ready.").await;
    lines.send("cancel ORD-10002".into()).await.unwrap();
    screen.shows("Agent: Waiting for your answer").await;
    // The prompt is the person's: another message goes through at once.
    lines.send("where is ORD-10001?".into()).await.unwrap();
    screen.shows("ORD-10001 is SHIPPED").await;
    lines.send("/inbox".into()).await.unwrap();
    // It names the call that started the task, not the get_order that ran since.
    screen
        .shows("1. orders (cancel_order(orderId: \"ORD-10002\")) asks: Cancel order ORD-10002")
        .await;
    lines.send("/yes 1".into()).await.unwrap();
    screen
        .shows("Agent: Order ORD-10002 is cancelled and a refund of €34.99 has been started.")
        .await;
    lines.send("quit".into()).await.unwrap();
    cli.await.unwrap().unwrap();
    stop.cancel();
}

/// Answered at the terminal while the page is open: a question waiting in a task for the web
/// UI's person (its database shared with the terminal) is asked at the terminal too; "yes"
/// there answers the task, the page's dialog closes and its inbox empties, and the order is
/// cancelled once (the page hears the result as well).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_s_question_answered_at_the_terminal_leaves_the_page() {
    let stop = CancellationToken::new();
    let orders_url = orders_at(&stop, Duration::ZERO).await;
    let dir = std::env::temp_dir().join(format!("desk-terminal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let database = format!("sqlite://{}", dir.join("desk.sqlite").display());
    let config = DeskConfig {
        orders_url,
        protocol: Some(Revision::V2026_07_28),
        tasks: true,
        database: Some(database),
        ..DeskConfig::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let web = format!("http://{}/", listener.local_addr().unwrap());
    let _forget = crate::common::Forget::new(&web);
    let serve = agent::app::serve_web(listener, config.clone(), Default::default(), stop.clone());
    tokio::spawn(serve);
    let (mut page, _secret) = crate::common::Events::open_at(&web, "page").await;
    let reply = crate::common::chat(&web, "page", "please cancel ORD-10002").await;
    assert!(reply.starts_with("Waiting for your answer"), "{reply}");
    let asked = page.next_of("confirmation").await;

    let desk = agent::app::terminal_desk(config, stop.clone())
        .await
        .unwrap();
    let (lines, screen, cli) = terminal(desk);
    screen
        .shows("Type 'yes' to confirm or 'no' to refuse")
        .await;
    lines.send("yes".into()).await.unwrap();
    screen.shows("Order ORD-10002 is cancelled").await;

    let closed = page.next_of("closed").await;
    assert_eq!(closed["id"], asked["id"]);
    assert_eq!(closed["answeredElsewhere"], true, "{closed}");
    loop {
        let inbox = page.next_of("inbox").await;
        if inbox["questions"].as_array().unwrap().is_empty() {
            break;
        }
    }
    page.said_ending("Order ORD-10002 is cancelled and a refund of €34.99 has been started.")
        .await;
    assert_eq!(
        crate::common::status_of(&web, "ORD-10002").await,
        "CANCELLED"
    );
    lines.send("quit".into()).await.unwrap();
    cli.await.unwrap().unwrap();
    stop.cancel();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 75: `support-agent people add` at a terminal waited with no prompt and echoed the
/// password. It asks now, twice, and nothing typed is shown; two that differ change nothing.
#[test]
fn people_add_at_a_terminal_asks_for_the_password_without_showing_it() {
    let file = std::env::temp_dir().join(format!("desk-people-pty-{}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let session = |first: &str, again: &str| -> Result<String, rexpect::error::Error> {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_support-agent"));
        command
            .args(["people", "add", "ana", "--people"])
            .arg(&file);
        let mut term = rexpect::session::spawn_command(command, Some(30_000))?;
        let mut screen = term.exp_string("Password for ana (not shown): ")?;
        term.send_line(first)?;
        screen.push_str(&term.exp_string("The same password again: ")?);
        term.send_line(again)?;
        screen.push_str(&term.exp_eof()?);
        Ok(screen)
    };
    let differ = session("correct horse", "wrong horse").unwrap();
    assert!(differ.contains("the two passwords differ"), "{differ}");
    assert!(!file.exists(), "nothing was written");
    let screen = session("correct horse", "correct horse").unwrap();
    assert!(screen.contains("ana may sign in to the desk"), "{screen}");
    assert!(
        !screen.contains("correct horse"),
        "the password was shown: {screen}"
    );
    let people = agent::people::People::load(&file).unwrap();
    assert!(people.contains("ana"));
    let _ = std::fs::remove_file(&file);
}

/// Issue 72: at the terminal, `/tools` lists every server's tools and `/call TOOL {json}` calls
/// one without the model; a question it asks is answered at the prompt as a model's call's is,
/// and arguments that are not JSON change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_is_listed_and_called_by_hand_at_the_terminal() {
    let stop = CancellationToken::new();
    let orders_url = orders_at(&stop, default_carrier()).await;
    let desk = Desk::start(DeskConfig {
        orders_url,
        protocol: Some(Revision::V2026_07_28),
        ..DeskConfig::default()
    })
    .await
    .unwrap();
    let desk = Arc::new(desk);
    let (lines, screen, cli) = terminal(desk.clone());
    screen.shows("Support desk ready.").await;
    lines.send("/tools".into()).await.unwrap();
    screen.shows("orders · cancel_order: ").await;
    lines
        .send("/call get_order {\"orderId\": \"ORD-10001\"}".into())
        .await
        .unwrap();
    screen.shows("get_order returned: ").await;
    screen.shows("Ana Ruiz").await;
    lines
        .send("/call cancel_order {orderId: ORD-10008}".into())
        .await
        .unwrap();
    screen.shows("The arguments are not JSON").await;
    lines
        .send("/call cancel_order {\"orderId\": \"ORD-10008\"}".into())
        .await
        .unwrap();
    screen
        .shows("Type 'yes' to confirm or 'no' to refuse")
        .await;
    lines.send("no".into()).await.unwrap();
    screen.shows("cancel_order returned: ").await;
    // Without notes of its own, the folders of notes say why they cannot change.
    lines.send("/folders add /tmp".into()).await.unwrap();
    screen.shows("this desk reads no notes of its own").await;
    assert!(
        !screen.text().contains("ORD-10008 is cancelled"),
        "{}",
        screen.text()
    );
    lines.send("quit".into()).await.unwrap();
    cli.await.unwrap().unwrap();
    stop.cancel();
}
