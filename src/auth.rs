//! Credentials: argon2id password hashes, username and password rules, and
//! merchant API tokens (random, shown once, stored as SHA-256).

use app::error::AppError;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use rand::RngCore;
use rand::rngs::OsRng;
use sha2::{Digest, Sha256};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Semaphore;

pub const MIN_PASSWORD_CHARS: usize = 12;
pub const MAX_PASSWORD_BYTES: usize = 1024;

fn argon2() -> Argon2<'static> {
    // OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane.
    let params = Params::new(19 * 1024, 2, 1, None).expect("valid argon2 parameters");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Usernames are lowercase, 2–32 characters of `a-z 0-9 . _ -`, starting
/// with a letter or digit. Input is lowercased and trimmed first.
pub fn parse_username(input: &str) -> Result<String, AppError> {
    let name = input.trim().to_ascii_lowercase();
    let ok_len = (2..=32).contains(&name.len());
    let ok_first = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    if ok_len && ok_first && ok_chars {
        Ok(name)
    } else {
        Err(AppError::InvalidUsername)
    }
}

/// Names Reckon's own actions are audited under (the host's commands, the
/// demo, the daily auto-close): no person may be given one, so the audit
/// log and the two-person rule never mistake a person for them.
pub const RESERVED_USERNAMES: [&str; 5] = ["cli", "demo", "host", "reckon", "system"];

/// A new user's name: [`parse_username`]'s rules, and none of the
/// [`RESERVED_USERNAMES`].
pub fn new_username(input: &str) -> Result<String, AppError> {
    let name = parse_username(input)?;
    if RESERVED_USERNAMES.contains(&name.as_str()) {
        return Err(AppError::Invalid {
            detail: format!("the username \"{name}\" is reserved for Reckon's own actions"),
        });
    }
    Ok(name)
}

pub fn check_password_rules(password: &str) -> Result<(), AppError> {
    if password.chars().count() < MIN_PASSWORD_CHARS || password.len() > MAX_PASSWORD_BYTES {
        return Err(AppError::WeakPassword {
            min: MIN_PASSWORD_CHARS,
        });
    }
    Ok(())
}

/// Password hashes at once: one per core, each holding 19 MiB while it
/// runs; a short queue waits its turn, anyone beyond it is told to come back
/// (`AppError::Busy`), so a flood of sign-ins cannot grow memory without end.
struct HashGate {
    running: Semaphore,
    waiting: AtomicUsize,
    max_waiting: usize,
}

static GATE: LazyLock<HashGate> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    HashGate {
        running: Semaphore::new(cores),
        waiting: AtomicUsize::new(0),
        max_waiting: 4 * cores,
    }
});

/// Seconds a caller turned away by the gate is asked to wait.
pub const BUSY_RETRY_SECS: u64 = 1;

/// Runs one argon2 computation on a blocking thread once the gate lets it.
async fn gated<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, AppError> {
    let gate = &*GATE;
    let permit = match gate.running.try_acquire() {
        Ok(permit) => permit,
        Err(_) => {
            if gate.waiting.fetch_add(1, Ordering::SeqCst) >= gate.max_waiting {
                gate.waiting.fetch_sub(1, Ordering::SeqCst);
                return Err(AppError::Busy {
                    seconds: BUSY_RETRY_SECS,
                });
            }
            let permit = gate.running.acquire().await;
            gate.waiting.fetch_sub(1, Ordering::SeqCst);
            permit.map_err(|_| AppError::Busy {
                seconds: BUSY_RETRY_SECS,
            })?
        }
    };
    let done = tokio::task::spawn_blocking(work).await;
    drop(permit);
    done.map_err(|e| {
        let trace_id = uuid::Uuid::new_v4().simple().to_string();
        tracing::error!(%trace_id, error = %e, "password hashing task failed");
        AppError::Internal { trace_id }
    })
}

/// Hashes a new password (argon2 is deliberately slow).
pub async fn hash_password(password: String) -> Result<String, AppError> {
    gated(move || {
        let salt = SaltString::generate(&mut OsRng);
        argon2()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| e.to_string())
    })
    .await?
    .map_err(|e| {
        let trace_id = uuid::Uuid::new_v4().simple().to_string();
        tracing::error!(%trace_id, error = %e, "password hashing failed");
        AppError::Internal { trace_id }
    })
}

/// Checks a password. With no stored hash it still spends the same work on
/// a dummy, so timing does not reveal which usernames exist.
pub async fn verify_password(password: String, stored: Option<String>) -> Result<bool, AppError> {
    gated(move || {
        let dummy;
        let hash_text = match &stored {
            Some(h) => h.as_str(),
            None => {
                dummy = dummy_hash();
                dummy.as_str()
            }
        };
        let ok = PasswordHash::new(hash_text)
            .map(|h| argon2().verify_password(password.as_bytes(), &h).is_ok())
            .unwrap_or(false);
        ok && stored.is_some()
    })
    .await
}

fn dummy_hash() -> String {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY
        .get_or_init(|| {
            let salt = SaltString::generate(&mut OsRng);
            argon2()
                .hash_password(b"not a password of anyone", &salt)
                .map(|h| h.to_string())
                .unwrap_or_default()
        })
        .clone()
}

/// A random password for demo users: 20 characters of an unambiguous alphabet.
pub fn random_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut bytes = [0u8; 20];
    OsRng.fill_bytes(&mut bytes);
    bytes
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

/// A new merchant API token: `rk_` + 32 random bytes in hex. Returns the
/// token (shown once) and what is stored: its SHA-256 and a short prefix.
pub struct NewToken {
    pub token: String,
    pub hash: String,
    pub prefix: String,
}

pub fn new_api_token() -> NewToken {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    let token = format!("rk_{}", hex::encode(bytes));
    NewToken {
        hash: token_hash(&token),
        prefix: token[..10].to_owned(),
        token,
    }
}

/// Tokens carry 256 random bits, so a fast hash is enough to store them.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reckons_own_names_are_not_given_to_people() {
        for name in RESERVED_USERNAMES {
            assert!(parse_username(name).is_ok(), "{name} is a well-formed name");
            assert!(
                matches!(
                    new_username(&name.to_uppercase()),
                    Err(AppError::Invalid { .. })
                ),
                "{name}"
            );
        }
        assert_eq!(new_username("clio").unwrap(), "clio");
    }

    #[test]
    fn usernames_follow_the_rules() {
        assert_eq!(parse_username("  Alice.W ").unwrap(), "alice.w");
        assert_eq!(parse_username("op-1").unwrap(), "op-1");
        for bad in ["a", "-lead", "has space", "名字", &"x".repeat(33), ""] {
            assert_eq!(parse_username(bad), Err(AppError::InvalidUsername), "{bad}");
        }
    }

    #[test]
    fn short_passwords_are_refused() {
        assert!(check_password_rules("short").is_err());
        assert!(check_password_rules("twelve chars").is_ok());
        assert!(check_password_rules(&"x".repeat(2000)).is_err());
    }

    #[tokio::test]
    async fn hashes_verify_only_their_password() {
        let hash = hash_password("correct horse battery".into()).await.unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(
            verify_password("correct horse battery".into(), Some(hash.clone()))
                .await
                .unwrap()
        );
        assert!(
            !verify_password("wrong horse battery".into(), Some(hash))
                .await
                .unwrap()
        );
        assert!(
            !verify_password("anything at all".into(), None)
                .await
                .unwrap()
        );
    }

    #[test]
    fn tokens_are_random_and_stored_hashed() {
        let a = new_api_token();
        let b = new_api_token();
        assert_ne!(a.token, b.token);
        assert_eq!(a.token.len(), 3 + 64);
        assert_eq!(a.hash, token_hash(&a.token));
        assert!(!a.hash.contains(&a.token));
        assert!(a.token.starts_with(&a.prefix));
    }
}
