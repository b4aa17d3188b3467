//! Each person's own sign-in to an upstream marked per-person: the gateway never passes a
//! caller's token on, so an upstream that needs *the person's* account gets a token the
//! person obtained for it, through the gateway, in their browser.
//!
//! When a person calls a tool of such an upstream and the gateway holds no token of theirs
//! for it, the gateway asks them, in their revision, to open a sign-in link it serves
//! (`Ctx::elicit_url`: on 2025-11-25 `elicitation/create` in URL mode, on 2026-07-28 an
//! `input_required` URL request; a client without URL elicitation gets a tool error naming
//! the link). The link belongs to the person who was asked: opening it, the browser proves
//! who it is (with a token of the gateway's front door, kept as a session cookie), and only
//! the person asked goes on to the upstream's authorization server (authorization code with
//! PKCE, the client registered as the host registers it); the callback checks the person
//! again, and its `state` is good once. The tokens are kept per (person, upstream), sealed, in
//! the gateway's database (`vault`); the host's OAuth client refreshes them; an upstream that
//! refuses them anyway has them dropped, and the person is asked again. A person signs out of
//! an upstream with `POST /upstream-sign-out/NAME`.
//!
//! The person's answer to the question only says they opened the link; the call then waits
//! (at most [`SIGN_IN_WAIT`]) for the sign-in to finish, and goes on in the same call
//! (2025-11-25) or in the client's retry (2026-07-28).

mod pages;
mod vault;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use backchannel::serve::ResourceServer;
use backchannel::{Ctx, UrlElicited, lock};
use backchannel_host::auth::SharedCredentials;
use backchannel_host::{AuthConfig, AuthorizeError, Declared, Host};
use rmcp::ErrorData;

use crate::switchboard::Switchboard;

pub(crate) use pages::routes;
pub(crate) use vault::Vault;

/// How long a call waits, once the person opened the link, for their sign-in to finish.
pub const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

/// How long a sign-in link stays good.
pub const LINK_LIFETIME: Duration = Duration::from_secs(600);

/// The most sign-ins under way at once, and per person.
const MAX_PENDING: usize = 1024;
const MAX_PENDING_PER_OWNER: usize = 8;

/// How long a browser stays signed in to the gateway's sign-in pages.
const BROWSER_SESSION: Duration = Duration::from_secs(12 * 3600);

/// The most browser sessions kept; beyond it the oldest goes.
const MAX_BROWSERS: usize = 4096;

/// The most browser sessions kept per person; beyond it the person's oldest goes, so one
/// person signing in again and again pushes out only their own sessions.
const MAX_BROWSERS_PER_PERSON: usize = 8;

/// Where the sign-in pages live; the callback is under it.
pub(crate) const PAGES: &str = "/upstream-sign-in";

/// One sign-in under way: whose, to which upstream, and how far it got.
pub(crate) struct Pending {
    owner: String,
    upstream: String,
    /// The link's id (also the start of the question's key).
    id: String,
    made: Instant,
    /// The authorization server's URL once the client is registered.
    authorization: tokio::sync::watch::Sender<Option<String>>,
    /// Takes the URL the browser came back to, once.
    came_back: Mutex<Option<tokio::sync::oneshot::Sender<String>>>,
    /// The sign-in's end: `Ok` once the tokens are kept.
    done: tokio::sync::watch::Sender<Option<Result<(), String>>>,
}

impl Pending {
    fn expired(&self) -> bool {
        self.made.elapsed() > LINK_LIFETIME
    }

    fn finished(&self) -> bool {
        self.done.borrow().is_some()
    }

    /// Wait for the sign-in's end, at most `wait`.
    async fn finish(&self, wait: Duration) -> Result<(), String> {
        let mut done = self.done.subscribe();
        let ended = tokio::time::timeout(wait, done.wait_for(Option::is_some)).await;
        match ended {
            Ok(Ok(end)) => end.clone().unwrap_or_else(|| Err("no end".into())),
            Ok(Err(_)) => Err("the sign-in was abandoned".into()),
            Err(_) => Err(format!(
                "the sign-in did not finish within {} s",
                wait.as_secs()
            )),
        }
    }
}

/// The per-person upstreams, their people's tokens, and the sign-ins under way.
pub(crate) struct Personal {
    upstreams: BTreeSet<String>,
    vault: Arc<Vault>,
    /// Sign-ins under way, by link id.
    pending: Mutex<HashMap<String, Arc<Pending>>>,
    /// Link ids by the OAuth `state` the authorization server sends back.
    by_state: Mutex<HashMap<String, String>>,
    /// Browsers signed in to the sign-in pages: owner key and until when, by cookie.
    browsers: Mutex<HashMap<String, (String, Instant)>>,
    /// The gateway's address as browsers reach it (links and the redirect URI).
    base: Mutex<Option<String>>,
    /// How a browser proves who it is (the gateway's front door); `None` on a gateway without
    /// sign-in, whose one trusted person needs no proof.
    front: Mutex<Option<Arc<ResourceServer>>>,
    /// Each person's open connections to a per-person upstream, by owner, what the client
    /// declared, and upstream.
    hosts: tokio::sync::Mutex<HashMap<HostKey, Arc<Host<Switchboard>>>>,
}

/// Whose connection to which upstream, declaring what.
type HostKey = (String, Declared, String);

/// The most per-person connections kept open; beyond it the oldest go (they open again).
const MAX_HOSTS: usize = 1024;

impl std::fmt::Debug for Personal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Personal")
            .field("upstreams", &self.upstreams)
            .finish_non_exhaustive()
    }
}

/// A fresh unguessable id (256 random bits, URL-safe).
pub(crate) fn fresh_id() -> Result<String, ErrorData> {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorData::internal_error(format!("no random id: {e}"), None))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// How a per-person call ends before it reaches the upstream.
pub(crate) enum NotSignedIn {
    /// A tool error the model reads (declined, no URL elicitation, the sign-in failed).
    Tool(String),
    /// The question goes to a 2026-07-28 client as a round, or the request failed.
    Protocol(ErrorData),
}

impl From<ErrorData> for NotSignedIn {
    fn from(error: ErrorData) -> Self {
        NotSignedIn::Protocol(error)
    }
}

impl Personal {
    pub(crate) fn new(upstreams: BTreeSet<String>, vault: Vault) -> Personal {
        Personal {
            upstreams,
            vault: Arc::new(vault),
            pending: Mutex::default(),
            by_state: Mutex::default(),
            browsers: Mutex::default(),
            base: Mutex::default(),
            front: Mutex::default(),
            hosts: tokio::sync::Mutex::default(),
        }
    }

    /// `owner`'s open connection to `upstream` declaring `declared`, if one is.
    pub(crate) async fn host(
        &self,
        owner: &str,
        declared: Declared,
        upstream: &str,
    ) -> Option<Arc<Host<Switchboard>>> {
        let key = (owner.to_owned(), declared, upstream.to_owned());
        self.hosts.lock().await.get(&key).cloned()
    }

    /// Some person's open connection to `upstream`.
    pub(crate) async fn any_host(&self, upstream: &str) -> Option<Arc<Host<Switchboard>>> {
        let hosts = self.hosts.lock().await;
        hosts
            .iter()
            .find(|((_, _, to), _)| to == upstream)
            .map(|(_, host)| host.clone())
    }

    /// Keep `host` as `owner`'s connection to `upstream` declaring `declared`.
    pub(crate) async fn keep_host(
        &self,
        owner: &str,
        declared: Declared,
        upstream: &str,
        host: Arc<Host<Switchboard>>,
    ) {
        let mut hosts = self.hosts.lock().await;
        if hosts.len() >= MAX_HOSTS
            && let Some(first) = hosts.keys().next().cloned()
        {
            hosts.remove(&first);
        }
        hosts.insert((owner.to_owned(), declared, upstream.to_owned()), host);
    }

    /// Whether `upstream` signs each person in on their own.
    pub(crate) fn covers(&self, upstream: &str) -> bool {
        self.upstreams.contains(upstream)
    }

    /// The per-person upstreams.
    pub(crate) fn upstreams(&self) -> &BTreeSet<String> {
        &self.upstreams
    }

    /// Where browsers reach the gateway, and how they prove who they are.
    pub(crate) fn serve_at(&self, base: &str, front: Option<Arc<ResourceServer>>) {
        *lock(&self.base) = Some(base.trim_end_matches('/').to_owned());
        *lock(&self.front) = front;
    }

    fn base(&self) -> Result<String, String> {
        lock(&self.base).clone().ok_or_else(|| {
            "the gateway serves no sign-in pages (it is not served over HTTP)".to_owned()
        })
    }

    /// `owner`'s tokens for `upstream` as the host's credential store.
    pub(crate) fn credentials(&self, owner: &str, upstream: &str) -> SharedCredentials {
        SharedCredentials(Arc::new(vault::PersonStore {
            vault: self.vault.clone(),
            owner: owner.to_owned(),
            upstream: upstream.to_owned(),
        }))
    }

    /// The sign-in settings of `owner`'s connection to `upstream`: `configured` with the
    /// person's store and the gateway's callback.
    pub(crate) fn auth_for(
        &self,
        owner: &str,
        upstream: &str,
        configured: Option<&AuthConfig>,
    ) -> Result<AuthConfig, String> {
        let mut auth = configured.cloned().unwrap_or_default();
        auth.token_file = None;
        auth.bearer_file = None;
        auth.credentials = Some(self.credentials(owner, upstream));
        auth.redirect_uri = Some(format!("{}{PAGES}/callback", self.base()?));
        Ok(auth)
    }

    /// Whether `owner` holds tokens for `upstream`.
    pub(crate) async fn signed_in(&self, owner: &str, upstream: &str) -> bool {
        match self.vault.load(owner, upstream).await {
            Ok(found) => found.is_some(),
            Err(error) => {
                tracing::warn!(%upstream, %error, "the gateway's token store could not be read");
                false
            }
        }
    }

    /// Forget `owner`'s tokens for `upstream` (the upstream refused them, or they signed
    /// out); whether there were any.
    pub(crate) async fn forget(&self, owner: &str, upstream: &str) -> bool {
        self.hosts
            .lock()
            .await
            .retain(|(whose, _, to), _| !(whose == owner && to == upstream));
        match self.vault.clear(owner, upstream).await {
            Ok(had) => had,
            Err(error) => {
                tracing::warn!(%upstream, %error, "the gateway's token store could not be cleared");
                false
            }
        }
    }

    /// Ask the person of `ctx` (`owner`) to sign in to `upstream` at `url` with `auth`, and
    /// wait until they have: `Ok` once their tokens are kept.
    pub(crate) async fn ask(
        self: &Arc<Self>,
        ctx: &Ctx,
        owner: &str,
        upstream: &str,
        url: &str,
        auth: AuthConfig,
    ) -> Result<(), NotSignedIn> {
        let pending = self.pending_for(owner, upstream, url, auth)?;
        let link = format!(
            "{}{PAGES}/{}",
            self.base().map_err(NotSignedIn::Tool)?,
            pending.id
        );
        let key = format!("sign-in-{upstream}-{}", &pending.id[..12]);
        let message = format!(
            "The server {upstream:?} needs you to sign in with your own account. Open the link \
             and sign in; the call goes on once you have."
        );
        match ctx
            .elicit_url(&key, message, &link)
            .await
            .map_err(|suspend| {
                tracing::info!(%upstream, "asking the person to sign in to an upstream");
                NotSignedIn::Protocol(suspend.into())
            })? {
            UrlElicited::Accepted { elicitation_id } => {
                pending.finish(SIGN_IN_WAIT).await.map_err(|why| {
                    NotSignedIn::Tool(format!(
                        "Signing in to {upstream:?} did not complete ({why}); nothing was \
                             sent to it. Call again to get a new link."
                    ))
                })?;
                ctx.url_elicitation_complete(&elicitation_id).await;
                Ok(())
            }
            UrlElicited::Declined | UrlElicited::Cancelled => Err(NotSignedIn::Tool(format!(
                "Signing in to {upstream:?} was declined; nothing was sent to it."
            ))),
            UrlElicited::Unsupported => Err(NotSignedIn::Tool(format!(
                "The server {upstream:?} needs you to sign in with your own account, and this \
                 client cannot open links: open {link} in your browser, sign in, then call \
                 again. Nothing was sent to it."
            ))),
            UrlElicited::TimedOut => Err(NotSignedIn::Tool(format!(
                "Nobody answered the request to sign in to {upstream:?}; nothing was sent to it."
            ))),
        }
    }

    /// `owner`'s sign-in to `upstream` under way (still good), or a new one started.
    fn pending_for(
        self: &Arc<Self>,
        owner: &str,
        upstream: &str,
        url: &str,
        auth: AuthConfig,
    ) -> Result<Arc<Pending>, NotSignedIn> {
        let mut pending = lock(&self.pending);
        pending.retain(|_, sign_in| !sign_in.expired());
        if let Some(found) = pending
            .values()
            .find(|p| p.owner == owner && p.upstream == upstream && !p.finished())
        {
            return Ok(found.clone());
        }
        let theirs = pending.values().filter(|p| p.owner == owner).count();
        if theirs >= MAX_PENDING_PER_OWNER || pending.len() >= MAX_PENDING {
            return Err(NotSignedIn::Tool(
                "Too many sign-ins are under way on this gateway; finish or abandon one first."
                    .into(),
            ));
        }
        let (came_back, back) = tokio::sync::oneshot::channel();
        let sign_in = Arc::new(Pending {
            owner: owner.to_owned(),
            upstream: upstream.to_owned(),
            id: fresh_id()?,
            made: Instant::now(),
            authorization: tokio::sync::watch::channel(None).0,
            came_back: Mutex::new(Some(came_back)),
            done: tokio::sync::watch::channel(None).0,
        });
        pending.insert(sign_in.id.clone(), sign_in.clone());
        drop(pending);
        tokio::spawn(
            self.clone()
                .run(sign_in.clone(), url.to_owned(), auth, back),
        );
        Ok(sign_in)
    }

    /// Take `sign_in` through the upstream's authorization server: the authorization URL made
    /// (the link's page sends the browser there), the browser's return awaited, the code
    /// exchanged (the tokens go to the person's store).
    async fn run(
        self: Arc<Self>,
        sign_in: Arc<Pending>,
        url: String,
        auth: AuthConfig,
        back: tokio::sync::oneshot::Receiver<String>,
    ) {
        let authorize = |authorization: String| {
            let (this, sign_in) = (self.clone(), sign_in.clone());
            async move {
                let state = reqwest::Url::parse(&authorization).ok().and_then(|parsed| {
                    parsed
                        .query_pairs()
                        .find(|(name, _)| name == "state")
                        .map(|(_, value)| value.into_owned())
                });
                let Some(state) = state else {
                    return Err(AuthorizeError::Failed(
                        "the authorization URL names no state".into(),
                    ));
                };
                lock(&this.by_state).insert(state, sign_in.id.clone());
                sign_in.authorization.send_replace(Some(authorization));
                match tokio::time::timeout(LINK_LIFETIME, back).await {
                    Ok(Ok(came_back)) => Ok(came_back),
                    _ => Err(AuthorizeError::Failed(
                        "the browser did not come back in time".into(),
                    )),
                }
            }
        };
        let end = backchannel_host::auth::sign_in_with(&url, &auth, "mcp-gateway", authorize).await;
        match &end {
            Ok(()) => {
                tracing::info!(upstream = %sign_in.upstream, "a person signed in to an upstream")
            }
            Err(why) => {
                tracing::warn!(upstream = %sign_in.upstream, %why, "a sign-in to an upstream failed")
            }
        }
        sign_in
            .done
            .send_replace(Some(end.map_err(|why| why.to_string())));
        lock(&self.pending).remove(&sign_in.id);
        lock(&self.by_state).retain(|_, id| *id != sign_in.id);
    }

    fn pending(&self, id: &str) -> Option<Arc<Pending>> {
        lock(&self.pending)
            .get(id)
            .filter(|sign_in| !sign_in.expired())
            .cloned()
    }

    fn pending_by_state(&self, state: &str) -> Option<Arc<Pending>> {
        let id = lock(&self.by_state).get(state).cloned()?;
        self.pending(&id)
    }

    /// The owner a browser's cookie stands for.
    fn browser(&self, cookie: Option<&str>) -> Option<String> {
        let cookie = cookie?;
        let browsers = lock(&self.browsers);
        browsers
            .get(cookie)
            .filter(|(_, until)| *until > Instant::now())
            .map(|(owner, _)| owner.clone())
    }

    /// A browser session for `owner`: its cookie's value. The person's oldest session goes
    /// when they have [`MAX_BROWSERS_PER_PERSON`], and anyone's oldest when the table is full.
    fn sign_browser_in(&self, owner: String) -> Result<String, ErrorData> {
        let cookie = fresh_id()?;
        let now = Instant::now();
        let mut browsers = lock(&self.browsers);
        browsers.retain(|_, (_, until)| *until > now);
        let oldest = |browsers: &HashMap<String, (String, Instant)>, of: Option<&str>| {
            browsers
                .iter()
                .filter(|(_, (whose, _))| of.is_none_or(|of| whose == of))
                .min_by_key(|(_, (_, until))| *until)
                .map(|(cookie, _)| cookie.clone())
        };
        let theirs = browsers
            .values()
            .filter(|(whose, _)| *whose == owner)
            .count();
        if theirs >= MAX_BROWSERS_PER_PERSON
            && let Some(oldest) = oldest(&browsers, Some(&owner))
        {
            browsers.remove(&oldest);
        }
        if browsers.len() >= MAX_BROWSERS
            && let Some(oldest) = oldest(&browsers, None)
        {
            browsers.remove(&oldest);
        }
        browsers.insert(cookie.clone(), (owner, now + BROWSER_SESSION));
        Ok(cookie)
    }

    /// Whether a browser whose cookie names `browser` may act for `owner`: on a gateway with
    /// sign-in only the same person; on one without, its one trusted person.
    fn may_act_for(&self, browser: Option<&str>, owner: &str) -> Access {
        if lock(&self.front).is_none() {
            return Access::Yes;
        }
        match self.browser(browser) {
            None => Access::SignInFirst,
            Some(signed_in) if signed_in == owner => Access::Yes,
            Some(_) => Access::SomeoneElse,
        }
    }
}

/// What a browser may do with a sign-in.
#[derive(Debug, PartialEq, Eq)]
enum Access {
    Yes,
    SignInFirst,
    SomeoneElse,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finding 7 of issue 71: one person signing in 4,100 times cleared every browser session
    /// (the table was emptied whole when full).
    #[tokio::test]
    async fn one_person_signing_in_again_and_again_signs_out_only_their_own_browsers() {
        let vault = Vault::open("sqlite::memory:", backchannel::Sealer::random().unwrap())
            .await
            .unwrap();
        let personal = Personal::new(BTreeSet::new(), vault);
        let tokens = backchannel::serve::Tokens::parse(&format!("ana={}", "a".repeat(32))).unwrap();
        let front = ResourceServer::tokens("http://gateway.example/mcp", "gateway", tokens);
        *lock(&personal.front) = Some(Arc::new(front.unwrap()));
        let anas = personal.sign_browser_in("principal:ana".into()).unwrap();
        let mut bens = Vec::new();
        for _ in 0..MAX_BROWSERS + 100 {
            bens.push(personal.sign_browser_in("principal:ben".into()).unwrap());
        }
        assert_eq!(
            personal.may_act_for(Some(&anas), "principal:ana"),
            Access::Yes
        );
        let kept = bens
            .iter()
            .filter(|cookie| personal.may_act_for(Some(cookie), "principal:ben") == Access::Yes)
            .count();
        assert_eq!(kept, MAX_BROWSERS_PER_PERSON);
        assert_eq!(
            personal.may_act_for(bens.last().map(String::as_str), "principal:ben"),
            Access::Yes,
            "the newest is kept"
        );
        assert_eq!(lock(&personal.browsers).len(), MAX_BROWSERS_PER_PERSON + 1);
    }
}
