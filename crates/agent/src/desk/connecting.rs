//! The desk's connections, opened in the background ([`Connecting`]): a connection may wait
//! for the person to sign in, and the page that shows the link must be up by then.

use std::sync::Arc;

use backchannel::Revision;
use backchannel_host::{Host, HostConfig};

use super::config::{DeskConfig, DeskError, Knowledge};
use super::handler::DeskHandler;

/// The knowledge-base server's tools the desk uses (the model gets passages through
/// [`NOTES_TOOL`], never whole files).
pub(crate) const KB_TOOLS: [&str; 2] = ["read_text_file", "list_directory"];

/// The desk's own tool for the model: the passages of the notes that answer a question.
pub(crate) const NOTES_TOOL: &str = "search_support_notes";

pub(crate) fn add_knowledge(host: &mut HostConfig, knowledge: &Knowledge) {
    use backchannel_host::{ConnectionConfig, Declared, Transport};
    let Some((command, args)) = knowledge.server.split_first() else {
        return;
    };
    if knowledge.through_orders {
        return;
    }
    host.trusted_folders
        .extend(knowledge.trusted.iter().cloned());
    for (name, dir, prefix, called) in [
        (
            "knowledge-base",
            &knowledge.current,
            "knowledge_base_",
            "Support knowledge base",
        ),
        (
            "knowledge-base-archive",
            &knowledge.archive,
            "knowledge_base_archive_",
            "Archived support knowledge base",
        ),
    ] {
        host.trusted_folders.push(dir.clone());
        host.connections.insert(
            name.to_owned(),
            ConnectionConfig {
                transport: Transport::Stdio {
                    command: command.clone(),
                    // The folder is given as an argument too: the server asks for roots only
                    // after the handshake, and until the answer is applied its list of
                    // allowed folders would be empty, so a first call could be refused.
                    args: args
                        .iter()
                        .cloned()
                        .chain([dir.display().to_string()])
                        .collect(),
                    cwd: None,
                    env: Default::default(),
                },
                request_timeout_secs: 30,
                roots: vec![backchannel_host::RootConfig::named(dir.clone(), called)],
                protocol: Some(Revision::V2025_11_25),
                tool_prefix: Some(prefix.to_owned()),
                tools: Some(KB_TOOLS.map(String::from).to_vec()),
                capabilities: Declared {
                    elicitation: false,
                    url_elicitation: false,
                    sampling: false,
                    roots: true,
                    tasks: false,
                },
                auth: None,
                log_level: backchannel_host::DEFAULT_LOG_LEVEL,
                direct_rounds: true,
            },
        );
    }
}

/// The host, opened in the background: a connection may wait for the person to sign in, and
/// the page that shows the link must be up by then. Whatever needs a connection waits here.
pub(crate) struct Connecting {
    pub(crate) ready: tokio::sync::watch::Receiver<Option<Opened>>,
    pub(crate) task: tokio::task::JoinHandle<()>,
}

/// The host, or why it could not be opened.
pub(crate) type Opened = Result<Arc<Host<DeskHandler>>, String>;

/// Say once which knowledge bases the desk starts without, and why (one line for both when
/// both failed alike); the desk works without its notes.
fn say_missing_notes(host: &Host<DeskHandler>) {
    let missing: Vec<(&str, String)> = ["knowledge-base", "knowledge-base-archive"]
        .into_iter()
        .filter_map(|name| {
            let why = host.unavailable.get(name)?;
            let prefix = format!("cannot connect to {name:?}: ");
            Some((name, why.strip_prefix(&prefix).unwrap_or(why).to_owned()))
        })
        .collect();
    let alike = missing.windows(2).all(|pair| pair[0].1 == pair[1].1);
    let said: Vec<String> = if alike && !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|(name, _)| *name).collect();
        vec![format!("{}: {}", names.join(" and "), missing[0].1)]
    } else {
        missing
            .iter()
            .map(|(name, why)| format!("{name}: {why}"))
            .collect()
    };
    for line in said {
        tracing::warn!(
            "starting without the notes of {line}; the notes are served by Node's `npx` (Node \
             20 or newer), or pass --no-knowledge-base"
        );
    }
}

/// Say what each server offers, once its connection is open ("orders offers 6 tools: …"): the
/// start-up listing a person reads to know what the desk can do (the knowledge bases' tools
/// are the desk's notes search, said apart).
async fn say_tools(host: &Host<DeskHandler>) {
    for connection in host.connections() {
        if connection.name().starts_with("knowledge-base") {
            continue;
        }
        if let Ok(tools) = connection.tools().await {
            tracing::info!(
                "{}",
                super::handler::offers(connection.name(), "offers", &tools)
            );
        }
    }
}

/// The host behind `ready`, once its connections are open (or have failed).
pub(crate) async fn opened(mut ready: tokio::sync::watch::Receiver<Option<Opened>>) -> Opened {
    match ready.wait_for(Option::is_some).await {
        Ok(opened) => opened.clone().unwrap_or_else(|| Err("not opened".into())),
        Err(_) => Err("the desk stopped before its connections opened".into()),
    }
}

impl Connecting {
    pub(crate) fn open(config: HostConfig, handler: Arc<DeskHandler>) -> Connecting {
        let (done, ready) = tokio::sync::watch::channel(None);
        let task = tokio::spawn(async move {
            let opened = match Host::open(&config, handler.clone()).await {
                Ok(host) => {
                    let host = Arc::new(host);
                    let _ = handler.host.set(Arc::downgrade(&host));
                    if let Some(reason) = host.unavailable.get("orders") {
                        tracing::warn!("the order service is not reachable: {reason}");
                    }
                    say_missing_notes(&host);
                    say_tools(&host).await;
                    Ok(host)
                }
                Err(error) => {
                    tracing::error!(%error, "the desk's connections could not be opened");
                    Err(error.to_string())
                }
            };
            done.send_replace(Some(opened));
        });
        Connecting { ready, task }
    }

    /// The host if its connections are open (or have failed) now; `None` while they open.
    pub(crate) fn opened_now(&self) -> Option<Opened> {
        self.ready.borrow().clone()
    }

    /// The host, once its connections are open (or have failed).
    pub(crate) async fn host(&self) -> Opened {
        opened(self.ready.clone()).await
    }

    pub(crate) async fn close(self) {
        self.task.abort();
        let opened = self.ready.borrow().clone();
        drop(self.ready);
        if let Some(Ok(host)) = opened
            && let Ok(host) = Arc::try_unwrap(host)
        {
            host.close().await;
        }
    }
}

/// The desk's connections: the order service, the notes' servers, the servers the person
/// named.
pub(crate) fn host_config(config: &DeskConfig) -> Result<HostConfig, DeskError> {
    let orders = backchannel_host::ConnectionConfig {
        auth: orders_auth(config),
        ..config.http_connection(&config.orders_url, config.tasks)
    };
    let mut host_config = HostConfig {
        client_name: "support-agent".into(),
        trusted_folders: Vec::new(),
        meta_allow: vec!["progressToken".into(), "support_agent_id".into()],
        connections: [("orders".to_owned(), orders)].into_iter().collect(),
    };
    if let Some(knowledge) = &config.knowledge {
        add_knowledge(&mut host_config, knowledge);
    }
    for server in &config.servers {
        if host_config.connections.contains_key(&server.name) {
            return Err(DeskError::SameServerTwice(server.name.clone()));
        }
        let connection = server.connection(config);
        host_config
            .connections
            .insert(server.name.clone(), connection);
    }
    Ok(host_config)
}

/// How the desk signs in to the order service: with its token (no OAuth then), else by OAuth
/// through its callback when it has one.
fn orders_auth(config: &DeskConfig) -> Option<backchannel_host::AuthConfig> {
    match (&config.orders_bearer_file, &config.sign_in_callback) {
        (Some(file), _) => Some(backchannel_host::AuthConfig {
            bearer_file: Some(file.clone()),
            ..Default::default()
        }),
        (None, Some(callback)) => Some(backchannel_host::AuthConfig {
            redirect_uri: Some(callback.clone()),
            token_file: config.token_file.clone(),
            ..Default::default()
        }),
        (None, None) => None,
    }
}
