//! The rules over the store: who may do what, the checks on input, and the error each
//! failure reads as. The GraphQL schema and the MCP tools both come through here.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use chrono::Utc;

use crate::auth::{self, TokenKeys};
use crate::domain::*;
use crate::store::{PersonDeletion, Store, StoreError, Writes};
use crate::summary::{self, ReviewSummary, ReviewText};

/// A failure of a service call: one the caller caused, or one inside the server.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The caller's request cannot be done as asked.
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// The server failed; callers see only a reference.
    #[error(transparent)]
    Internal(StoreError),
}

impl From<StoreError> for ServiceError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Duplicate => ServiceError::Domain(DomainError::BadRequest {
                field: None,
                message: "The request conflicts with existing data (it already exists).".into(),
            }),
            other => ServiceError::Internal(other),
        }
    }
}

/// What a service call returns.
pub type ServiceResult<T> = Result<T, ServiceError>;

/// The signed-in user a request acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewer {
    /// Username (the token's subject, or the stdio user).
    pub username: String,
    /// Role.
    pub role: Role,
}

/// A signed-in session: a token and who it is for.
#[derive(Debug, Clone)]
pub struct SignedIn {
    /// The bearer token.
    pub token: String,
    /// The account.
    pub user: User,
}

/// The address a request came from (put into GraphQL requests by the HTTP layer), for the
/// sign-in limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

/// The longest password checked; longer ones are wrong without hashing.
pub const MAX_PASSWORD_BYTES: usize = 1024;

fn throttled(what: &str, wait: std::time::Duration) -> ServiceError {
    let seconds = wait.as_secs().max(1);
    DomainError::Throttled {
        message: format!("{what}; try again in {seconds} s."),
        retry_after_secs: seconds,
    }
    .into()
}

/// The movie database's operations. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Catalog {
    // The only holder of the store's writes: see `Writes`.
    store: Writes,
    keys: TokenKeys,
    sign_in: Arc<crate::limits::SignInLimits>,
    reviews: tokio::sync::broadcast::Sender<Review>,
    movies: Arc<MovieCache>,
}

/// Every movie, kept in memory for recommendations and forgotten on every movie write made
/// through the catalogue. A read that raced a write does not put the old list back: it is
/// stored only if no write happened since it started (generation check). The catalogue must
/// be its database's only writer of movies, so on a shared database (PostgreSQL, where other
/// instances write) the cache is off and every read goes to the database.
#[derive(Debug, Default)]
struct MovieCache {
    enabled: bool,
    state: Mutex<(u64, Option<Arc<Vec<Movie>>>)>,
}

impl MovieCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Option<Arc<Vec<Movie>>>)> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn get(&self, store: &Store) -> Result<Arc<Vec<Movie>>, StoreError> {
        if !self.enabled {
            return Ok(Arc::new(store.all_movies().await?));
        }
        let generation = {
            let state = self.lock();
            if let Some(movies) = &state.1 {
                return Ok(movies.clone());
            }
            state.0
        };
        let movies = Arc::new(store.all_movies().await?);
        let mut state = self.lock();
        if state.0 == generation {
            state.1 = Some(movies.clone());
        }
        Ok(movies)
    }

    fn forget(&self) {
        let mut state = self.lock();
        state.0 += 1;
        state.1 = None;
    }
}

fn require(viewer: Option<&Viewer>) -> Result<&Viewer, DomainError> {
    viewer.ok_or_else(DomainError::sign_in_needed)
}

impl Catalog {
    /// The operations over `store`, signing tokens with `keys`.
    pub fn new(store: Store, keys: TokenKeys) -> Self {
        Self {
            sign_in: Arc::new(crate::limits::SignInLimits::new(store.shared_state())),
            movies: Arc::new(MovieCache {
                enabled: !store.is_shared(),
                ..MovieCache::default()
            }),
            store: Writes::new(store),
            keys,
            reviews: tokio::sync::broadcast::channel(256).0,
        }
    }

    /// Every review written from now on. A receiver that falls more than 256 reviews behind
    /// skips the oldest.
    pub fn subscribe_reviews(&self) -> tokio::sync::broadcast::Receiver<Review> {
        self.reviews.subscribe()
    }

    /// How many review subscriptions are open.
    pub fn review_subscribers(&self) -> usize {
        self.reviews.receiver_count()
    }

    /// The store, read-only: writes go through the catalogue's own methods.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The token keys.
    pub fn keys(&self) -> &TokenKeys {
        &self.keys
    }

    /// The account behind `viewer`.
    pub async fn account(&self, viewer: &Viewer) -> ServiceResult<User> {
        self.store
            .user_by_name(&viewer.username)
            .await?
            .ok_or_else(|| {
                DomainError::NotFound {
                    entity: "AppUser",
                    message: format!("Entity AppUser not found for username: {}", viewer.username),
                }
                .into()
            })
    }

    async fn signed_in(&self, viewer: Option<&Viewer>) -> ServiceResult<User> {
        self.account(require(viewer)?).await
    }

    /// Sign in: a token for the account whose password matches. Attempts are limited per
    /// client address and failures per account; password hashes run two at a time.
    pub async fn login(
        &self,
        username: &str,
        password: &str,
        address: Option<IpAddr>,
    ) -> ServiceResult<SignedIn> {
        self.attempt_from(address).await?;
        let account = format!("account:{}", username.trim().to_lowercase());
        let wait = self.sign_in.failures_per_account.wait(&account).await;
        if !wait.is_zero() {
            return Err(throttled("Too many failed sign-ins for this account", wait));
        }
        let user = self.store.user_by_name(username.trim()).await?;
        // Verify against a dummy hash when the user is unknown, so timing does not tell.
        let hash = user
            .as_ref()
            .map(|u| u.password_hash.clone())
            .unwrap_or_else(|| DUMMY_HASH.to_owned());
        let ok = password.len() <= MAX_PASSWORD_BYTES
            && auth::verify_password_pooled(password.to_owned(), hash).await;
        match user {
            Some(user) if ok => Ok(SignedIn {
                token: self.keys.issue(&user.username, user.role, Utc::now()),
                user,
            }),
            _ => {
                let _ = self.sign_in.failures_per_account.take(&account).await;
                Err(DomainError::invalid("credentials", "Invalid credentials").into())
            }
        }
    }

    /// Count a sign-in or registration attempt from `address`.
    async fn attempt_from(&self, address: Option<IpAddr>) -> ServiceResult<()> {
        if let Some(address) = address
            && let Err(wait) = self
                .sign_in
                .per_address
                .take(&format!("addr:{address}"))
                .await
        {
            return Err(throttled(
                "Too many sign-in attempts from this address",
                wait,
            ));
        }
        Ok(())
    }

    /// Create a USER account and sign it in.
    pub async fn register(
        &self,
        username: &str,
        email: &str,
        password: &str,
        address: Option<IpAddr>,
    ) -> ServiceResult<SignedIn> {
        self.attempt_from(address).await?;
        let username = username.trim();
        let email = email.trim();
        validate_registration(username, email, password)?;
        if self.store.user_by_name(username).await?.is_some() {
            return Err(DomainError::invalid("username", "That username is already taken.").into());
        }
        let hash = auth::hash_password_pooled(password.to_owned())
            .await
            .map_err(|e| ServiceError::Internal(StoreError::Seed(e.to_string())))?;
        let user = match self
            .store
            .create_user(username, email, &hash, Role::User)
            .await
        {
            Err(StoreError::Duplicate) => {
                return Err(
                    DomainError::invalid("username", "That username is already taken.").into(),
                );
            }
            other => other?,
        };
        Ok(SignedIn {
            token: self.keys.issue(&user.username, user.role, Utc::now()),
            user,
        })
    }

    /// One movie; `None` for an unknown id.
    pub async fn movie(&self, id: i64) -> ServiceResult<Option<Movie>> {
        Ok(self.store.movie(id).await?)
    }

    /// The movies `mood` recommends; with `exclude_watched`, minus what a signed-in viewer
    /// has marked WATCHED (for anonymous callers the flag changes nothing).
    pub async fn recommend(
        &self,
        mood: Mood,
        exclude_watched: bool,
        viewer: Option<&Viewer>,
    ) -> ServiceResult<Vec<Movie>> {
        let movies = self.movies.get(&self.store).await?;
        let exclude = match (exclude_watched, viewer) {
            (true, Some(viewer)) => match self.store.user_by_name(&viewer.username).await? {
                Some(user) => self.store.watched_movie_ids(user.id).await?,
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        Ok(recommend(mood, &movies, &exclude))
    }

    /// The reviews of a movie as the summariser reads them; an unknown movie has none.
    pub async fn review_texts(&self, movie_id: i64) -> ServiceResult<Vec<ReviewText>> {
        Ok(self
            .store
            .reviews(Subject::Movie(movie_id))
            .await?
            .into_iter()
            .map(|r| ReviewText {
                score: r.score,
                comment: r.comment,
            })
            .collect())
    }

    /// The server-side review summary of a movie; NOT_FOUND for an unknown movie.
    pub async fn summarize_reviews(&self, id: i64) -> ServiceResult<ReviewSummary> {
        if self.store.movie(id).await?.is_none() {
            return Err(DomainError::not_found("Movie", id).into());
        }
        let reviews = self.review_texts(id).await?;
        summary::summarize(id, &reviews, async |reviews| {
            Ok(summary::server_prose(reviews))
        })
        .await
    }

    /// Write a review of a title as the viewer.
    pub async fn create_review(
        &self,
        viewer: Option<&Viewer>,
        subject: Subject,
        score: i32,
        comment: Option<&str>,
    ) -> ServiceResult<Review> {
        let user = self.signed_in(viewer).await?;
        validate_review(score, comment)?;
        self.check_subject(subject).await?;
        let review = match self
            .store
            .create_review(user.id, subject, score, comment)
            .await
        {
            Err(StoreError::Duplicate) => {
                return Err(DomainError::BadRequest {
                    field: None,
                    message: "You have already reviewed this title.".into(),
                }
                .into());
            }
            other => other?,
        };
        // Nobody listening is not an error.
        let _ = self.reviews.send(review.clone());
        Ok(review)
    }

    /// Delete a review: its author or an admin.
    pub async fn delete_review(&self, viewer: Option<&Viewer>, id: i64) -> ServiceResult<()> {
        let user = self.signed_in(viewer).await?;
        let review = self
            .store
            .review(id)
            .await?
            .ok_or_else(|| DomainError::not_found("Review", id))?;
        if review.user_id != user.id && user.role != Role::Admin {
            return Err(DomainError::Forbidden(
                "Only the review's author or an admin may delete it.".into(),
            )
            .into());
        }
        self.store.delete_review(id).await?;
        Ok(())
    }

    async fn check_subject(&self, subject: Subject) -> ServiceResult<()> {
        if self.store.subject_exists(subject).await? {
            return Ok(());
        }
        Err(match subject {
            Subject::Movie(id) => DomainError::not_found("Movie", id),
            Subject::TvShow(id) => DomainError::not_found("TvShow", id),
        }
        .into())
    }

    /// The viewer's watch list.
    pub async fn watchlist(&self, viewer: Option<&Viewer>) -> ServiceResult<Vec<WatchlistItem>> {
        let user = self.signed_in(viewer).await?;
        Ok(self.store.watchlist(user.id).await?)
    }

    /// Whether the viewer already has `subject` on their list (checked before asking them
    /// anything about it).
    pub async fn watchlist_entry_for(
        &self,
        viewer: Option<&Viewer>,
        subject: Subject,
    ) -> ServiceResult<Option<WatchlistItem>> {
        let user = self.signed_in(viewer).await?;
        Ok(self.store.watchlist_entry_for(user.id, subject).await?)
    }

    /// Put a title on the viewer's list (WANT_TO_WATCH unless `status` says otherwise).
    pub async fn add_to_watchlist(
        &self,
        viewer: Option<&Viewer>,
        subject: Subject,
        status: Option<WatchStatus>,
    ) -> ServiceResult<WatchlistItem> {
        let user = self.signed_in(viewer).await?;
        self.check_subject(subject).await?;
        let duplicate = |message: &str| DomainError::BadRequest {
            field: None,
            message: message.to_owned(),
        };
        if self
            .store
            .watchlist_entry_for(user.id, subject)
            .await?
            .is_some()
        {
            return Err(match subject {
                Subject::Movie(_) => duplicate("This movie is already in your watch list"),
                Subject::TvShow(_) => duplicate("This show is already in your watch list"),
            }
            .into());
        }
        match self
            .store
            .add_to_watchlist(user.id, subject, status.unwrap_or(WatchStatus::WantToWatch))
            .await
        {
            // Another request added it between the check and the insert.
            Err(StoreError::Duplicate) => {
                Err(duplicate("This title is already in your watch list").into())
            }
            other => Ok(other?),
        }
    }

    /// Change an entry's status.
    pub async fn set_watch_status(
        &self,
        viewer: Option<&Viewer>,
        raw_id: &str,
        status: WatchStatus,
    ) -> ServiceResult<bool> {
        let user = self.signed_in(viewer).await?;
        let id = parse_id("itemId", raw_id)?;
        if !self.store.set_watch_status(user.id, id, status).await? {
            return Err(DomainError::not_found("WatchlistItem", id).into());
        }
        Ok(true)
    }

    /// Remove an entry.
    pub async fn remove_from_watchlist(
        &self,
        viewer: Option<&Viewer>,
        raw_id: &str,
    ) -> ServiceResult<bool> {
        let user = self.signed_in(viewer).await?;
        let id = parse_id("itemId", raw_id)?;
        if !self.store.remove_from_watchlist(user.id, id).await? {
            return Err(DomainError::not_found("WatchlistItem", id).into());
        }
        Ok(true)
    }

    fn require_admin(viewer: Option<&Viewer>) -> Result<(), DomainError> {
        let viewer = require(viewer)?;
        if viewer.role != Role::Admin {
            return Err(DomainError::Forbidden(
                "Only an admin may change the catalogue.".into(),
            ));
        }
        Ok(())
    }

    /// Add a movie (admin).
    pub async fn create_movie(
        &self,
        viewer: Option<&Viewer>,
        input: &MovieInput,
    ) -> ServiceResult<Movie> {
        Self::require_admin(viewer)?;
        input.validate_new()?;
        let created = self.store.create_movie(input).await;
        self.movies.forget();
        Ok(created?)
    }

    /// Change a movie (admin); absent fields stay.
    pub async fn update_movie(
        &self,
        viewer: Option<&Viewer>,
        id: i64,
        input: &MovieInput,
    ) -> ServiceResult<Movie> {
        Self::require_admin(viewer)?;
        input.validate()?;
        let updated = self.store.update_movie(id, input).await;
        self.movies.forget();
        updated?.ok_or_else(|| DomainError::not_found("Movie", id).into())
    }

    /// Delete a movie (admin).
    pub async fn delete_movie(&self, viewer: Option<&Viewer>, id: i64) -> ServiceResult<bool> {
        Self::require_admin(viewer)?;
        let deleted = self.store.delete_movie(id).await;
        self.movies.forget();
        Ok(deleted?)
    }

    /// Add a person (admin).
    pub async fn create_person(
        &self,
        viewer: Option<&Viewer>,
        input: &PersonInput,
    ) -> ServiceResult<Person> {
        Self::require_admin(viewer)?;
        input.validate_new()?;
        Ok(self.store.create_person(input).await?)
    }

    /// Change a person (admin); absent fields stay.
    pub async fn update_person(
        &self,
        viewer: Option<&Viewer>,
        id: i64,
        input: &PersonInput,
    ) -> ServiceResult<Person> {
        Self::require_admin(viewer)?;
        input.validate()?;
        self.store
            .update_person(id, input)
            .await?
            .ok_or_else(|| DomainError::not_found("Person", id).into())
    }

    /// Delete a person (admin); without `force`, a credited person is refused.
    pub async fn delete_person(
        &self,
        viewer: Option<&Viewer>,
        id: i64,
        force: bool,
    ) -> ServiceResult<PersonDeletion> {
        Self::require_admin(viewer)?;
        Ok(self.store.delete_person(id, force).await?)
    }
}

/// An Argon2 hash of a random password, checked against when the username is unknown.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$2Jm0yLrBkuyHGeqz2rq1uXj5ASwhIEFPBGvtU+ZB4ok";
