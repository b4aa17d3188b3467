//! The desk's people: who may sign in to the web UI, from a people file of Argon2id hashes.
//!
//! A people file is a line per person, `NAME:HASH` (the hash a PHC string, as `support-agent
//! people add` writes it); blank lines and lines starting with `#` are skipped. Without a
//! people file the desk has one implicit person (the terminal's user) and serves loopback only.
//!
//! Password checks run on blocking threads, at most [`MAX_CHECKS_AT_ONCE`] at once (each takes
//! a 19 MiB work area), and a name that failed [`MAX_FAILURES`] times in a row is refused for
//! [`LOCKED_FOR`] whatever the password: a guesser's share of the desk is small.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

/// The most password checks run at once.
pub const MAX_CHECKS_AT_ONCE: usize = 2;
/// Failed sign-ins in a row after which a name is refused for a while.
pub const MAX_FAILURES: u32 = 5;
/// How long a name is refused after [`MAX_FAILURES`] failures.
pub const LOCKED_FOR: Duration = Duration::from_secs(60);
/// The longest name and password accepted (checked before any hashing).
pub const MAX_NAME: usize = 64;
/// The longest password accepted.
pub const MAX_PASSWORD: usize = 256;
/// The most memory a stored hash may ask for, in KiB (a larger one never matches).
const MAX_MEMORY_KIB: u32 = 64 * 1024;

/// Why a people file cannot be used, or a person not added.
#[derive(Debug, thiserror::Error)]
pub enum PeopleError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The people file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A line is not `NAME:HASH` with a valid name and an Argon2 PHC hash.
    #[error("{path} line {line}: {why}")]
    Line {
        /// The people file.
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The file names nobody.
    #[error("{0} names nobody: add a person with `support-agent people add NAME --people FILE`")]
    Empty(PathBuf),
    /// A name that cannot be a person's.
    #[error("a name is 1 to {MAX_NAME} letters, digits, '.', '-' or '_': {0:?} is not")]
    BadName(String),
    /// A password too short or too long.
    #[error("a password is 8 to {MAX_PASSWORD} bytes")]
    BadPassword,
    /// Hashing failed.
    #[error("could not hash the password: {0}")]
    Hash(String),
}

/// Why a sign-in was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignInRefused {
    /// Unknown name or wrong password (which of the two is not said).
    #[error("that name and password do not match")]
    NoMatch,
    /// Too many failures for this name just now.
    #[error("too many failed sign-ins for this name: wait a minute and try again")]
    Locked,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// The people who may sign in, and the failures counted per name.
#[derive(Clone)]
pub struct People {
    hashes: Arc<HashMap<String, String>>,
    failures: Arc<Mutex<HashMap<String, (u32, tokio::time::Instant)>>>,
    checks: Arc<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for People {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("People")
            .field("count", &self.hashes.len())
            .finish_non_exhaustive()
    }
}

impl People {
    /// Read a people file (it must name someone).
    pub fn load(path: &Path) -> Result<People, PeopleError> {
        let text = std::fs::read_to_string(path).map_err(|source| PeopleError::Io {
            path: path.to_owned(),
            source,
        })?;
        let hashes = parse(path, &text)?;
        if hashes.is_empty() {
            return Err(PeopleError::Empty(path.to_owned()));
        }
        Ok(People {
            hashes: Arc::new(hashes),
            failures: Arc::default(),
            checks: Arc::new(tokio::sync::Semaphore::new(MAX_CHECKS_AT_ONCE)),
        })
    }

    /// How many people may sign in.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Whether `name` may sign in.
    pub fn contains(&self, name: &str) -> bool {
        self.hashes.contains_key(name)
    }

    /// Whether nobody may (never true of a loaded file).
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Check `name` and `password`; the person's name when they match.
    pub async fn sign_in(&self, name: &str, password: &str) -> Result<String, SignInRefused> {
        if name.len() > MAX_NAME || password.len() > MAX_PASSWORD {
            return Err(SignInRefused::NoMatch);
        }
        let now = tokio::time::Instant::now();
        if let Some((count, since)) = self.lock_failures().get(name)
            && *count >= MAX_FAILURES
            && now.duration_since(*since) < LOCKED_FOR
        {
            return Err(SignInRefused::Locked);
        }
        // An unknown name costs the same check as a known one, so timing does not tell them
        // apart.
        let hash = self
            .hashes
            .get(name)
            .cloned()
            .unwrap_or_else(|| DUMMY_HASH.to_owned());
        let known = self.hashes.contains_key(name);
        let password = password.to_owned();
        let matched = {
            let _slot = self
                .checks
                .acquire()
                .await
                .map_err(|_| SignInRefused::NoMatch)?;
            tokio::task::spawn_blocking(move || verify(&password, &hash))
                .await
                .unwrap_or(false)
        };
        let mut failures = self.lock_failures();
        if matched && known {
            failures.remove(name);
            return Ok(name.to_owned());
        }
        if known {
            let entry = failures.entry(name.to_owned()).or_insert((0, now));
            if now.duration_since(entry.1) >= LOCKED_FOR {
                *entry = (0, now);
            }
            entry.0 += 1;
            entry.1 = now;
        }
        Err(SignInRefused::NoMatch)
    }

    fn lock_failures(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (u32, tokio::time::Instant)>> {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A valid hash of no one's password, checked for unknown names.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$3fgrKp5pAsDnXvE/xrNKa4XXdhy6Kxov2gOJixWlxRE";

fn parse(path: &Path, text: &str) -> Result<HashMap<String, String>, PeopleError> {
    let mut hashes = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| PeopleError::Line {
            path: path.to_owned(),
            line: index + 1,
            why: why.to_owned(),
        };
        let (name, hash) = line
            .split_once(':')
            .ok_or_else(|| bad("expected NAME:HASH"))?;
        if !valid_name(name) {
            return Err(bad(&format!(
                "{name:?} is not a name (1 to {MAX_NAME} letters, digits, '.', '-' or '_')"
            )));
        }
        let parsed = PasswordHash::new(hash).map_err(|e| bad(&format!("not a PHC hash: {e}")))?;
        if !parsed.algorithm.as_str().starts_with("argon2") {
            return Err(bad("not an Argon2 hash"));
        }
        if hashes.insert(name.to_owned(), hash.to_owned()).is_some() {
            return Err(bad(&format!("{name} is named twice")));
        }
    }
    Ok(hashes)
}

/// Whether `password` matches `hash` (a hash asking for more than 64 MiB never matches).
fn verify(password: &str, hash: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(hash) else {
        return false;
    };
    let Ok(params) = argon2::Params::try_from(&parsed) else {
        return false;
    };
    if params.m_cost() > MAX_MEMORY_KIB {
        return false;
    }
    argon2::Argon2::default()
        .verify_password(password.as_bytes(), &parsed)
        .is_ok()
}

/// Hash `password` for a people file (Argon2id, the crate's default parameters, a random salt).
pub fn hash_password(password: &str) -> Result<String, PeopleError> {
    if password.len() < 8 || password.len() > MAX_PASSWORD {
        return Err(PeopleError::BadPassword);
    }
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| PeopleError::Hash(e.to_string()))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| PeopleError::Hash(e.to_string()))?;
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| PeopleError::Hash(e.to_string()))
}

/// Add `name` with `password` to the people file at `path` (created, readable by its owner
/// only, when missing), replacing the person's line if there is one.
pub fn add(path: &Path, name: &str, password: &str) -> Result<(), PeopleError> {
    if !valid_name(name) {
        return Err(PeopleError::BadName(name.to_owned()));
    }
    let hash = hash_password(password)?;
    let io = |source| PeopleError::Io {
        path: path.to_owned(),
        source,
    };
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(e)),
    };
    parse(path, &existing)?;
    let mut lines: Vec<String> = existing
        .lines()
        .filter(|line| line.trim().split_once(':').map(|(n, _)| n) != Some(name))
        .map(str::to_owned)
        .collect();
    lines.push(format!("{name}:{hash}"));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(io)?;
    std::io::Write::write_all(&mut file, (lines.join("\n") + "\n").as_bytes()).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("desk-people-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        dir
    }

    #[tokio::test]
    async fn added_people_sign_in_with_their_password_only() {
        let path = file("added");
        add(&path, "ana", "correct horse").unwrap();
        add(&path, "ben", "battery staple").unwrap();
        add(&path, "ana", "a new password").unwrap();
        let people = People::load(&path).unwrap();
        assert_eq!(people.len(), 2);
        assert_eq!(
            people.sign_in("ana", "a new password").await,
            Ok("ana".into())
        );
        assert_eq!(
            people.sign_in("ana", "correct horse").await,
            Err(SignInRefused::NoMatch),
            "the replaced password"
        );
        assert_eq!(
            people.sign_in("carla", "a new password").await,
            Err(SignInRefused::NoMatch)
        );
        assert_eq!(
            people.sign_in("ben", "battery staple").await,
            Ok("ben".into())
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let _ = std::fs::remove_file(&path);
    }

    #[tokio::test(start_paused = true)]
    async fn a_guessed_name_is_locked_for_a_while_then_opens_again() {
        let path = file("locked");
        add(&path, "ana", "correct horse").unwrap();
        let people = People::load(&path).unwrap();
        for _ in 0..MAX_FAILURES {
            assert_eq!(
                people.sign_in("ana", "guess").await,
                Err(SignInRefused::NoMatch)
            );
        }
        assert_eq!(
            people.sign_in("ana", "correct horse").await,
            Err(SignInRefused::Locked),
            "even the right password, while locked"
        );
        tokio::time::advance(LOCKED_FOR).await;
        assert_eq!(
            people.sign_in("ana", "correct horse").await,
            Ok("ana".into())
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_bad_file_is_refused_with_its_line() {
        let path = Path::new("people.txt");
        let error = parse(path, "# the desk's people\nana:not-a-hash\n").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("people.txt line 2: not a PHC hash"),
            "{error}"
        );
        let error = parse(path, "ana bob\n").unwrap_err();
        assert_eq!(error.to_string(), "people.txt line 1: expected NAME:HASH");
        let twice = format!("ana:{DUMMY_HASH}\nana:{DUMMY_HASH}\n");
        assert!(
            parse(path, &twice)
                .unwrap_err()
                .to_string()
                .contains("named twice")
        );
        assert!(matches!(
            add(path, "no way", "long enough"),
            Err(PeopleError::BadName(_))
        ));
        assert!(matches!(
            hash_password("short"),
            Err(PeopleError::BadPassword)
        ));
        // The hash checked for unknown names is a real one, of no one's password.
        assert!(PasswordHash::new(DUMMY_HASH).is_ok());
        assert!(!verify("", DUMMY_HASH) && !verify("password", DUMMY_HASH));
    }
}
