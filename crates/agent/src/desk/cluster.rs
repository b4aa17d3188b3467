//! A desk among a team's desks on one PostgreSQL database: it joins the others
//! ([`crate::bus`]), takes its sessions and conversations from the database when a browser
//! made them at another desk, and follows its share of the tasks that wait for a person on a
//! lease: every [`RENEW`] it says it lives for [`LEASE`], and takes over the tasks of a desk
//! whose lease ran out (their questions back in the person's inbox with the time they had
//! left, wherever the person's page is).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::{Desk, tasks};
use crate::events::Events;
use crate::store::{DeskStore, StoreError};

/// How long a desk's word that it lives holds: its tasks go to another desk this long after
/// it stopped.
pub const LEASE: Duration = Duration::from_secs(6);

/// How often a desk renews its lease, and looks for tasks whose desk is gone.
pub const RENEW: Duration = Duration::from_secs(2);

/// How long a desk must have reached the database without a break before it takes a task
/// over: after the database was down every desk's lease ran out, and the desks that live must
/// have renewed theirs first (the chaos run saw live desks' tasks taken over 7 s after a
/// 5-second stop, and followed twice).
pub const CONNECTED_BEFORE_TAKING_OVER: Duration = Duration::from_secs(12);

/// Join the other desks on `store`, when it is a database desks share: this desk's events go
/// to the pages served by the others, and theirs to its pages.
pub(super) async fn join(store: &DeskStore, events: &Arc<Events>) -> Result<(), StoreError> {
    let Some(pool) = store.shared_pool() else {
        return Ok(());
    };
    let heard = events.clone();
    // Random: a restarted desk is a new one.
    let name = crate::events::random_id();
    let bus = crate::bus::join(pool.clone(), name.clone(), move |e| heard.heard(e)).await?;
    events.join(bus);
    // Alive before the first request: a task this desk keeps is never taken for an orphan.
    store.desk_alive(&name, SystemTime::now() + LEASE).await?;
    tracing::info!(desk = %name, "joined the other desks on the database");
    Ok(())
}

impl Desk {
    /// Whether the desk's database answers (a desk without one: yes).
    pub async fn database_answers(&self) -> Result<(), StoreError> {
        match &self.store {
            Some(store) => store.ping().await,
            None => Ok(()),
        }
    }

    /// Take from the database a browser session another desk made (and the conversations it
    /// made since), or forget one that ended there: what the web UI asks before it reads who
    /// a request is. Nothing on a desk of its own.
    pub(crate) async fn recall(&self, session: &str) {
        let Some(store) = self.store.as_ref().filter(|s| s.is_shared()) else {
            return;
        };
        let digest = crate::events::session_digest(session);
        match store.session(&digest, SystemTime::now()).await {
            Ok(Some((kept, conversations))) => {
                let may = match &self.config.people {
                    Some(people) => people.contains(&kept.person),
                    None => kept.person == self.config.agent_id,
                };
                if may {
                    self.events.recall(kept, conversations);
                }
            }
            Ok(None) => self.events.forget_digest(&digest),
            Err(error) => {
                tracing::warn!(%error, "the desks' database could not say whose session a request is");
            }
        }
    }

    /// Renew this desk's lease and take over the tasks of desks whose lease ran out, every
    /// [`RENEW`], for as long as the desk runs (a desk on a database of its own: nothing).
    pub(super) fn keep_lease(&self) {
        let (Some(store), Some(name)) = (self.store.clone(), self.events.desk_name()) else {
            return;
        };
        if !store.is_shared() {
            return;
        }
        let events = self.events.clone();
        let (ready, tasks) = (self.host.ready.clone(), self.config.tasks);
        let speaker = self.speaker();
        tokio::spawn(async move {
            let host = match super::connecting::opened(ready).await {
                Ok(host) => Some(host).filter(|_| tasks),
                Err(error) => {
                    tracing::warn!(%error, "this desk takes over no task: it has no connection");
                    None
                }
            };
            // Since when this desk has reached the database without a break.
            let mut connected_since: Option<tokio::time::Instant> = None;
            loop {
                let now = SystemTime::now();
                match renew(&store, &name, &events, now).await {
                    Ok(()) => {
                        connected_since.get_or_insert_with(tokio::time::Instant::now);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "this desk's lease could not be renewed");
                        connected_since = None;
                    }
                }
                let settled = connected_since
                    .is_some_and(|since| since.elapsed() >= CONNECTED_BEFORE_TAKING_OVER);
                if settled && let Some(host) = &host {
                    let follow = Follow {
                        host,
                        events: &events,
                        store: &store,
                        speaker: &speaker,
                    };
                    if let Err(error) = take_over(follow, &name, now).await {
                        tracing::warn!(%error, "the tasks of a desk that stopped could not be taken over");
                    }
                }
                tokio::time::sleep(RENEW).await;
            }
        });
    }
}

/// Say this desk lives, and forget what it knew of the desks that do not.
async fn renew(
    store: &DeskStore,
    name: &str,
    events: &Events,
    now: SystemTime,
) -> Result<(), StoreError> {
    store.desk_alive(name, now + LEASE).await?;
    let live = store.live_desks(now).await?;
    events.forget_desks_but(&live);
    Ok(())
}

/// What following a task takes.
struct Follow<'a> {
    host: &'a Arc<backchannel_host::Host<super::DeskHandler>>,
    events: &'a Arc<Events>,
    store: &'a DeskStore,
    speaker: &'a Option<tasks::Speaker>,
}

/// Take the tasks no live desk follows (one desk wins each) and follow them here.
async fn take_over(follow: Follow<'_>, name: &str, now: SystemTime) -> Result<(), StoreError> {
    for wait in follow.store.orphan_waits(now).await? {
        if !follow.store.claim_wait(&wait, name).await? {
            continue;
        }
        let left = wait.until.duration_since(now).unwrap_or_default();
        tracing::info!(task = %wait.task_id, from = ?wait.desk, "taking over a task whose desk stopped");
        // Its conversation's session, when another desk made it: the question asked again
        // goes to its person's inbox, as the first did.
        if let Some(session) = follow
            .store
            .session_of_conversation(&wait.conversation, now)
            .await?
        {
            follow
                .events
                .recall(session, vec![wait.conversation.clone()]);
        }
        let follower = tasks::Follower {
            host: follow.host.clone(),
            events: follow.events.clone(),
            conversation: wait.conversation.clone(),
            answer_within: left,
            store: Some(follow.store.clone()),
            speaker: follow.speaker.clone(),
            call: None,
        };
        let (store, name) = (follow.store.clone(), name.to_owned());
        tokio::spawn(async move {
            let ours = crate::store::Wait {
                desk: Some(name),
                ..wait
            };
            if follower.resume(ours.task_id.clone()).await == tasks::Resumed::Unreachable {
                // Left for the next look (here or at another desk): not held by a desk that
                // does not follow it.
                if let Err(error) = store.release_wait(&ours).await {
                    tracing::warn!(%error, "a task that could not be reached stays with this desk");
                }
            }
        });
    }
    Ok(())
}
