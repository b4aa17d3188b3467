//! Browser sessions: made from the operating system's randomness, kept by the digest of their
//! cookie (in memory and in the desk's database), capped per person and in all, and whose inbox
//! their questions go to.

use backchannel::lock;

use super::{
    Events, MAX_SESSIONS, MAX_SESSIONS_PER_PERSON, SESSION_LIFETIME, Session, constant_time_eq,
    random_id,
};

/// A session just started ([`Events::open_session`]): its cookie's value, what the desk's
/// database keeps of it, and the sessions it pushed out (their digests).
#[derive(Debug)]
pub(crate) struct NewSession {
    pub(crate) id: String,
    pub(crate) kept: crate::store::StoredSession,
    pub(crate) gone: Vec<String>,
}

/// The SHA-256 of a session's cookie, hex: what the desk keeps of a session, in memory and in
/// its database (the cookie itself is only ever in the browser).
pub fn session_digest(session: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(session.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// How the owner of a loopback browser session's inbox begins (then the session's digest).
pub(super) const LOOPBACK_OWNER: &str = "session ";

/// Whether the terminal of `person` may answer a question waiting in `owner`'s inbox (in
/// another desk process, through the desk's database): its own, and on a desk without people
/// its browsers' (a loopback desk's sessions are all its one implicit person's, the user at
/// the terminal). A person of a people file is never another's.
pub fn terminal_may_answer(owner: &str, person: &str) -> bool {
    owner == person || owner.starts_with(LOOPBACK_OWNER)
}

impl Events {
    /// A new browser session for `person`: its id (the cookie's value), from the operating
    /// system's randomness. Beyond the caps the oldest session with no page open goes; `None`
    /// when every session has a page open (nothing is pushed out for a newcomer).
    pub fn start_session(&self, person: &str) -> Option<String> {
        self.open_session(person).map(|new| new.id)
    }

    /// [`Events::start_session`], with what the desk's database keeps and forgets.
    pub(crate) fn open_session(&self, person: &str) -> Option<NewSession> {
        let id = random_id();
        let digest = session_digest(&id);
        let now = tokio::time::Instant::now();
        // Sessions with a page open now are never pushed out by new ones.
        let watched: Vec<String> = lock(&self.watchers)
            .iter()
            .filter(|(_, w)| !w.tx.is_closed())
            .map(|(c, _)| c.clone())
            .collect();
        let active: std::collections::HashSet<String> = lock(&self.conversations)
            .iter()
            .filter(|(c, _)| watched.contains(c))
            .map(|(_, s)| s.clone())
            .collect();
        let people = self.people.load(std::sync::atomic::Ordering::Relaxed);
        let mut gone = Vec::new();
        {
            let mut sessions = lock(&self.sessions);
            sessions.retain(|s| {
                let lives = s.until > now;
                if !lives {
                    gone.push(s.digest.clone());
                }
                lives
            });
            // The oldest session (of `person` only, when `theirs`) with no page open.
            let idle = |sessions: &Vec<Session>, theirs: bool| {
                sessions
                    .iter()
                    .position(|s| (!theirs || s.person == person) && !active.contains(&s.digest))
            };
            // Each person's share (a loopback desk's sessions are separate browsers).
            if people
                && sessions.iter().filter(|s| s.person == person).count() >= MAX_SESSIONS_PER_PERSON
            {
                let oldest = idle(&sessions, true)?;
                gone.push(sessions.remove(oldest).digest);
            }
            if sessions.len() >= MAX_SESSIONS {
                let oldest = idle(&sessions, false)?;
                gone.push(sessions.remove(oldest).digest);
            }
            sessions.push(Session {
                digest: digest.clone(),
                person: person.to_owned(),
                until: now + SESSION_LIFETIME,
            });
        }
        // The sessions' lock is not held here: conversations are locked before sessions.
        for session in &gone {
            self.forget_conversations_of(session);
        }
        let kept = crate::store::StoredSession {
            digest,
            person: person.to_owned(),
            until: std::time::SystemTime::now() + SESSION_LIFETIME,
        };
        Some(NewSession { id, kept, gone })
    }

    /// Take back the sessions and conversations the desk's database kept (after a restart),
    /// oldest first, as if they had been made here.
    pub(crate) fn restore(
        &self,
        sessions: Vec<crate::store::StoredSession>,
        conversations: Vec<(String, String)>,
    ) {
        let (now, wall) = (tokio::time::Instant::now(), std::time::SystemTime::now());
        let mut kept = lock(&self.sessions);
        for session in sessions {
            let Ok(left) = session.until.duration_since(wall) else {
                continue;
            };
            kept.push(Session {
                digest: session.digest,
                person: session.person,
                until: now + left.min(SESSION_LIFETIME),
            });
        }
        drop(kept);
        for (conversation, digest) in conversations {
            self.add_conversation(conversation, digest);
        }
    }

    /// Take a session another desk made, and the conversations made for it (oldest first),
    /// as far as this desk does not know them yet.
    pub(crate) fn recall(&self, session: crate::store::StoredSession, conversations: Vec<String>) {
        let known = lock(&self.sessions)
            .iter()
            .any(|s| s.digest == session.digest);
        let digest = session.digest.clone();
        if !known {
            self.restore(vec![session], Vec::new());
        }
        let missing: Vec<String> = {
            let kept = lock(&self.conversations);
            conversations
                .into_iter()
                .filter(|c| !kept.iter().any(|(k, _)| k == c))
                .collect()
        };
        for conversation in missing {
            self.add_conversation(conversation, digest.clone());
        }
    }

    /// Forget the session with the cookie digest `digest` (it ended at another desk).
    pub(crate) fn forget_digest(&self, digest: &str) {
        let known = lock(&self.sessions).iter().any(|s| s.digest == digest);
        if known {
            lock(&self.sessions).retain(|s| s.digest != digest);
            self.forget_conversations_of(digest);
        }
    }

    /// The digest of a live session's cookie.
    pub(super) fn live_digest(&self, session: &str) -> Option<String> {
        let digest = session_digest(session);
        let now = tokio::time::Instant::now();
        lock(&self.sessions)
            .iter()
            .any(|s| s.until > now && constant_time_eq(s.digest.as_bytes(), digest.as_bytes()))
            .then_some(digest)
    }

    /// The person whose live session `session` is.
    pub fn person_of_session(&self, session: &str) -> Option<String> {
        self.person_of_digest(&session_digest(session))
    }

    /// The person whose live session has the cookie digest `digest`.
    pub(super) fn person_of_digest(&self, digest: &str) -> Option<String> {
        let now = tokio::time::Instant::now();
        lock(&self.sessions)
            .iter()
            .find(|s| s.until > now && constant_time_eq(s.digest.as_bytes(), digest.as_bytes()))
            .map(|s| s.person.clone())
    }

    /// Whose inbox a live session's questions go to: the person's (with people), else the
    /// session's own.
    pub fn owner_of_session(&self, session: &str) -> Option<String> {
        self.owner_of_digest(&session_digest(session))
    }

    pub(super) fn owner_of_digest(&self, digest: &str) -> Option<String> {
        let person = self.person_of_digest(digest)?;
        Some(if self.people.load(std::sync::atomic::Ordering::Relaxed) {
            person
        } else {
            format!("{LOOPBACK_OWNER}{digest}")
        })
    }

    /// End a session: its conversations are forgotten (their pages can no longer act). The
    /// digest it had, for the desk's database to forget too.
    pub fn end_session(&self, session: &str) -> String {
        let digest = session_digest(session);
        lock(&self.sessions).retain(|s| s.digest != digest);
        self.forget_conversations_of(&digest);
        digest
    }
}
