//! Passwords (Argon2id) and sign-in tokens (JWT, HS256, 24 hours by default).

use std::time::Duration;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, SaltString};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::domain::Role;

/// How long a token is valid by default: 24 hours.
pub const DEFAULT_TOKEN_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// `N` bytes from the operating system's random source (through `uuid`'s v4 generator).
fn random_bytes<const N: usize>() -> Vec<u8> {
    let mut bytes = Vec::with_capacity(N + 16);
    while bytes.len() < N {
        bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    }
    bytes.truncate(N);
    bytes
}

/// Argon2 needs a 19 MiB work area per hash. Each hashing thread keeps one and reuses it, so
/// the allocator never sees those mebibytes come and go (glibc would otherwise keep them in
/// per-thread arenas: an idle server held 210 MB after hashing its seed accounts).
mod work_area {
    use std::cell::RefCell;

    use argon2::Block;

    thread_local! {
        static WORK: RefCell<Vec<Block>> = const { RefCell::new(Vec::new()) };
    }

    /// The most blocks a hash may ask for (64 MiB): a stored hash with larger parameters is
    /// refused rather than allowed to allocate.
    pub(super) const MAX_BLOCKS: usize = 64 * 1024;

    pub(super) fn with<T>(blocks: usize, f: impl FnOnce(&mut [Block]) -> T) -> Option<T> {
        if blocks > MAX_BLOCKS {
            return None;
        }
        WORK.with(|work| {
            let mut work = work.borrow_mut();
            if work.len() < blocks {
                work.resize(blocks, Block::default());
            }
            Some(f(&mut work[..blocks]))
        })
    }
}

/// Password hashes run on two threads of their own, in the order they arrive, so at most two
/// work areas exist however many people sign in at once.
mod pool {
    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::sync::{Arc, Mutex, OnceLock};

    type Job = Box<dyn FnOnce() + Send>;

    /// Threads that hash.
    pub(super) const THREADS: usize = 2;

    fn jobs() -> &'static Mutex<Sender<Job>> {
        static JOBS: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
        JOBS.get_or_init(|| {
            let (sender, receiver) = channel::<Job>();
            let receiver: Arc<Mutex<Receiver<Job>>> = Arc::new(Mutex::new(receiver));
            for i in 0..THREADS {
                let receiver = receiver.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("password-hash-{i}"))
                    .spawn(move || {
                        loop {
                            let job = receiver
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .recv();
                            match job {
                                Ok(job) => job(),
                                Err(_) => return,
                            }
                        }
                    });
                if let Err(error) = spawned {
                    tracing::error!(%error, "could not start a password-hashing thread");
                }
            }
            Mutex::new(sender)
        })
    }

    /// Run `work` on a hashing thread; `None` if the pool is gone.
    pub(super) async fn run<T: Send + 'static>(
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(work());
        });
        jobs()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .send(job)
            .ok()?;
        rx.await.ok()
    }
}

fn argon2id() -> (Argon2<'static>, argon2::Params) {
    let params = argon2::Params::default();
    (
        Argon2::new(
            argon2::Algorithm::Argon2id,
            argon2::Version::V0x13,
            params.clone(),
        ),
        params,
    )
}

/// Hash a password for storage (Argon2id, default parameters, random salt, PHC string), on
/// this thread.
pub fn hash_password(password: &str) -> Result<String, AuthError> {
    let fail = |e: &dyn std::fmt::Display| AuthError::Hash(e.to_string());
    let salt_bytes = random_bytes::<16>();
    let salt = SaltString::encode_b64(&salt_bytes).map_err(|e| fail(&e))?;
    let (argon, params) = argon2id();
    let mut out = [0u8; argon2::Params::DEFAULT_OUTPUT_LEN];
    work_area::with(params.block_count(), |blocks| {
        argon.hash_password_into_with_memory(password.as_bytes(), &salt_bytes, &mut out, blocks)
    })
    .ok_or_else(|| AuthError::Hash("work area too large".into()))?
    .map_err(|e| fail(&e))?;
    let hash = PasswordHash {
        algorithm: argon2::ARGON2ID_IDENT,
        version: Some(argon2::Version::V0x13.into()),
        params: argon2::password_hash::ParamsString::try_from(&params).map_err(|e| fail(&e))?,
        salt: Some(salt.as_salt()),
        hash: Some(argon2::password_hash::Output::new(&out).map_err(|e| fail(&e))?),
    };
    Ok(hash.to_string())
}

/// Whether `password` matches the stored `hash` (any Argon2 variant and parameters up to a
/// 64 MiB work area), on this thread. A malformed hash never matches.
pub fn verify_password(password: &str, hash: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(hash) else {
        return false;
    };
    let (Ok(algorithm), Ok(params), Some(salt), Some(expected)) = (
        argon2::Algorithm::try_from(parsed.algorithm),
        argon2::Params::try_from(&parsed),
        parsed.salt,
        parsed.hash,
    ) else {
        return false;
    };
    let version = match parsed.version.map(argon2::Version::try_from) {
        None => argon2::Version::V0x13,
        Some(Ok(version)) => version,
        Some(Err(_)) => return false,
    };
    let mut salt_buf = [0u8; 64];
    let Ok(salt_bytes) = salt.decode_b64(&mut salt_buf) else {
        return false;
    };
    let argon = Argon2::new(algorithm, version, params.clone());
    let mut out = vec![0u8; expected.len()];
    let computed = work_area::with(params.block_count(), |blocks| {
        argon.hash_password_into_with_memory(password.as_bytes(), salt_bytes, &mut out, blocks)
    });
    matches!(computed, Some(Ok(()))) && constant_time_eq(&out, expected.as_bytes())
}

/// [`hash_password`] on the hashing threads.
pub async fn hash_password_pooled(password: String) -> Result<String, AuthError> {
    pool::run(move || hash_password(&password))
        .await
        .unwrap_or_else(|| Err(AuthError::Hash("the hashing threads are gone".into())))
}

/// [`verify_password`] on the hashing threads.
pub async fn verify_password_pooled(password: String, hash: String) -> bool {
    pool::run(move || verify_password(&password, &hash))
        .await
        .unwrap_or(false)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Errors of key handling and hashing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    /// The configured secret is not 64 hexadecimal characters.
    #[error(
        "the JWT secret must be 64 hexadecimal characters (256 bits); the configured one is not"
    )]
    BadSecret,
    /// Hashing failed.
    #[error("password hashing failed: {0}")]
    Hash(String),
}

/// Why a presented token was not accepted. The texts are safe to show the caller.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    /// Not three base64url parts of JSON.
    #[error("the bearer token is malformed; sign in again with the login mutation")]
    Malformed,
    /// Signed with another algorithm than HS256.
    #[error("the bearer token uses an unsupported algorithm; only HS256 tokens are accepted")]
    Algorithm,
    /// The signature does not match.
    #[error("the bearer token's signature is invalid; sign in again with the login mutation")]
    Signature,
    /// Past its expiry.
    #[error("the bearer token has expired; sign in again with the login mutation")]
    Expired,
}

/// The claims of a sign-in token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Username.
    pub sub: String,
    /// Role.
    pub role: Role,
    /// Issued at, seconds since the epoch.
    pub iat: i64,
    /// Expires at, seconds since the epoch.
    pub exp: i64,
}

/// The HMAC key that signs and checks tokens. Its `Debug` output never shows the key.
#[derive(Clone)]
pub struct TokenKeys {
    key: Vec<u8>,
    ttl: Duration,
}

impl std::fmt::Debug for TokenKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenKeys")
            .field("key", &"<redacted>")
            .field("ttl", &self.ttl)
            .finish()
    }
}

#[derive(Serialize, Deserialize)]
struct Header {
    alg: String,
    typ: Option<String>,
}

impl TokenKeys {
    /// Keys from a 64-character hexadecimal secret.
    pub fn from_hex(secret: &str) -> Result<Self, AuthError> {
        let key = hex::decode(secret.trim()).map_err(|_| AuthError::BadSecret)?;
        if key.len() != 32 {
            return Err(AuthError::BadSecret);
        }
        Ok(Self {
            key,
            ttl: DEFAULT_TOKEN_TTL,
        })
    }

    /// A random key for this process only: tokens do not survive a restart.
    pub fn random() -> Self {
        Self {
            key: random_bytes::<32>(),
            ttl: DEFAULT_TOKEN_TTL,
        }
    }

    /// The same key with another token lifetime.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC accepts keys of any length.
        match Hmac::<Sha256>::new_from_slice(&self.key) {
            Ok(mac) => mac,
            Err(_) => unreachable!("HMAC takes keys of any length"),
        }
    }

    /// A token for `username` issued at `now`.
    pub fn issue(&self, username: &str, role: Role, now: DateTime<Utc>) -> String {
        let header = r#"{"alg":"HS256","typ":"JWT"}"#;
        let claims = Claims {
            sub: username.to_owned(),
            role,
            iat: now.timestamp(),
            exp: now.timestamp() + self.ttl.as_secs() as i64,
        };
        let claims = serde_json::to_vec(&claims).unwrap_or_default();
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims)
        );
        let mut mac = self.mac();
        mac.update(signing_input.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{signing_input}.{signature}")
    }

    /// Check a token's form, algorithm, signature (in constant time) and expiry at `now`.
    /// Tokens longer than [`MAX_TOKEN_BYTES`] are malformed without being decoded.
    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Claims, TokenError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::Malformed);
        }
        let mut parts = token.trim().split('.');
        let (Some(header), Some(claims), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        let decode = |part: &str| {
            URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| TokenError::Malformed)
        };
        let parsed: Header =
            serde_json::from_slice(&decode(header)?).map_err(|_| TokenError::Malformed)?;
        if parsed.alg != "HS256" {
            return Err(TokenError::Algorithm);
        }
        let mut mac = self.mac();
        mac.update(header.as_bytes());
        mac.update(b".");
        mac.update(claims.as_bytes());
        mac.verify_slice(&decode(signature)?)
            .map_err(|_| TokenError::Signature)?;
        let claims: Claims =
            serde_json::from_slice(&decode(claims)?).map_err(|_| TokenError::Malformed)?;
        if now.timestamp() >= claims.exp {
            return Err(TokenError::Expired);
        }
        Ok(claims)
    }
}

/// The longest bearer token read (ours are about 200 bytes).
pub const MAX_TOKEN_BYTES: usize = 4 * 1024;

/// Fuzz entry (`fuzz/fuzz_targets/jwt.rs`): bytes as a bearer token never verify; a token this
/// server issued, with one byte changed by the input, no longer verifies.
#[doc(hidden)]
pub fn check_token(data: &[u8]) {
    let Ok(keys) = TokenKeys::from_hex(&"5a".repeat(32)) else {
        return;
    };
    let now = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap_or_default();
    let text = String::from_utf8_lossy(data);
    assert!(keys.verify(&text, now).is_err(), "arbitrary bytes verified");
    if let [at, with, ..] = data {
        let mut token = keys.issue("mara", Role::User, now).into_bytes();
        let i = usize::from(*at) % token.len();
        if token[i] != *with {
            token[i] = *with;
            let token = String::from_utf8_lossy(&token);
            // Trimmed whitespace at either end is not a change to the token.
            if token.trim().len() == token.len() {
                assert!(
                    keys.verify(&token, now).is_err(),
                    "a changed token verified"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fuzz_corpus_replays() {
        backchannel::testing::replay_fuzz_corpus("jwt", super::check_token);
    }

    use super::*;

    #[test]
    fn a_token_round_trips_and_expires_after_a_day() {
        let keys = TokenKeys::from_hex(&"ab".repeat(32)).unwrap();
        let now = Utc::now();
        let token = keys.issue("mara", Role::User, now);
        let claims = keys.verify(&token, now).unwrap();
        assert_eq!(
            (claims.sub.as_str(), claims.exp - claims.iat),
            ("mara", 86_400)
        );
        let later = now + chrono::Duration::seconds(86_400);
        assert_eq!(keys.verify(&token, later), Err(TokenError::Expired));
    }

    #[test]
    fn forged_and_malformed_tokens_are_refused() {
        let keys = TokenKeys::random();
        let other = TokenKeys::random();
        let now = Utc::now();
        let token = other.issue("admin", Role::Admin, now);
        assert_eq!(keys.verify(&token, now), Err(TokenError::Signature));
        assert_eq!(keys.verify("abc", now), Err(TokenError::Malformed));
        assert_eq!(keys.verify("a.b.c", now), Err(TokenError::Malformed));
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
            token.split('.').nth(1).unwrap()
        );
        assert_eq!(keys.verify(&none, now), Err(TokenError::Algorithm));
        assert_eq!(
            TokenKeys::from_hex("xyz").unwrap_err(),
            AuthError::BadSecret
        );
        assert!(!format!("{keys:?}").contains(&hex::encode(&keys.key)));
    }

    #[test]
    fn passwords_verify_only_against_their_hash() {
        let hash = hash_password("secret1").unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(verify_password("secret1", &hash));
        assert!(!verify_password("secret2", &hash));
        assert!(!verify_password("secret1", "not a hash"));
        // Hashes written by the argon2 crate's own hasher verify too, and ours verify there.
        use argon2::password_hash::{PasswordHasher, PasswordVerifier};
        let salt = SaltString::encode_b64(b"sixteen byte slt").unwrap();
        let theirs = Argon2::default()
            .hash_password(b"pw", &salt)
            .unwrap()
            .to_string();
        assert!(verify_password("pw", &theirs));
        let ours = PasswordHash::new(&hash).unwrap();
        assert!(Argon2::default().verify_password(b"secret1", &ours).is_ok());
        // Parameters asking for more than the work area allows never match.
        let huge = theirs.replace("m=19456", "m=4000000");
        assert!(!verify_password("pw", &huge));
    }
}
