//! The audit log's keys. Each entry's hash is an HMAC under a key kept
//! outside the database, so someone who can write the database cannot
//! recompute the chain after editing it. The key is `RECKON_AUDIT_KEY`
//! (base64 of at least 32 bytes; older ones in `RECKON_AUDIT_OLD_KEYS`) or,
//! without it, the file `audit.key` in the data directory (mode 0600, made
//! at first start; each line a key, the last one signs, older ones stay for
//! verifying what they signed).

use anyhow::{Context, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "audit.key";
const MIN_KEY_BYTES: usize = 32;

#[derive(Clone)]
pub struct Key {
    /// Derived from the key itself, stored with each entry it signs.
    pub id: String,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({})", self.id)
    }
}

impl Key {
    fn from_bytes(bytes: Vec<u8>) -> Key {
        let digest = Sha256::new()
            .chain_update(b"reckon audit key id\0")
            .chain_update(&bytes)
            .finalize();
        Key {
            id: hex::encode(&digest[..8]),
            bytes,
        }
    }

    fn parse(text: &str) -> anyhow::Result<Key> {
        let bytes = STANDARD
            .decode(text.trim())
            .context("an audit key is base64")?;
        if bytes.len() < MIN_KEY_BYTES {
            bail!("an audit key has at least {MIN_KEY_BYTES} bytes");
        }
        Ok(Key::from_bytes(bytes))
    }

    fn random() -> Key {
        let mut bytes = vec![0u8; MIN_KEY_BYTES];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Key::from_bytes(bytes)
    }

    pub fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.bytes).expect("HMAC takes any key length")
    }

    /// A key of its own for another use (`label` names the use), derived
    /// from this one, so it too lives only outside the database and is
    /// kept, and rotated, with the audit key.
    pub fn derive(&self, label: &str) -> [u8; 32] {
        let mut mac = self.mac();
        mac.update(b"reckon derived key\0");
        mac.update(label.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

/// The key that signs new entries, and every key that may have signed one.
#[derive(Clone, Debug, Default)]
pub struct Keys {
    keys: Vec<Key>,
    /// Where they came from, for messages.
    pub source: String,
    /// The first entry the key file's first key signed: an unkeyed entry
    /// from there on was rewritten without the key. Unknown for keys from
    /// the environment (then unkeyed entries may only come before keyed
    /// ones).
    pub keyed_from: Option<i64>,
}

impl Keys {
    /// None loaded (a bare `Db::connect`): appending fails, verifying finds
    /// every keyed entry's key unknown.
    pub fn none() -> Keys {
        Keys {
            keys: Vec::new(),
            source: "no audit key loaded".into(),
            keyed_from: None,
        }
    }

    pub fn signing(&self) -> Option<&Key> {
        self.keys.last()
    }

    pub fn by_id(&self, id: &str) -> Option<&Key> {
        self.keys.iter().find(|k| k.id == id)
    }

    /// From the environment when `RECKON_AUDIT_KEY` is set, else from the
    /// data directory's key file, made (0600) if it does not exist yet;
    /// `next_seq` is the entry a new file's key signs first.
    pub fn load(
        data_dir: &Path,
        next_seq: i64,
        env: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Keys> {
        if let Some(current) = env("RECKON_AUDIT_KEY") {
            let mut keys = Vec::new();
            for old in env("RECKON_AUDIT_OLD_KEYS")
                .unwrap_or_default()
                .split(',')
                .filter(|s| !s.trim().is_empty())
            {
                keys.push(Key::parse(old).context("RECKON_AUDIT_OLD_KEYS is not valid")?);
            }
            keys.push(Key::parse(&current).context("RECKON_AUDIT_KEY is not valid")?);
            return Ok(Keys {
                keys,
                source: "RECKON_AUDIT_KEY".into(),
                keyed_from: None,
            });
        }
        let path = data_dir.join(FILE_NAME);
        if !path.exists() {
            append_key(&path, &Key::random(), Some(next_seq))?;
            tracing::info!(path = %path.display(), "audit key created: keep a copy of it away from the database");
        }
        read_file(&path)
    }

    /// Adds a new signing key to the key file, keeping the old ones; the
    /// new key's id. With keys from the environment there is no file to
    /// change: a new key is made and printed for the operator to set.
    pub fn rotate(
        data_dir: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Rotated> {
        let key = Key::random();
        if env("RECKON_AUDIT_KEY").is_some() {
            return Ok(Rotated::Printed {
                id: key.id.clone(),
                key: STANDARD.encode(&key.bytes),
            });
        }
        let path = data_dir.join(FILE_NAME);
        if !path.exists() {
            bail!(
                "{} does not exist: start the server once to create the first key",
                path.display()
            );
        }
        read_file(&path)?;
        append_key(&path, &key, None)?;
        Ok(Rotated::Written { id: key.id, path })
    }
}

pub enum Rotated {
    Written { id: String, path: PathBuf },
    Printed { id: String, key: String },
}

fn read_file(path: &Path) -> anyhow::Result<Keys> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)
        .with_context(|| format!("cannot read the audit key file {}", path.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        bail!(
            "the audit key file {} may be read by others (mode {:o}): chmod 600 it",
            path.display(),
            meta.permissions().mode() & 0o777
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the audit key file {}", path.display()))?;
    let mut keys = Vec::new();
    let mut keyed_from = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(seq) = line.strip_prefix("keyed-from ") {
            keyed_from = Some(seq.trim().parse::<i64>().with_context(|| {
                format!(
                    "{} line {}: keyed-from needs a number",
                    path.display(),
                    n + 1
                )
            })?);
            continue;
        }
        // `<created> <key>`; the date is for people.
        let key = line.rsplit(' ').next().unwrap_or(line);
        keys.push(
            Key::parse(key)
                .with_context(|| format!("{} line {}: not a key", path.display(), n + 1))?,
        );
    }
    if keys.is_empty() {
        bail!("the audit key file {} holds no key", path.display());
    }
    Ok(Keys {
        keys,
        source: path.display().to_string(),
        keyed_from,
    })
}

/// Adds `key` to the file; `first_seq` makes a new file, noting the first
/// entry its key signs.
fn append_key(path: &Path, key: &Key, first_seq: Option<i64>) -> anyhow::Result<()> {
    let create = first_seq.is_some();
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.mode(0o600);
    if create {
        options.write(true).create_new(true);
    } else {
        options.append(true);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot write the audit key file {}", path.display()))?;
    let created = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ");
    let mut text = String::new();
    if create {
        text.push_str(
            "# Reckon's audit keys: the last line signs new entries; keep the older\n\
             # ones, they verify what they signed. Keep a copy away from the database.\n",
        );
        if let Some(seq) = first_seq {
            text.push_str(&format!("keyed-from {seq}\n"));
        }
    }
    text.push_str(&format!("{created} {}\n", STANDARD.encode(&key.bytes)));
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_made_private_and_rotation_keeps_the_old_key() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let first = Keys::load(dir.path(), 1, |_| None).unwrap();
        let path = dir.path().join(FILE_NAME);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let again = Keys::load(dir.path(), 1, |_| None).unwrap();
        assert_eq!(first.signing().unwrap().id, again.signing().unwrap().id);

        let Rotated::Written { id, .. } = Keys::rotate(dir.path(), |_| None).unwrap() else {
            panic!("a file key is rotated in the file");
        };
        let rotated = Keys::load(dir.path(), 1, |_| None).unwrap();
        assert_eq!(rotated.signing().unwrap().id, id);
        assert!(rotated.by_id(&first.signing().unwrap().id).is_some());

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Keys::load(dir.path(), 1, |_| None).unwrap_err().to_string();
        assert!(err.contains("chmod 600"), "{err}");
    }

    #[test]
    fn keys_from_the_environment_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let short = STANDARD.encode([7u8; 16]);
        let err = Keys::load(dir.path(), 1, |k| {
            (k == "RECKON_AUDIT_KEY").then(|| short.clone())
        })
        .unwrap_err();
        assert!(format!("{err:#}").contains("at least 32 bytes"), "{err:#}");
        let good = STANDARD.encode([7u8; 32]);
        let keys = Keys::load(dir.path(), 1, |k| {
            (k == "RECKON_AUDIT_KEY").then(|| good.clone())
        })
        .unwrap();
        assert!(keys.signing().is_some());
        assert!(
            !dir.path().join(FILE_NAME).exists(),
            "no file when the environment has the key"
        );
    }
}
