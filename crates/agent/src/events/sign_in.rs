//! Sign-ins a server asks of the person: the link shown on the pages of the person it is for
//! (every page on a desk of one person), the browser that opens it from such a page holding it,
//! and the callback that finishes it once.

use std::time::Duration;

use backchannel::lock;
use tokio::sync::oneshot;

use super::{Event, Events, PendingSignIn, constant_time_eq, query_param, random_id};

/// Why a callback was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignInError {
    /// The callback names no sign-in that is waiting (never started, already finished, or
    /// given up on).
    #[error("no sign-in is waiting for this callback")]
    NotWaiting,
    /// Another browser session opened this sign-in first.
    #[error("someone else has opened this sign-in")]
    Claimed,
    /// The browser that came back is not the one that opened the sign-in from the desk.
    #[error("this sign-in was opened in another browser")]
    OtherBrowser,
    /// The sign-in is another person's: this browser's person may not open it.
    #[error("this sign-in is for another person")]
    SomeoneElse,
}

impl Events {
    /// Show the pages of `for_person` (every page and the terminal when `None`) a "Sign in to
    /// `server`" link to `url`, and wait at most `deadline` for the browser to come back to the
    /// desk's callback with the same OAuth `state`. Only a browser session of `for_person` may
    /// open the link ([`Events::claim_sign_in`]). Returns the callback's query string.
    pub async fn sign_in(
        &self,
        server: &str,
        url: &str,
        deadline: Duration,
        for_person: Option<&str>,
    ) -> Result<String, String> {
        let state = reqwest::Url::parse(url)
            .ok()
            .and_then(|url| url.query().and_then(|query| query_param(query, "state")))
            .filter(|state| !state.is_empty())
            .ok_or("the authorization URL carries no state to match the callback with")?;
        let (back, came_back) = oneshot::channel();
        lock(&self.sign_ins).insert(
            state.clone(),
            PendingSignIn {
                server: server.to_owned(),
                url: url.to_owned(),
                for_person: for_person.map(str::to_owned),
                back,
                claimed: None,
            },
        );
        tracing::info!(server, "waiting for the person to sign in");
        let shown = Event::SignIn {
            server: server.to_owned(),
            url: url.to_owned(),
        };
        self.emit_to(for_person, &shown);
        let outcome = tokio::time::timeout(deadline, came_back).await;
        lock(&self.sign_ins).remove(&state);
        let completed = matches!(outcome, Ok(Ok(_)));
        let ended = Event::SignInEnded {
            server: server.to_owned(),
            completed,
        };
        self.emit_to(for_person, &ended);
        match outcome {
            Ok(Ok(query)) => Ok(query),
            _ => Err(format!(
                "nobody signed in to {server} within {} minutes",
                deadline.as_secs() / 60
            )),
        }
    }

    /// The browser came back to the callback with `query`: hand it to the sign-in with the
    /// same `state`, once. Returns that sign-in's server.
    pub fn signed_in(&self, query: &str) -> Result<String, SignInError> {
        self.finish_sign_in(query, None)
    }

    /// A browser session opens the sign-in `state` from a page: the first one of the person
    /// it is for to do so holds it. Returns the authorization URL to send that browser to and
    /// the nonce it must carry back to the callback.
    pub fn claim_sign_in(
        &self,
        state: &str,
        session: &str,
    ) -> Result<(String, String), SignInError> {
        let person = self.person_of_session(session);
        let mut sign_ins = lock(&self.sign_ins);
        let pending = sign_ins.get_mut(state).ok_or(SignInError::NotWaiting)?;
        if let Some(for_person) = &pending.for_person
            && person.as_deref() != Some(for_person.as_str())
        {
            return Err(SignInError::SomeoneElse);
        }
        match &pending.claimed {
            Some((by, nonce)) if constant_time_eq(by.as_bytes(), session.as_bytes()) => {
                Ok((pending.url.clone(), nonce.clone()))
            }
            Some(_) => Err(SignInError::Claimed),
            None => {
                let nonce = random_id();
                pending.claimed = Some((session.to_owned(), nonce.clone()));
                Ok((pending.url.clone(), nonce))
            }
        }
    }

    /// [`Events::signed_in`] for a callback that must come back to the browser that claimed
    /// the sign-in ([`Events::claim_sign_in`]) carrying its `nonce`. A callback from any
    /// other browser changes nothing: the sign-in still waits for its own.
    pub fn signed_in_by(&self, query: &str, nonce: Option<&str>) -> Result<String, SignInError> {
        self.finish_sign_in(query, Some(nonce.unwrap_or_default()))
    }

    fn finish_sign_in(&self, query: &str, nonce: Option<&str>) -> Result<String, SignInError> {
        let state = query_param(query, "state").ok_or(SignInError::NotWaiting)?;
        let mut sign_ins = lock(&self.sign_ins);
        let waiting = sign_ins.get(&state).ok_or(SignInError::NotWaiting)?;
        if let Some(nonce) = nonce {
            let held = waiting.claimed.as_ref().map(|(_, held)| held.as_bytes());
            if !held.is_some_and(|held| constant_time_eq(held, nonce.as_bytes())) {
                return Err(SignInError::OtherBrowser);
            }
        }
        let pending = sign_ins.remove(&state).ok_or(SignInError::NotWaiting)?;
        drop(sign_ins);
        pending
            .back
            .send(query.to_owned())
            .map_err(|_| SignInError::NotWaiting)?;
        Ok(pending.server)
    }
}
