//! What the binary's flags become: the model a desk talks to, the people a web desk signs in,
//! a person's password read at the terminal, and (feature `demo`) the demo's order service.

use std::time::Duration;

use super::AppError;
use crate::llm::{AnthropicMessages, Generation, OpenAiCompatible, Provider, Secret};

/// The API a model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelApi {
    /// Chat completions (OpenAI, Ollama, llama.cpp, vLLM).
    OpenAi,
    /// Anthropic's messages.
    Anthropic,
}

/// The model `model` at `url`, speaking `api` with `key` (if the server wants one), answering
/// within `timeout`, generating as `generation` says.
pub fn model(
    api: ModelApi,
    url: &str,
    key: Option<Secret>,
    model: &str,
    (timeout, generation): (Duration, Generation),
) -> Result<Provider, AppError> {
    Ok(match api {
        ModelApi::OpenAi => Provider::OpenAi(
            OpenAiCompatible::new(url, key, model, timeout)?.with_generation(generation),
        ),
        ModelApi::Anthropic => Provider::Anthropic(
            AnthropicMessages::new(url, key, model, timeout)?.with_generation(generation),
        ),
    })
}

/// The people a web desk signs in: those of the people file at `file` (with what to say of
/// them at start), or else those kept in the desk's `database` (a team's desks on one
/// PostgreSQL), or none. `terminal` is whom the terminal answers as.
pub async fn web_people(
    file: Option<&std::path::Path>,
    database: Option<&str>,
    terminal: &str,
) -> Result<Option<(crate::people::People, String)>, AppError> {
    if let Some(found) = super::people(file, terminal)? {
        return Ok(Some(found));
    }
    let Some(url) = database else {
        return Ok(None);
    };
    Ok(super::people_in_database(url).await?.map(|people| {
        let said = format!(
            "People: {} may sign in (kept in the desk's database).",
            people.len()
        );
        (people, said)
    }))
}

/// A password for `name`: asked at the terminal (twice, never shown), or read from standard
/// input when that is not a terminal (a script's pipe).
pub fn read_password(name: &str) -> Result<String, AppError> {
    use std::io::IsTerminal as _;
    if !std::io::stdin().is_terminal() {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(AppError::Terminal)?;
        return Ok(line.trim_end_matches(['\r', '\n']).to_owned());
    }
    let first = rpassword::prompt_password(format!("Password for {name} (not shown): "))
        .map_err(AppError::Terminal)?;
    let again =
        rpassword::prompt_password("The same password again: ").map_err(AppError::Terminal)?;
    if first != again {
        return Err(AppError::PasswordsDiffer);
    }
    Ok(first)
}

/// Beside a desk's `database`, its token for the order service, when there is one.
pub fn bearer_beside_if_kept(database: Option<&str>) -> Option<std::path::PathBuf> {
    database
        .map(super::bearer_beside)
        .filter(|file| file.exists())
}

/// The demo's order service: over `database` (default: orders.sqlite in `data_dir`, itself by
/// default data/), its carrier `carrier_latency` slow, waiting `ask_timeout` for an answer
/// asked on a call (as long as the desk expects), answering the hosts the web UI does.
#[cfg(feature = "demo")]
pub fn demo_orders(
    (database, data_dir): (Option<String>, std::path::PathBuf),
    carrier_latency: Duration,
    ask_timeout: Duration,
    allow_hosts: &[String],
) -> orders::app::Config {
    orders::app::Config {
        database,
        ask_timeout: Some(ask_timeout),
        http: super::web_options(allow_hosts),
        service: orders::service::ServiceConfig {
            carrier_latency,
            ..Default::default()
        },
        data_dir,
        // The demo's orders are its own: what a stopped demo left is taken over at start.
        sole_instance: true,
        ..Default::default()
    }
}

/// Serve the demo's order service on `listener`, knowing its desk by its token.
#[cfg(feature = "demo")]
pub async fn serve_demo_orders(
    orders: orders::app::Config,
    listener: tokio::net::TcpListener,
    desk: Option<super::DeskCaller>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), orders::app::AppError> {
    let orders = match desk {
        Some(desk) => orders.knowing(desk.addr, super::DESK_PRINCIPAL, &desk.token)?,
        None => orders,
    };
    orders::app::serve_http(listener, &orders, stop).await
}
