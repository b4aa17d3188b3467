//! The desk's people: who may sign in to the web UI, from a people file of Argon2id hashes.
//!
//! A people file is a line per person, `NAME:HASH` (the hash a PHC string, as `support-agent
//! people add` writes it); blank lines and lines starting with `#` are skipped. Without a
//! people file the desk has one implicit person (the terminal's user) and serves loopback only.
//!
//! Password checks run on blocking threads, at most [`MAX_CHECKS_AT_ONCE`] at once (each takes
//! a 19 MiB work area). Every attempt is counted before its password is checked, so guesses sent
//! together are counted as they arrive, not as they finish: a name tried [`MAX_FAILURES`] times
//! from one address, an address that failed [`MAX_FAILURES_PER_ADDRESS`] times with any names,
//! or a name that failed [`MAX_FAILURES_PER_NAME`] times from anywhere, is refused for
//! [`LOCKED_FOR`] whatever the password. A name nobody has is counted and refused exactly like a
//! person's, so the refusals do not tell who may sign in; and since a name is locked per address
//! first, a guesser elsewhere cannot keep the person out with a handful of guesses.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

/// The most password checks run at once.
pub const MAX_CHECKS_AT_ONCE: usize = 2;
/// Sign-ins of one name from one address that may fail within [`LOCKED_FOR`].
pub const MAX_FAILURES: u32 = 5;
/// Sign-ins from one address, whatever the names, that may fail within [`LOCKED_FOR`].
pub const MAX_FAILURES_PER_ADDRESS: u32 = 20;
/// Sign-ins of one name, from every address together, that may fail within [`LOCKED_FOR`].
pub const MAX_FAILURES_PER_NAME: u32 = 50;
/// The window the failures are counted in, and how long a limit, once reached, refuses.
pub const LOCKED_FOR: Duration = Duration::from_secs(60);
/// The most names and addresses whose failures are counted at once; with the table full of
/// live counts, a new name or address is refused until some expire (never forgotten early).
const MAX_COUNTED: usize = 16 * 1024;
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
    /// A person the desk's database keeps is not a valid name and Argon2 hash.
    #[error("the desk's database keeps {name:?}, which is not a person: {why}")]
    Kept {
        /// The name as kept.
        name: String,
        /// What is wrong with it.
        why: String,
    },
}

/// Why a sign-in was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignInRefused {
    /// Unknown name or wrong password (which of the two is not said).
    #[error("that name and password do not match")]
    NoMatch,
    /// Too many failures for this name, or from this address, just now (said alike for a
    /// name nobody has).
    #[error("too many failed sign-ins: wait a minute and try again")]
    Locked,
}

pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// What an attempt's failures are counted under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Counted {
    /// One name from one address.
    NameAt(String, IpAddr),
    /// One address, any name.
    Address(IpAddr),
    /// One name, any address.
    Name(String),
}

impl Counted {
    fn limit(&self) -> u32 {
        match self {
            Counted::NameAt(..) => MAX_FAILURES,
            Counted::Address(_) => MAX_FAILURES_PER_ADDRESS,
            Counted::Name(_) => MAX_FAILURES_PER_NAME,
        }
    }
}

/// Attempts counted in the current window of each key: (count, when the window began).
type Failures = HashMap<Counted, (u32, tokio::time::Instant)>;

/// The people who may sign in, and the failures counted per name and address.
#[derive(Clone)]
pub struct People {
    hashes: Arc<HashMap<String, String>>,
    failures: Arc<Mutex<Failures>>,
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

    /// The people kept in the desk's database (`NAME`, `HASH` pairs, as
    /// [`crate::store::DeskStore::people`] reads them); `None` when it keeps nobody.
    pub fn from_database(people: Vec<(String, String)>) -> Result<Option<People>, PeopleError> {
        let mut hashes = HashMap::new();
        for (name, hash) in people {
            checked(&name, &hash, |why| PeopleError::Kept {
                name: name.clone(),
                why: why.to_owned(),
            })?;
            hashes.insert(name, hash);
        }
        Ok((!hashes.is_empty()).then(|| People {
            hashes: Arc::new(hashes),
            failures: Arc::default(),
            checks: Arc::new(tokio::sync::Semaphore::new(MAX_CHECKS_AT_ONCE)),
        }))
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

    /// Check `name` and `password`, sent from `from`; the person's name when they match.
    ///
    /// The attempt is counted as a failure before the password is checked (and the count
    /// taken back if it matches), so guesses sent together are limited as they arrive.
    pub async fn sign_in(
        &self,
        name: &str,
        password: &str,
        from: IpAddr,
    ) -> Result<String, SignInRefused> {
        if name.len() > MAX_NAME || password.len() > MAX_PASSWORD {
            return Err(SignInRefused::NoMatch);
        }
        let keys = [
            Counted::NameAt(name.to_owned(), from),
            Counted::Address(from),
            Counted::Name(name.to_owned()),
        ];
        self.count_attempt(&keys)?;
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
        if matched && known {
            self.take_back(&keys);
            return Ok(name.to_owned());
        }
        Err(SignInRefused::NoMatch)
    }

    /// Count an attempt under each of `keys`, or refuse it when any of them is at its limit
    /// (then nothing is counted).
    fn count_attempt(&self, keys: &[Counted]) -> Result<(), SignInRefused> {
        let now = tokio::time::Instant::now();
        let mut failures = self.lock_failures();
        let live = |(count, since): &(u32, tokio::time::Instant)| {
            (now.duration_since(*since) < LOCKED_FOR).then_some(*count)
        };
        if keys
            .iter()
            .any(|key| failures.get(key).and_then(live).unwrap_or(0) >= key.limit())
        {
            return Err(SignInRefused::Locked);
        }
        let new = keys
            .iter()
            .filter(|key| !failures.contains_key(*key))
            .count();
        if failures.len() + new > MAX_COUNTED {
            failures.retain(|_, window| live(window).is_some());
            if failures.len() + new > MAX_COUNTED {
                return Err(SignInRefused::Locked);
            }
        }
        for key in keys {
            let window = failures.entry(key.clone()).or_insert((0, now));
            if live(window).is_none() {
                *window = (0, now);
            }
            window.0 += 1;
        }
        Ok(())
    }

    /// A matched password: the attempt was no failure. The name's count from this address
    /// starts again; the others give back the one attempt.
    fn take_back(&self, keys: &[Counted]) {
        let mut failures = self.lock_failures();
        for key in keys {
            if matches!(key, Counted::NameAt(..)) {
                failures.remove(key);
            } else if let Some(window) = failures.get_mut(key) {
                window.0 = window.0.saturating_sub(1);
            }
        }
    }

    fn lock_failures(&self) -> std::sync::MutexGuard<'_, Failures> {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A valid hash of no one's password, checked for unknown names.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$3fgrKp5pAsDnXvE/xrNKa4XXdhy6Kxov2gOJixWlxRE";

/// Check one person's name and hash (a PHC Argon2 string); `bad` says what is wrong.
fn checked<E>(name: &str, hash: &str, bad: impl Fn(&str) -> E) -> Result<(), E> {
    if !valid_name(name) {
        return Err(bad(&format!(
            "{name:?} is not a name (1 to {MAX_NAME} letters, digits, '.', '-' or '_')"
        )));
    }
    let parsed = PasswordHash::new(hash).map_err(|e| bad(&format!("not a PHC hash: {e}")))?;
    if !parsed.algorithm.as_str().starts_with("argon2") {
        return Err(bad("not an Argon2 hash"));
    }
    Ok(())
}

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
        checked(name, hash, bad)?;
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

    const HERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    const ELSEWHERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 7));

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
            people.sign_in("ana", "a new password", HERE).await,
            Ok("ana".into())
        );
        assert_eq!(
            people.sign_in("ana", "correct horse", HERE).await,
            Err(SignInRefused::NoMatch),
            "the replaced password"
        );
        assert_eq!(
            people.sign_in("carla", "a new password", HERE).await,
            Err(SignInRefused::NoMatch)
        );
        assert_eq!(
            people.sign_in("ben", "battery staple", HERE).await,
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
                people.sign_in("ana", "guess", HERE).await,
                Err(SignInRefused::NoMatch)
            );
        }
        assert_eq!(
            people.sign_in("ana", "correct horse", HERE).await,
            Err(SignInRefused::Locked),
            "even the right password, while locked"
        );
        tokio::time::advance(LOCKED_FOR).await;
        assert_eq!(
            people.sign_in("ana", "correct horse", HERE).await,
            Ok("ana".into())
        );
        let _ = std::fs::remove_file(&path);
    }

    /// Finding 2 of issue 71: guesses sent together were all checked, because the lock was
    /// looked at before waiting for a check and a failure counted only after it.
    #[tokio::test]
    async fn concurrent_guesses_are_counted_before_they_are_checked() {
        let path = file("concurrent");
        add(&path, "ana", "correct horse").unwrap();
        let people = People::load(&path).unwrap();
        let guesses: Vec<_> = (0..40)
            .map(|i| {
                let people = people.clone();
                tokio::spawn(
                    async move { people.sign_in("ana", &format!("guess {i}"), HERE).await },
                )
            })
            .collect();
        let mut refused = (0, 0);
        for guess in guesses {
            match guess.await.unwrap() {
                Err(SignInRefused::NoMatch) => refused.0 += 1,
                Err(SignInRefused::Locked) => refused.1 += 1,
                Ok(_) => panic!("a guess matched"),
            }
        }
        assert_eq!(
            refused,
            (MAX_FAILURES, 40 - MAX_FAILURES),
            "(checked, locked)"
        );
        assert_eq!(
            people.sign_in("ana", "correct horse", HERE).await,
            Err(SignInRefused::Locked),
            "the right password after the guesses"
        );
        let _ = std::fs::remove_file(&path);
    }

    /// Finding 5 of issue 71: a known name answered "locked" after its failures while an
    /// unknown one kept answering "no match", which told who may sign in.
    #[tokio::test]
    async fn an_unknown_name_is_locked_exactly_like_a_known_one() {
        let path = file("unknown");
        add(&path, "ana", "correct horse").unwrap();
        let people = People::load(&path).unwrap();
        for name in ["ana", "nobody"] {
            for _ in 0..MAX_FAILURES {
                assert_eq!(
                    people.sign_in(name, "guess", HERE).await,
                    Err(SignInRefused::NoMatch),
                    "{name}"
                );
            }
            assert_eq!(
                people.sign_in(name, "guess", HERE).await,
                Err(SignInRefused::Locked),
                "{name}"
            );
        }
        let _ = std::fs::remove_file(&path);
    }

    /// Finding 5 of issue 71: five guesses a minute from anyone kept the person out.
    #[tokio::test(start_paused = true)]
    async fn a_guesser_elsewhere_does_not_keep_the_person_out() {
        let path = file("elsewhere");
        add(&path, "ana", "correct horse").unwrap();
        let people = People::load(&path).unwrap();
        for _ in 0..=MAX_FAILURES {
            let _ = people.sign_in("ana", "guess", ELSEWHERE).await;
        }
        assert_eq!(
            people.sign_in("ana", "guess", ELSEWHERE).await,
            Err(SignInRefused::Locked)
        );
        assert_eq!(
            people.sign_in("ana", "correct horse", HERE).await,
            Ok("ana".into()),
            "from the person's own address"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[tokio::test(start_paused = true)]
    async fn one_address_guessing_many_names_is_limited_too() {
        let path = file("many-names");
        add(&path, "ana", "correct horse").unwrap();
        let people = People::load(&path).unwrap();
        for i in 0..MAX_FAILURES_PER_ADDRESS {
            assert_eq!(
                people
                    .sign_in(&format!("name{i}"), "guess", ELSEWHERE)
                    .await,
                Err(SignInRefused::NoMatch)
            );
        }
        assert_eq!(
            people.sign_in("ana", "correct horse", ELSEWHERE).await,
            Err(SignInRefused::Locked),
            "the address is locked, whatever the name"
        );
        assert_eq!(
            people.sign_in("ana", "correct horse", HERE).await,
            Ok("ana".into())
        );
        tokio::time::advance(LOCKED_FOR).await;
        assert_eq!(
            people.sign_in("ana", "correct horse", ELSEWHERE).await,
            Ok("ana".into()),
            "after the window"
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
